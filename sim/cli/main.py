"""The ``tanksim`` command line.

``tanksim run [SCENARIO] [--seed N] [--out DIR] [--plot FILE.png] [--json] [--policy SIDE=NAME[:k=v,...]]``
``tanksim odds RULESET name=value ... [--json]`` / ``tanksim odds --scenario FILE --shooter LABEL --target LABEL``
``tanksim cases FILE.yaml ... [--json]`` (last line ``N passed, M failed``; exit 1 on any failure)
``tanksim validate FILE ... [--json]``
and, from their own modules, ``batch``, ``report``, ``power``, ``tournament``, ``match``, ``replay``, ``app``,
``catalog`` (:mod:`sim.cli.catalog`), ``generate`` (:mod:`sim.cli.generate`), ``oracle`` (:mod:`sim.cli.oracle`),
``compare-rulesets`` (:mod:`sim.cli.compare`).
Exit codes: 0 success, 1 a failed check (cases, validation), 2 bad usage or input, 130 interrupted (Ctrl-C or
SIGTERM: one line on stderr, ``tanksim NAME: interrupted``, or ``tanksim NAME: interrupted: what was kept; how to
go on`` from the subcommands that keep something: batch, compare-rulesets, tournament, match, app; see
:func:`main`).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Sequence, TextIO

from sim.cli import argtypes
from sim.rules import base as rules_base
from sim.scenario import ScenarioError

#: Subcommands that live in their own modules: name -> "module:function(argv) -> int".
EXTERNAL = {
    "batch": "sim.cli.experiments:main",
    "report": "sim.experiments.report:main",
    "power": "sim.experiments.report:power_main",
    "tournament": "sim.cli.tournaments:main",
    "match": "sim.cli.tournaments:match_main",
    "replay": "sim.view.replay:main",
    "app": "sim.view.app:main",
    "catalog": "sim.cli.catalog:main",
    "generate": "sim.cli.generate:main",
    "oracle": "sim.cli.oracle:main",
    "compare-rulesets": "sim.cli.compare:main",
}


def parse_policy_arg(text: str) -> tuple[str, str, dict[str, str]]:
    """``SIDE=NAME[:param=value,...]`` -> ``(side, name, params)``.  A plug-in name keeps its ``module:Class``
    colon: parameters start after the first ``:`` that is followed by ``key=value``."""
    if "=" not in text:
        raise ValueError(f"--policy {text!r}: expected SIDE=NAME[:param=value,...]")
    side, _, rest = text.partition("=")
    name, params = rest, {}
    parts = rest.split(":")
    from agents.policies import BUILTIN

    if parts[0] in BUILTIN and len(parts) > 1 and not any("=" in x for x in parts[1:]):
        raise ValueError(f"--policy {text!r}: parameter {parts[1]!r} needs a value (key=value)")
    for i in range(1, len(parts)):
        if "=" in parts[i]:
            name = ":".join(parts[:i])
            for kv in ":".join(parts[i:]).split(","):
                if kv.strip():
                    k, sep, v = kv.partition("=")
                    if not sep:
                        raise ValueError(f"--policy {text!r}: parameter {kv!r} is not key=value")
                    if k.strip() in params:
                        raise ValueError(f"--policy {text!r}: parameter {k.strip()!r} given twice; expected each "
                                         f"parameter once")
                    params[k.strip()] = v.strip()
            break
    return side.strip(), name.strip(), params


def _kv(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep:
            raise ValueError(f"{it!r}: expected name=value")
        if k.strip() in out:
            raise ValueError(f"{k.strip()!r} given twice ({out[k.strip()]!r}, then {v.strip()!r}); expected each "
                             f"parameter once")
        out[k.strip()] = v.strip()
    return out


#: ``tanksim run``'s decision limit (seconds) when neither ``--decision-timeout`` nor the scenario sets one (the
#: tournament's default): a decision still running ``max(1, limit / 2)`` s past it is cut off as a ``timeout`` fault.
RUN_DECISION_TIMEOUT_S = 30.0


def cmd_run(args: argparse.Namespace) -> int:
    from agents.controllers import PolicyLoadError, check_policy
    from sim.events import RuleEvent
    from sim.experiments.store import write_battle
    from sim.model import BattleModel
    from sim.runner import losses_by_cause, result_of
    from sim.scenario import PolicySpec, load_scenario, side_index
    from sim.view.render import picture_of, save_board, shots_of

    if args.from_dir:
        from sim.experiments.batch import rerun_from

        given = (("SCENARIO", args.scenario), ("--policy", args.policy), ("--out", args.out),
                 ("--seed", args.seed or None), ("--decision-timeout", args.decision_timeout))
        clash = [n for n, v in given if v]
        if clash or not args.battle:
            drop = f" (drop {', '.join(clash)})" if clash else ""
            raise ValueError("--from DIR takes --battle ID (a run_key of the stored runs) and optionally --plot/--json;"
                             f" the stored row fixes the scenario, seed and policies{drop}")
        return rerun_from(args.from_dir, args.battle, plot=args.plot, as_json=args.json)
    if args.battle:
        raise ValueError("--battle goes with --from DIR")
    spec = load_scenario(args.scenario or "default")
    policies = {}
    for p in args.policy or []:
        side, name, params = parse_policy_arg(p)
        try:
            si = side_index(spec, side)
        except KeyError as exc:   # the option typed first, as for every other --policy problem
            raise ValueError(f"--policy {p!r}: {exc.args[0]}") from None
        if si in policies:
            raise ValueError(f"--policy {p!r}: side {spec.sides[si].name} already has a --policy")
        try:   # checked here (statically, as a scenario's policy is) so the message names the option typed
            check_policy(name, params)
        except PolicyLoadError as exc:
            raise ValueError(f"--policy {p!r}: {exc}") from None
        policies[si] = PolicySpec(name=name, params=params)
    import time
    t0 = time.perf_counter()
    limit = args.decision_timeout
    if limit is None and all(side.decision_timeout_s is None for side in spec.sides):
        limit = RUN_DECISION_TIMEOUT_S   # so a doctrine that never returns is cut off, not waited for
    model = BattleModel(spec, args.seed, policies, decision_timeout_s=limit, cut_off_overruns=True)
    model.run()
    result = result_of(model, time.perf_counter() - t0, tables=bool(args.out))
    row = result.row
    replaced = bool(args.out) and (Path(args.out) / "battle.parquet").is_file()  # an earlier battle's files
    if args.out:
        paths = write_battle(result, args.out)
    if args.plot:
        save_board(picture_of(model.battle, shots_of(model.battle),
                              f"{spec.name} seed {args.seed}: {row['winner'] or 'draw'} (turn {row['turns']})"),
                   args.plot)
    if args.json:
        out = {k: v for k, v in row.items() if k != "wall_s"}
        out["points"] = json.loads(out["points"])
        out["policies"] = json.loads(out["policies"])
        out["winner_side"] = None if out["winner_index"] < 0 else out["winner_index"] + 1
        for si, lost_how in enumerate(losses_by_cause(model.battle.log, model.battle.tanks)):
            out[f"side{si + 1}_losses"] = lost_how
        print(json.dumps(out, sort_keys=True))
        return 0
    b = model.battle
    print(f"{spec.name} ({b.ruleset.name}), seed {args.seed}")
    print(f"  result:  {'winner ' + row['winner'] if row['winner'] else 'draw'} - {row['reason']}")
    print(f"  turns:   {row['turns']} of {b.turn_limit}")
    causes = losses_by_cause(b.log, b.tanks)
    for si, s in enumerate(b.sides):
        pol = model.resolved_policies[si]
        how = ", ".join(f"{why}: {n}" for why, n in causes[si].items()) if si < len(causes) else ""
        print(f"  {s.name:<10} ({s.role}, {pol['name']}): lost {row[f'side{si + 1}_lost']} of "
              f"{row[f'side{si + 1}_tanks']}{f' ({how})' if how else ''}, {row[f'side{si + 1}_alive']} fighting")
    lost = sum(int(row[f"side{si + 1}_lost"]) for si in range(len(b.sides)))
    other = lost - int(row["kills"])
    more = (f" ({plural(other, 'more tank')} lost other than by a shot's kill result: see the sides above)"
            if other > 0 else "")
    print(f"  shots {row['shots']}, hits {row['hits']}, kills {row['kills']}{more}; policy faults {row['faults']}")
    rams = sum(1 for e in b.log if isinstance(e.event, RuleEvent) and e.event.name == "ram")
    panics = sum(1 for e in b.log if isinstance(e.event, RuleEvent) and e.event.name == "panic")
    if rams or panics:
        print(f"  rams {rams}, panics {panics}")
    if row["deciding_shot"]:
        print(f"  deciding shot: {row['deciding_shot']}")
    if args.out:
        print(f"  wrote {', '.join(str(p) for p in paths.values())}"
              + (" (replacing the earlier battle's files there)" if replaced else ""))
    if args.plot:
        print(f"  board picture: {args.plot}")
    return 0


def cmd_odds(args: argparse.Namespace) -> int:
    if args.scenario:
        from sim.model import build_battle
        from sim.scenario import load_scenario

        if not args.shooter or not args.target:
            raise ValueError("--scenario needs both --shooter LABEL and --target LABEL")
        if args.params and "=" not in args.params[0]:
            raise ValueError(f"with --scenario the rule set comes from the scenario: drop {args.params[0]!r} "
                             "(name=value overrides are allowed)")
        spec = load_scenario(args.scenario)
        b = build_battle(spec)
        labels = {t.label: t.tank_id for t in b.tanks}
        for lab in (args.shooter, args.target):
            if lab not in labels:
                from sim.messages import did_you_mean

                opt = "--shooter" if lab == args.shooter else "--target"
                raise ValueError(f"{opt} {lab!r}: no tank labelled {lab!r}{did_you_mean(lab, labels)}; labels: "
                                 f"{', '.join(labels)}")
        rs = b.ruleset
        params = rs.shot_params(b, labels[args.shooter], labels[args.target])
        if isinstance(params, rules_base.Illegal):
            if args.json:
                print(json.dumps({"ruleset": rs.name, "shot_allowed": False, "reason": str(params)}))
            else:
                print(f"no shot: {params}", file=sys.stderr)
            return 1
        params = {**params, **_kv(args.params)}
        name = rs.name
    else:
        if not args.params:
            raise ValueError("give a rule set and name=value parameters, or --scenario/--shooter/--target")
        name, *rest = args.params
        params = _kv(rest)
    ruleset = rules_base.get(name)
    # every rule set's answer names its rule set first (Panzer Squadron's already did; ASL's and Hummel Quest's not)
    out = {"ruleset": ruleset.name, **ruleset.odds_from_params(params)}
    if args.json:
        print(json.dumps(out))
    else:
        width = max(map(len, out))   # the label column fits its longest label, for every rule set and mode
        for k, v in out.items():
            print(f"{k:>{width}}: {_odds_text(v)}")
    return 0


def _odds_text(v: Any) -> str:
    """One value of the ``odds`` text output: ``yes``/``no`` for a flag, ``-`` for none, a mapping as
    ``name: value, ...`` (its values the same way), a list as ``a, b``; anything else as ``str``."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "-"
    if isinstance(v, Mapping):
        return ", ".join(f"{a}: {_odds_text(b)}" for a, b in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_odds_text(x) for x in v)
    return str(v)


