"""A newcomer's pass through the README: a refused file prints nothing but its error (no start-up header first), a
validator's message says its value once, an unknown policy name gets "did you mean" and one wording everywhere,
every error names the option typed (``--policy``, ``--sprt``), and ``odds``' label column fits its labels."""
from __future__ import annotations

import re

import pytest
import yaml

from conftest import ROOT, small_ps_scenario
from sim.cli.main import main as tanksim

BUILTIN_WORDING = "; built-in: advance, cover, flank, focus_fire, greedy, hold"


def _tournament_file(tmp_path, **over) -> str:
    spec = {"name": "twins", "games_per_pairing": 2,
            "entrants": [{"name": "a", "policy": "advance"}, {"name": "b", "policy": "hold"}],
            "scenarios": [{"file": str(ROOT / "scenarios" / "default.yaml"), "label": "v"}]}
    spec.update(over)
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(spec))
    return str(f)


def test_a_refused_tournament_file_prints_only_its_error_and_makes_no_folder(tmp_path, capsys):
    f = _tournament_file(tmp_path, entrants=[{"name": "a", "policy": "advnce"}, {"name": "b", "policy": "hold"}])
    out = tmp_path / "out"
    assert tanksim(["tournament", f, "--out", str(out), "--no-progress"]) == 2
    said = capsys.readouterr()
    assert said.out == ""                      # no "tournament twins (round robin): ..." header, no entrant list
    assert said.err.strip() == (f"{f}: entrants[0].policy: unknown policy 'advnce' (did you mean 'advance'?)"
                                f"{BUILTIN_WORDING}, learned, lookahead, objective, random, random_target, rush, or "
                                f"give package.module:ClassName")
    assert not out.exists()


