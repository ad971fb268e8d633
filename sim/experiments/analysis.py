"""The statistics of a batch's results: effects, differences, interactions, importance, best levels, power.

Everything here reads one table of finished battles (:func:`outcomes`, built from a results folder's runs and its
manifest) and returns pandas DataFrames; :mod:`sim.experiments.report` prints them, writes them and puts them in
``tanksim report --json``.  Failed and timed-out battles are left out (the report counts them apart).

**Outcomes**, per battle, from the point of view of the *focus side* (``--side``, default the first side):
``win`` (1 if it won, else 0; a draw is 0), ``survivors`` (its tanks alive at the end), ``enemy_survivors``,
``duration`` (turns played) and, per group of battles, ``loss_exchange`` (enemy tanks lost per own tank lost: a
ratio of totals, ``inf`` when the focus side lost none).  :data:`PER_BATTLE` are the outcomes with a value per
battle; the loss-exchange ratio, a ratio of sums, has level values and effects with bootstrap intervals only.

**Intervals** are 95 % (:data:`CONFIDENCE`): a win rate's is Wilson's score interval (scipy ``binomtest``); a mean's
is Student's t; a loss-exchange ratio's is a percentile bootstrap (resampled as for importance, fixed seed).
An *effect* is a level's value minus the value over all battles; since the overall value includes the level's own
battles, ``effect = (1 - n_level / n) (level - rest)``, and its interval is that of ``level - rest`` scaled alike
(Newcombe's hybrid score interval for two proportions, statsmodels, for win rates; Welch's t for means).
Every interval is kept inside the possible range of its quantity (:func:`outcome_bounds`, :func:`clip_interval`):
Wilson and Newcombe intervals are so by construction; a t interval (a paired difference over three replications
can reach -155 points, a mean of survivors below 0) is clipped to [-1, 1] for a difference of rates, [0, tanks]
for survivors, [1, turn limit] for turns (the battles' own limit, stored per battle), and a Sobol' index's to
[0, 1].  Clipping keeps the coverage, since the true value lies in the range; the report's legend says so
(:data:`INTERVALS_NOTE`).

**Differences** between two levels of a factor: with common random numbers (``common_random_numbers: true``:
replication ``r`` uses one seed at every design point) they are *paired*: battle ``(level a, levels c of the other
categorical factors, replication r)`` is matched with ``(level b, c, r)``; the replication's difference is the
mean over its matched cells, and the interval is Student's t over replications (``scipy.stats.ttest_1samp``; with
one cell it is exactly ``ttest_rel``).  Replications are the independent units, since the same seed is used in
every cell.  Without common random numbers the difference is unpaired (Newcombe's interval and Fisher's exact test
for win rates, Welch for means); the unpaired interval is given beside the paired one in either case, so the gain
of pairing shows.

**Interactions** of two categorical factors A, B, per cell: ``m_ab - m_a. - m_.b + m_..`` over the A x B table of
cell means (pooled over the other factors; row, column and grand means unweighted over cells).  Interval: over
replications (as for paired differences) with common random numbers, else from statsmodels OLS on the cell means
with HC2 (Welch-type) covariance, ``t_test`` of the contrast.  On the probability scale for ``win``.

**Importance** (share of an outcome's variance): an OLS ANOVA (statsmodels ``anova_lm(typ=2)``) of the outcome on
every factor (categorical: ``C(f)``; continuous: a cubic B-spline ``bs(f, df=3)``) and every two-factor
interaction, plus, with common random numbers, the replication as a block (``seed``: how much the shared start and
dice explain).  ``share = SS_term / SS_total`` (eta squared; the ``residual`` row is what no term explains, mostly
the battle-to-battle chance), ``omega_sq = (SS_term - df_term MS_residual) / (SS_total + MS_residual)`` (less biased
upward for small designs), the F test's ``p_value`` (of that sum of squares against the residual mean square, so
it always agrees with the share), and a bootstrap interval of the share (:data:`BOOTSTRAP`
resamples; replications resampled whole with common random numbers, else battles within each design point).  For a
balanced design the shares and the residual add up to 1.  In a non-orthogonal design (a Latin hypercube or NOLH
sample, an unbalanced table, splines beside their interactions) the terms' columns overlap and type II sums of
squares leave the overlap to no term: the ``shared`` row (``SS_model - sum SS_term``, over ``SS_total``) is that
overlap (negative when the terms one by one claim more than the model explains together), so the rows always
add up to 1; a large ``shared`` share, either sign, says the design cannot tell those terms apart.
The probability that one factor's share exceeds
another's comes from the same resamples.  A Sobol' design (``design: sobol``) is analysed with SALib's
``sobol.analyze`` on each design row's mean outcome instead: first-order ``S1`` as the share, total ``ST``, and
second-order ``S2`` for pairs, with SALib's 95 % intervals.

**Best level**: per categorical factor, the level with the highest win rate *of the side the factor belongs to*
(the side whose doctrine or tanks it sets, ``sides.X...``; the focus side for other factors), and the probability
that each level is the best, from :data:`BOOTSTRAP_BEST` resamples as above (a tie shares its resample).

**Continuous factors** (a range sampled by ``latin_hypercube``, ``nolh`` or ``sobol``) are fitted curves, not bins:
a logistic regression of ``win`` (statsmodels GLM, binomial) or OLS of the other outcomes on a natural cubic spline
of the factor (``cr(x, df=4)``; fewer knots for few distinct values), with its 95 % confidence band and the
likelihood-ratio / F test against no effect.  Marginal: the other factors are averaged over, which the design's
near-orthogonality makes fair.  An integer range that spans at most 8 integers is treated as categorical.

**Power** (:func:`power_table`): battles per design point to detect a difference ``delta`` in a side's win rate
between two levels at a power and a two-sided level alpha: unpaired from the pilot's win rate (statsmodels
``NormalIndPower`` on Cohen's arcsine effect size ``h`` for ``p - delta/2`` against ``p + delta/2``), and paired from
the pilot's standard deviation of per-replication paired differences (``TTestPower``); also the smallest
difference the pilot's own size detects.

**Side bias** (:func:`mirror_matches`): battles in which both sides play the same doctrine (same name and
parameters): the first side's share of the decisive ones with a Wilson interval; a scenario whose interval
excludes 50 % is flagged.
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from sim.stats import wilson_interval

CONFIDENCE = 0.95
#: Bootstrap resamples for importance intervals and the loss-exchange ratio; for the probability of being best.
BOOTSTRAP = 400
BOOTSTRAP_BEST = 2000
#: The fixed seed of every bootstrap (results do not change between runs of the report).
BOOTSTRAP_SEED = 20240611
#: Outcomes with one value per battle, and all outcomes (in report order).
PER_BATTLE = ("win", "survivors", "enemy_survivors", "duration")
OUTCOMES = ("win", "loss_exchange", "survivors", "enemy_survivors", "duration")
#: What the report's legend says about the possible range of every interval (see :func:`clip_interval`).
INTERVALS_NOTE = ("intervals stay inside what is possible: a rate within 0-100 %, a difference of rates within "
                  "+-100 points (Wilson and Newcombe intervals are so by construction; a t interval over few "
                  "replications is clipped), survivors within 0 and the side's tanks, turns within 1 and the turn "
                  "limit (differences of turns within +-(limit - 1)), ratios at least 0")
#: The runs column with each battle's turn limit (turns), written by the batch (:mod:`sim.experiments.batch`).
TURN_LIMIT_COLUMN = "battle_turn_limit"
#: Quantiles of the distribution tables.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: An integer range that spans at most this many integers is a categorical factor.
MAX_INTEGER_LEVELS = 8


def integer_levels(fac: Mapping[str, Any], x: pd.Series) -> bool:
    """Whether a sampled range factor (a manifest factor record) is analysed level by level: an integer range whose
    declared span ``high - low + 1`` is at most :data:`MAX_INTEGER_LEVELS` integers (e.g. ``[1, 4]``). The span
    decides, not the values the sample happened to draw: a seed-like ``map_seed`` in ``[0, 9999]`` sampled 8 times
    is continuous (a fitted curve), however few distinct values it shows.  A folder written without the declared
    bounds falls back to the distinct values in ``x`` (the stored column)."""
    if not fac.get("integer"):
        return False
    low, high = fac.get("low"), fac.get("high")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and math.isfinite(low) \
            and math.isfinite(high) and high >= low:
        return math.floor(high) - math.ceil(low) + 1 <= MAX_INTEGER_LEVELS
    return int(pd.to_numeric(x, errors="coerce").nunique()) <= MAX_INTEGER_LEVELS


# --- sides and factor levels of a folder -------------------------------------------------------------------------

def side_names(manifest: Mapping[str, Any], runs: pd.DataFrame | None = None) -> list[str]:
    """The two sides' names (from the manifest, else the first finished row)."""
    names = list(manifest.get("design", {}).get("side_names") or [])
    if len(names) == 2:
        return names
    if runs is not None and len(runs):
        return [str(runs["side1_name"].dropna().iloc[0]), str(runs["side2_name"].dropna().iloc[0])]
    return ["side1", "side2"]


