"""Hummel Quest batched shots (issue 14): ``shots`` / ``shots_at`` give exactly the answers of ``shot`` one pair at a
time (the same shots, the same illegal reasons), and ``visible`` equals ``los`` pair by pair, on a real battle
played forward (tanks move, lose DT and OST, panic, flee and are knocked out), for real and what-if positions, bad
ids and structure hexes; and the direct-shot bit the batch reads (``sight.direct_shot``) equals the full sight
entry on random boards."""
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
    assert seen_any


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
