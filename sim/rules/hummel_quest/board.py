"""The board as the ``hummel_quest`` rules see it (docs/rules/hummel_quest.md §2, §4, §7.5, §14): terrain
flags, the scenario's per-hex and per-tank blocks, :class:`HQBoard`, and the small movement decisions
(end facing, half speed).

Units: hexes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sim.hexgrid import Hex
from sim.rules.base import RulesOptions

# --- terrain (§7.5, §14) -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HexFlags:
    """Terrain flags of one hex (§7.5): ``passable``, ``blocks_los``, ``hard_cover``, ``tall`` (blocks Artillery
    Sights), and ``structure`` = ``(dur, dt)`` of a standing structure or ``None`` (§14)."""

    passable: bool = True
    blocks_los: bool = False
    hard_cover: bool = False
    tall: bool = False
    structure: tuple[int, int] | None = None


def flags(passable: bool = True, blocks_los: bool = False, hard_cover: bool = False, tall: bool | None = None,
          structure: tuple[int, int] | None = None) -> HexFlags:
    """:class:`HexFlags` with the spec's defaults: ``tall`` defaults to ``blocks_los``; a structure hex is
    impassable (§14)."""
    return HexFlags(passable and structure is None, blocks_los, hard_cover, blocks_los if tall is None else tall,
                    structure)


#: Named terrain of the map (DECISION: the spec names flags, not terrain types; these are the project's names).
TERRAIN: dict[str, HexFlags] = {
    "open": flags(),
    "woods": flags(blocks_los=True),                       # tall: hides from sight and sights
    "smoke": flags(blocks_los=True, tall=False),           # blocks sight, not Artillery Sights (§7.6)
    "rocks": flags(hard_cover=True),                       # passable hard cover
    "rubble": flags(hard_cover=True),                      # what a destroyed structure becomes (§14)
    "wall": flags(passable=False, hard_cover=True),        # low wall: cover, no sight block
    "building": flags(passable=False, blocks_los=True, hard_cover=True),
    "hill": flags(passable=False, blocks_los=True),
    "water": flags(passable=False),
}
#: Flags of a hex off the map (never entered; does not block sight).
OFF_MAP = HexFlags(passable=False)


class StructureSpec(BaseModel):
    """A structure on a hex (§14): Durability ``dur`` and Damage Threshold ``dt`` (structural points)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dur: int = Field(ge=0)
    dt: int = Field(ge=1)


class HQHexExt(RulesOptions):
    """Per-hex scenario block (``map.features``): overrides of the terrain's flags and an optional structure
    (§7.5, §14).  ``None`` keeps the terrain's value."""

    passable: bool | None = None
    blocks_los: bool | None = None
    hard_cover: bool | None = None
    tall: bool | None = None
    structure: StructureSpec | None = None


class HQTankExt(RulesOptions):
    """Per-tank scenario block (``rules``): starting ``dt`` / ``ost`` below the stat block's values (a damaged or
    shaken tank), ``None`` = the stat block's."""

    dt: int | None = Field(default=None, ge=0)
    ost: int | None = Field(default=None, ge=0)


def _ext_get(ext: Any, name: str) -> Any:
    if ext is None:
        return None
    if isinstance(ext, Mapping):
        return ext.get(name)
    return getattr(ext, name, None)


# --- the board as the rules see it --------------------------------------------------------------------------------

class HQBoard:
    """What the geometry rules read: which hexes are on the map, their :class:`HexFlags`, and which hold a tank
    (any state; a tank that fled is off the board).  Built from a battle or from a golden case's board.

    ``cells``: the hexes on the map (a :class:`~sim.hexgrid.HexMap` or a set); ``flags_of(h)`` and ``occupant(h)``
    are asked only for hexes in ``cells`` (``occupant``: the id of the tank on ``h``, or ``None``).
    ``sight_grid``: a ready :meth:`sight_grid` (``None``: built from ``flags_of`` when first asked)."""

    def __init__(self, cells: Collection[Hex], flags_of: Callable[[Hex], HexFlags],
                 occupant: Callable[[Hex], int | None], sight_memo: dict[Any, Any] | None = None,
                 sight_grid: SightGrid | None = None):
        self._cells = cells
        self._flags_of = flags_of
        self._occupant = occupant
        self._edge: dict[Hex, bool] = {}
        #: Where :func:`sim.rules.hummel_quest.sight.sight` keeps what a pair's lines cross (terrain flags only),
        #: or ``None``.  The owner must give a new dict whenever ``flags_of`` may answer differently (a battle's
        #: boards share one until the terrain changes, :meth:`HummelQuest.board`); likewise ``sight_grid``.
        self.sight_memo = sight_memo
        self._grid = sight_grid

    def sight_grid(self) -> SightGrid:
        """The sight flags of the map's hexes as a :class:`SightGrid`, built once per board from ``flags_of``
        over ``cells``."""
        if self._grid is None:
            self._grid = SightGrid.of(self._cells, self._flags_of)
        return self._grid

    def on_map(self, h: Hex) -> bool:
        return h in self._cells

    def flags(self, h: Hex) -> HexFlags:
        return self._flags_of(h) if h in self._cells else OFF_MAP

    def occupant(self, h: Hex) -> int | None:
        return self._occupant(h) if h in self._cells else None

    def occupied(self, h: Hex) -> bool:
        return self.occupant(h) is not None

    def enterable(self, h: Hex) -> bool:
        """On the map, passable and empty (one tank per hex, §2): :meth:`on_map`, :meth:`flags` and
        :meth:`occupied`, inlined."""
        return h in self._cells and self._flags_of(h).passable and self._occupant(h) is None

    def is_edge(self, h: Hex) -> bool:
        """An edge hex has fewer than six on-map neighbours (§11.2)."""
        h = Hex(*h)
        if h not in self._edge:
            self._edge[h] = any(n not in self._cells for n in h.neighbours())
        return self._edge[h]


