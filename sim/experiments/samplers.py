"""Experimental designs: which factor values a batch plays (the rows of the design, before replications).

Four kinds, each a matrix of unit values (one row per design row, one column per factor) mapped onto the factors
by :func:`unit_to_values`:

* ``full_factorial``: every combination of levels (a range with ``steps`` evenly spaced values).
* ``latin_hypercube``: ``n`` rows of ``scipy.stats.qmc.LatinHypercube`` seeded by the root seed (one point in each
  of ``n`` strata per factor, no further control of the columns' correlation).
* ``nolh``: a nearly orthogonal Latin hypercube (Cioppa & Lucas 2007, the SEED Center's designs): ``n`` rows whose
  columns are permutations of the ``n`` equally spaced levels ``0, 1/(n-1), ..., 1`` (both ends of each range are
  played) with a small maximum absolute pairwise correlation between columns.  Not a published table: the rows
  are searched for.  :func:`nolh` starts from up to six Latin hypercubes (``scipy.stats.qmc.LatinHypercube``,
  the first with ``optimization="random-cd"``, space-filling), improves each by greedy swaps of two entries in a
  column of the most correlated pair (the best of a random batch of swaps, while one lowers the maximum
  |correlation|, until it is below 0.003), and keeps the best.  Cioppa and Lucas call a design nearly orthogonal
  when max |rho| <= 0.03; the achieved value is recorded in the manifest (``design_info.max_abs_correlation``);
  with few rows for many factors it may stay above that (17 rows: about 0.005 for 4 factors, 0.07 for 7).
* ``sobol``: Saltelli's extension of a scrambled Sobol' sequence (``SALib.sample.sobol.sample``), ``n`` base
  samples (a power of two) giving ``n (2 d + 2)`` rows with second-order indices (``second_order: true``, the
  default) or ``n (d + 2)`` without; the report estimates first-order, total and second-order Sobol' indices from
  it with ``SALib.analyze.sobol``.  Rows are kept in SALib's order in the manifest (``design_rows``: the design
  point of each row), since a row that repeats another (possible with discrete levels) is played once.

A discrete factor (``levels``) takes level ``min(floor(u k), k - 1)`` of its ``k`` levels for a unit value ``u``; a
range takes ``low + u (high - low)`` (rounded with ``integer``).  Every design is a pure function of the factors,
``n`` and the root seed.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

KINDS = ("full_factorial", "latin_hypercube", "nolh", "sobol")

#: Cioppa & Lucas (2007)'s bound on the maximum absolute pairwise column correlation of a nearly orthogonal LHS.
NOLH_MAX_CORRELATION = 0.03
#: The column search stops once max |correlation| is this small (a tenth of the bound).
GOOD_ENOUGH = NOLH_MAX_CORRELATION / 10


class FactorLike(Protocol):
    """What a design needs of a factor, read-only (:class:`sim.experiments.design.Factor`, a frozen dataclass,
    has it)."""

    @property
    def name(self) -> str: ...
    @property
    def values(self) -> tuple[Any, ...]: ...
    @property
    def is_range(self) -> bool: ...
    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...
    @property
    def integer(self) -> bool: ...


@dataclass(frozen=True)
class Design:
    """A design's rows (factor name -> value, in design order, repeats included) and ``info`` for the manifest
    (``kind``; for ``nolh`` ``max_abs_correlation``; for ``sobol`` ``n``, ``second_order`` and the SALib
    ``problem``)."""

    rows: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)


def range_value(x: float, integer: bool) -> Any:
    """A range factor's stored value: rounded to an int with ``integer``, else to 6 significant digits."""
    return round(float(x)) if integer else float(f"{float(x):.6g}")


def unit_to_values(u: np.ndarray, factors: Sequence[FactorLike]) -> list[dict[str, Any]]:
    """Map a unit matrix (rows x factors, values in [0, 1]) onto factor values (see the module docstring)."""
    rows = []
    for row in np.atleast_2d(u):
        vals = {}
        for f, x in zip(factors, row):
            if f.is_range:
                vals[f.name] = range_value(f.low + float(x) * (f.high - f.low), f.integer)
            else:
                vals[f.name] = f.values[min(int(float(x) * len(f.values)), len(f.values) - 1)]
        rows.append(vals)
    return rows


def max_abs_correlation(x: np.ndarray) -> float:
    """The largest absolute Pearson correlation between two columns of ``x`` (rows x columns); 0 for one column."""
    x = np.asarray(x, dtype=float)
    if x.shape[1] < 2:
        return 0.0
    c = np.corrcoef(x, rowvar=False)
    np.fill_diagonal(c, 0.0)
    return float(np.max(np.abs(c)))


