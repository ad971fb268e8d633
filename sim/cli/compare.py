"""``tanksim compare-rulesets COMPARISON.yaml [--out DIR] [--workers N] [--new] [--json] [--resamples N]
[--no-progress] [--report-only]``

Plays every (rule set, scenario) cell of a comparison file (:mod:`sim.experiments.compare`) into ``DIR/cells/``
(resumable: run it again to complete an interrupted comparison; default ``DIR``: ``results/<name>``), then prints
the doctrine x rule-set interaction, Kendall's tau between the doctrine orderings of every pair of rule sets with
bootstrap intervals, and the robust doctrine (smallest worst-case regret).  ``--json`` prints the answer as one JSON
object instead (progress goes to stderr).  Exit codes: 0 done; 1 some battles failed (the answer leaves them out);
2 bad input or a refused folder; 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sim.cli.argtypes import at_least, output_folder, workers


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tanksim compare-rulesets", description="Doctrines x rule sets x scenarios "
                                 "with common random numbers: the doctrine x rule-set interaction, Kendall tau "
                                 "between rule sets' doctrine orderings, the robust doctrine.")
    ap.add_argument("comparison", help="comparison file (an experiment with a 'ruleset' factor) or bundled name")
    ap.add_argument("--out", type=output_folder, help="results folder (default results/<name>; re-use it to resume)")
    ap.add_argument("--workers", type=workers, help="process-pool workers (default: the number of cores)")
    ap.add_argument("--new", action="store_true", help="accept a changed comparison file for an existing folder")
    ap.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    ap.add_argument("--resamples", type=at_least(0), default=None, help="bootstrap resamples (default 1000)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--report-only", action="store_true", help="analyse the stored battles, play none")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from sim.experiments import compare, store
    from sim.experiments.batch import BatchRefused
    from sim.experiments.store import CorruptResults, FolderInUse
    from sim.scenario import ScenarioError

    if args.resamples is not None and not 0 <= args.resamples <= 100_000:
        print("tanksim compare-rulesets: --resamples takes an integer from 0 to 100000", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("tanksim compare-rulesets: --workers takes an integer >= 1", file=sys.stderr)
        return 2
    try:
        comp = compare.load_comparison(args.comparison)
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"tanksim compare-rulesets: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("results") / comp.name
    failed = 0
    if not args.report_only:
        try:
            summaries = compare.run_comparison(comp, out, workers=args.workers, new=args.new,
                                               progress=not args.no_progress)
        except (BatchRefused, FolderInUse, CorruptResults, ValueError) as exc:
            print(f"tanksim compare-rulesets: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # before the executor was up: what the cells' folders hold from earlier runs
            held = [store.count_stored(compare.cell_folder(out, c), (r.key for r in c.experiment.runs()))
                    for c in comp.cells]
            kept, total = sum(held), sum(c.experiment.n_runs for c in comp.cells)
            done = sum(k == c.experiment.n_runs for k, c in zip(held, comp.cells, strict=True))
            if kept:
                print(f"tanksim compare-rulesets: interrupted: stored {kept} of {total} battles in {out} "
                      f"({done} of {len(comp.cells)} cells complete); run the same command again to complete it",
                      file=sys.stderr)
            else:
                print("tanksim compare-rulesets: interrupted: no battle played; run the same command again to "
                      "start it", file=sys.stderr)
            return 130
        if any(s.interrupted for s in summaries):
            stored = sum(s.stored_before + s.played for s in summaries)
            stored += sum(len(store.stored_run_keys(compare.cell_folder(out, c)))
                          for c in comp.cells[len(summaries):] if compare.cell_folder(out, c).is_dir())
            total = sum(c.experiment.n_runs for c in comp.cells)
            print(f"tanksim compare-rulesets: interrupted: stored {stored} of {total} battles in {out} "
                  f"({len(summaries) - 1} of {len(comp.cells)} cells complete); run the same command again to "
                  f"complete it", file=sys.stderr)
            return 130
        failed = sum(s.failed_stored for s in summaries)
        played = sum(s.played for s in summaries)
        wall = sum(s.wall_s for s in summaries)
        print(f"{out}: {sum(s.total for s in summaries)} battles in {len(summaries)} cells, {played} played now "
              f"in {wall:.0f} s", file=sys.stderr if args.json else sys.stdout)
    try:
        kw = {} if args.resamples is None else {"resamples": args.resamples}
        doc = compare.analyse(comp, out, **kw)
    except (OSError, ValueError, KeyError, CorruptResults) as exc:
        print(f"tanksim compare-rulesets: {out}: {exc}", file=sys.stderr)
        return 2
    doc["folder"] = str(out)
    if failed:
        doc["failed_battles"] = failed
    if args.json:
        print(json.dumps(compare.jsonable(doc)))
    else:
        print("\n".join(compare.summary_lines(doc)))
        if failed:
            print(f"({failed} failed or timed-out battles are left out; --retry with tanksim batch on a cell)")
    return 1 if failed else 0
