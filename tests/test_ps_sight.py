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


def test_shot_geometry_equals_the_reference():
    """sight.shot_geometry (distance, arc and aspect written out) returns exactly the dict of
    reference_shot_geometry (the helpers called one by one), key order included, on random boards: every facing,
    gun facing, both sight options, range limits, turretless firers, armour with ties (the boundary faces) and
    masked sides (fixed seed)."""
    import random

    from sim.rules.panzer_squadron.sight import reference_shot_geometry, shot_geometry

    rng = random.Random(23)
    cells = [Hex(q, r) for q in range(-4, 14) for r in range(-8, 10)]
    kinds: set = set()
    for i in range(1500):
        obs = frozenset(rng.sample(cells, rng.choice([0, 10, 40, 110])))
        a, b = rng.sample(cells, 2) if i % 10 else (cells[i % len(cells)],) * 2
        armour = {"front": rng.choice([3, 5]), "side": rng.choice([3, 5]), "rear": rng.choice([1, 3])}
        rules = SightRules(rng.choice(["centre", "front_vertex"]), rng.choice(["both", "either"]),
                           rng.choice([None, 6, 12]))
        args = (a, rng.randrange(6), rng.randrange(6), rng.random() < 0.7, b, rng.randrange(6), armour, obs, rules,
                rng.choice([-1, -2]))
        want = reference_shot_geometry(*args)
        got = shot_geometry(*args)
        assert list(got.items()) == list(want.items()), args
        kinds.add((want["boundary"], want["side_masked"], want["los"], want["shot_allowed"]))
    assert len(kinds) >= 8  # boundaries, masked sides, all three sight results, allowed and not


def test_hexside_mask_shortcut_equals_the_reference_seven_line_test():
    """count_clear_lines answers a line that runs along hexsides with no obstacle beside any of them from one bit
    mask (``SightLines.side_masks``) and the others hexside by hexside: both kinds of line occur often on random
    boards (dense and sparse, every range, both line origins, both hexside options), and every count equals the
    seven-line test written out (fixed seed)."""
    import random

    from sim.hexgrid import AIMS, Hex, count_clear_lines, sight_lines
    from sim.rules.panzer_squadron.sight import SightRules, reference_clear_lines

    rng = random.Random(5)
    cells = [Hex(q, r) for q in range(-3, 16) for r in range(-8, 12)]
    quiet = beside = 0
    for _ in range(400):
        obs = frozenset(rng.sample(cells, rng.choice([3, 12, 40, 120, 250])))
        a, b = rng.sample(cells, 2)
        for origin in (None, rng.randrange(6)):
            for mode in ("both", "either"):
                want = reference_clear_lines(a, 0, b, obs, SightRules("centre", mode), AIMS, origin)
                assert count_clear_lines(a, b, obs, origin, hexside_blocks=mode) == want, (a, b, origin, mode)
            for sides in sight_lines(b[0] - a[0], b[1] - a[1], origin).hexsides:
                if sides:
                    hit = any((ok1 and (a[0] + x1, a[1] + y1) in obs) or (ok2 and (a[0] + x2, a[1] + y2) in obs)
                              for x1, y1, x2, y2, ok1, ok2 in sides)
                    beside += hit
                    quiet += not hit
    assert quiet > 150 and beside > 150, (quiet, beside)
