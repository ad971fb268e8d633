"""Bad input gets a clear error fast, never a hang, a traceback or gigabytes (issue 11, section 4): the reproducers
of the issue and their relatives.  Every error names the file and a field path or a line; no message echoes an
unbounded value; shapes are bounded or clipped to the board before anything is built; what ``run`` reads,
``validate`` checks."""
from __future__ import annotations

import copy

import pytest
import yaml

from conftest import small_ps_scenario
from sim.experiments.design import experiment_from_mapping
from sim.model import BattleModel, build_battle
from sim.scenario import MAX_ERRORS, ScenarioError, load_scenario, parse_yaml, validate
from sim.tournaments.tournament import TournamentError, tournament_from_mapping


def _errors(data, src="h.yaml"):
    with pytest.raises(ScenarioError) as ei:
        validate(data, src)
    assert all(line.startswith(f"{src}: ") and len(line) <= 1000 for line in ei.value.errors)
    return "\n".join(ei.value.errors)


def _yaml_errors(text, src="h.yaml"):
    with pytest.raises(ScenarioError) as ei:
        parse_yaml(text, src)
    assert len(ei.value.errors) == 1 and ei.value.errors[0].startswith(f"{src}: ")
    return ei.value.errors[0]


def _text(d):
    return yaml.safe_dump(d, sort_keys=False, default_flow_style=None)


# --- the YAML reader ------------------------------------------------------------------------------------------------
def test_an_alias_bomb_in_policy_params_is_refused_unexpanded():
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = "bomb:\n" + "\n".join("  " + x for x in lines) + "\n" + _text(small_ps_scenario()).replace(
        "policy: advance", "policy: {name: advance, params: {min_odds: 0.1, bomb: *a8}}")
    msg = _yaml_errors(text)
    assert msg.startswith("h.yaml: line ") and "expand to more than 500,000 values" in msg
    assert "lol" not in msg


def test_deep_nesting_and_recursive_aliases_are_line_errors():
    base = _text(small_ps_scenario())
    assert "nested more than 50 levels deep" in _yaml_errors(base + "x: " + "[" * 60 + "]" * 60 + "\n")
    deep = _yaml_errors(base + "x: " + "[" * 1000 + "]" * 1000 + "\n")
    assert deep.startswith("h.yaml: line ") and ", column " in deep
    assert "a cycle" in _yaml_errors(base + "x: &l [1, *l]\n")
    assert "a cycle" in _yaml_errors(base + "x: &m {a: {b: *m}}\n")


def test_a_5000_digit_integer_names_the_file_the_field_and_the_line(tmp_path):
    d = small_ps_scenario()
    f = tmp_path / "big.yaml"
    f.write_text(_text(d).replace("turn_limit: 8", "turn_limit: " + "9" * 5000), encoding="utf-8")
    with pytest.raises(ScenarioError) as ei:
        load_scenario(f)
    (msg,) = ei.value.errors
    assert msg.startswith(f"{f}: line ") and ": turn_limit: an integer of 5,000 characters" in msg
    f.write_text(_text(d).replace("[1, 3]", "[1, " + "3" * 5000 + "]"), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"sides\[0\].tanks\[0\].hex\[1\]: an integer of 5,000 characters"):
        load_scenario(f)
    # 40 digits is fine for the reader, and the schema then names the field and its limit
    f.write_text(_text(d).replace("turn_limit: 8", "turn_limit: " + "9" * 40), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"turn_limit: Input should be less than or equal to 1000 \(got 9999"):
        load_scenario(f)


def test_scanner_parser_and_reader_errors_give_line_and_column():
    assert _yaml_errors("a: 1\nb: [1, 2\nc: 3\n").startswith("h.yaml: line 3, column ")
    assert _yaml_errors("a: 1\n  b: 2\n").startswith("h.yaml: line 2, column 4: not valid YAML: mapping values")
    assert _yaml_errors("a: 1\nb: \x00\n") == \
        "h.yaml: line 2, column 4: not valid YAML: control characters are not allowed (character '\\x00')"
    assert _yaml_errors("a: 1\nb: \u00e9\x07\n").startswith("h.yaml: line 2, column 5: ")


