"""The app without a browser: one activation per step, the same battle as a headless run, Mesa's re-creation of the
model from its parameters, and the Solara page rendered in memory (Step advances the counter, Reset applies the
seed and policy inputs)."""
from __future__ import annotations

import pytest

from conftest import small_ps_scenario
from sim.runner import final_state, log_rows, run_battle, series_rows
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
    assert series_rows(m) == ref.series  # one DataCollector row per turn, as in a headless run


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
    monkeypatch.delenv("TANKSIM_APP_PLAY", raising=False)
    from sim.view.board import Page
    from sim.view.hexboard import HexBoard

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
    m = AppModel(small_file, 2)
    assert len(rc.find(HexBoard).widget.board["cells"]) == len(m.battle.map.cells)
    seed = rc.find(v.TextField, label="Seed")
    seed.widget.v_model = "11"
    rc.find(v.Btn, children=["New battle"]).widget.click()
    assert counter().startswith("Turn 0 of 8 · activation 0")
    assert any("seed 11" in w.unsafe_innerHTML for w in rc.find(solara.widgets.HTML).widgets)
    rc.close()


def test_play_a_side_in_memory(monkeypatch):
    """Playing the Soviets of the default battle through the page: choose a tank by clicking its hex, activate it
    with a button, step by clicking a highlighted hex, fire by clicking a highlighted enemy."""
    solara = pytest.importorskip("solara")
    v = pytest.importorskip("ipyvuetify")
    monkeypatch.setenv("TANKSIM_APP_SCENARIO", "default")
    monkeypatch.setenv("TANKSIM_APP_SEED", "3")
    monkeypatch.setenv("TANKSIM_APP_PLAY", "Soviets")
    from sim.view.board import Page
    from sim.view.hexboard import HexBoard

    @solara.component
    def Wrapped():
        with solara.AppLayout():
            Page()

    _box, rc = solara.render(Wrapped(), handle_error=False)

    def counter() -> str:
        return rc.find(v.Html, class_="tanksim-counter").widget.children[0]

    def board() -> HexBoard:
        return rc.find(HexBoard).widget

    assert counter() == "Turn 1 of 15 · activation 0 · 0 decisions · your move (Soviets)"
    assert len(rc.find(v.Btn, class_="tanksim-choice").widgets) == 25
    board().vue_hex_click("1,8")
    labels = [b.children[0] for b in rc.find(v.Btn, class_="tanksim-choice").widgets]
    assert labels == ["T34-1: hold [default]", "T34-1: fire", "T34-1: move", "T34-1: move and fire",
                      "T34-1: ambush"]
    next(b for b in rc.find(v.Btn, class_="tanksim-choice").widgets
         if b.children == ["T34-1: move and fire"]).click()
    steps = sorted(c["id"] for c in board().board["cells"] if c["cls"] == "legal-step")
    assert steps == ["2,7", "2,8"]
    board().vue_hex_click("2,7")
    assert next(t for t in board().board["tanks"] if t["id"] == 0)["hex"] == "2,7"
    targets = [t["hex"] for t in board().board["tanks"] if t["cls"] == "legal-fire"]
    assert targets
    board().vue_hex_click(targets[0])
    log = rc.find(solara.widgets.HTML, attributes={"style": {"max-height": "320px", "overflow-y": "auto"},
                                                    "class": "tanksim-shotlog"}).widget.unsafe_innerHTML
    assert "<td>T34-1</td>" in log and "natural_d10=" in log
    assert "your move (Soviets)" in counter() and "activation 2" in counter()
    rc.close()


def test_a_person_answering_with_the_doctrine_plays_the_headless_battle(small_file):
    """Taking a side and letting its doctrine answer every decision ("AI answers for me") is the headless battle,
    event for event: playing changes nothing but who answers."""
    spec = load_scenario(small_file)
    ref = run_battle(spec, 4)
    m = AppModel(scenario_name=small_file, seed=4, human="2")
    assert m.human == 1
    m.run_ai()
    asked = 0
    while not m.ended:
        assert m.waiting_for_human() and m.pending().side == 1
        assert m.human_choices()
        m.ai_answer()
        asked += 1
    assert asked > 0
    assert log_rows(m) == ref.events


def test_human_choices_are_legal_and_come_from_the_sides_observation():
    from sim.actions import Fire, Step
    from sim.view.hexboard import board_data

    m = AppModel("default", 3, human="Soviets")
    seen_hidden = False
    for _ in range(60):
        if m.ended:
            break
        d = m.pending()
        obs = m.human_observation()
        choices = m.human_choices()
        assert choices and all(d.legal.contains(c.action) for c in choices)
        assert all(c.action.actor in (None, *d.actors) for c in choices)
        hidden = set(obs.hidden_ids())
        assert not any(isinstance(c.action, Fire) and c.action.target in hidden for c in choices)
        for c in choices:
            if isinstance(c.action, Step):
                assert c.hex == (c.action.to.q, c.action.to.r)
        if hidden:
            seen_hidden = True
            data = board_data(m)
            drawn = {t["id"] for t in data["tanks"] if t["cls"] != "ghost"}
            assert not drawn & hidden
            labels = {m.battle.tanks[h].label for h in hidden}
            for tip in data["tips"].values():
                for line in tip.splitlines():
                    assert not any(line.startswith(f"{lbl} (") for lbl in labels), line
        m.ai_answer()
    assert seen_hidden  # the Tiger goes out of sight in turn 1 at seed 3


