"""Rule tests for the ``asl`` rule set (docs/rules/asl.md): golden cases, exact consistency of the staged odds with
the dice resolution, Monte Carlo agreement, and one test per tricky ruling."""
from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sim.dice import DiceExhausted, DiceSource, FixedDice
from sim.rules.asl import ASL, Options, ca_turns, hull_down_hexsides, target_face
from sim.rules.asl import odds as o
from sim.rules.base import CaseError

CASES_FILE = Path(__file__).parent / "cases" / "asl.yaml"
CASES = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["cases"]
RULES = ASL()

# A stationary PzKpfw IIIH (front AF 6, side 3; turret 4 / 3) as the target of the Russian T-34 M41's 76L.
IIIH_AF = dict(af_hull_front=6, af_hull_side=3, af_turret_front=4, af_turret_side=3)
T34_GUN = dict(gun="76L", nationality="russian", colour="red")


def _norm(v):
    if isinstance(v, bool) or v is None or isinstance(v, dict):
        return v
    try:
        return Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        return v


def _compare(expect, got, where=""):
    for k, v in expect.items():
        assert k in got, f"{where}{k} missing from {sorted(got)}"
        if isinstance(v, dict):
            _compare(v, got[k], f"{where}{k}.")
        else:
            assert _norm(got[k]) == _norm(v), f"{where}{k}: expected {v!r}, got {got[k]!r}"


# ---------------------------------------------------------------------------------------------------------------
# Golden cases
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case):
    _compare(case["expect"], RULES.run_case(case))


def test_all_case_kinds_present():
    assert {c["kind"] for c in CASES} == {"odds", "outcome", "geometry"}


# ---------------------------------------------------------------------------------------------------------------
# Exact consistency: summing the staged resolution over every dice sequence equals the odds
# ---------------------------------------------------------------------------------------------------------------

def enumerate_resolutions(key: o.ShotKey):
    """Every complete fixed dice sequence of one shot with its probability, found stage by stage: a prefix that
    runs out of dice branches into the six values of the next die."""
    stack: list[tuple[int, ...]] = [()]
    while stack:
        prefix = stack.pop()
        dice = FixedDice(prefix)
        try:
            res = o.resolve_key(key, dice)
        except DiceExhausted:
            stack.extend(prefix + (v,) for v in range(1, 7))
            continue
        dice.check_done()
        yield res, Fraction(1, 6 ** len(prefix))


def tally(results) -> dict[str, Fraction]:
    """Accumulate resolutions (with weights) into the odds JSON's probability keys."""
    p: dict[str, Fraction] = Counter()
    total = Fraction(0)
    for res, w in results:
        total += w
        r = res["result"]
        if r == "no_ammo":
            p["p_no_ammo"] += w
        elif r == "miss":
            p["p_miss"] += w
        else:
            p["p_hit"] += w
            p[f"p_{r}"] += w
            p[f"p_{res['location']}_hit"] += w
            p["p_critical"] += w * res["critical"]
            p["p_improbable_hit"] += w * res["improbable"]
            p["p_multiple_hits"] += w * res["multiple"]
        p["p_last_round"] += w * res["last_round"]
        p["p_rof_again"] += w * res["rof_again"]
        p["p_malfunction"] += w * res["malfunction"]
        p["p_crew_survives"] += w * bool(res["crew_survives"])
        p["p_abandoned"] += w * bool(res["abandoned"])
        p["p_shock_total"] += w * (r == "shocked" or bool(res["ntc_shocked"]))
    p["p_kill"] = p["p_burn"] + p["p_elim"]
    p["_total"] = total
    return p


CONSISTENCY_KEYS = {
    "t34-vs-iiih-front-crew": dict(T34_GUN, range_hexes=3, **IIIH_AF, cs=6, crew_morale=7),
    "iiih-apcr-depletion-rof": dict(gun="50", ammo="APCR", depletion=5, range_hexes=3, af_hull=11, rof=2,
                                    breakdown=11),
    "improbable-hull-down": dict(T34_GUN, range_hexes=25, firer_moved="afph", target_state="stopped",
                                 hull_down=True, af_hull=6, af_turret=8, aspect="side"),
    "exact-lowest": dict(gun="57LL", nationality="russian", colour="red", ammo="APCR", range_hexes=25, af_hull=8),
    "multiple-hits-37l": dict(gun="37L", range_hexes=5, af_hull=3, af_turret=3, aspect="side"),
    "same-hex-he-red-cs": dict(gun="75L", range_hexes=0, ammo="HE", cs_red=True, **IIIH_AF),
    "motion-doubling-gyro-off": dict(gun="75", range_hexes=8, firer_moved="motion", firer_los_mp=2,
                                     target_state="moving", **IIIH_AF, crew_morale=8, target_plus1=True),
    "case-d-na": dict(gun="50", range_hexes=61, af_hull=3),
    "tk-only-given-ch": dict(T34_GUN, range_hexes=3, given_hit="turret_ch", turret_aspect="rear", af_turret=4,
                             cs=5),
    "tk-only-final": dict(final_tk=5, given_hit="turret", crew_morale=7, target_shocked=True, cs_red=True),
}


@pytest.mark.parametrize("name", list(CONSISTENCY_KEYS))
def test_resolution_sums_to_odds(name):
    key = o.parse_params(CONSISTENCY_KEYS[name])
    odds = o.shot_odds(key)
    p = tally(enumerate_resolutions(key))
    assert p["_total"] == 1
    for k, v in odds.items():
        if not k.startswith("p_"):
            continue
        assert p[k] == v, f"{k}: resolve sums to {p[k]}, odds say {v}"


def test_result_keys_sum_to_p_hit_and_total_one():
    for params in CONSISTENCY_KEYS.values():
        v = o.shot_odds(o.parse_params(params))
        assert sum(v[f"p_{r}"] for r in o.RESULTS) == v["p_hit"]
        if "p_miss" in v:
            assert v["p_hit"] + v["p_miss"] + v["p_no_ammo"] == 1


