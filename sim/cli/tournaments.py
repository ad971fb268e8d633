"""``tanksim tournament`` and ``tanksim match``.

``tanksim tournament FILE --out DIR [--workers N | --scheduler ADDR | --dask-local N] [--new] [--no-plots]
[--no-progress]``: play the round robin (or, with ``format: gauntlet``, the gauntlet) of a tournament file
(:mod:`sim.tournaments.tournament`) into ``DIR`` (resumable: run it again to finish an interrupted tournament), then
print and save the leaderboard, head-to-head matrix, per-scenario and per-rule-set scores, the side-bias check and, for
a round robin, the meta-game (Parquet + CSV + PNG).

``tanksim match A B --scenario FILE --sprt elo0=0,elo1=20,alpha=0.05,beta=0.05 [--max-games N] [--seed S]
[--workers N] [--isolation process] [--out DIR]``: ``A`` and ``B`` are doctrines (``NAME[:param=value,...]``,
built-in or ``package.module:Class``).  Plays side-swapped pairs of games sharing a seed until the pentanomial
SPRT (:mod:`sim.tournaments.sprt`; logistic Elo, or normalized Elo with ``model=normalized``) accepts H0 or H1 or the
game limit is reached, printing the running LLR after every pair, then the Elo estimate with the leaderboard's interval
(Bradley-Terry with virtual draws, profile likelihood) and the nElo estimate.

``--json`` (both): the human report goes to stderr and stdout gets one JSON object: for a tournament its
``tournament`` name, ``games`` / ``played`` / ``stored_before`` / ``interrupted``, the ``leaderboard`` rows and the
``head_to_head`` matrix (missing values as ``null``); for a match the summary ``match.json`` holds.

Exit codes (:data:`EXIT_VERDICT` ...): 0 done (a tournament finished; a match reached a verdict, H0 or H1 alike:
the verdict is the last line and the JSON's ``verdict``), 130 interrupted (Ctrl-C or SIGTERM) before the end, as
``tanksim batch`` (an interrupted tournament prints its tables under the stdout heading ``interrupted: 104 of 120
games; partial results``, so they are not taken for the finished tournament's), 2 bad usage or
input (including entrants that cannot be loaded), 3 a match without a verdict within its game limit (the LLR stayed
between its bounds: the output says how many games such a test needs on average).  Decided here: like Fishtest,
where H0 and H1 are both a finished test, the two verdicts share code 0, and an inconclusive match has its own code
so a script can tell "play more games" from a failure.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sim.cli.argtypes import MAX_SEED, between, output_folder, workers
from sim.scenario import ScenarioError

#: Most games ``match --max-games`` allows (a tournament file's ``games_per_pairing`` bound).
MAX_GAMES = 100_000

#: Exit codes of ``tanksim tournament`` and ``tanksim match`` (see the module docstring).
EXIT_VERDICT, EXIT_INTERRUPTED, EXIT_USAGE, EXIT_NO_VERDICT = 0, 130, 2, 3


def json_safe(x: Any) -> Any:
    """``x`` with NaN / infinite floats as ``None`` and numpy scalars as Python values (strict JSON)."""
    if hasattr(x, "item") and not isinstance(x, (list, tuple, dict)):
        try:
            x = x.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    return x


def _frame_records(df: Any) -> list[dict[str, Any]]:
    return [] if df is None else [json_safe(r) for r in df.to_dict("records")]


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=workers, help="local worker processes (default: the file's, else cores)")
    p.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    p.add_argument("--dask-local", type=workers, metavar="N", help="start a local Dask cluster of N workers")


def main(argv: Sequence[str] | None = None) -> int:
    """``tanksim tournament FILE --out DIR``; returns the exit code."""
    p = argparse.ArgumentParser(prog="tanksim tournament", description="Round-robin (or gauntlet) tournament of "
                                                                       "doctrines.")
    p.add_argument("file", help="tournament YAML file")
    p.add_argument("--out", required=True, type=output_folder, help="results folder (resumable)")
    _executor_args(p)
    p.add_argument("--new", action="store_true", help="accept a folder holding a different tournament")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object (report to stderr)")
    args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    return _with_json(args, _tournament)


def _with_json(args: argparse.Namespace, run: Callable[[argparse.Namespace, dict[str, Any] | None], int]) -> int:
    """Run a subcommand; with ``--json`` its report goes to stderr and the dict it fills is printed as one JSON
    object on stdout (nothing is printed if it filled nothing, e.g. after an error)."""
    if not args.json:
        return run(args, None)
    out: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):
        rc = run(args, out)
    if out:
        print(json.dumps(out, sort_keys=True))
    return rc


def _tournament(args: argparse.Namespace, as_json: dict[str, Any] | None) -> int:
    from sim.tournaments import tournament as T

    try:
        t = T.load_tournament(args.file)
        games = T.schedule(t)
        fmt = ("round robin" if t.spec.format == "round_robin" else
               f"gauntlet of {', '.join(t.names[:t.spec.seeds])} against the field")
        n = T.plural

        def header() -> None:   # printed once every check that can refuse the file or folder has passed
            print(f"tournament {t.spec.name} ({fmt}): {n(len(t.entrants), 'entrant')}, "
                  f"{n(len(t.scenarios), 'scenario')} "
                  f"({', '.join(f'{lab} [{sc.ruleset.name}]' for lab, sc in t.scenarios)}), "
                  f"{n(t.spec.games_per_pairing, 'game')} per pairing and scenario -> {n(len(games), 'game')}")
            for e in t.entrants:
                print(f"  {e.name:<16} {e.describe()}")

        t0 = time.perf_counter()
        summary = T.run_tournament(t, args.out, workers=args.workers, scheduler=args.scheduler,
                                   dask_local=args.dask_local, new=args.new, progress=not args.no_progress,
                                   on_start=header)
        played = time.perf_counter() - t0
        try:
            games_df = T.load_games(t, args.out)
            if games_df.empty:
                if as_json is not None and summary.interrupted:
                    as_json.update(_interrupted_json(t, len(games), 0, summary, args.out))
                print("tanksim tournament: interrupted: no games stored yet; run the same command again to play "
                      "them" if summary.interrupted else "tanksim tournament: no games stored yet", file=sys.stderr)
                return EXIT_INTERRUPTED
            res = T.analyse(t, games_df)
            written = T.write_results(res, t, args.out, plots=not args.no_plots)
        except KeyboardInterrupt:   # while the ratings and tables are computed: every game played is stored
            kept = _stored_games(t, args.out)
            if as_json is not None:
                as_json.update(_interrupted_json(t, len(games), kept, summary, args.out))
            what = (f"stored {kept} of {T.plural(len(games), 'game')} in {args.out}; run the same command again to "
                    f"finish" if kept else "no games stored yet; run the same command again to play them")
            print(f"tanksim tournament: interrupted: {what}", file=sys.stderr)
            return EXIT_INTERRUPTED
        analysed = time.perf_counter() - t0 - played
    except T.TournamentFolderError as exc:
        print("\n".join(f"tanksim tournament: {e}" for e in exc.errors), file=sys.stderr)
        return 2
    except (T.TournamentError, ScenarioError) as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, ImportError) as exc:
        print(f"tanksim tournament: {exc}", file=sys.stderr)
        return 2
    print()
    if summary.interrupted:
        print(f"interrupted: {len(games_df)} of {T.plural(len(games), 'game')}; partial results (run the same "
              f"command again to finish)")
        print()
    print(T.format_results(res, t))
    print()
    where = f" on {summary.executor} x {summary.workers} ({summary.rate:.2f} games/s)" if summary.played else ""
    print(f"played {T.plural(summary.played, 'game')} ({summary.stored_before} already stored) in "
          f"{summary.wall_s:.1f} s"
          + where
          + f"; ratings and tables in {analysed:.1f} s")
    print(f"results in {args.out}: {file_list([*written, Path(args.out) / T.MANIFEST])}")
    if as_json is not None:
        h2h = res.head_to_head
        as_json.update(tournament=t.spec.name, format=t.spec.format, games=len(games), played=summary.played,
                       stored_before=summary.stored_before, interrupted=summary.interrupted, out=str(args.out),
                       leaderboard=_frame_records(res.leaderboard),
                       head_to_head=json_safe({str(r): dict(h2h.loc[r]) for r in h2h.index}),
                       files=sorted(str(p) for p in written))
    if summary.interrupted:   # one line on stderr, as every command's Ctrl-C
        print(f"tanksim tournament: interrupted: stored {len(games_df)} of {T.plural(len(games), 'game')} in "
              f"{args.out}; run the same command again to finish", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_VERDICT


def _stored_games(t: Any, out: str | Path) -> int:
    """How many of ``t``'s scheduled games the folder ``out`` holds (0 if it cannot be read)."""
    from sim.tournaments import tournament as T

    try:
        return len(T.load_games(t, out))
    except (OSError, ValueError, KeyError, KeyboardInterrupt):
        return 0


