"""Policy faults: a raise, a wrong return type and a too-slow answer each get the decision's default plus a
PolicyFault event; an illegal action is a logged ActionRejected, not a fault; ``on_fault: forfeit`` ends the battle;
after ``max_faults`` the charged tank withdraws at the end of the turn (leaves the board, no wreck, counts as
lost).  Every battle still completes (``test_fault_conformance.py`` checks every decision kind of every rule
set)."""
from __future__ import annotations

import json
import time

import pytest

from agents.controllers import Fault, SideController
from agents.policies.base import Doctrine, Policy
from conftest import small_ps_scenario
from sim.actions import Fire, Plan, Step
from sim.events import Status, event_from_payload
from sim.hexgrid import Hex
from sim.model import BattleModel, build_battle
from sim.runner import run_battle
from sim.scenario import validate


class Raiser(Policy):
    """Raises at every decision."""

    def decide(self, obs, decision):
        raise RuntimeError("boom")


class WrongType(Policy):
    """Answers with a string."""

    def decide(self, obs, decision):
        return "fire!"


class BadPlan(Policy):
    """Answers moves with a plan holding a non-action; otherwise the default."""

    def decide(self, obs, decision):
        if decision.kind == "move_step":
            return Plan(obs.actor, ("north",))
        if decision.kind == "activate":
            from sim.actions import Activate
            return Activate(decision.actors[0], "move")
        return decision.default


class SlowOnce(Doctrine):
    """A normal advance that sleeps 2 s at its first decision only."""

    slept = False

    def decide(self, obs, decision):
        if not SlowOnce.slept:
            SlowOnce.slept = True
            time.sleep(2.0)
        return super().decide(obs, decision)


class Illegal(Policy):
    """Fires at its own side (illegal) at every fire decision; activates in fire mode."""

    def decide(self, obs, decision):
        if decision.kind == "activate":
            from sim.actions import Activate
            a = next((x for x in decision.actors if "fire" in obs.modes(x)), decision.actors[0])
            return Activate(a, "fire" if "fire" in obs.modes(a) else "hold")
        if decision.kind == "fire":
            friend = next((t.tank_id for t in obs.friends()), obs.actor)
            return Fire(obs.actor, friend)
        if decision.kind == "move_step":
            return Step(obs.actor, Hex(40, 40))
        return decision.default


def spec(policy0: str, **side0):
    d = small_ps_scenario(turn_limit=4)
    d["sides"][0]["policy"] = policy0
    d["sides"][0].update(side0)
    return validate(d, "faults.yaml")


def events(res, kind):
    return [json.loads(e["data"]) for e in res.events if e["kind"] == kind]


@pytest.mark.parametrize("policy,fault", [("test_faults:Raiser", "raise"), ("test_faults:WrongType", "wrong_type"),
                                          ("test_faults:BadPlan", "wrong_type")])
def test_fault_becomes_pass_and_policy_fault_and_battle_completes(policy, fault):
    models = []
    res = run_battle(spec(policy, max_faults=1000), seed=3, model_out=models)
    faults = events(res, "PolicyFault")
    assert faults and {f["fault"] for f in faults} == {fault}
    assert all(f["side"] == 0 for f in faults)
    assert res.row["faults"] == len(faults) and res.row["reason"]
    assert models[0].ended and models[0].outcome is not None
    # a fault answers with a legal pass or the decision's default: it is never also an ActionRejected
    assert not events(res, "ActionRejected")
    if policy.endswith("Raiser"):
        assert "RuntimeError: boom" in faults[0]["message"]


def test_slow_decision_is_a_timeout_fault_measured_after_the_call():
    SlowOnce.slept = False
    t0 = time.perf_counter()
    res = run_battle(spec("test_faults:SlowOnce", decision_timeout_s=0.2), seed=1)
    wall = time.perf_counter() - t0
    faults = events(res, "PolicyFault")
    assert [f["fault"] for f in faults] == ["timeout"], faults
    assert "> limit 0.2 s" in faults[0]["message"]
    assert wall >= 2.0, "the call ran to its end (measured after it returned), not interrupted"
    assert res.row["winner"] is not None or res.row["reason"]


def test_timeouts_are_off_when_disabled():
    SlowOnce.slept = True  # no sleep, just check that a zero limit means no limit
    res = run_battle(spec("test_faults:SlowOnce", decision_timeout_s=1e-9), seed=1, decision_timeout_s=0)
    assert not events(res, "PolicyFault")


def test_illegal_action_is_a_logged_pass_not_a_fault():
    res = run_battle(spec("test_faults:Illegal"), seed=2)
    rejected = events(res, "ActionRejected")
    assert rejected and not events(res, "PolicyFault")
    assert all(r["side"] == 0 for r in rejected)
    assert any("Fire(" in r["action"] for r in rejected)
    assert not [s for s in events(res, "ShotResolved") if s["shooter"] < 3 and s["target"] < 3]