@settings(derandomize=True, max_examples=150, deadline=None)
@given(range_hexes=st.integers(0, 60), gun=st.sampled_from(["37L", "50", "50L", "75*", "75L", "76L", "57LL", "88L"]),
       colour=st.sampled_from(["black", "red"]), ammo=st.sampled_from(["AP", "HE", "APCR"]),
       target_state=st.sampled_from(["stationary", "stopped", "moving"]),
       firer_moved=st.sampled_from(["none", "afph", "bounding_first", "motion"]), hull_down=st.booleans(),
       aspect=st.sampled_from(["front", "side", "rear"]), af=st.sampled_from([0, 3, 6, 8, 11]),
       rof=st.integers(0, 3), depletion=st.one_of(st.none(), st.integers(2, 12)))
def test_odds_are_a_distribution(range_hexes, gun, colour, ammo, target_state, firer_moved, hull_down, aspect, af,
                                 rof, depletion):
    params = dict(gun=gun, colour=colour, ammo=ammo, range_hexes=range_hexes, target_state=target_state,
                  firer_moved=firer_moved, hull_down=hull_down, aspect=aspect, af_hull=af, af_turret=af, rof=rof)
    if depletion is not None and ammo == "APCR":
        params["depletion"] = depletion
    try:
        v = o.shot_odds(o.parse_params(params))
    except CaseError:
        return  # no APCR listing for that gun
    assert v["p_hit"] + v["p_miss"] + v["p_no_ammo"] == 1
    assert sum(v[f"p_{r}"] for r in o.RESULTS) == v["p_hit"]
    assert v["p_turret_hit"] + v["p_hull_hit"] == v["p_hit"]
    assert all(0 <= x <= 1 for k, x in v.items() if k.startswith("p_"))
    if hull_down:
        assert v["p_hull_hit"] == 0


def test_shot_key_round_trips_through_params():
    for params in CONSISTENCY_KEYS.values():
        key = o.parse_params(params)
        assert o.parse_params(key.as_params()) == key
        assert o.parse_params({k: str(v) for k, v in key.as_params().items()}) == key


# ---------------------------------------------------------------------------------------------------------------
# Monte Carlo: live dice agree with the exact odds within 4 sigma
# ---------------------------------------------------------------------------------------------------------------

MC_SITUATIONS = {
    "t34-vs-iiih-front": (dict(T34_GUN, range_hexes=3, **IIIH_AF), 101),
    "iiih-vs-t34-side-rof": (dict(gun="50", range_hexes=3, aspect="side", af_hull=6, rof=2), 202),
    "multiple-hits-37l": (dict(gun="37L", range_hexes=5, af_hull=3, af_turret=3, aspect="side"), 303),
    "apcr-depletion": (dict(gun="50", ammo="APCR", depletion=5, range_hexes=3, af_hull=11), 404),
    "same-hex": (dict(gun="75L", range_hexes=0, **IIIH_AF), 505),
    "motion-vs-moving-crew": (dict(gun="75", range_hexes=8, firer_moved="motion", target_state="moving",
                                   crew_morale=7, cs=6, **IIIH_AF), 606),
}


@pytest.mark.parametrize("name", list(MC_SITUATIONS))
def test_monte_carlo_within_four_sigma(name):
    params, seed = MC_SITUATIONS[name]
    key = o.parse_params(params)
    odds = o.shot_odds(key)
    n = 8_000
    dice = DiceSource(seed)
    p = tally((o.resolve_key(key, dice), Fraction(1)) for _ in range(n))
    for k, exact in odds.items():
        if not k.startswith("p_"):
            continue
        freq = p[k] / n
        sigma = math.sqrt(float(exact) * (1 - float(exact)) / n)
        assert abs(float(freq) - float(exact)) <= 4 * sigma + 1e-12, f"{k}: {float(freq)} vs {float(exact)}"


# ---------------------------------------------------------------------------------------------------------------
# Tricky rulings, one test each
# ---------------------------------------------------------------------------------------------------------------

def test_dud_beats_critical_hit():
    """C7.35: an Original 12 TK DR is a dud even after a CH whose Final TK# is 20."""
    key = o.parse_params(dict(T34_GUN, range_hexes=3, **IIIH_AF))
    res = o.resolve_key(key, FixedDice([1, 1, 6, 6]))
    assert res["critical"] and res["final_tk"] == 20 and res["result"] == "dud"
    assert o.tk_result(20, 6, 6, "hull", False, False) == "dud"
    ch = dict(o.hit_outcomes(key, "hull", None, True, False))
    assert ch[("dud", None, None)] == Fraction(1, 36)
    assert sum(q for (r, _, _), q in ch.items() if r in ("burn", "elim")) == Fraction(35, 36)


def test_burn_at_half_of_odd_final_tk():
    """C7.6: half of Final TK# 9 is 4.5, so DR 4 burns and DR 5 eliminates (exact, no rounding)."""
    assert o.tk_result(9, 1, 3, "hull", False, False) == "burn"
    assert o.tk_result(9, 2, 3, "hull", False, False) == "elim"
    assert o.tk_result(7, 1, 2, "turret", False, False) == "burn"
    assert o.tk_result(7, 2, 2, "turret", False, False) == "elim"
    # red CS#: -1 for the burn test only; it never turns an Immobilized DR into a burn
    assert o.tk_result(8, 2, 3, "hull", False, True) == "burn"
    assert o.tk_result(2, 1, 1, "hull", False, True) == "immobilized"
    assert o.tk_result(2, 1, 1, "hull", False, True, needs_kill=False) == "burn"


def test_critical_hit_doubles_before_rear_plus_one():
    """C7.23 then C7.21: 2 x 13 + 1 + 0 - 3 = 24, not 2 x (13 + 1) - 3 = 25."""
    key = o.parse_params(dict(T34_GUN, range_hexes=3, af_hull_side=3, given_hit="hull_ch", aspect="rear"))
    assert o.final_tk(key, "hull", "rear", True) == 24
    assert RULES.odds_from_params(dict(T34_GUN, range_hexes=3, af_hull_side=3, given_hit="hull_ch",
                                       aspect="rear"))["final_tk"] == 24


