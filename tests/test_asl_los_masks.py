"""ASL LOS as bit masks (issue 14) against the definition read hex by hex (asl.md 6.1; CONVENTIONS.md "Lines").

``ASL._los`` tests a line's interior (``sim.rules.asl.sight.line_mask``, one mask per offset shifted to the line's
first hex) against the map's obstacle bits and the Case R table's bit planes; ``ASL._los_by_hex`` walks
``hex_line`` hex by hex.  These tests compare the two, and ``ASL.los`` (with its tables kept per Case R content)
with the definition, on random boards (ragged edges, every kind of hindering occupant, both
``burning_wreck_los`` options) and on the bundled ASL scenario at every event of a real battle.
"""
from __future__ import annotations

import random

from sim.battle import HypoView, MemoryBattle
from sim.events import Status, StatusChanged, TankStateSet
from sim.hexgrid import Hex, hex_line, hexagon_hexes, parallelogram_hexes, rectangle_hexes
from sim.rules.asl.play import ASL, Options
from sim.rules.asl.sight import LOS_PAD, LosGrid, line_mask

RULES = ASL()
TERRAIN = ("open", "open", "open", "road", "woods", "building", "stone_building")


def _by_hex(board, a, c):
    """The definition: LOS from the lower to the higher hex, read hex by hex."""
    a, c = Hex(*a), Hex(*c)
    if a == c:
        return True, 0
    p, q = (a, c) if a <= c else (c, a)
    return RULES._los_by_hex(board, p, q)


def test_line_masks_are_the_interiors_of_hex_line():
    """Every line between two hexes of three board shapes: the mask shifted to its first hex holds exactly the
    bits of ``hex_line``'s interior, and those lie inside the padded grid."""
    for cells in (parallelogram_hexes(9, 7), rectangle_hexes(8, 9), hexagon_hexes(4)):
        g = LosGrid(cells, lambda h: False)
        assert g.w & (g.w - 1) == 0 and g.w >= g.qhi - g.qlo + 1 + 2 * LOS_PAD
        for p in cells:
            for q in cells:
                low, mask = line_mask(q[0] - p[0], q[1] - p[1], g.w)
                inner = hex_line(p, q)[1:-1]
                flats = [g.flat(h) for h in inner]
                assert None not in flats, (p, q)
                want = 0
                for i in flats:
                    want |= 1 << i
                assert (mask << (g.index(p) + low) if inner else 0) == want, (p, q)


def _random_board(rng: random.Random, cells, n_tanks: int, block: str) -> MemoryBattle:
    cells = list(cells)
    terrain = {h: rng.choice(TERRAIN) for h in cells}
    places = rng.sample(cells, n_tanks)
    if rng.random() < 0.5:   # a few stacks: a wreck under a live AFV
        places[1] = places[0]
        places[3] = places[2]
    tanks = [dict(label=f"t{i}", side=i % 2, vehicle="pzkpfw_iiih", hex=tuple(h), facing=rng.randrange(6))
             for i, h in enumerate(places)]
    b = MemoryBattle(RULES, cells=cells, terrain=terrain, tanks=tanks, options=Options(burning_wreck_los=block))
    for t in range(n_tanks):
        x = rng.random()
        if x < 0.2:
            b.emit(StatusChanged(t, Status.DESTROYED, "elim"))
            if rng.random() < 0.5:
                b.emit(TankStateSet(t, "wreck", "burning"))
        elif x < 0.3:
            b.emit(StatusChanged(t, Status.INCAPACITATED, "abandoned"))
        elif x < 0.5:
            b.emit(TankStateSet(t, "motion", True))
        elif x < 0.6:
            b.emit(TankStateSet(t, "moved", True))
            b.emit(TankStateSet(t, "started", rng.random() < 0.5))
    return b


def test_masks_match_the_definition_on_random_boards():
    """Random terrain and occupants (wrecks, burning wrecks, abandoned, stationary, moving AFVs, stacks) on a
    parallelogram, a ragged rectangle and a hexagon, both ``burning_wreck_los`` options: every pair's answer, and
    every what-if view's, equals the definition's (blocked, clear, hindered, 6+ hindrance)."""
    rng = random.Random(14)
    kinds = {"blocked": 0, "clear": 0, "hindered": 0, "blocked_by_occupants": 0}
    for shape, n in ((parallelogram_hexes(12, 9), 30), (rectangle_hexes(11, 12), 40), (hexagon_hexes(5), 35)):
        for block in ("block", "hinder"):
            b = _random_board(rng, shape, n, block)
            cells = sorted(b.map.cells)
            ent = [{}, None, RULES._los_grid(b)]   # a LOS entry as a battle's: the masks path for this board
            for a in cells:
                for c in cells[rng.randrange(3)::3]:
                    want = _by_hex(b, a, c)
                    assert RULES.los(b, a, c) == want, (a, c)
                    if a != c:
                        assert RULES._los(b, *sorted((Hex(*a), Hex(*c))), ent) == want, (a, c)
                    if not want[0]:
                        kinds["blocked" if RULES._los_line(b, *sorted((Hex(*a), Hex(*c)))) is None
                              else "blocked_by_occupants"] += 1
                    else:
                        kinds["hindered" if want[1] else "clear"] += 1
            for tid in rng.sample(range(n), 4):
                view = HypoView(b, tid, rng.choice(cells), rng.randrange(6))
                for a in cells[::5]:
                    for c in cells[1::4]:
                        assert RULES.los(view, a, c) == _by_hex(view, a, c), (tid, a, c)
    assert min(kinds.values()) > 50, kinds   # every kind of answer was compared


