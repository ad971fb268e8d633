"""Hummel Quest's line offsets (issue 14): ``sight._line_offsets``, which interpolates lines A and B in one inline
loop, gives exactly the intermediate hexes of :func:`sim.hexgrid.hex_line` (line A from the origin to the offset,
line B the negation of the line to minus the offset) on every offset of a region, the ties of the nudged rounding
included (straight lines along the axes and the between-axes directions)."""
from __future__ import annotations

import importlib
from typing import Any

from sim.hexgrid import hex_line

sight = importlib.import_module("sim.rules.hummel_quest.sight")


def _by_hex_line(dq: int, dr: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    la = hex_line((0, 0), (dq, dr))
    lb = hex_line((0, 0), (-dq, -dr))
    return (tuple((h[0], h[1]) for h in la[1:-1]), tuple((-h[0], -h[1]) for h in lb[1:-1]))


def test_line_offsets_equal_hex_line_on_a_region() -> None:
    def direct(dq: int, dr: int) -> Any:   # the computation, not the cache
        sight._MIRRORED.clear()
        return sight._line_offsets.__wrapped__(dq, dr)
    differ = 0
    for dq in range(-22, 23):
        for dr in range(-22, 23):
            got = direct(dq, dr)
            assert got == _by_hex_line(dq, dr), (dq, dr)
            assert all(type(c) is int for line in got for h in line for c in h), (dq, dr)  # noqa: E721
            differ += got[0] != got[1]
    # lines A and B part where the segment runs along hex edges (the nudges break those ties both ways)
    assert differ > 100, differ
    assert direct(0, 0) == direct(1, 0) == ((), ())
    a, b = direct(2, -1)   # the segment runs along the edge of (1, 0) and (1, -1): A takes one, B the other
    assert len(a) == len(b) == 1 and {a[0], b[0]} == {(1, 0), (1, -1)}, (a, b)


def test_line_offsets_cached_with_their_mirrors_equal_hex_line() -> None:
    """The cached entries, each offset asked after minus it (so read from the entry made ahead,
    ``sight._MIRRORED``), and the other way round."""
    sight._line_offsets.cache_clear()
    sight._MIRRORED.clear()
    ahead = 0
    offsets = [(dq, dr) for dq in range(-15, 16) for dr in range(-15, 16)]
    for dq, dr in offsets:
        ahead += (dq, dr) in sight._MIRRORED
        assert sight._line_offsets(dq, dr) == _by_hex_line(dq, dr), (dq, dr)
    assert ahead > len(offsets) // 3, ahead
    sight._line_offsets.cache_clear()
    sight._MIRRORED.clear()
    for dq, dr in reversed(offsets):
        assert sight._line_offsets(dq, dr) == _by_hex_line(dq, dr), (dq, dr)
    sight._line_offsets.cache_clear()
    sight._MIRRORED.clear()
