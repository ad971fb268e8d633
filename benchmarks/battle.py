"""Battle speed benchmark (not a test): CPU per battle, decisions, ms per decision and the ratio to a floor (issue 14).

Cases (all ``advance`` vs ``greedy``, 25 x 25 map, 20 turns unless named otherwise): Panzer Squadron 50 v 50 and
25 v 25, ASL 50 v 50 and 25 v 25, a Hummel Quest 50 v 50 on 50 m hexes (the nearest tanks start 18 hexes, 900 m,
apart and close; it lasts 6 / 8 / 20 rounds at seeds 1-3), ``hq_50v50_long`` -- the same battle on a 29 x 29 map
(22 hexes, 1.1 km, apart), the case of issue 14's Hummel Quest goal "several rounds, 10+" (within 1.5x the PS
50 v 50 time): 20 / 12 / 20 rounds at seeds 1-3 with losses on both sides (West / East lose 37 / 27, 2 / 50 and
50 / 19 tanks), the PS 50 v 50 set-up changed only as far as needed to last that long (a 75 m or 100 m hex instead
would leave the tanks' 50 m Speeds below a whole hex: nobody moves) -- and the bundled ``default`` scenario.
Then two growth tables: tanks per side 5/20/50/100 (PS, 25 x 25, 10 turns) and map sizes 10/25/50/100 (PS, 10
tanks a side, 10 turns).

Figures are CPU seconds of this process (``time.process_time()``: the machine is shared, wall time is not a
measure), after imports, the median of ``--reps`` battles at seeds 1..reps, each after a full garbage collection
(outside the timing: a full pass over the earlier battles' objects costs as much as a whole battle and would land on
a random one).  The battles of one case share the scenario's board as a batch's do (``Scenario.battle_board``: built
by the first, copied for the others), and with it the answers on the terrain alone that the board's terrain cache
keeps (``HexMap.terrain_cached``; e.g. Panzer Squadron's shots and geometries of pairs with no wreck in their
footprint), so a later battle reads what the earlier ones computed, as a batch worker's later battles do.  The
``cold`` column is the CPU of the case's first battle (seed 1), which finds that cache empty (the rule modules'
pure geometry memos, ``functools`` caches, may hold what earlier cases of the run computed).

The floor ("what the battle cannot do without"), measured in the same run: one more battle at seed 1 records every
*distinct* call of the rule set's three queries -- the pair sight test, the movement search ``reachable`` and the
shot ``odds`` -- with a copy of the board at that state (:func:`sim.search.fork`). The sight test is Panzer
Squadron's exact seven-line count ``clear_lines`` (a pure function: keyed by its arguments), Hummel Quest's terrain
part of a pair's sight ``_crossed`` (keyed by the two hexes, the LOS rule and the terrain; the tanks' cover is read
per shot) and ASL's ``los`` (keyed by the two hexes, the terrain version and the wrecks: what it reads);
``reachable`` is keyed by the tank, budget and the whole board state (every tank's hex, facings and status, the
terrain version, the battle's rule-set state); ``odds`` by its key. The floor is the CPU of calling each distinct
call once, directly, on its copy, with the board's caches and the rule modules' memo caches (``functools`` caches)
emptied first: the rule work of that battle done once each and nothing else. ``ratio`` = CPU per battle / floor; 1.0
would mean the engine, doctrines and observations cost nothing beyond the distinct rule queries.

Run: ``python benchmarks/battle.py [--reps N] [--quick] [--json] [--cases a,b] [--no-growth] [--no-floor]
[--peer ATLATL]``; ``--peer`` also measures the peer (``benchmarks/peer.py``) in the same run and prints the ratio.
``--quick``: 1 rep, 10 turns, no 100-tank or 100 x 100 growth rows (a smoke run, figures not comparable).
``--json``: one JSON object (``cases``, ``growth_tanks``, ``growth_maps``, ``startup``) instead of the tables.
Start-up (CPU of ``python -c "import sim.runner"``, median of 5 fresh interpreters; and of a process that goes on to
build the ``default`` battle, since the runner's import defers the model, Mesa and numpy to the first battle) and
the peak RSS of one process that imports and plays the PS 50 v 50 battle are measured in child processes.
"""
from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sim.runner import run_battle  # noqa: E402
from sim.scenario import Scenario, load_scenario, validate  # noqa: E402

