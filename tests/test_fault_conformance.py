"""Fault conformance: under every rule set, a policy that faults at any decision kind the rule set offers (it
raises, returns garbage, returns a malformed action, overruns its time limit, or answers an illegal action) leaves
a battle that completes; the fault is a recorded ``PolicyFault`` (the illegal answer an ``ActionRejected``); the
action applied is the decision's default, and every default the rule sets offer in real battles is legal.

Battles are the bundled scenarios, driven by built-in doctrines chosen so that every decision kind occurs (the
survey test checks that it does, so a rule set that grows a new kind must be added here).  ``max_faults: 2``
makes tanks withdraw in the middle of the battle, at every kind (the withdrawal waits for the end of the turn).
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

from agents.controllers import load_policy
from agents.policies.base import Policy
from sim.actions import Activate, Fire, Plan, Ram, Special, Step
from sim.events import ActionRejected, Moved, PolicyFault, Status, StatusChanged, event_from_payload
from sim.hexgrid import Hex
from sim.model import BattleModel, build_battle
from sim.runner import log_rows
from sim.scenario import load_scenario, validate

#: Every decision kind each rule set offers (its spec's sequence of play).
KINDS = {
    "panzer_squadron": ("activate", "fire", "move_step", "react"),
    "asl": ("activate", "fire", "fire_again", "move_step", "react"),
    "hummel_quest": ("activate", "fire", "move_step", "ram", "evade"),
}
#: A bundled scenario, the doctrines of its two sides and a seed under which every kind of its rule set occurs,
#: and a turn limit that keeps the battle short but past the first decision of every kind.
DRIVE = {
    "panzer_squadron": ("default", ("advance", "hold"), 0, None),
    "asl": ("asl_1941_meeting", ("focus_fire", "advance"), 0, 8),
    "hummel_quest": ("hq_ram_brawl", ("rush", "greedy"), 2, None),
}
MODES = ("raise", "garbage", "malformed", "timeout", "illegal")
#: The fault each mode must be recorded as (``illegal`` is not a fault: it is an ``ActionRejected``).
RECORDED = {"raise": "raise", "garbage": "wrong_type", "malformed": "wrong_type", "timeout": "timeout"}


class FakeClock:
    """A monotonic clock that a policy can push forward (timeouts without sleeping)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Faulty(Policy):
    """Plays ``base`` except at decisions of ``kind``, where it faults in ``mode``."""

    def __init__(self, base: str, kind: str, mode: str, clock: FakeClock):
        super().__init__()
        self.base = load_policy(base)
        self.kind, self.mode, self.clock = kind, mode, clock

    def decide(self, obs, decision):
        if decision.kind != self.kind:
            return self.base.decide(obs, decision)
        actor = decision.actors[0] if decision.actors else None
        if self.mode == "raise":
            raise RuntimeError(f"boom in {decision.kind}")
        if self.mode == "garbage":
            return {"type": "Pass", "note": "a dict is not an action"}
        if self.mode == "malformed":
            return Plan(actor, ("north", 3))
        if self.mode == "timeout":
            self.clock.t += 60.0  # "took" a minute
            return self.base.decide(obs, decision)
        # illegal: a well-formed action the rules refuse at this decision
        candidates = [Fire(actor, actor), Ram(actor, actor), Step(actor, Hex(10 ** 4, 10 ** 4)),
                      Activate(10 ** 4, "fire"), Special(actor, "no_such_special", {})]
        return next(a for a in candidates if not decision.legal.contains(a))


class Recorder(BattleModel):
    """A BattleModel that records, per decision, the decision, the action applied and the events of answering."""

    def __init__(self, *a, **kw):
        self.records: list[tuple] = []
        super().__init__(*a, **kw)

    def _answer(self, decision):
        n = len(self.battle.log)
        default_legal = bool(decision.legal.contains(decision.default))  # asked now: legality is lazy
        action = super()._answer(decision)
        self.records.append((decision, action, [e.event for e in self.battle.log[n:]], default_legal))
        return action


