"""compare-rulesets (sim/experiments/compare.py) and the oracle beside a batch in tanksim report: regret and tau
against exact hand calculations and scipy, the file's errors, a tiny comparison end to end."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from sim.experiments import compare
from sim.scenario import ScenarioError

TINY = {
    "name": "tiny_compare",
    "factors": [{"name": "ruleset", "path": "ruleset",
                 "levels": ["panzer_squadron", {"ruleset": "hummel_quest", "scenario": "hq_skirmish"}]},
                {"name": "doctrine", "path": "sides.0.policy.name", "levels": ["hold", "advance", "random_target"]}],
    "overrides": {"turn_limit": 2, "sides.1.policy.name": "advance"},
    "replications": 3,
    "seed": 7,
}


def test_regret_and_robust_doctrine_by_hand():
    # rows: rule sets, columns: doctrines A, B, C
    s = np.array([[0.9, 0.6, 0.8],
                  [0.2, 0.5, 0.45],
                  [0.7, 0.7, 0.65]])
    # regrets: A (0, 0.3, 0) -> 0.3; B (0.3, 0, 0) -> 0.3; C (0.1, 0.05, 0.05) -> 0.1
    assert np.allclose(compare.worst_regret(s), [0.3, 0.3, 0.1])
    assert compare.ordering(s[0], ["A", "B", "C"]) == ["A", "C", "B"]


def test_score_matrix_pools_cells_unweighted():
    # two cells of rule set 0 (3 and 1 battles), one of rule set 1; two doctrines
    win = np.array([1, 0, 0, 1, 1, 0, 1, 1.0])
    ci = np.array([0, 0, 0, 1, 0, 2, 2, 2])
    di = np.array([0, 0, 0, 0, 1, 0, 1, 1])
    m = compare.score_matrix(win, ci, di, np.array([0, 0, 1]), 3, 2, 2)
    # rule set 0, doctrine 0: cell 0 has 1/3, cell 1 has 1/1 -> (1/3 + 1) / 2; doctrine 1: cell 0 only -> 1
    assert np.allclose(m, [[(1 / 3 + 1) / 2, 1.0], [0.0, 1.0]])
    assert math.isclose(compare._tau(m[0], m[1]), stats.kendalltau(m[0], m[1]).statistic)
    assert math.isnan(compare._tau(np.array([0.5, 0.5]), m[1]))   # all equal: no ordering, no tau


def test_comparison_file_errors_name_the_field():
    bad = json.loads(json.dumps(TINY))
    bad["factors"][0]["levels"] = ["panzer_squadron", "chess"]
    with pytest.raises(ScenarioError, match=r"c.yaml: factors\[0\].levels\[1\].ruleset: expected one of asl"):
        compare.comparison_from_mapping(bad, "c.yaml")
    bad = json.loads(json.dumps(TINY))
    bad["factors"][0]["levels"] = ["panzer_squadron", {"ruleset": "asl", "scenario": "hq_skirmish"}]
    with pytest.raises(ScenarioError, match="scenario hq_skirmish plays rule set hummel_quest, not asl"):
        compare.comparison_from_mapping(bad, "c.yaml")
    with pytest.raises(ScenarioError, match="common_random_numbers: expected true"):
        compare.comparison_from_mapping({**TINY, "common_random_numbers": False}, "c.yaml")
    with pytest.raises(ScenarioError, match="exactly one factor with path 'ruleset'"):
        compare.comparison_from_mapping({**TINY, "factors": TINY["factors"][1:]}, "c.yaml")
    with pytest.raises(ScenarioError, match="doctrine: expected the name of a factor"):
        compare.comparison_from_mapping({**TINY, "doctrine": "nope"}, "c.yaml")
    with pytest.raises(ScenarioError, match="at least two rule sets"):
        compare.comparison_from_mapping({**TINY, "factors": [{**TINY["factors"][0], "levels": ["asl"]},
                                                             TINY["factors"][1]]}, "c.yaml")


def test_bundled_comparison_loads_every_doctrine_under_three_rule_sets():
    comp = compare.load_comparison("ruleset_comparison")
    assert comp.rulesets == ("panzer_squadron", "asl", "hummel_quest") and len(comp.levels) == 10
    assert all(c.experiment.spec.common_random_numbers for c in comp.cells)
    assert len({c.experiment.spec.seed for c in comp.cells}) == 1


def test_tiny_comparison_end_to_end(tmp_path, capsys):
    from sim.cli.main import main

    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    assert main(["compare-rulesets", str(path), "--out", str(out), "--workers", "1", "--no-progress", "--json",
                 "--resamples", "100"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["battles"] == 18 and doc["replications"] == 3 and doc["resample_unit"] == "replication"
    comp = compare.comparison_from_mapping(TINY, str(path))
    b = compare.battles(comp, out)
    f = b.frame
    # win rates: the pooled means of the stacked battles, from the doctrine side's view
    for r in doc["win_rates"]:
        m = (f["ruleset"] == r["ruleset"]) & (f["doctrine"] == r["doctrine"])
        assert r["battles"] == 3 and math.isclose(r["win_rate"], f.loc[m, "win"].mean())
    # the interaction cells are the double-centred table of those rates
    s = np.array([[next(r["win_rate"] for r in doc["win_rates"] if r["ruleset"] == rs and r["doctrine"] == d)
                   for d in doc["doctrines"]] for rs in doc["rulesets"]])
    dc = s - s.mean(axis=0) - s.mean(axis=1, keepdims=True) + s.mean()
    for c in doc["interaction"]:
        i, j = doc["rulesets"].index(c["ruleset"]), doc["doctrines"].index(c["doctrine"])
        assert math.isclose(c["interaction"], dc[i, j], abs_tol=1e-12)
    assert any(a["is_interaction"] for a in doc["interaction_anova"])
    # tau, regret and the robust doctrine follow from the same table
    (t,) = doc["kendall_tau"]
    want = compare._tau(s[0], s[1])
    assert (t["tau"] is None and math.isnan(want)) or math.isclose(t["tau"], want)
    assert t["resamples"] == 100
    w = compare.worst_regret(s)
    assert doc["robust"] == doc["doctrines"][int(np.argmin(w))]
    assert math.isclose(sum(r["p_robust"] for r in doc["regret"]), 1.0)
    # the same folder again: nothing played, the same answer (fixed bootstrap seed)
    assert main(["compare-rulesets", str(path), "--out", str(out), "--report-only", "--resamples", "100"]) == 0
    text = capsys.readouterr().out
    robust = doc["robust"] if len(doc["robust_tied"]) == 1 else "tie between " + ", ".join(doc["robust_tied"])
    assert "Kendall tau" in text and f"robust doctrine (smallest worst-case regret): {robust}" in text
    assert doc["robust"] in doc["robust_tied"] and "None" not in text
    for rs, d in doc["best"].items():
        assert doc["best_tied"][rs][0] == d
    again = compare.jsonable(compare.analyse(comp, out, resamples=100))
    assert again["kendall_tau"] == doc["kendall_tau"] and again["regret"] == doc["regret"]


def test_report_puts_the_oracle_beside_the_batch(tmp_path, capsys):
    """A batch on the Panzer Squadron square-law scenario: tanksim report --json carries the exact chain beside
    each design point's simulated figures with their intervals."""
    from sim.experiments.batch import run_experiment
    from sim.experiments.report import analyse, main

    exp = {"name": "square_law_batch", "scenario": "ps_square_law",
           "factors": [{"name": "order", "path": "sides.0.activation_order", "levels": ["policy", "random"]}],
           "replications": 30, "seed": 11, "common_random_numbers": True}
    out = tmp_path / "sq"
    run_experiment(exp, out, workers=1)
    rep = analyse(out)
    assert rep.oracle is not None and len(rep.oracle["points"]) == 2
    for p in rep.oracle["points"]:
        assert p["battles"] == 30 and p["p_kill"] == {"Blue": "17/40", "Red": "17/40"}
        rows = {r["quantity"]: r for r in p["comparison"]}
        assert rows["P(Blue wins)"]["oracle"] == pytest.approx(0.7702, abs=1e-3)
        assert all(r["lo"] - 1e-9 <= r["simulated"] <= r["hi"] + 1e-9 and r["inside"] is not None
                   for r in p["comparison"] if r["n"] >= 2)
    assert main([str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["oracle"]["points"][0]["comparison"][0]["quantity"] == "P(Blue wins)"
    assert main([str(out)]) == 0
    assert "exact theory (absorbing Markov chain" in capsys.readouterr().out


def _doc_with_a_tie():
    """A hand-made answer: under panzer_squadron two doctrines both win every battle, under asl every doctrine
    wins half (no variation: no tau, no interval, no P(tau > 0)); the regrets tie too."""
    rates = {("panzer_squadron", "hold"): 1.0, ("panzer_squadron", "advance"): 1.0,
             ("panzer_squadron", "random_target"): 0.5,
             ("asl", "hold"): 0.5, ("asl", "advance"): 0.5, ("asl", "random_target"): 0.5}
    return {"name": "t", "doctrines": ["hold", "advance", "random_target"], "doctrine_factor": "doctrine",
            "rulesets": ["panzer_squadron", "asl"], "battles": 60, "replications": 10, "outcome": "win",
            "win_rates": [{"ruleset": rs, "doctrine": d, "win_rate": v, "lo": v / 2, "hi": v}
                          for (rs, d), v in rates.items()],
            "best": {"panzer_squadron": "hold", "asl": "hold"},
            "best_tied": {"panzer_squadron": ["hold", "advance"], "asl": ["hold", "advance", "random_target"]},
            "interaction": [], "interaction_anova": [{"is_interaction": True, "share": math.nan, "lo": math.nan,
                                                      "hi": math.nan, "p_value": math.nan}],
            "kendall_tau": [{"ruleset_a": "panzer_squadron", "ruleset_b": "asl", "tau": math.nan, "lo": math.nan,
                             "hi": math.nan, "p_positive": None, "p_value": None, "undefined": 100,
                             "resamples": 100}],
            "regret": [{"doctrine": d, "worst_case": w, "lo": w, "hi": w, "p_robust": p}
                       for d, w, p in (("hold", 0.0, 0.5), ("advance", 0.0, 0.5), ("random_target", 0.5, 0.0))],
            "robust": "hold", "robust_tied": ["hold", "advance"]}


@pytest.mark.parametrize("as_json", [False, True])
def test_summary_says_undefined_and_tie_in_words(as_json):
    doc = _doc_with_a_tie()
    text = "\n".join(compare.summary_lines(compare.jsonable(doc) if as_json else doc))
    assert "None" not in text and "nan" not in text.lower()
    assert "tau undefined: no variation (every doctrine wins 50.0% under asl)" in text
    assert "interval and P(tau > 0) undefined: no variation in any resample" in text
    assert "F test undefined: no variation" in text
    assert "panzer_squadron: tie between hold, advance (100.0% each)" in text
    assert "asl: tie between hold, advance, random_target (50.0% each)" in text
    assert "robust doctrine (smallest worst-case regret): tie between hold, advance (0.0 points each)" in text


def test_ties_are_found_in_file_order():
    assert compare.tied(np.array([1.0, 0.5, 1.0]), ["a", "b", "c"], max) == ["a", "c"]
    assert compare.tied(np.array([0.2, np.nan, 0.1]), ["a", "b", "c"], min) == ["c"]
    assert compare.tied(np.array([np.nan]), ["a"], max) == []


def test_bundled_comparison_header_names_the_tanks_its_scenarios_field():
    """The comment at the top of scenarios/ruleset_comparison.yaml describes each cell's battle: every vehicle
    (by its catalog name) of a Panzer Squadron or ASL cell is named there, and no other catalog vehicle is."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    text = (root / "scenarios" / "ruleset_comparison.yaml").read_text(encoding="utf-8")
    header = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    catalogs = {"panzer_squadron": "panzer_squadron_vehicles.yaml", "asl": "asl_ordnance.yaml"}
    comp = compare.load_comparison("ruleset_comparison")
    for rs, data in catalogs.items():
        doc = yaml.safe_load((root / "sim" / "rules" / "data" / data).read_text(encoding="utf-8"))
        rows = [r for v in doc.values() if isinstance(v, list) for r in v]
        names = {r["id"]: str(r["name"]) for r in rows if isinstance(r, dict) and "id" in r and "name" in r}
        fielded = set()
        for cell in (c for c in comp.cells if c.ruleset == rs):
            sc = yaml.safe_load((root / "scenarios" / f"{cell.scenario}.yaml").read_text(encoding="utf-8"))
            fielded |= {names[t["vehicle"]] for side in sc["sides"] for t in side["tanks"]}
        assert fielded and all(n in header for n in fielded), (rs, fielded)
        others = {n for n in names.values() if n in header and not any(n in f for f in fielded)}
        assert not others, (rs, others)


def test_a_robust_tie_reached_by_different_sums_is_a_tie(tmp_path, capsys, monkeypatch):
    """Worst-case regrets 1/3 - 0 (advance, under panzer_squadron) and 1 - 2/3 (random_target, under
    hummel_quest) are both 1/3, though as floats 0.3333333333333333 and 0.33333333333333337: the robust doctrine
    is a tie of the two (ranks and ties are decided on exact fractions of the counts), in the JSON and the text."""
    from sim.cli.main import main

    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    assert main(["compare-rulesets", str(path), "--out", str(out), "--workers", "1", "--no-progress",
                 "--resamples", "20"]) == 0
    capsys.readouterr()
    real = compare.battles
    wins = {("panzer_squadron", "hold"): 0, ("panzer_squadron", "advance"): 0,
            ("panzer_squadron", "random_target"): 1, ("hummel_quest", "hold"): 0, ("hummel_quest", "advance"): 3,
            ("hummel_quest", "random_target"): 2}   # wins out of the cell's 3 replications

    def fixed(comp, where):
        b = real(comp, where)
        f = b.frame
        order = f.groupby(["ruleset", "doctrine"])["rep"].rank(method="first")
        f["win"] = [float(k <= wins[(r, d)]) for r, d, k in zip(f["ruleset"], f["doctrine"], order, strict=True)]
        return b

    monkeypatch.setattr(compare, "battles", fixed)
    assert main(["compare-rulesets", str(path), "--out", str(out), "--report-only", "--json",
                 "--resamples", "20"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["robust_tied"] == ["advance", "random_target"] and doc["robust"] == "advance"
    assert main(["compare-rulesets", str(path), "--out", str(out), "--report-only", "--resamples", "20"]) == 0
    assert ("robust doctrine (smallest worst-case regret): tie between advance, random_target (33.3 points each)"
            in capsys.readouterr().out)
