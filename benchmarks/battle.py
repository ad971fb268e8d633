"""Battle speed benchmark (not a test): the default battle and a 50-v-50 battle on 25 x 25.

Reports turns/s, battles/s, decisions/s (timed without tracing) and peak memory (a separate tracemalloc pass over
one battle, and the process's peak RSS).  Run: ``python benchmarks/battle.py [N]``.
"""
from __future__ import annotations

import resource
import sys
import time
import tracemalloc

from sim.runner import run_battle
from sim.scenario import load_scenario, validate


def big_scenario(n: int = 50) -> dict:
    west = [[q, r - q // 2] for q in range(0, 4) for r in range(0, 25, 2)][:n]
    east = [[q, r - q // 2] for q in range(21, 25) for r in range(0, 25, 2)][:n]
    return {"name": f"{n}v{n}", "ruleset": "panzer_squadron", "turn_limit": 12,
            "map": {"width": 25, "height": 25, "terrain": [{"tile": "woods", "center": [12, 6], "radius": 2}]},
            "sides": [{"name": "West", "policy": "advance", "tanks": [{"vehicle": "t34_85", "hex": h} for h in west]},
                      {"name": "East", "policy": "hold",
                       "tanks": [{"vehicle": "pz_iv_h", "hex": h, "facing": 3} for h in east]}]}


def bench(name: str, spec, n: int) -> None:
    t0 = time.perf_counter()
    turns = decisions = 0
    for seed in range(n):
        r = run_battle(spec, seed, record_events=False)
        turns += r.row["turns"]
        decisions += r.row["decisions"]
    dt = time.perf_counter() - t0
    tracemalloc.start()
    run_battle(spec, 0, record_events=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name:>10}: {n} battles in {dt:.2f} s: {n / dt:.2f} battles/s, {turns / dt:.1f} turns/s, "
          f"{decisions / dt:.0f} decisions/s; peak traced memory of one battle {peak / 2**20:.1f} MiB, "
          f"process peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    bench("default", load_scenario("default"), n)
    bench("50v50", validate(big_scenario(50), "50v50"), max(1, n // 10))
