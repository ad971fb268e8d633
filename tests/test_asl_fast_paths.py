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


def test_tables_read_with_libyaml_equal_the_pure_python_safe_load():
    """The ASL tables (``asl_ordnance.yaml``) as :func:`sim.rules.asl.tables.raw_data` reads them -- libyaml's safe
    loader where PyYAML has it -- equal ``yaml.safe_load`` of the same text value for value and type for type
    (a ``True`` is not a ``1``, a ``"1"`` not an int, mappings in the same key order)."""
    import yaml

    from sim.rules.asl import tables

    def typed(x):
        if isinstance(x, dict):
            return ("dict", [(typed(k), typed(v)) for k, v in x.items()])
        if isinstance(x, list):
            return ("list", [typed(v) for v in x])
        return (type(x).__name__, x)

    if hasattr(yaml, "CSafeLoader"):
        assert tables.SAFE_LOADER is yaml.CSafeLoader
    tables.raw_data.cache_clear()
    try:
        got = tables.raw_data()
    finally:
        tables.raw_data.cache_clear()
    assert typed(got) == typed(yaml.safe_load(tables.data_text()))
