"""Hex distances in bulk for the doctrines (pure geometry: no board, no rule set, nothing a side may not know).

:func:`nearest_distances` is :func:`agents.policies.base.min_distance` for many origins at once, as one numpy
operation (the doctrines' own modules import no numpy: they stay plain Python for the sandbox)."""
from __future__ import annotations

from functools import partial
from typing import Iterable

import numpy as np

from sim.hexgrid import distance


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


def nearest_hexes(frms: Iterable[tuple[int, int]], hexes: Iterable[tuple[int, int]]) -> list:
    """For each hex of ``frms``, the nearest of ``hexes`` (axial ``(q, r)``), ties to the lowest: ``min(hexes,
    key=lambda h: (distance(frm, h), h))`` for each, from one distance matrix (the first minimum of each row over
    the sorted hexes is that lowest one); all ``None`` for no hexes.  The doctrines' aim per hex of a move
    decision (:meth:`agents.policies.base.Doctrine.one_per_hex`)."""
    frms = list(frms)
    to = sorted(set(hexes))
    if not to:
        return [None] * len(frms)
    if not frms:
        return []
    if len(frms) * len(to) <= SMALL:
        return _nearest_hexes_small(frms, to)
    t = np.array(to, dtype=np.int64).reshape(-1, 2)
    at = np.array(frms, dtype=np.int64).reshape(-1, 2)
    dq = at[:, None, 0] - t[None, :, 0]
    dr = at[:, None, 1] - t[None, :, 1]
    d = np.maximum(np.maximum(np.abs(dq), np.abs(dr)), np.abs(dq + dr))
    return [to[i] for i in d.argmin(axis=1).tolist()]


#: Most ``origins x hexes`` pairs :func:`nearest_hexes` scans in plain Python (issue 14: a move of one or two hexes
#: asks it of a handful of hexes, where building the numpy arrays costs more than the scan).
SMALL = 512


def _nearest_hexes_small(frms: list, to: list) -> list:
    """:func:`nearest_hexes` of the origins ``frms`` over the sorted distinct ``to`` (not empty), by a scan: the
    first hex of ``to`` at the least :func:`sim.hexgrid.distance` (``min`` keeps the first of equal keys), so the
    lowest of the nearest, as the matrix's first minimum of each row."""
    return [min(to, key=partial(distance, frm)) for frm in frms]
