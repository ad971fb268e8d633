"""Hex geometry: the only module that knows hex math (CONVENTIONS.md "Hex geometry").

Coordinates are axial ``(q, r)`` with cube ``s = -q - r``; hexes are flat-top; neighbour direction ``k`` is the
hexside normal at ``30 + 60k`` degrees; a facing ``f`` is the vertex at ``60f`` degrees, whose two front hexsides
are directions ``f`` and ``f - 1``.  Everything that decides a rule is integer (or ``Fraction``) arithmetic.

Units: distances are in hexes.  Metres are the caller's business (hexes x the scenario's ``hex_size_m``).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from heapq import heappop, heappush
from itertools import filterfalse
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Collection,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    NamedTuple,
    TypeVar,
    cast,
)

if TYPE_CHECKING:
    import networkx as nx



class Hex(NamedTuple):
    """An axial hex ``(q, r)``.  Equal to (and hashes like) the plain tuple ``(q, r)``."""

    q: int
    r: int

    @property
    def s(self) -> int:
        return -self.q - self.r

    # vector addition, not tuple concatenation: a deliberate narrowing of tuple's ``__add__``
    def __add__(self, other: tuple[int, int]) -> "Hex":  # type: ignore[override]
        return Hex(self.q + other[0], self.r + other[1])

    def __sub__(self, other: tuple[int, int]) -> "Hex":
        return Hex(self.q - other[0], self.r - other[1])

    def neighbour(self, k: int) -> "Hex":
        """The neighbour across hexside ``k`` (0..5, any integer is taken mod 6)."""
        d = DIRECTIONS[k % 6]
        return Hex(self.q + d[0], self.r + d[1])

    def neighbours(self) -> tuple["Hex", ...]:
        """The six neighbours, across hexsides 0..5 (:meth:`neighbour` of each ``k``, :data:`DIRECTIONS` written
        out: a hot path of the movement searches)."""
        q, r = self
        new = tuple.__new__
        return (new(Hex, (q + 1, r - 1)), new(Hex, (q, r - 1)), new(Hex, (q - 1, r)),
                new(Hex, (q - 1, r + 1)), new(Hex, (q, r + 1)), new(Hex, (q + 1, r)))


#: Neighbour directions ``k = 0..5`` (hexside normals at ``30 + 60k`` degrees).
DIRECTIONS: tuple[Hex, ...] = (Hex(1, -1), Hex(0, -1), Hex(-1, 0), Hex(-1, 1), Hex(0, 1), Hex(1, 0))


def as_hex(value: Iterable[int]) -> Hex:
    """Coerce ``[q, r]`` / ``(q, r)`` to a :class:`Hex` (a :class:`Hex` of two ints is returned as it is: equal to
    the one made)."""
    if type(value) is Hex and type(value[0]) is int and type(value[1]) is int:
        return value
    q, r = value
    return Hex(int(q), int(r))


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Cube distance in hexes, O(1): ``max(|dq|, |dr|, |ds|)``."""
    dq = a[0] - b[0]
    dr = a[1] - b[1]
    ds = dq + dr
    # max(|dq|, |dr|, |ds|) written out: a hot path, and conditionals cost a third of max() and abs() calls
    if dq < 0:
        dq = -dq
    if dr < 0:
        dr = -dr
    if ds < 0:
        ds = -ds
    return dq if dq >= dr and dq >= ds else (dr if dr >= ds else ds)


def direction_to(a: tuple[int, int], b: tuple[int, int]) -> int | None:
    """Direction index ``k`` such that ``b`` is ``a``'s neighbour ``k``; ``None`` if not adjacent."""
    d = (b[0] - a[0], b[1] - a[1])
    for k, dk in enumerate(DIRECTIONS):
        if d == tuple(dk):
            return k
    return None


def rotate_cube(v: tuple[int, int, int], facing: int) -> tuple[int, int, int]:
    """Rotate a cube vector by ``-60 * facing`` degrees: ``(q, r, s) -> (-r, -s, -q)`` applied ``facing`` times.

    After rotation the facing vertex lies along ``+q``: ``a > max(b, c)`` is strictly ahead.
    """
    a, b, c = v
    for _ in range(facing % 6):
        a, b, c = -b, -c, -a
    return a, b, c


def cube_vector(frm: tuple[int, int], to: tuple[int, int]) -> tuple[int, int, int]:
    """Cube vector ``to - frm`` as ``(dq, dr, ds)``."""
    dq = to[0] - frm[0]
    dr = to[1] - frm[1]
    return dq, dr, -dq - dr


def in_arc(frm: tuple[int, int], to: tuple[int, int], facing: int) -> bool:
    """True if ``to`` lies within 60 degrees, inclusive, of vertex ``facing`` seen from ``frm``.

    Exact test (panzer_squadron.md 5.3, D12): rotated ``(a, b, c)``; inside iff ``a >= max(b, c)``.
    The hex itself (zero vector) counts as inside.
    """
    a, b, c = rotate_cube(cube_vector(frm, to), facing)
    return a >= max(b, c)


def facing_steps(f_from: int, f_to: int) -> int:
    """Number of 60-degree steps between two vertex facings (0..3)."""
    d = (f_to - f_from) % 6
    return min(d, 6 - d)


# --- aspect -------------------------------------------------------------------------------------------------

FRONT, SIDE, REAR = "front", "side", "rear"


@dataclass(frozen=True)
class Aspect:
    """Which face of a target a shooter sees (CONVENTIONS.md "Aspect").

    ``face`` is the raw class; when ``boundary`` is True the shooter's centre lies exactly on a hexspine line
    through a target vertex and ``candidates`` holds the two faces (front-most first) for the rule set to settle.
    ``a, b, c`` are the rotated cube components (firer minus target, rotated by the target facing):
    ``c > b`` means the bearing is counter-clockwise of the facing (delta > 0), ``a > 0`` means ``|delta| < 90``.
    ``same_hex`` is True when shooter and target share a hex (each rule set decides that case).
    """

    face: str
    boundary: bool
    candidates: tuple[str, ...]
    a: int
    b: int
    c: int

    @property
    def same_hex(self) -> bool:
        return self.a == self.b == self.c == 0

    @property
    def delta_sign(self) -> int:
        """+1 if the shooter is counter-clockwise of the target's facing (delta > 0), -1 if clockwise, 0 on axis."""
        return (self.c > self.b) - (self.c < self.b)


def aspect(target: tuple[int, int], target_facing: int, shooter: tuple[int, int]) -> Aspect:
    """Aspect of ``target`` (hull facing ``target_facing``) seen from ``shooter``, by integer cube arithmetic.

    Front ``|delta| < 60``, rear ``|delta| > 120``, side between; exactly 60 / 120 degrees is a boundary.
    """
    a, b, c = rotate_cube(cube_vector(target, shooter), target_facing)
    hi, lo = max(b, c), min(b, c)
    if a == b == c == 0:
        return Aspect(FRONT, False, (FRONT,), 0, 0, 0)
    if a > hi:
        return Aspect(FRONT, False, (FRONT,), a, b, c)
    if a == hi:
        return Aspect(FRONT, True, (FRONT, SIDE), a, b, c)
    if a < lo:
        return Aspect(REAR, False, (REAR,), a, b, c)
    if a == lo:
        return Aspect(SIDE, True, (SIDE, REAR), a, b, c)
    return Aspect(SIDE, False, (SIDE,), a, b, c)


# --- lines --------------------------------------------------------------------------------------------------

_NUDGE = (1e-6, 2e-6, -3e-6)


def _cube_round(x: float, y: float, z: float) -> Hex:
    rx, ry, rz = round(x), round(y), round(z)
    dx, dy, dz = abs(rx - x), abs(ry - y), abs(rz - z)
    if dx > dy and dx > dz:
        rx = -ry - rz
    elif dy > dz:
        ry = -rx - rz
    return Hex(int(rx), int(ry))


@lru_cache(maxsize=32_768)
def hex_line(a: tuple[int, int], b: tuple[int, int]) -> tuple[Hex, ...]:
    """Hexes on the segment between two centres, both ends included, in order from ``a`` to ``b``.

    Nudged cube interpolation (CONVENTIONS.md "Lines"); deterministic, cached for every map (pure geometry).
    The line is translation-invariant: it is ``a`` plus the line from ``(0, 0)`` to ``b - a``
    (:func:`_hex_line_from_origin`, cached per offset), because every value the rounding compares is a rational
    ``k / (2 n)`` plus the constant nudge (the nudge cancels in ``b - a``; ``n`` the distance), far from the
    floating-point error on any board this engine accepts; tests/test_hexgrid.py checks it against the direct
    interpolation (:func:`_hex_line_direct`) exhaustively on a region.
    """
    aq, ar = a
    return tuple(Hex(aq + q, ar + r) for q, r in _hex_line_from_origin(b[0] - aq, b[1] - ar))


@lru_cache(maxsize=65_536)
def _hex_line_from_origin(dq: int, dr: int) -> tuple[Hex, ...]:
    return _hex_line_direct((0, 0), (dq, dr))


def _hex_line_direct(a: tuple[int, int], b: tuple[int, int]) -> tuple[Hex, ...]:
    """:func:`hex_line` by direct nudged interpolation from ``a`` to ``b`` (the definition)."""
    n = distance(a, b)
    if n == 0:
        return (Hex(a[0], a[1]),)
    ax, ay, az = a[0] + _NUDGE[0], a[1] + _NUDGE[1], -a[0] - a[1] + _NUDGE[2]
    bx, by, bz = b[0] + _NUDGE[0], b[1] + _NUDGE[1], -b[0] - b[1] + _NUDGE[2]
    out = []
    for i in range(n + 1):
        t = i / n
        out.append(_cube_round(ax + (bx - ax) * t, ay + (by - ay) * t, az + (bz - az) * t))
    return tuple(out)


