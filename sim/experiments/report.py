"""``tanksim report DIR [--plot FILE.png] [--side NAME] [--json] [--delta D]`` and ``tanksim power DIR``: what a
finished (or partial) batch says, and how many battles it needs.

Per design point: battles (finished rows; failed and timed-out rows are counted apart), each side's wins and win
rate with a Wilson 95 % interval (``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``), draws, the mean
and quartiles of turns and of each side's losses, and the loss-exchange ratio (the second side's total losses per
loss of the first side).  Main effects: the same win rates pooled over every other factor, per level of each
categorical factor, with each level's difference from the overall rate.  Then the analysis of
:mod:`sim.experiments.analysis` (:func:`analyse` returns it as a :class:`Report` of DataFrames): the answer (what
matters most, which level is best and how sure), effects on every outcome with intervals, differences between levels
(paired under common random numbers), interactions, variance shares, the probability that each level is best, quantiles,
fitted curves of continuous factors, mirror matches (side bias), power, and warnings (``docs/batch.md`` lists every
section and JSON key).  The tables are printed (or, with ``--json``, the whole report as one JSON object) and written to
``DIR/report/`` (``points``, ``effects``, ``effects_by_outcome``, ``differences``, ``interactions``, ``importance``,
``importance_comparisons``, ``best``, ``distributions``, ``curves``, ``power``: ``.csv`` and ``.parquet``;
``report.json``), and every stored battle's id (``run_key``, for ``tanksim run --from DIR --battle ID``) to
``DIR/report/runs.csv``.  ``--plot`` draws the win rate of one side with its intervals by factor level (and
``FILE-points.png`` per design point) with :func:`sim.view.render.interval_plot`, ``FILE-distributions.png`` (box plots
of survivors and duration) and, for continuous factors, ``FILE-curves.png``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import pandas as pd

from sim.experiments.analysis import (
    CONFIDENCE,
    Battles,
    FactorView,
    factor_levels,
    is_string_factor,
    side_names,
    wilson,
)
from sim.messages import PLOT_SUFFIXES, output_file, unknown_side_message

__all__ = ["CONFIDENCE", "Report", "analyse", "analyse_runs", "main", "main_effects", "point_table", "power_main",
           "side_names", "wilson"]

_levels = factor_levels
_is_string_factor = is_string_factor


def _summary(g: pd.DataFrame, names: Sequence[str]) -> dict[str, Any]:
    ok = g[g["status"] == "ok"]
    n = len(ok)
    out: dict[str, Any] = {"battles": n, "failed": int((g["status"] != "ok").sum())}
    widx = ok["winner_index"].astype("float64")
    for si, name in enumerate(names):
        k = int((widx == si).sum())
        lo, hi = wilson(k, n)
        out[f"{name}_wins"] = k
        out[f"{name}_win_rate"] = k / n if n else math.nan
        out[f"{name}_win_lo"] = lo
        out[f"{name}_win_hi"] = hi
    d = int((widx == -1).sum())
    out["draws"] = d
    out["draw_rate"] = d / n if n else math.nan
    for col, label in [("turns", "turns")] + [(f"side{i + 1}_lost", f"{nm}_lost") for i, nm in enumerate(names)]:
        x = ok[col].astype("float64")
        out[f"{label}_mean"] = float(x.mean()) if n else math.nan
        for q, qn in ((0.25, "q25"), (0.5, "median"), (0.75, "q75")):
            out[f"{label}_{qn}"] = float(x.quantile(q)) if n else math.nan
    l1, l2 = float(ok["side1_lost"].astype("float64").sum()), float(ok["side2_lost"].astype("float64").sum())
    out["loss_exchange"] = (l2 / l1) if l1 > 0 else (math.inf if l2 > 0 else math.nan)
    return out


def factor_names(manifest: Mapping[str, Any]) -> list[str]:
    return [f["name"] for f in manifest["design"]["factors"]]


def point_table(runs: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """One row per design point (design order): ``point``, ``point_key``, the factor values, then
    :func:`_summary`'s columns (``battles``, ``failed``, ``<side>_wins``, ``<side>_win_rate``, ``<side>_win_lo``,
    ``<side>_win_hi``, ``draws``, ``draw_rate``, ``turns_mean`` / ``_q25`` / ``_median`` / ``_q75``, the same for
    ``<side>_lost``, ``loss_exchange``).  Points without a stored run have ``battles == 0``."""
    names = side_names(manifest, runs)
    rows = []
    for p in manifest["design"]["points"]:
        g = runs[runs["point_key"] == p["key"]]
        vals = {k: _stored_value(manifest, k, v) for k, v in p["values"].items()}
        rows.append({"point": p["index"], "point_key": p["key"], **vals, **_summary(g, names)})
    return pd.DataFrame(rows)


def _stored_value(manifest: Mapping[str, Any], name: str, v: Any) -> Any:
    """A factor value as its results column holds it (text, canonical JSON for non-strings, when the column is
    text), so mixed-type levels compare and save (Parquet) without errors."""
    fac = next((f for f in manifest["design"].get("factors", []) if f["name"] == name), None)
    if fac is not None and _is_string_factor(manifest, fac) and not isinstance(v, str) and v is not None:
        return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
    return v


def _label(v: Any) -> str:
    v = v.item() if hasattr(v, "item") else v
    return v if isinstance(v, str) else json.dumps(v)


def main_effects(runs: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """Main effects: per factor and level, the pooled summary (as in :func:`point_table`) and
    ``<side>_effect`` = the level's win rate minus the overall win rate of that side.  First row per factor order:
    an ``(all)`` row for the whole batch."""
    names = side_names(manifest, runs)
    overall = _summary(runs, names)
    rows = [{"factor": "(all)", "level": "(all)", **overall}]
    for fac in manifest["design"]["factors"]:
        col, order = _levels(runs, fac, manifest)
        for lv in order:  # a continuous factor has none: see the curves of analyse()
            g = runs[col == lv]
            s = _summary(g, names)
            for nm in names:
                s[f"{nm}_effect"] = s[f"{nm}_win_rate"] - overall[f"{nm}_win_rate"]
            rows.append({"factor": fac["name"], "level": _label(lv), **s})
    return pd.DataFrame(rows)


def _pct(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def _printable(df: pd.DataFrame, names: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    out = df[list(keys)].copy()
    out["battles"] = df["battles"]
    if df["failed"].any():
        out["failed"] = df["failed"]
    for nm in names:
        out[f"{nm} win % [95% CI]"] = [f"{_pct(r)} [{_pct(lo)}, {_pct(hi)}]" for r, lo, hi in
                                       zip(df[f"{nm}_win_rate"], df[f"{nm}_win_lo"], df[f"{nm}_win_hi"])]
    out["draw %"] = [_pct(x) for x in df["draw_rate"]]
    out["turns mean (q25-q75)"] = [f"{m:.1f} ({a:g}-{b:g})" if not math.isnan(m) else "-" for m, a, b in
                                   zip(df["turns_mean"], df["turns_q25"], df["turns_q75"])]
    for nm in names:
        out[f"{nm} lost"] = [f"{x:.2f}" if not math.isnan(x) else "-" for x in df[f"{nm}_lost_mean"]]
    out["exchange"] = [f"{x:.2f}" if np.isfinite(x) else str(x) for x in df["loss_exchange"]]
    return out


def plot(path: str | Path, points: pd.DataFrame, effects: pd.DataFrame, manifest: Mapping[str, Any],
         side: str) -> list[Path]:
    """Win rate of ``side`` with Wilson intervals: by factor level (``path``) and, for more than one design point,
    by design point (``<path stem>-points<suffix>``).  Returns the files written."""
    from sim.view.render import interval_plot

    path = Path(path)
    name = manifest["design"]["experiment"].get("name", "experiment")
    written = []
    eff = effects[effects["factor"] != "(all)"]
    if eff.empty:
        eff = effects
    labels = [f"{f}={lv}" if f != "(all)" else "all battles" for f, lv in zip(eff["factor"], eff["level"])]
    overall = float(effects.iloc[0][f"{side}_win_rate"])
    interval_plot(str(path), labels, list(eff[f"{side}_win_rate"]), list(eff[f"{side}_win_lo"]),
                  list(eff[f"{side}_win_hi"]), title=f"{name}: {side} win rate by factor level (95% Wilson)",
                  xlabel="factor = level", ylabel=f"{side} win rate",
                  reference=None if math.isnan(overall) else overall)
    written.append(path)
    facs = factor_names(manifest)
    if len(points) > 1 and facs:
        p2 = path.with_name(f"{path.stem}-points{path.suffix or '.png'}")
        labels = [", ".join(f"{points.iloc[i][f]}" for f in facs) for i in range(len(points))]
        interval_plot(str(p2), labels, list(points[f"{side}_win_rate"]), list(points[f"{side}_win_lo"]),
                      list(points[f"{side}_win_hi"]),
                      title=f"{name}: {side} win rate per design point (95% Wilson)",
                      xlabel=" x ".join(facs), ylabel=f"{side} win rate",
                      reference=None if math.isnan(overall) else overall)
        written.append(p2)
    return written


def plot_format_problem(path: str | Path) -> str | None:
    """``None`` when matplotlib can write ``path``'s format (by its suffix; none means PNG), else a message
    listing the formats it can write."""
    from matplotlib.figure import Figure

    kinds = Figure().canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lstrip(".").lower()
    if not suffix or suffix in kinds:
        return None
    return f"unsupported image format {suffix!r}; expected one of {', '.join(sorted(kinds))}"


def battle_ids(runs: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """One row per stored battle of the current design: ``point``, the factor values, ``rep``, ``seed``,
    ``run_key`` (the id for ``tanksim run --from DIR --battle ID``), ``status``, ``winner``, ``turns``,
    ``error``; sorted by point then replication."""
    facs = [f for f in factor_names(manifest) if f in runs.columns]
    cols = ["point", *facs, "rep", "seed", "run_key", "status", "winner", "turns", "error"]
    have = [c for c in cols if c in runs.columns]
    return runs[have].reset_index(drop=True)


def build(out_dir: str | Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(manifest, runs, points, effects)`` for a results folder, after verifying it
    (:func:`sim.experiments.store.verified_manifest`: the manifest's hashes, every runs, events and series part by
    SHA-256).  Raises ``FileNotFoundError``, :class:`sim.experiments.store.CorruptResults` naming each bad file."""
    from sim.experiments.store import load_runs, read_manifest

    runs = load_runs(out_dir)  # verifies the folder first
    manifest = read_manifest(out_dir)
    return manifest, runs, point_table(runs, manifest), main_effects(runs, manifest)


