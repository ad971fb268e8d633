"""Batch runs: identical results on any executor, crash and resume, failed rows, re-running a stored battle.

Small battles (a 3-v-3 on a 12 x 12 board, 4 turns) keep every test to a few seconds; most of the time is the
start-up of worker processes.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from conftest import small_ps_scenario, tanksim_cmd
from sim.experiments import store
from sim.experiments.batch import (
    BatchRefused,
    BattleTimeout,
    comparable,
    load_runs,
    open_executor,
    read_manifest,
    rerun_from,
    run_experiment,
    watchdog,
)
from sim.scenario import ScenarioError

PLUGINS = '''
import time
from agents.policies.base import Doctrine
from agents.policies.hold import Hold

class Exploding(Doctrine):
    """Raises while being built."""
    def __init__(self, **params):
        raise RuntimeError("boom in __init__")

class Stuck(Doctrine):
    """Never answers."""
    def decide(self, obs, decision):
        while True:
            pass

class Killer(Doctrine):
    """Kills its worker process."""
    def decide(self, obs, decision):
        import os
        os._exit(3)

class Sleepy(Hold):
    """Holds, slowly."""
    def decide(self, obs, decision):
        time.sleep(0.01)
        return super().decide(obs, decision)
'''


def write_experiment(folder, name="exp.yaml", **over):
    """A 2 x 2 design (Red doctrine x set-up) x 5 replications = 20 battles of the small scenario."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=4)), encoding="utf-8")
    exp = {"name": "small_batch", "scenario": "small.yaml",
           "deployment": {"Red": {"rect": {"q": [0, 2], "r": [0, 9]}}},
           "factors": [{"name": "red", "path": "sides.Red.policy.name", "levels": ["advance", "hold"]},
                       {"path": "setup", "levels": ["fixed", "random"]}],
           "replications": 5, "seed": 11, "chunk_s": 0.0001, "watchdog_s": 120}
    exp.update(over)
    p = folder / name
    p.write_text(yaml.safe_dump(exp, sort_keys=False), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of the standard small experiment (2 workers)."""
    d = tmp_path_factory.mktemp("reference")
    res = run_experiment(write_experiment(d), d / "out", workers=2)
    return res


def test_same_results_on_one_and_two_workers_and_dask(tmp_path, reference):
    p = write_experiment(tmp_path)
    one = run_experiment(p, tmp_path / "one", workers=1)
    assert one.summary.played == 20 and one.summary.executor == "process"
    assert (one.runs["status"] == "ok").all(), one.runs["error"].dropna().tolist()
    pd.testing.assert_frame_equal(comparable(one.runs), comparable(reference.runs))
    assert one.runs["worker"].nunique() == 1
    assert reference.runs["worker"].nunique() >= 2  # two worker processes did work
    # the random set-up really moved the Red tanks, the fixed one did not
    assert one.runs.loc[one.runs["setup"] == "random", "placement"].notna().all()
    assert one.runs.loc[one.runs["setup"] == "fixed", "placement"].isna().all()
    pytest.importorskip("distributed")
    dask = run_experiment(p, tmp_path / "dask", dask_local=2)
    assert dask.summary.executor == "dask" and dask.summary.workers == 2
    if importlib.util.find_spec("bokeh") is not None:  # the dashboard needs bokeh (tanksim[dask])
        assert dask.summary.dashboard.startswith("http://")
    assert dask.summary.lost_workers == 0 and dask.summary.retried == 0
    session = read_manifest(tmp_path / "dask")["sessions"][-1]
    assert session["lost_workers"] == 0 and session["retried"] == 0
    assert session.get("dashboard", "") == dask.summary.dashboard
    pd.testing.assert_frame_equal(comparable(dask.runs), comparable(reference.runs))
    assert dask.runs["worker"].nunique() >= 2



def test_the_command_prints_the_dask_dashboard_link(tmp_path, capsys):
    """README: on Dask, ``tanksim batch`` prints the cluster's dashboard link (bokeh, in the ``dask`` extra)."""
    pytest.importorskip("distributed")
    pytest.importorskip("bokeh")
    from sim.cli.main import main as cli_main

    p = write_experiment(tmp_path, replications=1)
    assert cli_main(["batch", str(p), "--out", str(tmp_path / "out"), "--dask-local", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    link = read_manifest(tmp_path / "out")["sessions"][-1]["dashboard"]
    assert link.startswith("http://") and f"tanksim batch: Dask dashboard: {link}\n" in err, err

@pytest.mark.parametrize("variant, parts_left", [("TANKSIM_CRASH_AFTER_PARTS", 3),
                                                 ("TANKSIM_CRASH_BEFORE_RENAME", 2)])
def test_crash_then_resume_loses_and_repeats_nothing(tmp_path, reference, variant, parts_left):
    p = write_experiment(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, variant: "3"}
    r = subprocess.run(tanksim_cmd() + ["batch", str(p), "--out", str(out), "--workers", "2", "--no-progress"],
                       env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 86, r.stderr
    assert len(store.part_paths(out, "runs")) == parts_left
    temps = list((out / "runs").glob("*.tmp"))
    assert len(temps) == (1 if variant.endswith("RENAME") else 0)
    stored = len(store.stored_run_keys(out))
    assert 0 < stored < 20
    res = run_experiment(p, out, workers=2)
    assert res.summary.stored_before == stored and res.summary.played == 20 - stored
    raw = store.read_parts(out, "runs")
    assert len(raw) == 20 and raw["run_key"].is_unique  # none lost, none repeated
    assert not list(out.rglob("*.tmp"))
    pd.testing.assert_frame_equal(comparable(res.runs), comparable(reference.runs))
    assert read_manifest(out)["status"] == "complete"


def test_interrupt_stores_finished_battles_and_rerun_completes(tmp_path):
    (tmp_path / "slow_plugins.py").write_text(PLUGINS, encoding="utf-8")
    p = write_experiment(tmp_path, factors=[{"name": "blue", "path": "sides.Blue.policy.name",
                                             "levels": ["slow_plugins:Sleepy"]}], replications=16)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(tanksim_cmd() + ["batch", str(p), "--out", str(out), "--workers", "2"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not store.part_paths(out, "runs") and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # what Ctrl-C does too
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" not in stdout   # one line on stderr says it (as every command's Ctrl-C)
    assert [x for x in stderr.splitlines() if "interrupted" in x] == [stderr.strip().splitlines()[-1]]
    assert stderr.strip().splitlines()[-1].startswith("tanksim batch: interrupted: stored ")
    assert "run the same command again" in stderr
    stored = store.stored_run_keys(out)
    assert 0 < len(stored) < 16
    assert read_manifest(out)["status"] == "interrupted"
    r = subprocess.run(tanksim_cmd() + ["batch", str(p), "--out", str(out), "--workers", "2", "--no-progress"],
                       env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert f"({len(stored)} from earlier runs)" in r.stdout
    raw = store.read_parts(out, "runs")
    assert len(raw) == 16 and raw["run_key"].is_unique and (raw["status"] == "ok").all()


def test_changed_experiment_refused_unless_new_and_added_level_reuses_runs(tmp_path):
    p = write_experiment(tmp_path, factors=[{"name": "red", "path": "sides.Red.policy.name",
                                             "levels": ["advance"]}], replications=3)
    out = tmp_path / "out"
    first = run_experiment(p, out, workers=1)
    assert first.summary.played == 3
    p2 = write_experiment(tmp_path, "exp2.yaml", factors=[{"name": "red", "path": "sides.Red.policy.name",
                                                           "levels": ["advance", "hold"]}], replications=3)
    with pytest.raises(BatchRefused, match=r"different experiment .* \(changed: factors\)\. Re-run with --new"):
        run_experiment(p2, out, workers=1)
    second = run_experiment(p2, out, workers=1, new=True)
    assert second.summary.stored_before == 3 and second.summary.played == 3
    again = second.runs[second.runs["red"] == "advance"]
    pd.testing.assert_frame_equal(comparable(again.drop(columns="point")), comparable(first.runs.drop(columns="point")))
    assert len(read_manifest(out)["history"]) == 1


def test_invalid_design_points_refuse_the_experiment_before_any_battle(tmp_path, monkeypatch):
    (tmp_path / "bad_plugins.py").write_text(PLUGINS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    p = write_experiment(tmp_path, factors=[
        {"name": "blue", "path": "sides.Blue.policy.name", "levels": ["hold", "bad_plugins:Exploded"]},
        {"name": "vehicle", "path": "sides.Blue.tanks.0.vehicle", "levels": ["pz_iv_h", "no_such_tank"]}],
        replications=1)
    with pytest.raises(ScenarioError) as err:
        run_experiment(p, tmp_path / "out", workers=1)
    text = "\n".join(err.value.errors)
    # plug-ins are checked statically (never imported or built while validating): a missing class is found
    assert "factors[0].levels[1]: policy 'bad_plugins:Exploded': module 'bad_plugins' has no class 'Exploded' " \
           "(policy classes there: Exploding, Killer, Sleepy, Stuck)" in text
    assert not (tmp_path / "out").exists()
    p1 = write_experiment(tmp_path, "e1.yaml", factors=[
        {"name": "blue", "path": "sides.Blue.policy.name", "levels": ["hold", "bad_plugins:Exploding"]},
        {"name": "vehicle", "path": "sides.Blue.tanks.0.vehicle", "levels": ["pz_iv_h", "no_such_tank"]}],
        replications=1)
    with pytest.raises(ScenarioError) as err:
        run_experiment(p1, tmp_path / "out", workers=1)
    text = "\n".join(err.value.errors)
    assert "design points 1 (blue=hold, vehicle=no_such_tank), 3 (blue=bad_plugins:Exploding, " \
           "vehicle=no_such_tank): sides[1].tanks[0].vehicle: unknown Panzer Squadron vehicle" in text
    assert "boom" not in text  # the plug-in's constructor never ran while validating
    assert "2 of 4 design points are invalid; nothing was run" in text
    assert not (tmp_path / "out").exists()
    # a policy parameter that only one of the doctrine levels takes (the newcomer's case)
    p2 = write_experiment(tmp_path, "e2.yaml", factors=[
        {"path": "sides.Red.policy.name", "levels": ["advance", "flank"]},
        {"path": "sides.Red.policy.params.flank_bias", "levels": [0.5, 1.5]}], replications=1)
    with pytest.raises(ScenarioError, match=r"design point 0 \(Red.policy.name=advance, "
                                            r"Red.policy.params.flank_bias=0.5\): sides\[0\].policy: .*flank_bias"):
        run_experiment(p2, tmp_path / "out2", workers=1)


FLAKY = '''
import os
from agents.policies.hold import Hold

class Flaky(Hold):
    """Hangs while the file MARKER exists, else holds."""
    def decide(self, obs, decision):
        while os.path.exists(MARKER):
            pass
        return super().decide(obs, decision)
'''


def test_hanging_battles_time_out_exit_1_and_retry_failed_replaces_their_rows(tmp_path, monkeypatch, capsys):
    from sim.cli.experiments import main as batch_main

    marker = tmp_path / "hang"
    marker.write_text("x")
    (tmp_path / "flaky_plugins.py").write_text(f"MARKER = {str(marker)!r}\n" + FLAKY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    p = write_experiment(tmp_path, factors=[{"name": "blue", "path": "sides.Blue.policy.name",
                                             "levels": ["hold", "flaky_plugins:Flaky"]}],
                         replications=2, watchdog_s=3.0)  # ten times a small battle on a loaded machine
    out = tmp_path / "out"
    args = [str(p), "--out", str(out), "--workers", "1", "--no-progress"]
    assert batch_main(args) == 1
    err = capsys.readouterr().err
    assert "2 of 4 stored battles failed or timed out" in err and "--retry-failed" in err
    runs = load_runs(out)
    assert sorted(runs["status"]) == ["ok", "ok", "timeout", "timeout"]
    assert "exceeded the watchdog of 3 s" in runs.loc[runs["status"] == "timeout", "error"].iloc[0]
    assert batch_main(args) == 1  # nothing to do, but the folder still holds failures
    assert "nothing to do" in capsys.readouterr().out
    marker.unlink()
    assert batch_main(args + ["--retry-failed"]) == 0
    assert "played 2 battles" in capsys.readouterr().out
    runs = load_runs(out)
    assert (runs["status"] == "ok").all() and len(runs) == 4
    assert store.read_parts(out)["run_key"].is_unique
    assert batch_main(args + ["--retry-failed"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_bad_input_files_get_clear_errors(tmp_path, capsys):
    from sim.cli.experiments import main as batch_main

    (tmp_path / "bin.yaml").write_bytes(bytes(range(128, 256)) * 3)
    assert batch_main([str(tmp_path / "bin.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "bin.yaml: (file): not a UTF-8 text file" in capsys.readouterr().err
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(small_ps_scenario()), encoding="utf-8")
    assert batch_main([str(tmp_path / "sc.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "this is a scenario file (it has sides); play it with: tanksim run" in err and "vehicle" not in err


def test_bundled_experiment_names_resolve_like_tanksim_run(monkeypatch, tmp_path):
    from sim.experiments.design import load_experiment

    monkeypatch.chdir(tmp_path)  # nothing named doctrine_experiment here
    exp = load_experiment("doctrine_experiment")
    assert exp.source == "scenarios/doctrine_experiment.yaml" and len(exp.points) == 16
    with pytest.raises(FileNotFoundError, match="no such experiment file, and no bundled file of that name"):
        load_experiment("no_such_experiment")


def test_a_battle_that_kills_its_worker_fails_alone_and_the_rest_completes(tmp_path, monkeypatch):
    (tmp_path / "killer_plugins.py").write_text(PLUGINS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    p = write_experiment(tmp_path, factors=[{"name": "blue", "path": "sides.Blue.policy.name",
                                             "levels": ["hold", "killer_plugins:Killer"]}], replications=3,
                         chunk_s=5.0)
    res = run_experiment(p, tmp_path / "out", workers=2)
    status = res.runs.groupby("blue")["status"].agg(lambda s: sorted(set(s)))
    assert status.to_dict() == {"hold": ["ok"], "killer_plugins:Killer": ["failed"]}
    errors = res.runs.loc[res.runs["status"] == "failed", "error"]
    assert errors.str.startswith("worker lost while playing this battle alone: BrokenProcessPool").all()
    assert store.read_parts(tmp_path / "out")["run_key"].is_unique
    # each killer battle broke a pool when replayed alone (and its first chunk's pool before that), and each was
    # submitted again after its first chunk was lost
    assert res.summary.lost_workers >= 3 + 1 and res.summary.retried >= 3
    session = read_manifest(tmp_path / "out")["sessions"][-1]
    assert (session["lost_workers"], session["retried"]) == (res.summary.lost_workers, res.summary.retried)


def test_rerun_from_reproduces_a_stored_battle_and_events_are_stored(tmp_path, capsys):
    p = write_experiment(tmp_path, replications=2)
    out = tmp_path / "out"
    res = run_experiment(p, out, workers=1, events=True)
    events = store.read_parts(out, "events")
    assert set(events["run_key"]) == set(res.runs["run_key"])
    assert (events.sort_values(["run_key", "seq"]).groupby("run_key")["kind"].first() == "BattleStarted").all()
    series = store.read_parts(out, "series")
    assert set(series["run_key"]) == set(res.runs["run_key"])
    row = res.runs[(res.runs["setup"] == "random") & (res.runs["red"] == "advance")].iloc[0]
    png = tmp_path / "battle.png"
    capsys.readouterr()
    assert rerun_from(out, row["run_key"][:8], plot=str(png), as_json=True) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["reproduced"] is True and got["differences"] == {}
    assert got["row"]["turns"] == row["turns"] and got["row"]["placement"] == row["placement"]
    assert png.stat().st_size > 10_000
    from sim.cli.main import main as cli_main

    assert cli_main(["run", "--from", str(out), "--battle", row["run_key"]]) == 0
    text = capsys.readouterr().out
    assert "reproduced: the stored result and this run agree" in text
    # the losses are told as `tanksim run` tells them: per side, how many of how many, by cause where any
    for si in (1, 2):
        lost = int(row[f"side{si}_lost"])
        line = next(ln for ln in text.splitlines() if f" lost {lost} of {int(row[f'side{si}_tanks'])}" in ln)
        assert ("(" in line) == (lost > 0), line
    assert cli_main(["run", "--from", str(out), "--battle", "ffffffff"]) == 2
    assert "is not stored there" in capsys.readouterr().err
    from sim.view.replay import read_event_rows

    rows, chosen = read_event_rows(out, battle=row["run_key"])
    assert chosen == row["run_key"] and rows["kind"].iloc[0] == "BattleStarted"


def test_watchdog_interrupts_python_code_even_under_except_exception():
    t0 = time.perf_counter()
    with pytest.raises(BattleTimeout), watchdog(0.2):
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001 - what a careless policy does
                pass
    assert time.perf_counter() - t0 < 5
    with watchdog(5):  # a quick block is untouched
        assert sum(range(10)) == 45


def test_executor_options_are_checked():
    with pytest.raises(ValueError, match="not both"), open_executor(scheduler="tcp://127.0.0.1:1", dask_local=2):
        pass
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_runs("/nonexistent/results")
    with pytest.raises(FileNotFoundError, match="not a batch results folder"):
        load_runs(os.path.dirname(__file__))  # a folder, but no manifest


def test_rule_set_warnings_in_workers_follow_tanksim_log(tmp_path):
    """An ASL batch: its catalog warnings come from the worker processes; hidden by default, shown with
    TANKSIM_LOG=warning (README, "rule-set warnings"), the same as ``tanksim run``."""
    exp = {"name": "asl_quiet", "scenario": "asl_1941_meeting",
           "factors": [{"path": "sides.0.policy.name", "levels": ["hold"]}], "replications": 2, "seed": 3,
           "overrides": {"turn_limit": 1}}
    p = tmp_path / "exp.yaml"
    p.write_text(yaml.safe_dump(exp), encoding="utf-8")
    line = "asl catalog: vehicle"
    env = {k: v for k, v in os.environ.items() if k != "TANKSIM_LOG"}
    for level, shown in ((None, False), ("warning", True)):
        run_env = env if level is None else {**env, "TANKSIM_LOG": level}
        out = tmp_path / f"out_{level}"
        r = subprocess.run([*tanksim_cmd(), "batch", str(p), "--out", str(out), "--workers", "2", "--no-progress"],
                           capture_output=True, text=True, env=run_env, timeout=300)
        assert r.returncode == 0, r.stderr
        assert (line in r.stderr) is shown, (level, r.stderr)
    code = "import sim.env; sim.env.env(scenario='asl_1941_meeting').reset(seed=1)"  # the README's snippet
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0 and line not in quiet.stderr, quiet.stderr


def test_the_base_scenario_is_named_as_the_user_gave_it_never_by_this_machines_path(tmp_path, monkeypatch):
    # run from another folder: the bundled default.yaml is 'default.yaml (bundled)', not the package's absolute
    # path nor the repository's scenarios/ folder; a local file keeps the path typed
    from pathlib import Path

    from sim.experiments.design import load_experiment

    repo = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)
    exp = {"name": "x", "scenario": "default.yaml", "replications": 1, "seed": 1,
           "factors": [{"name": "a", "path": "sides.0.policy.name", "levels": ["hold", "advance"]}]}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    assert load_experiment("exp.yaml").base_src == "default.yaml (bundled)"
    assert load_experiment("doctrine_experiment").base_src == "default.yaml (bundled)"
    assert load_experiment(str(repo / "scenarios" / "doctrine_experiment.yaml")).base_src == "default.yaml (bundled)"
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "exp.yaml").write_text(yaml.safe_dump({**exp, "scenario": "mine.yaml"}))
    (sub / "mine.yaml").write_text((repo / "scenarios" / "default.yaml").read_text())
    assert load_experiment("sub/exp.yaml").base_src == "sub/mine.yaml"
    monkeypatch.chdir(repo)
    assert load_experiment("doctrine_experiment").base_src == "scenarios/default.yaml"  # relative to the cwd