#: Vehicles per rule set: (first side, second side).
VEHICLES = {"panzer_squadron": ("t34_85", "pz_iv_h"), "asl": ("t34_m41", "pzkpfw_iiih"),
            "hummel_quest": ("hq_example_medium", "hq_example_medium")}
#: The rule set's pair sight test (the floor's "sight" calls).
SIGHT = {"panzer_squadron": "geometry", "asl": "los", "hummel_quest": "sight"}
#: Pure sight tests the floor records and times instead of the rule-set method of :data:`SIGHT` (recorded in
#: every ``sim`` module that binds them; no call recorded is an error):
#: ``rule set -> (module, function, key of a call's arguments)``.
#: Panzer Squadron's exact seven-line count is keyed by its arguments; Hummel Quest's terrain part of a pair's
#: sight (``_crossed(board, frm, to, los_rule)``, which the battle keeps per pair until the terrain changes) by
#: the two hexes, the rule and the board's sight grid (one per terrain version).
PURE_SIGHT: dict[str, tuple[str, str, Callable[[tuple], Any]]] = {
    "panzer_squadron": ("sim.rules.panzer_squadron.sight", "clear_lines", lambda a: tuple(_freeze(x) for x in a)),
    "hummel_quest": ("sim.rules.hummel_quest.sight", "_crossed",
                     lambda a: (id(a[0].sight_grid()), *(_freeze(x) for x in a[1:]))),
}


