"""BattleModel(mesa.Model): builds a battle from a scenario and drives the rule set's ``play_turn`` generator.

One ``step()`` is one game turn: the rule set yields decisions, each side's controller answers, and events apply at
once.  After every kill or withdrawal the outcome is checked; a battle may end mid-turn, and the DataCollector
still records that turn's row (once per turn, keyed on ``model.time``).  ``advance(n)`` steps decision by decision
(the interactive app).  Determinism: ``SeedSequence(seed).spawn(3)`` gives the rule dice and each side's controller
stream, so one side's policy never shifts the other's draws or the dice.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import mesa

from agents.controllers import EntrantPolicy, SideController, load_policy
from agents.observation import Observation
from agents.tank import Tank
from sim.actions import Action, Pass
from sim.battle import BattleState, SideInfo, TankState
from sim.dice import DiceSource, side_rng, spawn_streams
from sim.events import (
    ActionRejected,
    BattleEnded,
    BattleStarted,
    BattleStateSet,
    PolicyFault,
    Status,
    StatusChanged,
    TurnStarted,
)
from sim.hexgrid import Hex
from sim.rules.base import Decision, Outcome
from sim.scenario import PolicySpec, Scenario

_DECISIVE = (StatusChanged,)


def build_battle(spec: Scenario, dice: DiceSource | None = None) -> BattleState:
    """A fresh :class:`BattleState` in its set-up state (no events yet) for ``spec``."""
    rs = spec.rules()
    options = spec.options()
    hexmap = spec.build_map()
    tanks = []
    tid = 0
    for si, side in enumerate(spec.sides):
        for t in side.tanks:
            veh = spec.vehicle(t.vehicle)
            ext = rs.TankExt(**t.rules).model_dump()
            tanks.append(TankState(
                tank_id=tid, label=t.label or f"{side.name[:1].upper()}{tid + 1}", side=si, vehicle_id=t.vehicle,
                vehicle=veh, hex=Hex(*t.hex), facing=t.facing,
                turret_facing=t.facing if rs.has_turret(veh) else None, ext=ext))
            tid += 1
    sides = [SideInfo(s.name, s.role, s.exit_edge) for s in spec.sides]
    hex_ext = {Hex(*f["hex"]): rs.HexExt(**{k: v for k, v in f.items() if k != "hex"}) for f in spec.map.features}
    b = BattleState(hexmap, tanks, sides, rs, options, objectives=[o.model_dump() for o in spec.objectives],
               turn_limit=spec.effective_turn_limit(), hex_size_m=spec.map.hex_size_m,
               kill_points=spec.victory.kill_points, exit_points=spec.victory.exit_points, dice=dice, hex_ext=hex_ext)
    rs.setup(b)
    return b


def setup_event(spec: Scenario, b: BattleState) -> BattleStarted:
    """The first log event: everything needed to draw and replay the battle without its scenario file."""
    return BattleStarted(
        ruleset=b.ruleset.name,
        map={"shape": spec.map.shape, "width": spec.map.width, "height": spec.map.height,
             "radius": spec.map.radius, "hex_size_m": spec.map.hex_size_m,
             "cells": [[h.q, h.r] for h in sorted(b.map.cells)],
             "terrain": {f"{h.q},{h.r}": b.map.terrain(h) for h in sorted(b.map.cells) if b.map.terrain(h) != "open"}},
        sides=tuple({"name": s.name, "role": s.role, "exit_edge": s.exit_edge} for s in b.sides),
        tanks=tuple({"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
                     "hex": [t.hex.q, t.hex.r], "facing": t.facing, "turret_facing": t.turret_facing,
                     "turret": t.turret_facing is not None, "rules_state": dict(t.rules_state)} for t in b.tanks),
        objectives=tuple(b.objectives))


class BattleModel(mesa.Model):
    """A battle as a Mesa model.

    ``spec``: the validated :class:`Scenario`; ``seed``: the battle's seed; ``policies``: optional per-side
    overrides ``{side_index: PolicySpec | (name, params) | EntrantPolicy | policy object}`` (plug-in doctrines
    only, except an :class:`agents.controllers.EntrantPolicy`, which tournaments use for isolated entrants; an
    object with ``decide(obs, decision)`` given from Python is used as it is, e.g. a trained policy held in memory);
    ``decision_timeout_s``: overrides the scenario's limit (``0`` disables limits, e.g. for determinism tests);
    ``dice``: the rule dice to use instead of the seeded stream (e.g. :class:`~sim.dice.FixedDice` for play cases).
    ``battle`` holds the state, ``outcome`` the result once ``ended``.  ``decision_listeners`` are called as
    ``fn(decision, action)`` for every decision answered (also those answered from a plan), before the action is
    sent to the rules.
    """

    def __init__(self, spec: Scenario, seed: int = 0, policies: Mapping[int, Any] | None = None,
                 decision_timeout_s: float | None = None, on_fault: str | None = None,
                 dice: DiceSource | None = None):
        super().__init__(rng=seed)
        self.spec = spec
        self.seed = seed
        streams = spawn_streams(seed, 1 + len(spec.sides))
        self.dice = dice if dice is not None else DiceSource(streams[0])
        self.battle = build_battle(spec, self.dice)
        self.ruleset = self.battle.ruleset
        self.controllers: list[SideController] = []
        self.resolved_policies: list[dict] = []
        #: The Mesa agents, in tank id order (``unique_id == tank_id + 1``); each carries its doctrine.
        self.tank_agents = [Tank(self, t) for t in self.battle.tanks]
        for si, side in enumerate(spec.sides):
            pspec: PolicySpec | EntrantPolicy = side.policy
            given = None
            if policies and si in policies:
                p = policies[si]
                if isinstance(p, (PolicySpec, EntrantPolicy)):
                    pspec = p
                elif callable(getattr(p, "decide", None)):
                    given = p
                else:
                    pspec = PolicySpec(name=p[0], params=dict(p[1]))
            per_tank = {}
            tid0 = sum(len(s.tanks) for s in spec.sides[:si])
            for i, t in enumerate(side.tanks):
                if t.policy is not None and not (policies and si in policies):
                    per_tank[tid0 + i] = load_policy(t.policy.name, t.policy.params)
            timeout = side.decision_timeout_s if decision_timeout_s is None else (decision_timeout_s or None)
            main = given if given is not None else load_policy(pspec.name, pspec.params,
                                                                entrant=isinstance(pspec, EntrantPolicy))
            own = {tid0 + i: self.tank_agents[tid0 + i] for i in range(len(side.tanks))}
            ctrl = SideController(si, main, side_rng(streams[1 + si]), per_tank, tanks=own,
                                  decision_timeout_s=timeout, on_fault=on_fault or side.on_fault,
                                  max_faults=side.max_faults,
                                  activation_order=side.activation_order)
            for tank in own.values():
                tank.controller = ctrl
            self.controllers.append(ctrl)
            if given is not None:
                self.resolved_policies.append({"name": str(getattr(given, "name", type(given).__name__)),
                                               "params": dict(getattr(given, "params", {}))})
            else:
                self.resolved_policies.append({"name": pspec.name, "params": dict(pspec.params)})
        self.outcome: Outcome | None = None
        self.ended = False
        self._gen = None
        self._decision = None
        self._checked = 0
        self._counts = {"shots": 0, "hits": 0, "kills": 0}
        self._turn_counts = dict(self._counts)
        self._last_known = [dict() for _ in spec.sides]
        self.decisions = 0
        self.decision_listeners: list[Callable[[Any, Action], None]] = []
        self.datacollector = mesa.DataCollector(model_reporters=self._reporters())
        self.battle.listeners.append(self._on_event)
        self.battle.emit(setup_event(spec, self.battle))
        self._collected_turn = None

    # --- data collection --------------------------------------------------------------------------------------
    def _reporters(self) -> dict:
        reps: dict[str, Any] = {"turn": lambda m: m.battle.turn}
        for si, s in enumerate(self.spec.sides):
            reps[f"alive_{s.name}"] = lambda m, si=si: len(m.battle.live_tanks(si))
        for k in ("shots", "hits", "kills"):
            reps[k] = lambda m, k=k: m._turn_counts[k]
            reps[f"cum_{k}"] = lambda m, k=k: m._counts[k]
        return reps

    def _on_event(self, entry: Any) -> None:
        e = entry.event
        if e.kind == "ShotResolved":
            self._counts["shots"] += 1
            self._turn_counts["shots"] += 1
            if e.hit:
                self._counts["hits"] += 1
                self._turn_counts["hits"] += 1
            if e.kill:
                self._counts["kills"] += 1
                self._turn_counts["kills"] += 1

    def _collect(self) -> None:
        if self._collected_turn == self.battle.turn:
            return
        self._collected_turn = self.battle.turn
        self.datacollector.collect(self)
        self._turn_counts = {k: 0 for k in self._turn_counts}

    # --- driving ----------------------------------------------------------------------------------------------
    def step(self) -> None:
        """Play one whole turn (or what is left of the current one)."""
        if self.ended:
            return
        start_turn = self.battle.turn if self._gen is not None else self.battle.turn + 1
        while not self.ended and (self._gen is None and self.battle.turn < start_turn or self._gen is not None):
            self.advance(1)

    def run(self, max_turns: int | None = None) -> Outcome:
        """Play until the battle ends; returns the :class:`Outcome`."""
        while not self.ended:
            self.step()
            if max_turns is not None and self.battle.turn >= max_turns and not self.ended:
                break
        return self.outcome  # type: ignore[return-value]

    def advance(self, n_decisions: int = 1) -> int:
        """Answer up to ``n_decisions`` decisions (starting turns as needed); returns how many were answered."""
        done = 0
        while done < n_decisions:
            decision = self.pending()
            if decision is None:
                break
            self._send(decision, self._answer(decision))
            done += 1
        return done

    def pending(self) -> Decision | None:
        """The decision waiting for an answer, starting and finishing turns as needed (``None`` once the battle has
        ended).  Asking twice returns the same decision; nothing is answered."""
        while not self.ended:
            if self._gen is None:
                self._start_turn()
            elif self._decision is None:
                self._finish_turn()
            else:
                return self._decision
        return None

    def respond(self, action: Action) -> None:
        """Answer the pending decision (:meth:`pending`) with ``action`` instead of asking the side's controller
        (an environment or a person playing that side).  The engine's rule for an answer applies as for a
        controller's: an illegal action is logged (``ActionRejected``) and replaced; then the rules go on up to
        the next decision (or the end of the turn / battle).

        Raises ``RuntimeError`` if no decision is pending (the battle has ended, or :meth:`pending` was not
        called since the last answer)."""
        decision = self._decision
        if self.ended or self._gen is None or decision is None:
            raise RuntimeError("no decision is pending: call pending() first (or the battle has ended)")
        self._send(decision, self._legal_or_rejected(decision, action))

    def _send(self, decision: Decision, action: Action) -> None:
        """Tell the listeners, send ``action`` into the turn, check the outcome, close the turn if it is over."""
        for fn in self.decision_listeners:
            fn(decision, action)
        self.decisions += 1
        if self.ended:
            return
        try:
            self._decision = self._gen.send(action)
        except StopIteration:
            self._decision = None
        self._check_outcome()
        if self._decision is None and not self.ended:
            self._finish_turn()

    def _start_turn(self) -> None:
        b = self.battle
        b.emit(TurnStarted(b.turn + 1))
        self._gen = self.ruleset.play_turn(b, self.dice)
        try:
            self._decision = next(self._gen)
        except StopIteration:
            self._decision = None
        self._check_outcome()

    def _finish_turn(self) -> None:
        b = self.battle
        self._gen = None
        self._decision = None
        self._withdraw_faulted()
        b.emit(BattleStateSet("turns_completed", b.turn))
        self._check_outcome(force=True)
        self._collect()

    def _check_outcome(self, force: bool = False) -> None:
        if self.ended:
            return
        b = self.battle
        new = b.log[self._checked:]
        self._checked = len(b.log)
        if not force and not any(isinstance(x.event, _DECISIVE) for x in new):
            return
        out = self.ruleset.outcome(b)
        if out is not None:
            self._end(out)

    def _end(self, out: Outcome) -> None:
        self.outcome = out
        self.ended = True
        self.battle.emit(BattleEnded(out.winner, out.reason, tuple(out.points)))
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        self._decision = None
        self.running = False
        self._collect()

    def _observation(self, side: int):
        ctrl = self.controllers[side]
        return lambda d: Observation(self.battle, side, d, ctrl.rng, last_known=self._last_known[side])

    def _answer(self, decision: Any) -> Action:
        ctrl = self.controllers[decision.side]
        action, faults, from_plan = ctrl.answer(decision, self._observation(decision.side))
        b = self.battle
        for f in faults:
            b.emit(PolicyFault(decision.side, f.tank, f.decision, f.fault, f.message))
            ctrl.faults[f.tank] = ctrl.faults.get(f.tank, 0) + 1
            if ctrl.on_fault == "forfeit":
                other = next(s for s in b.side_ids() if s != decision.side)
                self._forfeit_after = (other, f"{b.sides[decision.side].name} forfeits: {f.fault} in "
                                              f"{f.decision} ({f.message})")
            elif f.tank is not None and ctrl.faults[f.tank] >= ctrl.max_faults and b.tanks[f.tank].alive:
                ctrl.withdrawing.add(f.tank)  # withdrawn when the turn ends (_withdraw_faulted)
        if faults and ctrl.on_fault == "forfeit":
            winner, reason = self._forfeit_after
            self._end(Outcome(winner, reason, ()))
            return Pass(None)
        return self._legal_or_rejected(decision, action)

    def _legal_or_rejected(self, decision: Decision, action: Action) -> Action:
        """``action`` if the rules allow it, else log ``ActionRejected`` and answer with a pass instead."""
        if not decision.legal.contains(action):
            self.battle.emit(ActionRejected(decision.side, getattr(action, "actor", None), decision.kind,
                                            repr(action)))
            self.controllers[decision.side].plans.pop(getattr(action, "actor", None), None)
            action = decision.default
        return action

    def _withdraw_faulted(self) -> None:
        """Withdraw the tanks charged with ``max_faults`` policy faults during the turn that just ended.

        DECISION: the withdrawal waits for the end of the turn, when no rule-set step is under way: withdrawing a
        tank while its rule set is in the middle of its activation (the decision that faulted is still being
        resolved) would leave the rules acting for a tank that is no longer on the board.  Until then the engine
        answers the tank's own decisions with their defaults, without asking its policy."""
        b = self.battle
        for ctrl in self.controllers:
            for tid in sorted(ctrl.withdrawing):
                if b.tanks[tid].alive and b.tanks[tid].hex is not None:
                    b.emit(StatusChanged(tid, Status.WITHDRAWN, f"{ctrl.faults[tid]} policy faults"))
            ctrl.withdrawing.clear()