def test_heat_ignores_range():
    """C7.332: no Case D for HEAT; the Final TK# and odds are the same at 2 and 40 hexes."""
    near = RULES.odds_from_params(dict(gun="75*", ammo="HEAT", range_hexes=2, given_hit="hull", af_hull_front=6))
    far = RULES.odds_from_params(dict(gun="75*", ammo="HEAT", range_hexes=40, given_hit="hull", af_hull_front=6))
    assert near == far and near["final_tk"] == 7
    full = [RULES.odds_from_params(dict(gun="75*", ammo="HEAT", range_hexes=r, af_hull=6))["final_tk_hull"]
            for r in (1, 12, 30, 61)]
    assert full == [7, 7, 7, 7]


def test_case_d_na_means_no_kill_and_no_tk_dr():
    """C7.24 NA cell (DECISION case_d_na): no TK DR is rolled, the hit has no effect."""
    v = RULES.odds_from_params(dict(gun="50", range_hexes=61, af_hull=3))
    assert v["final_tk_hull"] == "NA" and v["p_kill"] == "0" and v["p_dud"] == "0"
    assert v["p_no_effect"] == v["p_hit"] != "0"
    dice = FixedDice([1, 3])          # a turret hit: only the TH DR is consumed
    res = o.resolve_key(o.parse_params(dict(gun="50", range_hexes=61, af_hull=3, rof=0, th_drm=-9)), dice)
    dice.check_done()
    assert res["hit"] and res["result"] == "no_effect" and res["final_tk"] == "NA" and res["tk_dr"] is None


def test_depletion_over_number_means_no_shot():
    """C8.9: Original > Depletion Number: no round aboard, the gun did not fire for any purpose."""
    params = dict(gun="50", ammo="APCR", depletion=5, range_hexes=3, af_hull=11, rof=2)
    dice = FixedDice([2, 5])          # coloured 2 <= ROF 2 would keep ROF on a fired shot
    res = o.resolve_key(o.parse_params(params), dice)
    dice.check_done()                 # only the TH DR was consumed
    assert res["result"] == "no_ammo" and not res["fired"] and not res["hit"]
    assert res["rof_again"] is False and res["special_ammo_left"] is False
    last = o.resolve_key(o.parse_params(params), FixedDice([2, 3, 6, 6]))   # Original 5 = number: last round
    assert last["fired"] and last["hit"] and not last["special_ammo_left"] and last["rof_again"]
    # a no-shot still malfunctions on Original >= B# (D3.7)
    res = o.resolve_key(o.parse_params(dict(params, breakdown=12)), FixedDice([6, 6]))
    assert res["result"] == "no_ammo" and res["malfunction"]


def test_hull_down_hull_hit_misses():
    """D4.2: against a hull-down target a hull hit is a miss; a CH strikes the turret."""
    params = dict(T34_GUN, range_hexes=3, hull_down=True, **IIIH_AF)
    res = o.resolve_key(o.parse_params(params), FixedDice([4, 3]))          # coloured >= white: hull
    assert res["result"] == "miss" and not res["hit"]
    res = o.resolve_key(o.parse_params(params), FixedDice([1, 1, 6, 5]))    # CH
    assert res["critical"] and res["location"] == "turret" and res["final_tk"] == 26 - 4
    v = RULES.odds_from_params(params)
    assert v["p_hull_hit"] == "0"


def test_improbable_hit_needs_subsequent_dr():
    """C3.6: Modified TH# below the lowest Final DR: Original 2 then dr 1 CH, 2 turret, 3 hull, 4-6 miss."""
    params = dict(T34_GUN, range_hexes=25, firer_moved="afph", target_state="stopped", aspect="side", af_hull=6,
                  af_turret=8)
    for dr, expect in ((1, ("hull", True)), (2, ("turret", False)), (3, ("hull", False)), (4, None)):
        dice = FixedDice([1, 1, dr] + ([6, 6] if expect else []))
        res = o.resolve_key(o.parse_params(params), dice)
        dice.check_done()
        if expect is None:
            assert res["result"] == "miss"
        else:
            assert (res["location"], res["critical"]) == expect and res["improbable"]


def test_motion_doubles_the_lower_die_only_for_the_comparison():
    """C5.35: the lower die is doubled for the Final DR; ROF, location and CH use the Original DR."""
    key = o.parse_params(dict(gun="75", range_hexes=8, firer_moved="motion", af_hull=6, rof=1))
    assert o.final_th_dr(key, 1, 4) == 1 + 4 + 1 + o.derive(key).drm
    res = o.resolve_key(key, FixedDice([1, 2, 3, 3]))
    assert res["location"] == "turret" and res["rof_again"]


def test_multiple_hits_keep_the_more_severe_result():
    """C3.8: 15-40 mm, Original doubles 2-2+: two TK DRs; the second's location from the first TK DR's dice."""
    key = o.parse_params(dict(gun="37L", range_hexes=5, af_hull=3, af_turret=3, aspect="side"))
    res = o.resolve_key(key, FixedDice([2, 2, 6, 6, 1, 2]))   # first: dud (hull); second: turret, DR 3 < 6
    assert res["multiple"] and res["first_result"] == "dud" and res["second_location"] == "hull"
    assert res["second_result"] == "burn" and res["result"] == "burn"
    res = o.resolve_key(key, FixedDice([3, 3, 2, 3, 6, 6]))   # first: DR 5 < 6 elim; second (turret): dud
    assert res["second_location"] == "turret" and res["result"] == "elim"
    no = o.resolve_key(o.parse_params(dict(gun="50", range_hexes=5, af_hull=3)), FixedDice([2, 2, 6, 6]))
    assert not no["multiple"]


# ---------------------------------------------------------------------------------------------------------------
# Geometry, catalog, options, errors
# ---------------------------------------------------------------------------------------------------------------

def test_target_facing_boundaries():
    # hexspine at +60: front if front AF >= side AF, else side
    assert target_face((0, 0), 0, (1, -2), 6, 3) == "front"
    assert target_face((0, 0), 0, (1, -2), 3, 6) == "side"
    assert target_face((0, 0), 0, (-1, -1), 6, 3) == "side"   # +120: side
    assert target_face((0, 0), 0, (2, -1), 6, 3) == "front"   # along the front spine
    assert target_face((0, 0), 0, (-2, 1), 6, 3) == "rear"    # along the rear spine
    assert target_face((0, 0), 0, (0, 0), 6, 3) is None       # same hex: Case E


