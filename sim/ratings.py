"""Ratings with uncertainty from a table of two-player games.

Input everywhere is a games table (``pandas.DataFrame``) with one row per game:

* ``a``, ``b`` -- the two entrants' names (``a`` played the scenario's first side);
* ``score_a`` -- ``a``'s score: 1 win, 0.5 draw, 0 loss (``b`` scores ``1 - score_a``);
* ``cluster`` (optional) -- games that are not independent (the two games of a mirrored pair share their dice)
  carry the same cluster id; the Elo bootstrap resamples whole clusters.

What it computes (nothing here knows about tanks):

* :func:`wilson_interval` -- a score fraction with its Wilson score interval (``scipy.stats.norm`` quantile).
  Draws count as half points; with draws the true variance is below the binomial one, so the interval is
  conservative.
* :func:`openskill_ratings` -- Plackett-Luce ratings (``openskill.models.PlackettLuce``): ``mu``, ``sigma`` and
  the conservative ``ordinal = mu - 3 sigma``, updated game by game in the table's order (order dependent by
  nature; the caller fixes the order).
* :func:`elo_fit` -- the Bradley-Terry maximum a-posteriori Elo rating (logistic, 400 points = 10:1 odds) from
  scores, draws as half points, with a weak Gaussian prior (``prior_sd`` Elo) so perfect records stay finite;
  ratings are centred on mean 0.  :func:`elo_bootstrap` adds percentile intervals by resampling clusters.
* :func:`standings` -- all of the above as one leaderboard frame, and :func:`head_to_head` the score matrix.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

#: Natural-log slope of the Elo logistic: ``P(win) = 1 / (1 + 10 ** (-diff / 400))``.
ELO_K = math.log(10) / 400


class RatingError(ValueError):
    """The games table is malformed (missing column, score outside [0, 1], unknown entrant)."""


def elo_expected(diff: float | np.ndarray) -> float | np.ndarray:
    """Expected score for an Elo difference ``diff`` (points): ``1 / (1 + 10^(-diff/400))``."""
    return 1.0 / (1.0 + np.power(10.0, -np.asarray(diff, dtype=float) / 400.0))


def elo_from_score(score: float | np.ndarray) -> float | np.ndarray:
    """Inverse of :func:`elo_expected`; ``score`` in (0, 1) (0 and 1 give -inf / +inf)."""
    s = np.asarray(score, dtype=float)
    with np.errstate(divide="ignore"):
        return -400.0 * np.log10(1.0 / s - 1.0)


def wilson_interval(score: float, n: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(fraction, low, high)``: the score fraction ``score / n`` and its Wilson score interval.

    ``score`` is in points (wins + draws / 2), ``n`` games (>= 0; ``n == 0`` gives ``(nan, 0, 1)``).
    Raises :class:`RatingError` if ``score`` is outside ``[0, n]`` or ``confidence`` outside (0, 1)."""
    if not 0 < confidence < 1:
        raise RatingError(f"confidence must be in (0, 1), got {confidence}")
    if n < 0 or score < 0 or score > n:
        raise RatingError(f"score {score} out of range for {n} games")
    if n == 0:
        return float("nan"), 0.0, 1.0
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = score / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    return p, max(0.0, centre - half), min(1.0, centre + half)


def _check(games: pd.DataFrame) -> None:
    for col in ("a", "b", "score_a"):
        if col not in games.columns:
            raise RatingError(f"games table: missing column {col!r} (have {', '.join(map(str, games.columns))})")
    s = games["score_a"].to_numpy(dtype=float)
    if len(s) and (np.nanmin(s) < 0 or np.nanmax(s) > 1 or np.isnan(s).any()):
        raise RatingError("games table: score_a must be in [0, 1] (1 win, 0.5 draw, 0 loss)")


