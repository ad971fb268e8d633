"""Panzer Squadron sequence of play, driven decision by decision with fixed dice (docs/rules/panzer_squadron.md
sections 3, 4, 5, 10, 11)."""
from __future__ import annotations

import pytest

from sim.actions import Activate, Fire, Pass, Pivot, Special, Step
from sim.battle import MemoryBattle, SideInfo
from sim.dice import FixedDice
from sim.events import TurnStarted
from sim.hexgrid import Hex, rectangle_hexes
from sim.rules.panzer_squadron import PanzerSquadron

PS = PanzerSquadron()
CELLS = rectangle_hexes(12, 12)


def battle(tanks, dice, **kw):
    b = MemoryBattle(PS, cells=CELLS, tanks=tanks, dice=dice, **kw)
    b.emit(TurnStarted(1))
    return b


def drive(b, dice, answers):
    """Run one turn, answering decisions from ``answers`` (a list of callables or actions, in order)."""
    gen = PS.play_turn(b, dice)
    seen = []
    d = next(gen)
    try:
        while True:
            seen.append(d)
            a = answers.pop(0) if answers else d.default
            a = a(d) if callable(a) else a
            d = gen.send(a)
    except StopIteration:
        pass
    return seen


def kinds(b):
    return [e.event.kind for e in b.log]


def test_initiative_ties_are_rolled_again_and_sides_alternate():
    dice = FixedDice([5, 5, 3, 8])  # tie, then side 1 (index 1) wins
    b = battle([{"vehicle": "t34_85", "hex": [1, 3], "side": 0}, {"vehicle": "panther", "hex": [10, 0], "side": 1,
                "facing": 3}], dice)
    seen = drive(b, dice, [Activate(1, "hold"), Activate(0, "hold")])
    assert [d.side for d in seen] == [1, 0]
    names = [e.event.name for e in b.log if e.event.kind == "RuleEvent"]
    assert names[:2] == ["initiative_tie", "initiative"]
    dice.check_done()


def test_move_rolls_d4_minus_restriction_and_marker_defaults_to_in_movement():
    dice = FixedDice([9, 1, 4])  # initiative side 0; 1D4 = 4, Panther restriction 1 -> 3 MP
    b = battle([{"vehicle": "panther", "hex": [2, 3], "side": 0, "facing": 0},
                {"vehicle": "t34_85", "hex": [11, -1], "side": 1, "facing": 3}], dice)
    ahead = Hex(2, 3).neighbour(0)
    ahead2 = ahead.neighbour(0)
    drive(b, dice, [Activate(0, "move"), Step(0, ahead), Step(0, ahead2), Pivot(0, 1), Pass(0),
                    Activate(1, "hold")])
    t = b.tanks[0]
    assert t.hex == ahead2 and t.facing == 1 and t.rules_state["marker"] == "in_movement"
    allow = [e.event.data for e in b.log if e.event.kind == "RuleEvent" and e.event.name == "movement_allowance"]
    assert allow == [{"roll": 4, "dice": 1, "mp": 3}]
    assert t.turret_facing == 1, "the turret turns with the hull"


def test_move_and_fire_pays_three_points_and_ends_stationary():
    dice = FixedDice([9, 1, 4, 8, 57])  # 4 MP, then the shot: d10 8, d100 57
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0, "facing": 0},
                {"vehicle": "panther", "hex": [6, 1], "side": 1, "facing": 3}], dice)
    seen = drive(b, dice, [Activate(0, "move_and_fire"), Step(0, Hex(3, 2)), Fire(0, 1), Activate(1, "hold")])
    fire_ctx = [d.context for d in seen if d.kind == "move_step"]
    assert fire_ctx[-1]["mp"] == 3 and fire_ctx[-1]["can_fire"]
    shot = next(e.event for e in b.log if e.event.kind == "ShotResolved")
    assert shot.result in ("destroyed", "ricochet", "auto_kill", "dud", "miss")
    assert b.tanks[0].rules_state["marker"] == "stationary"
    dice.check_done()


def test_started_in_movement_must_enter_a_hex_before_stopping():
    dice = FixedDice([9, 1, 2, 1])  # 2D4 = 3 for a tank that started in movement
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0, "facing": 0, "rules_state": {"marker": "in_movement"}},
                {"vehicle": "panther", "hex": [11, -1], "side": 1, "facing": 3}], dice)
    seen = drive(b, dice, [Activate(0, "move"), Pass(0)])
    first = next(d for d in seen if d.kind == "move_step")
    assert first.context["compulsory"] and not first.legal.contains(Pass(0))
    assert isinstance(first.default, Step)
    assert b.tanks[0].hex != Hex(2, 3), "an illegal stop became the compulsory step"


def test_fire_mode_only_for_a_stationary_starter():
    dice = FixedDice([9, 1])
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0, "rules_state": {"marker": "in_movement"}},
                {"vehicle": "panther", "hex": [6, 1], "side": 1, "facing": 3}], dice)
    checked = []

    def check(d):
        checked.append((d.kind, d.legal.contains(Activate(0, "fire")), d.legal.contains(Activate(0, "move_and_fire"))))
        return d.default

    drive(b, dice, [check, Activate(1, "hold")])
    assert checked == [("activate", False, True)]