def test_ca_turns_and_case_a():
    assert ca_turns((0, 0), 0, (2, -1)) == 0     # dead ahead
    assert ca_turns((0, 0), 0, (1, -1)) == 0     # 30 degrees: CA boundary included
    assert ca_turns((0, 0), 0, (0, -1)) == 1     # 90
    assert ca_turns((0, 0), 0, (-1, 0)) == 2     # 150
    assert ca_turns((0, 0), 0, (-2, 1)) == 3     # 180
    assert o.case_a_drm("T", 2) == 2 and o.case_a_drm("RST", 1) == 2 and o.case_a_drm("NT", 2) == 4
    assert o.case_a_drm("ST", 2, firer_obstacle=True) == 6


def test_hull_down_by_hexside():
    assert hull_down_hexsides((0, 0), (3, -3), (0,))          # across hexside 0
    assert not hull_down_hexsides((0, 0), (0, 3), (0,))
    assert hull_down_hexsides((0, 0), (2, -1), (5,))          # along the spine between hexsides 5 and 0
    assert hull_down_hexsides((0, 0), (2, -1), (0,))


def test_catalog_defaults_and_options():
    t34 = RULES.vehicle("t34_m41")
    assert t34.rof == 0 and t34.af["turret_front"] == 11 and t34.size == "average" and "rof" in t34.defaulted
    iiih = RULES.vehicle("pzkpfw_iiih")
    assert iiih.breakdown == 12 and iiih.depletion_number("APCR", "1941") == 4
    assert iiih.depletion_number("APCR", "1944") == 5 and iiih.depletion_number("APCR", "1942", elite=True) == 6
    assert t34.depletion_number("APCR", "1941") is None
    assert set(RULES.vehicle_ids()) >= {"pzkpfw_iiih", "t34_m41"}
    assert RULES.has_turret(t34)
    assert Options().malfunction and Options().obstacle_entry == "bog"
    with pytest.raises(ValidationError):
        Options(multiple_hit_preference=("burn",))
    with pytest.raises(ValidationError):
        Options(unknown_option=1)


@pytest.mark.parametrize("params", [
    {"bogus": 1}, {"gun": "76Q", "range_hexes": 3}, {"gun": "76L"}, {"gun": "50", "range_hexes": -1},
    {"gun": "50", "range_hexes": 3, "aspect": "top"}, {"gun": "50", "range_hexes": 3, "af_hull": "thick"},
    {"gun": "50", "range_hexes": 3, "firer_los_mp": 2}, {"gun": "50", "range_hexes": 3, "target_los_mp": 2},
    {"gun": "50", "range_hexes": 3, "ammo": "HEAT", "af_hull": 3},
    {"gun": "50", "range_hexes": 3, "firer_moved": "bounding_first", "ca_change": 1, "af_hull": 3},
    {"gun": "50", "range_hexes": 3, "aspect": "side"},
])
def test_bad_parameters_raise_case_error(params):
    with pytest.raises(CaseError):
        RULES.odds_from_params(params)


def test_full_shot_is_fast():
    import time
    params = dict(gun="37L", range_hexes=7, af_hull=3, af_turret=4, aspect="rear", cs=5, crew_morale=7,
                  target_state="moving", target_los_mp="1.5", firer_moved="bounding_first", firer_los_mp=3)
    t = time.perf_counter()
    RULES.odds_from_params(params)
    assert time.perf_counter() - t < 0.2


# ---------------------------------------------------------------------------------------------------------------
# Play (asl.md 4-7): board shots, movement, Defensive First Fire, and the engine around them
# ---------------------------------------------------------------------------------------------------------------

import json  # noqa: E402

from sim.actions import Activate, Fire, Pass, Pivot, Special, Step  # noqa: E402
from sim.battle import MemoryBattle  # noqa: E402
from sim.events import BattleStateSet, StatusChanged, TankStateSet, TurretTurned, event_from_payload  # noqa: E402
from sim.hexgrid import Hex, parallelogram_hexes  # noqa: E402
from sim.rules.base import Illegal  # noqa: E402

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "asl_1941_meeting.yaml"


def _battle(tanks, terrain=None, size=(10, 6), **kw):
    return MemoryBattle(RULES, cells=parallelogram_hexes(*size), terrain=terrain or {}, tanks=tanks, **kw)


def _drive(b, dice, answer):
    """Run one Game Turn of ``b`` answering every decision with ``answer(decision)`` (checked legal)."""
    gen = RULES.play_turn(b, dice)
    seen = []
    try:
        d = next(gen)
        while True:
            seen.append(d)
            a = answer(d)
            assert d.legal.contains(a), (d.kind, a)
            d = gen.send(a)
    except StopIteration:
        pass
    return seen


def _dff_board():
    # F (defender, side 1) at (7, 2); the mover M (side 0) at (3, 2) is out of LOS behind the woods at (4, 2)
    # and steps to (4, 1), in LOS at 4 hexes.
    return _battle([dict(label="F", side=1, vehicle="pzkpfw_iiih", hex=(7, 2), facing=3, turret_facing=2),
                    dict(label="M", side=0, vehicle="pzkpfw_iiih", hex=(3, 2), facing=0)], {(4, 2): "woods"})


def _shots(b):
    return [e.event for e in b.log if e.event.kind == "ShotResolved"]


def test_defensive_first_fire_at_each_mp_uses_j2_j1_j():
    """asl.md 5.3 example: firing at each MP of a 5-MP stay in one hex gives J2, J1, J1, J, J (+4 +3 +3 +2 +2)."""
    b = _dff_board()
    assert not RULES.los(b, (3, 2), (7, 2))[0] and RULES.los(b, (4, 1), (7, 2))[0]
    moves = iter([Step(1, Hex(4, 1)), Pivot(1, 1), Pivot(1, 0), Pivot(1, 1), Pivot(1, 0), Pass(1)])

    def answer(d):
        if d.kind == "activate":
            return Activate(d.actors[0], "move" if d.context["phase"] == "MPh" and d.side == 0 else "hold")
        if d.kind == "move_step":
            return next(moves)
        if d.kind == "react":     # fire at each MP, not at the final Stop MP
            return Fire(d.actors[0], d.context["mover"]) if len(_shots(b)) < 5 else Pass(None)
        return Pass(d.actors[0] if d.actors else None)

    # ROF 2: coloured 2 keeps the gun firing; the last three shots hit and roll a dud TK DR
    dice = FixedDice([2, 6, 2, 6, 2, 6, 6, 6, 2, 6, 6, 6, 2, 6, 6, 6])
    _drive(b, dice, answer)
    dice.check_done()
    shots = [s for s in _shots(b) if s.details["kind"] == "defensive_first"]
    j = [s.details["drm"] - 1 + int(s.key.get("acquisition", 0)) for s in shots]   # minus Case I, plus Case N
    assert j == [4, 3, 3, 2, 2]
    assert [s.key["target_los_mp"] for s in shots] == ["1", "2", "3", "4", "5"]
    assert not b.tanks[1].rules_state["motion"] and b.tanks[0].rules_state["fire"] is None   # kept ROF throughout
    # Motion cannot be declared with the next hex affordable (D2.4): the move ends with a Stop MP


