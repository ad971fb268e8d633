"""Scenario validation: errors name the file, the field path and what was expected."""
from __future__ import annotations

import pytest

from conftest import small_ps_scenario
from sim.scenario import ScenarioError, apply_overrides, find_scenario, load_scenario, validate


def _errors(data, src="scenarios/x.yaml"):
    with pytest.raises(ScenarioError) as ei:
        validate(data, src)
    return "\n".join(ei.value.errors)


def test_off_map_hex_names_file_path_and_size():
    d = small_ps_scenario()
    d["map"]["width"] = d["map"]["height"] = 25
    d["sides"][1]["tanks"][2]["hex"] = [40, 2]
    msg = _errors(d)
    assert "scenarios/x.yaml: sides[1].tanks[2].hex: [40, 2] is off the map (25 x 25)" in msg


@pytest.mark.parametrize("mutate,expect", [
    (lambda d: d["sides"][0]["tanks"][0].update(vehicle="maus"), "sides[0].tanks[0].vehicle: unknown Panzer"),
    (lambda d: d["sides"][0]["tanks"][0].update(facing=7), "sides[0].tanks[0].facing"),
    (lambda d: d["sides"][0]["tanks"][1].update(hex=[1, 3]), "already occupied"),
    (lambda d: d["ruleset"]["options"].update(initiative="coin"), "ruleset.options.initiative"),
    (lambda d: d["ruleset"].update(name="chess"), "ruleset.name: unknown rule set 'chess'"),
    (lambda d: d["map"]["terrain"].append({"tile": "lava", "hexes": [[1, 1]]}), "unknown terrain 'lava'"),
    (lambda d: d.update(sides=d["sides"][:1]), "sides"),
    (lambda d: d.update(turn_limt=3), "turn_limt"),
    (lambda d: d["sides"][0]["tanks"][0].update(rules={"status": "flying"}), "sides[0].tanks[0].rules.status"),
])
def test_bad_fields(mutate, expect):
    d = small_ps_scenario()
    mutate(d)
    assert expect in _errors(d)


def test_good_and_bundled():
    sc = validate(small_ps_scenario(), "small.yaml")
    assert sc.effective_turn_limit() == 8 and sc.rules().name == "panzer_squadron"
    src, text = find_scenario("default")
    assert src == "scenarios/default.yaml" and "T34" in text
    assert load_scenario("default").name == "village_assault"


def test_overrides_by_side_name_role_and_index():
    d = small_ps_scenario()
    out = apply_overrides(d, {"sides.attacker.policy.params.min_odds": 0.2, "sides.Blue.policy": "advance",
                              "turn_limit": 3, "sides.0.tanks.0.facing": 1})
    assert out["sides"][0]["policy"] == {"name": "advance", "params": {"min_odds": 0.2}}
    assert out["sides"][1]["policy"] == "advance" and out["turn_limit"] == 3
    assert out["sides"][0]["tanks"][0]["facing"] == 1
    with pytest.raises(ScenarioError, match="unknown field"):
        apply_overrides(d, {"sides.attacker.polcy.name": "x"})
    with pytest.raises(ScenarioError, match="no element"):
        apply_overrides(d, {"sides.green.policy.name": "x"})


def test_unknown_policy_is_reported_at_validation():
    d = small_ps_scenario()
    d["sides"][1]["policy"] = {"name": "holdd"}
    d["sides"][0]["tanks"][0]["policy"] = {"name": "advance", "params": {"bogus": 1}}
    msg = _errors(d)
    assert "sides[1].policy: unknown policy 'holdd'" in msg
    assert "sides[0].tanks[0].policy:" in msg and "bogus" in msg


def test_duplicate_side_names_labels_and_hexagon_radius():
    d = small_ps_scenario()
    d["sides"][1]["name"] = "Red"
    d["sides"][0]["tanks"][0]["label"] = "A"
    d["sides"][1]["tanks"][1]["label"] = "A"
    msg = _errors(d)
    assert "sides[1].name: 'Red' is also the name of sides[0]" in msg
    assert "sides[1].tanks[1].label: 'A' is already used by sides[0].tanks[0]" in msg
    d = small_ps_scenario()
    d["map"] = {"shape": "hexagon", "width": 5}
    assert "map.radius: a hexagon map needs its radius" in _errors(d)


def test_side_names_match_in_any_case_where_unambiguous():
    from sim.messages import match_name
    from sim.scenario import load_scenario, side_index

    sc = load_scenario("default")
    names = [s.name for s in sc.sides]
    assert [side_index(sc, n.upper()) for n in names] == [0, 1] == [side_index(sc, n.lower()) for n in names]
    assert side_index(sc, "2") == 1
    with pytest.raises(KeyError, match="no side 'Martians'"):
        side_index(sc, "Martians")
    assert match_name("red", ["Red", "RED"]) is None and match_name("Red", ["Red", "RED"]) == 0


