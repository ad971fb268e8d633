"""``random_target``: hold position and fire at a uniformly random enemy (the Lanchester square-law firer).

Each activation it fires (mode ``fire``, where the rule set offers it) at an enemy drawn uniformly from the ones it
may legally shoot now (``obs.targets``: the visible enemies in range and arc), drawn from ``obs.rng``, the side's
own stream, so it never shifts the dice or the other side; with no target it holds.  It never moves: a move
decision ends the move at once (or fires at a random target where the move allows a shot); it never ambushes,
rams or reacts (``never_reacts``: the engine passes its reactions without asking).  Which of the side's tanks
activates when the rule set lets the side choose (Panzer Squadron, ASL) is the first one in id order that has a
target; a side's ``activation_order: random`` (``sim.scenario.SideSpec``) draws it at random instead.

This is the firing scheme of the stochastic square law (Brown 1963; Kingman 2002): every shot goes to a live enemy
chosen uniformly at random, whatever its state, so the battle is a Markov chain on the numbers of tanks alive
(:mod:`sim.experiments.oracle` solves it exactly).

Parameters: ``min_odds`` (least exact kill probability of a target worth a shot, 0..1, default 0: every legal
target; the draw is uniform over the targets that reach it).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine
from sim.actions import Action, Activate, Fire, Pass, Special


class RandomTarget(Doctrine):
    """Stand still; fire at a uniformly random legal target from the side's own stream (see the module
    docstring)."""

    name = "random_target"
    never_reacts = True
    defaults: dict[str, Any] = {"min_odds": 0.0}
    bounds: dict[str, tuple[float, float]] = {"min_odds": (0.0, 1.0)}
    min_odds: float  # set from the parameters by Doctrine.__init__

    def options(self, obs: Any, actor: int) -> list[int]:
        """The targets ``actor`` may shoot now whose kill odds reach ``min_odds`` (all of them at 0), sorted."""
        targets = sorted(obs.targets(actor))
        if self.min_odds <= 0:
            return targets
        out = []
        for t in targets:
            o = obs.odds(t, shooter=actor)
            if o is not None and float(o.p_kill) >= self.min_odds:
                out.append(t)
        return out

    def random_target(self, obs: Any, actor: int) -> int | None:
        """A target drawn uniformly (one ``obs.rng.randrange`` draw) from :meth:`options`, or ``None``."""
        options = self.options(obs, actor)
        return options[obs.rng.randrange(len(options))] if options else None

    def fire_random(self, obs: Any, actor: int) -> Action:
        """``Fire`` at a random target if that is legal, else ``Pass``."""
        t = self.random_target(obs, actor)
        if t is not None:
            act = Fire(actor, t)
            if obs.is_legal(act):
                return act
        return Pass(actor)

    def on_activate(self, obs: Any, decision: Any) -> Action:
        for a in decision.actors:
            if "fire" in obs.modes(a) and self.options(obs, a):
                act = Activate(a, "fire")
                if obs.is_legal(act):
                    return act
        a = decision.actors[0]
        act = Activate(a, "hold")
        return act if obs.is_legal(act) else decision.default

    def on_fire(self, obs: Any, decision: Any) -> Action:
        return self.fire_random(obs, obs.actor)

    on_fire_again = on_fire
    on_attack = on_fire

    def on_move_step(self, obs: Any, decision: Any) -> Action:
        """Never moves: fire at a random target where the move allows a shot now, else end the move."""
        a = obs.actor
        if decision.context.get("can_fire", decision.context.get("mode") in (None, "move_and_fire")):
            act = self.fire_random(obs, a)
            if isinstance(act, Fire):
                return act
        end = Special(a, "end_move", {"status": None})
        if obs.is_legal(end):
            return end
        p = Pass(a)
        return p if obs.is_legal(p) else decision.default

    on_move = on_move_step

    def on_ram(self, obs: Any, decision: Any) -> Action:
        p = Pass(obs.actor)
        return p if obs.is_legal(p) else decision.default

    def on_react(self, obs: Any, decision: Any) -> Action:
        return Pass(None)
