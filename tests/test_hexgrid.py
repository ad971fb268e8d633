"""Geometry properties (CONVENTIONS.md): distance, lines, aspect boundaries, the exact sight frame."""
from __future__ import annotations

import math

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.hexgrid import (
    DIRECTIONS,
    Hex,
    HexMap,
    _hex_line_direct,
    aspect,
    bounded_dijkstra,
    distance,
    frame_centre,
    hex_line,
    hexagon_hexes,
    in_arc,
    rectangle_hexes,
)

coord = st.integers(-12, 12)
hexes = st.builds(Hex, coord, coord)
OPEN = HexMap(hexagon_hexes(26))


@settings(deadline=None, max_examples=150)
@given(hexes, hexes)
def test_distance_symmetric_and_equals_bfs(a, b):
    assert distance(a, b) == distance(b, a)
    assert distance(a, b) == nx.shortest_path_length(OPEN.graph, a, b)


@settings(deadline=None, max_examples=300)
@given(hexes, hexes)
def test_lines_contiguous(a, b):
    line = hex_line(a, b)
    assert line[0] == a and line[-1] == b
    assert len(line) == distance(a, b) + 1
    assert all(distance(x, y) == 1 for x, y in zip(line, line[1:]))


def test_lines_are_translation_invariant_as_hex_line_assumes():
    """hex_line translates the cached line from (0, 0); it must equal the direct nudged interpolation from every
    start: every offset up to 30 hexes from starts near the origin and far out (up to the 200 x 200 board
    limit, where float errors are largest)."""
    offsets = [(dq, dr) for dq in range(-30, 31) for dr in range(-30, 31)]
    starts = [(0, 0), (7, -3), (-11, 5), (199, -100), (-150, 199), (123, 77)]
    bad = [(a, d) for a in starts for d in offsets
           if hex_line(a, (a[0] + d[0], a[1] + d[1])) != _hex_line_direct(a, (a[0] + d[0], a[1] + d[1]))]
    assert not bad, bad[:5]


@settings(deadline=None, max_examples=400)
@given(st.builds(Hex, st.integers(-200, 200), st.integers(-200, 200)),
       st.builds(Hex, st.integers(-200, 200), st.integers(-200, 200)))
def test_lines_translated_equal_the_direct_interpolation_anywhere(a, b):
    assert hex_line(a, b) == _hex_line_direct(a, b)


def _bearing_delta(target, facing, shooter) -> float:
    tx, ty = 1.5 * target[0], -(math.sqrt(3) / 2 * target[0] + math.sqrt(3) * target[1])
    sx, sy = 1.5 * shooter[0], -(math.sqrt(3) / 2 * shooter[0] + math.sqrt(3) * shooter[1])
    d = math.degrees(math.atan2(sy - ty, sx - tx)) - 60 * facing
    return (d + 180) % 360 - 180


@settings(deadline=None, max_examples=400)
@given(hexes, st.integers(0, 5), hexes)
def test_aspect_boundary_exactly_on_hexspines(target, facing, shooter):
    if target == shooter:
        return
    asp = aspect(target, facing, shooter)
    d = abs(_bearing_delta(target, facing, shooter))
    on_spine = min(abs(d - 60), abs(d - 120)) < 1e-7
    assert asp.boundary == on_spine
    if not on_spine:
        expect = "front" if d < 60 else "rear" if d > 120 else "side"
        assert asp.face == expect


def test_directions_and_facing_conventions():
    # direction k at 30 + 60k degrees
    for k, dvec in enumerate(DIRECTIONS):
        x, y = 1.5 * dvec[0], -(math.sqrt(3) / 2 * dvec[0] + math.sqrt(3) * dvec[1])
        assert round(math.degrees(math.atan2(y, x)) % 360) == (30 + 60 * k) % 360
    # a facing's front hexsides are directions f and f-1: both neighbours inside the inclusive arc
    for f in range(6):
        assert in_arc(Hex(0, 0), Hex(0, 0).neighbour(f), f)
        assert in_arc(Hex(0, 0), Hex(0, 0).neighbour(f - 1), f)
        assert not in_arc(Hex(0, 0), Hex(0, 0).neighbour(f + 2), f)


def test_frame_centre_matches_layout():
    for h in [Hex(0, 0), Hex(2, -1), Hex(-3, 4)]:
        x, y = frame_centre(h)
        fx, fy = 1.5 * h.q, -(math.sqrt(3) / 2 * h.q + math.sqrt(3) * h.r)
        assert math.isclose(x / 2, fx) and math.isclose(y * math.sqrt(3) / 2, fy)


def test_rectangle_map_and_version_cache():
    m = HexMap(rectangle_hexes(25, 25))
    expected_edges = sum(1 for h in m.cells for k in range(6) if h.neighbour(k) in m) // 2
    assert len(m) == 625 and m.graph.number_of_edges() == expected_edges
    assert all(m.graph.degree(h) == sum(h.neighbour(k) in m for k in range(6)) for h in m.cells)
    calls = []
    m.cached("k", lambda: calls.append(1) or 1)
    m.cached("k", lambda: calls.append(1) or 1)
    assert len(calls) == 1
    m.set_terrain(Hex(3, 3), "woods")
    m.cached("k", lambda: calls.append(1) or 1)
    assert len(calls) == 2 and m.version == 1


