"""Panzer Squadron fast paths of the tank-count growth (issue 14) against the direct computation at every call of a
played battle with many wrecks (so many pairs have no line of sight).

``_blocked_count``: a pair shot (:meth:`PanzerSquadron._pair_shot`) refused for want of a line of sight is answered
from the aspect, the masking test and the seven-line count alone; every pair shot of the battle is compared with
the shot computed from scratch (the geometry by ``shot_geometry`` with the lines counted directly, no cache read).
The obstacles and line-count function it keeps once per map version are compared with it too: wrecks appear as the
battle goes (a context not renewed with the version fails the comparison).
"""
from __future__ import annotations

from typing import Any

import benchmarks.battle as bench
import sim.rules.panzer_squadron.play as ps_play
from sim.rules.base import Shot
from sim.rules.panzer_squadron.play import GeometryIllegal, PanzerSquadron
from sim.rules.panzer_squadron.sight import shot_geometry
from sim.runner import run_battle


def _direct(rs: PanzerSquadron, battle: Any, shooter: int, target: int, as_if: Any, hx: Any, status: str,
            target_moving: bool) -> Any:
    """:meth:`PanzerSquadron._shot` with the geometry computed from scratch (the lines counted directly)."""
    s, t = battle.tanks[shooter], battle.tanks[target]
    facing = as_if.facing if as_if else s.facing
    gun = facing if as_if or s.turret_facing is None else s.turret_facing
    opts = battle.options
    g = shot_geometry(hx, facing, gun, s.vehicle.turret, t.hex, t.facing, t.vehicle.armour, rs.obstacles(battle),
                      rs.sight_rules(opts), opts.exceptional_modifier)
    return rs._shot_of(battle, s, t, hx, status, target_moving, g)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, Shot):
        return isinstance(got, Shot) and got.key == want.key and got.info == want.info
    return type(got) is type(want) and got == want and getattr(got, "los", None) == getattr(want, "los", None)


def test_blocked_pair_shots_equal_direct_shots_in_a_battle_with_wrecks(monkeypatch):
    seen = {"pairs": 0, "fast": 0, "masked": 0}
    orig_pair, orig_count = PanzerSquadron._pair_shot, ps_play._blocked_count

    def blocked_count(*a: Any) -> Any:
        n = orig_count(*a)
        seen["fast"] += n is not None
        return n

    def pair_shot(self, battle, shooter, target, as_if, hx, facing, gun, th, status, target_moving):
        got = orig_pair(self, battle, shooter, target, as_if, hx, facing, gun, th, status, target_moving)
        want = _direct(self, battle, shooter, target, as_if, hx, status, target_moving)
        assert _same(got, want), (shooter, target, as_if, hx, got, want)
        seen["pairs"] += 1
        seen["masked"] += isinstance(want, GeometryIllegal) and want.startswith("masked side")
        return got

    monkeypatch.setattr(ps_play, "_blocked_count", blocked_count)
    monkeypatch.setattr(PanzerSquadron, "_pair_shot", pair_shot)
    spec = bench.validate(bench.big_scenario(n=40, size=21, turns=6), "growth")
    r = run_battle(spec, seed=1, record_events=False, decision_timeout_s=0)
    assert r.row["kills"] > 20
    assert seen["pairs"] > 3000 and seen["fast"] > 1000 and seen["masked"] > 10, seen
