"""The app's Solara page (served by ``tanksim app``; the model side is :mod:`sim.view.app`).

One page per browser session, each with its own :class:`~sim.view.app.AppModel` (two viewers never step one
battle):

* the sidebar: scenario, doctrine per side, seed and **who you play** (nobody: watch the AI; or one side), applied
  by *New battle*;
* the counter (CSS class ``tanksim-counter``): the game turn ``Turn T of L``, the activation, and ``your move``
  when the side you play must decide;
* the controls: *Step* (one activation of the AI), *Turn* (the rest of the turn), *To the end*; with a person
  playing they run the AI up to that side's next decision, and *AI answers for me* lets the side's doctrine take
  the pending decision;
* the full-width hex board (:mod:`sim.view.hexboard`): click a highlighted hex to move there, a ringed enemy to fire
  at it, a ringed own tank to choose it; hover for the tank's state and the exact odds of a shot at it from the
  selected tank;
* the decision panel: every legal answer as a button (class ``tanksim-choice``), those of the selected tank first;
* the legend (sides by index, terrain, objectives, highlights, shot outcomes), the shot log with the dice and the
  chart of losses per side per turn.
"""
from __future__ import annotations

from html import escape
from typing import Any

import solara

from sim.events import StatusChanged
from sim.scenario import bundled_dir
from sim.view import render
from sim.view.app import SCENARIO_POLICY, AppModel, app_settings, policy_choices
from sim.view.hexboard import HIGHLIGHT, HexBoard, board_data, parse_key

NOBODY = "nobody (watch the AI)"


def _html(text: str, cls: str = "") -> Any:
    """A block of trusted HTML (our own text, values escaped by the caller); used instead of ``solara.Markdown``,
    whose math support loads a script from the network."""
    return solara.HTML(tag="div", unsafe_innerHTML=text, classes=[cls] if cls else [])


def scenario_choices(current: str) -> list[str]:
    """The bundled scenario names (file stems, sorted), with ``current`` first if it is not one of them."""
    names = sorted(p.name[:-5] for p in bundled_dir().iterdir() if p.name.endswith(".yaml"))
    return names if current in names else [current, *names]


def losses_by_turn(model: AppModel) -> tuple[list[int], list[list[int]]]:
    """``(turns 0..T, per side index the cumulative tanks lost by the end of each turn)``, counted from the log's
    ``StatusChanged`` events to any status but ``active`` (destroyed, incapacitated, withdrawn, fled, ...)."""
    b = model.battle
    turns = list(range(b.turn + 1))
    lost = [[0] * len(turns) for _ in b.sides]
    out: set[int] = set()
    for x in b.log:
        e = x.event
        if isinstance(e, StatusChanged) and e.status != "active" and e.tank not in out:
            out.add(e.tank)
            side = b.tanks[e.tank].side
            for i in range(min(x.turn, b.turn), len(turns)):
                lost[side][i] += 1
    return turns, lost


