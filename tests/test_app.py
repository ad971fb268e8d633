"""The app without a browser: one activation per step, the same battle as a headless run, Mesa's re-creation of the
model from its parameters, and the Solara page rendered in memory (Step advances the counter, Reset applies the
seed and policy inputs)."""
from __future__ import annotations

import pytest

from conftest import small_ps_scenario
from sim.runner import final_state, log_rows, run_battle
from sim.scenario import load_scenario
from sim.view.app import AppModel, main, model_params, parse_seed, policy_choices


@pytest.fixture
def small_file(tmp_path):
    import yaml

    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario()))
    return str(f)


def test_step_is_one_activation(small_file):
    m = AppModel(scenario_name=small_file, seed=4)
    assert (m.battle.turn, m.activations) == (0, 0)
    turns_seen = set()
    while not m.ended:
        before = m.activations
        m.step()
        assert m.activations - before == 1 or (m.ended and m.activations == before)
        turns_seen.add(m.battle.turn)
        acts = [e for e in m.battle.log if e.event.kind == "Activated"]
        assert len(acts) == m.activations
    assert turns_seen == set(range(1, m.battle.turn + 1))
    assert m.running is False
    assert " win (" in m.status_line() or "draw" in m.status_line()
    m.step()  # a finished battle stays put
    assert m.activations == len([e for e in m.battle.log if e.event.kind == "Activated"])


def test_stepping_plays_the_same_battle_as_a_headless_run(small_file):
    spec = load_scenario(small_file)
    ref = run_battle(spec, 7)
    m = AppModel(scenario_name=small_file, seed="7")
    steps = 0
    while not m.ended:
        m.step()
        steps += 1
    assert steps == sum(1 for e in ref.events if e["kind"] == "Activated")
    assert log_rows(m) == ref.events
    assert final_state(m) == ref.final_state
    series = m.datacollector.get_model_vars_dataframe().reset_index(drop=True).to_dict("records")
    assert series == ref.series  # one DataCollector row per turn, as in a headless run


def test_step_turn_and_marks(small_file):
    m = AppModel(scenario_name=small_file, seed=3)
    m.step_turn()
    assert m.battle.turn == 1 and m._gen is None
    m.step()
    assert m.battle.turn == 2
    for tid, path in m.marks["moves"].items():
        assert len(path) >= 2 and tuple(m.battle.tanks[tid].hex) == path[-1]


def test_policies_seed_and_mesa_reset(small_file):
    m = AppModel(scenario_name=small_file, seed=1, policy_1="hold", policy_2="scenario")
    assert [p["name"] for p in m.resolved_policies] == ["hold", "hold"]
    with pytest.raises(ValueError, match="seed: expected a whole number"):
        parse_seed("12x")
    with pytest.raises(ValueError, match=">= 0"):
        parse_seed(-1)
    params = model_params(small_file, 5)
    assert params["seed"]["value"] == "5" and params["policy_1"]["values"] == policy_choices()
    assert "Red policy" in params["policy_1"]["label"]
    viz = pytest.importorskip("mesa.visualization.solara_viz")
    viz._check_model_params(m, params)  # every input is a constructor keyword
    values = {"scenario_name": small_file, "seed": "9", "policy_1": "advance", "policy_2": "advance"}
    kwargs = viz._build_model_init_kwargs(m, values, add_scenario_when_empty=True,
                                          require_model_accepts_scenario=True)
    fresh = type(m)(**kwargs)  # exactly what SolaraViz's Reset does
    assert fresh.seed == 9 and [p["name"] for p in fresh.resolved_policies] == ["advance", "advance"]


def test_app_command_rejects_bad_input(tmp_path, capsys):
    assert main([str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["default", "--seed", "x"]) == 2
    assert "seed" in capsys.readouterr().err


def test_page_renders_and_steps_without_a_browser(monkeypatch, small_file):
    solara = pytest.importorskip("solara")
    v = pytest.importorskip("ipyvuetify")
    monkeypatch.setenv("TANKSIM_APP_SCENARIO", small_file)
    monkeypatch.setenv("TANKSIM_APP_SEED", "2")
    from sim.view.board import Page

    @solara.component
    def Wrapped():
        with solara.AppLayout():
            Page()

    _box, rc = solara.render(Wrapped(), handle_error=False)

    def counter() -> str:
        return rc.find(v.Html, class_="tanksim-counter").widget.children[0]

    assert counter().startswith("Turn 0 of 8 · activation 0")
    step = rc.find(v.Btn, children=["Step"])
    step.widget.click()
    assert counter().startswith("Turn 1 of 8 · activation 1")
    step.widget.click()
    assert "activation 2" in counter()
    seed = rc.find(v.TextField, label="Seed")
    seed.widget.v_model = "11"
    seed.widget.fire_event("keyup.enter", None)
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert counter().startswith("Turn 0 of 8 · activation 0")
    assert any("seed 11" in str(w.children) for w in rc.find(v.Html).widgets)
    rc.close()
