"""``cover``: moves to the reachable hex of least threat, then fires.

Each move it scores up to ``candidates`` reachable hexes (spread evenly from the nearest to the farthest; on each,
the state facing the nearest enemy most directly) by the summed exact kill odds of the enemies against it there
(enemies out of sight count where they were last seen).  Among the hexes within ``tolerance`` of the least threat (plus,
for a hex from which it can still shoot after the move, ``trade`` x that shot's kill odds) it prefers one from which
it can still shoot after the move (it keeps the shot's points, e.g. Panzer Squadron's ``fire_cost``, for it), then
the lower threat, then nearer the enemy but not within ``stop_at`` hexes, then the cheaper move; then it fires at the
best target if the kill odds reach ``min_odds``.  When it already stands within that allowance of the least threat
of the hexes it could reach and has a shot, it takes the rule set's ``fire`` mode (a shot without a move) instead;
a move that ends with a target in sight but no shot asks for the ``stationary`` status, so it may fire in place at
its next activation, where the threat against it there is within ``tolerance`` (standing still gives up the
protection of moving, e.g. Panzer Squadron's -1 against a target in movement).  With no enemy known at all it
makes for the objectives like ``advance`` (with none, the board's centre).

Parameters: ``min_odds`` (default 0), ``tolerance`` (extra summed kill odds it accepts to keep a shot, default 0.1),
``trade`` (extra threat accepted per unit of kill odds of the shot it keeps, default 1),
``stop_at`` (default 3), ``candidates`` (hexes scored for threat per move, default 16).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Cover(Doctrine):
    """Least-threat hex, then fire (see the module docstring)."""

    name = "cover"
    defaults = {"min_odds": 0.0, "tolerance": 0.1, "trade": 1.0, "stop_at": 3, "candidates": 16}
    bounds = {**Doctrine.bounds, "tolerance": (0.0, 1e6), "trade": (0.0, 1e6), "stop_at": (0, 1000)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    tolerance: float
    trade: float
    stop_at: int

    def intent(self, obs: Any) -> tuple[str, float]:
        me = obs.me
        if self.known_enemy_hexes(obs):
            here_threat = float(obs.threat(me.hex, me.facing))
            bt = self.best_shot(obs) if "fire" in obs.modes() else None
            if bt is not None and self.at_good_hex(obs, float(bt[1].p_kill)):
                return "fire", 1.0 + here_threat + float(bt[1].p_kill)
            return "move", 1.0 + here_threat
        if obs.objectives() or not self.search_done(obs):
            return "move", 0.1
        return "hold", 0.0

    def at_good_hex(self, obs: Any, p_kill: float | None = None) -> bool:
        """Whether the actor already stands (as it faces now) within :meth:`allowance` (for a shot of kill odds
        ``p_kill`` from here) of the least threat of the hexes this decision says it could reach (``True`` when it
        says none)."""
        states = obs.reachable()
        _cands, here, threat = self.threat_of_candidates(obs, states)
        me = obs.me
        now = threat[here] if here is not None else float(obs.threat(me.hex, me.facing))
        return now <= min(threat.values(), default=now) + self.allowance(p_kill)

    def threat_of_candidates(self, obs: Any, states: Any) -> tuple[list, Any, dict]:
        """``(candidates, here, {state: threat})``: the ``candidates`` states spread over ``states`` (one per hex),
        plus ``here`` (the state the actor is in now, or ``None`` if ``states`` lacks it), each with its summed
        enemy kill odds as a float."""
        cands, here = self.candidates_and_here(obs, states, self.spread)
        return cands, here, {s: float(obs.threat(obs.hex_of(s), obs.facing_of(s))) for s in cands}

    def wants_fire_after_move(self, obs: Any) -> bool:
        return False

    def end_move_status(self, obs: Any) -> str | None:
        """``stationary`` when the move ends (without a shot) where it has a target worth a shot and the summed
        threat against it there is within ``tolerance``, so that it may fire in place at its next activation; else
        the rule set's default.  (Since Panzer Squadron honours the status after a move that used every point,
        issue 12 D20, asking for it everywhere cost cover its lower threat.)"""
        me = obs.me
        if me is None or me.hex is None or not obs.visible_ids():
            return None
        shot = self.best_target(obs, among=obs.visible_ids(), as_if=obs.hypo((me.hex, me.facing)), worth=True)
        if shot is None or float(obs.threat(me.hex, me.facing)) > self.tolerance:
            return None
        return "stationary"

    def choose_destination(self, obs: Any, states: Any) -> Any:
        known = self.known_enemy_hexes(obs)
        if not known:
            return self.approach(obs, states, self.closing_goals(obs), self.goal_stop(obs, self.stop_at))
        cands, here, threat = self.threat_of_candidates(obs, states)
        field = obs.distance_field(known)
        least = min(threat.values(), default=0.0)
        decision = obs.decision
        gain = {}
        for s in cands:
            bt = self.best_shot(obs, as_if=obs.hypo(s)) if self.can_fire_after(obs, decision, states[s][0]) else None
            if bt is not None:
                gain[s] = float(bt[1].p_kill)

        def key(s: Any) -> tuple:
            closer = max(field.get(obs.hex_of(s), 10 ** 6), self.stop_at)
            return (0 if s in gain else 1, threat[s], closer, states[s][0], repr(s))

        nearly = [s for s in cands if threat[s] <= least + self.allowance(gain.get(s))]
        best = min(nearly, key=key) if nearly else None
        return None if best is None or best == here else best

    def allowance(self, p_kill: float | None) -> float:
        """Extra summed threat (over the least) accepted on a hex: ``tolerance``, plus ``trade`` x the kill odds of
        the shot that hex gives (``p_kill``; ``None`` = no shot there)."""
        return self.tolerance + (self.trade * p_kill if p_kill is not None else 0.0)
