"""Panzer Squadron shooting: the seed's worked example, exact odds against exhaustive resolve, parameter errors."""
from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from sim.dice import DiceExhausted, FixedDice
from sim.rules.base import CaseError
from sim.rules.panzer_squadron import PanzerSquadron, PSKey, hit_bonus, resolve_key, shot_odds

PS = PanzerSquadron()


def test_worked_example_seed():
    # 000_0e0b8aa4689ade84.txt: T34-85 (118) vs Panther front (177), modified 8 (+10), d100 57 -> 185 destroyed
    r = resolve_key(PSKey(118, 177, 0), FixedDice([8, 57]))
    assert (r["result"], r["bonus"], r["total"]) == ("destroyed", 10, 185)
    r = resolve_key(PSKey(118, 177, 0), FixedDice([8, 49]))
    assert (r["result"], r["total"]) == ("ricochet", 177)


def test_worked_example_from_catalog():
    out = PS.odds_from_params({"firer": "T34-85", "target": "Panther", "face": "front"})
    assert (out["penetration"], out["armour"], out["p_kill"]) == (118, 177, "53/200")


@pytest.mark.parametrize("m,expected", [(-3, "41/500"), (-2, "133/1000"), (-1, "97/500"), (0, "53/200"),
                                        (1, "89/250"), (2, "447/1000"), (3, "269/500")])
def test_reference_values(m, expected):
    assert PS.odds_from_params({"penetration": "118", "armour": "177", "modifier": str(m)})["p_kill"] == expected


def _enumerate(key: PSKey) -> dict[str, Fraction]:
    """Sum resolve over every fixed dice sequence (10 d10 values, and 100 d100 values after a hit)."""
    tally: dict[str, Fraction] = {}
    for d in range(1, 11):
        if hit_bonus(d + key.modifier) is None:
            seqs = [([d], Fraction(1, 10))]
        else:
            seqs = [([d, r], Fraction(1, 1000)) for r in range(1, 101)]
        for rolls, p in seqs:
            dice = FixedDice(rolls)
            res = resolve_key(key, dice)
            dice.check_done()
            tally[res["result"]] = tally.get(res["result"], Fraction(0)) + p
    return tally


KEYS = [PSKey(p, a, m) for p, a, m in itertools.product((50, 118, 168, 200), (50, 120, 177, 260), (-5, -2, 0, 1, 4))]


@pytest.mark.parametrize("key", KEYS[::3] + [PSKey(118, 177, 0)], ids=str)
def test_exact_consistency_resolve_equals_odds(key):
    t = _enumerate(key)
    o = shot_odds(key)
    g = lambda k: t.get(k, Fraction(0))  # noqa: E731
    assert g("miss") == o.values["p_miss"]
    assert g("dud") == o.values["p_dud"]
    assert g("auto_kill") == o.values["p_auto_kill"]
    assert g("destroyed") == o.values["p_penetrate"]
    assert g("ricochet") == o.values["p_ricochet"]
    assert g("destroyed") + g("auto_kill") == o.p_kill
    assert sum(t.values()) == 1


def test_hit_bonus_sums_to_p_hit_and_closed_form():
    for key in KEYS:
        o = shot_odds(key)
        assert sum(o.values["hit_bonus"].values()) == o.p_hit
        assert o.values["p_miss"] + o.values["p_dud"] + o.values["p_ricochet"] + o.p_kill == 1


def test_fixed_dice_too_few_and_too_many():
    with pytest.raises(DiceExhausted):
        resolve_key(PSKey(118, 177, 0), FixedDice([8]))
    dice = FixedDice([3, 50])
    resolve_key(PSKey(118, 177, 0), dice)
    with pytest.raises(Exception, match="left unused"):
        dice.check_done()


@pytest.mark.parametrize("params,msg", [
    ({"penetration": "118", "armour": "177", "bogus": "1"}, "unknown parameter"),
    ({"penetration": "x", "armour": "177"}, "expected an integer"),
    ({"penetration": "118", "firer": "t34_85", "armour": "177"}, "not both"),
    ({"firer": "t34_85", "target": "panther"}, "face"),
    ({"penetration": "118", "armour": "177", "face": "side"}, "give target= with it"),
    ({"firer": "maus", "armour": "1"}, "unknown Panzer Squadron vehicle"),
    ({"penetration": "118", "armour": "177", "target_moving": "maybe"}, "true or false"),
])
def test_bad_odds_parameters(params, msg):
    with pytest.raises(CaseError, match=msg):
        PS.odds_from_params(params)


def test_catalog_keeps_derived_flags():
    t34 = PS.vehicle("t34_85")
    assert "penetration" not in t34.derived and "armour.front" in t34.derived
    assert "armour.front" not in PS.vehicle("panther").derived
    assert PS.vehicle("stug_iii_g").turret is False
