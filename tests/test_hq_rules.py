"""Rule tests for the ``hummel_quest`` rule set (docs/rules/hummel_quest.md): golden cases, exact consistency of the
odds with the rolled stages (every fixed dice sequence), Monte Carlo agreement, overkill, parameter errors,
stat-block validation, geometry helpers, and the sequence of play (panic cascade, flight, recovery, wrecks)."""
from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dice import DiceExhausted, DiceSource, FixedDice
from sim.hexgrid import Hex, distance, hexagon_hexes
from sim.rules.base import CaseError
from sim.rules.hummel_quest import (
    HQBoard,
    HummelQuest,
    default_facing,
    evade_default,
    flags,
    flee_plan,
    line_pair,
    ram_legal,
    sectors_of,
    sight,
)
from sim.rules.hummel_quest import odds as o
from sim.rules.hummel_quest.stats import HQOptions, StatBlockError, catalog, parse_vehicles

CASES_FILE = Path(__file__).parent / "cases" / "hummel_quest.yaml"
CASES = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["cases"]
RULES = HummelQuest()


def _norm(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    try:
        return Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        return v


# ---------------------------------------------------------------------------------------------------------------
# Golden cases
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case):
    got = RULES.run_case(case)
    for k, v in case["expect"].items():
        assert k in got, f"{k} missing from {sorted(got)}"
        assert _norm(got[k]) == _norm(v), f"{k}: expected {v!r}, got {got[k]!r}"


def test_all_case_kinds_present():
    assert {c["kind"] for c in CASES} == {"odds", "outcome", "geometry"}


# ---------------------------------------------------------------------------------------------------------------
# Exhaustive enumeration of fixed dice sequences
# ---------------------------------------------------------------------------------------------------------------

def enumerate_dice(fn, limit: int = 200_000):
    """Run ``fn(dice)`` on every natural d10 sequence it can consume (a tree search that extends a prefix whenever
    the rules ask for one more roll); return ``{outcome: probability}``."""
    out: dict = {}
    stack = [()]
    runs = 0
    while stack:
        prefix = stack.pop()
        runs += 1
        assert runs < limit, "enumeration too large for a unit test"
        d = FixedDice(prefix)
        try:
            res = fn(d)
        except DiceExhausted:
            stack.extend(prefix + (v,) for v in range(1, 11))
            continue
        d.check_done()
        out[res] = out.get(res, Fraction(0)) + Fraction(1, 10 ** len(prefix))
    assert sum(out.values()) == 1
    return out


def brute_keep_lowest(n, k, mod=0):
    dist = {}
    for dice in itertools.product(range(1, 11), repeat=n):
        v = max(0, sum(sorted(dice)[:k]) + mod)
        dist[v] = dist.get(v, Fraction(0)) + Fraction(1, 10 ** n)
    return dist


@pytest.mark.parametrize("n,k", [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3), (4, 2), (4, 3)])
def test_keep_lowest_order_statistics_equal_brute_force(n, k):
    assert o.keep_lowest_dist(n, k) == brute_keep_lowest(n, k)


def test_keep_lowest_known_values():
    assert o.expectation(o.keep_lowest_dist(3, 2)) == Fraction(341, 40)
    d = o.keep_lowest_dist(2, 1)
    assert all(d[x] == Fraction(21 - 2 * x, 100) for x in range(1, 11))
    assert o.keep_lowest_dist(2, 1, -3)[0] == sum(Fraction(21 - 2 * x, 100) for x in range(1, 4))


def test_keep_lowest_large_pool_is_fast_and_normalised():
    d = o.keep_lowest_dist(30, 5)
    assert sum(d.values()) == 1 and min(d) == 5 and max(d) == 50


W = o.WeaponKey
SHOT_KEYS = [
    o.ShotKey(tn=9, roll_bonus=3, weapons=(W(True, 2, 1),), target_dt=6),
    o.ShotKey(tn=9, roll_bonus=3, weapons=(W(True, 3, 2),), target_dt=9, ost_hit_timing="before_damage"),
    o.ShotKey(tn=8, roll_bonus=2, weapons=(W(True, 1, 1, 0, 2),), target_dt=12),                     # burst 2
    o.ShotKey(tn=8, roll_bonus=2, weapons=(W(True, 1, 1, 0, 2),), target_dt=5, burst_first_shot="own_roll"),
    o.ShotKey(tn=10, roll_bonus=1, weapons=(W(True, 2, 1), W(False, 2, 1), W(True, 1, 1, -2, 2)), target_dt=4),
    o.ShotKey(tn=12, roll_bonus=0, weapons=(W(True, 1, 1),), target_dt=3, to_hit_naturals=True),
    o.ShotKey(tn=6, roll_bonus=1, weapons=(W(True, 1, 1),), target_dt=0),                              # overkill
    o.ShotKey(tn=0, roll_bonus=0, weapons=(W(True, 2, 1),), target_dt=7, auto_hit=True, structure=True),
]


@pytest.mark.parametrize("key", SHOT_KEYS, ids=range(len(SHOT_KEYS)))
def test_attack_odds_equal_sum_over_every_dice_sequence(key):
    dt, ost = key.target_dt, 3

    def run(d):
        r = o.roll_attack(key, d)
        e = o.damage_effect(dt, ost, r.damage, r.any_hit, timing=key.ost_hit_timing,
                            core_destroyed=r.core_destroyed, ost_applies=not key.structure)
        return r.damage, r.any_hit, e.dt_before > 0 and e.incapacitated, e.ost_loss > 0, r.core_destroyed

    dist = enumerate_dice(run)
    odds = o.attack_odds(key)
    dmg = {}
    for (damage, *_), p in dist.items():
        dmg[damage] = dmg.get(damage, 0) + p
    assert odds.damage == {k: v for k, v in sorted(dmg.items()) if v}
    assert odds.p_hit == sum(p for k, p in dist.items() if k[1])
    assert odds.p_kill == sum(p for k, p in dist.items() if k[2])
    assert odds.p_ost_loss == sum(p for k, p in dist.items() if k[3])
    assert odds.p_core_destroyed == sum(p for k, p in dist.items() if k[4])
    assert odds.expected_damage == sum(k[0] * p for k, p in dist.items())


def test_per_damaging_hit_overkill_equals_enumeration():
    """Every To Hit and damage die enumerated; the overkill pairs, counted per damaging shot, are weighed by their own
    exact law (a pair shows 2 with probability 1/100), which keeps the enumeration small."""
    key = o.ShotKey(tn=6, roll_bonus=1, weapons=(W(True, 1, 1, -4, 2),), target_dt=0, overkill_roll="per_damaging_hit")

    class Counting(FixedDice):
        def roll(self, die="d10", label=""):
            if label == "overkill":
                self.pairs = getattr(self, "pairs", 0) + 0.5
                return 5
            return super().roll(die, label)

    def run(d):
        d.__class__ = Counting
        r = o.roll_attack(key, d)
        return int(getattr(d, "pairs", 0)), sum(1 for s in r.shots if s.damage > 0)

    dist = enumerate_dice(run)
    assert all(pairs == dmg_shots for pairs, dmg_shots in dist)
    exact = sum(p * (1 - Fraction(99, 100) ** pairs) for (pairs, _), p in dist.items())
    assert o.attack_odds(key).p_core_destroyed == exact > 0


RAM_KEYS = [
    o.RamKey(pool=3, tn=5, damage=4, return_damage=0, target_dt=4),
    o.RamKey(pool=3, tn=5, damage=3, return_damage=2, target_dt=10, attacker_dt=2, ones_tens=True,
             return_applies=True),
    o.RamKey(pool=2, tn=10, damage=0, return_damage=0, target_dt=7),
    o.RamKey(pool=2, tn=6, damage=5, return_damage=0, target_dt=0),                                   # overkill
    o.RamKey(pool=0, tn=6, damage=5, return_damage=0, target_dt=3),
]


