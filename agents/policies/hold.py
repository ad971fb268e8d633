"""``hold``: overwatch.  Stays where it is, fires at the best kill odds, and sets an ambush when nothing is in sight.

Parameters: ``min_odds`` (least kill probability worth a shot, default 0), ``overwatch`` (ambush when no target,
default true).
"""
from __future__ import annotations

from typing import Any

from agents.policies.base import Doctrine


class Hold(Doctrine):
    """Stay, fire at the best kill odds; ambush when no target (see module docstring for parameters)."""

    name = "hold"
    defaults = {"min_odds": 0.0, "overwatch": True}

    def intent(self, obs: Any) -> tuple[str, float]:
        bt = self.best_target(obs)
        if bt is not None and float(bt[1].p_kill) >= self.min_odds:
            return "fire", 1.0 + float(bt[1].p_kill)
        return ("overwatch" if self.overwatch else "hold"), 0.0

    def choose_destination(self, obs: Any, states: Any) -> Any:
        return None
