"""Panzer Squadron's answers kept across versions (issue 14) against fresh ones, at every decision of played battles.

``PanzerSquadron.shots`` keeps a battle's pairs across events (``play._lasting_shots``: patched as tanks change,
``BattleState.state_changes``, and as wrecks appear in a pair's footprint; ``play._lasting_best`` keeps the odds
bounds of the best-target search there too) and ``Observation.threat`` keeps its terms
the same way (``Observation._lasting_threat``).  Here every such answer is compared, while benchmark-style battles
are played (moves, kills and so wrecks, enemies hidden behind the wood, threats from what-if places and from
remembered enemies), with the answer the protocol defines computed without those memos: the loop over
``shot`` for the shots, and for a threat the sum of each known enemy's shot at the tank placed there plus each
remembered enemy's shot from where it was last seen (``HypoView`` views, one ``shot`` each).
"""
from __future__ import annotations

import benchmarks.battle as bench
from agents import observation as obs_mod
from conftest import fresh_threat
from sim.rules.base import Illegal
from sim.rules.panzer_squadron import play
from sim.runner import run_battle


def _checked(monkeypatch) -> dict[str, int]:
    seen = {"shots": 0, "threat": 0, "hidden": 0, "map_changes": 0}
    orig_shots, orig_threat = play._lasting_shots, obs_mod.Observation._lasting_threat

    def lasting_shots(rs, battle, shooter, targets, as_if):
        got = orig_shots(rs, battle, shooter, targets, as_if)
        assert got == [rs.shot(battle, shooter, t, None, as_if) for t in targets]
        seen["shots"] += 1
        seen["hidden"] += bool(battle.hidden_tanks)
        seen["map_changes"] = max(seen["map_changes"], len(battle.map.changes))
        return got

    def lasting_threat(self, lasting, tid, h, facing, known, remembered):
        got = orig_threat(self, lasting, tid, h, facing, known, remembered)
        assert got == fresh_threat(self, tid, h, facing, known, remembered)
        seen["threat"] += 1
        return got

    orig_best = play._lasting_best

    def lasting_best(rs, battle, shooter, targets, min_odds):
        """The pruned best target (shots and bounds kept in the same memo) against every shot asked afresh."""
        got = orig_best(rs, battle, shooter, targets, min_odds)
        best = None
        for t in targets:
            sh = rs.shot(battle, shooter, t)
            if isinstance(sh, Illegal):
                continue
            o = rs.odds(sh.key)
            if (o.p_kill <= 0 and o.p_hit <= 0) or (min_odds is not None and float(o.p_kill) < min_odds):
                continue
            if best is None or (o.p_kill, o.p_hit, -t) > best[0]:
                best = ((o.p_kill, o.p_hit, -t), (t, o))
        assert got == (None if best is None else best[1])
        seen["shots"] += 1
        seen["hidden"] += bool(battle.hidden_tanks)
        seen["map_changes"] = max(seen["map_changes"], len(battle.map.changes))
        return got

    monkeypatch.setattr(play, "_lasting_shots", lasting_shots)
    monkeypatch.setattr(play, "_lasting_best", lasting_best)
    monkeypatch.setattr(obs_mod.Observation, "_lasting_threat", lasting_threat)
    return seen


def test_lasting_answers_equal_fresh_ones_advance_v_greedy(monkeypatch):
    """12 v 12 on 18 x 18 (advance v greedy, 5 turns, seed 3): kills leave wrecks, the wood hides enemies."""
    seen = _checked(monkeypatch)
    spec = bench.validate(bench.big_scenario(n=12, size=18, turns=5), "panzer_squadron")
    res = run_battle(spec, seed=3, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert seen["shots"] > 150 and seen["threat"] > 100   # (184 shots at seed 1: advance asks few)
    assert seen["hidden"] > 0 and seen["map_changes"] > 0


def test_lasting_answers_equal_fresh_ones_greedy_v_greedy(monkeypatch):
    """8 v 8 greedy v greedy (3 turns, seed 2): both sides score what-if places and remembered enemies."""
    seen = _checked(monkeypatch)
    spec = bench.validate(bench.big_scenario(n=8, size=14, turns=3, policies=("greedy", "greedy")),
                          "panzer_squadron")
    res = run_battle(spec, seed=2, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert seen["shots"] > 60 and seen["threat"] > 50 and seen["map_changes"] > 0