def test_defensive_first_fire_after_waiting_gets_two_shots():
    """asl.md 5.3 example: waiting until 5 MP are spent gives two shots at J (3.5 MP, then the last 1.5 MP)."""
    b = _dff_board()
    moves = iter([Step(1, Hex(4, 1)), Pivot(1, 1), Pivot(1, 0), Pivot(1, 1), Pivot(1, 0), Pass(1)])

    def answer(d):
        if d.kind == "activate":
            return Activate(d.actors[0], "move" if d.context["phase"] == "MPh" and d.side == 0 else "hold")
        if d.kind == "move_step":
            return next(moves)
        if d.kind == "react":
            if Fraction(d.context["mp_in_hex"]) >= 5 and len(_shots(b)) < 2:
                return Fire(d.actors[0], d.context["mover"])
            return Pass(None)
        return Pass(d.actors[0] if d.actors else None)

    dice = FixedDice([2, 6, 2, 6, 6, 6])
    _drive(b, dice, answer)
    dice.check_done()
    shots = [s for s in _shots(b) if s.details["kind"] == "defensive_first"]
    assert len(shots) == 2
    assert [s.details["drm"] - 1 + int(s.key.get("acquisition", 0)) for s in shots] == [2, 2]


def test_reachable_counts_half_mp_with_start_and_stop():
    """D2.12-D2.13: 13 MP = 26 half MP: Start + 11 open hexes + Stop; woods cost half the allotment (6.5 MP)."""
    b = _battle([dict(side=0, vehicle="pzkpfw_iiih", hex=(0, 15), facing=0),
                 dict(side=1, vehicle="t34_m41", hex=(19, 0), facing=3)], {(1, 14): "woods"}, size=(20, 20))
    reach = RULES.reachable(b, 0, 26)
    assert reach[(Hex(11, 15), 0)][0] == 26 and (Hex(12, 15), 0) not in reach
    assert reach[(Hex(0, 15), 1)][0] == 2 + 2 + 2          # Start, one hexspine, Stop
    assert RULES.entry_cost(b, 0, Hex(1, 14)) == 13          # 6.5 MP
    assert reach[(Hex(1, 14), 0)][0] == 2 + 13 + 2


def test_board_shot_matches_the_odds_command():
    """The ShotKey of a board shot is the odds parameters: ``tanksim odds --scenario`` gives the same odds."""
    b = _battle([dict(side=0, vehicle="t34_m41", hex=(1, 2), facing=0),
                 dict(side=1, vehicle="pzkpfw_iiih", hex=(4, 2), facing=3, turret_facing=4)], {(2, 1): "building"})
    b.emit(BattleStateSet("phase", "PFPh"))
    sh = RULES.shot(b, 0, 1)
    assert not isinstance(sh, Illegal) and sh.key.range_hexes == 3
    params = RULES.shot_params(b, 0, 1)
    assert RULES.odds_from_params(params) == o.odds_json(sh.key)
    assert params["basic_tk"] == 13 and params["colour"] == "red" and params.get("aspect", "front") == "front"
    assert params["turret_aspect"] == "side" and params["turret_type"] == "RST"


def test_depletion_no_shot_in_play_removes_the_ammo():
    """C8.9 in play: APCR Depletion Number 4 (1941); Original 6 means none aboard; APCR is gone."""
    b = _battle([dict(side=0, vehicle="pzkpfw_iiih", hex=(1, 2), facing=0),
                 dict(side=1, vehicle="t34_m41", hex=(4, 2), facing=3)])
    assert b.tanks[0].rules_state["ammo_left"] == (("APCR", 4),)
    assert b.tanks[1].rules_state["ammo_left"] == ()           # no T-34 APCR before 1942
    b.emit(BattleStateSet("phase", "PFPh"))
    fire = Fire(0, 1, (), "APCR")
    dice = FixedDice([3, 3])
    r = RULES.resolve(b, RULES.shot(b, 0, 1, fire), dice)
    dice.check_done()
    assert r["result"] == "no_ammo" and b.tanks[0].rules_state["ammo_left"] == ()
    assert isinstance(RULES.shot(b, 0, 1, fire), Illegal)
    assert b.tanks[0].rules_state["acq"] is None               # no Acquisition from a no-shot
    assert not isinstance(RULES.shot(b, 0, 1), Illegal)       # AP is unlimited


def test_los_woods_wrecks_and_hull_down():
    b = _battle([dict(side=0, vehicle="pzkpfw_iiih", hex=(1, 2), facing=0),
                 dict(side=1, vehicle="t34_m41", hex=(5, 2), facing=3, ext={"hull_down": (2,)}),
                 dict(side=1, vehicle="t34_m41", hex=(3, 2), facing=3)])
    assert RULES.los(b, (1, 2), (5, 2)) == (True, 1)          # a stationary AFV between: Case R +1
    b.emit(TankStateSet(2, "wreck", "burning"))
    b.emit(StatusChanged(2, "destroyed", "burn"))
    assert RULES.los(b, (1, 2), (5, 2))[0] is False            # burning wreck blocks (default)
    hinder = _battle([dict(side=0, vehicle="pzkpfw_iiih", hex=(1, 2), facing=0),
                      dict(side=1, vehicle="t34_m41", hex=(5, 2), facing=3, ext={"hull_down": (2,)}),
                      dict(side=1, vehicle="t34_m41", hex=(3, 2), facing=3,
                           rules_state={"wreck": "burning"})], options=Options(burning_wreck_los="hinder"))
    hinder.emit(StatusChanged(2, "destroyed", "burn"))
    assert RULES.los(hinder, (1, 2), (5, 2)) == (True, 2)
    sh = RULES.shot(hinder, 0, 1)
    assert sh.key.hull_down and sh.key.hindrance == 2          # LOS crosses the target's hexside 2
    side = RULES.shot(hinder, 0, 1, None)
    assert side.key.tem == 0
    blocked = _battle([dict(side=0, vehicle="pzkpfw_iiih", hex=(1, 2), facing=0),
                       dict(side=1, vehicle="t34_m41", hex=(5, 2), facing=3)], {(3, 2): "woods"})
    assert isinstance(RULES.shot(blocked, 0, 1), Illegal)


