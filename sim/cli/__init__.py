"""The ``tanksim`` command: :func:`sim.cli.main.main` (the command), :func:`sim.cli.console.main` (the console
script's entry point, which imports the command) and one module per subcommand family.

Importing it first checks that the ``sim`` and ``agents`` packages are tanksim's own
(:func:`sim.cli.collisions.check_own_packages`), so a package of another distribution with the same name is named
at once instead of failing obscurely later.
"""
from __future__ import annotations

from sim.cli.collisions import check_own_packages

check_own_packages()
