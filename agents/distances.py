"""Hex distances in bulk for the doctrines (pure geometry: no board, no rule set, nothing a side may not know).

:func:`nearest_distances` is :func:`agents.policies.base.min_distance` for many origins at once, as one numpy
operation (the doctrines' own modules import no numpy: they stay plain Python for the sandbox)."""
from __future__ import annotations

from typing import Iterable

import numpy as np


def nearest_distances(frms: Iterable[tuple[int, int]], hexes: Iterable[tuple[int, int]]) -> list[int]:
    """For each hex of ``frms``, the hex distance to the nearest of ``hexes`` (axial ``(q, r)``; each as
    :func:`sim.hexgrid.distance`: the same integers as ``min_distance``), from the ``len(frms) x len(hexes)``
    distance matrix: a side's actors against every enemy it knows.  Raises ``ValueError`` for no hexes."""
    to = np.array(sorted(set(hexes)), dtype=np.int64).reshape(-1, 2)
    if not len(to):
        raise ValueError("nearest_distances() of no hexes")
    at = np.array(list(frms), dtype=np.int64).reshape(-1, 2)
    dq = at[:, None, 0] - to[None, :, 0]
    dr = at[:, None, 1] - to[None, :, 1]
    d = np.maximum(np.maximum(np.abs(dq), np.abs(dr)), np.abs(dq + dr))
    return [int(x) for x in d.min(axis=1)] if len(at) else []
