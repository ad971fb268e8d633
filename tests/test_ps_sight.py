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


def test_footprint_count_equals_the_reference_seven_line_test():
    """sim.hexgrid.count_clear_lines (translation-invariant footprints) gives exactly the count of the seven-line
    test written out (near_obstacles + blocking_hexsides + line_blocked), for centre and vertex origins, both
    hexside options, random obstacle sets and pairs at every range (fixed seed)."""
    import random

    from sim.hexgrid import Hex, count_clear_lines
    from sim.rules.panzer_squadron.sight import SightRules, reference_clear_lines

    rng = random.Random(14)
    cells = [Hex(q, r) for q in range(-3, 16) for r in range(-8, 12)]
    checked = 0
    for _ in range(300):
        obs = frozenset(rng.sample(cells, rng.choice([3, 12, 40, 120])))
        a, b = rng.sample(cells, 2)
        for origin in (None, rng.randrange(6)):
            for mode in ("both", "either"):
                aims = (None, 0, 1, 2, 3, 4, 5) if origin is None else tuple(rng.sample(range(6), 3))
                want = reference_clear_lines(a, 0, b, obs, SightRules("centre", mode), aims, origin)
                assert count_clear_lines(a, b, obs, origin, aims, hexside_blocks=mode) == want, (a, b, origin, mode)
                checked += 1
    assert checked == 1200
