"""``focus_fire``: side level.  The whole side fires at the enemy with the highest summed kill odds.

The focus is the visible enemy that the side's tanks, from where they stand, would kill with the highest summed exact
odds (ties: lower id); it is recomputed at every decision, so it moves on when the focus dies.  Each activation the
tank with the best odds against the focus fires at it; a tank that cannot shoot the focus shoots the enemy that
ranks next by summed odds; reactions (ambush fire) go the same way.  A side with no shot at the focus closes on it
like ``advance``.

Parameters: ``min_odds`` (least kill odds of a shot, default 0), ``candidates`` (default 6).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class FocusFire(Doctrine):
    """Concentrate the side's fire (see the module docstring)."""

    name = "focus_fire"
    defaults = {"min_odds": 0.0, "candidates": 6}

    def ranking(self, obs: Any) -> dict[int, Any]:
        """Visible enemy id -> summed kill odds of the side against it."""
        return {e: obs.side_odds(e) for e in obs.visible_ids()}

    def focus(self, obs: Any) -> int | None:
        r = self.ranking(obs)
        return min(r, key=lambda e: (-r[e], e)) if r else None

    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        return self.ranking(obs).get(target, 0)

    def intent(self, obs: Any) -> tuple[str, float]:
        f = self.focus(obs)
        if f is None:
            return ("hold", 0.0) if self.search_done(obs) else ("move", 0.0)
        bt = self.best_shot(obs)
        if bt is not None:
            on_focus = 1.0 if bt[0] == f else 0.0
            return "fire", 2.0 + on_focus + float(bt[1].p_kill)
        return "move", 1.0

    def choose_destination(self, obs: Any, states: Any) -> Any:
        f = self.focus(obs)
        if f is not None:
            return self.approach(obs, states, (obs.tank(f).hex,), 1)
        return self.approach(obs, states, self.closing_goals(obs), self.goal_stop(obs, 1))
