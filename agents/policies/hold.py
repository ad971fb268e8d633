"""``hold``: overwatch.  Stays on its hex, turns its front to the threat, fires at the best kill odds.

Each activation it fires at the target with the highest exact kill odds if they reach ``min_odds``.  With nothing
worth a shot it turns (pivots on the spot, never leaving its hex) to face the most dangerous enemy when that lowers
the summed enemy threat against it (or, with no enemy in sight, to face the nearest last-known one), and otherwise
sets an ambush (the rule set's overwatch mode) to fire at enemies that move into sight.

Parameters: ``min_odds`` (least kill probability worth a shot, default 0), ``overwatch`` (ambush when there is
nothing to shoot, default true), ``turn`` (turn to threats, default true), ``candidates`` (unused, default 8).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Hold(Doctrine):
    """Stay, turn to threats, fire at the best kill odds; ambush otherwise (see the module docstring)."""

    name = "hold"
    defaults = {"min_odds": 0.0, "overwatch": True, "turn": True, "candidates": 8}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    overwatch: bool
    turn: bool

    def intent(self, obs: Any) -> tuple[str, float]:
        bt = self.best_shot(obs)
        if bt is not None:
            return "fire", 1.0 + float(bt[1].p_kill)
        if self.turn and self.better_facing(obs) is not None:
            return "turn", 0.5
        return ("overwatch" if self.overwatch else "hold"), 0.0

    def wants_fire_after_move(self, obs: Any) -> bool:
        return False

    def better_facing(self, obs: Any) -> int | None:
        """A facing on the spot that faces the threat better than the current one, or ``None``."""
        me = obs.me
        if me is None or me.hex is None:
            return None
        known = self.known_enemy_hexes(obs)
        aim = self.nearest(obs, me.hex, known)
        if aim is None:
            return None
        f = obs.facing_towards(me.hex, aim)
        if f == me.facing:
            return None
        if obs.visible_ids():
            return f if obs.threat(me.hex, f) < obs.threat(me.hex, me.facing) else None
        return None if obs.in_arc(me.hex, aim, me.facing) else f

    def wants_move(self, obs: Any) -> bool:
        return self.turn and self.better_facing(obs) is not None

    def choose_destination(self, obs: Any, states: Any) -> Any:
        f = self.better_facing(obs) if self.turn else None
        if f is None:
            return None
        me = obs.me
        on_spot = [s for s in states if obs.hex_of(s) == me.hex and obs.facing_of(s) == f]
        return on_spot[0] if on_spot else None
