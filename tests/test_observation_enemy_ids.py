"""An observation's enemy ids (issue 14 fast path): ``agents.observation._enemy_ids``, kept per battle and side
and patched from ``state_changes``, equals the enemies read off the tanks (live: status active on the board;
active: status active) at every ask of played battles, and ``known_ids`` / ``_hidden`` built on it equal their
definitions from the tanks."""
from __future__ import annotations

from typing import Any

import pytest

import agents.observation as obs_mod
from sim.model import BattleModel
from sim.scenario import load_scenario


@pytest.mark.parametrize("name", ["hq_skirmish", "hq_ram_brawl", "skirmish_2v2"])
def test_enemy_ids_equal_the_tanks_at_every_ask(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = obs_mod._enemy_ids
    asked = {"n": 0, "patched": 0, "dead": 0}

    def checked(b: Any, side: int) -> Any:
        live, active = real(b, side)
        assert set(live) == {t.tank_id for t in b.live_tanks() if t.side != side}
        assert active == tuple(t.tank_id for t in b.tanks if t.side != side and t.alive)
        asked["n"] += 1
        asked["dead"] += len(active) < sum(1 for t in b.tanks if t.side != side)
        return live, active

    seen_hidden = {"n": 0}
    real_hidden = obs_mod.Observation._hidden

    def hidden(self: Any) -> tuple[int, ...]:
        got = real_hidden(self)
        known = set(self.known_ids())
        want = tuple(t.tank_id for t in self._b.tanks if t.side != self.side and t.alive and t.tank_id not in known)
        assert got == want
        live = {t.tank_id for t in self._b.live_tanks() if t.side != self.side}
        assert set(self.visible_ids()) & live <= known <= live
        seen_hidden["n"] += 1
        return got

    monkeypatch.setattr(obs_mod, "_enemy_ids", checked)
    monkeypatch.setattr(obs_mod.Observation, "_hidden", hidden)
    for seed in (1, 2):
        m = BattleModel(load_scenario(name), seed)
        m.run()
        assert m.decisions > 3
    assert asked["n"] > 20 and asked["dead"] > 0 and seen_hidden["n"] > 20, (asked, seen_hidden)
