"""``greedy``: one-step lookahead.  Picks the move-and-fire pair that maximises expected enemy losses minus
``risk_weight`` x threat.

For a state ``s`` it could end its move in and a target ``t`` it could then shoot, the value is
``p_kill(s -> t) - risk_weight x threat(s)`` (exact odds from the rule set; ``p_kill`` is 0 when no shot is possible
after the move).  Each activation it picks, across its tanks, the one whose best pair (firing from where it stands
when the rule set allows, else moving) is worth most, and plays it.  Only ``candidates`` states are scored per move
(the nearest hexes first, each facing the nearest enemy); with no enemy in sight it closes on the last-known ones
like ``advance`` (or the objectives, or with neither the board's centre).

Parameters: ``risk_weight`` (price of one unit of summed enemy kill odds against it, default 1.0), ``min_odds``
(default 0), ``candidates`` (default 8).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Greedy(Doctrine):
    """Maximise expected kills minus ``risk_weight`` x threat over (state, target) pairs (see the module docstring)."""

    name = "greedy"
    defaults = {"risk_weight": 1.0, "min_odds": 0.0, "candidates": 8}
    bounds = {**Doctrine.bounds, "risk_weight": (0.0, 1e6)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    risk_weight: float

    def value(self, obs: Any, state: Any, can_fire: bool) -> tuple[float, int | None]:
        """``(value, target)`` of ending in ``state`` (and firing at ``target`` if ``can_fire``)."""
        h, f = obs.hex_of(state), obs.facing_of(state)
        risk = self.risk_weight * float(obs.threat(h, f))
        if not can_fire:
            return -risk, None
        bt = self.best_shot(obs, as_if=obs.hypo(state))
        if bt is None:
            return -risk, None
        return float(bt[1].p_kill) - risk, bt[0]

    def intent(self, obs: Any) -> tuple[str, float]:
        me = obs.me
        if not obs.visible_ids():
            return ("hold", -2.0) if self.search_done(obs) else ("move", -1.0)
        risk = self.risk_weight * float(obs.threat(me.hex, me.facing))
        bt = self.best_shot(obs)
        fire_now = float(bt[1].p_kill) - risk if bt is not None else None
        if fire_now is not None and "fire" in obs.modes():
            return "fire", fire_now
        if fire_now is not None:
            return "move", fire_now
        return "move", -risk

    def choose_destination(self, obs: Any, states: Any) -> Any:
        decision = obs.decision
        if not obs.visible_ids():
            return self.approach(obs, states, self.closing_goals(obs), self.goal_stop(obs, 1))
        cands, here = self.candidates_and_here(obs, states, self.capped)
        if not cands:
            return None
        field = obs.distance_field(self.known_enemy_hexes(obs))

        def key(s: Any) -> tuple:
            v, _t = self.value(obs, s, self.can_fire_after(obs, decision, states[s][0]))
            return (-v, field.get(obs.hex_of(s), 10 ** 6), states[s][0], repr(s))

        best = min(cands, key=key)
        return None if best == here else best

    def wants_fire_after_move(self, obs: Any) -> bool:
        return False