def test_only_plain_values_are_read():
    for tag in ("!!binary /w==", "!!set {a, b}", "!!omap [{a: 1}]", "!!python/object/apply:os.system ['id']"):
        assert "h.yaml: line 1, column 4: " in _yaml_errors(f"x: {tag}\n")
    assert "cannot read this value" in _yaml_errors("x: 2024-13-45\n")
    assert parse_yaml("a: &x {b: 1}\nc: *x\nd: [1, 2.5, true, null, 2024-01-02]\n", "ok.yaml")["c"] == {"b": 1}


def test_files_are_read_only_up_to_the_limit(tmp_path):
    from sim.scenario import MAX_FILE_BYTES, find_scenario

    f = tmp_path / "huge.yaml"
    f.write_bytes(b"# " + b"x" * (MAX_FILE_BYTES + 10))
    with pytest.raises(ScenarioError, match=r"huge.yaml: \(file\): larger than 1,000,000 bytes"):
        find_scenario(f)
    with pytest.raises(ScenarioError, match=r"\(file\): not a regular file"):
        find_scenario("/dev/zero")


# --- shapes and sizes -----------------------------------------------------------------------------------------------
def test_huge_terrain_regions_are_clipped_to_the_board_before_anything_is_built():
    d = small_ps_scenario()
    d["map"]["terrain"] = [{"tile": "woods", "rect": {"q": [0, 10_000], "r": [0, 10_000]}},
                           {"tile": "rubble", "center": [5, 5], "radius": 19_999}]
    sc = validate(d, "h.yaml")
    m = build_battle(sc).map
    assert len(m.cells) == 144 and all(m.terrain(h) == "rubble" for h in m.cells)
    d["map"]["terrain"] = [{"tile": "woods", "center": [5, 5], "radius": 10**6}]
    assert "h.yaml: map.terrain[0].radius: Input should be less than or equal to 20000 (got 1000000)" in _errors(d)
    d["map"]["terrain"] = [{"tile": "woods", "rect": {"q": [0, 10_000], "r": [-10_000, 10_000]}}] * 2000
    assert validate(d, "h.yaml").map.terrain[1999].size(validate(d, "h.yaml").map.columns()) == 144
    d["map"]["terrain"] = [{"tile": "woods", "rect": {"q": [0, 10_000]}}, {"tile": "woods", "rect": {
        "q": [5, 2], "r": [0, 1]}}]
    msg = _errors(d)
    assert "map.terrain[0].rect: a rect needs both axial ranges" in msg
    assert "map.terrain[1].rect: rect.q [5, 2]: expected [low, high] with low <= high" in msg


def test_terrain_cover_is_bounded():
    d = small_ps_scenario()
    d["map"].update(width=200, height=200)
    d["map"]["terrain"] = [{"tile": "woods", "rect": {"q": [0, 200], "r": [-100, 200]}}] * 30
    assert "h.yaml: map.terrain: the entries cover 1,200,000 hexes of the map together; at most 1,000,000" \
        in _errors(d)