def cmd_cases(args: argparse.Namespace) -> int:
    """Run golden case files.  ``--json``: one object ``{"passed", "failed", "skipped", "cases": [{"file", "case",
    "status" (pass / fail / skip / error), "message"}]}`` instead of the lines.  Exit 0 all passed, 1 a case failed,
    2 a file is not a case file (missing, a folder, malformed: its ``FILE: ...`` line on stderr, status ``error``
    in the JSON); the other files still run."""
    from sim.play_cases import run_file

    passed = failed = skipped = unreadable = 0
    rows: list[dict[str, object]] = []
    say = (lambda text: None) if args.json else print
    for f in args.files:
        try:
            results = run_file(f)
        except (OSError, ValueError) as exc:  # not a case file: bad input (exit 2), the other files still run
            unreadable += 1
            print(f"tanksim cases: {exc}", file=sys.stderr)
            rows.append({"file": f, "case": None, "status": "error", "message": str(exc)})
            continue
        for r in results:
            if r.skipped:
                skipped += 1
                say(f"SKIP {Path(f).name} {r.case_id}: {r.message}")
            elif r.ok:
                passed += 1
            else:
                failed += 1
                say(f"FAIL {Path(f).name} {r.case_id}: {r.message}")
            rows.append({"file": f, "case": r.case_id, "status": "skip" if r.skipped else "pass" if r.ok else "fail",
                         "message": r.message or ""})
    if args.json:
        print(json.dumps({"passed": passed, "failed": failed, "skipped": skipped, "cases": rows}, default=str))
    else:
        tail = (f", {skipped} skipped" if skipped else "") + (
            f", {unreadable} {'file' if unreadable == 1 else 'files'} not read" if unreadable else "")
        print(f"{passed} passed, {failed} failed{tail}")
    return 2 if unreadable else 1 if failed else 0


