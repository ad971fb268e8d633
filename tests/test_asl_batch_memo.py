"""ASL's per-version memo of whole ``targets`` and ``shots`` answers (issue 14) against the direct computation.

``ASL.targets`` (AP) and ``ASL.shots`` with ``as_if`` keep their answers per battle version (with the hidden tanks,
the terrain version and, for ``shots``, the firer's what-if place).  During real battles every call is compared with
the answer computed afresh without any table (``ASL._shot_now`` per enemy, on the battle or on the what-if view),
so a kept answer that went stale (a tank moved, hid or changed state since) would show.
"""
from __future__ import annotations

import benchmarks.battle as bench
from sim.battle import HypoView
from sim.hexgrid import as_hex
from sim.rules.asl.play import ASL, able_to_fire
from sim.rules.base import Illegal
from sim.runner import run_battle
from sim.scenario import load_scenario


def test_kept_targets_and_shots_match_direct(monkeypatch):
    calls = {"targets": 0, "shots": 0, "kept": 0, "kept_shots": 0}
    orig_targets, orig_shots = ASL.targets, ASL.shots

    def targets(self, b, tid, fire=None):
        got = orig_targets(self, b, tid, fire)
        if fire is None:
            t = b.tanks[tid]
            want = () if able_to_fire(t) else tuple(
                e.tank_id for e in b.enemies_of(t.side)
                if not isinstance(self._shot_now(b, tid, e.tank_id, None, None), Illegal))
            assert got == want, (tid, got, want)
            calls["targets"] += 1
            calls["kept"] += orig_targets(self, b, tid, fire) is got   # a second ask is the kept answer
        return got

    def shots(self, b, shooter, ts, as_if=None):
        ts = list(ts)
        got = orig_shots(self, b, shooter, ts, as_if)
        view, kind = b, None
        if as_if is not None:
            view = HypoView(b, shooter, as_hex(as_if.hex), int(as_if.facing))
            kind = "hypo_moved" if as_if.moved else None
        assert got == [self._shot_now(view, shooter, t, None, kind) if isinstance(t, int) and not
                       isinstance(t, bool) and 0 <= t < len(b.tanks) else self._shot(view, shooter, t, None, kind)
                       for t in ts]
        before = batches[0]
        again = orig_shots(self, b, shooter, ts, as_if)
        assert again == got and again is not got
        calls["shots"] += 1
        calls["kept_shots"] += batches[0] == before   # the second ask was answered without a batch
        return got

    batches = [0]
    orig_batch = ASL._shots_batch

    def shots_batch(self, *a):
        batches[0] += 1
        return orig_batch(self, *a)

    monkeypatch.setattr(ASL, "_shots_batch", shots_batch)
    monkeypatch.setattr(ASL, "targets", targets)
    monkeypatch.setattr(ASL, "shots", shots)
    run_battle(load_scenario("scenarios/asl_1941_meeting.yaml"), seed=4)
    run_battle(bench.cases(turns=1)["asl_25v25"](), seed=2)
    assert calls["targets"] >= 20 and calls["shots"] >= 20 and calls["kept"] >= 10 and calls["kept_shots"] >= 10, calls