@pytest.mark.parametrize("key", RAM_KEYS, ids=range(len(RAM_KEYS)))
def test_ram_odds_equal_sum_over_every_dice_sequence(key):
    adt = key.attacker_dt if key.attacker_dt is not None else 99

    def run(d):
        r = o.roll_ram(key, d)
        tgt, att = o.ram_effect(r, target_dt=key.target_dt, target_ost=3, attacker_dt=adt, attacker_ost=3)
        return (r.collision, r.damage, r.return_damage, tgt.became_incapacitated, att.became_incapacitated,
                tgt.ost_loss > 0, r.core_destroyed)

    dist = enumerate_dice(run)
    odds = o.ram_odds(key)
    assert odds.p_success == sum(p for k, p in dist.items() if k[0])
    assert odds.p_kill == sum(p for k, p in dist.items() if k[3])
    assert odds.p_ost_loss == sum(p for k, p in dist.items() if k[5])
    assert odds.p_core_destroyed == sum(p for k, p in dist.items() if k[6])
    assert odds.expected_damage == sum(k[1] * p for k, p in dist.items())
    assert odds.expected_return_damage == sum(k[2] * p for k, p in dist.items())
    if key.attacker_dt is not None:
        assert odds.p_attacker_incapacitated == sum(p for k, p in dist.items() if k[4])


@pytest.mark.parametrize("pool,tn,need,rule", [(p, tn, s, r) for p in (0, 1, 2, 3) for tn in (1, 2, 6, 10, 11)
                                                for s in (0, 1, 2) for r in (False, True)])
def test_check_odds_equal_sum_over_every_dice_sequence(pool, tn, need, rule):
    dist = enumerate_dice(lambda d: _check_run(d, pool, tn, need, rule))
    odds = o.check_odds(pool, tn, need, rule)
    assert odds.p_success == sum(p for k, p in dist.items() if k[0])
    assert odds.p_auto_fail == sum(p for k, p in dist.items() if k[1] == "auto_fail")
    assert odds.p_auto_pass == sum(p for k, p in dist.items() if k[1] == "auto_pass")


def _check_run(d, pool, tn, need, rule):
    r = o.roll_pool(d, pool, tn, need, rule)
    return r.passed, r.how


@settings(max_examples=60, deadline=None)
@given(tn=st.integers(0, 25), bonus=st.integers(-5, 12), n=st.integers(1, 4), k=st.integers(1, 4),
       burst=st.integers(1, 3), dt=st.integers(0, 20), mod=st.integers(-3, 3), own=st.booleans(),
       nat=st.booleans())
def test_attack_odds_are_a_distribution(tn, bonus, n, k, burst, dt, mod, own, nat):
    k = min(k, n)
    key = o.ShotKey(tn=tn, roll_bonus=bonus, weapons=(W(True, n, k, mod, burst), W(True, 1, 1)), target_dt=dt,
                    burst_first_shot="own_roll" if own else "shared_roll", to_hit_naturals=nat)
    a = o.attack_odds(key)
    assert sum(a.damage.values()) == 1
    assert 0 <= a.p_kill <= a.p_hit <= 1
    assert sum(a.hit_damage.values()) == a.p_hit
    assert 0 <= a.p_ost_loss <= a.p_hit


# ---------------------------------------------------------------------------------------------------------------
# Monte Carlo agreement (4 sigma, fixed seeds)
# ---------------------------------------------------------------------------------------------------------------

def _within(count, n, p, label):
    sigma = math.sqrt(float(p * (1 - p)) / n) or 1e-12
    freq = count / n
    assert abs(freq - float(p)) <= 4 * sigma + 1e-12, f"{label}: {freq} vs exact {float(p)} (sigma {sigma})"


@pytest.mark.slow
def test_monte_carlo_to_hit_and_keep_lowest_damage():
    key = o.ShotKey(tn=10, roll_bonus=3, weapons=(W(True, 4, 2), W(True, 2, 1, 0, 2)), target_dt=9)
    exact = o.attack_odds(key)
    dice = DiceSource(20240611)
    n = 20_000
    hits = kills = 0
    dmg = {}
    for _ in range(n):
        r = o.roll_attack(key, dice)
        hits += r.any_hit
        kills += r.damage >= 9
        dmg[r.damage] = dmg.get(r.damage, 0) + 1
    _within(hits, n, exact.p_hit, "p_hit")
    _within(kills, n, exact.p_kill, "p_kill")
    for v in (0, 3, 6, 10):
        _within(dmg.get(v, 0), n, exact.damage.get(v, Fraction(0)), f"damage {v}")


@pytest.mark.slow
def test_monte_carlo_keep_lowest_large_pool():
    exact = o.keep_lowest_dist(6, 3)
    dice = DiceSource(7)
    n = 20_000
    counts = {}
    for _ in range(n):
        v = sum(sorted(dice.rolls(6, "d10"))[:3])
        counts[v] = counts.get(v, 0) + 1
    for v in (3, 6, 9, 12, 15):
        _within(counts.get(v, 0), n, exact.get(v, Fraction(0)), f"6d10k3 = {v}")


@pytest.mark.slow
@pytest.mark.parametrize("pool,tn,rule", [(6, 5, False), (6, 5, True), (3, 6, True), (2, 10, False)])
def test_monte_carlo_ram_and_pool_checks(pool, tn, rule):
    key = o.RamKey(pool=pool, tn=tn, damage=3, return_damage=1, target_dt=5, ones_tens=rule, return_applies=True)
    exact = o.ram_odds(key)
    chk = o.check_odds(pool, tn, 1, rule)
    dice = DiceSource(1000 + pool * 10 + tn)
    n = 20_000
    coll = af = ap = 0
    for _ in range(n):
        r = o.roll_ram(key, dice)
        coll += r.collision
        af += r.check.how == "auto_fail"
        ap += r.check.how == "auto_pass"
    _within(coll, n, exact.p_success, "ram collision")
    _within(af, n, chk.p_auto_fail, "auto fail")
    _within(ap, n, chk.p_auto_pass, "auto pass")


# ---------------------------------------------------------------------------------------------------------------
# Overkill, naturals, options
# ---------------------------------------------------------------------------------------------------------------

def test_overkill_destroys_the_core_only_on_two():
    key = o.ShotKey(tn=3, roll_bonus=0, weapons=(W(True, 1, 1),), target_dt=0)
    for a, b in itertools.product(range(1, 11), repeat=2):
        d = FixedDice([5, 4, a, b])
        r = o.roll_attack(key, d)
        d.check_done()
        assert r.core_destroyed == (a + b == 2)
    # no damage, no overkill roll
    miss = FixedDice([1])
    assert not o.roll_attack(o.ShotKey(tn=5, roll_bonus=0, weapons=(W(True, 1, 1),), target_dt=0), miss).any_hit
    miss.check_done()
    # the outcome-case path reports it too
    out = RULES.run_case({"kind": "outcome", "given": {
        "mode": "shot", "reality_com": 2, "range_m": 50, "target_size": 4, "firepower": 5, "target_dur": 4,
        "damage_dice": 1, "damage_keep": 1, "target_dt": 0, "target_ost": 3, "dice": [9, 6, 1, 1]}})
    assert out["core_destroyed"] is True and out["incapacitated"] is True and out["ost_after"] == 3


