"""``rush``: charges. Rams where the rule set allows ramming, otherwise closes to point blank and fires.

Each activation it rams the nearest enemy if the rule set has ramming and a ``Ram`` is legal now (or picks the rule
set's ``ram`` mode); otherwise, with a shot and an enemy within ``point_blank`` hexes (or within ``reserve_within``
hexes when the rule set offers a ``fire`` mode, a shot without a move), it fires; otherwise it charges the nearest
known enemy (no threat considered) and fires after the move if the rule set still allows a shot. Without ramming it
keeps back the points a shot after the move costs (the decision's ``fire_cost``) when it has a shot now or an enemy
within ``reserve_within`` hexes and has the points for a shot at all; else it charges with every point. Where the
rule set has ramming and tells the ram distances in the decision's context (``half_speed`` .. ``speed_hexes``, as
``hummel_quest`` does) it charges to a hex in that window instead of point blank, so it can ram at its next
activation.

Parameters: ``point_blank`` (range in hexes at which it stops and fires, default 1), ``reserve_within`` (hexes from
the nearest enemy within which it fires in place or keeps the shot's points, default 3), ``min_odds`` (default 0),
``candidates`` (default 8).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine
from sim.actions import Activate
from sim.hexgrid import Hex


class Rush(Doctrine):
    """Charge; ram where possible (see the module docstring)."""

    name = "rush"
    defaults = {"point_blank": 1, "reserve_within": 3, "min_odds": 0.0, "candidates": 8}
    bounds = {**Doctrine.bounds, "point_blank": (0, 1000), "reserve_within": (0, 1000)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    point_blank: int
    reserve_within: int

    def goals(self, obs: Any) -> tuple:
        return self.closing_goals(obs)

    def enemy_distance(self, obs: Any) -> int:
        me = obs.me
        hexes = self.known_enemy_hexes(obs)
        return min((obs.distance(me.hex, h) for h in hexes), default=10 ** 6)

    def intent(self, obs: Any) -> tuple[str, float]:
        if obs.has_ramming and ("ram" in obs.modes() or self.ram_action(obs, obs.decision, (obs.actor,))):
            return "ram", 3.0
        d = self.enemy_distance(obs)
        bt = self.best_shot(obs)
        if bt is not None and (d <= self.point_blank or (d <= self.reserve_within and "fire" in obs.modes())):
            return "fire", 2.0 + float(bt[1].p_kill)
        if self.goals(obs) and not self.search_done(obs):
            return "charge", 1.0 / (1 + d)
        return "hold", 0.0

    def on_activate(self, obs: Any, decision: Any) -> Any:
        act = self.ram_action(obs, decision)
        if act is not None:
            return act
        for a in decision.actors:
            if "ram" in obs.modes(a) and self.ram_target(obs.for_actor(a)) is not None:
                return Activate(a, "ram")
        return super().on_activate(obs, decision)

    def ram_target(self, obs: Any) -> int | None:
        me = obs.me
        es = obs.enemies()
        return min(es, key=lambda e: (obs.distance(me.hex, e.hex), e.tank_id)).tank_id if es else None

    def on_fire(self, obs: Any, decision: Any) -> Any:
        act = self.ram_action(obs, decision)
        return act if act is not None else super().on_fire(obs, decision)

    on_attack = on_fire

    def wants_ram(self, obs: Any) -> bool:
        return True

    def wants_fire_after_move(self, obs: Any) -> bool:
        """Keep the shot's points back (``move_and_fire``) when it cannot ram and it has a shot now or an enemy
        within ``reserve_within`` hexes; otherwise charge with every point."""
        mp, cost = obs.context.get("mp"), obs.context.get("fire_cost", 0)
        if obs.has_ramming or (mp is not None and mp < cost):
            return False
        return self.enemy_distance(obs) <= self.reserve_within or self.best_shot(obs) is not None

    @staticmethod
    def ram_window(obs: Any) -> tuple[int, int] | None:
        """Distances from which a ram will be possible, where the rule set has ramming and says so in the
        decision's context (``half_speed`` .. ``speed_hexes``); else ``None``."""
        lo, hi = obs.context.get("half_speed"), obs.context.get("speed_hexes")
        if not obs.has_ramming or not isinstance(lo, int) or not isinstance(hi, int) or hi < max(lo, 1):
            return None
        return max(lo, 1), hi

    def choose_destination(self, obs: Any, states: Any) -> Any:
        window = self.ram_window(obs)
        enemies = self.known_enemy_hexes(obs)
        if window is not None and enemies:
            me = obs.me
            target = self.nearest(obs, me.hex, enemies)
            lo, hi = window
            if lo <= obs.distance(me.hex, target) <= hi:
                return None
            # the hexes lo..hi from the target that a tank can reach it from (sorted: ``approach`` reads them as a
            # set); looked up in the target's lazy field, so this costs the ring, not a search of the whole map
            field = obs.distance_field((target,))
            ring = tuple(h for h in sorted(Hex(target[0] + dq, target[1] + dr) for dq in range(-hi, hi + 1)
                                           for dr in range(max(-hi, -dq - hi), min(hi, -dq + hi) + 1))
                         if lo <= obs.distance(h, target) and obs.passable(h) and h in field)
            dest = self.approach(obs, states, ring, 0, threat_weight=0.0)
            if dest is not None:
                return dest
        return self.approach(obs, states, self.goals(obs), self.goal_stop(obs, self.point_blank), threat_weight=0.0)
