"""End to end through the console script: run (default and a file), odds, cases, validate."""
from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest
import yaml

from conftest import ROOT, small_ps_scenario, tanksim_cmd
from sim.cli.main import main


def tanksim(*args, check=False):
    return subprocess.run(tanksim_cmd() + list(args), cwd=ROOT, capture_output=True, text=True, check=check,
                          timeout=300)


def test_run_default_writes_parquet_and_plot(tmp_path):
    r = tanksim("run", "--seed", "3", "--out", str(tmp_path / "o"), "--plot", str(tmp_path / "b.png"))
    assert r.returncode == 0, r.stderr
    assert "result:  winner " in r.stdout or "result:  draw" in r.stdout
    assert "deciding shot" in r.stdout and "shots" in r.stdout
    battle = pd.read_parquet(tmp_path / "o" / "battle.parquet")
    assert battle.loc[0, "seed"] == 3 and "policies" in battle.columns
    ev = pd.read_parquet(tmp_path / "o" / "events.parquet")
    assert ev.loc[0, "kind"] == "BattleStarted" and (ev["kind"] == "ShotResolved").any()
    assert any(json.loads(x) for x in ev["rolls"])
    series = pd.read_parquet(tmp_path / "o" / "series.parquet")
    assert len(series) == battle.loc[0, "turns"] + 1  # the set-up row, then one per turn
    assert list(series["turn"]) == list(range(battle.loc[0, "turns"] + 1))
    assert series["winner"].iloc[-1] == battle.loc[0, "winner"]
    shots = pd.read_parquet(tmp_path / "o" / "shots.parquet")
    assert len(shots) == battle.loc[0, "shots"] == int((ev["kind"] == "ShotResolved").sum())
    assert shots["kill"].sum() == battle.loc[0, "kills"]
    tanks = pd.read_parquet(tmp_path / "o" / "tanks.parquet")
    assert len(tanks) == (battle.loc[0, "turns"] + 1) * (battle.loc[0, "side1_tanks"] + battle.loc[0, "side2_tanks"])
    sides = pd.read_parquet(tmp_path / "o" / "sides.parquet")
    assert list(sides["name"]) == [battle.loc[0, "side1_name"], battle.loc[0, "side2_name"]]
    assert (tmp_path / "b.png").stat().st_size > 10_000


def test_run_file_json_and_policy_override(tmp_path):
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario()))
    r = tanksim("run", str(f), "--seed", "2", "--json", "--policy", "1=hold:min_odds=0.1", "--policy", "Blue=advance")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    pol = row["policies"]
    assert row["winner_side"] in (1, 2, None) and isinstance(row["points"], list)
    assert pol == [{"name": "hold", "params": {"min_odds": "0.1"}}, {"name": "advance", "params": {}}]


def test_odds_json_and_errors():
    r = tanksim("odds", "panzer_squadron", "penetration=118", "armour=177", "modifier=0", "--json", check=True)
    assert json.loads(r.stdout)["p_kill"] == "53/200"
    bad = tanksim("odds", "panzer_squadron", "penetration=118", "armour=177", "colour=red")
    assert bad.returncode == 2 and "unknown parameter" in bad.stderr
    sc = tanksim("odds", "--scenario", "default", "--shooter", "Panther-1", "--target", "T34-1", "--json")
    assert sc.returncode in (0, 1)
    if sc.returncode == 0:
        assert json.loads(sc.stdout)["penetration"] == 168


def test_cases_command():
    r = tanksim("cases", "tests/cases/panzer_squadron.yaml")
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "30 passed, 0 failed"


def test_cases_command_reports_failures(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"ruleset": "panzer_squadron", "cases": [
        {"id": "good", "kind": "odds", "given": {"penetration": 118, "armour": 177}, "expect": {"p_hit": "1/2"}},
        {"id": "bad", "kind": "odds", "given": {"penetration": 118, "armour": 177}, "expect": {"p_hit": "1/3"}}]}))
    r = tanksim("cases", str(f))
    assert r.returncode == 1
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "1 passed, 1 failed" and "bad" in lines[0]


