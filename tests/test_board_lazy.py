"""The board's lazy views (issue 14: a battle pays for the cells it touches, not the map) against the direct
computations: the lazy adjacency, the convexity a scenario gives its board, the set-up event's board block and its
JSON written once per board."""
from __future__ import annotations

import json
import random

import pytest

from sim.events import to_json
from sim.hexgrid import (
    Adjacency,
    Hex,
    HexMap,
    convex_shape,
    hexagon_hexes,
    parallelogram_hexes,
    rectangle_hexes,
)
from sim.runner import _setup_json, run_battle
from sim.scenario import load_scenario, validate


def _boards(rng: random.Random, n: int):
    for trial in range(n):
        kind = trial % 4
        if kind == 0:
            cells = rectangle_hexes(rng.randint(1, 12), rng.randint(1, 12))
        elif kind == 1:
            cells = hexagon_hexes(rng.randint(1, 6))
        elif kind == 2:
            cells = parallelogram_hexes(rng.randint(1, 9), rng.randint(1, 9))
        else:
            cells = list({Hex(rng.randint(-5, 5), rng.randint(-5, 5)) for _ in range(rng.randint(1, 80))})
        cells = list(cells)
        if trial % 3:
            rng.shuffle(cells)  # any board order: the neighbour order follows it
        yield cells


def test_lazy_adjacency_equals_the_graph_order_on_random_boards():
    rng = random.Random(14)
    for cells in _boards(rng, 200):
        m = HexMap(cells if rng.random() < 0.5 else [tuple(c) for c in cells])
        lazy = m.adjacency()
        assert isinstance(lazy, Adjacency)
        want = m._adjacency()  # every cell at once, without the graph
        asked = list(cells)
        rng.shuffle(asked)
        for h in asked:  # asked in any order, answered as the graph orders them
            assert lazy[h] == want[h]
        assert list(lazy) == list(want) and len(lazy) == len(want) and lazy == want
        assert dict(lazy.items()) == {h: tuple(n) for h, n in m.graph.adjacency()}


def test_lazy_adjacency_is_read_only_and_refuses_hexes_off_the_board():
    m = HexMap(rectangle_hexes(4, 3))
    adj = m.adjacency()
    with pytest.raises(KeyError):
        adj[Hex(50, 50)]
    assert adj.get(Hex(50, 50)) is None and Hex(50, 50) not in adj and Hex(0, 0) in adj
    assert adj.get((0, 0)) == adj[Hex(0, 0)] == (Hex(0, 1), Hex(1, 0))
    for mutate in (lambda: adj.__setitem__(Hex(0, 0), ()), lambda: adj.pop(Hex(0, 0)), adj.clear,
                   lambda: adj.update({}), lambda: adj.setdefault(Hex(0, 0), ())):
        with pytest.raises(TypeError):
            mutate()
    assert m.neighbours((0, 0)) == [Hex(0, 1), Hex(1, 0)]


@pytest.mark.parametrize("mp", [{"shape": "rectangle", "width": 9, "height": 4},
                                {"shape": "rectangle", "width": 2, "height": 1},
                                {"shape": "parallelogram", "width": 5, "height": 7},
                                {"shape": "hexagon", "radius": 4},
                                {"shape": "layout", "layout": "....\n.-..\n....\n", "legend": {"-": None}}])
def test_a_scenario_board_says_whether_it_is_convex_as_convex_shape_finds(mp):
    spec = validate({"map": mp, "sides": [{"name": "A", "tanks": [{"vehicle": "t34_85", "hex": [0, 0]}]},
                                          {"name": "B", "tanks": [{"vehicle": "pz_iv_h", "hex": [1, 0]}]}]}, "t")
    m = spec.build_map()
    assert m.convex() == convex_shape(m.cells)
    assert m.sorted_cells() == sorted(m.cells)


def test_board_block_and_its_json_equal_the_direct_ones():
    big = {"name": "big", "turn_limit": 1, "map": {"shape": "rectangle", "width": 40, "height": 30, "terrain": [
        {"tile": "woods", "center": [20, 5], "radius": 3}, {"tile": "water", "hexes": [[3, 3], [39, -10]]}]},
        "sides": [{"name": "A", "tanks": [{"vehicle": "t34_85", "hex": [0, 0]}]},
                  {"name": "B", "tanks": [{"vehicle": "pz_iv_h", "hex": [39, -19], "facing": 4}]}]}
    for spec in (validate(big, "big"), load_scenario("default")):
        out: list = []
        r = run_battle(spec, seed=3, model_out=out)
        model = out[0]
        m = model.battle.map
        ev = model.battle.log[0].event
        cells = sorted(m.cells)
        assert ev.map["cells"] == tuple(cells) and all(type(h) is Hex for h in ev.map["cells"])
        assert ev.map["cells"] is model.setup_board[0]  # held by reference, not copied
        assert ev.map["terrain"] == {f"{h.q},{h.r}": t for h in cells if (t := m.terrain(h)) != "open"}
        plain = to_json(ev.payload())
        assert r.events[0]["data"] == plain
        assert model.setup_board[2]  # the JSON was kept for the next battle on this board
        assert _setup_json(ev, model.setup_board) == plain
        other = dict(ev.map, cells=list(ev.map["cells"][:-1]))  # not this board's block: written the plain way
        assert _setup_json(type(ev)(**{**ev.__dict__, "map": other}), model.setup_board) is None
        equal = dict(ev.map, cells=tuple(list(ev.map["cells"])))  # equal cells, another tuple: the plain way too
        assert _setup_json(type(ev)(**{**ev.__dict__, "map": equal}), model.setup_board) is None
        assert to_json(type(ev)(**{**ev.__dict__, "map": equal}).payload()) == plain
        assert json.loads(plain)["map"]["cells"] == [[h.q, h.r] for h in cells]


