"""ASL's threat terms kept across versions (issue 14) against fresh ones, at every decision of played battles.

ASL shots read the occupants of their LOS line (live AFVs and wrecks hinder, asl.md 6.1), so
``Observation._lasting_threat`` keeps a term only while no tank that changed stood or stands on its footprint
(``ASL.shot_footprint``: the line's hexes; ``BattleState.state_change_hexes``), no tank joined or left the side's
hidden set there, its two tanks did not change and the battle-level state the shots read
(``ASL.lasting_rules_key``) is the same.  Here every such answer is compared, while benchmark-style ASL battles are
played (moves through the movement phase, Defensive First Fire, kills and so wrecks, enemies hidden behind the wood,
threats from what-if places and from remembered enemies), with the answer the protocol defines computed without
the memo: each known enemy's ``shot`` at the tank placed there plus each remembered enemy's ``shot`` from where it
was last seen (``HypoView`` views, one ``shot`` each).
"""
from __future__ import annotations

import benchmarks.battle as bench
from agents import observation as obs_mod
from conftest import fresh_threat
from sim.rules.asl.play import ASL
from sim.rules.base import Illegal
from sim.runner import run_battle


def _checked(monkeypatch) -> dict[str, int]:
    seen = {"threat": 0, "kept": 0, "hidden": 0, "remembered": 0, "kill_odds": 0, "kill_odds_legal": 0}
    orig = obs_mod.Observation._lasting_threat

    def lasting_threat(self, lasting, tid, h, facing, known, remembered):
        assert lasting[2], "ASL threats are kept in the occupants mode"
        store = lasting[0]
        before = {k: dict(v[0]) for k, v in store.items()}
        got = orig(self, lasting, tid, h, facing, known, remembered)
        assert got == fresh_threat(self, tid, h, facing, known, remembered)
        seen["threat"] += 1
        seen["hidden"] += bool(self._hidden())
        seen["remembered"] += bool(remembered)
        seen["kept"] += sum(1 for k, terms in before.items() if k in store and terms and
                            any(t in store[k][0] and store[k][0][t] is terms[t] for t in terms))
        return got

    orig_kills = ASL.kill_odds_at

    def kill_odds_at(self, battle, shooters, target):   # every threat term, the mover's too (summed afresh)
        got = orig_kills(self, battle, shooters, target)
        fresh = [self.shot(battle, s, target) for s in shooters]
        assert got == [None if isinstance(sh, Illegal) else self.odds(sh.key).p_kill for sh in fresh]
        seen["kill_odds"] += 1
        seen["kill_odds_legal"] += sum(x is not None for x in got)
        return got

    monkeypatch.setattr(obs_mod.Observation, "_lasting_threat", lasting_threat)
    monkeypatch.setattr(ASL, "kill_odds_at", kill_odds_at)
    return seen


def test_asl_lasting_threats_equal_fresh_ones_advance_v_greedy(monkeypatch):
    """10 v 10 ASL on 16 x 16 (advance v greedy, 3 turns, seed 1): moves, DFF, wrecks, the wood hides enemies."""
    seen = _checked(monkeypatch)
    spec = bench.validate(bench.big_scenario(n=10, ruleset="asl", size=16, turns=3), "asl")
    res = run_battle(spec, seed=1, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert seen["threat"] > 100 and seen["kept"] > 0
    assert seen["kill_odds"] > 300 and seen["kill_odds_legal"] > 1000


def test_asl_lasting_threats_equal_fresh_ones_greedy_v_greedy(monkeypatch):
    """8 v 8 ASL greedy v greedy (2 turns, seed 2) among several woods: both sides score what-if places, enemies
    go out of sight behind the woods and are remembered where they were last seen."""
    seen = _checked(monkeypatch)

    def in_sight(self, b, side):   # a fog of war for the test (ASL itself shows every enemy): seen along a clear LOS
        own = [t.hex for t in b.tanks if t.side == side and t.alive and t.hex is not None]
        return tuple(e.tank_id for e in b.enemies_of(side) if any(self.los(b, h, e.hex)[0] for h in own))

    monkeypatch.setattr(ASL, "visible", in_sight)
    scen = bench.big_scenario(n=8, ruleset="asl", size=14, turns=2, policies=("greedy", "greedy"))
    scen["map"]["terrain"] += [{"tile": "woods", "center": c, "radius": 1} for c in ([4, 1], [9, -1], [6, 6])]
    spec = bench.validate(scen, "asl")
    res = run_battle(spec, seed=2, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert seen["threat"] > 50 and seen["kept"] > 0 and seen["hidden"] > 0 and seen["remembered"] > 0
