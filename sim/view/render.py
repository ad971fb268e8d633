"""Pictures: the board (hexes, terrain, tanks with facing and turret, wrecks, shot lines, objectives) and the shared
style for result plots.  Matplotlib with the Agg backend; every plot in tanksim goes through here.

``draw_board(ax, board)`` takes a plain :class:`BoardPicture` (built from a live battle by :func:`picture_of` or from
a recorded log by the replay code), so live battles and stored logs draw the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import RegularPolygon  # noqa: E402

SQ3 = math.sqrt(3)
TERRAIN_COLOURS = {"open": "#eef0d8", "woods": "#6f9a5b", "rubble": "#b7a58c", "building": "#8a6e5a",
                   "water": "#7fb2d9", "light_woods": "#93b57d", "hill": "#d8c48f", "road": "#d9d2bf"}
SIDE_COLOURS = ["#c0392b", "#2c3e50", "#27ae60", "#8e44ad"]
RESULT_COLOURS = {"miss": "#999999", "ricochet": "#e6a700", "dud": "#e6a700", "destroyed": "#d00000",
                  "auto_kill": "#d00000", "burn": "#d00000", "elim": "#d00000", "hit": "#e67e22"}
STYLE = {"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
         "axes.spines.right": False, "font.size": 9}


def centre(q: int, r: int) -> tuple[float, float]:
    """Centre of hex ``(q, r)`` in hex-size units (CONVENTIONS.md layout: flat-top, y up)."""
    return 1.5 * q, -(SQ3 / 2 * q + SQ3 * r)


@dataclass
class TankPicture:
    label: str
    side: int
    hex: tuple[int, int] | None
    facing: int
    turret_facing: int | None = None
    status: str = "active"
    markers: tuple[str, ...] = ()


@dataclass
class BoardPicture:
    """What a board frame shows: cells with terrain, tanks, shot lines ``(from, to, result)``, objectives."""

    cells: list[tuple[int, int]]
    terrain: Mapping[tuple[int, int], str]
    tanks: list[TankPicture]
    shots: list[tuple[tuple[int, int], tuple[int, int], str]] = field(default_factory=list)
    objectives: list[tuple[int, int]] = field(default_factory=list)
    side_names: list[str] = field(default_factory=list)
    title: str = ""
    moves: list[tuple[int, list[tuple[int, int]]]] = field(default_factory=list)  # (side, path of hexes) trails


def picture_of(battle: Any, shots: Iterable[tuple] = (), title: str = "") -> BoardPicture:
    """A :class:`BoardPicture` of a live battle."""
    tanks = []
    for t in battle.tanks:
        marks = tuple(k for k in ("panicked", "shocked", "immobilized", "ambush") if t.rules_state.get(k))
        tanks.append(TankPicture(t.label, t.side, None if t.hex is None else tuple(t.hex), t.facing, t.turret_facing,
                                 t.status, marks))
    return BoardPicture(sorted(battle.map.cells), {h: battle.map.terrain(h) for h in battle.map.cells}, tanks,
                        list(shots), [tuple(o["hex"]) for o in battle.objectives], [s.name for s in battle.sides],
                        title)


def shots_of(battle: Any) -> list[tuple]:
    """Every shot line of a battle's log: ``(shooter hex, target hex, result)`` (positions at the time of the shot
    are approximated by the log's last Moved events before it)."""
    pos: dict[int, tuple] = {}
    out = []
    for entry in battle.log:
        e = entry.event
        if e.kind == "BattleStarted":
            pos = {t["tank_id"]: tuple(t["hex"]) for t in e.tanks}
        elif e.kind == "Moved":
            pos[e.tank] = tuple(e.hex)
        elif e.kind == "ShotResolved" and e.target is not None and e.shooter in pos and e.target in pos:
            out.append((pos[e.shooter], pos[e.target], e.result))
    return out


