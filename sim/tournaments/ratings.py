"""Ratings with honest uncertainty from a table of two-player games.

Input everywhere is a games table (``pandas.DataFrame``) with one row per game:

* ``a``, ``b`` -- the two entrants' names (``a`` played the scenario's first side);
* ``score_a`` -- ``a``'s score: 1 win, 0.5 draw, 0 loss (``b`` scores ``1 - score_a``);
* ``cluster`` (optional) -- games that are not independent (the two games of a mirrored pair share their dice)
  carry the same cluster id (the meta-game bootstrap, :mod:`sim.tournaments.metagame`, resamples whole clusters).

What it computes (nothing here knows about tanks):

* :func:`wilson_interval` -- a score fraction with its Wilson score interval (:func:`sim.stats.wilson_interval`).
  Draws count as half points; with draws the true variance is below the binomial one, so the interval is
  conservative.
* :func:`bt_fit` -- **the primary rating**: Bradley-Terry (logistic Elo, 400 points = 10:1 odds) fitted by
  maximum likelihood on all games at once, draws as half points, with a weak prior of ``prior_draws`` virtual
  draws added to every pairing that met (BayesElo's kind of prior; BayesElo's default is 2 virtual draws).  The
  prior keeps a perfect record finite: two entrants, ``w`` points in ``n`` games, give the closed form
  ``elo = 400 log10(s / (1 - s))`` with ``s = (w + k/2) / (n + k)``; 4-0 with ``k = 2`` is ``400 log10 5 = +280``.
  Ratings are centred on the mean of the rated entrants (mean 0).
* :func:`profile_interval` -- the interval of one rating from the profile likelihood (the set of values whose
  likelihood-ratio statistic, the other ratings re-fitted, stays below the chi-square(1) quantile).  It is
  asymmetric where it should be and finite at 4-0 (wide: about -50 to +780 for the difference).
  :func:`elo_difference` is the two-entrant closed form of both (used by SPRT matches).
* :func:`openskill_ratings` -- Plackett-Luce ratings (``openskill.models.PlackettLuce``): ``mu``, ``sigma`` and
  the conservative ``ordinal = mu - 3 sigma``, updated game by game in the table's order: the live-ladder view,
  order dependent by nature (the caller fixes the order).
* :func:`standings` -- all of the above as one leaderboard frame, ranked by the Bradley-Terry Elo, exact ties
  sharing a rank (``"3="``), and :func:`head_to_head` the score matrix.

Games are treated as independent in the likelihood.  For side-swapped pairs on common dice this is usually
conservative (a side-biased scenario makes the two games of a pair anti-correlated); draws counted as half
points also overstate the variance, so the intervals err on the wide side.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, optimize, sparse, stats

from sim.stats import wilson_interval as wilson

#: Natural-log slope of the Elo logistic: ``P(win) = 1 / (1 + 10 ** (-diff / 400))``.
ELO_K = math.log(10) / 400
#: Default weak prior: virtual draws added to every pairing that played.
PRIOR_DRAWS = 2.0
#: Ratings closer than this (Elo) are an exact tie: they share a rank.
TIE_TOLERANCE = 1e-6
#: Beyond this (Elo) a profile bound is reported as infinite (never reached with a prior of > 0 draws).
_FAR = 20000.0


class RatingError(ValueError):
    """The games table is malformed (missing column, score outside [0, 1], unknown entrant), or the ratings are
    not identified (entrants that never met, directly or through others)."""


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
    low, high = wilson(score, n, confidence)
    return score / n, low, high


def _check(games: pd.DataFrame) -> None:
    for col in ("a", "b", "score_a"):
        if col not in games.columns:
            raise RatingError(f"games table: missing column {col!r} (have {', '.join(map(str, games.columns))})")
    s = games["score_a"].to_numpy(dtype=float)
    if len(s) and (np.isnan(s).any() or np.nanmin(s) < 0 or np.nanmax(s) > 1):
        raise RatingError("games table: score_a must be in [0, 1] (1 win, 0.5 draw, 0 loss)")


def _check_options(prior_draws: float, confidence: float) -> None:
    if not prior_draws > 0:
        raise RatingError(f"prior_draws must be > 0 virtual draws per pairing (keeps perfect records finite), "
                          f"got {prior_draws}")
    if not 0 < confidence < 1:
        raise RatingError(f"confidence must be in (0, 1), got {confidence}")


def entrants_of(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> list[str]:
    """The entrant names: ``entrants`` if given (checked to cover the table), else sorted names in the table."""
    seen = sorted(set(games["a"].astype(str)) | set(games["b"].astype(str)))
    if entrants is None:
        return seen
    missing = sorted(set(seen) - set(entrants))
    if missing:
        raise RatingError(f"games table names entrants not listed: {', '.join(missing)}")
    return list(entrants)


def score_matrices(games: pd.DataFrame, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(W, N)``, both ``(K, K)`` for the ``K`` names: ``W[i, j]`` points ``i`` scored against ``j``, ``N[i, j]``
    games between them (symmetric, zero diagonal)."""
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