def _file_kind(path: str) -> str:
    """What a file is, by its top-level keys: ``comparison`` (a rule-set comparison for ``compare-rulesets``: a
    factor of path ``ruleset``), ``experiment`` (other ``factors``, or a ``scenario`` key: an experiment of
    replications only has no factors, and no scenario has that key), ``tournament`` (``entrants``), else
    ``scenario``.  A file that cannot be read is a ``scenario`` (its loader reports the problem)."""
    from sim.scenario import find_scenario, parse_yaml

    try:
        src, text = find_scenario(path)
        data = parse_yaml(text, src)
    except (OSError, ScenarioError):  # the scenario loader reports the problem properly
        return "scenario"
    if isinstance(data, dict) and ("factors" in data or "scenario" in data):  # an experiment may have no factors
        from sim.experiments.compare import RULESET

        factors = data.get("factors")
        if isinstance(factors, list) and any(isinstance(f, dict) and f.get("path") == RULESET for f in factors):
            return "comparison"
        return "experiment"
    if isinstance(data, dict) and "entrants" in data:
        return "tournament"
    return "scenario"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 objective"``, ``"3 objectives"``: a count with its noun in agreement (``many`` for an irregular
    plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def scenario_line(sc: Any) -> str:
    """One line about a validated scenario (:class:`sim.scenario.Scenario`), the same for ``tanksim validate`` and
    ``tanksim generate``: name, rule set, board (``25 x 25 layout (625 hexes)``, ``16 x 12 rectangle``, ``hexagon
    of radius 6``, ``40 listed hexes``), tanks per side, objectives, turn limit."""
    m = sc.map
    if m.shape == "hexagon":
        board = f"hexagon of radius {m.radius}"
    elif m.shape == "layout":
        b = m.board()
        board = f"{b.width} x {b.lines} layout ({plural(len(b.cells), 'hex', 'hexes')})"
    elif m.shape == "cells":
        board = f"{plural(len(m.board().cells), 'listed hex', 'listed hexes')}"
    else:
        board = f"{m.width} x {m.height} {m.shape}"
    tanks = " v ".join(str(len(s.tanks)) for s in sc.sides)
    return (f"{sc.name}: {sc.ruleset.name}, {board}, {tanks} tanks, {plural(len(sc.objectives), 'objective')}, "
            f"turn limit {sc.effective_turn_limit()}")


