"""Report speed: seconds for ``sim.experiments.report.analyse_runs`` (every section, bootstraps included) on a synthetic
results table shaped like the bundled doctrine experiment (4 x 4 doctrines x 25 replications = 400 battles, common
random numbers), and per section.  Goal: under 10 s for the whole report on one core of an idle machine.

    python benchmarks/report.py [--replications 25] [--json]
"""
from __future__ import annotations

import argparse
import json
import time
from itertools import product

import numpy as np
import pandas as pd

from sim.experiments import analysis
from sim.experiments.report import analyse_runs

LEVELS = ["hold", "advance", "flank", "cover"]


def table(reps: int, seed: int = 1) -> tuple[pd.DataFrame, dict]:
    """Runs and manifest of a 4 x 4 doctrine design with ``reps`` replications (random but fixed outcomes)."""
    rng = np.random.default_rng(seed)
    pts = [{"attacker": a, "defender": d} for a, d in product(LEVELS, LEVELS)]
    rows = []
    for i, v in enumerate(pts):
        p = 0.2 + 0.15 * LEVELS.index(v["defender"]) + 0.05 * LEVELS.index(v["attacker"])
        for r in range(reps):
            w = 0 if rng.random() < p else 1
            a1, a2 = int(rng.integers(0, 6)), int(rng.integers(0, 5))
            pol = [{"name": v["attacker"], "params": {}}, {"name": v["defender"], "params": {}}]
            rows.append({"point_key": f"p{i}", "rep": r, "status": "ok", "winner_index": w,
                         "turns": int(rng.integers(2, 16)), "side1_alive": a1, "side2_alive": a2,
                         "side1_lost": 5 - a1, "side2_lost": 4 - a2, "side1_name": "Soviets", "side2_name": "Germans",
                         "policies": json.dumps(pol, separators=(",", ":")), **v})
    facs = [{"name": n, "path": f"sides.{k}.policy.name", "values": LEVELS, "is_range": False}
            for k, n in enumerate(["attacker", "defender"])]
    man = {"design": {"experiment": {"name": "bench", "common_random_numbers": True,
                                     "design": {"kind": "full_factorial"}},
                      "side_names": ["Soviets", "Germans"], "factors": facs,
                      "points": [{"index": i, "key": f"p{i}", "values": v} for i, v in enumerate(pts)],
                      "replications": reps, "n_runs": reps * len(pts), "seed": 1,
                      "scenario": {"source": "bench", "data": {}}}}
    return pd.DataFrame(rows), man


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replications", type=int, default=25)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs, man = table(args.replications)
    b = analysis.outcomes(runs, man, 0)
    out = {"battles": len(runs)}
    for name, fn in [("effects", analysis.effects), ("differences", analysis.differences),
                     ("interactions", analysis.interactions), ("importance", analysis.importance),
                     ("best", analysis.best_levels), ("distributions", analysis.distributions)]:
        t = time.perf_counter()
        fn(b)
        out[f"{name}_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    analyse_runs(runs, man)
    out["whole_report_s"] = round(time.perf_counter() - t, 3)
    out["goal_s"] = 10.0
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
