"""Argument types shared by the ``tanksim`` subcommands: numbers, seeds, worker counts and output paths checked
while the arguments are parsed, so a bad value is refused before anything is read, started or written.  They live in
:mod:`sim.messages` (engine core), so the wings' own ``main`` functions (``report``, ``replay``, ``app``) use the same
ones; this module names them for ``sim/cli``."""
from __future__ import annotations

from sim.messages import (
    MAX_SEED,
    MAX_WORKERS,
    PLOT_SUFFIXES,
    above,
    at_least,
    battle_folder,
    between,
    output_file,
    output_folder,
    seed,
    workers,
)

__all__ = ["MAX_SEED", "MAX_WORKERS", "PLOT_SUFFIXES", "above", "at_least", "battle_folder", "between", "output_file",
           "output_folder", "seed", "workers"]
