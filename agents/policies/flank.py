"""``flank``: manoeuvres for a side or rear shot before firing.

It values a shot by its exact kill odds, raised by ``flank_bias`` when the face struck is not the front
(``value = p_kill x (1 + flank_bias)`` for side and rear, ``p_kill`` for front).  It fires when it has a side or rear
shot, or a front shot with kill odds of at least ``front_odds``.  Otherwise it manoeuvres toward the flank zone of
the nearest visible enemy (hexes ``2..reach`` from it that see its side or rear; steps counted over passable
terrain): of up to ``candidates`` reachable states (nearest the zone first) it takes the one minimising
``steps to the zone + risk_weight x threat there - flank-valued shot from there``.  Close to the zone it keeps the
points for a shot after the move; far from it, it moves with all of them.

Parameters: ``flank_bias`` (extra weight of a side or rear shot, default 1.0), ``front_odds`` (kill odds that justify
a front shot, default 0.5), ``reach`` (outer radius of the flank zone in hexes, default 4), ``risk_weight`` (hexes of
detour worth one unit of summed enemy kill odds, default 2.0), ``min_odds`` (least kill odds of any shot, default 0),
``candidates`` (default 8).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import BIG, Doctrine
from sim.hexgrid import Hex, aspect


class Flank(Doctrine):
    """Seek side and rear aspect before firing (see the module docstring)."""

    name = "flank"
    defaults = {"flank_bias": 1.0, "front_odds": 0.5, "reach": 4, "risk_weight": 2.0, "min_odds": 0.0,
                "candidates": 8}
    bounds = {**Doctrine.bounds, "flank_bias": (0.0, 1e6), "front_odds": (0.0, 1.0), "reach": (2, 1000),
              "risk_weight": (0.0, 1e6)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    flank_bias: float
    front_odds: float
    reach: int
    risk_weight: float

    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        face = obs.face(target, as_if=as_if, shooter=actor)
        return float(odds.p_kill) * (1 + (self.flank_bias if face not in (None, "front") else 0))

    def worth_firing(self, obs: Any, target: int, odds: Any) -> bool:
        if float(odds.p_kill) < self.min_odds:
            return False
        return obs.face(target) not in (None, "front") or float(odds.p_kill) >= self.front_odds

    def intent(self, obs: Any) -> tuple[str, float]:
        bt = self.best_shot(obs)
        if bt is not None:
            return "fire", 2.0 + float(bt[1].p_kill)
        if not self.known_enemy_hexes(obs):
            return ("hold", 0.0) if self.search_done(obs) else ("move_only", 0.1)
        near = self.zone_distance(obs) <= self.reach // 2
        return ("move" if near else "move_only"), 1.0

    def zone_distance(self, obs: Any) -> int:
        """Steps from the actor to the flank zone of the nearest enemy (large if there is none)."""
        zone = self.flank_zone(obs)
        return obs.distance_field(zone).get(obs.me.hex, BIG) if zone else BIG

    def wants_fire_after_move(self, obs: Any) -> bool:
        return self.zone_distance(obs) <= self.reach // 2

    def flank_zone(self, obs: Any) -> tuple:
        """Passable hexes 2..``reach`` from the nearest known enemy that see its side or rear."""
        me = obs.me
        enemies = [e for e in obs.enemies()]
        if not enemies:
            return ()
        e = min(enemies, key=lambda t: (obs.distance(me.hex, t.hex), t.tank_id))
        zone = []
        for dq in range(-self.reach, self.reach + 1):
            for dr in range(max(-self.reach, -dq - self.reach), min(self.reach, -dq + self.reach) + 1):
                h = Hex(e.hex.q + dq, e.hex.r + dr)
                if 2 <= obs.distance(h, e.hex) <= self.reach and aspect(e.hex, e.facing, h).face != "front" \
                        and obs.passable(h):
                    zone.append(h)
        return tuple(sorted(zone))

    def choose_destination(self, obs: Any, states: Any) -> Any:
        zone = self.flank_zone(obs)
        goals = zone or self.closing_goals(obs)
        if not goals or not states:
            return None
        field = obs.distance_field(goals)
        per_hex = self.one_per_hex(obs, states)
        me = obs.me
        cands = self.capped(per_hex.values(), lambda s: (field.get(obs.hex_of(s), BIG), states[s][0], repr(s)))

        def key(s: Any) -> tuple:
            h = obs.hex_of(s)
            hypo = obs.hypo(s)
            shot = self.best_target(obs, as_if=hypo)  # any shot from there, valued by aspect
            flank_shot = 0.0 if shot is None else self.target_value(obs, shot[0], shot[1], obs.actor, hypo)
            risk = self.risk_weight * float(obs.threat(h, obs.facing_of(s)))
            return (field.get(h, BIG) + risk - flank_shot, states[s][0], repr(s))

        best = min(cands, key=key)
        stay = next((s for s in states if obs.hex_of(s) == me.hex and obs.facing_of(s) == me.facing), None)
        if stay is not None and key(stay) <= key(best):
            return None
        return best
