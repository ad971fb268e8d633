"""Doctrine against doctrine: a measured win-rate table (not asserted anywhere) and the time doctrines take.

    python benchmarks/doctrines.py [--scenario small|default|NAME] [--seeds N] [--workers W] [--json]

Every ordered pair of built-in doctrines plays ``N`` seeds with the row doctrine on side 1 and the same seeds with
the sides swapped, so each cell is ``2N`` battles.  A cell is the row doctrine's score against the column doctrine,
``(wins + draws / 2) / battles``, in percent; the last column is the row's mean score.  ``small`` is the tests' 3-v-3
12 x 12 Panzer Squadron board (T34-85 against Pz IV H, 6 turns); ``default`` the bundled village assault.  Battles
run in a process pool (``--workers``); the table does not depend on the worker count.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agents.policies import BUILTIN
from sim.runner import run_battle
from sim.scenario import load_scenario, validate


def scenario(name: str):
    if name == "small":
        from conftest import small_ps_scenario

        return validate(small_ps_scenario(turn_limit=6), "small.yaml")
    return load_scenario(name)


def play(args: tuple) -> tuple:
    """One battle: ``(scenario, row doctrine, column doctrine, seed, row side)`` -> ``(row, col, score, cpu s)``."""
    name, row, col, seed, side = args
    spec = scenario(name)
    t0 = time.process_time()
    res = run_battle(spec, seed, {side: (row, {}), 1 - side: (col, {})}, record_events=False, decision_timeout_s=0)
    w = res.row["winner_index"]
    score = 0.5 if w < 0 else float(w == side)
    return row, col, score, time.process_time() - t0, res.row["decisions"]


def table(name: str, seeds: int, workers: int) -> tuple[pd.DataFrame, dict]:
    names = sorted(BUILTIN)
    jobs = [(name, r, c, s, side) for r in names for c in names if r != c for s in range(seeds) for side in (0, 1)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        out = list(pool.map(play, jobs, chunksize=8))
    wall = time.perf_counter() - t0
    df = pd.DataFrame(out, columns=["row", "col", "score", "cpu_s", "decisions"])
    grid = df.pivot_table(index="row", columns="col", values="score", aggfunc="mean") * 100
    grid["mean"] = grid.mean(axis=1)
    grid = grid.sort_values("mean", ascending=False)
    cpu = df.groupby("row")[["cpu_s", "decisions"]].sum()
    timing = {"battles": len(df), "wall_s": round(wall, 1), "workers": workers,
              "cpu_ms_per_battle": round(1000 * df["cpu_s"].mean(), 1),
              "cpu_ms_per_decision_in_battles_of_row_doctrine": {
                  r: round(1000 * cpu.loc[r, "cpu_s"] / max(cpu.loc[r, "decisions"], 1), 2) for r in cpu.index}}
    return grid, timing


def markdown(grid: pd.DataFrame) -> str:
    """The table as Markdown, whole percents, ``-`` on the diagonal."""
    cols = list(grid.columns)
    lines = ["| row vs column | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r, vals in grid.iterrows():
        cells = ["-" if pd.isna(v) else f"{v:.0f}" for v in vals]
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="small")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    grid, timing = table(a.scenario, a.seeds, a.workers)
    if a.json:
        print(json.dumps({"table": grid.round(1).to_dict(), "timing": timing}))
        return 0
    print(f"{a.scenario}: row doctrine's score vs column doctrine, % ({2 * a.seeds} battles per cell, sides swapped)")
    print(markdown(grid))
    print(json.dumps(timing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
