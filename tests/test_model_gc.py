"""``BattleModel.run`` freezes the heap out of the cyclic collector only while the battle plays."""
from __future__ import annotations

import gc

import pytest

from conftest import small_ps_scenario


def test_run_hands_the_frozen_heap_back_to_the_collector():
    from sim.model import FULL_GC_EVERY, BattleModel
    from sim.scenario import validate

    before = gc.get_freeze_count()  # CPython freezes a few hundred objects at start-up
    thresholds = gc.get_threshold()
    assert thresholds[2] < FULL_GC_EVERY  # CPython's default (10): the test would show nothing otherwise
    seen: list[int] = []
    during: list[tuple[int, ...]] = []
    model = BattleModel(validate(small_ps_scenario(), "small"), 1, decision_timeout_s=0)
    model.battle.listeners.append(lambda entry: seen.append(gc.get_freeze_count()))
    model.battle.listeners.append(lambda entry: during.append(gc.get_threshold()))
    model.run(max_turns=1)
    assert seen and min(seen) > before  # the battle's heap frozen while it played
    assert gc.get_freeze_count() == 0
    # the oldest generation's threshold raised while it played, the young ones untouched, all put back
    assert set(during) == {(thresholds[0], thresholds[1], FULL_GC_EVERY)}
    assert gc.get_threshold() == thresholds

    def boom(entry):
        raise RuntimeError("listener failed")

    model.battle.listeners.append(boom)
    with pytest.raises(RuntimeError, match="listener failed"):
        model.run()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


@pytest.mark.parametrize("scenario", ["asl_1941_meeting", "hq_skirmish", "default"])
def test_a_decisions_observation_is_freed_without_the_cyclic_collector(scenario):
    # an observation, its decision and its SideLegal hold no reference cycle: once a decision is answered they
    # go by reference counting, so the collector's oldest generation does not fill with decisions' memos
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    model = BattleModel(load_scenario(scenario), 3, decision_timeout_s=0)
    gc.collect()
    flags = gc.get_debug()
    gc.disable()
    try:
        answered = model.advance(60)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        gc.enable()
    assert answered == 60
    assert not kinds & {"Observation", "SideLegal", "Decision", "Legal"}, sorted(kinds)
