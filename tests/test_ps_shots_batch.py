"""Panzer Squadron batched shots (issue 14): ``shots`` / ``shots_at`` and their per-board front cache give exactly
the shots computed directly, on a real battle played forward (tanks move, turn, change status and are destroyed,
so cached pairs go stale), for real and hypothetical positions; and the observation's ``odds_many`` equals ``odds``
one target at a time."""
from __future__ import annotations

from typing import Any

from sim.battle import HypoView
from sim.model import BattleModel
from sim.rules.base import Hypo, Illegal
from sim.rules.panzer_squadron.odds import IN_MOVEMENT
from sim.scenario import validate


def _scenario() -> Any:
    """12 v 12 on a 16 x 16 rectangle with a wood in the middle (the benchmark battle, smaller)."""
    rows = list(range(0, 16, 2))
    west = [[q, r - q // 2] for q in range(2) for r in rows][:12]
    east = [[q, r - q // 2] for q in range(15, 13, -1) for r in rows][:12]
    return validate({
        "name": "ps_12v12", "ruleset": {"name": "panzer_squadron"}, "turn_limit": 8,
        "map": {"shape": "rectangle", "width": 16, "height": 16,
                "terrain": [{"tile": "woods", "center": [8, 4], "radius": 2}]},
        "sides": [{"name": "West", "policy": "advance", "tanks": [{"vehicle": "t34_85", "hex": h, "facing": 1}
                                                                   for h in west]},
                  {"name": "East", "policy": "greedy", "tanks": [{"vehicle": "pz_iv_h", "hex": h, "facing": 4}
                                                                  for h in east]}]}, "panzer_squadron")


def _direct(rs: Any, b: Any, s: int, t: int, as_if: Hypo | None = None) -> Any:
    """The shot computed from scratch: the same checks as ``shot``, then the geometry by ``shot_geometry`` with the
    clear lines counted directly (no cache read: neither the line counts nor the shared terrain-only answers) and
    the rest by ``_shot_of``, the part of ``_shot`` after the geometry."""
    return _direct_shot(rs, b, s, t, as_if)


def _direct_geometry(battle: Any, a: Any, facing: int, gun: int, firer: Any, b: Any, target_facing: int,
                     target: Any, obstacles: Any, rules: Any) -> dict:
    """``_terrain_geometry``'s geometry without its shared cache: ``shot_geometry``, the lines counted directly."""
    from sim.rules.panzer_squadron.sight import shot_geometry

    return shot_geometry(a, facing, gun, firer.turret, b, target_facing, target.armour, obstacles, rules,
                         battle.options.exceptional_modifier)


def _direct_shot(rs: Any, b: Any, s: int, t: int, as_if: Hypo | None = None) -> Any:
    ts, tt = b.tanks[s], b.tanks[t]
    if not tt.alive or tt.hex is None:
        return Illegal("target is not a live tank")
    if tt.side == ts.side:
        return Illegal("target is a friendly tank")
    if as_if:
        hx = as_if.hex
        status = IN_MOVEMENT if as_if.moved and ts.rules_state.get("start_status") == IN_MOVEMENT else \
            ts.rules_state.get("start_status")
    else:
        hx = ts.hex
        status = ts.rules_state["start_status"] if b.rules_state.get("active") == s else ts.rules_state["marker"]
    facing = as_if.facing if as_if else ts.facing
    gun = facing if as_if or ts.turret_facing is None else ts.turret_facing
    g = _direct_geometry(b, hx, facing, gun, ts.vehicle, tt.hex, tt.facing, tt.vehicle, rs.obstacles(b),
                         rs.sight_rules(b.options))
    return rs._shot_of(b, ts, tt, hx, status, tt.rules_state.get("marker") == IN_MOVEMENT, g)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, Illegal):
        return isinstance(got, Illegal) and str(got) == str(want) and \
            getattr(got, "los", None) == getattr(want, "los", None)
    return (not isinstance(got, Illegal) and (got.shooter, got.target, got.key, got.face) ==
            (want.shooter, want.target, want.key, want.face) and dict(got.info) == dict(want.info))


def test_batched_shots_equal_the_direct_computation_through_a_battle():
    m = BattleModel(_scenario(), 3)
    b = m.battle
    rs = b.ruleset
    checked = kills = hypo = 0
    for _step in range(40):
        if b.ended:
            break
        m.advance(4)
        live = [t for t in b.tanks if t.alive and t.hex is not None]
        kills = sum(1 for t in b.tanks if not t.alive)
        for s in live:
            foes = [t.tank_id for t in b.tanks if t.side != s.side]  # the dead ones too
            for got, t in zip(rs.shots(b, s.tank_id, foes), foes):
                assert _same(got, _direct(rs, b, s.tank_id, t)), (s.tank_id, t)
                checked += 1
            shooters = [t.tank_id for t in live if t.side != s.side]
            for got, e in zip(rs.shots_at(b, shooters, s.tank_id), shooters):
                assert _same(got, _direct(rs, b, e, s.tank_id)), (e, s.tank_id)
            # a hypothetical place two hexes on, and the enemies' shots at the tank standing there
            h = s.hex.neighbour(s.facing).neighbour(s.facing)
            if h in b.map and not b.occupants(h):
                ai = Hypo(h, (s.facing + 1) % 6, True)
                for got, t in zip(rs.shots(b, s.tank_id, foes, ai), foes):
                    assert _same(got, _direct(rs, b, s.tank_id, t, ai))
                view = HypoView(b, s.tank_id, h, (s.facing + 1) % 6)
                for got, e in zip(rs.shots_at(view, shooters, s.tank_id), shooters):
                    assert _same(got, _direct(rs, view, e, s.tank_id))
                hypo += 1
    assert checked > 2000 and kills >= 3 and hypo > 50, (checked, kills, hypo)


def test_a_change_off_the_footprint_never_changes_the_geometry():
    """``_line_footprint`` (what the front cache and the clear-line cache watch) holds every hex an obstacle in
    which could change a shot's geometry (exceptional lines aside): on random obstacle sets, adding an obstacle
    off the footprint leaves ``shot_geometry`` as it was, for every facing of both tanks and both line origins."""
    import random

    from sim.hexgrid import Hex
    from sim.rules.panzer_squadron.play import _in_footprint, _line_footprint
    from sim.rules.panzer_squadron.sight import SightRules, shot_geometry

    rnd = random.Random(7)
    armour = {"front": 8, "side": 5, "rear": 3}
    tried = changed_in = 0
    for _ in range(120):
        a, b = Hex(0, 0), Hex(rnd.randint(-7, 7), rnd.randint(-7, 7))
        if a == b:
            continue
        cells = [Hex(q, r) for q in range(-10, 11) for r in range(-10, 11) if Hex(q, r) not in (a, b)]
        obstacles = frozenset(rnd.sample(cells, rnd.randint(0, 25)))
        c = rnd.choice([h for h in cells if h not in obstacles])
        for origin in ("centre", "front_vertex"):
            rules = SightRules(origin, "both", None)
            for ff in range(6):
                fp = _line_footprint(b[0] - a[0], b[1] - a[1], None if origin == "centre" else ff)
                for tf in range(6):
                    g0 = shot_geometry(a, ff, ff, True, b, tf, armour, obstacles, rules)
                    if "exceptional_face" in g0:
                        continue
                    g1 = shot_geometry(a, ff, ff, True, b, tf, armour, obstacles | {c}, rules)
                    if _in_footprint(fp, c[0] - a[0], c[1] - a[1]):
                        changed_in += g0 != g1
                    else:
                        assert g0 == g1, (a, b, ff, tf, origin, sorted(obstacles), c)
                        tried += 1
    assert tried > 5_000 and changed_in > 50, (tried, changed_in)


def test_odds_many_equals_odds_one_at_a_time():
    m = BattleModel(_scenario(), 5)
    b = m.battle
    import random

    from agents.observation import Observation
    from sim.actions import Pass
    from sim.rules.base import Decision, Legal

    seen = 0
    for _step in range(25):
        if b.ended:
            break
        m.advance(3)
        for side in (0, 1):
            for a in [t.tank_id for t in b.live_tanks(side)][:4]:
                obs = Observation(b, side, Decision(side, "fire", (a,), Legal(), Pass(a)), random.Random(0), a)
                targets = [t.tank_id for t in b.tanks if t.side != side]
                assert obs.odds_many(targets) == [obs.odds(t) for t in targets]
                ai = Hypo(b.tanks[a].hex, (b.tanks[a].facing + 2) % 6, False)
                assert obs.odds_many(targets, as_if=ai) == [obs.odds(t, as_if=ai) for t in targets]
                seen += sum(o is not None for o in obs.odds_many(targets))
    assert seen > 20


def test_sight_matrix_visible_equals_the_direct_pair_test_through_a_battle():
    """``visible`` (the :class:`sim.battle.SightMatrix`, which checks a known pair only against the wrecks that
    landed in the footprint of the shot it read) equals the direct answer -- an enemy is visible iff some live own
    tank's geometry, computed from scratch with the board's obstacles, has a line of sight -- as tanks move, turn
    and are destroyed."""
    from sim.rules.panzer_squadron.sight import shot_geometry

    m = BattleModel(_scenario(), 11)
    b = m.battle
    rs = b.ruleset
    opts = b.options
    checks = kills = 0
    for _step in range(60):
        if b.ended:
            break
        m.advance(2)
        kills = sum(1 for t in b.tanks if not t.alive)
        obstacles = rs.static_obstacles(b) | {t.hex for t in b.wrecks()}
        for side in (0, 1):
            own = b.live_tanks(side)
            want = tuple(e.tank_id for e in b.enemies_of(side) if any(shot_geometry(
                s.hex, s.facing, s.facing if s.turret_facing is None else s.turret_facing, s.vehicle.turret, e.hex,
                e.facing, e.vehicle.armour, obstacles, rs.sight_rules(opts), opts.exceptional_modifier)["los"]
                != "blocked" for s in own))
            assert rs.visible(b, side) == want, (b.turn, side)
            checks += 1
    assert checks > 40 and kills >= 4, (checks, kills)


def test_sight_matrix_visible_equals_the_direct_pair_test_on_random_boards():
    """The same on random crowded boards changed at random (a tank moves, pivots or is destroyed where it stands,
    leaving a wreck that may block pairs it is no part of), ``visible`` asked after each change, both line
    origins."""
    import random

    from sim.battle import MemoryBattle
    from sim.events import Moved, Pivoted, Status, StatusChanged
    from sim.hexgrid import Hex, parallelogram_hexes
    from sim.rules.panzer_squadron import PanzerSquadron
    from sim.rules.panzer_squadron.sight import shot_geometry

    rs = PanzerSquadron()
    rnd = random.Random(5)
    checks = blocked_by_wreck = 0
    for origin in ("centre", "front_vertex"):
        for _board in range(3):
            cells = list(parallelogram_hexes(12, 12))
            terrain = {h: "woods" for h in rnd.sample(cells, 8)}
            free = [h for h in cells if h not in terrain]
            spots = rnd.sample(free, 36)
            tanks = [{"vehicle": ("t34_85", "pz_iv_h")[i % 2], "side": i % 2, "hex": list(h),
                      "facing": rnd.randrange(6)} for i, h in enumerate(spots)]
            b = MemoryBattle(rs, cells=cells, terrain=terrain, tanks=tanks,
                             options=rs.Options(los_origin=origin))
            for _step in range(60):
                live = b.live_tanks()
                t = rnd.choice(live)
                k = rnd.random()
                if k < 0.4:
                    h = rnd.choice([c for c in free if not b.occupants(c)])
                    b.emit(Moved(tank=t.tank_id, hex=Hex(*h), facing=rnd.randrange(6)))
                elif k < 0.7:
                    b.emit(Pivoted(tank=t.tank_id, facing=rnd.randrange(6)))
                else:
                    b.emit(StatusChanged(tank=t.tank_id, status=Status.DESTROYED))
                wrecks = {w.hex for w in b.wrecks()}
                obstacles = rs.static_obstacles(b) | wrecks
                rules = rs.sight_rules(b.options)

                def sees(s: Any, e: Any, obs: Any, rules: Any = rules) -> bool:
                    return shot_geometry(s.hex, s.facing, s.facing, s.vehicle.turret, e.hex, e.facing,
                                         e.vehicle.armour, obs, rules, -1)["los"] != "blocked"
                for side in (0, 1):
                    own = b.live_tanks(side)
                    want = tuple(e.tank_id for e in b.enemies_of(side) if any(sees(s, e, obstacles) for s in own))
                    blocked_by_wreck += len({e.tank_id for e in b.enemies_of(side)
                                             if any(sees(s, e, rs.static_obstacles(b)) for s in own)} - set(want))
                    assert rs.visible(b, side) == want, (origin, _step, side)
                    checks += 1
    assert checks == 720 and blocked_by_wreck > 20, (checks, blocked_by_wreck)


def test_shots_at_from_equals_the_shots_on_the_two_views():
    """``shots_at_from`` (enemies placed where they were last seen, the front cache read without building the
    views) gives the shots ``shots_at`` gives on the two nested views, through a battle, asked twice (the second
    time from the cache), and the ``nearest_distances`` of the doctrines equal ``min_distance`` one by one."""
    import random

    from agents.distances import nearest_distances
    from agents.policies.base import min_distance

    m = BattleModel(_scenario(), 4)
    b = m.battle
    rs = b.ruleset
    rnd = random.Random(2)
    checked = legal = 0
    for _step in range(30):
        if b.ended:
            break
        m.advance(4)
        live = [t for t in b.tanks if t.alive and t.hex is not None]
        free = [h for h in b.map.cells if not b.occupants(h)]
        for s in live[::3]:
            h = rnd.choice(free)
            f = rnd.randrange(6)
            ghosts = [(e.tank_id, rnd.choice(free), rnd.randrange(6)) for e in live if e.side != s.side][:6]
            ghosts.append((s.tank_id, rnd.choice(free), 0))  # a friend: the slow path
            want = [rs.shots_at(HypoView(HypoView(b, e, eh, ef), s.tank_id, h, f), (e,), s.tank_id)[0]
                    for e, eh, ef in ghosts]
            for _twice in range(2):
                got = rs.shots_at_from(b, s.tank_id, h, f, ghosts)
                assert len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
            checked += len(want)
            legal += sum(not isinstance(w, Illegal) for w in want)
        frms = [t.hex for t in live]
        to = [t.hex for t in live if t.side == 1]
        assert nearest_distances(frms, to) == [min_distance(x, to) for x in frms]
    assert checked > 300 and legal > 20, (checked, legal)


def test_terrain_only_shots_shared_by_the_battles_of_a_scenario_equal_the_direct_computation():
    """The terrain-only shots kept in the board's shared terrain cache (``PanzerSquadron._shot``: the battles of one
    scenario play on copies of one board) are used in a later battle only while none of its wrecks lies in their
    footprint: the shots of a second and a third battle, read through that cache (and the front caches), equal
    those computed directly at every checkpoint, wrecks and all; and the later battles do read shots the earlier
    ones stored, also once wrecks lie on the board."""
    import sim.rules.panzer_squadron.play as play

    spec = _scenario()
    BattleModel(spec, 1).run()  # fills the scenario's shared terrain cache
    computed = [0]
    saved = play._geometry_footprint

    def counting(*args: Any, **kw: Any) -> Any:
        computed[0] += 1  # a shot computed, not read from the shared cache
        return saved(*args, **kw)

    stores: list[Any] = []
    checked = reads = reads_with_wrecks = kills = 0
    for seed in (2, 3):
        m = BattleModel(spec, seed)
        b = m.battle
        rs = b.ruleset
        stores.append(b.map.terrain_cached(("ps_terrain_shots",), dict))
        for _step in range(30):
            if b.ended:
                break
            m.advance(4)
            kills = max(kills, sum(1 for t in b.tanks if not t.alive))
            live = [t for t in b.tanks if t.alive and t.hex is not None]
            for s in live:
                status = s.rules_state["start_status"] if b.rules_state.get("active") == s.tank_id else \
                    s.rules_state["marker"]
                foes = [t for t in live if t.side != s.side]
                computed[0] = 0
                play._geometry_footprint = counting  # type: ignore[assignment]
                try:
                    got = [rs._shot(b, s.tank_id, t.tank_id, None, s.hex, status,
                                    t.rules_state.get("marker") == IN_MOVEMENT) for t in foes]
                finally:
                    play._geometry_footprint = saved  # type: ignore[assignment]
                reads += len(foes) - computed[0]
                if b.wrecks():
                    reads_with_wrecks += len(foes) - computed[0]
                for got_shot, t in zip(got, foes):
                    assert _same(got_shot, _direct(rs, b, s.tank_id, t.tank_id)), (seed, s.tank_id, t.tank_id)
                    checked += 1
                ids = [t.tank_id for t in foes]
                for got_shot, t in zip(rs.shots(b, s.tank_id, ids), ids):
                    assert _same(got_shot, _direct(rs, b, s.tank_id, t)), (seed, s.tank_id, t)
    assert stores[0] is stores[1] and len(stores[0]) > 100
    assert checked > 1000 and kills >= 3 and reads > 500 and reads_with_wrecks > 100, \
        (checked, kills, reads, reads_with_wrecks)


def test_wreck_mask_test_equals_the_wreck_by_wreck_test():
    """``_wreck_in`` on a :class:`_HexMask` (one shift and ``and`` of its bit mask) gives the answer of the loop over
    the wrecks (a plain tuple), and ``_mask_in_footprint`` of offsets that of ``_in_footprint`` one by one
    (``_lasting_entry``'s test), for random footprints, firer hexes and wreck sets, negative coordinates and
    flat-index aliasing (hexes 64 columns apart) included."""
    import random

    from sim.hexgrid import Hex
    from sim.rules.panzer_squadron.play import _HexMask, _in_footprint, _line_footprint, _mask_in_footprint, _wreck_in

    rnd = random.Random(11)
    hits = misses = 0
    for _ in range(3000):
        a = Hex(rnd.randint(-70, 70), rnd.randint(-70, 70))
        b = Hex(a[0] + rnd.randint(-9, 9), a[1] + rnd.randint(-9, 9))
        fp = _line_footprint(b[0] - a[0], b[1] - a[1], rnd.choice([None, *range(6)]))
        near = [Hex(a[0] + rnd.randint(-10, 10), a[1] + rnd.randint(-10, 10)) for _ in range(rnd.randint(0, 6))]
        far = [Hex(rnd.randint(-140, 140), rnd.randint(-140, 140)) for _ in range(rnd.randint(0, 40))]
        alias = [Hex(h[0] + 64 * k, h[1] - k) for h in near[:2] for k in (-1, 1)]
        ws = tuple({*near, *far, *alias})
        want = _wreck_in(fp, ws, a, b)
        got = _wreck_in(fp, _HexMask(ws), a, b)
        assert got == want, (a, b, ws)
        hits += want
        misses += not want
        offs = _HexMask((c[0] - a[0], c[1] - a[1]) for c in ws)  # _lasting_entry's test: offsets from the firer
        assert _mask_in_footprint(offs, fp[0], fp[1]) == any(_in_footprint(fp, x, y) for x, y in offs)
    assert _wreck_in(fp, _HexMask(()), a, b) is False
    assert hits > 300 and misses > 300, (hits, misses)
