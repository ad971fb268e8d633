"""Results folders are verified: part checksums, quarantine and replay of bad chunks, kill -9 at every write point,
the folder lock, clear errors from report / run --from on corrupt or edited folders, and the driver that kills a
worker blocked in a C call (process pool, Dask, tournaments).

The experiment is the small one of test_batch (a 3-v-3 on a 12 x 12 board), 2 x 2 points x 2 replications = 8
battles, one battle per part (``chunk_s`` tiny), so each damage hits exactly one chunk.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_batch import write_experiment

from conftest import tanksim_cmd
from sim.experiments import store
from sim.experiments.batch import comparable, load_runs, read_manifest, run_experiment

C_PLUGINS = '''
import ctypes, time
from agents.policies.hold import Hold


class Sleeper(Hold):
    """Blocks in a C call that releases the GIL (time.sleep), on its first decision."""
    def decide(self, obs, decision):
        time.sleep(10 ** 6)


class GilSleeper(Hold):
    """Blocks in a C call that holds the GIL: no thread of its process can run."""
    def decide(self, obs, decision):
        ctypes.PyDLL(None).sleep(10 ** 6)


class Gate(Hold):
    """Holds, but waits while the file named by TANKSIM_TEST_GATE exists."""
    def decide(self, obs, decision):
        import os
        while os.path.exists(os.environ.get("TANKSIM_TEST_GATE", "/nonexistent")):
            time.sleep(0.05)
        return super().decide(obs, decision)
'''


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugins")
    (d / "c_plugins.py").write_text(C_PLUGINS, encoding="utf-8")
    sys.path.insert(0, str(d))
    yield d
    sys.path.remove(str(d))


def _env(*paths, **extra):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")]),
            **extra}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A complete batch folder with events (8 battles, 8 chunks) and its experiment file."""
    d = tmp_path_factory.mktemp("ref")
    exp = write_experiment(d, replications=2)
    res = run_experiment(exp, d / "out", workers=1, events=True)
    assert res.summary.played == 8 and len(store.part_paths(d / "out", "runs")) == 8
    return exp, d / "out", res


def _copy(folder, tmp_path):
    exp, out, res = folder
    dst = tmp_path / "out"
    shutil.copytree(out, dst)
    return exp, dst, res


def _same_as_reference(out, res):
    raw = store.read_parts(out, "runs")
    assert len(raw) == 8 and raw["run_key"].is_unique  # none lost, none stored twice
    pd.testing.assert_frame_equal(comparable(load_runs(out)), comparable(res.runs))
    ev = store.read_parts(out, "events")
    assert set(ev["run_key"]) == set(res.runs["run_key"])
    assert ev.groupby("run_key")["seq"].agg(lambda s: list(s) == list(range(len(s)))).all()
    assert not store.verify_parts(out).problems


def test_every_part_has_a_checksum_in_the_manifest(folder):
    _, out, _ = folder
    m = read_manifest(out)
    assert m["format"] == store.FORMAT
    assert sorted(m["parts"]) == [str(i) for i in range(1, 9)]
    for seq, files in m["parts"].items():
        assert sorted(files) == [f"{k}/part-{int(seq):06d}.parquet" for k in ("events", "runs", "series")]
        for rel, e in files.items():
            assert e["sha256"] == store.file_sha256(out / rel) and e["bytes"] == (out / rel).stat().st_size
            assert e["rows"] == pq.read_metadata(out / rel).num_rows
    assert (out / store.LEDGER).read_text() == ""  # folded into the manifest at the end of the session


