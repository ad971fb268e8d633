"""Ramming geometry for ``hummel_quest`` (docs/rules/hummel_quest.md §12.1, §12.3): the ram line, its
legality and the target's evasion options.

Units: hexes.
"""

from __future__ import annotations

from collections.abc import Mapping

from sim.hexgrid import Hex, bounded_dijkstra, distance, hex_line
from sim.rules.hummel_quest.board import HQBoard

# --- rams (§12.1) ---------------------------------------------------------------------------------------------------

def ram_line(a: tuple[int, int], t: tuple[int, int]) -> tuple[Hex, ...]:
    """Intermediate hexes of line A from the rammer to the target (both ends excluded), in order (§12.1)."""
    return hex_line(Hex(*a), Hex(*t))[1:-1]


def ram_legal(board: HQBoard, a: tuple[int, int], t: tuple[int, int], speed_hexes: int) -> bool:
    """Whether a tank at ``a`` with Speed ``speed_hexes`` may ram the tank at ``t`` by geometry (§12.1):
    ``H <= d <= S`` with ``H = ceil(S / 2)`` and every intermediate hex of line A on the map, passable and empty.
    The caller checks the rammer's state (not panicked, not incapacitated, not moved, S >= 1)."""
    s = speed_hexes
    if s < 1:
        return False
    d = distance(a, t)
    if not (-(-s // 2)) <= d <= s:
        return False
    return all(board.enterable(h) for h in ram_line(a, t))


def evade_options(board: HQBoard, t: tuple[int, int], max_steps: int) -> dict[Hex, tuple[int, list[Hex]]]:
    """Hexes the rammed tank at ``t`` may evade to (§12.3): 1..``max_steps`` steps in any direction through
    enterable (on-map, passable, empty) hexes of ``board``, ``{hex: (steps, path)}`` with ``path`` starting at
    ``t``.  The caller's ``board`` has the rammer on the hex it stands on at the check (the last intermediate hex
    of the ram line, its origin if adjacent): that hex is closed, every other hex of the line is open."""
    t = Hex(*t)
    if max_steps < 1:
        return {}
    succ = lambda h: [(n, 1) for n in h.neighbours() if board.enterable(n)]
    reach = bounded_dijkstra(t, succ, max_steps)
    return {h: (c, p) for h, (c, p) in reach.items() if h != t}


def evade_default(options: Mapping[Hex, tuple[int, list]], old: tuple[int, int]) -> Hex | None:
    """DECISION ``evade_default = farthest`` (§12.3): the option farthest from the old hex; ties fewer steps,
    lower q, lower r."""
    if not options:
        return None
    return min(options, key=lambda h: (-distance(h, old), options[h][0], h.q, h.r))