def draw_board(ax: Any, pic: BoardPicture, *, show_coords: bool | None = None) -> None:
    """Draw ``pic`` on a matplotlib ``ax``."""
    n = len(pic.cells)
    if show_coords is None:
        show_coords = n <= 150
    patches, colours = [], []
    for (q, r) in pic.cells:
        x, y = centre(q, r)
        patches.append(RegularPolygon((x, y), 6, radius=1.0, orientation=math.radians(30)))
        colours.append(TERRAIN_COLOURS.get(pic.terrain.get((q, r), "open"), "#dddddd"))
    pc = PatchCollection(patches, facecolors=colours, edgecolors="#9a9a8a", linewidths=0.3 if n > 2000 else 0.6)
    ax.add_collection(pc)
    for (q, r) in pic.objectives:
        x, y = centre(q, r)
        ax.add_patch(RegularPolygon((x, y), 6, radius=0.95, orientation=math.radians(30), fill=False,
                                    edgecolor="#f1c40f", linewidth=2.5))
    for side, path in pic.moves:
        if len(path) > 1:
            pts = [centre(*h) for h in path]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=SIDE_COLOURS[side % len(SIDE_COLOURS)],
                    linewidth=1.2, linestyle=":", alpha=0.8, zorder=3)
    for (a, b, result) in pic.shots:
        (x0, y0), (x1, y1) = centre(*a), centre(*b)
        ax.plot([x0, x1], [y0, y1], color=RESULT_COLOURS.get(result, "#e67e22"), linewidth=1.0, alpha=0.7,
                zorder=3)
    # on large boards a hex is tiny: draw tanks bigger than their hex so they stay visible
    span = max(1, max(q for q, _ in pic.cells) - min(q for q, _ in pic.cells) + 1)
    k = max(1.0, span / 35)
    for t in pic.tanks:
        if t.hex is None:
            continue
        x, y = centre(*t.hex)
        col = SIDE_COLOURS[t.side % len(SIDE_COLOURS)]
        if t.status == "destroyed":  # a wreck: its side's colour, faded, crossed out
            ax.add_patch(plt.Circle((x, y), 0.45 * k, color=col, alpha=0.35, zorder=3))
            d = 0.45 * k
            ax.plot([x - d, x + d], [y - d, y + d], color="black", linewidth=2, zorder=4)
            ax.plot([x - d, x + d], [y + d, y - d], color="black", linewidth=2, zorder=4)
            continue
        alpha = 0.45 if t.status != "active" else 1.0
        ax.add_patch(plt.Circle((x, y), 0.5 * k, color=col, alpha=alpha, zorder=4))
        ang = math.radians(60 * t.facing)
        ax.plot([x, x + 0.85 * k * math.cos(ang)], [y, y + 0.85 * k * math.sin(ang)], color="black", linewidth=2.2,
                zorder=5)
        if t.turret_facing is not None:
            ta = math.radians(60 * t.turret_facing)
            ax.plot([x, x + 1.0 * k * math.cos(ta)], [y, y + 1.0 * k * math.sin(ta)], color="white", linewidth=1.0,
                    zorder=6)
        if show_coords or len(pic.tanks) <= 40:
            ax.annotate(t.label, (x, y - 0.75), ha="center", va="top", fontsize=6, zorder=7)
        if t.markers:
            ax.annotate("!" + ",".join(m[:3] for m in t.markers), (x, y + 0.6), ha="center", fontsize=6,
                        color="#d35400", zorder=7)
    xs = [centre(*c)[0] for c in pic.cells]
    ys = [centre(*c)[1] for c in pic.cells]
    ax.set_xlim(min(xs) - 1.2, max(xs) + 1.2)
    ax.set_ylim(min(ys) - 1.2, max(ys) + 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    if pic.title:
        ax.set_title(pic.title)


def save_board(pic: BoardPicture, path: str, size: float = 9.0) -> None:
    """Draw ``pic`` to an image file (PNG, SVG, PDF by suffix)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(size, size))
        draw_board(ax, pic)
        side_legend(ax, pic)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


def interval_plot(path: str, labels: list[str], centres: list[float], lows: list[float], highs: list[float], *,
                  title: str = "", xlabel: str = "", ylabel: str = "win rate", reference: float | None = 0.5) -> None:
    """The shared result plot: one point with an interval per label (batch reports, leaderboards)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(labels) + 2), 4))
        xs = range(len(labels))
        ax.errorbar(xs, centres, yerr=[[c - lo for c, lo in zip(centres, lows)],
                                       [hi - c for c, hi in zip(centres, highs)]], fmt="o", capsize=4,
                    color=SIDE_COLOURS[1])
        if reference is not None:
            ax.axhline(reference, color="#999999", linestyle="--", linewidth=1)
        ax.set_xticks(list(xs), labels, rotation=30, ha="right")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