def _interrupted_json(t: Any, total: int, kept: int, summary: Any, out: str | Path) -> dict[str, Any]:
    """The ``--json`` object of a tournament stopped before its tables: ``interrupted: true`` and the counts."""
    return {"tournament": t.spec.name, "format": t.spec.format, "games": total, "stored": kept,
            "played": summary.played, "stored_before": summary.stored_before, "interrupted": True,
            "out": str(out)}


def file_list(paths: Iterable[Path]) -> str:
    """Every file written, once, names sharing a stem grouped: ``leaderboard.csv/.parquet, tournament.json``
    (the tournament's last line: the CSV copies and the JSON are named as well as the Parquet tables)."""
    stems: dict[str, set[str]] = {}
    for p in paths:
        stems.setdefault(p.stem, set()).add(p.suffix)
    return ", ".join(stem + "/".join(sorted(exts)) for stem, exts in sorted(stems.items()))


# --- match ----------------------------------------------------------------------------------------------------------
def parse_entrant(text: str, isolation: str = "in_process", limits: dict | None = None, name: str | None = None):
    """``NAME[:param=value,...]`` (as ``--policy``, without the side) -> :class:`sim.tournaments.tournament.Entrant`."""
    from agents.isolation import Limits
    from sim.cli.main import parse_policy_arg
    from sim.tournaments.tournament import Entrant

    _, pol, params = parse_policy_arg("x=" + text)
    if not pol:
        raise ValueError(f"{text!r}: expected a doctrine NAME[:param=value,...]")
    lim = Limits(**(limits or {})).model_dump() if isolation == "process" else None
    return Entrant(name or text, pol, params, None, isolation, lim)


