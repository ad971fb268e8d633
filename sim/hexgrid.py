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
from typing import Callable, Hashable, Iterable, Iterator, Mapping, NamedTuple, TypeVar

import networkx as nx


class Hex(NamedTuple):
    """An axial hex ``(q, r)``.  Equal to (and hashes like) the plain tuple ``(q, r)``."""

    q: int
    r: int

    @property
    def s(self) -> int:
        return -self.q - self.r

    def __add__(self, other: tuple[int, int]) -> "Hex":  # type: ignore[override]
        return Hex(self.q + other[0], self.r + other[1])

    def __sub__(self, other: tuple[int, int]) -> "Hex":
        return Hex(self.q - other[0], self.r - other[1])

    def neighbour(self, k: int) -> "Hex":
        """The neighbour across hexside ``k`` (0..5, any integer is taken mod 6)."""
        d = DIRECTIONS[k % 6]
        return Hex(self.q + d[0], self.r + d[1])

    def neighbours(self) -> tuple["Hex", ...]:
        return tuple(self.neighbour(k) for k in range(6))


#: Neighbour directions ``k = 0..5`` (hexside normals at ``30 + 60k`` degrees).
DIRECTIONS: tuple[Hex, ...] = (Hex(1, -1), Hex(0, -1), Hex(-1, 0), Hex(-1, 1), Hex(0, 1), Hex(1, 0))


