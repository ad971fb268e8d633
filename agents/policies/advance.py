"""``advance``: closes on the enemy by the least-threat path and fires when it can.

It moves to the reachable state nearest (in steps over passable terrain) to the closest known enemy, or to an
objective when no enemy is known; among equally near states it prefers facing the enemy, then the lowest summed
enemy threat, then the cheapest.  After the move it fires at the best target if the kill odds reach ``min_odds``.

Parameters: ``min_odds`` (default 0), ``threat_candidates`` (how many nearest states are checked for threat,
default 6), ``stop_at`` (hexes from the nearest enemy at which it stops closing, default 1).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine
from sim.hexgrid import in_arc


class Advance(Doctrine):
    """Close on the enemy, fire when possible (see module docstring for parameters)."""

    name = "advance"
    defaults = {"min_odds": 0.0, "threat_candidates": 6, "stop_at": 1}

    def goals(self, obs: Any) -> tuple:
        known = tuple(sorted(set(obs.last_known().values())))
        if known:
            return known
        return tuple(sorted(tuple(o["hex"]) for o in obs.objectives()))

    def intent(self, obs: Any) -> tuple[str, float]:
        goals = self.goals(obs)
        me = obs.me
        if not goals:
            return "hold", -1.0
        d = min(obs.distance(me.hex, g) for g in goals)
        return "move", 1.0 / (1 + d)

    def choose_destination(self, obs: Any, states: Any) -> Any:
        goals = self.goals(obs)
        if not goals or not states:
            return None
        field = obs.distance_field(goals)
        big = 10 ** 6
        me = obs.me
        here = field.get(me.hex, big)
        if here <= self.stop_at:
            return None

        def closeness(st: Any) -> int:
            d = field.get(obs.hex_of(st), big)
            return max(d, self.stop_at)

        ranked = sorted(states, key=lambda s: (closeness(s), states[s][0], repr(s)))
        best_d = closeness(ranked[0])
        if best_d >= here:
            return None
        tied = [s for s in ranked if closeness(s) == best_d][: self.threat_candidates]
        nearest = min(goals, key=lambda g: (obs.distance(obs.hex_of(tied[0]), g), g))

        def key(s: Any) -> tuple:
            h, f = obs.hex_of(s), obs.facing_of(s)
            return (0 if in_arc(h, nearest, f) else 1, obs.threat(h, f), states[s][0], repr(s))

        return min(tied, key=key)
