"""What a newcomer sees on a mistake: one message style for a misspelt field in every input file, one warning for a
bad TANKSIM_LOG, ``match --quiet`` and its endings, and the small agreements (exit codes, prefixes, lists)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_sprt import DUEL

from conftest import ROOT, tanksim_cmd
from sim.scenario import ScenarioError


def _errors(exc_info) -> str:
    return "\n".join(getattr(exc_info.value, "errors", None) or [str(exc_info.value)])


def test_a_misspelt_field_says_did_you_mean_in_every_input_file():
    from sim.experiments.design import experiment_from_mapping
    from sim.generate import GeneratorError, check_params
    from sim.play_cases import PlayCaseError, prepare_play_case
    from sim.tournaments.tournament import TournamentError, tournament_from_mapping

    with pytest.raises(ScenarioError) as e:
        experiment_from_mapping({"name": "x", "scenario": "default", "replicatons": 3}, "bad.yaml")
    text = _errors(e)
    assert "bad.yaml: replicatons: unknown field 'replicatons' (did you mean 'replications'?); expected one of" in text
    assert "Extra inputs" not in text and "(got 3)" not in text

    with pytest.raises(TournamentError) as e:
        tournament_from_mapping({"name": "t", "games_per_pairng": 2}, "t.yaml")
    assert ("t.yaml: games_per_pairng: unknown field 'games_per_pairng' (did you mean 'games_per_pairing'?)"
            in _errors(e))

    with pytest.raises(PlayCaseError) as e:
        prepare_play_case("panzer_squadron", {"given": {"tankz": []}, "expect": {}}, "c.yaml", 0)
    assert "c.yaml: cases[0].given.tankz: unknown field 'tankz' (did you mean 'tanks'?)" in _errors(e)

    with pytest.raises(GeneratorError) as e:
        check_params("meeting", {"szie": 8})
    assert "generator.params.szie: unknown field 'szie' (did you mean 'size'?)" in _errors(e)


def test_a_misspelt_vehicle_record_field_names_the_closest_field():
    from sim.rules.base import VehicleError
    from sim.rules.panzer_squadron.data import vehicle_from_record

    with pytest.raises(VehicleError) as e:
        vehicle_from_record("x", {"nmae": "X"})
    assert "unknown field 'nmae' (did you mean 'name'?)" in str(e.value)


def test_the_shared_formatter_without_a_model_still_says_unknown_field():
    from pydantic import BaseModel, ConfigDict, ValidationError

    from sim.messages import validation_lines

    class M(BaseModel):
        model_config = ConfigDict(extra="forbid")
        turns: int = 1

    with pytest.raises(ValidationError) as e:
        M.model_validate({"turnz": 5})
    assert validation_lines("f.yaml", e.value) == ["f.yaml: turnz: unknown field 'turnz'"]
    assert validation_lines("f.yaml", e.value, model=M) == [
        "f.yaml: turnz: unknown field 'turnz' (did you mean 'turns'?); expected one of turns"]


@pytest.mark.parametrize("ruleset, params, hint", [
    ("asl", {"firer_movd": "1"}, "(did you mean 'firer_moved'?)"),
    ("panzer_squadron", {"penetratoin": "5", "armour": "3"}, "(did you mean 'penetration'?)"),
    ("hummel_quest", {"mode": "check", "tn": "5", "pooll": "3"}, "(did you mean 'pool'?)"),
])
def test_odds_with_a_misspelt_parameter_says_did_you_mean(ruleset, params, hint):
    from sim.rules import base

    with pytest.raises(base.CaseError) as e:
        base.get(ruleset).odds_from_params(params)
    assert hint in str(e.value)


@pytest.mark.parametrize("args", [
    ["asl", "gun=75L", "ammo=AP", "range_hexes=3", "af_hull_front=4"],
    ["panzer_squadron", "penetration=5", "armour=3"],
    ["hummel_quest", "mode=check", "pool=3", "tn=5"],
])
def test_odds_output_names_its_rule_set_for_every_rule_set(args, capsys):
    from sim.cli.main import main

    assert main(["odds", *args]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.split() == ["ruleset:", args[0]]


def test_a_bad_tanksim_log_is_reported_once(tmp_path):
    env = {**os.environ, "TANKSIM_LOG": "loud"}
    r = subprocess.run(tanksim_cmd() + ["validate", "default"], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("TANKSIM_LOG") == 1, r.stderr
    # a worker process started later inherits the fallback rather than repeating the line
    code = ("import os, subprocess, sys\nimport sim\n"
            "print(os.environ['TANKSIM_LOG'])\n"
            "subprocess.run([sys.executable, '-c', 'import sim'], check=True)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "error", r.stderr
    assert r.stderr.count("TANKSIM_LOG") == 1, r.stderr


@pytest.fixture
def duel(tmp_path):
    f = tmp_path / "duel.yaml"
    f.write_text(yaml.safe_dump(DUEL))
    return str(f)


def test_match_quiet_prints_the_verdict_line_alone(duel, capsys):
    from sim.cli.tournaments import match_main

    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "2", "--workers", "1",
                     "--decision-timeout", "0", "--quiet"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("verdict: "), out
    assert rc == (0 if "accepted" in out[0] else 3)


def test_match_endings_give_their_own_advice(duel, capsys, monkeypatch):
    from sim.cli.tournaments import match_main
    from sim.tournaments import tournament as T

    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "2", "--workers", "1",
                     "--decision-timeout", "0", "--sprt", "elo0=0,elo1=5"])
    out = capsys.readouterr().out
    assert rc == 3, out
    assert "at most 1 pair (2 games)" in out and "1 pair (2 games) in" in out
    assert "(game limit reached)" in out and "raise --max-games (now 2) to go on (exit code 3)" in out

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt
        yield  # pragma: no cover - a generator that is interrupted at once

    monkeypatch.setattr(T, "run_chunks", interrupted)
    rc = match_main(["hold", "advance", "--scenario", duel, "--max-games", "2", "--workers", "1"])
    out, err = capsys.readouterr()
    assert rc == 130   # as batch and tournament (README: exit status of match and tournament)
    assert "no verdict after 0 games (interrupted)" in out and "raise --max-games" not in out
    assert "nan" not in out and "0 pairs (0 games) in " in out and ": no games finished" in out   # not "scored nan"
    assert err == ("tanksim match: interrupted: no verdict after 0 pairs; run the same command again to play the "
                   "match to its end (it starts again from pair 1, with the same games)\n")


def test_match_unknown_doctrine_has_the_command_prefix(duel, capsys):
    from sim.cli.tournaments import match_main

    assert match_main(["hold", "nosuch", "--scenario", duel, "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(line.startswith("tanksim match: ") for line in err), err


def test_validate_and_run_agree_on_the_exit_status_of_an_invalid_scenario(tmp_path):
    from sim.cli.main import main

    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump({**DUEL, "turn_limmit": 3}))
    assert main(["validate", str(f)]) == 2
    assert main(["run", str(f)]) == 2


def test_the_bundled_list_names_only_scenarios():
    from sim.scenario import bundled_scenarios, find_scenario, load_scenario

    names = bundled_scenarios()
    assert {"default.yaml", "asl_1941_meeting.yaml", "hq_skirmish.yaml"} <= set(names)
    assert not {"doctrine_experiment.yaml", "tournament.yaml", "ruleset_comparison.yaml"} & set(names)
    for n in names:
        load_scenario(n)
    with pytest.raises(FileNotFoundError) as e:
        find_scenario("no_such_scenario")
    assert "tournament.yaml" not in str(e.value) and "default.yaml" in str(e.value)


def test_the_tournament_results_line_names_every_file_written():
    from sim.cli.tournaments import file_list

    written = [Path("o/leaderboard.parquet"), Path("o/leaderboard.csv"), Path("o/metagame.json"),
               Path("o/elo.png"), Path("o/tournament.json")]
    assert file_list(written) == "elo.png, leaderboard.csv/.parquet, metagame.json, tournament.json"
