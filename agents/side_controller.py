"""The per-side controller: answers every decision addressed to one side, follows move plans, catches faults.

:class:`SideController` wraps a side's doctrine (and its tanks' own, :class:`agents.tank.Tank`): it keeps the
side-level decisions (which tank activates, several actors at once), follows the move plans a doctrine answers
with, and turns a policy's crash, wrong answer or slow answer into the decision's default plus a recorded
:class:`Fault`.  The engine (:class:`sim.model.BattleModel`) and the search kit (:mod:`agents.search`, on copies
of a battle) both play through it.

It sits below the doctrines' registry: it asks a policy only for ``decide(observation, decision)`` (and reads an
optional ``never_reacts``), and imports no doctrine, so a search doctrine can play activations through it.
Loading a doctrine by name is :mod:`agents.controllers` (which re-exports this module's classes).

A fault (a raise, a wrong return type, a decision slower than ``decision_timeout_s`` measured after the call
returns) is answered with the decision's ``default`` (legal under every rule set: the conformance suite checks it
for every decision of real battles) and a recorded fault; the engine turns it into a ``PolicyFault`` event and
applies ``on_fault`` / ``max_faults``.  An illegal action is not a fault: the engine logs it (``ActionRejected``)
and applies the default too.
"""
from __future__ import annotations

import dataclasses
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.observation import frozen_decision
from sim.actions import Action, Activate, Plan, Special

if TYPE_CHECKING:  # for the annotations only: importing the doctrines' package would import the search doctrine
    from agents.policies.base import Policy
    from agents.tank import Tank
    from sim.rules.base import Decision

__all__ = ["DecisionOverrun", "Fault", "OverrunGuard", "SideController"]


class DecisionOverrun(BaseException):
    """Raised in the playing thread by :class:`OverrunGuard` when an in-process decision runs past its limit
    (a ``BaseException``, so a policy's ``except Exception`` does not swallow it)."""


class OverrunGuard:
    """Cuts off an in-process decision that does not return: a real-time alarm (``SIGALRM``, ``setitimer``) armed
    for each call raises :class:`DecisionOverrun` in the policy's code, which :meth:`SideController._ask` records
    as a ``timeout`` fault (the decision's default applies).  Unlike a thread's asynchronous exception, the alarm
    also interrupts a blocking call (``time.sleep``, a read).  If the policy swallows it, it is raised again every
    :attr:`REPEAT_S` seconds until the call ends.

    Use it as a context manager around a battle (:meth:`sim.model.BattleModel.run` with ``cut_off_overruns``): it
    installs its handler on entry and puts the previous one back on exit.  Only the main thread of a process
    receives signals, so :meth:`available` says whether it can work here (POSIX, main thread); where it cannot, a
    decision that never returns is not cut off (as before).  Isolated entrants have their own time limits and are
    not guarded.  ``armed`` is true only while a call is guarded: an alarm that lands after :meth:`disarm` does
    nothing."""

    #: Seconds between repeated alarms while a cut-off call goes on.
    REPEAT_S = 1.0

    def __init__(self) -> None:
        self.armed = False
        self._previous: Any = None

    @staticmethod
    def available() -> bool:
        """Whether alarms can be used: ``signal.setitimer`` exists and this is the main thread."""
        return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> OverrunGuard:
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()
        signal.signal(signal.SIGALRM, self._previous if self._previous is not None else signal.SIG_DFL)

    def arm(self, seconds: float) -> None:
        """Raise :class:`DecisionOverrun` in this thread after ``seconds`` (> 0) unless :meth:`disarm` comes first."""
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, seconds, self.REPEAT_S)

    def disarm(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, signum: int, frame: object) -> None:
        if self.armed:
            raise DecisionOverrun


def overrun_after(limit_s: float) -> float:
    """When :class:`OverrunGuard` cuts off a decision with the limit ``limit_s`` (seconds): the limit plus a grace of
    ``max(1, limit_s / 2)`` seconds, as the tournament's decision watchdog does."""
    return limit_s + max(1.0, limit_s / 2)


