"""Environment speed benchmark (not a test): PettingZoo AEC steps per second for a masked random agent.

Every side is an agent of :class:`sim.env.TankEnv` answering each decision with a uniformly random index of its
mask (``obs_type="flat"``, no rendering), in one process: the figure is steps per CPU second of that process (one
core; robust to other load on the machine), with the wall-clock rate beside it.  Scenarios, per rule set: a small
2 v 2 on an open 8 x 8 map (comparable to the 5 x 5 scenario of the peer's Gym bridge, whose figure is about 3,000
steps/s), the rule set's bundled default battle, and 50 v 50 on 25 x 25 (truncated after 1,500 steps a battle).
A step is one answered decision of an agent.  Figures measured here: docs/learning.md ("Speed").

    python benchmarks/env.py [--seconds S] [--only small|default|50v50] [--profile NAME]

``--profile NAME`` (e.g. ``small/panzer_squadron``) prints where the time goes (cProfile, top entries).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import warnings

import numpy as np

from sim.env import TankEnv
from sim.scenario import load_scenario, validate

VEHICLES = {"panzer_squadron": ("pz_iv_h", "t34_85"), "asl": ("pzkpfw_iiih", "t34_m41"),
            "hummel_quest": ("hq_example_medium", "hq_example_medium")}
HEX_M = {"panzer_squadron": 50, "asl": 40, "hummel_quest": 10}
DEFAULTS = {"panzer_squadron": "default", "asl": "asl_1941_meeting", "hummel_quest": "hq_skirmish"}


def small(ruleset: str) -> dict:
    """2 v 2 on an open 8 x 8 map (the bundled ``skirmish_2v2`` for Panzer Squadron)."""
    a, b = VEHICLES[ruleset]
    return {"name": f"small_{ruleset}", "ruleset": ruleset, "turn_limit": 8,
            "map": {"width": 8, "height": 8, "hex_size_m": HEX_M[ruleset]},
            "sides": [{"name": "West", "tanks": [{"vehicle": a, "hex": [1, 2]}, {"vehicle": a, "hex": [1, 5]}]},
                      {"name": "East", "tanks": [{"vehicle": b, "hex": [6, -1], "facing": 3},
                                                 {"vehicle": b, "hex": [6, 2], "facing": 3}]}]}


def big(ruleset: str, n: int = 50) -> dict:
    """``n`` v ``n`` on 25 x 25 (the layout of ``benchmarks/battle.py``)."""
    a, b = VEHICLES[ruleset]
    west = [[q, r - q // 2] for q in range(0, 4) for r in range(0, 25, 2)][:n]
    east = [[q, r - q // 2] for q in range(21, 25) for r in range(0, 25, 2)][:n]
    return {"name": f"{n}v{n}_{ruleset}", "ruleset": ruleset, "turn_limit": 12,
            "map": {"width": 25, "height": 25, "hex_size_m": HEX_M[ruleset],
                    "terrain": [{"tile": "woods", "center": [12, 6], "radius": 2}]},
            "sides": [{"name": "West", "tanks": [{"vehicle": a, "hex": h} for h in west]},
                      {"name": "East", "tanks": [{"vehicle": b, "hex": h, "facing": 3} for h in east]}]}


def spec_for(kind: str, ruleset: str):
    if kind == "small":
        return load_scenario("skirmish_2v2") if ruleset == "panzer_squadron" else validate(small(ruleset), "small")
    if kind == "default":
        return load_scenario(DEFAULTS[ruleset])
    return validate(big(ruleset), "50v50")


def run(env: TankEnv, seconds: float, max_battles: int = 10 ** 6) -> tuple[int, int, float, float]:
    """Play battles with masked random agents until ``seconds`` of CPU time have passed (a battle is never cut);
    returns ``(steps, battles, wall seconds, CPU seconds)``."""
    rng = np.random.default_rng(0)
    steps = battles = 0
    w0, t0 = time.perf_counter(), time.process_time()
    while time.process_time() - t0 < seconds and battles < max_battles:
        env.reset(seed=battles)
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            legal = np.flatnonzero(env.infos[agent]["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
            steps += 1
        battles += 1
    return steps, battles, time.perf_counter() - w0, time.process_time() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="CPU time per measurement (whole battles)")
    p.add_argument("--only", choices=("small", "default", "50v50"))
    p.add_argument("--profile", metavar="KIND/RULESET")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.profile:
        kind, _, rs = args.profile.partition("/")
        env = TankEnv(spec_for(kind, rs), obs_type="flat")
        prof = cProfile.Profile()
        prof.enable()
        steps, battles, _wall, cpu = run(env, args.seconds)
        prof.disable()
        print(f"{args.profile}: {steps} steps, {battles} battles in {cpu:.1f} CPU s (profiled)")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return 0
    for kind in ("small", "default", "50v50"):
        if args.only and kind != args.only:
            continue
        for rs in ("panzer_squadron", "asl", "hummel_quest"):
            spec = spec_for(kind, rs)
            # a 50 v 50 battle runs to thousands of decisions: it is truncated after 1,500 steps
            env = TankEnv(spec, obs_type="flat", max_decisions=1500 if kind == "50v50" else None)
            steps, battles, wall, cpu = run(env, args.seconds)
            print(f"{kind:>7} {rs:>15} ({spec.name}): {steps / cpu:8.0f} steps per CPU s ({steps / wall:.0f} per "
                  f"wall s; {steps} steps, {battles} battles, {steps / max(1, battles):.0f} a battle)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
