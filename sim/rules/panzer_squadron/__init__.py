"""Rule set ``panzer_squadron``: the Panzer Squadron hex tank game (docs/rules/panzer_squadron.md).

The package follows the spec's sections:

* :mod:`~sim.rules.panzer_squadron.data` -- sections 2 and 12: vehicle cards and Tiles.
* :mod:`~sim.rules.panzer_squadron.sight` -- sections 6 and 7: sight lines, partial protection, the face hit.
* :mod:`~sim.rules.panzer_squadron.odds` -- sections 8 and 14: the shot procedure and its exact odds.
* :mod:`~sim.rules.panzer_squadron.play` -- sections 3 to 5, 9 to 11 and 13: options and the sequence of play
  (:class:`PanzerSquadron`).

``from sim.rules import panzer_squadron`` is the way in; the registry of :mod:`sim.rules.base` names
``sim.rules.panzer_squadron:PanzerSquadron``.
"""

from sim.rules.panzer_squadron.odds import PSKey, hit_bonus, net_modifier, penetration_result, resolve_key, shot_odds
from sim.rules.panzer_squadron.play import PanzerSquadron, PSOptions, PSTankExt

__all__ = ["PSKey", "PSOptions", "PSTankExt", "PanzerSquadron", "hit_bonus", "net_modifier", "penetration_result",
           "resolve_key", "shot_odds"]
