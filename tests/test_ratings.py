"""Ratings with uncertainty (sim.ratings): Wilson intervals, Elo MAP + bootstrap, openskill, tables.

Strength recovery is checked on SYNTHETIC games drawn from known Elo ratings, so the expected answer is known
exactly rather than taken from battles."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sim import ratings as R

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


def test_elo_fit_recovers_known_strengths_with_covering_bootstrap_intervals():
    games = synthetic_games(TRUE, games_per_pair=600, seed=11)
    est = R.elo_bootstrap(games, list(TRUE), n_boot=150, seed=3)
    truth = pd.Series(TRUE) - np.mean(list(TRUE.values()))
    # 600 games per pair: the standard error of a rating is about 15 Elo; allow 3.5 of them
    assert (est["elo"] - truth).abs().max() < 50, est
    assert list(est["elo"].sort_values().index) == list(truth.sort_values().index)
    covered = ((est["elo_lo"] <= truth) & (truth <= est["elo_hi"])).sum()
    assert covered >= 3, est            # 95 % intervals: at most one miss of four expected rarely
    assert (est["elo_hi"] - est["elo_lo"]).between(20, 150).all()
    assert est["elo"].sum() == pytest.approx(0, abs=1e-6)


def test_openskill_orders_known_strengths():
    games = synthetic_games(TRUE, games_per_pair=120, seed=5).sample(frac=1.0, random_state=1)
    os_ = R.openskill_ratings(games, list(TRUE))
    assert list(os_["mu"].sort_values().index) == ["weak", "low", "mid", "strong"]
    assert (os_["sigma"] < 25 / 3).all()
    assert (os_["ordinal"] == os_["mu"] - 3 * os_["sigma"]).all()


def test_standings_and_head_to_head_tables():
    games = synthetic_games(TRUE, games_per_pair=60, seed=2)
    board = R.standings(games, list(TRUE), R.RatingOptions(n_boot=50, seed=1))
    assert list(board["rank"]) == [1, 2, 3, 4]
    assert board.iloc[0]["entrant"] == "strong" and board.iloc[-1]["entrant"] == "weak"
    assert (board["games"] == 180).all()
    assert (board["wins"] + board["draws"] + board["losses"] == board["games"]).all()
    assert ((board["score_lo"] <= board["score"]) & (board["score"] <= board["score_hi"])).all()
    assert board["points"].sum() == pytest.approx(len(games))
    h = R.head_to_head(games, list(TRUE))
    assert np.isnan(np.diag(h.to_numpy())).all()
    assert (h + h.T).stack().dropna().eq(1.0).all()
    assert h.loc["strong", "weak"] > 0.8


def test_perfect_record_stays_finite_and_is_deterministic():
    games = pd.DataFrame({"a": ["x"] * 10, "b": ["y"] * 10, "score_a": [1.0] * 10})
    a = R.elo_bootstrap(games, n_boot=30, seed=4)
    b = R.elo_bootstrap(games, n_boot=30, seed=4)
    assert np.isfinite(a.to_numpy()).all() and a.loc["x", "elo"] > 150
    pd.testing.assert_frame_equal(a, b)


def test_bad_tables_are_rejected():
    with pytest.raises(R.RatingError, match="missing column 'score_a'"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    with pytest.raises(R.RatingError, match=r"score_a must be in \[0, 1\]"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["y"], "score_a": [2.0]}))
    with pytest.raises(R.RatingError, match="not listed: z"):
        R.elo_fit(pd.DataFrame({"a": ["x"], "b": ["z"], "score_a": [1.0]}), ["x", "y"])
