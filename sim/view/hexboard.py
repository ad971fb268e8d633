"""The app's clickable hex board: an SVG drawn in the browser by one Vue template widget (:class:`HexBoard`) from
plain data (:func:`board_data`), so the page needs no JavaScript library from the network.

:func:`board_data` (no web stack needed; tested without a browser) turns an :class:`~sim.view.app.AppModel` into
what the SVG shows:

* ``cells``: one hexagon per map cell, filled by terrain (:data:`sim.view.render.TERRAIN_COLOURS`), objectives
  outlined in gold, and the cells the person may click for the pending decision marked with a CSS class:
  ``legal-step`` (a step's destination), ``legal-fire`` / ``legal-ram`` (a target's hex), ``legal-actor`` (a tank
  that may be activated);
* ``tanks``: circles in the side's colour (by side index), hull facing in black, turret in white, wrecks and tanks
  out of action faded, the selected tank ringed; with a person playing, only what that side may know (its own
  tanks, the enemies its :class:`~agents.observation.Observation` knows now, tanks out of the fight) plus dashed
  ghosts where it last saw the others;
* ``lines``: the last step's shots (coloured by :func:`sim.view.render.shot_outcome`) and move trails;
* ``tips``: per hex, the hover text: terrain, objective, each tank's state (vehicle, status, facing, turret, markers
  and rule-set values), and the exact odds (``p_hit``, ``p_kill`` as fractions) of a shot at it from the selected
  tank, asked through the selected tank's side's observation.

Clicking a hex calls ``on_hex("q,r")``; hovering shows ``tips[hex]`` under the board (class ``tanksim-hover``),
in the browser without a round trip.
"""
from __future__ import annotations

import math
from typing import Any

from sim.view import render

#: Outline colours of the clickable choices: a step's destination, a fire / ram target, a tank that may activate.
HIGHLIGHT = {"legal-step": "#1e8449", "legal-fire": "#ff0000", "legal-ram": "#8e0000", "legal-actor": "#f1c40f"}
#: Hex-size units of an SVG user unit (the drawing is in hex-size units, y down).
HEX_RADIUS = 0.97

TEMPLATE = """
<template>
  <div class="tanksim-board" style="width: 100%">
    <svg :viewBox="board.viewbox" preserveAspectRatio="xMidYMin meet"
         style="width: 100%; max-height: 80vh; display: block; background: #fafaf5">
      <polygon v-for="c in board.cells" :key="c.id" :points="c.pts" :fill="c.fill" :stroke="c.stroke"
               :stroke-width="c.sw" :class="['hex', c.cls]" :data-hex="c.id" style="cursor: pointer"
               @click="hex_click(c.id)" @mouseenter="hover = c.id"></polygon>
      <line v-for="(s, i) in board.lines" :key="'l' + i" :x1="s.x1" :y1="s.y1" :x2="s.x2" :y2="s.y2"
            :stroke="s.colour" :stroke-width="s.w" :stroke-dasharray="s.dash" :class="s.cls"
            pointer-events="none"></line>
      <g v-for="t in board.tanks" :key="'t' + t.id" :class="['tank', t.cls]" :data-tank="t.id" :data-hex="t.hex"
         :opacity="t.opacity" style="cursor: pointer" @click="hex_click(t.hex)" @mouseenter="hover = t.hex">
        <circle :cx="t.x" :cy="t.y" :r="t.r" :fill="t.fill" :stroke="t.ring" :stroke-width="t.ring_w"
                :stroke-dasharray="t.dash"></circle>
        <line :x1="t.x" :y1="t.y" :x2="t.hx" :y2="t.hy" stroke="black" stroke-width="0.16"></line>
        <line v-if="t.tx !== null" :x1="t.x" :y1="t.y" :x2="t.tx" :y2="t.ty" stroke="white"
              stroke-width="0.08"></line>
        <path v-if="t.wreck" :d="'M' + (t.x - 0.4) + ',' + (t.y - 0.4) + 'L' + (t.x + 0.4) + ',' + (t.y + 0.4)
              + 'M' + (t.x - 0.4) + ',' + (t.y + 0.4) + 'L' + (t.x + 0.4) + ',' + (t.y - 0.4)" stroke="black"
              stroke-width="0.14"></path>
        <text :x="t.x" :y="t.y + 1.05" text-anchor="middle" font-size="0.55" pointer-events="none">{{ t.label }}</text>
        <text v-if="t.marks" :x="t.x" :y="t.y - 0.62" text-anchor="middle" font-size="0.45" fill="#d35400"
              font-weight="bold" pointer-events="none">{{ t.marks }}</text>
      </g>
    </svg>
    <div class="tanksim-hover" style="white-space: pre-line; min-height: 4.5em; padding: 6px 2px;
         font-family: monospace; font-size: 0.85em">{{ hover && board.tips[hover] ? board.tips[hover] :
         'Hover over a hex or a tank for details (odds are from the selected tank).' }}</div>
  </div>
</template>
<script>
module.exports = {
  data() { return { hover: null }; },
}
</script>
<style>
.tanksim-board .legal-step { stroke: #1e8449 !important; stroke-width: 0.22 !important; fill-opacity: 0.75; }
.tanksim-board .legal-actor circle { stroke: #f1c40f; stroke-width: 0.25; }
.tanksim-board .legal-fire circle, .tanksim-board .legal-ram circle { stroke: #ff0000; stroke-width: 0.28; }
.tanksim-board polygon.hex:hover { fill-opacity: 0.6; }
</style>
"""