def _side_index(arg: str | None, names: Sequence[str]) -> int | None:
    """``--side`` (a name in any case where unambiguous, 1 or 2) as a side index; ``None`` when it names no side."""
    from sim.messages import match_name

    if not arg:
        return 0
    if arg in ("1", "2"):
        return int(arg) - 1
    return match_name(arg, list(names))


def nothing_stored(command: str, folder: str | Path) -> str:
    """The one line ``tanksim report`` and ``tanksim power`` refuse a results folder with no battle stored with
    (exit 2): what is wrong and how to fill it."""
    return (f"tanksim {command}: {folder}: no battle stored yet; play them with tanksim batch EXPERIMENT.yaml "
            f"--out {folder}, then run tanksim {command} {folder} again")


def main(argv: Sequence[str] | None = None) -> int:
    """``tanksim report``; exit 0, or 2 for a folder that is not a batch's results, holds no battle yet
    (:func:`nothing_stored`) or fails verification (each bad file named), an unknown ``--side`` or a ``--plot``
    file whose format matplotlib cannot write."""
    ap = argparse.ArgumentParser(prog="tanksim report", description="What a batch says: win rates with Wilson "
                                 "95% intervals per design point; per factor the effect on win rate, loss-exchange "
                                 "ratio, survivors and duration with intervals; paired differences (common random "
                                 "numbers); interactions; variance shares; the best level with its probability; "
                                 "quantiles; fitted curves for continuous factors; mirror matches; power.")
    ap.add_argument("dir", help="results folder written by 'tanksim batch'")
    ap.add_argument("--plot", type=output_file(PLOT_SUFFIXES),
                    help="draw win rates with intervals by factor level to this image file (and "
                                   "FILE-points, FILE-distributions, FILE-curves beside it)")
    ap.add_argument("--side", help="the focus side: outcomes are its wins, survivors, losses (name or 1/2; default "
                                   "the first side)")
    ap.add_argument("--json", action="store_true", help="print the whole report as one JSON object instead")
    ap.add_argument("--delta", type=float, default=DEFAULT_DELTA,
                    help=f"difference in win rate for the power section (default {DEFAULT_DELTA})")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.plot:
        problem = plot_format_problem(args.plot)
        if problem:
            print(f"tanksim report: --plot {args.plot}: {problem}", file=sys.stderr)
            return 2
    from sim.experiments.store import CorruptResults, lock_holder

    if not 0 < args.delta <= 1:
        print(f"tanksim report: --delta {args.delta}: expected a difference in win rate in (0, 1]", file=sys.stderr)
        return 2
    try:
        manifest, runs, points, effects = build(args.dir)
    except FileNotFoundError as exc:
        print(f"tanksim report: {exc}", file=sys.stderr)
        return 2
    except CorruptResults as exc:
        print("\n".join(f"tanksim report: {p}" for p in exc.problems), file=sys.stderr)
        if exc.hint:
            print(f"tanksim report: {exc.hint}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # a last line of defence
        print(f"tanksim report: {args.dir}: cannot summarise these results ({type(exc).__name__}: "
              f"{str(exc)[:200]}); is it a batch results folder of this tanksim version?", file=sys.stderr)
        return 2
    if not len(runs):
        print(nothing_stored("report", args.dir), file=sys.stderr)
        return 2
    holder = lock_holder(args.dir)
    if holder:
        print(f"tanksim report: {args.dir}: in use by {holder}: a batch is still writing it; this report covers "
              f"the battles stored so far", file=sys.stderr)
    names = side_names(manifest, runs)
    si = _side_index(args.side, names)
    if si is None:
        print(f"tanksim report: --side {args.side!r}: {unknown_side_message(args.side, names)}", file=sys.stderr)
        return 2
    side = names[si]
    rep = analyse_runs(runs, manifest, si, args.delta, points=points, main=effects)
    rdir = Path(args.dir) / "report"
    rdir.mkdir(exist_ok=True)
    for df, stem in ((points, "points"), (effects, "effects")):
        df.to_csv(rdir / f"{stem}.csv", index=False)
        df.to_parquet(rdir / f"{stem}.parquet", index=False)
    for name in Report.TABLES:
        if name == "points":
            continue
        df = getattr(rep, name)
        stem = "effects_by_outcome" if name == "effects" else name
        df.to_csv(rdir / f"{stem}.csv", index=False)
        if len(df.columns):
            df.to_parquet(rdir / f"{stem}.parquet", index=False)
    doc = rep.to_json()
    (rdir / "report.json").write_text(json.dumps(doc, indent=1, allow_nan=False), encoding="utf-8")
    ids = battle_ids(runs, manifest)
    ids.to_csv(rdir / "runs.csv", index=False)
    files = plot(args.plot, points, effects, manifest, side) + plot_more(args.plot, rep) if args.plot else []
    if args.json:
        print(json.dumps(doc, indent=1, allow_nan=False))
        return 0
    d = manifest["design"]
    exp = d["experiment"]
    total, ok = d["n_runs"], int(points["battles"].sum())
    failed = int(points["failed"].sum())
    print(f"{exp.get('name')}: {d['scenario']['source']} ({len(d['points'])} design points x "
          f"{d['replications']} replications = {total} runs; stored {ok + failed}"
          + (f", of which {failed} failed" if failed else "") + ")"
          + (", common random numbers" if rep.battles.crn else ""))
    facs = factor_names(manifest)
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_colwidth", 60):
        print("\nper design point:")
        print(_printable(points, names, facs or ["point"]).to_string(index=False))
        print("\nmain effects (pooled over the other factors; effect = level win rate - overall):")
        eff = _printable(effects, names, ["factor", "level"])
        for nm in names:
            eff[f"{nm} effect"] = [f"{100 * x:+.1f}" if isinstance(x, float) and not math.isnan(x) else "" for x in
                                   effects.get(f"{nm}_effect", pd.Series([math.nan] * len(effects)))]
        print(eff.to_string(index=False))
        print_sections(rep)
    print(f"\ntables: {rdir}/ (points, effects, effects_by_outcome, differences, interactions, importance, best, "
          f"distributions, curves, power: .csv and .parquet; report.json)")
    if len(ids):
        ex = ids.iloc[0]
        print(f"battle ids: {rdir / 'runs.csv'} lists every stored battle (column run_key, with its point, "
              f"replication, seed, status and winner); replay one with: tanksim run --from {args.dir} --battle "
              f"{ex['run_key']}")
    if files:
        print(f"plots: {', '.join(str(f) for f in files)}")
    return 0


# --- the full analysis (sim.experiments.analysis): python API, --json, text -------------------------------------------

#: Default difference in win rate for the report's power section and ``tanksim power``.
DEFAULT_DELTA = 0.1


@dataclass
class Report:
    """Everything ``tanksim report`` says about a results folder, as DataFrames (see :mod:`sim.experiments.analysis` for
    each statistic and ``docs/batch.md`` for the columns).

    ``manifest``, ``runs`` (every stored row), ``points`` (:func:`point_table`), ``main_effects`` (win rates per
    level, :func:`main_effects`), ``battles`` (the analysis table), ``effects`` (per factor, level and outcome, with
    intervals), ``differences`` (between levels: paired with common random numbers), ``interactions``,
    ``importance`` and ``importance_comparisons``, ``best`` (probability each level is best), ``distributions``
    (quantiles), ``curves`` (continuous factors), ``mirror`` (side bias, or ``None``), ``power`` (battles per
    point for ``delta``), ``delta``, ``warnings`` (sentences), ``answer`` (the headline: what matters most and
    which level is best, with how sure) and ``oracle`` (the exact chain beside every design point whose scenario
    is a fixed-odds engagement, :func:`sim.experiments.oracle.report_section`, or ``None``)."""

    manifest: dict[str, Any]
    runs: pd.DataFrame
    points: pd.DataFrame
    main_effects: pd.DataFrame
    battles: Battles
    effects: pd.DataFrame
    differences: pd.DataFrame
    interactions: pd.DataFrame
    importance: pd.DataFrame
    importance_comparisons: pd.DataFrame
    best: pd.DataFrame
    distributions: pd.DataFrame
    curves: pd.DataFrame
    mirror: dict[str, Any] | None
    power: pd.DataFrame
    delta: float
    warnings: list[str]
    answer: dict[str, Any]
    oracle: dict[str, Any] | None = None

    #: The tables written to ``DIR/report/<name>.csv|parquet`` (and in the JSON under the same keys).
    TABLES = ("points", "effects", "differences", "interactions", "importance", "importance_comparisons", "best",
              "distributions", "curves", "power")

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-able mapping (``tanksim report --json``): NaN is ``null``, an infinite ratio the
        string ``"inf"``; keys as listed in ``docs/batch.md``."""
        d = self.manifest["design"]
        exp = d["experiment"]
        b = self.battles
        from sim.experiments import analysis

        out: dict[str, Any] = {
            "experiment": exp.get("name"), "source": d.get("source"), "scenario": d["scenario"]["source"],
            "ruleset": _ruleset(self.runs, d), "design": exp.get("design", {}).get("kind", "full_factorial"),
            "design_info": d.get("design_info", {}), "factors": [
                {"name": f.name, "kind": f.kind, "levels": list(f.levels),
                 "side": None if f.owner is None else b.sides[f.owner]} for f in b.factors],
            "sides": b.sides, "focus_side": b.sides[b.focus],
            "common_random_numbers": b.crn, "replications": d["replications"], "design_points": len(d["points"]),
            "runs": d["n_runs"], "battles": len(b.frame), "failed": int((self.runs["status"] != "ok").sum())
            if len(self.runs) else 0,
            "confidence": analysis.CONFIDENCE, "intervals_note": analysis.INTERVALS_NOTE,
            "bootstrap": {"unit": analysis.resample_unit(b), "seed": analysis.BOOTSTRAP_SEED,
                          "resamples": analysis.BOOTSTRAP, "resamples_best": analysis.BOOTSTRAP_BEST},
            "answer": self.answer, "warnings": self.warnings, "mirror": self.mirror, "power_delta": self.delta,
            "oracle": self.oracle,
        }
        for name in self.TABLES:
            out[name] = _records(getattr(self, name))
        return _jsonable(out)


def _ruleset(runs: pd.DataFrame, design: Mapping[str, Any]) -> str | None:
    if len(runs) and "ruleset" in runs.columns and runs["ruleset"].notna().any():
        return str(runs["ruleset"].dropna().iloc[0])
    rs = design.get("scenario", {}).get("data", {}).get("ruleset", "panzer_squadron")
    return rs if isinstance(rs, str) else (rs or {}).get("name")


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in df.to_dict("records")]


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if x is pd.NA or x is pd.NaT:
        return None
    return x


def analyse(out_dir: str | Path, side: int = 0, delta: float = DEFAULT_DELTA, power: float = 0.8,
            alpha: float = 0.05) -> Report:
    """The full report of a results folder seen from side ``side`` (0 or 1), with the power section for a
    difference ``delta`` in win rate.  Raises ``FileNotFoundError`` for a folder that is not a batch's results."""
    manifest, runs, points, eff = build(out_dir)
    return analyse_runs(runs, manifest, side, delta, power, alpha, points=points, main=eff)


def analyse_runs(runs: pd.DataFrame, manifest: Mapping[str, Any], side: int = 0, delta: float = DEFAULT_DELTA,
                 power: float = 0.8, alpha: float = 0.05, *, points: pd.DataFrame | None = None,
                 main: pd.DataFrame | None = None) -> Report:
    """:func:`analyse` on a runs table and a manifest already in memory (synthetic tables in tests)."""
    from sim.experiments import analysis

    b = analysis.outcomes(runs, manifest, side)
    points = point_table(runs, manifest) if points is None else points
    main = main_effects(runs, manifest) if main is None else main
    empty = len(b.frame) < 2
    effects = analysis.effects(b) if not empty else pd.DataFrame()
    diffs = analysis.differences(b) if not empty else pd.DataFrame()
    inter = analysis.interactions(b) if not empty else pd.DataFrame()
    imp, comps = analysis.importance(b) if not empty else (pd.DataFrame(), pd.DataFrame())
    best = analysis.best_levels(b) if not empty else pd.DataFrame()
    dist = analysis.distributions(b)
    curves = analysis.curves(b) if not empty else pd.DataFrame()
    mirror = analysis.mirror_matches(b)
    pw = analysis.power_table(b, delta, power, alpha) if not empty else pd.DataFrame()
    rep = Report(dict(manifest), runs, points, main, b, effects, diffs, inter, imp, comps, best, dist, curves,
                 mirror, pw, delta, [], {})
    rep.answer, rep.warnings = _answer(rep, power, alpha)
    from sim.experiments import oracle

    rep.oracle = oracle.report_section(runs, manifest)
    return rep


def _poss(name: str) -> str:
    """English possessive of a side name: ``Germans'``, ``Red's``."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _detectable(x: float) -> str:
    """A detectable difference in points; "> 100" when no possible difference in a rate is (a paired pilot with
    few replications and a wide spread)."""
    return "> 100" if isinstance(x, float) and x > 1 else _pc(x)


def _fmt(x: float, spec: str) -> str:
    """``format(x, spec)``, but a value that rounds to zero prints as zero without a sign of its own (``+0.0`` /
    ``0.0``, never ``-0.0``)."""
    text = format(x, spec)
    return format(0.0, spec) if float(text) == 0 else text


def _pc(x: float, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return _fmt(100 * x, "+.1f" if signed else ".1f")


# --- the rows the report reads ----------------------------------------------------------------------------------------
# A type checker sees a DataFrame's rows as tuples of any scalar; each protocol names the columns (and their types)
# that the report reads of one table of sim.experiments.analysis.

class _Interval(Protocol):
    lo: float
    hi: float


class _ImportanceRow(_Interval, Protocol):
    """A row of :func:`sim.experiments.analysis.importance` (or ``sobol_importance``)."""

    outcome: str
    term: str
    share: float


class _ComparisonRow(Protocol):
    """A row of the importance comparisons (:func:`sim.experiments.analysis.importance`, second table)."""

    term_a: str
    term_b: str
    p_a_greater: float


class _EffectRow(_Interval, Protocol):
    """A row of :func:`sim.experiments.analysis.effects`."""

    outcome: str
    value: float
    effect: float
    effect_lo: float
    effect_hi: float


class _DifferenceRow(_Interval, Protocol):
    """A row of :func:`sim.experiments.analysis.differences`."""

    diff: float
    unpaired_diff: float
    unpaired_lo: float
    unpaired_hi: float


class _InteractionRow(_Interval, Protocol):
    """A row of :func:`sim.experiments.analysis.interactions`."""

    factor_a: str
    level_a: str
    factor_b: str
    level_b: str
    interaction: float


class _BestRow(_Interval, Protocol):
    """A row of :func:`sim.experiments.analysis.best_levels`."""

    win_rate: float


class _DistributionRow(Protocol):
    """A row of :func:`sim.experiments.analysis.distributions`."""

    q05: float
    q25: float
    q50: float
    q75: float
    q95: float


class _PowerRow(Protocol):
    """A row of :func:`sim.experiments.analysis.power_table` (``NaN`` where the paired figures are undefined,
    hence floats)."""

    factor: str
    side: str
    win_rate: float
    points_per_level: int
    replications: int
    battles_per_level: float
    replications_needed: int
    sd_paired: float
    replications_needed_paired: float
    detectable_now: float
    recommended: float


class _Rows[R]:
    """The rows of a table as named tuples (``DataFrame.itertuples()``), typed as ``R`` (one of the protocols
    above): ``for r in _Rows[_PowerRow](table)``."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.table = table

    def __iter__(self) -> Iterator[R]:
        # cast: the stubs cannot know a DataFrame's columns; R names the ones this table has
        return cast(Iterator[R], self.table.itertuples())


def _and(names: list[str]) -> str:
    """``a and b`` / ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _answer(rep: Report, power: float, alpha: float) -> tuple[dict[str, Any], list[str]]:
    """The headline and the warnings: factor ranking by share of the focus side's win variance (with the
    bootstrap probability that one factor matters more than another), and per factor the best level, its
    probability of being best and its separation from the runner-up."""
    from sim.experiments import analysis

    b = rep.battles
    focus = b.sides[b.focus]
    text: list[str] = []
    warns: list[str] = []
    failed = int((rep.runs["status"] != "ok").sum()) if len(rep.runs) else 0
    if failed:
        warns.append(f"{failed} stored battles failed or timed out and are left out of every statistic")
    if len(b.frame) < 2:
        warns.append("fewer than two finished battles: nothing to analyse yet")
        return {"text": text, "importance": [], "comparisons": [], "best": []}, warns
    imp = rep.importance
    ranking: list[dict[str, Any]] = []  # JSON records
    if len(imp):
        # the replication block (``seed``, with common random numbers) is the dice, not a factor: told apart
        not_terms = ["residual", analysis.SHARED_TERM, analysis.SEED_TERM]
        w = imp[(imp["outcome"] == "win") & ~imp["term"].isin(not_terms)].sort_values("share", ascending=False)
        ranking = [{"term": r.term, "share": r.share, "lo": r.lo, "hi": r.hi,
                    "p_value": getattr(r, "p_value", math.nan)} for r in _Rows[_ImportanceRow](w)]
        resid = imp[(imp["outcome"] == "win") & (imp["term"] == "residual")]
        if ranking:
            parts = [f"{r['term']} {_share(r['share'])}% [{_share(r['lo'])}, {_share(r['hi'])}]" for r in ranking]
            tail = f"; battle-to-battle chance {_share(float(resid['share'].iloc[0]))}%" if len(resid) else ""
            block = imp[(imp["outcome"] == "win") & (imp["term"] == analysis.SEED_TERM)]
            if len(block):
                r0 = block.iloc[0]
                tail += (f"; the replications' shared dice (seed, common random numbers: not a factor) "
                         f"{_share(float(r0['share']))}% [{_share(float(r0['lo']))}, {_share(float(r0['hi']))}]")
            shared = imp[(imp["outcome"] == "win") & (imp["term"] == analysis.SHARED_TERM)]
            over = float(shared["share"].iloc[0]) if len(shared) else 0.0
            if over > SHARE_ZERO:
                tail += f"; shared by correlated terms (no single term's) {_share(over)}%"
            elif over < -SHARE_ZERO:
                tail += (f"; the terms' shares overlap by {_share(-over)}% (correlated terms: the design cannot "
                         "fully tell them apart)")
            text.append(f"what matters for {_poss(focus)} wins (share of the variance, 95% bootstrap interval): "
                        + ", ".join(parts) + tail)
    comps = []
    if len(rep.importance_comparisons):
        c = rep.importance_comparisons[rep.importance_comparisons["outcome"] == "win"]
        lows = {str(r["term"]): float(r["lo"]) for r in ranking if not math.isnan(float(r["lo"]))}
        for r in _Rows[_ComparisonRow](c):
            comps.append({"a": r.term_a, "b": r.term_b, "p_a_greater": r.p_a_greater})
            text.append(importance_statement(str(r.term_a), str(r.term_b), float(r.p_a_greater), lows, focus))
    best_out = []
    for fac in b.categorical:
        if len(fac.levels) < 2:
            continue
        t = rep.best[rep.best["factor"] == fac.name].sort_values("rank")
        top, second = t.iloc[0], t.iloc[1]
        sep = analysis.separation(b, fac.name, str(top["level"]), str(second["level"]))
        side = b.sides[sep.side]
        entry = {"factor": fac.name, "side": side, "level": top["level"], "win_rate": top["win_rate"],
                 "lo": top["lo"], "hi": top["hi"], "p_best": top["p_best"], "runner_up": second["level"],
                 "runner_up_win_rate": second["win_rate"], "diff": sep.diff, "diff_lo": sep.lo, "diff_hi": sep.hi,
                 "paired": sep.paired, "p_value": sep.p_value, "separated": sep.separated}
        how = "paired over replications (common random numbers)" if sep.paired else "unpaired"
        tied = [str(r["level"]) for _, r in t.iterrows() if math.isclose(float(r["win_rate"]),
                                                                         float(top["win_rate"]), abs_tol=1e-12)]
        entry["tie"] = tied if len(tied) > 1 else []
        best_out.append(entry)
        # the interval is too wide to call the tie a measured absence of difference when it reaches past
        # the report's --delta (the difference its power table is about) on either side
        wide = math.isnan(sep.lo) or max(abs(sep.lo), abs(sep.hi)) > rep.delta + 1e-12
        if len(tied) > 1:
            text.append(f"best {fac.name} for {side}: a tie between {_and(tied)}, win rate {_pc(top['win_rate'])}% "
                        f"each [{_pc(top['lo'])}, {_pc(top['hi'])}]: no difference measured ({top['level']} - "
                        f"{second['level']}: {_pc(sep.diff, True)} points [{_pc(sep.lo, True)}, "
                        f"{_pc(sep.hi, True)}], {how})")
            if wide:
                warns.append(f"{fac.name}: {_and(tied)} tie at {_pc(top['win_rate'])}% but the experiment is too "
                             f"small to rule out a difference of {_pc(rep.delta)} points: {_poss(side)} win rates "
                             f"differ by {_pc(sep.diff, True)} points [{_pc(sep.lo, True)}, {_pc(sep.hi, True)}] "
                             f"(more replications narrow it: tanksim power DIR --delta {rep.delta:.2f})")
            continue
        text.append(f"best {fac.name} for {side}: {top['level']}, win rate {_pc(top['win_rate'])}% "
                    f"[{_pc(top['lo'])}, {_pc(top['hi'])}], probability best {top['p_best']:.3f}; ahead of "
                    f"{second['level']} ({_pc(second['win_rate'])}%) by {_pc(sep.diff, True)} points "
                    f"[{_pc(sep.lo, True)}, {_pc(sep.hi, True)}], {how}"
                    + ("" if sep.separated else ": not separated"))
        if not sep.separated:
            msg = (f"{fac.name}: the experiment is too small to separate its best two levels ({top['level']}, "
                   f"{second['level']}): {_poss(side)} win rates differ by {_pc(sep.diff, True)} points "
                   f"[{_pc(sep.lo, True)}, {_pc(sep.hi, True)}]")
            gap = abs(sep.diff) if not math.isnan(sep.diff) else 0.0
            if gap >= 0.01:
                pt = analysis.power_table(b, min(gap, 1.0), power, alpha)
                row = pt[pt["factor"] == fac.name]
                need = _count(row["recommended"].iloc[0]) if len(row) else None
                if need is not None:
                    msg += (f"; to detect a difference of {_pc(gap)} points with power {power:g} you need about "
                            f"{need} replications per design point (now {int(row['replications'].iloc[0])}; "
                            f"tanksim power DIR --delta {gap:.2f})")
            warns.append(msg)
    if len(rep.power):
        for pw in _Rows[_PowerRow](rep.power):
            if not math.isnan(pw.detectable_now) and pw.detectable_now > 0.2:
                warns.append(f"{pw.factor}: with {pw.replications} replications per point only differences of "
                             f"{_pc(pw.detectable_now)} points or more in {_poss(pw.side)} win rate are detected with "
                             f"power {power:g} (unpaired)")
    if len(rep.curves):
        for factor_name, g in rep.curves[rep.curves["outcome"] == "win"].groupby("factor", sort=False):
            lo_end, hi_end = g.iloc[0], g.iloc[-1]
            text.append(f"{factor_name!s} (continuous): {_poss(focus)} fitted win rate goes from {_pc(lo_end['fit'])}% "
                        f"[{_pc(lo_end['lo'])}, {_pc(lo_end['hi'])}] at {lo_end['x']:g} to {_pc(hi_end['fit'])}% "
                        f"[{_pc(hi_end['lo'])}, {_pc(hi_end['hi'])}] at {hi_end['x']:g} (no-effect test p = "
                        f"{lo_end['p_value']:.3g})")
    if rep.mirror is not None:
        m = rep.mirror["all"]
        s1 = b.sides[0]
        text.append(f"mirror matches (same doctrine both sides, {m['battles']} battles): {s1} won "
                    f"{_pc(m['first_side_share'])}% [{_pc(m['lo'])}, {_pc(m['hi'])}] of the decisive ones"
                    + ("" if rep.mirror["symmetric"] else " (the design is only partly symmetric)"))
        if rep.mirror["flag"]:
            warns.append(rep.mirror["flag"])
        for dct in rep.mirror["doctrines"]:
            if dct["biased"]:
                warns.append(f"side bias under {dct['doctrine']} vs {dct['doctrine']}: {s1} won "
                             f"{_pc(dct['first_side_share'])}% [{_pc(dct['lo'])}, {_pc(dct['hi'])}] of the decisive "
                             f"battles (50% is outside the interval)")
    info = rep.manifest["design"].get("design_info", {})
    if info.get("kind") == "nolh" and not info.get("nearly_orthogonal", True):
        warns.append(f"the nolh design's columns correlate up to {info.get('max_abs_correlation'):.3f} (above "
                     f"0.03): add points for so many factors")
    return {"text": text, "importance": ranking, "comparisons": comps, "best": best_out}, warns


# --- text sections ---------------------------------------------------------------------------------------------------

_OUTCOME_TEXT = {"win": "win %", "loss_exchange": "loss exchange", "survivors": "survivors",
                 "enemy_survivors": "enemy survivors", "duration": "turns"}


#: A variance share at or below this is printed and treated as exactly 0 (floating-point noise of the sums of squares).
SHARE_ZERO = 1e-9


def _share(x: float) -> str:
    """A variance share (0..1; the ``shared`` row may be negative) in percent, precise enough that a nonzero share
    never reads as 0: one decimal, or two significant digits below 0.05 % (``0.016``); ``0.0`` only within
    :data:`SHARE_ZERO` of 0; ``-`` for nan."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x < -SHARE_ZERO:  # only the shared row of correlated terms can be negative
        return f"{100 * x:.1f}" if 100 * x <= -0.05 else f"{100 * x:.2g}"
    if x <= SHARE_ZERO:
        return "0.0"
    return f"{100 * x:.1f}" if 100 * x >= 0.05 else f"{100 * x:.2g}"


