"""Sight on the hex graph for ``hummel_quest`` (docs/rules/hummel_quest.md §7.5, §7.6): lines A and B, and
visibility, half hard cover and direct shot between two hexes.

Units: hexes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.hexgrid import Hex, hex_line
from sim.rules.hummel_quest.board import HQBoard

# --- sight (§7.5, §7.6) ------------------------------------------------------------------------------------------

def line_pair(a: tuple[int, int], b: tuple[int, int]) -> tuple[tuple[Hex, ...], tuple[Hex, ...]]:
    """Lines A and B of §7.5 from ``a`` to ``b`` (both ends included).

    Line A is :func:`sim.hexgrid.hex_line` (nudge ``(+1e-6, +2e-6, -3e-6)``).  Line B has the opposite nudge; it is
    computed as the negation of line A between the negated end hexes, which is the same floating-point computation
    with the sign of every term flipped (cube rounding is symmetric under negation), so it reuses the cached line.
    """
    la = hex_line(Hex(*a), Hex(*b))
    lb = tuple(Hex(-h.q, -h.r) for h in hex_line(Hex(-a[0], -a[1]), Hex(-b[0], -b[1])))
    return la, lb


@dataclass(frozen=True)
class Sight:
    """Sight from one hex to another (§7.5): ``visibility`` ``visible`` / ``partial`` / ``hidden``, ``half_cover``
    (target at least half behind hard cover: +1 TN, Reinforced Turret), ``direct_shot`` (not hidden), and
    ``tall_both`` (both lines cross a ``tall`` hex: Artillery Sights cannot locate, §7.6)."""

    visibility: str
    half_cover: bool
    direct_shot: bool
    tall_both: bool = False
    lines: tuple[tuple[Hex, ...], ...] = ()


def _crossed(board: HQBoard, frm: Hex, to: Hex, los_rule: str
             ) -> tuple[tuple[tuple[Hex, ...], ...], list[bool], list[bool], list[tuple[Hex | None, bool]], bool]:
    """What the lines of ``frm``-``to`` cross, from the terrain flags alone: ``(lines, blocked, tall, lasts,
    own)`` -- per line whether an intermediate hex blocks sight or is tall, and its last intermediate hex with
    whether that has hard cover; ``own``: the target hex has hard cover.  (Whether a tank stands on a last hex is
    read per call: tanks move, terrain flags change only with the terrain.)"""
    la, lb = line_pair(frm, to)
    lines = (la,) if los_rule == "one_line" else (la, lb)
    blocked = []
    tall = []
    lasts: list[tuple[Hex | None, bool]] = []
    for ln in lines:
        mid = ln[1:-1]
        fl = [board.flags(h) for h in mid]
        blocked.append(any(f.blocks_los for f in fl))
        tall.append(any(f.tall for f in fl))
        lasts.append((mid[-1], fl[-1].hard_cover) if mid else (None, False))
    return lines, blocked, tall, lasts, board.flags(to).hard_cover


def sight(board: HQBoard, frm: Hex, to: Hex, *, los_rule: str = "two_lines",
          tanks_give_cover: bool = True) -> Sight:
    """Visibility and half hard cover from ``frm`` to ``to`` (§7.5), tanks never blocking sight.

    ``two_lines``: both lines blocked -> hidden; one -> partial (direct shot, half cover); none -> visible, with half
    cover if a line is covered (its last intermediate hex has ``hard_cover`` or holds a tank when
    ``tanks_give_cover``) or the target's own hex has ``hard_cover``.  ``one_line``: line A only, blocked = hidden.
    """
    memo = board.sight_memo
    key = (frm, to, los_rule)
    crossed = memo.get(key) if memo is not None else None
    if crossed is None:
        crossed = _crossed(board, frm, to, los_rule)
        if memo is not None:
            memo[key] = crossed
    lines, blocked, tall, lasts, own = crossed
    covered = [last is not None and (hard or (tanks_give_cover and board.occupied(last))) for last, hard in lasts]
    nb = sum(blocked)
    if los_rule == "one_line":
        if nb:
            return Sight("hidden", False, False, all(tall), lines)
        return Sight("visible", covered[0] or own, True, all(tall), lines)
    if nb == 2:
        return Sight("hidden", False, False, all(tall), lines)
    if nb == 1:
        return Sight("partial", True, True, all(tall), lines)
    return Sight("visible", any(covered) or own, True, all(tall), lines)
