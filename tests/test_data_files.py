"""A data file never runs code or commands (issue 11, section 1).

Scenarios, experiments, results folders and ``--policy`` values name plug-in doctrines only: an isolated entrant
(``agents.isolation:RemotePolicy``), a ``command`` parameter or any process-spawning policy class is refused with an
error naming the file and the field, and the command is never started.  ``validate`` checks a plug-in name without
importing the module or any package ``__init__`` (``this:x`` prints nothing; a module that writes a file when
imported writes nothing); the import happens only when a battle is played.  Only tournament entrants
(:class:`agents.controllers.EntrantPolicy`) may be isolated."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from agents.controllers import EntrantPolicy, PolicyLoadError, check_policy, load_policy
from agents.plugins import check_plugin
from conftest import ROOT, small_ps_scenario, tanksim_cmd
from sim.scenario import ScenarioError, validate

ZEN = "Beautiful is better than ugly"


def _remote(marker):
    return {"name": "agents.isolation:RemotePolicy",
            "params": {"entrant": {"name": "x", "command": ["/bin/sh", "-c", f"id > {marker}"]}}}


def _tanksim(*args, cwd, pythonpath=None):
    """``tanksim ARGS`` as a child process (what a user runs)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run(tanksim_cmd() + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def cli(capsys):
    """``tanksim ARGS`` in this process: ``(exit code, stdout + stderr)``."""
    from sim.cli.main import main

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        got = capsys.readouterr()
        return code, got.out + got.err

    return run


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Plug-in modules in a temp folder on sys.path: one that writes IMPORTED at import, a package whose
    ``__init__`` writes INIT_RAN, a subclass of RemotePolicy and a class declaring it spawns processes."""
    (tmp_path / "noisy_bots.py").write_text(
        f"open({str(tmp_path / 'IMPORTED')!r}, 'w').write('imported')\n"
        "from agents.policies import Doctrine\n\n"
        "class Bot(Doctrine):\n    defaults = {'min_odds': 0.0, 'candidates': 8, 'reach': 3}\n", encoding="utf-8")
    pkg = tmp_path / "noisy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(tmp_path / 'INIT_RAN')!r}, 'w').write('ran')\n", encoding="utf-8")
    (pkg / "bots.py").write_text("from agents.policies.base import Policy\n\nclass Quiet(Policy):\n"
                                 "    def decide(self, obs, decision):\n        return decision.default\n",
                                 encoding="utf-8")
    (tmp_path / "spawners.py").write_text(
        "from agents.isolation import RemotePolicy as RP\nfrom agents.policies import Hold\n\n"
        "class Sneaky(RP):\n    pass\n\n"
        "class Declared(Hold):\n    spawns_processes = True\n\n"
        "class Reexport(Sneaky):\n    pass\n", encoding="utf-8")
    (tmp_path / "reexports.py").write_text("from noisy_pkg.bots import Quiet as Calm\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("noisy_bots", "noisy_pkg", "noisy_pkg.bots", "spawners", "reexports")
    for m in names:
        sys.modules.pop(m, None)
    yield tmp_path
    for m in names:
        sys.modules.pop(m, None)


def _scenario_file(folder, policy, name="s.yaml"):
    d = small_ps_scenario(turn_limit=2)
    d["sides"][0]["policy"] = policy
    f = folder / name
    f.write_text(yaml.safe_dump(d), encoding="utf-8")
    return f


def test_validate_refuses_an_isolated_entrant_and_never_runs_its_command(tmp_path, cli):
    marker = tmp_path / "PWNED"
    f = _scenario_file(tmp_path, _remote(marker))
    r = _tanksim("validate", str(f), cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{f}: sides[0].policy: policy 'agents.isolation:RemotePolicy': params.entrant: a command or isolated " \
           f"entrant is allowed only in a tournament's entrant definitions" in r.stderr
    code, text = cli("run", f)
    assert code == 2 and "allowed only in a tournament's entrant definitions" in text
    # without a command in the parameters the class itself is refused, and a per-tank policy too
    d = small_ps_scenario()
    d["sides"][1]["tanks"][0]["policy"] = {"name": "agents.isolation:RemotePolicy"}
    d["sides"][0]["policy"] = {"name": "agents.remote:RemoteObservation"}
    with pytest.raises(ScenarioError) as err:
        validate(d, "t.yaml")
    text = "\n".join(err.value.errors)
    assert "t.yaml: sides[1].tanks[0].policy: policy 'agents.isolation:RemotePolicy': a process-spawning policy " \
           "(isolated entrant) is allowed only in a tournament's entrant definitions" in text
    assert "t.yaml: sides[0].policy: policy 'agents.remote:RemoteObservation': a process-spawning policy" in text
    assert not marker.exists()


def test_an_experiment_level_and_an_override_cannot_start_a_command(tmp_path, cli):
    marker = tmp_path / "PWNED"
    _scenario_file(tmp_path, "hold", "small.yaml")
    exp = {"scenario": "small.yaml", "replications": 1,
           "factors": [{"path": "sides.Red.policy", "levels": ["hold", _remote(marker)]}]}
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(exp), encoding="utf-8")
    code, text = cli("validate", f)
    assert code == 2 and f"{f}: factors[0].levels[1]: policy 'agents.isolation:RemotePolicy': " \
                         f"params.entrant: a command" in text
    exp = {"scenario": "small.yaml", "replications": 1,
           "overrides": {"sides.Red.policy.params.command": ["/bin/sh", "-c", f"id > {marker}"]}}
    f.write_text(yaml.safe_dump(exp), encoding="utf-8")
    code, text = cli("batch", f, "--out", tmp_path / "out", "--workers", "1")
    assert code != 0 and f"{f}: overrides.sides.0.policy.params.command: " in text
    assert not marker.exists() and not (tmp_path / "out" / "runs").exists()


def test_a_results_folder_whose_manifest_names_a_command_runs_nothing(tmp_path, cli):
    from sim.experiments.batch import BaseContext, Task, play, run_experiment

    marker = tmp_path / "PWNED"
    _scenario_file(tmp_path, "hold", "small.yaml")
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump({"scenario": "small.yaml", "replications": 1}), encoding="utf-8")
    out = tmp_path / "out"
    res = run_experiment(f, out, workers=1)
    run = res.runs.iloc[0]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for base in manifest["bases"].values():
        base["data"]["sides"][0]["policy"] = _remote(marker)
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    code, text = cli("run", "--from", out, "--battle", run["run_key"])
    assert code != 0 and "Traceback" not in text
    assert not marker.exists()
    # whatever a manifest says, a stored battle is rebuilt through the plug-in-only path
    base = next(iter(manifest["bases"].values()))
    ctx = BaseContext(run["base_key"], base["data"], base["src"], {})
    row = play(ctx, Task(run["run_key"], run["point_key"], 0, int(run["seed"]), "{}"))["row"]
    assert row["status"] == "failed" and "allowed only in a tournament's entrant definitions" in row["error"]
    point = json.dumps({"sides.0.policy": _remote(marker)})
    ctx = BaseContext("k2", small_ps_scenario(turn_limit=2), "small.yaml", {})
    row = play(ctx, Task("r2", "p2", 0, 1, point))["row"]
    assert row["status"] == "failed" and "allowed only in a tournament's entrant definitions" in row["error"]
    assert not marker.exists()


def test_policy_option_on_the_command_line_names_plugins_only(tmp_path, cli):
    f = _scenario_file(tmp_path, "hold")
    code, text = cli("run", f, "--policy", "Red=agents.isolation:RemotePolicy")
    assert code == 2 and "process-spawning policy" in text
    with pytest.raises(PolicyLoadError, match="a command or isolated entrant is allowed only"):
        load_policy("hold", {"command": ["true"]})


def test_validate_imports_nothing_this_x_prints_no_zen(tmp_path, cli):
    f = _scenario_file(tmp_path, "this:x")
    r = _tanksim("validate", str(f), cwd=tmp_path)
    assert r.returncode == 2 and ZEN not in r.stdout + r.stderr
    assert f"{f}: sides[0].policy: policy 'this:x': module 'this' has no class 'x'" in r.stderr
    code, text = cli("run", f)  # the static check comes first at run time too
    assert code == 2 and ZEN not in text and "module 'this' has no class 'x'" in text
    f2 = _scenario_file(tmp_path, "antigravity:Fly", "g.yaml")
    code, text = cli("validate", f2)
    assert code == 2 and "module 'antigravity' has no class 'Fly'" in text
    assert "this" not in sys.modules and "antigravity" not in sys.modules


def test_validate_never_imports_a_plugin_but_run_does(plugins, tmp_path, cli):
    imported = plugins / "IMPORTED"
    f = _scenario_file(tmp_path, {"name": "noisy_bots:Bot", "params": {"reach": 5}})
    code, text = cli("validate", f)
    assert code == 0, text
    assert not imported.exists() and "noisy_bots" not in sys.modules
    f_bad = _scenario_file(tmp_path, {"name": "noisy_bots:Bot", "params": {"range": 5}}, "bad.yaml")
    code, text = cli("validate", f_bad)
    assert code == 2 and "Bot has no parameter(s) range; parameters: min_odds, candidates, reach" in text
    assert not imported.exists()
    code, text = cli("run", f)  # a battle is code the user chose to run
    assert code == 0, text
    assert imported.read_text() == "imported"


def test_static_check_runs_no_package_init_and_follows_reexports(plugins):
    info = check_plugin("noisy_pkg.bots:Quiet")
    assert info.path.endswith("bots.py") and info.defaults == {}
    assert check_plugin("reexports:Calm").cls == "Calm"
    assert not (plugins / "INIT_RAN").exists() and "noisy_pkg" not in sys.modules
    check_policy("noisy_pkg.bots:Quiet", {})
    with pytest.raises(PolicyLoadError, match="Quiet has no parameter"):
        check_policy("noisy_pkg.bots:Quiet", {"x": 1})
    assert not (plugins / "INIT_RAN").exists()
    for name in ("spawners:Sneaky", "spawners:Declared", "spawners:Reexport"):
        with pytest.raises(PolicyLoadError, match="process-spawning policy"):
            check_plugin(name)
        with pytest.raises(PolicyLoadError, match="process-spawning policy"):
            load_policy(name)
    assert "spawners" not in sys.modules  # refused before its import
    import spawners  # noqa: F401 - once imported (by the user's own code), the class itself is refused
    with pytest.raises(PolicyLoadError, match="process-spawning policy"):
        load_policy("spawners:Declared")


def test_only_a_tournament_entrant_may_be_isolated(tmp_path):
    from sim.model import BattleModel

    sc = validate(small_ps_scenario(turn_limit=1), "s.yaml")
    entrant = {"name": "e", "policy": "hold", "params": {}, "command": None}
    with pytest.raises(PolicyLoadError, match="allowed only in a tournament's entrant definitions"):
        BattleModel(sc, 0, {0: ("agents.isolation:RemotePolicy", {"entrant": entrant})})
    with pytest.raises(PolicyLoadError, match="process-spawning policy"):
        BattleModel(sc, 0, {0: ("agents.isolation:RemotePolicy", {})})
    from agents.isolation import close_policies

    m = BattleModel(sc, 0, {0: EntrantPolicy("agents.isolation:RemotePolicy", {
        "entrant": entrant, "limits": {"cpu_s": 120, "memory_mb": 2048, "decision_wall_s": 60,
                                       "startup_wall_s": 120}})})
    try:
        assert type(m.controllers[0].policy).__name__ == "RemotePolicy"
    finally:
        close_policies(m)


def test_the_readme_states_the_trust_model():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Trust model" in text and "### Data files" in text and "### Isolated entrants" in text
    assert "an in-process plug-in is code you chose to run" in text


def test_validate_a_tournament_starts_no_entrant_and_imports_no_plugin(tmp_path, cli):
    marker = tmp_path / "PWNED"
    t = {"name": "t", "entrants": [{"name": "a", "policy": "hold"}, {"name": "zen", "policy": "this:x"},
                                   {"name": "cmd", "command": ["/bin/sh", "-c", f"id > {marker}"]}],
         "scenarios": [{"file": "default"}]}
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(t), encoding="utf-8")
    code, text = cli("validate", f)
    assert code == 2 and f"{f}: entrants[1].policy: policy 'this:x': module 'this' has no class 'x'" in text
    assert ZEN not in text and not marker.exists()
    t["entrants"][1] = {"name": "zen", "policy": "agents.isolation:RemotePolicy",
                        "params": {"entrant": {"command": ["/bin/sh", "-c", f"id > {marker}"]}}}
    f.write_text(yaml.safe_dump(t), encoding="utf-8")
    code, text = cli("validate", f)
    assert code == 2 and "entrants[1].policy" in text and "command:" in text and not marker.exists()
