"""Ctrl-C (SIGINT) and stop paths through the real ``tanksim`` command: one line, the documented exit status, no
traceback, and a resumable folder where the command stores results."""
from __future__ import annotations

import glob
import importlib
import os
import signal
import subprocess
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import tanksim_cmd
from sim.experiments import store


def interrupt(args: list[str], ready: str | float | Callable[[], bool], *, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 60) -> tuple[int, str, str]:
    """Start ``tanksim ARGS`` in its own process group, wait until a file matches the glob ``ready`` (relative to
    ``cwd``) or ``ready`` seconds pass, send SIGINT to the whole group (what Ctrl-C in a terminal does: worker
    processes get it too), and return ``(exit status, stdout, stderr)``."""
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
    os.killpg(proc.pid, signal.SIGINT)
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
    """Holds, slowly; touches the file "started" (in the working folder) at its first decision."""
    def decide(self, obs, decision):
        Path("started").touch()
        time.sleep(0.5)
        return super().decide(obs, decision)
'''


def slow_env(folder: Path) -> dict[str, str]:
    """An environment whose ``PYTHONPATH`` finds ``slowpol:Slow`` (written into ``folder``)."""
    (folder / "slowpol.py").write_text(SLOW_POLICY, encoding="utf-8")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


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
    from test_tournament import three_entrants, SMALL_PS

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


def test_app_stopped_with_ctrl_c_is_one_line_exit_0(tmp_path):
    pytest.importorskip("solara")
    port = _port()
    rc, out, err = interrupt(["app", "default", "--play", "Soviets", "--port", str(port)],
                             lambda: _listening(port), cwd=tmp_path)
    assert (rc, err.strip()) == (0, "tanksim app: stopped"), err
    assert f"at http://127.0.0.1:{port}/" in out


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
    assert announced and announced[0] != 0 and proc.returncode == 0
