"""Search doctrine cost benchmark (not a test): CPU seconds per battle of ``lookahead`` against ``greedy``.

For the default scenario and one bundled scenario per rule set, plays ``N`` seeds with lookahead on each side and
prints the CPU time per battle (``time.process_time``: what the battle costs this process, whatever else the
machine runs), the search nodes per decision the doctrine answered (mean and largest; at most its ``budget``) and
the result.  The goal of issue 17: a default battle under a minute of CPU.  Run:
``python benchmarks/lookahead.py [N] [param=value ...]`` (parameters of the doctrine, e.g. ``budget=600``).
"""
from __future__ import annotations

import sys
import time

from sim.model import BattleModel
from sim.scenario import load_scenario

SCENARIOS = ("default", "asl_1941_meeting", "hq_skirmish")


def bench(name: str, n: int, params: dict) -> None:
    spec = load_scenario(name)
    cpu, wins, worst, decisions, nodes, peak = [], 0, 0.0, 0, 0, 0
    for seed in range(n):
        for side in (0, 1):
            m = BattleModel(spec, seed, {side: ("lookahead", params), 1 - side: ("greedy", {})},
                            decision_timeout_s=0)
            pol = m.controllers[side].policy
            per = []
            decide = pol.decide

            def counted(obs, decision, decide=decide, pol=pol, per=per):
                act = decide(obs, decision)
                per.append(pol.last_nodes)
                return act

            pol.decide = counted
            t0 = time.process_time()
            m.run()
            dt = time.process_time() - t0
            cpu.append(dt)
            worst = max(worst, dt)
            wins += m.outcome.winner == side
            decisions += len(per)
            nodes += sum(per)
            peak = max([peak, *per])
    games = 2 * n
    print(f"{name:>18} [{spec.ruleset.name}]: {games} battles, CPU {sum(cpu) / games:.1f} s per battle "
          f"(max {worst:.1f} s), {nodes / max(1, decisions):.0f} nodes per decision (max {peak}), "
          f"lookahead won {wins}/{games} against greedy")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and "=" not in sys.argv[1] else 3
    params = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    for name in SCENARIOS:
        bench(name, n, params)


if __name__ == "__main__":
    main()
