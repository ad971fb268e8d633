"""``cover``: moves to the reachable hex of least threat, then fires.

Each move it spends what it needs (keeping nothing back for a shot) and scores up to ``candidates`` reachable hexes
(spread evenly from the nearest to the farthest; on each, the state facing the nearest enemy most directly) by the
summed exact kill odds of the enemies against it there, and takes the least (ties: a hex from which it has a shot,
then nearer the enemy but not within ``stop_at`` hexes, then the cheaper move).  Then it fires at the best target
if the kill odds reach ``min_odds``.  Threat counts enemies out of sight where they were last seen; with no enemy
known at all it makes for the objectives like ``advance``.

Parameters: ``min_odds`` (default 0), ``stop_at`` (default 3), ``candidates`` (hexes scored for threat per move,
default 16).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Cover(Doctrine):
    """Least-threat hex, then fire (see the module docstring)."""

    name = "cover"
    defaults = {"min_odds": 0.0, "stop_at": 3, "candidates": 16}
    bounds = {**Doctrine.bounds, "stop_at": (0, 1000)}

    def intent(self, obs: Any) -> tuple[str, float]:
        me = obs.me
        if self.known_enemy_hexes(obs):
            return "move", 1.0 + float(obs.threat(me.hex, me.facing))
        if obs.objectives():
            return "move", 0.1
        return "hold", 0.0

    def wants_fire_after_move(self, obs: Any) -> bool:
        return False

    def choose_destination(self, obs: Any, states: Any) -> Any:
        known = self.known_enemy_hexes(obs)
        if not known:
            return self.approach(obs, states, tuple(sorted(o["hex"] for o in obs.objectives())), self.stop_at)
        me = obs.me
        per_hex = self.one_per_hex(obs, states)
        cands = self.spread(per_hex.values(), lambda s: (states[s][0], repr(s)))
        here = next((s for s in states if obs.hex_of(s) == me.hex and obs.facing_of(s) == me.facing), None)
        if here is not None and here not in cands:
            cands.append(here)
        field = obs.distance_field(known)
        threat = {s: obs.threat(obs.hex_of(s), obs.facing_of(s)) for s in cands}
        least = min(threat.values(), default=None)

        def key(s: Any) -> tuple:
            has_shot = self.best_target(obs, as_if=obs.hypo(s)) is not None
            closer = max(field.get(obs.hex_of(s), 10 ** 6), self.stop_at)
            return (0 if has_shot else 1, closer, states[s][0], repr(s))

        tied = [s for s in cands if threat[s] == least]
        if not tied or (here is not None and threat[here] == least and here in tied and min(tied, key=key) == here):
            return None
        return min(tied, key=key)
