"""Per-side controllers: wrap per-tank doctrines, answer decisions, follow move plans, and catch faults.

Loading a policy by name: a built-in doctrine name (``hold``, ``advance``, ...) or ``package.module:ClassName``
with parameters.  A fault (a raise, a wrong return type, a decision slower than ``decision_timeout_s`` measured after
the call returns) becomes a ``Pass`` and a recorded fault; the engine turns it into a ``PolicyFault`` event and
applies ``on_fault`` / ``max_faults``.  An illegal action is not a fault: it becomes a logged ``Pass``.
"""
from __future__ import annotations

import dataclasses
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from agents.actions import Action, Pass, Plan, Special
from agents.policies import BUILTIN, Policy


class PolicyLoadError(LookupError):
    """A policy name or plug-in could not be loaded (says what was not found)."""


def load_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy:
    """Instantiate a doctrine by built-in name or ``package.module:ClassName`` with ``params``.

    Raises :class:`PolicyLoadError` naming the missing module, class or the unknown parameter."""
    params = dict(params or {})
    if ":" in name:
        mod_name, _, cls_name = name.partition(":")
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as exc:
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} not found ({exc})") from None
        cls = getattr(mod, cls_name, None)
        if cls is None:
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} has no class {cls_name!r}")
    else:
        if name not in BUILTIN:
            raise PolicyLoadError(f"unknown policy {name!r}; built-in: {', '.join(sorted(BUILTIN))}, "
                                  f"or give package.module:ClassName")
        cls = BUILTIN[name]
    try:
        return cls(**params)
    except TypeError as exc:
        raise PolicyLoadError(f"policy {name!r}: bad parameters {params}: {exc}") from None


@dataclass
class Fault:
    tank: int | None
    decision: str
    fault: str
    message: str


@dataclass
class SideController:
    """Answers every decision addressed to one side.

    ``policy`` answers side-level decisions (``activate`` and decisions with several actors); ``per_tank`` maps a
    tank id to its own doctrine for decisions whose single actor is that tank.  ``rng`` is the side's own stream.
    """

    side: int
    policy: Policy
    rng: Any
    per_tank: dict[int, Policy] = field(default_factory=dict)
    decision_timeout_s: float | None = None
    on_fault: str = "pass"
    max_faults: int = 5
    plans: dict[int, list[Action]] = field(default_factory=dict)
    plan_meta: dict[int, Plan] = field(default_factory=dict)
    faults: dict[int | None, int] = field(default_factory=dict)

    def policy_for(self, decision: Any) -> Policy:
        if len(decision.actors) == 1 and decision.actors[0] in self.per_tank:
            return self.per_tank[decision.actors[0]]
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
        if self.never_reacts(decision):
            return decision.default, [], False
        act, faults = self._ask(decision, make_obs)
        if isinstance(act, Plan):
            actor = act.actor if act.actor is not None else (decision.actors[0] if decision.actors else None)
            self.plans[actor] = list(act.steps)
            self.plan_meta[actor] = act
            nxt = self._from_plan(actor, decision)
            if nxt is None:
                nxt = Pass(actor)
            return nxt, faults, True
        return act, faults, False

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
        t0 = time.perf_counter()
        try:
            act = pol.decide(make_obs(decision), decision)
        except Exception as exc:  # noqa: BLE001 - a policy's crash is reported, never fatal
            return Pass(actor), [Fault(actor, decision.kind, "raise", f"{type(exc).__name__}: {exc}")]
        elapsed = time.perf_counter() - t0
        if self.decision_timeout_s is not None and elapsed > self.decision_timeout_s:
            return Pass(actor), [Fault(actor, decision.kind, "timeout",
                                       f"took {elapsed:.3f} s > limit {self.decision_timeout_s} s")]
        if not isinstance(act, Action):
            return Pass(actor), [Fault(actor, decision.kind, "wrong_type",
                                       f"returned {type(act).__name__}, expected an Action")]
        return act, []
