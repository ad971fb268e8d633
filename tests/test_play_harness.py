"""The play case harness itself (sim/play_cases.py, tests/cases/PLAY.md): a case that is right passes, and each way a
case can be wrong fails with a message that says what and where."""
from __future__ import annotations

import copy

import pytest

from sim.play_cases import run_case

SRC = "tests/cases/play_selftest.yaml"


def base_case() -> dict:
    """T34 (stationary) fires at a Panther at range 4: d10 8 + 2 = 10 (+30), d100 57 -> 118 + 30 + 57 > 177."""
    return {
        "id": "selftest", "kind": "play", "source": "docs/rules/panzer_squadron.md section 8",
        "given": {
            "map": {"shape": "rectangle", "width": 8, "height": 6},
            "tanks": [{"label": "T34", "side": 0, "vehicle": "t34_85", "hex": [1, 2], "facing": 0},
                      {"label": "Panther", "side": 1, "vehicle": "panther", "hex": [5, 0], "facing": 3}],
            "dice": [9, 1, 8, 57],
            "answers": [{"decision": "activate", "side": 0, "answer": {"activate": "T34", "mode": "fire"}},
                        {"decision": "fire", "actor": "T34", "answer": {"fire": "Panther"}}],
        },
        "expect": {
            "decisions": [{"kind": "activate", "side": 0, "actor": "T34",
                           "legal": {"contains": [{"activate": "T34", "mode": "fire"}],
                                     "excludes": [{"activate": "Panther", "mode": "fire"}]}},
                          {"kind": "fire", "actor": "T34", "default": "pass"}],
            "no_decisions": [{"kind": "activate", "side": 1}],
            "events": [{"kind": "RuleEvent", "name": "initiative", "data": {"first": 0}},
                       {"kind": "ShotResolved", "shooter": "T34", "target": "Panther", "result": "destroyed",
                        "key": {"modifier": 2}, "details": {"bonus": 30, "total": 205}},
                       {"kind": "StatusChanged", "tank": "Panther", "status": "destroyed", "by": "T34"}],
            "no_events": [{"kind": "Moved"}],
            "final": {"T34": {"hex": [1, 2], "facing": 0, "status": "active",
                              "rules_state": {"marker": "stationary"}},
                      "Panther": {"hex": [5, 0], "status": "destroyed"}},
            "outcome": {"winner": 0, "reason": "no tank left"},
        },
    }


def run(case: dict):
    return run_case("panzer_squadron", case, SRC, 0)


def test_a_right_case_passes():
    r = run(base_case())
    assert r.ok, r.message


def failing(mutate) -> str:
    case = copy.deepcopy(base_case())
    mutate(case)
    r = run(case)
    assert not r.ok, "the harness let a wrong case pass"
    return r.message


def test_wrong_event_fails_and_shows_the_nearest_event():
    def m(c):
        c["expect"]["events"][1]["result"] = "ricochet"
    msg = failing(m)
    assert "expect.events[1]" in msg and "not found after event" in msg
    assert "nearest: event" in msg and "ShotResolved" in msg and "result: 'destroyed' (expected 'ricochet')" in msg


def test_events_are_an_ordered_subsequence():
    def m(c):
        ev = c["expect"]["events"]
        ev[1], ev[2] = ev[2], ev[1]  # the kill before the shot
    msg = failing(m)
    assert "expect.events[2]" in msg and "ShotResolved" in msg


def test_missing_decision_fails():
    def m(c):
        c["expect"]["decisions"].append({"kind": "move_step", "actor": "T34"})
    msg = failing(m)
    assert "expect.decisions[2]" in msg and "(no decision came after it)" in msg


def test_wrong_context_and_legal_fail_with_what_differs():
    def m(c):
        c["expect"]["decisions"][0]["legal"]["contains"] = [{"activate": "T34", "mode": "ambushh"}]
        c["expect"]["decisions"][1]["default"] = {"fire": "Panther"}
    msg = failing(m)
    assert "activate T34 ambushh is not legal" in msg
    assert "default T34 pass (expected T34 fire Panther)" in msg