def side_legend(ax: Any, pic: BoardPicture) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color=SIDE_COLOURS[i % 4], label=n)
               for i, n in enumerate(pic.side_names)]
    if any(t.status == "destroyed" for t in pic.tanks):
        handles.append(Line2D([], [], marker="X", linestyle="", color="black", label="wreck"))
    if pic.shots:
        results = {r for _, _, r in pic.shots}
        for label, names in (("shot: kill", ("destroyed", "auto_kill", "burn", "elim")),
                             ("shot: hit, no kill", ("ricochet", "dud", "hit")), ("shot: miss", ("miss",))):
            if results & set(names):
                handles.append(Line2D([], [], color=RESULT_COLOURS[names[0]], label=label))
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize=8)


def board_figure(pic: BoardPicture, size: float = 8.0) -> Any:
    """A stand-alone matplotlib ``Figure`` (no pyplot state, safe in server threads) showing ``pic`` in the shared
    STYLE with a side legend; ``size`` is the width and height in inches.  Used by replays and the app."""
    from matplotlib.figure import Figure

    with plt.rc_context(STYLE):
        fig = Figure(figsize=(size, size), dpi=STYLE["figure.dpi"])
        ax = fig.add_subplot()
        draw_board(ax, pic)
        side_legend(ax, pic)
        fig.tight_layout()
    return fig


def board_rgb(battle: Any, title: str = "", size: float = 6.0) -> Any:
    """A live battle's board (every tank, shot lines of its log) as an ``(H, W, 3)`` uint8 numpy array, drawn like
    :func:`board_figure` (``size`` in inches at the STYLE's dpi); used by the environments' ``render()``."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = board_figure(picture_of(battle, shots_of(battle), title), size)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def series_figure(series: Any, side_names: list[str], size: tuple[float, float] = (6.0, 4.5)) -> Any:
    """Two stacked panels in the shared STYLE from a battle's per-turn DataCollector frame ``series`` (a pandas
    DataFrame with ``turn``, ``alive_<side name>`` and ``cum_kills`` columns; may be empty): tanks alive per side and
    cumulative kills against the turn.  Returns a matplotlib ``Figure``.  Raises ``KeyError`` if a non-empty frame
    lacks a column."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    with plt.rc_context(STYLE):
        fig = Figure(figsize=size, dpi=STYLE["figure.dpi"])
        ax1, ax2 = fig.subplots(2, 1, sharex=True)
        empty = series is None or len(series) == 0
        for i, name in enumerate(side_names):
            if not empty:
                ax1.plot(series["turn"], series[f"alive_{name}"], marker="o", color=SIDE_COLOURS[i % 4], label=name)
        ax1.set_ylabel("tanks alive")
        if side_names and not empty:
            ax1.legend(loc="best", fontsize=8)
        if not empty:
            ax2.step(series["turn"], series["cum_kills"], where="post", color=SIDE_COLOURS[1], marker="o")
        ax2.set_ylabel("cumulative kills")
        ax2.set_xlabel("turn")
        for ax in (ax1, ax2):
            ax.set_ylim(bottom=0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if empty:
            ax1.set_title("no completed turn yet", fontsize=8)
        fig.tight_layout()
    return fig


def heatmap(path: str, matrix: Any, row_labels: list[str], col_labels: list[str], *, title: str = "",
            xlabel: str = "", ylabel: str = "", vmin: float = 0.0, vmax: float = 1.0, cmap: str = "RdBu",
            fmt: str = "{:.2f}", colorbar_label: str = "") -> None:
    """A labelled heat map of a 2-D array (``matrix[i][j]`` for row ``i``, column ``j``; NaN cells left blank, e.g.
    a head-to-head score matrix), each cell annotated with ``fmt``, saved to ``path`` in the shared STYLE."""
    import numpy as np

    m = np.asarray(matrix, dtype=float)
    with plt.rc_context({**STYLE, "axes.grid": False}):
        fig, ax = plt.subplots(figsize=(max(4.5, 0.7 * len(col_labels) + 2.5), max(3.5, 0.55 * len(row_labels) + 1.8)))
        im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        ax.set_xticks(range(len(col_labels)), col_labels, rotation=30, ha="right")
        ax.set_yticks(range(len(row_labels)), row_labels)
        mid = (vmin + vmax) / 2
        span = (vmax - vmin) or 1.0
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                if np.isfinite(m[i, j]):
                    ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=7,
                            color="white" if abs(m[i, j] - mid) > 0.3 * span else "black")
        cb = fig.colorbar(im, ax=ax)
        if colorbar_label:
            cb.set_label(colorbar_label)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
