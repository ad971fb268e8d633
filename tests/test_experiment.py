"""Experiment files: validation messages, designs, run identity and set-up randomisation (no battles played)."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import yaml

from conftest import ROOT, small_ps_scenario, tanksim_cmd
from sim.experiments.design import (
    experiment_from_mapping,
    load_experiment,
    place_tanks,
    placement_candidates,
    run_identity,
)
from sim.scenario import ScenarioError, validate


def write(tmp_path, exp: dict, name: str = "exp.yaml"):
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario()), encoding="utf-8")
    p = tmp_path / name
    p.write_text(yaml.safe_dump({"scenario": "small.yaml", **exp}, sort_keys=False), encoding="utf-8")
    return p


def errors_of(tmp_path, exp: dict) -> str:
    p = write(tmp_path, exp)
    with pytest.raises(ScenarioError) as ei:
        load_experiment(p)
    text = str(ei.value)
    assert all(line.startswith(str(p) + ": ") for line in ei.value.errors), text
    return text


# --- bad files ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, expected", [
    ("sides.attacker.policy.params.flank_bias", "factors[0].path: sides.0.policy.params.flank_bias: unknown "
                                                "parameter 'flank_bias' for policy advance; parameters:"),
    ("sides.attacker.polcy.name", "factors[0].path: sides.attacker.polcy.name: unknown field 'polcy' in sides.0 "
                                  "(did you mean 'policy'?); expected one of"),
    ("sides.Japanese.policy.name", "no element 'Japanese' in sides; expected an index 0..1 or one of Red, Blue"),
    ("turn_limt", "unknown field 'turn_limt' in the scenario (did you mean 'turn_limit'?); expected one of"),
    ("map.width.x", "map.width is a single value"),
    ("ruleset.options.bogus", "unknown field 'bogus' in ruleset.options"),
])
def test_unknown_factor_path_names_file_field_and_expectation(tmp_path, path, expected):
    text = errors_of(tmp_path, {"factors": [{"path": path, "levels": [1, 2]}]})
    assert expected in text


def test_parameter_known_to_one_level_of_the_policy_factor_refuses_the_points_that_lack_it(tmp_path):
    with pytest.raises(ScenarioError, match=r"design points? 0 \(Red.policy.name=advance.*flank_bias"):
        load_experiment(write(tmp_path, {"factors": [
            {"path": "sides.Red.policy.name", "levels": ["advance", "flank"]},
            {"path": "sides.Red.policy.params.flank_bias", "levels": [0.0, 1.0]}]}))
    exp = load_experiment(write(tmp_path, {"factors": [
        {"path": "sides.Red.policy.name", "levels": ["flank"]},
        {"path": "sides.Red.policy.params.flank_bias", "levels": [0.0, 1.0]}]}))
    assert {p.params["sides.0.policy.params.flank_bias"] for p in exp.points} == {0.0, 1.0}


def test_empty_levels_and_other_schema_errors(tmp_path):
    assert "factors[0].levels: expected at least one level" in errors_of(
        tmp_path, {"factors": [{"path": "turn_limit", "levels": []}]})
    assert "give exactly one of levels" in errors_of(
        tmp_path, {"factors": [{"path": "turn_limit", "levels": [3], "range": [1, 4]}]})
    assert "factors[0].steps: a range in a full_factorial design needs steps" in errors_of(
        tmp_path, {"factors": [{"path": "turn_limit", "range": [1, 4]}]})
    assert "design.n: a latin_hypercube design needs n" in errors_of(
        tmp_path, {"factors": [{"path": "turn_limit", "range": [1, 4]}], "design": "latin_hypercube"})
    assert "replications: Input should be greater than or equal to 1" in errors_of(tmp_path, {"replications": 0})
    assert "unknown policy 'advnce'" in errors_of(
        tmp_path, {"factors": [{"path": "sides.Red.policy.name", "levels": ["hold", "advnce"]}]})
    assert "factors[1].path: sides.0.policy.name is the same field as factors[0].path" in errors_of(
        tmp_path, {"factors": [{"path": "sides.Red.policy.name", "levels": ["hold"]},
                               {"name": "x", "path": "sides.0.policy.name", "levels": ["advance"]}]})
    assert "scenario: nowhere.yaml: no such file" in errors_of(tmp_path, {"scenario": "nowhere.yaml"})


def test_design_too_large(tmp_path):
    text = errors_of(tmp_path, {"factors": [{"path": "turn_limit", "levels": list(range(1, 11))},
                                            {"path": "sides.Red.policy.params.min_odds", "range": [0, 1],
                                             "steps": 100}],
                                "replications": 500})
    assert "design: 10 x 100 points x 500 replications = 500000 runs, more than max_runs (100000)" in text


def test_setup_random_needs_a_zone_big_enough(tmp_path):
    assert "deployment: random set-up needs a deployment zone" in errors_of(tmp_path, {"setup": "random"})
    assert "deployment.Red: 2 free passable hexes on the map for 3 tanks" in errors_of(
        tmp_path, {"setup": "random", "deployment": {"Red": {"hexes": [[0, 0], [0, 1]]}}})
    assert "deployment.Green: no side 'Green'" in errors_of(
        tmp_path, {"setup": "random", "deployment": {"Green": {"center": [2, 2], "radius": 1}}})


def test_cli_reports_bad_experiment_with_exit_2(tmp_path):
    p = write(tmp_path, {"factors": [{"path": "turn_limt", "levels": [1]}]})
    r = subprocess.run(tanksim_cmd() + ["batch", str(p), "--out", str(tmp_path / "out")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert f"{p}: factors[0].path: turn_limt: unknown field 'turn_limt'" in r.stderr
    assert not (tmp_path / "out").exists()


# --- designs and identity -------------------------------------------------------------------------------------------

def test_full_factorial_and_identity_independent_of_order_and_added_levels(tmp_path):
    a = load_experiment(write(tmp_path, {"factors": [{"name": "att", "path": "sides.Red.policy.name",
                                                      "levels": ["advance", "hold"]},
                                                     {"path": "turn_limit", "levels": [3, 5]}],
                                         "replications": 3, "seed": 7}))
    assert len(a.points) == 4 and a.n_runs == 12
    assert a.points[0].params == {"sides.0.policy.name": "advance", "turn_limit": 3}
    runs = a.runs()
    assert len({r.key for r in runs}) == 12 and len({r.seed for r in runs}) == 12
    assert all(0 <= r.seed < 2 ** 63 for r in runs)
    b = load_experiment(write(tmp_path, {"factors": [{"name": "att", "path": "sides.1.policy.name",
                                                      "levels": ["cover"]},
                                                     {"path": "turn_limit", "levels": [5, 3, 4]},
                                                     ], "replications": 3, "seed": 7}, "b.yaml"))
    # another side: nothing shared; now the same side addressed by index, levels reordered and one added
    assert not {r.key for r in runs} & {r.key for r in b.runs()}
    c = load_experiment(write(tmp_path, {"factors": [{"name": "att", "path": "sides.0.policy.name",
                                                      "levels": ["hold", "advance", "rush"]},
                                                     {"path": "turn_limit", "levels": [5, 3, 4]}],
                                         "replications": 4, "seed": 7}, "c.yaml"))
    assert {r.key: r.seed for r in runs}.items() <= {r.key: r.seed for r in c.runs()}.items()
    d = load_experiment(write(tmp_path, {"factors": [{"name": "att", "path": "sides.Red.policy.name",
                                                      "levels": ["advance", "hold"]},
                                                     {"path": "turn_limit", "levels": [3, 5]}],
                                         "replications": 3, "seed": 8}, "d.yaml"))
    assert not {r.key for r in runs} & {r.key for r in d.runs()}
    assert a.identity() != d.identity()


def test_common_random_numbers_share_seeds_across_points(tmp_path):
    e = load_experiment(write(tmp_path, {"factors": [{"path": "sides.Red.policy.name",
                                                      "levels": ["advance", "hold"]}],
                                         "replications": 2, "common_random_numbers": True}))
    runs = e.runs()
    assert runs[0].seed == runs[1].seed != runs[2].seed == runs[3].seed
    assert len({r.key for r in runs}) == 4
    assert run_identity("abc", 0, 1).seed != run_identity("abd", 0, 1).seed


def test_latin_hypercube_is_stratified_and_seeded(tmp_path):
    exp = {"factors": [{"path": "sides.Red.policy.params.min_odds", "range": [0.0, 0.5]},
                       {"path": "turn_limit", "range": [2, 9], "integer": True},
                       {"path": "sides.Blue.policy.name", "levels": ["hold", "cover"]}],
           "design": {"kind": "latin_hypercube", "n": 10}, "seed": 3}
    e = load_experiment(write(tmp_path, exp))
    assert len(e.points) == 10
    odds = sorted(p.values["Red.policy.params.min_odds"] for p in e.points)
    assert [int(x / 0.05) for x in odds] == list(range(10))  # one value in each tenth of the range
    assert all(isinstance(p.params["turn_limit"], int) and 2 <= p.params["turn_limit"] <= 9 for p in e.points)
    assert {p.values["Blue.policy.name"] for p in e.points} == {"hold", "cover"}
    again = load_experiment(write(tmp_path, exp, "again.yaml"))
    assert [p.key for p in again.points] == [p.key for p in e.points]


def test_random_placement_inside_zone_by_seed(tmp_path):
    data = small_ps_scenario()
    e = experiment_from_mapping({"scenario": "small.yaml", "setup": "random",
                                 "deployment": {"attacker": {"rect": {"q": [0, 2], "r": [0, 9]}}}}, "x.yaml",
                                write(tmp_path, {}).parent)
    assert e.points[0].params == {"setup": "random"}
    spec = validate(data)
    cands = placement_candidates(spec, e.zones)
    zone = set(e.zones[0])
    placed = [place_tanks(data, cands, seed) for seed in (1, 1, 2)]
    hexes = [[tuple(t["hex"]) for t in p["sides"][0]["tanks"]] for p in placed]
    assert hexes[0] == hexes[1] != hexes[2]
    for hs in hexes:
        assert len(set(hs)) == 3 and set(hs) <= zone
    assert placed[0]["sides"][1] == data["sides"][1]  # the unzoned side stays
    validate(placed[2])


def test_bundled_doctrine_experiment_is_a_real_two_factor_design():
    e = load_experiment(ROOT / "scenarios" / "doctrine_experiment.yaml")
    assert len(e.factors) == 2 and e.n_runs >= 400
    assert e.base_digest == validate(yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())).digest()
    assert np.prod([len(f.values) for f in e.factors]) == len(e.points)
