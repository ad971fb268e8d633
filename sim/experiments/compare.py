"""Cross-rule-set doctrine comparison: is a doctrine's advantage an artefact of the combat table?

A **comparison file** is an experiment file (:mod:`sim.experiments.design`) with one factor ``ruleset`` whose
levels name a rule set and the scenario(s) to play it on, instead of a ``scenario``::

    name: ruleset_comparison
    factors:
      - name: ruleset
        path: ruleset
        levels:
          - {ruleset: panzer_squadron, scenario: skirmish_2v2}
          - {ruleset: asl, scenario: asl_1941_meeting}
          - {ruleset: hummel_quest, scenario: [hq_skirmish]}   # one scenario or a list
          # a bare rule-set name plays its DEFAULT_SCENARIOS entry
      - {name: doctrine, path: sides.0.policy.name, levels: [hold, advance, flank]}
    overrides: {sides.1.policy.name: advance}
    replications: 10
    seed: 1
    doctrine: doctrine             # optional: the factor compared (default: the first `*.policy.name` factor)

Each (rule set, scenario) **cell** is an ordinary experiment (the file without the ``ruleset`` factor, with that
``scenario``), played and stored by :mod:`sim.experiments.batch` in ``OUT/cells/<ruleset>-<scenario>/``
(resumable, verified, as ``tanksim batch``).  ``common_random_numbers`` is always on: replication ``r`` uses the
same seed in every cell, so battles are paired across doctrines *and* rule sets, and replications are the
independent units of every interval here.

The analysis reads every cell through :func:`sim.experiments.analysis.outcomes`, from the point of view of the
side the doctrine factor sets (``win`` = that side won; a draw is not a win), stacks them with the columns
``ruleset`` and ``scenario``, and answers with the analysis module's own statistics:

* **Doctrine x rule-set interaction**: :func:`sim.experiments.analysis.interactions` of the doctrine and
  ``ruleset`` factors on ``win`` (``m_dr - m_d. - m_.r + m_..``, t interval over replications), and the
  interaction's share of the variance with its F test (:func:`sim.experiments.analysis.importance`: OLS type II
  ANOVA with the replication as a block).
* **Kendall's tau** (``scipy.stats.kendalltau``, tau-b: ties count) between the doctrine orderings of every pair
  of rule sets, the ordering being the doctrines' win rates under that rule set (pooled over its scenarios and the
  other factors); 95 % percentile interval from :data:`RESAMPLES` bootstrap resamples of the battles, whole
  replications at a time (:func:`sim.experiments.analysis.bootstrap_indices`, fixed seed), and the bootstrap
  probability that tau > 0.  A resample in which a rule set's win rates are all equal has no tau; the interval is
  over the others and the count of such resamples is reported (``undefined``).
* **Robust doctrine**: regret of doctrine d under rule set r is the best doctrine's win rate there minus d's; the
  robust doctrine has the smallest worst-case (maximum over rule sets) regret (Savage's minimax-regret rule).  With
  its bootstrap interval per doctrine and the probability that each doctrine is the robust one (a tie shares a
  resample).  A tied best (or robust) doctrine is reported as a tie: ``best_tied`` / ``robust_tied`` list every
  doctrine sharing the best value in file order (``best`` / ``robust`` keep the first; rates and regrets are
  compared as exact fractions of the counts, so 1/2 - 1/3 ties 2/3 - 1/2); the printed summary says
  ``tie between ...`` and writes a quantity with no value as ``undefined: no variation``, never ``None``/``nan``.

Decisions where the issue is silent: the outcome is the win rate of the doctrine's side (the report's ``win``);
rule sets weigh equally whatever their number of scenarios (a rule set's win rate is the mean over its scenarios'
cell win rates); a scenario nested in a rule set is not a factor of the ANOVA (its differences are part of the
rule-set term and the residual).
"""
from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from sim.experiments import analysis, batch, store
from sim.experiments.design import Experiment, experiment_from_mapping, read_yaml_file
from sim.scenario import ScenarioError