def _truncate(p):
    b = p.read_bytes()
    p.write_bytes(b[: len(b) // 2])


def _flip(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0xFF
    p.write_bytes(bytes(b))


@pytest.mark.parametrize("kind, damage", [("runs", "truncate"), ("events", "truncate"), ("series", "flip"),
                                          ("events", "delete"), ("runs", "foreign")])
def test_a_damaged_part_is_named_quarantined_and_its_battles_replayed(folder, tmp_path, kind, damage, capsys):
    from sim.experiments.report import main as report_main

    exp, out, res = _copy(folder, tmp_path)
    part = out / kind / "part-000003.parquet"
    if damage == "truncate":
        _truncate(part)
    elif damage == "flip":
        _flip(part)
    elif damage == "delete":
        part.unlink()
    else:  # a copy of a good part under a new number: without checksums its runs would be counted twice
        part = out / kind / "part-000009.parquet"
        shutil.copy(out / kind / "part-000002.parquet", part)
    capsys.readouterr()
    assert report_main([str(out)]) == 2
    err = capsys.readouterr().err
    assert f"tanksim report: {part}: " in err and "Traceback" not in err
    assert "moves bad parts to DIR/quarantine" in err
    again = run_experiment(exp, out, workers=1, events=True)
    # the battle of the bad chunk is played again (a foreign copy's battles are stored already)
    assert again.summary.played == (0 if damage == "foreign" else 1)
    assert any(str(part) in w for w in again.summary.warnings)
    (qdir,) = (out / store.QUARANTINE).iterdir()
    kept = {p.relative_to(qdir).as_posix() for p in qdir.rglob("*.parquet")}
    n = part.name
    expected = {"foreign": {f"runs/{n}"}, "delete": {f"runs/{n}", f"series/{n}"}}.get(
        damage, {f"{k}/{n}" for k in ("runs", "events", "series")})
    assert kept == expected
    assert str(part) in (qdir / "REASON.txt").read_text()
    _same_as_reference(out, res)
    assert report_main([str(out)]) == 0


@pytest.mark.slow
def test_kill_9_at_every_write_point_loses_and_repeats_nothing(folder, tmp_path):
    """One folder through a chain of hard crashes (os._exit, as kill -9: no clean-up runs) at each point of the
    commit protocol, a damaged part, a crash while quarantining it, a crash while rewriting parts; after each,
    the folder verifies and holds no run twice; the last resume matches the reference."""
    exp, out, res = folder[0], tmp_path / "out", folder[2]
    cmd = tanksim_cmd() + ["batch", str(exp), "--out", str(out), "--workers", "1", "--events", "--no-progress"]

    def batch(crash: str, code: int = 86):
        r = subprocess.run(cmd, env=_env(TANKSIM_CRASH_AT=crash), capture_output=True, text=True, timeout=300)
        assert r.returncode == code, (crash, r.stderr[-2000:])
        raw = store.read_parts(out, "runs")
        assert raw["run_key"].is_unique, crash
        assert not store.verify_parts(out).problems, crash
        return r

    batch("part-written:2")             # temporary files written, no checksum yet
    batch("part-recorded:1")            # checksums journalled, nothing renamed
    batch("part-side-renamed:1")        # the events part renamed, not the series and runs parts
    batch("checkpoint:2")               # manifest written at the end of the session, journal not emptied
    assert len(store.stored_run_keys(out)) == 8
    _truncate(out / "runs" / "part-000002.parquet")
    r = subprocess.run(cmd, env=_env(TANKSIM_CRASH_AT="quarantine:2"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 86, r.stderr[-2000:]  # the runs part moved aside, its events part not yet
    keys = sorted(store.stored_run_keys(out))[:3]
    code = ("import sys; from sim.experiments.batch import drop_runs; "
            f"drop_runs({str(out)!r}, set({keys!r}))")
    r = subprocess.run([sys.executable, "-c", code], env=_env(TANKSIM_CRASH_AT="rewrite:2"), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 86, r.stderr[-2000:]
    assert store.read_parts(out, "runs")["run_key"].is_unique
    batch("", code=0)
    _same_as_reference(out, res)
    assert read_manifest(out)["status"] == "complete"


def test_a_second_batch_is_refused_and_a_dead_holder_s_lock_taken_over(plugins, tmp_path):
    exp = write_experiment(tmp_path, factors=[{"name": "blue", "path": "sides.Blue.policy.name",
                                               "levels": ["c_plugins:Gate"]}], replications=8, chunk_s=0.0001)
    out, gate = tmp_path / "out", tmp_path / "gate"
    cmd = tanksim_cmd() + ["batch", str(exp), "--out", str(out), "--workers", "1", "--no-progress"]
    env = _env(plugins, TANKSIM_TEST_GATE=str(gate))
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(store.part_paths(out, "runs")) < 2 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.02)
        gate.write_text("closed")  # the first batch's next battles wait
        assert first.poll() is None, first.communicate()[1]
        t0 = time.monotonic()
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        assert f"tanksim batch: {out}: in use by pid {first.pid} (tanksim batch" in second.stderr
        assert time.monotonic() - t0 < 60  # at once: it neither waits nor plays
        assert store.lock_holder(out).startswith(f"pid {first.pid}")
        os.kill(first.pid, signal.SIGKILL)  # kill -9: the lock file stays, naming a dead pid
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    assert json.loads((out / store.LOCK).read_text())["pid"] == first.pid and store.lock_holder(out) is None
    stored = store.stored_run_keys(out)
    assert 2 <= len(stored) < 8
    gate.unlink()
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"({len(stored)} from earlier runs)" in again.stdout
    raw = store.read_parts(out, "runs")
    assert len(raw) == 8 and raw["run_key"].is_unique and (raw["status"] == "ok").all()
    assert not store.verify_parts(out).problems


def test_report_on_any_corrupt_folder_is_a_clear_error(folder, tmp_path, capsys):
    from sim.experiments.report import main as report_main

    _, base, _ = folder
    cases = {
        "manifest.json": lambda o: (o / "manifest.json").write_text('{"design": [1, 2'),
        "manifest.json: design.points": lambda o: _edit_manifest(o, lambda m: m["design"].update(points=7)),
        "manifest.json: design.points[1].params": lambda o: _edit_manifest(
            o, lambda m: m["design"]["points"][1]["params"].update({"sides.Red.policy.name": "rush"})),
        "manifest.json: experiment_hash": lambda o: _edit_manifest(o, lambda m: m["design"]["experiment"].update(
            common_random_numbers=True)),
        "manifest.json: design.seed": lambda o: _edit_manifest(o, lambda m: m["design"].update(seed=12)),
        "manifest.json: parts": lambda o: _edit_manifest(o, lambda m: m.update(parts=[1])),
        "parts.jsonl: line 1": lambda o: (o / store.LEDGER).write_text("garbage\n{}\n"),
        "runs/part-000004.parquet": lambda o: (o / "runs" / "part-000004.parquet").write_bytes(b"PAR1junk"),
        "series/part-000005.parquet": lambda o: _truncate(o / "series" / "part-000005.parquet"),
    }
    for i, (where, damage) in enumerate(cases.items()):
        out = tmp_path / f"c{i}"
        shutil.copytree(base, out)
        damage(out)
        capsys.readouterr()
        assert report_main([str(out)]) == 2, where
        err = capsys.readouterr().err
        assert f"tanksim report: {out / where}" in err, (where, err)
        assert "Traceback" not in err


def _edit_manifest(out, edit):
    m = json.loads((out / "manifest.json").read_text())
    edit(m)
    (out / "manifest.json").write_text(json.dumps(m))


def test_run_from_verifies_the_stored_hashes_before_building_anything(folder, tmp_path, capsys, monkeypatch):
    from sim.cli.main import main as cli_main

    _, base, res = folder
    bid = res.runs["run_key"].iloc[0]
    marker = tmp_path / "ran"
    edits = {
        # a command smuggled into the stored base scenario: the base no longer hashes to its key
        "does not hash to its key": lambda m: m["bases"][m["design"]["base_key"]]["data"]["sides"][1].update(
            policy={"name": "agents.isolation:RemotePolicy",
                    "params": {"entrant": {"command": ["/bin/sh", "-c", f"touch {marker}"]}}}),
        "seed": lambda m: m["design"].update(seed=m["design"]["seed"] + 1),
    }
    def no_building(*a, **k):
        raise AssertionError("nothing may be validated, loaded or built before the hashes are checked")

    for i, (what, edit) in enumerate(edits.items()):
        out = tmp_path / f"e{i}"
        shutil.copytree(base, out)
        _edit_manifest(out, edit)
        capsys.readouterr()
        with monkeypatch.context() as mp:
            for target in ("sim.experiments.batch.validate", "sim.scenario.validate", "agents.controllers.load_policy",
                           "sim.experiments.batch.play"):
                mp.setattr(target, no_building)
            assert cli_main(["run", "--from", str(out), "--battle", bid]) == 2
        err = capsys.readouterr().err
        assert f"tanksim run --from: {out / 'manifest.json'}: " in err and "refusing to run anything" in err, err
        assert (what in err) or ("experiment_hash" in err), err
    time.sleep(0.5)
    assert not marker.exists()
    # a runs part edited (the seed of a stored battle) fails its checksum
    out = tmp_path / "p"
    shutil.copytree(base, out)
    part = next(p for p in store.part_paths(out) if bid in pq.read_table(p).column("run_key").to_pylist())
    t = pq.read_table(part)
    t = t.set_column(t.schema.get_field_index("seed"), "seed", pa.array([1] * t.num_rows, type=pa.int64()))
    pq.write_table(t, part)
    assert cli_main(["run", "--from", str(out), "--battle", bid]) == 2
    assert re.search(rf"{re.escape(str(part))}: (checksum mismatch|truncated or changed)", capsys.readouterr().err)
    # ... and one whose checksum was recomputed fails the run's identity hash
    seq = int(part.stem.split("-")[1])
    store.PartLedger(out).record_chunk(seq, {f: f for f in store.part_files(out)[seq].values()})
    capsys.readouterr()
    assert cli_main(["run", "--from", str(out), "--battle", bid]) == 2
    err = capsys.readouterr().err
    assert f"battle {bid}: its point, replication and seed do not hash to its key (edited)" in err
    assert cli_main(["run", "--from", str(base), "--battle", bid]) == 0  # the untouched folder still replays


#: The watchdog of the hang tests: short, yet ten times what a small battle takes on a loaded machine.
WATCHDOG_S = 3.0


def _hang_experiment(tmp_path, levels, **over):
    return write_experiment(tmp_path, factors=[{"name": "blue", "path": "sides.Blue.policy.name",
                                                "levels": ["hold", *levels]}],
                            replications=1, watchdog_s=WATCHDOG_S, chunk_s=5.0, **over)


def _check_hang_rows(res, stuck, deadline=()):
    runs = res.runs.set_index("blue")
    assert runs.loc["hold", "status"] == "ok"
    for lvl in stuck:
        assert runs.loc[lvl, "status"] == "timeout"
        assert runs.loc[lvl, "error"] == (f"exceeded the watchdog of {WATCHDOG_S:g} s while blocked outside Python "
                                          f"(a C call such as time.sleep, or blocking I/O); the worker process was "
                                          f"killed and replaced")
    for lvl in deadline:
        assert runs.loc[lvl, "status"] == "timeout"
        assert runs.loc[lvl, "error"].startswith(f"ran past the watchdog of {WATCHDOG_S:g} s plus a grace of 2 s")
    assert store.read_parts(res.out)["run_key"].is_unique


def test_a_plugin_blocked_in_c_is_killed_on_a_process_pool(plugins, tmp_path):
    exp = _hang_experiment(tmp_path, ["c_plugins:Sleeper", "c_plugins:GilSleeper"])
    ref = run_experiment(write_experiment(tmp_path / "r", factors=[
        {"name": "blue", "path": "sides.Blue.policy.name", "levels": ["hold"]}], replications=1), workers=1)
    res = run_experiment(exp, tmp_path / "out", workers=2)
    _check_hang_rows(res, ["c_plugins:Sleeper"], ["c_plugins:GilSleeper"])
    hold = res.runs[res.runs["blue"] == "hold"].drop(columns=["blue", "point"])
    cols = ["winner", "reason", "turns", "shots", "hits", "kills", "side1_lost", "side2_lost"]
    pd.testing.assert_frame_equal(hold[cols].reset_index(drop=True), ref.runs[cols].reset_index(drop=True))
    # stored, not retried for ever: the next run has nothing to do; --retry-failed plays them again
    again = run_experiment(exp, tmp_path / "out", workers=1)
    assert again.summary.played == 0 and again.summary.failed_stored == 2


def test_a_plugin_blocked_in_c_is_killed_on_dask(plugins, tmp_path):
    pytest.importorskip("distributed")
    exp = _hang_experiment(tmp_path, ["c_plugins:Sleeper"])
    res = run_experiment(exp, tmp_path / "out", dask_local=1)
    assert res.summary.executor == "dask"
    _check_hang_rows(res, ["c_plugins:Sleeper"])


def test_a_tournament_entrant_blocked_in_c_forfeits_and_the_tournament_completes(plugins, tmp_path):
    from test_tournament import SMALL_PS, three_entrants

    from sim.tournaments import tournament as T

    data = three_entrants(entrants=[{"name": "hold", "policy": "hold"}, {"name": "advance", "policy": "advance"},
                                    {"name": "sleeper", "policy": "c_plugins:Sleeper"}],
                          scenarios=[{"label": "ps", "inline": SMALL_PS}],
                          executor={"workers": 2, "battle_timeout_s": WATCHDOG_S, "chunk_games": 2})
    t = T.tournament_from_mapping(data, "c.yaml")
    s = T.run_tournament(t, tmp_path / "out", progress=False)
    assert s.played == 6 and s.failed == 0
    g = T.load_games(t, tmp_path / "out")
    assert (g["status"] == "ok").all() and g["run_key"].is_unique
    vs = g[(g["entrant1"] == "sleeper") | (g["entrant2"] == "sleeper")]
    assert (vs["forfeit_entrant"] == "sleeper").all() and (vs["fault_kind"] == "battle_timeout").all()
    assert vs["reason"].str.contains(f"blocked outside Python, e.g. in a C call, past the battle watchdog of "
                                     f"{WATCHDOG_S:g} s; the worker process was killed").all()
    other = g[(g["entrant1"] != "sleeper") & (g["entrant2"] != "sleeper")]
    assert not other["forfeit"].any()
    assert T.run_tournament(t, tmp_path / "out", progress=False).played == 0  # stored once, not replayed


def test_tournament_folders_are_locked_verified_and_repaired(tmp_path):
    from test_tournament import SMALL_PS, three_entrants

    from sim.tournaments import tournament as T

    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], executor={"workers": 1, "chunk_games": 2})
    t = T.tournament_from_mapping(data, "t.yaml")
    out = tmp_path / "out"
    T.run_tournament(t, out, progress=False)
    ref = T.comparable(T.load_games(t, out))
    m = T.read_manifest(out)
    assert m["format"] == store.FORMAT and len(m["parts"]) == 3
    _flip(out / "runs" / "part-000002.parquet")
    with pytest.raises(store.CorruptResults, match=r"part-000002\.parquet: checksum mismatch"):
        T.load_games(t, out)
    with store.folder_lock(out, "a test"), \
            pytest.raises(store.FolderInUse, match=rf"{out}: in use by pid {os.getpid()}"):
        T.run_tournament(t, out, progress=False)
    with pytest.warns(UserWarning, match=r"part-000002\.parquet: checksum mismatch.*moved to"):
        s = T.run_tournament(t, out, progress=False)
    assert s.played == 2
    pd.testing.assert_frame_equal(T.comparable(T.load_games(t, out)), ref)


def test_a_batch_and_a_tournament_never_share_a_folder(folder, tmp_path):
    from test_tournament import SMALL_PS, three_entrants

    from sim.experiments.batch import BatchRefused
    from sim.tournaments import tournament as T

    exp, out, _ = _copy(folder, tmp_path)
    t = T.tournament_from_mapping(three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}]), "t.yaml")
    with pytest.raises(T.TournamentError, match=r"holds other results \(manifest.json: a batch's\)"):
        T.run_tournament(t, out, progress=False)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "tournament.json").write_text("{}")
    with pytest.raises(BatchRefused, match=r"holds other results \(tournament.json: a tournament's\)"):
        run_experiment(exp, tmp_path / "t", workers=1)
    assert not store.verify_parts(out).problems and not (out / store.QUARANTINE).exists()


