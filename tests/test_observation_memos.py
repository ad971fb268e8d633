"""The observation's and the doctrines' memos and fast paths (issue 14) against fresh answers, at every policy
decision of played battles (Panzer Squadron, where the sight matrix and the lasting memos apply, and ASL, which
shares the observation and the doctrines' code paths).

Checked at each decision: ``enemies()`` (views kept per board version and side) equals fresh views of
``visible_ids()``, and ``_enemy_hexes()`` (kept likewise) and the doctrines' ``known_enemy_hexes`` their hexes;
``last_known()`` (kept per decision and version) equals the side's memory read afresh; the rule set's ``visible``
(Panzer Squadron: the :class:`sim.battle.SightMatrix`, which tries the last seer first) equals the pair test asked
of every pair; ``best_target`` / ``best_shot`` of the default doctrine (the
kill-odds fast loop) equal the general loop's answers for every actor of the decision.
"""
from __future__ import annotations

from typing import Any

import pytest

from agents.observation import Observation, TankView
from agents.policies.base import Doctrine
from sim.battle import _SIGHT
from sim.runner import run_battle
from sim.scenario import validate


def _scenario(ruleset: str, n: int, turns: int) -> Any:
    """A small ``n`` v ``n`` battle (the benchmarks' layout: the sides at the two edges, a wood between)."""
    vehicles = {"panzer_squadron": ("t34_85", "pz_iv_h"), "asl": ("t34_m41", "pzkpfw_iiih")}[ruleset]
    size = 13
    west = [[0, r] for r in range(0, size, 2)][:n]
    east = [[size - 1, r - (size - 1) // 2] for r in range(0, size, 2)][:n]
    return validate({
        "name": f"memo_{ruleset}", "ruleset": {"name": ruleset}, "turn_limit": turns,
        "map": {"shape": "rectangle", "width": size, "height": size,
                "terrain": [{"tile": "woods", "center": [size // 2, size // 4], "radius": 1}]},
        "sides": [{"name": "West", "policy": "advance", "tanks": [{"vehicle": vehicles[0], "hex": h, "facing": 1}
                                                                  for h in west]},
                  {"name": "East", "policy": "greedy", "tanks": [{"vehicle": vehicles[1], "hex": h, "facing": 4}
                                                                 for h in east]}]}, "memo")


class _General(Doctrine):
    """The default doctrine taking :meth:`best_target`'s general loop (the same ``target_value``, overridden)."""

    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        return odds.p_kill


def fresh_hexes(obs: Observation) -> list:
    """The last-known hexes of the side's live enemies, read afresh from its memory."""
    b = obs._b
    return [h for k, h in obs._last_known.items() if isinstance(k, int) and b.tanks[k].alive]


def _check(obs: Observation, doc: Doctrine, counts: dict) -> None:
    b = obs._b
    assert obs.enemies() == [TankView(b.tanks[i]) for i in obs.visible_ids()]
    assert [e.hex for e in obs.enemies()] == [b.tanks[i].hex for i in obs.visible_ids()]
    # _enemy_hexes() (kept per board version and side: the doctrines' known_enemy_hexes) equals the hexes read afresh
    assert obs._enemy_hexes() == tuple(sorted({b.tanks[i].hex for i in obs.visible_ids()}))
    assert Doctrine.known_enemy_hexes(obs) == (tuple(sorted({b.tanks[i].hex for i in obs.visible_ids()}))
                                              or tuple(sorted(set(fresh_hexes(obs)))))
    fresh = {k: h for k, h in sorted((k, h) for k, h in obs._last_known.items() if isinstance(k, int))
             if b.tanks[k].alive}
    assert dict(obs.last_known()) == fresh
    rs = b.ruleset
    if rs.name == "panzer_squadron" and "ps_los" in _SIGHT.get(b, {}):  # the matrix made by visible_ids
        own = b.live_tanks(obs.side)
        direct = tuple(e.tank_id for e in b.enemies_of(obs.side)
                       if any(rs.geometry(b, s.tank_id, e.tank_id)["los"] != "blocked" for s in own))
        assert rs.visible(b, obs.side) == direct
        counts["sight"] += 1
    general = _General()
    general.min_odds = doc.min_odds
    for a in obs.decision.actors:
        if not obs._own(a) or b.tanks[a].hex is None:
            continue
        o = obs.for_actor(a)
        for worth in (False, True):
            got = doc.best_target(o, a, worth=worth)
            assert got == general.best_target(o, a, worth=worth)
            counts["best"] += got is not None


@pytest.mark.parametrize("ruleset,n,turns", [("panzer_squadron", 7, 8), ("asl", 4, 2)])
def test_memos_equal_fresh_answers_at_every_decision(monkeypatch, ruleset, n, turns):
    counts = {"decisions": 0, "sight": 0, "best": 0}
    decide = Doctrine.decide

    def checked(self: Doctrine, obs: Any, decision: Any) -> Any:
        _check(obs, self, counts)
        counts["decisions"] += 1
        return decide(self, obs, decision)

    monkeypatch.setattr(Doctrine, "decide", checked)
    run_battle(_scenario(ruleset, n, turns), seed=3)
    assert counts["decisions"] > 20
    assert counts["best"] > 0, counts
    if ruleset == "panzer_squadron":
        assert counts["sight"] == counts["decisions"]