def test_validate_good_and_bad(tmp_path):
    ok = tanksim("validate", "scenarios/default.yaml")
    assert ok.returncode == 0 and "ok" in ok.stdout
    d = small_ps_scenario()
    d["sides"][1]["tanks"][0]["hex"] = [40, 2]
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(d))
    bad = tanksim("validate", str(f))
    assert bad.returncode == 2 and "sides[1].tanks[0].hex: [40, 2] is off the map (12 x 12)" in bad.stderr
    f.write_text("sides: [unclosed")
    assert "not valid YAML" in tanksim("validate", str(f)).stderr


def test_bad_inputs_give_one_clear_line_not_a_traceback(tmp_path):
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "bad_cases.yaml").write_text("cases: [")
    checks = [
        (["run", str(tmp_path)], "is a folder"),
        (["validate", str(tmp_path / "bin.yaml")], "not a UTF-8 text file"),
        (["odds", "--scenario", "default", "--shooter", "T34-1"], "needs both --shooter"),
        (["odds", "panzer_squadron", "--scenario", "default", "--shooter", "T34-1", "--target", "Tiger"],
         "rule set comes from the scenario"),
        (["run", "--policy", "1=advance:min_odds"], "needs a value"),
        (["run", "--seed", "-1"], "expected an integer >= 0"),
        (["cases", str(tmp_path / "bad_cases.yaml")], "not valid YAML"),
        (["run", "--battle", "x"], "--battle goes with --from"),
        (["run", "--policy", "1=hold", "--policy", "Soviets=advance"], "already has a --policy"),
    ]
    for args, msg in checks:
        r = tanksim(*args)
        out = r.stdout + r.stderr
        assert r.returncode != 0 and msg in out and "Traceback" not in out, (args, out)