#: The factor path (and default name) of the rule-set factor.
RULESET = "ruleset"
#: The scenario a bare rule-set name in the ``ruleset`` factor plays.
DEFAULT_SCENARIOS = {"panzer_squadron": "skirmish_2v2", "asl": "asl_1941_meeting", "hummel_quest": "hq_skirmish"}
#: Bootstrap resamples of the tau intervals and the robust doctrine.
RESAMPLES = 1000
#: Resamples of the importance (variance share) interval: fewer, since each refits the ANOVA sums of squares.
IMPORTANCE_RESAMPLES = 200
#: What a comparison file may hold besides experiment fields.
EXTRA_KEYS = ("doctrine",)


@dataclass(frozen=True)
class Cell:
    """One (rule set, scenario) cell: ``ruleset``, ``scenario`` (as named in the file), ``key`` (its folder name
    under ``OUT/cells/``) and the resolved ``experiment``."""

    ruleset: str
    scenario: str
    key: str
    experiment: Experiment


@dataclass(frozen=True)
class Comparison:
    """A loaded comparison file: ``name``, ``source``, ``doctrine`` (the compared factor's name), its ``levels``
    (labels in file order), ``rulesets`` (in file order) and the ``cells``."""

    name: str
    source: str
    doctrine: str
    levels: tuple[str, ...]
    rulesets: tuple[str, ...]
    cells: tuple[Cell, ...]


def _slug(text: str) -> str:
    stem = Path(text).name
    stem = stem[:-5] if stem.endswith(".yaml") else stem[:-4] if stem.endswith(".yml") else stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:60] or "scenario"


def load_comparison(path: str | Path) -> Comparison:
    """Load a comparison file (a path or a bundled name).  Raises :class:`ScenarioError` (``FILE: field: what was
    expected``) for any problem, ``FileNotFoundError`` for a missing file."""
    src, data, base_dir = read_yaml_file(path, "comparison")
    return comparison_from_mapping(data, src, base_dir)


