"""``BattleModel.run`` freezes the heap out of the cyclic collector only while the battle plays."""
from __future__ import annotations

import gc

import pytest

from conftest import small_ps_scenario


def test_run_hands_the_frozen_heap_back_to_the_collector():
    from sim.model import FULL_GC_EVERY, MIDDLE_GC_EVERY, YOUNG_GC_EVERY, BattleModel
    from sim.scenario import validate

    before = gc.get_freeze_count()  # CPython freezes a few hundred objects at start-up
    thresholds = gc.get_threshold()
    # CPython's defaults (700, 10, 10): the test would show nothing otherwise
    assert thresholds < (YOUNG_GC_EVERY, MIDDLE_GC_EVERY, FULL_GC_EVERY)
    assert thresholds[1] < MIDDLE_GC_EVERY and thresholds[2] < FULL_GC_EVERY
    seen: list[int] = []
    during: list[tuple[int, ...]] = []
    model = BattleModel(validate(small_ps_scenario(), "small"), 1, decision_timeout_s=0)
    model.battle.listeners.append(lambda entry: seen.append(gc.get_freeze_count()))
    model.battle.listeners.append(lambda entry: during.append(gc.get_threshold()))
    model.run(max_turns=1)
    assert seen and min(seen) > before  # the battle's heap frozen while it played
    assert gc.get_freeze_count() == 0
    # the three thresholds raised while it played, all put back
    assert set(during) == {(YOUNG_GC_EVERY, MIDDLE_GC_EVERY, FULL_GC_EVERY)}
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


def test_a_callers_higher_thresholds_are_kept_while_a_battle_plays():
    from sim.model import FULL_GC_EVERY, MIDDLE_GC_EVERY, BattleModel
    from sim.scenario import validate

    old = gc.get_threshold()
    gc.set_threshold(90_000, 5, 7)
    try:
        during: list[tuple[int, ...]] = []
        model = BattleModel(validate(small_ps_scenario(), "small"), 1, decision_timeout_s=0)
        model.battle.listeners.append(lambda entry: during.append(gc.get_threshold()))
        model.run(max_turns=1)
        assert during and set(during) == {(90_000, MIDDLE_GC_EVERY, FULL_GC_EVERY)}  # each the higher of the two
        assert gc.get_threshold() == (90_000, 5, 7)
    finally:
        gc.set_threshold(*old)
