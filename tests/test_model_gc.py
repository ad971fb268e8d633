"""``BattleModel.run`` freezes the heap out of the cyclic collector only while the battle plays."""
from __future__ import annotations

import gc

import pytest

from conftest import small_ps_scenario


def test_run_hands_the_frozen_heap_back_to_the_collector():
    from sim.model import BattleModel
    from sim.scenario import validate

    before = gc.get_freeze_count()  # CPython freezes a few hundred objects at start-up
    seen: list[int] = []
    model = BattleModel(validate(small_ps_scenario(), "small"), 1, decision_timeout_s=0)
    model.battle.listeners.append(lambda entry: seen.append(gc.get_freeze_count()))
    model.run(max_turns=1)
    assert seen and min(seen) > before  # the battle's heap frozen while it played
    assert gc.get_freeze_count() == 0

    def boom(entry):
        raise RuntimeError("listener failed")

    model.battle.listeners.append(boom)
    with pytest.raises(RuntimeError, match="listener failed"):
        model.run()
    assert gc.get_freeze_count() == 0