#: Bits of a hex's sight flags in a :class:`SightGrid` (§7.5).
BLOCKS, TALL, HARD = 1, 2, 4


@dataclass(frozen=True)
class SightGrid:
    """The sight flags of a map's hexes (§7.5) in a flat array: ``bits[index(h)]`` with bits :data:`BLOCKS`,
    :data:`TALL`, :data:`HARD`; a hex off the map (:data:`OFF_MAP`) or open ground has none.

    ``index((q, r)) = (q - q0) * span + (r - r0)``, over the cells' bounding box (axial ``q``, ``r``) padded by
    :data:`PAD` hexes on every side, so that a step ``(dq, dr)`` is the constant ``dq * span + dr`` anywhere in
    the box.  Every hex of a line between two hexes of the box stays within one hex of the box in ``q`` and ``r``
    (each cube coordinate is interpolated monotonically and rounded, the rounding fix-up moves it by at most
    one), so lines between hexes of the unpadded box never leave the padded one."""

    q0: int
    r0: int
    span: int
    q1: int
    r1: int
    bits: bytes
    #: The same flags as integers with bit ``n`` set when ``bits[n]`` has :data:`BLOCKS` (resp. :data:`TALL`):
    #: whether a line crosses one is a shift and a mask (:func:`sim.rules.hummel_quest.sight.crossed`).
    blocks_mask: int = 0
    tall_mask: int = 0

    PAD = 2

    @classmethod
    def of(cls, cells: Collection[Hex], flags_of: Callable[[Hex], HexFlags]) -> SightGrid:
        """The grid of ``cells`` (hexes) with flags ``flags_of(h)``: O(bounding box)."""
        p = cls.PAD
        if not cells:
            return cls(0, 0, 1, -1, -1, b"")
        qs = [h[0] for h in cells]
        rs = [h[1] for h in cells]
        q0, r0 = min(qs) - p, min(rs) - p
        q1, r1 = max(qs) + p, max(rs) + p
        span = r1 - r0 + 1
        buf = bytearray((q1 - q0 + 1) * span)
        for h in cells:
            f = flags_of(h)
            buf[(h[0] - q0) * span + h[1] - r0] = (BLOCKS if f.blocks_los else 0) | (TALL if f.tall else 0) | \
                (HARD if f.hard_cover else 0)
        blocks = sum(1 << n for n, b in enumerate(buf) if b & BLOCKS)
        tall = sum(1 << n for n, b in enumerate(buf) if b & TALL)
        return cls(q0, r0, span, max(qs), max(rs), bytes(buf), blocks, tall)

    def index(self, h: tuple[int, int]) -> int | None:
        """``h``'s index when ``h`` lies in the unpadded box (lines from it to another such hex stay in the
        grid), else ``None``."""
        p = self.PAD
        q, r = h[0], h[1]
        if self.q0 + p <= q <= self.q1 and self.r0 + p <= r <= self.r1:
            return (q - self.q0) * self.span + r - self.r0
        return None

    def at(self, h: tuple[int, int]) -> int:
        """The bits of any hex (0 outside the grid)."""
        q, r = h[0] - self.q0, h[1] - self.r0
        if 0 <= q and 0 <= r < self.span and q * self.span + r < len(self.bits):
            return self.bits[q * self.span + r]
        return 0


def default_facing(facing: int, last_step: int | None) -> int:
    """DECISION ``default_facing = keep_if_front`` (§4): keep facing f if the last step direction k is a front
    hexside of it (f = k or f = k + 1 mod 6), else face k."""
    if last_step is None:
        return facing
    if facing % 6 in (last_step % 6, (last_step + 1) % 6):
        return facing
    return last_step % 6


def half_speed(s: int) -> int:
    """``H = ceil(S / 2)`` (§2, DECISION ``half_speed_rounding = ceil``)."""
    return -(-s // 2)