def test_forbidden_decision_and_event_fail():
    def m(c):
        c["expect"]["no_decisions"] = [{"kind": "fire"}]
        c["expect"]["no_events"] = [{"kind": "ShotResolved", "shooter": "T34"}]
    msg = failing(m)
    assert "no_decisions[0]" in msg and "offered as decision #1 fire" in msg
    assert "no_events[0]" in msg and "emitted as event" in msg


def test_unused_dice_fail():
    def m(c):
        c["given"]["dice"].append(3)
    msg = failing(m)
    assert "1 fixed rolls left unused: [3]" in msg


def test_missing_dice_fail_and_name_the_roll():
    def m(c):
        c["given"]["dice"] = [9, 1, 8]
    msg = failing(m)
    assert "missing dice: a d100 for penetration" in msg


def test_a_roll_that_does_not_fit_its_die_fails():
    def m(c):
        c["given"]["dice"] = [9, 1, 11, 57]
    msg = failing(m)
    assert "does not fit a 10-sided die" in msg and "to_hit" in msg


def test_unused_answer_fails_and_shows_candidates():
    def m(c):
        c["given"]["answers"].append({"decision": "move_step", "actor": "T34", "answer": "pass"})
    msg = failing(m)
    assert "answers[2] {decision: move_step, actor: T34} -> 'pass' was never used" in msg


def test_answers_are_used_in_order():
    def m(c):
        a = c["given"]["answers"]
        a[0], a[1] = a[1], a[0]  # the fire answer first: it waits for a fire decision that the default hold skips
    msg = failing(m)
    assert "was never used" in msg


def test_wrong_final_state_and_outcome_fail():
    def m(c):
        c["expect"]["final"]["T34"]["facing"] = 1
        c["expect"]["final"]["T34"]["rules_state"] = {"marker": "in_movement", "markr": "x"}
        c["expect"]["final"]["Panther"]["hex"] = None
        c["expect"]["outcome"] = {"ended": False}
    msg = failing(m)
    assert "final.T34.facing: expected 1, got 0" in msg
    assert "final.T34.rules_state.marker: expected 'in_movement', got 'stationary'" in msg
    assert "final.T34.rules_state.markr: the tank has no such field" in msg
    assert "final.Panther.hex: expected None, got [5, 0]" in msg
    assert "expected the battle to go on, it ended" in msg


def test_illegal_answer_is_rejected_as_in_a_battle():
    case = base_case()
    case["given"]["answers"][1] = {"decision": "fire", "actor": "T34", "answer": {"step": [2, 1]}}
    case["given"]["dice"] = [9, 1]
    case["expect"] = {"events": [{"kind": "ActionRejected", "tank": "T34", "decision": "fire"}],
                      "no_events": [{"kind": "ShotResolved"}], "outcome": {"ended": False}}
    r = run(case)
    assert r.ok, r.message


def test_rules_state_labels_and_start_turn():
    case = base_case()
    case["given"]["rules_state"] = {"Panther": {"marker": "in_movement"}}
    case["given"]["start_turn"] = 3
    case["given"]["turn_limit"] = 3
    case["given"]["dice"] = [9, 1, 8, 30]  # target moving: modifier 2 - 1 = 1, 9 -> +20; 118 + 20 + 30 <= 177
    case["expect"] = {"events": [{"kind": "TurnStarted", "turn": 3},
                                 {"kind": "ShotResolved", "key": {"modifier": 1}, "result": "ricochet"}],
                      "no_events": [{"kind": "TankStateSet", "key": "marker", "value": "in_movement"}],
                      "outcome": {"winner": None, "reason": "turn limit 3"}}
    r = run(case)
    assert r.ok, r.message


