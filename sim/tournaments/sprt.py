"""Sequential probability ratio test on game pairs (the pentanomial GSPRT of Fishtest), logistic or normalized Elo.

Two entrants play side-swapped **pairs** of games that share their seed (common random numbers), so the two
games of a pair are correlated and the pair, not the game, is the independent observation.  A pair scores
0, 0.5, 1, 1.5 or 2 points for entrant A; the five counts are the *pentanomial* frequencies
``[LL, LD+DL, LW+DD+WL, DW+WD, WW]`` (a trinomial ``[L, D, W]`` of single games works the same way).

Two models for the hypotheses H0 ``elo = elo0`` against H1 ``elo = elo1``, as in Fishtest and fastchess:

* ``logistic`` (default): logistic Elo, the expected per-game score ``s = 1 / (1 + 10^(-elo/400))``.  The
  statistic is the generalised log-likelihood ratio of Fishtest's ``LLR_logistic``: for the empirical pair
  distribution ``p^`` over the outcomes ``a = (0, 1/4, 1/2, 3/4, 1)`` (zero counts replaced by ``1e-3`` for
  regularisation), ``p_s`` is the maximum-likelihood distribution with mean ``s`` --
  ``p_s[i] = p^[i] / (1 + x (a[i] - s))`` with ``x`` the root of the secular equation
  ``sum p^[i] (a[i] - s) / (1 + x (a[i] - s)) = 0`` (``scipy.optimize.brentq``) -- and
  ``LLR = N * sum_i p^[i] * (log p_s1[i] - log p_s0[i])``, ``N`` = number of pairs.
* ``normalized``: normalized Elo (nElo, Fishtest's ``LLR_normalized``), a t-value rather than a score:
  ``nElo = (mu - 1/2) / sigma_game * 800 / ln 10`` with ``sigma_game`` the per-game standard deviation
  (``sqrt(2)`` times the pair score's for a pentanomial).  It measures strength in units of the noise, so it
  does not depend on the draw rate or on how much the side swap cancels, and a given nElo needs about the same
  number of games whatever the scenario.  ``p_t`` is the maximum-likelihood distribution whose t-value
  ``(mu - 1/2) / sigma`` equals ``t = nElo / (800 / ln 10)`` (times ``sqrt(2)`` for pairs), found by iterating
  the secular equation with the constraint linearised at the current ``(mu, sigma)``; the LLR is as above.
  Defined for every count vector, degenerate ones included (all pairs in one bin: the regularisation keeps
  every ``p^ > 0``), so a perfect record still moves the LLR towards H1 and the test stops.

The test stops when ``LLR <= log(beta / (1 - alpha))`` (accept H0) or ``LLR >= log((1 - beta) / alpha)``
(accept H1).  Estimates: :func:`elo_estimate` (Bradley-Terry with the virtual-draw prior and the profile
interval of :mod:`sim.tournaments.ratings`, the same method as the tournament leaderboard) and :func:`nelo_estimate`.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

#: Pair outcomes as a fraction of the two games' points.
OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Count used in place of a zero frequency (Fishtest's regularisation).
EPSILON = 1e-3
#: nElo per unit of t-value: ``800 / ln 10`` (about 347.4).
NELO_PER_T = 800 / math.log(10)
#: The SPRT models: hypotheses in logistic Elo or in normalized Elo.
MODELS = ("logistic", "normalized")


class SPRTError(ValueError):
    """A malformed SPRT specification or count vector (says which part and what was expected)."""


@dataclass(frozen=True)
class SPRT:
    """Test parameters: ``elo0`` (H0) < ``elo1`` (H1) in the ``model``'s unit (``logistic`` Elo or
    ``normalized`` nElo); error rates ``alpha`` (false H1) and ``beta`` (false H0), each in (0, 0.5)."""

    elo0: float = 0.0
    elo1: float = 20.0
    alpha: float = 0.05
    beta: float = 0.05
    model: str = "logistic"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise SPRTError(f"sprt: model must be one of {', '.join(MODELS)}, got {self.model!r}")
        if not self.elo0 < self.elo1:
            raise SPRTError(f"sprt: elo0 ({self.elo0}) must be below elo1 ({self.elo1})")
        for k in ("alpha", "beta"):
            v = getattr(self, k)
            if not 0 < v < 0.5:
                raise SPRTError(f"sprt: {k} must be in (0, 0.5), got {v}")

    @property
    def bounds(self) -> tuple[float, float]:
        """``(lower, upper)`` LLR bounds: ``log(beta/(1-alpha))`` and ``log((1-beta)/alpha)``."""
        return math.log(self.beta / (1 - self.alpha)), math.log((1 - self.beta) / self.alpha)

    @property
    def unit(self) -> str:
        """``"Elo"`` or ``"nElo"``."""
        return "nElo" if self.model == "normalized" else "Elo"

    def llr(self, counts: Sequence[float]) -> float:
        """The LLR of ``counts`` (pentanomial or trinomial) under this test's model."""
        if self.model == "normalized":
            return llr_normalized(counts, self.elo0, self.elo1)
        return llr_logistic(counts, self.elo0, self.elo1)

    def text(self) -> str:
        """The ``--sprt`` form of these parameters."""
        extra = f",model={self.model}" if self.model != "logistic" else ""
        return f"elo0={self.elo0:g},elo1={self.elo1:g},alpha={self.alpha:g},beta={self.beta:g}{extra}"