def losses_figure(model: AppModel) -> Any:
    """Cumulative losses per side (side colours by index) against the game turn, a matplotlib ``Figure``."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    turns, lost = losses_by_turn(model)
    with render.plt.rc_context(render.STYLE):
        fig = Figure(figsize=(5.5, 3.0), dpi=render.STYLE["figure.dpi"])
        ax = fig.add_subplot()
        for si, side in enumerate(model.battle.sides):
            ax.step(turns, lost[si], where="post", marker="o", color=render.side_colour(si),
                    label=f"side {si + 1}: {side.name} ({len([t for t in model.battle.tanks if t.side == si])})")
        ax.set_xlabel("turn")
        ax.set_ylabel("tanks lost")
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper left", fontsize=7)
        ax.set_title("losses per side", fontsize=9)
        fig.tight_layout()
    return fig


@solara.component
def Legend(model: AppModel, tick: int = 0) -> Any:
    """Sides, terrain on the map, objectives, the click highlights and the shot outcomes, as coloured swatches."""
    pic = render.picture_of(model.battle)
    rows = [r for r in render.legend_entries(pic) if r[0] in ("side", "terrain", "objective")]
    rows += [("hl", "click: move here", HIGHLIGHT["legal-step"]), ("hl", "click: fire at", HIGHLIGHT["legal-fire"]),
             ("hl", "click: choose tank", HIGHLIGHT["legal-actor"])]
    rows += [("shot", label, render.OUTCOME_COLOURS[o]) for o, label in render.OUTCOME_LABELS.items()]
    items = []
    for kind, label, colour in rows:
        if kind in ("terrain",):
            sw = f"background:{colour};border:1px solid #9a9a8a"
        elif kind == "side":
            sw = f"background:{colour};border-radius:50%"
        elif kind == "shot":
            sw = f"background:{colour};height:3px;margin-top:6px"
        else:
            sw = f"border:3px solid {colour}"
        items.append(f'<div style="display:flex;gap:6px;align-items:flex-start;font-size:0.8em">'
                     f'<span style="display:inline-block;width:14px;height:14px;{sw}"></span>{label}</div>')
    solara.HTML(tag="div", unsafe_innerHTML="".join(items), classes=["tanksim-legend"])


@solara.component
def ShotLog(model: AppModel, tick: int = 0) -> Any:
    """The shots so far (newest first): turn, shooter, target, result and the dice."""
    rows = list(reversed(model.shot_log()))
    if not rows:
        solara.Text("No shots yet.", classes=["tanksim-shotlog"])
        return
    head = "".join(f"<th style='text-align:left;padding:2px 6px'>{h}</th>"
                   for h in ("turn", "shooter", "target", "result", "dice"))
    body = "".join(
        f"<tr class='shot-row'><td>{r['turn']}</td><td>{escape(r['shooter'])}</td>"
        f"<td>{escape(r['target'])}</td><td style='color:"
        f"{render.OUTCOME_COLOURS[render.shot_outcome(r['hit'], r['kill'])]}'>{escape(r['result'])}"
        f"{' (kill)' if r['kill'] else ''}</td><td>{escape(r['dice'])}</td></tr>" for r in rows[:60])
    solara.HTML(tag="div", unsafe_innerHTML=f"<table style='font-size:0.8em;border-collapse:collapse'>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
                classes=["tanksim-shotlog"], style={"max-height": "320px", "overflow-y": "auto"})


@solara.component
def DecisionPanel(model: AppModel, act: Any, tick: int = 0) -> Any:
    """The pending decision of the side you play, and its legal answers as buttons (the selected tank's first).
    ``tick`` changes whenever the model changed in place (so the component renders again)."""
    if model.human is None:
        _html("Watching the AI. Pick a side under <b>You play</b> and press <b>New battle</b> to play.")
        return
    if model.ended:
        _html("<b>The battle is over.</b>")
        return
    choices = model.human_choices()
    d = model.pending()
    if d is None or not choices:
        solara.Text("Waiting for the AI...")
        return
    b = model.battle
    actors = ", ".join(b.tanks[a].label for a in d.actors[:6]) + (" ..." if len(d.actors) > 6 else "")
    _html(f"<b>Your decision</b>: <code>{escape(d.kind)}</code> for {escape(actors)}", "tanksim-decision")
    sel = model.selected
    mine = [c for c in choices if c.action.actor == sel] if sel is not None else []
    rest = [c for c in choices if c not in mine]
    if d.kind == "activate" and mine:  # only the chosen tank's modes; click another tank to switch
        rest = []
    with solara.Column(gap="2px"):
        for c in mine + rest:
            solara.Button(c.label, on_click=lambda c=c: act(c.action), classes=["tanksim-choice"], small=True,
                          text=True, style={"justify-content": "flex-start", "text-transform": "none"})


@solara.component
def Page() -> Any:
    """The app page (module docstring)."""
    scenario0, seed0, play0 = app_settings()
    scenario = solara.use_reactive(scenario0)
    seed = solara.use_reactive(str(seed0))
    policy_1 = solara.use_reactive(SCENARIO_POLICY)
    policy_2 = solara.use_reactive(SCENARIO_POLICY)
    error = solara.use_reactive("")

    def first_model() -> AppModel:
        m = AppModel(scenario_name=scenario0, seed=seed0, human=play0 or None)
        if m.human is not None:
            m.run_ai()
        return m

    initial = solara.use_memo(first_model, [])
    replaced, set_model = solara.use_state(None)
    model = replaced if replaced is not None else initial
    tick, set_tick = solara.use_state(0)
    sides = [s.name for s in model.battle.sides]
    play = solara.use_reactive(sides[model.human] if model.human is not None else NOBODY)

    def refresh() -> None:
        set_tick(lambda t: t + 1)

    def new_battle() -> None:
        try:
            names = [s.name for s in AppModel(scenario_name=scenario.value).battle.sides]
            human = play.value if play.value in names else None
            m = AppModel(scenario_name=scenario.value, seed=seed.value, policy_1=policy_1.value,
                         policy_2=policy_2.value, human=human)
        except Exception as exc:  # bad seed, policy or scenario: shown on the page, the old battle stays
            error.value = f"{type(exc).__name__}: {exc}"
            return
        error.value = ""
        if m.human is None and play.value != NOBODY:
            play.value = NOBODY
        if m.human is not None:
            m.run_ai()
        set_model(m)
        refresh()

    def step(kind: str) -> None:
        if kind == "activation":
            model.step()
        elif kind == "turn":
            model.step_turn()
        elif kind == "end":
            model.run_ai()
        elif kind == "ai" and model.waiting_for_human():
            model.ai_answer()
        refresh()

    def act(action: Any) -> None:
        if model.waiting_for_human():
            model.play(action)
            model.selected = None
        refresh()

    def select(tid: int | None) -> None:
        model.selected = tid
        refresh()

    def on_hex(key: Any) -> None:
        h = parse_key(key)
        if h is None:
            return
        choices = model.human_choices()
        for kind in ("step", "fire", "ram"):
            hits = [c for c in choices if c.kind == kind and c.hex == h
                    and (model.selected is None or c.action.actor in (model.selected, None) or kind == "step")]
            if hits:
                act(hits[0].action)
                return
        here = [t for t in model.battle.tanks if t.hex is not None and (t.hex.q, t.hex.r) == h and t.alive]
        if model.human is not None:
            here = [t for t in here if t.side == model.human]
        select(here[0].tank_id if here else None)

    solara.Title(f"tanksim: {model.spec.name}")
    with solara.Sidebar():
        _html("<h3>tanksim</h3>")
        solara.Select("Scenario", values=scenario_choices(scenario.value), value=scenario)
        solara.Select(f"Side 1 doctrine ({sides[0]})", values=policy_choices(), value=policy_1)
        if len(sides) > 1:
            solara.Select(f"Side 2 doctrine ({sides[1]})", values=policy_choices(), value=policy_2)
        solara.InputText("Seed", value=seed, continuous_update=True)
        solara.Select("You play", values=[NOBODY, *sides], value=play)
        solara.Button("New battle", on_click=new_battle, color="primary")
        if error.value:
            solara.Error(error.value)
        policies = ", ".join(f"{s.name}: {p['name']}" for s, p in zip(model.battle.sides, model.resolved_policies))
        _html(escape(f"{model.spec.name} ({model.battle.ruleset.name}), seed {model.seed}; {policies}"))
    with solara.Column(style={"width": "100%"}):
        solara.Text(model.status_line(), classes=["tanksim-counter"],
                    style={"font-size": "1.15em", "font-weight": "bold"})
        waiting = model.waiting_for_human()
        with solara.Row():
            solara.Button("Step", on_click=lambda: step("activation"), disabled=model.ended or waiting)
            solara.Button("Turn", on_click=lambda: step("turn"), disabled=model.ended or waiting)
            solara.Button("To the end" if model.human is None else "AI until my move", on_click=lambda: step("end"),
                          disabled=model.ended or waiting)
            if model.human is not None:
                solara.Button("AI answers for me", on_click=lambda: step("ai"), disabled=not waiting)
        with solara.Columns([3, 1]):
            HexBoard.element(board=board_data(model), on_hex=on_hex)
            with solara.Column():
                DecisionPanel(model, act, tick)
                Legend(model, tick)
        with solara.Columns([3, 2]):
            with solara.Column():
                _html("<b>Shot log</b> (newest first)")
                ShotLog(model, tick)
            solara.FigureMatplotlib(losses_figure(model), format="png")
