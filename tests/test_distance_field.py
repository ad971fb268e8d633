"""The lazy distance field (issue 14): exact step counts, the same as a whole-map breadth-first search, and the same
iteration order as networkx's ``bfs_layers`` on the passable subgraph (what ``HexMap.distance_field`` returned)."""
import random

import networkx as nx

from sim.hexgrid import (
    DistanceField,
    HexMap,
    convex_shape,
    distance,
    hexagon_hexes,
    parallelogram_hexes,
    rectangle_hexes,
)


def reference(m: HexMap, sources, passable) -> dict:
    """The old answer: ``bfs_layers`` from all passable sources on the passable subgraph."""
    g = m.graph.subgraph([h for h in m.cells if passable(h)])
    srcs = list(dict.fromkeys(s for s in sources if s in g))
    if not srcs:
        return {}
    return {h: steps for steps, layer in enumerate(nx.bfs_layers(g, srcs)) for h in layer}


def test_rectangles_parallelograms_hexagons_are_convex_shapes():
    """Every rectangle up to 12 x 12 (and the other two shapes): step counts equal hex distances, so
    :func:`convex_shape` may answer True for them; other cell sets are not claimed."""
    shapes = [rectangle_hexes(w, h) for w in range(1, 13) for h in range(1, 13)]
    shapes += [parallelogram_hexes(w, h) for w in (1, 3, 6) for h in (1, 4, 7)] + [hexagon_hexes(r) for r in range(5)]
    for cells in shapes:
        assert convex_shape(frozenset(cells))
        m = HexMap(cells)
        for a in cells[:: max(1, len(cells) // 9)]:
            field = reference(m, [a], lambda h: True)
            assert all(field[b] == distance(a, b) for b in cells)
    # shifted by an even number of columns and some rows: still a rectangle
    assert convex_shape(frozenset((q + 2, r - 3) for q, r in rectangle_hexes(5, 4)))
    # an L, a rectangle with a hole in its edge, an odd shift of a rectangle: not claimed
    assert not convex_shape(frozenset(parallelogram_hexes(4, 4)) - {(3, 3), (3, 2), (2, 3)})
    assert not convex_shape(frozenset(rectangle_hexes(6, 6)) - {(3, -1)})
    assert not convex_shape(frozenset((q + 1, r) for q, r in rectangle_hexes(5, 4)))
    assert not convex_shape(frozenset())


def test_lazy_field_matches_bfs_on_random_boards():
    """Random boards (convex and not) with random impassable cells and sources: every lookup (asked in random order,
    before and after the search finished) and the iteration order equal the whole-map search's."""
    rng = random.Random(14)
    boards = [rectangle_hexes(9, 8), rectangle_hexes(12, 5), parallelogram_hexes(7, 9), hexagon_hexes(5),
              [h for h in rectangle_hexes(10, 10) if distance(h, (5, 0)) > 2]]  # a bite out of the middle
    for cells in boards:
        for trial in range(6):
            m = HexMap(cells)
            blocked = set(rng.sample(cells, rng.choice((0, 1, 3, len(cells) // 5, len(cells) // 2))))
            passable = lambda h, m=m, blocked=blocked: h in m and h not in blocked  # noqa: E731
            sources = rng.sample(cells, rng.choice((1, 2, 5))) + [(99, 99)]  # one off the board
            want = reference(m, sources, passable)
            field = m.distance_field(sources, passable, passable_key=("t", trial), static=True)
            probes = list(cells) + [(99, 99), (-5, 40)]
            rng.shuffle(probes)
            for h in probes[: len(probes) // 2]:
                assert field.get(h) == want.get(h), (h, sources)
                assert (h in field) == (h in want)
            assert list(field) == list(want)  # the order of bfs_layers
            assert dict(field.items()) == want and len(field) == len(want)
            for h in probes:
                assert field.get(h, -1) == want.get(h, -1)
            # the eager form (a passable that may read wrecks) gives the same
            eager = m.distance_field(sources, passable, passable_key=None, static=False)
            assert list(eager.items()) == list(want.items())


def test_hex_distance_answer_needs_a_clear_shortest_path():
    """A wall between source and lookup: the hex distance is not the answer (the search is), and a wall off the
    shortest paths does not stop the hex-distance answer."""
    cells = rectangle_hexes(9, 9)
    m = HexMap(cells)
    wall = {(4, r) for r in range(-2, 7)} - {(4, 6)}  # column 4 closed but for its southmost cell
    passable = lambda h: h in m and h not in wall  # noqa: E731
    field = m.distance_field([(0, 2)], passable, passable_key="wall", static=True)
    want = reference(m, [(0, 2)], passable)
    assert field[(8, -2)] == want[(8, -2)] > distance((0, 2), (8, -2))
    assert field[(2, 1)] == distance((0, 2), (2, 1)) == want[(2, 1)]
    assert (4, 0) not in field and field.get((4, 0), "x") == "x"
    empty = DistanceField([(4, 0)], dict(m.graph.adjacency()), m.cells, frozenset(wall), True)
    assert len(empty) == 0 and empty.get((0, 0)) is None
