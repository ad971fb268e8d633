"""``advance``'s intent asks the best shot only within ``stop_at`` of its goals (issue 14): the same answers as
asking it first, at every activation of played battles."""
from __future__ import annotations

from typing import Any, Callable

import benchmarks.battle as bench
from agents.policies.advance import Advance
from agents.policies.base import min_distance
from sim.runner import run_battle


def _direct_intent(doc: Advance, obs: Any) -> tuple[str, float]:
    """``Advance.intent`` as first written: the best shot asked before the distance."""
    goals = doc.goals(obs)
    me = obs.me
    if not goals or doc.search_done(obs):
        return "hold", -1.0
    bt = doc.best_shot(obs)
    d = min_distance(me.hex, goals)
    if bt is not None and d <= doc.stop_at:
        return "fire", 2.0 + float(bt[1].p_kill)
    return "move", 1.0 / (1 + d)


def _check(monkeypatch: Any, intent: Callable[[Advance, Any], tuple[str, float]]) -> tuple[int, int, int]:
    """Play a short ASL and a short Panzer Squadron battle with ``intent`` in place of ``Advance.intent`` and compare
    it, at every ask, with :func:`_direct_intent` at the doctrine's ``stop_at`` and at wider ones (so the shot is
    often within reach): ``(asks, fire answers, mismatches)``."""
    seen = [0, 0, 0]
    orig = Advance.intent

    def checked(self: Advance, obs: Any) -> tuple[str, float]:
        got = orig(self, obs)
        for stop in (self.stop_at, 3, 8, 1000):
            doc = Advance(stop_at=stop, min_odds=self.min_odds)
            mine, want = intent(doc, obs), _direct_intent(doc, obs)
            seen[0] += 1
            seen[1] += want[0] == "fire"
            seen[2] += mine != want
        return got

    monkeypatch.setattr(Advance, "intent", checked)
    run_battle(bench.cases(turns=3)["asl_25v25"](), seed=3)
    run_battle(bench.cases(turns=3)["ps_25v25"](), seed=3)
    return seen[0], seen[1], seen[2]


def test_advance_intent_equals_the_direct_order(monkeypatch):
    asks, fire, bad = _check(monkeypatch, Advance.intent)
    assert bad == 0
    assert asks >= 300 and fire >= 30, (asks, fire)


def test_the_check_notices_a_broken_short_path(monkeypatch):
    """A fast path that skips the shot one step too early (``d < stop_at``) is caught."""
    def broken(self: Advance, obs: Any) -> tuple[str, float]:
        goals = self.goals(obs)
        if not goals or self.search_done(obs):
            return "hold", -1.0
        d = min_distance(obs.me.hex, goals)
        bt = self.best_shot(obs) if d < self.stop_at else None
        if bt is not None:
            return "fire", 2.0 + float(bt[1].p_kill)
        return "move", 1.0 / (1 + d)

    _asks, _fire, bad = _check(monkeypatch, broken)
    assert bad > 0

