"""Sequential probability ratio test on game pairs (the pentanomial GSPRT of Fishtest).

Two entrants play side-swapped **pairs** of games that share their seed (common random numbers), so the two
games of a pair are correlated and the pair, not the game, is the independent observation.  A pair scores
0, 0.5, 1, 1.5 or 2 points for entrant A; the five counts are the *pentanomial* frequencies
``[LL, LD+DL, LW+DD+WL, DW+WD, WW]``.

Hypotheses are in logistic Elo: H0 ``elo = elo0`` against H1 ``elo = elo1`` with expected per-game score
``s = 1 / (1 + 10^(-elo/400))``.  The statistic is the generalised log-likelihood ratio of Fishtest's
``LLR_logistic``: for the empirical pair distribution ``p^`` over the outcomes ``a = (0, 1/4, 1/2, 3/4, 1)``
(zero counts replaced by ``1e-3`` for regularisation), ``p_s`` is the maximum-likelihood distribution with mean
``s`` -- ``p_s[i] = p^[i] / (1 + x (a[i] - s))`` with ``x`` the root of the secular equation
``sum p^[i] (a[i] - s) / (1 + x (a[i] - s)) = 0`` (solved with ``scipy.optimize.brentq``) -- and

    LLR = N * sum_i p^[i] * (log p_s1[i] - log p_s0[i]),   N = number of pairs.

The test stops when ``LLR <= log(beta / (1 - alpha))`` (accept H0) or ``LLR >= log((1 - beta) / alpha)``
(accept H1).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

#: Pair outcomes as a fraction of the two games' points.
OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Count used in place of a zero frequency (Fishtest's regularisation).
EPSILON = 1e-3


class SPRTError(ValueError):
    """A malformed SPRT specification or count vector (says which part and what was expected)."""


@dataclass(frozen=True)
class SPRT:
    """Test parameters: ``elo0`` (H0) < ``elo1`` (H1) in logistic Elo; error rates ``alpha`` (false H1) and
    ``beta`` (false H0), each in (0, 0.5)."""

    elo0: float = 0.0
    elo1: float = 20.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
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

    def text(self) -> str:
        """The ``--sprt`` form of these parameters."""
        return f"elo0={self.elo0:g},elo1={self.elo1:g},alpha={self.alpha:g},beta={self.beta:g}"


def parse_sprt(text: str) -> SPRT:
    """``"elo0=0,elo1=20,alpha=0.05,beta=0.05"`` -> :class:`SPRT` (missing keys keep their defaults).

    Raises :class:`SPRTError` naming an unknown key or a value that is not a number."""
    vals: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        k, sep, v = part.partition("=")
        k = k.strip()
        if not sep or k not in ("elo0", "elo1", "alpha", "beta"):
            raise SPRTError(f"--sprt {text!r}: {part!r} is not one of elo0=, elo1=, alpha=, beta=")
        try:
            vals[k] = float(v)
        except ValueError:
            raise SPRTError(f"--sprt {text!r}: {k} must be a number, got {v!r}") from None
    return SPRT(**vals)


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


def _pdf(counts: Sequence[float]) -> tuple[float, np.ndarray, np.ndarray]:
    c = np.asarray(counts, dtype=float)
    if c.ndim != 1 or len(c) < 3 or (c < 0).any():
        raise SPRTError(f"counts must be a vector of >= 3 non-negative frequencies, got {list(counts)}")
    c = np.where(c == 0, EPSILON, c)
    n = float(c.sum())
    a = np.arange(len(c)) / (len(c) - 1)
    return n, a, c / n


def mle_with_mean(a: np.ndarray, p: np.ndarray, s: float) -> np.ndarray:
    """The distribution on support ``a`` closest in likelihood to ``p`` (all ``p > 0``) whose mean is ``s``
    (``min(a) < s < max(a)``): ``p / (1 + x (a - s))`` with ``x`` the secular-equation root."""
    d = a - s
    lo, hi = -1.0 / d.max(), -1.0 / d.min()       # 1 + x d > 0 for every support point
    pad = 1e-12 * (hi - lo)
    f = lambda x: float(np.sum(p * d / (1 + x * d)))
    x = optimize.brentq(f, lo + pad, hi - pad, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    q = p / (1 + x * d)
    return q / q.sum()


def llr_logistic(counts: Sequence[float], elo0: float, elo1: float) -> float:
    """The generalised LLR of H1 (``elo1``) against H0 (``elo0``) for pentanomial (5) or trinomial (3) ``counts``
    (Fishtest's ``LLR_logistic``; see the module docstring)."""
    n, a, p = _pdf(counts)
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    q0, q1 = mle_with_mean(a, p, s0), mle_with_mean(a, p, s1)
    return n * float(np.sum(p * (np.log(q1) - np.log(q0))))


def verdict(llr: float, sprt: SPRT) -> str | None:
    """``"H1"`` at or above the upper bound, ``"H0"`` at or below the lower one, else ``None`` (continue)."""
    lo, hi = sprt.bounds
    if llr >= hi:
        return "H1"
    if llr <= lo:
        return "H0"
    return None


def elo_estimate(counts: Sequence[int], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(elo, low, high)`` from pentanomial counts: the mean pair score per game, its normal interval from the
    pair variance, converted to logistic Elo.  Always finite: a score of 0 or 1 (say 4 won pairs of 4) is
    taken as half a game from the extreme, ``1 - 1 / (2 * games)`` (the usual continuity correction), so the
    estimate reads as "at least about this much" rather than ``inf``."""
    c = np.asarray(counts, dtype=float)
    n = c.sum()
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    a = np.arange(len(c)) / (len(c) - 1)
    mu = float((a * c).sum() / n)
    var = float(((a - mu) ** 2 * c).sum() / n)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    half = z * math.sqrt(var / n)

    edge = 1 / (2 * 2 * n)  # half a game, of 2 * n games

    def to_elo(s: float) -> float:
        s = min(max(s, edge), 1 - edge)
        return -400 * math.log10(1 / s - 1)

    return to_elo(mu), to_elo(mu - half), to_elo(mu + half)


@dataclass
class SequentialTest:
    """Running state of one SPRT: feed pair scores with :meth:`add`; ``counts``, ``llr`` and ``result``
    (``"H0"``, ``"H1"`` or ``None``) follow."""

    sprt: SPRT
    counts: list[int] | None = None
    llr: float = 0.0
    result: str | None = None

    def __post_init__(self) -> None:
        self.counts = [0] * 5 if self.counts is None else list(self.counts)

    @property
    def pairs(self) -> int:
        """Pairs recorded so far."""
        return int(sum(self.counts))

    def add(self, pair_score: float) -> str | None:
        """Record one pair (A's points over both games); returns the verdict so far."""
        self.counts[int(pentanomial([pair_score]).index(1))] += 1
        self.llr = llr_logistic(self.counts, self.sprt.elo0, self.sprt.elo1)
        self.result = verdict(self.llr, self.sprt)
        return self.result