def comparison_from_mapping(data: Any, src: str = "<comparison>", base_dir: str | Path = ".") -> Comparison:
    """Validate a comparison given as a mapping (see the module docstring) and resolve one experiment per cell.

    Raises :class:`ScenarioError`: no or several ``ruleset`` factors, a level that is neither a rule-set name nor
    ``{ruleset, scenario}``, an unknown rule set, a scenario of another rule set, ``common_random_numbers: false``,
    no doctrine factor, and any error of the cell experiments (prefixed by the cell)."""
    from sim.rules import base as rules_base

    if not isinstance(data, Mapping):
        raise ScenarioError([f"{src}: (top level): expected a mapping of comparison fields, got "
                             f"{type(data).__name__}"])
    data = copy.deepcopy(dict(data))
    errors: list[str] = []
    factors = data.get("factors")
    if not isinstance(factors, list):
        raise ScenarioError([f"{src}: factors: expected a list with one factor of path 'ruleset' "
                             f"(levels: rule sets and their scenarios)"])
    at = [i for i, f in enumerate(factors) if isinstance(f, Mapping) and f.get("path") == RULESET]
    if len(at) != 1:
        raise ScenarioError([f"{src}: factors: expected exactly one factor with path 'ruleset', found {len(at)}"])
    fi = at[0]
    rs_factor = factors.pop(fi)
    if "scenario" in data:
        errors.append(f"{src}: scenario: a comparison takes its scenarios from the ruleset factor's levels; "
                      f"remove 'scenario'")
    if data.get("common_random_numbers", True) is not True:
        errors.append(f"{src}: common_random_numbers: expected true (or absent): a comparison pairs battles "
                      f"across rule sets by replication")
    data["common_random_numbers"] = True
    doctrine = data.pop("doctrine", None)
    known = set(rules_base.names())
    levels = rs_factor.get("levels")
    if not isinstance(levels, list) or not levels:
        errors.append(f"{src}: factors[{fi}].levels: expected a list of rule sets (a name, or "
                      f"{{ruleset: NAME, scenario: FILE or [FILE, ...]}})")
        levels = []
    plan: list[tuple[str, str]] = []
    for j, lv in enumerate(levels):
        where = f"{src}: factors[{fi}].levels[{j}]"
        if isinstance(lv, str):
            name, scen = lv, DEFAULT_SCENARIOS.get(lv)
            scenarios = [scen] if scen else []
        elif isinstance(lv, Mapping) and set(lv) <= {"ruleset", "scenario"} and "ruleset" in lv:
            name = lv["ruleset"]
            raw = lv.get("scenario", DEFAULT_SCENARIOS.get(str(name)))
            scenarios = raw if isinstance(raw, list) else [raw]
        else:
            errors.append(f"{where}: expected a rule-set name or a mapping {{ruleset: NAME, scenario: FILE or "
                          f"[FILE, ...]}}")
            continue
        if not isinstance(name, str) or name not in known:
            errors.append(f"{where}.ruleset: expected one of {', '.join(sorted(known))}, got {name!r}")
            continue
        if any(n == name for n, _ in plan):
            errors.append(f"{where}.ruleset: rule set {name} is listed twice (give it a list of scenarios)")
            continue
        if not scenarios or not all(isinstance(s, str) and s for s in scenarios):
            errors.append(f"{where}.scenario: expected a scenario file or bundled name (or a non-empty list)")
            continue
        plan.extend((name, s) for s in scenarios)
    if errors:
        raise ScenarioError(errors)
    rulesets = tuple(dict.fromkeys(n for n, _ in plan))
    if len(rulesets) < 2:
        raise ScenarioError([f"{src}: factors[{fi}].levels: expected at least two rule sets to compare"])
    policy_factors = [f for f in factors if isinstance(f, Mapping) and str(f.get("path", "")).endswith(".policy.name")]
    names = [str(f.get("name") or str(f.get("path", "")).removeprefix("sides.")) for f in policy_factors]
    if doctrine is None:
        if not names:
            raise ScenarioError([f"{src}: factors: expected a doctrine factor (path sides.X.policy.name)"])
        doctrine = names[0]
    elif doctrine not in names:
        raise ScenarioError([f"{src}: doctrine: expected the name of a factor with path sides.X.policy.name "
                             f"({', '.join(names) or 'none in this file'}), got {doctrine!r}"])
    cells = []
    base_name = str(data.get("name", "comparison"))
    seen_keys: set[str] = set()
    for name, scen in plan:
        key = f"{name}-{_slug(scen)}"
        while key in seen_keys:
            key += "_"
        seen_keys.add(key)
        sub = copy.deepcopy(data)
        sub["scenario"] = scen
        sub["name"] = f"{base_name}-{key}"[:64]
        exp = experiment_from_mapping(sub, f"{src} [{name} / {scen}]", base_dir)
        got = exp.base_data.get("ruleset", "panzer_squadron")
        got = got.get("name") if isinstance(got, Mapping) else got
        if got != name:
            raise ScenarioError([f"{src}: factors[{fi}].levels: scenario {scen} plays rule set {got}, not {name}"])
        cells.append(Cell(name, scen, key, exp))
    fac = next(f for f in cells[0].experiment.factors if f.name == doctrine)
    lv_labels = tuple(analysis._label(v) for v in fac.values)
    return Comparison(base_name, src, doctrine, lv_labels, rulesets, tuple(cells))


# --- playing -------------------------------------------------------------------------------------------------------

def cell_folder(out: str | Path, cell: Cell) -> Path:
    return Path(out) / "cells" / cell.key