@pytest.mark.parametrize("mutate,expected", [
    (lambda c: c["given"]["tanks"][1].update(hex=[50, 0]), "cases[0].given.tanks[1].hex: [50, 0] is off the map"),
    (lambda c: c["given"]["tanks"][0].update(vehicle="t34_86"), "cases[0].given.tanks[0].vehicle: unknown"),
    (lambda c: c["given"]["tanks"][0].update(rules={"stat": 1}), "cases[0].given.tanks[0].rules.stat"),
    (lambda c: c["given"].update(options={"initiativ": "roll"}), "cases[0].given.options.initiativ"),
    (lambda c: c["given"].update(dice=[9, "x"]), "cases[0].given.dice[1]"),
    (lambda c: c["given"].update(tanks=c["given"]["tanks"][:1]), "cases[0].given.tanks: side 1 has no tank"),
    (lambda c: c["given"].update(scenario="default"), "exactly one of map"),
    (lambda c: c["given"].update(colour="red"), "cases[0].given.colour"),
    (lambda c: c["given"]["answers"][0].update(answer={"activate": "T35", "mode": "fire"}),
     "cases[0].given.answers[0].answer.activate: 'T35' is not a tank label; expected one of T34, Panther"),
    (lambda c: c["given"]["answers"][1].update(answer={"fire": "Panther", "wepons": []}),
     "cases[0].given.answers[1].answer.wepons: unknown field"),
    (lambda c: c["given"]["answers"][1].update(answer={"pivot": 7}), "answers[1].answer.pivot: expected a facing"),
    (lambda c: c["expect"]["events"].append({"kind": "Moved", "to": [1, 1]}),
     "cases[0].expect.events[3].to: Moved has no field 'to'"),
    (lambda c: c["expect"]["events"].append({"kind": "Mooved"}), "unknown event kind 'Mooved'"),
    (lambda c: c["expect"]["final"].update(Tiger={"hex": [1, 1]}), "cases[0].expect.final: 'Tiger' is not"),
    (lambda c: c["expect"].update(decision=[]), "cases[0].expect.decision"),
])
def test_malformed_cases_name_the_field(mutate, expected):
    msg = failing(mutate)
    assert msg.startswith(SRC + ": cases[0]") or "cases[0]" in msg
    assert expected in msg, msg


def test_a_rule_set_crash_fails_the_case_with_where(monkeypatch):
    from sim.rules.panzer_squadron import PanzerSquadron

    def boom(self, b, dice, tid):
        raise KeyError("Hex(q=2, r=24)")
        yield  # pragma: no cover

    monkeypatch.setattr(PanzerSquadron, "_fire_decision", boom)
    msg = failing(lambda c: None)
    assert "play raised KeyError" in msg and "panzer_squadron" not in msg.split("play raised")[0]


def test_cli_runs_play_cases(tmp_path):
    import yaml

    from sim.cli.main import main

    good, bad = base_case(), base_case()
    bad["id"] = "selftest-bad"
    bad["given"]["dice"].append(4)
    f = tmp_path / "play.yaml"
    f.write_text(yaml.safe_dump({"ruleset": "panzer_squadron", "cases": [good, bad]}))
    assert main(["cases", str(f)]) == 1


def test_a_bundled_scenario_with_its_labels():
    case = {"id": "scenario", "kind": "play", "source": "x",
            "given": {"scenario": "default", "turn_limit": 1, "dice": [9, 1, 2],
                      "answers": [{"decision": "activate", "side": 0, "answer": {"activate": "T34-3", "mode": "move"}},
                                  {"decision": "move_step", "actor": "T34-3", "answer": "pass"}]},
            "expect": {"decisions": [{"kind": "activate", "side": 0, "actor": "T34-1"},
                                     {"kind": "move_step", "actor": "T34-3", "context": {"mp": 2}, "default": "pass"}],
                       "events": [{"kind": "RuleEvent", "name": "movement_allowance", "tank": "T34-3"}],
                       "outcome": {"winner": None, "reason": "victory points tied [0, 0] after turn 1"}}}
    r = run(case)
    assert r.ok, r.message
