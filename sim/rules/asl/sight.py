"""Geometry of a shot on the hex grid for the ``asl`` rule set (docs/rules/asl.md 7 and 11): Target
Facing (C3.9, D3.2), covered-arc turns (C3.2, C5.1), LOS hexsides and hull-down (D4.2), and the geometry
golden cases (asl.md 11).

Units: hexes, hexspines (60-degree vertex turns).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from sim.hexgrid import FRONT, SIDE, Hex, as_hex, aspect, cube_vector, distance, hex_line, rotate_cube
from sim.rules.asl.odds import case_a_drm, case_l_drm
from sim.rules.base import CaseError

# ==============================================================================================================
# Geometry (asl.md 7; CONVENTIONS.md)
# ==============================================================================================================

def target_face(target: tuple[int, int], vertex: int, firer: tuple[int, int], af_front: int, af_side: int
                ) -> str | None:
    """Target Facing (C3.9, D3.2; asl.md 7) of the hull (``vertex`` = VCA) or turret (``vertex`` = TCA) of a
    target at ``target`` seen from ``firer``; ``None`` in the same hex (Case E: the TH DR decides).

    On a boundary the defender gets the facing with the lower Final TK#: at +-60 degrees the higher of front and
    side AF (front on equal AF), at +-120 degrees the side (side and rear share the AF; rear adds +1, C7.21).
    Exact integer cube arithmetic (:func:`sim.hexgrid.aspect`).
    """
    a = aspect(target, vertex, firer)
    if a.same_hex:
        return None
    if not a.boundary:
        return a.face
    if a.candidates == (FRONT, SIDE):
        return FRONT if af_front >= af_side else SIDE
    return SIDE


def ca_turns(firer: tuple[int, int], vertex: int, target: tuple[int, int]) -> int:
    """Fewest 60-degree turns of a CA on ``vertex`` that bring ``target`` inside (C3.2, C5.1; asl.md 7): 0 if
    ``|bearing - 60 vertex| <= 30`` (boundary included), 1 up to 90, 2 up to 150, else 3.

    Exact: with the firer-to-target cube vector rotated so the vertex lies along +q as ``(a, b, c)``, the wedge
    within 30 degrees is ``b <= 0 and c <= 0``, within 90 is ``a >= 0``, within 150 is ``not (b > 0 and c > 0)``.
    """
    a, b, c = rotate_cube(cube_vector(firer, target), vertex)
    if b <= 0 and c <= 0:
        return 0
    if a >= 0:
        return 1
    if not (b > 0 and c > 0):
        return 2
    return 3


def turn_vertex(firer: tuple[int, int], vertex: int, target: tuple[int, int]) -> int:
    """The CA vertex reached by the fewest turns from ``vertex`` that puts ``target`` in the CA (clockwise first
    on a tie, DECISION: the spec is silent and either choice costs the same Case A)."""
    n = ca_turns(firer, vertex, target)
    for v in ((vertex - n) % 6, (vertex + n) % 6):
        if ca_turns(firer, v, target) == 0:
            return v
    return vertex  # pragma: no cover - same hex


def los_hexsides(target: tuple[int, int], firer: tuple[int, int]) -> tuple[int, ...]:
    """Hexsides (neighbour directions) of ``target`` that the LOS from ``firer`` crosses, or both hexsides when it
    runs along a hexspine (asl.md 7 "Hull-down").  Hexside ``k`` spans bearings ``60k .. 60k + 60``."""
    if tuple(target) == tuple(firer):
        return ()
    out = []
    for k in range(6):
        a, b, c = rotate_cube(cube_vector(target, firer), k)
        if a >= max(b, c) and c >= b:
            out.append(k)
    return tuple(out)


def hull_down_hexsides(target: tuple[int, int], firer: tuple[int, int], hull_down: tuple[int, ...]) -> bool:
    """True if the target (hull-down behind hexsides ``hull_down``) is hull-down to ``firer`` (D4.2; asl.md 7)."""
    return any(k in hull_down for k in los_hexsides(target, firer))


def _face_of_geometry(target: Mapping[str, Any], firer_hex: Hex, which: str) -> str | None:
    af = target.get("af") or {}
    th = as_hex(target["hex"])
    if which == "hull":
        vertex = int(target["facing"])
        return target_face(th, vertex, firer_hex, int(af.get("hull_front", 0)), int(af.get("hull_side", 0)))
    vertex = int(target.get("turret_facing", target["facing"]))
    return target_face(th, vertex, firer_hex, int(af.get("turret_front", af.get("hull_front", 0))),
                       int(af.get("turret_side", af.get("hull_side", 0))))


_NON_STOPPED = ("moving", "motion", "non_stopped")

def geometry_case(given: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate a geometry golden case (asl.md 11): ``range``, ``hull_face``, ``turret_face``, ``case_l``,
    ``case_a_hexspines``, ``case_a_drm`` and ``hull_down`` (when the target lists ``hull_down`` hexsides)."""
    try:
        target = given["target"]
        shooter = given["shooter"]
        th = as_hex(target["hex"])
        sh = as_hex(shooter["hex"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CaseError(f"geometry case needs target.hex and shooter.hex: {exc}") from None
    rng = distance(th, sh)
    out: dict[str, Any] = {"range": rng, "hull_face": _face_of_geometry(target, sh, "hull"),
                           "turret_face": _face_of_geometry(target, sh, "turret")}
    out["case_l"] = 0 if rng == 0 else case_l_drm(rng, str(target.get("state", "")) in _NON_STOPPED,
                                                  str(shooter.get("state", "")) in _NON_STOPPED)
    ttype = str(shooter.get("turret_type", "T"))
    vertex = shooter.get("turret_facing", shooter.get("facing"))
    if vertex is not None:
        n = 0 if rng == 0 else ca_turns(sh, int(vertex), th)
        out["case_a_hexspines"] = n
        out["case_a_drm"] = case_a_drm(ttype, n, bool(shooter.get("obstacle", False)))
    if "hull_down" in target:
        out["hull_down"] = hull_down_hexsides(th, sh, tuple(int(k) for k in target["hull_down"]))
    return out


# ==============================================================================================================
# LOS as bit masks (asl.md 6.1; CONVENTIONS.md "Lines"; issue 14)
# ==============================================================================================================

#: Cells of padding around a map's axial box in a :class:`LosGrid`: every hex of a line between two cells of the
#: box lies within 1 of it in ``q`` and in ``r`` (cube rounding moves each axial coordinate of a point of the
#: segment, which lies in the box, by at most 1), so 2 leaves a margin.
LOS_PAD = 2


class LosGrid:
    """The LOS obstacles of one map at one terrain version as one Python integer of bits (asl.md 6.1: woods and
    buildings block): bit ``(q - q0) + w * (r - r0)`` over the map's axial bounding box padded by :data:`LOS_PAD`
    (off-map cells are open ground, CONVENTIONS.md "Lines", so their bits are 0).  The row stride ``w`` is a power
    of two, so boards of similar width share it and with it the line masks (:func:`line_mask`).

    ``cells`` maps each cell of the map to its bit (a line between two cells lies in the padded box; the caller
    reads a line with an end off the map hex by hex); ``index(h)`` is the bit of a hex inside the unpadded box
    (``None`` outside); ``flat(h)`` the bit of any hex of the padded box (``None`` outside)."""

    __slots__ = ("q0", "r0", "qlo", "qhi", "rlo", "rhi", "w", "rows", "obstacles", "cells")

    def __init__(self, cells: Iterable[tuple[int, int]], obstacle: Callable[[Hex], bool]):
        hexes = [as_hex(h) for h in cells]
        if not hexes:
            hexes = [Hex(0, 0)]
        self.qlo, self.qhi = min(h[0] for h in hexes), max(h[0] for h in hexes)
        self.rlo, self.rhi = min(h[1] for h in hexes), max(h[1] for h in hexes)
        self.q0, self.r0 = self.qlo - LOS_PAD, self.rlo - LOS_PAD
        width = self.qhi - self.qlo + 1 + 2 * LOS_PAD
        self.w = 1 << (width - 1).bit_length()
        self.rows = self.rhi - self.rlo + 1 + 2 * LOS_PAD
        bits = 0
        self.cells: dict[Hex, int] = {}
        for h in hexes:
            i = self.cells[h] = (h[0] - self.q0) + self.w * (h[1] - self.r0)
            if obstacle(h):
                bits |= 1 << i
        self.obstacles = bits

    def index(self, h: tuple[int, int]) -> int | None:
        q, r = h
        if self.qlo <= q <= self.qhi and self.rlo <= r <= self.rhi:
            return (q - self.q0) + self.w * (r - self.r0)
        return None

    def flat(self, h: tuple[int, int]) -> int | None:
        q, r = h
        dq, dr = q - self.q0, r - self.r0
        if 0 <= dq < self.w and 0 <= dr < self.rows:
            return dq + self.w * dr
        return None


@lru_cache(maxsize=65_536)
def line_mask(dq: int, dr: int, w: int) -> tuple[int, int]:
    """``(low, mask)``: the interior hexes (both ends excluded) of the line from ``(0, 0)`` to ``(dq, dr)``
    (:func:`sim.hexgrid.hex_line`, translation-invariant) as bits of a grid of row stride ``w``, hex ``(x, y)`` at
    bit ``x + w * y - low`` with ``low`` the least such offset (``(0, 0)`` for a line without interior).  For a
    line from ``p`` of grid bit ``i`` the interior is ``mask << (i + low)``, so a grid's bits ``g`` meet it iff
    ``(g >> (i + low)) & mask``.  Cached per offset and stride (pure geometry)."""
    inner = hex_line(Hex(0, 0), Hex(dq, dr))[1:-1]
    if not inner:
        return 0, 0
    offs = [x + w * y for x, y in inner]
    low = min(offs)
    mask = 0
    for o in offs:
        mask |= 1 << (o - low)
    return low, mask


class HindMasks:
    """A Case R table (``{hex: ((tank id, contribution or None = blocks), ...)}``, asl.md 6.1) as bits of a
    :class:`LosGrid`: ``any`` the hexes in it, ``block`` those with a blocking occupant, ``planes[j]`` bit ``j`` of
    each other hex's summed contribution; ``ok`` is False if a hex of the table lies outside the grid (the caller
    then reads the table hex by hex).  ``block_entries`` are the table's entries of the blocking hexes (sorted),
    which a line through one reads in order."""

    __slots__ = ("any", "block", "planes", "ok", "block_entries")

    def __init__(self, table: Mapping[Hex, tuple[tuple[int, int | None], ...]], grid: LosGrid):
        anyb = block = one = 0
        planes: list[int] = []
        self.ok = True
        blocking = []
        cells = grid.cells
        for h, entries in table.items():
            i = cells.get(h)
            if i is None:
                i = grid.flat(h)
                if i is None:
                    self.ok = False
                    continue
            bit = 1 << i
            anyb |= bit
            if len(entries) == 1 and entries[0][1] == 1:   # the common case: one hindering AFV or wreck
                one |= bit
                continue
            if any(x is None for _tid, x in entries):
                block |= bit
                blocking.append((h, entries))
                continue
            c = sum(x for _tid, x in entries if x is not None)
            j = 0
            while c:
                if c & 1:
                    while len(planes) <= j:
                        planes.append(0)
                    planes[j] |= bit
                c >>= 1
                j += 1
        if planes:
            planes[0] |= one
        else:
            planes.append(one)
        self.any, self.block = anyb, block
        self.planes = tuple(planes)
        self.block_entries = tuple(sorted(blocking))

    def content(self) -> tuple | None:
        """Everything the LOS answers of this table read (besides the grid's terrain): equal contents, equal
        answers; ``None`` if the table is not all on the grid."""
        return (self.any, self.block, self.planes, self.block_entries) if self.ok else None