def run_comparison(comp: Comparison, out: str | Path, *, workers: int | None = None, new: bool = False,
                   progress: bool = False, watchdog_s: float | None = None) -> list[batch.BatchSummary]:
    """Play (or complete) every cell's battles into ``OUT/cells/<key>/`` with one executor for all cells; writes
    ``OUT/comparison.json`` (the cells).  Returns each started cell's :class:`sim.experiments.batch.BatchSummary`:
    after an interrupted cell (Ctrl-C or SIGTERM; its last summary has ``interrupted``) no later cell is started,
    and running the comparison again completes it.  Raises as :func:`sim.experiments.batch.execute`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    other = store.other_results(out, "comparison.json")
    if other:
        raise batch.BatchRefused(f"{out}: holds other results ({other}); choose another --out folder")
    # written first, so a folder whose cells are still playing (or were interrupted) is marked as a comparison's
    doc = {"name": comp.name, "source": comp.source, "doctrine": comp.doctrine, "levels": list(comp.levels),
           "rulesets": list(comp.rulesets),
           "cells": [{"ruleset": c.ruleset, "scenario": c.scenario, "key": c.key} for c in comp.cells]}
    (out / "comparison.json").write_text(json.dumps(doc, indent=1) + "\n")
    summaries = []
    with batch.open_executor(workers) as pool:
        for cell in comp.cells:
            summaries.append(batch.execute(cell.experiment, cell_folder(out, cell), new=new, progress=progress,
                                           watchdog_s=watchdog_s, pool=pool))
            if summaries[-1].interrupted:  # Ctrl-C closed the shared pool: the later cells wait for the rerun
                break
    return summaries


# --- the table of battles --------------------------------------------------------------------------------------------

def battles(comp: Comparison, out: str | Path) -> analysis.Battles:
    """Every cell's finished battles stacked, from the doctrine side's point of view, as one
    :class:`sim.experiments.analysis.Battles` with the extra categorical factor ``ruleset`` (and the column
    ``scenario``); ``point_key`` is prefixed by the cell.  Raises ``ValueError`` when a cell has no finished
    battle (play it first)."""
    frames: list[pd.DataFrame] = []
    first: list[analysis.FactorView] = []
    for cell in comp.cells:
        folder = cell_folder(out, cell)
        manifest = batch.read_manifest(folder)
        runs = batch.load_runs(folder)
        fac = next(f for f in manifest["design"]["factors"] if f["name"] == comp.doctrine)
        side = analysis._owner(fac.get("path"))
        b = analysis.outcomes(runs, manifest, side=side if side is not None else 0)
        if not len(b.frame):
            raise ValueError(f"{folder}: no finished battle; run tanksim compare-rulesets first")
        f = b.frame.copy()
        f["point_key"] = cell.key + "/" + f["point_key"].astype(str)
        f[RULESET] = cell.ruleset
        f["scenario"] = cell.scenario
        frames.append(f)
        if not first:
            first = list(b.factors)
    frame = pd.concat(frames, ignore_index=True)
    views = []
    for v in first:  # owners dropped: ``win`` is already the doctrine side's; the doctrine's levels in file order
        levels = v.levels
        if v.kind == "categorical" and v.name == comp.doctrine:
            present = set(frame[v.name].dropna())
            levels = tuple(x for x in comp.levels if x in present)
        views.append(analysis.FactorView(v.name, v.kind, levels, None))
    views.append(analysis.FactorView(RULESET, "categorical", comp.rulesets, None))
    manifest = {"design": {"factors": [], "experiment": {"common_random_numbers": True,
                                                         "design": {"kind": "full_factorial"}}}}
    return analysis.Battles(frame, views, ["doctrine side", "opponent"], 0, True, "full_factorial", manifest)


def _codes(b: analysis.Battles, comp: Comparison) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per battle: the (rule set, scenario) cell index, the doctrine index, and per cell its rule-set index."""
    f = b.frame
    cells = list(dict.fromkeys(zip(f[RULESET], f["scenario"])))
    cell_ix = pd.Series(range(len(cells)), index=pd.MultiIndex.from_tuples(cells))
    ci = cell_ix.loc[list(zip(f[RULESET], f["scenario"]))].to_numpy()
    di = f[comp.doctrine].map({v: k for k, v in enumerate(comp.levels)}).to_numpy()
    rs_of_cell = np.array([comp.rulesets.index(r) for r, _ in cells])
    return ci, di, rs_of_cell, len(cells)


