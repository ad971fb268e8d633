"""The ``tanksim`` command: :func:`main` (the console script) and one module per subcommand family.

Importing it first checks that the ``sim`` and ``agents`` packages are tanksim's own
(:func:`sim.cli.collisions.check_own_packages`), so a package of another distribution with the same name is named
at once instead of failing obscurely later.
"""
from __future__ import annotations

from sim.cli.collisions import check_own_packages

check_own_packages()

from sim.cli.main import main  # noqa: E402 - after the check: it imports agents/

__all__ = ["main"]