def test_to_hit_naturals_option():
    assert o.hit_faces(0, 25, naturals=True) == 1 and o.hit_faces(0, 25) == 0
    assert o.hit_faces(20, 3, naturals=True) == 9 and o.hit_faces(20, 3) == 10


def test_band_edges_and_tn_clamp_options():
    assert o.band_of(100).number == 2 and o.band_of(100, "upper_inclusive").number == 1
    assert o.band_of(3000).number == 5 and o.band_of(3000, "upper_inclusive").number == 5
    assert o.band_of(3001).number == 6 and o.band_of(1199).number == 4 and o.band_of(1200).number == 5
    assert o.tn_to_hit(8, 6, moved_half=True) == 4
    assert o.tn_to_hit(8, 6, moved_half=True, tn_clamp="final") == 3
    j = RULES.odds_from_params({"mode": "shot", "reality_com": "0", "range_m": "50", "target_size": "6",
                                "shooter_moved_half": "true", "firepower": "2", "target_dur": "1",
                                "damage_dice": "1", "damage_keep": "1", "target_dt": "5", "tn_clamp": "final"})
    assert j["tn"] == 3


def test_effective_dur_rules():
    assert o.effective_dur(6, reinforced_turret=True, half_cover=True) == 12
    assert o.effective_dur(6, reinforced_turret=True, half_cover=True, aspect="side") == 11
    assert o.effective_dur(6, reinforced_turret=True, half_cover=True, indirect=True, aspect="rear") == 4
    assert o.effective_dur(1, indirect=True) == 0


def test_no_damage_mode_hits_without_damage():
    j = RULES.odds_from_params({"reality_com": 2, "to_hit": 1, "range_m": 450, "target_size": 2, "firepower": 4,
                                "target_dur": 3, "damage_dice": 3, "damage_keep": 2, "target_dt": 5,
                                "fp_requirement_mode": "no_damage"})
    assert j["legal"] is True and j["damaging"] is False and j["damage"] == {"0": "1"}
    assert Fraction(j["p_hit"]) > 0 and Fraction(j["p_ost_loss"]) == Fraction(j["p_hit"])


def test_burst_convolution_matches_independent_shots():
    # One burst-2 weapon with the shared roll: two independent shots at the same TN.
    key = o.ShotKey(tn=9, roll_bonus=2, weapons=(W(True, 2, 1, 0, 2),), target_dt=30)
    p = Fraction(4, 10)
    one = o.mixture(((1 - p, o.point(0)), (p, o.keep_lowest_dist(2, 1))))
    assert o.attack_odds(key).damage == {k: v for k, v in sorted(o.convolve(one, one).items()) if v}
    assert o.attack_odds(key).p_hit == 1 - (1 - p) ** 2


# ---------------------------------------------------------------------------------------------------------------
# The odds command: JSON shape and parameter errors
# ---------------------------------------------------------------------------------------------------------------

BASE_SHOT = {"reality_com": "2", "to_hit": "1", "range_m": "99", "target_size": "2", "firepower": "5",
             "target_dur": "4", "damage_dice": "3", "damage_keep": "2", "target_dt": "10"}


def test_odds_json_shape():
    j = RULES.odds_from_params(BASE_SHOT)
    for k in ("mode", "legal", "reason", "band", "band_tn", "fp_needed", "tn", "effective_dur", "damaging",
              "p_hit", "damage", "expected_damage", "p_kill", "p_ost_loss", "p_core_destroyed"):
        assert k in j
    assert isinstance(j["tn"], int) and isinstance(j["legal"], bool) and j["reason"] is None
    keys = list(j["damage"])
    assert keys == sorted(keys, key=int) and all(Fraction(v) > 0 for v in j["damage"].values())
    typed = {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in BASE_SHOT.items()}
    assert RULES.odds_from_params(typed) == j
    r = RULES.odds_from_params({"mode": "ram", "pool": 6, "tn_to_be_struck": 5, "damage_from_strike": 12,
                                "target_dur": 4, "target_size": 4, "target_dt": 4})
    assert "p_attacker_incapacitated" not in r and r["return_damage"] == {"0": "1"}
    c = RULES.odds_from_params({"mode": "check", "pool": "0", "tn": "6"})
    assert c["p_success"] == "0" and c["p_kill"] == "0"


def test_odds_reasons():
    j = RULES.odds_from_params({**BASE_SHOT, "range_m": "3001"})
    assert j["legal"] is False and j["reason"] == "beyond_sight" and j["damage"] == {"0": "1"}
    j = RULES.odds_from_params({**BASE_SHOT, "range_m": "99", "indirect": "1"})
    assert j["reason"] == "indirect_below_min_range"


@pytest.mark.parametrize("params,needle", [
    ({**BASE_SHOT, "colour": "red"}, "unknown parameter 'colour'"),
    ({**BASE_SHOT, "range_m": "ten"}, "range_m"),
    ({**BASE_SHOT, "range_m": "1.5"}, "range_m"),
    ({**BASE_SHOT, "indirect": "maybe"}, "indirect"),
    ({**BASE_SHOT, "aspect": "top"}, "aspect"),
    ({**BASE_SHOT, "damage_keep": "4"}, "damage_keep"),
    ({k: v for k, v in BASE_SHOT.items() if k != "firepower"}, "firepower"),
    ({**BASE_SHOT, "mode": "duel"}, "mode"),
    ({**BASE_SHOT, "range_m": "-1"}, "range_m"),
    ({**BASE_SHOT, "tn_clamp": "sometimes"}, "tn_clamp"),
    ({"mode": "ram", "pool": "3"}, "tn_to_be_struck"),
    ({"mode": "check", "pool": "3", "tn": "6", "ones_tens_rule": "2"}, "ones_tens_rule"),
])
def test_odds_parameter_errors(params, needle):
    with pytest.raises(CaseError, match=needle):
        RULES.odds_from_params(params)


def test_bad_case_kind_and_missing_dice():
    with pytest.raises(CaseError):
        RULES.run_case({"kind": "poetry", "given": {}})
    with pytest.raises(CaseError):
        RULES.run_case({"kind": "outcome", "given": {"mode": "check", "pool": 1, "tn": 6}})


def test_outcome_case_rejects_leftover_dice():
    from sim.dice import DiceError
    with pytest.raises(DiceError):
        RULES.run_case({"kind": "outcome", "given": {"mode": "check", "pool": 1, "tn": 6, "dice": [6, 6]}})


