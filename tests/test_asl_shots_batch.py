"""ASL's batched shot queries (issue 14) against the loop over ``shot`` and the direct computation.

``ASL.shots_at`` / ``ASL.shots`` (``ASL._shots_batch``) ask the shot table with the target's or the firer's part,
the LOS entry and each firer's fire check taken once per batch.  During real battles (the bundled ASL scenario and
a benchmark-style battle, whose observations ask threats from what-if views, nested "ghost" views of remembered
enemies and odds from hypothetical places) every batch is compared with the loop the protocol defines
(``[shot(b, s, t) ...]``, answered through the same table) and with ``ASL._shot_now`` (computed afresh, no table),
including batches with bad, friendly and off-board targets and after the table has gone stale (tanks moved since).
"""
from __future__ import annotations

import random

import benchmarks.battle as bench
from sim.battle import HypoView
from sim.hexgrid import as_hex
from sim.rules.asl.play import ASL
from sim.rules.base import Ruleset
from sim.runner import run_battle
from sim.scenario import load_scenario


def _direct(rs: ASL, b, s, t, kind):
    """The shot computed without any table (what the table's answers must equal)."""
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(b.tanks):
        return rs._shot(b, s, t, None, kind)
    return rs._shot_now(b, s, t, None, kind)


def _checked(monkeypatch, rng: random.Random) -> list[int]:
    """Make every batched call compare itself with the loop and the direct answers; returns the call count."""
    calls = [0, 0]
    orig_at, orig_shots = ASL.shots_at, ASL.shots

    def shots_at(self, b, shooters, target):
        shooters = list(shooters)
        # extra asks now and then: every tank (friends, wrecks, off-board ones, the target itself)
        extra = shooters + list(range(len(b.tanks))) if rng.random() < 0.3 else shooters
        got = orig_at(self, b, extra, target)
        assert got == Ruleset.shots_at(self, b, extra, target)
        assert got == [_direct(self, b, s, target, None) for s in extra]
        calls[0] += 1
        return got[:len(shooters)]

    def shots(self, b, shooter, targets, as_if=None):
        targets = list(targets)
        extra = targets + list(range(len(b.tanks))) + [-1, len(b.tanks), True, (0, 0)] if rng.random() < 0.3 \
            else targets
        got = orig_shots(self, b, shooter, extra, as_if)
        assert got == Ruleset.shots(self, b, shooter, extra, as_if)
        if as_if is not None:
            view = HypoView(b, shooter, as_hex(as_if.hex), int(as_if.facing))
            kind = "hypo_moved" if as_if.moved else None
            assert got == [_direct(self, view, shooter, t, kind) for t in extra]
        else:
            assert got == [_direct(self, b, shooter, t, None) for t in extra]
        calls[1] += 1
        return got[:len(targets)]

    monkeypatch.setattr(ASL, "shots_at", shots_at)
    monkeypatch.setattr(ASL, "shots", shots)
    return calls


def test_batches_equal_the_loop_in_the_bundled_scenario(monkeypatch):
    """The bundled ASL scenario played to its end (seed 3): every batch equals the loop and the direct shots."""
    calls = _checked(monkeypatch, random.Random(1))
    res = run_battle(load_scenario("asl_1941_meeting"), seed=3, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert calls[0] > 150 and calls[1] > 30   # (178 batches at seed 3: the doctrines ask fewer threats since s27)


def test_batches_equal_the_loop_in_a_big_battle(monkeypatch):
    """A 10 v 10 benchmark-style battle (3 turns, seed 1; threats from many what-if places, stale tables)."""
    calls = _checked(monkeypatch, random.Random(2))
    spec = bench.validate(bench.big_scenario(n=10, ruleset="asl", size=16, turns=3), "asl")
    res = run_battle(spec, seed=1, record_events=False, decision_timeout_s=0)
    assert res.row["turns"] >= 1
    assert calls[0] > 500 and calls[1] > 100   # (140 at seed 1 since advance asks its best shot only near its goals)


def test_new_shot_is_the_constructed_shot():
    """``_new_shot`` (fields written at once) makes the value ``Shot(...)`` makes: equal, same fields, same repr,
    still frozen."""
    import dataclasses

    import pytest

    from sim.rules.asl.play import _SHOT_BY_DICT, _new_shot
    from sim.rules.base import Shot

    assert _SHOT_BY_DICT
    for face in ("front", None):
        a = _new_shot(3, 7, ("k", 1), face, {"range": 2})
        b = Shot(3, 7, ("k", 1), face, {"range": 2})
        assert a == b and repr(a) == repr(b) and dataclasses.asdict(a) == dataclasses.asdict(b)
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.target = 1  # type: ignore[misc]
