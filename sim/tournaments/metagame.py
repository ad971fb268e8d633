"""The meta-game of a tournament: which doctrine mixes are stable when doctrines compete as a population.

Input is the games table of :mod:`sim.tournaments.ratings` (``a``, ``b``, ``score_a``, optional ``cluster``) from a
round robin.  The **payoff matrix** ``M[i, j]`` is doctrine ``i``'s mean score against ``j`` over every game (both
sides, every scenario); the diagonal is 1/2 (a doctrine against itself, averaged over both sides, scores exactly half by
symmetry; self-play is not scheduled).  Since ``M + M^T = 1`` the game is symmetric and constant-sum.

What it computes:

* :func:`replicator` -- the replicator dynamics ``dx_i/dt = x_i ((M x)_i - x^T M x)`` (Taylor & Jonker 1978;
  Hofbauer & Sigmund 1998, ch. 7), integrated by ``scipy.integrate.solve_ivp`` in log-shares (so shares stay
  positive) from the uniform mix: the continuous form of Axelrod's ecological simulation, where each doctrine's
  share grows with its score against the current population.  In a constant-sum game an interior orbit need
  not converge (rock-paper-scissors circles its centre forever), but its **time average** approaches the
  equilibrium; both the final shares and the time average are reported.
* :func:`symmetric_equilibrium` -- the maximin mix of the constant-sum game (``scipy.optimize.linprog``,
  HiGHS): the mix no single doctrine beats on average, i.e. the symmetric Nash equilibrium and the rest point
  the replicator orbits.  When several mixes are optimal (doctrines with identical results) it is the one of
  largest entropy (Nash averaging, Balduzzi et al. 2018): identical doctrines get equal shares.
* :func:`rest_points` -- every rest point of the replicator that is a symmetric Nash equilibrium (one per
  support with an equalising mix, for up to :data:`MAX_SUPPORT_ENUMERATION` doctrines), each with its
  stability from the eigenvalues of the replicator's Jacobian on the simplex: ``stable`` (all real parts < 0:
  an attractor, e.g. a dominant doctrine), ``neutral`` (real parts 0: orbits circle it, as in
  rock-paper-scissors), ``unstable``.
* :func:`alpha_rank` -- alpha-rank (Omidshafiei et al. 2019) from OpenSpiel (``open_spiel.python.egt.alpharank``,
  the ``metagame`` extra): the stationary distribution of a Moran process in a finite population of
  ``population`` agents where one mutant at a time tries to take over, with Fermi selection of strength
  ``alpha``; also the Moran **fixation probabilities** (Axelrod's Moran analysis): ``fixation[r, s]`` is the
  chance that one ``r`` mutant takes over a population of ``s``.  ``None`` when OpenSpiel is not installed.
* :func:`analyse` -- all of it, with the uncertainty of a bootstrap over games: mirrored pairs (``cluster``)
  are resampled with replacement within each pairing, the payoff matrix rebuilt and the equilibrium and
  alpha-rank recomputed; percentile intervals, the probability that each doctrine is in the equilibrium's
  support, and the probability that it tops alpha-rank.  :func:`format_metagame` prints it and
  :func:`plot_metagame` draws it (matplotlib).

Decisions where the literature leaves a choice: payoffs are scores (win 1, draw 1/2), so replicator rates are in
"score above the population average per unit time"; alpha-rank uses OpenSpiel's local selection model
(fitness against the current opponent) with ``population = 50`` and ``alpha = 10`` by default (a 0.1 score edge
then makes a mutant's fixation about 10^22 times likelier than the reverse: rankings are near the
infinite-alpha limit unless edges are within a few hundredths).
"""
from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import integrate, linalg, optimize

#: Rest points are enumerated over every support up to this many doctrines (2^K supports).
MAX_SUPPORT_ENUMERATION = 12
#: Shares below this are "not in the support".
SUPPORT_TOL = 1e-6
#: A rest point's eigenvalue real parts within this of 0 count as 0 ("neutral"): the maximum-entropy mix is found
#: numerically (to about 1e-9), so its eigenvalues carry that much noise.
EIGEN_TOL = 1e-7