def test_ram_outcome_case():
    out = RULES.run_case({"kind": "outcome", "given": {
        "mode": "ram", "pool": 3, "tn_to_be_struck": 5, "damage_from_strike": 12, "target_dur": 4,
        "target_size": 5, "target_dt": 10, "target_ost": 1, "attacker_size": 4, "attacker_dur": 4,
        "attacker_dt": 2, "target_damage_from_strike": 10, "dice": [2, 7, 3]}})
    assert out["result"] == "collision" and out["successes"] == 1 and out["damage"] == 3
    assert out["dt_after"] == 7 and out["ost_after"] == 0 and out["panicked"] is True
    assert out["return_damage"] == 2 and out["attacker_dt_after"] == 0
    out = RULES.run_case({"kind": "outcome", "given": {
        "mode": "ram", "pool": 2, "tn_to_be_struck": 5, "damage_from_strike": 12, "target_dur": 4,
        "target_size": 5, "target_dt": 10, "target_ost": 1, "dice": [1, 4]}})
    assert out["result"] == "evaded" and out["damage"] == 0 and out["ost_after"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Stat blocks and options
# ---------------------------------------------------------------------------------------------------------------

def _block(**over):
    raw = yaml.safe_load((Path(__file__).parents[1] / "sim/rules/data/hummel_quest_vehicles.yaml")
                         .read_text(encoding="utf-8"))["vehicles"][2]
    raw = {**raw, **over}
    return {"vehicles": [raw]}


def test_catalog_loads_and_is_valid():
    cat = catalog()
    assert {"hq_quest_era_sample", "hq_example_scout", "hq_example_medium", "hq_example_heavy",
            "hq_example_spg", "hq_example_rammer"} <= set(cat)
    assert RULES.vehicle("hq_example_heavy").features.reinforced_turret is True
    assert RULES.vehicle_ids() == tuple(cat)
    assert RULES.has_turret(cat["hq_example_heavy"]) is False
    with pytest.raises(KeyError):
        RULES.vehicle("tiger")


@pytest.mark.parametrize("mutate,needle", [
    (lambda b: {**b, "size": 3}, "weapon sizes"),
    (lambda b: {**b, "weapons": [{**b["weapons"][0], "damage": {"dice": 2, "keep": 3}}]}, "keep"),
    (lambda b: {**b, "features": {**b["features"], "smoke_launcher": True}}, "smoke_launcher"),
    (lambda b: {**b, "features": {**b["features"], "artillery_sights": 5}}, "artillery_sights"),
    (lambda b: {k: v for k, v in b.items() if k != "dur"}, "dur"),
    (lambda b: {**b, "weapons": [{k: v for k, v in b["weapons"][0].items() if k != "reload"}]}, "reload"),
])
def test_stat_block_load_errors(mutate, needle):
    raw = _block()["vehicles"][0]
    with pytest.raises(StatBlockError, match=needle):
        parse_vehicles({"vehicles": [mutate(raw)]}, origin="x.yaml")


def test_stat_block_duplicate_and_speed_warning(caplog):
    raw = _block()["vehicles"][0]
    with pytest.raises(StatBlockError, match="duplicate"):
        parse_vehicles({"vehicles": [raw, raw]})
    with caplog.at_level("WARNING", logger="sim"):   # a rule-set warning goes to tanksim's logging (sim.logs)
        parse_vehicles({"vehicles": [{**raw, "speed_m": 55}]})
    assert any("speed_m 55" in r.getMessage() and r.name.startswith("sim.rules.hummel_quest")
               for r in caplog.records)


def test_options_defaults_and_fixed():
    from pydantic import ValidationError
    opt = HQOptions()
    assert opt.hex_size_m == 10 and opt.tn_min == 3 and opt.ost_witness_loss == 2 and opt.max_rounds == 50
    assert RULES.Options is HQOptions
    with pytest.raises(ValidationError):
        HQOptions(flee_algorithm="random")
    with pytest.raises(ValidationError):
        HQOptions(no_such_option=1)


# ---------------------------------------------------------------------------------------------------------------
# Geometry helpers
# ---------------------------------------------------------------------------------------------------------------

def _line_opposite_nudge(a, b):
    """An independent implementation of §7.5 line B (nudge (-1e-6, -2e-6, +3e-6))."""
    n = distance(a, b)
    if n == 0:
        return (Hex(*a),)
    nz = (-1e-6, -2e-6, 3e-6)
    ax, ay, az = a[0] + nz[0], a[1] + nz[1], -a[0] - a[1] + nz[2]
    bx, by, bz = b[0] + nz[0], b[1] + nz[1], -b[0] - b[1] + nz[2]
    out = []
    for i in range(n + 1):
        t = i / n
        x, y, z = ax + (bx - ax) * t, ay + (by - ay) * t, az + (bz - az) * t
        rx, ry, rz = round(x), round(y), round(z)
        dx, dy, dz = abs(rx - x), abs(ry - y), abs(rz - z)
        if dx > dy and dx > dz:
            rx = -ry - rz
        elif dy > dz:
            ry = -rx - rz
        out.append(Hex(int(rx), int(ry)))
    return tuple(out)


def test_line_b_is_the_opposite_nudge():
    differ = 0
    for a in hexagon_hexes(2):
        for b in hexagon_hexes(7):
            la, lb = line_pair(a, b)
            assert lb == _line_opposite_nudge(a, b)
            assert la[0] == lb[0] == a and la[-1] == lb[-1] == b
            differ += la != lb
    assert differ > 0  # lines along hexsides resolve differently


def _board(radius=6, blocks=(), cover=(), imp=(), tanks=()):
    cells = frozenset(hexagon_hexes(radius))
    where = {Hex(*h): i for i, h in enumerate(tanks)}
    return HQBoard(cells, lambda h: flags(passable=h not in set(map(Hex._make, imp)),
                                          blocks_los=h in set(map(Hex._make, blocks)),
                                          hard_cover=h in set(map(Hex._make, cover))), lambda h: where.get(h))


def test_sight_two_lines():
    # along a hexside: [0,0] -> [2,-1] passes between [1,-1] and [1,0]
    la, lb = line_pair((0, 0), (2, -1))
    mids = {la[1], lb[1]}
    assert mids == {Hex(1, -1), Hex(1, 0)}
    assert sight(_board(), (0, 0), (2, -1)).visibility == "visible"
    s = sight(_board(blocks=[la[1]]), (0, 0), (2, -1))
    assert (s.visibility, s.half_cover, s.direct_shot) == ("partial", True, True)
    s = sight(_board(blocks=[(1, -1), (1, 0)]), (0, 0), (2, -1))
    assert (s.visibility, s.direct_shot) == ("hidden", False)
    s = sight(_board(tanks=[(0, 0), (2, -1), la[1]]), (0, 0), (2, -1))
    assert (s.visibility, s.half_cover) == ("visible", True)       # a tank next to the target gives cover
    assert sight(_board(tanks=[(0, 0), (2, -1), la[1]]), (0, 0), (2, -1), tanks_give_cover=False).half_cover is False
    assert sight(_board(cover=[(2, -1)]), (0, 0), (2, -1)).half_cover is True
    assert sight(_board(blocks=[la[1]]), (0, 0), (2, -1), los_rule="one_line").visibility == "hidden"


def _sight_by_definition(board, frm, to, los_rule, tanks_give_cover):
    """§7.5 read hex by hex from the board's flags and tanks (the reference for the memoised, bit-mask sight)."""
    la, lb = line_pair(frm, to)
    lines = (la,) if los_rule == "one_line" else (la, lb)
    blocked = [any(board.flags(h).blocks_los for h in ln[1:-1]) for ln in lines]
    tall = all(any(board.flags(h).tall for h in ln[1:-1]) for ln in lines)
    covered = [len(ln) > 2 and (board.flags(ln[-2]).hard_cover or (tanks_give_cover and board.occupied(ln[-2])))
               for ln in lines]
    own = board.flags(to).hard_cover
    if sum(blocked) == len(lines):
        return ("hidden", False, False, tall)
    if any(blocked):
        return ("partial", True, True, tall)
    return ("visible", any(covered) or own, True, tall)


def test_sight_memo_and_masks_match_the_definition():
    # every pair of a random board (and ends off it), both rules, with and without tanks' cover; one shared memo
    # while the tanks move: the terrain's part is kept, the tanks are read per call
    rng = random.Random(14)
    cells = frozenset(hexagon_hexes(4))
    fl = {h: flags(blocks_los=rng.random() < 0.2, hard_cover=rng.random() < 0.2, tall=rng.random() < 0.5)
          for h in cells}
    tanks: set[Hex] = set()
    memo: dict = {}
    board = HQBoard(cells, fl.__getitem__, lambda h: 1 if h in tanks else None, memo)
    ends = sorted(cells) + [Hex(6, 0), Hex(-5, -1)]
    n = 0
    for _ in range(2):
        tanks.clear()
        tanks.update(h for h in cells if rng.random() < 0.3)
        for a in ends:
            for c in ends:
                for rule, tgc in itertools.product(("two_lines", "one_line"), (True, False)):
                    got = sight(board, a, c, los_rule=rule, tanks_give_cover=tgc)
                    assert (got.visibility, got.half_cover, got.direct_shot, got.tall_both) == \
                        _sight_by_definition(board, a, c, rule, tgc), (a, c, rule, tgc)
                    n += 1
    assert memo and n == 2 * len(ends) ** 2 * 4


def test_sectors_and_edges():
    assert sectors_of((1, -1)) == (0,)
    assert sectors_of((0, -1)) == (1,)
    assert sectors_of((4, -2)) == (0, 5)          # two components equal: both sectors beside the edge
    for k in range(6):
        d = [(1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1), (1, 0)][k]
        assert sectors_of(d) == (k,)


def test_flee_around_an_obstacle_and_off_the_edge():
    board = _board(radius=4, imp=[(-1, 1)], tanks=[(0, 0), (0, -3)])
    plan = flee_plan(board, (0, 0), 3, [(0, -3)])
    # sectors 0, 2..5 are empty; aims of 2 and 5 lie 3 from the enemy, of 3 and 4 lie 6: tie -> lowest k = 3
    assert plan.sector_counts == (0, 1, 0, 0, 0, 0) and plan.direction == 3 and plan.aim_hex == Hex(-3, 3)
    # the straight line is blocked at [-1, 1]; the search goes around it and stops after S = 3 steps
    # BFS in direction order: [-3, 3] is first reached via [-1, 0], [-2, 1], [-3, 2] (4 steps), cut to 3
    assert plan.path == (Hex(-1, 0), Hex(-2, 1), Hex(-3, 2)) and plan.left_map is False
    assert all(distance(a, b) == 1 for a, b in zip((Hex(0, 0),) + plan.path, plan.path))
    edge = flee_plan(_board(radius=4, tanks=[(0, 0), (0, -3)]), (0, 0), 4, [(0, -3)])
    assert edge.end_hex == Hex(-4, 4) and edge.left_map is True       # direction 3 again, to the corner
    none = flee_plan(board, (0, 0), 3, [])
    assert none.path == () and none.direction is None and not none.left_map


def test_flee_of_no_step_never_leaves_the_map():
    """§11.2 item 6 (amended): only a flee of at least one step that ends on an edge hex leaves the map."""
    boxed = _board(radius=3, imp=[(3, -1), (2, 0), (2, 1)], tanks=[(3, 0), (-3, 0)])
    plan = flee_plan(boxed, (3, 0), 5, [(-3, 0)])
    assert boxed.is_edge((3, 0)) and plan.path == () and plan.end_hex == Hex(3, 0) and plan.left_map is False
    # free neighbours, but no reached hex is nearer to the aim [8, -5] than the start (ties: fewer steps)
    open_edge = _board(radius=3, tanks=[(3, 0), (-3, 0)])
    plan = flee_plan(open_edge, (3, 0), 5, [(-3, 0)])
    assert plan.direction == 0 and plan.aim_hex == Hex(8, -5) and plan.path == () and plan.left_map is False
    one = flee_plan(_board(radius=3, tanks=[(2, 0), (-3, 0)]), (2, 0), 5, [(-3, 0)])
    assert one.path == (Hex(3, -1),) and one.left_map is True
    kept = flee_plan(_board(radius=3, tanks=[(2, 0), (-3, 0)]), (2, 0), 5, [(-3, 0)], leaves_map_at_edge=False)
    assert kept.path == (Hex(3, -1),) and kept.left_map is False


def test_evade_options_close_only_the_rammers_hex():
    """§12.3 (amended): with the rammer on the last intermediate hex [1, 2] of the line [0, 1], [1, 1], [1, 2], the
    rammed tank at [2, 2] may end on [1, 1] but neither enter [1, 2] nor pass it to reach [0, 2]."""
    from sim.rules.hummel_quest import evade_default, evade_options
    board = _board(radius=8, tanks=[(1, 2), (2, 2)])
    opts = evade_options(board, (2, 2), 2)
    assert Hex(1, 1) in opts and Hex(1, 2) not in opts and Hex(0, 2) not in opts and Hex(2, 2) not in opts
    assert all(Hex(1, 2) not in path for _, path in opts.values())
    assert evade_default(opts, (2, 2)) == Hex(0, 3)
    assert evade_options(board, (2, 2), 0) == {}


def test_ram_window():
    b = _board(radius=6, tanks=[(0, 0)])
    assert [ram_legal(b, (0, 0), (0, -d), 6) for d in range(1, 8)] == [False, False, True, True, True, True, False]
    assert ram_legal(b, (0, 0), (0, -1), 1) is True and ram_legal(b, (0, 0), (0, -1), 0) is False


def test_default_facing_rule():
    assert default_facing(0, 0) == 0 and default_facing(1, 0) == 1 and default_facing(2, 0) == 0
    assert default_facing(3, None) == 3


# ---------------------------------------------------------------------------------------------------------------
# Sequence of play (phase 2): MemoryBattle + play_turn driven with fixed dice
# ---------------------------------------------------------------------------------------------------------------

from sim.actions import Activate, Fire, Ram, Special, Step  # noqa: E402 - phase 2 tests' own imports
from sim.battle import MemoryBattle  # noqa: E402 - phase 2 tests' own imports
from sim.events import BattleStateSet, Status, TurnStarted  # noqa: E402 - phase 2 tests' own imports
from sim.rules.base import Illegal  # noqa: E402 - phase 2 tests' own imports


def battle(tanks, radius=8, dice=None, options=None, **kw):
    b = MemoryBattle(RULES, cells=hexagon_hexes(radius), tanks=tanks, dice=dice,
                     options=options or HQOptions(), **kw)
    return b


def drive(b, dice, answer=None, stop=None):
    """Play one round (``b.turn`` must be set); ``answer(decision)`` -> action (default: the decision's default);
    ``stop(decision)`` -> True closes the round at that decision.  Returns the decision stopped at (or None)."""
    gen = RULES.play_turn(b, dice)
    try:
        d = next(gen)
        while True:
            if stop is not None and stop(d):
                gen.close()
                return d
            d = gen.send(answer(d) if answer else d.default)
    except StopIteration:
        return None


def trace(b, start=0):
    """(kind, name-or-key, tank) of each logged event from ``start``."""
    out = []
    for e in b.log[start:]:
        ev = e.event
        if ev.kind == "RuleEvent":
            out.append(("RuleEvent", ev.name, ev.tank))
        elif ev.kind in ("TankStateSet",):
            out.append((ev.kind, ev.key, ev.tank, ev.value))
        elif ev.kind == "BattleStateSet":
            out.append((ev.kind, ev.key, ev.value))
        elif ev.kind == "StatusChanged":
            out.append((ev.kind, ev.status, ev.tank))
        elif ev.kind == "Moved":
            out.append((ev.kind, ev.tank, tuple(ev.hex)))
        elif ev.kind == "ShotResolved":
            out.append((ev.kind, ev.shooter, ev.target, ev.result))
        else:
            out.append((ev.kind, getattr(ev, "tank", None)))
    return out


def test_panic_cascade_event_order():
    """A hit panics its target (OST 1 -> 0); the target's panic makes a witness (OST 2) panic; a second witness loses
    2 + 2 OST without panicking; both panicked tanks flee in queue order, off the map edge."""
    dice = FixedDice([10, 1, 1, 1, 3, 2, 1,      # initiative: shooter first, roll-off among the three tied
                      8, 1, 2, 9])               # To Hit 8; damage 3d10 keep 2 lowest = 1 + 2 = 3
    b = battle([
        {"label": "S", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (3, -1), "facing": 3,
         "rules_state": {"dt": 7, "ost": 1}},
        {"label": "W1", "side": 1, "vehicle": "hq_example_medium", "hex": (4, -1), "facing": 3,
         "rules_state": {"ost": 2}},
        {"label": "W2", "side": 1, "vehicle": "hq_example_medium", "hex": (3, 1), "facing": 3},
    ], dice=dice)
    b.emit(TurnStarted(1))
    start = len(b.log)

    def answer(d):
        if d.kind == "activate":
            return Activate(0, "fire")
        if d.kind == "fire":
            return Fire(0, 1, ("medium_gun",))
        return d.default

    stopped = drive(b, dice, answer, stop=lambda d: d.actors == (3,))
    dice.check_done()
    assert stopped is not None and stopped.kind == "activate"
    expected = [
        ("RuleEvent", "initiative", None),
        ("BattleStateSet", "active", 0),
        ("Activated", 0),
        ("ShotResolved", 0, 1, "hit"),
        ("TankStateSet", "dt", 1, 4),
        ("RuleEvent", "ost_loss", 1), ("TankStateSet", "ost", 1, 0),
        ("TankStateSet", "panicked", 1, True), ("RuleEvent", "panic", 1),
        # queue: T panicked -> witnesses W1 (panics, queued), W2; then T flees (direction 0, off the edge)
        ("RuleEvent", "ost_loss", 2), ("TankStateSet", "ost", 2, 0),
        ("TankStateSet", "panicked", 2, True), ("RuleEvent", "panic", 2),
        ("RuleEvent", "ost_loss", 3), ("TankStateSet", "ost", 3, 5),
        ("RuleEvent", "flee", 1),
        ("Moved", 1, (4, -2)), ("Moved", 1, (5, -3)), ("Moved", 1, (6, -4)), ("Moved", 1, (7, -5)),
        ("Moved", 1, (8, -6)),
        ("TankStateSet", "fled", 1, True), ("StatusChanged", "fled", 1),
        # queue: W1 panicked -> witness W2; W1 flees (aim off the map: nearest reachable hex, 4 steps)
        ("RuleEvent", "ost_loss", 3), ("TankStateSet", "ost", 3, 3),
        ("RuleEvent", "flee", 2),
        ("Moved", 2, (5, -2)), ("Moved", 2, (6, -3)), ("Moved", 2, (7, -4)), ("Moved", 2, (8, -5)),
        ("TankStateSet", "fled", 2, True), ("StatusChanged", "fled", 2),
        ("BattleStateSet", "active", None),
        ("BattleStateSet", "active", 3),
        ("BattleStateSet", "active", None),      # closing the round at tank 3's decision ends its turn
    ]
    assert trace(b, start) == expected
    assert b.tanks[1].status == Status.FLED and b.tanks[1].hex is None
    assert RULES.ost(b.tanks[3]) == 3 and b.tanks[3].status == Status.ACTIVE
    assert [r.value for e in b.log for r in e.rolls] == [10, 1, 1, 1, 3, 2, 1, 8, 1, 2, 9]


def test_panicked_tank_flees_by_sectors_then_recovers():
    dice = FixedDice([5, 5, 5, 5, 3, 2, 1, 1, 2, 3, 4,      # round 1: initiative; Mentality 4 dice, no 6+ -> flee
                      5, 5, 5, 5, 3, 2, 1, 6, 1, 2, 3,      # round 2: Mentality passes (one 6)
                      5, 5, 5, 5, 3, 2, 1])                 # round 3: a normal turn
    b = battle([
        {"label": "A", "side": 0, "vehicle": "hq_example_heavy", "hex": (0, 0), "facing": 0,
         "rules_state": {"ost": 0}},
        {"label": "E1", "side": 1, "vehicle": "hq_example_medium", "hex": (4, -2), "facing": 3},
        {"label": "E2", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -4), "facing": 3},
        {"label": "E3", "side": 1, "vehicle": "hq_example_medium", "hex": (-3, 0), "facing": 3},
    ], dice=dice)
    assert RULES.panicked(b.tanks[0])
    b.emit(TurnStarted(1))
    s1 = len(b.log)
    assert drive(b, dice) is None
    flee = [e.event for e in b.log[s1:] if e.event.kind == "RuleEvent" and e.event.name == "flee"]
    assert len(flee) == 1 and flee[0].data["direction"] == 4 and flee[0].data["sector_counts"] == [1, 1, 1, 0, 0, 1]
    moves = [tuple(e.event.hex) for e in b.log[s1:] if e.event.kind == "Moved"]
    assert moves == [(0, 1), (0, 2), (0, 3)] and b.tanks[0].hex == Hex(0, 3)
    assert RULES.ost(b.tanks[0]) == 0
    b.emit(TurnStarted(2))
    s2 = len(b.log)
    assert drive(b, dice) is None
    names = [e.event.name for e in b.log[s2:] if e.event.kind == "RuleEvent"]
    assert names == ["initiative", "mentality_check", "recover"]
    assert not any(e.event.kind == "Moved" for e in b.log[s2:])
    assert RULES.ost(b.tanks[0]) == 1 and b.tanks[0].rules_state["panicked"] is False
    b.emit(TurnStarted(3))
    d = drive(b, dice, stop=lambda d: d.actors == (0,))
    dice.check_done()
    assert d is not None and d.kind == "activate" and "move_and_fire" in d.legal.modes