#: ``TANKSIM_STRICT_BUILTIN_POLICIES=1`` (the test suite sets it, for its own processes and every process it starts):
#: a crash of a built-in doctrine (a class of ``agents.policies``) is raised rather than recorded as a fault.  A
#: built-in doctrine that raises is a bug of the project; recorded as a fault it would only make the tank pass, and a
#: test running that doctrine would go on passing without checking anything.  Users' policies are never affected.
STRICT_BUILTIN_POLICIES = os.environ.get("TANKSIM_STRICT_BUILTIN_POLICIES") == "1"


def _builtin(policy: object) -> bool:
    """Whether ``policy`` is one of the project's own doctrines (its class defined under ``agents.policies``)."""
    return type(policy).__module__.startswith("agents.policies.")


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
    rng: random.Random
    per_tank: dict[int, Policy] = field(default_factory=dict)
    tanks: dict[int, Tank] = field(default_factory=dict)
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
    #: Set by the engine while a battle plays with ``cut_off_overruns`` (:class:`OverrunGuard`); ``None``: a decision
    #: that never returns is not cut off.
    overrun_guard: OverrunGuard | None = None

    def policy_for(self, decision: Decision) -> Policy:
        """The doctrine that answers ``decision``: its single actor's (the tank's own, or ``per_tank``), else the
        side's."""
        if len(decision.actors) == 1:
            a = decision.actors[0]
            own = self.tanks[a].policy if a in self.tanks else None
            if own is not None:
                return own
            if a in self.per_tank:
                return self.per_tank[a]
        return self.policy

    def never_reacts(self, decision: Decision) -> bool:
        return decision.kind == "react" and getattr(self.policy_for(decision), "never_reacts", False)

    def answer(self, decision: Decision, make_obs: Callable[[Decision], Any]) -> tuple[Action, list[Fault], bool]:
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
            if actor is None:  # a plan for no tank, answering a decision without actors (no rule set asks one)
                return self.fallback(decision), faults, False
            self.plans[actor] = list(act.steps)
            self.plan_meta[actor] = act
            nxt = self._from_plan(actor, decision)
            if nxt is None:
                nxt = self.fallback(decision, actor)
            return nxt, faults, True
        return act, faults, False

    def pick_actor(self, decision: Decision) -> tuple[Decision, int]:
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
    def fallback(decision: Decision, actor: int | None = None) -> Action:
        """What a fault, an illegal answer or an exhausted plan gets: the decision's ``default`` -- what the rule
        set does when the controller has no opinion (hold an activation, end a move, pass a shot, the first step
        of a compulsory move, the default evasion).  Every rule set's default is legal (the fault conformance suite,
        ``tests/test_fault_conformance.py``, checks it for every decision of real battles)."""
        return decision.default

    def _from_plan(self, actor: int, decision: Decision) -> Action | None:
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

    def _ask(self, decision: Decision, make_obs: Callable[[Decision], Any]) -> tuple[Action, list[Fault]]:
        pol = self.policy_for(decision)
        actor = decision.actors[0] if len(decision.actors) == 1 else None
        charged = actor if actor is not None else getattr(decision.default, "actor", None)
        frozen = frozen_decision(decision)
        obs = make_obs(frozen)
        view = getattr(obs, "decision", frozen)  # the decision as the side sees it (agents.observation)
        tank = self.tanks.get(actor) if actor is not None else None
        answer = tank.decide if tank is not None and tank.policy is not None else pol.decide
        guard, limit = self.overrun_guard, self.decision_timeout_s
        cut_off = guard is not None and limit is not None and not getattr(pol, "isolated", False)
        t0 = self.clock()
        try:
            if not cut_off or guard is None or limit is None:
                act = answer(obs, view)
            else:
                try:
                    guard.arm(overrun_after(limit))
                    act = answer(obs, view)
                finally:
                    guard.disarm()
        except DecisionOverrun:
            if guard is not None:
                guard.disarm()
            elapsed = self.clock() - t0
            self.policy_time_s += elapsed
            return self.fallback(decision, actor), [Fault(charged, decision.kind, "timeout",
                                                          f"cut off after {elapsed:.3f} s (limit "
                                                          f"{self.decision_timeout_s} s): it did not return")]
        except Exception as exc:  # noqa: BLE001 - a policy's crash is reported, never fatal
            self.policy_time_s += self.clock() - t0
            if STRICT_BUILTIN_POLICIES and _builtin(tank.policy if tank is not None and tank.policy is not None
                                                    else pol):
                raise
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
