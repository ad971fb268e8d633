"""Exact ASL shot odds, composed in stages, and the dice resolution that rolls the very same stages.

asl.md sections 6-10.  A shot is described by a :class:`ShotKey` (the odds parameters of section 10.1, with
defaults filled in: hashable primitives only).  The odds are **composed in stages**, never a product of all dice:

1. **To Hit** (C3.3, C3.6-C3.9, C8.9, C2.24, D3.7): each of the 36 (coloured, white) TH DRs, plus the subsequent
   dr where section 6.4 calls for one, is classified by :func:`th_stage` into a :class:`ToHit` class (fired, hit,
   location, CH, improbable, Multiple Hits, Case E facing, ROF, malfunction, depletion).  Equal classes are merged.
2. **To Kill** (C7.2-C7.7): per hit class, a Final TK# per location/facing (:func:`final_tk`), then the result
   distribution over the 36 TK DRs (:func:`tk_result`, cached per Final TK#), the second TK DR of Multiple Hits
   (C3.8) and the optional crew check (D5.5, D5.6, C7.41).

:func:`resolve_key` rolls the same stage functions with a :class:`~sim.dice.DiceSource`; the tests check that
summing it over every fixed dice sequence gives :func:`shot_odds` exactly.

Units: ranges in hexes, MP in MP (``Fraction`` for halves), probabilities as ``Fraction``.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Hashable, Mapping, NamedTuple, cast

from sim.dice import DiceSource
from sim.messages import did_you_mean
from sim.rules.asl.tables import (
    AMMO_TYPES,
    COLOURS,
    SIZES,
    TURRET_TYPES,
    Gun,
    TableError,
    parse_gun,
    to_hit_tables,
    to_kill_tables,
)
from sim.rules.base import CaseError, flag_value, fraction_str, parse_fraction

#: Result names of a TK DR (asl.md 8.2) and of a TH DR that did not hit.
RESULTS = ("burn", "elim", "immobilized", "shocked", "possible_shock", "dud", "no_effect")
#: DECISION ``multiple_hit_preference`` default: the firer keeps the first of these (C3.8).
DEFAULT_PREFERENCE = ("burn", "elim", "shocked", "immobilized", "possible_shock", "no_effect", "dud")
FACES = ("front", "side", "rear")
FIRER_MOVED = ("none", "afph", "bounding_afph", "bounding_first", "motion")
TARGET_STATES = ("stationary", "stopped", "moving")
GIVEN_HITS = ("hull", "turret", "hull_ch", "turret_ch")
_SIXTH = Fraction(1, 6)
_DIE = range(1, 7)
_PAIRS = tuple((c, w) for c in _DIE for w in _DIE)


# ==============================================================================================================
# The key: odds parameters (asl.md 10.1), normalised
# ==============================================================================================================

@dataclass(frozen=True)
class ShotKey:
    """The odds primitives of one shot (asl.md 10.1), every default filled in; hashable.

    AF values are the four facings after ``af_hull`` / ``af_turret`` and the turret-defaults-to-hull rule
    (``None`` = not given).  ``turret_aspect`` is resolved (``aspect`` if not given).  MP counts are
    ``Fraction`` (half MPs).  The last four fields are extensions beyond 10.1 that play needs (see
    :func:`parse_params`): ``target_shocked`` (CS DR +1, no Immobilization TC), and the options ``malfunction``,
    ``red_cs_burn_needs_kill`` and ``multiple_hit_preference``.
    """

    gun: str | None = None
    nationality: str | None = None
    ammo: str = "AP"
    basic_tk: int | None = None
    colour: str = "black"
    range_hexes: int | None = None
    turret_type: str = "T"
    ca_change: int = 0
    firer_obstacle: bool = False
    firer_moved: str = "none"
    firer_los_mp: Fraction | None = None
    gyro: bool = False
    bu: bool = True
    firer_plus1: bool = False
    target_state: str = "stationary"
    target_los_mp: Fraction | None = None
    acquisition: int = 0
    size: str = "average"
    tem: int = 0
    hindrance: int = 0
    th_drm: int = 0
    hull_down: bool = False
    aspect: str = "front"
    turret_aspect: str = "front"
    af_hull_front: int | None = None
    af_hull_side: int | None = None
    af_turret_front: int | None = None
    af_turret_side: int | None = None
    depletion: int | None = None
    rof: int = 0
    breakdown: int = 12
    multiple_hits: bool = True
    cs_red: bool = False
    cs: int | None = None
    crew_morale: int | None = None
    target_plus1: bool = False
    final_tk: int | None = None
    given_hit: str | None = None
    target_shocked: bool = False
    malfunction: bool = True
    red_cs_burn_needs_kill: bool = True
    multiple_hit_preference: tuple[str, ...] = DEFAULT_PREFERENCE

    @property
    def mode(self) -> str:
        """``"shot"`` (full shot), ``"final_tk"`` or ``"given_hit"`` (the two TK-only modes)."""
        if self.final_tk is not None:
            return "final_tk"
        if self.given_hit is not None:
            return "given_hit"
        return "shot"

    def as_params(self) -> dict[str, Any]:
        """The non-default parameters as plain values (JSON-able); ``parse_params`` of it gives this key back."""
        out: dict[str, Any] = {}
        default = _DEFAULT_KEY
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v == getattr(default, f.name) and f.name != "turret_aspect":
                continue
            if f.name == "turret_aspect" and v == self.aspect:
                continue
            if isinstance(v, Fraction):
                v = fraction_str(v)
            elif isinstance(v, tuple):
                v = ",".join(v)
            out[f.name] = v
        return out


_DEFAULT_KEY = ShotKey()


# --- parameter parsing ----------------------------------------------------------------------------------------

def _s(name: str, v: Any) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, (list, dict)):
        raise CaseError(f"parameter {name}={v!r}: expected a word")
    return str(v).strip()


def _int(name: str, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool):
        raise CaseError(f"parameter {name}={v!r}: expected an integer")
    if isinstance(v, int):
        n = v
    else:
        try:
            n = int(str(v).strip())
        except ValueError:
            raise CaseError(f"parameter {name}={v!r}: expected an integer") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise CaseError(f"parameter {name}={n}: out of range [{lo}, {hi if hi is not None else '...'}]")
    return n


def _bool(name: str, v: Any) -> bool:
    b = flag_value(v)
    if b is None:
        raise CaseError(f"parameter {name}={v!r}: expected true or false")
    return b


def _choice(name: str, v: Any, choices: tuple[str, ...]) -> str:
    t = _s(name, v)
    if t not in choices:
        raise CaseError(f"parameter {name}={t!r}: expected one of {', '.join(choices)}")
    return t


def _mp(name: str, v: Any) -> Fraction:
    if isinstance(v, bool):
        raise CaseError(f"parameter {name}={v!r}: expected a number of MP")
    try:
        x = parse_fraction(str(v))
    except (ValueError, ZeroDivisionError):
        raise CaseError(f"parameter {name}={v!r}: expected a number of MP (e.g. 2, 2.5, 5/2)") from None
    if x < 0:
        raise CaseError(f"parameter {name}={v!r}: MP cannot be negative")
    return x


_PARSERS = {
    "gun": lambda n, v: _s(n, v),
    "nationality": lambda n, v: _s(n, v).lower(),
    "ammo": lambda n, v: _choice(n, _s(n, v).upper(), AMMO_TYPES),
    "basic_tk": lambda n, v: _int(n, v),
    "colour": lambda n, v: _choice(n, v, COLOURS),
    "range_hexes": lambda n, v: _int(n, v, 0),
    "turret_type": lambda n, v: _choice(n, _s(n, v).upper(), TURRET_TYPES),
    "ca_change": lambda n, v: _int(n, v, 0, 3),
    "firer_obstacle": _bool,
    "firer_moved": lambda n, v: _choice(n, v, FIRER_MOVED),
    "firer_los_mp": _mp,
    "gyro": _bool,
    "bu": _bool,
    "firer_plus1": _bool,
    "target_state": lambda n, v: _choice(n, v, TARGET_STATES),
    "target_los_mp": _mp,
    "acquisition": lambda n, v: _int(n, v, 0, 2),
    "size": lambda n, v: _choice(n, v, SIZES),
    "tem": lambda n, v: _int(n, v),
    "hindrance": lambda n, v: _int(n, v, 0),
    "th_drm": lambda n, v: _int(n, v),
    "hull_down": _bool,
    "aspect": lambda n, v: _choice(n, v, FACES),
    "turret_aspect": lambda n, v: _choice(n, v, FACES),
    "af_hull_front": lambda n, v: _int(n, v, 0),
    "af_hull_side": lambda n, v: _int(n, v, 0),
    "af_turret_front": lambda n, v: _int(n, v, 0),
    "af_turret_side": lambda n, v: _int(n, v, 0),
    "af_hull": lambda n, v: _int(n, v, 0),
    "af_turret": lambda n, v: _int(n, v, 0),
    "depletion": lambda n, v: _int(n, v, 0),
    "rof": lambda n, v: _int(n, v, 0, 6),
    "breakdown": lambda n, v: _int(n, v, 2, 13),
    "multiple_hits": _bool,
    "cs_red": _bool,
    "cs": lambda n, v: _int(n, v),
    "crew_morale": lambda n, v: _int(n, v),
    "target_plus1": _bool,
    "final_tk": lambda n, v: _int(n, v),
    "given_hit": lambda n, v: _choice(n, v, GIVEN_HITS),
    # extensions (asl.md is silent; play needs them): see parse_params
    "target_shocked": _bool,
    "malfunction": _bool,
    "red_cs_burn_needs_kill": _bool,
    "multiple_hit_preference": lambda n, v: _preference(n, v),
}

#: Names accepted by :func:`parse_params`: those of asl.md 10.1 plus the documented extensions.
PARAM_NAMES = tuple(_PARSERS)


def _preference(name: str, v: Any) -> tuple[str, ...]:
    items = tuple(x.strip() for x in (v if isinstance(v, (list, tuple)) else str(v).split(",")) if str(x).strip())
    if sorted(items) != sorted(DEFAULT_PREFERENCE):
        raise CaseError(f"parameter {name}={v!r}: expected an order of {', '.join(DEFAULT_PREFERENCE)}")
    return items


@lru_cache(maxsize=8192)
def _parse_value(name: str, kind: Hashable, v: Any) -> Any:
    """``_PARSERS[name](name, v)``, cached on the name, the value and its type (``True`` and ``1`` are equal keys
    otherwise; the parsers are pure and return immutable values).  A refusal is raised again on every ask."""
    return _PARSERS[name](name, v)


def parse_params(params: Mapping[str, Any]) -> ShotKey:
    """Parse ``tanksim odds asl`` parameters (strings or YAML scalars) into a :class:`ShotKey`.

    Raises :class:`CaseError` for an unknown name, a malformed value, or an inconsistent set.  Besides asl.md
    10.1 it accepts (DECISION, spec silent): ``target_shocked`` (the target is already Shocked or an Unconfirmed
    Kill: +1 to its CS DR and no Immobilization TC, D5.6, C7.41), ``malfunction``, ``red_cs_burn_needs_kill`` and
    ``multiple_hit_preference`` (comma list), the section-12 options that change odds.

    Consistency rules (DECISIONS where the spec is silent): ``af_hull`` / ``af_turret`` set both facings and a
    facing-specific value overrides them; ``firer_los_mp`` needs ``firer_moved`` ``bounding_first`` or ``motion``
    (C5.31); ``target_los_mp`` needs a moving target (C6.11); a Bounding First Fire shot cannot pay Case A
    (C5.13); a Bounding First or Motion shot without gyro ignores ``acquisition`` (C6.55).
    """
    vals: dict[str, Any] = {}
    for raw_name, v in params.items():
        name = str(raw_name).strip()
        if name not in _PARSERS:
            raise CaseError(f"unknown asl odds parameter {name!r}{did_you_mean(name, PARAM_NAMES)}; known: "
                            f"{', '.join(PARAM_NAMES)}")
        if v is None:
            raise CaseError(f"parameter {name} has no value")
        try:
            vals[name] = _parse_value(name, cast(Hashable, type(v)), v)
        except TypeError:   # an unhashable value (a YAML list): parsed directly
            vals[name] = _PARSERS[name](name, v)
    hull = vals.pop("af_hull", None)
    turret = vals.pop("af_turret", None)
    for face in ("front", "side"):
        if f"af_hull_{face}" not in vals and hull is not None:
            vals[f"af_hull_{face}"] = hull
        if f"af_turret_{face}" not in vals:
            if turret is not None:
                vals[f"af_turret_{face}"] = turret
            elif vals.get(f"af_hull_{face}") is not None:
                vals[f"af_turret_{face}"] = vals[f"af_hull_{face}"]
    vals.setdefault("turret_aspect", vals.get("aspect", "front"))
    if "gun" in vals:
        try:
            parse_gun(vals["gun"])
        except ValueError as exc:
            raise CaseError(str(exc)) from None
    fm = vals.get("firer_moved", "none")
    if "firer_los_mp" in vals and fm not in ("bounding_first", "motion"):
        raise CaseError("firer_los_mp (Case C1/C2) applies only with firer_moved=bounding_first or motion")
    if "target_los_mp" in vals and vals.get("target_state", "stationary") == "stationary":
        raise CaseError("target_los_mp (Case J1/J2) applies only to a stopped or moving target")
    if vals.get("ca_change", 0) and fm == "bounding_first":
        raise CaseError("a Bounding First Fire shot cannot change its CA (C5.13): ca_change must be 0")
    if fm in ("bounding_first", "motion") and not vals.get("gyro", False):
        vals["acquisition"] = 0
    key = ShotKey(**vals)
    if key.mode == "shot":
        if key.gun is None:
            raise CaseError("a full shot needs gun=...")
        if key.range_hexes is None:
            raise CaseError("a full shot needs range_hexes=...")
    elif key.mode == "given_hit" and key.gun is None and key.basic_tk is None:
        raise CaseError("given_hit needs gun=... (or basic_tk=...)")
    return key


# ==============================================================================================================
# Derived figures: Modified TH# (C3, C4), TH DRM (C5, C6), Final TK# (C7.2-C7.24)
# ==============================================================================================================

@dataclass(frozen=True)
class Derived:
    """Figures derived once per key: ``th`` Modified TH#, ``drm`` total TH DRM, ``double_low`` (C4 doubling of
    the lower die), ``low`` the lowest possible Final DR, ``multiple_ok`` (15-40 mm gun, Multiple Hits on),
    ``basic_tk`` (``None`` in ``final_tk`` mode)."""

    th: int | None
    drm: int | None
    double_low: bool
    low: int | None
    multiple_ok: bool
    basic_tk: int | None
    case_d: int | None
    case_d_na: bool


def case_a_drm(turret_type: str, hexspines: int, firer_obstacle: bool = False) -> int:
    """Case A TH DRM (C5.1, C5.11) for turning the TCA (VCA for NT) ``hexspines`` times: T +1 each; ST, RST,
    1MT +2 for the first then +1; NT +3 first then +1; doubled for a firer in woods/building."""
    if hexspines <= 0:
        return 0
    first = {"T": 1, "ST": 2, "RST": 2, "1MT": 2, "NT": 3}[turret_type]
    drm = first + (hexspines - 1)
    return 2 * drm if firer_obstacle else drm


def case_l_drm(range_hexes: int, target_non_stopped: bool, firer_non_stopped: bool) -> int:
    """Case L point-blank TH DRM (C6.3): -2 at 1 hex, -1 at 2; 0 in the same hex, vs a Non-Stopped/Motion
    target or by a Non-Stopped/Motion firer."""
    if target_non_stopped or firer_non_stopped:
        return 0
    return {1: -2, 2: -1}.get(range_hexes, 0)


def th_drm(key: ShotKey) -> tuple[int, bool]:
    """Total TH DRM of asl.md 6.3 and whether C4 doubles the lower die (Motion firer without gyro)."""
    drm = case_a_drm(key.turret_type, key.ca_change, key.firer_obstacle)          # Case A
    case_b = 3 if key.firer_obstacle else 2
    fm = key.firer_moved
    if fm == "afph":                                                              # Case B (C5.2)
        drm += case_b
    elif fm in ("bounding_afph", "bounding_first", "motion"):                     # Case C (C5.3, C5.33)
        drm += case_b + (1 if key.gyro else 3 if key.turret_type == "NT" else 2)
    if key.firer_los_mp is not None:                                              # C1/C2 (C5.31-C5.33)
        drm += 2 if key.firer_los_mp <= 2 else 1 if key.firer_los_mp <= 3 else 0
    double_low = False
    if fm == "motion":                                                            # C4 (C5.35, D2.42)
        if key.gyro:
            drm += 1
        else:
            double_low = True
    if key.range_hexes == 0:                                                      # Case E (C5.5)
        drm += 4 if key.firer_obstacle else 2
    if key.bu:                                                                    # Case I (C5.9)
        drm += 1
    if key.firer_plus1:                                                           # Stun "+1" (D5.34)
        drm += 1
    if key.target_state != "stationary":                                          # Case J, J1, J2 (C6.1-C6.12)
        j = 2
        if key.target_los_mp is not None:
            j = 4 if key.target_los_mp <= 1 else 3 if key.target_los_mp <= 3 else 2
        drm += j
    if key.range_hexes:                                                           # Case L (C6.3)
        drm += case_l_drm(key.range_hexes, key.target_state == "moving", fm == "motion")
    drm -= key.acquisition                                                        # Case N (C6.5)
    drm += to_hit_tables().size_drm[key.size]                                     # Case P (C6.7)
    drm += key.tem + key.hindrance + key.th_drm                                   # Cases Q, R, other
    return drm, double_low


def _gun(key: ShotKey) -> Gun:
    assert key.gun is not None
    return parse_gun(key.gun)


@lru_cache(maxsize=4096)
def _table_figures(gun_s: str | None, ammo: str, nationality: str | None, basic_given: int | None,
                   range_hexes: int | None, colour: str, given_hit: bool
                   ) -> tuple[int, int | None, int | None, Fraction | None]:
    """The table look-ups of :func:`derive`: ``(Basic TK#, Case D, Modified TH#, calibre mm)`` of the gun
    designation ``gun_s`` firing ``ammo`` at ``range_hexes`` (the Basic TK# given, or read by ``nationality``,
    C7.31-C7.34; Case D, C7.21; Basic TH# of ``colour`` plus the gun's modification, C3-C4), the TH figures
    ``None`` for a ``given_hit`` key.  Cached on exactly these inputs (the tables are immutable): keys that
    differ in anything else share them.  Raises :class:`CaseError` or :class:`TableError` as :func:`derive`
    does, in its order."""
    gun = parse_gun(gun_s) if gun_s is not None else None
    basic = basic_given
    if basic is None:
        assert gun is not None
        basic = to_kill_tables().basic_tk(gun, ammo, nationality)
    cd: int | None = 0
    if ammo not in ("HEAT", "HE"):
        if range_hexes is None:
            raise CaseError(f"Case D for {ammo} needs range_hexes=...")
        if gun is None:
            raise CaseError("Case D needs gun=... (calibre)")
        cd = to_kill_tables().case_d(gun, ammo, range_hexes)
    if given_hit:
        return basic, cd, None, None
    assert gun is not None and range_hexes is not None
    tht = to_hit_tables()
    th = tht.basic_th(colour, range_hexes) + tht.modification(gun, ammo, range_hexes)
    return basic, cd, th, gun.calibre


@lru_cache(maxsize=4096)
def derive(key: ShotKey) -> Derived:
    """The :class:`Derived` figures of ``key`` (cached; its table look-ups are shared between keys,
    :func:`_table_figures`).  Raises :class:`CaseError` for a table miss."""
    try:
        if key.mode == "final_tk":
            return Derived(None, None, False, None, False, None, 0, False)
        given_hit = key.mode == "given_hit"
        basic, cd, th, calibre = _table_figures(key.gun, key.ammo, key.nationality, key.basic_tk,
                                                key.range_hexes, key.colour, given_hit)
        if given_hit:
            return Derived(None, None, False, None, False, basic, cd, cd is None)
        assert th is not None and calibre is not None
        drm, double_low = th_drm(key)
        low = (3 if double_low else 2) + drm
        multiple_ok = key.multiple_hits and 15 <= calibre <= 40
        return Derived(th, drm, double_low, low, multiple_ok, basic, cd, cd is None)
    except TableError as exc:
        raise CaseError(str(exc)) from None


class ToKillView(NamedTuple):
    """What Stage 2 (To Kill and the crew checks) reads of a key (:func:`tk_view`): the key's own fields under
    their names, the Basic TK# and Case D of :func:`derive` (``basic_tk`` / ``case_d`` ``None`` in ``final_tk``
    mode) and ``he`` (HE ammunition).  Keys that differ only in To Hit parameters (range within one Case D
    row, DRMs, acquisition, ...) share one view, so they share the Stage 2 answers cached on it."""

    final_tk: int | None
    case_d_na: bool
    basic_tk: int | None
    case_d: int | None
    af_hull_front: int | None
    af_hull_side: int | None
    af_turret_front: int | None
    af_turret_side: int | None
    aspect: str
    turret_aspect: str
    he: bool
    cs_red: bool
    red_cs_burn_needs_kill: bool
    multiple_hit_preference: tuple[str, ...]
    cs: int | None
    crew_morale: int | None
    target_shocked: bool
    target_plus1: bool


@lru_cache(maxsize=8192)
def tk_view(key: ShotKey) -> ToKillView:
    """The :class:`ToKillView` of ``key`` (cached).  Raises :class:`CaseError` like :func:`derive`."""
    if key.final_tk is not None:
        na, basic, cd = False, None, None
    else:
        d = derive(key)
        na, basic, cd = d.case_d_na, d.basic_tk, d.case_d
    return ToKillView(key.final_tk, na, basic, cd, key.af_hull_front, key.af_hull_side, key.af_turret_front,
                      key.af_turret_side, key.aspect, key.turret_aspect, key.ammo == "HE", key.cs_red,
                      key.red_cs_burn_needs_kill, key.multiple_hit_preference, key.cs, key.crew_morale,
                      key.target_shocked, key.target_plus1)


def _af(key: ShotKey | ToKillView, location: str, face: str) -> int:
    name = f"af_{location}_{'front' if face == 'front' else 'side'}"
    v = getattr(key, name)
    if v is None:
        raise CaseError(f"a {location} hit on the {face} needs {name}=... (or af_{location}=...)")
    return v


def final_tk(key: ShotKey, location: str, face: str, critical: bool) -> int | None:
    """Final TK# (C7.11, C7.2-C7.24; asl.md 8.1) of a hit on ``location`` (hull/turret) through ``face``:
    Basic TK#, doubled first on a CH (C7.23), +1 rear (C7.21), + Case D (AP/APCR/APDS only), minus the AF of that
    facing (side AF for the rear).  ``None`` when Case D is NA (the round cannot harm; DECISION ``case_d_na``)."""
    if key.final_tk is not None:
        return key.final_tk
    return _final_tk(tk_view(key), location, face, critical)


def _final_tk(v: ToKillView, location: str, face: str, critical: bool) -> int | None:
    """:func:`final_tk` read from the key's :class:`ToKillView`."""
    if v.final_tk is not None:
        return v.final_tk
    if v.case_d_na:
        return None
    assert v.basic_tk is not None and v.case_d is not None
    mod = v.basic_tk * (2 if critical else 1)
    if face == "rear":
        mod += 1
    mod += v.case_d
    return mod - _af(v, location, face)


# ==============================================================================================================
# Stage 1: To Hit
# ==============================================================================================================

@dataclass(frozen=True)
class ToHit:
    """The class of one TH DR (and subsequent dr): ``fired`` (False = depletion no-shot, C8.9), ``last_round``,
    ``hit``, ``location`` (``hull``/``turret``), ``critical``, ``improbable`` (hit via C3.6), ``multiple`` (C3.8),
    ``e_face`` (Case E facing from the coloured die, D3.2; ``None`` at range > 0), ``rof_again`` (C2.24),
    ``malfunction`` (D3.7)."""

    fired: bool
    last_round: bool
    hit: bool
    location: str | None
    critical: bool
    improbable: bool
    multiple: bool
    e_face: str | None
    rof_again: bool
    malfunction: bool


class ToHitView(NamedTuple):
    """What Stage 1 (To Hit) reads of a full-shot key (:func:`th_view`): the Modified TH#, the total DRM, the
    lowest possible Final DR, the C4 doubling and whether Multiple Hits can occur (from :func:`derive`), the
    key's ``malfunction``, ``breakdown``, ``depletion``, ``hull_down`` and ``rof``, and ``same_hex`` (range 0,
    Case E).  Keys with equal views have equal Stage 1 distributions, so they share the one cached on it."""

    th: int
    low: int
    drm: int
    double_low: bool
    multiple_ok: bool
    malfunction: bool
    breakdown: int
    depletion: int | None
    hull_down: bool
    rof: int
    same_hex: bool


@lru_cache(maxsize=8192)
def th_view(key: ShotKey) -> ToHitView:
    """The :class:`ToHitView` of a full-shot ``key`` (cached).  Raises :class:`CaseError` like :func:`derive`."""
    d = derive(key)
    assert d.th is not None and d.low is not None and d.drm is not None
    return ToHitView(d.th, d.low, d.drm, d.double_low, d.multiple_ok, key.malfunction, key.breakdown,
                     key.depletion, key.hull_down, key.rof, key.range_hexes == 0)


def _fired(key: ShotKey | ToHitView, original: int) -> bool:
    return key.depletion is None or original <= key.depletion


def th_needs_subsequent(key: ShotKey, c: int, w: int) -> bool:
    """True when the TH DR ``(c, w)`` needs a subsequent dr (asl.md 6.4 steps 1-2): a fired Original 2 whose
    lowest possible Final DR is not below the Modified TH#."""
    return _th_needs_subsequent(th_view(key), c, w)


def _th_needs_subsequent(v: ToHitView, c: int, w: int) -> bool:
    return c + w == 2 and _fired(v, 2) and v.low >= v.th


def final_th_dr(key: ShotKey, c: int, w: int) -> int:
    """Final TH DR: Original + DRM, the lower die doubled under C4 (C5.35)."""
    return _final_th_dr(th_view(key), c, w)


def _final_th_dr(v: ToHitView, c: int, w: int) -> int:
    return c + w + v.drm + (min(c, w) if v.double_low else 0)


def e_face(c: int) -> str:
    """Case E Target Facing from the coloured die (D3.2): 1-2 rear, 3-4 side, 5-6 front."""
    return "rear" if c <= 2 else "side" if c <= 4 else "front"


def th_stage(key: ShotKey, c: int, w: int, sub: int | None) -> ToHit:
    """Classify the TH DR ``(c, w)`` with subsequent dr ``sub`` (asl.md 6.4, 6.5; C3.3, C3.6-C3.9, C8.9, C2.24,
    D3.7, D4.2).  ``sub`` must be given exactly when :func:`th_needs_subsequent` is True."""
    return _th_stage(th_view(key), c, w, sub)


def _th_stage(v: ToHitView, c: int, w: int, sub: int | None) -> ToHit:
    """:func:`th_stage` read from the key's :class:`ToHitView`."""
    original = c + w
    malf = v.malfunction and original >= v.breakdown
    if not _fired(v, original):
        return ToHit(False, False, False, None, False, False, False, None, False, malf)
    last = v.depletion is not None and original == v.depletion
    hd = v.hull_down
    ch_loc = "turret" if hd else "hull"
    hit, loc, crit, improbable, multiple = False, None, False, False, False
    if v.low > v.th:                                   # 1. improbable (C3.6)
        if original == 2:
            assert sub is not None
            if sub == 1:
                hit, loc, crit = True, ch_loc, True
            elif sub == 2:
                hit, loc = True, "turret"
            elif sub == 3 and not hd:
                hit, loc = True, "hull"
            improbable = hit
    elif original == 2:
        if v.low == v.th:                              # 2. exactly the lowest (C3.7 EXC)
            assert sub is not None
            hit, loc, crit = True, ch_loc, sub == 1
            if not crit:
                loc = "turret" if hd else "hull"
        else:                                          # 3. CH (C3.7)
            hit, loc, crit = True, ch_loc, True
    else:                                              # 4. plain hit (C3.3, C3.9, D4.2)
        if _final_th_dr(v, c, w) <= v.th:
            loc = "turret" if c < w else "hull"
            if loc == "hull" and hd:
                loc = None
            else:
                hit = True
                multiple = v.multiple_ok and c == w and c >= 2
    ef = e_face(c) if v.same_hex and hit else None
    rof_again = c <= v.rof and not malf
    return ToHit(True, last, hit, loc if hit else None, crit, improbable, multiple, ef, rof_again, malf)


def th_classes(key: ShotKey) -> tuple[tuple[ToHit, Fraction], ...]:
    """Stage 1 distribution: the :class:`ToHit` classes of the 36 TH DRs (x 6 subsequent drs where needed)."""
    return _th_classes(th_view(key))


@lru_cache(maxsize=4096)
def _th_classes(v: ToHitView) -> tuple[tuple[ToHit, Fraction], ...]:
    """:func:`th_classes` of every key with the view ``v`` (cached on the view).  The weights are summed as
    integers over 216 (36 TH DRs x 6 subsequent drs) and made exact fractions at the end."""
    acc: dict[ToHit, int] = defaultdict(int)
    for c, w in _PAIRS:
        if _th_needs_subsequent(v, c, w):
            for s in _DIE:
                acc[_th_stage(v, c, w, s)] += 1
        else:
            acc[_th_stage(v, c, w, None)] += 6
    return tuple((k, Fraction(n, 216)) for k, n in acc.items())


# ==============================================================================================================
# Stage 2: To Kill and crew checks
# ==============================================================================================================

def tk_result(T: int, c: int, w: int, location: str, he: bool, cs_red: bool, needs_kill: bool = True) -> str:
    """Result of the TK DR ``(c, w)`` against Final TK# ``T`` (asl.md 8.2; C7.2 Direct Fire column, C7.35, C7.5,
    C7.6, C7.41, D5.7), first matching line: Original 12 dud; burn if ``d < T`` and ``2 d' <= T`` (``d' = d - 1``
    for a red CS# target; with ``needs_kill`` False the ``d < T`` condition is dropped for the burn test);
    ``d < T`` elim; ``d == T`` Immobilized (hull) / Shocked (turret); ``d == T + 1`` the same for HE, Possible
    Shock otherwise; else no effect.  "Half" is exact: ``2 d' <= T``."""
    d = c + w
    if d == 12:
        return "dud"
    d_burn = d - 1 if cs_red else d
    if (d < T or not needs_kill) and 2 * d_burn <= T:
        return "burn"
    if d < T:
        return "elim"
    if d == T or (he and d == T + 1):
        return "immobilized" if location == "hull" else "shocked"
    if d == T + 1:
        return "possible_shock"
    return "no_effect"


def second_location(c: int, w: int) -> str:
    """Location of the second of Multiple Hits from the first TK DR's dice (C3.8, C3.9): turret iff c < w."""
    return "turret" if c < w else "hull"


def prefer(a: str, b: str, order: tuple[str, ...] = DEFAULT_PREFERENCE) -> str:
    """The result the firer keeps of two Multiple Hits (DECISION ``multiple_hit_preference``)."""
    return a if order.index(a) <= order.index(b) else b


@lru_cache(maxsize=8192)
def tk_dist(T: int, location: str, he: bool, cs_red: bool, needs_kill: bool) -> tuple[tuple[str, Fraction], ...]:
    """Distribution of :func:`tk_result` over the 36 TK DRs for one Final TK# (cached)."""
    acc: dict[str, Fraction] = defaultdict(Fraction)
    for c, w in _PAIRS:
        acc[tk_result(T, c, w, location, he, cs_red, needs_kill)] += Fraction(1, 36)
    return tuple(acc.items())


def crew_check_kind(key: ShotKey | ToKillView, result: str) -> str | None:
    """Which crew DR the result calls for (asl.md 9.2, 11): ``"cs"`` after Elim when ``cs`` is given, ``"tc"``
    after Immobilized (unless the crew is already Shocked) and ``"ntc"`` after Possible Shock when
    ``crew_morale`` is given; else ``None`` (no DR).  ``key`` may be the key's :class:`ToKillView`."""
    if result == "elim" and key.cs is not None:
        return "cs"
    if key.crew_morale is not None:
        if result == "immobilized" and not key.target_shocked:
            return "tc"
        if result == "possible_shock":
            return "ntc"
    return None


def crew_check_passes(key: ShotKey | ToKillView, kind: str, c: int, w: int) -> bool:
    """Whether the crew DR ``(c, w)`` passes (D5.5, D5.6): DR (+1 if "+1"; CS DR also +1 if Shocked/UK) <= the
    crew morale (TC/NTC) or the CS#.  ``key`` may be the key's :class:`ToKillView`."""
    dr = c + w + (1 if key.target_plus1 else 0)
    if kind == "cs":
        assert key.cs is not None
        return dr + (1 if key.target_shocked else 0) <= key.cs
    assert key.crew_morale is not None
    return dr <= key.crew_morale


@lru_cache(maxsize=4096)
def crew_pass_prob(key: ShotKey | ToKillView, kind: str) -> Fraction:
    """P(the crew DR of ``kind`` passes) over the 36 DRs (``key`` may be the key's :class:`ToKillView`)."""
    return Fraction(sum(1 for c, w in _PAIRS if crew_check_passes(key, kind, c, w)), 36)


def face_of(key: ShotKey | ToKillView, location: str, ef: str | None) -> str:
    """Target Facing of a hit on ``location``: the Case E facing if any, else ``aspect`` (hull) /
    ``turret_aspect`` (turret).  ``key`` may be the key's :class:`ToKillView`."""
    if ef is not None:
        return ef
    return key.aspect if location == "hull" else key.turret_aspect


Outcome = tuple[str, str | None, bool | None]   # (result, crew check kind, passed)


def hit_outcomes(key: ShotKey, location: str, ef: str | None, critical: bool, multiple: bool
                 ) -> tuple[tuple[Outcome, Fraction], ...]:
    """Stage 2 distribution for one hit class: (result, crew check, passed) -> probability."""
    return _hit_outcomes(tk_view(key), location, ef, critical, multiple)


@lru_cache(maxsize=8192)
def _hit_outcomes(v: ToKillView, location: str, ef: str | None, critical: bool, multiple: bool
                  ) -> tuple[tuple[Outcome, Fraction], ...]:
    """:func:`hit_outcomes` of every key with the view ``v`` (cached on the view)."""
    he = v.he
    nk = v.red_cs_burn_needs_kill
    T1 = _final_tk(v, location, face_of(v, location, ef), critical)
    res: dict[str, Fraction] = defaultdict(Fraction)
    if T1 is None:
        res["no_effect"] = Fraction(1)
    elif not multiple:
        for r, q in tk_dist(T1, location, he, v.cs_red, nk):
            res[r] += q
    else:
        for c, w in _PAIRS:
            r1 = tk_result(T1, c, w, location, he, v.cs_red, nk)
            loc2 = second_location(c, w)
            T2 = _final_tk(v, loc2, face_of(v, loc2, ef), False)
            second = ((("no_effect", Fraction(1)),) if T2 is None else tk_dist(T2, loc2, he, v.cs_red, nk))
            for r2, q in second:
                res[prefer(r1, r2, v.multiple_hit_preference)] += q / 36
    out: dict[Outcome, Fraction] = defaultdict(Fraction)
    for r, q in res.items():
        kind = crew_check_kind(v, r)
        if kind is None:
            out[(r, None, None)] += q
        else:
            p = crew_pass_prob(v, kind)
            out[(r, kind, True)] += q * p
            out[(r, kind, False)] += q * (1 - p)
    return tuple((k, val) for k, val in out.items() if val)


def _tk_only_hit(key: ShotKey) -> tuple[str, bool]:
    gh = key.given_hit or "hull"
    return ("turret" if gh.startswith("turret") else "hull"), gh.endswith("_ch")


# ==============================================================================================================
# Odds
# ==============================================================================================================

@lru_cache(maxsize=4096)
def shot_odds(key: ShotKey) -> Mapping[str, Any]:
    """Exact odds of ``key`` (asl.md 10.2) as ``Fraction`` / ``int`` / ``"NA"`` values, staged and cached.

    The odds read the key only through its :class:`ToHitView` (full shots) and :class:`ToKillView` (and the hit
    of the TK-only modes), so they are computed once per distinct pair of views (:func:`_odds`) and shared by
    every key with those views."""
    if key.mode == "shot":
        return _odds(th_view(key), tk_view(key), None)
    return _odds(None, tk_view(key), _tk_only_hit(key))


@lru_cache(maxsize=4096)
def _odds(thv: ToHitView | None, tkv: ToKillView, tk_only: tuple[str, bool] | None) -> Mapping[str, Any]:
    """:func:`shot_odds` of a full shot with the views ``thv`` / ``tkv`` (``tk_only`` ``None``), or of a TK-only
    key (``thv`` ``None``) whose hit is ``tk_only`` = (location, critical)."""
    p: dict[str, Fraction] = defaultdict(Fraction)
    crew_survives = abandoned = ntc_fail = Fraction(0)

    def add_hit(weight: Fraction, location: str, ef: str | None, critical: bool, multiple: bool) -> None:
        nonlocal crew_survives, abandoned, ntc_fail
        p["hit"] += weight
        p[f"{location}_hit"] += weight
        if critical:
            p["critical"] += weight
        for (r, kind, passed), q in _hit_outcomes(tkv, location, ef, critical, multiple):
            p[r] += weight * q
            if kind == "cs" and passed:
                crew_survives += weight * q
            elif kind == "tc" and not passed:
                abandoned += weight * q
            elif kind == "ntc" and not passed:
                ntc_fail += weight * q

    out: dict[str, Any] = {}
    if thv is not None:
        for th, w in _th_classes(thv):
            if th.malfunction:
                p["malfunction"] += w
            if not th.fired:
                p["no_ammo"] += w
                continue
            if th.last_round:
                p["last_round"] += w
            if th.rof_again:
                p["rof_again"] += w
            if not th.hit:
                p["miss"] += w
                continue
            if th.improbable:
                p["improbable_hit"] += w
            if th.multiple:
                p["multiple_hits"] += w
            assert th.location is not None
            add_hit(w, th.location, th.e_face, th.critical, th.multiple)
    else:
        assert tk_only is not None
        loc, crit = tk_only
        add_hit(Fraction(1), loc, None, crit, False)
    out["p_hit"] = p["hit"]
    out["p_kill"] = p["burn"] + p["elim"]
    for r in RESULTS:
        out[f"p_{r}"] = p[r]
    out["p_critical"] = p["critical"]
    out["p_turret_hit"] = p["turret_hit"]
    out["p_hull_hit"] = p["hull_hit"]
    if thv is not None:
        for k in ("miss", "no_ammo", "last_round", "improbable_hit", "multiple_hits", "rof_again", "malfunction"):
            out[f"p_{k}"] = p[k]
        out["modified_th"] = thv.th
        out["drm"] = thv.drm
        if not thv.same_hex:
            for loc, face in (("hull", tkv.aspect), ("turret", tkv.turret_aspect)):
                try:
                    t = _final_tk(tkv, loc, face, False)
                except CaseError:
                    continue  # that facing's AF was not given (and no hit can need it)
                out[f"final_tk_{loc}"] = "NA" if t is None else t
    else:
        assert tk_only is not None
        loc, crit = tk_only
        t = _final_tk(tkv, loc, tkv.aspect if loc == "hull" else tkv.turret_aspect, crit)
        out["final_tk"] = "NA" if t is None else t
    if tkv.cs is not None:
        out["p_crew_survives"] = crew_survives
    if tkv.crew_morale is not None:
        out["p_abandoned"] = abandoned
        out["p_shock_total"] = p["shocked"] + ntc_fail
    return out


def odds_json(key: ShotKey) -> dict[str, Any]:
    """:func:`shot_odds` with probabilities as exact fraction strings (asl.md 10.2)."""
    return {k: (fraction_str(v) if isinstance(v, Fraction) else v) for k, v in shot_odds(key).items()}


# ==============================================================================================================
# Resolution with dice: the same stages, rolled
# ==============================================================================================================

def _dr(dice: DiceSource, what: str) -> tuple[int, int]:
    c = dice.roll("d6", f"{what} coloured")
    w = dice.roll("d6", f"{what} white")
    return c, w


def resolve_key(key: ShotKey, dice: DiceSource) -> dict[str, Any]:
    """Roll one shot of ``key`` with ``dice`` in the order of asl.md 11 (TH DR, subsequent dr, TK DR, second TK
    DR, crew DR) through the same stage functions as :func:`shot_odds`.

    Returns: ``result`` (``miss``, ``no_ammo`` or a TK result), ``fired``, ``hit``, ``location``, ``face``,
    ``critical``, ``improbable``, ``multiple``, ``second_location``, ``second_result``, ``first_result``,
    ``final_th_dr``, ``modified_th``, ``drm``, ``final_tk`` (int or ``"NA"``), ``second_final_tk``,
    ``rof_again``, ``malfunction``, ``last_round``, ``special_ammo_left``, ``crew_check``, ``crew_survives``,
    ``abandoned``, ``ntc_shocked``, and the dice: ``th_dr``, ``subsequent_dr``, ``tk_dr``, ``second_tk_dr``,
    ``crew_dr``.
    """
    out: dict[str, Any] = dict(
        result=None, fired=True, hit=False, location=None, face=None, critical=False, improbable=False,
        multiple=False, second_location=None, second_result=None, first_result=None, final_th_dr=None,
        modified_th=None, drm=None, final_tk=None, second_final_tk=None, rof_again=False, malfunction=False,
        last_round=False, special_ammo_left=True, crew_check=None, crew_survives=None, abandoned=None,
        ntc_shocked=None, th_dr=None, subsequent_dr=None, tk_dr=None, second_tk_dr=None, crew_dr=None)
    ef = None
    multiple = False
    if key.mode == "shot":
        d = derive(key)
        out["modified_th"], out["drm"] = d.th, d.drm
        c, w = _dr(dice, "TH DR")
        out["th_dr"] = (c, w)
        sub = dice.roll("d6", "TH subsequent dr") if th_needs_subsequent(key, c, w) else None
        out["subsequent_dr"] = sub
        th = th_stage(key, c, w, sub)
        out["final_th_dr"] = final_th_dr(key, c, w)
        out.update(fired=th.fired, rof_again=th.fired and th.rof_again, malfunction=th.malfunction,
                   last_round=th.last_round,
                   special_ammo_left=key.depletion is None or (th.fired and not th.last_round))
        if not th.fired:
            out["result"] = "no_ammo"
            return out
        if not th.hit:
            out["result"] = "miss"
            return out
        assert th.location is not None
        loc, crit, ef, multiple = th.location, th.critical, th.e_face, th.multiple
        out.update(hit=True, improbable=th.improbable, multiple=multiple)
    else:
        loc, crit = _tk_only_hit(key)
        out["hit"] = True
    face = face_of(key, loc, ef)
    out.update(location=loc, critical=crit, face=face)
    he = key.ammo == "HE"
    nk = key.red_cs_burn_needs_kill
    T1 = final_tk(key, loc, face, crit)
    out["final_tk"] = "NA" if T1 is None else T1
    if T1 is None:
        result = "no_effect"
    else:
        c1, w1 = _dr(dice, "TK DR")
        out["tk_dr"] = (c1, w1)
        result = tk_result(T1, c1, w1, loc, he, key.cs_red, nk)
        if multiple:
            loc2 = second_location(c1, w1)
            face2 = face_of(key, loc2, ef)
            T2 = final_tk(key, loc2, face2, False)
            out["second_final_tk"] = "NA" if T2 is None else T2
            if T2 is None:
                r2 = "no_effect"
            else:
                c2, w2 = _dr(dice, "second TK DR")
                out["second_tk_dr"] = (c2, w2)
                r2 = tk_result(T2, c2, w2, loc2, he, key.cs_red, nk)
            out.update(second_location=loc2, second_result=r2, first_result=result)
            result = prefer(result, r2, key.multiple_hit_preference)
    out["result"] = result
    kind = crew_check_kind(key, result)
    if kind is not None:
        cc, cw = _dr(dice, {"cs": "CS DR", "tc": "TC DR", "ntc": "NTC DR"}[kind])
        passed = crew_check_passes(key, kind, cc, cw)
        out.update(crew_check=kind, crew_dr=(cc, cw))
        if kind == "cs":
            out["crew_survives"] = passed
        elif kind == "tc":
            out["abandoned"] = not passed
        else:
            out["ntc_shocked"] = not passed
    return out