def test_incapacitated_tank_is_a_target_and_blocks_as_a_tank():
    b = battle([
        {"label": "S", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},
        {"label": "X", "side": 1, "vehicle": "hq_example_medium", "hex": (3, 0), "facing": 3,
         "rules_state": {"dt": 0}},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (4, 0), "facing": 3},
    ])
    b.emit(TurnStarted(1))
    x = b.tanks[1]
    assert x.status == Status.INCAPACITATED and RULES.is_out(x) and x.hex == Hex(3, 0)
    # still a target: a legal shot with overkill odds (kill odds 0), though not offered in legal.targets
    shot = RULES.shot(b, 0, 1)
    assert not isinstance(shot, Illegal) and shot.key.target_dt == 0
    od = RULES.odds(shot.key)
    assert od.p_kill == 0 and od.values["p_core_destroyed"] == od.p_hit * Fraction(1, 100)
    assert RULES._targets(b, 0) == (2,)
    # still blocks: not enterable, gives hard cover to the tank behind it, blocks a ram line
    assert Hex(3, 0) not in RULES.reachable(b, 0, 5) and Hex(2, 0) in RULES.reachable(b, 0, 5)
    assert RULES.sight(b, Hex(0, 0), Hex(4, 0)).half_cover is True
    assert RULES.shot(b, 0, 2).info["half_cover"] is True
    assert isinstance(RULES.ram_shot(b, 0, 2), Illegal)
    assert not isinstance(RULES.ram_shot(b, 0, 1), Illegal)      # a wreck may be rammed
    # overkill: 2d10 = 2 destroys the core
    dice = FixedDice([9, 4, 5, 6, 1, 1])
    RULES.resolve(b, shot, dice)
    dice.check_done()
    assert x.rules_state["core_destroyed"] is True and x.status == Status.INCAPACITATED
    assert any(e.event.kind == "RuleEvent" and e.event.name == "core_destroyed" for e in b.log)
    # no OST step and no witness event for an already incapacitated tank
    assert RULES.ost(b.tanks[2]) == 7


