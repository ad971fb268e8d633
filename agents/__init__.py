"""tanksim's tanks, observations, controllers and doctrines (docs/DESIGN.md, "Layout")."""

#: Marker: this ``agents`` is tanksim's (checked at start-up by :mod:`sim.cli.collisions`).
__tanksim__ = "agents"
