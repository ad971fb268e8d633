"""Geometry of a shot on the hex grid for the ``asl`` rule set (docs/rules/asl.md 7 and 11): Target
Facing (C3.9, D3.2), covered-arc turns (C3.2, C5.1), LOS hexsides and hull-down (D4.2), and the geometry
golden cases (asl.md 11).

Units: hexes, hexspines (60-degree vertex turns).
"""

from __future__ import annotations

from typing import Any, Mapping

from sim.hexgrid import FRONT, SIDE, Hex, as_hex, aspect, cube_vector, distance, rotate_cube
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