def _xy(h: Any) -> tuple[float, float]:
    x, y = render.centre(int(h[0]), int(h[1]))
    return x, -y


def _key(h: Any) -> str:
    return f"{int(h[0])},{int(h[1])}"


def parse_key(text: Any) -> tuple[int, int] | None:
    """``"q,r"`` (a clicked hex) as ``(q, r)``; ``None`` for anything else."""
    try:
        q, r = str(text).split(",")
        return int(q), int(r)
    except (ValueError, AttributeError):
        return None


def _hex_points(x: float, y: float) -> str:
    return " ".join(f"{x + HEX_RADIUS * math.cos(math.radians(60 * k)):.3f},"
                    f"{y + HEX_RADIUS * math.sin(math.radians(60 * k)):.3f}" for k in range(6))


def _end(x: float, y: float, facing: int, length: float) -> tuple[float, float]:
    a = math.radians(60 * facing)
    return x + length * math.cos(a), y - length * math.sin(a)


def visible_tanks(model: Any) -> tuple[set[int], dict[int, tuple[int, int]]]:
    """``(tank ids shown, {enemy id: last-seen hex} ghosts)``: every tank when nobody plays; with a person playing,
    the side's own tanks, the enemies its observation knows now and every tank out of the fight, plus ghosts of
    the live enemies it remembers but does not know now."""
    b = model.battle
    if model.human is None:
        return {t.tank_id for t in b.tanks}, {}
    obs = model.viewer(model.human)
    shown = set(obs.own_ids()) | set(obs.known_ids()) | {t.tank_id for t in b.tanks if not t.alive}
    ghosts = {int(tid): (int(h[0]), int(h[1])) for tid, h in obs.last_known().items()
              if isinstance(tid, int) and tid not in shown and h is not None}
    return shown, ghosts


def _tank_text(t: Any, b: Any) -> str:
    side = b.sides[t.side].name
    parts = [f"{t.label} ({side}, {t.vehicle_id}) · {t.status}", f"hull facing {t.facing}"]
    if t.turret_facing is not None:
        parts[-1] += f", turret {t.turret_facing}"
    state = {k: v for k, v in t.rules_state.items() if isinstance(v, (bool, int, float, str)) and v not in (False,)}
    if state:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(state.items()))[:160])
    return "\n".join(parts)