def is_string_factor(manifest: Mapping[str, Any] | None, fac: Mapping[str, Any]) -> bool:
    """Whether a factor's column is stored as text: as the manifest records it, else judged from its levels
    (mixed types, e.g. ``[0.5, abc]``, are stored as text)."""
    typ = ((manifest or {}).get("factor_types") or {}).get(fac["name"])
    if typ is not None:
        return typ == "string"
    if fac.get("is_range"):
        return False
    vals = [v for v in (fac.get("values") or []) if v is not None]
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
    nums = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    bools = all(isinstance(v, bool) for v in vals)
    return not (vals and (ints or nums or bools))


def factor_levels(runs: pd.DataFrame, fac: Mapping[str, Any], manifest: Mapping[str, Any] | None = None
            ) -> tuple[pd.Series, list[Any]]:
    """A categorical factor's column and its levels in design order (values as stored: text for a factor stored
    as text); a sampled range that is not a few integers has no levels (``[]``: a continuous factor)."""
    col = runs[fac["name"]] if fac["name"] in runs.columns else pd.Series([None] * len(runs), index=runs.index)
    values = list(fac.get("values") or [])
    if fac.get("is_range") and not values:  # sampled range: integers as they are if few, else no levels
        if integer_levels(fac, col):
            return col, sorted(col.dropna().unique())
        return col, []  # a continuous factor: fitted curves (sim.experiments.analysis.curves), never bins
    if values and (is_string_factor(manifest, fac)
                   or not all(isinstance(v, (str, int, float, bool)) for v in values)):
        values = [v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
                  for v in values]
        if col.dtype != object and str(col.dtype) not in ("string", "str"):
            col = col.map(lambda x: x if x is None or isinstance(x, str) or (isinstance(x, float) and math.isnan(x))
                          else json.dumps(x.item() if hasattr(x, "item") else x))
    present = [v for v in col.dropna().unique()]
    order = values + sorted([v for v in present if v not in values], key=str)
    return col, order


# --- the table of battles ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FactorView:
    """A factor as the analysis sees it: ``name``, ``kind`` (``categorical`` or ``continuous``), ``levels`` (labels
    in design order; empty for a continuous factor) and ``owner`` (index of the side it belongs to, or ``None``)."""

    name: str
    kind: str
    levels: tuple[str, ...]
    owner: int | None


@dataclass
class Battles:
    """The finished battles of a folder as analysis input.

    ``frame``: one row per battle with ``point_key``, ``rep``, one column per factor (categorical: the level label
    as text; continuous: float) and the outcome columns ``win``, ``loss``, ``draw``, ``win_side0``,
    ``win_side1``, ``survivors``, ``enemy_survivors``, ``own_lost``, ``enemy_lost``, ``duration`` (floats),
    ``battle_turn_limit`` (turns; nan for folders written before the batch stored it);
    ``factors``; ``sides`` (the two names); ``focus`` (index of the focus side); ``crn`` (common random
    numbers); ``design`` (the manifest's design kind); ``manifest``."""

    frame: pd.DataFrame
    factors: list[FactorView]
    sides: list[str]
    focus: int
    crn: bool
    design: str
    manifest: Mapping[str, Any]

    @property
    def categorical(self) -> list[FactorView]:
        return [f for f in self.factors if f.kind == "categorical"]

    @property
    def continuous(self) -> list[FactorView]:
        return [f for f in self.factors if f.kind == "continuous"]

    def factor(self, name: str) -> FactorView:
        return next(f for f in self.factors if f.name == name)

    def side_of(self, fac: FactorView) -> int:
        """The side whose win rate judges a factor's levels: its owner, else the focus side."""
        return self.focus if fac.owner is None else fac.owner


def _owner(path: str | None) -> int | None:
    parts = (path or "").split(".")
    if len(parts) >= 3 and parts[0] == "sides" and parts[1].isdigit():
        return int(parts[1])
    return None


def _label(v: Any) -> str:
    v = v.item() if hasattr(v, "item") else v
    return v if isinstance(v, str) else json.dumps(v)


def _floats(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy()


def outcomes(runs: pd.DataFrame, manifest: Mapping[str, Any], side: int = 0) -> Battles:
    """The analysis table of a folder's runs (``sim.experiments.store.load_runs``) and manifest, seen from side ``side``
    (0 or 1).  Raises ``ValueError`` for another side index."""
    if side not in (0, 1):
        raise ValueError(f"side index {side}: expected 0 or 1")
    d = manifest["design"]
    ok = runs[runs["status"] == "ok"].reset_index(drop=True) if len(runs) else runs.copy()
    w = _floats(ok["winner_index"]) if len(ok) else np.array([])
    other = 1 - side
    frame = pd.DataFrame({"point_key": ok["point_key"].astype(str).to_numpy() if len(ok) else [],
                          "rep": _floats(ok["rep"]) if len(ok) else []})
    frame["win_side0"] = (w == 0).astype(float)
    frame["win_side1"] = (w == 1).astype(float)
    frame["win"] = (w == side).astype(float)
    frame["loss"] = (w == other).astype(float)
    frame["draw"] = (w == -1).astype(float)
    for col, src in (("survivors", f"side{side + 1}_alive"), ("enemy_survivors", f"side{other + 1}_alive"),
                     ("own_lost", f"side{side + 1}_lost"), ("enemy_lost", f"side{other + 1}_lost"),
                     ("duration", "turns")):
        frame[col] = _floats(ok[src]) if len(ok) else np.array([])
    # the battle's turn limit (folders written before the column existed: unknown, nan)
    frame[TURN_LIMIT_COLUMN] = _floats(ok[TURN_LIMIT_COLUMN]) if len(ok) and TURN_LIMIT_COLUMN in ok.columns \
        else np.full(len(frame), math.nan)
    if "policies" in ok.columns:
        frame["policies"] = ok["policies"].to_numpy()
    views = []
    for fac in d.get("factors", []):
        name = fac["name"]
        column = ok[name] if name in ok.columns else pd.Series([None] * len(ok))
        if fac.get("is_range") and not fac.get("values"):  # a sampled range
            x = pd.to_numeric(column, errors="coerce")
            if not integer_levels(fac, x):
                frame[name] = x.astype("float64").to_numpy()
                views.append(FactorView(name, "continuous", (), _owner(fac.get("path"))))
                continue
            # an integer range with few values: its integers are the levels
            lv = [str(int(v)) for v in sorted(x.dropna().unique())]
            labels = x.map(lambda v: None if math.isnan(v) else str(int(v)))
        else:
            series, order = factor_levels(ok, fac, manifest)
            labels = series.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v))
                                else _label(v))
            lv = [_label(v) for v in order]
        frame[name] = labels.to_numpy() if len(ok) else []
        present = set(frame[name].dropna())
        views.append(FactorView(name, "categorical", tuple(v for v in lv if v in present), _owner(fac.get("path"))))
    names = side_names(manifest, runs)
    return Battles(frame, views, names, side, bool(d.get("experiment", {}).get("common_random_numbers")),
                   str(d.get("experiment", {}).get("design", {}).get("kind", "full_factorial")), manifest)


# --- intervals ---------------------------------------------------------------------------------------------------

