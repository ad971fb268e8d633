"""tanksim's engine (docs/DESIGN.md, "Layout")."""

from sim.logs import configure_logging as _configure_logging

#: Marker: this ``sim`` is tanksim's (checked at start-up by :mod:`sim.cli.collisions`).
__tanksim__ = "sim"

_configure_logging()  # TANKSIM_LOG decides what tanksim logs, in every process that imports it (sim.logs)
