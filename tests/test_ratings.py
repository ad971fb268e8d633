"""Ratings with honest uncertainty (sim.tournaments.ratings): Bradley-Terry with virtual draws, profile-likelihood
intervals, LOS, ties, openskill, tables.

Each statistic is checked against an independent computation: the two-entrant closed form, a statsmodels GLM
logit on the paired design, a brute-force likelihood scan, a constrained fit by SLSQP, scipy's binomial intervals.
Strength recovery is checked on SYNTHETIC games drawn from known Elo ratings."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from sim.tournaments import ratings as R

TRUE = {"weak": -200.0, "low": -60.0, "mid": 40.0, "strong": 220.0}


def synthetic_games(true: dict[str, float], games_per_pair: int, seed: int, draw_rate: float = 0.2) -> pd.DataFrame:
    """Round-robin games whose expected score follows the Elo logistic exactly: a draw with probability
    ``draw_rate * 2 min(p, 1-p)``, else a win with the probability that keeps the mean score at ``p``."""
    rng = np.random.default_rng(seed)
    names = list(true)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            p = float(R.elo_expected(true[a] - true[b]))
            pd_ = draw_rate * 2 * min(p, 1 - p)
            pw = p - pd_ / 2
            for k in range(games_per_pair):
                u = rng.random()
                s = 1.0 if u < pw else (0.5 if u < pw + pd_ else 0.0)
                if k % 2:   # alternate who is listed first
                    rows.append({"a": b, "b": a, "score_a": 1 - s, "cluster": f"{a}-{b}-{k // 2}"})
                else:
                    rows.append({"a": a, "b": b, "score_a": s, "cluster": f"{a}-{b}-{k // 2}"})
    return pd.DataFrame(rows)


def duel(wins: int, draws: int, losses: int) -> pd.DataFrame:
    s = [1.0] * wins + [0.5] * draws + [0.0] * losses
    return pd.DataFrame({"a": ["x"] * len(s), "b": ["y"] * len(s), "score_a": s})


def test_wilson_matches_scipy_for_whole_scores():
    for k, n in [(0, 10), (3, 10), (10, 10), (37, 120), (1, 1)]:
        p, lo, hi = R.wilson_interval(k, n)
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert p == pytest.approx(k / n)
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)
    p, lo, hi = R.wilson_interval(2.5, 5)       # draws count half
    assert p == 0.5 and lo < 0.5 < hi and hi - 0.5 == pytest.approx(0.5 - lo)
    assert R.wilson_interval(0, 0)[1:] == (0.0, 1.0)
    with pytest.raises(R.RatingError, match="out of range"):
        R.wilson_interval(6, 5)


@pytest.mark.parametrize("w,d,losses,k", [(4, 0, 0, 2), (0, 0, 4, 2), (7, 3, 2, 2), (30, 10, 60, 1), (1, 0, 0, 0.5),
                                     (5, 5, 5, 4)])
def test_two_entrant_fit_is_the_closed_form(w, d, losses, k):
    s = (w + d / 2 + k / 2) / (w + d + losses + k)
    exact = 400 * math.log10(s / (1 - s))
    fit = R.bt_fit(duel(w, d, losses), prior_draws=k)
    assert fit.elo[0] - fit.elo[1] == pytest.approx(exact, abs=1e-6)
    assert fit.elo.sum() == pytest.approx(0, abs=1e-9)
    est, lo, hi = R.elo_difference(w + d / 2, w + d + losses, prior_draws=k)
    assert est == pytest.approx(exact, abs=1e-9)
    # the centred profile interval of x is half the difference's interval
    xlo, xhi = R.profile_interval(fit, "x")
    assert 2 * xlo == pytest.approx(lo, abs=0.05) and 2 * xhi == pytest.approx(hi, abs=0.05)


def test_four_nil_gives_a_finite_wide_interval():
    est, lo, hi = R.elo_difference(4, 4)
    assert est == pytest.approx(400 * math.log10(5))          # s = (4 + 1) / (4 + 2)
    assert all(math.isfinite(x) for x in (est, lo, hi))
    assert lo < 0 < est < hi and hi - lo > 700                  # 4 games cannot exclude equal strength
    board = R.standings(duel(4, 0, 0))
    x = board.set_index("entrant").loc["x"]
    assert x["elo"] == pytest.approx(est / 2) and math.isfinite(x["elo_hi"]) and x["elo_hi"] - x["elo_lo"] > 350
    assert x["score_lo"] == pytest.approx(0.510, abs=1e-3) and x["score_hi"] == 1.0


def test_difference_interval_matches_a_brute_force_likelihood_scan():
    q = stats.chi2.ppf(0.95, 1)
    for points, games, k in [(4, 4, 2), (2.5, 9, 2), (13, 40, 1)]:
        a, b = points + k / 2, games - points + k / 2
        p = np.linspace(1e-7, 1 - 1e-7, 2_000_001)
        ll = a * np.log(p) + b * np.log1p(-p)
        inside = p[2 * (ll.max() - ll) <= q]
        _, lo, hi = R.elo_difference(points, games, k)
        assert lo == pytest.approx(float(R.elo_from_score(inside.min())), abs=0.2)
        assert hi == pytest.approx(float(R.elo_from_score(inside.max())), abs=0.2)


def test_difference_interval_agrees_with_binomial_intervals_on_large_samples():
    # 1200 of 2000: the prior's 2 draws hardly matter; likelihood-ratio, Wilson and Clopper-Pearson agree closely
    _, lo, hi = R.elo_difference(1200, 2000)
    for method in ("wilson", "exact"):
        ci = stats.binomtest(1200, 2000).proportion_ci(0.95, method=method)
        assert lo == pytest.approx(float(R.elo_from_score(ci.low)), abs=1.5)
        assert hi == pytest.approx(float(R.elo_from_score(ci.high)), abs=1.5)


def unbalanced_games(seed: int) -> tuple[pd.DataFrame, list[str]]:
    """Five entrants, unequal game counts, one pairing never played, a perfect record, draws."""
    rng = np.random.default_rng(seed)
    names = ["e1", "e2", "e3", "e4", "e5"]
    rows = []
    for (a, b, n) in [("e1", "e2", 7), ("e1", "e3", 3), ("e2", "e3", 12), ("e2", "e4", 5), ("e3", "e4", 9),
                      ("e4", "e5", 6), ("e1", "e5", 4)]:
        for _ in range(n):
            rows.append({"a": a, "b": b, "score_a": float(rng.choice([0.0, 0.5, 1.0], p=[0.3, 0.2, 0.5]))})
    rows += [{"a": "e5", "b": "e3", "score_a": 1.0}] * 4          # e5 beat e3 every time
    return pd.DataFrame(rows), names


def test_fit_matches_a_statsmodels_glm_logit_on_the_paired_design():
    import statsmodels.api as sm

    games, names = unbalanced_games(3)
    k = 2.0
    fit = R.bt_fit(games, names, prior_draws=k)
    idx = {n: i for i, n in enumerate(names)}
    X, y, w = [], [], []
    for a, b, s in zip(games["a"], games["b"], games["score_a"]):
        x = np.zeros(len(names))
        x[idx[a]], x[idx[b]] = 1, -1
        X.append(x)
        y.append(s)
        w.append(1.0)
    for a, b in {tuple(sorted(p)) for p in zip(games["a"], games["b"])}:     # the prior: k draws per pairing
        x = np.zeros(len(names))
        x[idx[a]], x[idx[b]] = 1, -1
        X.append(x)
        y.append(0.5)
        w.append(k)
    X = np.array(X)[:, 1:]                                      # e1 is the reference (rating 0)
    glm = sm.GLM(np.array(y), X, family=sm.families.Binomial(), freq_weights=np.array(w)).fit(tol=1e-12)
    beta = np.concatenate([[0.0], glm.params]) / R.ELO_K
    assert fit.elo == pytest.approx(beta - beta.mean(), abs=1e-4)
    # the observed-information covariance is the GLM's too (for contrasts with the reference)
    cov_glm = glm.cov_params() / R.ELO_K ** 2
    for j in range(1, len(names)):
        var_fit = fit.cov[j, j] + fit.cov[0, 0] - 2 * fit.cov[0, j]
        assert var_fit == pytest.approx(cov_glm[j - 1, j - 1], rel=1e-5)


def test_profile_bounds_are_where_an_independent_constrained_fit_reaches_the_chi2_quantile():
    games, names = unbalanced_games(3)
    fit = R.bt_fit(games, names)
    W = fit.W
    q = stats.chi2.ppf(0.95, 1)

    def nll(r):
        d = R.ELO_K * (r[:, None] - r[None, :])
        return float(np.sum(W * np.logaddexp(0.0, -d)))

    def constrained(i, value):
        cons = [{"type": "eq", "fun": lambda r: r.sum()}, {"type": "eq", "fun": lambda r: r[i] - value}]
        res = optimize.minimize(nll, np.where(np.arange(len(names)) == i, value, 0.0), method="SLSQP",
                                constraints=cons, options={"ftol": 1e-13, "maxiter": 500})
        assert res.success
        return 2 * (res.fun - fit.nll)

    for i, name in enumerate(names):
        lo, hi = R.profile_interval(fit, name)
        assert lo < fit.elo[i] < hi
        for bound, inward in ((lo, 1.0), (hi, -1.0)):
            assert constrained(i, bound) == pytest.approx(q, abs=2e-3)
            assert constrained(i, bound + 2 * inward) < q
    e5 = R.profile_interval(fit, "e5")
    assert all(math.isfinite(x) for x in e5)


def test_likelihood_of_superiority_two_entrants_exact():
    k, games, points = 2.0, 10, 7.0
    fit = R.bt_fit(duel(7, 0, 3), prior_draws=k)
    s = (points + k / 2) / (games + k)
    sd = 1 / (R.ELO_K * math.sqrt((games + k) * s * (1 - s)))         # inverse Fisher information of the difference
    d = 400 * math.log10(s / (1 - s))
    assert R.likelihood_of_superiority(fit, "x", "y") == pytest.approx(stats.norm.cdf(d / sd), abs=1e-9)
    assert R.likelihood_of_superiority(fit, "y", "x") == pytest.approx(stats.norm.cdf(-d / sd), abs=1e-9)


def test_fit_recovers_known_strengths_with_covering_profile_intervals():
    games = synthetic_games(TRUE, games_per_pair=600, seed=11)
    est = R.elo_intervals(games, list(TRUE))
    truth = pd.Series(TRUE) - np.mean(list(TRUE.values()))
    # 600 games per pair: the standard error of a rating is about 15 Elo; allow 3.5 of them
    assert (est["elo"] - truth).abs().max() < 50, est
    assert list(est["elo"].sort_values().index) == list(truth.sort_values().index)
    covered = ((est["elo_lo"] <= truth) & (truth <= est["elo_hi"])).sum()
    assert covered >= 3, est
    assert (est["elo_hi"] - est["elo_lo"]).between(20, 150).all()
    # large samples: the profile interval is close to the Wald interval from the standard error
    z = stats.norm.ppf(0.975)
    assert ((est["elo_hi"] - est["elo"]) - z * est["elo_se"]).abs().max() < 3
    assert est["elo"].sum() == pytest.approx(0, abs=1e-6)


def test_ranks_show_ties_and_never_break_them_by_name():
    assert R.rank_with_ties([9, 5, 5, 1]) == ([1, 2, 2, 4], ["1", "2=", "2=", "4"])
    assert R.rank_with_ties([1, float("nan"), 3]) == ([2, 3, 1], ["2", "-", "1"])
    # zulu and alpha have identical records against mike: an exact tie, kept in entrant order
    rows = []
    for who in ("zulu", "alpha"):
        rows += [{"a": who, "b": "mike", "score_a": s} for s in (1.0, 1.0, 0.5, 0.0)]
    board = R.standings(pd.DataFrame(rows), ["zulu", "mike", "alpha"])
    assert list(board["entrant"]) == ["zulu", "alpha", "mike"]
    assert list(board["rank"]) == [1, 1, 3] and list(board["rank_label"]) == ["1=", "1=", "3"]
    assert board["los_next"].iloc[0] == pytest.approx(0.5)
    # openskill tells them apart only by schedule order: its rank column uses the same competition ranking
    assert board["ordinal"].iloc[0] != board["ordinal"].iloc[1]
    assert list(board["os_rank"]) == [1, 1, 3] and list(board["os_rank_label"]) == ["1=", "1=", "3"]


def test_openskill_orders_known_strengths_and_depends_on_game_order():
    games = synthetic_games(TRUE, games_per_pair=120, seed=5).sample(frac=1.0, random_state=1)
    os_ = R.openskill_ratings(games, list(TRUE))
    assert list(os_["mu"].sort_values().index) == ["weak", "low", "mid", "strong"]
    assert (os_["sigma"] < 25 / 3).all()
    assert (os_["ordinal"] == os_["mu"] - 3 * os_["sigma"]).all()
    reordered = R.openskill_ratings(games.iloc[::-1], list(TRUE))
    assert (reordered["mu"] - os_["mu"]).abs().max() > 0.01          # why the leaderboard does not rank by it
    # the Bradley-Terry fit is the same in any order
    pd.testing.assert_series_equal(R.elo_fit(games, list(TRUE)), R.elo_fit(games.iloc[::-1], list(TRUE)))


def test_standings_and_head_to_head_tables():
    games = synthetic_games(TRUE, games_per_pair=60, seed=2)
    board = R.standings(games, list(TRUE))
    assert list(board["rank"]) == [1, 2, 3, 4] and list(board["rank_label"]) == ["1", "2", "3", "4"]
    assert board.iloc[0]["entrant"] == "strong" and board.iloc[-1]["entrant"] == "weak"
    assert (board["games"] == 180).all()
    assert (board["wins"] + board["draws"] + board["losses"] == board["games"]).all()
    assert ((board["score_lo"] <= board["score"]) & (board["score"] <= board["score_hi"])).all()
    assert ((board["elo_lo"] < board["elo"]) & (board["elo"] < board["elo_hi"])).all()
    assert board["los_next"].iloc[:-1].between(0.5, 1).all() and np.isnan(board["los_next"].iloc[-1])
    assert set(board["os_rank"]) == {1, 2, 3, 4}
    assert board["points"].sum() == pytest.approx(len(games))
    h = R.head_to_head(games, list(TRUE))
    assert np.isnan(np.diag(h.to_numpy())).all()
    assert (h + h.T).stack().dropna().eq(1.0).all()
    assert h.loc["strong", "weak"] > 0.8


def test_an_entrant_without_games_is_unrated_not_an_error():
    board = R.standings(duel(3, 1, 0), ["x", "y", "idle"]).set_index("entrant")
    assert board.loc["idle", "games"] == 0 and np.isnan(board.loc["idle", "elo"])
    assert board.loc["idle", "rank_label"] == "-" and board.loc["x", "rank"] == 1


def test_bad_tables_and_options_are_rejected():
    with pytest.raises(R.RatingError, match="missing column 'score_a'"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    with pytest.raises(R.RatingError, match=r"score_a must be in \[0, 1\]"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["y"], "score_a": [2.0]}))
    with pytest.raises(R.RatingError, match="not listed: z"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["z"], "score_a": [1.0]}), ["x", "y"])
    with pytest.raises(R.RatingError, match="prior_draws must be > 0"):
        R.elo_fit(duel(1, 0, 0), prior_draws=0)
    split = pd.DataFrame({"a": ["p", "r"], "b": ["q", "s"], "score_a": [1.0, 0.0]})
    with pytest.raises(R.RatingError, match=r"never met.*\[p, q\]; \[r, s\]"):
        R.bt_fit(split)
    with pytest.raises(R.RatingError, match="out of range"):
        R.elo_difference(5, 4)