def _share_ci(v: float, lo: float, hi: float) -> str:
    return f"{_share(v)} [{_share(lo)}, {_share(hi)}]"


def importance_statement(a: str, b: str, p_a_greater: float, lo: Mapping[str, float], focus: str) -> str:
    """The answer's sentence comparing two factors' shares of the variance of ``focus``'s wins, consistent with the
    importance table.  Decision: "X matters more than Y" is said only when X's bootstrap interval excludes 0 (its
    low end above :data:`SHARE_ZERO`) and the bootstrap favours X (``p`` of X's share exceeding Y's at least
    0.5); when neither interval excludes 0 the sentence says that neither is shown to matter (no ranking); when
    the bootstrap favours a factor whose interval reaches 0 the two are "not told apart".  ``lo``: each term's
    interval's low end (a missing term counts as reaching 0)."""
    if math.isnan(p_a_greater):
        return f"{a} and {b}: no bootstrap comparison of their shares of {_poss(focus)} wins"
    more, less, p = (a, b, p_a_greater) if p_a_greater >= 0.5 else (b, a, 1 - p_a_greater)
    if lo.get(more, 0.0) > SHARE_ZERO:
        return f"{more} matters more than {less} for {_poss(focus)} wins with bootstrap probability {p:.3f}"
    if lo.get(less, 0.0) <= SHARE_ZERO:
        return (f"neither {a} nor {b} is shown to matter for {_poss(focus)} wins (both shares' intervals reach 0), "
                f"so neither is ranked above the other")
    return (f"{a} and {b} are not told apart for {_poss(focus)} wins ({more}'s share exceeds {less}'s with "
            f"bootstrap probability {p:.3f}, but {more}'s interval reaches 0)")


