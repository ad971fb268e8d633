"""tanksim's engine (docs/DESIGN.md, "Layout")."""

#: Marker: this ``sim`` is tanksim's (checked at start-up by :mod:`sim.cli.collisions`).
__tanksim__ = "sim"