#: Most distinct scenarios of one experiment, comparison or tournament file that ``tanksim validate`` sets up for
#: their set-up warnings (each design point's scenario, once per distinct board, vehicles and tanks).
MAX_SET_UPS = 200


def _labelled(warned: list[str] | None, label: str, set_up: Callable[..., Any], *args: Any) -> None:
    """Run ``set_up(*args)`` and prefix the warnings it adds to ``warned`` (a :func:`sim.logs.showing_warnings` list)
    with ``label`` (a design point's factor values, a tournament scenario's label)."""
    start = len(warned) if warned is not None else 0
    set_up(*args)
    if warned is not None:
        warned[start:] = [f"{label}: {m}" for m in warned[start:]]


def _build_from(data: Any, src: str) -> None:
    """Validate a design point's scenario mapping and set its battle up (no dice, no doctrine built)."""
    from sim.model import build_battle
    from sim.scenario import validate

    build_battle(validate(data, src))


def _set_up_experiment(exp: Any, seen: set[str], warned: list[str] | None = None) -> None:
    """Set up (:func:`sim.model.build_battle`: no dice rolled, no doctrine built) the scenario of each design point
    of ``exp`` (a :class:`sim.experiments.design.Experiment`) that differs from those in ``seen`` in more than its
    doctrines, for the rule set's set-up warnings; at most :data:`MAX_SET_UPS` in all."""
    from sim.experiments.design import point_data

    def sans_policies(data: Any) -> str:
        sides = [{**{k: v for k, v in side.items() if k != "policy"},
                  "tanks": [{k: v for k, v in t.items() if k != "policy"} for t in side.get("tanks") or []
                            if isinstance(t, Mapping)]}
                 for side in data.get("sides") or [] if isinstance(side, Mapping)]
        return json.dumps({**data, "sides": sides}, sort_keys=True, default=str)

    todo = []
    for p in exp.points:
        if len(seen) >= MAX_SET_UPS:
            break
        data = point_data(exp.base_data, p.params, exp.base_src)
        key = sans_policies(data)
        if key not in seen:
            seen.add(key)
            todo.append(("design point " + ", ".join(f"{k}={v}" for k, v in p.values.items()), data))
    for label, data in todo:   # labelled only where the points' scenarios differ (else it is every point's)
        _labelled(warned if len(todo) > 1 else None, label, _build_from, data, exp.base_src)


