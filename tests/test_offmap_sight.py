"""Cells off the map are open ground for every sight rule of every rule set (CONVENTIONS.md "Lines", amended).

A line between two hexes of a ``rectangle`` board may pass cells off it along the ragged edge.  The property: on a
ragged board, every sight answer (ASL LOS and Case R hindrance, Panzer Squadron's seven lines and masked side,
Hummel Quest's two lines and hard cover) equals the answer on the same board grown by a ring of open cells, for all
ordered pairs of hexes, and asking is never an error.  Plus one 25 x 25 ASL battle of 50 AFVs a side in the first
and last columns, where the unfixed LOS raised ``KeyError: Hex(q=2, r=24)``.
"""
from __future__ import annotations

import pytest

from sim.battle import MemoryBattle
from sim.hexgrid import HexMap, hex_line, rectangle_hexes
from sim.rules.asl import ASL
from sim.rules.hummel_quest import HummelQuest, sight
from sim.rules.panzer_squadron import PanzerSquadron
from sim.rules.panzer_squadron.sight import SightRules, clear_lines, shot_geometry

WIDTH, HEIGHT = 9, 7
CELLS = rectangle_hexes(WIDTH, HEIGHT)
RING = sorted({n for h in CELLS for n in h.neighbours()} - set(CELLS))
BOTTOM = [h for h in CELLS if h.r == -(h.q // 2) + HEIGHT - 1]
TOP = [h for h in CELLS if h.r == -(h.q // 2)]


def _terrain(block: str, cover: str | None = None) -> dict:
    """Obstacles on the ragged bottom and top edges (every other cell) and in the middle; hard cover beside."""
    ter = {h: block for h in BOTTOM[::2] + TOP[1::2]}
    ter[CELLS[len(CELLS) // 2]] = block
    if cover:
        ter.update({h: cover for h in BOTTOM[1::4]})
    return ter


def _pairs():
    return [(a, c) for a in CELLS for c in CELLS if a != c]


def test_the_board_has_lines_through_off_map_cells():
    cells = set(CELLS)
    off = [(a, c) for a, c in _pairs() if any(h not in cells for h in hex_line(a, c))]
    assert len(off) == 12 and RING


def test_sight_terrain_off_the_map_is_open_and_never_raises():
    m = HexMap(CELLS, {CELLS[0]: "woods"})
    assert m.sight_terrain(CELLS[0]) == "woods" and m.sight_terrain((2, 99)) == "open"
    with pytest.raises(KeyError):
        m.terrain((2, 99))            # movement and set-up still may not ask about cells off the map


def _asl_board(cells):
    rules = ASL()
    # two stationary AFVs on the bottom row: Case R hindrance near the ragged edge
    tanks = [dict(side=0, vehicle="pzkpfw_iiih", hex=BOTTOM[1], facing=0),
             dict(side=1, vehicle="t34_m41", hex=BOTTOM[3], facing=3)]
    return rules, MemoryBattle(rules, cells=cells, terrain=_terrain("woods"), tanks=tanks)


def test_asl_los_off_map_cells_are_open_ground():
    rules, ragged = _asl_board(CELLS)
    _, grown = _asl_board(CELLS + RING)
    answers = {(a, c): rules.los(ragged, a, c) for a, c in _pairs()}
    assert answers == {(a, c): rules.los(grown, a, c) for a, c in _pairs()}
    assert {clear for clear, _ in answers.values()} == {True, False}
    assert any(h > 0 for clear, h in answers.values() if clear)     # hindrance is exercised too


@pytest.mark.parametrize("origin,hexside", [("centre", "both"), ("front_vertex", "either")])
def test_panzer_squadron_seven_lines_off_map_cells_are_open_ground(origin, hexside):
    rules = PanzerSquadron()
    sight = SightRules(origin, hexside)
    armour = {"front": 80, "side": 45, "rear": 30}

    def answers(cells):
        b = MemoryBattle(rules, cells=cells, terrain=_terrain("woods"))
        obstacles = rules.obstacles(b)
        return {(a, c, f): (clear_lines(a, f, c, obstacles, sight),
                            shot_geometry(a, f, f, True, c, (f + 3) % 6, armour, obstacles, sight))
                for a, c in _pairs() for f in (0, 4)}

    got = answers(CELLS)
    assert got == answers(CELLS + RING)
    assert {n for n, _ in got.values()} >= {0, 7} and any(g["side_masked"] for _, g in got.values())


@pytest.mark.parametrize("los_rule", ["two_lines", "one_line"])
def test_hummel_quest_lines_and_cover_off_map_cells_are_open_ground(los_rule):
    rules = HummelQuest()

    def answers(cells):
        b = MemoryBattle(rules, cells=cells, terrain=_terrain("woods", "rocks"))
        board = rules.board(b)
        out = {}
        for a, c in _pairs():
            s = rules.sight(b, a, c, board) if los_rule == "two_lines" else sight(board, a, c, los_rule="one_line")
            out[(a, c)] = (s.visibility, s.half_cover, s.direct_shot, s.tall_both)
        return out

    got = answers(CELLS)
    assert got == answers(CELLS + RING)
    assert {v for v, *_ in got.values()} >= {"visible", "hidden"} and any(hc for _, hc, *_ in got.values())


def test_asl_25x25_battle_with_tanks_in_the_first_and_last_columns_completes():
    """50 PzKpfw IIIH in columns 0-1 against 50 T-34 M41 in columns 23-24 (the bottom cells (1, 24) and (23, 13)
    see each other along the ragged edge, through the off-map cell (2, 24)); one Game Turn of ``hold``."""
    from sim.runner import run_battle
    from sim.scenario import validate
    cells = rectangle_hexes(25, 25)
    spec = {"name": "asl_edge_50v50", "ruleset": {"name": "asl"}, "turn_limit": 1,
            "map": {"shape": "rectangle", "width": 25, "height": 25, "hex_size_m": 40},
            "sides": [{"name": "West", "role": "attacker", "policy": "hold",
                       "tanks": [{"vehicle": "pzkpfw_iiih", "hex": list(h)} for h in cells if h.q in (0, 1)]},
                      {"name": "East", "policy": "hold",
                       "tanks": [{"vehicle": "t34_m41", "hex": list(h), "facing": 3}
                                 for h in cells if h.q in (23, 24)]}]}
    assert (2, 24) not in set(cells) and (2, 24) in hex_line((1, 24), (23, 13))
    row = run_battle(validate(spec, "asl_edge_50v50"), 0, record_events=False).row
    assert row["side1_tanks"] == row["side2_tanks"] == 50
    assert row["faults"] == 0 and row["shots"] > 0 and row["turns"] == 1
    assert row["reason"] == "turn limit 1 reached" or row["winner"] is not None
