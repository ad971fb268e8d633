"""Search copies (sim/search.py, HexMap.fork) and the rule sets' ``play_activation`` hooks.

A search copy is independent of its original (tanks, occupancy, rule-set state, terrain, caches); dice for
simulations sample or replay as documented; ``drive`` applies the engine's legality rule and its budget; and each
rule set's hook plays exactly what ``play_turn`` plays for an activation: on a copy made at an ``activate``
decision, with the same dice and the same answers, the hook emits the same events with the same rolls as the real
battle does from that decision on.
"""
from __future__ import annotations

import copy
import random

import pytest

from sim.actions import Activate, Pass
from agents.controllers import SideController, load_policy
from agents.observation import Observation
from sim.dice import DiceSource
from sim.events import Moved, Status, StatusChanged, TerrainChanged
from sim.hexgrid import Hex
from sim.model import BattleModel, build_battle
from sim.scenario import load_scenario
from sim.search import ChosenDice, SampledDice, SearchBattle, drive, fork


def ps_battle():
    return build_battle(load_scenario("default"))


def test_fork_is_independent_of_its_original():
    b = ps_battle()
    before = [(t.hex, t.facing, t.status, dict(t.rules_state)) for t in b.tanks]
    occ = {h: b.occupants(h) for h in b.map.cells if b.occupants(h)}
    version, map_version, log = b.version, b.map.version, len(b.log)
    f = fork(b)
    assert isinstance(f, SearchBattle) and f.origin_version == b.version and f.log == []
    t0 = f.tanks[0]
    dest = next(n for n in t0.hex.neighbours() if n in f.map and not f.occupants(n))
    f.emit(Moved(0, dest, 2, 1))
    f.emit(StatusChanged(5, Status.DESTROYED, "test"))
    f.emit(TerrainChanged(tuple(dest), "woods"))
    f.tanks[1].rules_state["marker"] = "in_movement"
    assert (f.tanks[0].hex, f.tanks[0].facing) == (dest, 2) and f.occupants(dest) == (0,)
    assert f.occupants(before[0][0]) == () and f.map.terrain(dest) == "woods" and len(f.log) == 3
    assert [(t.hex, t.facing, t.status, dict(t.rules_state)) for t in b.tanks] == before
    assert {h: b.occupants(h) for h in b.map.cells if b.occupants(h)} == occ
    assert b.map.terrain(dest) == "open" and b.map.graph is not f.map.graph
    assert (b.version, b.map.version, len(b.log)) == (version, map_version, log)
    g = f.fork()
    g.emit(StatusChanged(6, Status.DESTROYED, "test"))
    assert f.tanks[6].status == Status.ACTIVE and g.tanks[5].status == Status.DESTROYED
    assert g.map.terrain(dest) == "woods" and g.occupants(dest) == (0,)


def test_fork_shares_caches_only_while_the_obstacles_are_the_same():
    b = ps_battle()
    calls = []
    assert b.map.cached(("probe",), lambda: calls.append(1) or "orig") == "orig"
    f = fork(b)
    assert f.map.cached(("probe",), lambda: calls.append(1) or "fork") == "orig" and len(calls) == 1
    f.emit(StatusChanged(5, Status.DESTROYED, "a wreck: the obstacles change"))
    assert f.map.cached(("probe",), lambda: "fork") == "fork"
    assert b.map.cached(("probe",), lambda: "again") == "orig"
    static = b.map.terrain_cached(("static",), lambda: "static")
    h = next(iter(sorted(b.map.cells)))
    f.emit(TerrainChanged(tuple(h), "woods"))
    assert f.map.terrain_cached(("static",), lambda: "new") == "new"
    assert b.map.terrain_cached(("static",), lambda: "other") == static


def test_fork_removes_and_places_tanks():
    b = ps_battle()
    spot = Hex(10, 0)
    assert spot in b.map and not b.occupants(spot)
    f = fork(b, remove=[5, 6], place={6: (spot, 4, 4, {"marker": "stationary"})})
    assert f.tanks[5].hex is None and f.tanks[5].rules_state == {} and f.tanks[5].status == Status.ACTIVE
    assert (f.tanks[6].hex, f.tanks[6].facing, f.tanks[6].rules_state) == (spot, 4, {"marker": "stationary"})
    assert f.occupants(spot) == (6,) and not f.occupants(b.tanks[5].hex) and not f.occupants(b.tanks[6].hex)
    assert [t.tank_id for t in f.live_tanks(1)] == [6, 7, 8]
    assert b.tanks[5].hex is not None and b.tanks[6].hex != spot
    with pytest.raises(ValueError, match="off the map"):
        fork(b, place={6: (Hex(500, 500), 0, None, {})})