def as_hex(value: Iterable[int]) -> Hex:
    """Coerce ``[q, r]`` / ``(q, r)`` to a :class:`Hex`."""
    q, r = value
    return Hex(int(q), int(r))


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Cube distance in hexes, O(1): ``max(|dq|, |dr|, |ds|)``."""
    dq = a[0] - b[0]
    dr = a[1] - b[1]
    return max(abs(dq), abs(dr), abs(dq + dr))


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


@lru_cache(maxsize=200_000)
def hex_line(a: tuple[int, int], b: tuple[int, int]) -> tuple[Hex, ...]:
    """Hexes on the segment between two centres, both ends included, in order from ``a`` to ``b``.

    Nudged cube interpolation (CONVENTIONS.md "Lines"); deterministic, cached for every map (pure geometry).
    """
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
    return [Hex(q, r) for q in range(width) for r in range(-(q // 2), -(q // 2) + height)]


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
    g = nx.Graph()
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

#: The terrain a sight rule reads for a cell that is not on the map: open ground (CONVENTIONS.md "Lines").
OFF_MAP_TERRAIN = "open"


class HexMap:
    """The board: a networkx graph with one node per cell ``(q, r)`` and edges to its six neighbours.

    Node attribute ``terrain`` holds the cell's terrain name (``"open"`` by default).  ``version`` is bumped by any
    terrain or obstacle change; :meth:`cached` stores dynamic answers under the current version.
    ``shape_key`` identifies the static shape, so static geometry can be shared across battles.
    """

    def __init__(self, cells: Iterable[tuple[int, int]], terrain: Mapping[tuple[int, int], str] | None = None,
                 *, shape_key: Hashable = None, description: str = ""):
        self.graph = nx.Graph()
        cells = [as_hex(c) for c in cells]
        self.graph.add_nodes_from(cells, terrain="open")
        cellset = set(cells)
        for h in cells:
            for k in (0, 4, 5):  # each undirected edge once
                n = h.neighbour(k)
                if n in cellset:
                    self.graph.add_edge(h, n)
        self._cells = frozenset(cellset)
        for h, t in (terrain or {}).items():
            self.graph.nodes[as_hex(h)]["terrain"] = t
        self.version = 0
        self.terrain_version = 0
        self._static: dict[Hashable, object] = {}
        self._static_version = 0
        self.shape_key = shape_key if shape_key is not None else ("cells", len(cells))
        self.description = description
        self._cache: dict[Hashable, object] = {}
        self._cache_version = 0
        self._forked = False

    def __contains__(self, h: object) -> bool:
        return h in self._cells

    def __iter__(self) -> Iterator[Hex]:
        return iter(sorted(self._cells))

    def __len__(self) -> int:
        return len(self._cells)

    @property
    def cells(self) -> frozenset[Hex]:
        return self._cells

    def terrain(self, h: tuple[int, int]) -> str:
        """Terrain name of ``h``; raises ``KeyError`` if off the map (movement and set-up must not ask)."""
        return self.graph.nodes[h]["terrain"]

    def sight_terrain(self, h: tuple[int, int]) -> str:
        """Terrain name of ``h`` for every sight, LOS, hindrance and cover rule: a cell off the map (a line between
        two hexes on the map may pass one, e.g. along a ``rectangle`` board's ragged edge) is open ground,
        :data:`OFF_MAP_TERRAIN`; never raises (CONVENTIONS.md "Lines")."""
        return self.graph.nodes[h]["terrain"] if h in self._cells else OFF_MAP_TERRAIN

    def set_terrain(self, h: tuple[int, int], name: str) -> None:
        """Change a cell's terrain and bump both versions (only ``events.apply`` should call this in a battle).
        A :meth:`fork` first takes its own copy of the graph and of the terrain cache (copy on write)."""
        if self._forked:
            self.graph = self.graph.copy()
            self._static = {}
            self._forked = False
        self.graph.nodes[h]["terrain"] = name
        self.terrain_version += 1
        self.bump()

    def terrain_cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Like :meth:`cached`, but kept until the *terrain* changes (not flushed by wrecks or other obstacles):
        for answers that depend on the static map only."""
        if self._static_version != self.terrain_version:
            self._static = {}  # a new dict: a fork may still share the old one
            self._static_version = self.terrain_version
        try:
            return self._static[key]  # type: ignore[return-value]
        except KeyError:
            v = self._static[key] = compute()
            return v

    def bump(self) -> None:
        self.version += 1

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Return the value cached under ``key`` for the current version, computing it on a miss."""
        if self._cache_version != self.version:
            self._cache = {}  # a new dict: forks made at the old version may still share the old one
            self._cache_version = self.version
        try:
            return self._cache[key]  # type: ignore[return-value]
        except KeyError:
            v = self._cache[key] = compute()
            return v

    def fork(self) -> "HexMap":
        """A copy of this map for a search copy of a battle (:mod:`sim.search`), made in O(cached answers).

        The fork shares the static graph and the terrain cache (:meth:`terrain_cached`) with this map until its
        own terrain changes (then :meth:`set_terrain` copies them first, so this map never sees the change).  It
        also shares the dynamic cache (:meth:`cached`) while both are at the version of the fork: answers cached
        there depend only on the key and on the obstacles of that version, which are the same on both boards;
        the first bump on either side gives that side a new cache.  The graph's node attributes other than
        ``terrain`` (a battle's ``tanks``) are the original battle's: a search copy keeps its own occupancy
        (``sim.search.SearchBattle``)."""
        new = object.__new__(HexMap)
        new.__dict__.update(self.__dict__)
        if self._cache_version != self.version:
            self._cache = {}
            self._cache_version = self.version
        new._cache = self._cache
        new._forked = True
        return new

    def neighbours(self, h: tuple[int, int]) -> list[Hex]:
        return [as_hex(n) for n in self.graph.neighbors(h)]

    def distance_field(self, sources: Iterable[tuple[int, int]], passable: Callable[[Hex], bool] | None = None,
                       passable_key: Hashable = None) -> dict[Hex, int]:
        """Steps from the nearest source over passable cells (networkx multi-source Dijkstra, unit weights).

        The passable graph is copied once and cached under ``passable_key`` (and the map version) when given."""
        if passable is None:
            g = self.graph
        elif passable_key is not None:
            g = self.cached(("passable_graph", passable_key),
                            lambda: self.graph.subgraph([h for h in self._cells if passable(h)]).copy())
        else:
            g = self.graph.subgraph([h for h in self._cells if passable(h)])
        srcs = [s for s in sources if s in g]
        if not srcs:
            return {}
        return {as_hex(k): v for k, v in nx.multi_source_dijkstra_path_length(g, srcs, weight=None).items()}


def bounded_dijkstra(start: T, successors: Callable[[T], Iterable[tuple[T, int]]], budget: int
                     ) -> dict[T, tuple[int, list[T]]]:
    """Cheapest paths from ``start`` in a rule set's state space within ``budget`` (integer costs).

    ``successors(state)`` yields ``(next_state, cost)`` with ``cost >= 0``; states must be hashable and orderable
    by their repr for determinism.  Returns ``{state: (cost, path)}`` where ``path`` starts with ``start``.
    The reachable part of the state graph is built lazily and searched with networkx's
    ``single_source_dijkstra`` with ``cutoff=budget``.
    """
    edges: dict[tuple[T, T], int] = {}
    frontier = [start]
    best = {start: 0}
    while frontier:
        nxt = []
        for u in frontier:
            bu = best[u]
            for v, c in successors(u):
                cost = bu + c
                if cost > budget:
                    continue
                e = (u, v)
                if c < edges.get(e, budget + 1):
                    edges[e] = c
                if cost < best.get(v, budget + 1):
                    best[v] = cost
                    nxt.append(v)
        frontier = nxt
    g = nx.DiGraph()
    g.add_node(start)
    g.add_weighted_edges_from((u, v, c) for (u, v), c in edges.items())
    dist, paths = nx.single_source_dijkstra(g, start, cutoff=budget, weight="weight")
    return {s: (dist[s], paths[s]) for s in dist}