@pytest.mark.parametrize("kind", ["runs", "series"])
def test_replay_refuses_a_folder_with_a_damaged_part_even_when_its_own_events_are_intact(folder, tmp_path, kind,
                                                                                       capsys):
    """``tanksim replay`` checks a results folder whole, as ``report`` and ``run --from`` do: a battle whose own
    event part is intact is not replayed from a folder where another part was changed."""
    from sim.cli.main import main as cli_main

    _exp, base, _res = folder
    out = tmp_path / "out"
    shutil.copytree(base, out)
    events = store.part_paths(out, "events")
    bid = str(pq.read_table(events[0]).column("run_key")[0])
    damaged = store.part_paths(out, kind)[-1]
    assert damaged.name != events[0].name  # another chunk's part: the replayed battle's own files are intact
    with open(damaged, "ab") as fh:
        fh.write(b"xx")
    gif = tmp_path / "b.gif"
    assert cli_main(["replay", str(out), "--battle", bid, "--out", str(gif)]) == 2
    err = capsys.readouterr().err
    assert f"tanksim replay: {damaged}: truncated or changed" in err, err
    assert not gif.exists()
    assert cli_main(["replay", str(base), "--battle", bid, "--out", str(gif)]) == 0  # the intact folder replays
    assert gif.is_file()
