"""The flee move of a panicked tank in ``hummel_quest`` (docs/rules/hummel_quest.md §11.2, DECISION
``flee_algorithm = "sectors"``).

Units: hexes; sectors are 60-degree bearings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from sim.hexgrid import DIRECTIONS, Hex, distance
from sim.rules.hummel_quest.board import HQBoard

# --- flight (§11.2) -------------------------------------------------------------------------------------------------

#: Sector k (0..5) holds bearings [60k, 60k + 60): the cube components in decreasing order (§11.2 exact test).
_SECTOR_ORDER: tuple[tuple[int, int, int], ...] = (
    (0, 2, 1),  # 0: q > s > r
    (2, 0, 1),  # 1: s > q > r
    (2, 1, 0),  # 2: s > r > q
    (1, 2, 0),  # 3: r > s > q
    (1, 0, 2),  # 4: r > q > s
    (0, 1, 2),  # 5: q > r > s
)


def sectors_of(v: tuple[int, int]) -> tuple[int, ...]:
    """Sectors (§11.2) of the axial vector ``v`` (enemy minus fleeing tank): one sector, or the two beside an edge
    when two cube components are equal (the non-strict test admits exactly those two)."""
    q, r = v
    c = (q, r, -q - r)
    if c == (0, 0, 0):
        return ()
    return tuple(k for k, (i, j, m) in enumerate(_SECTOR_ORDER) if c[i] >= c[j] >= c[m])


@dataclass(frozen=True)
class FleePlan:
    """A flee move (§11.2): ``sector_counts`` by k, chosen ``direction`` and ``aim_hex`` (``None`` when no enemy is
    counted), ``path`` (hexes entered, in order), ``end_hex`` and ``left_map``."""

    sector_counts: tuple[int, ...]
    direction: int | None
    aim_hex: Hex | None
    path: tuple[Hex, ...]
    end_hex: Hex
    left_map: bool


def flee_plan(board: HQBoard, c: tuple[int, int], speed_hexes: int, enemies: Iterable[tuple[int, int]], *,
              leaves_map_at_edge: bool = True) -> FleePlan:
    """The flee move of a panicked tank at ``c`` with Speed ``speed_hexes`` from the counted ``enemies`` (§11.2).

    Direction: the sector with the fewest counted enemies; ties by the aim hex ``c + S * dir_k`` (largest minimum
    distance to an enemy, then largest sum, then lowest k).  Straight along ``dir_k`` if all S hexes are enterable;
    otherwise a breadth-first search over enterable hexes (neighbours in direction order, first predecessor kept) to
    the aim hex, or to the reached hex nearest to it (ties: fewer steps, lower q, lower r), cut to S steps.
    ``left_map`` (§11.2 item 6, with ``leaves_map_at_edge``): the move made at least one step and ends on an edge
    hex.  A flee of no step (boxed in, or the start hex is already the nearest to the aim) stays on its hex, on an
    edge hex too (§11.1: it remains in the same spot).
    """
    c = Hex(*c)
    es = [Hex(*e) for e in enemies]
    counts = [0] * 6
    for e in es:
        for k in sectors_of((e.q - c.q, e.r - c.r)):
            counts[k] += 1
    if not es:
        return FleePlan(tuple(counts), None, None, (), c, False)
    s = speed_hexes
    fewest = min(counts)

    def aim(k: int) -> Hex:
        d = DIRECTIONS[k]
        return Hex(c.q + s * d.q, c.r + s * d.r)

    eqr = [(e.q, e.r) for e in es]

    def rank(k: int) -> tuple[int, int, int]:
        aq, ar = aim(k)
        lo = total = 0
        for i, (q, r) in enumerate(eqr):   # ``distance(aim(k), e)`` inlined: the cube distance
            dq = aq - q
            dr = ar - r
            d = max(abs(dq), abs(dr), abs(dq + dr))
            total += d
            if i == 0 or d < lo:
                lo = d
        return (-lo, -total, k)

    k = min((k for k in range(6) if counts[k] == fewest), key=rank)
    a = aim(k)
    straight = tuple(Hex(c.q + i * DIRECTIONS[k].q, c.r + i * DIRECTIONS[k].r) for i in range(1, s + 1))
    if all(board.enterable(h) for h in straight):
        path = straight
    else:
        pred: dict[Hex, Hex] = {c: c}   # the start is its own predecessor: the walk back below stops there
        steps = {c: 0}
        queue = deque([c])
        # The search stops once the goal is known; the hexes reached by then have the full search's predecessors
        # and steps (the same order, cut short).  The aim reached: it is the goal.  An aim that is not enterable
        # is never reached, so no hex is nearer to it than 1: once a hex next to it is reached at s1 steps and
        # every hex of at most s1 steps is reached (a hex of s1 or more steps is being taken from the queue), any
        # hex reached later has more steps and loses the tie-break.
        aim_open = board.enterable(a)
        s1: int | None = None
        while queue:
            u = queue.popleft()
            su = steps[u]
            if s1 is not None and su >= s1:
                break
            for n in u.neighbours():
                if n not in pred and board.enterable(n):
                    pred[n] = u
                    steps[n] = su + 1
                    queue.append(n)
                    if n == a:
                        queue.clear()
                        break
                    if s1 is None and not aim_open and distance(n, a) == 1:
                        s1 = su + 1
        goal = a if a in pred else min(pred, key=lambda h: (distance(h, a), steps[h], h.q, h.r))
        rev = []
        h = goal
        while h != c:
            rev.append(h)
            h = pred[h]
        path = tuple(reversed(rev))[:s]
    end = path[-1] if path else c
    left = leaves_map_at_edge and bool(path) and board.is_edge(end)
    return FleePlan(tuple(counts), k, a, path, end, left)
