"""Hummel Quest's ``visible`` (its pair facts kept per enemy hex across calls, only the own hexes not known to miss
asked) and ``_targets`` (legality from the batched shot tests, the legal shots not built) against the direct
answers -- ``los`` of every pair, ``shot`` of every enemy -- on random boards whose tanks move, change state and
leave between calls, so the kept facts meet changed boards (issue 14)."""
from __future__ import annotations

import random

import pytest
from test_hq_kill_odds import _random_battle

from sim.events import Moved, TankStateSet
from sim.rules.base import Illegal


@pytest.mark.filterwarnings("ignore:hummel_quest")
def test_visible_and_targets_equal_the_direct_answers_on_random_boards():
    rnd = random.Random(11)
    calls = seen = legal = 0
    for _ in range(30):
        b = _random_battle(rnd)
        rs = b.ruleset
        cells = list(b.map)
        for _round in range(12):
            for t in b.tanks:
                pick = rnd.random()
                if pick < 0.35 and t.hex is not None:   # a move (any hex: the facts are keyed by hex)
                    b.emit(Moved(t.tank_id, rnd.choice(cells), rnd.randrange(6), 1))
                elif pick < 0.38:
                    b.emit(TankStateSet(t.tank_id, "dt", 0))
                elif pick < 0.45 and t.vehicle.weapons:
                    b.emit(TankStateSet(t.tank_id, f"ready.{rnd.choice(t.vehicle.weapons).id}", rnd.randint(1, 3)))
            b.turn = rnd.randint(1, 3)
            for side in (0, 1):
                own = [t.hex for t in b.tanks if t.side == side and not rs.is_out(t)]
                want = tuple(e.tank_id for e in b.tanks if e.side != side and not rs.is_out(e)
                             and any(rs.los(b, h, e.hex) for h in own))
                assert rs.visible(b, side) == want, (side, want)
                assert rs.visible(b, side) == want   # asked again: the kept answer
                calls += 1
                seen += len(want)
            for a in range(len(b.tanks)):
                s = b.tanks[a]
                want_t = tuple(e.tank_id for e in b.tanks if e.side != s.side and not rs.is_out(e)
                               and not isinstance(rs.shot(b, a, e.tank_id), Illegal)) if rs.can_act(s) else ()
                assert rs._targets(b, a) == want_t, (a, want_t)
                legal += len(want_t)
    assert calls == 720 and seen > 500 and legal > 300, (calls, seen, legal)


@pytest.mark.filterwarnings("ignore:hummel_quest")
def test_flee_counts_and_counted_enemies_equal_the_direct_answers_on_random_boards():
    """``flee_plan``'s sector counts (its kept per-offset sectors) against :func:`sectors_of` of every enemy, its
    direction against the rank of §11.2 computed directly, and ``_counted_enemies`` (``hex_in_play`` inlined)
    against ``hex_in_play`` of every enemy, on random boards whose tanks move and change state."""
    from sim.hexgrid import DIRECTIONS, distance
    from sim.rules.hummel_quest.panic import flee_plan, sectors_of

    rnd = random.Random(13)
    plans = counted = 0
    for _ in range(30):
        b = _random_battle(rnd)
        rs = b.ruleset
        cells = list(b.map)
        for _round in range(6):
            for t in b.tanks:
                pick = rnd.random()
                if pick < 0.4 and t.hex is not None:
                    b.emit(Moved(t.tank_id, rnd.choice(cells), rnd.randrange(6), 1))
                elif pick < 0.45:
                    b.emit(TankStateSet(t.tank_id, "dt", 0))
            for t in b.tanks:
                if t.hex is None:
                    continue
                es = rs._counted_enemies(b, t.tank_id)
                want_es = [h for e in b.tanks if e.side != t.side and (h := rs.hex_in_play(e)) is not None]
                if rs._opts(b).flee_counts != "visible":
                    assert es == want_es
                counted += len(es)
                s = rnd.randint(1, 6)
                plan = flee_plan(rs.board(b), t.hex, s, es)
                counts = [0] * 6
                for e in es:
                    for k in sectors_of((e[0] - t.hex.q, e[1] - t.hex.r)):
                        counts[k] += 1
                assert plan.sector_counts == tuple(counts)
                if es:
                    def aim(k: int, c=t.hex, s=s) -> tuple[int, int]:
                        return (c.q + s * DIRECTIONS[k].q, c.r + s * DIRECTIONS[k].r)
                    want_k = min((k for k in range(6) if counts[k] == min(counts)),
                                 key=lambda k: (-min(distance(aim(k), e) for e in es),
                                                -sum(distance(aim(k), e) for e in es), k))
                    assert plan.direction == want_k
                    plans += 1
    assert plans > 500 and counted > 2000, (plans, counted)
