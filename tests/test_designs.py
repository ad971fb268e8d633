"""Designs: the nearly orthogonal Latin hypercube and the Sobol' (Saltelli) sample, alone and in experiment files."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from scipy.stats import qmc

from conftest import small_ps_scenario
from sim.experiments import samplers as designs
from sim.experiments.design import Factor, load_experiment
from sim.scenario import ScenarioError


def write(tmp_path, exp: dict):
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario()), encoding="utf-8")
    p = tmp_path / "exp.yaml"
    p.write_text(yaml.safe_dump({"scenario": "small.yaml", **exp}, sort_keys=False), encoding="utf-8")
    return p


@pytest.mark.parametrize("n, d", [(33, 5), (65, 8)])
def test_nolh_is_a_latin_hypercube_with_nearly_orthogonal_columns(n, d):
    u = designs.nolh(n, d, seed=7)
    grid = np.arange(n) / (n - 1)
    for j in range(d):  # every column plays each of the n equally spaced levels once, both ends included
        assert np.allclose(np.sort(u[:, j]), grid)
    corr = designs.max_abs_correlation(u)
    assert corr <= designs.NOLH_MAX_CORRELATION  # Cioppa & Lucas's bound
    plain = qmc.LatinHypercube(d=d, rng=np.random.default_rng(7)).random(n)
    assert corr < designs.max_abs_correlation(plain) / 3
    assert np.array_equal(designs.nolh(n, d, seed=7), u) and not np.array_equal(designs.nolh(n, d, seed=8), u)


def test_max_abs_correlation_is_numpys():
    x = np.random.default_rng(1).random((20, 3))
    c = np.corrcoef(x, rowvar=False)
    assert designs.max_abs_correlation(x) == pytest.approx(max(abs(c[0, 1]), abs(c[0, 2]), abs(c[1, 2])))
    assert designs.max_abs_correlation(x[:, :1]) == 0.0


def test_sobol_rows_follow_saltelli():
    from SALib.sample import sobol as sobol_sample

    fs = [Factor("a", "pa", (), True, 0.0, 10.0), Factor("b", "pb", ("x", "y"))]
    d = designs.build("sobol", fs, seed=5, n=8)
    assert len(d.rows) == designs.sobol_rows(8, 2) == 8 * (2 * 2 + 2)
    u = sobol_sample.sample(designs.sobol_problem(fs), 8, calc_second_order=True, scramble=True, seed=5)
    assert [r["a"] for r in d.rows] == [designs.range_value(10 * x, False) for x in u[:, 0]]
    assert [r["b"] for r in d.rows] == ["x" if x < 0.5 else "y" for x in u[:, 1]]
    assert d.info["problem"]["names"] == ["a", "b"] and d.info["second_order"]
    assert len(designs.build("sobol", fs, seed=5, n=8, second_order=False).rows) == 8 * (2 + 2)


def test_nolh_and_sobol_in_experiment_files(tmp_path):
    e = load_experiment(write(tmp_path, {"factors": [
        {"path": "sides.Red.policy.params.min_odds", "range": [0.0, 0.4]},
        {"path": "turn_limit", "range": [3, 9], "integer": True},
        {"path": "sides.Blue.policy.params.min_odds", "range": [0.0, 0.2]}],
        "design": {"kind": "nolh", "n": 17}, "seed": 2}))
    assert len(e.points) == 17 and e.design_info["kind"] == "nolh"
    odds = sorted(p.values["Red.policy.params.min_odds"] for p in e.points)
    assert odds[0] == 0.0 and odds[-1] == 0.4  # both ends of the range are played
    assert e.describe()["design_info"]["max_abs_correlation"] <= 0.05
    s = load_experiment(write(tmp_path, {"factors": [
        {"path": "sides.Red.policy.params.min_odds", "range": [0.0, 0.4]},
        {"path": "sides.Blue.policy.name", "levels": ["hold", "cover"]}],
        "design": {"kind": "sobol", "n": 4}, "seed": 2}))
    desc = s.describe()
    assert len(desc["design_rows"]) == 4 * 6 and len(s.points) <= 24
    assert max(desc["design_rows"]) == len(s.points) - 1
    rows = designs.build("sobol", s.factors, 2, 4).rows
    for row, idx in zip(rows, desc["design_rows"]):  # each Saltelli row is played by the point with its values
        assert s.points[idx].values == row
    with pytest.raises(ScenarioError, match="a sobol design needs a power of two base samples"):
        load_experiment(write(tmp_path, {"factors": [{"path": "turn_limit", "range": [3, 9]}],
                                         "design": {"kind": "sobol", "n": 6}}))
    with pytest.raises(ScenarioError, match="design.n: a nolh design needs n"):
        load_experiment(write(tmp_path, {"factors": [{"path": "turn_limit", "range": [3, 9]}], "design": "nolh"}))
    with pytest.raises(ScenarioError, match="second_order applies to a sobol design only"):
        load_experiment(write(tmp_path, {"factors": [{"path": "turn_limit", "range": [3, 9]}],
                                         "design": {"kind": "nolh", "n": 5, "second_order": True}}))


def test_adding_design_kinds_keeps_older_experiment_hashes(tmp_path):
    """``second_order`` is absent from the identity when unset, so folders of older experiments still resume."""
    e = load_experiment(write(tmp_path, {"factors": [{"path": "turn_limit", "levels": [3, 4]}]}))
    d = e.spec.model_dump(mode="json", exclude={"name", "description", "max_runs", "watchdog_s", "chunk_s",
                                                "scenario"})
    d["design"].pop("second_order")
    d["base"] = e.base_key
    from sim.experiments.design import _hash

    assert e.identity() == _hash(d, 16)