def test_bounded_dijkstra_respects_budget():
    def succ(s):
        h, f = s
        yield (h.neighbour(f), f), 1
        yield (h, (f + 1) % 6), 1
    res = bounded_dijkstra((Hex(0, 0), 0), succ, 3)
    assert res[(Hex(0, 0), 0)][0] == 0
    assert res[(Hex(3, -3), 0)] == (3, [(Hex(0, 0), 0), (Hex(1, -1), 0), (Hex(2, -2), 0), (Hex(3, -3), 0)])
    assert all(c <= 3 for c, _ in res.values())


def test_sight_lines_by_symmetry_equal_the_direct_computation():
    """sim.hexgrid.sight_lines computes one of the twelve images of an offset under the grid's turns and mirrors
    and maps the others: every offset within 7 hexes, from the centre and from every vertex, has exactly the
    hexes and hexsides (and the bit masks, for two strides) of the direct computation."""
    from sim.hexgrid import AIMS, SightLines, sight_lines

    derived = 0
    for dq in range(-7, 8):
        for dr in range(-7, 8):
            if not 2 <= distance((0, 0), (dq, dr)) <= 7:
                continue
            for origin in (None, 0, 1, 2, 3, 4, 5):
                got, want = sight_lines(dq, dr, origin), SightLines(dq, dr, origin)
                assert got.hexes == want.hexes and got.hexsides == want.hexsides, (dq, dr, origin)
                assert len(got.hexes) == len(AIMS) and any(got.hexes)
                for w in (16, 64):
                    assert got.masks(w) == want.masks(w), (dq, dr, origin, w)
                derived += got._image is not None
    assert derived > 1000  # most come from another image: the symmetry was used, not only the direct path



def test_entered_hexes_by_separating_axes_equal_the_clipping():
    """sim.hexgrid._entered_many (the separating-axis test on all hexes, segments and edges at once) gives exactly
    the hexes of the Cyrus-Beck clipping (_entered_many_clipped) for every offset within 9 hexes from the centre
    and every vertex, and of segment_enters_hex for random segments, one-point segments and segments along
    hexsides and through vertices included (fixed seed)."""
    import random

    from sim.hexgrid import (
        FRAME_VERTICES,
        _ellipse_offsets,
        _entered_many,
        _entered_many_clipped,
        frame_centre,
        frame_vertex,
        segment_enters_hex,
    )

    for dq in range(-9, 10):
        for dr in range(-9, 10):
            if (dq, dr) == (0, 0):
                continue
            for origin in (None, 0, 1, 2, 3, 4, 5):
                o = frame_centre((0, 0)) if origin is None else frame_vertex((0, 0), origin)
                ps = [frame_centre((dq, dr))] + [frame_vertex((dq, dr), k) for k in range(6)]
                assert _entered_many(dq, dr, o, ps) == _entered_many_clipped(dq, dr, o, ps), (dq, dr, origin)
    rng = random.Random(14)
    entered = 0
    for _ in range(1500):
        dq, dr = rng.randint(-6, 6), rng.randint(-6, 6)
        if (dq, dr) == (0, 0):
            continue
        o = (rng.randint(-3, 3), rng.randint(-3, 3))
        v = FRAME_VERTICES[rng.randrange(6)]
        ps = [(rng.randint(-20, 20), rng.randint(-20, 20)), o, (o[0] + 4 * v[0], o[1] + 4 * v[1]),
              (o[0] + 3 * (v[0] - FRAME_VERTICES[0][0]), o[1] + 3 * (v[1] - FRAME_VERTICES[0][1]))]
        got = _entered_many(dq, dr, o, ps)
        cand = _ellipse_offsets(dq, dr)
        assert got == [tuple(h for h in cand if segment_enters_hex(o, p, h)) for p in ps], (dq, dr, o, ps)
        entered += sum(map(len, got))
    assert entered > 1000


def test_sight_line_masks_equal_the_bit_by_bit_formula():
    """SightLines.masks (made with numpy from the candidates' arrays) sets exactly bit ``x + w * y - low`` for each
    hex ``(x, y)`` an aim's line enters, ``low`` the least such index: long lines of a big map (directly made and
    derived by symmetry) and short ones, for several row strides (fixed seed)."""
    import random

    from sim.hexgrid import SightLines, sight_lines

    rng = random.Random(24)
    offsets = [(99, -49), (99, 0), (0, 99), (-60, 20), (2, 0), (1, 1)] + [
        (rng.randint(-110, 110), rng.randint(-110, 110)) for _ in range(12)]
    for dq, dr in offsets:
        for origin in (None, rng.randrange(6)):
            for lines in (SightLines(dq, dr, origin), sight_lines(dq, dr, origin)):
                for w in (16, 128, 256):
                    flat = [[x + w * y for x, y in hs] for hs in lines.hexes]
                    low = min((min(f) for f in flat if f), default=0)
                    want = tuple(sum(1 << (i - low) for i in set(f)) for f in flat)
                    assert lines.masks(w) == (low, want), (dq, dr, origin, w)