def _pairs(sc: Any, label: str, a: Any, b: Any, seed: int, n_pairs: int, decision_timeout_s: float,
           battle_timeout_s: float) -> Iterator[Any]:
    from sim.tournaments.tournament import Chunk, derive_seed, pair_games

    for k in range(n_pairs):
        g = pair_games(label, sc, a, b, k, derive_seed(seed, "match", label, k), decision_timeout_s, 2 * k)
        yield Chunk({sc.digest(): sc}, g, battle_timeout_s, decision_timeout_s)


def match_main(argv: Sequence[str] | None = None) -> int:
    """``tanksim match A B --scenario FILE --sprt ...``; returns the exit code."""
    p = argparse.ArgumentParser(prog="tanksim match", description="SPRT match between two doctrines on mirrored "
                                                                  "game pairs.",
                                epilog="exit status: 0 a verdict (H0 or H1 accepted), 130 interrupted, 2 bad usage or "
                                       "input, 3 no verdict within --max-games (the output says how many games such "
                                       "a test needs on average)")
    p.add_argument("a", help="entrant A: NAME[:param=value,...]")
    p.add_argument("b", help="entrant B: NAME[:param=value,...]")
    p.add_argument("--scenario", required=True, help="scenario file or bundled name")
    p.add_argument("--sprt", default="elo0=0,elo1=20,alpha=0.05,beta=0.05",
                   help="elo0=..,elo1=..,alpha=..,beta=..[,model=normalized] (Elo of A over B: logistic Elo, "
                        "or normalized Elo with model=normalized)")
    p.add_argument("--max-games", type=between(2, MAX_GAMES), default=2000, help="game limit (pairs = games / 2)")
    p.add_argument("--seed", type=between(-MAX_SEED - 1, MAX_SEED), default=0,
                   help="root seed (63-bit, as a tournament file's root_seed)")
    p.add_argument("--isolation", choices=("in_process", "process"), default="in_process")
    p.add_argument("--decision-timeout", type=between(0.0, 86_400.0, float), default=30.0,
                   help="seconds per decision (0 = off)")
    p.add_argument("--battle-timeout", type=between(0.0, 7 * 86_400.0, float), default=600.0,
                   help="watchdog seconds per battle (0 = off)")
    p.add_argument("--out", type=output_folder, help="folder for the match's games (Parquet + CSV) and summary JSON")
    p.add_argument("--quiet", action="store_true", help="print only the verdict line (errors and warnings still go "
                   "to stderr; --json and --out are unchanged)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object (report to stderr)")
    _executor_args(p)
    args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    return _with_json(args, _match)


