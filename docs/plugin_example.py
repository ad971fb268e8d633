"""A complete tanksim plug-in doctrine (copy this file as ``my_doctrines.py`` into a folder on ``PYTHONPATH``).

Use it by name ``module:Class`` with parameters, from the command line or a scenario:

    tanksim run --policy 1=my_doctrines:Sniper:min_range=5,min_odds=0.2
    sides: [{name: Red, policy: {name: "my_doctrines:Sniper", params: {min_range: 5}}, tanks: [...]}, ...]

It sees only the neutral Observation (odds, threat, LOS, distances, ...), so it plays under every rule set.
A doctrine that answers a decision with explicit actions imports them from ``sim.actions`` (``Step``, ``Fire``,
``Pass``, ...); ``agents.actions`` is a deprecated re-export.
"""
from agents.policies import Doctrine


class Sniper(Doctrine):
    """Never moves; fires only at targets at least ``min_range`` hexes away whose kill odds reach ``min_odds``;
    otherwise it waits in ambush.  Parameters: ``min_range`` (hexes, default 4), ``min_odds`` (default 0.1)."""

    name = "sniper"
    defaults = {"min_range": 4, "min_odds": 0.1, "candidates": 1}

    def worth_firing(self, obs, target, odds):      # used for fire, react and after-move decisions
        far = obs.distance(obs.me.hex, obs.tank(target).hex) >= self.min_range
        return far and float(odds.p_kill) >= self.min_odds

    def intent(self, obs):                          # activation: fire at the best far target, else ambush
        best = self.best_shot(obs)
        return ("fire", 1.0 + float(best[1].p_kill)) if best else ("overwatch", 0.0)
