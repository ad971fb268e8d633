"""Plug-in doctrines named ``package.module:ClassName``: loaded from a module outside the package (a file in a temp
folder on ``sys.path``), from a scenario, from the command line; loading errors say what was not found.  The
plug-in used is the one the README shows (``docs/plugin_example.py``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from agents.controllers import PolicyLoadError, load_policy
from conftest import ROOT, small_ps_scenario, tanksim_cmd
from sim.runner import run_battle
from sim.scenario import validate

EXAMPLE = ROOT / "docs" / "plugin_example.py"


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder outside the package holding ``my_doctrines.py`` (the README example), put on ``sys.path``."""
    (tmp_path / "my_doctrines.py").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "not_policies.py").write_text("class Thing:\n    pass\nVALUE = 3\n", encoding="utf-8")
    thing = "class Thing(Policy):\n    pass\n"
    (tmp_path / "broken_plugin.py").write_text("from agents.policies import Policy\n"
                                              "raise RuntimeError('plug-in crashed on import')\n" + thing,
                                              encoding="utf-8")
    (tmp_path / "needs_missing.py").write_text("from agents.policies import Policy\nimport no_such_dependency_xyz\n"
                                              + thing, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in ("my_doctrines", "not_policies", "broken_plugin", "needs_missing"):
        sys.modules.pop(m, None)
    yield tmp_path
    for m in ("my_doctrines", "not_policies", "broken_plugin", "needs_missing"):
        sys.modules.pop(m, None)


def test_example_is_about_twenty_lines_and_self_contained():
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    assert 15 <= len(lines) <= 30
    assert "from agents.policies import Doctrine" in EXAMPLE.read_text(encoding="utf-8")


def test_plugin_loads_from_outside_the_package_with_params(plugin_dir):
    pol = load_policy("my_doctrines:Sniper", {"min_range": "5", "min_odds": "0.2"})
    assert type(pol).__module__ == "my_doctrines"
    assert pol.params == {"min_range": 5, "min_odds": 0.2, "candidates": 1}


def test_plugin_plays_from_a_scenario_and_keeps_its_word(plugin_dir):
    d = small_ps_scenario(turn_limit=5)
    d["sides"][0]["policy"] = {"name": "my_doctrines:Sniper", "params": {"min_range": 6}}
    sc = validate(d, "plugin.yaml")
    models = []
    shots = []
    for seed in range(4):
        res = run_battle(sc, seed, model_out=models)
        assert res.row["faults"] == 0
        pol = json.loads(res.row["policies"])[0]
        assert pol == {"name": "my_doctrines:Sniper", "params": {"min_range": 6}}
        shots += [json.loads(e["data"]) for e in res.events if e["kind"] == "ShotResolved"]
        moved = [json.loads(e["data"]) for e in res.events if e["kind"] == "Moved"]
        assert not [m for m in moved if m["tank"] < 3], "the sniper never moves"
    own = [s for s in shots if s["shooter"] < 3]
    assert own, "the sniper fired"
    assert all(s["details"]["range"] >= 6 for s in own)


def test_plugin_from_the_command_line(plugin_dir, tmp_path):
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(tanksim_cmd() + ["run", str(f), "--seed", "1", "--json", "--policy",
                                        "Red=my_doctrines:Sniper:min_range=4,min_odds=0.1"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["policies"][0] == {"name": "my_doctrines:Sniper",
                                              "params": {"min_range": "4", "min_odds": "0.1"}}


def test_command_line_reports_a_missing_plugin_class(plugin_dir, tmp_path, capsys):
    from sim.cli.main import main

    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario(turn_limit=2)))
    assert main(["run", str(f), "--policy", "1=my_doctrines:Sniperz"]) == 2
    err = capsys.readouterr().err
    assert "has no class 'Sniperz' (policy classes there: Sniper)" in err


@pytest.mark.parametrize("name,params,expect", [
    ("no_such_module_xyz:Thing", {}, "module 'no_such_module_xyz' not found"),
    ("my_doctrines:Sharpshooter", {}, "module 'my_doctrines' has no class 'Sharpshooter' (policy classes there: "),
    ("not_policies:Thing", {}, "'Thing' is not a policy class with a decide(obs, decision) method"),
    ("not_policies:VALUE", {}, "'VALUE' is not a policy class"),
    ("broken_plugin:Thing", {}, "module 'broken_plugin' failed to import: RuntimeError: plug-in crashed"),
    ("needs_missing:Thing", {}, "module 'needs_missing' failed to import"),
    ("my_doctrines:Sniper", {"range": 3},
     "Sniper has no parameter(s) range (did you mean 'min_range'?); parameters: min_range, min_odds"),
    ("my_doctrines:Sniper", {"min_range": "far"}, "parameter min_range='far': expected int"),
    (":Sniper", {}, "expected package.module:ClassName"),
    ("snipe", {}, "unknown policy 'snipe'; built-in: advance, cover, flank, focus_fire, greedy, hold, learned, "
                  "lookahead, objective"),
])
def test_loading_errors_say_what_was_not_found(plugin_dir, name, params, expect):
    with pytest.raises(PolicyLoadError) as exc:
        load_policy(name, params)
    assert expect in str(exc.value)
    assert isinstance(exc.value, ValueError) and isinstance(exc.value, LookupError)