def test_hex_line_array_equals_the_direct_interpolation():
    """sim.hexgrid._hex_line_array (numpy, used for the sight ellipse's band) gives exactly the hexes of
    _hex_line_direct from (0, 0): every offset within 20 hexes and random long ones up to 400 (fixed seed)."""
    import random

    from sim.hexgrid import _hex_line_array, _hex_line_direct

    rng = random.Random(24)
    offsets = [(dq, dr) for dq in range(-20, 21) for dr in range(-20, 21)]
    offsets += [(rng.randint(-400, 400), rng.randint(-400, 400)) for _ in range(400)]
    for dq, dr in offsets:
        got = [tuple(h) for h in _hex_line_array(dq, dr).tolist()]
        assert got == [tuple(h) for h in _hex_line_direct((0, 0), (dq, dr))], (dq, dr)


def test_lazy_graph_and_adjacency_agree_with_networkx_built_the_plain_way():
    """HexMap builds its networkx graph only when asked: the graph then equals one built with add_nodes_from /
    add_edge (nodes, terrain and neighbour order), and adjacency() made without the graph gives the same order."""
    cells = rectangle_hexes(7, 5)
    terrain = {cells[3]: "woods", cells[10]: "water"}
    m = HexMap(cells, terrain)
    assert m._graph is None and m.terrain(cells[3]) == "woods"
    adj = m.adjacency()  # made without the graph
    assert m._graph is None
    g = nx.Graph()
    g.add_nodes_from(cells, terrain="open")
    for h in cells:
        for k in (0, 4, 5):
            if h.neighbour(k) in set(cells):
                g.add_edge(h, h.neighbour(k))
    for h, t in terrain.items():
        g.nodes[h]["terrain"] = t
    assert list(m.graph.nodes(data=True)) == list(g.nodes(data=True))
    assert {h: list(n) for h, n in m.graph.adjacency()} == {h: list(n) for h, n in g.adjacency()}
    assert [list(m.graph.neighbors(h)) for h in cells] == [list(adj[h]) for h in cells]
    other = m.for_another_battle()
    assert other._graph is None and other.adjacency() is adj and other.terrain(cells[10]) == "water"
    other.set_terrain(cells[0], "woods")
    assert m.terrain(cells[0]) == "open" and other.graph.nodes[cells[0]]["terrain"] == "woods"


def test_obstacle_grid_bits_equal_the_bit_by_bit_formula():
    """sim.hexgrid._ObstacleGrid (bits set in a byte array) has exactly bit ``(q - q0) + w * (r - r0)`` for each
    obstacle inside its box and no other: random obstacle sets and boxes (fixed seed)."""
    import random

    from sim.hexgrid import _ObstacleGrid

    rng = random.Random(24)
    for _ in range(200):
        obs = {(rng.randint(-20, 120), rng.randint(-60, 120)) for _ in range(rng.randint(0, 300))}
        lo = (rng.randint(-30, 10), rng.randint(-70, 10))
        hi = (lo[0] + rng.randint(0, 140), lo[1] + rng.randint(0, 190))
        g = _ObstacleGrid(obs, lo, hi)
        want = 0
        for q, r in obs:
            if lo[0] <= q <= hi[0] and lo[1] <= r <= hi[1]:
                want |= 1 << ((q - g.q0) + g.w * (r - g.r0))
        assert g.bits == want


def test_ellipse_arrays_equal_the_band_filtered_directly():
    """sim.hexgrid._ellipse_arrays (the band marked on a grid) lists exactly the hexes within 2 of hex_line of
    the ellipse (slack 3), ends left out, sorted by (q, r): every offset within 12 and random ones up to 150."""
    import random

    from sim.hexgrid import _BAND, _ellipse_arrays, hex_line

    rng = random.Random(24)
    offsets = [(a, b) for a in range(-12, 13) for b in range(-12, 13) if (a, b) != (0, 0)]
    offsets += [(rng.randint(-150, 150), rng.randint(-150, 150)) for _ in range(150)]
    for dq, dr in offsets:
        d = distance((0, 0), (dq, dr))
        cells = {(h[0] + a, h[1] + b) for h in hex_line((0, 0), (dq, dr)) for a, b in _BAND}
        want = sorted(c for c in cells if distance(c, (0, 0)) + distance(c, (dq, dr)) <= d + 3
                      and c not in ((0, 0), (dq, dr)))
        q, r, x, y = _ellipse_arrays(dq, dr)
        assert list(zip(q.tolist(), r.tolist())) == want, (dq, dr)
        assert x.tolist() == [3 * a for a in q.tolist()] and y.tolist() == [-(a + 2 * b) for a, b in want]
