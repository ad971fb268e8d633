"""Pictures: the board (hexes, terrain, tanks with facing and turret, wrecks, shot lines, objectives) and the shared
style for result plots.  Matplotlib with the Agg backend; every plot in tanksim goes through here.

``draw_board(ax, board)`` takes a plain :class:`BoardPicture` (built from a live battle by :func:`picture_of` or from
a recorded log by the replay code), so live battles and stored logs draw the same way.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import RegularPolygon  # noqa: E402
from matplotlib.typing import RcKeyType  # noqa: E402

from sim.battle import BoardView  # noqa: E402
from sim.events import BattleStarted, Moved, ShotResolved, Status  # noqa: E402

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure
    from matplotlib.text import Text

SQ3 = math.sqrt(3)
#: Fill colour per terrain name (the vocabulary of the three rule sets); an unknown name is drawn grey and listed
#: in the legend under its own name.
TERRAIN_COLOURS = {"open": "#eef0d8", "road": "#d9d2bf", "woods": "#6f9a5b", "light_woods": "#93b57d",
                   "smoke": "#c9c9d6", "rocks": "#a3a3a3", "rubble": "#b7a58c", "wall": "#7d6b5d",
                   "building": "#8a6e5a", "stone_building": "#6d5a4f", "hill": "#d8c48f", "water": "#7fb2d9"}
UNKNOWN_TERRAIN = "#dddddd"
#: Colour per side **index** (side 1, side 2, ...): the same index always gets the same colour in every scenario,
#: picture, chart and the app, whatever the sides are called.
SIDE_COLOURS = ["#c0392b", "#2c3e50", "#27ae60", "#8e44ad"]
#: Shot-line colour per outcome class (:func:`shot_outcome`).
OUTCOME_COLOURS = {"kill": "#d00000", "hit": "#e67e22", "miss": "#999999"}
OUTCOME_LABELS = {"kill": "shot: kill", "hit": "shot: hit, no kill", "miss": "shot: miss"}
#: Short tags of the rule-set markers drawn beside a tank (``rules_state`` flags), and their legend text.
MARKERS = {"panicked": ("pan", "panicked"), "shocked": ("sho", "shocked"), "immobilized": ("imm", "immobilized"),
           "ambush": ("amb", "in ambush")}
#: The shared matplotlib style (``rcParams`` keys) of every picture and chart.
STYLE: dict[RcKeyType, Any] = {"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
         "axes.spines.right": False, "font.size": 9}
#: A map with more cells than this is cropped to the action (tanks, objectives, shots, trails) when the box around
#: the action covers less than :data:`CROP_FRACTION` of the map's drawing.
CROP_ABOVE_CELLS = 400
CROP_FRACTION = 0.6
#: Hexes of margin kept around the action when cropping.
CROP_MARGIN = 3


def side_colour(side: int) -> str:
    """The colour of side index ``side`` (0-based), fixed across scenarios (:data:`SIDE_COLOURS`)."""
    return SIDE_COLOURS[side % len(SIDE_COLOURS)]


def shot_outcome(hit: bool, kill: bool) -> str:
    """The drawn class of a ``ShotResolved`` event: ``"kill"``, ``"hit"`` (a hit that did not kill) or ``"miss"``.

    Read from the event's ``hit`` / ``kill`` flags, which every rule set fills the same way, never from its
    ``result`` text: the result words differ per rule set (Hummel Quest says ``hit`` for every damaging shot and
    reports the kill only in ``kill``; a ram's result is ``collision``), so a vocabulary of result words drew
    Hummel Quest's killing shots as "hit, no kill"."""
    return "kill" if kill else "hit" if hit else "miss"


def event_outcome(e: ShotResolved) -> str:
    """:func:`shot_outcome` of a ``ShotResolved`` event ``e``."""
    return shot_outcome(bool(e.hit), bool(e.kill))


def centre(q: int, r: int) -> tuple[float, float]:
    """Centre of hex ``(q, r)`` in hex-size units (CONVENTIONS.md layout: flat-top, y up)."""
    return 1.5 * q, -(SQ3 / 2 * q + SQ3 * r)


@dataclass
class TankPicture:
    """One tank as drawn: ``label``, ``side`` index, ``hex`` (``None`` off the board), hull ``facing`` and
    ``turret_facing`` (vertex 0..5), ``status`` and the rule-set ``markers`` set on it (keys of :data:`MARKERS`)."""

    label: str
    side: int
    hex: tuple[int, int] | None
    facing: int
    turret_facing: int | None = None
    status: str = "active"
    markers: tuple[str, ...] = ()


@dataclass
class BoardPicture:
    """What a board frame shows: cells with terrain, tanks, shot lines ``(from hex, to hex, outcome)`` with the
    outcome a :func:`shot_outcome` class, objectives, side names (by side index), a title and move trails
    ``(side, [hexes])``.  ``crop``: ``None`` crops a map of more than :data:`CROP_ABOVE_CELLS` cells to the action,
    ``True`` / ``False`` force it (:func:`view_limits`)."""

    cells: list[tuple[int, int]]
    terrain: Mapping[tuple[int, int], str]
    tanks: list[TankPicture]
    shots: list[tuple[tuple[int, int], tuple[int, int], str]] = field(default_factory=list)
    objectives: list[tuple[int, int]] = field(default_factory=list)
    side_names: list[str] = field(default_factory=list)
    title: str = ""
    moves: list[tuple[int, list[tuple[int, int]]]] = field(default_factory=list)  # (side, path of hexes) trails
    crop: bool | None = None
    view: tuple[float, float, float, float] | None = None  # fixed (xmin, xmax, ymin, ymax), e.g. a whole animation's


def markers_of(rules_state: Mapping[str, Any], status: str | None = None) -> tuple[str, ...]:
    """The :data:`MARKERS` set in a tank's ``rules_state`` (in :data:`MARKERS` order); none for a tank whose
    ``status`` says it is out of the fight (:data:`sim.events.Status.LOST`: a wreck is not "in ambush" or
    "panicked", whatever flags its state kept)."""
    if status in Status.LOST:
        return ()
    return tuple(k for k in MARKERS if rules_state.get(k))


#: A shot line as drawn: ``(from hex, to hex, outcome)`` with the outcome a :func:`shot_outcome` class.
ShotLine = tuple[tuple[int, int], tuple[int, int], str]


def picture_of(battle: BoardView, shots: Iterable[ShotLine] = (), title: str = "") -> BoardPicture:
    """A :class:`BoardPicture` of a live battle (``shots``: ``(from hex, to hex, outcome)`` lines to draw)."""
    tanks = []
    for t in battle.tanks:
        at = None if t.hex is None else (t.hex.q, t.hex.r)
        tanks.append(TankPicture(t.label, t.side, at, t.facing, t.turret_facing, t.status,
                                 markers_of(t.rules_state, t.status)))
    return BoardPicture(sorted(battle.map.cells), {h: battle.map.terrain(h) for h in battle.map.cells}, tanks,
                        list(shots), [tuple(o["hex"]) for o in battle.objectives], [s.name for s in battle.sides],
                        title)


def shots_of(battle: BoardView) -> list[ShotLine]:
    """Every shot line of a battle's log: ``(shooter hex, target hex, outcome)`` (:func:`shot_outcome`; positions
    at the time of the shot are the log's last Moved events before it).  Shots at a hex (no target tank) are left
    out."""
    pos: dict[int, tuple[int, int]] = {}
    out = []
    for entry in battle.log:
        e = entry.event
        if isinstance(e, BattleStarted):
            pos = {t["tank_id"]: tuple(t["hex"]) for t in e.tanks}
        elif isinstance(e, Moved):
            pos[e.tank] = (e.hex[0], e.hex[1])
        elif isinstance(e, ShotResolved) and e.target is not None and e.shooter in pos and e.target in pos:
            out.append((pos[e.shooter], pos[e.target], event_outcome(e)))
    return out


def hex_distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Hexes between axial ``a`` and ``b``."""
    dq, dr = a[0] - b[0], a[1] - b[1]
    return (abs(dq) + abs(dr) + abs(dq + dr)) // 2


def uses_key(pic: BoardPicture) -> bool:
    """Whether tanks are drawn with numbers and a numbered key instead of name labels: when two tanks on the board
    stand within one hex of each other (their labels would overlap) or more than 20 are on it."""
    on = [t.hex for t in pic.tanks if t.hex is not None]
    if len(on) > 20:
        return True
    return any(hex_distance(a, b) <= 1 for i, a in enumerate(on) for b in on[i + 1:])


def view_limits(pic: BoardPicture) -> tuple[float, float, float, float]:
    """``(xmin, xmax, ymin, ymax)`` of the drawing in hex-size units: :attr:`BoardPicture.view` if set, else the
    whole map, or, when cropping applies
    (:attr:`BoardPicture.crop` ``True``, or ``None`` on a map of more than :data:`CROP_ABOVE_CELLS` cells where
    the box covers less than :data:`CROP_FRACTION` of it), the box around the tanks on the board, the objectives,
    shots and trails plus :data:`CROP_MARGIN` hexes."""
    if pic.view is not None:
        return pic.view
    xs = [centre(*c)[0] for c in pic.cells]
    ys = [centre(*c)[1] for c in pic.cells]
    full = (min(xs) - 1.2, max(xs) + 1.2, min(ys) - 1.2, max(ys) + 1.2)
    crop = pic.crop if pic.crop is not None else len(pic.cells) > CROP_ABOVE_CELLS
    if not crop:
        return full
    pts = [t.hex for t in pic.tanks if t.hex is not None] + list(pic.objectives)
    pts += [h for a, b, _ in pic.shots for h in (a, b)] + [h for _, path in pic.moves for h in path]
    if not pts:
        return full
    px = [centre(*h)[0] for h in pts]
    py = [centre(*h)[1] for h in pts]
    m = 1.5 * CROP_MARGIN
    box = (max(full[0], min(px) - m), min(full[1], max(px) + m), max(full[2], min(py) - m), min(full[3], max(py) + m))
    area = (box[1] - box[0]) * (box[3] - box[2])
    if pic.crop is None and area >= CROP_FRACTION * (full[1] - full[0]) * (full[3] - full[2]):
        return full
    return box


def draw_board(ax: Any, pic: BoardPicture, *, show_coords: bool | None = None) -> None:
    """Draw ``pic`` on a matplotlib ``ax``: terrain, objectives (gold outline), move trails (dotted, side colour),
    shot lines (:data:`OUTCOME_COLOURS`), tanks (side colour by index, hull facing black, turret white; wrecks
    faded and crossed out), marker tags and either name labels or numbers keyed by :func:`side_legend`."""
    lo_x, hi_x, lo_y, hi_y = view_limits(pic)
    cells = [c for c in pic.cells if lo_x - 1 <= centre(*c)[0] <= hi_x + 1 and lo_y - 1 <= centre(*c)[1] <= hi_y + 1]
    n = len(cells)
    patches, colours = [], []
    for (q, r) in cells:
        x, y = centre(q, r)
        patches.append(RegularPolygon((x, y), 6, radius=1.0, orientation=math.radians(30)))
        colours.append(TERRAIN_COLOURS.get(pic.terrain.get((q, r), "open"), UNKNOWN_TERRAIN))
    pc = PatchCollection(patches, facecolors=colours, edgecolors="#9a9a8a", linewidths=0.3 if n > 2000 else 0.6)
    ax.add_collection(pc)
    for (q, r) in pic.objectives:
        x, y = centre(q, r)
        ax.add_patch(RegularPolygon((x, y), 6, radius=0.95, orientation=math.radians(30), fill=False,
                                    edgecolor="#f1c40f", linewidth=2.5, zorder=2))
    for side, path in pic.moves:
        if len(path) > 1:
            pts = [centre(*h) for h in path]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=side_colour(side),
                    linewidth=1.2, linestyle=":", alpha=0.8, zorder=3)
    for (a, b, outcome) in pic.shots:
        (x0, y0), (x1, y1) = centre(*a), centre(*b)
        ax.plot([x0, x1], [y0, y1], color=OUTCOME_COLOURS.get(outcome, OUTCOME_COLOURS["hit"]),
                linewidth=1.6 if outcome == "kill" else 1.0, alpha=0.8, zorder=3)
    # on large views a hex is tiny: draw tanks bigger than their hex so they stay visible
    span = max(1.0, (hi_x - lo_x) / 1.5)
    k = max(1.0, span / 35)
    keyed = uses_key(pic)
    labelled = keyed or len([t for t in pic.tanks if t.hex is not None]) <= 40
    for i, t in enumerate(pic.tanks):
        if t.hex is None:
            continue
        x, y = centre(*t.hex)
        col = side_colour(t.side)
        if t.status == "destroyed":  # a wreck: its side's colour, faded, crossed out
            ax.add_patch(plt.Circle((x, y), 0.45 * k, color=col, alpha=0.35, zorder=3))
            d = 0.45 * k
            ax.plot([x - d, x + d], [y - d, y + d], color="black", linewidth=2, zorder=4)
            ax.plot([x - d, x + d], [y + d, y - d], color="black", linewidth=2, zorder=4)
        else:
            alpha = 0.45 if t.status != "active" else 1.0
            ax.add_patch(plt.Circle((x, y), 0.5 * k, color=col, alpha=alpha, zorder=4))
            ang = math.radians(60 * t.facing)
            ax.plot([x, x + 0.85 * k * math.cos(ang)], [y, y + 0.85 * k * math.sin(ang)], color="black",
                    linewidth=2.2, zorder=5)
            if t.turret_facing is not None:
                ta = math.radians(60 * t.turret_facing)
                ax.plot([x, x + 1.0 * k * math.cos(ta)], [y, y + 1.0 * k * math.sin(ta)], color="white",
                        linewidth=1.0, zorder=6)
        if labelled and keyed:
            ax.annotate(str(i + 1), (x - 0.55 * k, y + 0.35 * k), ha="right", va="bottom", fontsize=6,
                        fontweight="bold", zorder=7,
                        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": col, "lw": 0.6, "alpha": 0.85})
        elif labelled:
            ax.annotate(t.label, (x, y - 0.75 * k), ha="center", va="top", fontsize=6, zorder=7)
        if t.markers:
            ax.annotate(",".join(MARKERS[m][0] for m in t.markers if m in MARKERS), (x, y + 0.6 * k),
                        ha="center", fontsize=6, color="#d35400", fontweight="bold", zorder=7)
    ax.set_xlim(lo_x, hi_x)
    ax.set_ylim(lo_y, hi_y)
    ax.set_aspect("equal")
    ax.axis("off")
    if pic.title:
        ax.set_title(pic.title)


def save_board(pic: BoardPicture, path: str, size: float = 9.0) -> None:
    """Draw ``pic`` with its legend (:func:`board_figure`) to an image file (PNG, SVG, PDF by suffix)."""
    fig = board_figure(pic, size)
    fig.savefig(path)


def fit_titles(fig: Figure, *extra: Text, margin: float = 4.0) -> None:
    """Lay ``fig`` out (``tight_layout``) so that every axes title and each of ``extra`` (e.g. the ``Text`` that
    ``fig.suptitle`` returns) shows whole: a title wider than the room it has inside the figure (twice its centre's
    distance to the nearer figure edge, less ``margin`` pixels each side) is wrapped at word boundaries onto more
    lines (``textwrap``) until it fits; the figure's size is kept.  Call it last, before ``savefig``."""
    import textwrap

    texts = [t for t in [*(ax.title for ax in fig.axes), *extra] if t.get_text()]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvas (matplotlib.use above)
    for _ in range(8):
        fig.tight_layout()
        fb = fig.bbox
        wide = False
        for t in texts:
            bb = t.get_window_extent(renderer)
            if bb.x0 >= fb.x0 + margin and bb.x1 <= fb.x1 - margin:
                continue
            cx = (bb.x0 + bb.x1) / 2
            room = 2 * min(cx - fb.x0, fb.x1 - cx) - 2 * margin
            lines = t.get_text().split("\n")
            longest = max(len(line) for line in lines)
            chars = max(8, min(longest - 1, int(longest * room / max(bb.width, 1.0))))
            t.set_text("\n".join(textwrap.fill(line, width=chars, break_long_words=False) for line in lines))
            wide = True
        if not wide:
            return


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
        fit_titles(fig)
        fig.savefig(path)
        plt.close(fig)


def legend_entries(pic: BoardPicture) -> list[tuple[str, str, str]]:
    """What the legend of ``pic`` lists, as ``(kind, label, colour)`` rows in order: the sides (``side``, by side
    index, labelled ``"side N: name"``), the terrain on the drawn map (``terrain``), objectives, wrecks, the marker
    tags in use (``marker``: ``"amb = in ambush"``), move trails and the shot outcomes present (``shot``)."""
    rows = [("side", f"side {i + 1}: {n}", side_colour(i)) for i, n in enumerate(pic.side_names)]
    present = set(pic.terrain.get(c, "open") for c in pic.cells)
    for name in [*TERRAIN_COLOURS, *sorted(present - set(TERRAIN_COLOURS))]:
        if name in present:
            rows.append(("terrain", name.replace("_", " "), TERRAIN_COLOURS.get(name, UNKNOWN_TERRAIN)))
    if pic.objectives:
        rows.append(("objective", "objective", "#f1c40f"))
    if any(t.status == "destroyed" and t.hex is not None for t in pic.tanks):
        rows.append(("wreck", "wreck", "black"))
    if any(t.status not in ("active", "destroyed") and t.hex is not None for t in pic.tanks):
        rows.append(("out", "out of action (faded)", "#999999"))
    used = {m for t in pic.tanks if t.hex is not None for m in t.markers}
    for m, (tag, text) in MARKERS.items():
        if m in used:
            rows.append(("marker", f"{tag} = {text}", "#d35400"))
    if any(len(path) > 1 for _, path in pic.moves):
        rows.append(("trail", "move this step", "#555555"))
    outcomes = {o for _, _, o in pic.shots}
    for o in OUTCOME_COLOURS:
        if o in outcomes:
            rows.append(("shot", OUTCOME_LABELS[o], OUTCOME_COLOURS[o]))
    return rows


def side_legend(ax: Any, pic: BoardPicture) -> None:
    """The legend of :func:`legend_entries` to the right of the board, and, when tanks are numbered
    (:func:`uses_key`), the numbered key of tank names below it."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    for kind, label, colour in legend_entries(pic):
        if kind == "side":
            handles.append(Line2D([], [], marker="o", linestyle="", color=colour, label=label))
        elif kind == "terrain":
            handles.append(Patch(facecolor=colour, edgecolor="#9a9a8a", label=label))
        elif kind == "objective":
            handles.append(Patch(facecolor="none", edgecolor=colour, linewidth=2, label=label))
        elif kind == "out":
            handles.append(Line2D([], [], marker="o", linestyle="", color=colour, alpha=0.5, label=label))
        elif kind == "wreck":
            handles.append(Line2D([], [], marker="X", linestyle="", color=colour, label=label))
        elif kind == "marker":
            handles.append(Line2D([], [], marker="$!$", linestyle="", color=colour, label=label))
        elif kind == "trail":
            handles.append(Line2D([], [], linestyle=":", color=colour, label=label))
        else:
            handles.append(Line2D([], [], color=colour, linewidth=1.6, label=label))
    leg = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False,
                    borderaxespad=0.0)
    on = [(i, t) for i, t in enumerate(pic.tanks) if t.hex is not None]
    if uses_key(pic) and len(on) <= 40:
        ax.add_artist(leg)
        key = [Line2D([], [], marker="o", linestyle="", color=side_colour(t.side),
                      label=f"{i + 1} {t.label}" + (" (wreck)" if t.status == "destroyed"
                                                          else "" if t.status == "active" else f" ({t.status})"))
               for i, t in on]
        ax.legend(handles=key, loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=6, frameon=False,
                  borderaxespad=0.0, ncol=1 if len(key) <= 14 else 2, title="tanks", title_fontsize=7,
                  handletextpad=0.2, columnspacing=0.6)


def common_view(pics: Iterable[BoardPicture]) -> tuple[float, float, float, float]:
    """The union of the :func:`view_limits` of ``pics`` (one view for every frame of an animation, so a cropped
    board does not jump between frames).  Raises ``ValueError`` for no pictures."""
    boxes = [view_limits(p) for p in pics]
    if not boxes:
        raise ValueError("no pictures")
    return (min(b[0] for b in boxes), max(b[1] for b in boxes), min(b[2] for b in boxes), max(b[3] for b in boxes))


def figure_width(view: tuple[float, float, float, float], size: float) -> float:
    """Width in inches of a board figure ``size`` inches high showing ``view``, with the legend column."""
    aspect = (view[1] - view[0]) / max(1e-9, view[3] - view[2])
    return size * min(1.6, max(0.6, aspect)) + 2.4


def board_figure(pic: BoardPicture, size: float = 8.0) -> Figure:
    """A stand-alone matplotlib ``Figure`` (no pyplot state, safe in server threads) showing ``pic`` in the shared
    STYLE with its legend and key to the right; ``size`` is the board's height in inches (the figure is wider by
    the legend's column).  Used by pictures, replays and the environments."""
    from matplotlib.figure import Figure

    with plt.rc_context(STYLE):
        fig = Figure(figsize=(figure_width(view_limits(pic), size), size), dpi=STYLE["figure.dpi"])
        ax = fig.add_subplot()
        draw_board(ax, pic)
        side_legend(ax, pic)
        fig.tight_layout()
        fit_legends(fig, ax)
    return fig


def fit_legends(fig: Figure, ax: Any, margin: float = 4.0) -> None:
    """Narrow ``ax`` (its right edge, keeping the figure's size) until the legends drawn to its right end at least
    ``margin`` pixels inside the figure: ``tight_layout`` leaves out a legend placed outside the axes, and long
    side names were cut off (``side 1: Sovie``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.legend import Legend

    renderer = FigureCanvasAgg(fig).get_renderer()
    for _ in range(3):
        legends = [a for a in ax.get_children() if isinstance(a, Legend)]
        if not legends:
            return
        over = max(leg.get_window_extent(renderer).x1 for leg in legends) - (fig.bbox.width - margin)
        if over <= 0:
            return
        right = fig.subplotpars.right - over / fig.bbox.width
        fig.subplots_adjust(right=max(fig.subplotpars.left + 0.2, right))


def board_rgb(battle: BoardView, title: str = "", size: float = 6.0) -> np.ndarray:
    """A live battle's board (every tank, shot lines of its log) as an ``(H, W, 3)`` uint8 numpy array, drawn like
    :func:`board_figure` (``size`` in inches at the STYLE's dpi); used by the environments' ``render()``."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = board_figure(picture_of(battle, shots_of(battle), title), size)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def series_figure(series: pd.DataFrame | None, side_names: list[str],
                  size: tuple[float, float] = (6.0, 4.5)) -> Figure:
    """Two stacked panels in the shared STYLE from a battle's per-turn DataCollector frame ``series`` (a pandas
    DataFrame with ``turn``, ``alive_1`` / ``alive_2`` (by side index; ``alive_<side name>`` in series stored before
    the side-index columns) and ``cum_kills`` columns; may be empty): tanks alive per side and
    cumulative kills against the turn.  Returns a matplotlib ``Figure``.  Raises ``KeyError`` if a non-empty frame
    lacks a column."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    with plt.rc_context(STYLE):
        fig = Figure(figsize=size, dpi=STYLE["figure.dpi"])
        ax1, ax2 = fig.subplots(2, 1, sharex=True)
        frame = None if series is None or len(series) == 0 else series
        for i, name in enumerate(side_names):
            if frame is not None:
                col = f"alive_{i + 1}" if f"alive_{i + 1}" in frame else f"alive_{name}"
                ax1.plot(frame["turn"], frame[col], marker="o", color=SIDE_COLOURS[i % 4], label=name)
        ax1.set_ylabel("tanks alive")
        if side_names and frame is not None:
            ax1.legend(loc="best", fontsize=8)
        if frame is not None:
            ax2.step(frame["turn"], frame["cum_kills"], where="post", color=SIDE_COLOURS[1], marker="o")
        ax2.set_ylabel("cumulative kills")
        ax2.set_xlabel("turn")
        for ax in (ax1, ax2):
            ax.set_ylim(bottom=0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if frame is None:
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
        fit_titles(fig)
        fig.savefig(path)
        plt.close(fig)