def _run(seed, models=None):
    from sim.runner import run_battle
    from sim.scenario import load_scenario
    return run_battle(load_scenario(str(SCENARIO)), seed=seed, model_out=models if models is not None else [],
                      decision_timeout_s=0)


def test_scenario_validates_and_names_the_default_pair():
    from sim.scenario import load_scenario
    sc = load_scenario(str(SCENARIO))
    assert sc.ruleset.name == "asl" and sc.map.width == sc.map.height == 25
    assert {t.vehicle for s in sc.sides for t in s.tanks} == {"pzkpfw_iiih", "t34_m41"}
    assert {t.tile for t in sc.map.terrain} >= {"woods", "building"}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scenario_plays_to_an_outcome_with_well_formed_decisions(seed):
    from sim.model import BattleModel
    from sim.scenario import load_scenario
    m = BattleModel(load_scenario(str(SCENARIO)), seed, decision_timeout_s=0)
    kinds = set()
    while not m.ended:
        d = m._decision
        if d is not None:
            kinds.add(d.kind)
            assert all(m.battle.tanks[a].side == d.side for a in d.actors)
            assert d.legal.contains(d.default) or d.kind == "activate"
        m.advance(1)
    assert m.outcome is not None
    assert {"activate", "move_step"} <= kinds
    log = m.battle.log
    assert not any(e.event.kind in ("ActionRejected", "PolicyFault") for e in log)
    assert [r for e in log for r in e.rolls] == m.dice.history      # every roll belongs to an event
    assert any(e.event.kind == "ShotResolved" for e in log)


def test_scenario_replay_and_determinism():
    models = []
    res = _run(4, models)
    b = models[0].battle
    from sim.model import build_battle
    from sim.scenario import load_scenario
    fresh = build_battle(load_scenario(str(SCENARIO)))
    for row in res.events:
        fresh.emit(event_from_payload(row["kind"], json.loads(row["data"])))

    def state(x):
        return [(t.tank_id, t.hex, t.facing, t.turret_facing, t.status,
                 json.dumps(sorted(t.rules_state.items()), default=str)) for t in x.tanks]

    assert state(fresh) == state(b)
    again = _run(4)
    assert [(e["kind"], e["data"], e["rolls"]) for e in again.events] == \
        [(e["kind"], e["data"], e["rolls"]) for e in res.events]


# ---------------------------------------------------------------------------------------------------------------
# Sequence of play (issue 12): acquisition, Case B/C, Motion, immobilization, off-map sight
# ---------------------------------------------------------------------------------------------------------------

def _play(b, dice, script, turns=1):
    """Play ``turns`` Game Turns answering as tests/cases/PLAY.md does: each ``(kind, actor, action)`` of
    ``script`` answers the next decision of that kind naming that actor (``None``: any); every other decision
    gets its default.  Fails on unused answers or dice.  Returns ``[(decision, answer, legal)]``."""
    todo = list(script)
    seen = []
    for _ in range(turns):
        gen = RULES.play_turn(b, dice)
        try:
            d = next(gen)
            while True:
                a = d.default
                if todo and d.kind == todo[0][0] and (todo[0][1] is None or todo[0][1] in d.actors):
                    a = todo.pop(0)[2]
                seen.append((d, a, d.legal.contains(a)))
                d = gen.send(a)
        except StopIteration:
            pass
    assert not todo, f"answers left unused: {todo}"
    dice.check_done()
    return seen


def _events(b, kind, **match):
    return [e.event for e in b.log if e.event.kind == kind
            and all(getattr(e.event, k) == v for k, v in match.items())]


def _acq_board(**iiih_state):
    # IIIH (side 0, ATTACKER, id 0) at (1, 2) with VCA and TCA 0; the T-34 (id 1) at (5, 0), 4 hexes dead ahead
    # (bearing 0: inside the CA), its MA disabled so it never fires.
    return _battle([dict(label="IIIH", side=0, vehicle="pzkpfw_iiih", hex=(1, 2), facing=0, turret_facing=0,
                         rules_state=iiih_state),
                    dict(label="T34", side=1, vehicle="t34_m41", hex=(5, 0), facing=3, rules_state={"ma": "disabled"})])


def test_acquisition_lost_by_a_delay_mp_turning_the_turret():
    """C6.5 (asl.md 6.5): a TCA change in the MPh without a shot at the acquired target loses Acquisition, so the
    AFPh shot has no Case N: Case B +2, Case A +1 (the turret turns back), Case I +1."""
    b = _acq_board(acq=(1, 1))
    _play(b, FixedDice([5, 6]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                                 ("move_step", 0, Special(0, "delay", {"turret_facing": 1})),
                                 ("move_step", 0, Pass(0)), ("fire", 0, Fire(0, 1))])
    (shot,) = _shots(b)
    assert shot.key["firer_moved"] == "afph" and "acquisition" not in shot.key and shot.details["drm"] == 4
    assert b.tanks[0].rules_state["acq"] == (1, 1)        # gained afresh by the AFPh shot


def test_acquisition_lost_by_a_hull_pivot():
    """C6.5: a VCA change carries the turret, so it is a CA change: no Case N in the AFPh."""
    b = _acq_board(acq=(1, 1))
    _play(b, FixedDice([5, 6]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                                 ("move_step", 0, Pivot(0, 1)), ("move_step", 0, Pass(0)), ("fire", 0, Fire(0, 1))])
    (shot,) = _shots(b)
    assert "acquisition" not in shot.key and shot.details["drm"] == 4 and shot.key["ca_change"] == 1