def _match(args: argparse.Namespace, as_json: dict[str, Any] | None) -> int:
    from sim.scenario import load_scenario
    from sim.tournaments import ratings as R
    from sim.tournaments import sprt as S
    from sim.tournaments import tournament as T

    try:
        test = S.SequentialTest(S.parse_sprt(args.sprt))
        if args.max_games < 2:
            raise ValueError(f"--max-games {args.max_games}: expected at least 2 (one pair)")
        sc = load_scenario(args.scenario)
        na, nb = (args.a, args.b) if args.a != args.b else (f"{args.a} (A)", f"{args.b} (B)")
        a = parse_entrant(args.a, args.isolation, name=na)
        b = parse_entrant(args.b, args.isolation, name=nb)
        problems = T.check_entrants([a, b])
        if problems:
            raise T.EntrantLoadFailure([f"tanksim match: {p}" for p in problems])
    except (T.TournamentError, ScenarioError) as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"tanksim match: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 2
    lo, hi = test.sprt.bounds
    n_pairs = args.max_games // 2
    if args.max_games % 2:
        print(f"tanksim match: --max-games {args.max_games} is odd; games are played in mirrored pairs, so it is "
              f"rounded down to {T.plural(n_pairs, 'pair')} ({2 * n_pairs} games)", file=sys.stderr)
    # --quiet: the verdict line alone on stdout (as a script reading Fishtest's result wants); errors and warnings
    # still go to stderr
    say = _silent if args.quiet else print
    say(f"match {na} v {nb} on {sc.name} [{sc.ruleset.name}]: SPRT {test.sprt.text()}, LLR bounds "
        f"({lo:.3f}, {hi:.3f}), at most {T.plural(n_pairs, 'pair')} ({T.plural(2 * n_pairs, 'game')})")
    say(f"  {_typical(test.sprt)}")
    t0 = time.perf_counter()
    interrupted = False
    results: dict[int, list[dict]] = {}
    games: list[dict] = []
    cursor = 0
    skipped = 0
    info: dict[str, Any] = {}
    gen = T.run_chunks(_pairs(sc, sc.name, a, b, args.seed, n_pairs, args.decision_timeout, args.battle_timeout),
                       workers=args.workers, scheduler=args.scheduler, dask_local=args.dask_local, pool_info=info)
    try:
        for chunk, rows in gen:
            # a pair's two games may come back in parts: a game past its watchdog, or one whose worker died, is
            # yielded on its own and the pair's other game after it (run_chunks)
            results.setdefault(chunk.games[0].rep, []).extend(rows)
            while len(results.get(cursor, ())) >= 2:
                g1, g2 = sorted(results.pop(cursor), key=lambda r: r["leg"])
                cursor += 1
                games += [g1, g2]
                if g1["status"] != "ok" or g2["status"] != "ok":
                    skipped += 1
                    bad = g1 if g1["status"] != "ok" else g2
                    say(f"pair {cursor:4d}: not scored ({bad['status']}: {bad.get('error')})")
                    continue
                s = g1["score1"] + (1 - g2["score1"])
                try:
                    test.add(s)
                except S.SPRTError as exc:   # a statistic that cannot be computed: say so, no traceback
                    print(f"tanksim match: {exc} (after {T.plural(test.pairs, 'pair')}, pentanomial {test.counts})",
                          file=sys.stderr)
                    return 2
                if not args.quiet:
                    marks = "".join("WDL"[int(2 - 2 * x)] for x in (g1["score1"], 1 - g2["score1"]))
                    print(f"pair {cursor:4d}: {na} {s:.1f}/2 ({marks})  ptnml {test.counts}  LLR {test.llr:+.3f}  "
                          f"({lo:+.3f}, {hi:+.3f})", flush=True)
                if test.result:
                    break
            if test.result or cursor >= n_pairs:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        gen.close()
    wall = time.perf_counter() - t0
    elo, elo_lo, elo_hi = S.elo_estimate(test.counts)
    nelo, nelo_lo, nelo_hi = S.nelo_estimate(test.counts)
    n_games = 2 * test.pairs
    score = (sum(i * c for i, c in enumerate(test.counts)) / 4 / test.pairs) if test.pairs else float("nan")
    not_scored = f", {T.plural(skipped, 'pair')} not scored" if skipped else ""
    on = f"in {wall:.1f} s" + (f" on {info['kind']} x {info.get('workers', '?')}" if info.get("kind") else "")
    if not test.pairs:   # no score, no Elo: nothing to print as a rate (it was "scored nan", "Elo nan")
        nothing = "no pair scored" if skipped else "no games finished"
        say(f"{T.plural(test.pairs, 'pair')} ({T.plural(n_games, 'game')}{not_scored}) {on}: {nothing}")
    else:
        say(f"{T.plural(test.pairs, 'pair')} ({T.plural(n_games, 'game')}{not_scored}) {on}: {na} scored "
            f"{score:.3f}, pentanomial {test.counts}, LLR {test.llr:+.3f}")
        say(f"  Elo {_elo(elo)} [{_elo(elo_lo)}, {_elo(elo_hi)}] (95 %: Bradley-Terry with {R.PRIOR_DRAWS:g} "
            f"virtual draws, profile likelihood -- the leaderboard's method); nElo "
            + (f"{_elo(nelo)} [{_elo(nelo_lo)}, {_elo(nelo_hi)}]" if not math.isnan(nelo) else
               "undefined (every pair scored the same: no variance)"))
    e = test.sprt
    u = e.unit
    if test.result == "H1":
        print(f"verdict: H1 accepted -- {na} is stronger than {nb} ({u} {e.elo1:g} over {u} {e.elo0:g}, "
              f"alpha {e.alpha:g}, beta {e.beta:g})")
    elif test.result == "H0":
        print(f"verdict: H0 accepted -- {na} is not {e.elo1:g} {u} stronger than {nb} ({u} {e.elo0:g} over "
              f"{u} {e.elo1:g}, alpha {e.alpha:g}, beta {e.beta:g})")
    else:
        why = "interrupted" if interrupted else "game limit reached"
        print(f"verdict: none -- no verdict after {n_games} games ({why}): "
              + (f"the LLR {test.llr:+.3f} stayed inside ({lo:+.3f}, {hi:+.3f})" if test.pairs else
                 "no pair scored yet"))
        say(f"  {_typical(e, test.counts if test.pairs else None)}")
        rate = test.llr / test.pairs if test.pairs else 0.0
        if rate:
            bound = hi if rate > 0 else lo
            more = 2 * math.ceil((bound - test.llr) / rate)
            say(f"  at the rate so far (LLR {rate:+.3f} per pair) the bound {bound:+.3f} is about {more} more games "
                  f"away")
        if not interrupted:
            say(f"  raise --max-games (now {2 * n_pairs}) to go on (exit code {EXIT_NO_VERDICT})")
    match_summary = {"a": na, "b": nb, "scenario": sc.name, "ruleset": sc.ruleset.name,
                     "sprt": e.text(), "bounds": [lo, hi], "pairs": test.pairs,
                     "pentanomial": test.counts, "llr": test.llr, "verdict": test.result,
                     "elo": [elo, elo_lo, elo_hi], "nelo": [nelo, nelo_lo, nelo_hi],
                     "model": e.model, "wall_s": wall,
                     "expected_games": dict(zip(("at_elo0", "at_elo1", "midway"),
                                                S.expected_length(e, test.counts if test.pairs else None).games))}
    if as_json is not None:
        as_json.update(json_safe({**match_summary, "games": n_games, "skipped_pairs": skipped, "score": score}))
    if args.out:
        _write_match(Path(args.out), games, match_summary)
        say(f"games and summary in {args.out}")
    if test.result:
        return EXIT_VERDICT
    if interrupted:   # one line on stderr, as every command's Ctrl-C; a match is not resumable: it is replayed
        print(f"tanksim match: interrupted: no verdict after {T.plural(test.pairs, 'pair')}; run the same command "
              f"again to play the match to its end (it starts again from pair 1, with the same games)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_NO_VERDICT


def _silent(*_args: Any, **_kwargs: Any) -> None:
    """``print`` under ``--quiet``: nothing."""


def _typical(sprt: Any, counts: Sequence[float] | None = None) -> str:
    """One sentence: how many games the SPRT needs on average (:func:`sim.tournaments.sprt.expected_length`), from
    the pair-score spread of ``counts`` when given (and not all alike), else assuming no draws."""
    from sim.tournaments import sprt as S

    n = S.expected_length(sprt, counts)
    g0, g1, mid = n.games
    u = sprt.unit
    if sprt.model == "normalized":
        basis = "in normalized Elo the length does not depend on the draw rate"
    elif counts is not None and sum(1 for c in counts if c) >= 2:  # two kinds of pair score: a spread
        basis = "from this match's score spread"
    elif counts is not None:
        basis = ("this match's pairs all scored alike, so there is no spread to estimate from yet: no draws "
                 "assumed; draws and the side swap make it shorter")
    else:
        basis = "no draws assumed; draws and the side swap make it shorter"
    at = f"about {g1} games" if g0 == g1 else f"about {g0} games at {u} {sprt.elo0:g}, {g1} at {u} {sprt.elo1:g}"
    return (f"such a test needs on average {at} when the true difference is {u} {sprt.elo0:g} or {sprt.elo1:g}, "
            f"about {mid} midway (Wald's approximation, {basis})")


def _elo(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x + 0.0:+.0f}"   # + 0.0: no "-0"


def _write_match(out: Path, games: list[dict], summary: dict) -> None:
    import pyarrow as pa

    from sim.tournaments.tournament import GAME_SCHEMA

    out.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(games, schema=GAME_SCHEMA)
    import pyarrow.parquet as pq

    pq.write_table(table, out / "match_games.parquet")
    table.to_pandas().to_csv(out / "match_games.csv", index=False)
    def plain(x: Any) -> Any:   # NaN (an undefined estimate) -> null: strict JSON
        if isinstance(x, float) and math.isnan(x):
            return None
        return [plain(v) for v in x] if isinstance(x, list | tuple) else x

    summary = {k: plain(v) for k, v in summary.items()}
    (out / "match.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
