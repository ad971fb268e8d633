"""Rule set ``asl``: ASL Chapter C ordnance fired by AFVs at AFVs (docs/rules/asl.md).

The package follows the spec's sections:

* :mod:`~sim.rules.asl.tables` -- section 3, Data: the To Hit, To Kill and terrain charts and the vehicle catalog.
* :mod:`~sim.rules.asl.odds` -- sections 6, 8, 9 and 10: the shot's staged exact odds and its dice resolution.
* :mod:`~sim.rules.asl.sight` -- section 7 and the geometry cases of section 11: Target Facing, CA, hull-down.
* :mod:`~sim.rules.asl.play` -- sections 4, 5 and 12: options, scenario blocks and the sequence of play
  (:class:`ASL`).

``from sim.rules import asl`` is the way in; the registry of :mod:`sim.rules.base` names ``sim.rules.asl:ASL``.
"""

from sim.rules.asl.play import ASL, Options, TankExt
from sim.rules.asl.sight import ca_turns, hull_down_hexsides, los_hexsides, target_face

__all__ = ["ASL", "Options", "TankExt", "target_face", "ca_turns", "hull_down_hexsides", "los_hexsides"]