def test_los_tables_match_the_definition_through_a_real_battle():
    """The bundled ASL scenario played (seed 3): after every event, LOS between the tanks' hexes and a sample of
    other pairs equals the definition on the live board (the answers kept per Case R content included)."""
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    m = BattleModel(load_scenario("asl_1941_meeting"), 3, decision_timeout_s=0)
    b = m.battle
    cells = sorted(b.map.cells)
    pairs = [(cells[i], cells[(i * 7 + 3) % len(cells)]) for i in range(0, len(cells), 5)]
    seen = {"events": 0, "checks": 0}

    def check(_entry) -> None:
        seen["events"] += 1
        hexes = [t.hex for t in b.tanks if t.hex is not None]
        for a in hexes:
            for c in hexes:
                assert RULES.los(b, a, c) == _by_hex(b, a, c)
                seen["checks"] += 1
        for a, c in pairs:
            assert RULES.los(b, a, c) == _by_hex(b, a, c)
        live = [t.tank_id for t in b.tanks if t.hex is not None]
        if live:   # a what-if view over the battle (its masks path): a tank placed on a sample cell
            tid = live[seen["events"] % len(live)]
            view = HypoView(b, tid, cells[(seen["events"] * 11) % len(cells)], 0)
            for a in hexes:
                for c in cells[seen["events"] % 9::9]:
                    assert RULES.los(view, a, c) == _by_hex(view, a, c)

    b.listeners.append(check)
    m.run(max_turns=3)
    assert seen["events"] > 100 and seen["checks"] > 1000, seen


def test_table_figures_are_the_direct_table_reads():
    """``odds._table_figures`` (the table part of ``derive``, shared between keys) equals reading the tables
    directly, for every catalog gun, ammunition it lists, both colours, ranges 0-40 and every nationality in the
    catalog (issue 14: the same exact figures as before the stage was shared)."""
    from sim.rules.asl import odds
    from sim.rules.asl.tables import COLOURS, TableError, parse_gun, to_hit_tables, to_kill_tables

    vehicles = [RULES.vehicle(v) for v in RULES.vehicle_ids()]
    nations = [None, *sorted({v.nationality for v in vehicles if v.nationality})]
    guns = sorted({(v.gun, a) for v in vehicles if v.gun for a in v.ammo_types()})
    compared = 0
    for gun_s, ammo in guns:
        gun = parse_gun(gun_s)
        for nat in nations:
            for rng in range(41):
                for colour in COLOURS:
                    for given_hit in (False, True):
                        try:
                            basic = to_kill_tables().basic_tk(gun, ammo, nat)
                            cd = 0 if ammo in ("HEAT", "HE") else to_kill_tables().case_d(gun, ammo, rng)
                            th = None if given_hit else (to_hit_tables().basic_th(colour, rng)
                                                         + to_hit_tables().modification(gun, ammo, rng))
                            want = (basic, cd, th, None if given_hit else gun.calibre)
                        except TableError as exc:
                            want = ("error", str(exc))
                        try:
                            got = odds._table_figures(gun_s, ammo, nat, None, rng, colour, given_hit)
                        except TableError as exc:
                            got = ("error", str(exc))
                        assert got == want, (gun_s, ammo, nat, rng, colour, given_hit)
                        compared += 1
    assert compared > 1000


def _case_r_table(board):
    """The definition of the Case R table (asl.md 6.1): every tank on the board read afresh, in id order."""
    from sim.rules.asl.play import _hindrance_of

    block = board.options.burning_wreck_los == "block"
    out: dict = {}
    for o in board.tanks:
        if o.hex is not None:
            x = _hindrance_of(o, block)
            if x is not False:
                out[o.hex] = out.get(o.hex, ()) + ((o.tank_id, x),)
    return out


def test_case_r_table_patched_from_the_events_is_the_definition():
    """``ASL._hindrances`` of a battle, patched from ``state_changes`` since the last ask (issue 14), equals the
    table built from every tank, after every event of a real 25 v 25 battle and of the bundled scenario -- also
    inside a side's view (``hiding``: tanks taken off without an event, some of them changed since the last ask)
    and with asks skipped for a while -- and its content key is the table's ``(id, hex, contribution)`` in id
    order."""
    import importlib.util
    import pathlib

    from sim.model import BattleModel
    from sim.rules.asl import play
    from sim.scenario import load_scenario

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "battle.py"
    spec = importlib.util.spec_from_file_location("_bench_battle_hind", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    seen = {"events": 0, "hidden": 0, "changed": 0}
    for scen, seed in ((bench.cases(turns=1)["asl_25v25"](), 2), (load_scenario("asl_1941_meeting"), 5)):
        m = BattleModel(scen, seed, decision_timeout_s=0)
        b = m.battle
        prev = {"table": None}

        def check(_entry, b=b, prev=prev) -> None:
            seen["events"] += 1
            k = seen["events"]
            if k % 7 == 3:   # asks skipped: several events patched at once next time
                return
            if k % 3 == 0:   # a side's view: one side's enemies hidden (as an observation hides them)
                side = k % 2
                ids = [t.tank_id for t in b.tanks if t.side != side and t.hex is not None][k % 5::2]
                with b.hiding(ids):
                    got = RULES._hindrances(b)
                    assert got == _case_r_table(b)
                    assert play._HIND_LAST[3] == tuple(sorted((tid, h, x) for h, es in got.items()
                                                              for tid, x in es))
                    seen["hidden"] += bool(ids)
            got = RULES._hindrances(b)
            assert got == _case_r_table(b)
            assert play._HIND_LAST[3] == tuple(sorted((tid, h, x) for h, es in got.items() for tid, x in es))
            if prev["table"] is not None and got is not prev["table"]:
                seen["changed"] += 1
            prev["table"] = got

        b.listeners.append(check)
        m.run(max_turns=2)
    assert seen["events"] > 300 and seen["hidden"] > 50 and seen["changed"] > 10, seen