@pytest.mark.slow
def test_resolve_on_a_battle_equals_odds_exactly():
    """Summing ``resolve`` on a fresh battle over every dice sequence reproduces ``odds(key)`` (shot and ram)."""
    def make():
        return battle([
            {"label": "S", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},
            {"label": "T", "side": 1, "vehicle": "hq_example_scout", "hex": (0, -3), "facing": 0,
             "rules_state": {"dt": 4}},
            {"label": "H", "side": 0, "vehicle": "hq_example_heavy", "hex": (-3, 0), "facing": 0},
        ], radius=3)

    b0 = make()
    shot = RULES.shot(b0, 0, 1, Fire(0, 1, ("coax_mg",)))
    assert shot.face == "side"                          # the scout faces vertex 0; the shooter is due south-ish
    odds = RULES.odds(shot.key)

    def run_shot(d):
        b = make()
        RULES.resolve(b, RULES.shot(b, 0, 1, Fire(0, 1, ("coax_mg",))), d)
        return RULES.dt(b.tanks[1]), RULES.ost(b.tanks[1])

    dist = enumerate_dice(run_shot)
    assert odds.p_kill == sum(p for (dt, _), p in dist.items() if dt == 0)
    assert odds.expected_damage == sum((4 - dt) * p for (dt, _), p in dist.items()) + sum(
        (v - 4) * pr for v, pr in odds.values["damage"].items() if v > 4)
    assert odds.values["p_ost_loss"] == sum(p for (dt, ost), p in dist.items() if ost < 6)
    # a ram by the heavy (pool 4) at the scout 3 hexes away
    ram = RULES.ram_shot(b0, 2, 1)
    assert not isinstance(ram, Illegal)
    rodds = RULES.odds(ram.key)

    def run_ram(d):
        b = make()
        RULES.resolve(b, RULES.ram_shot(b, 2, 1), d)
        return RULES.dt(b.tanks[1]), b.tanks[1].hex, b.tanks[2].hex

    rdist = enumerate_dice(run_ram)
    collided = {k: p for k, p in rdist.items() if k[1] == Hex(0, -3)}       # the target did not evade
    assert all(k[2] != Hex(0, -3) for k in collided)                         # the rammer stopped short of it
    assert all(k[2] == Hex(0, -3) for k in rdist if k not in collided)      # or drove into its old hex
    assert rodds.p_hit == sum(collided.values())
    assert rodds.p_kill == sum(p for (dt, _, _), p in rdist.items() if dt == 0)
    assert rodds.expected_damage == sum((4 - dt) * p for (dt, _, _), p in rdist.items()) + \
        rodds.p_hit * (RULES.ram_key(b0, 2, 1).damage - 4)