def _validate_one(f: str, warned: list[str] | None = None) -> str:
    """Check one file; returns its ``ok`` line.  Raises :class:`ScenarioError`, ``ValueError`` or ``OSError``.  The
    scenarios a file plays -- a scenario file's own, an experiment's or a comparison's design points', a
    tournament's -- are set up, so that the rule set's set-up warnings are logged (see :func:`cmd_validate`)."""
    from sim.model import build_battle

    kind = _file_kind(f)
    seen: set[str] = set()
    if kind == "comparison":
        from sim.experiments.compare import load_comparison

        comp = load_comparison(f)
        for cell in comp.cells:
            _labelled(warned, f"cell {cell.ruleset}/{cell.scenario}", _set_up_experiment, cell.experiment, seen,
                      warned)
        return (f"{f}: ok (rule-set comparison, {len(comp.levels)} doctrines x "
                f"{', '.join(c.ruleset + '/' + c.scenario for c in comp.cells)})")
    if kind == "experiment":
        from sim.experiments.design import load_experiment

        _set_up_experiment(load_experiment(f), seen, warned)
        return f"{f}: ok (experiment)"
    if kind == "tournament":
        from sim.tournaments.tournament import entrant_problems, load_tournament, plural

        t = load_tournament(f)
        problems = entrant_problems(t)
        if problems:
            raise ScenarioError(problems)
        for label, sc in t.scenarios:
            _labelled(warned, f"scenario {label}", build_battle, sc)
        return f"{f}: ok (tournament, {plural(len(getattr(t, 'entrants', [])), 'entrant')})"
    from sim.scenario import load_scenario

    sc = load_scenario(f)
    build_battle(sc)   # the rule set's set-up warnings (no dice rolled, no doctrine built): see cmd_validate
    return f"{f}: ok ({scenario_line(sc)})"