def drive(ruleset: str, kind: str | None = None, mode: str | None = None) -> Recorder:
    name, (p0, p1), seed, turns = DRIVE[ruleset]
    spec = load_scenario(name)
    data = spec.model_dump(mode="json", exclude_unset=True)
    for side in data["sides"]:
        side["max_faults"] = 2
        side["decision_timeout_s"] = 30.0
    if turns is not None:
        data["turn_limit"] = turns
    spec = validate(data, name)
    clock = FakeClock()
    m = Recorder(spec, seed=seed)
    if kind is not None:
        for ctrl, base in zip(m.controllers, (p0, p1), strict=True):
            ctrl.policy = Faulty(base, kind, mode, clock)
            ctrl.per_tank.clear()
            ctrl.clock = clock
    else:
        for ctrl, base in zip(m.controllers, (p0, p1), strict=True):
            ctrl.policy = load_policy(base)
    m.run()
    return m


@pytest.mark.parametrize("ruleset", sorted(KINDS))
def test_every_decision_kind_occurs_and_every_default_is_legal(ruleset):
    m = drive(ruleset)
    seen = Counter(d.kind for d, _a, _e, _ok in m.records)
    assert set(seen) == set(KINDS[ruleset]), f"{ruleset}: kinds seen {dict(seen)}"
    for d, _a, _e, ok in m.records:
        assert ok, f"{ruleset} {d.kind}: default {d.default!r} is not legal"
    assert m.ended and m.outcome is not None


CASES = [(rs, k, mode) for rs in sorted(KINDS) for k in KINDS[rs] for mode in MODES]


@pytest.mark.parametrize("ruleset,kind,mode", CASES, ids=[f"{r}-{k}-{m}" for r, k, m in CASES])
def test_a_fault_at_any_decision_kind_applies_the_legal_default(ruleset, kind, mode):
    m = drive(ruleset, kind, mode)
    b = m.battle
    assert m.ended and m.outcome is not None
    faulted = [d for d, _a, ev, _ok in m.records if d.kind == kind
               and any(isinstance(e, (PolicyFault, ActionRejected)) for e in ev)]
    assert faulted, f"no {kind} decision faulted"
    for d, action, ev, default_legal in m.records:
        assert default_legal, f"{d.kind}: default {d.default!r} is not legal"
        faults = [e for e in ev if isinstance(e, PolicyFault)]
        rejected = [e for e in ev if isinstance(e, ActionRejected)]
        if not (faults or rejected):
            continue
        assert d.kind == kind, f"a fault outside {kind}: {faults or rejected}"
        assert action == d.default, f"{kind} {mode}: applied {action!r}, default {d.default!r}"
        if mode == "illegal":
            assert rejected and not faults and rejected[0].decision == kind
        else:
            assert not rejected and [f.fault for f in faults] == [RECORDED[mode]]
            assert faults[0].decision == kind and faults[0].side == d.side
    # tanks charged with max_faults withdrew at the end of a turn, left the board, and never moved again
    if mode != "illegal":
        withdrawn = {e.tank: i for i, e in enumerate(b.events()) if isinstance(e, StatusChanged)
                     and e.status == Status.WITHDRAWN}
        per_tank = Counter(e.tank for e in b.events() if isinstance(e, PolicyFault) and e.tank is not None)
        for tid, i in withdrawn.items():
            t = b.tanks[tid]
            assert t.hex is None and t.status == Status.WITHDRAWN and per_tank[tid] >= 2
            later = list(b.events())[i + 1:]
            assert not [e for e in later if isinstance(e, Moved) and e.tank == tid]
    # the log (withdrawals included) replays to the final state
    replay = build_battle(m.spec)
    for row in log_rows(m):
        replay.emit(event_from_payload(row["kind"], json.loads(row["data"])))
    assert [(t.hex, t.facing, t.status) for t in replay.tanks] == [(t.hex, t.facing, t.status) for t in b.tanks]
