"""Panzer Squadron sight and aspect: the seven-line test, partial protection, the masked side (panzer_squadron.md
sections 5.3, 6, 7; decisions D2, D8-D12).  Pure geometry over an ``is_obstacle(hex)`` predicate, exact integers and
fractions only.  Used by play (through :func:`shot_geometry`) and by the geometry golden cases alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Mapping

from sim.hexgrid import (
    FRONT,
    REAR,
    SIDE,
    Hex,
    aspect,
    count_clear_lines,
    distance,
    frame_centre,
    frame_vertex,
    in_arc,
    segment_enters_hex,
)

Obstacles = Collection[Hex]


@dataclass(frozen=True)
class SightRules:
    """The sight options of section 13: ``los_origin`` (``centre`` / ``front_vertex``), ``hexside_blocks``
    (``both`` / ``either``), ``max_range_hexes`` (``None`` = no maximum)."""

    los_origin: str = "centre"
    hexside_blocks: str = "both"
    max_range_hexes: int | None = None


def near_obstacles(obstacles: Obstacles, a: Hex, b: Hex) -> frozenset[Hex]:
    """Obstacles that a segment from ``a``'s hex to a point of ``b``'s hex can touch: hex-distance ellipse filter
    ``d(h, a) + d(h, b) <= d(a, b) + 3`` (a bounding pre-filter; exactness comes from the segment tests).
    ``a`` and ``b`` themselves are never included."""
    aq, ar = a
    bq, br = b
    lim = distance(a, b) + 3
    out = []
    for h in obstacles:
        q, r = h
        x, y = q - aq, r - ar
        u, v = q - bq, r - br
        if (max(abs(x), abs(y), abs(x + y)) + max(abs(u), abs(v), abs(u + v))) <= lim:
            out.append(h)
    return frozenset(out) - {a, b}


def blocking_hexsides(near: list[Hex], obstacle_set: Collection[Hex], hexside_blocks: str
                      ) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Hexsides (as sight-frame end points) that block a line running along them (6.3 b): both hexes obstacles
    (``both``) or at least one (``either``).  Each shared hexside is listed once."""
    out = []
    for h in near:
        for k in range(6):
            n = h.neighbour(k)
            if n in obstacle_set:
                if n < h:
                    continue  # listed from n's side (``obstacle_set`` is exactly the hexes of ``near``)
            elif hexside_blocks == "both":
                continue
            out.append((frame_vertex(h, k), frame_vertex(h, k + 1)))
    return out


def line_blocked(o, p, near: list[Hex], sides: list) -> bool:
    """Section 6.3: the closed segment ``o``-``p`` (sight frame) is blocked by the interior of an obstacle hex in
    ``near`` or by running, over a positive length, along one of the blocking hexsides ``sides``."""
    for h in near:
        if segment_enters_hex(o, p, h):
            return True
    ox, oy = o
    dx, dy = p[0] - o[0], p[1] - o[1]
    den = dx * dx + dy * dy
    for (ax, ay), (bx, by) in sides:
        if dx * (ay - oy) - dy * (ax - ox) or dx * (by - oy) - dy * (bx - ox):
            continue  # not collinear
        ta = (ax - ox) * dx + (ay - oy) * dy
        tb = (bx - ox) * dx + (by - oy) * dy
        if min(den, max(ta, tb)) > max(0, min(ta, tb)):
            return True
    return False


def clear_lines(firer: Hex, firer_facing: int, target: Hex, obstacles: Obstacles, rules: SightRules,
                prefiltered: bool = False) -> int:
    """Section 6.4: unblocked lines from the firer's origin to the target's centre and six vertices (0..7).
    Range 1 is always 7.  Counted by :func:`sim.hexgrid.count_clear_lines` over the translation-invariant line
    footprints shared by every map (the same count as :func:`line_blocked` over :func:`near_obstacles`, which
    stay as the reference; ``prefiltered`` is accepted for callers that pass that set already)."""
    if distance(firer, target) <= 1:
        return 7
    obs = obstacles if isinstance(obstacles, (set, frozenset)) else frozenset(obstacles)
    if not obs:
        return 7
    origin = firer_facing % 6 if rules.los_origin != "centre" else None
    return count_clear_lines(firer, target, obs, origin, hexside_blocks=rules.hexside_blocks)


