"""``tanksim report``: per-point win rates with Wilson intervals (checked against scipy), main effects, files."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml
from scipy.stats import binomtest

from conftest import small_ps_scenario
from sim.experiments import report
from sim.experiments.batch import run_experiment


def fake(rows: list[tuple]) -> tuple[pd.DataFrame, dict]:
    """Runs of a 2-level factor ``a`` from ``(a, status, winner_index, turns, lost1, lost2)`` tuples."""
    keys = {"x": "p0", "y": "p1"}
    runs = pd.DataFrame([{"point_key": keys[a], "a": a, "status": s, "winner_index": w, "turns": t,
                          "side1_lost": l1, "side2_lost": l2, "side1_name": "Red", "side2_name": "Blue"}
                         for a, s, w, t, l1, l2 in rows])
    manifest = {"design": {"experiment": {"name": "fake"}, "side_names": ["Red", "Blue"],
                           "factors": [{"name": "a", "values": ["x", "y"], "is_range": False}],
                           "points": [{"index": 0, "key": "p0", "values": {"a": "x"}},
                                      {"index": 1, "key": "p1", "values": {"a": "y"}}]}}
    return runs, manifest


def test_point_table_and_main_effects_on_known_counts():
    rows = ([("x", "ok", 0, 5, 1, 3)] * 7 + [("x", "ok", 1, 9, 4, 1)] * 2 + [("x", "ok", -1, 12, 2, 2)]
            + [("x", "failed", None, None, None, None)]
            + [("y", "ok", 1, 6, 3, 0)] * 4)
    runs, manifest = fake(rows)
    pts = report.point_table(runs, manifest)
    x, y = pts.iloc[0], pts.iloc[1]
    assert (x["battles"], x["failed"], x["Red_wins"], x["Blue_wins"], x["draws"]) == (10, 1, 7, 2, 1)
    lo, hi = binomtest(7, 10).proportion_ci(confidence_level=0.95, method="wilson")
    assert x["Red_win_lo"] == pytest.approx(lo, abs=1e-12) and x["Red_win_hi"] == pytest.approx(hi, abs=1e-12)
    assert x["Red_win_rate"] == 0.7 and x["draw_rate"] == 0.1
    assert x["turns_mean"] == pytest.approx((7 * 5 + 2 * 9 + 12) / 10) and x["turns_median"] == 5
    assert x["loss_exchange"] == pytest.approx((7 * 3 + 2 + 2) / (7 + 8 + 2))
    assert y["Red_win_rate"] == 0 and y["Red_win_hi"] == pytest.approx(
        binomtest(0, 4).proportion_ci(method="wilson").high)
    eff = report.main_effects(runs, manifest)
    assert list(eff["level"]) == ["(all)", "x", "y"]
    assert eff.iloc[0]["battles"] == 14 and eff.iloc[0]["Red_win_rate"] == pytest.approx(7 / 14)
    assert eff.iloc[1]["Red_effect"] == pytest.approx(0.7 - 0.5) and eff.iloc[2]["Red_effect"] == pytest.approx(-0.5)
    assert all(math.isnan(v) for v in report.wilson(0, 0))


def test_report_on_a_finished_batch_matches_scipy(tmp_path, capsys):
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=4)), encoding="utf-8")
    exp = {"name": "report_check", "scenario": "small.yaml", "seed": 4, "replications": 8,
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["advance", "hold"]},
                       {"name": "blue_odds", "path": "sides.Blue.policy.params.min_odds", "levels": [0.0, 0.3]}]}
    out = tmp_path / "out"
    res = run_experiment(exp, out, workers=2, base_dir=tmp_path)
    assert len(res.runs) == 32
    png = tmp_path / "effects.png"
    assert report.main([str(out), "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert "per design point:" in text and "main effects" in text and "Red win % [95% CI]" in text
    pts = pd.read_csv(out / "report" / "points.csv")
    assert pd.read_parquet(out / "report" / "points.parquet").shape == pts.shape
    assert len(pts) == 4 and pts["battles"].sum() == 32
    for _, p in pts.iterrows():
        g = res.runs[res.runs["point_key"] == p["point_key"]]
        for si, side in enumerate(["Red", "Blue"]):
            k = int((g["winner_index"] == si).sum())
            ci = binomtest(k, len(g)).proportion_ci(confidence_level=0.95, method="wilson")
            assert p[f"{side}_wins"] == k
            assert p[f"{side}_win_lo"] == pytest.approx(ci.low, abs=1e-9)
            assert p[f"{side}_win_hi"] == pytest.approx(ci.high, abs=1e-9)
    eff = pd.read_csv(out / "report" / "effects.csv")
    assert list(eff["factor"]) == ["(all)", "red", "red", "blue_odds", "blue_odds"]
    assert eff.loc[eff["factor"] == "red", "battles"].tolist() == [16, 16]
    assert png.stat().st_size > 5_000 and (tmp_path / "effects-points.png").stat().st_size > 5_000
    assert report.main([str(out), "--side", "Purple"]) == 2
    assert report.main([str(tmp_path / "nothing")]) == 2


def test_mixed_type_levels_report_and_save(tmp_path):
    runs = pd.DataFrame([{"point_key": k, "a": a, "status": "ok", "winner_index": w, "turns": 3, "side1_lost": 1,
                          "side2_lost": 0, "side1_name": "Red", "side2_name": "Blue"}
                         for k, a, w in (("p0", "0.5", 0), ("p1", "abc", 1))])
    manifest = {"design": {"experiment": {"name": "mixed"}, "side_names": ["Red", "Blue"],
                           "factors": [{"name": "a", "values": [0.5, "abc"], "is_range": False}],
                           "points": [{"index": 0, "key": "p0", "values": {"a": 0.5}},
                                      {"index": 1, "key": "p1", "values": {"a": "abc"}}]},
                "factor_types": {"a": "string"}}
    pts = report.point_table(runs, manifest)
    assert list(pts["a"]) == ["0.5", "abc"]
    pts.to_parquet(tmp_path / "p.parquet")
    eff = report.main_effects(runs, manifest)
    assert list(eff["level"][1:]) == ["0.5", "abc"] and list(eff["battles"][1:]) == [1, 1]
    eff.to_parquet(tmp_path / "e.parquet")
    del manifest["factor_types"]  # older folders: judged from the levels
    assert list(report.point_table(runs, manifest)["a"]) == ["0.5", "abc"]


def test_report_rejects_unknown_plot_format():
    assert report.plot_format_problem("g.xyz").startswith("unsupported image format 'xyz'")
    assert report.plot_format_problem("g.png") is None and report.plot_format_problem("g") is None


def test_report_json_and_power_on_a_real_nolh_batch_with_common_random_numbers(tmp_path, capsys):
    """A nearly orthogonal Latin hypercube over a continuous and a categorical factor, real battles: the JSON has
    every section, the continuous factor is a fitted curve (never bins), and ``tanksim power`` reads the folder."""
    import json

    from sim.cli.main import main as cli_main

    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    exp = {"name": "nolh_check", "scenario": "small.yaml", "seed": 5, "replications": 2,
           "common_random_numbers": True, "design": {"kind": "nolh", "n": 9},
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["advance", "hold"]},
                       {"name": "blue_odds", "path": "sides.Blue.policy.params.min_odds", "range": [0.0, 0.4]}]}
    out = tmp_path / "out"
    run_experiment(exp, out, workers=1, base_dir=tmp_path)
    png = tmp_path / "r.png"
    assert report.main([str(out), "--json", "--plot", str(png)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["design"] == "nolh" and doc["common_random_numbers"] and doc["battles"] == 18
    assert [f["kind"] for f in doc["factors"]] == ["categorical", "continuous"]
    assert doc["factors"][0]["side"] == "Red" and doc["bootstrap"]["unit"] == "replication"
    assert {r["factor"] for r in doc["effects"]} == {"(all)", "red"}  # the range is not binned
    assert {r["factor"] for r in doc["curves"]} == {"blue_odds"} and all(
        r["lo"] <= r["fit"] <= r["hi"] for r in doc["curves"])
    assert all(r["paired"] and r["n_pairs"] == 2 and r["diff"] is not None for r in doc["differences"])
    assert {r["term"] for r in doc["importance"]} >= {"red", "blue_odds", "residual"}
    assert sum(r["p_best"] for r in doc["best"]) == pytest.approx(1.0)
    assert doc["answer"]["text"] and doc["answer"]["best"][0]["factor"] == "red"
    assert json.loads((out / "report" / "report.json").read_text()) == doc
    assert (tmp_path / "r-curves.png").stat().st_size > 5_000 and (tmp_path / "r-distributions.png").is_file()
    assert cli_main(["power", str(out), "--delta", "0.2", "--json"]) == 0
    pw = json.loads(capsys.readouterr().out)
    assert pw["delta"] == 0.2 and pw["factors"][0]["factor"] == "red" and pw["factors"][0]["recommended"] >= 2
    assert cli_main(["power", str(out), "--delta", "0"]) == 2
    assert report.main([str(out), "--delta", "2"]) == 2


def test_a_real_sobol_batch_reports_sobol_indices(tmp_path):
    """SALib's Saltelli sample through a real batch: the manifest maps every SALib row to a design point and the
    report's importance comes from ``SALib.analyze.sobol`` (first-order, total, second-order)."""
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    exp = {"name": "sobol_check", "scenario": "small.yaml", "seed": 2, "replications": 1,
           "design": {"kind": "sobol", "n": 2},
           "factors": [{"name": "red_odds", "path": "sides.Red.policy.params.min_odds", "range": [0.0, 0.4]},
                       {"name": "blue_odds", "path": "sides.Blue.policy.params.min_odds", "range": [0.0, 0.4]}]}
    out = tmp_path / "out"
    res = run_experiment(exp, out, workers=1, base_dir=tmp_path)
    rep = report.analyse(out)
    man = rep.manifest["design"]
    assert len(man["design_rows"]) == 2 * (2 * 2 + 2) and len(res.runs) == len(man["points"])
    imp = rep.importance
    assert set(imp["method"]) <= {"Sobol (SALib)"} and len(imp)
    assert set(imp["term"]) >= {"red_odds", "blue_odds", "red_odds x blue_odds"}
    assert {"total", "total_lo", "total_hi"} <= set(imp.columns)