def score_fractions(win: np.ndarray, ci: np.ndarray, di: np.ndarray, rs_of_cell: np.ndarray, n_cells: int,
                    n_doctrines: int, n_rulesets: int, rows: np.ndarray | None = None) -> list[list[Fraction | None]]:
    """Win rates as exact fractions, ``[rule set][doctrine]``: per (cell, doctrine) wins / battles of the battles
    ``rows`` (all by default; ``win`` is 0 or 1 per battle), then the unweighted mean over a rule set's cells that
    have a battle of the doctrine (``None`` where it has none).  Exact, so that two equal rates (1/3 + 1/2 and 5/6)
    compare equal: every ranking and tie of a comparison is decided on these, never on rounded floats."""
    idx = np.arange(len(win)) if rows is None else rows
    k = ci[idx] * n_doctrines + di[idx]
    n = np.bincount(k, minlength=n_cells * n_doctrines).reshape(n_cells, n_doctrines)
    s = np.bincount(k, weights=win[idx], minlength=n_cells * n_doctrines).reshape(n_cells, n_doctrines)
    out: list[list[Fraction | None]] = []
    for r in range(n_rulesets):
        cells = np.flatnonzero(rs_of_cell == r)
        row: list[Fraction | None] = []
        for d in range(n_doctrines):
            rates = [Fraction(round(float(s[c, d])), int(n[c, d])) for c in cells if n[c, d] > 0]
            row.append(sum(rates, Fraction(0)) / len(rates) if rates else None)
        out.append(row)
    return out


def _floats(rows: Sequence[Sequence[Fraction | None]]) -> np.ndarray:
    """Exact values (``None``: undefined) as a float array (``nan``), each the float nearest its fraction."""
    return np.array([[math.nan if v is None else float(v) for v in row] for row in rows], dtype=float)


