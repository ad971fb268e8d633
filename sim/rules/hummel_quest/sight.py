"""Sight on the hex graph for ``hummel_quest`` (docs/rules/hummel_quest.md §7.5, §7.6): lines A and B, and
visibility, half hard cover and direct shot between two hexes.

Units: hexes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sim.hexgrid import _NUDGE, Hex, hex_line
from sim.rules.hummel_quest.board import BLOCKS, HARD, TALL, HQBoard, SightGrid

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


def _interpolate(dq: int, dr: int) -> tuple[tuple[int, int], ...]:
    """The intermediate hexes of :func:`sim.hexgrid.hex_line` from ``(0, 0)`` to ``(dq, dr)`` (``n >= 2`` hexes
    apart), as offsets: the float operations of :func:`sim.hexgrid._hex_line_direct` from the origin
    (``hex_line``'s definition: ``a + (b - a) * t`` with ``t = i / n`` on the nudged cube coordinates, round half
    to even, then the cube-rounding fix of ``_cube_round``) in the same order on the same values, so the same
    hexes, without a call per hex (``abs`` written out: the same values)."""
    n = max(abs(dq), abs(dr), abs(dq + dr))
    ax, ay, az = _NUDGE   # ``_hex_line_direct``'s nudged ``a`` at the origin (``0 + nudge`` is the nudge)
    bx, by, bz = dq + _NUDGE[0], dr + _NUDGE[1], -dq - dr + _NUDGE[2]
    ex, ey, ez = bx - ax, by - ay, bz - az
    line: list[tuple[int, int]] = []
    add = line.append
    for i in range(1, n):
        t = i / n
        x, y, z = ax + ex * t, ay + ey * t, az + ez * t
        rx, ry, rz = round(x), round(y), round(z)
        fx, fy, fz = rx - x, ry - y, rz - z
        if fx < 0:
            fx = -fx
        if fy < 0:
            fy = -fy
        if fz < 0:
            fz = -fz
        if fx > fy and fx > fz:
            rx = -ry - rz
        elif fy > fz:
            ry = -rx - rz
        add((rx, ry))
    return tuple(line)


#: Entries of :func:`_line_offsets` made ahead: computing an offset's lines interpolates the line to minus the
#: offset too (line B is its negation), which with line A negated are that offset's lines; kept here until asked
#: (popped then), at most as many as the cache holds.
_MIRRORED: dict[tuple[int, int], tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] = {}


@lru_cache(maxsize=65_536)
def _line_offsets(dq: int, dr: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The intermediate hexes of lines A and B (:func:`line_pair`) from ``(0, 0)`` to ``(dq, dr)``, as offsets.

    :func:`sim.hexgrid.hex_line` is ``a`` plus the line from the origin to ``b - a`` (its definition), so
    ``line_pair(a, b)`` is ``a`` plus these offsets: line A is ``hex_line(0, d)``, line B is the negation of
    ``hex_line(0, -d)``.  Pure geometry, shared by every map; bounded (one entry per offset).

    Both lines are interpolated inline (:func:`_interpolate`; tests/test_hq_sight_lines.py compares them with
    ``hex_line`` on every offset of a region).  Minus the offset has the same two lines, swapped and negated
    (its line A is ``hex_line(0, -d)``, its line B the negation of ``hex_line(0, d)``): they are noted in
    :data:`_MIRRORED` and its entry is read from there (most sight pairs are asked both ways, issue 14)."""
    got = _MIRRORED.pop((dq, dr), None)
    if got is not None:
        return got
    if max(abs(dq), abs(dr), abs(dq + dr)) < 2:
        return ((), ())
    la = _interpolate(dq, dr)
    lm = _interpolate(-dq, -dr)
    na = tuple([(-q, -r) for q, r in la])
    nm = tuple([(-q, -r) for q, r in lm])
    if len(_MIRRORED) >= 65_536:
        _MIRRORED.clear()
    _MIRRORED[(-dq, -dr)] = (lm, na)
    return (la, nm)


