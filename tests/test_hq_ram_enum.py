"""``Legal.rams`` / ``Observation.ram_targets`` (issue 14): the legal rams of an actor in one call.  At every
``Doctrine.ram_action`` of played Hummel Quest battles the answer equals the direct loop it replaced (ask
``is_legal(Ram(a, e))`` for every visible enemy, nearest first by ``(distance, actor, enemy)``), and
``ram_targets(a)`` lists exactly the tanks ``e`` (any id, hidden ones included) for which ``is_legal(Ram(a, e))``
holds; on the true board ``Legal.rams`` equals ``contains`` tank by tank at every decision."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.actions import Ram
from sim.model import BattleModel
from sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def _loop_ram_action(obs: Any, decision: Any, actors: Any) -> Any:
    """The answer of ``Doctrine.ram_action`` before ``ram_targets``: ``is_legal`` pair by pair."""
    best = None
    for a in (decision.actors if actors is None else actors):
        me = obs.for_actor(a).me
        if me is None or me.hex is None:
            continue
        for e in obs.enemies():
            act = Ram(a, e.tank_id)
            if obs.is_legal(act):
                k = (obs.distance(me.hex, e.hex), a, e.tank_id)
                if best is None or k < best[0]:
                    best = (k, act)
    return None if best is None else best[1]


@pytest.mark.parametrize("name,seed,turns", [("scenarios/hq_ram_brawl.yaml", 1, None),
                                              ("scenarios/hq_ram_brawl.yaml", 2, None),
                                              ("benchmarks/scenarios/hq_50v50.yaml", 1, 3)])
def test_ram_action_equals_the_is_legal_loop(monkeypatch: Any, name: str, seed: int,
                                         turns: int | None) -> None:
    from agents.policies.base import Doctrine

    orig = Doctrine.ram_action
    seen = {"calls": 0, "enumerated": 0, "rams": 0, "found": 0}

    def checked(self: Any, obs: Any, decision: Any, actors: Any = None) -> Any:
        got = orig(self, obs, decision, actors)
        if obs.has_ramming:
            seen["calls"] += 1
            assert got == _loop_ram_action(obs, decision, actors), (decision.kind, got)
            seen["found"] += got is not None
            for a in (decision.actors if actors is None else actors):
                rams = obs.ram_targets(a)
                if rams is not None:
                    seen["enumerated"] += 1
                    seen["rams"] += len(rams)
                    want = tuple(t.tank_id for t in obs._b.tanks if obs.is_legal(Ram(a, t.tank_id)))
                    assert rams == want, (decision.kind, a, rams, want)
        return got

    monkeypatch.setattr(Doctrine, "ram_action", checked)
    m = BattleModel(load_scenario(ROOT / name), seed, decision_timeout_s=0)
    m.run(max_turns=turns)
    assert seen["calls"] > 5 and seen["enumerated"] >= seen["calls"], seen
    if "brawl" in name:
        assert seen["rams"] > 0 and seen["found"] > 0, seen


def test_legal_rams_equal_contains_at_every_decision() -> None:
    kinds: dict[str, int] = {}
    listed = 0
    for name, seed in (("hq_ram_brawl", 1), ("hq_ram_brawl", 3), ("hq_skirmish", 1)):
        m = BattleModel(load_scenario(name), seed, decision_timeout_s=0)
        b = m.battle
        while m.battle.turn <= 6 and (d := m.pending()) is not None:
            rams = d.legal.rams
            if rams is not None:
                kinds[d.kind] = kinds.get(d.kind, 0) + 1
                for a in {*d.actors, *(t.tank_id for t in b.tanks[:3])}:
                    got = rams(a)
                    want = tuple(t.tank_id for t in b.tanks if d.legal.contains(Ram(a, t.tank_id)))
                    assert got == want, (name, seed, d.kind, a)
                    listed += len(got)
            m.advance(1)
    assert {"activate", "move_step", "fire", "ram"} <= set(kinds) and listed > 0, (kinds, listed)