def reference_clear_lines(firer: Hex, firer_facing: int, target: Hex, obstacles: Obstacles, rules: SightRules,
                          aims: tuple[int | None, ...] = (None, 0, 1, 2, 3, 4, 5), origin: int | None = None) -> int:
    """The seven-line test written out directly (:func:`near_obstacles`, :func:`blocking_hexsides`,
    :func:`line_blocked`; slow): the reference the footprint count is tested against.  ``origin`` ``None`` is the
    firer's centre, else its vertex ``origin``; ``aims`` ``None`` is the target's centre, ``k`` its vertex ``k``."""
    near = near_obstacles(obstacles, firer, target)
    cells = sorted(near)
    sides = blocking_hexsides(cells, near, rules.hexside_blocks)
    o = frame_centre(firer) if origin is None else frame_vertex(firer, origin)
    return sum(not line_blocked(o, frame_centre(target) if k is None else frame_vertex(target, k), cells, sides)
               for k in aims)


def face_vertices(face: str, facing: int) -> tuple[int, int, int]:
    """Target vertices of a face (7.2 step 3): front ``f-1, f, f+1``; rear ``f+2, f+3, f+4``."""
    if face == FRONT:
        return ((facing - 1) % 6, facing % 6, (facing + 1) % 6)
    return ((facing + 2) % 6, (facing + 3) % 6, (facing + 4) % 6)


def exceptional_lines(firer: Hex, firer_facing: int, target: Hex, target_facing: int, face: str,
                      obstacles: Obstacles, rules: SightRules) -> int:
    """7.2 step 3: unblocked lines from the firer's front point to the three vertices of ``face``."""
    obs = obstacles if isinstance(obstacles, (set, frozenset)) else frozenset(obstacles)
    return count_clear_lines(firer, target, obs, firer_facing % 6, face_vertices(face, target_facing),
                             rules.hexside_blocks)


def thicker(armour: Mapping[str, int], faces) -> str:
    """D2: the face with the higher armour; equal armour goes to the face nearer the front."""
    order = {FRONT: 0, SIDE: 1, REAR: 2}
    return sorted(faces, key=lambda f: (-armour[f], order[f]))[0]


def shot_geometry(firer: Hex, firer_facing: int, gun_facing: int, has_turret: bool, target: Hex,
                  target_facing: int, armour: Mapping[str, int], obstacles: Obstacles,
                  rules: SightRules = SightRules(), exceptional_modifier: int = -1, lines=None) -> dict:
    """Everything a shot's geometry decides (sections 5.3, 6, 7, 8 step 1) as a dict with the geometry golden-case
    keys: ``range``, ``range_bonus``, ``turret_rotation``, ``boundary``, ``side_masked``, ``clear_lines`` or the
    ``exceptional_*`` keys, ``los`` (clear / partial / blocked), ``shot_allowed``, and for allowed shots
    ``cover_modifier``, ``face``, ``armour``.  ``gun_facing`` is the turret facing (the hull facing if turretless);
    ``obstacles`` the obstacle hexes (the firer's and target's own hexes are ignored).  Adds ``reason`` when the
    shot is not allowed.  ``lines(firer, target)``, if given, replaces :func:`clear_lines` (a cache).

    The same dict as :func:`reference_shot_geometry` (``tests/test_ps_sight.py`` compares them), with the hex
    distance, the arc test (:func:`sim.hexgrid.in_arc`) and the aspect (:func:`sim.hexgrid.aspect`) written out:
    this is the computation behind every new shot of a battle."""
    fq, fr = firer
    dq, dr = target[0] - fq, target[1] - fr
    rng = max(abs(dq), abs(dr), abs(dq + dr))
    a, b, c = dq, dr, -dq - dr  # in_arc(firer, target, gun_facing): the cube vector turned by -60 x gun_facing
    for _ in range(gun_facing % 6):
        a, b, c = -b, -c, -a
    out: dict = {"range": rng, "range_bonus": 1 if rng <= 5 else 0, "turret_rotation": a < max(b, c)}
    a, b, c = -dq, -dr, dq + dr  # aspect(target, target_facing, firer)
    for _ in range(target_facing % 6):
        a, b, c = -b, -c, -a
    hi, lo = (b, c) if b >= c else (c, b)
    if a > hi or (a == b == c == 0):
        face, boundary = FRONT, False
    elif a == hi:
        face, boundary, cands0 = FRONT, True, (FRONT, SIDE)
    elif a < lo:
        face, boundary = REAR, False
    elif a == lo:
        face, boundary, cands0 = SIDE, True, (SIDE, REAR)
    else:
        face, boundary = SIDE, False
    out["boundary"] = boundary
    if boundary:
        face = thicker(armour, cands0)
    side_dir = ((target_facing + 1) % 6 if c > b else (target_facing + 4) % 6) if face == SIDE else None

    def count() -> int:
        if lines:
            return lines(firer, firer_facing, target)
        if rng <= 1:
            return 7
        obs = obstacles if isinstance(obstacles, (set, frozenset)) else frozenset(obstacles)
        return count_clear_lines(firer, target, obs, firer_facing % 6 if rules.los_origin != "centre" else None,
                                 hexside_blocks=rules.hexside_blocks) if obs else 7

    return _decide(out, rng, face, side_dir, a, has_turret, firer, firer_facing, target, target_facing, armour,
                   obstacles, rules, exceptional_modifier, count)