def test_power_on_a_pilot_whose_paired_differences_do_not_vary_prints_a_line_and_exits_0(tmp_path, capsys):
    """A factor that does not change play (the scenario's ``name``) under common random numbers: every paired
    difference is 0, so the paired count is undefined; ``tanksim power`` says so on the factor's line (no
    traceback) and exits 0, as do ``tanksim report`` and the batch; without common random numbers too."""
    from sim.cli.main import main as cli_main

    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    for crn in (True, False):
        exp = {"name": f"flat_{crn}", "scenario": "small.yaml", "seed": 6, "replications": 3,
               "common_random_numbers": crn,
               "factors": [{"name": "label", "path": "name", "levels": ["east", "west"]}]}
        (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
        out = tmp_path / f"out_{crn}"
        assert cli_main(["batch", str(tmp_path / "exp.yaml"), "--out", str(out), "--workers", "1",
                         "--no-progress"]) == 0
        capsys.readouterr()
        assert cli_main(["power", str(out), "--delta", "0.3", "--power", "0.8"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2 and lines[1].startswith("  label (")
        assert "nan" not in lines[1].lower() and "inf" not in lines[1]
        if crn:
            assert "paired (common random numbers): - (no variance among the pilot's per-replication paired " \
                   "differences" in lines[1]
        unpaired = int(lines[1].split("= ")[1].split(" replications")[0])
        assert lines[1].endswith(f"-> recommended {unpaired}")
        assert cli_main(["power", str(out), "--delta", "0.3", "--json"]) == 0
        capsys.readouterr()
        assert cli_main(["report", str(out)]) == 0
        text = capsys.readouterr().out
        assert "needed (paired)" in text
        why = ("no variance among the pilot's per-replication paired differences" if crn
               else "the design has no common random numbers, and pairing needs them")
        assert f"  needed (paired) '-': label: {why}" in text  # the table's '-' says why


def test_duration_intervals_stay_within_one_and_the_turn_limit(tmp_path):
    """A real batch with a turn limit of 3: the runs store each battle's limit, and every interval of the
    duration (level values, effects, differences between levels, paired and unpaired) lies inside what a battle
    can last, 1..3 turns (differences within +-2); a folder without the column (written before it) still reads,
    with the upper end unknown."""
    from sim.experiments import analysis

    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    exp = {"name": "limit_check", "scenario": "small.yaml", "seed": 7, "replications": 3,
           "common_random_numbers": True,
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["advance", "hold", "flank"]}]}
    out = tmp_path / "out"
    res = run_experiment(exp, out, workers=1, base_dir=tmp_path)
    assert res.runs["battle_turn_limit"].tolist() == [3] * 9
    doc = report.analyse(out).to_json()
    dur = [r for r in doc["effects"] if r["outcome"] == "duration"]
    assert len(dur) == 4
    for r in dur:
        assert 1 <= r["lo"] <= r["value"] <= r["hi"] <= 3
        assert -2 <= r["effect_lo"] <= r["effect_hi"] <= 2
    diffs = [r for r in doc["differences"] if r["outcome"] == "duration"]
    assert len(diffs) == 3
    for r in diffs:
        assert all(-2 <= r[k] <= 2 for k in ("lo", "hi", "unpaired_lo", "unpaired_hi") if r[k] is not None)
    old = res.runs.drop(columns=["battle_turn_limit"])
    b = analysis.outcomes(old, json.loads((out / "manifest.json").read_text()))
    assert analysis.outcome_bounds(b.frame, "duration") == (1.0, math.inf)
    assert analysis.outcome_bounds(analysis.outcomes(res.runs, b.manifest).frame, "duration") == (1.0, 3.0)


def test_power_without_a_factor_of_two_levels_is_refused_with_exit_2(tmp_path, capsys):
    """A pilot whose only factor has one level gives no power table: a clear message and exit 2 (was a first
    line with "nan replications per point" and exit 0)."""
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=2)), encoding="utf-8")
    exp = {"name": "one_level", "scenario": "small.yaml", "seed": 8, "replications": 2,
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["hold"]}]}
    out = tmp_path / "out"
    run_experiment(exp, out, workers=1, base_dir=tmp_path)
    capsys.readouterr()
    assert report.power_main([str(out), "--delta", "0.3"]) == 2
    io = capsys.readouterr()
    assert io.out == "" and io.err == f"tanksim power: {out}: needs a factor with at least two levels among its " \
                                     "finished battles\n"