def test_a_20000_hex_off_map_list_is_one_line_and_linear():
    d = small_ps_scenario()
    d["map"]["terrain"] = [{"tile": "woods", "hexes": [[20 + i % 9000, i // 9000] for i in range(20_000)]}]
    msg = _errors(d)
    assert msg == "h.yaml: map.terrain[0].hexes: [20, 0], [21, 0], [22, 0] (and 19997 more) are off the map (12 x 12)"
    d["map"]["terrain"] = [{"tile": "woods", "hexes": [[10**5 + i, 0] for i in range(20_000)]}]
    (line,) = _errors(d).splitlines()
    assert line == "h.yaml: map.terrain[0].hexes[0][0]: Input should be less than or equal to 10000 (got 100000) " \
                   "(and 19,999 more like it)"


@pytest.mark.parametrize("mutate,expect", [
    (lambda d: d["map"].update(width=10**4), "map.width: Input should be less than or equal to 200 (got 10000)"),
    (lambda d: d["map"].update(shape="hexagon", radius=10**6), "map.radius: Input should be less than or equal to 100"),
    (lambda d: d["sides"][0]["tanks"].extend([{"vehicle": "t34_85", "hex": [1, 1]}] * 200),
     "sides[0].tanks: List should have at most 100 items"),
    (lambda d: d.update(turn_limit=10**6), "turn_limit: Input should be less than or equal to 1000"),
    (lambda d: d.update(turn_limit=None, ruleset={"name": "panzer_squadron", "options": {"max_turns": 5000}}),
     "ruleset.options: the rule set's turn limit from these options is 5000; at most 1000 (or set turn_limit)"),
    (lambda d: d["ruleset"]["options"].update(exceptional_modifier=10**9),
     "ruleset.options.exceptional_modifier: 1000000000 is too large; numbers here are at most 1,000,000"),
    (lambda d: d["ruleset"]["options"].update(exceptional_modifier=float("nan")),
     "ruleset.options.exceptional_modifier: nan: expected a finite number"),
    (lambda d: d["sides"][0].update(decision_timeout_s=float("inf")), "sides[0].decision_timeout_s: Input should be"),
    (lambda d: d.update(objectives=[{"hex": [1, 1], "side": 7}]), "objectives[0].side: Input should be less than"),
    (lambda d: d["sides"][0]["tanks"][0].update(hex=[1, 3, 1]), "sides[0].tanks[0].hex: Tuple should have at most 2"),
    (lambda d: d["sides"][0]["tanks"][0].update(rules={1: "x"}), "sides[0].tanks[0].rules[1] (a key): Input should"),
    (lambda d: d["sides"][0].update(policy={"name": "advance", "params": {"x": {1: 2, "b": 3}}}),
     "sides[0].policy.params.x: key 1: expected a name (text), got int"),
    (lambda d: d["sides"][0].update(policy={"name": "advance", "params": {"candidates": 10**30}}),
     "sides[0].policy.params.candidates: 1000000000000000000000000000000 is too large"),
    (lambda d: d["sides"][0].update(policy={"name": "advance", "params": {"candidates": float("inf")}}),
     "sides[0].policy.params.candidates: inf: expected a finite number"),
    (lambda d: d.update({1: 2}), "h.yaml: [1]: Keys should be strings"),
    (lambda d: d["sides"][0].update(policy={"name": "advance", "params": {"min_odds": "1e9999999"}}),
     "sides[0].policy: policy 'advance': bad parameters {'min_odds': '1e9999999'}: Advance: parameter "
     "min_odds='1e9999999': expected float"),
])
def test_limits_name_the_field(mutate, expect):
    d = small_ps_scenario()
    mutate(d)
    assert expect in _errors(d)


def test_no_message_echoes_an_unbounded_value():
    d = small_ps_scenario()
    d["map"]["terrain"][0]["tile"] = "lava" * 40
    d["sides"][0]["tanks"][0]["vehicle"] = "v" * 150
    d["sides"][1]["policy"] = {"name": "x" * 150}
    d["sides"][0]["tanks"][1]["label"] = "L" * 10_000
    d["description"] = "z" * 100_000
    msg = _errors(d)
    assert "h.yaml: description: String should have at most 10000 characters" in msg
    assert "h.yaml: sides[0].tanks[1].label: String should have at most 200 characters (got 'LLLL" in msg
    assert max(len(x) for x in msg.splitlines()) < 400
    d = small_ps_scenario()
    d["map"]["terrain"][0]["tile"] = "lava" * 40
    d["sides"][1]["policy"] = {"name": "advance", "params": {"flank_bias": list(range(10_000))}}
    msg = _errors(d)
    assert "unknown terrain 'lavalavalava" in msg and "..." in msg
    assert max(len(x) for x in msg.splitlines()) < 700


def test_many_problems_are_counted_not_listed():
    d = small_ps_scenario()
    d["objectives"] = [{"hex": [50, i]} for i in range(500)]
    lines = _errors(d).splitlines()
    assert len(lines) == MAX_ERRORS and lines[-1] == f"h.yaml: ... and {500 - MAX_ERRORS + 1} more problems"


# --- every field run reads is validated -----------------------------------------------------------------------------
@pytest.mark.parametrize("feature,expect", [
    ({"hex": [73, 20, 1]}, "map.features[0].hex: Tuple should have at most 2 items after validation, not 3"),
    ({"hex": [73, 20]}, "map.features[0].hex: [73, 20] is off the map (12 x 12)"),
    ({"hex": "73,20"}, "map.features[0].hex: Input should be a valid tuple"),
    ({"passable": False}, "map.features[0].hex: field required"),
    ({"hex": [3, 3], "structure": {"dur": 10**9, "dt": 1}}, "map.features[0].structure.dur: 1000000000 is too large"),
])
def test_features_are_checked_as_a_battle_reads_them(feature, expect):
    d = small_ps_scenario()
    d["ruleset"] = {"name": "hummel_quest"}
    for s in d["sides"]:
        for t in s["tanks"]:
            t["vehicle"] = "hq_example_medium"
    d["map"]["terrain"] = []
    d["map"]["features"] = [feature]
    assert expect in _errors(d)
    d["map"]["features"] = [{"hex": [3, 3], "structure": {"dur": 5, "dt": 10}}, {"hex": [3, 3], "tall": True}]
    assert "map.features[1].hex: [3, 3] already has a block at map.features[0]" in _errors(d)
    d["map"]["features"] = [{"hex": [3, 3], "structure": {"dur": 5, "dt": 10}}]
    m = BattleModel(validate(d, "h.yaml"), 1, decision_timeout_s=0)
    m.advance(3)


def test_experiment_limits():
    base = {"scenario": "default", "replications": 1}
    cases = [
        ({"replications": 10**9}, "replications: Input should be less than or equal to 1000000"),
        ({"design": {"kind": "latin_hypercube", "n": 10**6}, "factors": [
            {"path": "turn_limit", "range": [1, 10], "integer": True}]}, "design.n: Input should be less than"),
        ({"factors": [{"path": "turn_limit", "levels": list(range(1, 1500))}]},
         "factors[0].levels: List should have at most 1000 items"),
        ({"factors": [{"path": "turn_limit", "levels": list(range(1, 200))},
                      {"path": "sides.0.policy.params.min_odds", "levels": [i / 100 for i in range(100)]}]},
         "design: 199 x 100 = 19,900 design points; at most 10,000"),
        ({"deployment": {"Soviets": {"center": [0, 0], "radius": 10**6}}, "setup": "random"},
         "deployment.Soviets.radius: Input should be less than or equal to 20000"),
        ({"watchdog_s": float("inf")}, "watchdog_s: Input should be"),
        ({"overrides": {"x" * 500: 1}}, "overrides: the path 'xxxx"),
        ({"factors": [{"path": "sides.²", "levels": [1]}]}, "factors[0].path: sides.²: no element '²'"),
    ]
    for over, expect in cases:
        with pytest.raises(ScenarioError) as ei:
            experiment_from_mapping({**copy.deepcopy(base), **over}, "e.yaml")
        text = "\n".join(ei.value.errors)
        assert expect in text and all(x.startswith("e.yaml: ") for x in ei.value.errors), (over, text)


def test_a_huge_deployment_zone_is_clipped_before_it_is_listed():
    e = experiment_from_mapping({"scenario": "default", "setup": "random", "replications": 1,
                                 "deployment": {"Soviets": {"center": [0, 10], "radius": 19_999}}}, "e.yaml")
    assert len(e.zones[0]) == 300 * 401


def test_tournament_limits():
    ent = [{"name": f"e{i}", "policy": "hold"} for i in range(300)]
    cases = [
        ({"entrants": ent}, "entrants: List should have at most 256 items"),
        ({"games_per_pairing": 100_000, "entrants": ent[:3]},
         "games_per_pairing: 1 scenarios x 100000 games x 3 pairings = 300,000 games; at most 200,000"),
        ({"limits": {"cpu_s": float("inf")}}, "limits.cpu_s: Input should be a finite number"),
        ({"executor": {"battle_timeout_s": float("nan")}}, "executor.battle_timeout_s: Input should be"),
    ]
    for over, expect in cases:
        data = {"entrants": ent[:2], "scenarios": [{"file": "default"}]}
        data.update(over)
        with pytest.raises(TournamentError) as ei:
            tournament_from_mapping(data, "t.yaml", "scenarios")
        text = "\n".join(ei.value.errors)
        assert expect in text and all(x.startswith("t.yaml: ") for x in ei.value.errors), (over, text)


# --- numbers as text, case files and limits of every reader (the relatives the first attack did not try) --------

HOSTILE_NUMBERS = ["1e9999999", "9" * 5000, "1/" + "7" * 60, "0." + "3" * 200, "1e-99999", "nan", "inf"]


@pytest.mark.parametrize("text", HOSTILE_NUMBERS)
def test_exact_numbers_from_text_are_bounded(text):
    from sim.rules.base import parse_fraction

    with pytest.raises(ValueError):
        parse_fraction(text)


def test_exact_numbers_from_text_keep_their_value():
    from fractions import Fraction

    from sim.rules.base import parse_fraction

    assert [parse_fraction(t) for t in ("53/200", "0.25", "1e-3", " 7 ", "-5/2")] == [
        Fraction(53, 200), Fraction(1, 4), Fraction(1, 1000), 7, Fraction(-5, 2)]


def test_a_hostile_number_in_a_case_file_is_a_failed_comparison_not_a_hang():
    from sim.rules.cases import compare

    bad = compare({"p_kill": "1e9999999"}, {"p_kill": "53/200"})
    assert bad and "1e9999999" in bad[0]


def test_asl_odds_parameters_refuse_hostile_numbers():
    from sim.rules import base as rules_base

    with pytest.raises(rules_base.CaseError):
        rules_base.get("asl").odds_from_params({"firer_mp": "1e9999999"} | {})


def test_a_case_file_that_is_a_device_is_refused(tmp_path):
    from sim.play_cases import load_cases

    with pytest.raises(ValueError, match="not a regular file"):
        load_cases("/dev/zero")


def test_an_entrants_fraction_is_decoded_bounded():
    from agents.remote import decode

    assert decode({"$frac": "1/4"}) == __import__("fractions").Fraction(1, 4)
    with pytest.raises(ValueError):
        decode({"$frac": "1e9999999"})


def test_isolation_limits_refuse_infinity():
    from pydantic import ValidationError

    from agents.isolation import Limits

    for field in ("cpu_s", "decision_wall_s", "startup_wall_s"):
        with pytest.raises(ValidationError):
            Limits(**{field: float("inf")})


def test_a_huge_results_json_is_refused_unread(tmp_path, monkeypatch):
    from sim.experiments import store

    monkeypatch.setattr(store, "MAX_JSON_BYTES", 1000)
    f = tmp_path / "manifest.json"
    f.write_text("[" + "0," * 1000 + "0]", encoding="utf-8")
    with pytest.raises(store.CorruptResults, match="larger than"):
        store.read_json(f)