def test_sampled_and_chosen_dice():
    a, b = SampledDice(random.Random(3)), SampledDice(random.Random(3))
    xs = [a.roll("d10") for _ in range(50)]
    assert xs == [b.roll("d10") for _ in range(50)] and set(xs) <= set(range(1, 11)) and len(set(xs)) > 5
    assert a.history == [] and a.take() == () and a.rolled == 50
    c = ChosenDice([10, 1, 4], random.Random(3))
    assert [c.roll("d10"), c.roll("d10"), c.roll("d4")] == [10, 1, 4]
    assert c.roll("d10") == SampledDice(random.Random(3)).roll("d10")
    with pytest.raises(ValueError, match="6-sided"):
        ChosenDice([7], random.Random(0)).roll("d6")


def test_drive_applies_legality_and_budget():
    b = ps_battle()
    f = fork(b, dice=ChosenDice([10, 1], random.Random(0)))
    f.turn = 1
    gen = f.ruleset.play_turn(f, f.dice)
    asked = []

    def answer(d):
        asked.append(d.kind)
        return Pass(None)  # never legal at an activation: the default (the first actor holds) applies

    res = drive(gen, answer, budget=3)
    assert res.decisions == 3 and not res.finished and asked == ["activate"] * 3
    held = [e.event for e in f.log if e.event.kind == "Activated"]
    assert [(e.tank, e.mode) for e in held] == [(0, "hold"), (5, "hold"), (1, "hold")]


# --- the rule sets' search hook ---------------------------------------------------------------------------------
HOOK_BATTLES = [("default", 3), ("asl_1941_meeting", 1), ("hq_skirmish", 2)]


@pytest.mark.parametrize("scenario, seed", HOOK_BATTLES)
def test_play_activation_plays_what_play_turn_plays(scenario, seed):
    """At the first activations that are not a plain hold: a copy made at the decision, with a copy of the rule
    dice and greedy answering both sides, emits under the hook exactly the events (and rolls) the battle emits."""
    spec = load_scenario(scenario)
    m = BattleModel(spec, seed, {0: ("greedy", {}), 1: ("greedy", {})}, decision_timeout_s=0)
    checked = 0
    while checked < 2 and not m.ended and m.battle.turn <= 4:
        d = m._decision
        if d is None or d.kind != "activate":
            m.advance(1)
            continue
        b = m.battle
        memory = copy.deepcopy(m._last_known)
        obs = Observation(b, d.side, d, random.Random(0), last_known=copy.deepcopy(memory[d.side]))
        act = load_policy("greedy").decide(obs, obs.decision)
        if not isinstance(act, Activate) or act.mode == "hold":
            m.advance(1)
            continue
        dice = copy.deepcopy(m.dice)
        assert isinstance(dice, DiceSource)
        f = fork(b, dice=dice)
        ctrls = {s: SideController(s, load_policy("greedy"), random.Random(0)) for s in f.side_ids()}

        def answer(x, f=f, ctrls=ctrls, memory=memory):
            return ctrls[x.side].answer(x, lambda dd: Observation(f, x.side, dd, random.Random(0),
                                                                  last_known=memory[x.side]))[0]

        start = len(b.log)
        res = drive(f.ruleset.play_activation(f, dice, d.side, act), answer)
        assert res.finished
        m.advance(1 + res.decisions)
        real = [(e.event, e.rolls) for e in b.log[start:start + len(f.log)]]
        assert [(e.event, e.rolls) for e in f.log] == real and f.log
        assert m.ended or m._decision is None or m._decision.kind == "activate" or \
            b.log[start + len(f.log)].event.kind in ("TurnStarted", "BattleStateSet", "RuleEvent", "Activated")
        checked += 1
    assert checked == 2
