"""Panzer Squadron branch and bound for the best target (issue 14): ``odds_bound`` is at least the exact odds of
every legal shot and ``None`` only for an illegal one, on random boards changed at random and on a played
battle; ``best_by_bound`` (kept across versions) equals the full ranking of the exact shots; and the observation's
``best_by_bound`` gives the default doctrine's ``best_target`` answer (same target, the same odds object) at
every decision of played battles."""
from __future__ import annotations

import random
from typing import Any

from sim.rules.base import Hypo, Illegal
from sim.rules.panzer_squadron.odds import IN_MOVEMENT, STATIONARY, shot_odds


def _full_best(rs: Any, b: Any, s: int, ts: list[int], min_odds: float | None) -> Any:
    """The best ``(target, odds)`` by working out every shot directly (``shot``, one pair at a time)."""
    best = None
    for t in ts:
        sh = rs.shot(b, s, t)
        if isinstance(sh, Illegal):
            continue
        o = shot_odds(sh.key)
        if (o.p_kill <= 0 and o.p_hit <= 0) or (min_odds is not None and float(o.p_kill) < min_odds):
            continue
        k = (o.p_kill, o.p_hit, -t)
        if best is None or k > best[0]:
            best = (k, t, o)
    return None if best is None else (best[1], best[2])


def _check_pairs(rs: Any, b: Any) -> tuple[int, int, int]:
    """Bound >= exact for every pair of live enemies (as they stand and from a hypothetical place); the pruned
    best equals the full one.  Returns (pairs, pairs whose bound is above the exact odds, best answers)."""
    pairs = loose = bests = 0
    live = [t for t in b.tanks if t.alive and t.hex is not None]
    for s in live:
        foes = [t.tank_id for t in b.tanks if t.side != s.side]  # the dead ones too
        hypo = Hypo(s.hex, (s.facing + 1) % 6, True)
        for as_if in (None, hypo):
            for t in foes:
                bound = rs.odds_bound(b, s.tank_id, t, as_if)
                sh = rs.shot(b, s.tank_id, t, None, as_if)
                if isinstance(sh, Illegal):
                    continue
                o = shot_odds(sh.key)
                assert bound is not None, (s.tank_id, t, as_if)
                assert bound.p_kill >= o.p_kill and bound.p_hit >= o.p_hit, (s.tank_id, t, as_if, sh.key)
                pairs += 1
                loose += (bound.p_kill, bound.p_hit) != (o.p_kill, o.p_hit)
        for min_odds in (None, 0.05, 0.25):
            got = rs.best_by_bound(b, s.tank_id, foes, min_odds)
            want = _full_best(rs, b, s.tank_id, foes, min_odds)
            assert got == want and (got is None or got[1] is want[1]), (s.tank_id, min_odds, got, want)
            bests += got is not None
    return pairs, loose, bests


def test_bound_and_pruned_best_on_random_boards():
    """Random boards with woods, random statuses and facings, changed at random (moves, pivots, markers, wrecks
    that mask sides and block lines), both line origins, the kept bounds asked again after every change."""
    from sim.battle import MemoryBattle
    from sim.events import Moved, Pivoted, Status, StatusChanged, TankStateSet
    from sim.hexgrid import Hex, parallelogram_hexes
    from sim.rules.panzer_squadron import PanzerSquadron

    rs = PanzerSquadron()
    rnd = random.Random(11)
    pairs = loose = bests = 0
    for origin in ("centre", "front_vertex"):
        for _board in range(2):
            cells = list(parallelogram_hexes(10, 10))
            terrain = {h: "woods" for h in rnd.sample(cells, 14)}
            free = [h for h in cells if h not in terrain]
            spots = rnd.sample(free, 16)
            tanks = [{"vehicle": ("t34_85", "pz_iv_h", "stug_iii_g")[i % 3], "side": i % 2, "hex": list(h),
                      "facing": rnd.randrange(6)} for i, h in enumerate(spots)]
            b = MemoryBattle(rs, cells=cells, terrain=terrain, tanks=tanks, options=rs.Options(los_origin=origin))
            for _step in range(12):
                t = rnd.choice(b.live_tanks())
                k = rnd.random()
                if k < 0.35:
                    h = rnd.choice([c for c in free if not b.occupants(c)])
                    b.emit(Moved(tank=t.tank_id, hex=Hex(*h), facing=rnd.randrange(6)))
                elif k < 0.6:
                    b.emit(Pivoted(tank=t.tank_id, facing=rnd.randrange(6)))
                elif k < 0.8:
                    b.emit(TankStateSet(t.tank_id, "marker", rnd.choice((STATIONARY, IN_MOVEMENT))))
                else:
                    b.emit(StatusChanged(tank=t.tank_id, status=Status.DESTROYED))
                p, lo, be = _check_pairs(rs, b)
                pairs, loose, bests = pairs + p, loose + lo, bests + be
    # the bound is really looser than the odds for some pairs (partial lines), so pruning is exercised
    assert pairs > 1000 and loose > 50 and bests > 200, (pairs, loose, bests)


def test_bound_and_pruned_best_through_a_played_battle():
    from sim.model import BattleModel
    from tests.test_ps_shots_batch import _scenario

    m = BattleModel(_scenario(), 3)
    b = m.battle
    pairs = loose = bests = 0
    for _step in range(25):
        if b.ended:
            break
        m.advance(4)
        p, lo, be = _check_pairs(b.ruleset, b)
        pairs, loose, bests = pairs + p, loose + lo, bests + be
    assert pairs > 1000 and loose > 20 and bests > 100, (pairs, loose, bests)


def test_observation_best_by_bound_equals_the_full_ranking_at_every_decision(monkeypatch):
    """At every decision of two played battles the pruned answer is the one of ``targets`` + ``odds_many`` (what
    ``best_target`` ranks without the bound): the same target and the same odds object."""
    from agents.observation import Observation
    from sim.model import BattleModel
    from tests.test_ps_shots_batch import _scenario

    orig = Observation.best_by_bound
    seen = [0, 0]

    def checked(self: Any, actor: int, min_odds: float | None = None) -> Any:
        got = orig(self, actor, min_odds)
        if got is None:
            return None
        ts = self.targets(actor)
        best = None
        for t, o in zip(ts, self.odds_many(ts, shooter=actor)):
            if o is None or (o.p_kill <= 0 and o.p_hit <= 0) or (min_odds is not None and float(o.p_kill) < min_odds):
                continue
            k = (o.p_kill, o.p_hit, -t)
            if best is None or k > best[0]:
                best = (k, t, o)
        want = None if best is None else (best[1], best[2])
        assert got[0] == want and (want is None or got[0][1] is want[1]), (actor, min_odds, got, want)
        seen[0] += 1
        seen[1] += want is not None
        self._cache.pop(("targets", self._own_id(actor)))  # leave the observation as the pruned path does
        return got

    monkeypatch.setattr(Observation, "best_by_bound", checked)
    for seed in (1, 2):
        m = BattleModel(_scenario(), seed)
        m.run()
    assert seen[0] > 200 and seen[1] > 50, seen
