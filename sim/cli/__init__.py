"""The ``tanksim`` command: :func:`main` (the console script) and one module per subcommand family."""
from __future__ import annotations

from sim.cli.main import main

__all__ = ["main"]
