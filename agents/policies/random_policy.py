"""``random``: a uniformly random legal answer (the tournament baseline).

Every draw comes from ``obs.rng``, the side's own stream, so it never shifts the dice or the other side.  At an
activation it picks a tank and then one of its modes uniformly; in a move a uniformly random reachable destination
(staying included), then, where a shot is allowed, a uniformly random target or no shot; at a fire or reaction
decision a uniformly random (shooter, target) pair or a pass; at a ram decision a random legal ram or a pass; at
an evade decision a random reachable hex.  Other decisions get the rule set's default.

Parameters: ``pass_weight`` (how many tickets "pass / no shot" gets against one per target, default 1).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine
from sim.actions import Action, Activate, Fire, Pass, Ram, Special, Step


class RandomPolicy(Doctrine):
    """Uniformly random legal actions from the side's own stream (see the module docstring)."""

    name = "random"
    defaults = {"pass_weight": 1}
    bounds = {"pass_weight": (0, 1000)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    pass_weight: int

    def pick(self, obs: Any, options: list) -> Any:
        return options[obs.rng.randrange(len(options))] if options else None

    def shot_or_pass(self, obs: Any, shooters: tuple, passing: Any) -> Any:
        options = [Fire(a, t) for a in shooters for t in obs.targets(a)]
        options = [a for a in options if obs.is_legal(a)] + [passing] * self.pass_weight
        return self.pick(obs, options) or passing

    def on_activate(self, obs: Any, decision: Any) -> Any:
        a = self.pick(obs, list(decision.actors))
        act = Activate(a, self.pick(obs, sorted(obs.modes(a))) or "hold")
        return act if obs.is_legal(act) else decision.default

    def on_move_step(self, obs: Any, decision: Any) -> Any:
        ctx = decision.context
        a = obs.actor
        if not ctx.get("plan_complete"):
            states = self.movable_states(obs, decision)
            options = sorted(states, key=repr)
            if not ctx.get("compulsory"):
                options.append(None)
            dest = self.pick(obs, options)
            if dest is not None and len(states[dest][1]) > 1:
                return obs.plan_to(states[dest][1])
        end = Special(a, "end_move", {"status": None})
        passing = end if obs.is_legal(end) else Pass(a)
        if ctx.get("can_fire"):
            return self.shot_or_pass(obs, (a,), passing)
        return passing if obs.is_legal(passing) else decision.default

    on_move = on_move_step

    def wants_fire_after_move(self, obs: Any) -> bool:
        return False

    def on_fire(self, obs: Any, decision: Any) -> Any:
        return self.shot_or_pass(obs, (obs.actor,), Pass(obs.actor))

    on_fire_again = on_fire
    on_attack = on_fire

    def on_react(self, obs: Any, decision: Any) -> Any:
        return self.shot_or_pass(obs, tuple(decision.actors), Pass(None))

    def on_ram(self, obs: Any, decision: Any) -> Any:
        rams: list[Action] = [Ram(obs.actor, e.tank_id) for e in obs.enemies()]
        rams = [r for r in rams if obs.is_legal(r)] + [Pass(obs.actor)]
        return self.pick(obs, rams)

    def on_evade(self, obs: Any, decision: Any) -> Any:
        hexes = sorted({obs.hex_of(s) for s in obs.reachable()})
        to = self.pick(obs, hexes)
        act = Step(obs.actor, to) if to is not None else decision.default
        return act if obs.is_legal(act) else decision.default