def score_matrix(win: np.ndarray, ci: np.ndarray, di: np.ndarray, rs_of_cell: np.ndarray, n_cells: int,
                 n_doctrines: int, n_rulesets: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Win rates, shape ``(rule sets, doctrines)``: :func:`score_fractions` as floats (``nan`` where a doctrine
    has no battle)."""
    return _floats(score_fractions(win, ci, di, rs_of_cell, n_cells, n_doctrines, n_rulesets, rows))


def worst_regret(scores: np.ndarray) -> np.ndarray:
    """Per doctrine (column) the largest regret over rule sets (rows): ``max_r (max_d' S[r, d'] - S[r, d])``."""
    return np.nanmax(np.nanmax(scores, axis=1, keepdims=True) - scores, axis=0)


def regrets_exact(scores: Sequence[Sequence[Fraction | None]]) -> list[list[Fraction | None]]:
    """Exact regrets ``[rule set][doctrine]``: the rule set's best win rate minus the doctrine's (``None`` where
    the doctrine has no rate)."""
    out: list[list[Fraction | None]] = []
    for row in scores:
        ok = [v for v in row if v is not None]
        top = max(ok) if ok else None
        out.append([None if v is None or top is None else top - v for v in row])
    return out


def worst_regret_exact(scores: Sequence[Sequence[Fraction | None]]) -> list[Fraction | None]:
    """:func:`worst_regret` in exact fractions: per doctrine the largest regret over the rule sets where it has
    a win rate (``None`` where it has none anywhere)."""
    reg = regrets_exact(scores)
    out: list[Fraction | None] = []
    for d in range(len(scores[0]) if scores else 0):
        ok = [row[d] for row in reg if row[d] is not None]
        out.append(max(ok) if ok else None)  # type: ignore[type-var]
    return out


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.kendalltau(x, y).statistic)


def analyse(comp: Comparison, out: str | Path, resamples: int = RESAMPLES, seed: int = analysis.BOOTSTRAP_SEED,
            importance_resamples: int = IMPORTANCE_RESAMPLES) -> dict[str, Any]:
    """The comparison's answer as a JSON-able dict (see the module docstring): ``win_rates`` (per rule set and
    doctrine, Wilson interval over its battles), ``best`` per rule set, ``interaction`` (per doctrine x rule set
    cell) and ``interaction_anova`` (share of variance, interval, p value), ``kendall_tau`` (per pair of rule sets:
    tau, interval, P(tau > 0), undefined resamples), ``regret`` (per doctrine: regret under each rule set, worst
    case with interval, P(robust)) and ``robust`` (the doctrine with the smallest worst-case regret)."""
    b = battles(comp, out)
    f = b.frame
    win = f["win"].to_numpy(dtype=float)
    ci, di, rs_of_cell, n_cells = _codes(b, comp)
    nd, nr = len(comp.levels), len(comp.rulesets)
    F = score_fractions(win, ci, di, rs_of_cell, n_cells, nd, nr)  # exact: ranks and ties are decided on these
    S = _floats(F)
    idx = analysis.bootstrap_indices(b, resamples, seed)
    boot_f = [score_fractions(win, ci, di, rs_of_cell, n_cells, nd, nr, r) for r in idx]
    boot = np.array([_floats(x) for x in boot_f])
    rates = []
    for r, rs in enumerate(comp.rulesets):
        for d, dl in enumerate(comp.levels):
            m = (f[RULESET] == rs).to_numpy() & (di == d)
            lo, hi = analysis.wilson(int(win[m].sum()), int(m.sum()))
            rates.append({"ruleset": rs, "doctrine": dl, "battles": int(m.sum()), "win_rate": float(S[r, d]),
                          "lo": lo, "hi": hi})
    best_tied = {rs: tied(F[r], comp.levels, max) for r, rs in enumerate(comp.rulesets)}
    best = {rs: (best_tied[rs] or [comp.levels[0]])[0] for rs in comp.rulesets}
    # interaction: the analysis module's contrast with t intervals over replications
    inter = analysis.interactions(b)
    pair = inter[(inter["outcome"] == "win") & (((inter["factor_a"] == comp.doctrine) & (inter["factor_b"] == RULESET))
                                                 | ((inter["factor_a"] == RULESET)
                                                    & (inter["factor_b"] == comp.doctrine)))]
    cells = []
    for _, row in pair.iterrows():
        dl, rs = ((row["level_a"], row["level_b"]) if row["factor_a"] == comp.doctrine
                  else (row["level_b"], row["level_a"]))
        cells.append({"doctrine": dl, "ruleset": rs, "win_rate": row["cell"], "interaction": row["interaction"],
                      "lo": row["lo"], "hi": row["hi"],
                      "excludes_zero": bool(row["lo"] > 0 or row["hi"] < 0)})
    imp, _ = analysis.importance(b, resamples=importance_resamples, seed=seed)
    imp = imp[imp["outcome"] == "win"]
    anova = []
    for _, row in imp.iterrows():
        anova.append({"term": row["term"], "share": row["share"], "lo": row["lo"], "hi": row["hi"],
                      "p_value": row["p_value"],
                      "is_interaction": str(row["term"]) in (f"{comp.doctrine} x {RULESET}",
                                                             f"{RULESET} x {comp.doctrine}")})
    # Kendall tau between every pair of rule sets
    taus = []
    for a in range(nr):
        for c in range(a + 1, nr):
            t = _tau(S[a], S[c])
            bt = np.array([_tau(x[a], x[c]) for x in boot]) if len(boot) else np.array([])
            ok = bt[~np.isnan(bt)]
            lo, hi = (np.percentile(ok, [2.5, 97.5]) if len(ok) else (math.nan, math.nan))
            res = stats.kendalltau(S[a], S[c]) if not math.isnan(t) else None
            taus.append({"ruleset_a": comp.rulesets[a], "ruleset_b": comp.rulesets[c], "tau": t,
                         "lo": float(lo), "hi": float(hi), "p_positive": float(np.mean(ok > 0)) if len(ok) else None,
                         "p_value": float(res.pvalue) if res is not None else None,
                         "undefined": int(len(bt) - len(ok)), "resamples": int(len(bt))})
    # regret
    WF = worst_regret_exact(F)
    W = _floats([WF])[0]
    bw_f = [worst_regret_exact(x) for x in boot_f]
    bw = _floats(bw_f) if bw_f else np.empty((0, nd))
    p_robust = np.zeros(nd)
    for resample in bw_f:  # one bootstrap resample's exact worst-case regrets, per doctrine
        winners = [d for d, lev in enumerate(comp.levels) if lev in tied(resample, comp.levels, min)]
        for d in winners:
            p_robust[d] += 1.0 / len(winners)
    p_robust = p_robust / len(bw) if len(bw) else np.full(nd, np.nan)
    reg = regrets_exact(F)
    regret = []
    for d, dl in enumerate(comp.levels):
        lo, hi = np.nanpercentile(bw[:, d], [2.5, 97.5]) if len(bw) else (math.nan, math.nan)
        regret.append({"doctrine": dl, "regret": {rs: float(_floats([[reg[r][d]]])[0, 0])
                                                  for r, rs in enumerate(comp.rulesets)},
                       "worst_case": float(W[d]), "lo": float(lo), "hi": float(hi), "p_robust": float(p_robust[d])})
    robust_tied = tied(WF, comp.levels, min)
    robust = (robust_tied or [comp.levels[0]])[0]
    return {"name": comp.name, "source": comp.source, "doctrine_factor": comp.doctrine, "doctrines": list(comp.levels),
            "rulesets": list(comp.rulesets),
            "cells": [{"ruleset": c.ruleset, "scenario": c.scenario, "key": c.key,
                       "battles": int(((f[RULESET] == c.ruleset) & (f["scenario"] == c.scenario)).sum())}
                      for c in comp.cells],
            "battles": int(len(f)), "replications": int(f["rep"].nunique()),
            "outcome": "win rate of the doctrine's side (a draw is not a win)",
            "resample_unit": analysis.resample_unit(b), "resamples": resamples, "bootstrap_seed": seed,
            "win_rates": rates, "best": best, "best_tied": best_tied, "interaction": cells,
            "interaction_anova": anova, "kendall_tau": taus, "regret": regret, "robust": robust,
            "robust_tied": robust_tied}


def tied(values: Sequence[Any], levels: Sequence[str], pick: Any) -> list[str]:
    """Every level whose value equals the best one (``pick`` is :func:`max` or :func:`min`; ``None`` and NaN
    values are left out), in file order: one level when the best is unique, several on a tie (the ``best`` /
    ``robust`` entry is then the first of them, by file order).  Give exact values (:func:`score_fractions`,
    :func:`worst_regret_exact`): floats that stand for one rate but were reached by different sums are not equal."""
    def defined(v: Any) -> bool:
        return v is not None and not (isinstance(v, float | np.floating) and math.isnan(float(v)))

    ok = [v for v in values if defined(v)]
    if not ok:
        return []
    top = pick(ok)
    return [lev for lev, v in zip(levels, values, strict=True) if defined(v) and v == top]


def jsonable(x: Any) -> Any:
    """NaN and infinities as ``None``, numpy scalars as Python numbers (for ``--json``)."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def undefined(x: Any) -> bool:
    """Whether a reported quantity has no value (``None`` from JSON, or NaN)."""
    return x is None or (isinstance(x, float | np.floating) and math.isnan(float(x)))