def test_a_value_that_rounds_to_zero_prints_without_a_minus():
    assert (report._pc(-0.0001, signed=True), report._pc(-0.0001), report._pc(-0.002, signed=True)) == (
        "+0.0", "0.0", "-0.2")
    assert report._ci(-0.0004, -0.00001, 0.3, True, True) == "+0.0 [+0.0, +30.0]"
    assert report._ci(-0.001, -0.5, -0.0001, False) == "0.00 [-0.50, 0.00]"


def test_the_replication_block_is_not_named_among_what_matters(tmp_path, capsys):
    """With common random numbers the importance table has a ``seed`` term (the replication block): the answer's
    "what matters" ranks the factors only and names the block apart, as the shared dice."""
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    exp = {"name": "crn_check", "scenario": "small.yaml", "seed": 5, "replications": 4,
           "common_random_numbers": True,
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["advance", "hold"]}]}
    out = tmp_path / "out"
    run_experiment(exp, out, workers=1, base_dir=tmp_path)
    assert report.main([str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "seed" in {r["term"] for r in doc["importance"]}  # the table still has the block
    assert [r["term"] for r in doc["answer"]["importance"]] == ["red"]
    line = next(t for t in doc["answer"]["text"] if t.startswith("what matters for"))
    assert ": red " in line and "seed " not in line.split(";")[0]
    assert "; the replications' shared dice (seed, common random numbers: not a factor) " in line


def test_report_and_power_refuse_a_folder_with_nothing_stored(tmp_path, monkeypatch):
    """A batch stopped before its first battle leaves a folder with a manifest and no battle: ``tanksim report``
    printed tables of nan and exited 0 while ``power`` refused it: both refuse it, exit 2, with one line saying
    nothing is stored and how to fill it."""
    import subprocess

    from conftest import tanksim_cmd
    from sim.cli import experiments as batch_cli
    from sim.experiments import batch

    exp = {"name": "small", "scenario": "default", "replications": 2, "seed": 3, "overrides": {"turn_limit": 2},
           "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["hold"]}]}
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    out = tmp_path / "out"

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "open_executor", stop)
    assert batch_cli.main([str(tmp_path / "f.yaml"), "--out", str(out), "--no-progress"]) == 130
    assert (out / "manifest.json").exists()
    for command in (["report"], ["report", "--json"], ["power"]):
        r = subprocess.run(tanksim_cmd() + [*command, str(out)], capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stdout) == (2, ""), (command, r.stdout[-500:])
        assert r.stderr.splitlines() == [f"tanksim {command[0]}: {out}: no battle stored yet; play them with tanksim "
                                         f"batch EXPERIMENT.yaml --out {out}, then run tanksim {command[0]} {out} "
                                         f"again"], r.stderr
