"""Per-side controllers: wrap per-tank doctrines, answer decisions, follow move plans, and catch faults.

Loading a policy by name: a built-in doctrine name (``hold``, ``advance``, ...) or ``package.module:ClassName``
with parameters (:func:`load_policy`, when a battle is played); :func:`check_policy` checks such a name without
importing or constructing a plug-in (validation of data files).  Process-spawning policies (isolated entrants) load
only from an :class:`EntrantPolicy`, which only tournament code makes.

A fault (a raise, a wrong return type, a decision slower than ``decision_timeout_s`` measured after the call
returns) is answered with the decision's ``default`` (legal under every rule set: the conformance suite checks it
for every decision of real battles) and a recorded fault; the engine turns it into a ``PolicyFault`` event and
applies ``on_fault`` / ``max_faults``.  An illegal action is not a fault: the engine logs it (``ActionRejected``)
and applies the default too.
"""
from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents import plugins
from agents.observation import frozen_decision
from agents.plugins import PolicyLoadError
from agents.policies import BUILTIN, Policy
from sim.actions import Action, Activate, Plan, Special

__all__ = ["EntrantPolicy", "Fault", "PolicyLoadError", "SideController", "check_policy", "load_policy"]


@dataclass(frozen=True)
class EntrantPolicy:
    """A policy defined by a tournament entrant (the organiser's tournament file or a ``tanksim match`` command
    line): the only way to play a process-spawning policy (an isolated entrant, ``agents.isolation:RemotePolicy``
    with a ``command``).  Pass it in :class:`sim.model.BattleModel`'s ``policies``; a scenario, an experiment or a
    results folder can only give a :class:`sim.scenario.PolicySpec`, which names plug-in doctrines only."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


def check_policy(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Check a doctrine named in a data file without importing or constructing any plug-in: a built-in name with
    its parameters (the built-in class checks them; it is the project's own code), or a ``package.module:Class``
    checked statically (:func:`agents.plugins.check_plugin`: the module file is located and parsed, never run;
    literal ``defaults`` / ``bounds`` check the parameters).  Commands and process-spawning policies are refused.

    Raises :class:`PolicyLoadError` with the same wording as :func:`load_policy`."""
    params = dict(params or {})
    plugins.refuse_commands(name, params)
    if isinstance(name, str) and ":" in name:
        info = plugins.check_plugin(name)
        try:
            plugins.check_params(info.cls, info.defaults, info.bounds, params)
        except PolicyLoadError as exc:
            raise PolicyLoadError(f"policy {plugins.short(name)}: bad parameters {plugins.short(params)}: {exc}"
                                  ) from None
        return
    _construct(_builtin(name), name, params)


def _builtin(name: Any) -> type[Policy]:
    if not isinstance(name, str) or not name.strip():
        raise PolicyLoadError(f"policy name {plugins.short(name)}: expected a built-in name or "
                              f"package.module:ClassName")
    if name.strip() not in BUILTIN:
        raise PolicyLoadError(f"unknown policy {plugins.short(name.strip())}; built-in: {', '.join(sorted(BUILTIN))}, "
                              f"or give package.module:ClassName")
    return BUILTIN[name.strip()]


def _construct(cls: type, name: str, params: dict[str, Any]) -> Policy:
    try:
        return cls(**params)
    except (TypeError, ValueError, OverflowError) as exc:
        raise PolicyLoadError(f"policy {plugins.short(name)}: bad parameters {plugins.short(params)}: "
                              f"{plugins.clip(str(exc), 300)}") from None


def load_policy(name: str, params: Mapping[str, Any] | None = None, *, entrant: bool = False) -> Policy:
    """Instantiate a doctrine by built-in name (see ``agents.policies.BUILTIN``) or ``package.module:ClassName``
    with ``params`` (values may be strings, as from the command line; doctrines convert them to the type of the
    default).

    A plug-in is first checked statically (:func:`check_policy`), then imported: an in-process plug-in is code
    the user chose to run.  Only ``entrant=True`` (a tournament entrant, :class:`EntrantPolicy`) may load a
    process-spawning policy or pass a ``command``; anything else names plug-in doctrines only.

    Raises :class:`PolicyLoadError` naming what was not found: the module, the class in the module, an unknown
    built-in name (listing the built-ins), a class without ``decide``, an unknown / malformed parameter, or a
    process-spawning policy outside a tournament entrant."""
    params = dict(params or {})
    if not isinstance(name, str) or not name.strip():
        raise PolicyLoadError(f"policy name {plugins.short(name)}: expected a built-in name or "
                              f"package.module:ClassName")
    name = name.strip()
    if ":" not in name:
        if not entrant:
            plugins.refuse_commands(name, params)
        return _construct(_builtin(name), name, params)
    mod_name, cls_name = plugins.split_name(name)
    if not entrant:
        plugins.refuse_commands(name, params)
        if mod_name in plugins.PROCESS_MODULES or mod_name.startswith(tuple(m + "." for m in plugins.PROCESS_MODULES)):
            raise plugins.spawn_refusal(name)
        if mod_name not in sys.modules:
            plugins.check_plugin(name)  # nothing of a module runs before it is known to define a policy class
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} not found (is its folder on "
                                  f"sys.path / PYTHONPATH?)") from None
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} failed to import: "
                              f"{plugins.clip(str(exc), 300)}") from None
    except Exception as exc:  # noqa: BLE001 - report any import-time crash of a plug-in
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} failed to import: "
                              f"{type(exc).__name__}: {plugins.clip(str(exc), 300)}") from None
    cls = vars(mod).get(cls_name)
    if cls is None:
        found = plugins.policy_classes(mod)
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} has no class {cls_name!r}"
                              + (f" (policy classes there: {', '.join(found)})" if found else ""))
    if not isinstance(cls, type) or not callable(getattr(cls, "decide", None)):
        raise PolicyLoadError(f"policy {name!r}: {cls_name!r} is not a policy class with a decide(obs, "
                              f"decision) method")
    if not entrant and plugins.class_facts(cls).spawns:
        raise plugins.spawn_refusal(name)
    return _construct(cls, name, params)