def _ci(v: float, lo: float, hi: float, pct: bool, signed: bool = False) -> str:
    def f(x: float) -> str:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "-"
        if isinstance(x, float) and math.isinf(x):
            return "inf" if x > 0 else "-inf"
        x = 100 * x if pct else x
        return _fmt(x, "+.1f" if signed else (".1f" if pct else ".2f"))

    return f"{f(v)} [{f(lo)}, {f(hi)}]"


def print_sections(rep: Report) -> None:
    """Print the analysis sections of a :class:`Report` (answer, effects, differences, interactions, importance,
    best levels, distributions, curves, mirror matches, power, warnings)."""
    b = rep.battles
    focus = b.sides[b.focus]
    print(f"\nanswer (outcomes seen from {focus}; 95% intervals):")
    from sim.experiments.analysis import INTERVALS_NOTE

    print(f"  ({INTERVALS_NOTE})")
    for line in rep.answer.get("text", []):
        print(f"  - {line}")
    if len(rep.effects):
        print(f"\neffects by outcome ({_poss(focus)} view; value [95% CI], effect = value - all battles [95% CI]):")
        e = rep.effects
        rows = []
        for (fac, lv), g in e.groupby(["factor", "level"], sort=False):
            row = {"factor": fac, "level": lv, "battles": int(g["n"].iloc[0])}
            for r in _Rows[_EffectRow](g):
                pct = r.outcome == "win"
                row[_OUTCOME_TEXT[r.outcome]] = _ci(r.value, r.lo, r.hi, pct)
                if fac != "(all)":
                    row[f"{_OUTCOME_TEXT[r.outcome]} effect"] = _ci(r.effect, r.effect_lo, r.effect_hi, pct, True)
            rows.append(row)
        print(pd.DataFrame(rows).fillna("").to_string(index=False))
    if len(rep.differences):
        d = rep.differences[rep.differences["outcome"] == "win"]
        paired = bool(d["paired"].any())
        print(f"\ndifferences in {_poss(focus)} win rate between levels (a - b, points; "
              + ("paired over replications by common random numbers, unpaired interval beside it):" if paired
                 else "unpaired):"))
        t = pd.DataFrame({"factor": d["factor"], "a": d["level_a"], "b": d["level_b"],
                          "diff [95% CI]": [_ci(r.diff, r.lo, r.hi, True, True) for r in _Rows[_DifferenceRow](d)],
                          "p": [f"{p:.3g}" for p in d["p_value"]]})
        if paired:
            t["unpaired [95% CI]"] = [_ci(r.unpaired_diff, r.unpaired_lo, r.unpaired_hi, True, True)
                                      for r in _Rows[_DifferenceRow](d)]
        print(t.to_string(index=False))
    if len(rep.interactions):
        i = rep.interactions[rep.interactions["outcome"] == "win"]
        print(f"\ntwo-factor interactions on {_poss(focus)} win rate (cell - row - column + grand mean, points):")
        t = pd.DataFrame({"cell": [f"{r.factor_a}={r.level_a} x {r.factor_b}={r.level_b}"
                                   for r in _Rows[_InteractionRow](i)],
                          "battles": i["n"], "win %": [_pc(x) for x in i["cell"]],
                          "interaction [95% CI]": [_ci(r.interaction, r.lo, r.hi, True, True)
                                                   for r in _Rows[_InteractionRow](i)]})
        print(t.to_string(index=False))
    if len(rep.importance):
        print("\nimportance (share of each outcome's variance per term [95% bootstrap CI]; shared = overlap of "
              "correlated terms; residual = chance; each outcome adds up to 100%):")
        imp = rep.importance
        t = pd.DataFrame({"outcome": [_OUTCOME_TEXT.get(o, o) for o in imp["outcome"]], "term": imp["term"],
                          "share % [95% CI]": [_share_ci(r.share, r.lo, r.hi) for r in _Rows[_ImportanceRow](imp)],
                          "p": [("" if (isinstance(p, float) and math.isnan(p)) else f"{p:.3g}")
                                for p in imp.get("p_value", pd.Series([math.nan] * len(imp)))]})
        print(t.to_string(index=False))
    if len(rep.best):
        print("\nbest level (win rate of the factor's side; probability best by bootstrap):")
        t = rep.best.sort_values(["factor", "rank"], kind="stable")
        print(pd.DataFrame({"factor": t["factor"], "side": t["side"], "rank": t["rank"], "level": t["level"],
                            "win % [95% CI]": [_ci(r.win_rate, r.lo, r.hi, True) for r in _Rows[_BestRow](t)],
                            "P(best)": [f"{p:.3f}" for p in t["p_best"]]}).to_string(index=False))
    if len(rep.distributions):
        print("\ndistributions (quantiles 5/25/50/75/95 %):")
        t = rep.distributions
        print(pd.DataFrame({"factor": t["factor"], "level": t["level"],
                            "outcome": [_OUTCOME_TEXT.get(o, o) for o in t["outcome"]], "mean": t["mean"].round(2),
                            "quantiles": [f"{r.q05:g} / {r.q25:g} / {r.q50:g} / {r.q75:g} / {r.q95:g}"
                                          for r in _Rows[_DistributionRow](t)]}).to_string(index=False))
    if len(rep.curves):
        print("\ncontinuous factors (fitted curve with 95% band at the low end, middle and high end; "
              "full curves in curves.csv):")
        for (fac, outcome), g in rep.curves.groupby(["factor", "outcome"], sort=False):
            pts = [g.iloc[0], g.iloc[len(g) // 2], g.iloc[-1]]
            pct = outcome == "win"
            print(f"  {fac} -> {_OUTCOME_TEXT[str(outcome)]} (p = {g['p_value'].iloc[0]:.3g}): "
                  + "; ".join(f"at {r['x']:g}: {_ci(r['fit'], r['lo'], r['hi'], pct)}" for r in pts))
    if rep.mirror is not None:
        m = rep.mirror
        print("\nmirror matches (the same doctrine on both sides; first side's share of decisive battles):")
        s1, s2 = b.sides
        rows = [{"doctrine": x["doctrine"], "battles": x["battles"], f"{s1} wins": x[f"{s1}_wins"],
                 f"{s2} wins": x[f"{s2}_wins"], "draws": x["draws"],
                 f"{s1} share [95% CI]": _ci(x["first_side_share"], x["lo"], x["hi"], True),
                 "bias": "yes" if x["biased"] else ""} for x in [*m["doctrines"], {"doctrine": "(all)", **m["all"]}]]
        print(pd.DataFrame(rows).to_string(index=False))
    if len(rep.power):
        print(f"\npower: replications per design point to detect a difference of {_pc(rep.delta)} points in the "
              f"factor's side's win rate (power 0.8, alpha 0.05; tanksim power DIR --delta D for others):")
        t = rep.power
        print(pd.DataFrame({"factor": t["factor"], "side": t["side"], "now": t["replications"],
                            "needed (unpaired)": t["replications_needed"],
                            "needed (paired)": ["-" if _count(x) is None else _count(x)
                                                for x in t["replications_needed_paired"]],
                            "detectable now": [_pc(x) for x in t["detectable_now"]],
                            "detectable now (paired)": [_detectable(x) for x in t["detectable_now_paired"]]}
                           ).to_string(index=False))
        gaps = {r.factor: _no_paired_count(r, rep.battles.crn) for r in _Rows[_PowerRow](t)
                if _count(r.replications_needed_paired) is None}
        by_reason: dict[str, list[str]] = {}
        for f, why in gaps.items():
            by_reason.setdefault(why, []).append(str(f))
        if by_reason:
            print("  needed (paired) '-': " + "; ".join(f"{', '.join(fs)}: {why}" for why, fs in by_reason.items()))
    if rep.oracle:
        print("\nexact theory (absorbing Markov chain of the fixed-odds engagement, tanksim oracle) beside the "
              "simulated result (95% intervals; 'ok' = the oracle lies inside):")
        for p in rep.oracle["points"]:
            vals = ", ".join(f"{k}={v}" for k, v in p["values"].items()) or "(the scenario)"
            print(f"  {vals}: {p['battles']} battles, {p['schedule']}, one shot kills with "
                  + ", ".join(f"{k} {v}" for k, v in p["p_kill"].items()) + ("" if p["exact"] else " (floats)"))
            for r in p["comparison"]:
                rate = r["quantity"].startswith("P(")
                fmt = (lambda x: f"{_pc(x)}%") if rate else (lambda x: "-" if x is None or x != x else f"{x:.3f}")
                mark = "ok" if r["inside"] else ("-" if r["inside"] is None else "OUTSIDE")
                print(f"    {r['quantity']:<32} oracle {fmt(r['oracle']):>7}  simulated {fmt(r['simulated']):>7} "
                      f"[{fmt(r['lo'])}, {fmt(r['hi'])}]  {mark}")
        for r in rep.oracle.get("refused", []):
            print(f"  (no oracle for point {r['point_key'][:10]}: {r['reason']})")
    if rep.warnings:
        print("\nwarnings:")
        for w in rep.warnings:
            print(f"  ! {w}")


# --- more plots ---------------------------------------------------------------------------------------------------

def plot_more(path: str | Path, rep: Report) -> list[Path]:
    """``<stem>-distributions<suffix>``: box plots (whiskers at the 5 and 95 % quantiles) of survivors, enemy
    survivors and duration per level of each categorical factor; ``<stem>-curves<suffix>`` for continuous factors:
    each fitted curve with its 95 % band.  Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim.view.render import fit_titles

    path = Path(path)
    suffix = path.suffix or ".png"
    b = rep.battles
    f = b.frame
    written = []
    cats = [fac for fac in b.categorical if fac.levels] or []
    outs = [("survivors", f"{b.sides[b.focus]} survivors"), ("enemy_survivors", f"{b.sides[1 - b.focus]} survivors"),
            ("duration", "turns")]
    if len(f):
        groups: list[FactorView | None] = [*cats] or [None]  # None: all battles in one column
        fig, axes = plt.subplots(len(outs), len(groups), figsize=(max(5.0, 3.2 * len(groups)), 3.0 * len(outs)),
                                 squeeze=False)
        for j, fac in enumerate(groups):
            levels = list(fac.levels) if fac else ["all battles"]
            for i, (col, label) in enumerate(outs):
                data = [f[f[fac.name] == lv][col].dropna().to_numpy() for lv in levels] if fac else [f[col].to_numpy()]
                ax = axes[i][j]
                ax.boxplot(data, whis=(5, 95), showmeans=True)
                ax.set_xticks(range(1, len(levels) + 1), levels, rotation=30, ha="right")
                ax.set_ylabel(label)
                if i == 0:
                    ax.set_title(fac.name if fac else "all battles")
        fit_titles(fig, fig.suptitle("distributions (box: quartiles, whiskers: 5-95 %, triangle: mean)"))
        p = path.with_name(f"{path.stem}-distributions{suffix}")
        fig.savefig(p)
        plt.close(fig)
        written.append(p)
    if len(rep.curves):
        # the (factor, outcome) pairs in order of first appearance, as groupby(sort=False) walks them
        keys = list(rep.curves[["factor", "outcome"]].drop_duplicates().itertuples(index=False, name=None))
        facs = list(dict.fromkeys(k[0] for k in keys))
        outcomes = list(dict.fromkeys(k[1] for k in keys))
        fig, axes = plt.subplots(len(outcomes), len(facs), figsize=(max(5.0, 3.6 * len(facs)), 2.8 * len(outcomes)),
                                 squeeze=False)
        for (factor_name, outcome), g in rep.curves.groupby(["factor", "outcome"], sort=False):
            ax = axes[outcomes.index(outcome)][facs.index(factor_name)]
            ax.fill_between(g["x"], g["lo"], g["hi"], alpha=0.3)
            ax.plot(g["x"], g["fit"])
            ax.set_xlabel(str(factor_name))
            ax.set_ylabel(_OUTCOME_TEXT.get(str(outcome), str(outcome)).replace("win %", "win rate"))
            ax.set_title(f"p = {g['p_value'].iloc[0]:.3g}", fontsize=9)
        fit_titles(fig, fig.suptitle("continuous factors: fitted curve and 95 % band"))
        p = path.with_name(f"{path.stem}-curves{suffix}")
        fig.savefig(p)
        plt.close(fig)
        written.append(p)
    return written


# --- tanksim power ---------------------------------------------------------------------------------------------------

def _count(x: object) -> int | None:
    """A count of battles or replications for printing: ``None`` for ``None``, ``NaN`` or an infinite value."""
    if x is None or not isinstance(x, (int, float, np.integer, np.floating)):
        return None
    v = float(x)
    return math.ceil(v) if math.isfinite(v) else None


def _no_paired_count(r: _PowerRow, crn: bool) -> str:
    """Why a factor's power row has no paired count (``-``): the reason, in words."""
    if not crn:
        return "the design has no common random numbers, and pairing needs them"
    if isinstance(r.sd_paired, float) and r.sd_paired == 0:
        return ("no variance among the pilot's per-replication paired differences, so they say nothing about their "
                "spread; the unpaired count is recommended")
    return "fewer than two replications with matched battles at two levels"


def _power_line(r: _PowerRow, crn: bool) -> str:
    """One factor's line of ``tanksim power``.  Every figure that the pilot cannot give (``NaN`` or infinite in
    :func:`sim.experiments.analysis.power_table`) is printed as ``-`` with the reason, never as a number."""
    unpaired, per_point = _count(r.battles_per_level), _count(r.replications_needed)
    line = (f"  {r.factor} ({_poss(r.side)} win rate, pilot {_pc(r.win_rate)}%, {r.points_per_level} design points "
            f"per level): unpaired "
            + (f"{unpaired} battles per level = {per_point} replications per point" if unpaired is not None
               and per_point is not None else "- (the pilot gives no finite count)"))
    paired = _count(r.replications_needed_paired)
    if paired is not None:
        line += (f"; paired (common random numbers, pilot sd of per-replication differences {r.sd_paired:.3f}): "
                 f"{paired} replications")
    elif crn:
        line += f"; paired (common random numbers): - ({_no_paired_count(r, crn)})"
    rec = _count(r.recommended)
    return line + (f" -> recommended {rec}" if rec is not None else " -> recommended: - (run a larger pilot)")


def power_main(argv: Sequence[str] | None = None) -> int:
    """``tanksim power DIR --delta 0.1 [--power 0.8] [--alpha 0.05] [--side S] [--json]``: from a pilot folder,
    the replications per design point needed to detect a difference ``delta`` in each factor's side's win rate
    (see :func:`sim.experiments.analysis.power_table`).  Exit 0, or 2 for a bad folder or argument."""
    from sim.experiments import analysis

    ap = argparse.ArgumentParser(prog="tanksim power", description="How many battles per design point an "
                                 "experiment needs to detect a difference in win rate, from a pilot folder.")
    ap.add_argument("dir", help="a pilot results folder written by 'tanksim batch'")
    ap.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="difference in win rate to detect "
                                                                       f"(default {DEFAULT_DELTA})")
    ap.add_argument("--power", type=float, default=0.8, help="probability of detecting it (default 0.8)")
    ap.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    ap.add_argument("--side", help="the focus side for factors that belong to no side (name or 1/2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    for name, v in (("--delta", args.delta), ("--power", args.power), ("--alpha", args.alpha)):
        if not 0 < v < 1 and not (name == "--delta" and v == 1):
            print(f"tanksim power: {name} {v}: expected a number in (0, 1)", file=sys.stderr)
            return 2
    try:
        manifest, runs, _, _ = build(args.dir)
    except FileNotFoundError as exc:
        print(f"tanksim power: {exc}", file=sys.stderr)
        return 2
    if not len(runs):
        print(nothing_stored("power", args.dir), file=sys.stderr)
        return 2
    names = side_names(manifest, runs)
    si = _side_index(args.side, names)
    if si is None:
        print(f"tanksim power: --side {args.side!r}: {unknown_side_message(args.side, names)}", file=sys.stderr)
        return 2
    b = analysis.outcomes(runs, manifest, si)
    if len(b.frame) < 2 or not b.categorical:
        print(f"tanksim power: {args.dir}: needs at least two finished battles and a factor with levels",
              file=sys.stderr)
        return 2
    table = analysis.power_table(b, args.delta, args.power, args.alpha)
    if not len(table):
        print(f"tanksim power: {args.dir}: needs a factor with at least two levels among its finished battles",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(_jsonable({"delta": args.delta, "power": args.power, "alpha": args.alpha,
                                    "common_random_numbers": b.crn, "pilot_battles": len(b.frame),
                                    "factors": _records(table)}), indent=1, allow_nan=False))
        return 0
    print(f"{args.dir}: pilot of {len(b.frame)} battles ({table['replications'].max()} replications per point"
          + (", common random numbers" if b.crn else "") + f"); to detect a difference of {_pc(args.delta)} points "
          f"in win rate with power {args.power:g} at alpha {args.alpha:g} (two-sided):")
    for r in _Rows[_PowerRow](table):
        print(_power_line(r, b.crn))
    return 0
