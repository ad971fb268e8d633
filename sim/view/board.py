"""The app's Solara components and page (served by ``tanksim app``; see :mod:`sim.view.app`).

Mesa's space drawing knows grids and networks but not a hex map with facings, so the board is our own component:
:func:`sim.view.render.draw_board` (the same drawing as replays and ``tanksim run --plot``) in a
``solara.FigureMatplotlib``.  The page is Mesa's ``SolaraViz`` with:

* :func:`BoardView`: the turn / activation counter (:func:`StatusView`, text with the CSS class
  ``tanksim-counter``), the result once over, and the hex board with the last step's moves and shot lines;
* :func:`ChartsView`: tanks alive per side and cumulative kills per turn, from the model's DataCollector
  (columns ``alive_<side name>`` and ``cum_kills``), drawn with :func:`sim.view.render.series_figure`;
* Mesa's controls (Reset, play/pause, Step: one activation, see :meth:`sim.view.app.AppModel.step`) and the inputs of
  :func:`sim.view.app.model_params` (seed, a policy per side), applied on Reset.

Each browser session gets its own model (built in :func:`Page`), so two viewers never step one battle.
"""
from __future__ import annotations

from typing import Any

import solara
from mesa.visualization import SolaraViz
from mesa.visualization.utils import update_counter

from sim.view import render
from sim.view.app import AppModel, app_settings, model_params

#: Board picture edge in inches.
BOARD_SIZE = 7.0


def board_picture(model: AppModel) -> render.BoardPicture:
    """The board of ``model`` now, with the last step's shots and move trails (a
    :class:`~sim.view.render.BoardPicture`)."""
    pic = render.picture_of(model.battle, model.marks["shots"], model.status_line().split(" · ", 2)[0]
                            + f" · activation {model.activations}")
    pic.moves = [(model.battle.tanks[tid].side, list(path)) for tid, path in sorted(model.marks["moves"].items())]
    return pic


@solara.component
def StatusView(model: AppModel) -> Any:
    """Turn / activation counter and, once over, the result."""
    update_counter.get()
    with solara.Column():
        solara.Text(model.status_line(), classes=["tanksim-counter"],
                    style={"font-size": "1.1em", "font-weight": "bold"})
        b = model.battle
        last = next((e.event for e in reversed(b.log) if e.event.kind == "Activated"), None)
        if last is not None and not model.ended:
            solara.Text(f"last activation: {b.tanks[last.tank].label} ({b.sides[last.side].name}) {last.mode}")
        policies = ", ".join(f"{s.name}: {p['name']}" for s, p in zip(b.sides, model.resolved_policies))
        solara.Text(f"{model.spec.name} ({b.ruleset.name}), seed {model.seed}; {policies}")


@solara.component
def BoardView(model: AppModel) -> Any:
    """The hex board as a PNG figure, redrawn whenever the battle log grows or the model is replaced."""
    update_counter.get()
    deps = [id(model), len(model.battle.log)]
    fig = solara.use_memo(lambda: render.board_figure(board_picture(model), BOARD_SIZE), deps)
    with solara.Column():
        StatusView(model)
        solara.FigureMatplotlib(fig, format="png", dependencies=deps)


@solara.component
def ChartsView(model: AppModel) -> Any:
    """Tanks alive per side and cumulative kills, one point per completed turn (the DataCollector's rows)."""
    update_counter.get()
    df = model.datacollector.get_model_vars_dataframe()
    deps = [id(model), len(df)]
    fig = solara.use_memo(lambda: render.series_figure(df, [s.name for s in model.battle.sides]), deps)
    solara.FigureMatplotlib(fig, format="png", dependencies=deps)


@solara.component
def Page() -> Any:
    """The app page: one :class:`AppModel` per browser session, shown through Mesa's ``SolaraViz``."""
    scenario, seed = app_settings()
    model = solara.use_memo(lambda: AppModel(scenario_name=scenario, seed=seed), [])
    params = solara.use_memo(lambda: model_params(scenario, seed), [])
    return SolaraViz(model, components=[BoardView, ChartsView], model_params=params,
                     name=f"tanksim: {model.spec.name}", play_interval=150)