class MetagameError(ValueError):
    """The games do not define a full payoff matrix (a pairing never played) or the options are invalid."""


@dataclass(frozen=True)
class MetagameOptions:
    """Knobs: ``population`` (Moran population size, >= 2), ``alpha`` (selection strength, > 0), ``bootstrap``
    (resamples, 0 = none), ``seed`` (bootstrap generator), ``confidence`` (interval level), ``t_max``
    (replicator time, in score units: a doctrine ``d`` points above the population average grows by ``e^(d t)``)."""

    population: int = 50
    alpha: float = 10.0
    bootstrap: int = 200
    seed: int = 0
    confidence: float = 0.95
    t_max: float = 1000.0

    def __post_init__(self) -> None:
        if self.population < 2:
            raise MetagameError(f"metagame: population must be >= 2 agents, got {self.population}")
        if not self.alpha > 0:
            raise MetagameError(f"metagame: alpha must be > 0, got {self.alpha}")
        if self.bootstrap < 0:
            raise MetagameError(f"metagame: bootstrap must be >= 0 resamples, got {self.bootstrap}")
        if not 0 < self.confidence < 1:
            raise MetagameError(f"metagame: confidence must be in (0, 1), got {self.confidence}")
        if not self.t_max > 0:
            raise MetagameError(f"metagame: t_max must be > 0, got {self.t_max}")


