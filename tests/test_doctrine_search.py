"""Doctrines that know of no enemy and have no objective make for the board's centre (``Doctrine.closing_goals``)
instead of holding all battle."""
from __future__ import annotations

from types import MappingProxyType, SimpleNamespace

from agents.policies.base import CENTRE_REACHED, Doctrine
from sim.generate import generate
from sim.hexgrid import Hex, distance, hexagon_hexes, rectangle_hexes
from sim.runner import run_battle
from sim.scenario import validate


class FakeObs:
    """The few observation queries the search helpers read: the board, passability, no enemy, no objective."""

    def __init__(self, cells, blocked=(), me=None, objectives=()):
        self._tm = MappingProxyType({h: "open" for h in sorted(cells)})
        self._blocked = set(blocked)
        self.me = SimpleNamespace(hex=me, facing=0) if me is not None else None
        self._objectives = list(objectives)
        self.passable_calls = 0

    def terrain_map(self):
        return self._tm

    def passable(self, h):
        self.passable_calls += 1
        return h in self._tm and h not in self._blocked

    def enemies(self):
        return []

    def last_known(self):
        return {}

    def objectives(self):
        return self._objectives

    def distance_field(self, sources):
        return {h: min(distance(h, s) for s in sources) for h in self._tm}


def brute_centre(cells, blocked=()):
    """The passable cells nearest the centroid, by Fractions over every cell (the definition)."""
    from fractions import Fraction

    n = len(cells)
    cq = Fraction(sum(h[0] for h in cells), n)
    cr = Fraction(sum(h[1] for h in cells), n)
    ok = [h for h in cells if h not in set(blocked)]

    def d(h):
        return max(abs(h[0] - cq), abs(h[1] - cr), abs(h[0] + h[1] - cq - cr))

    best = min(d(h) for h in ok)
    return tuple(sorted(h for h in ok if d(h) == best))


def test_board_centre_is_the_passable_cells_nearest_the_centroid():
    doc = Doctrine()
    hexagon = list(hexagon_hexes(4))
    assert doc.board_centre(FakeObs(hexagon)) == (Hex(0, 0),)
    # the centre blocked: the ring around it, every one equally near
    ring = doc.board_centre(FakeObs(hexagon, blocked=[Hex(0, 0)]))
    assert len(ring) == 6 and all(distance(h, Hex(0, 0)) == 1 for h in ring)
    for w, h in ((4, 4), (5, 7), (25, 25), (30, 30), (9, 2)):
        cells = list(rectangle_hexes(w, h))
        assert Doctrine().board_centre(FakeObs(cells)) == brute_centre(cells)
        blocked = brute_centre(cells)
        assert Doctrine().board_centre(FakeObs(cells, blocked=blocked)) == brute_centre(cells, blocked)
    assert Doctrine().board_centre(FakeObs(hexagon, blocked=hexagon)) == ()


def test_board_centre_asks_passable_only_near_the_centre_and_is_kept_per_terrain_map():
    cells = list(rectangle_hexes(60, 60))
    doc, obs = Doctrine(), FakeObs(cells)
    first = doc.board_centre(obs)
    assert obs.passable_calls <= 4
    assert doc.board_centre(obs) == first and obs.passable_calls <= 4  # the same terrain map: kept
    other = FakeObs(cells, blocked=first)  # a new terrain map (a terrain change): worked out again
    assert doc.board_centre(other) == brute_centre(cells, first)


def test_closing_goals_prefer_enemies_then_objectives_then_the_centre():
    cells = list(hexagon_hexes(5))
    doc = Doctrine()
    far = FakeObs(cells, me=Hex(5, 0))
    assert doc.searching(far) and doc.closing_goals(far) == (Hex(0, 0),)
    assert doc.goal_stop(far, 1) == CENTRE_REACHED and not doc.search_done(far)
    near = FakeObs(cells, me=Hex(2, 0))
    assert doc.search_done(near)  # within CENTRE_REACHED of the centre: it waits there
    with_obj = FakeObs(cells, me=Hex(5, 0), objectives=[{"hex": Hex(-3, 1), "points": 1}])
    assert not doc.searching(with_obj) and doc.closing_goals(with_obj) == (Hex(-3, 1),)
    assert doc.goal_stop(with_obj, 1) == 1 and not doc.search_done(with_obj)


def test_advance_and_greedy_go_looking_in_a_scenario_without_objectives():
    # a generated 30 x 30 Panzer Squadron board whose sides start out of sight; without its objective the doctrines
    # used to hold until the turn limit (0 shots, a draw); now both sides make for the centre and fight
    d = generate("random", {"ruleset": "panzer_squadron", "size": 30, "tanks": 3, "seed": 1})
    d.pop("objectives")
    spec = validate(d, "g1n.yaml")
    for pols in (("advance", "greedy"), ("greedy", "advance"), ("focus_fire", "advance")):
        r = run_battle(spec, 1, {0: (pols[0], {}), 1: (pols[1], {})}, decision_timeout_s=0)
        assert r.row["shots"] > 0 and r.row["winner_index"] in (0, 1), (pols, r.row["reason"])
    held = run_battle(spec, 1, {0: ("hold", {}), 1: ("hold", {})}, decision_timeout_s=0)
    assert held.row["shots"] == 0 and held.row["winner_index"] == -1  # hold still holds