def big_scenario(n: int = 50, ruleset: str = "panzer_squadron", size: int = 25, turns: int = 20,
                 policies: tuple[str, str] = ("advance", "greedy"), hex_size_m: int | None = None) -> dict[str, Any]:
    """An ``n`` v ``n`` battle on a ``size`` x ``size`` rectangle: the first side in the westmost columns facing
    east, the second in the eastmost facing west (tanks on alternate rows, as many columns as needed), a wood in
    the middle.  Raises ``ValueError`` if the two deployments would not leave two empty columns between them."""
    rows = list(range(0, size, 2))
    cols = -(-n // len(rows))
    if 2 * cols + 2 > size:
        raise ValueError(f"{n} tanks a side do not fit on a {size} x {size} map")
    west = [[q, r - q // 2] for q in range(cols) for r in rows][:n]
    east = [[q, r - q // 2] for q in range(size - 1, size - 1 - cols, -1) for r in rows][:n]
    a, b = VEHICLES[ruleset]
    wood = {"tile": "woods", "center": [size // 2, size // 4], "radius": max(1, size // 12)}
    mp: dict[str, Any] = {"shape": "rectangle", "width": size, "height": size, "terrain": [wood]}
    if hex_size_m:
        mp["hex_size_m"] = hex_size_m
    rules: dict[str, Any] = {"name": ruleset}
    if ruleset == "hummel_quest":
        rules["options"] = {"max_rounds": turns}
    return {"name": f"{ruleset}_{n}v{n}_{size}x{size}", "ruleset": rules, "turn_limit": turns, "map": mp,
            "sides": [{"name": "West", "policy": policies[0], "tanks": [{"vehicle": a, "hex": h, "facing": 1}
                                                                          for h in west]},
                      {"name": "East", "policy": policies[1], "tanks": [{"vehicle": b, "hex": h, "facing": 4}
                                                                          for h in east]}]}


#: The generated cases: name -> :func:`big_scenario` parameters (besides ``turns``).
CASE_PARAMS: dict[str, dict[str, Any]] = {
    "ps_50v50": {"n": 50}, "ps_25v25": {"n": 25},
    "asl_50v50": {"n": 50, "ruleset": "asl"}, "asl_25v25": {"n": 25, "ruleset": "asl"},
    "hq_50v50": {"n": 50, "ruleset": "hummel_quest", "hex_size_m": 50},
    "hq_50v50_long": {"n": 50, "ruleset": "hummel_quest", "size": 29, "hex_size_m": 50},
}
#: The cases written to ``benchmarks/scenarios/NAME.yaml`` (20 turns) whose event logs ``tests/log_hashes.json``
#: keeps (``python benchmarks/battle.py --write-scenarios`` writes them; a test checks they equal the cases).
HASHED_CASES = ("ps_50v50", "asl_50v50", "hq_50v50", "hq_50v50_long")


def case_scenario(name: str, turns: int = 20) -> dict[str, Any]:
    """The scenario mapping of the generated case ``name`` (:data:`CASE_PARAMS`; its ``name`` field is
    :func:`big_scenario`'s, e.g. ``panzer_squadron_50v50_25x25``)."""
    return big_scenario(**CASE_PARAMS[name], turns=turns)


def cases(turns: int = 20) -> dict[str, Callable[[], Scenario]]:
    """The named benchmark cases (built lazily: a case that fails to validate fails alone)."""
    def mk(name: str) -> Callable[[], Scenario]:
        return lambda: validate(case_scenario(name, turns), name)
    return {**{name: mk(name) for name in CASE_PARAMS}, "default": lambda: load_scenario("default")}


def write_scenarios(folder: Path) -> list[Path]:
    """Write each of :data:`HASHED_CASES` (20 turns) to ``folder/NAME.yaml``; returns the paths."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in HASHED_CASES:
        p = folder / f"{name}.yaml"
        head = (f"# Benchmark case {name} (benchmarks/battle.py CASE_PARAMS), written by\n"
                "# `python benchmarks/battle.py --write-scenarios`; its event logs at a small turn cap are kept in\n"
                "# tests/log_hashes.json.\n")
        p.write_text(head + yaml.safe_dump(case_scenario(name), sort_keys=False, default_flow_style=None),
                     encoding="utf-8")
        out.append(p)
    return out


# --- timing ---------------------------------------------------------------------------------------------------
def timed(spec: Scenario, seeds: list[int]) -> dict[str, Any]:
    """CPU s per battle, decisions and turns: the medians over the battles at ``seeds``; ``cold_cpu_s`` the CPU of
    the first (the board's shared terrain cache still empty)."""
    cpu, dec, turns = [], [], []
    for s in seeds:
        gc.collect()  # the last battle's garbage is collected outside the timing, not in a random later battle
        t0 = time.process_time()
        r = run_battle(spec, s, record_events=False, decision_timeout_s=0)
        cpu.append(time.process_time() - t0)
        dec.append(r.row["decisions"])
        turns.append(r.row["turns"])
    c, d = statistics.median(cpu), statistics.median(dec)
    return {"cpu_s": round(c, 4), "cold_cpu_s": round(cpu[0], 4), "decisions": d, "turns": statistics.median(turns),
            "ms_per_decision": round(1000 * c / d, 3) if d else None, "runs": len(seeds)}


# --- floor ----------------------------------------------------------------------------------------------------
def _freeze(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return repr(x)


def _state(b: Any) -> tuple:
    return (tuple((t.hex, t.facing, t.turret_facing, t.status) for t in b.tanks), b.map.terrain_version,
            repr(sorted(b.rules_state.items())) if isinstance(b.rules_state, dict) else None)


def _sight_state(b: Any) -> tuple:
    """What a pair sight test reads besides its two hexes: the terrain and the wrecks (the obstacles)."""
    return (b.map.terrain_version, tuple(sorted(t.hex for t in b.tanks if t.status == "destroyed" and t.hex)))


def _memo_caches() -> list[Any]:
    out = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name.startswith("sim.rules") or name in ("sim.hexgrid", "sim.battle")):
            continue
        for v in list(vars(mod).values()):
            if callable(getattr(v, "cache_clear", None)):
                out.append(v)
    return out


def snapshot(b: Any) -> Any:
    """A copy of the board ``b`` (a :class:`~sim.battle.Battle`, a search copy, or a :class:`~sim.battle.HypoView`
    of one) in its present state, independent of later events."""
    from sim.battle import HypoView
    from sim.search import fork

    if isinstance(b, HypoView):
        return HypoView(snapshot(b._b), b._tid, b._new, b.tanks[b._tid].facing)
    return fork(b)


def floor(spec: Scenario, seed: int = 1) -> dict[str, Any]:
    """Record the distinct rule queries of the battle ``spec`` at ``seed`` and time them called directly (see the
    module docstring).  Returns ``{"floor_s", "sight", "moves", "odds"}`` (distinct calls per kind)."""
    rs = spec.rules()
    kinds = {"sight": SIGHT[rs.name], "moves": "reachable", "odds": "odds"}
    calls: dict[str, dict[Any, tuple]] = {k: {} for k in kinds}
    snaps: dict[tuple, Any] = {}
    depth = [0]
    originals = {}

    def wrap(kind: str, meth: str) -> None:
        orig = getattr(rs, meth)
        originals[meth] = orig

        @functools.wraps(orig)
        def rec(*args: Any, **kw: Any) -> Any:
            if depth[0] == 0:
                if kind == "odds":
                    key = _freeze(args[0]) if args else _freeze(tuple(sorted(kw.items())))
                    calls[kind].setdefault(key, (None, args, kw))
                else:
                    b = args[0]
                    # keyed by what the call reads (not by the board object's id, which Python reuses for
                    # short-lived views: counts would vary from run to run)
                    st = (type(b).__name__, getattr(b, "_tid", None), getattr(b, "_new", None),
                          _sight_state(b) if kind == "sight" else _state(b))
                    key = (st, tuple(_freeze(a) for a in args[1:]), _freeze(tuple(sorted(kw.items()))))
                    if key not in calls[kind]:
                        if st not in snaps:
                            snaps[st] = snapshot(b)
                        calls[kind][key] = (st, args[1:], kw)
            depth[0] += 1
            try:
                return orig(*args, **kw)
            finally:
                depth[0] -= 1
        setattr(rs, meth, rec)

    pure = None  # the rule set's pure sight test (PURE_SIGHT), recorded by what it reads
    if rs.name in PURE_SIGHT:
        mod, fn, key_of = PURE_SIGHT[rs.name]
        pure = vars(importlib.import_module(mod))[fn]  # a KeyError: the sight module moved (no silent fallback)

        def lines(*args: Any, **kw: Any) -> Any:
            calls["sight"].setdefault((key_of(args), _freeze(tuple(sorted(kw.items())))), (None, args, kw))
            return pure(*args, **kw)
        # every module of the project that binds the function (its own and those that imported it by name)
        bound = [vars(m) for name, m in list(sys.modules.items())
                 if (name == "sim" or name.startswith("sim.")) and vars(m).get(fn) is pure]
        for g in bound:
            g[fn] = lines
        kinds.pop("sight")
    for k, m in kinds.items():
        wrap(k, m)
    try:
        run_battle(spec, seed, record_events=False, decision_timeout_s=0)
    finally:
        for m in originals:
            delattr(rs, m)  # the instance attribute goes; the class method shows through again
        if pure is not None:
            for g in bound:
                g[fn] = pure
            kinds["sight"] = fn
    if pure is not None and not calls["sight"]:
        raise RuntimeError(f"floor: no call of {mod}.{fn} recorded; its callers bind it where the floor does not "
                           "look (PURE_SIGHT)")
    for c in _memo_caches():
        c.cache_clear()
    for snap in snaps.values():  # cold boards: no answer of the battle left in them
        snap.map._cache = {}
        snap.map._static = {}
    total = 0.0
    failed = 0
    for k, m in kinds.items():
        meth = pure if (k == "sight" and pure is not None) else getattr(rs, m)
        for st, args, kw in calls[k].values():
            t0 = time.process_time()
            try:
                if st is None:
                    meth(*args, **kw)
                else:
                    meth(snaps[st], *args, **kw)
            except (ValueError, KeyError):
                failed += 1  # a call whose board copy lost what it read (reported, not hidden)
            total += time.process_time() - t0
    return {"floor_s": round(total, 4), **{k: len(v) for k, v in calls.items()}, "floor_failed": failed}


# --- start-up and memory --------------------------------------------------------------------------------------
#: What a battle process runs before its first decision: the runner's import, then what that import leaves for
#: the first battle (the scenario schema, the model, agents, Mesa and numpy, the rule set) and the board's build.
READY = ("import sim.runner\nfrom sim.model import BattleModel\nfrom sim.scenario import load_scenario\n"
         "BattleModel(load_scenario('default'), 1, decision_timeout_s=0)")


def startup(n: int = 5, code: str = "import sim.runner") -> float:
    """Median CPU s of ``python -c CODE`` in ``n`` fresh interpreters (user + system): by default
    ``import sim.runner``; :data:`READY` gives the start-up of a battle process, the runner's deferred imports
    included (``import sim.runner`` alone loads no third-party package, so it is the smaller figure)."""
    out = []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return round(statistics.median(out), 3)


def peak_rss(turns: int = 20) -> float:
    """Peak RSS (MiB) of one fresh process that imports the runner and plays the PS 50 v 50 battle at seed 1 (its
    ``VmHWM``: Linux keeps ``ru_maxrss`` across exec, so a child of a big benchmark process would report the
    parent's peak)."""
    code = ("import resource, sys; sys.path.insert(0, '.'); from benchmarks.battle import cases; "
            "from sim.runner import run_battle; "
            f"run_battle(cases({turns})['ps_50v50'](), 1, record_events=False, decision_timeout_s=0); "
            # VmHWM is this process's own peak; ru_maxrss would carry the parent's peak across fork + exec
            "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]; "
            "print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return round(int(out.stdout.split()[-1]) / 1024, 1)


# --- main -----------------------------------------------------------------------------------------------------
def run_case(name: str, make: Callable[[], Scenario], seeds: list[int], with_floor: bool) -> dict[str, Any]:
    try:
        spec = make()
        row: dict[str, Any] = {"case": name, **timed(spec, seeds)}
        if with_floor:
            fl = floor(spec, seeds[0])
            row.update(fl)
            row["ratio"] = round(row["cpu_s"] / fl["floor_s"], 1) if fl["floor_s"] else None
    except Exception as exc:  # noqa: BLE001 - a case that fails is reported, the others still run
        row = {"case": name, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return row


def growth(rows: list[tuple[str, dict[str, Any]]], seeds: list[int]) -> list[dict[str, Any]]:
    out = []
    for label, kw in rows:
        r = run_case(label, lambda kw=kw, label=label: validate(big_scenario(**kw), label), seeds, with_floor=False)
        out.append(r)
    return out


def fmt_cases(rows: list[dict[str, Any]]) -> str:
    # the case column fits the longest case name (the rows are printed one by one as they finish)
    w = max([11, len("default")] + [len(n) for n in CASE_PARAMS] + [len(str(r["case"])) for r in rows])
    head = (f"{'case':<{w}} {'CPU s':>8} {'cold':>6} {'turns':>5} {'decisions':>9} {'ms/dec':>7} {'floor s':>8} "
            f"{'ratio':>6} {'sight':>7} {'moves':>6} {'odds':>5}")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['case']:<{w}} {r['error']}")
            continue
        fl = f"{r['floor_s']:>8.3f} {r['ratio'] or float('nan'):>6.1f}" if "floor_s" in r else f"{'-':>8} {'-':>6}"
        lines.append(f"{r['case']:<{w}} {r['cpu_s']:>8.3f} {r['cold_cpu_s']:>6.2f} {r['turns']:>5} {r['decisions']:>9} "
                     f"{r['ms_per_decision'] or 0:>7.2f} {fl} {r.get('sight', ''):>7} {r.get('moves', ''):>6} "
                     f"{r.get('odds', ''):>5}"
                     + (f"  ({r['floor_failed']} floor calls failed on their copy)" if r.get("floor_failed") else ""))
    return "\n".join(lines)


def fmt_growth(title: str, rows: list[dict[str, Any]]) -> str:
    lines = [title, f"{'':<14}" + "".join(f"{r['case']:>10}" for r in rows)]
    for key, lab, f in (("cpu_s", "CPU s/battle", "{:>10.3f}"), ("ms_per_decision", "ms/decision", "{:>10.2f}"),
                        ("decisions", "decisions", "{:>10}")):
        lines.append(f"{lab:<14}" + "".join(f.format(r[key]) if key in r and r[key] is not None
                                            else f"{'error':>10}" for r in rows))
    errs = [f"  {r['case']}: {r['error']}" for r in rows if "error" in r]
    return "\n".join(lines + errs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="tanksim battle speed benchmark (issue 14)")
    ap.add_argument("--reps", type=int, default=3, help="battles per case (seeds 1..N), median reported")
    ap.add_argument("--quick", action="store_true", help="1 rep, 10 turns, no 100-tank / 100 x 100 rows")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--no-growth", action="store_true")
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--no-startup", action="store_true", help="skip start-up CPU and peak RSS")
    ap.add_argument("--peer", type=Path, default=None, metavar="ATLATL",
                    help="an Atlatl work tree (github cjdarken/atlatl-public): measure the peer's CPU s per game "
                         "in this run (benchmarks/peer.py) and print ps_50v50 / peer")
    ap.add_argument("--write-scenarios", action="store_true",
                    help="write the hashed cases to benchmarks/scenarios/ and stop")
    a = ap.parse_args(argv)
    if a.write_scenarios:
        for p in write_scenarios(Path(__file__).resolve().parent / "scenarios"):
            print(f"wrote {p}")
        return 0
    reps = 1 if a.quick else a.reps
    turns = 10 if a.quick else 20
    seeds = list(range(1, reps + 1))
    todo = cases(turns)
    if a.cases:
        unknown = [c for c in a.cases.split(",") if c not in todo]
        if unknown:
            ap.error(f"--cases: unknown {unknown}; known: {', '.join(todo)}")
        todo = {c: todo[c] for c in a.cases.split(",")}
    out: dict[str, Any] = {"reps": reps, "turns": turns, "quick": a.quick}
    out["cases"] = []
    if not a.json:
        print(f"CPU s per battle: median of {reps} (seeds 1..{reps}); floor and distinct calls at seed 1")
        print(fmt_cases([]), flush=True)
    for name, make in todo.items():
        out["cases"].append(run_case(name, make, seeds, not a.no_floor))
        if not a.json:
            print(fmt_cases(out["cases"][-1:]).splitlines()[-1], flush=True)
    if not a.no_growth:
        ns = (5, 20, 50) if a.quick else (5, 20, 50, 100)
        sizes = (10, 25, 50) if a.quick else (10, 25, 50, 100)
        out["growth_tanks"] = growth([(f"{n} tanks", {"n": n, "turns": 10}) for n in ns], seeds)
        if not a.json:
            print(fmt_growth("\nGrowth in tanks per side (PS, 25 x 25, 10 turns)", out["growth_tanks"]), flush=True)
        out["growth_maps"] = growth([(f"{s} x {s}", {"n": 10, "size": s, "turns": 10}) for s in sizes], seeds)
        if not a.json:
            print(fmt_growth("\nGrowth in map size (PS, 10 tanks a side, 10 turns)", out["growth_maps"]), flush=True)
    if not a.no_startup:
        out["startup"] = {"import_sim_runner_cpu_s": startup(), "battle_ready_cpu_s": startup(code=READY),
                          "ps_50v50_peak_rss_mib": peak_rss(turns)}
        if not a.json:
            s = out["startup"]
            print(f"\nimport sim.runner: {s['import_sim_runner_cpu_s']:.3f} CPU s (median of 5); a battle process "
                  f"up to its first decision (that import, the scenario, the model, Mesa, the rule set and the "
                  f"default board): {s['battle_ready_cpu_s']:.3f} CPU s; one process playing ps_50v50: peak RSS "
                  f"{s['ps_50v50_peak_rss_mib']:.0f} MiB")
    if a.peer is not None:
        from benchmarks.peer import measure

        out["peer"] = measure(a.peer, seeds=reps)
        ps = next((c for c in out["cases"] if c.get("case") == "ps_50v50"), None)
        if ps is not None and ps.get("cpu_s") and out["peer"]["median"]:
            out["peer"]["ps_50v50_over_peer"] = round(ps["cpu_s"] / out["peer"]["median"], 2)
        if not a.json:
            pr = out["peer"]
            ratio = f"; ps_50v50 / peer = {pr['ps_50v50_over_peer']:.2f}" if "ps_50v50_over_peer" in pr else ""
            print(f"\npeer ({pr['peer']}): median {pr['median']:.3f} CPU s per game after imports "
                  f"(games {pr['per_game']}){ratio}")
    if a.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
