"""``objective``: attackers take and hold the objective hexes, defenders deny them.

Attackers (and sides with no role) send each tank to the nearest objective hex that no friend holds or is already
heading for (the tank nearest to an objective claims it first); on the way they move like ``advance`` (facing the
goal, least threat), and a tank standing on an objective stays there and fires.  Defenders put the tank nearest to
each objective nobody of theirs holds onto it (holding a hex denies it) and keep the others where they are, firing
first at the enemies closest to an objective: target value ``p_kill x (1 + deny_bias / (1 + distance to the
nearest objective))``.  Without objectives it plays like ``advance``.

Parameters: ``deny_bias`` (defenders' preference for enemies near an objective, default 2.0), ``min_odds``
(default 0), ``candidates`` (default 6).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Objective(Doctrine):
    """Take and hold (attacker) or deny (defender) the objective hexes (see the module docstring)."""

    name = "objective"
    defaults = {"deny_bias": 2.0, "min_odds": 0.0, "candidates": 6}
    bounds = {**Doctrine.bounds, "deny_bias": (0.0, 1e6)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    deny_bias: float

    def objective_hexes(self, obs: Any) -> tuple:
        return tuple(sorted({o["hex"] for o in obs.objectives()}))

    def defending(self, obs: Any) -> bool:
        return obs.role == "defender"

    def assignment(self, obs: Any) -> dict[int, Any]:
        """Own tank id -> the objective hex it goes for: tanks already on an objective keep it, then the free
        objectives are claimed greedily by the nearest tank (ties: lower id, lower hex)."""
        objs = self.objective_hexes(obs)
        tanks = {t.tank_id: t.hex for t in obs.friends()}
        if obs.me is not None:
            tanks[obs.me.tank_id] = obs.me.hex
        out = {tid: h for tid, h in tanks.items() if h in objs}
        free = [o for o in objs if o not in out.values()]
        idle = [tid for tid in sorted(tanks) if tid not in out]
        pairs = sorted((obs.distance(tanks[tid], o), tid, o) for tid in idle for o in free)
        for _d, tid, o in pairs:
            if tid not in out and o not in out.values():
                out[tid] = o
        return out

    def goal(self, obs: Any) -> Any:
        return self.assignment(obs).get(obs.actor)

    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        objs = self.objective_hexes(obs)
        if not objs:
            return odds.p_kill
        d = min(obs.distance(obs.tank(target).hex, o) for o in objs)
        return float(odds.p_kill) * (1 + self.deny_bias / (1 + d))

    def destination(self, obs: Any) -> tuple[tuple, int]:
        """``(goal hexes, stop_at)`` for the actor: its assigned objective; an attacker with none supports toward
        the objectives; a defender with none stays; with no objectives at all, the known enemies."""
        objs = self.objective_hexes(obs)
        if not objs:
            return self.closing_goals(obs), self.goal_stop(obs, 1)
        goal = self.goal(obs)
        if goal is not None:
            return (goal,), 0
        return ((), 0) if self.defending(obs) else (objs, 1)

    def intent(self, obs: Any) -> tuple[str, float]:
        me = obs.me
        goals, stop = self.destination(obs)
        d = min((obs.distance(me.hex, g) for g in goals), default=0)
        if d > stop:
            return ("move_only" if self.objective_hexes(obs) else "move"), 1.0 / (1 + d)
        bt = self.best_shot(obs)
        if bt is not None:
            return "fire", 2.0 + float(bt[1].p_kill)
        return "overwatch", 0.0

    def wants_fire_after_move(self, obs: Any) -> bool:
        if not self.objective_hexes(obs):
            return bool(obs.visible_ids())
        goals, _stop = self.destination(obs)
        return bool(obs.visible_ids()) and not goals

    def choose_destination(self, obs: Any, states: Any) -> Any:
        goals, stop = self.destination(obs)
        return self.approach(obs, states, goals, stop)