def test_an_illegal_answer_is_rejected_and_the_default_applies():
    from sim.actions import Step
    from sim.hexgrid import Hex

    m = AppModel("default", 3, human="Soviets")
    d = m.pending()
    m.play(Step(0, Hex(20, 20)))  # not an answer to an activation
    kinds = [x.event.kind for x in m.battle.log]
    assert "ActionRejected" in kinds
    assert any(x.event.kind == "Activated" and x.event.mode == d.default.mode for x in m.battle.log)
    assert m.waiting_for_human() or m.ended


def test_who_plays(capsys):
    from sim.view.app import parse_human

    assert parse_human(None, ["A", "B"]) is None and parse_human("nobody", ["A", "B"]) is None
    assert parse_human("B", ["A", "B"]) == 1 and parse_human("1", ["A", "B"]) == 0
    with pytest.raises(ValueError, match=r"--play 'C': no side 'C'; sides are A, B \(or 1, 2, or nobody\)"):
        parse_human("C", ["A", "B"])
    # names and the keyword in any case where unambiguous; a side named like the keyword is that side
    assert parse_human("Nobody", ["A", "B"]) is None and parse_human("NONE", ["A", "B"]) is None
    assert parse_human("germans", ["Soviets", "Germans"]) == 1
    assert parse_human("nobody", ["Nobody", "B"]) == 0
    with pytest.raises(ValueError, match="no side 'red'"):
        parse_human("red", ["Red", "RED"])  # two names that differ only in case: type one exactly
    assert parse_human("RED", ["Red", "RED"]) == 1
    assert main(["default", "--play", "Martians"]) == 2
    assert "--play 'Martians': no side 'Martians'; sides are Soviets, Germans (or 1, 2, or nobody)" in (
        capsys.readouterr().err)
    m = AppModel("default", 3)
    with pytest.raises(RuntimeError, match="no decision of the side you play"):
        m.play(None)



def test_a_persons_marks_show_no_hex_an_enemy_stood_on_out_of_sight():
    """With a person playing, an enemy's move trail and shot lines show only hexes where that side saw it: an enemy
    that moves out of sight and then into view (moves applied as events, as a rule set's movement does) has only
    its seen hex in its trail, and the board draws no line through the hexes it crossed unseen.  (The trail kept
    every hex of the step, so a tank seen at its end showed the way it came unseen.)"""
    from sim.events import Moved
    from sim.view.hexboard import _xy, board_data

    m, twin = AppModel("default", 3, human="Soviets"), AppModel("default", 3, human="Soviets")
    for _ in range(20):   # both play the same battle to the first time an enemy is out of the person's sight
        b, rs = m.battle, m.battle.ruleset
        hidden = [t.tank_id for t in b.live_tanks() if t.side != m.human and t.tank_id not in rs.visible(b, m.human)]
        if hidden:
            break
        for x in (m, twin):
            (x.ai_answer if x.waiting_for_human() else x.step)()
    assert hidden, "no enemy out of sight at seed 3"
    e = hidden[0]
    tb = twin.battle

    def seen_on(h) -> bool:   # asked on the twin (its moves are its own), which is then put back
        back = tb.tanks[e].hex
        tb.emit(Moved(e, h, tb.tanks[e].facing))
        try:
            return e in rs.visible(tb, twin.human)
        finally:
            tb.emit(Moved(e, back, tb.tanks[e].facing))

    free = [h for h in sorted(b.map.cells) if not b.occupants(h) and rs.passable(b, h)]
    path = [b.tanks[e].hex]
    for _ in range(3):   # a few hexes it goes through unseen
        nxt = next((h for h in path[-1].neighbours() if h in free and h not in path and not seen_on(h)), None)
        if nxt is None:
            break
        path.append(nxt)
    assert len(path) > 1, "no hidden hex next to the enemy"
    end = next(h for h in free if seen_on(h))
    m._begin_step()
    for h in [*path[1:], end]:
        b.emit(Moved(e, h, b.tanks[e].facing))
    assert e in rs.visible(b, m.human)
    assert m.marks["moves"].get(e) == [tuple(end)]
    drawn = {(round(ln[x], 3), round(ln[y], 3)) for ln in board_data(m)["lines"] for x, y in (("x1", "y1"),
                                                                                               ("x2", "y2"))}
    assert not {(round(x, 3), round(y, 3)) for x, y in map(_xy, path)} & drawn
