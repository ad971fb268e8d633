"""Issue 16 sections 1-3: vehicles in the scenario (from ``tanksim catalog``), maps drawn as text or listed cell by
cell, and scenario generators (command, determinism, every kind under every rule set, an experiment factor)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim import generate as gen
from sim.cli import catalog as catalog_cli
from sim.cli import generate as generate_cli
from sim.experiments.design import GENERATOR, experiment_from_mapping, point_data
from sim.hexgrid import Hex, offset_to_axial
from sim.rules import base as rules_base
from sim.rules.asl import tables as asl_tables
from sim.runner import run_battle
from sim.scenario import ScenarioError, dump_yaml, load_scenario, parse_yaml, validate

T34_85_SCENARIO = """\
name: t34_85_1944
ruleset: {name: asl, options: {date: "1944", hex_size_m: 40}}
map:
  legend: {T: woods, B: building}
  layout: |
    ..........
    ...T......
    ...TT..B..
    ..........
    ......T...
    ..........
turn_limit: 6
sides:
  - name: Soviets
    policy: advance
    tanks:
      - {vehicle: t34_85, hex: [0, 2], facing: 0}
  - name: Germans
    policy: advance
    tanks:
      - {vehicle: pzkpfw_iiih, hex: [9, -2], facing: 3}