def _improve(ranks: np.ndarray, rng: np.random.Generator, max_steps: int, batch: int = 64,
             patience: int = 40) -> np.ndarray:
    """Greedy column swaps: at each step draw ``batch`` random row pairs for each column of the most correlated
    pair and make the swap that lowers the maximum |correlation| most; stop after ``patience`` steps without a
    lowering swap, below :data:`GOOD_ENOUGH`, or after ``max_steps`` steps.  Keeps every column a permutation."""
    x = ranks.astype(float)
    n, d = x.shape
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    c = (z.T @ z) / n
    np.fill_diagonal(c, 0.0)
    stalled = 0
    for _ in range(max_steps):
        best = float(np.max(np.abs(c)))
        if best <= GOOD_ENOUGH or stalled >= patience:
            break
        j, k = np.unravel_index(int(np.argmax(np.abs(c))), c.shape)
        choice = None
        for col in (int(j), int(k)):
            others = np.abs(np.delete(np.delete(c, col, 0), col, 1))
            rest = float(others.max()) if others.size else 0.0
            a_idx = rng.integers(0, n, size=batch)
            b_idx = (a_idx + rng.integers(1, n, size=batch)) % n
            # new correlations of ``col`` with every column if rows a and b swap in it
            new = c[col, :] + (z[b_idx, col] - z[a_idx, col])[:, None] * (z[a_idx, :] - z[b_idx, :]) / n
            new[:, col] = 0.0
            score = np.maximum(np.abs(new).max(axis=1), rest)
            i = int(np.argmin(score))
            if score[i] < best - 1e-12 and (choice is None or score[i] < choice[0]):
                choice = (float(score[i]), col, int(a_idx[i]), int(b_idx[i]), new[i])
        if choice is None:
            stalled += 1
            continue
        stalled = 0
        _, col, a, b, row = choice
        z[[a, b], col] = z[[b, a], col]
        ranks[[a, b], col] = ranks[[b, a], col]
        c[col, :] = row
        c[:, col] = row
        c[col, col] = 0.0
    return ranks


def nolh(n: int, d: int, seed: int, candidates: int = 6, max_steps: int = 1000) -> np.ndarray:
    """A nearly orthogonal Latin hypercube of ``n`` rows and ``d`` columns in [0, 1] (see the module docstring).

    Returns an ``(n, d)`` array whose columns are permutations of ``i / (n - 1)``, ``i = 0..n-1`` (all 0.5 when
    ``n == 1``).  Deterministic in ``seed``.  Raises ``ValueError`` for ``n < 1`` or ``d < 1``."""
    from scipy.stats import qmc

    if n < 1 or d < 1:
        raise ValueError(f"nolh needs n >= 1 and d >= 1, got n={n}, d={d}")
    if n == 1:
        return np.full((1, d), 0.5)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x401]))
    best, best_corr = None, np.inf
    for i in range(max(1, candidates)):
        # the first start is space-filling (centred discrepancy, costly for big designs), the others plain
        opt: Literal["random-cd"] | None = "random-cd" if i == 0 and n * d <= 1024 else None
        u = qmc.LatinHypercube(d=d, optimization=opt, rng=rng).random(n)
        ranks = np.argsort(np.argsort(u, axis=0), axis=0)
        if d > 1:
            ranks = _improve(ranks, rng, max_steps)
        corr = max_abs_correlation(ranks)
        if corr < best_corr - 1e-12:
            best, best_corr = ranks, corr
        if best_corr <= GOOD_ENOUGH:
            break
    assert best is not None
    return best / (n - 1)


def sobol_problem(factors: Sequence[FactorLike]) -> dict[str, Any]:
    """The SALib problem of a Sobol' design: one unit-interval variable per factor, named as the factor."""
    return {"num_vars": len(factors), "names": [f.name for f in factors], "bounds": [[0.0, 1.0]] * len(factors)}


def sobol(n: int, factors: Sequence[FactorLike], seed: int, second_order: bool = True) -> np.ndarray:
    """Saltelli's sample of a scrambled Sobol' sequence (SALib) in the unit cube: ``n (2 d + 2)`` rows with
    ``second_order``, else ``n (d + 2)``.  ``n`` must be a power of two (checked by the experiment schema)."""
    from SALib.sample import sobol as sobol_sample

    return sobol_sample.sample(sobol_problem(factors), n, calc_second_order=second_order, scramble=True,
                               seed=int(seed % (2**32)))


def sobol_rows(n: int, d: int, second_order: bool = True) -> int:
    """Rows of a Saltelli sample with ``n`` base samples and ``d`` factors."""
    return n * (2 * d + 2) if second_order else n * (d + 2)


def build(kind: str, factors: Sequence[FactorLike], seed: int, n: int | None = None,
          second_order: bool | None = None) -> Design:
    """The rows of a design of ``kind`` (:data:`KINDS`) over ``factors`` (see the module docstring).

    Raises ``ValueError`` for an unknown kind or a missing ``n`` (the experiment schema reports both first)."""
    if not factors:
        return Design([{}], {"kind": kind})
    if kind == "full_factorial":
        names = [f.name for f in factors]
        return Design([dict(zip(names, combo)) for combo in itertools.product(*[f.values for f in factors])],
                      {"kind": kind})
    if n is None:
        raise ValueError(f"a {kind} design needs n")
    if kind == "latin_hypercube":
        from scipy.stats import qmc

        u = qmc.LatinHypercube(d=len(factors), rng=np.random.default_rng(seed)).random(n)
        return Design(unit_to_values(u, factors), {"kind": kind})
    if kind == "nolh":
        u = nolh(n, len(factors), seed)
        return Design(unit_to_values(u, factors), {"kind": kind, "max_abs_correlation": max_abs_correlation(u),
                                                   "nearly_orthogonal": max_abs_correlation(u)
                                                   <= NOLH_MAX_CORRELATION})
    if kind == "sobol":
        so = True if second_order is None else bool(second_order)
        u = sobol(n, factors, seed, so)
        return Design(unit_to_values(u, factors), {"kind": kind, "n": n, "second_order": so,
                                                   "problem": sobol_problem(factors)})
    raise ValueError(f"unknown design kind {kind!r}; expected one of {', '.join(KINDS)}")
