"""The ``learned`` doctrine: any callable from observation arrays to an action index plays like a doctrine, in
``tanksim match`` and tournaments, in-process or isolated (the protocol's opt-in ``arrays`` field and ``index``
answers), with the same arrays as the environment; and the example that learns (docs/examples)."""
from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest
import yaml
from learned_policies import INDEX_BOT, last_legal

from agents.controllers import EntrantPolicy, PolicyLoadError, load_policy
from agents.isolation import close_policies
from agents.policies.learned import Learned
from conftest import ROOT
from sim.runner import run_battle
from sim.scenario import PolicySpec, load_scenario

LAST = "learned_policies:last_legal"
KEYS = ("winner", "reason", "turns", "decisions", "shots", "hits", "kills", "faults")


def play(spec, policies, seed=0):
    models = []
    res = run_battle(spec, seed, policies, model_out=models, decision_timeout_s=0)
    close_policies(models[0])
    return res


def remote(entrant):
    """An isolated entrant, as only tournament code may define one (issue 11: data files name doctrines only)."""
    return EntrantPolicy("agents.isolation:RemotePolicy",
                         {"entrant": entrant, "limits": {"decision_wall_s": 60, "startup_wall_s": 60}})


def test_a_callable_plays_through_the_learned_doctrine_under_every_rule_set():
    for name in ("skirmish_2v2", "asl_1941_meeting", "hq_ram_brawl"):
        spec = load_scenario(name, {"turn_limit": 3})
        res = play(spec, {0: ("learned", {"policy": LAST}), 1: ("learned", {})}, seed=2)
        kinds = [e["kind"] for e in res.events]
        assert "PolicyFault" not in kinds and "ActionRejected" not in kinds, name
        assert kinds[-1] == "BattleEnded"


def test_the_doctrine_sees_the_arrays_the_environment_gives():
    """Side 0 played by the environment with ``last_legal`` and by the doctrine with ``last_legal``: the same battle."""
    pytest.importorskip("pettingzoo")
    from sim.env import TankEnv

    spec = load_scenario("skirmish_2v2")
    for skip in (False, True):
        env = TankEnv(spec, policies={1: "greedy"}, skip_trivial=skip)
        env.reset(seed=3)
        while env.agents:
            a = env.agent_selection
            env.step(None if env.terminations[a] else last_legal(env.observe(a), env.infos[a]["action_mask"]))
        from sim.runner import log_rows

        doctrine = run_battle(spec, 3, {0: ("learned", {"policy": LAST, "skip_trivial": skip}), 1: ("greedy", {})})
        assert log_rows(env.model) == doctrine.events


def test_isolated_learned_plays_exactly_as_in_process_and_index_answers_work():
    spec = load_scenario("skirmish_2v2")
    local = play(spec, {0: PolicySpec(name="learned", params={"policy": LAST}), 1: PolicySpec(name="hold")}, 5)
    isolated = play(spec, {0: remote({"name": "l", "policy": "learned", "params": {"policy": LAST}}),
                           1: PolicySpec(name="hold")}, 5)
    assert {k: isolated.row[k] for k in KEYS} == {k: local.row[k] for k in KEYS}
    assert isolated.events == local.events
    # an entrant in its own process that reads the arrays field and answers with an index of the action table
    bot = play(spec, {0: remote({"name": "index-bot", "command": [sys.executable, "-c", INDEX_BOT]}),
                      1: PolicySpec(name="hold")}, 5)
    no_skip = play(spec, {0: PolicySpec(name="learned", params={"policy": LAST, "skip_trivial": False}),
                          1: PolicySpec(name="hold")}, 5)
    assert bot.events == no_skip.events and bot.row["faults"] == 0


def test_wrong_answers_are_faults_and_bad_names_are_load_errors():
    spec = load_scenario("skirmish_2v2", {"turn_limit": 2})
    res = play(spec, {0: ("learned", {"policy": "learned_policies:not_an_index"}), 1: ("hold", {})})
    faults = [json.loads(e["data"]) for e in res.events if e["kind"] == "PolicyFault"]
    assert faults and {f["fault"] for f in faults} == {"wrong_type"}
    with pytest.raises(PolicyLoadError, match="module 'no_such_module' not found"):
        load_policy("learned", {"policy": "no_such_module:fn"})
    with pytest.raises(PolicyLoadError, match="has no 'nope'"):
        load_policy("learned", {"policy": "learned_policies:nope"})
    with pytest.raises(TypeError, match="not callable"):
        Learned.of(3)


def test_learned_entrants_in_a_match_and_a_tournament(tmp_path, capsys):
    from sim.cli.main import main

    code = main(["match", f"learned:policy={LAST}", "learned", "--scenario", "skirmish_2v2", "--max-games", "2",
                 "--quiet"])
    assert code == 3 and "verdict: none" in capsys.readouterr().out      # 2 games decide nothing: exit 3
    t = {"name": "learned_cup", "root_seed": 1, "games_per_pairing": 2, "decision_timeout_s": 60,
         "entrants": [{"name": "last", "policy": "learned", "params": {"policy": LAST}},
                      {"name": "masked_random", "policy": "learned", "isolation": "process"},
                      {"name": "hold", "policy": "hold"}],
         "scenarios": [{"file": str(ROOT / "scenarios" / "skirmish_2v2.yaml"), "label": "skirmish"}]}
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(t))
    from sim.tournaments import tournament as T

    tour = T.load_tournament(f)
    T.run_tournament(tour, tmp_path / "out", workers=1, progress=False)
    games = T.load_games(tour, tmp_path / "out")
    assert len(games) == 6 and (games["status"] == "ok").all()
    assert set(T.analyse(tour, games).leaderboard["entrant"]) == {"last", "masked_random", "hold"}


def _example():
    path = ROOT / "docs" / "examples" / "train_reinforce.py"
    spec = importlib.util.spec_from_file_location("train_reinforce", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["train_reinforce"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_example_trains_and_plays_without_illegal_actions(tmp_path, monkeypatch):
    pytest.importorskip("gymnasium")
    ex = _example()
    pol, fig = ex.train("skirmish_2v2", 0, 8, seed=1, batch=4, log=lambda *a: None)
    assert fig["battles"] == 8 and fig["steps"] > 50 and fig["illegal_actions"] == 0
    assert np.abs(pol.W).sum() > 0 and np.abs(pol.b).sum() > 0        # the gradient moved the policy
    ev = ex.evaluate("skirmish_2v2", pol, 3)
    assert ev["battles"] == 3 and ev["illegal_actions"] == 0 and ev["faults"] == 0
    assert ev["won"] + ev["drawn"] + ev["lost"] == 3 and 0 <= ev["wilson95"][0] <= ev["win_rate"]
    # the saved weights enter a battle as a doctrine by name (what tanksim match does)
    w = tmp_path / "w.npz"
    pol.save(w, {"test": True})
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples"))
    res = play(load_scenario("skirmish_2v2"), {0: ("learned", {"policy": "train_reinforce:load", "weights": str(w)}),
                                               1: ("random", {})}, 1)
    assert res.row["faults"] == 0 and not [e for e in res.events if e["kind"] == "ActionRejected"]
