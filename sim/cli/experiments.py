"""``tanksim batch EXPERIMENT.yaml --out DIR [--workers N] [--scheduler ADDRESS | --dask-local N] [--new]
[--events] [--tables] [--watchdog S] [--chunk-seconds S] [--retry-failed] [--no-progress]``

Plays every battle of an experiment file (see :mod:`sim.experiments.design`) that ``DIR`` does not hold yet, with a
progress bar (runs done, runs/s, ETA), and stores them as Parquet parts (see :mod:`sim.experiments.batch`).  Run the
same command again after an interruption to complete it.  Exit codes: 0 done, every battle ok; 1 done but some stored
battles failed or timed out (``--retry-failed`` plays them again, replacing their rows); 2 bad input (including a design
point whose scenario is invalid: nothing is run) or a refused folder (another experiment's, an unreadable manifest, or
``DIR: in use by pid N``: another batch is writing it); 130 interrupted (Ctrl-C or SIGTERM; the stored runs are kept).
On start every stored part is verified against its checksum; a bad chunk is moved to ``DIR/quarantine`` (a warning
names it) and its battles are played again.
"""
from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from sim.cli.argtypes import above, output_folder, workers


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tanksim batch", description="Run an experiment's battles in parallel and "
                                 "store them (resumable).")
    ap.add_argument("experiment", help="experiment YAML file")
    ap.add_argument("--out", required=True, type=output_folder, help="results folder (created; re-use it to resume)")
    ap.add_argument("--workers", type=workers, help="process-pool workers (default: the number of cores)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask cluster (tcp://host:8786)")
    g.add_argument("--dask-local", type=workers, metavar="N",
                   help="run on a local Dask cluster of N worker processes")
    ap.add_argument("--new", action="store_true",
                    help="accept a changed experiment file for an existing folder (stored runs still in the "
                         "design are reused)")
    ap.add_argument("--events", action="store_true", help="also store every battle's event log and per-turn series")
    ap.add_argument("--tables", action="store_true",
                    help="also store the tidy tables: one row per shot (shots/) and per tank per turn (tanks/)")
    ap.add_argument("--watchdog", type=above(0), metavar="S", help="seconds one battle may take (default: the file's)")
    ap.add_argument("--chunk-seconds", type=above(0), metavar="S", help="target seconds of work per task")
    ap.add_argument("--retry-failed", action="store_true",
                    help="play stored failed / timed-out battles again (their rows are replaced)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tanksim batch``; returns the exit code."""
    from sim.experiments.batch import BatchRefused, execute
    from sim.experiments.design import load_experiment
    from sim.experiments.store import CorruptResults, FolderInUse
    from sim.scenario import ScenarioError

    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        exp = load_experiment(args.experiment)
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"tanksim batch: {exc}", file=sys.stderr)
        return 2
    where = (f"Dask scheduler {args.scheduler}" if args.scheduler else
             f"local Dask cluster of {args.dask_local} workers" if args.dask_local else
             f"process pool of {args.workers or 'all'} workers")
    from sim.cli.main import plural

    def header() -> None:   # once the folder is locked and verified: a refused folder prints only its error
        print(f"{exp.spec.name}: {plural(len(exp.points), 'design point')} x "
              f"{plural(exp.spec.replications, 'replication')} = {plural(exp.n_runs, 'battle')} of {exp.base_src}, "
              f"on a {where}; results in {args.out}", file=sys.stderr)

    old = signal.signal(signal.SIGTERM, _sigterm)
    show = warnings.showwarning
    warnings.showwarning = lambda message, *a, **k: print(f"tanksim batch: warning: {message}", file=sys.stderr)
    try:
        s = execute(exp, args.out, workers=args.workers, scheduler=args.scheduler, dask_local=args.dask_local,
                    new=args.new, events=args.events, watchdog_s=args.watchdog, chunk_s=args.chunk_seconds,
                    progress=not args.no_progress, retry_failed=args.retry_failed,
                    tables=args.tables, on_start=header,
                    announce=lambda text: print(f"tanksim batch: {text}", file=sys.stderr, flush=True))
    except (BatchRefused, FolderInUse) as exc:
        print(f"tanksim batch: {exc}", file=sys.stderr)
        return 2
    except CorruptResults as exc:
        print("\n".join(f"tanksim batch: {p}" for p in exc.problems), file=sys.stderr)
        if exc.hint:
            print(f"tanksim batch: {exc.hint}", file=sys.stderr)
        return 2
    except (ValueError, ImportError, OSError) as exc:
        print(f"tanksim batch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before the executor was up: what the folder holds (an earlier run's battles)
        from sim.experiments.store import count_stored

        kept = count_stored(args.out, (r.key for r in exp.runs()))
        if kept:
            print(f"tanksim batch: interrupted: stored {kept} of {plural(exp.n_runs, 'battle')} in {args.out} "
                  f"(played 0 now); run the same command again to complete the remaining {exp.n_runs - kept}",
                  file=sys.stderr)
        else:
            print("tanksim batch: interrupted: no battle played; run the same command again to start it",
                  file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
        warnings.showwarning = show
    stored = s.stored_before + s.played
    bad = (f"{s.failed_stored} of {s.total} stored battles failed or timed out (their status and error columns: "
           f"{Path(args.out) / 'report' / 'runs.csv'}, written by tanksim report {args.out}); fix the cause and "
           f"re-run with --retry-failed to play them again")
    if s.played == 0 and not s.interrupted:
        print(f"all {s.total} battles already stored in {args.out}; nothing to do. "
              f"See: tanksim report {args.out}")
        if s.failed_stored:
            print(f"tanksim batch: {bad}", file=sys.stderr)
            return 1
        return 0
    if s.interrupted:   # one line on stderr, as every command's Ctrl-C (sim.cli.main.interrupted_line)
        print(f"tanksim batch: interrupted: stored {stored} of {plural(s.total, 'battle')} in {args.out} (played "
              f"{s.played} now in {s.wall_s:.1f} s, {s.failed} failed); run the same command again to complete "
              f"the remaining {s.total - stored}", file=sys.stderr)
        return 130
    print(f"done: played {plural(s.played, 'battle')} in "
          f"{s.wall_s:.1f} s ({s.rate:.2f}/s on {plural(s.workers, s.executor + ' worker')}), {s.failed} failed; "
          f"stored {stored} of {s.total}"
          + (f" ({s.stored_before} from earlier runs)" if s.stored_before else ""))
    print(f"see: tanksim report {args.out}")
    if s.failed_stored:
        print(f"tanksim batch: {bad}", file=sys.stderr)
        return 1
    return 0