def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of ``k`` successes in ``n`` trials (:func:`sim.stats.wilson_interval`); ``(nan, nan)``
    when ``n == 0``."""
    if n <= 0:
        return math.nan, math.nan
    return wilson_interval(int(k), int(n), confidence)


def outcome_bounds(f: pd.DataFrame, outcome: str) -> tuple[float, float]:
    """``(low, high)``: the values one battle of ``f`` can give for ``outcome`` (the possible range every interval
    of it is clipped to): 0..1 for ``win``, ``loss``, ``draw``, ``win_side0`` / ``win_side1``; 0 to the most tanks
    a side starts with in ``f`` (survivors plus tanks lost) for ``survivors`` / ``enemy_survivors``; for
    ``duration`` (turns) 1 to the longest turn limit of ``f``'s battles (the ``battle_turn_limit`` column, as
    in the runs: a battle ends at the latest at the end of its last turn, and a finished battle has started its
    first turn), the high end ``inf`` when a battle's limit is unknown (a folder written before the batch stored
    it; decision: the low end is 0 if some battle of ``f`` did end before its first turn, since what happened is
    possible); 0..inf for
    ``loss_exchange``."""
    if outcome in ("win", "loss", "draw", "win_side0", "win_side1"):
        return 0.0, 1.0
    lost = {"survivors": "own_lost", "enemy_survivors": "enemy_lost"}.get(outcome)
    if lost is not None and len(f):
        start = (f[outcome] + f[lost]).to_numpy(dtype=float)
        return 0.0, float(np.nanmax(start)) if np.isfinite(start).any() else math.inf
    if outcome == "duration":
        played = f["duration"].to_numpy(dtype=float) if "duration" in f.columns else np.array([])
        low = 0.0 if (np.isfinite(played) & (played < 1)).any() else 1.0
        limits = f[TURN_LIMIT_COLUMN].to_numpy(dtype=float) if TURN_LIMIT_COLUMN in f.columns else np.array([])
        # every battle's limit must be known, else one without it may have lasted longer
        high = float(limits.max()) if len(limits) and np.isfinite(limits).all() else math.inf
        return low, max(high, low)
    return 0.0, math.inf


def clip_interval(lo: float, hi: float, low: float, high: float) -> tuple[float, float]:
    """An interval ``[lo, hi]`` cut to the possible range ``[low, high]`` (nans stay nans).  The true value lies in
    the possible range, so the clipped interval covers it whenever the unclipped one does: coverage is kept.  The
    report's notes say that intervals of bounded quantities are clipped (Student's t over three replications, for
    instance, gives a win-rate difference wider than 100 points or a negative mean survivor count)."""
    if math.isnan(lo) or math.isnan(hi):
        return lo, hi
    return min(max(lo, low), high), max(min(hi, high), low)


def mean_interval(x: np.ndarray, confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None
                  ) -> tuple[float, float]:
    """Student's t interval of a mean (scipy); ``(nan, nan)`` below two values; the point itself for no spread.
    ``bounds``: the possible range of the mean (e.g. :func:`outcome_bounds`, or ``(-1, 1)`` for a mean
    difference of win rates): the interval is clipped to it (:func:`clip_interval`)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    lo, hi = float(ci.low), float(ci.high)
    return clip_interval(lo, hi, *bounds) if bounds is not None else (lo, hi)


def difference_bounds(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The possible range of ``x - y`` for ``x`` in ``a`` and ``y`` in ``b``."""
    return a[0] - b[1], a[1] - b[0]


def proportion_difference(k1: int, n1: int, k2: int, n2: int, confidence: float = CONFIDENCE
                          ) -> tuple[float, float, float]:
    """``(p1 - p2, low, high)``: Newcombe's hybrid score interval (from the two Wilson intervals) of a difference
    of two independent proportions (statsmodels ``confint_proportions_2indep(method="newcomb")``, sound at 0 and
    n successes; always inside [-1, 1]); nans when a group is empty."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan, math.nan
    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=1 - confidence)
    return k1 / n1 - k2 / n2, float(lo), float(hi)


