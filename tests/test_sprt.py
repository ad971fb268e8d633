"""Pentanomial SPRT (sim.tournaments.sprt), logistic and normalized Elo, and ``tanksim match``.

The LLRs are checked against a second, independent implementation: the constrained maximum-likelihood
distributions found directly with ``scipy.optimize.minimize`` (SLSQP on the probabilities, with the mean -- or
the t-value -- as an equality constraint) instead of through the secular equation, on the same regularised
empirical distribution (Fishtest's: zero counts -> 1e-3); and against the published worked values of fastchess's
test suite (``tests/sprt_test.cpp``: ten trinomial and pentanomial cases, logistic and normalized, to 0.01)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from scipy import optimize

from sim.tournaments import sprt as S


def _empirical(counts):
    c = np.array(counts, dtype=float)
    c = np.where(c == 0, 1e-3, c)
    return c.sum(), c / c.sum(), np.linspace(0, 1, len(c))


def _constrained_mle(p, a, constraint):
    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1}, {"type": "eq", "fun": constraint}]
    res = optimize.minimize(lambda q: -(p * np.log(q)).sum(), p.copy(), method="SLSQP",
                            constraints=cons, bounds=[(1e-12, 1)] * len(p), options={"ftol": 1e-15, "maxiter": 2000})
    assert res.success
    return res.x


def reference_llr(counts, elo0, elo1):
    n, p, a = _empirical(counts)
    s0, s1 = (1 / (1 + 10 ** (-e / 400)) for e in (elo0, elo1))
    q0, q1 = (_constrained_mle(p, a, lambda q, s=s: q @ a - s) for s in (s0, s1))
    return n * float((p * (np.log(q1) - np.log(q0))).sum())


def reference_llr_normalized(counts, nelo0, nelo1):
    n, p, a = _empirical(counts)
    scale = math.sqrt(2) if len(counts) == 5 else 1.0
    t0, t1 = (x * math.log(10) / 800 * scale for x in (nelo0, nelo1))

    def t_value(q, t):
        mu = q @ a / q.sum()
        return (mu - 0.5) - t * math.sqrt(max(q @ (a - mu) ** 2 / q.sum(), 1e-300))

    q0, q1 = (_constrained_mle(p, a, lambda q, t=t: t_value(q, t)) for t in (t0, t1))
    return n * float((p * (np.log(q1) - np.log(q0))).sum())


def _penta(ll, ld, wl, dd, wd, ww):
    """fastchess's six pair counts (ascending score) -> our pentanomial (WL and DD both score 1 of 2)."""
    return [ll, ld, wl + dd, wd, ww]


def _tri(w, losses, d):
    return [losses, d, w]