def reference_shot_geometry(firer: Hex, firer_facing: int, gun_facing: int, has_turret: bool, target: Hex,
                  target_facing: int, armour: Mapping[str, int], obstacles: Obstacles,
                  rules: SightRules = SightRules(), exceptional_modifier: int = -1, lines=None) -> dict:
    """The same dict as :func:`shot_geometry` (same arguments), with the helpers (:func:`sim.hexgrid.aspect`,
    :func:`sim.hexgrid.in_arc`, :func:`clear_lines`) called one by one: the reference that :func:`shot_geometry`,
    which writes them out, is tested against (``tests/test_ps_sight.py``)."""
    rng = distance(firer, target)
    out: dict = {"range": rng, "range_bonus": 1 if rng <= 5 else 0,
                 "turret_rotation": not in_arc(firer, target, gun_facing)}
    asp = aspect(target, target_facing, firer)
    out["boundary"] = asp.boundary
    face = thicker(armour, asp.candidates) if asp.boundary else asp.face
    side_dir = ((target_facing + 1) % 6 if asp.delta_sign > 0 else (target_facing + 4) % 6) if face == SIDE \
        else None
    return _decide(out, rng, face, side_dir, asp.a, has_turret, firer, firer_facing, target, target_facing, armour,
                   obstacles, rules, exceptional_modifier,
                   lambda: lines(firer, firer_facing, target) if lines
                   else clear_lines(firer, firer_facing, target, obstacles, rules))


def _decide(out: dict, rng: int, face: str, side_dir: int | None, a: int, has_turret: bool, firer: Hex,
            firer_facing: int, target: Hex, target_facing: int, armour: Mapping[str, int], obstacles: Obstacles,
            rules: SightRules, exceptional_modifier: int, count: Callable[[], int]) -> dict:
    """The part of :func:`shot_geometry` after the face is known (sections 7, 8 step 1): side masking
    (``side_dir`` the target's hexside beside the struck side, ``None`` unless the face is the side), the
    exceptional lines from the front point or the seven lines (``count()``), the cover modifier, range and hull-arc
    limits (``has_turret``: whether the gun may leave the hull arc).  ``a`` is the aspect's front component (its
    sign picks the exceptional faces).  Fills ``out`` and returns it."""
    masked = False
    if side_dir is not None:
        across = target.neighbour(side_dir)
        masked = across in (obstacles if isinstance(obstacles, (set, frozenset)) else set(obstacles)) \
            and across != firer
    out["side_masked"] = masked
    allowed = True
    reason = ""
    if masked:
        cands = [FRONT] if a > 0 else [REAR] if a < 0 else [FRONT, REAR]
        elines = {f: exceptional_lines(firer, firer_facing, target, target_facing, f, obstacles, rules)
                  for f in cands}
        passing = [f for f in cands if elines[f] >= 2]
        if passing:
            face = thicker(armour, passing)
        else:
            face = sorted(cands, key=lambda f: (-elines[f], -armour[f]))[0]
        out.update(exceptional_face=face, exceptional_clear_lines=elines[face], exceptional_legal=bool(passing))
        out["los"] = "partial" if passing else "blocked"
        cover = exceptional_modifier if passing else 0
        if not passing:
            allowed, reason = False, "masked side and fewer than 2 lines from the front point"
    else:
        n = count()
        out["clear_lines"] = n
        out["los"] = "clear" if n == 7 else "partial" if n >= 2 else "blocked"
        cover = -1 if 2 <= n <= 6 else 0
        if n <= 1:
            allowed, reason = False, f"no line of sight ({n} of 7 lines clear)"
    if allowed and rules.max_range_hexes is not None and rng > rules.max_range_hexes:
        allowed, reason = False, f"range {rng} exceeds the maximum {rules.max_range_hexes}"
    if allowed and out["turret_rotation"] and not has_turret:
        allowed, reason = False, "target outside the hull arc of a turretless vehicle"
    out["shot_allowed"] = allowed
    if allowed:
        out.update(cover_modifier=cover, face=face, armour=int(armour[face]))
    else:
        out["reason"] = reason
    return out


def turret_facing_for(firer: Hex, target: Hex, current: int) -> int:
    """5.3: the vertex whose arc contains the target reached in the fewest 60-degree steps from ``current``;
    ties go counter-clockwise."""
    best = None
    for steps, sign in sorted(((s, sg) for s in range(4) for sg in (1, -1)), key=lambda x: (x[0], -x[1])):
        f = (current + sign * steps) % 6
        if in_arc(firer, target, f):
            best = f
            break
    return current if best is None else best