def welch_difference(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE,
                     bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """``(mean x - mean y, low, high)``: Welch's t interval (scipy ``ttest_ind(equal_var=False)``); nans below two
    values in a group; the difference itself when neither group varies.  ``bounds``: the possible range of the
    difference (:func:`difference_bounds`), which the interval is clipped to."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return math.nan, math.nan, math.nan
    d = float(x.mean() - y.mean())
    if np.all(x == x[0]) and np.all(y == y[0]):
        return d, d, d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
    lo, hi = float(ci.low), float(ci.high)
    if bounds is not None:
        lo, hi = clip_interval(lo, hi, *bounds)
    return d, lo, hi


def ratio_of_sums(num: np.ndarray, den: np.ndarray) -> float:
    """``sum(num) / sum(den)``: ``inf`` for a positive numerator over zero, ``nan`` for 0 / 0."""
    a, b = float(np.sum(num)), float(np.sum(den))
    return a / b if b > 0 else (math.inf if a > 0 else math.nan)


def _ratio_boot(num: np.ndarray, den: np.ndarray, mask: np.ndarray, indices: Sequence[np.ndarray]
                ) -> tuple[float, float, float, float]:
    """Percentile bootstrap of the ratio of sums over ``mask`` and of its difference from the ratio over all
    battles, over the resamples ``indices`` (:func:`bootstrap_indices`): ``(lo, hi, effect_lo, effect_hi)``.
    Resamples without a battle of the level (0 / 0) are left out; ``inf`` (no own loss) is kept, and the quantiles
    are taken without interpolation (``inverted_cdf``) so an infinite bound reads ``inf``."""
    if mask.sum() < 2 or not len(indices):
        return (math.nan,) * 4
    level, diff = [], []
    for r in indices:
        m = mask[r]
        lv = ratio_of_sums(num[r][m], den[r][m])
        allv = ratio_of_sums(num[r], den[r])
        if math.isnan(lv):
            continue
        level.append(lv)
        diff.append(lv - allv if math.isfinite(lv) and math.isfinite(allv) else math.nan)
    if len(level) < 10:
        return (math.nan,) * 4
    q = ((1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2)
    lo, hi = np.quantile(np.array(level), q, method="inverted_cdf")
    dd = np.array([x for x in diff if not math.isnan(x)])
    elo, ehi = np.quantile(dd, q, method="inverted_cdf") if len(dd) >= 10 else (math.nan, math.nan)
    return float(lo), float(hi), float(elo), float(ehi)


# --- resampling --------------------------------------------------------------------------------------------------

def resample_unit(b: Battles) -> str:
    """What the bootstraps resample: ``replication`` (whole replications, with common random numbers and at least
    two of them), ``battle within design point`` (when every point has at least two battles), else ``battle``."""
    f = b.frame
    if b.crn and f["rep"].nunique() >= 2:
        return "replication"
    if len(f) and f.groupby("point_key").size().min() >= 2:
        return "battle within design point"
    return "battle"


def bootstrap_indices(b: Battles, resamples: int, seed: int = BOOTSTRAP_SEED) -> list[np.ndarray]:
    """``resamples`` row-index arrays into ``b.frame``, drawn by :func:`resample_unit` with a fixed seed."""
    rng = np.random.default_rng(seed)
    f = b.frame
    unit = resample_unit(b)
    if unit == "replication":
        groups = [np.asarray(v) for _, v in sorted(f.groupby("rep").indices.items())]
        out = []
        for _ in range(resamples):
            pick = rng.integers(0, len(groups), size=len(groups))
            out.append(np.concatenate([groups[i] for i in pick]))
        return out
    if unit == "battle within design point":
        groups = [np.asarray(v) for _, v in sorted(f.groupby("point_key").indices.items())]
        return [np.concatenate([g[rng.integers(0, len(g), size=len(g))] for g in groups]) for _ in range(resamples)]
    n = len(f)
    return [rng.integers(0, n, size=n) for _ in range(resamples)]


# --- effects -----------------------------------------------------------------------------------------------------

def _level_row(f: pd.DataFrame, mask: np.ndarray, outcome: str, boot: Sequence[np.ndarray]) -> dict[str, float]:
    sub, rest = f[mask], f[~mask]
    n, nr = len(sub), len(rest)
    share_rest = nr / len(f) if len(f) else math.nan
    if outcome == "win":
        k, kr = int(sub["win"].sum()), int(rest["win"].sum())
        mean = k / n if n else math.nan
        lo, hi = wilson(k, n)
        if nr:
            d, dlo, dhi = proportion_difference(k, n, kr, nr)
            eff, elo, ehi = share_rest * d, share_rest * dlo, share_rest * dhi
        else:
            eff, elo, ehi = 0.0, 0.0, 0.0
    elif outcome == "loss_exchange":
        num, den = f["enemy_lost"].to_numpy(), f["own_lost"].to_numpy()
        mean = ratio_of_sums(num[mask], den[mask])
        eff = mean - ratio_of_sums(num, den)
        lo, hi, elo, ehi = _ratio_boot(num, den, mask, boot)
        if not nr:
            elo = ehi = 0.0
    else:
        x = sub[outcome].to_numpy()
        mean = float(x.mean()) if n else math.nan
        lo, hi = mean_interval(x, bounds=outcome_bounds(sub, outcome))
        if nr:
            d, dlo, dhi = welch_difference(x, rest[outcome].to_numpy(), bounds=difference_bounds(
                outcome_bounds(sub, outcome), outcome_bounds(rest, outcome)))
            eff, elo, ehi = share_rest * d, share_rest * dlo, share_rest * dhi
        else:
            eff, elo, ehi = 0.0, 0.0, 0.0
    return {"n": n, "value": mean, "lo": lo, "hi": hi, "effect": eff, "effect_lo": elo, "effect_hi": ehi}


def effects(b: Battles, seed: int = BOOTSTRAP_SEED) -> pd.DataFrame:
    """Main effects: one row per (factor, level, outcome) for every categorical factor, plus ``(all)`` rows.

    Columns: ``factor``, ``level``, ``outcome``, ``n`` (battles), ``value`` (win rate, mean or ratio) with ``lo`` /
    ``hi``, ``effect`` (value minus the value over all battles) with ``effect_lo`` / ``effect_hi`` (see the module
    docstring for each interval)."""
    f = b.frame
    rows = []
    everything = np.ones(len(f), dtype=bool)
    boot = bootstrap_indices(b, BOOTSTRAP, seed) if len(f) >= 3 else []
    for outcome in OUTCOMES:
        rows.append({"factor": "(all)", "level": "(all)", "outcome": outcome,
                     **_level_row(f, everything, outcome, boot)})
    for fac in b.categorical:
        for lv in fac.levels:
            mask = (f[fac.name] == lv).to_numpy()
            for outcome in OUTCOMES:
                rows.append({"factor": fac.name, "level": lv, "outcome": outcome,
                             **_level_row(f, mask, outcome, boot)})
    return pd.DataFrame(rows, columns=["factor", "level", "outcome", "n", "value", "lo", "hi", "effect",
                                       "effect_lo", "effect_hi"])


# --- paired and unpaired differences -----------------------------------------------------------------------------

def paired_replicate_differences(b: Battles, factor: str, level_a: str, level_b: str, outcome: str
                                 ) -> pd.Series:
    """Per replication, the mean over matched cells (same levels of every other categorical factor) of
    ``outcome`` at ``level_a`` minus at ``level_b`` (battles matched by replication: common random numbers).
    Continuous factors are not matched on (a sampled design never repeats their values): their values are averaged
    over within the cell.  Index: ``rep``."""
    f = b.frame
    others = [x.name for x in b.categorical if x.name != factor]
    keys = ["rep", *others]
    a = f[f[factor] == level_a].groupby(keys, dropna=False)[outcome].mean()
    c = f[f[factor] == level_b].groupby(keys, dropna=False)[outcome].mean()
    both = pd.concat([a.rename("a"), c.rename("b")], axis=1, join="inner")
    d = (both["a"] - both["b"]).groupby(level="rep").mean()
    return d


def differences(b: Battles) -> pd.DataFrame:
    """Differences between every two levels of each categorical factor, per per-battle outcome (see the module
    docstring).  Columns: ``factor``, ``level_a``, ``level_b``, ``outcome``, ``diff`` (a minus b), ``lo``,
    ``hi``, ``p_value``, ``paired`` (bool), ``n_pairs`` (replications paired, 0 when unpaired), ``n_a``, ``n_b``,
    ``unpaired_diff``, ``unpaired_lo``, ``unpaired_hi``, ``method``."""
    f = b.frame
    rows = []
    paired_ok = b.crn and f["rep"].nunique() >= 2
    for fac in b.categorical:
        for i, la in enumerate(fac.levels):
            for lb in fac.levels[i + 1:]:
                xa, xb = f[f[fac.name] == la], f[f[fac.name] == lb]
                for outcome in PER_BATTLE:
                    possible = difference_bounds(outcome_bounds(xa, outcome), outcome_bounds(xb, outcome))
                    if outcome == "win":
                        ud, ulo, uhi = proportion_difference(int(xa["win"].sum()), len(xa), int(xb["win"].sum()),
                                                             len(xb))
                        umethod = "Newcombe interval, Fisher exact test"
                    else:
                        ud, ulo, uhi = welch_difference(xa[outcome].to_numpy(), xb[outcome].to_numpy(),
                                                        bounds=possible)
                        umethod = "Welch t"
                    row = {"factor": fac.name, "level_a": la, "level_b": lb, "outcome": outcome, "n_a": len(xa),
                           "n_b": len(xb), "unpaired_diff": ud, "unpaired_lo": ulo, "unpaired_hi": uhi}
                    if paired_ok:
                        d = paired_replicate_differences(b, fac.name, la, lb, outcome).to_numpy()
                        lo, hi = mean_interval(d, bounds=possible)
                        p = _paired_p(d)
                        row |= {"diff": float(d.mean()) if len(d) else math.nan, "lo": lo, "hi": hi, "p_value": p,
                                "paired": True, "n_pairs": len(d),
                                "method": "paired t over replications (common random numbers)"}
                    else:
                        p = _unpaired_p(xa, xb, outcome)
                        row |= {"diff": ud, "lo": ulo, "hi": uhi, "p_value": p, "paired": False, "n_pairs": 0,
                                "method": umethod}
                    rows.append(row)
    cols = ["factor", "level_a", "level_b", "outcome", "diff", "lo", "hi", "p_value", "paired", "n_pairs", "n_a",
            "n_b", "unpaired_diff", "unpaired_lo", "unpaired_hi", "method"]
    return pd.DataFrame(rows, columns=cols)


def _paired_p(d: np.ndarray) -> float:
    """Two-sided p-value of the one-sample t test of mean ``d`` = 0 (scipy); 1 or 0 when ``d`` does not vary."""
    if len(d) < 2:
        return math.nan
    if np.ptp(d) == 0:
        return 1.0 if d[0] == 0 else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_1samp(d, 0.0).pvalue)


def _unpaired_p(xa: pd.DataFrame, xb: pd.DataFrame, outcome: str) -> float:
    if len(xa) < 2 or len(xb) < 2:
        return math.nan
    if outcome == "win":
        ka, kb = int(xa["win"].sum()), int(xb["win"].sum())
        return float(stats.fisher_exact([[ka, len(xa) - ka], [kb, len(xb) - kb]]).pvalue)
    a, c = xa[outcome].to_numpy(), xb[outcome].to_numpy()
    if np.ptp(a) == 0 and np.ptp(c) == 0:
        return 1.0 if a[0] == c[0] else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(a, c, equal_var=False).pvalue)


# --- interactions --------------------------------------------------------------------------------------------------

def interaction_weights(i: int, j: int, n_a: int, n_b: int) -> np.ndarray:
    """Weights over the ``n_a x n_b`` table of cell means (row-major) of the interaction contrast of cell
    ``(i, j)``: ``m_ij - m_i. - m_.j + m_..``."""
    w = np.full((n_a, n_b), 1.0 / (n_a * n_b))
    w[i, :] -= 1.0 / n_b
    w[:, j] -= 1.0 / n_a
    w[i, j] += 1.0
    return w.ravel()


def interactions(b: Battles) -> pd.DataFrame:
    """Two-factor interactions of every pair of categorical factors, per cell and per-battle outcome (see the
    module docstring).  Columns: ``factor_a``, ``level_a``, ``factor_b``, ``level_b``, ``outcome``, ``n``
    (battles in the cell), ``cell``, the cell mean, ``interaction``, ``lo``, ``hi``, ``method``.  Pairs whose
    table has an empty cell are left out."""
    import statsmodels.api as sm

    f = b.frame
    rows = []
    cats = b.categorical
    by_rep = b.crn and f["rep"].nunique() >= 2
    for ia, fa in enumerate(cats):
        for fb in cats[ia + 1:]:
            la, lb = list(fa.levels), list(fb.levels)
            if len(la) < 2 or len(lb) < 2:
                continue
            cell_of = f[fa.name].map({v: k for k, v in enumerate(la)}) * len(lb) + f[fb.name].map(
                {v: k for k, v in enumerate(lb)})
            if cell_of.isna().any() or cell_of.nunique() < len(la) * len(lb):
                continue
            cell = cell_of.astype(int).to_numpy()
            counts = np.bincount(cell, minlength=len(la) * len(lb))
            for outcome in PER_BATTLE:
                y = f[outcome].to_numpy()
                low, high = outcome_bounds(f, outcome)
                means = np.bincount(cell, weights=y, minlength=len(counts)) / counts
                fit = None
                per_rep = None
                if by_rep:
                    t = pd.DataFrame({"rep": f["rep"].to_numpy(), "cell": cell, "y": y}).groupby(
                        ["rep", "cell"])["y"].mean().unstack("cell")
                    per_rep = t.dropna().to_numpy()  # replications with every cell
                elif counts.min() >= 2:
                    dummies = np.eye(len(counts))[cell]
                    fit = sm.OLS(y, dummies).fit(cov_type="HC2")
                for i, lva in enumerate(la):
                    for j, lvb in enumerate(lb):
                        w = interaction_weights(i, j, len(la), len(lb))
                        est = float(w @ means)
                        # the weights add up to 0: the contrast of cell means in [low, high] lies within
                        # +-(high - low) times the sum of the positive weights
                        reach = (high - low) * float(w[w > 0].sum())
                        if per_rep is not None:
                            lo, hi = mean_interval(per_rep @ w, bounds=(-reach, reach)) if len(per_rep) >= 2 \
                                else (math.nan, math.nan)
                            method = "t over replications (common random numbers)"
                        elif fit is not None:
                            tt = fit.t_test(w.reshape(1, -1))
                            ci = np.asarray(tt.conf_int(alpha=1 - CONFIDENCE)).ravel()
                            lo, hi = clip_interval(float(ci[0]), float(ci[1]), -reach, reach)
                            method = "OLS cell means, HC2 covariance"
                        else:
                            lo = hi = math.nan
                            method = "no interval (a cell has fewer than 2 battles)"
                        rows.append({"factor_a": fa.name, "level_a": lva, "factor_b": fb.name, "level_b": lvb,
                                     "outcome": outcome, "n": int(counts[i * len(lb) + j]),
                                     "cell": float(means[i * len(lb) + j]), "interaction": est, "lo": lo, "hi": hi,
                                     "method": method})
    cols = ["factor_a", "level_a", "factor_b", "level_b", "outcome", "n", "cell", "interaction", "lo", "hi",
            "method"]
    return pd.DataFrame(rows, columns=cols)


# --- importance ----------------------------------------------------------------------------------------------------

SEED_TERM = "seed"
#: The importance row of the variance the model explains but no single term claims (correlated terms).
SHARED_TERM = "shared"


@dataclass(frozen=True)
class _Model:
    """A patsy design matrix with its terms: ``names`` (report names), ``slices`` (columns), ``factor_sets``."""

    x: np.ndarray
    names: list[str]
    slices: list[slice]
    factor_sets: list[frozenset[str]]
    formula: str
    data: pd.DataFrame


def _model(b: Battles, outcome: str, interactions_too: bool = True) -> _Model | None:
    """The ANOVA model of ``outcome``: intercept, every factor, every two-factor interaction (while the
    residual keeps at least a quarter of the battles' degrees of freedom), the replication block with common
    random numbers.  ``None`` when nothing varies."""
    import patsy

    f = b.frame
    data = pd.DataFrame({"y": f[outcome].to_numpy()})
    main: list[tuple[str, str, frozenset[str]]] = []
    for k, fac in enumerate(b.factors):
        col = f"f{k}"
        if fac.kind == "categorical":
            if f[fac.name].nunique() < 2:
                continue
            data[col] = f[fac.name].astype(str).to_numpy()
            main.append((f"C({col})", fac.name, frozenset([col])))
        else:
            x = f[fac.name].to_numpy()
            if np.unique(x).size < 4:
                continue
            data[col] = x
            main.append((f"bs({col}, df=3)", fac.name, frozenset([col])))
    if not main:
        return None
    terms = list(main)
    if interactions_too:
        for i, (ta, na, sa) in enumerate(main):
            for tb, nb, sb in main[i + 1:]:
                ca = ta if ta.startswith("C(") else next(iter(sa))  # a continuous factor interacts linearly
                cb = tb if tb.startswith("C(") else next(iter(sb))
                terms.append((f"{ca}:{cb}", f"{na} x {nb}", sa | sb))
    if b.crn and f["rep"].nunique() >= 2:
        data["rep"] = f["rep"].astype(int).astype(str).to_numpy()
        terms.append(("C(rep)", SEED_TERM, frozenset(["rep"])))
    formula = "y ~ " + " + ".join(t for t, _, _ in terms)
    x = patsy.dmatrix(formula.split("~", 1)[1], data, return_type="dataframe")
    if interactions_too and len(data) - np.linalg.matrix_rank(x.to_numpy()) < max(2, len(data) // 4):
        return _model(b, outcome, interactions_too=False)
    info = x.design_info
    slices, names, sets = [], [], []
    by_code = {t: (n, s) for t, n, s in terms}
    for term, sl in info.term_slices.items():
        if not term.factors:
            continue
        code = ":".join(fct.code for fct in term.factors)
        name, fs = by_code.get(code, (code, frozenset()))
        slices.append(sl)
        names.append(name)
        sets.append(fs)
    return _Model(x.to_numpy(), names, slices, sets, formula, data)


def _cho_solve(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Solve ``a beta = c`` for a positive definite ``a`` by Cholesky (raises ``LinAlgError`` otherwise)."""
    from scipy.linalg import cho_factor, cho_solve

    return cho_solve(cho_factor(a, check_finite=False), c, check_finite=False)


def type2_sums_of_squares(m: _Model, rows: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """Type II sums of squares of every term of ``m`` on the rows ``rows`` (all by default): for a term, the
    residual sum of squares of the model without it and without the terms containing it, minus that of the same
    model with it.  Returns ``(ss per term, residual ss of the full model, total ss)``; equal to statsmodels'
    ``anova_lm(typ=2)`` for OLS (tested).  Each sub-model is solved from the cross products ``X'X``, ``X'y``
    (least squares on them, so a column that a resample leaves empty does no harm)."""
    x, y = m.x, m.data["y"].to_numpy()
    w = np.ones(len(y)) if rows is None else np.bincount(rows, minlength=len(y)).astype(float)
    # einsum, not BLAS: a threaded BLAS on these small products is many times slower on a busy machine
    xw = x * w[:, None]
    xtx, xty, yty = np.einsum("ij,ik->jk", xw, x), np.einsum("ij,i->j", xw, y), float(np.einsum("i,i,i", w, y, y))
    cols_of = [np.arange(s.start, s.stop) for s in m.slices]
    out = np.zeros(len(m.slices))
    cache: dict[frozenset[int], float] = {}

    def rss_without(drop: frozenset[int]) -> float:
        if drop not in cache:
            keep = np.concatenate([[0], *[cs for t, cs in enumerate(cols_of) if t not in drop]]).astype(int)
            keep = keep[np.diag(xtx)[keep] > 0]  # a level that a resample left out
            a, c = xtx[np.ix_(keep, keep)], xty[keep]
            try:
                beta = _cho_solve(a, c)
            except np.linalg.LinAlgError:
                beta = np.linalg.lstsq(a, c, rcond=None)[0]
            cache[drop] = max(yty - float(beta @ c), 0.0)
        return cache[drop]

    for t, fs in enumerate(m.factor_sets):
        containing = frozenset(u for u, gs in enumerate(m.factor_sets) if u != t and fs < gs)
        out[t] = rss_without(containing | {t}) - rss_without(containing)
    resid = rss_without(frozenset())
    mean = float(np.einsum("i,i", w, y) / w.sum())
    total = float(np.einsum("i,i", w, (y - mean) ** 2))
    return np.maximum(out, 0.0), resid, total


def importance(b: Battles, resamples: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Share of each per-battle outcome's variance per factor, interaction and (with common random numbers) the
    seed block, the ``shared`` overlap of correlated terms (only when there is one) and the ``residual``; the shares
    of one outcome add up to 1; see the module docstring.  Returns ``(table, comparisons)``.

    ``table`` columns: ``outcome``, ``term``, ``df``, ``sum_sq``, ``share``, ``lo``, ``hi`` (bootstrap), ``omega_sq``,
    ``p_value``, ``method``; a Sobol' design adds ``total`` / ``total_lo`` / ``total_hi`` (ST).  ``comparisons``:
    ``outcome``, ``term_a``, ``term_b``, ``p_a_greater`` (bootstrap probability that a's share exceeds b's) for
    every two main-effect terms (factors), a before b in the table's order."""
    if b.design == "sobol" and b.manifest["design"].get("design_rows"):
        return sobol_importance(b, seed), pd.DataFrame(columns=["outcome", "term_a", "term_b", "p_a_greater"])
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rows, comps = [], []
    idx = bootstrap_indices(b, resamples, seed) if resamples else []
    for outcome in PER_BATTLE:
        m = _model(b, outcome)
        if m is None or np.ptp(m.data["y"].to_numpy()) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = smf.ols(m.formula, m.data).fit()
            table = anova_lm(fit, typ=2)
        ss, resid, total = type2_sums_of_squares(m)
        mse = resid / fit.df_resid if fit.df_resid > 0 else math.nan
        boot = []
        for r in idx:
            bss, _, btot = type2_sums_of_squares(m, r)
            boot.append(bss / btot if btot > 0 else np.full(len(bss), np.nan))
        boot_arr = np.array(boot) if boot else np.empty((0, len(m.names)))
        for t, name in enumerate(m.names):
            label = table.index[t]
            share = ss[t] / total
            lo, hi = (np.nanpercentile(boot_arr[:, t], [2.5, 97.5]) if len(boot_arr) else (math.nan, math.nan))
            # a share is a ratio of sums of squares, in [0, 1]; the bootstrap's float sums can pass 1 by an ulp
            lo, hi = clip_interval(float(lo), float(hi), 0.0, 1.0)
            dft = float(table.loc[label, "df"])
            # the F test of this term's own sum of squares (statsmodels' table judges a spline's main effect
            # without the marginality to its interactions, so its sum of squares, hence its p, can differ)
            p_value = (float(stats.f.sf(ss[t] / dft / mse, dft, fit.df_resid))
                       if dft > 0 and mse > 0 and math.isfinite(mse) else math.nan)
            rows.append({"outcome": outcome, "term": name, "df": dft, "sum_sq": float(ss[t]), "share": share,
                         "lo": float(lo), "hi": float(hi),
                         "omega_sq": (ss[t] - dft * mse) / (total + mse) if total > 0 else math.nan,
                         "p_value": p_value, "method": "OLS ANOVA type II"})
        shared = total - resid - float(ss.sum())
        if abs(shared) > 1e-9 * max(total, 1.0):  # a non-orthogonal design: the terms overlap
            rows.append({"outcome": outcome, "term": SHARED_TERM, "df": math.nan, "sum_sq": shared,
                         "share": shared / total, "lo": math.nan, "hi": math.nan, "omega_sq": math.nan,
                         "p_value": math.nan, "method": "OLS ANOVA type II"})
        rows.append({"outcome": outcome, "term": "residual", "df": float(fit.df_resid), "sum_sq": resid,
                     "share": resid / total, "lo": math.nan, "hi": math.nan, "omega_sq": math.nan,
                     "p_value": math.nan, "method": "OLS ANOVA type II"})
        mains = [t for t, fs in enumerate(m.factor_sets) if len(fs) == 1 and m.names[t] != SEED_TERM]
        for i, ta in enumerate(mains):
            for tb in mains[i + 1:]:
                if len(boot_arr):
                    a, c = boot_arr[:, ta], boot_arr[:, tb]
                    p = float(np.mean(a > c) + 0.5 * np.mean(a == c))
                else:
                    p = math.nan
                comps.append({"outcome": outcome, "term_a": m.names[ta], "term_b": m.names[tb], "p_a_greater": p})
    cols = ["outcome", "term", "df", "sum_sq", "share", "lo", "hi", "omega_sq", "p_value", "method"]
    return (pd.DataFrame(rows, columns=cols),
            pd.DataFrame(comps, columns=["outcome", "term_a", "term_b", "p_a_greater"]))


def _unit(lo: str, hi: str, v: float, half: float) -> dict[str, float]:
    """``{lo: v - half, hi: v + half}`` clipped to [0, 1], where a Sobol' index lies (:func:`clip_interval`)."""
    a, b = clip_interval(v - half, v + half, 0.0, 1.0)
    return {lo: a, hi: b}


def sobol_importance(b: Battles, seed: int = BOOTSTRAP_SEED) -> pd.DataFrame:
    """Sobol' indices (SALib ``sobol.analyze``) of each per-battle outcome's mean per design row of a Sobol'
    design: rows ``term`` = factor with ``share`` = S1 (``lo``/``hi`` its 95 % interval), ``total`` = ST; rows
    ``a x b`` with ``share`` = S2.  Outcomes with a design point that has no finished battle are left out."""
    from SALib.analyze import sobol as sobol_analyze

    d = b.manifest["design"]
    info = d.get("design_info", {})
    problem = info.get("problem")
    second = bool(info.get("second_order", True))
    point_index = {p["key"]: p["index"] for p in d["points"]}
    rows = []
    f = b.frame
    for outcome in PER_BATTLE:
        means = f.groupby("point_key")[outcome].mean()
        by_index = {point_index[k]: v for k, v in means.items() if k in point_index}
        y = np.array([by_index.get(i, math.nan) for i in d["design_rows"]], dtype=float)
        if np.isnan(y).any() or np.ptp(y) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            si = sobol_analyze.analyze(problem, y, calc_second_order=second, conf_level=CONFIDENCE,
                                       seed=int(seed % (2**32)), print_to_console=False)
        names = problem["names"]
        for k, name in enumerate(names):
            s1, c1, st, ct = (float(si[key][k]) for key in ("S1", "S1_conf", "ST", "ST_conf"))
            rows.append({"outcome": outcome, "term": name, "share": s1, **_unit("lo", "hi", s1, c1),
                         "total": st, **_unit("total_lo", "total_hi", st, ct), "method": "Sobol (SALib)"})
        if second:
            for i in range(len(names)):
                for j in range(i + 1, len(names)):
                    s2, c2 = float(si["S2"][i][j]), float(si["S2_conf"][i][j])
                    rows.append({"outcome": outcome, "term": f"{names[i]} x {names[j]}", "share": s2,
                                 **_unit("lo", "hi", s2, c2), "total": math.nan, "total_lo": math.nan,
                                 "total_hi": math.nan, "method": "Sobol (SALib)"})
    return pd.DataFrame(rows, columns=["outcome", "term", "share", "lo", "hi", "total", "total_lo", "total_hi",
                                       "method"])


# --- best level ----------------------------------------------------------------------------------------------------

def probability_best(values: np.ndarray, level_codes: np.ndarray, n_levels: int, indices: Sequence[np.ndarray]
                     ) -> np.ndarray:
    """For each level, the share of resamples (``indices`` into ``values``) in which its mean is the highest (a
    tie of ``k`` levels gives each ``1 / k`` of that resample).  Levels absent from a resample cannot win it."""
    wins = np.zeros(n_levels)
    for r in indices:
        c = level_codes[r]
        n = np.bincount(c, minlength=n_levels)
        s = np.bincount(c, weights=values[r], minlength=n_levels)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(n > 0, s / np.maximum(n, 1), -np.inf)
        top = np.flatnonzero(m == m.max())
        wins[top] += 1.0 / len(top)
    return wins / max(1, len(indices))


def best_levels(b: Battles, resamples: int = BOOTSTRAP_BEST, seed: int = BOOTSTRAP_SEED) -> pd.DataFrame:
    """Per categorical factor and level: ``factor``, ``side`` (whose win rate judges it, see the module
    docstring), ``level``, ``n``, ``win_rate``, ``lo``, ``hi`` (Wilson), ``p_best``, ``rank`` (1 = highest win
    rate)."""
    f = b.frame
    rows = []
    idx = bootstrap_indices(b, resamples, seed)
    for fac in b.categorical:
        si = b.side_of(fac)
        y = f[f"win_side{si}"].to_numpy()
        codes_s = f[fac.name].map({v: k for k, v in enumerate(fac.levels)})
        keep = codes_s.notna().to_numpy()
        codes = np.where(keep, codes_s.fillna(0).astype(int).to_numpy(), 0)
        sub_idx = [r[keep[r]] for r in idx]
        pb = probability_best(y, codes, len(fac.levels), sub_idx)
        rates = []
        for k, lv in enumerate(fac.levels):
            mask = keep & (codes == k)
            n, w = int(mask.sum()), int(y[mask].sum())
            lo, hi = wilson(w, n)
            rates.append(w / n if n else math.nan)
            rows.append({"factor": fac.name, "side": b.sides[si], "level": lv, "n": n,
                         "win_rate": w / n if n else math.nan, "lo": lo, "hi": hi, "p_best": float(pb[k])})
        order = np.argsort(-np.nan_to_num(np.array(rates), nan=-1.0), kind="stable")
        ranks = np.empty(len(order), dtype=int)
        ranks[order] = np.arange(1, len(order) + 1)
        for k in range(len(fac.levels)):
            rows[len(rows) - len(fac.levels) + k]["rank"] = int(ranks[k])
    return pd.DataFrame(rows, columns=["factor", "side", "level", "n", "win_rate", "lo", "hi", "p_best", "rank"])


# --- distributions -------------------------------------------------------------------------------------------------

def distributions(b: Battles) -> pd.DataFrame:
    """Quantiles (:data:`QUANTILES`, linear interpolation) and the mean of ``survivors``, ``enemy_survivors`` and
    ``duration``, over all battles and per level of each categorical factor.  Columns: ``factor``, ``level``,
    ``outcome``, ``n``, ``mean``, ``q05``, ``q25``, ``q50``, ``q75``, ``q95``, ``min``, ``max``."""
    f = b.frame
    groups: list[tuple[str, str, pd.DataFrame]] = [("(all)", "(all)", f)]
    for fac in b.categorical:
        groups += [(fac.name, lv, f[f[fac.name] == lv]) for lv in fac.levels]
    rows = []
    for name, lv, g in groups:
        for outcome in ("survivors", "enemy_survivors", "duration"):
            x = g[outcome]
            q = {f"q{round(100 * p):02d}": float(x.quantile(p)) if len(x) else math.nan for p in QUANTILES}
            rows.append({"factor": name, "level": lv, "outcome": outcome, "n": len(x),
                         "mean": float(x.mean()) if len(x) else math.nan, **q,
                         "min": float(x.min()) if len(x) else math.nan,
                         "max": float(x.max()) if len(x) else math.nan})
    return pd.DataFrame(rows)


# --- continuous factors: fitted curves -------------------------------------------------------------------------------

def curves(b: Battles, points: int = 25) -> pd.DataFrame:
    """Fitted curves of each per-battle outcome on each continuous factor (see the module docstring): ``points``
    rows per (factor, outcome) over the factor's observed range.  Columns: ``factor``, ``outcome``, ``x``, ``fit``,
    ``lo``, ``hi`` (95 % confidence band of the mean), ``p_value`` (against no effect), ``model``; a factor whose
    values are all integers is read at integers (at most ``points`` of them).  The fit and its
    band stay inside the outcome's possible range (:func:`outcome_bounds`: an OLS spline of survivors or turns may
    overshoot it near the ends; the fit is then the bound, like the band)."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    f = b.frame
    rows = []
    for fac in b.continuous:
        x = f[fac.name].to_numpy()
        ok = ~np.isnan(x)
        u = np.unique(x[ok])
        if u.size < 3:
            continue
        term = f"cr(x, df={min(4, u.size - 1)}, constraints='center')" if u.size >= 5 else "x + I(x ** 2)"
        gx = np.linspace(u.min(), u.max(), points)
        if np.all(u == np.round(u)):  # an integer factor (a seed, a count) is read at integers only
            gx = np.unique(np.round(gx))
        grid = pd.DataFrame({"x": gx})
        for outcome in PER_BATTLE:
            data = pd.DataFrame({"x": x[ok], "y": f[outcome].to_numpy()[ok]})
            if np.ptp(data["y"]) == 0:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if outcome == "win":
                        fit = smf.glm(f"y ~ {term}", data, family=sm.families.Binomial()).fit()
                        null = smf.glm("y ~ 1", data, family=sm.families.Binomial()).fit()
                        lr = 2 * (fit.llf - null.llf)
                        p = float(stats.chi2.sf(lr, fit.df_model))
                        model = f"logistic GLM, win ~ {term}"
                    else:
                        fit = smf.ols(f"y ~ {term}", data).fit()
                        p = float(fit.f_pvalue)
                        model = f"OLS, {outcome} ~ {term}"
                    pred = fit.get_prediction(grid).summary_frame(alpha=1 - CONFIDENCE)
                except (np.linalg.LinAlgError, ValueError):
                    continue
            low, high = outcome_bounds(f[ok], outcome)
            for gx, (_, pr) in zip(grid["x"], pred.iterrows()):
                clo, chi = clip_interval(float(pr["mean_ci_lower"]), float(pr["mean_ci_upper"]), low, high)
                fitted = min(max(float(pr["mean"]), low), high)  # an OLS spline may overshoot what is possible
                rows.append({"factor": fac.name, "outcome": outcome, "x": float(gx), "fit": fitted,
                             "lo": clo, "hi": chi, "p_value": p, "model": model})
    return pd.DataFrame(rows, columns=["factor", "outcome", "x", "fit", "lo", "hi", "p_value", "model"])


# --- side bias -----------------------------------------------------------------------------------------------------

def _policy_pair(text: Any) -> tuple[str, str] | None:
    try:
        pols = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(pols, list) or len(pols) != 2:
        return None
    return tuple(json.dumps(p, sort_keys=True, separators=(",", ":")) for p in pols)  # type: ignore[return-value]


def _doctrine_label(canon: str) -> str:
    p = json.loads(canon)
    if not isinstance(p, dict):
        return str(p)
    params = p.get("params") or {}
    return str(p.get("name")) + (f"({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})" if params else "")


def mirror_matches(b: Battles) -> dict[str, Any] | None:
    """Side bias from the mirror matches (both sides playing the same doctrine, name and parameters), or
    ``None`` when the design has none.

    Returns ``symmetric`` (every doctrine one side plays in the design, the other plays too), ``doctrines`` (one
    mapping per mirrored doctrine: ``doctrine``, ``battles``, ``<side>_wins`` for both sides, ``draws``,
    ``first_side_share`` of the decisive battles with ``lo`` / ``hi`` (Wilson), ``biased``), the same pooled
    under ``all``, and ``flag``: a sentence when the pooled interval excludes 50 %, else ``None``."""
    f = b.frame
    if "policies" not in f.columns or not len(f):
        return None
    pairs = f["policies"].map(_policy_pair)
    valid = pairs.notna()
    if not valid.any():
        return None
    first = {p[0] for p in pairs[valid]}
    second = {p[1] for p in pairs[valid]}
    mirror = valid & pairs.map(lambda p: p is not None and p[0] == p[1])
    if not mirror.any():
        return None
    s1, s2 = b.sides

    def block(g: pd.DataFrame) -> dict[str, Any]:
        w1, w2 = int(g["win_side0"].sum()), int(g["win_side1"].sum())
        lo, hi = wilson(w1, w1 + w2)
        share = w1 / (w1 + w2) if w1 + w2 else math.nan
        return {"battles": len(g), f"{s1}_wins": w1, f"{s2}_wins": w2, "draws": len(g) - w1 - w2,
                "first_side_share": share, "lo": lo, "hi": hi,
                "biased": bool(w1 + w2 > 0 and not (lo <= 0.5 <= hi))}

    docs = []
    for canon in sorted({p[0] for p in pairs[mirror]}, key=_doctrine_label):
        g = f[mirror & pairs.map(lambda p, c=canon: p is not None and p[0] == c)]
        docs.append({"doctrine": _doctrine_label(canon), **block(g)})
    pooled = block(f[mirror])
    flag = None
    if pooled["biased"]:
        fav = s1 if pooled["first_side_share"] > 0.5 else s2
        flag = (f"side bias: in {pooled['battles']} mirror matches (same doctrine both sides) {s1} won "
                f"{100 * pooled['first_side_share']:.0f}% [{100 * pooled['lo']:.0f}, {100 * pooled['hi']:.0f}] of "
                f"the decisive battles; 50% is outside the interval, so the scenario favours {fav} whatever the "
                f"doctrine")
    return {"symmetric": first == second, "doctrines": docs, "all": pooled, "flag": flag}


# --- power -----------------------------------------------------------------------------------------------------------

def cohen_h(p1: float, p2: float) -> float:
    """Cohen's effect size for two proportions, ``2 asin(sqrt p1) - 2 asin(sqrt p2)`` (statsmodels
    ``proportion_effectsize``)."""
    from statsmodels.stats.proportion import proportion_effectsize

    return float(proportion_effectsize(p1, p2))


def _around(p: float, delta: float) -> tuple[float, float]:
    """Two win rates ``delta`` apart centred on ``p`` (shifted inside [0, 1])."""
    lo = min(max(p - delta / 2, 0.0), 1.0 - delta)
    return lo, lo + delta


def battles_per_level(p: float, delta: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Battles per level for a two-sided test of two independent win rates ``delta`` apart around ``p`` to
    reach ``power`` (statsmodels ``NormalIndPower`` on Cohen's h, equal groups).  Raises ``ValueError`` unless
    ``0 < delta <= 1``."""
    from statsmodels.stats.power import NormalIndPower

    if not 0 < delta <= 1:
        raise ValueError(f"delta {delta}: expected a difference in win rate in (0, 1]")
    lo, hi = _around(p, delta)
    h = abs(cohen_h(hi, lo))
    return float(NormalIndPower().solve_power(effect_size=h, alpha=alpha, power=power, ratio=1.0,
                                              alternative="two-sided"))


def detectable_difference(p: float, n_per_level: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest difference in win rate around ``p`` that ``n_per_level`` battles per level detect with
    ``power`` (inverse of :func:`battles_per_level`); ``nan`` below two battles."""
    from scipy.optimize import brentq
    from statsmodels.stats.power import NormalIndPower

    if n_per_level < 2:
        return math.nan
    h = float(NormalIndPower().solve_power(nobs1=n_per_level, alpha=alpha, power=power, ratio=1.0,
                                           alternative="two-sided"))

    def gap(delta: float) -> float:
        lo, hi = _around(p, delta)
        return abs(cohen_h(hi, lo)) - h

    if gap(1.0) < 0:
        return math.nan
    return float(brentq(gap, 1e-9, 1.0))


def replications_paired(sd_diff: float, delta: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Replications for a paired (common random numbers) two-sided t test of a mean difference ``delta`` whose
    per-replication differences have standard deviation ``sd_diff`` (statsmodels ``TTestPower``)."""
    from statsmodels.stats.power import TTestPower

    if sd_diff <= 0:
        return 2.0
    return float(TTestPower().solve_power(effect_size=delta / sd_diff, alpha=alpha, power=power,
                                          alternative="two-sided"))


def power_table(b: Battles, delta: float, power: float = 0.8, alpha: float = 0.05) -> pd.DataFrame:
    """Battles needed per design point, per categorical factor, to detect a difference ``delta`` in the win
    rate of the factor's side (see the module docstring), from this folder as a pilot.

    Columns: ``factor``, ``side``, ``win_rate`` (pilot), ``points_per_level`` (design points at each level),
    ``replications`` (the pilot's, per point), ``battles_per_level`` and ``replications_needed`` (unpaired),
    ``sd_paired`` (pilot standard deviation of per-replication paired differences, with common random numbers),
    ``replications_needed_paired``, ``detectable_now`` (difference the pilot's size detects, unpaired),
    ``detectable_now_paired``, ``recommended`` (paired with common random numbers, else unpaired)."""
    from statsmodels.stats.power import TTestPower

    f = b.frame
    rows = []
    paired = b.crn and f["rep"].nunique() >= 2
    for fac in b.categorical:
        if len(fac.levels) < 2:
            continue
        si = b.side_of(fac)
        p = float(f[f"win_side{si}"].mean())
        pts = f.groupby(fac.name)["point_key"].nunique()
        m = int(pts.min()) if len(pts) else 1
        reps = int(f["rep"].nunique())
        n_level = battles_per_level(p, delta, power, alpha)
        per_level_now = float(f.groupby(fac.name).size().min())
        row = {"factor": fac.name, "side": b.sides[si], "win_rate": p, "points_per_level": m, "replications": reps,
               "battles_per_level": n_level, "replications_needed": math.ceil(n_level / m),
               "detectable_now": detectable_difference(p, per_level_now, power, alpha)}
        sd = math.nan
        if paired:
            var = []
            col = f"win_side{si}"
            for i, la in enumerate(fac.levels):
                for lb in fac.levels[i + 1:]:
                    d = paired_replicate_differences(b, fac.name, la, lb, col).to_numpy()
                    if len(d) >= 2:
                        var.append(float(np.var(d, ddof=1)))
            sd = math.sqrt(float(np.mean(var))) if var else math.nan
        row["sd_paired"] = sd
        # a pilot whose paired differences are all equal (sd 0) says nothing about their spread: recommend the
        # unpaired count rather than the paired formula's minimum
        if paired and not math.isnan(sd) and sd > 0:
            row["replications_needed_paired"] = math.ceil(replications_paired(sd, delta, power, alpha))
            es = float(TTestPower().solve_power(nobs=reps, alpha=alpha, power=power, alternative="two-sided")) \
                if reps >= 3 else math.nan
            row["detectable_now_paired"] = es * sd
            row["recommended"] = row["replications_needed_paired"]
        else:
            row["replications_needed_paired"] = math.nan
            row["detectable_now_paired"] = math.nan
            row["recommended"] = row["replications_needed"]
        rows.append(row)
    cols = ["factor", "side", "win_rate", "points_per_level", "replications", "battles_per_level",
            "replications_needed", "sd_paired", "replications_needed_paired", "detectable_now",
            "detectable_now_paired", "recommended"]
    return pd.DataFrame(rows, columns=cols)


# --- the answer ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Separation:
    """Difference in the win rate of side ``side`` between two levels ``a`` and ``b`` of a factor: ``diff`` (a
    minus b) with its 95 % interval ``lo`` / ``hi``, ``paired`` (common random numbers), ``p_value``; ``separated``
    when the interval excludes 0."""

    a: str
    b: str
    side: int
    diff: float
    lo: float
    hi: float
    paired: bool
    p_value: float

    @property
    def separated(self) -> bool:
        return bool(not math.isnan(self.lo) and (self.lo > 0 or self.hi < 0))


def separation(b: Battles, factor: str, a: str, c: str, side: int | None = None) -> Separation:
    """:class:`Separation` of levels ``a`` and ``c`` of ``factor`` in the win rate of ``side`` (default: the
    factor's side), paired over replications with common random numbers, else Newcombe / Fisher."""
    fac = b.factor(factor)
    si = b.side_of(fac) if side is None else side
    col = f"win_side{si}"
    f = b.frame
    if b.crn and f["rep"].nunique() >= 2:
        d = paired_replicate_differences(b, factor, a, c, col).to_numpy()
        lo, hi = mean_interval(d, bounds=(-1.0, 1.0))
        return Separation(a, c, si, float(d.mean()) if len(d) else math.nan, lo, hi, True, _paired_p(d))
    xa, xc = f[f[factor] == a], f[f[factor] == c]
    ka, kc = int(xa[col].sum()), int(xc[col].sum())
    diff, lo, hi = proportion_difference(ka, len(xa), kc, len(xc))
    p = float(stats.fisher_exact([[ka, len(xa) - ka], [kc, len(xc) - kc]]).pvalue) if len(xa) and len(xc) else \
        math.nan
    return Separation(a, c, si, diff, lo, hi, False, p)