def test_ambush_interrupts_a_mover_and_can_stop_it():
    # side 1's ambusher is set; side 0 moves into its arc; the ambusher fires and destroys the mover
    dice = FixedDice([9, 1, 4, 10, 99])
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0, "facing": 0},
                {"vehicle": "panther", "hex": [6, 1], "side": 1, "facing": 3,
                 "rules_state": {"ambush": True, "activated_turn": 1}}], dice)
    seen = drive(b, dice, [Activate(0, "move"), Step(0, Hex(3, 2)),
                           lambda d: Fire(1, 0) if d.kind == "react" else d.default, Step(0, Hex(4, 1))])
    react = next(d for d in seen if d.kind == "react")
    assert react.side == 1 and react.actors == (1,) and react.context["mover"] == 0
    shot = next(e.event for e in b.log if e.event.kind == "ShotResolved")
    assert shot.reaction and shot.result == "auto_kill"
    assert b.tanks[0].status == "destroyed" and b.tanks[0].hex == Hex(3, 2), "stops in the hex it entered"
    assert b.tanks[1].rules_state["ambush"] is False
    dice.check_done()


def test_turret_turns_for_a_shot_outside_its_arc():
    dice = FixedDice([9, 1, 8, 57])
    b = battle([{"vehicle": "t34_85", "hex": [4, 2], "side": 0, "facing": 0},
                {"vehicle": "panther", "hex": [1, 3], "side": 1, "facing": 0}], dice)
    drive(b, dice, [Activate(0, "fire"), Fire(0, 1), Activate(1, "hold")])
    shot = next(e.event for e in b.log if e.event.kind == "ShotResolved")
    assert shot.key["modifier"] == 1 - 2 + 1  # stationary +1, turret -2, range <= 5 +1
    # vertices 2 and 3 both hold the target in their arc; 2 is fewer 60-degree steps from 0 (D12)
    assert b.tanks[0].turret_facing == 2 and "TurretTurned" in kinds(b)


def test_exit_edge_scores_exit_points():
    dice = FixedDice([9, 1, 4])
    b = battle([{"vehicle": "t34_85", "hex": [11, -4], "side": 0, "facing": 0},
                {"vehicle": "panther", "hex": [0, 5], "side": 1, "facing": 0}], dice,
               sides=[SideInfo("A", "attacker", "east"), SideInfo("B", "defender")], exit_points=2)
    drive(b, dice, [Activate(0, "move"), lambda d: PS.exit_step(b, 0) or d.default, Activate(1, "hold")])
    assert b.tanks[0].status == "exited" and b.tanks[0].hex is None
    from sim.victory import victory_points
    assert victory_points(b) == (2, 0)
    assert PS.outcome(b) is None, "an exited side is not eliminated"


def test_end_move_special_sets_the_chosen_marker():
    dice = FixedDice([9, 1, 4])
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0, "facing": 0},
                {"vehicle": "panther", "hex": [11, -1], "side": 1, "facing": 3}], dice)
    drive(b, dice, [Activate(0, "move"), Step(0, Hex(3, 2)), Special(0, "end_move", {"status": "stationary"}),
                    Activate(1, "hold")])
    assert b.tanks[0].rules_state["marker"] == "stationary"


@pytest.mark.parametrize("opt,expect", [("draw", None), ("most_tanks", 0)])
def test_turn_limit_result(opt, expect):
    from sim.events import BattleStateSet, StatusChanged
    opts = PS.Options(turn_limit_result=opt)
    b = battle([{"vehicle": "t34_85", "hex": [2, 3], "side": 0}, {"vehicle": "t34_85", "hex": [2, 5], "side": 0},
                {"vehicle": "panther", "hex": [11, -1], "side": 1, "facing": 3}], FixedDice([]), options=opts,
               turn_limit=1)
    assert PS.outcome(b) is None
    b.emit(BattleStateSet("turns_completed", 1))
    assert PS.outcome(b).winner == expect
    b.emit(StatusChanged(2, "destroyed", "test"))
    assert PS.outcome(b).winner == 0


def test_move_successors_equal_move_options_through_a_played_battle():
    """``_move_successors`` (the moves of ``reachable``'s search, no actions made) gives, for every state a live
    tank can reach, exactly the ``(state, cost)`` of ``move_options`` in the same order, with and without
    reversing, at many points of a played battle (tanks moved, wrecks made); ``reachable`` then equals the search
    over ``move_options`` itself."""
    from sim.hexgrid import bounded_dijkstra
    from sim.model import BattleModel
    from sim.rules.panzer_squadron.play import _move_successors
    from tests.test_ps_shots_batch import _scenario

    m = BattleModel(_scenario(), 2)
    b = m.battle
    rs = b.ruleset
    states = 0
    for _step in range(12):
        if b.ended:
            break
        m.advance(6)
        for reverse in (False, True):
            object.__setattr__(b, "options", b.options.model_copy(update={"allow_reverse": reverse}))
            for t in b.live_tanks():
                succ = _move_successors(rs, b)

                def direct(st: tuple, tid: int = t.tank_id) -> list:
                    return [(n, c) for n, c, _a in rs.move_options(b, tid, st)]
                want = bounded_dijkstra((t.hex, t.facing), direct, 4)
                for st in want:
                    assert succ(st) == direct(st), (t.tank_id, st, reverse)
                    states += 1
                assert rs.reachable(b, t.tank_id, 4) == want
    assert states > 2000, states
