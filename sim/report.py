"""``tanksim report DIR [--plot FILE.png] [--side NAME]``: what a finished (or partial) batch says.

Per design point: battles (finished rows; failed and timed-out rows are counted apart), each side's wins and win
rate with a Wilson 95 % interval (``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``), draws, the mean
and quartiles of turns and of each side's losses, and the loss-exchange ratio (the second side's total losses per
loss of the first side).  Main effects: the same win rates pooled over every other factor, per level of each
factor (a Latin-hypercube range is cut into quartile bins, unless it takes at most 8 integer values), with each
level's difference from the overall rate.  The tables are printed and written to ``DIR/report/points.{csv,parquet}`` and
``effects.{csv,parquet}``, and every stored battle's id (``run_key``, for ``tanksim run --from DIR --battle ID``) to
``DIR/report/runs.csv``; ``--plot`` draws the win rate of one side with its intervals by factor level (and a
second picture, ``FILE-points.png``, per design point) with :func:`sim.render.interval_plot`.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

CONFIDENCE = 0.95


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of ``k`` successes in ``n`` trials (scipy); ``(nan, nan)`` when ``n == 0``."""
    if n <= 0:
        return math.nan, math.nan
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def side_names(manifest: Mapping[str, Any], runs: pd.DataFrame | None = None) -> list[str]:
    """The two sides' names (from the manifest, else the first finished row)."""
    names = list(manifest.get("design", {}).get("side_names") or [])
    if len(names) == 2:
        return names
    if runs is not None and len(runs):
        return [str(runs["side1_name"].dropna().iloc[0]), str(runs["side2_name"].dropna().iloc[0])]
    return ["side1", "side2"]


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


def _is_string_factor(manifest: Mapping[str, Any], fac: Mapping[str, Any]) -> bool:
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


def _stored_value(manifest: Mapping[str, Any], name: str, v: Any) -> Any:
    """A factor value as its results column holds it (text, canonical JSON for non-strings, when the column is
    text), so mixed-type levels compare and save (Parquet) without errors."""
    fac = next((f for f in manifest["design"].get("factors", []) if f["name"] == name), None)
    if fac is not None and _is_string_factor(manifest, fac) and not isinstance(v, str) and v is not None:
        return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
    return v


def _levels(runs: pd.DataFrame, fac: Mapping[str, Any], manifest: Mapping[str, Any] | None = None
            ) -> tuple[pd.Series, list[Any]]:
    col = runs[fac["name"]] if fac["name"] in runs.columns else pd.Series([None] * len(runs), index=runs.index)
    values = list(fac.get("values") or [])
    if fac.get("is_range") and not values:  # Latin hypercube: integers as they are if few, else quartile bins
        x = col.astype("float64")
        if fac.get("integer") and x.nunique() <= 8:
            return col, sorted(col.dropna().unique())
        k = int(min(4, x.nunique()))
        if k >= 2:
            bins = pd.qcut(x, k, duplicates="drop")
            labels = [str(c) for c in bins.cat.categories]
            return bins.astype(str), labels
        return x.astype(str), sorted(x.astype(str).unique())
    if values and (_is_string_factor(manifest, fac)
                   or not all(isinstance(v, (str, int, float, bool)) for v in values)):
        values = [v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
                  for v in values]
        if col.dtype != object and str(col.dtype) not in ("string", "str"):
            col = col.map(lambda x: x if x is None or isinstance(x, str) or (isinstance(x, float) and math.isnan(x))
                          else json.dumps(x.item() if hasattr(x, "item") else x))
    present = [v for v in col.dropna().unique()]
    order = values + sorted([v for v in present if v not in values], key=str)
    return col, order


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
        for lv in order:
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
    from sim.render import interval_plot

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
    (:func:`sim.batch.verified_manifest`: the manifest's hashes, every runs, events and series part by
    SHA-256).  Raises ``FileNotFoundError``, :class:`sim.store.CorruptResults` naming each bad file."""
    from sim.batch import load_runs, read_manifest

    runs = load_runs(out_dir)  # verifies the folder first
    manifest = read_manifest(out_dir)
    return manifest, runs, point_table(runs, manifest), main_effects(runs, manifest)


def main(argv: Sequence[str] | None = None) -> int:
    """``tanksim report``; exit 0, or 2 for a folder that is not a batch's results or fails verification (each bad
    file named), an unknown ``--side`` or a ``--plot`` file whose format matplotlib cannot write."""
    ap = argparse.ArgumentParser(prog="tanksim report", description="Summarise a batch results folder: win rates "
                                 "with Wilson 95% intervals per design point, main effects, CSV/Parquet tables.")
    ap.add_argument("dir", help="results folder written by 'tanksim batch'")
    ap.add_argument("--plot", help="draw win rates with intervals by factor level to this image file")
    ap.add_argument("--side", help="the side whose win rate is plotted (name or 1/2; default the first side)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.plot:
        problem = plot_format_problem(args.plot)
        if problem:
            print(f"tanksim report: --plot {args.plot}: {problem}", file=sys.stderr)
            return 2
    from sim.store import CorruptResults, lock_holder

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
    holder = lock_holder(args.dir)
    if holder:
        print(f"tanksim report: {args.dir}: in use by {holder}: a batch is still writing it; this report covers "
              f"the battles stored so far", file=sys.stderr)
    names = side_names(manifest, runs)
    side = names[0]
    if args.side:
        if args.side in ("1", "2"):
            side = names[int(args.side) - 1]
        elif args.side in names:
            side = args.side
        else:
            print(f"tanksim report: --side {args.side!r}: expected one of {', '.join(names)} (or 1, 2)",
                  file=sys.stderr)
            return 2
    rdir = Path(args.dir) / "report"
    rdir.mkdir(exist_ok=True)
    for df, stem in ((points, "points"), (effects, "effects")):
        df.to_csv(rdir / f"{stem}.csv", index=False)
        df.to_parquet(rdir / f"{stem}.parquet", index=False)
    d = manifest["design"]
    exp = d["experiment"]
    total, ok = d["n_runs"], int(points["battles"].sum())
    failed = int(points["failed"].sum())
    print(f"{exp.get('name')}: {d['scenario']['source']} ({len(d['points'])} design points x "
          f"{d['replications']} replications = {total} runs; stored {ok + failed}"
          + (f", of which {failed} failed" if failed else "") + ")")
    facs = factor_names(manifest)
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_colwidth", 40):
        print("\nper design point:")
        print(_printable(points, names, facs or ["point"]).to_string(index=False))
        print("\nmain effects (pooled over the other factors; effect = level win rate - overall):")
        eff = _printable(effects, names, ["factor", "level"])
        for nm in names:
            eff[f"{nm} effect"] = [f"{100 * x:+.1f}" if isinstance(x, float) and not math.isnan(x) else "" for x in
                                   effects.get(f"{nm}_effect", pd.Series([math.nan] * len(effects)))]
        print(eff.to_string(index=False))
    ids = battle_ids(runs, manifest)
    ids.to_csv(rdir / "runs.csv", index=False)
    print(f"\ntables: {rdir / 'points.csv'}, {rdir / 'effects.csv'} (and .parquet)")
    if len(ids):
        ex = ids.iloc[0]
        print(f"battle ids: {rdir / 'runs.csv'} lists every stored battle (column run_key, with its point, "
              f"replication, seed, status and winner); replay one with: tanksim run --from {args.dir} --battle "
              f"{ex['run_key']}")
    if args.plot:
        files = plot(args.plot, points, effects, manifest, side)
        print(f"plots: {', '.join(str(f) for f in files)}")
    return 0
