"""Ctrl-C (SIGINT) and stop paths through the real ``tanksim`` command: one line, the documented exit status, no
traceback, and a resumable folder where the command stores results."""
from __future__ import annotations

import glob
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import tanksim_cmd
from sim.experiments import store


def interrupt(args: list[str], ready: str | float | Callable[[], bool], *, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 60, sig: int = signal.SIGINT) -> tuple[int, str, str]:
    """Start ``tanksim ARGS`` in its own process group, wait until a file matches the glob ``ready`` (relative to
    ``cwd``) or ``ready`` seconds pass, send SIGINT to the whole group (what Ctrl-C in a terminal does: worker
    processes get it too), and return ``(exit status, stdout, stderr)``.  ``sig=signal.SIGTERM``: send that to
    the command's own process instead (what ``kill PID`` does)."""
    proc = subprocess.Popen(tanksim_cmd() + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < timeout:
        if isinstance(ready, str) and glob.glob(str(cwd / ready)):
            break
        if callable(ready) and ready():
            break
        if isinstance(ready, (int, float)) and time.monotonic() - t0 >= ready:
            break
        time.sleep(0.02)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_compare_rulesets_interrupted_stores_says_so_and_resumes(tmp_path):
    comp = {"name": "cmp_small",
            "factors": [{"name": "ruleset", "path": "ruleset",
                         "levels": [{"ruleset": "panzer_squadron", "scenario": "skirmish_2v2"},
                                    {"ruleset": "hummel_quest", "scenario": "hq_skirmish"}]},
                        {"name": "doctrine", "path": "sides.0.policy.name", "levels": ["hold", "advance"]}],
            "overrides": {"sides.1.policy.name": "advance"}, "replications": 8, "seed": 5, "watchdog_s": 120}
    (tmp_path / "cmp.yaml").write_text(yaml.safe_dump(comp, sort_keys=False), encoding="utf-8")
    args = ["compare-rulesets", "cmp.yaml", "--out", "out", "--workers", "2", "--no-progress"]
    rc, out, err = interrupt(args, "out/cells/*/runs/*.parquet", cwd=tmp_path)
    assert rc == 130, err
    assert "Traceback" not in err and "RuntimeError" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tanksim compare-rulesets: interrupted: stored "), err
    assert "of 32 battles" in lines[0] and "run the same command again" in lines[0]
    r = subprocess.run(tanksim_cmd() + args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "out: 32 battles in 2 cells" in r.stdout
    for cell in (tmp_path / "out" / "cells").iterdir():
        raw = store.read_parts(cell, "runs")
        assert len(raw) == 16 and raw["run_key"].is_unique


SLOW_POLICY = '''
import os, time
from pathlib import Path
from agents.policies.hold import Hold

class Slow(Hold):
    """Holds; touches the file "started" (in the working folder) at its first decision, and takes 0.2 s
    a decision while the file "slow" is there."""
    def decide(self, obs, decision):
        Path("started").touch()
        if Path("slow").exists():
            time.sleep(0.2)
        return super().decide(obs, decision)
'''


def slow_env(folder: Path) -> dict[str, str]:
    """An environment whose ``PYTHONPATH`` finds ``slowpol:Slow`` (written into ``folder``, slow there until
    ``folder / "slow"`` is removed)."""
    (folder / "slowpol.py").write_text(SLOW_POLICY, encoding="utf-8")
    (folder / "slow").touch()
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


#: The one line every command ends with on Ctrl-C (stderr): ``tanksim CMD: interrupted`` and, for a command that
#: keeps something, ``: what was kept; how to go on``.
INTERRUPTED_LINE = r"tanksim (?P<cmd>[a-z-]+): interrupted(: [^\n]+)?"


@pytest.mark.parametrize("command", ["batch", "match"])
def test_long_commands_interrupted_end_on_one_line_of_one_format(tmp_path, command):
    """``batch`` printed ``interrupted: played ...`` on stdout and how to resume on stderr; ``match`` a bare
    ``interrupted`` line: now each ends on one stderr line ``tanksim CMD: interrupted: ...``, exit 130."""
    import re

    env = slow_env(tmp_path)
    if command == "batch":
        exp = {"name": "slow", "scenario": "default", "replications": 6, "seed": 3, "overrides": {"turn_limit": 2},
               "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["slowpol:Slow"]}]}
        (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
        args, ready = ["batch", "f.yaml", "--out", "out", "--workers", "1", "--no-progress"], "out/runs/*.parquet"
    else:
        args = ["match", "slowpol:Slow", "hold", "--scenario", "default", "--workers", "1", "--max-games", "40"]
        ready = "started"
    rc, out, err = interrupt(args, ready, cwd=tmp_path, env=env)
    assert rc == 130, err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert said == [err.strip().splitlines()[-1]], err
    m = re.fullmatch(INTERRUPTED_LINE, said[0])
    assert m and m["cmd"] == command and "run the same command again" in said[0], said
    assert not [line for line in out.splitlines() if line.startswith("interrupted")], out
    if command == "match":   # stopped in its first pair: no rate to print ("scored nan", "Elo nan" before)
        assert "nan" not in out and "no games finished" in out, out


def test_run_interrupted_is_one_line_exit_130(tmp_path):
    rc, out, err = interrupt(["run", "default", "--policy", "1=slowpol:Slow"], "started", cwd=tmp_path,
                             env=slow_env(tmp_path))
    assert (rc, err) == (130, "tanksim run: interrupted\n")


#: Every subcommand and the function ``tanksim`` dispatches it to ("module:function").
DISPATCH = {"run": "sim.cli.main:cmd_run", "odds": "sim.cli.main:cmd_odds", "cases": "sim.cli.main:cmd_cases",
            "validate": "sim.cli.main:cmd_validate"}


def test_every_subcommand_interrupted_is_one_line_exit_130(monkeypatch, capsys, tmp_path):
    cli = importlib.import_module("sim.cli.main")

    (tmp_path / "x.yaml").write_text("name: x\n", encoding="utf-8")
    table = {**DISPATCH, **cli.EXTERNAL}
    assert set(table) >= {"odds", "cases", "oracle", "match", "tournament", "replay", "generate", "report", "power"}
    for name, target in table.items():
        mod, _, fn = target.partition(":")

        def stop(*a, **k):
            raise KeyboardInterrupt

        monkeypatch.setattr(importlib.import_module(mod), fn, stop)
        args = {"odds": ["panzer_squadron"], "cases": ["x.yaml"], "validate": ["x.yaml"], "run": ["default"]}
        try:
            rc = cli.main([name, *args.get(name, [])])
        except KeyboardInterrupt:
            pytest.fail(f"tanksim {name}: KeyboardInterrupt escaped (a traceback for the user)")
        assert (rc, capsys.readouterr().err) == (130, f"tanksim {name}: interrupted\n"), name


def test_tournament_interrupted_exit_130_and_partial_tables_say_so(tmp_path):
    from test_tournament import SMALL_PS, three_entrants

    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], games_per_pairing=6,
                          executor={"workers": 2, "chunk_games": 1}, metagame={"enabled": False})
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    args = ["tournament", "t.yaml", "--out", "out", "--no-plots", "--no-progress"]
    rc, out, err = interrupt(args, "out/runs/*.parquet", cwd=tmp_path)
    assert rc == 130, err
    assert "Traceback" not in err
    heading = next(line for line in out.splitlines() if line.startswith("interrupted: "))
    n = int(heading.split()[1])
    assert 0 < n < 18 and heading.startswith(f"interrupted: {n} of 18 games; partial results")
    assert err.strip().splitlines()[-1] == (f"tanksim tournament: interrupted: stored {n} of 18 games in out; run "
                                            f"the same command again to finish")
    assert [x for x in err.splitlines() if "interrupted" in x] == [err.strip().splitlines()[-1]]
    assert out.index(heading) < out.index("Leaderboard")
    r = subprocess.run(tanksim_cmd() + args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "interrupted" not in r.stdout and f"({n} already stored)" in r.stdout


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_app_stopped_with_ctrl_c_exits_130_before_and_after_it_serves(tmp_path):
    """Ctrl-C before the server was up exited 130, after it exited 0 (``tanksim app: stopped``): now 130 both
    times, with the one interrupted line of every command."""
    pytest.importorskip("solara")
    port = _port()
    rc, out, err = interrupt(["app", "default", "--play", "Soviets", "--port", str(port)],
                             lambda: _listening(port), cwd=tmp_path)
    assert (rc, err.strip()) == (130, f"tanksim app: interrupted: stopped serving http://127.0.0.1:{port}/"), err
    assert f"at http://127.0.0.1:{port}/" in out
    rc, out, err = interrupt(["app", "default", "--port", str(_port())], 1.5, cwd=tmp_path)   # most likely loading
    assert rc == 130 and len(err.strip().splitlines()) == 1, err   # whenever Ctrl-C comes
    if out:   # it was already serving
        assert err.startswith("tanksim app: interrupted: stopped serving "), err
    else:
        assert err == "tanksim app: interrupted\n"


def test_app_refuses_a_port_in_use_before_announcing_and_port_0_picks_a_free_one(tmp_path):
    pytest.importorskip("solara")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run(tanksim_cmd() + ["app", "--port", str(port)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"tanksim app: --port {port}: address already in use (choose another, or --port 0 for a "
                        f"free one)\n")
    announced: list[int] = []

    def up() -> bool:   # the port the app announced (read from its log file) is served
        text = (tmp_path / "log").read_text() if (tmp_path / "log").exists() else ""
        if "serving" in text and not announced:
            announced.append(int(text.split("http://127.0.0.1:")[1].split("/")[0]))
        return bool(announced) and _listening(announced[0])

    with open(tmp_path / "log", "w") as log:
        proc = subprocess.Popen(tanksim_cmd() + ["app", "--port", "0"], cwd=tmp_path, stdout=log,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.monotonic()
        while not up() and proc.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    assert announced and announced[0] != 0 and proc.returncode == 130


# --- rule-set warnings follow TANKSIM_LOG in every entry point ------------------------------------------------------

HQ50 = {"name": "hq50", "ruleset": {"name": "hummel_quest"},
        "map": {"shape": "rectangle", "width": 8, "height": 8, "hex_size_m": 50}, "turn_limit": 3,
        "vehicles": {"slowpoke": {"base": "hq_example_heavy", "name": "Slow heavy"}},
        "sides": [{"name": "Red", "role": "attacker",
                   "tanks": [{"vehicle": "slowpoke", "hex": [1, 2], "facing": 0, "label": "A1"}]},
                  {"name": "Blue", "role": "defender",
                   "tanks": [{"vehicle": "hq_example_medium", "hex": [6, 0], "facing": 3, "label": "B1"}]}]}
SPEED = "hummel_quest: A1: speed_m 30 is not a multiple of 50 m"


def test_rule_set_warnings_follow_tanksim_log_in_run_batch_env_and_validate(tmp_path):
    (tmp_path / "hq50.yaml").write_text(yaml.safe_dump(HQ50), encoding="utf-8")
    exp = {"name": "hq50_batch", "scenario": "hq50.yaml", "replications": 4, "seed": 1,
           "factors": [{"path": "sides.0.policy.name", "levels": ["hold"]}]}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k != "TANKSIM_LOG"}

    def tanksim(level: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        env = base if level is None else {**base, "TANKSIM_LOG": level}
        return subprocess.run(tanksim_cmd() + list(args), cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=120)

    for level in (None, "error"):
        r = tanksim(level, "run", "hq50.yaml")
        assert (r.returncode, r.stderr) == (0, ""), r.stderr
    r = tanksim("warning", "run", "hq50.yaml")
    assert (r.returncode, r.stderr) == (0, f"tanksim run: warning: {SPEED}\n")
    quiet = tanksim(None, "batch", "exp.yaml", "--out", "q", "--workers", "2", "--no-progress")
    assert quiet.returncode == 0 and "speed_m" not in quiet.stderr, quiet.stderr
    loud = tanksim("warning", "batch", "exp.yaml", "--out", "w", "--workers", "2", "--no-progress")
    shown = [line for line in loud.stderr.splitlines() if "speed_m" in line]
    assert loud.returncode == 0 and 1 <= len(shown) <= 2, loud.stderr   # once per worker process at most
    assert set(shown) == {f"tanksim batch: warning: {SPEED}"}
    code = "import sim.env; sim.env.env(scenario='hq50.yaml').reset(seed=1)"
    for level, want in ((None, ""), ("warning", f"sim.rules.hummel_quest.play: {SPEED}\n")):
        env = base if level is None else {**base, "TANKSIM_LOG": level}
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env,
                           timeout=120)
        assert (r.returncode, r.stderr) == (0, want), r.stderr
    v = tanksim(None, "validate", "hq50.yaml")   # a check asks for them: shown whatever TANKSIM_LOG says, still ok
    assert (v.returncode, v.stderr) == (0, f"tanksim validate: warning: hq50.yaml: {SPEED}\n")
    assert v.stdout.startswith("hq50.yaml: ok (")


def test_validate_shows_set_up_warnings_of_experiment_comparison_and_tournament_files(tmp_path):
    """``validate`` set up (and so warned about) a scenario file's battle only: an experiment, a rule-set comparison
    or a tournament playing the same scenario said "ok" without the warning.  Now each shows it (stderr, once), and
    ``--json`` lists it under the file's ``warnings``."""
    (tmp_path / "hq50.yaml").write_text(yaml.safe_dump(HQ50), encoding="utf-8")
    files = {"exp.yaml": {"name": "hq50_batch", "scenario": "hq50.yaml", "replications": 2, "seed": 1,
                          "factors": [{"path": "sides.0.policy.name", "levels": ["hold", "advance"]}]},
             "cmp.yaml": {"name": "hq50_cmp", "replications": 2, "seed": 1,
                          "factors": [{"name": "ruleset", "path": "ruleset",
                                       "levels": [{"ruleset": "hummel_quest", "scenario": "hq50.yaml"},
                                                  {"ruleset": "panzer_squadron", "scenario": "skirmish_2v2"}]},
                                      {"name": "doctrine", "path": "sides.0.policy.name",
                                       "levels": ["hold", "advance"]}]},
             "t.yaml": {"name": "hq50_t", "entrants": [{"name": "hold", "policy": "hold"},
                                                      {"name": "adv", "policy": "advance"}],
                        "scenarios": [{"label": "hq", "file": "hq50.yaml"}], "games_per_pairing": 2}}
    env = {k: v for k, v in os.environ.items() if k != "TANKSIM_LOG"}
    for name, data in files.items():
        (tmp_path / name).write_text(yaml.safe_dump(data), encoding="utf-8")
        r = subprocess.run(tanksim_cmd() + ["validate", name], cwd=tmp_path, capture_output=True, text=True,
                           env=env, timeout=120)
        where = {"cmp.yaml": "cell hummel_quest/hq50.yaml: ", "t.yaml": "scenario hq: "}.get(name, "")
        assert (r.returncode, r.stderr) == (0, f"tanksim validate: warning: {name}: {where}{SPEED}\n"), (name,
                                                                                                    r.stderr)
        assert r.stdout.startswith(f"{name}: ok (")
        r = subprocess.run(tanksim_cmd() + ["validate", "--json", name], cwd=tmp_path, capture_output=True,
                           text=True, env=env, timeout=120)
        assert json.loads(r.stdout)["files"][0]["warnings"] == [where + SPEED], (name, r.stdout)


def test_validate_of_several_files_names_each_warning_s_file_and_says_each_problem_once(tmp_path):
    """``validate a.yaml b.yaml``: the set-up warnings named no file; a warning the second file shared with the
    first (the asl catalog's, loaded once) was not shown for it; a hummel_quest speed in a scenario's own
    ``vehicles:`` block came out twice (from the block's check and the set-up).  Now each file gets its own
    warnings, each prefixed with the file, each problem once."""
    import copy

    hq = copy.deepcopy(HQ50)
    hq["vehicles"]["slowpoke"]["speed_m"] = 55   # not a whole number of 10 m (the block's check) nor of 50 m hexes
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(hq), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(hq), encoding="utf-8")
    asl = (Path(__file__).resolve().parents[1] / "scenarios" / "asl_1941_meeting.yaml").read_text(encoding="utf-8")
    (tmp_path / "c.yaml").write_text(asl, encoding="utf-8")
    (tmp_path / "d.yaml").write_text(asl, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TANKSIM_LOG"}
    r = subprocess.run(tanksim_cmd() + ["validate", "a.yaml", "b.yaml", "c.yaml", "d.yaml"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    speed = SPEED.replace("30", "55")
    want = [f"tanksim validate: warning: {f}.yaml: {speed}" for f in "ab"]
    assert [x for x in lines if "speed_m" in x] == want, lines
    asl_c = [x.removeprefix("tanksim validate: warning: c.yaml: ") for x in lines if ": c.yaml: asl catalog" in x]
    asl_d = [x.removeprefix("tanksim validate: warning: d.yaml: ") for x in lines if ": d.yaml: asl catalog" in x]
    assert asl_c and asl_c == asl_d, lines
    assert all(x.startswith(("tanksim validate: warning: a.yaml: ", "tanksim validate: warning: b.yaml: ",
                             "tanksim validate: warning: c.yaml: ", "tanksim validate: warning: d.yaml: "))
               for x in lines), lines


# --- a local Dask cluster: Ctrl-C reaches every process of the group; only the driver answers it ---------------------

@pytest.mark.parametrize("command", ["batch", "tournament"])
def test_dask_local_interrupted_is_quiet_and_resumes(tmp_path, command):
    pytest.importorskip("distributed")
    env = {k: v for k, v in slow_env(tmp_path).items() if k not in ("TANKSIM_LOG", "DASK_LOGGING__DISTRIBUTED")}
    if command == "batch":
        exp = {"name": "slow_dask", "scenario": "default", "replications": 6, "seed": 3,
               "overrides": {"turn_limit": 2},
               "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["slowpol:Slow"]}]}
    else:
        from test_tournament import SMALL_PS, three_entrants

        exp = three_entrants(scenarios=[{"label": "ps", "inline": {**SMALL_PS, "turn_limit": 2}}],
                             games_per_pairing=2, executor={"chunk_games": 1}, metagame={"enabled": False},
                             entrants=[{"name": "slow", "policy": "slowpol:Slow"}, {"name": "hold", "policy": "hold"}])
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    args = [command, "f.yaml", "--out", "out", "--dask-local", "2", "--no-progress"]
    rc, out, err = interrupt(args, "out/runs/*.parquet", cwd=tmp_path, env=env)
    assert rc == 130, err
    noise = ("Traceback", "Error", "distributed", "INFO", "KeyboardInterrupt")
    assert not [line for line in err.splitlines() if any(n in line for n in noise)], err
    assert len(err.splitlines()) <= 3, err   # the header and how to resume
    if command == "tournament":   # its resume is checked on a process pool above (a second cluster is slow)
        return
    (tmp_path / "slow").unlink()
    r = subprocess.run(tanksim_cmd() + args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr   # the rest played, quietly: no INFO lines of Dask's by default
    assert not [line for line in r.stderr.splitlines() if any(n in line for n in noise)], r.stderr


def test_the_forkserver_starts_deaf_to_ctrl_c(tmp_path):
    """The forkserver imports the workers' modules before it ignores SIGINT itself: a Ctrl-C in a batch's first
    second printed its KeyboardInterrupt traceback.  It is now started with SIGINT ignored (the driver handles
    Ctrl-C), checked in a fresh process from the kernel's view of the server (``SigIgn``)."""
    import subprocess
    import sys

    code = ("import multiprocessing.forkserver as fs, signal\n"
            "from sim.experiments import batch\n"
            "ex = batch._process_pool(1)\n"
            "pid = fs._forkserver._forkserver_pid\n"
            "line = next(x for x in open(f'/proc/{pid}/status') if x.startswith('SigIgn'))\n"
            "print(bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1))))\n"
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
            "batch._release(ex); ex.shutdown()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr


# --- Ctrl-C stops a batch promptly: queued battles are not started, resume neither loses nor repeats a run -------

STARTS_POLICY = '''
import time
import tomllib
from pathlib import Path
from agents.policies.hold import Hold

class Timed(Hold):
    """Holds, 0.1 s a decision; appends the wall-clock time to "starts" (in the working folder) at each battle's
    first decision."""
    def decide(self, obs, decision):
        if not getattr(self, "_started", False):
            self._started = True
            with open("starts", "a") as f:
                f.write(f"{time.time()}\\n")
        time.sleep(0.1)
        return super().decide(obs, decision)
'''


@pytest.mark.parametrize("command", ["batch", "compare-rulesets"])
def test_ctrl_c_starts_no_queued_battle_and_resume_completes(tmp_path, command):
    """After Ctrl-C no battle starts (each worker finished the one it was playing, the queued chunks came back
    unplayed; they had played on for seconds); the resumed run stores every battle once."""
    (tmp_path / "timedpol.py").write_text(STARTS_POLICY, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    overrides = {"turn_limit": 2, "sides.1.policy.name": "hold"}
    if command == "batch":
        exp = {"name": "stop_soon", "scenario": "default", "replications": 24, "seed": 3, "overrides": overrides,
               "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["timedpol:Timed"]}]}
        folders = ["out"]
    else:
        exp = {"name": "stop_soon", "replications": 12, "seed": 3, "overrides": overrides,
               "factors": [{"name": "ruleset", "path": "ruleset",
                            "levels": [{"ruleset": "panzer_squadron", "scenario": "skirmish_2v2"},
                                       {"ruleset": "hummel_quest", "scenario": "hq_skirmish"}]},
                           {"name": "doctrine", "path": "sides.0.policy.name", "levels": ["timedpol:Timed"]}]}
        folders = []
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    args = [command, "f.yaml", "--out", "out", "--workers", "1", "--no-progress"]
    starts = tmp_path / "starts"

    def four_started() -> bool:   # past the single-battle calibration chunks: battles are queued behind this one
        return starts.exists() and len(starts.read_text().split()) >= 4

    sent: list[float] = []

    def ready() -> bool:
        if four_started():
            sent.append(time.time())
            return True
        return False

    rc, out, err = interrupt(args, ready, cwd=tmp_path, env=env)
    assert rc == 130, err
    late = [float(x) for x in starts.read_text().split() if float(x) > sent[0] + 0.05]
    assert late == [], f"{len(late)} battles started after Ctrl-C"
    r = subprocess.run(tanksim_cmd() + args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    total = 0
    for folder in folders or sorted((tmp_path / "out" / "cells").iterdir()):
        raw = store.read_parts(tmp_path / folder, "runs")
        assert raw["run_key"].is_unique
        total += len(raw)
    assert total == 24


# --- SIGTERM is Ctrl-C for every long-running command -------------------------------------------------------------

@pytest.mark.parametrize("command", ["tournament", "compare-rulesets", "match", "run"])
def test_sigterm_ends_a_long_command_as_ctrl_c_does(tmp_path, command):
    """``kill PID`` killed a tournament (and match, run, compare-rulesets) on the spot: no partial tables, no
    ``interrupted`` line, exit -15.  Now it stops as after Ctrl-C: one line, exit 130, and a tournament resumes."""
    env = slow_env(tmp_path)
    if command == "tournament":
        from test_tournament import SMALL_PS, three_entrants

        data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], games_per_pairing=6,
                              executor={"workers": 2, "chunk_games": 1}, metagame={"enabled": False})
        (tmp_path / "f.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
        args, ready = ["tournament", "f.yaml", "--out", "out", "--no-plots", "--no-progress"], "out/runs/*.parquet"
    elif command == "compare-rulesets":
        comp = {"name": "cmp", "replications": 6, "seed": 5, "overrides": {"turn_limit": 2},
                "factors": [{"name": "ruleset", "path": "ruleset",
                             "levels": [{"ruleset": "panzer_squadron", "scenario": "skirmish_2v2"},
                                        {"ruleset": "hummel_quest", "scenario": "hq_skirmish"}]},
                            {"name": "doctrine", "path": "sides.0.policy.name", "levels": ["slowpol:Slow"]}]}
        (tmp_path / "f.yaml").write_text(yaml.safe_dump(comp), encoding="utf-8")
        args = ["compare-rulesets", "f.yaml", "--out", "out", "--workers", "1", "--no-progress"]
        ready = "started"
    elif command == "match":
        args = ["match", "slowpol:Slow", "hold", "--scenario", "default", "--workers", "1", "--max-games", "40"]
        ready = "started"
    else:
        args, ready = ["run", "default", "--policy", "1=slowpol:Slow"], "started"
    rc, out, err = interrupt(args, ready, cwd=tmp_path, env=env, sig=signal.SIGTERM)
    assert rc == 130, (rc, err)
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last == f"tanksim {command}: interrupted" or last.startswith(f"tanksim {command}: interrupted: "), err
    if command == "tournament":
        n = int(last.split("stored ")[1].split()[0])
        assert f"interrupted: {n} of 18 games; partial results" in out
        r = subprocess.run(tanksim_cmd() + args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"({n} already stored)" in r.stdout


# --- Ctrl-C while the command's modules are still loading ----------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_the_command_loads_is_one_line_exit_130(tmp_path, signum):
    # the console script's entry point (pyproject.toml) is sim.console:main; the interrupt is made to come exactly
    # while sim.cli.main is imported (a finder that delivers the signal there), not at a time that load would vary
    code = ("import os, signal, sys\n"
            "class Interrupt:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'sim.cli.main':\n"
            f"            os.kill(os.getpid(), {int(signum)})\n"
            "        return None\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "from sim.console import main\n"
            "sys.exit(main(['validate', 'default']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 130, out.stderr
    assert out.stderr == "tanksim: interrupted\n"
    assert out.stdout == ""


def test_the_console_script_is_the_loading_guard():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    assert scripts["tanksim"] == "sim.console:main"


def test_python_dash_m_sim_cli_is_the_command():
    # `python -m sim.cli ARGS` (the fallback where no console script is installed) runs the same entry point
    out = subprocess.run([sys.executable, "-m", "sim.cli", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("tanksim ")


def test_interrupted_before_a_new_battle_counts_what_the_folder_holds(tmp_path, monkeypatch, capsys):
    """Ctrl-C while a resumed batch / compare-rulesets starts (before it plays a battle) said 'no battle played;
    run the same command again to start it' though the folder held an earlier run's battles: now it says how many
    of the job's battles are stored there."""
    from sim.cli import compare as compare_cli
    from sim.cli import experiments as batch_cli
    from sim.experiments import batch, compare

    exp = {"name": "small", "scenario": "default", "replications": 3, "seed": 3, "overrides": {"turn_limit": 2},
           "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["hold"]}]}
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    out = tmp_path / "out"
    args = ["f.yaml", "--out", str(out), "--workers", "1", "--no-progress"]
    monkeypatch.chdir(tmp_path)
    assert batch_cli.main(args) == 0
    exp["replications"] = 5   # the same design, more replications: 3 of 5 stored ...
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")
    capsys.readouterr()

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "execute", stop)   # ... and Ctrl-C before any new battle is played
    assert batch_cli.main(args) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"tanksim batch: interrupted: stored 3 of 5 battles in {out} (played 0 now); run the same command again to "
        f"complete the remaining 2")
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    comp = {"name": "cmp", "factors": [{"name": "ruleset", "path": "ruleset",
                                        "levels": ["panzer_squadron", "hummel_quest"]},
                                       {"name": "doctrine", "path": "sides.0.policy.name",
                                        "levels": ["hold", "advance"]}],
            "overrides": {"turn_limit": 2, "sides.1.policy.name": "advance"}, "replications": 2, "seed": 5}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(comp), encoding="utf-8")
    cargs = ["c.yaml", "--out", str(tmp_path / "cmp"), "--workers", "1", "--no-progress", "--resamples", "10"]
    assert compare_cli.main(cargs) == 0
    capsys.readouterr()
    monkeypatch.setattr(compare, "run_comparison", stop)
    assert compare_cli.main(cargs) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"tanksim compare-rulesets: interrupted: stored 8 of 8 battles in {tmp_path / 'cmp'} (2 of 2 cells "
        f"complete); run the same command again to complete it")


@pytest.mark.parametrize("as_json", [False, True])
def test_tournament_interrupted_while_rating_says_what_is_stored(tmp_path, monkeypatch, capsys, as_json):
    """Ctrl-C / SIGTERM while the ratings and tables are computed (every game stored) printed a bare 'tanksim
    tournament: interrupted' and, with --json, nothing on stdout: now the documented line with the count, and an
    object with "interrupted": true."""
    from test_tournament import SMALL_PS, three_entrants

    from sim.cli.main import main
    from sim.tournaments import tournament as T

    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], games_per_pairing=2,
                          executor={"workers": 1, "chunk_games": 1}, metagame={"enabled": False})
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "out"
    args = ["tournament", str(tmp_path / "t.yaml"), "--out", str(out), "--no-plots", "--no-progress"]
    assert main(args) == 0
    capsys.readouterr()

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(T, "analyse", stop)
    assert main(args + ["--json"] * as_json) == 130
    got = capsys.readouterr()
    assert got.err.strip().splitlines()[-1] == (f"tanksim tournament: interrupted: stored 6 of 6 games in {out}; "
                                                f"run the same command again to finish")
    if as_json:
        doc = json.loads(got.out)
        assert doc["interrupted"] is True and (doc["games"], doc["stored"]) == (6, 6)


def test_tournament_interrupted_before_a_game_is_stored_still_prints_its_json(tmp_path):
    """Ctrl-C in the first game (nothing stored) with --json printed nothing on stdout: now an object with
    "interrupted": true and "stored": 0 (and the one interrupted line on stderr)."""
    from test_tournament import SMALL_PS, three_entrants

    env = slow_env(tmp_path)
    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], games_per_pairing=2,
                          executor={"workers": 1, "chunk_games": 1}, metagame={"enabled": False},
                          entrants=[{"name": "slow", "policy": "slowpol:Slow"}, {"name": "hold", "policy": "hold"}])
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    rc, out, err = interrupt(["tournament", "t.yaml", "--out", "out", "--no-plots", "--no-progress", "--json"],
                             "started", cwd=tmp_path, env=env)
    assert rc == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["stored"] == 0 and doc["games"] == 2
    assert err.strip().splitlines()[-1] == ("tanksim tournament: interrupted: no games stored yet; run the same "
                                            "command again to play them")


def test_batch_interrupted_while_its_workers_start_closes_the_bar_before_its_line(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the executor starts left the progress bar open: it was drawn again after the 'interrupted'
    line (stderr ended '...run/s]tanksim batch: interrupted: ...' then 'small: 0%|...').  The bar is closed
    first: the interrupted line is the last, on a line of its own."""
    from sim.cli import experiments as batch_cli
    from sim.experiments import batch

    exp = {"name": "small", "scenario": "default", "replications": 2, "seed": 3, "overrides": {"turn_limit": 2},
           "factors": [{"name": "blue", "path": "sides.0.policy.name", "levels": ["hold"]}]}
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(exp), encoding="utf-8")

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "open_executor", stop)
    assert batch_cli.main([str(tmp_path / "f.yaml"), "--out", str(tmp_path / "out"), "--workers", "1"]) == 130
    err = capsys.readouterr().err
    line = "tanksim batch: interrupted: no battle played; run the same command again to start it"
    assert err.endswith("\n" + line + "\n"), repr(err[-300:])
