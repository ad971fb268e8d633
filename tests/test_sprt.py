"""Pentanomial SPRT (sim.sprt) and ``tanksim match``.

The LLR is checked against a second, independent implementation: the constrained maximum-likelihood
distributions found directly with ``scipy.optimize.minimize`` (SLSQP on the probabilities, with the mean as an
equality constraint) instead of through the secular equation, on the same regularised empirical distribution
(Fishtest's ``LLR_logistic``: zero counts -> 1e-3)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from scipy import optimize

from sim import sprt as S


def reference_llr(counts, elo0, elo1):
    c = np.array(counts, dtype=float)
    c = np.where(c == 0, 1e-3, c)
    n = c.sum()
    p = c / n
    a = np.linspace(0, 1, len(c))

    def constrained_mle(s):
        cons = [{"type": "eq", "fun": lambda q: q.sum() - 1}, {"type": "eq", "fun": lambda q: q @ a - s}]
        res = optimize.minimize(lambda q: -(p * np.log(q)).sum(), np.full(len(c), 1 / len(c)), method="SLSQP",
                                constraints=cons, bounds=[(1e-12, 1)] * len(c),
                                options={"ftol": 1e-15, "maxiter": 2000})
        assert res.success
        return res.x

    s0, s1 = (1 / (1 + 10 ** (-e / 400)) for e in (elo0, elo1))
    return n * float((p * (np.log(constrained_mle(s1)) - np.log(constrained_mle(s0)))).sum())


@pytest.mark.parametrize("counts,elo0,elo1", [
    ([10, 30, 60, 40, 12], 0, 20),
    ([10, 30, 60, 40, 12], -5, 5),
    ([1, 5, 20, 30, 14], 0, 200),
    ([0, 0, 50, 0, 0], 0, 200),
    ([0, 0, 3, 5, 7], 0, 200),
    ([120, 800, 2100, 820, 140], 0, 10),
    ([30, 20, 50], 0, 20),                  # trinomial (L, D, W) works the same way
])
def test_llr_matches_independent_constrained_mle(counts, elo0, elo1):
    assert S.llr_logistic(counts, elo0, elo1) == pytest.approx(reference_llr(counts, elo0, elo1), rel=1e-6, abs=1e-7)


def test_llr_properties():
    # the MLE of a distribution whose mean already equals s is itself: LLR = -N * KL(p || p_s1) <= 0
    assert S.llr_logistic([5, 10, 20, 10, 5], 0, 20) < 0
    # swapping the hypotheses flips the sign; mirroring the counts mirrors the Elo
    c = [3, 9, 20, 14, 6]
    assert S.llr_logistic(c, 0, 20) == pytest.approx(-S.llr_logistic(c, 20, 0))
    assert S.llr_logistic(c, 0, 20) == pytest.approx(S.llr_logistic(c[::-1], 0, -20))
    # large samples agree with the normal (Brownian) approximation of the GSPRT paper
    big = [400, 2400, 4200, 2600, 400]
    n = sum(big)
    a = np.linspace(0, 1, 5)
    p = np.array(big) / n
    mu, var = float(p @ a), float(p @ (a - p @ a) ** 2)
    s0, s1 = S.score_of_elo(0), S.score_of_elo(5)
    approx = n * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var)
    assert S.llr_logistic(big, 0, 5) == pytest.approx(approx, rel=0.02)


def test_bounds_and_parsing():
    t = S.parse_sprt("elo0=0,elo1=20,alpha=0.05,beta=0.05")
    assert t == S.SPRT(0, 20, 0.05, 0.05)
    lo, hi = t.bounds
    assert lo == pytest.approx(math.log(0.05 / 0.95)) and hi == pytest.approx(math.log(0.95 / 0.05))
    assert hi == pytest.approx(2.944, abs=1e-3)          # the familiar Fishtest bounds
    assert S.parse_sprt("elo1=5").elo1 == 5
    with pytest.raises(S.SPRTError, match="not one of"):
        S.parse_sprt("elo0=0,foo=1")
    with pytest.raises(S.SPRTError, match="must be a number"):
        S.parse_sprt("elo1=x")
    with pytest.raises(S.SPRTError, match="must be below"):
        S.parse_sprt("elo0=20,elo1=10")
    with pytest.raises(S.SPRTError, match="alpha must be in"):
        S.parse_sprt("alpha=0.7")
    assert S.pentanomial([0, 0.5, 1, 1, 2, 1.5]) == [1, 1, 2, 1, 1]
    with pytest.raises(S.SPRTError):
        S.pentanomial([0.25])


def test_sequential_test_decides_both_ways():
    strong = S.SequentialTest(S.SPRT(0, 200))
    k = 0
    while strong.add(2.0) is None:
        k += 1
    assert strong.result == "H1" and k < 10
    even = S.SequentialTest(S.SPRT(0, 200))
    while even.add(1.0) is None:
        pass
    assert even.result == "H0" and even.pairs < 10
    elo, lo, hi = S.elo_estimate([1, 4, 10, 4, 1])
    assert elo == pytest.approx(0) and lo < 0 < hi


# --- tanksim match on a small duel ---------------------------------------------------------------------------
DUEL = {
    "name": "duel",
    "ruleset": {"name": "panzer_squadron", "options": {"turn_limit_result": "most_tanks"}},
    "map": {"shape": "rectangle", "width": 8, "height": 8},
    "turn_limit": 5,
    "sides": [
        {"name": "Red", "tanks": [{"vehicle": "t34_85", "hex": [1, 2], "facing": 0},
                                  {"vehicle": "t34_85", "hex": [1, 4], "facing": 0}]},
        {"name": "Blue", "tanks": [{"vehicle": "t34_85", "hex": [6, -1], "facing": 3},
                                   {"vehicle": "t34_85", "hex": [6, 1], "facing": 3}]},
    ],
}


@pytest.fixture
def duel(tmp_path):
    f = tmp_path / "duel.yaml"
    f.write_text(yaml.safe_dump(DUEL))
    return str(f)


def test_match_accepts_h1_for_a_clearly_stronger_entrant(duel, capsys, tmp_path):
    from sim.tournament_cli import match_main

    # hold:min_odds=1 never fires (no shot is certain); plain hold does
    rc = match_main(["hold", "hold:min_odds=1", "--scenario", duel, "--sprt", "elo0=0,elo1=200,alpha=0.05,beta=0.05",
                     "--max-games", "40", "--workers", "1", "--decision-timeout", "0", "--out", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verdict: H1 accepted" in out
    assert "LLR" in out and "pair    1:" in out
    import json
    summary = json.loads((tmp_path / "m" / "match.json").read_text())
    assert summary["verdict"] == "H1" and 2 * summary["pairs"] <= 40
    assert summary["llr"] >= S.SPRT(0, 200).bounds[1]


def test_match_accepts_h0_for_two_copies_of_one_entrant(duel, capsys):
    from sim.tournament_cli import match_main

    rc = match_main(["advance", "advance", "--scenario", duel, "--sprt", "elo0=0,elo1=200", "--max-games", "40",
                     "--workers", "1", "--decision-timeout", "0"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verdict: H0 accepted" in out and "advance (A)" in out


def test_match_reports_bad_input(duel, capsys):
    from sim.tournament_cli import match_main

    assert match_main(["hold", "nosuch", "--scenario", duel, "--workers", "1"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert match_main(["hold", "advance", "--scenario", duel, "--sprt", "elo0=1,elo1=0"]) == 2
    assert "must be below" in capsys.readouterr().err


def test_elo_estimate_is_finite_at_a_perfect_score():
    import math

    elo, lo, hi = S.elo_estimate([0, 0, 0, 0, 4])
    assert all(math.isfinite(x) for x in (elo, lo, hi)) and 300 < elo == hi and lo <= elo
    elo, lo, hi = S.elo_estimate([4, 0, 0, 0, 0])
    assert all(math.isfinite(x) for x in (elo, lo, hi)) and elo < -300
