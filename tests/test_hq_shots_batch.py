"""Hummel Quest batched shots (issue 14): ``shots`` / ``shots_at`` give exactly the answers of ``shot`` one pair at a
time (the same shots, the same illegal reasons), and ``visible`` equals ``los`` pair by pair, on a real battle
played forward (tanks move, lose DT and OST, panic, flee and are knocked out), for real and what-if positions, bad
ids and structure hexes; the direct-shot bit the batch reads (``sight.direct_shot``) equals the full sight entry
on random boards; and the flee search stopped once its goal is known gives the full search's path."""
from __future__ import annotations

import random
from typing import Any

import pytest

from sim.battle import HypoView
from sim.hexgrid import Hex
from sim.model import BattleModel
from sim.rules.base import Hypo, Illegal
from sim.rules.hummel_quest.board import HQBoard, flags
from sim.rules.hummel_quest.sight import crossed, direct_shot
from sim.scenario import validate

_MIX = ("hq_example_medium", "hq_example_scout", "hq_example_heavy", "hq_example_spg", "hq_example_rammer")


def _scenario() -> Any:
    """10 v 10 of mixed vehicles (an indirect-fire SPG among them) on a 14 x 14 map at 50 m a hex, with woods, a
    building and rocks between the sides."""
    rows = list(range(0, 14, 3))
    west = [[q, r - q // 2] for q in range(2) for r in rows][:10]
    east = [[q, r - q // 2] for q in range(13, 11, -1) for r in rows][:10]
    return validate({
        "name": "hq_10v10", "ruleset": {"name": "hummel_quest", "options": {"max_rounds": 12}}, "turn_limit": 12,
        "map": {"shape": "rectangle", "width": 14, "height": 14, "hex_size_m": 50,
                "terrain": [{"tile": "woods", "center": [7, 2], "radius": 1},
                            {"tile": "building", "center": [6, 5], "radius": 0},
                            {"tile": "rocks", "center": [8, 0], "radius": 1}]},
        "sides": [{"name": "West", "policy": "advance",
                   "tanks": [{"vehicle": _MIX[i % 5], "hex": h, "facing": 1} for i, h in enumerate(west)]},
                  {"name": "East", "policy": "greedy",
                   "tanks": [{"vehicle": _MIX[(i + 2) % 5], "hex": h, "facing": 4} for i, h in enumerate(east)]}]},
        "hummel_quest")


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, Illegal):
        return isinstance(got, Illegal) and str(got) == str(want)
    return (not isinstance(got, Illegal) and (got.shooter, got.target, got.key, got.face) ==
            (want.shooter, want.target, want.key, want.face) and dict(got.info) == dict(want.info))


@pytest.mark.filterwarnings("ignore:hummel_quest")   # Speeds that are not whole hexes at 50 m a hex
def test_batched_shots_equal_shot_one_pair_at_a_time_through_a_battle():
    m = BattleModel(_scenario(), 4)
    b = m.battle
    rs = b.ruleset
    n = len(b.tanks)
    reasons: set[str] = set()
    states: set[str] = set()
    checked = legal = hypo = 0
    seen_any = False   # some enemy seen, some not
    rams = 0
    for _step in range(80):
        if b.ended:
            break
        m.advance(3)
        states |= {str(t.status) for t in b.tanks}
        states |= {"panicked" for t in b.tanks if rs.panicked(t)}
        ids: list[Any] = [*range(n), -1, n, True, "x", (6, 5), Hex(0, 0)]   # bad ids and structure hexes too
        for s in range(-1, n + 1):
            whatifs: list[Hypo | None] = [None]
            if 0 <= s < n and b.tanks[s].hex is not None:
                whatifs += [Hypo(h, 0, True) for h in b.tanks[s].hex.neighbours()[:2]]
                # onto the next tank's hex: the same hex as that target
                whatifs += [Hypo(t.hex, 1, False) for t in b.tanks[s + 1:s + 2] if t.hex is not None]
            for as_if in whatifs:
                got = rs.shots(b, s, ids, as_if)
                want = [rs.shot(b, s, t, None, as_if) for t in ids]
                assert len(got) == len(want)
                for g, w, t in zip(got, want, ids):
                    assert _same(g, w), (s, t, as_if, g, w)
                    legal += not isinstance(w, Illegal)
                    reasons |= {str(w)} if isinstance(w, Illegal) else set()
                checked += len(ids)
        for side in (0, 1):   # ``visible``: ``los`` of every pair of tanks not out, directly
            own = [t.hex for t in b.tanks if t.side == side and not rs.is_out(t)]
            want_v = tuple(e.tank_id for e in b.tanks if e.side != side and not rs.is_out(e)
                           and any(rs.los(b, h, e.hex) for h in own))
            assert rs.visible(b, side) == want_v
            seen_any |= bool(want_v) and len(want_v) < sum(1 for e in b.tanks if e.side != side and not rs.is_out(e))
        for a in range(n):   # the legal targets listed: the enemies not out with a legal shot
            want_t = tuple(e.tank_id for e in b.tanks if e.side != b.tanks[a].side and not rs.is_out(e)
                           and not isinstance(rs.shot(b, a, e.tank_id), Illegal)) if rs.can_act(b.tanks[a]) else ()
            assert rs._targets(b, a) == want_t, a
        for a in range(n):   # the ram targets listed: exactly those ``ram_shot`` allows, also next to an enemy
            near = [HypoView(b, a, h, 0) for e in b.tanks[(a + 1) % n:][:3] if e.hex is not None
                    for h in e.hex.neighbours()[:2] if h in b.map and not b.occupants(h)]
            for v in (b, *near):
                want_r = tuple(e.tank_id for e in v.tanks if e.side != v.tanks[a].side
                               and not isinstance(rs.ram_shot(v, a, e.tank_id), Illegal))
                assert rs._ram_targets(v, a) == want_r, a
                rams += len(want_r)
        shooters: list[Any] = [*range(n), -1, n]
        for t in [*range(n), -1, n, (6, 5)]:
            views: list[Any] = [b]
            if isinstance(t, int) and 0 <= t < n and b.tanks[t].hex is not None:
                views += [HypoView(b, t, h, f) for f, h in enumerate(b.tanks[t].hex.neighbours()[:3])
                          if h in b.map]
            for v in views:
                got = rs.shots_at(v, shooters, t)
                want = [rs.shot(v, s, t) for s in shooters]
                assert len(got) == len(want)
                for g, w, s in zip(got, want, shooters):
                    assert _same(g, w), (s, t, g, w)
                    legal += not isinstance(w, Illegal)
                    reasons |= {str(w)} if isinstance(w, Illegal) else set()
                checked += len(shooters)
                hypo += v is not b
    # the battle reached the cases that matter: every common illegal answer, legal shots, knocked-out tanks
    assert {"hidden", "firepower_below_band", "target is a friendly tank", "same hex",
            "shooter cannot attack (out or panicked)", "no such shooter", "target is not a tank"} <= reasons, reasons
    assert checked > 20_000 and legal > 200 and hypo > 300, (checked, legal, hypo)
    assert {"fled", "incapacitated", "panicked"} <= states, states
    assert seen_any and rams > 20, rams


def test_direct_shot_equals_the_sight_entry_on_random_boards():
    rnd = random.Random(11)
    tried = hidden = 0
    for _ in range(40):
        cells = {Hex(q, r) for q in range(-6, 7) for r in range(-6, 7)}
        block = set(rnd.sample(sorted(cells), rnd.randint(0, 40)))
        hard = set(rnd.sample(sorted(cells), rnd.randint(0, 20)))

        def flags_of(h: Hex, block: set[Hex] = block, hard: set[Hex] = hard) -> Any:
            return flags(blocks_los=h in block, hard_cover=h in hard, tall=h in block)

        board = HQBoard(cells, flags_of, lambda h: None)
        grid = board.sight_grid()
        for _ in range(60):
            a, z = rnd.sample(sorted(cells), 2)
            for rule in ("two_lines", "one_line"):
                got = direct_shot(grid, a, z, rule)
                assert got == crossed(board, a, z, rule)[2].direct_shot, (a, z, rule, sorted(block))
                tried += 1
                hidden += not got
    # an end off the grid's box: no answer (the caller asks ``crossed``)
    assert direct_shot(grid, Hex(40, 40), Hex(0, 0), "two_lines") is None
    assert tried == 4800 and 200 < hidden < 4600, (tried, hidden)


def _flee_full_search(board: Any, c: Hex, s: int, es: list[Hex]) -> tuple[Hex, ...] | None:
    """The flee path of ``flee_plan`` with the breadth-first search run over every reachable hex (no early stop),
    or ``None`` when the straight path is taken (no search)."""
    from collections import deque

    from sim.hexgrid import DIRECTIONS, distance
    from sim.rules.hummel_quest.panic import sectors_of

    counts = [0] * 6
    for e in es:
        for k in sectors_of((e.q - c.q, e.r - c.r)):
            counts[k] += 1

    def aim(k: int) -> Hex:
        return Hex(c.q + s * DIRECTIONS[k].q, c.r + s * DIRECTIONS[k].r)

    k = min((k for k in range(6) if counts[k] == min(counts)),
            key=lambda k: (-min(distance(aim(k), e) for e in es), -sum(distance(aim(k), e) for e in es), k))
    a = aim(k)
    if all(board.enterable(Hex(c.q + i * DIRECTIONS[k].q, c.r + i * DIRECTIONS[k].r)) for i in range(1, s + 1)):
        return None
    pred, steps, queue = {c: c}, {c: 0}, deque([c])
    while queue:
        u = queue.popleft()
        for n in u.neighbours():
            if n not in pred and board.enterable(n):
                pred[n], steps[n] = u, steps[u] + 1
                queue.append(n)
    goal = a if a in pred else min(pred, key=lambda h: (distance(h, a), steps[h], h.q, h.r))
    rev = []
    while goal != c:
        rev.append(goal)
        goal = pred[goal]
    return tuple(reversed(rev))[:s]


def test_flee_search_stopped_early_equals_the_full_search():
    from sim.rules.hummel_quest.panic import flee_plan

    rnd = random.Random(5)
    searched = aim_blocked = 0
    for _ in range(2000):
        cells = {Hex(q, r) for q in range(-4, 5) for r in range(-4, 5)}
        walls = set(rnd.sample(sorted(cells), rnd.randint(0, 30)))
        tanks = set(rnd.sample(sorted(cells - walls), rnd.randint(1, 12)))
        c = rnd.choice(sorted(tanks))
        es = rnd.sample(sorted(tanks - {c}), min(len(tanks) - 1, rnd.randint(1, 4))) if len(tanks) > 1 else []
        if not es:
            continue

        def flags_of(h: Hex, walls: set[Hex] = walls) -> Any:
            return flags(passable=h not in walls)

        board = HQBoard(cells, flags_of, lambda h, tanks=tanks: 0 if h in tanks else None)
        s = rnd.randint(1, 5)
        want = _flee_full_search(board, c, s, es)
        plan = flee_plan(board, c, s, es)
        if want is not None:
            assert plan.path == want, (c, s, es, sorted(walls), sorted(tanks))
            searched += 1
            aim_blocked += plan.aim_hex is not None and not board.enterable(plan.aim_hex)
    assert searched > 100 and aim_blocked > 50, (searched, aim_blocked)
