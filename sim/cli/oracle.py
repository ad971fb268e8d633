"""``tanksim oracle SCENARIO [--json] [--float] [--simulate N] [--seed S]``: the exact absorbing Markov chain of a
small fixed-odds engagement (:mod:`sim.experiments.oracle`), printed, or beside ``N`` simulated battles with their
95 % intervals."""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from sim.cli.argtypes import between, seed
from sim.experiments.oracle import OracleRefused, compare, engagement, oracle_json, simulate

#: Most battles ``--simulate`` plays (a tournament file's ``games_per_pairing`` bound).
MAX_SIMULATE = 100_000


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * float(x):.1f}%"


def _num(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.3f}"


def print_text(doc: Mapping[str, Any], sim_rows: Sequence[Mapping[str, Any]] | None = None) -> None:
    """The human-readable form of :func:`oracle_json` (and of the comparison rows, if given)."""
    sides = doc["sides"]
    print(f"{doc['scenario']} ({doc['ruleset']}): {doc['tanks'][sides[0]]} v {doc['tanks'][sides[1]]} "
          f"{doc['vehicle']}, {doc['schedule']['text']}")
    for s in sides:
        print(f"  one shot by {s} kills with probability {doc['p_kill'][s]} ({float(Fraction(doc['p_kill'][s])):.4f})")
    arithmetic = "exact" if doc["exact"] else "floating point"
    print(f"  chain: {doc['states']:,} states, {arithmetic}" + (f" ({doc['note']})" if doc["note"] else ""))
    f = doc["float"]

    def exact(x: str | None) -> str:
        if not doc["exact"] or x is None:
            return ""
        return f" = {x}" if len(x) <= 40 else f" (a fraction of {len(x.partition('/')[2])} digits: --json)"

    for s in sides:
        print(f"  P({s} wins) = {_pct(f['p_win'][s])}{exact(doc['p_win'][s])}; survivors if it wins: "
              f"{_num(f['expected_survivors_given_win'][s])}{exact(doc['expected_survivors_given_win'][s])}")
    print(f"  P(draw at the turn limit {doc['schedule'].get('turn_limit')}) = {_pct(f['p_draw'])}; expected "
          f"duration {_num(f['expected_duration'])} turns")
    r = doc["reference"]["float"]["p_win"]
    print("  square-law reference (Brown 1963, next shot from a uniformly random live tank): "
          + ", ".join(f"P({s} wins) {_pct(r[s])}" for s in sides))
    print("  checked: " + "; ".join(doc["checked"]))
    if sim_rows:
        n = sim_rows[0]["n"]
        print(f"\n  beside {n} simulated battles (95% intervals; 'ok' = the oracle lies inside):")
        for row in sim_rows:
            rate = row["quantity"].startswith("P(")
            fmt = _pct if rate else _num
            mark = "ok" if row["inside"] else ("-" if row["inside"] is None else "OUTSIDE")
            print(f"    {row['quantity']:<34} oracle {fmt(row['oracle']):>7}   simulated {fmt(row['simulated']):>7} "
                  f"[{fmt(row['lo'])}, {fmt(row['hi'])}]  n={row['n']}  {mark}")


def main(argv: Sequence[str] | None = None) -> int:
    """``tanksim oracle SCENARIO [--json] [--float] [--simulate N] [--seed S]``: exit 0; 1 when the scenario does
    not qualify (each reason printed) or a simulated quantity falls outside its interval; 2 for a file that cannot
    be read."""
    ap = argparse.ArgumentParser(prog="tanksim oracle", description="Exact theory of a small fixed-odds engagement "
                                 "(identical tanks on open ground playing random_target): the absorbing Markov chain "
                                 "of the numbers alive under the rule set's order of fire; P(win), survivors, "
                                 "duration as exact fractions.")
    ap.add_argument("scenario", help="scenario file or bundled name (e.g. ps_square_law, hq_square_law)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (fractions as strings)")
    ap.add_argument("--float", action="store_true", help="solve in floating point (faster for big chains)")
    ap.add_argument("--simulate", type=between(0, MAX_SIMULATE), default=0, metavar="N",
                    help="also play N battles and put the oracle beside their results with 95%% intervals")
    ap.add_argument("--seed", type=seed, default=0, help="first seed of --simulate (default 0)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    from sim.scenario import ScenarioError, load_scenario

    if args.simulate < 0 or args.seed < 0:
        print("tanksim oracle: --simulate and --seed take integers >= 0", file=sys.stderr)
        return 2
    try:
        spec = load_scenario(args.scenario)
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"tanksim oracle: {exc}", file=sys.stderr)
        return 2
    try:
        e = engagement(spec)
    except OracleRefused as exc:
        if args.json:
            print(json.dumps({"scenario": spec.name, "source": spec.source, "ruleset": spec.ruleset.name,
                              "qualifies": False, "reasons": exc.reasons}))
        else:
            print(f"{spec.source or spec.name}: the oracle does not apply:", file=sys.stderr)
            for r in exc.reasons:
                print(f"  - {r}", file=sys.stderr)
        return 1
    doc = oracle_json(e, exact=not args.float)
    rows = None
    if args.simulate:
        frame = simulate(spec, args.simulate, args.seed)
        sol = e.solve(exact=not args.float)
        rows = compare(sol, frame, e.sides)
        doc["simulation"] = {"battles": args.simulate, "seeds": [args.seed, args.seed + args.simulate - 1],
                             "confidence": 0.95, "rows": rows}
    if args.json:
        print(json.dumps(doc))
    else:
        print_text(doc, rows)
    return 1 if rows and any(r["inside"] is False for r in rows) else 0
