"""ASL's movement search (issue 14) against the engine's search over the rule set's successors.

``ASL.reachable`` runs ``_movement_search`` (the successors generated in place on integer states, a list per cost
instead of a heap; paths as tuples).  During real battles every search is compared with
:func:`~sim.hexgrid.bounded_dijkstra` over ``ASL._successors`` (computed afresh per state): the same states in the
same order, the same costs and paths, at the budget asked and at random smaller and larger ones.
"""
from __future__ import annotations

import random

import benchmarks.battle as bench
from sim.hexgrid import bounded_dijkstra
from sim.rules.asl.play import ASL, HALF
from sim.runner import run_battle
from sim.scenario import load_scenario


def _reference(rs: ASL, b, tank: int, budget: int):
    """``ASL.reachable`` by its definition: the engine's search over the plain successor function."""
    t = b.tank(tank)
    start = (t.hex, t.facing)
    extra = (0 if rs._started_now(b, t) else HALF) + HALF
    res = bounded_dijkstra(start, lambda st: rs._successors(b, tank, st), budget - extra)
    return {st: ((0 if st == start else c + extra), tuple(path)) for st, (c, path) in res.items()}


def _checking(monkeypatch, rng: random.Random) -> list[int]:
    calls = [0]
    orig = ASL.reachable

    def reachable(self, b, tank, budget):
        got = orig(self, b, tank, budget)
        for bud in (budget, rng.randrange(0, budget + 2), budget + rng.randrange(1, 6)):
            mine = orig(self, b, tank, bud)
            if len(mine) > 1:   # (a one-state answer is the tank that cannot move: no search)
                assert list(mine.items()) == list(_reference(self, b, tank, bud).items()), (tank, bud)
                calls[0] += 1
        return got

    monkeypatch.setattr(ASL, "reachable", reachable)
    return calls


def test_search_matches_bounded_dijkstra_in_real_battles(monkeypatch):
    calls = _checking(monkeypatch, random.Random(14))
    run_battle(load_scenario("scenarios/asl_1941_meeting.yaml"), seed=2)
    run_battle(bench.cases(turns=1)["asl_25v25"](), seed=5)
    assert calls[0] >= 20


def test_integer_search_matches_the_state_search_on_random_boards():
    """``_movement_search`` on the integer states of a cell set against ``_movement_search_states`` (the same
    algorithm on ``(hex, facing)`` tuples) on random boards: random entry costs (zero included, and ``None`` for
    a hex that may not be entered) and VCA costs, every start facing, random budgets: the same states in the same
    order with the same costs and paths; a start off the cell set or with a facing outside 0..5 takes the state
    search."""
    from sim.hexgrid import Hex
    from sim.rules.asl.play import _movement_search, _movement_search_states

    rng = random.Random(31)
    compared = 0
    for _ in range(30):
        w, h = rng.randrange(2, 9), rng.randrange(2, 9)
        cells = frozenset(Hex(q, r) for q in range(w) for r in range(h) if rng.random() < 0.9)
        if not cells:
            continue
        step = {c: (None if rng.random() < 0.15 else rng.randrange(0, 9)) for c in cells}
        turn = {c: rng.randrange(0, 5) for c in cells}

        def entry(c, step=step):
            return step.get(c)

        start = (rng.choice(sorted(cells)), rng.randrange(6))
        for budget in (0, rng.randrange(1, 12), rng.randrange(12, 40)):
            extra = rng.randrange(0, 3)
            want = [(s, (c, tuple(p))) for s, (c, p) in
                    _movement_search_states(start, budget, entry, turn.__getitem__, extra).items()]
            assert list(_movement_search(start, budget, entry, turn.__getitem__, extra, cells).items()) == want
            compared += len(want)
        for other in ((Hex(-5, -5), 0), (start[0], 7)):   # off the cell set; a facing outside 0..5
            assert list(_movement_search(other, 9, entry, lambda c: 1, 1, cells).items()) == [
                (s, (c, tuple(p))) for s, (c, p) in _movement_search_states(other, 9, entry, lambda c: 1, 1).items()]
    assert compared > 300