def board_data(model: Any) -> dict[str, Any]:
    """What :class:`HexBoard` draws for ``model`` now (module docstring): a JSON-able dict with ``viewbox``,
    ``cells``, ``tanks``, ``lines`` and ``tips``."""
    from sim.view.app import _pct

    b = model.battle
    shown, ghosts = visible_tanks(model)
    choices = model.human_choices()
    marks: dict[tuple[int, int], str] = {}
    for c in choices:
        if c.hex is not None and c.kind in ("step", "fire", "ram", "activate"):
            cls = "legal-actor" if c.kind == "activate" else f"legal-{c.kind}"
            marks.setdefault(c.hex, cls)
    objectives = {tuple(o["hex"]): o for o in b.objectives}
    cells = []
    xs, ys = [], []
    for h in sorted(b.map.cells):
        x, y = _xy(h)
        xs.append(x)
        ys.append(y)
        hh = (int(h[0]), int(h[1]))
        obj = hh in objectives
        step = marks.get(hh) == "legal-step"
        cells.append({"id": _key(h), "pts": _hex_points(x, y),
                      "fill": render.TERRAIN_COLOURS.get(b.map.terrain(h), render.UNKNOWN_TERRAIN),
                      "stroke": HIGHLIGHT["legal-step"] if step else "#f1c40f" if obj else "#9a9a8a",
                      "sw": 0.22 if step else 0.18 if obj else 0.04, "cls": "legal-step" if step else ""})
    sel = model.selected if model.selected is not None and b.tanks[model.selected].alive else None
    if sel is not None and model.human is not None and b.tanks[sel].side != model.human:
        sel = None
    sel_obs = None
    if sel is not None:
        sel_obs = model.viewer(b.tanks[sel].side, actor=sel)
    tips: dict[str, str] = {}
    for h in b.map.cells:
        text = f"hex {_key(h)} · {b.map.terrain(h).replace('_', ' ')}"
        o = objectives.get((int(h[0]), int(h[1])))
        if o is not None:
            text += f" · objective {o.get('name', '')} ({o.get('points', 0)} points)"
        tips[_key(h)] = text
    tanks = []
    for t in b.tanks:
        if t.hex is None or (t.tank_id not in shown):
            continue
        x, y = _xy(t.hex)
        hx, hy = _end(x, y, t.facing, 0.85)
        tx = ty = None
        if t.turret_facing is not None:
            tx, ty = _end(x, y, t.turret_facing, 1.0)
        cls = marks.get((int(t.hex[0]), int(t.hex[1])), "")
        if cls == "legal-step":
            cls = ""
        tanks.append({"id": t.tank_id, "hex": _key(t.hex), "x": round(x, 3), "y": round(y, 3), "r": 0.5,
                      "fill": render.side_colour(t.side), "opacity": 1.0 if t.alive else 0.4,
                      "ring": HIGHLIGHT.get(cls, "#000000" if t.tank_id == sel else "none"),
                      "ring_w": 0.26 if cls or t.tank_id == sel else 0.0, "dash": "",
                      "hx": hx, "hy": hy, "tx": tx, "ty": ty, "label": t.label, "cls": cls,
                      "wreck": t.status == "destroyed",
                      "marks": ",".join(render.MARKERS[m][0] for m in render.markers_of(t.rules_state, t.status))})
        text = _tank_text(t, b)
        if sel_obs is not None and t.side != b.tanks[sel].side and t.alive:
            odds = sel_obs.odds(t.tank_id, shooter=sel)
            text += (f"\nshot from {b.tanks[sel].label}: " + ("not possible now" if odds is None else
                     f"hit {_pct(odds.p_hit)}, kill {_pct(odds.p_kill)}"))
        tips[_key(t.hex)] += "\n" + text
    for tid, h in sorted(ghosts.items()):
        x, y = _xy(h)
        t = b.tanks[tid]
        tanks.append({"id": tid, "hex": _key(h), "x": round(x, 3), "y": round(y, 3), "r": 0.45, "fill": "none",
                      "opacity": 0.7, "ring": render.side_colour(t.side), "ring_w": 0.1, "dash": "0.2,0.15",
                      "hx": x, "hy": y, "tx": None, "ty": None, "label": f"{t.label}?", "cls": "ghost", "marks": "",
                      "wreck": False})
        tips[_key(h)] += f"\n{t.label}: last seen here (not in sight now)"
    lines = []
    on_hexes = {_key(t.hex) for t in b.tanks if t.hex is not None and t.tank_id in shown}
    for a, c, outcome in model.marks["shots"]:
        if model.human is not None and not (_key(a) in on_hexes and _key(c) in on_hexes):
            continue
        (x0, y0), (x1, y1) = _xy(a), _xy(c)
        lines.append({"x1": x0, "y1": y0, "x2": x1, "y2": y1, "colour": render.OUTCOME_COLOURS[outcome],
                      "w": 0.16 if outcome == "kill" else 0.1, "dash": "", "cls": f"shot-{outcome}"})
    for tid, path in sorted(model.marks["moves"].items()):
        if tid not in shown:
            continue
        for a, c in zip(path, path[1:]):
            (x0, y0), (x1, y1) = _xy(a), _xy(c)
            lines.append({"x1": x0, "y1": y0, "x2": x1, "y2": y1, "colour": render.side_colour(b.tanks[tid].side),
                          "w": 0.1, "dash": "0.2,0.15", "cls": "trail"})
    pad = 1.3
    viewbox = f"{min(xs) - pad:.2f} {min(ys) - pad:.2f} {max(xs) - min(xs) + 2 * pad:.2f} " \
              f"{max(ys) - min(ys) + 2 * pad:.2f}"
    return {"viewbox": viewbox, "cells": cells, "tanks": tanks, "lines": lines, "tips": tips}


def _widget_class() -> Any:
    import ipyvuetify as v
    import traitlets

    class HexBoard(v.VuetifyTemplate):
        """The board widget: ``board`` is :func:`board_data`'s dict; a click on a hex or tank calls
        ``on_hex("q,r")``."""

        template = traitlets.Unicode(TEMPLATE).tag(sync=True)
        board = traitlets.Dict().tag(sync=True)
        on_hex = traitlets.Callable(None, allow_none=True)

        def vue_hex_click(self, data: Any) -> None:
            if self.on_hex is not None:
                self.on_hex(data)

    return HexBoard


HexBoard = _widget_class()
