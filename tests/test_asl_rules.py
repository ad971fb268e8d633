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
from sim.rules import asl_odds as o
from sim.rules.asl import ASL, Options, ca_turns, hull_down_hexsides, target_face
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

from agents.actions import Activate, Fire, Pass, Pivot, Special, Step  # noqa: E402
from sim.battle import MemoryBattle  # noqa: E402
from sim.events import BattleStateSet, StatusChanged, TankStateSet, event_from_payload  # noqa: E402
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
