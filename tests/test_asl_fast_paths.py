"""ASL's per-batch fast paths (issue 14) against the direct computation at every call of a played battle.

``kill_odds_at`` (whose misses take ``_kill_at``, the target's reads done once per batch: ``_kill_target``) against
the kill odds of fresh shots, on a battle whose tanks start hull-down behind some hexsides (so the hull-down branch
is compared too).
"""
from __future__ import annotations

import benchmarks.battle as bench
from sim.rules.asl.play import ASL
from sim.rules.base import Illegal
from sim.runner import run_battle


def test_kill_odds_at_equals_fresh_shots_with_hull_down_targets(monkeypatch):
    seen = {"asks": 0, "legal": 0, "hull_down": 0}
    orig = ASL.kill_odds_at

    def kill_odds_at(self, battle, shooters, target):
        shooters = list(shooters)
        got = orig(self, battle, shooters, target)
        fresh = [self.shot(battle, s, target) for s in shooters]
        assert got == [None if isinstance(sh, Illegal) else self.odds(sh.key).p_kill for sh in fresh]
        seen["asks"] += 1
        seen["legal"] += sum(x is not None for x in got)
        seen["hull_down"] += sum(1 for sh in fresh if not isinstance(sh, Illegal) and sh.info.get("hull_down"))
        return got

    monkeypatch.setattr(ASL, "kill_odds_at", kill_odds_at)
    scen = bench.big_scenario(n=8, ruleset="asl", size=14, turns=2)
    for side, sides in zip(scen["sides"], ((0, 1, 5), (2, 3, 4)), strict=True):   # hexsides facing the enemy
        for k, tank in enumerate(side["tanks"]):
            if k % 2 == 0:
                tank["rules"] = {"hull_down": list(sides)}
    run_battle(bench.validate(scen, "asl"), seed=1, record_events=False, decision_timeout_s=0)
    assert seen["asks"] > 100 and seen["legal"] > 500 and seen["hull_down"] > 10