# fastchess tests/sprt_test.cpp: (counts, elo0, elo1, model, published LLR to 0.01)
FASTCHESS = [
    (_tri(36433, 36027, 68692), 0, 2, "normalized", 0.92),
    (_tri(10871, 10650, 20431), -1.75, 0.25, "normalized", 2.30),
    (_tri(21404, 21184, 40708), 0.5, 2.5, "logistic", -1.57),
    (_tri(57433, 57030, 106593), 0, 2, "logistic", -2.59),
    (_penta(365, 16618, 36029, 200, 16974, 390), 0, 2, "normalized", 2.25),
    (_penta(127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),
    (_penta(223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),
    (_penta(871, 26175, 55003, 980, 26678, 821), 0, 2, "logistic", -4.98),
]


@pytest.mark.parametrize("counts,elo0,elo1,model,published", FASTCHESS)
def test_llr_matches_the_published_fastchess_values(counts, elo0, elo1, model, published):
    assert S.SPRT(elo0, elo1, model=model).llr(counts) == pytest.approx(published, abs=0.01)


@pytest.mark.parametrize("counts,nelo0,nelo1", [
    ([10, 30, 60, 40, 12], 0, 20),
    ([1, 5, 20, 30, 14], 0, 100),
    ([0, 3, 50, 4, 0], -10, 10),
    ([30, 20, 50], 0, 20),
    ([5, 90, 5], -20, 5),
])
def test_normalized_llr_matches_an_independent_constrained_mle(counts, nelo0, nelo1):
    got = S.llr_normalized(counts, nelo0, nelo1)
    assert got == pytest.approx(reference_llr_normalized(counts, nelo0, nelo1), rel=1e-5, abs=1e-6)


def test_t_value_mle_has_the_requested_t_value():
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    a = np.linspace(0, 1, 5)
    for t in (-0.3, 0.0, 0.05, 0.4):
        q = S.mle_with_t_value(a, p, 0.5, t)
        mu = q @ a
        assert q.sum() == pytest.approx(1) and (mu - 0.5) / math.sqrt(q @ (a - mu) ** 2) == pytest.approx(t, abs=1e-9)


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
    n = S.parse_sprt("elo0=0,elo1=5,model=normalized")
    assert n.model == "normalized" and n.unit == "nElo" and S.parse_sprt(n.text()) == n
    with pytest.raises(S.SPRTError, match="model must be one of logistic, normalized"):
        S.parse_sprt("model=bayesian")
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
    normal = S.SequentialTest(S.SPRT(0, 200, model="normalized"))
    while normal.add(2.0) is None:
        pass
    assert normal.result == "H1" and normal.pairs < 12


def test_nelo_estimate_by_hand():
    # pairs [1, 4, 10, 4, 1] on 0, 1/4, .., 1: mu = 1/2, nElo 0; pairs [0, 2, 4, 4, 0]: mu = 0.55
    counts = [0, 2, 4, 4, 0]
    a = np.linspace(0, 1, 5)
    mu = (a @ counts) / 10
    var = ((a - mu) ** 2) @ counts / 10
    nelo, lo, hi = S.nelo_estimate(counts)
    assert mu == pytest.approx(0.55)
    assert nelo == pytest.approx((mu - 0.5) / math.sqrt(2 * var) * 800 / math.log(10))
    half = 1.959963984540054 * math.sqrt(var / 10) / math.sqrt(2 * var) * 800 / math.log(10)
    assert (lo, hi) == pytest.approx((nelo - half, nelo + half))
    assert S.nelo_estimate([1, 4, 10, 4, 1])[0] == pytest.approx(0)
    assert all(math.isnan(x) for x in S.nelo_estimate([0, 0, 0, 0, 4]))       # no variance: undefined
    tri = S.nelo_estimate([2, 3, 5])                                           # trinomial: games, not pairs
    m, v = (0 * 2 + 0.5 * 3 + 5) / 10, (2 * 0.65 ** 2 + 3 * 0.15 ** 2 + 5 * 0.35 ** 2) / 10
    assert tri[0] == pytest.approx((m - 0.5) / math.sqrt(v) * 800 / math.log(10))


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
    from sim.cli.tournaments import match_main

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
    from sim.cli.tournaments import match_main

    rc = match_main(["advance", "advance", "--scenario", duel, "--sprt", "elo0=0,elo1=200", "--max-games", "40",
                     "--workers", "1", "--decision-timeout", "0"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verdict: H0 accepted" in out and "advance (A)" in out


def test_match_reports_bad_input(duel, capsys):
    from sim.cli.tournaments import match_main

    assert match_main(["hold", "nosuch", "--scenario", duel, "--workers", "1"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert match_main(["hold", "advance", "--scenario", duel, "--sprt", "elo0=1,elo1=0"]) == 2
    assert "must be below" in capsys.readouterr().err


def test_elo_estimate_is_the_leaderboard_method_and_finite_at_a_perfect_score():
    from sim.tournaments import ratings as R

    elo, lo, hi = S.elo_estimate([0, 0, 0, 0, 2])             # 4-0: two won pairs
    assert (elo, lo, hi) == pytest.approx(R.elo_difference(4, 4))
    assert elo == pytest.approx(400 * math.log10(5))
    assert all(math.isfinite(x) for x in (elo, lo, hi)) and lo < 0 < elo < hi and hi - lo > 700
    elo, lo, hi = S.elo_estimate([4, 0, 0, 0, 0])
    assert all(math.isfinite(x) for x in (elo, lo, hi)) and hi < 0 and elo < -300
    assert S.elo_estimate([3, 1, 4]) == pytest.approx(R.elo_difference(4.5, 8))   # trinomial L, D, W
    points, games = S.points_and_games([1, 2, 3, 4, 5])        # pairs: 0, 0.5, 1, 1.5, 2 points each
    assert (points, games) == (2 * 0.5 + 3 * 1 + 4 * 1.5 + 5 * 2, 30)
    assert S.points_and_games([3, 1, 4]) == (4.5, 8)


def test_match_json_prints_the_summary_alone(duel, capsys):
    import json

    from sim.cli.tournaments import match_main

    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "4", "--workers", "1",
                     "--decision-timeout", "0", "--json"])
    got = capsys.readouterr()
    doc = json.loads(got.out)
    assert rc == (0 if doc["verdict"] else 3)
    assert doc["pairs"] == 2 and doc["games"] == 4 and sum(doc["pentanomial"]) == 2
    assert doc["a"] == "hold" and "pair    1:" in got.err


def _degenerate_vectors():
    """Every single-bin count vector up to 200 (pentanomial and trinomial) and two-bin mixtures."""
    for k in (5, 3):
        for b in range(k):
            for n in range(1, 201):
                yield [n if i == b else 0 for i in range(k)]
        for b1 in range(k):
            for b2 in range(b1 + 1, k):
                for n1, n2 in ((1, 1), (1, 9), (9, 1), (3, 50), (50, 3), (1, 200), (200, 1), (100, 100)):
                    yield [n1 if i == b1 else n2 if i == b2 else 0 for i in range(k)]


def test_normalized_llr_is_defined_for_every_degenerate_count_vector():
    # nine won pairs of nine used to fail: the t-value MLE flickered at rounding level and never met 1e-13
    assert math.isfinite(S.llr_normalized([0, 0, 0, 0, 9], 0, 5))
    by_vector = {}
    for counts in _degenerate_vectors():
        for nelo0, nelo1 in ((0, 5), (-5, 5)):
            llr = S.llr_normalized(counts, nelo0, nelo1)
            assert math.isfinite(llr), (counts, nelo0, nelo1)
            by_vector[tuple(counts), nelo0] = llr
    for k in (5, 3):
        top = [by_vector[tuple([0] * (k - 1) + [n]), 0] for n in range(1, 201)]
        bottom = [by_vector[tuple([n] + [0] * (k - 1)), 0] for n in range(1, 201)]
        assert all(x > 0 for x in top) and all(b > a for a, b in zip(top, top[1:]))      # all wins: towards H1
        assert all(x < 0 for x in bottom) and all(b < a for a, b in zip(bottom, bottom[1:]))   # all losses: H0
        middle = [by_vector[tuple([0] * (k // 2) + [n] + [0] * (k // 2)), 0] for n in range(1, 201)]
        assert all(x < 0 for x in middle)        # all even: the t-value of H0 (0) fits better than H1's


@pytest.mark.parametrize("counts", [[0, 0, 0, 0, 9], [9, 0, 0, 0, 0], [0, 0, 0, 1, 200], [0, 0, 5], [1, 0, 0, 0, 1]])
def test_degenerate_normalized_llr_matches_the_independent_constrained_mle(counts):
    assert S.llr_normalized(counts, 0, 5) == pytest.approx(reference_llr_normalized(counts, 0, 5), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("scores,expected", [([2.0], "H1"), ([0.0], "H0"), ([2.0, 1.5], "H1"), ([0.0, 0.5], "H0")])
def test_normalized_sprt_stops_on_a_degenerate_record(scores, expected):
    # the README's `tanksim match greedy random --sprt elo0=0,elo1=5,model=normalized`: every pair WW
    test = S.SequentialTest(S.SPRT(0, 5, model="normalized"))
    for k in range(2000):
        if test.add(scores[k % len(scores)]) is not None:
            break
    assert test.result == expected and math.isfinite(test.llr)
    lo, hi = test.sprt.bounds
    assert (test.llr >= hi) if expected == "H1" else (test.llr <= lo)


def test_match_reports_an_sprt_failure_without_a_traceback(duel, capsys, monkeypatch):
    from sim.cli.tournaments import match_main

    def broken(self, counts):
        raise S.SPRTError("the t-value MLE (t = 0.02) did not converge in 200 iterations")

    monkeypatch.setattr(S.SPRT, "llr", broken)
    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "4", "--workers", "1",
                     "--decision-timeout", "0"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "tanksim match: the t-value MLE (t = 0.02) did not converge" in err and "Traceback" not in err


def test_expected_length_is_walds_average_sample_number():
    # elo0=0, elo1=20, alpha=beta=0.05, no draws: a pair's score fraction has variance 1/8; the LLR bounds are
    # +-ln 19; drift per pair d^2 / (2 v) with d = s(20) - 1/2; E[N] = 0.9 ln 19 / drift at either hypothesis
    d = 1 / (1 + 10 ** (-20 / 400)) - 0.5
    drift = d * d / (2 * 0.125)
    n = S.expected_length(S.SPRT())
    assert n.at_elo1 == pytest.approx(0.9 * math.log(19) / drift, rel=1e-12)
    assert n.at_elo0 == pytest.approx(n.at_elo1, rel=1e-12)
    assert n.between == pytest.approx(math.log(19) ** 2 / (2 * drift), rel=1e-12)
    assert n.games == (1604, 1604, 2624)
    # a match's own spread of pair scores sets the variance
    alike = S.expected_length(S.SPRT(), [0, 0, 3, 0, 0])    # no spread at all: the assumed variance is kept
    assert alike.variance == S.DEFAULT_PAIR_VARIANCE
    spread = S.expected_length(S.SPRT(), [1, 0, 2, 0, 1])   # variance (2 * 0.25) / 4 = 0.125: as assumed
    assert spread.at_elo1 == pytest.approx(n.at_elo1)
    low = S.expected_length(S.SPRT(), [0, 1, 2, 1, 0])      # variance 2 * 0.0625 / 4 = 1/32: a quarter
    assert low.at_elo1 == pytest.approx(n.at_elo1 / 4)
    # normalized Elo: t-values per pair nElo / (800 / ln 10) * sqrt 2, drift (t1 - t0)^2 / 2
    t1 = 5 / (800 / math.log(10)) * math.sqrt(2)
    assert S.expected_length(S.SPRT(0, 5, model="normalized")).at_elo1 == pytest.approx(
        0.9 * math.log(19) / (t1 * t1 / 2), rel=1e-12)
    # 20 won games of 20 (ten WW pairs) are far from a verdict: the README's example
    assert S.SPRT().llr([0, 0, 0, 0, 10]) == pytest.approx(0.559, abs=5e-4)


def test_a_match_without_a_verdict_says_so_and_exits_3(duel, capsys):
    from sim.cli.tournaments import EXIT_NO_VERDICT, match_main

    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "2", "--workers", "1",
                     "--decision-timeout", "0"])
    out = capsys.readouterr().out
    assert rc == EXIT_NO_VERDICT == 3, out
    assert "verdict: none -- no verdict after 2 games (game limit reached)" in out
    assert "such a test needs on average about 1604 games when the true difference is Elo 0 or 20" in out
    assert "exit code 3" in out


def test_the_expected_length_says_when_the_pairs_give_no_spread_yet():
    from sim.cli.tournaments import _typical

    sp = S.SPRT()
    alike = _typical(sp, [0, 0, 3, 0, 0])  # every pair WW: nothing to estimate the spread from
    assert "all scored alike" in alike and "no spread" in alike
    spread = _typical(sp, [1, 1, 1, 1, 1])
    assert "from this match's score spread" in spread and "alike" not in spread
    assert "no draws assumed" in _typical(sp) and "alike" not in _typical(sp)