def test_cases_unknown_ruleset_fails(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"ruleset": "nosuch", "cases": [
        {"id": "a", "kind": "odds", "given": {"x": 1}, "expect": {"p_hit": "1/2"}}]}))
    r = tanksim("cases", str(f))
    assert r.returncode == 1 and r.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_validate_and_cases_json(capsys, root):
    from sim.cli.main import main

    assert main(["validate", "default", "doctrine_experiment", "no_such_scenario_file", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert [(f["file"], f["ok"], f["kind"]) for f in doc["files"]] == [
        ("default", True, "scenario"), ("doctrine_experiment", True, "experiment"),
        ("no_such_scenario_file", False, "scenario")]
    assert "no such file" in doc["files"][2]["errors"][0]
    case_file = str(root / "tests" / "cases" / "panzer_squadron.yaml")
    assert main(["cases", case_file, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failed"] == 0 and doc["passed"] == len(doc["cases"]) > 0
    assert {c["status"] for c in doc["cases"]} == {"pass"}


def test_validate_passes_every_bundled_file_each_with_its_own_loader(capsys, root):
    from sim.cli.main import main

    files = sorted(str(p.relative_to(root)) for p in (root / "scenarios").glob("*.yaml"))
    assert main(["validate", *files, "--json"]) == 0, capsys.readouterr()
    doc = json.loads(capsys.readouterr().out)
    kinds = {f["file"]: f["kind"] for f in doc["files"]}
    assert doc["ok"] and len(kinds) == len(files) >= 10
    assert kinds["scenarios/ruleset_comparison.yaml"] == "comparison"
    assert kinds["scenarios/doctrine_experiment.yaml"] == "experiment"
    assert kinds["scenarios/tournament.yaml"] == "tournament"
    assert kinds["scenarios/default.yaml"] == "scenario"
    summary = {f["file"]: f["summary"] for f in doc["files"]}["scenarios/ruleset_comparison.yaml"]
    assert summary.startswith("(rule-set comparison, 10 doctrines x ") and "asl/asl_1941_meeting" in summary


def test_validation_messages_drop_pydantics_value_error_prefix(tmp_path, capsys):
    from sim.cli.main import main

    f = tmp_path / "exp.yaml"  # a validator's own error (ValueError in a model_validator)
    f.write_text(yaml.safe_dump({"name": "x", "scenario": "default", "generator": {"kind": "meeting"},
                                 "factors": [{"path": "seed", "levels": [1, 2]}]}))
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: (top level): give exactly one of scenario" in err and "Value error" not in err


def test_output_cut_short_by_its_reader_ends_quietly():
    """``tanksim catalog asl | head``: the reader is gone before the first write; every subcommand (built-in or in
    its own module) exits 0 with nothing on stderr, not ``[Errno 32] Broken pipe``."""
    for args in (["catalog", "asl"], ["catalog", "asl", "pzkpfw_iiih"], ["validate", "scenarios/default.yaml"],
                 ["odds", "panzer_squadron", "penetration=118", "armour=177", "modifier=0"]):
        p = subprocess.Popen(tanksim_cmd() + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()  # the reader goes away before the command writes
        err = p.stderr.read().decode()
        assert p.wait(timeout=300) == 0 and err == "", (args, err)


def test_odds_help_names_every_parameter_of_every_rule_set_with_its_meaning():
    """``tanksim odds --help`` lists, per rule set, each name its odds parser accepts (read from the rule sets'
    own parameter lists) on a line of its own with a meaning after it; nothing is listed without a meaning."""
    import re

    from sim.cli.odds_help import MEANINGS
    from sim.rules import base as rules_base
    from sim.rules.asl import odds as asl_odds
    from sim.rules.hummel_quest import odds as hq_odds
    from sim.rules.panzer_squadron import odds as ps_odds

    expected = {"panzer_squadron": list(ps_odds.PARAM_NAMES), "asl": list(asl_odds.PARAM_NAMES),
                "hummel_quest": ["mode", *dict.fromkeys([*hq_odds.SHOT_PARAMS, *hq_odds.RAM_PARAMS,
                                                          *hq_odds.CHECK_PARAMS])]}
    assert set(expected) <= set(rules_base.names())  # other tests may register plug-in rule sets
    r = tanksim("odds", "--help")
    assert r.returncode == 0, r.stderr
    assert "RULESET name=value" in r.stdout and "--scenario FILE" in r.stdout
    text = r.stdout.split("parameters (name=value", 1)[1]
    # the rule sets' sections, in the help's order: "NAME (spec section):" at the start of a line
    heads = [(m.group(1), m.start(), m.end()) for m in re.finditer(r"^(\w+) \([^)]*\):$", text, re.M)]
    assert [h for h, _, _ in heads] == list(expected)
    for i, (ruleset, _, end) in enumerate(heads):
        section = text[end:heads[i + 1][1] if i + 1 < len(heads) else len(text)]
        listed = re.findall(r"^ {2,4}(\w+) {2,}\S", section, re.M)
        assert sorted(set(listed)) == sorted(expected[ruleset]), ruleset
        assert "(no description)" not in section
        assert set(MEANINGS[ruleset]) == set(expected[ruleset])
        # one meaning column per rule set, across Hummel Quest's modes too
        starts = {len(m.group(1))
                  for m in re.finditer(r"^( {2,4}\w+ {2,})(\S)", section, re.M)}
        assert len(starts) == 1, (ruleset, starts)
    # a Hummel Quest parameter that is neither required nor given a default value says what leaving it out means
    optional = {n for spec in (hq_odds.SHOT_PARAMS, hq_odds.RAM_PARAMS, hq_odds.CHECK_PARAMS)
                for n, (_kind, default) in spec.items() if default is None}
    assert {"attacker_size", "attacker_dt"} <= optional
    assert all(re.search(r"\b(absent|default)\b", MEANINGS["hummel_quest"][n]) for n in optional), optional
    # the bundled odds of the README still answer with the parameter names the help gives
    r = tanksim("odds", "panzer_squadron", "penetration=118", "armour=177", "modifier=0", "--json")
    assert json.loads(r.stdout)["p_kill"] == "53/200"


def test_run_says_how_each_side_lost_its_tanks(tmp_path):
    # an ASL battle where one tank is lost other than by a shot's kill result (its crew fails the immobilization
    # task check)
    f = tmp_path / "asl.yaml"
    tanksim("generate", "random", "--ruleset", "asl", "--size", "16", "--tanks", "5", "--seed", "3", "-o", str(f),
            check=True)
    row = json.loads(tanksim("run", str(f), "--seed", "1", "--json", check=True).stdout)
    for side in (1, 2):
        assert sum(row[f"side{side}_losses"].values()) == row[f"side{side}_lost"]
    assert row["side1_losses"] == {"Immobilization TC failed": 1, "elim": 2, "burn": 2}
    assert row["kills"] == row["side1_lost"] + row["side2_lost"] - 1
    text = tanksim("run", str(f), "--seed", "1", check=True).stdout
    assert "lost 5 of 5 (Immobilization TC failed: 1, elim: 2, burn: 2)" in text
    assert "kills 4 (1 more tank lost other than by a shot's kill result: see the sides above)" in text
    # every lost tank is accounted for in a battle where all losses are shots: no extra remark
    text2 = tanksim("run", str(f), "--seed", "2", check=True).stdout
    assert "kills 5;" in text2 and "other than by a shot" not in text2


def test_the_deciding_shot_says_what_became_of_the_target():
    """A Hummel Quest shot's result is ``hit`` (its damage decides); the line adds the target's new status. Where
    the result already names the loss (PS ``destroyed``) nothing is added."""
    from sim.runner import run_battle
    from sim.scenario import load_scenario

    hq = run_battle(load_scenario("hq_ram_brawl"), seed=1, record_events=False).row["deciding_shot"]
    assert hq.endswith(": hit -> incapacitated"), hq
    ps = run_battle(load_scenario("default"), seed=1, record_events=False).row["deciding_shot"]
    assert ps.endswith(": destroyed") and "->" not in ps.split(":")[-1], ps


@pytest.mark.parametrize(("ruleset", "base", "flag"), [
    ("panzer_squadron", ["penetration=118", "armour=177", "modifier=0"], "partial_cover"),
    ("asl", ["final_tk=6", "given_hit=hull", "ammo=AP"], "target_shocked"),
    ("hummel_quest", ["mode=shot", "reality_com=2", "to_hit=1", "range_m=99", "target_size=2", "firepower=5",
                      "target_dur=4", "damage_dice=3", "damage_keep=2", "target_dt=10"], "shooter_moved_half"),
])
def test_a_yes_no_parameter_has_the_same_spellings_in_every_rule_set(capsys, ruleset, base, flag):
    """``sim.rules.base.FLAG_SPELLINGS``: each spelling gives the odds of its canonical value; anything else is
    refused with the parameter's name, exit 2."""
    from sim.rules.base import FLAG_SPELLINGS

    def odds(value: str) -> tuple[int, str]:
        rc = main(["odds", ruleset, *base, f"{flag}={value}", "--json"])
        said = capsys.readouterr()
        return rc, said.out if rc == 0 else said.err

    want = {b: odds(str(b).lower()) for b in (True, False)}
    assert want[True][0] == want[False][0] == 0
    for spelling, b in FLAG_SPELLINGS.items():
        for written in (spelling, spelling.upper(), f" {spelling} "):
            got = odds(written)
            assert got[0] == 0, (written, got)
            assert json.loads(got[1]) | {flag: None} == json.loads(want[b][1]) | {flag: None}, written
    for bad in ("maybe", "2", "tru", ""):
        rc, err = odds(bad)
        assert rc == 2 and f"{flag}=" in err and "expected true or false" in err, (bad, err)
