"""``tanksim catalog``: list and show each rule set's vehicle catalog in the form a scenario's ``vehicles:`` block
takes, so a user can copy a record into a scenario and change it.

``tanksim catalog RULESET`` lists the catalog (one line per vehicle: id, name, the main figures);
``tanksim catalog RULESET ID [ID ...]`` prints ``vehicles: {ID: record}`` as YAML, exactly as the catalog file
stores each record minus its ``id`` (the key is the id): paste it into a scenario, rename the key, change a field;
``--json`` prints the same as JSON.  ``tanksim catalog --scenario FILE [ID ...]`` shows a scenario's own vehicles
as the rule set builds them (a ``base`` merged in).  Exit codes: 0, 2 for an unknown rule set, id or bad file.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from sim.messages import did_you_mean
from sim.rules import base as rules_base
from sim.scenario import ScenarioError, dump_yaml


def summary(ruleset: str, vid: str, record: Mapping[str, Any]) -> str:
    """One line about a catalog record: its name and the figures a player compares first (per rule set)."""

    def num(x: Any) -> Any:
        return x.get("value") if isinstance(x, Mapping) else x

    name = record.get("name") or vid
    if ruleset == "panzer_squadron":
        arm = record.get("armour") or {}
        figs = (f"penetration {num(record.get('penetration'))}, armour {num(arm.get('front'))}/"
                f"{num(arm.get('side'))}/{num(arm.get('rear'))}, movement restriction "
                f"{num(record.get('movement_restriction'))}" + ("" if record.get("turret", True) else ", no turret"))
    elif ruleset == "asl":
        af = record.get("af") or {}
        figs = (f"{record.get('nationality') or '?'}, gun {record.get('gun')}, AF hull {af.get('hull_front')}/"
                f"{af.get('hull_side')}, MP {record.get('mp')}, turret {record.get('turret_type') or 'T'}")
    elif ruleset == "hummel_quest":
        guns = ", ".join(str(w.get("name")) for w in record.get("weapons") or [] if isinstance(w, Mapping))
        figs = (f"Size {record.get('size')}, Dur {record.get('dur')}, DT {record.get('dt')}, OST {record.get('ost')}, "
                f"{record.get('speed_m')} m/round" + (f"; {guns}" if guns else ""))
    else:
        figs = ""
    return f"{vid:<22} {name}" + (f": {figs}" if figs else "")


def records(ruleset: str, ids: Sequence[str]) -> dict[str, Any]:
    """``{id: record}`` of the catalog of ``ruleset`` (every vehicle when ``ids`` is empty).  Raises
    :class:`~sim.rules.base.UnknownRuleset` and ``KeyError`` naming the known ids."""
    rs = rules_base.get(ruleset)
    cat = rs.catalog_records()
    for vid in ids:
        if vid not in cat:
            raise KeyError(f"no {ruleset} catalog vehicle {vid!r}{did_you_mean(vid, cat)}; known: {', '.join(cat)}")
    return {vid: cat[vid] for vid in (ids or list(cat))}


def scenario_records(path: str, ids: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The rule set and ``{id: record}`` of a scenario's own ``vehicles:`` (``base`` merged in), after the
    scenario validates.  Raises :class:`~sim.scenario.ScenarioError`, ``KeyError``, ``FileNotFoundError``."""
    from sim.scenario import load_scenario

    sc = load_scenario(path)
    for vid in ids:
        if vid not in sc.vehicles:
            raise KeyError(f"{path}: no vehicle {vid!r}{did_you_mean(vid, sc.vehicles)} under vehicles: (defined: "
                           f"{', '.join(sc.vehicles) or 'none'})")
    return sc.ruleset.name, {vid: sc.vehicle_record(vid) for vid in (ids or list(sc.vehicles))}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``tanksim catalog`` command (see the module docstring)."""
    p = argparse.ArgumentParser(prog="tanksim catalog",
                                description="List a rule set's vehicle catalog, or print records in the form a "
                                            "scenario's vehicles: block takes (copy one and change it).")
    p.add_argument("ruleset", nargs="?", help=f"rule set ({', '.join(rules_base.names())})")
    p.add_argument("ids", nargs="*", metavar="ID", help="vehicle ids to print as vehicles: records")
    p.add_argument("--json", action="store_true", help="print JSON instead of text / YAML")
    p.add_argument("--scenario", metavar="FILE", help="show this scenario's own vehicles (base merged in)")
    args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.scenario:
            ids = [args.ruleset, *args.ids] if args.ruleset else []
            name, recs = scenario_records(args.scenario, ids)
            print(json.dumps({"vehicles": recs}, indent=2) if args.json else dump_yaml({"vehicles": recs}), end="\n"
                  if args.json else "")
            return 0
        if not args.ruleset:
            rows = {n: len(rules_base.get(n).catalog_records()) for n in rules_base.available()}
            if args.json:
                print(json.dumps({"rulesets": rows}))
            else:
                for n, k in rows.items():
                    print(f"{n:<16} {k} vehicles  (tanksim catalog {n})")
            return 0
        recs = records(args.ruleset, args.ids)
        if args.ids:
            if args.json:
                print(json.dumps({"vehicles": recs}, indent=2))
            else:
                print(f"# {args.ruleset} catalog: paste under a scenario's vehicles: (rename the key for a variant); "
                      f"tanksim validate checks it")
                print(dump_yaml({"vehicles": recs}), end="")
            return 0
        if args.json:
            print(json.dumps({"ruleset": args.ruleset,
                              "vehicles": [{"id": k, "name": v.get("name") or k} for k, v in recs.items()]}))
        else:
            for vid, rec in recs.items():
                print(summary(args.ruleset, vid, rec))
            print(f"(tanksim catalog {args.ruleset} ID prints a record to copy into a scenario's vehicles:)")
        return 0
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (rules_base.UnknownRuleset, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"tanksim catalog: {msg}", file=sys.stderr)
        return 2
