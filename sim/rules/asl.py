"""Rule set ``asl``: ASL Chapter C ordnance fired by fully-tracked, closed-topped AFVs at AFVs (docs/rules/asl.md).

Scope (asl.md 1): main-armament AP, APCR, APDS, HEAT and HE against the Vehicle Target Type; To Hit (C3, C4, the
TH DRM of 6.3), critical, improbable and Multiple Hits, ROF, malfunction, special-ammo depletion, acquisition, hit
location and Target Facing on the hex grid, hull-down, the To Kill tables with Cases A, C and D, the AFV
Destruction Table's Direct Fire column, Shock, Immobilization, wrecks, crew checks, and a simplified sequence of
play.  Out of scope, and rejected or ignored: Infantry, Guns, SW, LATW, MG/ATR/IFE armament, unarmored,
open-topped and partially armored vehicles (rejected at catalog load), CE crews, mines, DC, aircraft, FT/MOL,
OBA, SMOKE/WP, canister, Intensive Fire, Gun Duels, Deliberate Immobilization, Bore Sighting, concealment/HIP,
Armor Leaders, elevation (hull-down comes only from the scenario), Bypass, ESB, Platoon Movement, OVR, night,
weather.

The exact math lives in :mod:`sim.rules.asl_odds` (staged odds and the dice resolution sharing its stage
functions) and the chart data in :mod:`sim.rules.asl_tables`.  This module holds the :class:`ASL` rule-set object:
catalog, options, geometry (Target Facing, CA, hull-down, Case L), golden cases and play.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Hashable, Literal, Mapping

from pydantic import field_validator

from sim.dice import FixedDice
from sim.hexgrid import FRONT, REAR, SIDE, Hex, as_hex, aspect, distance, rotate_cube, cube_vector
from sim.rules import asl_odds, asl_tables
from sim.rules.asl_odds import (DEFAULT_PREFERENCE, ShotKey, case_a_drm, case_l_drm, odds_json, parse_params,
                                resolve_key, shot_odds)
from sim.rules.base import CaseError, Odds, RulesOptions, Ruleset, fraction_str

__all__ = ["ASL", "Options", "target_face", "ca_turns", "hull_down_hexsides", "los_hexsides"]


# ==============================================================================================================
# Options (asl.md 12)
# ==============================================================================================================

class Options(RulesOptions):
    """Scenario ``ruleset_options`` of asl.md section 12, with their defaults.

    ``first_side`` (side index ATTACKER in the first Player Turn; ``None`` = the scenario's), ``elite`` per side
    (+1 Depletion, C8.2) and ``date`` (scenario date ``"YYYY"`` or ``"YYYY-MM"`` for the Depletion schedule,
    DECISION: the spec names a scenario date but no field; default ``"1941"``) complete the list.
    """

    hex_size_m: int = 40
    first_side: int | None = None
    crew_status: Literal["bu"] = "bu"
    final_fire_after_first: Literal["none"] = "none"
    obstacle_entry: Literal["bog", "forbidden"] = "bog"
    mechanical_reliability: bool = True
    same_hex_entry: bool = False
    burning_wreck_los: Literal["block", "hinder"] = "block"
    case_r_visibility: Literal["ignore"] = "ignore"
    case_d_calibre_rows: Literal["chart"] = "chart"
    case_d_na: Literal["no_tk_dr"] = "no_tk_dr"
    multiple_hits: bool = True
    multiple_hit_preference: tuple[str, ...] = DEFAULT_PREFERENCE
    multiple_hits_from_original_2: Literal[False] = False
    malfunction: bool = True
    red_cs_burn_needs_kill: bool = True
    crew_checks: bool = True
    missing_data: Literal["defaults_with_warning", "strict"] = "defaults_with_warning"
    depletion_schedule: Literal["last_entry_continues"] = "last_entry_continues"
    elite: tuple[bool, ...] = (False, False)
    date: str = "1941"

    @field_validator("multiple_hit_preference")
    @classmethod
    def _order(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if sorted(v) != sorted(DEFAULT_PREFERENCE):
            raise ValueError(f"multiple_hit_preference must order exactly {', '.join(DEFAULT_PREFERENCE)}")
        return tuple(v)

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        asl_tables._date_key(v)
        return str(v)


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
# The rule set
# ==============================================================================================================

_OUTCOME_KEYS = ("result", "hit", "location", "face", "critical", "improbable", "multiple", "second_location",
                 "second_result", "final_th_dr", "modified_th", "drm", "final_tk", "fired", "rof_again",
                 "malfunction", "special_ammo_left", "crew_survives", "abandoned", "ntc_shocked")


class ASL(Ruleset):
    """The ``asl`` rule set (asl.md).  Stateless apart from caches; one instance serves many battles."""

    name = "asl"
    Options = Options

    # --- catalog ---------------------------------------------------------------------------------------------
    def vehicle(self, vid: str) -> asl_tables.Vehicle:
        """The catalog record ``vid`` (``sim_vehicles``, missing data defaulted with a warning, asl.md 3.2);
        raises ``KeyError`` for an unknown id."""
        try:
            return asl_tables.catalog()[vid]
        except KeyError:
            raise KeyError(f"unknown asl vehicle {vid!r}; known: {', '.join(self.vehicle_ids())}") from None

    def vehicle_ids(self) -> tuple[str, ...]:
        return tuple(asl_tables.catalog())

    def has_turret(self, vehicle: Any) -> bool:
        """True unless the vehicle is NT (D1.31)."""
        return getattr(vehicle, "turret_type", "T") != "NT"

    def terrain_names(self) -> tuple[str, ...]:
        return tuple(asl_tables.terrain_tables().classes)

    # --- odds ------------------------------------------------------------------------------------------------
    def odds(self, key: Hashable) -> Odds:
        """Exact odds of a :class:`~sim.rules.asl_odds.ShotKey` (cached, staged; asl.md 10)."""
        if not isinstance(key, ShotKey):
            key = parse_params(dict(key))  # type: ignore[arg-type]
        v = shot_odds(key)
        return Odds(p_hit=v["p_hit"], p_kill=v["p_kill"], values=v)

    def odds_from_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``tanksim odds asl name=value ...``: the JSON object of asl.md 10.2 (fractions as strings).

        Raises :class:`~sim.rules.base.CaseError` for unknown names or malformed values."""
        return odds_json(parse_params(params))

    def run_case(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate one golden case of kind ``odds``, ``outcome`` or ``geometry`` (asl.md 11)."""
        kind = case.get("kind")
        given = dict(case.get("given") or {})
        if kind == "odds":
            return self.odds_from_params(given)
        if kind == "outcome":
            if "dice" not in given:
                raise CaseError("an outcome case needs given.dice")
            dice = FixedDice([int(x) for x in given.pop("dice")])
            res = resolve_key(parse_params(given), dice)
            dice.check_done()
            return {k: res[k] for k in _OUTCOME_KEYS}
        if kind == "geometry":
            return geometry_case(given)
        raise CaseError(f"unknown case kind {kind!r}; expected odds, outcome or geometry")