def _hex_line_array(dq: int, dr: int) -> Any:
    """:func:`_hex_line_direct` from ``(0, 0)`` to ``(dq, dr)`` as an int64 array ``(n + 1, 2)`` of ``(q, r)``,
    computed with numpy: the same IEEE double operations in the same order (``i / n``, ``a + (b - a) * t``, round
    half to even, the same comparisons), element by element, so the same hexes (tests/test_hexgrid.py compares
    them); for the long lines of a big map, where the Python loop costs a rounding call per hex."""
    import numpy as np

    n = max(abs(dq), abs(dr), abs(dq + dr))
    if n == 0:
        return np.zeros((1, 2), dtype=np.int64)
    ax, ay, az = _NUDGE
    bx, by, bz = dq + _NUDGE[0], dr + _NUDGE[1], -dq - dr + _NUDGE[2]
    t = np.arange(n + 1, dtype=np.int64) / n
    x, y, z = ax + (bx - ax) * t, ay + (by - ay) * t, az + (bz - az) * t
    rx, ry, rz = np.rint(x), np.rint(y), np.rint(z)
    ex, ey, ez = np.abs(rx - x), np.abs(ry - y), np.abs(rz - z)
    fix_x = (ex > ey) & (ex > ez)
    fix_y = ~fix_x & (ey > ez)
    qx = np.where(fix_x, -ry - rz, rx)
    qy = np.where(fix_y, -rx - rz, ry)
    return np.stack([qx, qy], axis=1).astype(np.int64)


# --- exact sight frame (integer coordinates; panzer_squadron.md 6.2) -----------------------------------------

#: Vertex offsets ``k = 0..5`` in the integer sight frame (x doubled, y scaled by 2/sqrt(3)).
FRAME_VERTICES: tuple[tuple[int, int], ...] = ((2, 0), (1, 1), (-1, 1), (-2, 0), (-1, -1), (1, -1))

Point = tuple[Fraction | int, Fraction | int]


def frame_centre(h: tuple[int, int]) -> tuple[int, int]:
    """Centre of hex ``h`` in the integer sight frame: ``X = 3q``, ``Y = -(q + 2r)``."""
    return 3 * h[0], -(h[0] + 2 * h[1])


def frame_vertex(h: tuple[int, int], k: int) -> tuple[int, int]:
    """Vertex ``k`` (0..5, at ``60k`` degrees) of hex ``h`` in the integer sight frame."""
    x, y = frame_centre(h)
    dx, dy = FRAME_VERTICES[k % 6]
    return x + dx, y + dy


def _cross(ox, oy, ax, ay, bx, by):
    return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)


def segment_enters_hex(o: Point, p: Point, h: tuple[int, int]) -> bool:
    """True if the closed segment ``o``-``p`` meets the open interior of hex ``h`` (exact Cyrus-Beck clipping).

    Touching a vertex or running along a hexside does not count.  Integer points use pure integer arithmetic
    (parameters kept as numerator/denominator pairs); other exact numbers (``Fraction``) work the same way.
    """
    cx, cy = frame_centre(h)
    ox, oy = o
    px, py = p
    # bounding-box rejection: the hexagon spans x in [cx-2, cx+2], y in [cy-1, cy+1] in the sight frame
    if max(ox, px) <= cx - 2 or min(ox, px) >= cx + 2 or max(oy, py) <= cy - 1 or min(oy, py) >= cy + 1:
        return False
    dx, dy = px - ox, py - oy
    # t0 = n0/d0 (lower bound), t1 = n1/d1 (upper bound), denominators kept positive
    n0: Fraction | int
    d0: Fraction | int
    n1: Fraction | int
    d1: Fraction | int
    n0, d0, n1, d1 = 0, 1, 1, 1
    for k in range(6):
        ax, ay = FRAME_VERTICES[k]
        bx, by = FRAME_VERTICES[(k + 1) % 6]
        ax, ay, bx, by = ax + cx, ay + cy, bx + cx, by + cy
        ex, ey = bx - ax, by - ay
        num = ex * (oy - ay) - ey * (ox - ax)     # inside iff num + t * den > 0
        den = ex * dy - ey * dx
        if den == 0:
            if num <= 0:
                return False
            continue
        if den > 0:                              # t > -num/den
            tn, td = -num, den
            if tn * d0 > n0 * td:
                n0, d0 = tn, td
        else:                                    # t < -num/den = num/(-den)
            tn, td = num, -den
            if tn * d1 < n1 * td:
                n1, d1 = tn, td
        if n0 * d1 >= n1 * d0:
            return False
    return n0 * d1 < n1 * d0


def segment_along_hexside(o: Point, p: Point, h: tuple[int, int], k: int) -> bool:
    """True if segment ``o``-``p`` contains a piece of positive length of hexside ``k`` of ``h``."""
    a = frame_vertex(h, k)
    b = frame_vertex(h, k + 1)
    if _cross(o[0], o[1], p[0], p[1], a[0], a[1]) != 0 or _cross(o[0], o[1], p[0], p[1], b[0], b[1]) != 0:
        return False
    dx, dy = p[0] - o[0], p[1] - o[1]
    den = dx * dx + dy * dy
    if den == 0:
        return False
    ta = Fraction((a[0] - o[0]) * dx + (a[1] - o[1]) * dy) / den
    tb = Fraction((b[0] - o[0]) * dx + (b[1] - o[1]) * dy) / den
    lo, hi = max(Fraction(0), min(ta, tb)), min(Fraction(1), max(ta, tb))
    return hi > lo


# --- the board ----------------------------------------------------------------------------------------------