def _fresh_warnings() -> None:
    """Forget the rule-set data loaded once per process whose loading warns (the asl catalog's defaulted
    vehicles), so that each file ``tanksim validate`` checks gets the warnings of what it reads, not only the
    first file to read it."""
    asl_tables = sys.modules.get("sim.rules.asl.tables")
    if asl_tables is not None:
        asl_tables.catalog.cache_clear()


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate scenario files, and every other kind of file the project reads (experiments, rule-set
    comparisons, tournaments; see :func:`_file_kind`), each with its own loader.  Runs no code from a file: plug-in
    doctrines are checked statically (never imported), no command is started, no entrant probed; every field a
    battle reads is checked.  A scenario's battle is set up (no dice rolled, no doctrine built; for an experiment,
    comparison or tournament file each scenario it plays: :func:`_validate_one`), and the rule set's
    set-up warnings are printed on stderr (``tanksim validate: warning: FILE: [cell R/S: ][design point a=1: |
    scenario LABEL: ]...``), each file's own, once each, whatever ``TANKSIM_LOG`` says: the file is still ok
    (exit 0).  ``--json``: one object ``{"ok", "files": [{"file", "ok", "kind", "summary", "warnings" |
    "errors"}]}`` on stdout instead of the lines (a warning there without its file).  Returns 0, or 2 (bad input,
    as ``tanksim run`` on the same file) when any file is invalid."""
    from agents.plugins import source_budget
    from sim.logs import showing_warnings

    bad = 0
    rows: list[dict[str, object]] = []
    for f in args.files:
        _fresh_warnings()
        try:
            with source_budget(), showing_warnings(quiet=True) as warned:
                line = _validate_one(f, warned)
        except (ScenarioError, ValueError, OSError) as exc:
            bad += 1
            errors = list(getattr(exc, "errors", None) or [str(exc)])
            rows.append({"file": f, "ok": False, "kind": _file_kind(f), "errors": errors})
            if not args.json:
                print("\n".join(errors), file=sys.stderr)
            continue
        own = list(dict.fromkeys(warned))   # a warning once per file
        rows.append({"file": f, "ok": True, "kind": _file_kind(f), "summary": line.removeprefix(f"{f}: ok "),
                     "errors": [], "warnings": own})
        if not args.json:
            for w in own:
                print(f"tanksim validate: warning: {f}: {w}", file=sys.stderr)
            print(line)
    if args.json:
        print(json.dumps({"ok": not bad, "files": rows}))
    return 2 if bad else 0   # bad input, as `run` on the same file (README: exit statuses)


class StdoutClosed(BaseException):
    """The reader of standard output went away (``tanksim ... | head``).  A ``BaseException``, so no subcommand's
    ``except OSError`` takes it for a file problem; :func:`main` ends quietly on it."""


class _PipeGuard:
    """Standard output for a subcommand: writes go through to ``stream``; a ``BrokenPipeError`` points file
    descriptor 1 at ``/dev/null`` (so the interpreter's last flush is quiet too, as the Python documentation's note
    on SIGPIPE advises) and raises :class:`StdoutClosed`."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _closed(self) -> StdoutClosed:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
        except (OSError, ValueError):  # not a real file (a test's capture): nothing to silence
            pass
        return StdoutClosed()

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise self._closed() from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise self._closed() from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tanksim", description="Agent-based tank combat: run battles, odds, cases.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run one battle and print its result")
    r.add_argument("scenario", nargs="?", help="scenario file or bundled name (default: the bundled default)")
    r.add_argument("--seed", type=argtypes.seed, default=0, help="battle seed (integer from 0 to 2**63 - 1)")
    r.add_argument("--out", type=argtypes.battle_folder,
                   help="folder for the battle's files: battle, events, series, shots, tanks, sides "
                   "(.parquet), final_state.json, parts.jsonl (checksums)")
    r.add_argument("--plot", type=argtypes.output_file(argtypes.PLOT_SUFFIXES),
                   help="draw the final board to this image file")
    r.add_argument("--json", action="store_true", help="print the result row as JSON")
    r.add_argument("--policy", action="append", metavar="SIDE=NAME[:k=v,...]",
                   help="override a side's doctrine (side by name or 1/2); repeatable")
    r.add_argument("--decision-timeout", type=argtypes.between(0.0, 86_400.0, float), metavar="S",
                   help="seconds per decision for every side, overriding the scenario's decision_timeout_s (0 = "
                        "no limit; default: the scenario's, or 30 if it sets none); a decision still running "
                        "max(1, S/2) s past it is cut off: a timeout fault")
    r.add_argument("--from", dest="from_dir", help="re-run a stored battle from a batch results folder")
    r.add_argument("--battle", help="battle id with --from")
    r.set_defaults(fn=cmd_run)

    from sim.cli.odds_help import EPILOG_MARK, OddsHelpFormatter

    o = sub.add_parser("odds", help="exact odds of one shot (fractions)",
                       usage="%(prog)s RULESET name=value ... [--json]\n"
                             "       %(prog)s --scenario FILE --shooter LABEL --target LABEL [name=value ...] [--json]",
                       description="Exact odds of one shot, by enumeration (fractions). Rule sets: "
                                   f"{', '.join(rules_base.names())}.",
                       epilog=EPILOG_MARK, formatter_class=OddsHelpFormatter)
    o.add_argument("params", nargs="*", metavar="RULESET name=value",
                   help="the rule set, then its parameters (listed below); with --scenario only name=value "
                        "overrides")
    o.add_argument("--json", action="store_true", help="print the odds as one JSON object")
    o.add_argument("--scenario", metavar="FILE", help="take the shot's parameters from this scenario's board")
    o.add_argument("--shooter", metavar="LABEL", help="label of the firing tank (with --scenario)")
    o.add_argument("--target", metavar="LABEL", help="label of the target tank (with --scenario)")
    o.set_defaults(fn=cmd_odds)

    c = sub.add_parser("cases", help="run golden case files against the engine")
    c.add_argument("files", nargs="+")
    c.add_argument("--json", action="store_true", help="print the results as one JSON object")
    c.set_defaults(fn=cmd_cases)

    v = sub.add_parser("validate", help="validate scenario, experiment, rule-set comparison and tournament files")
    v.add_argument("files", nargs="+")
    v.add_argument("--json", action="store_true", help="print the results as one JSON object")
    v.set_defaults(fn=cmd_validate)
    blurbs = {"batch": "run a doctrine experiment (many battles, resumable)",
              "report": "what a batch says: effects, paired differences, importance, best level, with intervals",
              "power": "battles per design point needed to detect a difference, from a pilot batch",
              "tournament": "round robin or gauntlet between doctrines: ratings, meta-game",
              "match": "two doctrines, side-swapped pairs until an SPRT verdict",
              "replay": "a stored battle as a GIF", "app": "watch or play a battle in the browser",
              "catalog": "a rule set's vehicles, as records to copy into a scenario's vehicles: block",
              "generate": "write a scenario: meeting, village assault, river crossing, random terrain",
              "oracle": "exact theory of a small fixed-odds engagement (absorbing Markov chain), beside simulation",
              "compare-rulesets": "doctrines under several rule sets: interaction, Kendall tau, robust doctrine"}
    for name in EXTERNAL:
        sub.add_parser(name, help=f"{blurbs.get(name, '')} (see 'tanksim {name} --help')", add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The ``tanksim`` console script: dispatch to a subcommand and return its exit code.  Output cut short by
    its reader (``tanksim catalog asl | head``) ends every subcommand quietly with exit code 0.  Ctrl-C (SIGINT)
    that a subcommand does not handle itself ends it with one line, ``tanksim NAME: interrupted``, and exit code
    130 (no traceback); ``batch``, ``compare-rulesets``, ``tournament``, ``match`` and ``app`` handle it themselves
    (``tanksim NAME: interrupted: what was kept; how to go on``).  SIGTERM is taken for Ctrl-C everywhere
    (:func:`_sigterm_as_ctrl_c`)."""
    from sim.logs import PROG_ENV

    argv = list(sys.argv[1:] if argv is None else argv)
    stdout = sys.stdout
    sys.stdout = _PipeGuard(stdout)
    prog_before = os.environ.get(PROG_ENV)
    os.environ[PROG_ENV] = _prog(argv)   # log records read 'tanksim run: warning: ...' (worker processes inherit it)
    term_before = _sigterm_as_ctrl_c()
    try:
        return _main(argv)
    except StdoutClosed:
        return 0
    except KeyboardInterrupt:
        print(f"{_prog(argv)}: interrupted", file=sys.stderr)
        return 130
    finally:
        if term_before is not None:
            signal.signal(signal.SIGTERM, term_before)
        sys.stdout = stdout
        if prog_before is None:
            os.environ.pop(PROG_ENV, None)
        else:
            os.environ[PROG_ENV] = prog_before


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _sigterm_as_ctrl_c() -> Any:
    """Make SIGTERM (``kill PID``, a job scheduler's or a container's stop) end a command as Ctrl-C does: the
    long-running ones (``batch``, ``tournament``, ``compare-rulesets``, ``match``, ``run``, ``app``) store what
    they finished, say so in their one ``interrupted`` line and exit 130 -- decided: the same status as Ctrl-C, not
    143, since the command stopped the same way (cleanly, resumable).  Returns the previous handler to restore, or
    ``None`` outside the main thread (where no handler can be set)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_interrupt)


