"""Mesa-native data: ``mesa.batch_run`` on ``BattleModel`` (rng / seed, scenario names and objects, dotted-path
overrides), per-tank agent reporters, the turn-0 row, agent ids mapped to tank ids, and extra reporters named in data
(``collect:``), plug-ins checked without importing them."""
from __future__ import annotations

import sys

import mesa
import pandas as pd
import pytest

from agents.collect import ReporterError, check_collect
from sim.model import BattleModel, SeedError
from sim.runner import run_battle
from sim.scenario import ScenarioError, load_scenario


def _batch(**kw) -> pd.DataFrame:
    return pd.DataFrame(mesa.batch_run(BattleModel, number_processes=1, display_progress=False, **kw))


def test_batch_run_gives_per_tank_data_matching_headless_runs():
    df = _batch(parameters={"scenario": ["skirmish_2v2"], "rng": range(3), "turn_limit": 5},
                data_collection_period=1)
    spec = load_scenario("skirmish_2v2", {"turn_limit": 5})
    n_tanks = sum(len(s.tanks) for s in spec.sides)
    assert sorted(df["rng"].unique()) == [0, 1, 2]
    for seed, run in df.groupby("rng"):
        ref = run_battle(spec, int(seed)).row
        turns = ref["turns"]
        assert len(run) == (turns + 1) * n_tanks  # one row per tank per turn, the set-up (turn 0) first
        assert sorted(run["turn"].unique()) == list(range(turns + 1))
        assert (run["AgentID"] == run["tank_id"] + 1).all()  # Mesa numbers agents from 1 (agents/tank.py)
        assert sorted(run["tank_id"].unique()) == list(range(n_tanks))
        last = run[run["turn"] == turns]
        assert (last["winner"].fillna("") == (ref["winner"] or "")).all()
        assert (last["reason"] == ref["reason"]).all()
        assert last["tank_kills"].sum() == ref["kills"] and last["tank_shots"].sum() == ref["shots"]
        assert int(last["cum_shots"].iloc[0]) == ref["shots"]
        lost = last.groupby("side")["status"].apply(lambda s: int((s != "active").sum()))
        assert int(lost.get(0, 0)) >= ref["side1_lost"] and int(lost.get(1, 0)) >= ref["side2_lost"]
        first = run[run["turn"] == 0]
        assert (first["status"] == "active").all() and (first["tank_shots"] == 0).all()
        assert "marker" in run.columns  # rule-set state (Panzer Squadron's movement marker)


def test_scenario_object_and_batch_run_rng_argument():
    spec = load_scenario("skirmish_2v2", {"turn_limit": 3})
    df = _batch(parameters={"scenario": spec}, rng=[4, 5])  # a Scenario is one value, not its fields
    assert sorted(df["seed"].unique()) == [4, 5]  # batch_run names its rng argument after the model's alias
    for seed, run in df.groupby("seed"):
        assert (run["cum_kills"] == run_battle(spec, int(seed)).row["kills"]).all()


def test_a_seed_parameter_is_refused_loudly():
    with pytest.raises(SeedError, match="parameters=\\{'rng'"):
        _batch(parameters={"scenario": "skirmish_2v2", "seed": range(2)})
    with pytest.raises(SeedError, match="differ"):
        BattleModel("skirmish_2v2", rng=1, seed=2)
    with pytest.raises(SeedError, match="integer"):
        BattleModel("skirmish_2v2", rng=1.5)


def test_rng_and_seed_are_one_seed():
    logs = []
    for kw in ({"rng": 7}, {"seed": 7}, {"rng": 7, "seed": 7}):
        m = BattleModel("skirmish_2v2", **kw)
        m.run()
        logs.append([(e.seq, e.event) for e in m.battle.log])
    assert logs[0] == logs[1] == logs[2]


def test_dotted_overrides_as_keywords():
    m = BattleModel("default", 1, **{"sides.0.policy.name": "hold", "turn_limit": 2})
    assert m.resolved_policies[0]["name"] == "hold" and m.spec.turn_limit == 2
    spec = load_scenario("hq_ram_brawl")
    m2 = BattleModel(spec, 1, turn_limit=3)  # a Scenario object with overrides is re-validated
    assert m2.spec.turn_limit == 3 and m2.spec.sides == spec.sides
    with pytest.raises(ScenarioError, match="turn_limt"):
        BattleModel("default", 1, turn_limt=3)
    with pytest.raises(ScenarioError, match="sides.9"):
        BattleModel("default", 1, **{"sides.9.policy.name": "hold"})


PLUGIN = '''
raise RuntimeError("imported at validation")


def dt_now(tank):
    return tank.rules_state.get("dt")


def fighting(model):
    return len(model.battle.live_tanks())
'''


def test_collect_names_reporters_and_checks_plugins_without_importing(tmp_path, monkeypatch):
    (tmp_path / "i16b_reporters.py").write_text(PLUGIN)
    (tmp_path / "i16b_reporters_ok.py").write_text(PLUGIN.replace('raise RuntimeError("imported at validation")', ""))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = check_collect({"agents": {"dt_now": "i16b_reporters:dt_now", "ost": "rules_state.ost"},
                          "model": {"fighting": "i16b_reporters:fighting", "turn2": "battle.turn"}})
    assert "i16b_reporters" not in sys.modules  # checked from its source, never imported
    assert spec.agents["ost"] == "rules_state.ost"
    for bad, why in (({"agents": {"x": "i16b_reporters:nope"}}, "no function 'nope'"),
                     ({"agents": {"x": "__class__.__init__"}}, "not starting with _"),
                     ({"model": {"bad name": "battle.turn"}}, "identifier"),
                     ({"agents": {"x": "no_such_module_i16b:f"}}, "not found")):
        with pytest.raises(ReporterError, match=why):
            check_collect(bad)
    m = BattleModel("hq_ram_brawl", 2, collect={"agents": {"dt_now": "i16b_reporters_ok:dt_now",
                                                           "ost": "rules_state.ost"},
                                                "model": {"fighting": "i16b_reporters_ok:fighting"}})
    m.run()
    agents = m.datacollector.get_agent_vars_dataframe()
    assert (agents["dt_now"] == agents["dt"]).all() and agents["ost"].notna().all()
    model = m.datacollector.get_model_vars_dataframe()
    assert list(model["fighting"]) == [a + b for a, b in zip(model["alive_1"], model["alive_2"])]