def test_forfeit_ends_the_battle_at_the_first_fault():
    res = run_battle(spec("test_faults:Raiser", on_fault="forfeit"), seed=5)
    assert len(events(res, "PolicyFault")) == 1
    assert res.row["winner_index"] == 1 and "forfeits" in res.row["reason"]
    assert events(res, "BattleEnded")[-1]["winner"] == 1
    # the run-level override works too
    res2 = run_battle(spec("test_faults:WrongType"), seed=5, on_fault="forfeit")
    assert res2.row["winner_index"] == 1 and "wrong_type" in res2.row["reason"]


def test_max_faults_withdraws_the_tank_no_wreck_counts_as_lost():
    models = []
    res = run_battle(spec("test_faults:Raiser", max_faults=2), seed=4, model_out=models)
    b = models[0].battle
    withdrawn = [e for e in events(res, "StatusChanged") if e["status"] == Status.WITHDRAWN]
    assert withdrawn, "a tank charged with max_faults faults withdraws"
    for w in withdrawn:
        t = b.tanks[w["tank"]]
        assert t.side == 0 and t.hex is None and t.status == Status.WITHDRAWN
        assert t not in b.wrecks() and all(w["tank"] not in b.occupants(h) for h in b.map.cells)
        charged = [f for f in events(res, "PolicyFault") if f["tank"] == w["tank"]]
        assert len(charged) == 2 and "2 policy faults" in w["reason"]
    assert res.row["side1_lost"] >= len(withdrawn)
    if len(withdrawn) == 3:
        assert res.row["winner_index"] == 1
    # the log still replays to the same final state (the withdrawal is an ordinary event)
    replay = build_battle(models[0].spec)
    for row in res.events:
        replay.emit(event_from_payload(row["kind"], json.loads(row["data"])))
    assert [(t.hex, t.status) for t in replay.tanks] == [(t.hex, t.status) for t in b.tanks]


def test_side_level_fault_is_charged_to_the_default_actor():
    m = BattleModel(spec("test_faults:Raiser"), 0)
    while m._decision is None or m._decision.side != 0:
        m.advance(1)
    d = m._decision
    ctrl: SideController = m.controllers[0]
    act, faults, _ = ctrl.answer(d, m._observation(0))
    assert isinstance(faults[0], Fault) and faults[0].tank == d.default.actor
    assert act == d.default and d.legal.contains(act)


@pytest.mark.parametrize("policy", ["test_faults:Raiser", "test_faults:WrongType"])
def test_asl_battle_with_a_faulting_policy_completes(policy):
    """Issue 11 reproducer: under asl, a policy that faults at every decision crashed the move phase
    (``TypeError: cannot unpack non-iterable NoneType``) once its tank withdrew after ``max_faults`` in the middle
    of its own activation.  The withdrawal now waits for the end of the turn."""
    from sim.scenario import load_scenario

    models = []
    res = run_battle(load_scenario("asl_1941_meeting"), seed=1, policies={0: (policy, {})}, model_out=models)
    assert models[0].ended and res.row["reason"]
    faults = events(res, "PolicyFault")
    withdrawn = [e for e in events(res, "StatusChanged") if e["status"] == Status.WITHDRAWN]
    assert faults and all(f["side"] == 0 for f in faults)
    assert {w["tank"] for w in withdrawn} == {t.tank_id for t in models[0].battle.tanks if t.side == 0}
    assert all(models[0].battle.tanks[w["tank"]].hex is None for w in withdrawn)


def test_a_crashing_builtin_doctrine_fails_the_suite_but_a_users_policy_is_a_fault(monkeypatch):
    """``STRICT_BUILTIN_POLICIES`` (set by conftest for the suite): a built-in doctrine that raises is a bug and is
    raised, not recorded as a fault that would keep a test passing; a user's policy crash is still a fault."""
    from agents import side_controller
    from agents.policies.advance import Advance
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    assert side_controller.STRICT_BUILTIN_POLICIES  # conftest set TANKSIM_STRICT_BUILTIN_POLICIES=1 first

    def boom(self, obs, decision):
        raise ZeroDivisionError("a bug in a built-in doctrine")

    monkeypatch.setattr(Advance, "decide", boom)
    model = BattleModel(load_scenario("default"), 1, policies={"Soviets": "advance"}, decision_timeout_s=0)
    with pytest.raises(ZeroDivisionError, match="a bug in a built-in doctrine"):
        model.run(max_turns=1)
    monkeypatch.setattr(side_controller, "STRICT_BUILTIN_POLICIES", False)  # as for a user: a recorded fault
    model = BattleModel(load_scenario("default"), 1, policies={"Soviets": "advance"}, decision_timeout_s=0)
    model.run(max_turns=1)
    assert any(type(e.event).__name__ == "PolicyFault" for e in model.battle.log)