def entrants_of(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> list[str]:
    """The entrant names: ``entrants`` if given (checked to cover the table), else sorted names in the table."""
    seen = sorted(set(games["a"].astype(str)) | set(games["b"].astype(str)))
    if entrants is None:
        return seen
    missing = sorted(set(seen) - set(entrants))
    if missing:
        raise RatingError(f"games table names entrants not listed: {', '.join(missing)}")
    return list(entrants)


# --- Elo (Bradley-Terry on scores) ------------------------------------------------------------------------------
def _score_matrices(games: pd.DataFrame, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(W, N)``: ``W[i, j]`` points ``i`` scored against ``j``, ``N[i, j]`` games between them (symmetric)."""
    idx = {n: i for i, n in enumerate(names)}
    n = len(names)
    W = np.zeros((n, n))
    N = np.zeros((n, n))
    ia = games["a"].astype(str).map(idx).to_numpy()
    ib = games["b"].astype(str).map(idx).to_numpy()
    s = games["score_a"].to_numpy(dtype=float)
    np.add.at(W, (ia, ib), s)
    np.add.at(W, (ib, ia), 1 - s)
    np.add.at(N, (ia, ib), 1)
    np.add.at(N, (ib, ia), 1)
    return W, N


def _fit(W: np.ndarray, N: np.ndarray, prior_sd: float, x0: np.ndarray | None = None) -> np.ndarray:
    """MAP ratings by Newton-CG (``scipy.optimize.minimize``) with the exact gradient and Hessian (the problem is
    strictly convex: the prior makes the Hessian positive definite)."""
    n = W.shape[0]
    inv_var = 1.0 / (prior_sd * prior_sd)

    def nll(r: np.ndarray) -> tuple[float, np.ndarray]:
        d = ELO_K * (r[:, None] - r[None, :])
        logp = -np.logaddexp(0.0, -d)                   # log sigma(d), stable
        p = np.exp(logp)
        f = -0.5 * float(np.sum(W * logp)) + 0.5 * inv_var * float(r @ r)
        g = -ELO_K * np.sum(W - N * p, axis=1) + inv_var * r
        return f, g

    def hess(r: np.ndarray) -> np.ndarray:
        d = ELO_K * (r[:, None] - r[None, :])
        p = 1.0 / (1.0 + np.exp(-d))
        q = N * p * (1 - p) * ELO_K * ELO_K
        H = -q
        np.fill_diagonal(H, q.sum(axis=1) - np.diag(q))
        return H + inv_var * np.eye(n)

    res = optimize.minimize(nll, np.zeros(n) if x0 is None else x0, jac=True, hess=hess, method="Newton-CG",
                            options={"xtol": 1e-8, "maxiter": 200})
    r = res.x
    return r - r.mean()


def elo_fit(games: pd.DataFrame, entrants: Sequence[str] | None = None, prior_sd: float = 400.0) -> pd.Series:
    """Maximum a-posteriori Elo ratings (points, mean 0) indexed by entrant.

    Model: ``P(i scores against j) = 1 / (1 + 10^(-(R_i - R_j)/400))`` with each game's score (draw = 1/2) as the
    observation, and independent ``Normal(0, prior_sd)`` priors that keep perfect records finite (a weak prior:
    with a few dozen games per pairing the data dominate).  Raises :class:`RatingError` for a malformed table."""
    _check(games)
    names = entrants_of(games, entrants)
    if prior_sd <= 0:
        raise RatingError(f"prior_sd must be > 0 Elo, got {prior_sd}")
    W, N = _score_matrices(games, names)
    return pd.Series(_fit(W, N, prior_sd), index=pd.Index(names, name="entrant"), name="elo")


def elo_bootstrap(games: pd.DataFrame, entrants: Sequence[str] | None = None, *, prior_sd: float = 400.0,
                  n_boot: int = 400, seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Elo estimates with percentile bootstrap intervals: columns ``elo``, ``elo_lo``, ``elo_hi`` per entrant.

    Resamples whole clusters (column ``cluster``; each game its own cluster if absent) ``n_boot`` times with
    replacement, with ``numpy.random.default_rng(seed)`` (deterministic), and refits :func:`elo_fit` each time."""
    _check(games)
    names = entrants_of(games, entrants)
    W, N = _score_matrices(games, names)
    est = _fit(W, N, prior_sd)
    out = pd.DataFrame({"elo": est}, index=pd.Index(names, name="entrant"))
    if n_boot <= 0 or len(games) == 0:
        out["elo_lo"] = np.nan
        out["elo_hi"] = np.nan
        return out
    clusters = games["cluster"].to_numpy() if "cluster" in games.columns else np.arange(len(games))
    codes, uniq = pd.factorize(pd.Series(clusters), sort=True)
    C = len(uniq)
    idx = {n: i for i, n in enumerate(names)}
    ia = games["a"].astype(str).map(idx).to_numpy()
    ib = games["b"].astype(str).map(idx).to_numpy()
    s = games["score_a"].to_numpy(dtype=float)
    n = len(names)
    # per-cluster contributions, flattened: Wc[c, i*n+j]
    Wc = np.zeros((C, n * n))
    Nc = np.zeros((C, n * n))
    np.add.at(Wc, (codes, ia * n + ib), s)
    np.add.at(Wc, (codes, ib * n + ia), 1 - s)
    np.add.at(Nc, (codes, ia * n + ib), 1)
    np.add.at(Nc, (codes, ib * n + ia), 1)
    rng = np.random.default_rng(seed)
    draws = np.empty((n_boot, n))
    for k in range(n_boot):
        w = rng.multinomial(C, np.full(C, 1.0 / C)).astype(float)
        draws[k] = _fit((w @ Wc).reshape(n, n), (w @ Nc).reshape(n, n), prior_sd, x0=est)
    lo, hi = np.percentile(draws, [50 * (1 - confidence), 50 * (1 + confidence)], axis=0)
    out["elo_lo"] = lo
    out["elo_hi"] = hi
    return out


# --- openskill ------------------------------------------------------------------------------------------------
def openskill_ratings(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> pd.DataFrame:
    """Plackett-Luce ratings: columns ``mu``, ``sigma``, ``ordinal`` (``mu - 3 sigma``) per entrant.

    Every game updates both entrants in the table's row order (win: ranks 0/1, draw: 0/0), starting from the
    model's defaults (mu 25, sigma 25/3).  Deterministic for a given order."""
    from openskill.models import PlackettLuce

    _check(games)
    names = entrants_of(games, entrants)
    model = PlackettLuce()
    ratings = {n: model.rating(name=n) for n in names}
    for a, b, s in zip(games["a"].astype(str), games["b"].astype(str), games["score_a"].to_numpy(dtype=float)):
        ranks = [0, 0] if s == 0.5 else ([0, 1] if s > 0.5 else [1, 0])
        (ra,), (rb,) = model.rate([[ratings[a]], [ratings[b]]], ranks=ranks)
        ratings[a], ratings[b] = ra, rb
    return pd.DataFrame({"mu": [ratings[n].mu for n in names], "sigma": [ratings[n].sigma for n in names],
                         "ordinal": [ratings[n].mu - 3 * ratings[n].sigma for n in names]},
                        index=pd.Index(names, name="entrant"))


# --- tables ---------------------------------------------------------------------------------------------------
def per_entrant(games: pd.DataFrame) -> pd.DataFrame:
    """Each game twice, once from each entrant's view: columns ``entrant``, ``opponent``, ``score`` (+ the other
    columns of ``games``)."""
    a = games.rename(columns={"a": "entrant", "b": "opponent"}).assign(score=games["score_a"].astype(float))
    b = games.rename(columns={"b": "entrant", "a": "opponent"}).assign(score=1 - games["score_a"].astype(float))
    return pd.concat([a, b], ignore_index=True)


def score_table(games: pd.DataFrame, by: Sequence[str] = (), confidence: float = 0.95) -> pd.DataFrame:
    """Games, wins, draws, losses and the score with its Wilson interval per entrant (and per ``by`` columns)."""
    pe = per_entrant(games)
    keys = ["entrant", *by]
    rows = []
    for key, g in pe.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        n = len(g)
        w = int((g["score"] == 1).sum())
        d = int((g["score"] == 0.5).sum())
        pts = float(g["score"].sum())
        p, lo, hi = wilson_interval(pts, n, confidence)
        rows.append({**dict(zip(keys, key)), "games": n, "wins": w, "draws": d, "losses": n - w - d,
                     "points": pts, "score": p, "score_lo": lo, "score_hi": hi})
    return pd.DataFrame(rows, columns=[*keys, "games", "wins", "draws", "losses", "points", "score", "score_lo",
                                       "score_hi"])


@dataclass(frozen=True)
class RatingOptions:
    """Knobs for :func:`standings`: interval ``confidence``, Elo ``prior_sd`` (points), bootstrap size and seed."""

    confidence: float = 0.95
    prior_sd: float = 400.0
    n_boot: int = 400
    seed: int = 0


def standings(games: pd.DataFrame, entrants: Sequence[str] | None = None,
              options: RatingOptions = RatingOptions()) -> pd.DataFrame:
    """The leaderboard: one row per entrant, best first (by Elo, then score, then name), with ``rank``, ``games``,
    ``wins``, ``draws``, ``losses``, ``points``, ``score`` + Wilson ``score_lo``/``score_hi``, openskill ``mu``,
    ``sigma``, ``ordinal`` and ``elo`` + bootstrap ``elo_lo``/``elo_hi``."""
    _check(games)
    names = entrants_of(games, entrants)
    sc = score_table(games, confidence=options.confidence).set_index("entrant").reindex(names)
    sc[["games", "wins", "draws", "losses"]] = sc[["games", "wins", "draws", "losses"]].fillna(0).astype(int)
    os_ = openskill_ratings(games, names)
    elo = elo_bootstrap(games, names, prior_sd=options.prior_sd, n_boot=options.n_boot, seed=options.seed,
                        confidence=options.confidence)
    board = sc.join(os_).join(elo)
    board = board.reset_index().sort_values(["elo", "score", "entrant"], ascending=[False, False, True],
                                            kind="mergesort").reset_index(drop=True)
    board.insert(0, "rank", np.arange(1, len(board) + 1))
    return board


def head_to_head(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> pd.DataFrame:
    """Score matrix: cell ``[row, column]`` is the row entrant's mean score against the column entrant (NaN on the
    diagonal and for pairs that never met)."""
    names = entrants_of(games, entrants)
    W, N = _score_matrices(games, names)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(N > 0, W / np.where(N > 0, N, 1), np.nan)
    return pd.DataFrame(m, index=pd.Index(names, name="entrant"), columns=pd.Index(names, name="opponent"))