@dataclass
class Fault:
    """One policy fault: the ``tank`` it is charged to (the decision's single actor, else the tank its default
    names, else ``None``), the decision kind, the ``fault`` (``raise`` / ``wrong_type`` / ``timeout``) and a
    message."""

    tank: int | None
    decision: str
    fault: str
    message: str


@dataclass
class SideController:
    """Answers every decision addressed to one side.

    ``policy`` answers side-level decisions (``activate`` and decisions with several actors).  A decision whose
    single actor is a tank in ``tanks`` (id -> :class:`agents.tank.Tank`) is answered by that tank
    (``tank.decide``, with its own doctrine); ``per_tank`` maps a tank id to its own doctrine where no tank object
    is given (search copies, tests).  ``rng`` is the side's own stream.
    ``decision_timeout_s`` (``None`` = no limit) is compared with the wall time of each call after it returns,
    measured with ``clock`` (seconds; ``time.perf_counter``);
    ``on_fault`` (``pass`` / ``forfeit``) and ``max_faults`` (faults charged to one tank before it withdraws) are
    applied by the engine (:meth:`sim.model.BattleModel._answer`), which also counts ``faults`` per tank.
    ``withdrawing`` holds the tanks that reached ``max_faults`` this turn: the engine withdraws them when the turn
    ends (no rule-set step is then under way), and until then their own decisions get the default without asking
    the policy.  ``policy_time_s`` accumulates the wall time spent in policies (not part of any result that is
    compared).  ``activation_order`` (``policy`` or ``random``, the scenario side's field): with ``random`` an
    ``activate`` decision offering several actors is first narrowed to one actor drawn uniformly from ``rng``
    (:meth:`pick_actor`), whose doctrine then chooses the mode.
    """

    side: int
    policy: Policy
    rng: Any
    per_tank: dict[int, Policy] = field(default_factory=dict)
    tanks: dict[int, Any] = field(default_factory=dict)
    decision_timeout_s: float | None = None
    on_fault: str = "pass"
    max_faults: int = 5
    plans: dict[int, list[Action]] = field(default_factory=dict)
    plan_meta: dict[int, Plan] = field(default_factory=dict)
    faults: dict[int | None, int] = field(default_factory=dict)
    withdrawing: set[int] = field(default_factory=set)
    policy_time_s: float = 0.0
    clock: Callable[[], float] = time.perf_counter
    activation_order: str = "policy"

    def policy_for(self, decision: Any) -> Policy:
        """The doctrine that answers ``decision``: its single actor's (the tank's own, or ``per_tank``), else the
        side's."""
        if len(decision.actors) == 1:
            a = decision.actors[0]
            if a in self.tanks and self.tanks[a].policy is not None:
                return self.tanks[a].policy
            if a in self.per_tank:
                return self.per_tank[a]
        return self.policy

    def never_reacts(self, decision: Any) -> bool:
        return decision.kind == "react" and getattr(self.policy_for(decision), "never_reacts", False)

    def answer(self, decision: Any, make_obs: Callable[[Any], Any]) -> tuple[Action, list[Fault], bool]:
        """Return ``(action, faults, from_plan)`` for ``decision``; ``make_obs(decision)`` builds the
        observation lazily (only when a policy is actually asked)."""
        if decision.kind == "move_step" and decision.actors:
            a = decision.actors[0]
            if decision.context.get("interrupted"):
                self.plans.pop(a, None)
            if a in self.plans:
                act = self._from_plan(a, decision)
                if act is not None:
                    return act, [], True
                decision = dataclasses.replace(decision, context={**decision.context, "plan_complete": True})
        elif decision.kind != "move_step":
            for a in decision.actors:
                self.plans.pop(a, None)
        if self.never_reacts(decision) or (len(decision.actors) == 1 and decision.actors[0] in self.withdrawing):
            return decision.default, [], False
        chosen = None
        if decision.kind == "activate" and self.activation_order == "random" and len(decision.actors) > 1:
            decision, chosen = self.pick_actor(decision)
            if chosen in self.withdrawing:
                return decision.default, [], False
        act, faults = self._ask(decision, make_obs)
        if chosen is not None and getattr(act, "actor", chosen) != chosen:
            act = dataclasses.replace(act, actor=chosen) if isinstance(act, Activate) else decision.default
            if not decision.legal.contains(act):
                act = decision.default
        if isinstance(act, Plan):
            actor = act.actor if act.actor is not None else (decision.actors[0] if decision.actors else None)
            if act.steps and not decision.legal.contains(act.steps[0]):
                return act.steps[0], faults, False  # illegal first step: the engine logs it and passes
            self.plans[actor] = list(act.steps)
            self.plan_meta[actor] = act
            nxt = self._from_plan(actor, decision)
            if nxt is None:
                nxt = self.fallback(decision, actor)
            return nxt, faults, True
        return act, faults, False

    def pick_actor(self, decision: Any) -> tuple[Any, int]:
        """``activation_order: random``: one of ``decision.actors`` drawn uniformly (one ``rng.randrange`` draw
        from the side's own stream) and the decision narrowed to it: ``actors`` is that tank alone and the
        default activates it in the default's mode when that is legal (else the default stays).  The rules still
        judge the answer against the full decision, so nothing illegal can pass."""
        actors = tuple(decision.actors)
        chosen = actors[self.rng.randrange(len(actors))]
        default = decision.default
        if isinstance(default, Activate) and default.actor != chosen:
            moved = dataclasses.replace(default, actor=chosen)
            if decision.legal.contains(moved):
                default = moved
        return dataclasses.replace(decision, actors=(chosen,), default=default), chosen

    @staticmethod
    def fallback(decision: Any, actor: int | None = None) -> Action:
        """What a fault, an illegal answer or an exhausted plan gets: the decision's ``default`` -- what the rule
        set does when the controller has no opinion (hold an activation, end a move, pass a shot, the first step
        of a compulsory move, the default evasion).  Every rule set's default is legal (the fault conformance suite,
        ``tests/test_fault_conformance.py``, checks it for every decision of real battles)."""
        return decision.default

    def _from_plan(self, actor: int, decision: Any) -> Action | None:
        steps = self.plans.get(actor)
        meta = self.plan_meta.get(actor)
        if steps:
            nxt = steps[0]
            if decision.legal.contains(nxt):
                steps.pop(0)
                return nxt
            self.plans.pop(actor, None)  # the plan no longer fits: ask again
            return None
        self.plans.pop(actor, None)
        if meta is not None:
            self.plan_meta.pop(actor, None)
            if meta.then is not None and decision.legal.contains(meta.then):
                return meta.then
            if meta.end_status is not None or meta.end_facing is not None:
                end = Special(actor, "end_move", {"status": meta.end_status, "facing": meta.end_facing})
                if decision.legal.contains(end):
                    return end
        return None

    def _ask(self, decision: Any, make_obs: Callable[[Any], Any]) -> tuple[Action, list[Fault]]:
        pol = self.policy_for(decision)
        actor = decision.actors[0] if len(decision.actors) == 1 else None
        charged = actor if actor is not None else getattr(decision.default, "actor", None)
        frozen = frozen_decision(decision)
        obs = make_obs(frozen)
        view = getattr(obs, "decision", frozen)  # the decision as the side sees it (agents.observation)
        tank = self.tanks.get(actor) if actor is not None else None
        answer = tank.decide if tank is not None and tank.policy is not None else pol.decide
        t0 = self.clock()
        try:
            act = answer(obs, view)
        except Exception as exc:  # noqa: BLE001 - a policy's crash is reported, never fatal
            self.policy_time_s += self.clock() - t0
            return self.fallback(decision, actor), [Fault(charged, decision.kind, "raise",
                                                          f"{type(exc).__name__}: {exc}")]
        elapsed = self.clock() - t0
        self.policy_time_s += elapsed
        if self.decision_timeout_s is not None and elapsed > self.decision_timeout_s:
            return self.fallback(decision, actor), [Fault(charged, decision.kind, "timeout",
                                                          f"took {elapsed:.3f} s > limit {self.decision_timeout_s} s")]
        bad = _malformed(act)
        if bad:
            return self.fallback(decision, actor), [Fault(charged, decision.kind, "wrong_type", bad)]
        return act, []


def _malformed(act: Any) -> str:
    """Why ``act`` is not an answer at all (not an Action, or a Plan holding non-actions); ``""`` if it is one."""
    if not isinstance(act, Action):
        return f"returned {type(act).__name__}, expected an Action"
    if isinstance(act, Plan):
        for s in act.steps:
            if not isinstance(s, Action):
                return f"returned a Plan with a {type(s).__name__} step, expected Actions"
        if act.then is not None and not isinstance(act.then, Action):
            return f"returned a Plan whose 'then' is a {type(act.then).__name__}, expected an Action"
    return ""