_SPRT_KEYS = ("elo0", "elo1", "alpha", "beta", "model")


def parse_sprt(text: str) -> SPRT:
    """``"elo0=0,elo1=20,alpha=0.05,beta=0.05[,model=normalized]"`` -> :class:`SPRT` (missing keys keep their
    defaults).

    Raises :class:`SPRTError` naming an unknown key, a value that is not a number or an unknown model."""
    nums: dict[str, float] = {}
    model: str | None = None
    for part in filter(None, (p.strip() for p in text.split(","))):
        k, sep, v = part.partition("=")
        k = k.strip()
        if not sep or k not in _SPRT_KEYS:
            near = difflib.get_close_matches(k, _SPRT_KEYS, n=1)
            hint = f" (did you mean {near[0]}=?)" if near else ""
            raise SPRTError(f"--sprt {text!r}: {part!r} is not one of elo0=, elo1=, alpha=, beta=, model={hint}")
        if k in nums or (k == "model" and model is not None):
            raise SPRTError(f"--sprt {text!r}: {k} given twice; expected each of elo0, elo1, alpha, beta, model once")
        if k == "model":
            model = v.strip()
            continue
        try:
            nums[k] = float(v)
        except ValueError:
            raise SPRTError(f"--sprt {text!r}: {k} must be a number, got {v!r}") from None
    d = SPRT()
    try:
        return SPRT(nums.get("elo0", d.elo0), nums.get("elo1", d.elo1), nums.get("alpha", d.alpha),
                    nums.get("beta", d.beta), d.model if model is None else model)
    except SPRTError as exc:   # name the option the user typed, as the messages above do
        raise SPRTError(f"--sprt {text!r}: {str(exc).removeprefix('sprt: ')}") from None