def rectangle_hexes(width: int, height: int) -> list[Hex]:
    """Hexes of a ``width`` x ``height`` flat-top rectangle: columns ``q = 0..width-1``, and in column ``q`` the
    rows ``r = -(q // 2) .. -(q // 2) + height - 1`` (the rectangle written in axial names)."""
    new = tuple.__new__  # Hex(q, r) without the named tuple's Python-level __new__ (a 100 x 100 board: 10^4 hexes)
    return [new(Hex, (q, r)) for q in range(width) for r in range(-(q // 2), -(q // 2) + height)]


def offset_to_axial(column: int, row: int) -> Hex:
    """The axial hex of ``column``, ``row`` in flat-top "odd-q" offset coordinates (odd columns drawn half a hex
    lower): ``q = column``, ``r = row - column // 2``.  Row 0 is the top (north) row, so a ``width`` x ``height``
    block of offset cells is exactly :func:`rectangle_hexes` (``map.layout`` pictures use this)."""
    return Hex(column, row - column // 2)


def axial_to_offset(h: tuple[int, int]) -> tuple[int, int]:
    """``(column, row)`` of an axial hex: the inverse of :func:`offset_to_axial`."""
    return h[0], h[1] + h[0] // 2


def components(cells: Iterable[tuple[int, int]]) -> list[list[Hex]]:
    """The connected parts of a set of hexes (six-neighbour adjacency), largest first (ties: the part holding the
    smallest hex first); each part sorted.  networkx ``connected_components`` on the cells' graph."""
    import networkx as nx  # imported on first use: ``import sim.runner`` stays cheap (issue 14)

    g: nx.Graph[Hex] = nx.Graph()
    cellset = {as_hex(c) for c in cells}
    g.add_nodes_from(cellset)
    for h in cellset:
        for k in (0, 4, 5):
            n = h.neighbour(k)
            if n in cellset:
                g.add_edge(h, n)
    parts = [sorted(c) for c in nx.connected_components(g)]
    parts.sort(key=lambda c: (-len(c), c[0]))
    return parts


def parallelogram_hexes(width: int, height: int) -> list[Hex]:
    """Hexes ``q = 0..width-1``, ``r = 0..height-1`` (a rhombus-shaped board)."""
    return [Hex(q, r) for q in range(width) for r in range(height)]


def hexagon_hexes(radius: int) -> list[Hex]:
    """Hexes within ``radius`` of ``(0, 0)``."""
    return [Hex(q, r) for q in range(-radius, radius + 1) for r in range(-radius, radius + 1)
            if distance((0, 0), (q, r)) <= radius]


T = TypeVar("T")
#: A hex name as a key of a terrain mapping: a :class:`Hex` or a plain ``(q, r)`` pair.
_HexLike = TypeVar("_HexLike", bound=tuple[int, int])

#: The terrain a sight rule reads for a cell that is not on the map: open ground (CONVENTIONS.md "Lines").
OFF_MAP_TERRAIN = "open"


#: Most answers :meth:`HexMap.pair_cached` keeps per board before it starts afresh (a few hundred bytes each).
PAIR_CACHE_MAX = 250_000


class HexMap:
    """The board: its cells ``(q, r)`` with their terrain names (``"open"`` by default), and as a networkx graph
    (:attr:`graph`, built on first use) with one node per cell and edges to its six neighbours; node attribute
    ``terrain`` holds the terrain name.  ``version`` is bumped by any
    terrain or obstacle change; :meth:`cached` stores dynamic answers under the current version.
    ``shape_key`` identifies the static shape, so static geometry can be shared across battles.
    """

    def __init__(self, cells: Iterable[tuple[int, int]], terrain: Mapping[_HexLike, str] | None = None,
                 *, shape_key: Hashable = None, description: str = "", convex: bool | None = None):
        given = tuple(cells)
        # cells that are already Hex (a scenario's board) are kept as they are: no per-cell coercion
        hexes = cast("tuple[Hex, ...]", given) if set(map(type, given)) <= {Hex} else tuple(map(as_hex, given))
        #: The cells in the order given (the graph's node order, hence its neighbour order).
        self._order: tuple[Hex, ...] = hexes
        self._cells = frozenset(hexes)
        #: Each cell's terrain name (the graph's node attribute ``terrain``, kept as a plain dict: it is read many
        #: times per decision, and networkx's node views cost several times a dict lookup).
        #: Made from the frozenset (whose stored hashes the dict reuses); its order is never read (only sorted).
        self._terrain: dict[tuple[int, int], str] = dict.fromkeys(self._cells, "open")
        #: The cells whose terrain is not ``open`` with their terrain (the terrain index: kept with ``_terrain``).
        self._marked: dict[Hex, str] = {}
        for cell, t in (terrain or {}).items():
            h = as_hex(cell)
            if h not in self._terrain:
                raise KeyError(f"terrain given for {tuple(h)}, which is not a cell of the map")
            self._terrain[h] = t
            if t != "open":
                self._marked[h] = t
            else:
                self._marked.pop(h, None)
        self._graph: nx.Graph[tuple[int, int]] | None = None
        self._adj: Mapping[Hex, tuple[Hex, ...]] | None = None
        #: Whether the cells form a :func:`convex_shape` (``None``: not worked out yet; see :meth:`convex`).
        self._convex: bool | None = convex
        self.version = 0
        self.terrain_version = 0
        # the answer caches hold each key's own type (what its ``compute`` returned), so their values are Any
        self._static: dict[Hashable, Any] = {}
        self._static_version = 0
        self.shape_key = shape_key if shape_key is not None else ("cells", len(self._order))
        self.description = description
        self._cache: dict[Hashable, Any] = {}
        self._cache_version = 0
        self._forked = False
        #: Cells whose obstacles changed, one entry per change in map-version order (``None``: unlocated).
        self.changes: list[Hex | None] = []
        self._pairs: dict[Hashable, tuple[Any, int]] = {}
        self._pairs_parent: tuple[dict, int] | None = None
        self._local: dict[Hashable, object] = {}
        self._local_version = 0

    @property
    def graph(self) -> nx.Graph[tuple[int, int]]:
        """The board as a networkx graph: one node per cell (attribute ``terrain``), edges to its neighbours.
        Built on first use (a battle's own rules read the plain dicts; a 100 x 100 board's graph costs more than
        a short battle on it): nodes in cell order, each undirected edge once, added for the neighbours across
        hexsides 0, 4 and 5 of each cell in turn."""
        if self._graph is None:
            import networkx as nx  # imported on first use: ``import sim.runner`` stays cheap (issue 14)

            g: nx.Graph[tuple[int, int]] = nx.Graph()
            # networkx's own adjacency structure, filled directly (node -> attribute dict; node -> neighbour ->
            # edge attribute dict, one dict shared by both directions), in the order that ``add_nodes_from`` and
            # ``add_edge`` would give: the same graph in less than half the time.  Assigning ``_node`` / ``_adj``
            # resets the graph's cached views (networkx's documented descriptors).
            terrain = self._terrain
            node: dict[Hex, dict[str, Any]] = {h: {"terrain": terrain[h]} for h in self._order}
            adj: dict[Hex, dict[Hex, dict[str, Any]]] = {h: {} for h in node}
            for h, nbrs in self._edges():
                ah = adj[h]
                for n in nbrs:
                    ah[n] = adj[n][h] = {}
            g._node = node  # type: ignore[attr-defined] # the stubs leave out networkx's internal dicts
            g._adj = adj  # type: ignore[attr-defined]
            self._graph = g
        return self._graph

    @graph.setter
    def graph(self, g: nx.Graph[tuple[int, int]]) -> None:
        self._graph = g

    def _edges(self) -> Iterator[tuple[Hex, list[Hex]]]:
        """Each cell in cell order with its neighbours across hexsides 0, 4 and 5 that are cells: every
        undirected edge once, in the graph's insertion order."""
        cellset = self._cells
        for h in self._order:
            q, r = h
            # the neighbours across hexsides 0, 4 and 5 (DIRECTIONS[0], [4], [5])
            yield h, [n for n in (Hex(q + 1, r - 1), Hex(q, r + 1), Hex(q + 1, r)) if n in cellset]

    def __contains__(self, h: object) -> bool:
        return h in self._cells

    def __iter__(self) -> Iterator[Hex]:
        return iter(sorted(self._cells))

    def __len__(self) -> int:
        return len(self._cells)

    @property
    def cells(self) -> frozenset[Hex]:
        return self._cells

    def sorted_cells(self) -> list[Hex]:
        """The cells sorted by ``(q, r)`` (``sorted(cells)``, made from the board order: a scenario's board is
        listed column by column already, so the sort is one pass)."""
        return sorted(self._order) if len(self._order) == len(self._cells) else sorted(self._cells)

    def terrain_cells(self) -> dict[Hex, str]:
        """``{cell: terrain}`` of the cells whose terrain is not ``open``, sorted by ``(q, r)`` (the terrain now)."""
        return dict(sorted(self._marked.items()))

    def terrain(self, h: tuple[int, int]) -> str:
        """Terrain name of ``h``; raises ``KeyError`` if off the map (movement and set-up must not ask)."""
        return self._terrain[h]

    def cells_with_terrain(self, names: Collection[str]) -> frozenset[Hex]:
        """The cells whose terrain (now) is one of ``names`` (kept until the terrain changes, per set of names:
        what it reads is the terrain only).  From the terrain index (the cells that are not ``open``) unless
        ``open`` is named, no call per cell: how a rule set that knows which terrains block sight or movement gets
        those cells on a big map."""
        key = frozenset(names)
        if not key:
            return frozenset()

        def compute() -> frozenset[Hex]:
            if "open" in key:
                return frozenset([h for h, t in self._terrain.items() if t in key])  # type: ignore[misc] # Hex keys
            return frozenset([h for h, t in self._marked.items() if t in key])
        return self.terrain_cached(("cells_with_terrain", key), compute)

    def sight_terrain(self, h: tuple[int, int]) -> str:
        """Terrain name of ``h`` for every sight, LOS, hindrance and cover rule: a cell off the map (a line between
        two hexes on the map may pass one, e.g. along a ``rectangle`` board's ragged edge) is open ground,
        :data:`OFF_MAP_TERRAIN`; never raises (CONVENTIONS.md "Lines")."""
        return self._terrain.get(h, OFF_MAP_TERRAIN)

    def set_terrain(self, h: tuple[int, int], name: str) -> None:
        """Change a cell's terrain and bump both versions (only ``events.apply`` should call this in a battle).
        A :meth:`fork` first takes its own copy of the graph and of the terrain cache (copy on write)."""
        if h not in self._cells:
            raise KeyError(f"set_terrain: {tuple(h)} is not a cell of the map")
        if self._forked:
            if self._graph is not None:
                self._graph = self._graph.copy()
            self._terrain = dict(self._terrain)
            self._marked = dict(self._marked)
            self._static = {}
            self._forked = False
        if self._graph is not None:
            self._graph.nodes[h]["terrain"] = name
        h = as_hex(h)
        self._terrain[h] = name
        if name != "open":
            self._marked[h] = name
        else:
            self._marked.pop(h, None)
        self.terrain_version += 1
        self.bump(None)  # a terrain change may change any rule-set answer (tile costs, cover): recompute them all

    def terrain_cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Like :meth:`cached`, but kept until the *terrain* changes (not flushed by wrecks or other obstacles):
        for answers that depend on the static map only."""
        if self._static_version != self.terrain_version:
            self._static = {}  # a new dict: a fork may still share the old one
            self._static_version = self.terrain_version
        try:
            return self._static[key]
        except KeyError:
            v = self._static[key] = compute()
            return v

    def local_cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Like :meth:`terrain_cached` (kept until the terrain changes, not flushed by wrecks), but this board's
        own: not shared with another battle's board nor with a :meth:`fork`, so an answer may also read this
        battle's rule-set state that changes together with the terrain (a structure collapsing to rubble)."""
        if self._local_version != self.terrain_version:
            self._local = {}
            self._local_version = self.terrain_version
        try:
            return self._local[key]  # type: ignore[return-value]
        except KeyError:
            v = self._local[key] = compute()
            return v

    def bump(self, cells: Iterable[tuple[int, int]] | None = None) -> None:
        """A new map version: something that may block sight or movement changed.  ``cells`` are the hexes whose
        obstacles changed (a wreck appeared or left); ``None`` means anything may have changed.  They are logged
        in :attr:`changes` for :meth:`pair_cached` (which then recomputes only the answers near them)."""
        self.version += 1
        if cells is None:
            self.changes.append(None)
        else:
            self.changes.extend(as_hex(c) for c in cells)

    def pair_cached(self, key: Hashable, a: tuple[int, int], b: tuple[int, int], compute: Callable[[], T],
                    slack: int = 3) -> T:
        """A cached answer about the pair of hexes ``a``, ``b`` that depends only on the obstacles of the cells
        ``h`` with ``distance(h, a) + distance(h, b) <= distance(a, b) + slack`` (hexes; the sight ellipse of
        :func:`sight_footprint`): kept across map versions, recomputed only when a change logged by :meth:`bump`
        falls in that ellipse (or an unlocated change, or a terrain change, was logged).  ``key`` must hold
        everything else the answer depends on, ``a`` and ``b`` included."""
        changes = self.changes
        n = len(changes)
        ent = self._pairs.get(key)
        if ent is None and self._pairs_parent is not None:
            ent = self._pairs_parent[0].get(key)
            if ent is not None and ent[1] > self._pairs_parent[1]:
                ent = None  # computed by the parent after the fork: on obstacles this copy may not have
        if ent is not None:
            m = ent[1]
            if m == n:
                return ent[0]
            lim = distance(a, b) + slack
            for c in changes[m:]:
                if c is None or distance(c, a) + distance(c, b) <= lim:
                    break
            else:
                self._pairs[key] = (ent[0], n)
                return ent[0]
        v = compute()
        if len(self._pairs) >= PAIR_CACHE_MAX:
            self._pairs = {}  # a cache, bounded: a long battle asks ever new pairs (the answers are recomputed)
        self._pairs[key] = (v, n)
        return v

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Return the value cached under ``key`` for the current version, computing it on a miss."""
        if self._cache_version != self.version:
            self._cache = {}  # a new dict: forks made at the old version may still share the old one
            self._cache_version = self.version
        try:
            return self._cache[key]
        except KeyError:
            v = self._cache[key] = compute()
            return v

    def fork(self) -> "HexMap":
        """A copy of this map for a search copy of a battle (:mod:`sim.search`), made in O(cached answers).

        The fork shares the static graph and the terrain cache (:meth:`terrain_cached`) with this map until its
        own terrain changes (then :meth:`set_terrain` copies them first, so this map never sees the change).  It
        also shares the dynamic cache (:meth:`cached`) while both are at the version of the fork: answers cached
        there depend only on the key and on the obstacles of that version, which are the same on both boards;
        the first bump on either side gives that side a new cache.  Tank occupancy is not the map's: each battle and
        search copy keeps its own (``BattleState.occupancy``)."""
        new = object.__new__(HexMap)
        new.__dict__.update(self.__dict__)
        if self._cache_version != self.version:
            self._cache = {}
            self._cache_version = self.version
        new._cache = self._cache
        new._forked = True
        new.changes = list(self.changes)
        new._pairs = {}
        new._pairs_parent = (self._pairs, len(self.changes))
        new._local = {}  # read through to answers valid at the fork
        return new

    def for_another_battle(self) -> "HexMap":
        """A fresh board with this board's cells (in this board's order, so the same neighbour order) and terrain
        for another battle of the same scenario (batch workers reuse one built board per scenario, issue 14).

        The copy is built like a new board (its own graph, so its own occupancy, versions and dynamic cache) but
        shares this board's terrain cache (:meth:`terrain_cached`: answers that depend on the static map only, such
        as line geometry and tile obstacles), so the next battle starts with the answers earlier battles computed.
        Sharing is safe: a terrain change on either board moves that board to a new terrain version, whose first
        :meth:`terrain_cached` call starts a new dict.  Raises ``ValueError`` if this board's terrain has changed
        (only a pristine, never-played board is a template)."""
        if self.terrain_version:
            raise ValueError("for_another_battle: the template board's terrain has changed (use a pristine board)")
        new = HexMap((), shape_key=self.shape_key, description=self.description)
        new._order, new._cells, new._terrain = self._order, self._cells, dict(self._terrain)
        new._marked = dict(self._marked)
        new._adj, new._convex = self._adj, self._convex
        new._static = self._static
        return new

    def neighbours(self, h: tuple[int, int]) -> list[Hex]:
        """The cells next to cell ``h``, in the graph's neighbour order; ``KeyError`` off the map."""
        return list(self.adjacency()[as_hex(h)])

    def distance_field(self, sources: Iterable[tuple[int, int]], passable: Callable[[Hex], bool] | None = None,
                       passable_key: Hashable = None, static: bool = False,
                       blocked_terrains: Collection[str] | None = None) -> "DistanceField":
        """Steps from the nearest source over passable cells (every step costs 1), as a :class:`DistanceField`:
        a read-only ``{hex: steps}`` mapping that answers a lookup without searching the whole map.

        ``passable(h)`` says whether a cell may be entered (``None``: every cell); impassable sources are dropped.
        With ``static`` (``passable`` reads the terrain only) and a ``passable_key``, the impassable cells are found
        once per terrain version (:meth:`terrain_cached`) and the field is lazy: a lookup is answered by the hex
        distance where that is provably the step count, else by a breadth-first search grown only as far as the
        cell asked.  Otherwise (``passable`` may read wrecks) the search is run to the end now, so the answer is
        that of this map version even if the board changes later.  Iterating the field gives every reachable cell
        in breadth-first order from the sources (sources first, layer by layer, neighbours in graph order): the
        order of networkx's ``bfs_layers`` on the passable subgraph, which this replaces.

        ``blocked_terrains`` (with ``static``): the caller's word that ``passable(h)`` is exactly "``h`` is a cell
        whose terrain is not one of these" -- then the impassable cells come from the terrain
        (:meth:`cells_with_terrain`) instead of one ``passable`` call per cell (the same set)."""
        if passable is not None and passable_key is not None and static:
            blocked: frozenset[Hex]
            if blocked_terrains is not None:
                blocked = self.cells_with_terrain(blocked_terrains)
            else:
                blocked = self.terrain_cached(("impassable", passable_key), lambda: frozenset(
                    filterfalse(passable, self._order)))
            return DistanceField(sources, self.adjacency(), self._cells, blocked, self.convex())
        adj = self.adjacency()
        cells = self._cells if passable is None else frozenset(h for h in self._cells if passable(h))
        field = DistanceField(sources, adj, cells, frozenset(), False)
        len(field)  # run the search now: ``passable`` may read this version's obstacles
        return field

    def convex(self) -> bool:
        """:func:`convex_shape` of the cells (given by the maker of the board, e.g. a scenario's rectangle, or worked
        out once on first use: the cells never change)."""
        if self._convex is None:
            self._convex = convex_shape(self._cells)
        return self._convex

    def adjacency(self) -> Mapping[Hex, tuple[Hex, ...]]:
        """``{cell: neighbours}`` in the graph's neighbour order (read-only; made once per board, lazily: a cell's
        neighbours are worked out the first time they are asked, so a battle pays for the cells it touches, not the
        map (issue 14); a board made by :meth:`for_another_battle` or :meth:`fork` shares it).  Once the graph has
        been built (or assigned), the answer is read from the graph instead."""
        got = self._adj
        if got is None:
            got = self._adjacency() if self._graph is not None else Adjacency(self._order, self._cells)
            self._adj = got
        return got

    def _adjacency(self) -> Mapping[Hex, tuple[Hex, ...]]:
        """``{cell: neighbours}`` of the graph, neighbours in graph order, built for every cell at once: a read-only
        copy (a field handed to a policy holds it, so it must not reach the graph itself).  Without a graph this is
        the direct computation that :class:`Adjacency` answers lazily (tests compare the two)."""
        from types import MappingProxyType

        if self._graph is not None:  # the nodes are Hex (typed (q, r) pairs on the graph)
            return MappingProxyType({as_hex(h): tuple(nbrs) for h, nbrs in self._graph.adjacency()})  # type: ignore[arg-type]
        adj: dict[Hex, list[Hex]] = {h: [] for h in self._order}  # the graph's neighbour order, without the graph
        for h, nbrs in self._edges():
            ah = adj[h]
            for n in nbrs:
                ah.append(n)
                adj[n].append(h)
        return MappingProxyType({h: tuple(nbrs) for h, nbrs in adj.items()})


class Adjacency(dict):  # a read-only Mapping[Hex, tuple[Hex, ...]] (see the docstring)
    """A board's ``{cell: neighbours}``, neighbours in the order of the board graph (:attr:`HexMap.graph`), filled
    lazily: ``adjacency[h]`` works out ``h``'s neighbours the first time (O(1)) and keeps them, so a lookup that
    has been made once costs a plain dict lookup.  Read-only: every mutating method raises ``TypeError``; ``in``,
    ``len``, iteration (cells in board order), ``get``, ``keys`` / ``items`` / ``values`` and ``==`` behave as for
    the full mapping; ``adjacency[h]`` raises ``KeyError`` for a hex that is not a cell.

    The order: the graph adds, for each cell in board order, the edges to its neighbours across hexsides 0, 4 and
    5 (:meth:`HexMap._edges`); so a cell's neighbour list is its neighbours across hexsides 3, 1 and 2 (the
    cells that added an edge to it) that come *before* it in board order, in board order, then its own hexside
    0, 4, 5 neighbours in that order, then the hexside 3, 1, 2 neighbours that come *after* it, in board order.
    The place of each cell in board order is indexed on the first lookup (one C-level pass over the cells)."""

    __slots__ = ("_order", "_cells", "_pos")

    def __init__(self, order: tuple[Hex, ...], cells: Collection[Hex]):
        super().__init__()
        self._order = order
        self._cells = cells
        self._pos: dict[Hex, int] | None = None

    def __missing__(self, h: Any) -> tuple[Hex, ...]:
        if h not in self._cells:
            raise KeyError(h)
        pos = self._pos
        if pos is None:
            pos = self._pos = dict(zip(self._order, range(len(self._order))))
        q, r = h
        cells = self._cells
        here = pos[h]
        back = sorted((pos[n], n) for n in (Hex(q - 1, r + 1), Hex(q, r - 1), Hex(q - 1, r)) if n in cells)
        out = tuple([n for i, n in back if i < here]
                    + [n for n in (Hex(q + 1, r - 1), Hex(q, r + 1), Hex(q + 1, r)) if n in cells]
                    + [n for i, n in back if i > here])
        dict.__setitem__(self, Hex(q, r), out)
        return out

    def __contains__(self, h: object) -> bool:
        return h in self._cells

    def __iter__(self) -> Iterator[Hex]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def get(self, h: Any, default: Any = None) -> Any:
        try:
            return self[h]
        except (KeyError, TypeError, ValueError):
            return default

    def keys(self) -> Any:
        return list(self._order)

    def items(self) -> Any:
        return [(h, self[h]) for h in self._order]

    def values(self) -> Any:
        return [self[h] for h in self._order]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return len(other) == len(self) and all(h in other and other[h] == self[h] for h in self._order)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Adjacency({dict(self.items())!r})"

    def copy(self) -> dict[Hex, tuple[Hex, ...]]:
        return dict(self.items())

    def __reduce__(self) -> Any:
        return (Adjacency, (self._order, self._cells))

    def _read_only(self, *args: Any, **kw: Any) -> Any:
        raise TypeError("a board's adjacency is read-only")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _read_only


#: Most impassable cells a :class:`DistanceField` tests a lookup's shortest-path region against before it falls
#: back to its breadth-first search (the test costs one distance pair per impassable cell).
CERTIFY_MAX_BLOCKED = 64


def convex_shape(cells: Collection[tuple[int, int]]) -> bool:
    """Whether ``cells`` form a board on which the step count between any two cells, over the cells alone, is the
    hex :func:`distance`: a parallelogram (every ``q`` in ``q0..q1`` with every ``r`` in ``r0..r1``), a hexagon
    (the cells within ``R`` of a centre) or a flat-top rectangle (:func:`rectangle_hexes`, shifted by an even
    number of columns and any number of rows).  O(cells).

    Why those: on a hex grid every shortest path uses at most two adjacent directions, so it is monotone in each
    of ``q``, ``r`` and ``s``; a parallelogram (a box in ``q``, ``r``) and a hexagon (a box in ``q``, ``r``, ``s``)
    therefore hold every shortest path between two of their cells.  In a rectangle, seen in odd-q offset
    coordinates (column ``q``, row ``r + q // 2``), a shortest path makes exactly one step per column between the
    two columns; each such step may keep the row, and in every other column it may also move the row one towards
    the far cell, and the remaining row difference is made by steps within a column; taking the row-changing
    option whenever it is offered and still needed, then the in-column steps, gives a shortest path whose rows
    never leave the two cells' rows: it stays on the board (tests/test_distance_field.py checks every rectangle up
    to 12 x 12 against a search)."""
    n = len(cells)
    if not n:
        return False
    qs = [h[0] for h in cells]
    rs = [h[1] for h in cells]
    q0, q1, r0, r1 = min(qs), max(qs), min(rs), max(rs)
    w = q1 - q0 + 1
    if n == w * (r1 - r0 + 1):
        return True  # n distinct cells in a w x h box of (q, r): the whole box, a parallelogram
    if q0 % 2 == 0:
        rows = [r + q // 2 for q, r in cells]
        lo, hi = min(rows), max(rows)
        if n == w * (hi - lo + 1):
            return True  # n distinct cells in w columns of (hi - lo + 1) offset rows: the whole rectangle
    if w % 2 == 1:
        rad = w // 2
        cq, cr = q0 + rad, r0 + rad
        if n == 3 * rad * (rad + 1) + 1 and all(distance(h, (cq, cr)) <= rad for h in cells):
            return True
    return False


class DistanceField(Mapping[Hex, int]):
    """Steps over passable cells from the nearest of ``sources`` to each cell: a read-only mapping, lazy.

    ``adjacency`` is the board graph's ``{cell: neighbours}`` (neighbour order = graph order); a cell may be
    entered if it is in ``passable`` and not in ``blocked`` (``blocked``: the board's impassable cells, read by
    the hex-distance answer when ``convex``, i.e. ``passable`` is the board's cells and they form a
    :func:`convex_shape`).  Sources that are not passable are dropped (duplicates too).

    A lookup ``field.get(h)`` (``field[h]``, ``h in field``) is exact and costs what it asks, not the map:
    ``None`` (``KeyError``) if ``h`` is impassable or unreachable; else on a convex board, if some source ``s``
    nearest ``h`` in hexes has no blocked cell ``c`` on a shortest hex path between them
    (``distance(s, c) + distance(c, h) == distance(s, h)``, tested when at most :data:`CERTIFY_MAX_BLOCKED`
    cells are blocked), the answer is ``distance(s, h)`` (a lower bound for every path, met by a shortest hex
    path that stays on the convex board and so passes passable cells only); otherwise a breadth-first search from
    all sources at once, kept between lookups, is grown layer by layer until ``h`` is reached (or everything
    reachable is).  Iteration and ``len`` finish the search: every reachable cell in breadth-first order (sources
    first, in the iteration order of their set, as ``bfs_layers`` takes them; then layer by layer, each layer in
    the order its cells were first reached, neighbours in ``adjacency`` order), as networkx's ``bfs_layers`` on
    the passable subgraph.  The answers read only the arguments, so a field may be shared by every board with the
    same cells and terrain; it holds no board."""

    __slots__ = ("_sources", "_adj", "_passable", "_blocked", "_convex", "_known", "_dist", "_layer", "_steps")

    def __init__(self, sources: Iterable[tuple[int, int]], adjacency: Mapping[Hex, Iterable[Hex]],
                 passable: Collection[tuple[int, int]], blocked: Collection[tuple[int, int]], convex: bool):
        self._passable = passable
        self._blocked = blocked
        self._convex = convex and len(blocked) <= CERTIFY_MAX_BLOCKED
        self._adj = adjacency
        # the first layer in bfs_layers' order: a set made from the list of distinct sources (from a list, not a dict:
        # the set's table, so its order, depends on how it was built)
        srcs = list(set(list(dict.fromkeys(as_hex(s) for s in sources if s in passable and s not in blocked))))
        self._sources = srcs
        self._known: dict[tuple[int, int], int] = {}  # lookups answered by the hex distance
        self._dist: dict[Hex, int] = dict.fromkeys(srcs, 0)  # the breadth-first search so far, in its order
        self._layer: list[Hex] | None = srcs if srcs else None  # the last layer reached (None: search finished)
        self._steps = 0

    def _grow(self) -> None:
        """One more layer of the breadth-first search (``bfs_layers``' order)."""
        dist, adj, ok, no = self._dist, self._adj, self._passable, self._blocked
        steps = self._steps + 1
        nxt: list[Hex] = []
        for u in self._layer or ():
            for v in adj[u]:
                if v not in dist and v in ok and v not in no:
                    dist[v] = steps
                    nxt.append(v)
        self._steps = steps
        self._layer = nxt or None

    def get(self, h: Any, default: Any = None) -> Any:
        got = self._known.get(h)
        if got is not None:
            return got
        dist = self._dist
        got = dist.get(h)
        if got is not None:
            return got
        if self._layer is None or h not in self._passable or h in self._blocked:
            return default
        if self._convex:
            best = -1
            near: list[Hex] = []
            for s in self._sources:
                d = distance(s, h)
                if best < 0 or d < best:
                    best, near = d, [s]
                elif d == best:
                    near.append(s)
            for s in near:
                if all(distance(s, c) + distance(c, h) != best for c in self._blocked):
                    self._known[h] = best
                    return best
        while self._layer is not None:
            self._grow()
            got = dist.get(h)
            if got is not None:
                return got
        return default

    def __getitem__(self, h: Any) -> int:
        got = self.get(h)
        if got is None:
            raise KeyError(h)
        return got

    def __contains__(self, h: object) -> bool:
        return self.get(h) is not None

    def _finish(self) -> dict[Hex, int]:
        while self._layer is not None:
            self._grow()
        return self._dist

    def __iter__(self) -> Iterator[Hex]:
        return iter(self._finish())

    def __len__(self) -> int:
        return len(self._finish())

    def __repr__(self) -> str:
        return f"DistanceField({dict(self._finish())!r})"


def bounded_dijkstra(start: T, successors: Callable[[T], Iterable[tuple[T, int]]], budget: int
                     ) -> dict[T, tuple[int, list[T]]]:
    """Cheapest paths from ``start`` in a rule set's state space within ``budget`` (integer costs).

    ``successors(state)`` yields ``(next_state, cost)`` with ``cost >= 0``; states must be hashable.  Returns
    ``{state: (cost, path)}`` where ``path`` starts with ``start``, in the order the states are settled.

    The reachable part of the state graph is explored breadth first (keeping the cheapest cost of every edge),
    then searched by Dijkstra's algorithm with a binary heap, ties popped in push order and each state's
    successors scanned in the order its edges were first found: the same answers, paths and order as networkx's
    ``single_source_dijkstra(..., cutoff=budget)`` on that graph (which this replaces without building a
    ``DiGraph`` per search)."""
    succ: dict[T, dict[T, int]] = {start: {}}
    frontier = [start]
    best = {start: 0}
    limit = budget + 1
    while frontier:
        nxt = []
        for u in frontier:
            bu = best[u]
            out = succ.get(u)
            for v, c in successors(u):
                cost = bu + c
                if cost > budget:
                    continue
                if out is None:
                    out = succ[u] = {}
                if c < out.get(v, limit):
                    out[v] = c
                if v not in succ:
                    succ[v] = {}
                if cost < best.get(v, limit):
                    best[v] = cost
                    nxt.append(v)
        frontier = nxt
    dist: dict[T, int] = {}
    paths: dict[T, list[T]] = {start: [start]}
    seen = {start: 0}
    heap: list = [(0, 0, start)]
    count = 1
    while heap:
        d, _, v = heappop(heap)
        if v in dist:
            continue
        dist[v] = d
        for u, c in succ[v].items():
            vu = d + c
            if vu > budget:
                continue
            if u in dist:
                continue
            if u not in seen or vu < seen[u]:
                seen[u] = vu
                heappush(heap, (vu, count, u))
                count += 1
                paths[u] = paths[v] + [u]
    return {s: (dist[s], paths[s]) for s in dist}


# --- translation-invariant sight footprints --------------------------------------------------------------------

def sight_ellipse(a: tuple[int, int], b: tuple[int, int], slack: int = 3) -> list[Hex]:
    """The hexes ``h`` with ``distance(h, a) + distance(h, b) <= distance(a, b) + slack``, in breadth-first order
    from ``a`` (a flood fill: every such hex has a neighbour one step nearer ``a`` that is in the set too)."""
    aq, ar = a
    bq, br = b
    lim = distance(a, b) + slack
    start = Hex(aq, ar)
    seen = {start}
    out = [start]
    i = 0
    while i < len(out):
        q, r = out[i]
        i += 1
        for dq, dr in DIRECTIONS:
            nq, nr = q + dq, r + dr
            n = Hex(nq, nr)
            if n in seen:
                continue
            x, y, u, v = nq - aq, nr - ar, nq - bq, nr - br
            if max(abs(x), abs(y), abs(x + y)) + max(abs(u), abs(v), abs(u + v)) <= lim:
                seen.add(n)
                out.append(n)
    return out


def _in_ellipse(h: tuple[int, int], dq: int, dr: int, slack: int = 3) -> bool:
    return distance(h, (0, 0)) + distance(h, (dq, dr)) <= distance((0, 0), (dq, dr)) + slack


#: The 19 offsets within 2 hexes of ``(0, 0)`` (the band of :func:`_ellipse_offsets`).
_BAND = tuple((x, y) for x in range(-2, 3) for y in range(max(-2, -x - 2), min(2, -x + 2) + 1))


def _ellipse_offsets(dq: int, dr: int) -> tuple[Hex, ...]:
    """The hexes that can meet a sight line from hex ``(0, 0)`` to hex ``(dq, dr)``, sorted: those of the sight
    ellipse (slack 3) within 2 hexes of :func:`hex_line` ``(0, 0)``-``(dq, dr)``, the two end hexes left out.

    Within 2 is enough: a line runs between points of the two end hexes, so each of its points lies within one
    circumradius ``R`` of the centre-to-centre segment, which lies within ``R`` of the :func:`hex_line` hexes'
    centres; a hex the line enters or runs beside has its centre within ``R`` of the line, so within ``3 R`` of a
    :func:`hex_line` centre, and hexes 3 apart are at least ``4.5 R`` apart."""
    q, r = _ellipse_arrays(dq, dr)[:2]
    return tuple(Hex(int(a), int(b)) for a, b in zip(q, r))


def _ellipse_arrays(dq: int, dr: int) -> tuple[Any, Any, Any, Any]:
    """:func:`_ellipse_offsets` as numpy arrays ``(q, r, X, Y)`` (int64; ``X, Y`` the sight-frame centres),
    computed with numpy: the band around the line, deduplicated and sorted by ``(q, r)``, ellipse-filtered."""
    import numpy as np

    line = _hex_line_array(dq, dr)  # hex_line((0, 0), (dq, dr)), without a Python call per hex
    # the band's cells marked on a grid over its box: the marked cells, read in row-major order, are the band
    # deduplicated and sorted by (q, r) (no sort of the 19 n cells); the line's q and r lie between the ends'
    # (within one, whatever the rounding), so a margin of 3 holds every band cell
    q0, r0 = min(0, dq) - 3, min(0, dr) - 3
    grid = np.zeros((abs(dq) + 7, abs(dr) + 7), dtype=np.bool_)
    lq, lr = line[:, 0] - q0, line[:, 1] - r0
    for bq, br in _BAND:
        grid[lq + bq, lr + br] = True
    q, r = np.nonzero(grid)
    q, r = q.astype(np.int64) + q0, r.astype(np.int64) + r0
    u, w = q - dq, r - dr
    d = max(abs(dq), abs(dr), abs(dq + dr))
    ok = (np.maximum(np.maximum(np.abs(q), np.abs(r)), np.abs(q + r))
          + np.maximum(np.maximum(np.abs(u), np.abs(w)), np.abs(u + w)) <= d + 3)
    ok &= ~(((q == 0) & (r == 0)) | ((q == dq) & (r == dr)))
    q, r = q[ok], r[ok]
    return q, r, 3 * q, -(q + 2 * r)


def _entered_many(dq: int, dr: int, o: tuple[int, int], ps: list[tuple[int, int]]) -> list[tuple[Hex, ...]]:
    """For each end point ``p`` of ``ps``: the hexes of the sight ellipse of ``(0, 0)``-``(dq, dr)``
    (:func:`_ellipse_offsets`, sorted) whose open interior the closed segment ``o``-``p`` enters --
    :func:`segment_enters_hex` for all hexes, all segments and all six edges at once (:func:`_entered_matrix`,
    as hex tuples); :func:`_entered_many_clipped` is the reference it is tested against."""
    arrays = _ellipse_arrays(dq, dr)
    q, r = arrays[:2]
    if not len(q):
        return [() for _ in ps]
    ql, rl = q.tolist(), r.tolist()
    return [tuple(Hex(ql[i], rl[i]) for i in row.nonzero()[0].tolist()) for row in _entered_matrix(arrays, o, ps)]


@lru_cache(maxsize=1)
def _frame_arrays() -> tuple[Any, Any, Any, Any, Any]:
    """numpy constants of the sight frame: ``(fx, fy, ex, ey, dirs)``, the vertex offsets ``FRAME_VERTICES`` as
    columns ``(6, 1)``, the edges ``k`` (vertex ``k`` to ``k + 1``) likewise, and ``DIRECTIONS`` ``(6, 2)``."""
    import numpy as np

    fv = np.array(FRAME_VERTICES, dtype=np.int64)
    nxt = np.roll(fv, -1, axis=0) - fv
    return fv[:, 0:1], fv[:, 1:2], nxt[:, 0:1], nxt[:, 1:2], np.array(DIRECTIONS, dtype=np.int64)


def _entered_matrix(arrays: tuple[Any, Any, Any, Any], o: tuple[int, int], ps: list[tuple[int, int]]) -> Any:
    """The boolean matrix ``(len(ps), hexes)`` of :func:`_entered_many`: entry ``[j, i]`` says whether the closed
    segment ``o``-``ps[j]`` enters the open interior of the candidate hex ``i`` of ``arrays``
    (:func:`_ellipse_arrays`: ``(q, r, X, Y)``, at least one hex) -- numpy, int64, exact.

    The test is the separating-axis one: a closed segment misses an open convex hexagon exactly when a line
    separates them weakly, and such a line can be taken along a hexside or along the segment (the edges of the
    sum of the two shapes).  So the segment enters the hexagon iff, for each of its six edges, an end point lies
    strictly inside that edge's line, and some vertex lies strictly on each side of the segment's line (for a
    segment of one point: the point strictly inside every edge).  Only integer cross products of sight-frame
    points, far below 2**63 on any map."""
    import numpy as np

    cx, cy = arrays[2], arrays[3]
    ox, oy = o
    px = np.array([p[0] for p in ps], dtype=np.int64)  # (segments,)
    py = np.array([p[1] for p in ps], dtype=np.int64)
    fx, fy, ex, ey = _frame_arrays()[:4]          # (6, 1): vertex k of the hex at (0, 0), edge k (to vertex k + 1)
    # point (x, y) strictly inside edge k of the hex at (cx, cy): ex (y - cy - fy) - ey (x - cx - fx) > 0 (the
    # vertices run counter-clockwise), i.e. ex y - ey x > lim[k, hex]; inside for o or p: the larger one is
    # vertex k of a hex against the segment's line: dx (cy + fy - oy) - dy (cx + fx - ox) = base + turn[k]; some
    # vertex strictly on each side iff base + max(turn) > 0 and base + min(turn) < 0 (tested first: it leaves
    # only the hexes along the lines, and the edge test below runs on those)
    dx, dy = (px - ox)[:, None], (py - oy)[:, None]  # (segments, 1)
    base = dx * (cy[None, :] - oy) - dy * (cx[None, :] - ox)  # (segments, hexes)
    turn = dx * fy.T - dy * fx.T                   # (segments, 6)
    point = (dx == 0) & (dy == 0)                  # (segments, 1): a segment of one point
    ok = ((base > -turn.max(axis=1, keepdims=True)) & (base < -turn.min(axis=1, keepdims=True))) | point
    cols = ok.any(axis=0).nonzero()[0]
    lim = ex * cy[cols][None, :] - ey * cx[cols][None, :] + (ex * fy - ey * fx)  # (6, hexes left)
    best = np.maximum(ex * oy - ey * ox, ex * py[None, :] - ey * px[None, :])  # (6, segments)
    ok[:, cols] &= (best[:, :, None] > lim[:, None, :]).all(axis=0)  # no hexside line separates
    return ok


def _flat_masks(flat: Any, ok: Any) -> tuple[int, tuple[int, ...]]:
    """``(low, masks)`` of :meth:`SightLines.masks` from the candidates' flat indices ``flat`` (int64, one per
    hex) and the matrix ``ok`` (aims x hexes: which hexes each aim's line enters): mask ``k`` has bit
    ``flat[i] - low`` set for each ``i`` with ``ok[k, i]``, ``low`` the least such index (0 if none).  Made with
    numpy (one bit array per aim, packed little-endian into bytes), not bit by bit: a line across a big map has
    hundreds of hexes over a mask of thousands of bits."""
    import numpy as np

    rows, cols = np.nonzero(ok)
    if not len(cols):
        return 0, (0,) * len(ok)
    idx = flat[cols]
    low = int(idx.min())
    span = int(idx.max()) - low + 1
    bits = np.zeros((len(ok), (span + 7) // 8 * 8), dtype=np.bool_)
    bits[rows, idx - low] = True
    packed = np.packbits(bits, axis=1, bitorder="little")
    return low, tuple(int.from_bytes(row.tobytes(), "little") for row in packed)


def _entered_many_clipped(dq: int, dr: int, o: tuple[int, int], ps: list[tuple[int, int]]) -> list[tuple[Hex, ...]]:
    """:func:`_entered_many` by Cyrus-Beck clipping, edge after edge (the reference it is tested against).

    For each end point ``p`` of ``ps``: the hexes of the sight ellipse of ``(0, 0)``-``(dq, dr)``
    (:func:`_ellipse_offsets`, sorted) whose open interior the closed segment ``o``-``p`` enters --
    :func:`segment_enters_hex` for all hexes and all segments at once (numpy, int64, shape ``(len(ps), hexes)``;
    the same integer Cyrus-Beck clipping, parameters as numerator/denominator pairs; the values stay far below
    2**63 on any map)."""
    import numpy as np

    q, r, cx, cy = _ellipse_arrays(dq, dr)
    if not len(q):
        return [() for _ in ps]
    ox, oy = o
    px = np.array([p[0] for p in ps], dtype=np.int64)[:, None]
    py = np.array([p[1] for p in ps], dtype=np.int64)[:, None]
    cx, cy = cx[None, :], cy[None, :]
    ok = ~((np.maximum(ox, px) <= cx - 2) | (np.minimum(ox, px) >= cx + 2)
           | (np.maximum(oy, py) <= cy - 1) | (np.minimum(oy, py) >= cy + 1))
    dx, dy = px - ox, py - oy
    shape = (len(ps), len(q))
    n0 = np.zeros(shape, dtype=np.int64)
    d0 = np.ones(shape, dtype=np.int64)
    n1 = np.ones(shape, dtype=np.int64)
    d1 = np.ones(shape, dtype=np.int64)
    for k in range(6):
        vax, vay = FRAME_VERTICES[k]
        vbx, vby = FRAME_VERTICES[(k + 1) % 6]
        ex, ey = vbx - vax, vby - vay
        num = ex * (oy - (cy + vay)) - ey * (ox - (cx + vax))      # (1, hexes)
        den = ex * dy - ey * dx                                      # (segments, 1)
        ok &= (den != 0) | (num > 0)
        pos = den > 0
        neg = den < 0
        tn = -num
        upd = pos & (tn * d0 > n0 * den)
        n0 = np.where(upd, tn, n0)
        d0 = np.where(upd, den, d0)
        upd = neg & (num * d1 < n1 * (-den))
        n1 = np.where(upd, num, n1)
        d1 = np.where(upd, -den, d1)
    ok &= n0 * d1 < n1 * d0
    ql, rl = q.tolist(), r.tolist()
    return [tuple(Hex(ql[i], rl[i]) for i in row.nonzero()[0].tolist()) for row in ok]


def _hexsides_along(dq: int, dr: int, o: tuple[int, int], p: tuple[int, int],
                    arrays: tuple[Any, Any, Any, Any] | None = None
                    ) -> tuple[tuple[int, int, int, int, bool, bool], ...]:
    """The hexsides the segment ``o``-``p`` runs along over a positive length, between two hexes of which at
    least one is a candidate of :func:`_ellipse_offsets` (:func:`sight_footprint`'s ``hexsides``), each once, in
    the order of the candidates and their sides ``k``.  Only a segment parallel to a hexside direction can
    (``(1, 0)``, ``(1, 1)``, ``(1, -1)`` in the sight frame); others get ``()`` at once.  The collinearity and
    overlap tests run on all candidates' sides at once (numpy, exact integers).  ``arrays``: the line's
    :func:`_ellipse_arrays`, if the caller has them already."""
    import numpy as np

    ox, oy = o
    dx, dy = p[0] - ox, p[1] - oy
    if not (dy == 0 or dx == dy or dx == -dy):
        return ()
    q, r, cx, cy = arrays if arrays is not None else _ellipse_arrays(dq, dr)
    fx, fy, ex, ey, dirs = _frame_arrays()
    ax, ay = cx[:, None] + fx.T, cy[:, None] + fy.T                  # (hexes, 6): vertex k and k + 1 of each hex
    bx, by = ax + ex.T, ay + ey.T
    col = (dx * (ay - oy) - dy * (ax - ox) == 0) & (dx * (by - oy) - dy * (bx - ox) == 0)
    ta = (ax - ox) * dx + (ay - oy) * dy
    tb = (bx - ox) * dx + (by - oy) * dy
    den = dx * dx + dy * dy
    hit = col & (np.minimum(den, np.maximum(ta, tb)) > np.maximum(0, np.minimum(ta, tb)))
    hi, hk = np.nonzero(hit)  # candidate i's side k, in the order of the candidates and their sides
    if not len(hi):
        return ()
    hq, hr = q[hi], r[hi]
    nq, nr = hq + dirs[hk, 0], hr + dirs[hk, 1]  # the hex across side k (Hex.neighbour)
    # a candidate may block (it is in the ellipse and neither end); its neighbour may iff the same holds for it
    u, w = nq - dq, nr - dr
    d = max(abs(dq), abs(dr), abs(dq + dr))
    n_ok = ((np.maximum(np.maximum(np.abs(nq), np.abs(nr)), np.abs(nq + nr))
             + np.maximum(np.maximum(np.abs(u), np.abs(w)), np.abs(u + w)) <= d + 3)
            & ~(((nq == 0) & (nr == 0)) | ((nq == dq) & (nr == dr))))
    done = set()
    sides = []
    for x, y, nx_, ny_, ok in zip(hq.tolist(), hr.tolist(), nq.tolist(), nr.tolist(), n_ok.tolist()):
        side = (x, y, nx_, ny_, True, ok) if (x, y) <= (nx_, ny_) else (nx_, ny_, x, y, ok, True)
        pair = side[:4]
        if pair in done:
            continue
        done.add(pair)
        sides.append(side)
    return tuple(sides)


#: The seven aims of the seven-line test: the target's centre (``None``) and its vertices 0..5.
AIMS: tuple[int | None, ...] = (None, 0, 1, 2, 3, 4, 5)


class SightLines:
    """The seven sight lines from one origin of the firer's hex at ``(0, 0)`` to the target hex ``(dq, dr)``
    (:data:`AIMS`: its centre and its six vertices), what can block each of them, and how to test them all at
    once on an obstacle grid.  Pure, translation-invariant integer geometry: made once per ``(dq, dr, origin)``
    by :func:`sight_lines` and shared by every map.

    ``hexes[i]`` and ``hexsides[i]`` are :func:`sight_footprint` of aim ``AIMS[i]`` (hexes sorted; hexsides as
    :func:`_canonical_sides`).  :meth:`masks` gives, for a grid row stride ``w``, each aim's hexes as a bit mask
    over flat grid indices (``x + w * y``, shifted so the lowest is bit 0) and that shift: one shift and seven
    ``&`` of Python integers test all seven lines on an :class:`_ObstacleGrid` (:func:`count_clear_lines`).

    Made directly (numpy, :func:`_entered_many`) when ``image`` is ``None``; else ``image = (base, matrix, aims)``
    makes it the image of the lines ``base`` under a symmetry of the grid (:func:`_symmetry`'s ``matrix``), aim
    ``i`` being the image of the base's aim ``aims[i]``: its hexes are then mapped only when asked for."""

    __slots__ = ("_hexes", "hexsides", "_by_stride", "_sides_by_stride", "_image", "_q", "_r", "_ok")

    def __init__(self, dq: int, dr: int, origin: int | None,
                 image: tuple[SightLines, tuple[int, int, int, int], tuple[int, ...]] | None = None):
        self._image = image
        self._hexes: tuple[tuple[Hex, ...], ...] | None = None
        self._q: Any = None  # a line made directly: its candidates (int64 arrays) and which each aim enters
        self._r: Any = None
        self._ok: Any = None
        if image is None:
            o = frame_centre((0, 0)) if origin is None else frame_vertex((0, 0), origin)
            ps = [frame_centre((dq, dr)) if aim is None else frame_vertex((dq, dr), aim) for aim in AIMS]
            arrays = _ellipse_arrays(dq, dr)
            if len(arrays[0]):
                self._q, self._r = arrays[0], arrays[1]
                self._ok = _entered_matrix(arrays, o, ps)
            else:
                self._hexes = tuple(() for _ in ps)
            self.hexsides: tuple[tuple[tuple[int, int, int, int, bool, bool], ...], ...] = tuple(
                _canonical_sides(_hexsides_along(dq, dr, o, p, arrays)) for p in ps)
        else:
            base, (a, b, c, d), aims = image
            self.hexsides = tuple(
                _canonical_sides((a * x1 + b * y1, c * x1 + d * y1, a * x2 + b * y2, c * x2 + d * y2, ok1, ok2)
                                 for x1, y1, x2, y2, ok1, ok2 in base.hexsides[j]) for j in aims)
        self._by_stride: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._sides_by_stride: dict[int, tuple[int, tuple[int, ...]]] = {}

    @property
    def hexes(self) -> tuple[tuple[Hex, ...], ...]:
        """Per aim, the hexes (offsets from the firer) whose interior its line enters, sorted (made when first
        asked: the seven-line count reads only :meth:`masks` and :attr:`hexsides`)."""
        if self._hexes is None:
            if self._image is None:
                ql, rl = self._q.tolist(), self._r.tolist()
                self._hexes = tuple(tuple(Hex(ql[i], rl[i]) for i in row.nonzero()[0].tolist()) for row in self._ok)
            else:
                base, (a, b, c, d), aims = self._image
                self._hexes = tuple(tuple(sorted(Hex(a * x + b * y, c * x + d * y) for x, y in base.hexes[j]))
                                    for j in aims)
        return self._hexes

    def masks(self, w: int) -> tuple[int, tuple[int, ...]]:
        """``(lowest flat offset, one bit mask per aim)`` for a grid of row stride ``w`` (cached); an aim whose
        line enters no hex has mask 0.  Bit ``x + w * y - low`` of mask ``k`` is set for each hex ``(x, y)`` of
        ``hexes[k]`` (:func:`_flat_masks`, from the candidates' arrays; ``tests/test_hexgrid.py`` checks it
        against that formula)."""
        got = self._by_stride.get(w)
        if got is None:
            if self._image is None:
                got = (0, (0,) * len(AIMS)) if self._ok is None else _flat_masks(self._q + w * self._r, self._ok)
            else:
                base, (a, b, c, d), aims = self._image
                if base._ok is None:
                    got = (0, (0,) * len(AIMS))
                else:
                    ea, eb = a + w * c, b + w * d  # flat index of the image of ``(x, y)``: ``ea x + eb y``
                    got = _flat_masks(ea * base._q + eb * base._r, base._ok[list(aims)])
            self._by_stride[w] = got
        return got


    def side_masks(self, w: int) -> tuple[int, tuple[int, ...]]:
        """``(lowest flat offset, one bit mask per aim)`` of the hexes that may block a hexside each aim's line runs
        along (the ``ok`` hexes of :attr:`hexsides`), for a grid of row stride ``w`` (cached; 0 for an aim with
        none): bit ``x + w * y - low`` of mask ``k`` is set for each such hex ``(x, y)`` of aim ``k``.  An aim
        whose mask meets no obstacle bit has no blocking hexside under either ``hexside_blocks`` option
        (:func:`count_clear_lines`)."""
        got = self._sides_by_stride.get(w)
        if got is None:
            per_aim = [[x + w * y for x1, y1, x2, y2, ok1, ok2 in sides
                        for x, y, ok in ((x1, y1, ok1), (x2, y2, ok2)) if ok] for sides in self.hexsides]
            flat = [f for fs in per_aim for f in fs]
            low = min(flat) if flat else 0
            masks = []
            for fs in per_aim:
                m = 0
                for f in fs:
                    m |= 1 << (f - low)
                masks.append(m)
            got = self._sides_by_stride[w] = (low, tuple(masks))
        return got


def _symmetry(m: int, k: int) -> tuple[int, int, int, int]:
    """The hex grid symmetry "turn ``k`` times by +60 degrees, then mirror ``m`` times (0 or 1) in the sight frame's
    ``X`` axis" as an integer matrix ``(a, b, c, d)``: ``(q, r) -> (a q + b r, c q + d r)``.  The turn takes
    direction ``j`` to ``j + 1`` and vertex ``j`` to ``j + 1`` (cube ``(q, r, s) -> (-s, -q, -r)``); the mirror
    takes ``(q, r)`` to ``(q, s)``, vertex ``j`` to ``-j`` (mod 6)."""
    a, b, c, d = 1, 0, 0, 1
    for _ in range(k % 6):
        a, b, c, d = a + c, b + d, -a, -b
    if m:
        c, d = -a - c, -b - d
    return a, b, c, d


def _canonical_sides(sides: Iterable[tuple[int, int, int, int, bool, bool]]
                     ) -> tuple[tuple[int, int, int, int, bool, bool], ...]:
    """Hexsides ``(q1, r1, q2, r2, ok1, ok2)`` with each pair's hexes in ``(q, r)`` order, sorted; those where
    neither hex may block (``ok1`` and ``ok2`` false) left out, as they can never block."""
    out = set()
    for q1, r1, q2, r2, ok1, ok2 in sides:
        if not (ok1 or ok2):
            continue
        out.add((q1, r1, q2, r2, ok1, ok2) if (q1, r1) <= (q2, r2) else (q2, r2, q1, r1, ok2, ok1))
    return tuple(sorted(out))


@lru_cache(maxsize=4_000)
def _base_lines(dq: int, dr: int, origin: int | None) -> SightLines:
    """:class:`SightLines` computed directly (numpy): the one of each turn class of :func:`sight_lines`."""
    return SightLines(dq, dr, origin)


@lru_cache(maxsize=20_000)
def sight_lines(dq: int, dr: int, origin: int | None) -> SightLines:
    """The :class:`SightLines` from the firer's centre (``origin`` ``None``) or vertex ``origin`` to the hex
    ``(dq, dr)`` away (cached: a 25 x 25 battle needs a few thousand, each a few kB).

    The geometry is exact and the hex grid is symmetric under turns of 60 degrees and mirroring (in the sight frame
    these are affine maps, which keep which hexes a segment enters and which hexsides it runs along), so only one
    of the twelve images of ``(dq, dr)`` is computed (:func:`_base_lines`: the image smallest as a tuple) and the
    others are its hexes mapped back (:func:`_symmetry`), with the origin and aim vertices renumbered.
    ``tests/test_hexgrid.py`` checks this against the direct computation on every offset of a region and every
    origin."""
    best = None
    for m in (0, 1):
        q, r = (dq, -dq - dr) if m else (dq, dr)  # mirrored
        for k in range(6):
            if best is None or (q, r) < best[0]:
                best = ((q, r), m, k)
            q, r = -r, q + r  # turned by -60 degrees: the image of ``(dq, dr)`` turned ``k + 1`` times back
    assert best is not None
    (cq, cr), m, k = best
    if (m, k) == (0, 0):
        return _base_lines(dq, dr, origin)

    def vertex(v: int) -> int:  # the base's vertex that maps to vertex ``v``
        return ((-v if m else v) - k) % 6

    base = _base_lines(cq, cr, None if origin is None else vertex(origin))
    aims = tuple(0 if aim is None else 1 + vertex(aim) for aim in AIMS)  # the base's aim that maps to each aim
    return SightLines(dq, dr, origin, (base, _symmetry(m, k), aims))


def sight_footprint(dq: int, dr: int, origin: int | None, aim: int | None
                    ) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int, int, int, bool, bool], ...]]:
    """What can block one sight line, relative to the firer's hex at ``(0, 0)`` (the geometry is the same on every
    map and at every place, so it is computed once per line and shared; integers only).

    The line runs, in the sight frame (:func:`frame_centre`), from the firer's centre (``origin`` ``None``) or its
    vertex ``origin`` to the target hex ``(dq, dr)``'s centre (``aim`` ``None``) or its vertex ``aim``.  Returns
    ``(hexes, hexsides)``: ``hexes`` the offsets ``(q, r)`` of the hexes other than firer and target, within the
    sight ellipse (:func:`sight_ellipse`, slack 3), whose interior the closed segment enters
    (:func:`segment_enters_hex`); ``hexsides`` ``(q1, r1, q2, r2, ok1, ok2)`` for every hexside the segment runs
    along over a positive length (panzer_squadron.md 6.3 b) between two hexes of which at least one lies in the
    ellipse and is neither firer nor target -- ``ok1``/``ok2`` say which (a hex that is not may not block), each
    pair's hexes in ``(q, r)`` order, sorted (:func:`_canonical_sides`)."""
    lines = sight_lines(dq, dr, origin)
    i = AIMS.index(aim)
    return lines.hexes[i], lines.hexsides[i]


class _ObstacleGrid:
    """A set of obstacle hexes as one Python integer of bits over an axial bounding box (bit ``(q - q0) + w * (r -
    r0)``; row stride ``w``), big enough for the lines asked of it so far (:func:`count_clear_lines` grows it when a
    line falls outside)."""

    __slots__ = ("obstacles", "bits", "q0", "r0", "w", "h")

    def __init__(self, obstacles: Collection[tuple[int, int]], lo: tuple[int, int], hi: tuple[int, int]):
        self.obstacles = obstacles
        self.q0, self.r0 = lo
        # the row stride is a power of two, so that grids of one map share a stride (and the lines' masks per
        # stride, :meth:`SightLines.masks`) although their boxes differ
        self.w, self.h = 1 << (hi[0] - lo[0]).bit_length(), hi[1] - lo[1] + 1
        # the bits set in a byte array, then made one integer (not one big-integer ``|`` per obstacle)
        buf = bytearray((self.w * self.h + 7) // 8)
        q0, r0, w = self.q0, self.r0, self.w
        for q, r in obstacles:
            if lo[0] <= q <= hi[0] and lo[1] <= r <= hi[1]:
                i = (q - q0) + w * (r - r0)
                buf[i >> 3] |= 1 << (i & 7)
        self.bits = int.from_bytes(buf, "little")

    def covers(self, q1: int, r1: int, q2: int, r2: int) -> bool:
        return self.q0 <= q1 and self.r0 <= r1 and q2 < self.q0 + self.w and r2 < self.r0 + self.h


#: Obstacle grids of the obstacle sets seen last (by identity; a battle asks the same cached set many times).
_GRIDS: dict[int, _ObstacleGrid] = {}
#: Every hex a line from ``a`` to ``b`` can meet lies within this many hexes (axially) of the box of ``a``, ``b``.
_LINE_REACH = 3


def _grid_box(obstacles: Collection[tuple[int, int]], q1: int, r1: int, q2: int, r2: int
              ) -> tuple[tuple[int, int], tuple[int, int]]:
    """The axial box of ``obstacles`` and of ``(q1, r1)``-``(q2, r2)``: ``((q_lo, r_lo), (q_hi, r_hi))``."""
    if not obstacles:
        return (q1, r1), (q2, r2)
    qs = [h[0] for h in obstacles]
    rs = [h[1] for h in obstacles]
    return (min(q1, min(qs)), min(r1, min(rs))), (max(q2, max(qs)), max(r2, max(rs)))


def _grid_for(obstacles: Collection[tuple[int, int]], q1: int, r1: int, q2: int, r2: int) -> _ObstacleGrid:
    """The grid of ``obstacles`` covering the axial box ``(q1, r1)``-``(q2, r2)``: kept per ``frozenset`` (by
    identity, so a battle's cached obstacle set is gridded once per map version); any other collection, which
    may change between calls, gets a new grid each time."""
    if not isinstance(obstacles, frozenset):
        return _ObstacleGrid(obstacles, *_grid_box(obstacles, q1, r1, q2, r2))
    g = _GRIDS.get(id(obstacles))
    if g is not None and g.obstacles is obstacles and g.covers(q1, r1, q2, r2):
        return g
    lo, hi = _grid_box(obstacles, q1, r1, q2, r2)
    if g is not None and g.obstacles is obstacles:  # grow the old box, with room to spare
        lo = (min(lo[0], g.q0) - 8, min(lo[1], g.r0) - 8)
        hi = (max(hi[0], g.q0 + g.w - 1) + 8, max(hi[1], g.r0 + g.h - 1) + 8)
    elif _GRIDS:
        # a new set (the board's next version): take in the box the last grid grew to, when not much bigger, so
        # that the grids of one board keep one row stride (and the lines' masks made for it) instead of growing
        # through 32, 64, 128 again for each version
        last = _GRIDS[next(reversed(_GRIDS))]
        ulo, uhi = (min(lo[0], last.q0), min(lo[1], last.r0)), (max(hi[0], last.q0 + last.w - 1),
                                                                 max(hi[1], last.r0 + last.h - 1))
        if (uhi[0] - ulo[0] + 1) * (uhi[1] - ulo[1] + 1) <= 4 * (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) + 4096:
            lo, hi = ulo, uhi
    g = _ObstacleGrid(obstacles, lo, hi)
    if len(_GRIDS) >= 16:
        _GRIDS.pop(next(iter(_GRIDS)))
    _GRIDS.pop(id(obstacles), None)
    _GRIDS[id(obstacles)] = g
    return g


def count_clear_lines(firer: tuple[int, int], target: tuple[int, int], obstacles: Collection[tuple[int, int]],
                      origin: int | None = None, aims: Iterable[int | None] = AIMS,
                      hexside_blocks: str = "both") -> int:
    """How many of the sight lines from ``firer`` (its centre, or its vertex ``origin``) to the ``aims`` of
    ``target`` (``None`` = centre, ``k`` = vertex ``k``) no obstacle blocks (panzer_squadron.md 6.3): none enters
    the interior of an obstacle hex and none runs along a blocking hexside -- one between two obstacle hexes
    (``hexside_blocks`` ``both``) or next to one (``either``).  ``obstacles`` is a set of hexes; the firer's and
    target's own hexes never block.  Exact (integer geometry of :class:`SightLines`); the hexes of each line are
    tested at once as a bit mask against the obstacles' bits (:class:`_ObstacleGrid`), not one hex at a time.
    """
    fq, fr = firer
    tq, tr = target
    lines = sight_lines(tq - fq, tr - fr, origin)
    reach = _LINE_REACH
    g = _grid_for(obstacles, min(fq, tq) - reach, min(fr, tr) - reach, max(fq, tq) + reach, max(fr, tr) + reach)
    got = lines._by_stride.get(g.w)
    low, masks = got if got is not None else lines.masks(g.w)
    base = (fq - g.q0) + g.w * (fr - g.r0)
    near = g.bits >> (base + low)
    either = hexside_blocks != "both"
    clear = 0
    side_bits: int | None = None
    for i in (range(7) if aims is AIMS else [AIMS.index(aim) for aim in aims]):
        if near & masks[i]:
            continue
        sides = lines.hexsides[i]
        if not sides:
            clear += 1
            continue
        # no obstacle among the hexes beside the hexsides the line runs along: none of them blocks (a zero is
        # exact: every obstacle is in the grid at its own bit; a hex off the grid's box is no obstacle, and its
        # bit, which may alias another hex's, can only make the test fall through to the hexside loop below)
        slow, smasks = lines._sides_by_stride.get(g.w) or lines.side_masks(g.w)
        if side_bits is None:
            shift = base + slow
            side_bits = g.bits >> shift if shift >= 0 else g.bits << -shift
        if not side_bits & smasks[i]:
            clear += 1
            continue
        for x1, y1, x2, y2, ok1, ok2 in sides:
            o1 = ok1 and (fq + x1, fr + y1) in obstacles
            o2 = ok2 and (fq + x2, fr + y2) in obstacles
            if (o1 or o2) if either else (o1 and o2):
                break
        else:
            clear += 1
    return clear
