"""``advance``: closes on the enemy by the least-threat path and fires when the odds are good enough.

It moves to the reachable state nearest (in steps over passable terrain) to the closest known enemy, or to an
objective when no enemy is known, or with neither to the board's centre (within 2 steps of it, it waits there:
:meth:`agents.policies.base.Doctrine.closing_goals`), stopping ``stop_at`` hexes short; among the equally near
states (at most ``candidates``) it prefers facing the enemy, then the least summed enemy threat at the end and
along the way, then the cheapest move.  After the move, or instead of it when it has a shot, it fires at the best
target if the kill odds reach ``min_odds``.

Parameters: ``min_odds`` (default 0), ``stop_at`` (hexes from the enemy at which it stops closing, default 1),
``threat_weight`` (weight of the threat at the end of the move against the threat along the way, default 1),
``candidates`` (equally near states checked for threat, default 6).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine, min_distance


class Advance(Doctrine):
    """Close on the enemy, fire when possible (see the module docstring)."""

    name = "advance"
    defaults = {"min_odds": 0.0, "stop_at": 1, "threat_weight": 1.0, "candidates": 6}
    bounds = {**Doctrine.bounds, "stop_at": (0, 1000), "threat_weight": (0.0, 1e6)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    stop_at: int
    threat_weight: float

    def goals(self, obs: Any) -> tuple:
        return self.closing_goals(obs)

    def intent(self, obs: Any) -> tuple[str, float]:
        """``("fire", 2 + kill odds)`` within ``stop_at`` of the nearest goal with a shot worth taking, else
        ``("move", 1 / (1 + distance))``; ``("hold", -1)`` with no goal or the search done.

        Speed (issue 14): the best shot is asked only within ``stop_at`` of the goals, the one case that reads it
        (an activation scores up to twelve actors, mostly far off: each ask works out the actor's shots at every
        enemy).  The same answer as asking it first, since a best shot only reads the observation (decided: a subclass
        whose :meth:`best_shot` does more than answer is not asked it where its answer is not read)."""
        goals = self.goals(obs)
        me = obs.me
        if not goals or self.search_done(obs):
            return "hold", -1.0
        d = min_distance(me.hex, goals)
        bt = self.best_shot(obs) if d <= self.stop_at else None
        if bt is not None and d <= self.stop_at:
            return "fire", 2.0 + float(bt[1].p_kill)
        return "move", 1.0 / (1 + d)

    def choose_destination(self, obs: Any, states: Any) -> Any:
        return self.approach(obs, states, self.goals(obs), self.goal_stop(obs, self.stop_at), self.threat_weight)