@dataclass(frozen=True)
class Sight:
    """Sight from one hex to another (§7.5): ``visibility`` ``visible`` / ``partial`` / ``hidden``, ``half_cover``
    (target at least half behind hard cover: +1 TN, Reinforced Turret), ``direct_shot`` (not hidden), and
    ``tall_both`` (both lines cross a ``tall`` hex: Artillery Sights cannot locate, §7.6).  A value: the lines
    themselves are :func:`line_pair`'s."""

    visibility: str
    half_cover: bool
    direct_shot: bool
    tall_both: bool = False


#: The few distinct :class:`Sight` values, ``_SIGHTS[(visibility, half_cover, tall_both)]`` (one object each).
_SIGHTS: dict[tuple[str, bool, bool], Sight] = {
    (v, c, t): Sight(v, c, v != "hidden", t)
    for v, c in (("hidden", False), ("partial", True), ("visible", True), ("visible", False)) for t in (False, True)}


#: What a pair's lines cross, from the terrain alone: ``(fixed, check, covered, uncovered)``.  ``fixed`` is the
#: answer when no tank can change it, else ``None``: then the answer is ``covered`` if a tank stands on one of the
#: ``check`` hexes (the last intermediate hex of a line, whose hard cover a tank gives when ``tanks_give_cover``),
#: else ``uncovered``.
Crossed = tuple[Sight | None, tuple[Hex, ...], Sight, Sight]


@lru_cache(maxsize=65_536)
def _line_steps(dq: int, dr: int, span: int, los_rule: str
                ) -> tuple[tuple[int, int, int, tuple[int, int] | None], ...]:
    """Per line (A, and B under ``two_lines``) from ``(0, 0)`` to ``(dq, dr)``: its intermediate hexes
    (:func:`_line_offsets`) as :class:`~sim.rules.hummel_quest.board.SightGrid` index steps (``q * span + r``,
    for a grid of row length ``span``): ``(lo, mask, last, last_offset)`` -- the lowest step, the steps as the
    bits of ``mask`` counted from ``lo`` (bit ``k - lo`` for step ``k``), the last intermediate hex's step and
    offset (``None`` when the ends are adjacent; ``lo``, ``mask``, ``last`` are then 0)."""
    oa, ob = _line_offsets(dq, dr)
    out = []
    for off in ((oa,) if los_rule == "one_line" else (oa, ob)):
        st = [q * span + r for q, r in off]
        lo = min(st, default=0)
        mask = 0
        for k in st:   # the steps as the bits counted from ``lo``
            mask += 1 << (k - lo)
        out.append((lo, mask, st[-1] if st else 0, off[-1] if off else None))
    return tuple(out)


def _crossed(board: HQBoard, frm: tuple[int, int], to: tuple[int, int], los_rule: str) -> Crossed:
    """What the lines of ``frm``-``to`` cross, from the terrain flags alone (see :data:`Crossed`); the tanks on
    the last intermediate hexes are read per call (tanks move, terrain flags change only with the terrain).

    Whether a line crosses a hex that blocks sight (or is tall) is ``(grid.blocks_mask >> (i + lo)) & mask``
    with ``i`` the shooter's index: the line's hexes as bits, shifted to the shooter."""
    grid = board.sight_grid()
    aq, ar = frm[0], frm[1]
    steps = _line_steps(to[0] - aq, to[1] - ar, grid.span, los_rule)
    i, j = grid.index(frm), grid.index(to)
    nb = 0
    tall_all = True
    check: list[Hex] = []
    if i is not None and j is not None:
        buf = grid.bits
        blocks, tall = grid.blocks_mask, grid.tall_mask
        hard = buf[j] & HARD   # the target's own hex has hard cover
        for lo, mask, last, last_off in steps:
            if (blocks >> (i + lo)) & mask:
                nb += 1
            if not (tall >> (i + lo)) & mask:
                tall_all = False
            if last_off is not None:
                if buf[i + last] & HARD:
                    hard = HARD
                else:
                    check.append(Hex(aq + last_off[0], ar + last_off[1]))
    else:   # an end off the grid's box (a golden case may ask): hex by hex
        hard = grid.at(to) & HARD
        oa, ob = _line_offsets(to[0] - aq, to[1] - ar)
        for off in ((oa,) if los_rule == "one_line" else (oa, ob)):
            acc = 0
            lb = 0
            for q, r in off:
                lb = grid.at((aq + q, ar + r))
                acc |= lb
            if acc & BLOCKS:
                nb += 1
            if not acc & TALL:
                tall_all = False
            if off:
                if lb & HARD:
                    hard = HARD
                else:
                    check.append(Hex(aq + off[-1][0], ar + off[-1][1]))
    if nb == len(steps):
        hidden = _SIGHTS[("hidden", False, tall_all)]
        return hidden, (), hidden, hidden
    if nb:   # two_lines, one line blocked
        partial = _SIGHTS[("partial", True, tall_all)]
        return partial, (), partial, partial
    covered = _SIGHTS[("visible", True, tall_all)]
    if hard:
        return covered, (), covered, covered
    return None, tuple(check), covered, _SIGHTS[("visible", False, tall_all)]