# --- Bradley-Terry with a prior of virtual draws ----------------------------------------------------------------
def _with_prior(W: np.ndarray, N: np.ndarray, prior_draws: float) -> tuple[np.ndarray, np.ndarray]:
    met = (N > 0).astype(float)
    return W + 0.5 * prior_draws * met, N + prior_draws * met


def _nll(r: np.ndarray, W: np.ndarray, N: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Negative log-likelihood ``-sum_ij W_ij log sigma(c (r_i - r_j))`` (``c`` = :data:`ELO_K`, ``r`` in Elo) with
    its gradient and Hessian."""
    d = ELO_K * (r[:, None] - r[None, :])
    logp = -np.logaddexp(0.0, -d)                       # log sigma(d), stable
    p = np.exp(logp)
    f = -float(np.sum(W * logp))
    g = -ELO_K * np.sum(W - N * p, axis=1)
    q = ELO_K * ELO_K * N * p * (1 - p)
    H = -q
    np.fill_diagonal(H, q.sum(axis=1) - np.diag(q))
    return f, g, H


def _minimise(W: np.ndarray, N: np.ndarray, origin: np.ndarray, basis: np.ndarray,
              z0: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Minimise the negative log-likelihood over ``r = origin + basis @ z`` (convex; ``scipy.optimize.minimize``
    trust-exact with the exact gradient and Hessian).  Returns ``(f, r)``."""
    if basis.shape[1] == 0:
        return _nll(origin, W, N)[0], origin
    cache: dict[bytes, tuple[float, np.ndarray, np.ndarray]] = {}

    def ev(z: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        key = z.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = _nll(origin + basis @ z, W, N)
        return cache[key]

    def value(z: np.ndarray) -> float:
        return ev(z)[0]

    def gradient(z: np.ndarray) -> np.ndarray:
        return basis.T @ ev(z)[1]

    def hessian(z: np.ndarray) -> np.ndarray:
        return basis.T @ ev(z)[2] @ basis

    res = optimize.minimize(value, np.zeros(basis.shape[1]) if z0 is None else z0, jac=gradient, hess=hessian,
                            method="trust-exact", options={"gtol": 1e-9, "maxiter": 500})
    r = origin + basis @ res.x
    return _nll(r, W, N)[0], r


def _sum_zero_basis(k: int) -> np.ndarray:
    """An orthonormal ``(k, k-1)`` basis of the vectors summing to 0."""
    return linalg.null_space(np.ones((1, k)))


@dataclass(frozen=True)
class BTFit:
    """A fitted Bradley-Terry model.

    Fields: ``names`` (all ``K`` entrants), ``elo`` (``(K,)`` Elo, mean 0 over the rated entrants, NaN for an
    entrant without games), ``rated`` (``(K,)`` bool), ``nll`` (the minimised negative log-likelihood, prior
    included), ``cov`` (``(K, K)`` covariance of ``elo`` from the inverse observed information, NaN rows for
    unrated entrants), ``prior_draws``, and the matrices ``W``, ``N`` with the prior's virtual draws added."""

    names: tuple[str, ...]
    elo: np.ndarray
    rated: np.ndarray
    nll: float
    cov: np.ndarray
    prior_draws: float
    W: np.ndarray
    N: np.ndarray

    def index(self, name: str) -> int:
        """Position of entrant ``name``; raises :class:`RatingError` if unknown."""
        try:
            return self.names.index(name)
        except ValueError:
            raise RatingError(f"no entrant {name!r} in this fit") from None


def _fit_matrices(W: np.ndarray, N: np.ndarray, names: Sequence[str], prior_draws: float) -> BTFit:
    Wp, Np = _with_prior(W, N, prior_draws)
    k = len(names)
    rated = Np.sum(axis=1) > 0
    elo = np.full(k, np.nan)
    cov = np.full((k, k), np.nan)
    idx = np.flatnonzero(rated)
    if len(idx) == 0:
        return BTFit(tuple(names), elo, rated, 0.0, cov, prior_draws, Wp, Np)
    Ws, Ns = Wp[np.ix_(idx, idx)], Np[np.ix_(idx, idx)]
    ncomp, labels = sparse.csgraph.connected_components(Ns > 0, directed=False)
    if ncomp > 1:
        groups = [", ".join(str(names[idx[j]]) for j in np.flatnonzero(labels == c)) for c in range(ncomp)]
        raise RatingError("ratings are not identified: these groups of entrants never met, directly or through "
                          "others: " + "; ".join(f"[{g}]" for g in groups))
    basis = _sum_zero_basis(len(idx))
    f, r = _minimise(Ws, Ns, np.zeros(len(idx)), basis)
    r = r - r.mean()
    if len(idx) > 1:
        H = _nll(r, Ws, Ns)[2]
        c = basis @ np.linalg.inv(basis.T @ H @ basis) @ basis.T
        cov[np.ix_(idx, idx)] = c
    else:
        cov[idx[0], idx[0]] = 0.0
    elo[idx] = r
    return BTFit(tuple(names), elo, rated, f, cov, prior_draws, Wp, Np)


def bt_fit(games: pd.DataFrame, entrants: Sequence[str] | None = None,
           prior_draws: float = PRIOR_DRAWS) -> BTFit:
    """Fit Bradley-Terry Elo ratings to ``games`` (see the module docstring).

    Model: ``P(i scores against j) = 1 / (1 + 10^(-(R_i - R_j)/400))``, each game's score (draw = 1/2) as the
    observation, plus ``prior_draws`` virtual draws on every pairing that played at least once.  The fitted
    ratings maximise that likelihood; they are centred on the mean of the rated entrants.

    Raises :class:`RatingError` for a malformed table, ``prior_draws <= 0``, or entrants split into groups that
    never met (the ratings between groups would be arbitrary)."""
    _check(games)
    _check_options(prior_draws, 0.5)
    names = entrants_of(games, entrants)
    W, N = score_matrices(games, names)
    return _fit_matrices(W, N, names, prior_draws)


def elo_fit(games: pd.DataFrame, entrants: Sequence[str] | None = None,
            prior_draws: float = PRIOR_DRAWS) -> pd.Series:
    """The :func:`bt_fit` Elo ratings (points, mean 0) as a Series indexed by entrant."""
    fit = bt_fit(games, entrants, prior_draws)
    return pd.Series(fit.elo, index=pd.Index(list(fit.names), name="entrant"), name="elo")


def chi2_quantile(confidence: float) -> float:
    """The chi-square(1) quantile that bounds the likelihood-ratio statistic of a ``confidence`` interval."""
    return float(stats.chi2.ppf(confidence, 1))


def profile_deviance(fit: BTFit, name: str, value: float) -> float:
    """``2 (nll(value) - nll_min)``: the likelihood-ratio statistic of entrant ``name``'s centred rating fixed at
    ``value`` (Elo), the other rated entrants re-fitted under the same mean-0 centring."""
    i = fit.index(name)
    if not fit.rated[i]:
        return float("nan")
    idx = np.flatnonzero(fit.rated)
    pos = int(np.flatnonzero(idx == i)[0])
    k = len(idx)
    Ws, Ns = fit.W[np.ix_(idx, idx)], fit.N[np.ix_(idx, idx)]
    # r = value * v + B u with v[pos] = 1, v[other] = -1/(k-1) (sum 0) and B spanning {sum 0, r_pos = 0}
    v = np.full(k, -1.0 / (k - 1))
    v[pos] = 1.0
    if k > 2:
        cons = np.zeros((2, k))
        cons[0] = 1.0
        cons[1, pos] = 1.0
        basis = linalg.null_space(cons)
    else:
        basis = np.zeros((k, 0))
    f, _ = _minimise(Ws, Ns, value * v, basis)
    return 2.0 * (f - fit.nll)


def profile_interval(fit: BTFit, name: str, confidence: float = 0.95) -> tuple[float, float]:
    """``(low, high)``: the profile-likelihood interval of entrant ``name``'s centred rating (Elo).

    The bounds are where :func:`profile_deviance` crosses :func:`chi2_quantile` (``scipy.optimize.brentq``, to
    0.01 Elo).  With a prior of > 0 virtual draws both bounds are finite.  NaN for an entrant without games."""
    _check_options(fit.prior_draws, confidence)
    i = fit.index(name)
    if not fit.rated[i]:
        return float("nan"), float("nan")
    if fit.rated.sum() == 1:
        return 0.0, 0.0
    q = chi2_quantile(confidence)
    est = float(fit.elo[i])
    se = math.sqrt(max(float(fit.cov[i, i]), 1.0))

    def g(t: float) -> float:
        return profile_deviance(fit, name, t) - q

    out = []
    for sign in (-1.0, 1.0):
        step = max(50.0, 2.0 * se)
        inner, outer = est, est + sign * step
        while g(outer) < 0:
            inner, outer = outer, outer + (outer - est)
            if abs(outer - est) > _FAR:
                outer = math.inf
                break
        lo, hi = sorted((inner, outer))
        out.append(outer if math.isinf(outer) else optimize.brentq(g, lo, hi, xtol=0.01))
    return out[0], out[1]


def elo_difference(points: float, games: int, prior_draws: float = PRIOR_DRAWS,
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """``(elo, low, high)``: the Elo of one entrant over another from ``points`` scored in ``games`` games, the
    two-entrant case of :func:`bt_fit` and :func:`profile_interval` in closed form.

    With ``k = prior_draws``: ``s = (points + k/2) / (games + k)``, ``elo = 400 log10(s / (1 - s))``; the interval
    is the set of scores ``p`` whose log-likelihood ``(points + k/2) log p + (games - points + k/2) log(1 - p)``
    lies within ``chi2_quantile(confidence) / 2`` of its maximum (the roots by ``scipy.optimize.brentq``),
    converted to Elo.  ``games == 0`` gives ``(0, low, high)`` from the prior alone.  Raises
    :class:`RatingError` for ``points`` outside ``[0, games]``."""
    _check_options(prior_draws, confidence)
    if games < 0 or not 0 <= points <= games:
        raise RatingError(f"points {points} out of range for {games} games")
    a = points + prior_draws / 2
    b = games - points + prior_draws / 2
    s = a / (a + b)
    ll = lambda p: a * math.log(p) + b * math.log1p(-p)
    top = ll(s)
    h = chi2_quantile(confidence) / 2
    g = lambda p: top - ll(p) - h
    tiny = 1e-300
    lo = optimize.brentq(g, tiny, s, xtol=1e-15) if g(tiny) > 0 else 0.0
    hi = optimize.brentq(g, s, 1 - 1e-16, xtol=1e-15) if g(1 - 1e-16) > 0 else 1.0
    return float(elo_from_score(s)), float(elo_from_score(lo)), float(elo_from_score(hi))


def likelihood_of_superiority(fit: BTFit, a: str, b: str) -> float:
    """``P(R_a > R_b)`` under the normal approximation of the fitted likelihood (the LOS of BayesElo and Ordo):
    ``Phi((elo_a - elo_b) / sd)`` with ``sd`` from :attr:`BTFit.cov`.  NaN if either is unrated."""
    i, j = fit.index(a), fit.index(b)
    if not (fit.rated[i] and fit.rated[j]):
        return float("nan")
    var = float(fit.cov[i, i] + fit.cov[j, j] - 2 * fit.cov[i, j])
    d = float(fit.elo[i] - fit.elo[j])
    if var <= 0:
        return 0.5 if d == 0 else float(d > 0)
    return float(stats.norm.cdf(d / math.sqrt(var)))


def elo_intervals(games: pd.DataFrame, entrants: Sequence[str] | None = None, *,
                  prior_draws: float = PRIOR_DRAWS, confidence: float = 0.95) -> pd.DataFrame:
    """Per entrant: ``elo`` (:func:`bt_fit`), profile-likelihood ``elo_lo`` / ``elo_hi`` and ``elo_se`` (the
    normal-approximation standard error), indexed by entrant in ``entrants`` order."""
    _check_options(prior_draws, confidence)
    fit = bt_fit(games, entrants, prior_draws)
    rows = [profile_interval(fit, n, confidence) for n in fit.names]
    return pd.DataFrame({"elo": fit.elo, "elo_lo": [r[0] for r in rows], "elo_hi": [r[1] for r in rows],
                         "elo_se": np.sqrt(np.diag(fit.cov))}, index=pd.Index(list(fit.names), name="entrant"))


def rank_with_ties(values: Sequence[float] | np.ndarray,
                   tolerance: float = TIE_TOLERANCE) -> tuple[list[int], list[str]]:
    """Competition ranks of ``values`` (higher is better) with exact ties sharing a rank: ``([1, 2, 2, 4],
    ["1", "2=", "2=", "4"])`` for ``[9, 5, 5, 1]``.  Values within ``tolerance`` of the next better one tie with
    it; NaN ranks last (label ``"-"``, rank = number of values)."""
    v = np.asarray(values, dtype=float)
    order = sorted(range(len(v)), key=lambda i: (np.isnan(v[i]), -v[i] if not np.isnan(v[i]) else 0.0))
    ranks = [0] * len(v)
    prev, rank = None, 0
    for pos, i in enumerate(order):
        if np.isnan(v[i]):
            ranks[i] = len(v)
            continue
        if prev is None or prev - v[i] > tolerance:
            rank = pos + 1
        ranks[i] = rank
        prev = v[i]
    counts = pd.Series(ranks).value_counts()
    labels = ["-" if np.isnan(v[i]) else f"{ranks[i]}{'=' if counts[ranks[i]] > 1 else ''}" for i in range(len(v))]
    return ranks, labels


# --- openskill ------------------------------------------------------------------------------------------------
def openskill_ratings(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> pd.DataFrame:
    """Plackett-Luce ratings: columns ``mu``, ``sigma``, ``ordinal`` (``mu - 3 sigma``) per entrant.

    Every game updates both entrants in the table's row order (win: ranks 0/1, draw: 0/0 -- a tie, which
    openskill 6.2 handles as one), starting from the model's defaults (mu 25, sigma 25/3).  Deterministic for a
    given order; a different order gives different ratings."""
    from openskill.models import PlackettLuce

    _check(games)
    names = entrants_of(games, entrants)
    model = PlackettLuce()
    ratings = {n: model.rating(name=n) for n in names}
    for a, b, s in zip(games["a"].astype(str), games["b"].astype(str), games["score_a"].to_numpy(dtype=float)):
        ranks: list[float] = [0, 0] if s == 0.5 else ([0, 1] if s > 0.5 else [1, 0])
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
    """Knobs for :func:`standings`: interval ``confidence`` and the prior's ``prior_draws`` (virtual draws per
    pairing that met)."""

    confidence: float = 0.95
    prior_draws: float = PRIOR_DRAWS


#: What the leaderboard's columns mean, and why Elo and openskill can disagree (printed under the leaderboard).
RANKING_NOTE = (
    "Ranked by Elo: a Bradley-Terry fit of all games at once (draws = 1/2, {k:g} virtual draws per pairing as a "
    "weak prior so a perfect record stays finite) with {conf} profile-likelihood intervals; '=' marks an exact "
    "tie, which shares its rank. LOS is the probability that the entrant is stronger than the next one down. "
    "openskill (Plackett-Luce) is the live-ladder view: it updates game by game in schedule order, so the same "
    "games in another order give other numbers, and its rank uses the ordinal mu - 3 sigma, which also "
    "penalises uncertainty; entrants tied on Elo share their openskill rank as well. Elo weighs every game "
    "equally, whenever it was played.")


def standings(games: pd.DataFrame, entrants: Sequence[str] | None = None,
              options: RatingOptions = RatingOptions()) -> pd.DataFrame:
    """The leaderboard: one row per entrant, best first by Bradley-Terry Elo (exact ties keep ``entrants``
    order and share a rank, never broken by name).

    Columns: ``rank`` (int, competition ranking), ``rank_label`` (``"3="`` for a tie), ``entrant``, ``games``,
    ``wins``, ``draws``, ``losses``, ``points``, ``score`` + Wilson ``score_lo``/``score_hi``, ``elo`` +
    profile-likelihood ``elo_lo``/``elo_hi`` and ``elo_se``, ``los_next`` (likelihood of superiority over the
    next entrant down; NaN for the last), openskill ``mu``, ``sigma``, ``ordinal`` and ``os_rank`` /
    ``os_rank_label`` (competition rank by ordinal, ``"1="`` for a tie; entrants tied on Elo share it at their
    best ordinal, since openskill tells them apart only by the schedule's order).  Raises :class:`RatingError` as
    :func:`bt_fit` does."""
    _check(games)
    _check_options(options.prior_draws, options.confidence)
    names = entrants_of(games, entrants)
    sc = score_table(games, confidence=options.confidence).set_index("entrant").reindex(names)
    sc[["games", "wins", "draws", "losses"]] = sc[["games", "wins", "draws", "losses"]].fillna(0).astype(int)
    sc["points"] = sc["points"].fillna(0.0)
    os_ = openskill_ratings(games, names)
    fit = bt_fit(games, names, options.prior_draws)
    bounds = [profile_interval(fit, n, options.confidence) for n in names]
    elo = pd.DataFrame({"elo": fit.elo, "elo_lo": [b[0] for b in bounds], "elo_hi": [b[1] for b in bounds],
                        "elo_se": np.sqrt(np.diag(fit.cov))}, index=pd.Index(names, name="entrant"))
    board = sc.join(elo).join(os_)
    ranks, labels = rank_with_ties(board["elo"].to_numpy())
    # entrants tied on Elo (equal Bradley-Terry strength: the same results against the field) share their openskill
    # rank too, at the best ordinal of the tie: their ordinals differ only by the order the games were played in
    ordinal = board["ordinal"].to_numpy(dtype=float)
    tied_best = pd.Series(ordinal).groupby(np.asarray(ranks)).transform("max").to_numpy()
    os_ranks, os_labels = rank_with_ties(np.where(np.isnan(board["elo"].to_numpy(dtype=float)), ordinal, tied_best))
    board.insert(0, "rank", ranks)
    board.insert(1, "rank_label", labels)
    board["os_rank"], board["os_rank_label"] = os_ranks, os_labels
    board["_order"] = np.arange(len(board))
    board = board.reset_index().sort_values(["rank", "_order"], kind="mergesort").drop(columns="_order")
    board = board.reset_index(drop=True)
    los = [likelihood_of_superiority(fit, a, b) for a, b in zip(board["entrant"], board["entrant"].iloc[1:])]
    board["los_next"] = [*los, float("nan")]
    cols = ["rank", "rank_label", "entrant", "games", "wins", "draws", "losses", "points", "score", "score_lo",
            "score_hi", "elo", "elo_lo", "elo_hi", "elo_se", "los_next", "mu", "sigma", "ordinal", "os_rank",
            "os_rank_label"]
    return board[cols]


def head_to_head(games: pd.DataFrame, entrants: Sequence[str] | None = None) -> pd.DataFrame:
    """Score matrix: cell ``[row, column]`` is the row entrant's mean score against the column entrant (NaN on the
    diagonal and for pairs that never met)."""
    names = entrants_of(games, entrants)
    W, N = score_matrices(games, names)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(N > 0, W / np.where(N > 0, N, 1), np.nan)
    return pd.DataFrame(m, index=pd.Index(names, name="entrant"), columns=pd.Index(names, name="opponent"))