def num(x: Any, spec: str, scale: float = 1.0) -> str:
    """``x * scale`` formatted with ``spec``, or the word ``undefined`` (never ``None`` or ``nan``)."""
    return "undefined" if undefined(x) else format(scale * float(x), spec)


def pct(x: Any) -> str:
    return "-" if undefined(x) else f"{100 * float(x):.1f}%"


def _best_text(name: str, tie: Sequence[str], value: str) -> str:
    if len(tie) > 1:
        return f"tie between {', '.join(tie)} ({value} each)"
    return name


def summary_lines(doc: Mapping[str, Any]) -> list[str]:
    """The human-readable answer of :func:`analyse`."""
    lines = [f"{doc['name']}: {len(doc['doctrines'])} doctrines ({doc['doctrine_factor']}) x "
             f"{len(doc['rulesets'])} rule sets, {doc['battles']} battles, {doc['replications']} replications "
             f"(common random numbers); outcome: {doc['outcome']}"]
    lines.append("")
    lines.append("win rate by doctrine and rule set (95% Wilson interval):")
    w = max(len(d) for d in doc["doctrines"])
    lines.append("  " + " " * w + "".join(f"  {r:>22}" for r in doc["rulesets"]))
    by = {(r["doctrine"], r["ruleset"]): r for r in doc["win_rates"]}
    for d in doc["doctrines"]:
        cells = []
        for rs in doc["rulesets"]:
            r = by[(d, rs)]
            cells.append(f"  {pct(r['win_rate']):>6} [{pct(r['lo'])}, {pct(r['hi'])}]".rjust(24))
        lines.append(f"  {d:<{w}}" + "".join(cells))
    ties = doc.get("best_tied", {})
    lines.append("  best: " + "; ".join(
        f"{rs}: {_best_text(d, ties.get(rs, [d]), pct(by[(d, rs)]['win_rate']))}" for rs, d in doc["best"].items()))
    lines.append("")
    an = [a for a in doc["interaction_anova"] if a["is_interaction"]]
    lines.append("doctrine x rule-set interaction (m_dr - m_d. - m_.r + m_..; 95% t interval over replications):")
    if an:
        a = an[0]
        lines.append(f"  share of the win variance: {pct(a['share'])} [{pct(a['lo'])}, {pct(a['hi'])}], "
                     + ("F test undefined: no variation" if undefined(a["p_value"]) else
                        f"F test p = {a['p_value']:.3g}"))
    strong = [c for c in doc["interaction"] if c["excludes_zero"]]
    for c in sorted(strong, key=lambda c: -abs(c["interaction"]))[:8]:
        lines.append(f"  {c['doctrine']} under {c['ruleset']}: {num(c['interaction'], '+.1f', 100)} points "
                     f"[{num(c['lo'], '+.1f', 100)}, {num(c['hi'], '+.1f', 100)}]")
    if not strong:
        lines.append("  no cell's interval excludes 0")
    lines.append("")
    lines.append("Kendall tau between the doctrine orderings (95% bootstrap interval over replications):")
    flat = [rs for rs in doc["rulesets"] if len({by[(d, rs)]["win_rate"] for d in doc["doctrines"]}) == 1]
    for t in doc["kendall_tau"]:
        head = f"  {t['ruleset_a']} vs {t['ruleset_b']}: tau "
        if undefined(t["tau"]):
            why = [rs for rs in (t["ruleset_a"], t["ruleset_b"]) if rs in flat]
            head += "undefined: no variation"
            if why:
                head += f" (every doctrine wins {pct(by[(doc['doctrines'][0], why[0])]['win_rate'])} under {why[0]})"
        else:
            head += f"{t['tau']:+.2f}"
        if undefined(t["lo"]) or undefined(t["hi"]):
            rest = "; interval and P(tau > 0) undefined: no variation in any resample"
        else:
            rest = f" [{t['lo']:+.2f}, {t['hi']:+.2f}], P(tau > 0) = {num(t['p_positive'], '.3f')}"
            if t["undefined"]:
                rest += f", {t['undefined']} resamples undefined (no variation)"
        lines.append(head + rest)
    lines.append("")
    lines.append("worst-case regret across rule sets (best doctrine's win rate there minus this one's):")
    for r in sorted(doc["regret"], key=lambda r: r["worst_case"]):
        lines.append(f"  {r['doctrine']:<{w}}  {num(r['worst_case'], '5.1f', 100)} points [{num(r['lo'], '.1f', 100)}, "
                     f"{num(r['hi'], '.1f', 100)}]  P(robust) = {num(r['p_robust'], '.3f')}")
    worst = {r["doctrine"]: r["worst_case"] for r in doc["regret"]}
    rob = doc["robust"]
    lines.append("robust doctrine (smallest worst-case regret): "
                 + _best_text(rob, doc.get("robust_tied", [rob]), f"{num(worst.get(rob), '.1f', 100)} points"))
    return lines


def ordering(scores: Sequence[float], levels: Sequence[str]) -> list[str]:
    """Doctrines from best to worst by ``scores`` (ties in file order)."""
    return [levels[i] for i in sorted(range(len(levels)), key=lambda i: (-scores[i], i))]