def test_acquisition_kept_when_the_turret_turns_to_fire_at_the_acquired_target():
    """C6.5: turning the CA to fire at the acquired target keeps it (Case N -1, then -2 on the next shot)."""
    b = _acq_board(acq=(1, 1))
    b.emit(TurretTurned(0, 1))
    _play(b, FixedDice([5, 6]), [("activate", 0, Activate(0, "fire")), ("fire", 0, Fire(0, 1))])
    (shot,) = _shots(b)
    assert shot.key["acquisition"] == 1 and shot.key["ca_change"] == 1 and shot.details["drm"] == 1
    assert b.tanks[0].rules_state["acq"] == (1, 2) and b.tanks[0].turret_facing == 0


def test_acquisition_lost_when_a_new_burning_wreck_blocks_the_los():
    """C6.5: the target leaves the firer's LOS when a burning wreck appears between them (burning_wreck_los:
    block).  A (0, 2) has acquired T (6, 2); S burns W at (3, 2) in the PFPh: TH DR 2-1 hits the hull, side AF
    3, Final TK 13 - 3 = 10, TK DR 1-2 burns."""
    b = _battle([dict(label="A", side=0, vehicle="t34_m41", hex=(0, 2), facing=0, rules_state={"acq": (3, 1)}),
                 dict(label="S", side=0, vehicle="t34_m41", hex=(3, 4), facing=1),
                 dict(label="W", side=1, vehicle="pzkpfw_iiih", hex=(3, 2), facing=0),
                 dict(label="T", side=1, vehicle="pzkpfw_iiih", hex=(6, 2), facing=3)])
    assert RULES.los(b, (0, 2), (6, 2)) == (True, 1)
    _play(b, FixedDice([2, 1, 1, 2]), [("activate", 1, Activate(1, "fire")), ("fire", 1, Fire(1, 2))])
    (shot,) = _shots(b)
    assert shot.result == "burn" and shot.details["final_tk"] == 10
    assert not RULES.los(b, (0, 2), (6, 2))[0] and b.tanks[0].rules_state["acq"] is None
    assert _events(b, "TankStateSet", tank=0, key="acq")


def test_acquisition_lost_when_the_target_moves_out_of_los():
    """C6.5: the DEFENDER's Acquisition on the mover goes when the mover steps behind woods."""
    b = _battle([dict(label="M", side=0, vehicle="pzkpfw_iiih", hex=(4, 1), facing=3),
                 dict(label="F", side=1, vehicle="pzkpfw_iiih", hex=(7, 2), facing=3, rules_state={"acq": (0, 2)})],
                {(4, 2): "woods"})
    assert RULES.los(b, (4, 1), (7, 2))[0] and not RULES.los(b, (3, 2), (7, 2))[0]
    _play(b, FixedDice([]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                             ("move_step", 0, Step(0, Hex(3, 2))), ("move_step", 0, Pass(0))])
    assert b.tanks[1].rules_state["acq"] is None


def test_advancing_fire_after_bounding_first_fire_uses_case_c():
    """D3.32 (asl.md 4 step 5): an AFV that Bounding First Fired its MA and kept ROF fires once more in the
    AFPh with Case C, even without entering a hex.  The BFF before any MP: Case C +4, C2 +2 (0 MP in LOS), I +1;
    coloured 1 <= ROF 2 keeps the gun.  The AFPh shot: Case C +4, I +1."""
    b = _acq_board(acq=(1, 1))
    seen = _play(b, FixedDice([1, 6, 5, 6]),
                 [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move_and_fire")),
                  ("move_step", 0, Fire(0, 1)), ("move_step", 0, Pass(0)), ("fire", 0, Fire(0, 1))])
    bff, afph = _shots(b)
    assert bff.key["firer_moved"] == "bounding_first" and bff.details["drm"] == 7 and bff.details["rof_again"]
    assert "acquisition" not in bff.key                    # a BFF shot neither uses nor keeps it (C6.55)
    assert afph.key["firer_moved"] == "bounding_afph" and afph.details["drm"] == 5
    assert all(ok for _d, _a, ok in seen)
    assert not any(e.kind == "RuleEvent" and e.name == "mp" for e in (x.event for x in b.log))  # no MP spent


def _motion_board(terrain=None):
    return _battle([dict(label="IIIH", side=0, vehicle="pzkpfw_iiih", hex=(0, 1), facing=0),
                    dict(label="T34", side=1, vehicle="t34_m41", hex=(11, 1), facing=3,
                         rules_state={"ma": "disabled"})], terrain, size=(12, 3))


def test_motion_cannot_be_declared_while_the_next_hex_is_affordable():
    """D2.4 (asl.md 5.1): Motion needs the whole allotment spent or a hex it cannot afford; with open ground
    ahead and 11 MP left the declaration is illegal and the move ends with a Stop MP."""
    b = _motion_board()
    motion = Special(0, "end_move", {"status": "motion"})
    seen = _play(b, FixedDice([]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                                    ("move_step", 0, Step(0, Hex(1, 1))), ("move_step", 0, motion)])
    last = [d for d, a, _ok in seen if a == motion][0]
    assert not last.legal.contains(motion) and last.context["can_motion"] is False
    assert b.tanks[0].rules_state["motion"] is False
    assert [e.data["kind"] for e in _events(b, "RuleEvent", name="mp")] == ["start", "enter", "stop"]


def test_motion_declared_before_an_unaffordable_hex():
    """D2.4: after Start + 6 open hexes (7 MP) the IIIH has 6 MP; the woods front hex costs 6.5: it may declare
    Motion and stays a moving target."""
    b = _motion_board({(7, 1): "woods"})
    steps = [("move_step", 0, Step(0, Hex(q, 1))) for q in range(1, 7)]
    motion = Special(0, "end_move", {"status": "motion"})
    assert not RULES.has_target(b, 0)                      # the woods hide the T-34: no PFPh decision
    seen = _play(b, FixedDice([]), [("activate", 0, Activate(0, "move")), *steps, ("move_step", 0, motion)])
    assert [ok for _d, a, ok in seen if a == motion] == [True]
    assert b.tanks[0].rules_state["motion"] is True and _events(b, "RuleEvent", name="motion")