def test_a_folder_refusal_also_comes_before_the_header(tmp_path, capsys):
    """A folder holding a batch's results is refused before anything is printed."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text("{}")   # a batch's manifest
    rc = tanksim(["tournament", _tournament_file(tmp_path), "--out", str(out), "--no-progress"])
    said = capsys.readouterr()
    assert rc == 2, said.err
    assert "tournament twins" not in said.out and said.out == ""
    assert said.err.strip() == (f"tanksim tournament: {out}: holds other results (manifest.json: a batch's); "
                                "choose another --out folder")  # the folder's refusal starts as batch's does


def test_a_validator_message_says_its_value_once(tmp_path):
    from sim.messages import says_value, validation_lines
    from sim.tournaments.tournament import TournamentError, load_tournament

    with pytest.raises(TournamentError) as e:
        load_tournament(_tournament_file(tmp_path, games_per_pairing=3))
    (line,) = [x for x in e.value.errors if "games_per_pairing" in x]
    assert line.endswith(": games_per_pairing: must be even (each seed is played from both sides: 2 games), got 3")
    # the kind: any validator that quotes its value (after "got", first, or a quoted text) gets no "(got ...)"
    from pydantic import BaseModel, ValidationError, field_validator

    class M(BaseModel):
        n: int = 0
        k: int = 0
        s: str = ""
        b: int = 0

        @field_validator("n")
        @classmethod
        def _n(cls, v: int) -> int:
            raise ValueError(f"at least 2, got {v}")

        @field_validator("k")
        @classmethod
        def _k(cls, v: int) -> int:
            raise ValueError(f"{v} is not on the scale")

        @field_validator("s")
        @classmethod
        def _s(cls, v: str) -> str:
            raise ValueError(f"unknown name {v!r}")

        @field_validator("b")
        @classmethod
        def _b(cls, v: int) -> int:
            raise ValueError("must be at most 2")     # says a bound, not the value: the value is added

    with pytest.raises(ValidationError) as ve:
        M(n=20, k=7, s="abc", b=2)
    assert validation_lines("m.yaml", ve.value) == [
        "m.yaml: n: at least 2, got 20", "m.yaml: k: 7 is not on the scale", "m.yaml: s: unknown name 'abc'",
        "m.yaml: b: must be at most 2 (got 2)"]
    assert not says_value("at least 2, got 20", 2) and says_value("got 2.", 2) and not says_value("got 2.5", 2)


def test_unknown_policy_one_wording_with_did_you_mean_everywhere(tmp_path, capsys):
    from sim.experiments.design import load_experiment
    from sim.scenario import ScenarioError, validate

    sc = small_ps_scenario()
    sc["sides"][1]["policy"] = "advnce"
    with pytest.raises(ScenarioError) as e:
        validate(sc, "s.yaml")
    assert "s.yaml: sides[1].policy: unknown policy 'advnce' (did you mean 'advance'?)" + BUILTIN_WORDING in str(
        e.value)

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "scenario": str(ROOT / "scenarios" / "default.yaml"),
                                   "factors": [{"path": "sides.0.policy.name", "levels": ["hold", "advnce"]}]}))
    with pytest.raises(ScenarioError) as e:
        load_experiment(exp)
    assert (f"{exp}: factors[0].levels[1]: unknown policy 'advnce' (did you mean 'advance'?)" + BUILTIN_WORDING
            in str(e.value))
    assert "expected one of" not in str(e.value)

    assert tanksim(["run", "--policy", "2=advnce"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("tanksim run: --policy '2=advnce': unknown policy 'advnce' (did you mean 'advance'?)"
                               + BUILTIN_WORDING)
    assert tanksim(["run", "--policy", "2=advance:speeed=2"]) == 2
    assert capsys.readouterr().err.startswith("tanksim run: --policy '2=advance:speeed=2': policy 'advance': bad "
                                              "parameters")


@pytest.mark.parametrize("sprt, said", [
    ("alpha=5", "--sprt 'alpha=5': alpha must be in (0, 0.5), got 5.0"),
    ("elo0=30", "--sprt 'elo0=30': elo0 (30.0) must be below elo1 (20.0)"),
    ("model=probit", "--sprt 'model=probit': model must be one of logistic, normalized, got 'probit'"),
    ("elo=20", "--sprt 'elo=20': 'elo=20' is not one of elo0=, elo1=, alpha=, beta=, model= (did you mean elo1=?)"),
])
def test_match_sprt_errors_name_the_option_typed(sprt, said, capsys):
    assert tanksim(["match", "hold", "advance", "--scenario", "default", "--sprt", sprt]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip() == f"tanksim match: {said}"


@pytest.mark.parametrize("args", [
    ["hummel_quest", "mode=ram", "pool=3", "tn_to_be_struck=5", "damage_from_strike=2", "target_dur=3",
     "target_dt=4", "target_size=2"],
    ["hummel_quest", "mode=check", "pool=3", "tn=6"],
    ["panzer_squadron", "penetration=118", "armour=177", "modifier=0"],
])
def test_odds_label_column_fits_its_longest_label(args, capsys):
    assert tanksim(["odds", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 3
    # every label right-aligned to one column: the ": " after each label at the same place, no label wider
    assert len({len(re.match(r"^( *\S+): ", line).group(1)) for line in lines}) == 1, lines
    assert min(len(line) - len(line.lstrip()) for line in lines) == 0    # the column is no wider than needed


def test_a_refused_batch_folder_prints_only_its_error(tmp_path, capsys):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "scenario": str(ROOT / "scenarios" / "default.yaml"),
                                   "factors": [{"path": "turn_limit", "levels": [2]}]}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "tournament.json").write_text("{}")   # a tournament's folder
    assert tanksim(["batch", str(exp), "--out", str(out), "--no-progress"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.strip() == (f"tanksim batch: {out}: holds other results (tournament.json: a tournament's); "
                                f"choose another --out folder")    # no "e: 1 design point x ..." header before it


@pytest.mark.parametrize("marker", ["manifest.json", "tournament.json", "comparison.json"])
def test_run_out_refuses_another_commands_results_folder(tmp_path, capsys, marker):
    """``run --out`` into a batch's, tournament's or comparison's folder would replace its part checksums
    (``parts.jsonl``): refused while the arguments are parsed, nothing written."""
    out = tmp_path / "res"
    out.mkdir()
    (out / marker).write_text("{}")
    (out / "parts.jsonl").write_text("theirs\n")
    with pytest.raises(SystemExit) as exc:
        tanksim(["run", "default", "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --out: {out}: holds " in err and f"results ({marker}); a battle's files written there" in err
    assert (out / "parts.jsonl").read_text() == "theirs\n" and not (out / "battle.parquet").exists()


def test_run_out_says_it_replaces_an_earlier_battle_and_batch_tournament_refuse_its_folder(tmp_path, capsys):
    out = tmp_path / "one"
    assert tanksim(["run", "default", "--out", str(out)]) == 0
    assert "(replacing" not in capsys.readouterr().out
    assert tanksim(["run", "default", "--seed", "2", "--out", str(out)]) == 0
    assert "(replacing the earlier battle's files there)" in capsys.readouterr().out
    exp = tmp_path / "e.yaml"
    exp.write_text("name: e\nscenario: default\nreplications: 1\n")
    assert tanksim(["batch", str(exp), "--out", str(out), "--no-progress"]) == 2
    assert (f"tanksim batch: {out}: holds other results (battle.parquet: a tanksim run battle's); choose another "
            "--out folder") in capsys.readouterr().err
    assert tanksim(["tournament", _tournament_file(tmp_path), "--out", str(out), "--no-progress"]) == 2
    assert (f"tanksim tournament: {out}: holds other results (battle.parquet: a tanksim run battle's)"
            in capsys.readouterr().err)
    assert not (out / "manifest.json").exists() and not (out / "tournament.json").exists()


def test_batch_and_compare_rulesets_refuse_each_others_folders(tmp_path, capsys):
    exp = tmp_path / "e.yaml"
    exp.write_text("name: e\nscenario: default\nreplications: 1\n")
    comp = tmp_path / "comparison_folder"
    comp.mkdir()
    (comp / "comparison.json").write_text("{}")
    assert tanksim(["batch", str(exp), "--out", str(comp), "--no-progress"]) == 2
    assert (f"tanksim batch: {comp}: holds other results (comparison.json: a rule-set comparison's)"
            in capsys.readouterr().err)
    assert not (comp / "manifest.json").exists()
    res = tmp_path / "batch_folder"
    assert tanksim(["batch", str(exp), "--out", str(res), "--no-progress"]) == 0
    capsys.readouterr()
    assert tanksim(["compare-rulesets", str(ROOT / "scenarios" / "ruleset_comparison.yaml"), "--out", str(res)]) == 2
    assert f"{res}: holds other results (manifest.json: a batch's); choose another --out folder" in \
        capsys.readouterr().err
    assert not (res / "comparison.json").exists() and not (res / "cells").exists()


def test_an_interrupted_comparisons_folder_is_marked_and_refused_by_batch(tmp_path, capsys, monkeypatch):
    """``comparison.json`` is written before the first cell plays, so a comparison stopped in its first cell still
    marks its folder, and ``batch`` refuses it."""
    from sim.experiments import batch, compare

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "execute", stopped)
    comp = compare.load_comparison(str(ROOT / "scenarios" / "ruleset_comparison.yaml"))
    out = tmp_path / "cmp"
    with pytest.raises(KeyboardInterrupt):
        compare.run_comparison(comp, out, workers=1)
    assert (out / "comparison.json").is_file()
    monkeypatch.undo()
    exp = tmp_path / "e.yaml"
    exp.write_text("name: e\nscenario: default\nreplications: 1\n")
    assert tanksim(["batch", str(exp), "--out", str(out), "--no-progress"]) == 2
    assert "holds other results (comparison.json: a rule-set comparison's)" in capsys.readouterr().err


VEHICLES = {"name": "veh", "ruleset": {"name": "hummel_quest"},
            "map": {"shape": "rectangle", "width": 8, "height": 8, "hex_size_m": 50}, "turn_limit": 3,
            "vehicles": {"slowpoke": {"base": "hq_example_heavy", "name": "Slow heavy"}},
            "sides": [{"name": "Red", "role": "attacker",
                       "tanks": [{"vehicle": "slowpok", "hex": [1, 2], "facing": 0, "label": "A1"}]},
                      {"name": "Blue", "role": "defender",
                       "tanks": [{"vehicle": "hq_example_mediun", "hex": [6, 0], "facing": 3, "label": "B1"}]}]}


def test_did_you_mean_for_the_scenarios_own_vehicles_and_for_side_names(tmp_path, capsys, monkeypatch):
    """A misspelt vehicle of the scenario's own ``vehicles:`` got no hint (the catalog's did); nor did a side name
    in ``--policy SIDE=NAME``, ``--side``, ``--play``, a deployment key or a factor / override path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "veh.yaml").write_text(yaml.safe_dump(VEHICLES), encoding="utf-8")
    assert tanksim(["validate", "veh.yaml"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("veh.yaml: sides[0].tanks[0].vehicle: unknown vehicle 'slowpok' (did you mean 'slowpoke'?); "
                      "defined under vehicles: slowpoke; not in the hummel_quest catalog either")
    assert err[1].startswith("veh.yaml: sides[1].tanks[0].vehicle: unknown hummel_quest vehicle 'hq_example_mediun' "
                             "(did you mean 'hq_example_medium'?); known: ")
    assert tanksim(["run", "veh.yaml"]) == 2
    assert "(did you mean 'slowpoke'?)" in capsys.readouterr().err
    for side, hint in (("Sovets", "Soviets"), ("attackr", "attacker")):
        assert tanksim(["run", "default", "--policy", f"{side}=hold"]) == 2
        assert capsys.readouterr().err == (f"tanksim run: --policy '{side}=hold': no side {side!r} (did you mean "
                                           f"{hint!r}?); sides are Soviets, Germans (or 1, 2)\n")
    exp = {"name": "dep", "scenario": "default", "replications": 2, "seed": 1, "setup": "random",
           "overrides": {"sides.Germns.policy.name": "hold"},
           "deployment": {"Sovets": {"rect": {"q": [0, 2], "r": [4, 20]}}},
           "factors": [{"name": "a", "path": "sides.Sovets.policy.name", "levels": ["hold", "cover"]}]}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    assert tanksim(["validate", "exp.yaml"]) == 2
    err = capsys.readouterr().err
    assert "deployment.Sovets: no side 'Sovets' (did you mean 'Soviets'?)" in err
    assert "factors[0].path: sides.Sovets.policy.name: no element 'Sovets' in sides (did you mean 'Soviets'?)" in err
    assert "no element 'Germns' in sides (did you mean 'Germans'?)" in err
    from sim.view.app import parse_human

    with pytest.raises(ValueError, match=r"--play 'Sovets': no side 'Sovets' \(did you mean 'Soviets'\?\)"):
        parse_human("Sovets", ["Soviets", "Germans"])


def test_a_misspelt_side_has_one_message_shape_in_run_report_power_and_app(tmp_path, capsys):
    """``run --policy Sovets=hold`` lacked the option typed, ``report --side`` and ``app --play`` each had their own
    wording: now every one is ``tanksim CMD: OPTION 'TYPED': no side 'Sovets' (did you mean 'Soviets'?); sides are
    Soviets, Germans (or 1, 2...)``."""
    from sim.experiments.batch import run_experiment
    from sim.view import app

    tail = "no side 'Sovets' (did you mean 'Soviets'?); sides are Soviets, Germans (or 1, 2"
    assert tanksim(["run", "default", "--policy", "Sovets=hold"]) == 2
    assert capsys.readouterr().err == f"tanksim run: --policy 'Sovets=hold': {tail})\n"
    exp = {"name": "sides", "scenario": "default", "replications": 2, "seed": 1, "overrides": {"turn_limit": 2},
           "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["hold"]}]}
    run_experiment(exp, tmp_path / "out", workers=1)
    capsys.readouterr()
    for command in ("report", "power"):
        assert tanksim([command, str(tmp_path / "out"), "--side", "Sovets"]) == 2
        assert capsys.readouterr().err == f"tanksim {command}: --side 'Sovets': {tail})\n"
    assert app.main(["default", "--play", "Sovets"]) == 2
    assert capsys.readouterr().err == f"tanksim app: --play 'Sovets': {tail}, or nobody)\n"


def test_did_you_mean_for_generate_vehicles_doctrine_parameters_and_odds_labels(tmp_path, capsys, monkeypatch):
    """No closest-name hint for ``generate --attacker t34_58``, a misspelt doctrine parameter (built-in or
    plug-in) or ``odds --shooter/--target Tigr``; now each has one."""
    import shutil

    from sim.cli import generate as generate_cli

    assert generate_cli.main(["meeting", "--attacker", "t34_58"]) == 2
    assert "unknown panzer_squadron vehicle 't34_58' (did you mean 't34_85'?); known: " in capsys.readouterr().err
    assert tanksim(["run", "default", "--policy", "1=greedy:risk_weigth=0.5"]) == 2
    assert "Greedy has no parameter(s) risk_weigth (did you mean 'risk_weight'?); parameters: " in (
        capsys.readouterr().err)
    shutil.copy(ROOT / "docs" / "plugin_example.py", tmp_path / "my_doctrines.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert tanksim(["run", "default", "--policy", "1=my_doctrines:Sniper:min_rang=5"]) == 2
    assert "Sniper has no parameter(s) min_rang (did you mean 'min_range'?); parameters: " in capsys.readouterr().err
    for option, typed, hint in (("--shooter", "Tigr", "Tiger"), ("--target", "T34_1", "T34-1")):
        labels = {"--shooter": "Tiger", "--target": "T34-1"}
        labels[option] = typed
        assert tanksim(["odds", "--scenario", "default", "--shooter", labels["--shooter"], "--target",
                        labels["--target"]]) == 2
        assert capsys.readouterr().err.startswith(f"tanksim odds: {option} {typed!r}: no tank labelled {typed!r} "
                                                  f"(did you mean {hint!r}?); labels: T34-1, ")


def test_an_unknown_vehicle_lists_the_scenario_s_own_vehicles_with_the_catalog_s(tmp_path, capsys):
    """``vehicle: zzzz`` in a file defining ``vehicles: t34_85``: the error's list of known names had the
    catalog's only; the scenario's own ids are named too."""
    text = (ROOT / "docs" / "examples" / "t34_85_1944.yaml").read_text(encoding="utf-8")
    assert "vehicle: t34_85" in text
    (tmp_path / "z.yaml").write_text(text.replace("vehicle: t34_85", "vehicle: zzzz", 1), encoding="utf-8")
    assert tanksim(["validate", str(tmp_path / "z.yaml")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{tmp_path / 'z.yaml'}: sides[0].tanks[0].vehicle: unknown asl vehicle 'zzzz'; known: ")
    assert err[0].endswith("; defined under vehicles: t34_85"), err


def test_an_invisible_character_in_any_name_gets_one_wording(tmp_path, capsys):
    """A zero-width space in a vehicle's ``name`` (no ``(got ...)``), in a ``vehicles:`` key (a raw regex message)
    and in a tournament entrant's name (its own '1-64 letters ...' wording): now one wording for all three."""
    ex = yaml.safe_load((ROOT / "docs" / "examples" / "t34_85_1944.yaml").read_text(encoding="utf-8"))
    ex["vehicles"]["t34_85"]["name"] = "T34\u200b85"
    (tmp_path / "n1.yaml").write_text(yaml.safe_dump(ex, allow_unicode=True), encoding="utf-8")
    ex = yaml.safe_load((ROOT / "docs" / "examples" / "t34_85_1944.yaml").read_text(encoding="utf-8"))
    ex["vehicles"] = {"t34\u200b85": ex["vehicles"]["t34_85"]}
    (tmp_path / "n2.yaml").write_text(yaml.safe_dump(ex, allow_unicode=True), encoding="utf-8")
    t = {"name": "t", "games_per_pairing": 2, "scenarios": [{"label": "x", "file": "default"}],
         "entrants": [{"name": "ho\u200bld", "policy": "hold"}, {"name": "b", "policy": "hold"}]}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(t, allow_unicode=True), encoding="utf-8")
    what = "expected a name without control or invisible format characters; found '\\u200b' at character"
    for name, field, at, value in (("n1.yaml", "vehicles.t34_85.name", 4, "T34\\u200b85"),
                                   ("n2.yaml", "vehicles.t34\\u200b85 (a key)", 4, "t34\\u200b85"),
                                   ("t.yaml", "entrants[0].name", 3, "ho\\u200bld")):
        assert tanksim(["validate", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0] == f"{tmp_path / name}: {field}: {what} {at} (got '{value}')", err