#: The subcommands of :func:`build_parser` (the others are :data:`EXTERNAL`).
OWN_COMMANDS = ("run", "odds", "cases", "validate")


def _prog(argv: Sequence[str]) -> str:
    """``tanksim NAME`` for a known subcommand ``argv[0]``, else ``tanksim``: the prefix of a message."""
    name = argv[0] if argv else ""
    return f"tanksim {name}" if name in EXTERNAL or name in OWN_COMMANDS else "tanksim"


#: Longest command-line argument (characters): a path's ``PATH_MAX`` and a tournament file's ``command`` parts; a
#: longer one is refused before any subcommand reads it, so no message echoes it whole.
MAX_ARG_CHARS = 4096


def _bad_argument(argv: Sequence[str]) -> str | None:
    """The error for the first argument longer than :data:`MAX_ARG_CHARS` (``tanksim: argument 3 ('aaa...'):
    100,000 characters; expected at most 4,096 ...``) or holding a control character, a line separator or a bidi
    override (:func:`sim.messages.unprintable`: ``tanksim: argument 2 ('hold\\x1b[2J'): expected no control
    characters; found '\\x1b' at character 5``) or an invisible format character (a zero-width space, a
    byte-order mark: ``expected no control or invisible format characters``; a path or name holding one, pasted
    by mistake, would be echoed looking like another), else ``None``.  Checked before any subcommand reads its
    arguments, so no message echoes such an argument raw or whole."""
    from sim.messages import short, unprintable

    for i, a in enumerate(argv, 1):
        if len(a) > MAX_ARG_CHARS:
            return (f"tanksim: argument {i} ({short(a, 40)}): {len(a):,} characters; expected at most "
                    f"{MAX_ARG_CHARS:,} (a path, a name or a NAME:param=value list)")
        at = unprintable(a, invisible=True)
        if at is not None:
            what = "control characters" if unprintable(a[at]) is not None else \
                "control or invisible format characters"
            return (f"tanksim: argument {i} ({short(a, 40)}): expected no {what}; found {a[at]!r} at "
                    f"character {at + 1}")
    return None


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if (err := _bad_argument(argv)) is not None:
        print(err, file=sys.stderr)
        return 2
    import logging

    from sim.logs import configure_logging

    # rule-set warnings (e.g. ASL catalog defaults) are shown with TANKSIM_LOG=warning (or info, debug): the same
    # set-up as every other entry point and worker process (sim.logs); other libraries' records from error up
    level = configure_logging()
    logging.basicConfig(level=max(logging.ERROR, logging.getLevelName(level)), format="%(name)s: %(message)s")
    if argv and argv[0] in EXTERNAL:
        mod, _, fn = EXTERNAL[argv[0]].partition(":")
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                print(f"tanksim {argv[0]}: not available in this version", file=sys.stderr)
                return 2
            raise
        try:
            return int(getattr(module, fn)(argv[1:]) or 0)
        except ScenarioError as exc:  # a data file's or an argument's problem a command did not word itself
            print("\n".join(f"tanksim {argv[0]}: {e}" for e in exc.errors), file=sys.stderr)
            return 2
    if argv and argv[0] in ("--version", "-V"):
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"tanksim {version('tanksim')}")
        except PackageNotFoundError:
            print("tanksim (not installed)")
        return 0
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (rules_base.CaseError, rules_base.UnknownRuleset, OSError, ValueError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"tanksim {args.command}: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