def test_immobilized_turreted_afv_turns_its_turret_with_a_delay_mp():
    """D8.1 (asl.md 9.1, 5.1): an Immobilized AFV's turret still turns; without moving that takes a Delay MP in
    its MPh.  It is offered no Step, Pivot or Start."""
    b = _acq_board(immobilized=True)
    seen = _play(b, FixedDice([]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                                    ("move_step", 0, Special(0, "delay", {"turret_facing": 2})),
                                    ("move_step", 0, Pass(0))])
    step = [d for d, _a, _ok in seen if d.kind == "move_step"][0]
    assert step.context["mobile"] is False
    assert not step.legal.contains(Step(0, Hex(2, 1))) and not step.legal.contains(Pivot(0, 1))
    assert _events(b, "TurretTurned", tank=0, turret_facing=2)
    assert [e.data["kind"] for e in _events(b, "RuleEvent", name="mp")] == ["delay"]
    assert b.tanks[0].hex == (1, 2) and b.tanks[0].facing == 0


def test_reverse_switch_start_rolls_mechanical_reliability():
    """D2.51 (asl.md 5.1): every Start MP of a red-MP AFV costs a DR, the Start of a forward/Reverse switch
    (D2.21) too."""
    b = _battle([dict(label="T34", side=0, vehicle="t34_m41", hex=(3, 2), facing=0),
                 dict(label="IIIH", side=1, vehicle="pzkpfw_iiih", hex=(9, 0), facing=3,
                      rules_state={"ma": "disabled"})])
    _play(b, FixedDice([1, 1, 1, 2]), [("activate", 0, Activate(0, "hold")), ("activate", 0, Activate(0, "move")),
                                       ("move_step", 0, Step(0, Hex(4, 2))), ("move_step", 0, Step(0, Hex(3, 2))),
                                       ("move_step", 0, Pass(0))])
    mps = [(e.data["kind"], e.data.get("reliability_dr")) for e in _events(b, "RuleEvent", name="mp")]
    assert mps == [("start", [1, 1]), ("enter", None), ("stop", None), ("start", [1, 2]), ("reverse", None),
                   ("stop", None)]


def test_los_on_a_what_if_view_matches_the_board_with_the_tank_moved():
    """Issue 14: a what-if view's Case R table is its base board's with the placed tank moved; every LOS answer
    on the view equals the answer on a board where that tank really stands there (wreck, abandoned and
    stationary AFVs hinder, a moving AFV does not)."""
    from sim.battle import HypoView
    from sim.events import Status, StatusChanged, TankStateSet

    tanks = [dict(label=f"t{i}", side=i % 2, vehicle="pzkpfw_iiih", hex=h, facing=0)
             for i, h in enumerate([(0, 2), (3, 2), (5, 2), (9, 2), (4, 1), (6, 1)])]
    b = _battle(tanks)
    b.emit(StatusChanged(2, Status.DESTROYED, "elim"))
    b.emit(TankStateSet(4, "motion", True))
    b.emit(TankStateSet(4, "moved", True))
    cells = sorted(b.map.cells)
    for tid, where in ((1, Hex(7, 2)), (4, Hex(2, 2)), (5, Hex(3, 2))):
        view = HypoView(b, tid, where, 0)
        moved = [dict(t, hex=tuple(where) if i == tid else t["hex"]) for i, t in enumerate(tanks)]
        real = _battle(moved)
        real.emit(StatusChanged(2, Status.DESTROYED, "elim"))
        real.emit(TankStateSet(4, "motion", True))
        real.emit(TankStateSet(4, "moved", True))
        for a in cells[::3]:
            for c in cells[1::4]:
                assert RULES.los(view, a, c) == RULES.los(real, a, c), (tid, a, c)
    assert RULES.los(b, (0, 2), (9, 2)) == (True, 2)      # the stationary AFV at (3, 2) and the wreck at (5, 2)


def test_shot_table_matches_a_fresh_shot_at_every_event():
    """The per-battle shot table (issue 14) answers exactly what a fresh computation does, on the board and on
    what-if views (a target placed elsewhere, a firer placed elsewhere), at every event of a real battle."""
    from sim.battle import HypoView
    from sim.model import BattleModel
    from sim.rules.asl.play import _SHOT_MEMO
    from sim.scenario import load_scenario

    m = BattleModel(load_scenario("asl_1941_meeting"), 3)
    b = m.battle
    rs = b.ruleset
    seen = {"checks": 0, "events": 0}

    def same(board, s, t):
        fresh = rs._shot_now(board, s, t, None, None)
        assert rs.shot(board, s, t) == fresh
        assert rs.shot(board, s, t) == fresh   # the second ask is a table hit
        seen["checks"] += 1

    def listen(entry):
        seen["events"] += 1
        if seen["events"] % 3:
            return
        live = [t for t in b.tanks if t.alive and t.hex is not None]
        for s in live:
            for t in live:
                if s.side == t.side:
                    continue
                same(b, s.tank_id, t.tank_id)
                for k in (0, 3):
                    n = t.hex.neighbour(k)
                    if n in b.map and not b.occupants(n):
                        same(HypoView(b, t.tank_id, n, (t.facing + k) % 6), s.tank_id, t.tank_id)
                        same(HypoView(b, s.tank_id, n, (s.facing + k) % 6), s.tank_id, t.tank_id)

    b.listeners.append(listen)
    m.run()
    assert seen["events"] > 30 and seen["checks"] > 500, seen
    assert len(_SHOT_MEMO[b].shots) > 0


def test_catalog_defaults_are_reported_for_the_vehicles_a_scenario_plays_only():
    # asl.md 3.2: missing catalog data is defaulted with a warning -- for a vehicle the scenario uses; the docs'
    # example builds its T-34/85 on the catalog's t34_m41 (a base only) and plays the catalog's pzkpfw_iiih
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-m", "sim.cli", "validate", "docs/examples/t34_85_1944.yaml"], cwd=root,
                         capture_output=True, text=True, timeout=120, env={**__import__("os").environ,
                                                                            "TANKSIM_LOG": "warning"})
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if "defaults used for" in line]
    assert [w.split("vehicle ")[1].split(":")[0] for w in warned] == ["t34_85", "pzkpfw_iiih"], out.stderr
