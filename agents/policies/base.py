"""Policy and Doctrine base classes.

A :class:`Policy` answers ``decide(observation, decision) -> Action``.  A :class:`Doctrine` splits that into the
decision kinds every rule set shares, so a doctrine written once plays under every rule set:

* ``activate`` -> :meth:`Doctrine.intent` per actor (``fire`` / ``move`` / ``hold`` / ``overwatch`` with a
  priority), mapped onto the rule set's modes;
* ``move`` / ``move_step`` -> :meth:`Doctrine.choose_destination` (a reachable state) turned into a plan; when the
  plan is done, fire at the best target if the rule set allows it here;
* ``fire`` / ``fire_again`` / ``react`` / ``attack`` -> the best target by exact kill odds (at least ``min_odds``);
* any other kind -> the decision's default.

Parameters are data: class attribute ``defaults`` lists them; ``Doctrine(**params)`` rejects unknown names.
"""
from __future__ import annotations

from typing import Any, Mapping

from agents.actions import Action, Activate, Fire, Pass, Special

_MODE_PREFS = {
    "fire": ("fire", "move_and_fire", "hold"),
    "move": ("move_and_fire", "move", "hold"),
    "move_only": ("move", "move_and_fire", "hold"),
    "overwatch": ("ambush", "hold"),
    "hold": ("hold",),
}


class Policy:
    """Base of every policy.  ``never_reacts = True`` lets the engine answer ``react`` decisions with the default
    without building an observation."""

    name = "policy"
    never_reacts = False
    defaults: Mapping[str, Any] = {}

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter(s) {', '.join(unknown)}; "
                            f"parameters: {', '.join(self.defaults) or 'none'}")
        for k, v in {**self.defaults, **params}.items():
            default = self.defaults[k]
            if isinstance(default, bool):
                v = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
            elif isinstance(default, (int, float)) and not isinstance(v, bool):
                v = type(default)(float(v)) if isinstance(default, float) else int(v)
            object.__setattr__(self, k, v)
        self.params = {k: getattr(self, k) for k in self.defaults}

    def decide(self, obs: Any, decision: Any) -> Action:
        return decision.default

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"


class Doctrine(Policy):
    """Dispatches by decision kind (see the module docstring).  Parameter ``min_odds``: the least kill probability
    worth a shot (0..1)."""

    defaults: Mapping[str, Any] = {"min_odds": 0.0}

    def decide(self, obs: Any, decision: Any) -> Action:
        handler = getattr(self, "on_" + decision.kind, None)
        if handler is None:
            return decision.default
        return handler(obs, decision)

    # --- targets ----------------------------------------------------------------------------------------------
    def best_target(self, obs: Any, actor: int | None = None, among: tuple[int, ...] | None = None
                    ) -> tuple[int, Any] | None:
        """The target with the highest kill odds (ties: higher hit odds, then lower id), or ``None``."""
        a = obs.actor if actor is None else actor
        best = None
        for t in (obs.targets(a) if among is None else among):
            o = obs.odds(t, shooter=a)
            if o is None:
                continue
            k = (o.p_kill, o.p_hit, -t)
            if best is None or k > best[0]:
                best = (k, t, o)
        return None if best is None else (best[1], best[2])

    def fire_or_pass(self, obs: Any, decision: Any, actor: int | None = None) -> Action:
        a = obs.actor if actor is None else actor
        bt = self.best_target(obs, a)
        if bt is not None and float(bt[1].p_kill) >= self.min_odds and (bt[1].p_kill > 0 or bt[1].p_hit > 0):
            act = Fire(a, bt[0])
            if obs.is_legal(act):
                return act
        return Pass(a)

    def on_fire(self, obs: Any, decision: Any) -> Action:
        return self.fire_or_pass(obs, decision)

    on_fire_again = on_fire
    on_attack = on_fire

    def on_react(self, obs: Any, decision: Any) -> Action:
        best = None
        for a in decision.actors:
            bt = self.best_target(obs, a)
            if bt is not None and float(bt[1].p_kill) >= self.min_odds:
                if best is None or bt[1].p_kill > best[2].p_kill:
                    best = (a, bt[0], bt[1])
        if best is None:
            return Pass(None)
        return Fire(best[0], best[1])

    # --- activation ---------------------------------------------------------------------------------------------
    def intent(self, obs: Any) -> tuple[str, float]:
        """What the actor of ``obs`` wants this activation: ``(intent, priority)``; higher priority acts first."""
        return "hold", 0.0

    def on_activate(self, obs: Any, decision: Any) -> Action:
        modes_by_actor = decision.context.get("modes", {})
        best = None
        for i, a in enumerate(decision.actors):
            want, prio = self.intent(obs.for_actor(a))
            modes = modes_by_actor.get(a, decision.legal.modes)
            mode = next((m for m in _MODE_PREFS.get(want, (want,)) if m in modes), None)
            if mode is None:
                continue
            if best is None or prio > best[0]:
                best = (prio, a, mode)
        if best is None:
            return decision.default
        return Activate(best[1], best[2])

    # --- movement -----------------------------------------------------------------------------------------------
    def choose_destination(self, obs: Any, states: Mapping[Any, tuple[int, list]]) -> Any:
        """A reachable state to move to (``None`` = stay).  ``states`` are those affordable now."""
        return None

    def movable_states(self, obs: Any, decision: Any) -> dict:
        """Reachable states within the points left, keeping ``fire_cost`` back when a shot is possible, and
        entering a hex when the move is compulsory."""
        ctx = decision.context
        reach = obs.reachable()
        mp = ctx.get("mp")
        keep = ctx.get("fire_cost", 0) if ctx.get("mode") == "move_and_fire" and self.wants_fire_after_move(obs) \
            else 0
        me = obs.me
        def pick(reserve: int) -> dict:
            return {st: (cost, path) for st, (cost, path) in reach.items()
                    if (mp is None or cost <= mp - reserve)
                    and not (ctx.get("compulsory") and obs.hex_of(st) == me.hex)}

        out = pick(keep)
        if keep and (not out or (len(out) == 1 and not ctx.get("compulsory"))):
            moving = pick(0)
            if ctx.get("compulsory") or not obs.targets():
                out = moving or out
        return out

    def wants_fire_after_move(self, obs: Any) -> bool:
        return bool(obs.enemies())

    def on_move_step(self, obs: Any, decision: Any) -> Action:
        ctx = decision.context
        a = obs.actor
        if not ctx.get("plan_complete"):
            states = self.movable_states(obs, decision)
            dest = self.choose_destination(obs, states)
            if dest is None and ctx.get("compulsory") and states:
                dest = min(states, key=lambda s: (states[s][0], repr(s)))
            if dest is not None and dest in states and len(states[dest][1]) > 1:
                return obs.plan_to(states[dest][1])
        if ctx.get("can_fire"):
            act = self.fire_or_pass(obs, decision)
            if isinstance(act, Fire):
                return act
        end = Special(a, "end_move", {"status": None})
        return end if obs.is_legal(end) else decision.default

    on_move = on_move_step
