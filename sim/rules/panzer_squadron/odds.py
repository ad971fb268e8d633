"""The shot of ``panzer_squadron`` (docs/rules/panzer_squadron.md section 8 and 14; seed
``000_0e0b8aa4689ade84.txt``): hit table (D6), penetration (D7), the net modifier, exact odds
and the parameters of ``tanksim odds panzer_squadron``.

Probabilities are ``Fraction``s.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any, Final, Mapping, NamedTuple

from sim.dice import DiceSource
from sim.messages import did_you_mean
from sim.rules.base import CaseError, Odds, flag_value, fraction_str
from sim.rules.panzer_squadron.data import FACES, find_vehicle

#: The two status markers (D20); ``Final`` so that they type as the literals the options name.
STATIONARY: Final = "stationary"
IN_MOVEMENT: Final = "in_movement"
HIT_BONUSES = (0, 10, 20, 30, 50)


class PSKey(NamedTuple):
    """The odds primitives of one shot: ``penetration``, ``armour`` of the face hit, net ``modifier``."""

    penetration: int
    armour: int
    modifier: int


# --- shot procedure (section 8) ---------------------------------------------------------------------------------

def hit_bonus(modified: int) -> int | None:
    """D6: the hit table read on the modified d10; ``None`` is a miss (5 or less)."""
    if modified <= 5:
        return None
    if modified <= 7:
        return 0
    if modified >= 11:
        return 50
    return {8: 10, 9: 20, 10: 30}[modified]


def penetration_result(penetration: int, bonus: int, armour: int, natural: int) -> tuple[str, int | None]:
    """D7: natural 96-100 ``auto_kill``, 01-05 ``dud`` (read first); else ``destroyed`` if the total exceeds the
    armour, ``ricochet`` if not (equality ricochets).  Returns ``(result, total or None)``."""
    if natural >= 96:
        return "auto_kill", None
    if natural <= 5:
        return "dud", None
    total = penetration + bonus + natural
    return ("destroyed" if total > armour else "ricochet"), total


def resolve_key(key: PSKey, dice: DiceSource) -> dict[str, Any]:
    """Roll one shot (section 8 steps 4-5): ``d10`` then, on a hit, ``d100``.  Returns ``result``,
    ``modified_d10``, ``bonus`` (hits), ``total`` (destroyed / ricochet), ``hit`` and ``kill``."""
    d = dice.roll("d10", "to_hit")
    v = d + key.modifier
    out: dict[str, Any] = {"modified_d10": v, "natural_d10": d}
    b = hit_bonus(v)
    if b is None:
        out.update(result="miss", hit=False, kill=False)
        return out
    r = dice.roll("d100", "penetration")
    result, total = penetration_result(key.penetration, b, key.armour, r)
    out.update(result=result, bonus=b, natural_d100=r, hit=True, kill=result in ("destroyed", "auto_kill"))
    if total is not None:
        out["total"] = total
    return out


@lru_cache(maxsize=65536)
def shot_odds(key: PSKey) -> Odds:
    """Exact odds of one legal shot (D22), by enumerating the 10 x 100 natural rolls with ``Fraction``."""
    p_bonus = {b: Fraction(0) for b in HIT_BONUSES}
    for d in range(1, 11):
        b = hit_bonus(d + key.modifier)
        if b is not None:
            p_bonus[b] += Fraction(1, 10)
    p_hit = sum(p_bonus.values(), Fraction(0))
    p_pen = Fraction(0)
    for b, pb in p_bonus.items():
        if pb:
            t = key.armour - key.penetration - b
            p_pen += pb * Fraction(min(90, max(0, 95 - t)), 100)
    p_auto = p_hit / 20
    p_dud = p_hit / 20
    p_kill = p_auto + p_pen
    values = {
        "p_hit": p_hit, "p_miss": 1 - p_hit, "p_kill": p_kill, "p_auto_kill": p_auto, "p_penetrate": p_pen,
        "p_ricochet": p_hit - p_dud - p_kill, "p_dud": p_dud,
        "hit_bonus": {str(b): p for b, p in p_bonus.items()},
    }
    return Odds(p_hit, p_kill, values)


def net_modifier(*, modifier: int = 0, firer_status: str | None = None, turret_rotated: bool = False,
                 target_moving: bool = False, partial_cover: bool = False, range_hexes: int | None = None,
                 tile_modifier: int = 0, cover_modifier: int | None = None) -> int:
    """Section 8 step 3: the sum of the shot modifiers.  ``cover_modifier`` overrides the -1 of ``partial_cover``
    (the masked side's ``exceptional_modifier``)."""
    m = modifier + tile_modifier
    if firer_status == STATIONARY:
        m += 1
    elif firer_status == IN_MOVEMENT:
        m -= 1
    if turret_rotated:
        m -= 2
    if target_moving:
        m -= 1
    if cover_modifier is not None:
        m += cover_modifier
    elif partial_cover:
        m -= 1
    if range_hexes is not None and range_hexes <= 5:
        m += 1
    return m


#: The parameters of ``tanksim odds`` / an odds case for this rule set (:func:`key_from_params`), in order.
PARAM_NAMES = ("penetration", "armour", "firer", "target", "face", "modifier", "firer_status", "turret_rotated",
               "target_moving", "partial_cover", "range_hexes", "tile_modifier")
_PARAMS = PARAM_NAMES


def _int(name: str, v: Any, lo: int | None = None) -> int:
    try:
        x = int(str(v).strip())
    except ValueError:
        raise CaseError(f"{name}={v!r}: expected an integer") from None
    if lo is not None and x < lo:
        raise CaseError(f"{name}={x}: expected an integer >= {lo}")
    return x


def _bool(name: str, v: Any) -> bool:
    b = flag_value(v)
    if b is None:
        raise CaseError(f"{name}={v!r}: expected true or false")
    return b


def key_from_params(params: Mapping[str, Any]) -> tuple[PSKey, dict[str, Any]]:
    """Parse the odds parameters of section 14 into a :class:`PSKey` and the echo fields of the JSON.
    Raises :class:`CaseError` for unknown names, malformed values or conflicting sources."""
    unknown = [k for k in params if k not in _PARAMS]
    if unknown:
        hints = "; ".join(f"{k!r}{did_you_mean(k, _PARAMS) or ' (no close name)'}" for k in unknown)
        raise CaseError(f"unknown parameter(s) {hints}; expected: {', '.join(_PARAMS)}")
    if "penetration" in params and "firer" in params:
        raise CaseError("give either penetration or firer, not both")
    if "armour" in params and "target" in params:
        raise CaseError("give either armour or target (with face), not both")
    if "face" in params and "target" not in params:
        raise CaseError("face= names the face of target= (a catalog vehicle) that is hit; give target= with it, "
                        "or armour= alone")
    echo: dict[str, Any] = {}
    try:
        if "firer" in params:
            pen = find_vehicle(str(params["firer"])).penetration
        elif "penetration" in params:
            pen = _int("penetration", params["penetration"], 0)
        else:
            raise CaseError("penetration (or firer) is required")
        if "target" in params:
            face = str(params.get("face", "")).strip()
            if face not in FACES:
                raise CaseError(f"face={face!r}: expected one of front, side, rear (required with target)")
            arm = find_vehicle(str(params["target"])).armour[face]
        elif "armour" in params:
            arm = _int("armour", params["armour"], 0)
        else:
            raise CaseError("armour (or target and face) is required")
    except KeyError as exc:
        raise CaseError(str(exc.args[0])) from None
    status = params.get("firer_status")
    if status is not None and status not in (STATIONARY, IN_MOVEMENT):
        raise CaseError(f"firer_status={status!r}: expected stationary or in_movement")
    m = net_modifier(
        modifier=_int("modifier", params.get("modifier", 0)), firer_status=status,
        turret_rotated=_bool("turret_rotated", params.get("turret_rotated", False)),
        target_moving=_bool("target_moving", params.get("target_moving", False)),
        partial_cover=_bool("partial_cover", params.get("partial_cover", False)),
        range_hexes=_int("range_hexes", params["range_hexes"], 1) if "range_hexes" in params else None,
        tile_modifier=_int("tile_modifier", params.get("tile_modifier", 0)))
    echo.update(penetration=pen, armour=arm, net_modifier=m)
    return PSKey(pen, arm, m), echo


def odds_json(key: PSKey) -> dict[str, Any]:
    """The ``--json`` object of section 14 for ``key`` (exact fraction strings)."""
    o = shot_odds(key)
    out: dict[str, Any] = {"ruleset": "panzer_squadron", "penetration": key.penetration, "armour": key.armour,
                           "net_modifier": key.modifier}
    for k, v in o.values.items():
        out[k] = {b: fraction_str(p) for b, p in v.items()} if isinstance(v, dict) else fraction_str(v)
    return out