def test_ram_in_play_collision_and_evasion():
    tanks = [
        {"label": "R", "side": 0, "vehicle": "hq_example_rammer", "hex": (0, 0), "facing": 1},
        {"label": "M", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -4), "facing": 4},
    ]
    # collision: initiative, then the Interaction pool of 7 (one 6+ against TN 5)
    dice = FixedDice([9, 1, 6, 1, 1, 1, 1, 1, 2])
    b = battle(tanks, dice=dice)
    b.emit(TurnStarted(1))
    assert not isinstance(RULES.ram_shot(b, 0, 1), Illegal)
    drive(b, dice, lambda d: Ram(0, 1) if d.kind == "activate" and d.actors == (0,) else d.default,
          stop=lambda d: d.actors == (1,))
    dice.check_done()
    assert b.tanks[0].hex == Hex(0, -3)                     # stops on the last hex of the line
    assert RULES.dt(b.tanks[1]) == 10 - (16 - 8)            # DfS 16 - (Dur 4 + Size 4)
    assert RULES.dt(b.tanks[0]) == 13                       # the medium is smaller: no return damage
    assert RULES.ost(b.tanks[1]) == 6                       # DT 2 < 8: one OST point
    # evasion: all seven dice fail; the target's side picks the evade hex
    dice = FixedDice([9, 1, 1, 2, 3, 4, 2, 3, 4])
    b = battle(tanks, dice=dice)
    b.emit(TurnStarted(1))
    seen = {}

    def answer(d):
        if d.kind == "activate" and d.actors == (0,):
            return Ram(0, 1)
        if d.kind == "evade":
            seen["opts"] = dict(d.legal.reachable(1))
            seen["default"] = d.default
            return Step(1, Hex(2, -5))
        return d.default

    drive(b, dice, answer, stop=lambda d: d.kind == "activate" and d.actors == (1,))
    dice.check_done()
    assert max(c for c, _ in seen["opts"].values()) == 2 and Hex(0, -3) not in seen["opts"]
    # the default is "no hex given" (a Pass): the farthest reachable hex is then taken (evade_default)
    assert seen["default"].__class__.__name__ == "Pass" and seen["default"].actor == 1
    assert distance(evade_default(seen["opts"], Hex(0, -4)), (0, -4)) == 2
    assert b.tanks[1].hex == Hex(2, -5) and b.tanks[0].hex == Hex(0, -4)
    assert RULES.dt(b.tanks[1]) == 10 and b.tanks[0].rules_state["moved_hexes"] == 4


def test_initiative_ties_and_ambush():
    o = HQOptions(ambushing_side=1)
    tanks = [
        {"label": "A", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},      # reflexes 3
        {"label": "B", "side": 0, "vehicle": "hq_example_heavy", "hex": (0, 2), "facing": 0},       # reflexes 2
        {"label": "C", "side": 1, "vehicle": "hq_example_spg", "hex": (5, 0), "facing": 3},         # reflexes 2
        {"label": "D", "side": 1, "vehicle": "hq_example_medium", "hex": (5, 2), "facing": 3},
    ]
    # totals: A 4+3 = 7, B 5+2 = 7, C 1+2+2 = 5, D 2+3+2 = 7; A and D tie on Reflexes -> roll-off 4, 4, again 2, 9
    dice = FixedDice([4, 5, 1, 2, 4, 4, 2, 9])
    b = battle(tanks, dice=dice, options=o)
    b.emit(TurnStarted(1))
    # side 0 is ambushed: its weapons count as fired in round 1 (reload 0 -> ready in round 2; reload 1 -> 3)
    assert b.tanks[0].rules_state["ready.medium_gun"] == 2 and b.tanks[3].rules_state["ready.medium_gun"] == 1
    assert b.tanks[2].rules_state["ready.howitzer"] == 1           # ambushing side: loaded
    assert RULES.initiative(b, dice) == [3, 0, 1, 2]
    dice.check_done()
    b2 = battle(tanks, options=HQOptions(ambushing_side=0))
    b2.emit(TurnStarted(1))
    d2 = FixedDice([1, 1, 9, 9])
    acted = []
    drive(b2, d2, lambda d: (acted.append(d.actors[0]), d.default)[1])
    assert acted == [0, 1]                                           # the ambushed side takes no turn in round 1


def test_reload_and_focus():
    b = battle([
        {"label": "H", "side": 0, "vehicle": "hq_example_spg", "hex": (0, 0), "facing": 0},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -20), "facing": 4},
        {"label": "U", "side": 1, "vehicle": "hq_example_medium", "hex": (3, -20), "facing": 4},
    ], radius=25)
    b.emit(TurnStarted(1))
    b.emit(BattleStateSet("active", 0))
    shot = RULES.shot(b, 0, 1)
    assert shot.info["indirect"] is True and shot.info["weapons"] == ("howitzer",)
    RULES.resolve(b, shot, FixedDice([1]))
    assert b.tanks[0].rules_state["ready.howitzer"] == 3
    b.emit(TurnStarted(2))
    # round 2: the howitzer reloads; the pintle MG (Firepower 2) cannot reach 200 m (band 2 needs 3)
    assert RULES.shot(b, 0, 1) == Illegal("firepower_below_band")
    assert RULES.shot(b, 0, 1, Fire(0, 1, ("howitzer",))) == Illegal("reloading: howitzer")
    b.emit(TurnStarted(3))
    assert RULES.shot(b, 0, 1).info["weapons"] == ("howitzer",)