"""


def _catalog_yaml(capsys, *argv: str) -> dict:
    assert catalog_cli.main(list(argv)) == 0
    out = capsys.readouterr().out
    return parse_yaml(out, "<catalog>")


# --- 1. vehicles in the scenario -----------------------------------------------------------------------------------

def test_copy_a_catalog_vehicle_into_a_scenario_and_change_it(tmp_path, capsys):
    """The README recipe: print the asl T-34 M41, paste it as ``t34_85``, change gun, TK keys and MP, play it."""
    rec = _catalog_yaml(capsys, "asl", "t34_m41")["vehicles"]["t34_m41"]
    assert rec == rules_base.get("asl").catalog_records()["t34_m41"]
    rec.update(name="T-34/85", gun="85L", tk_key={**rec["tk_key"], "AP": "85L", "APCR": "85L"}, mp=16)
    data = parse_yaml(T34_85_SCENARIO, "t.yaml")
    data["vehicles"] = {"t34_85": rec}
    path = tmp_path / "t34_85.yaml"
    path.write_text(dump_yaml(data), encoding="utf-8")
    sc = load_scenario(path)
    v = sc.vehicle("t34_85")
    assert (v.name, v.gun, v.mp) == ("T-34/85", "85L", 16)
    assert dict(v.af) == dict(rules_base.get("asl").vehicle("t34_m41").af)  # unchanged fields as copied
    tables = asl_tables.to_kill_tables()
    assert dict(v.tk_key) == {"AP": "85L", "APCR": "85L", "HE": "70+"}
    assert tables.basic_tk_by_key("APCR", v.tk_key["APCR"]) == 19  # the 85L listing of the APCR table
    res = run_battle(sc, seed=2)
    assert res.row["turns"] >= 1 and res.row["faults"] == 0
    started = json.loads(res.events[0]["data"])
    assert [t["vehicle"] for t in started["tanks"]] == ["t34_85", "pzkpfw_iiih"]


def test_vehicles_base_merges_field_by_field_and_bad_fields_name_their_path(tmp_path, capsys):
    data = parse_yaml(T34_85_SCENARIO, "t.yaml")
    data["vehicles"] = {"t34_85": {"base": "t34_m41", "name": "T-34/85", "gun": "85L",
                                   "tk_key": {"AP": "85L", "APCR": "85L"}, "mp": 16}}
    sc = validate(data, "t.yaml")
    merged = sc.vehicle_record("t34_85")
    base = rules_base.get("asl").catalog_records()["t34_m41"]
    assert merged["tk_key"] == {**base["tk_key"], "AP": "85L", "APCR": "85L"}  # HE key kept from the base
    assert merged["af"] == base["af"] and merged["mp"] == 16
    (tmp_path / "t.yaml").write_text(dump_yaml(data), encoding="utf-8")
    shown = _catalog_yaml(capsys, "--scenario", str(tmp_path / "t.yaml"), "t34_85")
    assert shown == {"vehicles": {"t34_85": merged}}
    data["vehicles"]["t34_85"]["mp"] = 500
    with pytest.raises(ScenarioError) as exc:
        validate(data, "t.yaml")
    assert any(e.startswith("t.yaml: vehicles.t34_85.mp:") for e in exc.value.errors), exc.value.errors
    data["vehicles"]["t34_85"] = {"base": "no_such_tank"}
    with pytest.raises(ScenarioError) as exc:
        validate(data, "t.yaml")
    assert any("vehicles.t34_85.base:" in e and "no_such_tank" in e for e in exc.value.errors), exc.value.errors


@pytest.mark.parametrize("ruleset", ["panzer_squadron", "asl", "hummel_quest"])
def test_catalog_lists_every_vehicle_and_each_record_rebuilds_the_catalog_vehicle(ruleset, capsys):
    assert catalog_cli.main([ruleset, "--json"]) == 0
    listed = [v["id"] for v in json.loads(capsys.readouterr().out)["vehicles"]]
    rs = rules_base.get(ruleset)
    assert listed == list(rs.catalog_records()) and set(listed) == set(rs.vehicle_ids())
    vid = listed[0]
    assert catalog_cli.main([ruleset, vid, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)["vehicles"][vid]
    assert rs.vehicle_from_record(vid, rec, rs.Options()) == rs.vehicle(vid)
    assert catalog_cli.main([ruleset, "no_such_tank"]) == 2
    assert "no_such_tank" in capsys.readouterr().err


# --- 2. maps as text and as cell lists -----------------------------------------------------------------------------

def test_a_map_drawn_as_text_is_the_board_it_pictures():
    data = parse_yaml(T34_85_SCENARIO, "t.yaml")
    data["sides"][0]["tanks"][0]["vehicle"] = "t34_m41"
    sc = validate(data, "t.yaml")
    m = sc.build_map()
    assert len(m.cells) == 60
    # line 3 (from 1), column 4: offset (3, 2) -> axial q = 3, r = 2 - 3 // 2 = 1
    assert m.terrain(Hex(3, 1)) == "woods" and m.terrain(Hex(7, 2 - 3)) == "building"
    assert m.terrain(Hex(0, 0)) == "open"
    # a full 10 x 6 picture is exactly the 10 x 6 rectangle
    rect = validate({**data, "map": {"shape": "rectangle", "width": 10, "height": 6}}, "r.yaml").build_map()
    assert set(rect.cells) == set(m.cells)


@pytest.mark.parametrize("layout, expected", [
    ("....\n..X.\n....\n", "t.yaml: map.layout: line 2, column 3: the character 'X'"),
    ("....\n...\n....\n", "t.yaml: map.layout: line 2: 3 characters where line 1 has 4"),
    ("..  ..\n..  ..\n", "t.yaml: map.layout: line 1, column 5"),  # a part cut off from the rest
])
def test_layout_problems_name_line_and_column(layout, expected):
    data = {"ruleset": "panzer_squadron", "map": {"legend": {" ": None}, "layout": layout},
            "sides": [{"name": "A", "tanks": [{"vehicle": "t34_85", "hex": [0, 0]}]},
                      {"name": "B", "tanks": [{"vehicle": "panther", "hex": [1, 0]}]}]}
    with pytest.raises(ScenarioError) as exc:
        validate(data, "t.yaml")
    assert any(e.startswith(expected) for e in exc.value.errors), exc.value.errors


def test_cells_map_lists_hexes_and_reports_duplicates_and_isolated_cells():
    sides = [{"name": "A", "tanks": [{"vehicle": "t34_85", "hex": [0, 0]}]},
             {"name": "B", "tanks": [{"vehicle": "panther", "hex": [2, 0]}]}]
    sc = validate({"map": {"shape": "cells", "cells": [[0, 0], [1, 0], [2, 0], [2, -1]]}, "sides": sides}, "c.yaml")
    assert sorted(sc.build_map().cells) == [Hex(0, 0), Hex(1, 0), Hex(2, -1), Hex(2, 0)]
    with pytest.raises(ScenarioError) as exc:
        validate({"map": {"cells": [[0, 0], [1, 0], [2, 0], [1, 0]]}, "sides": sides}, "c.yaml")
    assert "c.yaml: map.cells[3]: [1, 0] is listed twice (first at map.cells[1])" in exc.value.errors
    with pytest.raises(ScenarioError) as exc:
        validate({"map": {"cells": [[0, 0], [1, 0], [2, 0], [7, 7]]}, "sides": sides}, "c.yaml")
    assert any(e.startswith("c.yaml: map.cells[3]") for e in exc.value.errors), exc.value.errors  # [7, 7] alone


# --- 3. generators -------------------------------------------------------------------------------------------------

def test_generate_command_writes_a_valid_file_and_same_seed_gives_same_bytes(tmp_path, capsys):
    args = ["village", "--ruleset", "panzer_squadron", "--size", "16", "--tanks", "4", "--terrain",
            "woods=0.1,rubble=0.05", "--seed", "7"]
    a, b, c = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    assert generate_cli.main([*args, "-o", str(a)]) == 0
    assert generate_cli.main([*args, "-o", str(b)]) == 0
    assert generate_cli.main([*args[:-1], "8", "-o", str(c)]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    sc = load_scenario(a)
    assert [len(s.tanks) for s in sc.sides] == [4, 4] and sc.map.shape == "layout"
    assert [s.role for s in sc.sides] == ["attacker", "defender"] and len(sc.objectives) == 3
    counts = {t: sum(1 for h in sc.build_map().cells if sc.build_map().terrain(h) == t) for t in ("woods", "rubble")}
    assert counts["woods"] >= 10 and counts["rubble"] >= 5  # 10 % and 5 % of 256 hexes scattered (or more)
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["meeting", "--size", "4"], "tanksim generate: --size: Input should be greater than or equal to 8"),
    (["meeting", "--tanks", "60", "--size", "10"], "too small"),
    (["river", "--density", "0.2"], "--density: only the random generator takes a density"),
    (["random", "--ruleset", "asl", "--terrain", "water=0.1"], "--terrain: 'water' is not a terrain"),
    (["meeting", "--attacker", "tiger_x"], "--attacker[0]: unknown panzer_squadron vehicle 'tiger_x'"),
])
def test_bad_generator_parameters_are_named(argv, expected, capsys):
    assert generate_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def _small(kind: str, ruleset: str, **kw) -> dict:
    return gen.generate(kind, {"ruleset": ruleset, "size": 10, "tanks": 3, "seed": 5, "turns": 3, **kw})


@pytest.mark.parametrize("ruleset", ["panzer_squadron", "asl", "hummel_quest"])
@pytest.mark.parametrize("kind", gen.KINDS)
def test_every_kind_runs_under_every_ruleset(kind, ruleset):
    """Every generated board plays (ragged edges and off-board river hexes included: the 50 v 50 asl sight
    crash), its tanks stand on passable hexes and each side can reach the other and every objective."""
    data = _small(kind, ruleset, **({"density": 0.4} if kind == "random" else {}))
    sc = validate(data, "<generated>")
    rs = sc.rules()
    res = run_battle(sc, seed=1)
    assert res.row["turns"] >= 1 and res.row["faults"] == 0
    import networkx as nx

    from sim.battle import BattleState, SideInfo

    b = BattleState(sc.build_map(), [], [SideInfo(s.name) for s in sc.sides], rs, sc.options(),
               hex_size_m=sc.map.hex_size_m)
    g = nx.Graph()
    ok = [h for h in sorted(b.map.cells) if rs.passable(b, h)]
    okset = set(ok)
    g.add_nodes_from(ok)
    g.add_edges_from((h, n) for h in ok for n in h.neighbours() if n in okset)
    start = Hex(*sc.sides[0].tanks[0].hex)
    reach = nx.node_connected_component(g, start)
    for t in [*sc.sides[0].tanks, *sc.sides[1].tanks]:
        assert Hex(*t.hex) in reach
    for o in sc.objectives:
        assert Hex(*o.hex) in reach


def test_river_under_asl_leaves_the_water_off_the_board_and_bridges_it():
    sc = validate(gen.generate("river", {"ruleset": "asl", "size": 20, "tanks": 4, "seed": 2}), "<g>")
    m = sc.build_map()
    assert len(m.cells) < 400  # the river's hexes are not on the board
    assert sum(1 for h in m.cells if m.terrain(h) == "road") >= 2 and len(sc.objectives) >= 2


def test_generate_50_v_50_and_run_it(tmp_path, capsys):
    """The issue's "generate a 50 v 50 scenario and run it", cut to one turn (the full battle is measured in
    benchmarks)."""
    out = tmp_path / "big.yaml"
    assert generate_cli.main(["meeting", "--ruleset", "panzer_squadron", "--size", "20", "--tanks", "50",
                              "--turns", "1", "--seed", "3", "-o", str(out)]) == 0
    sc = load_scenario(out)
    assert [len(s.tanks) for s in sc.sides] == [50, 50]
    res = run_battle(sc, seed=1, record_events=False)
    assert res.row["turns"] == 1 and res.row["side1_tanks"] == res.row["side2_tanks"] == 50


def test_generator_as_an_experiment_factor_samples_maps():
    exp = experiment_from_mapping({
        "name": "maps",
        "generator": {"kind": "random", "params": {"ruleset": "hummel_quest", "size": 10, "tanks": 2, "turns": 2}},
        "factors": [{"name": "map_seed", "path": "generator.params.seed", "range": [0, 999], "integer": True},
                    {"name": "density", "path": "generator.params.density", "levels": [0.1, 0.5]}],
        "design": {"kind": "latin_hypercube", "n": 4}, "replications": 1, "seed": 1}, "exp.yaml")
    assert len(exp.points) == 4
    gens = [p.params[GENERATOR] for p in exp.points]
    assert all(g["kind"] == "random" and g["params"]["seed"] == p.values["map_seed"] for g, p in zip(gens, exp.points))
    datas = [point_data(exp.base_data, p.params, "exp.yaml") for p in exp.points]
    assert len({d["map"]["layout"] for d in datas}) == 4
    assert datas[0] == gen.generate("random", gens[0]["params"])
    row = run_battle(validate(datas[0], "p"), seed=0).row
    assert row["scenario"] == datas[0]["name"]


@pytest.mark.parametrize("generator, factors, expected", [
    ({"kind": "river", "params": {"size": 5}}, [], "exp.yaml: generator.params.size: Input should be greater"),
    ({"kind": "lake"}, [], "exp.yaml: generator.kind:"),
    ({"kind": "river", "params": {"ruleset": "asl", "terrain": {"water": 0.1}}}, [],
     "exp.yaml: generator.params.terrain: 'water' is not a terrain"),
    ({"kind": "river"}, [{"path": "generator.params.colour", "levels": [1]}],
     "exp.yaml: factors[0].path: generator.params.colour: expected generator.kind or generator.params.NAME"),
    ({"kind": "river"}, [{"path": "generator.params.size", "levels": [12, 300]}],
     "exp.yaml: design point 1 (generator.params.size=300): generator.params.size: Input should be less"),
])
def test_bad_generator_in_an_experiment_names_the_field(generator, factors, expected):
    with pytest.raises(ScenarioError) as exc:
        experiment_from_mapping({"generator": generator, "factors": factors, "replications": 1}, "exp.yaml")
    assert any(e.startswith(expected) for e in exc.value.errors), exc.value.errors


# --- the README recipes ------------------------------------------------------------------------------------------

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_blocks(lang: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith(lang + "\n")]


def test_readme_recipes_work(tmp_path):
    """The README's T-34/85 scenario is the shipped example; its map picture and its generator experiment
    validate; every ``tanksim generate`` line in it is accepted."""
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "t34_85_1944.yaml"
    blocks = _readme_blocks("yaml")
    assert example.read_text(encoding="utf-8") in blocks
    sc = load_scenario(example)
    assert sc.vehicle("t34_85").gun == "85L" and sc.options().date == "1944"
    layout = next(parse_yaml(b, "README") for b in blocks if b.startswith("map:\n"))
    sides = [{"name": "A", "tanks": [{"vehicle": "t34_85", "hex": [0, 0]}]},
             {"name": "B", "tanks": [{"vehicle": "panther", "hex": [9, -4]}]}]
    m = validate({**layout, "sides": sides}, "README").build_map()
    assert len(m.cells) == 48 and m.terrain(Hex(0, 2)) == "water"
    exp = next(parse_yaml(b, "README") for b in blocks if b.startswith("name: maps\n"))
    exp["design"]["n"] = 3
    assert len(experiment_from_mapping(exp, "maps.yaml").points) == 3
    lines = [ln.split("#")[0].split("&&")[0].split() for b in _readme_blocks("sh") for ln in b.splitlines()
             if ln.startswith("tanksim generate ")]
    assert len(lines) == 5
    for argv in lines:
        out = argv.index("-o")
        argv[out + 1] = str(tmp_path / argv[out + 1])
        assert generate_cli.main(argv[2:]) == 0


@pytest.mark.parametrize("kind,ruleset", [("meeting", "panzer_squadron"), ("meeting", "hummel_quest"),
                                          ("random", "panzer_squadron")])
def test_open_kinds_have_a_centre_objective_and_the_sides_meet(kind, ruleset):
    """A newcomer found every generated meeting / random battle under panzer_squadron and hummel_quest ended with no
    tank moved and no shot (advance had no goal: no objective, the enemy out of sight).  The centre hex is now the
    objective: both sides move off their start hexes and fire."""
    from sim.runner import run_battle

    sc = validate(gen.generate(kind, {"ruleset": ruleset, "size": 12, "tanks": 3, "seed": 1}), "<g>")
    assert [(tuple(o.hex), o.name) for o in sc.objectives] == [(tuple(offset_to_axial(6, 6)), "centre")]
    r = run_battle(sc, 1)
    kinds = [e.get("kind") for e in r.events]
    assert "Moved" in kinds and "ShotResolved" in kinds, sorted(set(kinds))


def test_generate_and_validate_describe_a_board_in_the_same_words(tmp_path, capsys):
    from sim.cli.main import main as tanksim_main

    out = tmp_path / "m.yaml"
    assert generate_cli.main(["meeting", "--size", "25", "--tanks", "5", "-o", str(out)]) == 0
    wrote = capsys.readouterr().out.strip()
    assert tanksim_main(["validate", str(out)]) == 0
    checked = capsys.readouterr().out.strip()
    line = "panzer_squadron, 25 x 25 layout (625 hexes), 5 v 5 tanks, 1 objective, turn limit 15"
    assert wrote == f"wrote {out}: meeting_panzer_squadron_25x25_5v5_seed0: {line}"
    assert checked == f"{out}: ok (meeting_panzer_squadron_25x25_5v5_seed0: {line})"
    assert tanksim_main(["validate", "hq_skirmish"]) == 0
    assert "120 x 120 rectangle, 4 v 4 tanks, 0 objectives" in capsys.readouterr().out


@pytest.mark.parametrize("name, expected", [
    # an invisible character in any argument is refused before the subcommand reads it (sim.cli.main._bad_argument)
    ("mee\u200bting", "tanksim: argument 4 ('mee\\u200bting'): expected no control or invisible format "
                      "characters; found '\\u200b' at character 4"),
    ("x" * 201, "tanksim generate: --name: String should have at most 200 characters (got " + gen.short("x" * 201)
     + ")"),
])
def test_generate_name_with_an_invisible_character_is_refused_as_an_option(tmp_path, name, expected):
    """``--name`` is checked as a scenario name is (sim.scenario.Name) while the parameters are checked: one line
    naming the option, exit 2, no traceback, no file."""
    import subprocess

    from conftest import tanksim_cmd

    out = tmp_path / "g.yaml"
    r = subprocess.run(tanksim_cmd() + ["generate", "meeting", "--name", name, "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [expected] and not out.exists()
