"""Tidy tables: ``shots.parquet`` (one row per shot, exact odds), ``tanks.parquet`` (one row per tank per turn) and
``sides.parquet`` (the side-index lookup) from ``tanksim run --out`` and from batches, lining up across scenarios
and rule sets; their parts are under the results folder's checksums."""
from __future__ import annotations

import json
from fractions import Fraction

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from conftest import small_ps_scenario
from sim.cli.main import main as tanksim
from sim.experiments import store
from sim.experiments.batch import run_experiment, verified_manifest
from sim.hexgrid import Hex, distance
from sim.rules.base import get
from sim.runner import run_battle
from sim.scenario import load_scenario


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """``tanksim run --out`` of a Panzer Squadron and an ASL battle."""
    root = tmp_path_factory.mktemp("tables")
    for name, seed in (("default", 3), ("asl_1941_meeting", 1)):
        assert tanksim(["run", name, "--seed", str(seed), "--out", str(root / name)]) == 0
    return root


def test_join_shots_tables_of_two_scenarios(two_runs):
    a, b = (two_runs / n for n in ("default", "asl_1941_meeting"))
    assert pq.read_schema(a / "shots.parquet") == pq.read_schema(b / "shots.parquet")  # explicit, identical
    frames = []
    for folder in (a, b):
        shots = pd.read_parquet(folder / "shots.parquet")
        battle = pd.read_parquet(folder / "battle.parquet")
        sides = pd.read_parquet(folder / "sides.parquet")
        # per-side lookup: the shooter's side name by side index, the same way in every scenario
        shots = shots.merge(sides[["side", "name"]].rename(columns={"side": "shooter_side", "name": "shooter_army"}),
                            on="shooter_side", how="left")
        shots["scenario"] = battle.loc[0, "scenario"]
        assert len(shots) == battle.loc[0, "shots"] and shots["kill"].sum() == battle.loc[0, "kills"]
        frames.append(shots)
    both = pd.concat(frames, ignore_index=True)
    assert set(both["ruleset"]) == {"panzer_squadron", "asl"}
    assert both["shooter_army"].notna().all()
    by = both.groupby("scenario").agg(shots=("seq", "size"), hits=("hit", "sum"), expected=("p_hit_float", "sum"))
    assert (by["shots"] > 0).all() and (by["hits"] <= by["shots"]).all()
    assert (both.loc[both["kill"], "hit"]).all()  # a kill is a hit
    for p, f in zip(both["p_hit"], both["p_hit_float"]):
        assert 0 <= Fraction(p) <= 1 and float(Fraction(p)) == pytest.approx(f, abs=1e-15)
    assert (both["p_kill_float"] <= both["p_hit_float"] + 1e-12).all()
    # the exact odds are the rule set's own: the odds command on the logged key gives the same fractions
    for _, s in both.iterrows():
        exact = get(s["ruleset"]).odds_from_params(json.loads(s["key"]))
        assert (exact["p_hit"], exact["p_kill"]) == (s["p_hit"], s["p_kill"])
    # positions at the moment of the shot: the range the rule set logged is the hex distance between them
    hex_m = {load_scenario(n).name: load_scenario(n).map.hex_size_m for n in ("default", "asl_1941_meeting")}
    for _, s in both.iterrows():
        d = distance(Hex(s["shooter_q"], s["shooter_r"]), Hex(s["target_q"], s["target_r"]))
        assert d == s["range"] and s["range_m"] == s["range"] * hex_m[s["scenario"]]
    assert set(both["face"].dropna()) <= {"front", "side", "rear"}
    assert all(isinstance(r, (list, tuple)) or hasattr(r, "__len__") for r in both["rolls"])
    assert sum(len(r) for r in both["rolls"]) > 0


def test_tanks_table_one_row_per_tank_per_turn(two_runs):
    for folder in (two_runs / "default", two_runs / "asl_1941_meeting"):
        tanks = pd.read_parquet(folder / "tanks.parquet")
        battle = pd.read_parquet(folder / "battle.parquet")
        final = json.loads((folder / "final_state.json").read_text())
        n = len(final)
        assert len(tanks) == (battle.loc[0, "turns"] + 1) * n
        assert all(sorted(ids) == list(range(n)) for ids in tanks.groupby("turn")["tank_id"].apply(list))
        last = tanks[tanks["turn"] == battle.loc[0, "turns"]].set_index("tank_id")
        for t in final:
            row = last.loc[t["tank_id"]]
            assert row["status"] == t["status"] and row["label"] == t["label"]
            assert (None if pd.isna(row["q"]) else [int(row["q"]), int(row["r"])]) == t["hex"]
            assert json.loads(row["rules_state"]) == t["rules_state"]
        assert last["kills"].sum() == battle.loc[0, "kills"] and last["shots"].sum() == battle.loc[0, "shots"]
        series = pd.read_parquet(folder / "series.parquet")
        assert {"alive_1", "alive_2"} <= set(series.columns)  # by side index, not by name
        assert not any(c.startswith("alive_") and c not in ("alive_1", "alive_2") for c in series.columns)


def test_event_log_keeps_shot_details_in_typed_columns(two_runs):
    ev = pd.read_parquet(two_runs / "default" / "events.parquet")
    shots = ev[ev["kind"] == "ShotResolved"]
    assert shots["shooter"].notna().all() and shots["hit"].notna().all()
    assert ev.loc[ev["kind"] != "ShotResolved", "shooter"].isna().all()
    for _, r in shots.iterrows():
        d = json.loads(r["data"])
        assert (d["shooter"], d["target"], d["result"], d["hit"], d["kill"]) == (
            r["shooter"], r["target"], r["result"], r["hit"], r["kill"])


def test_hummel_quest_rams_and_shots_have_exact_odds():
    r = run_battle(load_scenario("hq_ram_brawl"), 2, tables=True)
    shots = pd.DataFrame(r.shots)
    assert set(shots["attack"]) == {"fire", "ram"} and shots["p_hit"].notna().all()
    rams = shots[shots["attack"] == "ram"]
    assert (rams["result"].isin(["collision", "evaded"])).all()
    assert (rams["hit"] == (rams["result"] == "collision")).all()


def test_batch_tables_parts_are_checksummed(tmp_path):
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small_ps_scenario(turn_limit=3)), encoding="utf-8")
    exp = {"scenario": "small.yaml", "replications": 3, "seed": 2}
    res = run_experiment(exp, tmp_path / "out", workers=1, tables=True, base_dir=tmp_path)
    shots = store.read_parts(tmp_path / "out", "shots")
    tanks = store.read_parts(tmp_path / "out", "tanks")
    assert set(shots["run_key"]) <= set(res.runs["run_key"]) and set(tanks["run_key"]) == set(res.runs["run_key"])
    per_run = shots.groupby("run_key").size().reindex(res.runs["run_key"], fill_value=0)
    assert list(per_run) == list(res.runs["shots"])
    part = store.part_paths(tmp_path / "out", "shots")[0]
    part.write_bytes(part.read_bytes()[:-20])
    with pytest.raises(store.CorruptResults, match="shots/part-"):
        verified_manifest(tmp_path / "out")