# --- the payoff matrix ------------------------------------------------------------------------------------------
def _cluster_contributions(games: pd.DataFrame, names: Sequence[str]
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster ``c``: ``Wc[c]`` (points, ``(K, K)``), ``Nc[c]`` (games), and each cluster's pairing stratum
    (``(C,)`` ints); plus the cluster codes of the rows."""
    idx = {n: i for i, n in enumerate(names)}
    ma, mb = games["a"].astype(str).map(idx), games["b"].astype(str).map(idx)
    if ma.isna().any() or mb.isna().any():
        raise MetagameError("games table names entrants that are not in the meta-game's list")
    ia, ib = ma.to_numpy(dtype=int), mb.to_numpy(dtype=int)
    s = games["score_a"].to_numpy(dtype=float)
    clusters = games["cluster"].astype(str).to_numpy() if "cluster" in games.columns else np.arange(len(games))
    codes, _ = pd.factorize(pd.Series(clusters), sort=True)
    C, K = int(codes.max()) + 1 if len(codes) else 0, len(names)
    Wc = np.zeros((C, K, K))
    Nc = np.zeros((C, K, K))
    np.add.at(Wc, (codes, ia, ib), s)
    np.add.at(Wc, (codes, ib, ia), 1 - s)
    np.add.at(Nc, (codes, ia, ib), 1)
    np.add.at(Nc, (codes, ib, ia), 1)
    lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
    stratum = np.zeros(C, dtype=int)
    stratum[codes] = lo * K + hi
    return Wc, Nc, stratum, codes


def _matrix(W: np.ndarray, N: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        M = np.where(N > 0, W / np.where(N > 0, N, 1), np.nan)
    np.fill_diagonal(M, 0.5)
    return M


def payoff_matrix(games: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """``(K, K)`` mean score of row doctrine against column doctrine, 1/2 on the diagonal.

    Raises :class:`MetagameError` if a pairing never played (a gauntlet has no full matrix)."""
    Wc, Nc, _, _ = _cluster_contributions(games, names)
    M = _matrix(Wc.sum(axis=0), Nc.sum(axis=0))
    missing = [(names[i], names[j]) for i, j in zip(*np.nonzero(np.isnan(M))) if i < j]
    if missing:
        raise MetagameError("the meta-game needs every pairing played (a round robin); never played: "
                            + ", ".join(f"{a} v {b}" for a, b in missing[:10])
                            + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
    return M


# --- replicator dynamics ----------------------------------------------------------------------------------------
def replicator_field(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dx/dt`` of the replicator dynamics at mix ``x`` (``(K,)``, on the simplex): ``x_i ((Mx)_i - x.Mx)``."""
    f = M @ x
    return x * (f - x @ f)


@dataclass(frozen=True)
class Trajectory:
    """A replicator orbit: times ``t`` (``(T,)``), shares ``x`` (``(T, K)``, rows on the simplex), the final mix
    and the time average over the whole run (trapezoid rule)."""

    t: np.ndarray
    x: np.ndarray

    @property
    def final(self) -> np.ndarray:
        """The shares at the last time."""
        return self.x[-1]

    @property
    def time_average(self) -> np.ndarray:
        """``(1/T) * integral of x dt`` over the run."""
        return integrate.trapezoid(self.x, self.t, axis=0) / (self.t[-1] - self.t[0])


def replicator(M: np.ndarray, x0: Sequence[float] | None = None, t_max: float = 1000.0,
               n_points: int = 2001) -> Trajectory:
    """Integrate the replicator dynamics of payoff matrix ``M`` from ``x0`` (default: the uniform mix) to
    ``t_max``, sampled at ``n_points`` equally spaced times.

    Integrated as ``dy_i/dt = (M x)_i - x.Mx`` for ``y = log x`` (``solve_ivp``, DOP853, rtol 1e-10, atol
    1e-12), which is the same flow and keeps every share positive; a share starting at 0 stays 0 (such
    doctrines are left out of the integration).  Raises :class:`MetagameError` for a start off the simplex."""
    M = np.asarray(M, dtype=float)
    K = M.shape[0]
    start = np.full(K, 1.0 / K) if x0 is None else np.asarray(x0, dtype=float)
    if start.shape != (K,) or (start < 0).any() or not math.isclose(float(start.sum()), 1.0, abs_tol=1e-9):
        raise MetagameError(f"replicator: start must be a mix of {K} non-negative shares summing to 1")
    live = np.flatnonzero(start > 0)
    Ms = M[np.ix_(live, live)]

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        x = np.exp(y - y.max())
        x /= x.sum()
        f = Ms @ x
        return f - x @ f

    times = np.linspace(0.0, t_max, n_points)
    sol = integrate.solve_ivp(rhs, (0.0, t_max), np.log(start[live]), t_eval=times, method="DOP853", rtol=1e-10,
                              atol=1e-12)
    if not sol.success:  # pragma: no cover - a smooth bounded field
        raise MetagameError(f"replicator integration failed: {sol.message}")
    y = sol.y.T
    xs = np.exp(y - y.max(axis=1, keepdims=True))
    xs /= xs.sum(axis=1, keepdims=True)
    out = np.zeros((len(times), K))
    out[:, live] = xs
    return Trajectory(times, out)


def jacobian(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(K, K)`` Jacobian of :func:`replicator_field` at ``x``."""
    f = M @ x
    avg = x @ f
    grad_avg = f + M.T @ x
    return np.diag(f - avg) + x[:, None] * (M - grad_avg[None, :])


def tangent_eigenvalues(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Eigenvalues (complex, ``(K-1,)``) of the replicator's Jacobian at ``x`` on the simplex's tangent space (an
    orthonormal basis of the sum-zero vectors)."""
    K = len(x)
    if K == 1:
        return np.zeros(0, dtype=complex)
    B = linalg.null_space(np.ones((1, K)))
    return np.linalg.eigvals(B.T @ jacobian(M, x) @ B)


def stability(M: np.ndarray, x: np.ndarray, tol: float = 1e-9) -> tuple[str, float]:
    """``(kind, max_real)`` of rest point ``x``: the largest real part of :func:`tangent_eigenvalues` and
    ``"stable"`` (< -tol), ``"unstable"`` (> tol) or ``"neutral"``."""
    ev = tangent_eigenvalues(M, x)
    if len(ev) == 0:
        return "stable", 0.0
    top = float(ev.real.max())
    return ("stable" if top < -tol else "unstable" if top > tol else "neutral"), top


# --- equilibria -------------------------------------------------------------------------------------------------
def maximin_vertex(M: np.ndarray) -> tuple[np.ndarray, float]:
    """The maximin mix ``x`` of payoff matrix ``M`` and its value ``v``, as a vertex of the optimal set: maximise
    ``v`` subject to ``sum_i x_i M[i, j] >= v`` for every ``j``, ``x`` on the simplex (``scipy.optimize.linprog``,
    HiGHS).  When several mixes are optimal (doctrines tied against each other) this is whichever vertex HiGHS
    stops at; :func:`symmetric_equilibrium` picks the one the meta-game reports.  Tiny negative round-off is
    clipped and the mix renormalised."""
    M = np.asarray(M, dtype=float)
    K = M.shape[0]
    c = np.zeros(K + 1)
    c[-1] = -1.0                                           # maximise v
    A_ub = np.hstack([-M.T, np.ones((K, 1))])              # v - sum_i x_i M[i, j] <= 0
    A_eq = np.hstack([np.ones((1, K)), np.zeros((1, 1))])
    res = optimize.linprog(c, A_ub=A_ub, b_ub=np.zeros(K), A_eq=A_eq, b_eq=[1.0],
                           bounds=[(0, None)] * K + [(None, None)], method="highs")
    if not res.success or res.x is None:  # pragma: no cover - always feasible and bounded
        raise MetagameError(f"equilibrium LP failed: {res.message}")
    x = np.clip(res.x[:K], 0.0, None)
    x[x < 1e-12] = 0.0
    return x / x.sum(), float(res.x[K])


#: Slack of the maximum-entropy search's "still optimal" constraints, and how far its mix may be from the LP's
#: vertex to count as the same (the optimal set is then a single point and the vertex is reported as it is).
_MAXENT_SLACK = 1e-10
_SAME_MIX = 1e-6


def symmetric_equilibrium(M: np.ndarray) -> np.ndarray:
    """The symmetric Nash equilibrium the meta-game reports: the **maximum-entropy** maximin mix of ``M``.

    For a symmetric constant-sum ``M`` (a tournament's) the maximin value is ``1/2`` and the maximin mixes are
    exactly its symmetric Nash equilibria, a convex set.  Where that set is one point (the usual case) this is
    :func:`maximin_vertex`'s mix.  Where it is not -- doctrines with identical results, or one doctrine that can
    stand in for a mix of others -- this is the mix of largest entropy in it, the choice of *Nash averaging*
    (Balduzzi, Tuyls, Perolat and Graepel, "Re-evaluating evaluation", NeurIPS 2018): it is unique (entropy is
    strictly concave), it gives doctrines with identical payoff rows and columns equal shares (swapping them maps
    the set onto itself, so the unique maximiser is unchanged), and adding a copy of a doctrine splits that
    doctrine's share between the copies instead of moving the mix.  A single LP vertex would give one copy all of
    it and the other none.  Found by ``scipy.optimize.minimize`` (SLSQP) over the mixes that still guarantee the
    value (within ``1e-10``); if that search fails, the vertex is returned.  Returns ``(K,)``, summing to 1."""
    M = np.asarray(M, dtype=float)
    x_lp, v = maximin_vertex(M)
    K = M.shape[0]
    if K < 2:
        return x_lp

    def neg_entropy(x: np.ndarray) -> float:
        return float(np.sum(x * np.log(np.maximum(x, 1e-300))))

    def grad(x: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(x, 1e-300)) + 1.0

    res = optimize.minimize(
        neg_entropy, np.full(K, 1.0 / K), jac=grad, method="SLSQP", bounds=optimize.Bounds(0.0, 1.0),
        constraints=[optimize.LinearConstraint(M.T, v - _MAXENT_SLACK, np.inf),
                     optimize.LinearConstraint(np.ones((1, K)), 1.0, 1.0)],
        options={"ftol": 1e-14, "maxiter": 500})
    if not res.success:  # pragma: no cover - a bounded, feasible, smooth convex problem
        return x_lp
    x = np.clip(res.x, 0.0, None)
    x[x < SUPPORT_TOL] = 0.0       # the search ends about 1e-9 inside the bounds: a share that small is none
    if x.sum() <= 0 or ((x / x.sum()) @ M < v - 1e-7).any():  # pragma: no cover - as above
        return x_lp
    x = x / x.sum()
    return x_lp if np.abs(x - x_lp).max() <= _SAME_MIX else x


@dataclass(frozen=True)
class RestPoint:
    """A rest point of the replicator that is a symmetric Nash equilibrium: ``mix`` (``(K,)``), ``stability``
    (``stable`` / ``neutral`` / ``unstable``), ``max_real`` (the largest real part of the tangent Jacobian's
    eigenvalues) and ``cycles`` (a neutral point with a rotating pair of eigenvalues: nearby populations circle
    it, as in rock-paper-scissors; a neutral point without one has a tie to drift along)."""

    mix: np.ndarray
    stability: str
    max_real: float
    cycles: bool = False


def rest_points(M: np.ndarray, tol: float = 1e-9) -> list[RestPoint]:
    """Every equilibrium rest point of the replicator dynamics of ``M``: for each support ``S`` the mix with
    ``(M x)_i`` equal on ``S`` (a linear solve) if it is positive there and no doctrine outside ``S`` scores
    more against it (the Nash condition).  Enumerates all ``2^K - 1`` supports for ``K <=``
    :data:`MAX_SUPPORT_ENUMERATION`; above that, only the :func:`symmetric_equilibrium`.  Degenerate supports
    (a singular system: doctrines tied against each other) are skipped, but the :func:`symmetric_equilibrium`
    is always included.  For a constant-sum ``M`` the equilibria form a convex set, so when several are listed
    every mix between them is an equilibrium too.  Sorted by support size, then mix."""
    M = np.asarray(M, dtype=float)
    K = M.shape[0]
    found: list[np.ndarray] = []
    if K > MAX_SUPPORT_ENUMERATION:
        found.append(symmetric_equilibrium(M))
    else:
        for size in range(1, K + 1):
            for support in combinations(range(K), size):
                S = list(support)
                A = np.zeros((size + 1, size + 1))
                A[:size, :size] = M[np.ix_(S, S)]
                A[:size, size] = -1.0                      # (M x)_i - v = 0 on S
                A[size, :size] = 1.0                       # sum x = 1
                b = np.zeros(size + 1)
                b[size] = 1.0
                try:
                    sol = np.linalg.solve(A, b)
                except np.linalg.LinAlgError:
                    continue
                if not np.allclose(A @ sol, b, atol=1e-10):
                    continue
                xs, v = sol[:size], sol[size]
                if (xs <= tol).any():
                    continue
                x = np.zeros(K)
                x[S] = xs
                if ((M @ x) > v + tol).any():
                    continue
                if not any(np.allclose(x, y, atol=1e-8) for y in found):
                    found.append(x)
        lp = symmetric_equilibrium(M)        # on a degenerate support (tied doctrines) the enumeration skips it
        if not any(np.allclose(lp, y, atol=1e-7) for y in found):
            found.append(lp)
    out = []
    for x in found:
        kind, top = stability(M, x, max(tol, EIGEN_TOL))
        ev = tangent_eigenvalues(M, x)
        spins = bool(((np.abs(ev.real) <= 1e-7) & (np.abs(ev.imag) > 1e-7)).any())
        out.append(RestPoint(x, kind, top, kind == "neutral" and spins))
    return sorted(out, key=lambda r: (int((r.mix > SUPPORT_TOL).sum()), tuple(-r.mix)))


# --- alpha-rank (OpenSpiel) --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlphaRank:
    """Alpha-rank of a payoff matrix: stationary ``pi`` (``(K,)``), Moran ``fixation`` (``(K, K)``:
    ``fixation[r, s]`` = probability that one ``r`` mutant takes over a population of ``s``; NaN diagonal) and
    the neutral fixation probability ``rho_neutral = 1 / population``."""

    pi: np.ndarray
    fixation: np.ndarray
    rho_neutral: float


def alpha_rank_available() -> bool:
    """Whether OpenSpiel's alpha-rank can be imported (the ``metagame`` extra)."""
    try:
        from open_spiel.python.egt import alpharank  # noqa: F401
    except ImportError:
        return False
    return True


def alpha_rank(M: np.ndarray, population: int = 50, alpha: float = 10.0) -> AlphaRank | None:
    """Alpha-rank of the single-population game ``M`` with OpenSpiel's ``alpharank.compute`` (local selection
    model), or ``None`` when OpenSpiel is not installed.  Raises :class:`MetagameError` if the Markov chain has
    no unique stationary distribution."""
    try:
        from open_spiel.python.egt import alpharank
    except ImportError:
        return None
    try:
        rhos, rho_m, pi, _, _ = alpharank.compute([np.asarray(M, dtype=float)], m=population, alpha=alpha)
    except ValueError as exc:
        raise MetagameError(f"alpha-rank: {exc}") from None
    fix = np.asarray(rhos, dtype=float).T.copy()           # OpenSpiel: rhos[s, r] = r fixating in s
    np.fill_diagonal(fix, np.nan)
    pi = np.clip(np.asarray(pi, dtype=float), 0.0, None)
    return AlphaRank(pi / pi.sum(), fix, float(rho_m))


# --- the whole analysis -----------------------------------------------------------------------------------------
@dataclass
class Metagame:
    """The meta-game of a round robin (see the module docstring): ``names``, ``payoff`` (``(K, K)``),
    ``equilibrium`` (``(K,)``), ``rest_points``, the replicator ``trajectory`` from the uniform mix,
    ``alpharank`` (or ``None``), the bootstrap table ``uncertainty`` (one row per doctrine) and ``options``."""

    names: list[str]
    payoff: np.ndarray
    equilibrium: np.ndarray
    rest_points: list[RestPoint]
    trajectory: Trajectory
    alpharank: AlphaRank | None
    uncertainty: pd.DataFrame
    options: MetagameOptions
    notes: list[str] = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        """One row per doctrine: ``doctrine``, ``equilibrium`` with bootstrap ``eq_lo``/``eq_hi`` and
        ``p_in_support``, ``replicator_final``, ``replicator_mean`` (time average), ``alpharank`` with
        ``ar_lo``/``ar_hi`` and ``p_top`` (NaN without OpenSpiel)."""
        ar = self.alpharank.pi if self.alpharank is not None else np.full(len(self.names), np.nan)
        df = pd.DataFrame({"doctrine": self.names, "equilibrium": self.equilibrium,
                           "replicator_final": self.trajectory.final,
                           "replicator_mean": self.trajectory.time_average, "alpharank": ar})
        return df.merge(self.uncertainty, on="doctrine", how="left")[
            ["doctrine", "equilibrium", "eq_lo", "eq_hi", "p_in_support", "replicator_final", "replicator_mean",
             "alpharank", "ar_lo", "ar_hi", "p_top"]]

    def fixation_table(self) -> pd.DataFrame:
        """Moran fixation probabilities relative to neutral drift (``fixation / (1 / population)``: above 1 the
        row doctrine invades the column's population more easily than a neutral mutant), empty without
        OpenSpiel."""
        if self.alpharank is None:
            return pd.DataFrame()
        return pd.DataFrame(self.alpharank.fixation / self.alpharank.rho_neutral,
                            index=pd.Index(self.names, name="mutant"), columns=pd.Index(self.names, name="resident"))


def _bootstrap(games: pd.DataFrame, names: Sequence[str], opts: MetagameOptions, with_ar: bool
               ) -> tuple[pd.DataFrame, list[str]]:
    Wc, Nc, stratum, _ = _cluster_contributions(games, names)
    K = len(names)
    cols = {"doctrine": list(names)}
    nan = np.full(K, np.nan)
    if opts.bootstrap == 0 or len(Wc) == 0:
        return pd.DataFrame({**cols, "eq_lo": nan, "eq_hi": nan, "p_in_support": nan, "ar_lo": nan, "ar_hi": nan,
                             "p_top": nan}), []
    rng = np.random.default_rng(opts.seed)
    groups = [np.flatnonzero(stratum == s) for s in np.unique(stratum)]
    eq = np.empty((opts.bootstrap, K))
    ar = np.full((opts.bootstrap, K), np.nan)
    failures = 0
    for b in range(opts.bootstrap):
        w = np.zeros(len(Wc))
        for g in groups:
            w[g] = rng.multinomial(len(g), np.full(len(g), 1.0 / len(g)))
        M = _matrix(np.tensordot(w, Wc, axes=1), np.tensordot(w, Nc, axes=1))
        eq[b] = symmetric_equilibrium(M)
        if with_ar:
            try:
                r = alpha_rank(M, opts.population, opts.alpha)
                ar[b] = r.pi if r is not None else np.nan
            except MetagameError:
                failures += 1
    lo_q, hi_q = 50 * (1 - opts.confidence), 50 * (1 + opts.confidence)
    eq_lo, eq_hi = np.percentile(eq, [lo_q, hi_q], axis=0)
    notes = []
    if with_ar and np.isfinite(ar).any():
        ok = ar[np.isfinite(ar).all(axis=1)]
        ar_lo, ar_hi = np.percentile(ok, [lo_q, hi_q], axis=0)
        top = ok.max(axis=1, keepdims=True)
        p_top = (ok >= top - 1e-12).mean(axis=0)
    else:
        ar_lo = ar_hi = p_top = nan
    if failures:
        notes.append(f"alpha-rank had no unique stationary distribution in {failures} of {opts.bootstrap} "
                     f"resamples (left out of its intervals)")
    return pd.DataFrame({**cols, "eq_lo": eq_lo, "eq_hi": eq_hi, "p_in_support": (eq > SUPPORT_TOL).mean(axis=0),
                         "ar_lo": ar_lo, "ar_hi": ar_hi, "p_top": p_top}), notes


def analyse(games: pd.DataFrame, names: Sequence[str], options: MetagameOptions = MetagameOptions()) -> Metagame:
    """The meta-game of a round robin's ``games`` among ``names`` (see the module docstring).

    Raises :class:`MetagameError` if a pairing never played."""
    names = list(names)
    M = payoff_matrix(games, names)
    notes: list[str] = []
    try:
        ar = alpha_rank(M, options.population, options.alpha)
    except MetagameError as exc:
        ar = None
        notes.append(str(exc))
    if ar is None and not alpha_rank_available():
        notes.append("alpha-rank needs OpenSpiel: pip install 'tanksim[metagame]' (open_spiel)")
    unc, more = _bootstrap(games, names, options, ar is not None)
    rps = rest_points(M)
    if len(rps) > 1:
        notes.append("several equilibria: every mix between them is one too (in a constant-sum game the equilibria "
                     "form a convex set; doctrines tied against each other can stand in for each other), so the "
                     "equilibrium column shows the one of largest entropy, which gives tied doctrines equal "
                     "shares")
    return Metagame(names, M, symmetric_equilibrium(M), rps, replicator(M, t_max=options.t_max), ar, unc, options,
                    notes + more)


def _pct(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:.0f}%" if x >= 0.005 or x == 0 else "<1%"


def format_metagame(mg: Metagame) -> str:
    """The printed meta-game section: the equilibrium mixes (rest points with their stability), the
    per-doctrine table with bootstrap intervals, and how to read it."""
    o = mg.options
    conf = f"{o.confidence:.0%}"
    lines = [f"Meta-game (doctrines as a population; payoff = mean score against each other; bootstrap {o.bootstrap} "
             f"resamples of mirrored pairs, {conf} intervals)"]
    lines.append("  Equilibrium mixes (rest points of the replicator dynamics) and their stability:")
    for rp in mg.rest_points:
        mix = ", ".join(f"{n} {100 * v:.0f}%" for n, v in sorted(zip(mg.names, rp.mix), key=lambda p: -p[1])
                        if v > SUPPORT_TOL)
        what = {"stable": "stable: nearby populations converge to it",
                "neutral": ("neutral: nearby populations circle it; the time average is this mix" if rp.cycles else
                            "neutral: nearby populations drift along a tie, neither returning nor leaving"),
                "unstable": "unstable: nearby populations leave it"}[rp.stability]
        lines.append(f"    {mix}  ({what})")
    t = mg.table()
    tab = pd.DataFrame({
        "doctrine": t["doctrine"],
        "equilibrium": [f"{_pct(v)} [{_pct(lo)}, {_pct(hi)}]" for v, lo, hi in zip(t["equilibrium"], t["eq_lo"],
                                                                                   t["eq_hi"])],
        "P(in mix)": [_pct(v) for v in t["p_in_support"]],
        "replicator end": [_pct(v) for v in t["replicator_final"]],
        "time avg": [_pct(v) for v in t["replicator_mean"]],
        "alpha-rank": [f"{_pct(v)} [{_pct(lo)}, {_pct(hi)}]" if np.isfinite(v) else "-"
                       for v, lo, hi in zip(t["alpharank"], t["ar_lo"], t["ar_hi"])],
        "P(top)": [_pct(v) for v in t["p_top"]]})
    order = np.lexsort((-t["replicator_mean"].to_numpy(), -t["equilibrium"].to_numpy()))
    lines += ["  " + line for line in tab.iloc[order].to_string(index=False).splitlines()]
    how = (f"equilibrium: the maximin mix (no doctrine beats it on average), P(in mix) how often a resample keeps "
           f"the doctrine in it; replicator: shares from the uniform mix after t = {o.t_max:g} (end) and averaged "
           f"over the run; alpha-rank: mass of a Moran process (population {o.population}, alpha {o.alpha:g}; "
           f"OpenSpiel), P(top) how often a resample ranks the doctrine first (ties count for each); Moran "
           f"fixation probabilities in metagame_fixation.csv")
    lines += ["  " + line for line in textwrap.wrap(how, 114, break_on_hyphens=False)]
    for n in mg.notes:
        lines += textwrap.wrap(f"note: {n}", 114, initial_indent="  ", subsequent_indent="    ",
                               break_on_hyphens=False)
    return "\n".join(lines)


def plot_metagame(mg: Metagame, path: str, title: str = "") -> None:
    """Save a two-panel PNG: the replicator shares over time from the uniform mix (a stack plot, as Axelrod's
    ecological plot) and, per doctrine, the equilibrium share and alpha-rank mass with bootstrap intervals."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.8), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2, width_ratios=[3, 2])
    tr = mg.trajectory
    ax1.stackplot(tr.t, tr.x.T, labels=mg.names)
    ax1.set_xscale("symlog", linthresh=1.0)
    ax1.set_xlim(tr.t[0], tr.t[-1])
    ax1.set_ylim(0, 1)
    ax1.set_xlabel("time (score units; linear to 1, then logarithmic)")
    ax1.set_ylabel("population share")
    ax1.set_title("replicator dynamics from the uniform mix")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    t = mg.table()
    y = np.arange(len(mg.names))
    h = 0.38
    err = lambda v, lo, hi: np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])
    ax2.barh(y - h / 2, t["equilibrium"], h, label="equilibrium share",
             xerr=None if t["eq_lo"].isna().all() else err(t["equilibrium"], t["eq_lo"], t["eq_hi"]), capsize=3)
    if mg.alpharank is not None:
        ax2.barh(y + h / 2, t["alpharank"], h, label="alpha-rank mass",
                 xerr=None if t["ar_lo"].isna().all() else err(t["alpharank"], t["ar_lo"], t["ar_hi"]), capsize=3)
    ax2.set_yticks(y, mg.names)
    ax2.invert_yaxis()
    ax2.set_xlim(0, 1)
    ax2.set_xlabel(f"share ({mg.options.confidence:.0%} bootstrap interval)")
    ax2.set_title("stable mix and alpha-rank")
    ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize="small")
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=110)


def to_json(mg: Metagame) -> dict[str, Any]:
    """A JSON-ready summary (plain lists and floats; NaN -> None)."""
    clean = lambda v: None if isinstance(v, float) and not math.isfinite(v) else v
    return {"names": mg.names, "payoff": mg.payoff.tolist(), "equilibrium": mg.equilibrium.tolist(),
            "rest_points": [{"mix": r.mix.tolist(), "stability": r.stability, "max_real": r.max_real,
                             "cycles": r.cycles}
                            for r in mg.rest_points],
            "table": [{k: clean(v) for k, v in row.items()} for row in mg.table().to_dict("records")],
            "options": dataclasses.asdict(mg.options), "notes": mg.notes}