def test_terrain_index_sets_equal_the_pass_over_cells():
    """HexMap.cells_with_terrain (the cells of some terrains, from the terrain mapping) gives Panzer Squadron's
    sight obstacles and impassable cells exactly as the pass over cells with the Tiles and ``passable`` does: the
    bundled ``default`` battle (woods, building, water) and random PS terrain on a rectangle, before and after a
    terrain change (fixed seed)."""
    from itertools import filterfalse

    from sim.model import build_battle

    rng = random.Random(24)
    spec = load_scenario("default")
    b = build_battle(spec)
    rs = b.ruleset
    names = list(rs.tiles(b.options))
    boards = [b.map, HexMap(rectangle_hexes(30, 20),
                            {h: rng.choice(names) for h in rectangle_hexes(30, 20) if rng.random() < 0.3})]
    for m in boards:
        b.map = m
        for _ in range(2):
            tiles = rs.tiles(b.options)
            assert rs.static_obstacles(b) == frozenset(h for h in m.cells if tiles[m.terrain(h)].blocks_los)
            blocked = m.cells_with_terrain(rs.impassable_terrains(b))
            assert blocked == frozenset(filterfalse(lambda h: rs.passable(b, h), m.sorted_cells()))
            assert blocked and rs.static_obstacles(b)
            m.set_terrain(next(h for h in m.sorted_cells() if m.terrain(h) == "open"), "water")
    assert boards[0].cells_with_terrain(()) == frozenset()
    fresh = HexMap(rectangle_hexes(9, 7), {Hex(2, 1): "water", Hex(3, 0): "open"}).for_another_battle()
    assert fresh.terrain_cells() == {Hex(2, 1): "water"} and fresh.cells_with_terrain(["water"]) == {Hex(2, 1)}
    m = boards[1]
    m.set_terrain(next(iter(m.terrain_cells())), "open")  # back to open: out of the index
    f = m.fork()
    f.set_terrain(next(h for h in f.sorted_cells() if f.terrain(h) == "open"), "building")
    for x in (m, f):
        direct = {h: x.terrain(h) for h in x.sorted_cells() if x.terrain(h) != "open"}
        assert x.terrain_cells() == direct and list(x.terrain_cells()) == sorted(direct)
        for names in (["water"], ["building", "woods"], ["open"], ["open", "water"]):
            assert x.cells_with_terrain(names) == frozenset(h for h in x.cells if x.terrain(h) in names)
    assert f.terrain_cells() != m.terrain_cells()


def test_a_scenario_plays_its_battles_on_copies_of_one_template_board_rebuilt_when_its_map_changes():
    """Scenario.battle_board (what run_battle plays on without a board): the battles of one scenario share one
    pristine template's static cache and give the logs of a board built afresh; a battle's terrain change stays on
    its own board; a terrain entry changed in place rebuilds the template; pickles and deep copies leave it out."""
    import copy
    import pickle

    spec = load_scenario("default")
    first = run_battle(spec, 5).events
    tpl = spec._template[3]
    assert tpl.terrain_version == 0 and run_battle(spec, 5).events == first and spec._template[3] is tpl
    assert run_battle(spec, 5, board=spec.build_map()).events == first
    a, b = spec.battle_board(), spec.battle_board()
    assert a is not b and a._static is b._static is tpl._static and a._terrain is not tpl._terrain
    assert a.terrain_cells() == tpl.terrain_cells() == spec.build_map().terrain_cells()
    h = next(c for c in a.sorted_cells() if a.terrain(c) == "open")
    a.set_terrain(h, "water")
    assert tpl.terrain(h) == b.terrain(h) == spec.battle_board().terrain(h) == "open" and tpl.terrain_version == 0
    for other in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec)):
        assert other._template is None and spec._template[3] is tpl
        assert run_battle(other, 5).events == first
    from sim.scenario import TEMPLATE_BATTLES

    served = spec._template[4][0]
    for _ in range(TEMPLATE_BATTLES - served):
        assert spec.battle_board()._static is tpl._static
    assert spec.battle_board()._static is not tpl._static and spec._template[4] == [1]  # a fresh template
    tpl = spec._template[3]
    spec.map.terrain[0].tile = "water"  # changed in place: the template is built again
    changed = spec.battle_board()
    assert spec._template[3] is not tpl
    assert changed.terrain_cells() == spec.build_map().terrain_cells() != tpl.terrain_cells()
    assert run_battle(spec, 5).events != first