def score_of_elo(elo: float) -> float:
    """Expected per-game score for a logistic Elo difference."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def pentanomial(pair_scores: Iterable[float]) -> list[int]:
    """Counts ``[n0, n0.5, n1, n1.5, n2]`` of pair scores (points of both games, each in {0, 0.5, 1, 1.5, 2}).

    Raises :class:`SPRTError` for any other value."""
    counts = [0] * 5
    for s in pair_scores:
        k = 2 * float(s)
        if k not in (0, 1, 2, 3, 4):
            raise SPRTError(f"pair score {s} is not one of 0, 0.5, 1, 1.5, 2")
        counts[int(k)] += 1
    return counts


def _counts(counts: Sequence[float]) -> np.ndarray:
    c = np.asarray(counts, dtype=float)
    if c.ndim != 1 or len(c) not in (3, 5) or (c < 0).any():
        raise SPRTError(f"counts must be a trinomial (3) or pentanomial (5) vector of non-negative frequencies, "
                        f"got {list(counts)}")
    return c


def _pdf(counts: Sequence[float]) -> tuple[float, np.ndarray, np.ndarray]:
    c = _counts(counts)
    c = np.where(c == 0, EPSILON, c)
    n = float(c.sum())
    a = np.arange(len(c)) / (len(c) - 1)
    return n, a, c / n


def _secular(p: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``p / (1 + x d)`` normalised, with ``x`` the root of ``sum p d / (1 + x d) = 0`` (``min d < 0 < max d``)."""
    lo, hi = -1.0 / d.max(), -1.0 / d.min()       # 1 + x d > 0 for every support point
    pad = 1e-12 * (hi - lo)
    f = lambda x: float(np.sum(p * d / (1 + x * d)))
    x = optimize.brentq(f, lo + pad, hi - pad, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    q = p / (1 + x * d)
    return q / q.sum()


def mle_with_mean(a: np.ndarray, p: np.ndarray, s: float) -> np.ndarray:
    """The distribution on support ``a`` closest in likelihood to ``p`` (all ``p > 0``) whose mean is ``s``
    (``min(a) < s < max(a)``): ``p / (1 + x (a - s))`` with ``x`` the secular-equation root."""
    return _secular(p, a - s)


def mle_with_t_value(a: np.ndarray, p: np.ndarray, ref: float, t: float, max_iter: int = 200) -> np.ndarray:
    """The distribution on support ``a`` closest in likelihood to ``p`` (all ``p > 0``) whose t-value
    ``(mean - ref) / sd`` is ``t``.

    The gradient of the constraint at the current ``(mu, sigma)`` is ``a - ref - t sigma (1 + ((a - mu) /
    sigma)^2) / 2`` (the constant makes its mean zero on the constraint); the stationary point of the
    likelihood is then ``p / (1 + x d)`` as for a fixed mean, so the secular equation (bracketed, ``brentq``) is
    solved again with ``(mu, sigma)`` of the new distribution until it stops changing -- Fishtest's
    ``MLE_tvalue`` iteration.  ``t = 0`` is the fixed-mean problem (``mean = ref``), solved directly.

    Stopping rule (decided here; Fishtest stops at a change below 1e-9 or after 10 rounds): the largest change of a
    probability below 1e-13, or below 1e-9 once it has stopped shrinking.  The second case is a degenerate sample
    (every pair in one or two bins, e.g. nine won pairs of nine): the regularised ``p`` puts almost all its weight
    on one outcome, the root ``x`` sits next to a pole of the secular equation and the iterates settle into a
    rounding-level flicker (about 1e-9 on a probability, 1e-13 on the t-value) instead of converging further.

    Raises :class:`SPRTError` if neither happens in ``max_iter`` rounds and the last iterate's t-value misses
    ``t`` by more than 1e-9 (not seen on any count vector; the test suite sweeps the degenerate ones)."""
    if t == 0:
        return mle_with_mean(a, p, ref)
    q = np.full(len(p), 1.0 / len(p))
    previous = math.inf
    for _ in range(max_iter):
        mu = float(q @ a)
        sigma = math.sqrt(float(q @ (a - mu) ** 2))
        d = a - ref - t * sigma * (1 + ((a - mu) / sigma) ** 2) / 2
        new = _secular(p, d)
        change = float(np.abs(new - q).max())
        if change < 1e-13 or (change < 1e-9 and change >= previous):
            return new
        q, previous = new, change
    mu = float(q @ a)
    if abs((mu - ref) / math.sqrt(float(q @ (a - mu) ** 2)) - t) < 1e-9:
        return q
    raise SPRTError(f"the t-value MLE (t = {t}) did not converge in {max_iter} iterations")


def llr_logistic(counts: Sequence[float], elo0: float, elo1: float) -> float:
    """The generalised LLR of H1 (``elo1``) against H0 (``elo0``) for pentanomial (5) or trinomial (3) ``counts``
    (Fishtest's ``LLR_logistic``; see the module docstring)."""
    n, a, p = _pdf(counts)
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    q0, q1 = mle_with_mean(a, p, s0), mle_with_mean(a, p, s1)
    return n * float(np.sum(p * (np.log(q1) - np.log(q0))))


def llr_normalized(counts: Sequence[float], nelo0: float, nelo1: float) -> float:
    """The generalised LLR of H1 (``nelo1``) against H0 (``nelo0``) in normalized Elo for pentanomial (5) or
    trinomial (3) ``counts`` (Fishtest's ``LLR_normalized``): the t-values ``nElo / (800 / ln 10)``, times
    ``sqrt(2)`` for pairs (a pair's sd is the game's over ``sqrt(2)``), against reference score 1/2."""
    n, a, p = _pdf(counts)
    scale = math.sqrt(2) if len(p) == 5 else 1.0
    t0, t1 = (x / NELO_PER_T * scale for x in (nelo0, nelo1))
    q0, q1 = mle_with_t_value(a, p, 0.5, t0), mle_with_t_value(a, p, 0.5, t1)
    return n * float(np.sum(p * (np.log(q1) - np.log(q0))))


#: Variance of a pair's score fraction (``OUTCOMES``) assumed before any game: no draws and independent games at
#: an even score (a game's variance 1/4, halved by averaging two games).  Draws and the side swap's correlation
#: both lower it, and the test then needs fewer games.
DEFAULT_PAIR_VARIANCE = 0.125


@dataclass(frozen=True)
class ExpectedLength:
    """Wald's average sample number of an SPRT, in pairs of games: ``at_elo0`` (the true difference is ``elo0``),
    ``at_elo1`` and ``between`` (midway, where the test is longest), with the pair-score ``variance`` it assumed."""

    at_elo0: float
    at_elo1: float
    between: float
    variance: float

    @property
    def games(self) -> tuple[int, int, int]:
        """``(at_elo0, at_elo1, between)`` in games (two per pair), rounded up."""
        return 2 * math.ceil(self.at_elo0), 2 * math.ceil(self.at_elo1), 2 * math.ceil(self.between)


def expected_length(sprt: SPRT, counts: Sequence[float] | None = None) -> ExpectedLength:
    """How many pairs the test ``sprt`` takes on average (Wald 1947, the average-sample-number approximation that
    ignores overshoot; Fishtest's SPRT calculator uses the same normal approximation of the LLR).

    Per pair the LLR moves, to first order, by ``z = d / v (x - (m0 + m1) / 2)`` with ``x`` the pair's score
    fraction, ``m0`` / ``m1`` the means under H0 / H1 and ``v`` the variance of ``x``; so ``E[z] = -+d^2 / (2 v)``
    with ``d = m1 - m0``, and ``E[N] = ((1 - beta) B + beta A) / E1[z]`` under H1, ``((1 - alpha) A + alpha B) /
    E0[z]`` under H0, ``-A B / (d^2 / v)`` midway (drift 0), ``(A, B)`` the LLR bounds.  Logistic model:
    ``m = score_of_elo(elo)``; ``v`` is that of ``counts`` (pentanomial) when given and not 0, else
    :data:`DEFAULT_PAIR_VARIANCE`.  Normalized model: the hypotheses are t-values, ``d^2 / v`` is
    ``(t1 - t0)^2`` whatever the variance.  For elo0=0, elo1=20, alpha=beta=0.05 and no draws: about 801 pairs
    (1602 games) at either hypothesis, 1310 pairs midway; 20 won games of 20 are far from enough."""
    lo, hi = sprt.bounds
    var = DEFAULT_PAIR_VARIANCE
    if counts is not None:
        c = _counts(counts)
        if c.sum() > 0:
            a = np.arange(len(c)) / (len(c) - 1)
            mu = float(a @ c / c.sum())
            v = float(((a - mu) ** 2) @ c / c.sum())
            var = v if v > 0 else var
    if sprt.model == "normalized":
        t0, t1 = (x / NELO_PER_T * math.sqrt(2) for x in (sprt.elo0, sprt.elo1))
        info = (t1 - t0) ** 2
    else:
        info = (score_of_elo(sprt.elo1) - score_of_elo(sprt.elo0)) ** 2 / var
    drift = info / 2
    at1 = ((1 - sprt.beta) * hi + sprt.beta * lo) / drift
    at0 = ((1 - sprt.alpha) * lo + sprt.alpha * hi) / -drift
    return ExpectedLength(at0, at1, -lo * hi / info, var)


def verdict(llr: float, sprt: SPRT) -> str | None:
    """``"H1"`` at or above the upper bound, ``"H0"`` at or below the lower one, else ``None`` (continue)."""
    lo, hi = sprt.bounds
    if llr >= hi:
        return "H1"
    if llr <= lo:
        return "H0"
    return None


def points_and_games(counts: Sequence[float]) -> tuple[float, int]:
    """``(points, games)`` of A in pentanomial (pairs: 0..2 points each) or trinomial (games) ``counts``."""
    c = _counts(counts)
    per = 2 if len(c) == 5 else 1
    a = np.arange(len(c)) / (len(c) - 1)
    return float(per * (a @ c)), int(round(per * c.sum()))


def elo_estimate(counts: Sequence[float], confidence: float = 0.95,
                 prior_draws: float | None = None) -> tuple[float, float, float]:
    """``(elo, low, high)`` of A over B from pentanomial or trinomial ``counts``: the Bradley-Terry estimate with
    the virtual-draw prior and its profile-likelihood interval (:func:`sim.tournaments.ratings.elo_difference`, the
    method of the tournament leaderboard), on the games' points.  Always finite: 4 won games of 4 give about
    ``+280 [-37, +792]``.  No games give NaN."""
    from sim.tournaments import ratings as R

    points, games = points_and_games(counts)
    if games == 0:
        return float("nan"), float("nan"), float("nan")
    return R.elo_difference(points, games, R.PRIOR_DRAWS if prior_draws is None else prior_draws, confidence)


def nelo_estimate(counts: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(nelo, low, high)``: normalized Elo of A over B from pentanomial or trinomial ``counts`` (as Fishtest
    reports it): ``(mu - 1/2) / sigma_game * 800 / ln 10`` with ``mu`` the mean score per game and
    ``sigma_game`` its per-game sd (``sqrt(2)`` times the pair sd), and the interval from the normal interval of
    ``mu`` (``mu +- z sd / sqrt(N)``) divided the same way.  NaN when there is no variance (every pair scored
    the same, e.g. a perfect record: nElo is then undefined) or no games."""
    c = _counts(counts)
    n = float(c.sum())
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    a = np.arange(len(c)) / (len(c) - 1)
    mu = float(a @ c / n)
    var = float(((a - mu) ** 2) @ c / n)
    if var <= 0:
        return float("nan"), float("nan"), float("nan")
    sigma_game = math.sqrt(2 * var) if len(c) == 5 else math.sqrt(var)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    half = z * math.sqrt(var / n)
    to = lambda m: (m - 0.5) / sigma_game * NELO_PER_T
    return to(mu), to(mu - half), to(mu + half)


@dataclass
class SequentialTest:
    """Running state of one SPRT: feed pair scores with :meth:`add`; ``counts``, ``llr`` and ``result``
    (``"H0"``, ``"H1"`` or ``None``) follow."""

    sprt: SPRT
    counts: list[int] = field(default_factory=lambda: [0] * 5)
    llr: float = 0.0
    result: str | None = None

    def __post_init__(self) -> None:
        self.counts = list(self.counts)

    @property
    def pairs(self) -> int:
        """Pairs recorded so far."""
        return int(sum(self.counts))

    def add(self, pair_score: float) -> str | None:
        """Record one pair (A's points over both games); returns the verdict so far."""
        self.counts[int(pentanomial([pair_score]).index(1))] += 1
        self.llr = self.sprt.llr(self.counts)
        self.result = verdict(self.llr, self.sprt)
        return self.result