def direct_shot(grid: SightGrid, frm: tuple[int, int], to: tuple[int, int], los_rule: str) -> bool | None:
    """``crossed(board, frm, to, los_rule)[2].direct_shot`` for a board whose :meth:`HQBoard.sight_grid` is
    ``grid``, without building the entry: not every line (A, and B under ``two_lines``) crosses a hex that blocks
    sight (§7.5; tanks never block it).  ``None`` when an end lies off the grid's unpadded box (then ask
    :func:`crossed`, which reads such lines hex by hex).  The same masks and steps as :func:`_crossed`, so the
    same answer; pure terrain, nothing cached here."""
    i = grid.index(frm)
    if i is None or grid.index(to) is None:
        return None
    blocks = grid.blocks_mask
    for lo, mask, _last, _off in _line_steps(to[0] - frm[0], to[1] - frm[1], grid.span, los_rule):
        if not (blocks >> (i + lo)) & mask:
            return True
    return False


def crossed(board: HQBoard, frm: tuple[int, int], to: tuple[int, int], los_rule: str) -> Crossed:
    """What the lines of ``frm``-``to`` cross (:data:`Crossed`), from ``board.sight_memo`` under
    ``(frm, to, los_rule)`` when it holds it: the entry reads only the terrain flags of the lines' hexes
    (:meth:`HQBoard.sight_grid`), which the memo's owner renews with the terrain.  Whether the shot is direct
    (``[2].direct_shot``) never depends on the tanks (they do not block sight, §7.5)."""
    memo = board.sight_memo
    if memo is None:
        return _crossed(board, frm, to, los_rule)
    key = (frm, to, los_rule)
    ent = memo.get(key)
    if ent is None:
        ent = memo[key] = _crossed(board, frm, to, los_rule)
    return ent


def sight(board: HQBoard, frm: Hex, to: Hex, *, los_rule: str = "two_lines",
          tanks_give_cover: bool = True) -> Sight:
    """Visibility and half hard cover from ``frm`` to ``to`` (§7.5), tanks never blocking sight.

    ``two_lines``: both lines blocked -> hidden; one -> partial (direct shot, half cover); none -> visible, with half
    cover if a line is covered (its last intermediate hex has ``hard_cover`` or holds a tank when
    ``tanks_give_cover``) or the target's own hex has ``hard_cover``.  ``one_line``: line A only, blocked = hidden.

    What the lines cross is kept in ``board.sight_memo`` (:func:`crossed`); the occupancy of the two last hexes
    is read per call.
    """
    fixed, check, covered, uncovered = crossed(board, frm, to, los_rule)
    if fixed is not None:
        return fixed
    if tanks_give_cover:
        for h in check:
            if board.occupied(h):
                return covered
    return uncovered
