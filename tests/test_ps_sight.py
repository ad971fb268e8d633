"""Panzer Squadron sight: the cached, filtered seven-line count equals a brute-force count over every obstacle."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.hexgrid import Hex, frame_centre, frame_vertex, hexagon_hexes
from sim.rules.panzer_squadron.sight import SightRules, blocking_hexsides, clear_lines, line_blocked

CELLS = hexagon_hexes(6)


def brute(firer, target, obstacles, rules):
    obs = sorted(set(obstacles) - {firer, target})
    sides = blocking_hexsides(obs, set(obs), rules.hexside_blocks)
    o = frame_centre(firer)
    aims = [frame_centre(target)] + [frame_vertex(target, k) for k in range(6)]
    return sum(not line_blocked(o, p, obs, sides) for p in aims)


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(CELLS), st.sampled_from(CELLS), st.sets(st.sampled_from(CELLS), max_size=25),
       st.sampled_from(["both", "either"]))
def test_filtered_equals_brute_force(firer, target, obstacles, hexside):
    if firer == target or max(abs(firer.q - target.q), abs(firer.r - target.r)) <= 1:
        return
    rules = SightRules(hexside_blocks=hexside)
    from sim.hexgrid import distance
    if distance(firer, target) <= 1:
        return
    assert clear_lines(firer, 0, target, obstacles, rules) == brute(firer, target, obstacles, rules)


def test_wall_between_blocks_everything():
    wall = [Hex(2, r) for r in range(-4, 3)]
    assert clear_lines(Hex(0, 0), 0, Hex(4, -2), wall, SightRules()) == 0