def test_a_misspelt_field_names_the_fields_expected_there():
    """A field the schema does not know (a typo) says which fields are expected at that place, the closest first
    (a newcomer got only "Extra inputs are not permitted"): at the top level, in a tank and in rule-set options."""
    import yaml

    data = yaml.safe_load(find_scenario("default")[1])
    data["turn_limt"] = data.pop("turn_limit", 15)
    data["sides"][1]["tanks"][0]["facng"] = data["sides"][1]["tanks"][0].pop("facing", 0)
    with pytest.raises(ScenarioError) as err:
        validate(data, "x.yaml")
    text = str(err.value)
    assert "x.yaml: turn_limt: unknown field 'turn_limt' (did you mean 'turn_limit'?); expected one of " in text
    assert "x.yaml: sides[1].tanks[0].facng: unknown field 'facng' (did you mean 'facing'?)" in text
    assert "hex" in text.split("facng")[-1] and "Extra inputs" not in text
    data = yaml.safe_load(find_scenario("default")[1])  # rule-set options are checked once the rest is valid
    data["ruleset"]["options"] = {**data["ruleset"].get("options", {}), "los_orign": "centre"}
    with pytest.raises(ScenarioError) as err:
        validate(data, "x.yaml")
    assert "x.yaml: ruleset.options.los_orign: unknown field 'los_orign' (did you mean 'los_origin'?)" in str(err.value)


def test_a_schema_error_and_an_unknown_vehicle_are_reported_together():
    """The catalog's check of tank vehicles runs on the raw mapping too when the schema fails, so one pass names
    both problems (a newcomer fixed one and met the other only on the next run)."""
    d = small_ps_scenario()
    d["turn_limit"] = "soon"
    d["sides"][0]["tanks"][0]["vehicle"] = "maus"
    d["sides"][1]["tanks"][0]["vehicle"] = 7            # a schema error of its own: reported once, by the schema
    d["vehicles"] = {"mine": {"base": "whatever"}}
    d["sides"][1]["tanks"][1]["vehicle"] = "mine"      # defined under vehicles: not an unknown vehicle
    lines = _errors(d).splitlines()
    assert any(ln.startswith("scenarios/x.yaml: turn_limit:") for ln in lines)
    assert any(ln.startswith("scenarios/x.yaml: sides[0].tanks[0].vehicle: unknown Panzer") for ln in lines)
    assert sum("sides[1].tanks[0].vehicle" in ln for ln in lines) == 1
    assert not any("sides[1].tanks[1].vehicle" in ln for ln in lines)


def test_the_raw_vehicle_pass_skips_what_it_cannot_read():
    d = small_ps_scenario()
    d["turn_limit"] = "soon"
    d["ruleset"]["name"] = "chess"                     # no catalog to read: only the schema's line
    d["sides"][0]["tanks"][0]["vehicle"] = "maus"
    assert "maus" not in _errors(d)
    d = small_ps_scenario()
    d["turn_limit"] = "soon"
    d["sides"] = [{"tanks": "many"}, 3]                 # shapes the schema refuses: no traceback, schema lines only
    assert "sides" in _errors(d)


def test_rule_set_blocks_are_checked_even_when_the_schema_fails():
    """A misspelt rule-set option or tank ``rules`` field is reported in the same pass as a schema error."""
    d = small_ps_scenario()
    d["turn_limit"] = "soon"
    d["ruleset"]["options"]["turn_limit_reslt"] = "most_tanks"
    d["sides"][0]["tanks"][1]["rules"] = {"statuss": "ok"}
    msg = _errors(d)
    assert "scenarios/x.yaml: turn_limit:" in msg
    assert "scenarios/x.yaml: ruleset.options.turn_limit_reslt: unknown field" in msg
    assert "did you mean 'turn_limit_result'?" in msg
    assert "scenarios/x.yaml: sides[0].tanks[1].rules.statuss: unknown field" in msg
    d = small_ps_scenario()
    d["sides"][0]["tanks"][0]["facng"] = 1            # a schema error inside the same tank
    d["sides"][0]["tanks"][0]["rules"] = {"status": "flying"}
    msg = _errors(d)
    assert "sides[0].tanks[0].facng" in msg and "sides[0].tanks[0].rules.status" in msg


def test_an_unknown_field_message_lists_whole_names():
    from sim.messages import unknown_field_message

    names = [f"option_number_{i:03d}" for i in range(100)]
    msg = unknown_field_message("x", names)
    assert msg.endswith(" more") and "option_number_000" in msg
    listed = msg.split("expected one of ", 1)[1].rsplit(", ... and ", 1)
    assert all(n in names for n in listed[0].split(", "))
    assert int(listed[1].split()[0]) + len(listed[0].split(", ")) == 100
    assert unknown_field_message("x", ["a", "b"]).endswith("expected one of a, b")