def test_sights_only_location_gives_minus_two_unless_focused():
    # smoke hides the target from sight but not from the Artillery Sights (smoke is not tall, §7.6)
    b = battle([
        {"label": "H", "side": 0, "vehicle": "hq_example_spg", "hex": (0, 0), "facing": 1},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -20), "facing": 4},
    ], radius=25, terrain={(0, -10): "smoke", (1, -11): "smoke", (-1, -10): "smoke", (0, -11): "smoke",
                           (1, -10): "smoke", (-1, -9): "smoke", (0, -9): "smoke"})
    b.emit(TurnStarted(1))
    assert RULES.sight(b, Hex(0, 0), Hex(0, -20)).visibility == "hidden"
    sh = RULES.shot(b, 0, 1)
    assert sh.info["indirect"] and sh.info["sights_only"] and sh.info["roll_mod"] == -2
    # focus: Perception 4 dice, one 6+
    RULES._do_special(b, FixedDice([6, 1, 1, 1]), 0, Special(0, "focus", {"target": 1}))
    assert b.tanks[0].rules_state["sights_focus"] == 1
    assert RULES.shot(b, 0, 1).info["roll_mod"] == 0
    woods = battle([
        {"label": "H", "side": 0, "vehicle": "hq_example_spg", "hex": (0, 0), "facing": 1},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -20), "facing": 4},
    ], radius=25, terrain={(0, -10): "woods", (1, -11): "woods", (-1, -10): "woods", (0, -11): "woods",
                           (1, -10): "woods", (-1, -9): "woods", (0, -9): "woods"})
    woods.emit(TurnStarted(1))
    assert isinstance(RULES.shot(woods, 0, 1), Illegal)           # tall woods hide it from the sights too


def test_structure_bunker_buster():
    from sim.rules.hummel_quest import HQHexExt, StructureSpec
    b = battle([
        {"label": "H", "side": 0, "vehicle": "hq_example_spg", "hex": (0, 0), "facing": 1},
        {"label": "T", "side": 1, "vehicle": "hq_example_medium", "hex": (5, -8), "facing": 4},
    ], radius=12, terrain={(0, -12): "building"},
        hex_ext={Hex(0, -12): HQHexExt(structure=StructureSpec(dur=6, dt=5))})
    b.emit(TurnStarted(1))
    assert not RULES.passable(b, Hex(0, -12))
    assert isinstance(RULES.shot(b, 1, Hex(0, -12)), Illegal)     # the medium has no bunker buster
    sh = RULES.shot(b, 0, Hex(0, -12))
    assert not isinstance(sh, Illegal) and sh.key.auto_hit and sh.info["indirect"]
    RULES.resolve(b, sh, FixedDice([3, 4, 9]))                     # no To Hit roll: damage 3 + 4 = 7 >= DT 5
    assert b.map.terrain(Hex(0, -12)) == "rubble" and RULES.passable(b, Hex(0, -12))
    assert RULES.hex_flags(b, Hex(0, -12)).hard_cover and not RULES.hex_flags(b, Hex(0, -12)).blocks_los
    assert RULES.structure_at(b, Hex(0, -12)) is None


def test_victory_and_max_rounds():
    b = battle([
        {"label": "A", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},
        {"label": "B", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -4), "facing": 0,
         "rules_state": {"ost": 0}},
    ], turn_limit=3)
    assert RULES.outcome(b) is None                                # panicked is not out (default)
    b2 = battle([
        {"label": "A", "side": 0, "vehicle": "hq_example_medium", "hex": (0, 0), "facing": 0},
        {"label": "B", "side": 1, "vehicle": "hq_example_medium", "hex": (0, -4), "facing": 0,
         "rules_state": {"ost": 0}},
    ], options=HQOptions(panicked_counts_as_out=True))
    assert RULES.outcome(b2).winner == 0
    b.emit(BattleStateSet("turns_completed", 3))
    out = RULES.outcome(b)
    assert out.winner is None and "DT 10 OST 7" in out.reason and "OST 0" in out.reason


# ---------------------------------------------------------------------------------------------------------------
# Scenarios through the engine
# ---------------------------------------------------------------------------------------------------------------

SCEN = Path(__file__).parents[1] / "scenarios"


@pytest.mark.parametrize("name", ["hq_skirmish", "hq_ram_brawl"])
def test_bundled_scenarios_validate(name):
    from sim.scenario import load_scenario
    sc = load_scenario(SCEN / f"{name}.yaml")
    assert sc.ruleset.name == "hummel_quest"
    if name == "hq_skirmish":
        assert (sc.map.width, sc.map.height, sc.map.hex_size_m) == (120, 120, 10)
        assert [len(s.tanks) for s in sc.sides] == [4, 4]
        ds = [distance(a.hex, b.hex) for a in sc.sides[0].tanks for b in sc.sides[1].tanks]
        assert 10 <= min(ds) and max(ds) <= 79
        assert any(f.get("structure") for f in sc.map.features)


@pytest.mark.slow
def test_ram_brawl_plays_and_replays():
    import json

    from sim.events import event_from_payload
    from sim.model import build_battle
    from sim.runner import run_battle
    from sim.scenario import load_scenario
    sc = load_scenario(SCEN / "hq_ram_brawl.yaml")
    models = []
    res = run_battle(sc, seed=3, model_out=models, decision_timeout_s=0)
    m = models[0]
    assert m.ended and m.outcome is not None
    assert not any(e.event.kind in ("PolicyFault", "ActionRejected") for e in m.battle.log)
    assert [r for e in m.battle.log for r in e.rolls] == m.dice.history
    assert any(e.event.kind == "RuleEvent" and e.event.name == "ram" for e in m.battle.log)
    b = build_battle(sc)
    for row in res.events:
        b.emit(event_from_payload(row["kind"], json.loads(row["data"])))
    st = lambda bb: [(t.tank_id, t.hex, t.facing, t.status, sorted(t.rules_state.items(), key=str))
                     for t in bb.tanks]
    assert st(b) == st(m.battle)
    again = run_battle(sc, seed=3, decision_timeout_s=0)
    assert [(e["kind"], e["data"]) for e in again.events] == [(e["kind"], e["data"]) for e in res.events]


@pytest.mark.slow
def test_skirmish_plays_without_faults():
    from sim.runner import run_battle
    from sim.scenario import load_scenario
    models = []
    run_battle(load_scenario(SCEN / "hq_skirmish.yaml"), seed=1, model_out=models, decision_timeout_s=0)
    m = models[0]
    assert m.ended
    assert not any(e.event.kind in ("PolicyFault", "ActionRejected") for e in m.battle.log)
    assert any(e.event.kind == "ShotResolved" for e in m.battle.log)


@pytest.mark.slow
def test_every_builtin_doctrine_plays_hummel_quest():
    from agents.policies import BUILTIN
    from sim.runner import run_battle
    from sim.scenario import load_scenario
    sc = load_scenario(SCEN / "hq_ram_brawl.yaml")
    for name in BUILTIN:
        models = []
        run_battle(sc, seed=1, policies={0: (name, {}), 1: (name, {})}, model_out=models, decision_timeout_s=0)
        m = models[0]
        assert m.ended, name
        bad = [e.event for e in m.battle.log if e.event.kind in ("PolicyFault", "ActionRejected")]
        assert not bad, f"{name}: {bad[:3]}"
