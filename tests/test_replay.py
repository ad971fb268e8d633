"""Replays from the stored event log alone: frame counts, the last frame against the run-time snapshot, batch-style
results folders, markers, and clear errors."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from PIL import Image

from conftest import small_ps_scenario
from sim import cli
from sim.events import Activated, BattleStarted, TankStateSet, TurnStarted, event_from_payload
from sim.experiments.store import events_table, write_table_atomic
from sim.runner import run_battle
from sim.scenario import validate
from sim.view import replay


def _run_and_forget_scenario(tmp_path, monkeypatch, seed=2):
    """`tanksim run FILE --out DIR`, then delete the scenario file and make any scenario lookup fail."""
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario()))
    out = tmp_path / "out"
    assert cli.main(["run", str(f), "--seed", str(seed), "--out", str(out)]) == 0
    f.unlink()

    def no_scenario(*a, **k):
        raise AssertionError("a replay must not read a scenario")

    monkeypatch.setattr("sim.scenario.find_scenario", no_scenario)
    monkeypatch.setattr("sim.scenario.load_scenario", no_scenario)
    return out


def test_replay_without_scenario_matches_final_snapshot(tmp_path, monkeypatch, capsys):
    out = _run_and_forget_scenario(tmp_path, monkeypatch)
    capsys.readouterr()
    rows = pd.read_parquet(out / "events.parquet")
    battle = pd.read_parquet(out / "battle.parquet").iloc[0]
    final = json.loads((out / "final_state.json").read_text())

    frs = replay.replay(out)  # per activation
    assert len(frs) == 1 + int((rows["kind"] == "Activated").sum())
    assert frs[0].index == 0 and frs[0].activations == 0 and frs[0].turn == 0
    assert frs[-1].state == final  # positions, facing, turrets, statuses and rules_state, exactly
    assert frs[-1].turn == battle["turns"]
    assert [f.activations for f in frs] == list(range(len(frs)))
    # wrecks only accumulate; every shot drawn has a known result colour class
    wrecks = [sum(t.status == "destroyed" for t in f.picture.tanks) for f in frs]
    assert wrecks == sorted(wrecks) and wrecks[-1] == battle["side1_lost"] + battle["side2_lost"]
    assert sum(len(f.picture.shots) for f in frs) == battle["shots"]
    assert all(len(path) >= 2 for f in frs for _, path in f.picture.moves)
    assert (battle["winner"] or "draw") in frs[-1].caption

    with pytest.raises(replay.ReplayError, match="one battle stored without an id.*leave out --battle"):
        replay.replay(out, "x")  # nothing to pick: refused, not ignored
    per_turn = replay.replay(out / "events.parquet", per="turn")
    assert len(per_turn) == 1 + battle["turns"]
    assert per_turn[-1].state == final

    gif = tmp_path / "battle.gif"
    assert replay.main([str(out), "--out", str(gif), "--per", "turn", "--size", "4", "--dpi", "50"]) == 0
    assert f"{len(per_turn)} frames" in capsys.readouterr().out
    with Image.open(gif) as im:
        assert im.n_frames == len(per_turn)


def test_replay_through_the_console_entry(tmp_path, monkeypatch, capsys):
    out = _run_and_forget_scenario(tmp_path, monkeypatch, seed=5)
    capsys.readouterr()
    gif = tmp_path / "b.gif"
    assert cli.main(["replay", str(out / "events.parquet"), "--out", str(gif), "--per", "turn", "--dpi", "40",
                     "--size", "3"]) == 0
    assert gif.stat().st_size > 1000



def test_results_folder_with_battle_ids(tmp_path):
    spec = validate(small_ps_scenario(), "small")
    r1, r2 = run_battle(spec, 1), run_battle(spec, 2)
    res = tmp_path / "results"
    # one flat part with a battle_id column (two battles), one Hive-style part, and a non-event table
    t1 = events_table(r1.events, {"battle_id": "a1"})
    write_table_atomic(t1, res / "events" / "part-0.parquet")
    write_table_atomic(events_table(r2.events), res / "events" / "battle_id=b2" / "part-0.parquet")
    write_table_atomic(events_table(r2.events, {"battle_id": "zz"}).slice(0, 0), res / "events" / "part-1.parquet")
    pd.DataFrame([r1.row, r2.row]).to_parquet(res / "battles.parquet")

    assert replay.replay(res, "a1")[-1].state == r1.final_state
    assert replay.replay(res, "b2")[-1].state == r2.final_state
    with pytest.raises(replay.ReplayError, match="holds 2 battles.*--battle"):
        replay.read_event_rows(res)
    with pytest.raises(replay.ReplayError, match="no battle 'nope'"):
        replay.read_event_rows(res, "nope")


def test_markers_from_events(tmp_path):
    spec = validate(small_ps_scenario(), "small")
    r = run_battle(spec, 1)
    start = event_from_payload("BattleStarted", json.loads(r.events[0]["data"]))
    assert isinstance(start, BattleStarted)
    evs = [(0, start), (1, TurnStarted(1)), (1, Activated(0, 0, "move")), (1, TankStateSet(0, "panicked", True)),
           (1, Activated(1, 3, "fire")), (1, TankStateSet(3, "shocked", True)), (1, TankStateSet(0, "panicked", False))]
    frs = replay.frames(evs)
    assert len(frs) == 3
    marks = {t.label: t.markers for t in frs[1].picture.tanks if t.markers}
    assert list(marks.values()) == [("panicked",)]
    marks = {t.label: t.markers for t in frs[2].picture.tanks if t.markers}
    assert list(marks.values()) == [("shocked",)]
    assert "turn 1 · activation 2" in frs[2].caption


def test_replay_errors(tmp_path, capsys):
    assert replay.main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.gif")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    pd.DataFrame({"seed": [1]}).to_parquet(tmp_path / "battle.parquet")
    assert replay.main([str(tmp_path / "battle.parquet"), "--out", str(tmp_path / "x.gif")]) == 2
    assert "not an event table" in capsys.readouterr().err
    assert replay.main([str(tmp_path), "--out", str(tmp_path / "x.gif")]) == 2
    assert "no event table found" in capsys.readouterr().err
    spec = validate(small_ps_scenario(), "small")
    write_table_atomic(events_table(run_battle(spec, 1).events), tmp_path / "one" / "events.parquet")
    assert replay.main([str(tmp_path / "one"), "--out", str(tmp_path / "x.txt")]) == 2
    assert "use .gif or .mp4" in capsys.readouterr().err
    headless = events_table(run_battle(spec, 1).events).slice(1)
    write_table_atomic(headless, tmp_path / "cut" / "events.parquet")
    assert replay.main([str(tmp_path / "cut"), "--out", str(tmp_path / "x.gif")]) == 2
    assert "does not start with a BattleStarted" in capsys.readouterr().err
    from matplotlib import animation
    if not animation.writers.is_available("ffmpeg"):
        assert replay.main([str(tmp_path / "one"), "--out", str(tmp_path / "x.mp4")]) == 2
        assert "needs ffmpeg" in capsys.readouterr().err


def test_batch_results_layout(tmp_path, capsys):
    """The batch driver's layout: DIR/runs/part-N.parquet + DIR/events/part-N.parquet with a run_key column."""
    from sim.experiments import store

    if not hasattr(store, "write_run_part"):
        pytest.skip("batch store layout not available")
    spec = validate(small_ps_scenario(), "small")
    results = {f"key{s}": run_battle(spec, s) for s in (3, 4)}
    events = [{"run_key": k, **e} for k, r in results.items() for e in r.events]
    store.write_run_part(tmp_path, 1, [{"run_key": k} for k in results], store.run_schema(), events=events)
    assert replay.battle_ids(tmp_path) == ["key3", "key4"]
    assert replay.replay(tmp_path, "key4", per="turn")[-1].state == results["key4"].final_state
    assert replay.main([str(tmp_path), "--out", str(tmp_path / "x.gif")]) == 2
    assert "holds 2 battles" in capsys.readouterr().err
