"""``cover``: moves to the reachable hex of least threat, then fires.

Each move it scores up to ``candidates`` reachable hexes (spread evenly from the nearest to the farthest; on each,
the state facing the nearest enemy most directly) by the summed exact kill odds of the enemies against it there
(enemies out of sight count where they were last seen).  Among the hexes within ``tolerance`` of the least threat it
prefers one from which it can still shoot after the move, then the lower threat, then nearer the enemy but not
within ``stop_at`` hexes, then the cheaper move; then it fires at the best target if the kill odds reach
``min_odds``.  With no enemy known at all it makes for the objectives like ``advance``.

Parameters: ``min_odds`` (default 0), ``tolerance`` (extra summed kill odds it accepts to keep a shot, default 0.1),
``stop_at`` (default 3), ``candidates`` (hexes scored for threat per move, default 16).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Cover(Doctrine):
    """Least-threat hex, then fire (see the module docstring)."""

    name = "cover"
    defaults = {"min_odds": 0.0, "tolerance": 0.1, "stop_at": 3, "candidates": 16}
    bounds = {**Doctrine.bounds, "tolerance": (0.0, 1e6), "stop_at": (0, 1000)}

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
        threat = {s: float(obs.threat(obs.hex_of(s), obs.facing_of(s))) for s in cands}
        least = min(threat.values(), default=0.0)
        decision = obs.decision

        def key(s: Any) -> tuple:
            shot_after = self.can_fire_after(obs, decision, states[s][0]) and \
                self.best_shot(obs, as_if=obs.hypo(s)) is not None
            closer = max(field.get(obs.hex_of(s), 10 ** 6), self.stop_at)
            return (0 if shot_after else 1, threat[s], closer, states[s][0], repr(s))

        nearly = [s for s in cands if threat[s] <= least + self.tolerance]
        best = min(nearly, key=key) if nearly else None
        return None if best is None or best == here else best
