"""Scenario files: the pydantic schema, YAML loading, and errors that name the file, the field path and what was
expected (e.g. ``scenarios/x.yaml: sides[1].tanks[3].hex: [40, 2] is off the map (25 x 25)``).

A scenario names its rule set (``ruleset.name`` + ``ruleset.options``, validated by that rule set's ``Options``),
the map (shape, size, terrain by hex list or region, ``hex_size_m``), two sides (name, role, policy with
parameters, optional exit edge, tanks), objectives, victory points and the turn limit.  Per-tank ``rules`` blocks
are validated by the rule set's ``TankExt``, per-hex ``features`` by its ``HexExt``.

Bundled scenarios are package data (``tanksim_scenarios``): :func:`find_scenario` resolves ``default`` or
``default.yaml`` after a plain ``pip install`` as well as in a clone.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping

import yaml
import yaml.composer
import yaml.constructor
import yaml.reader
import yaml.resolver
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from sim.hexgrid import (
    Hex,
    HexMap,
    axial_to_offset,
    components,
    hexagon_hexes,
    offset_to_axial,
    parallelogram_hexes,
    rectangle_hexes,
)
from sim.messages import (
    clip,
    did_you_mean,
    escaped_line,
    match_name,
    printable_name,
    printable_text,
    short,
    top_level_kind,
    unknown_side_message,
    validation_lines,
)
from sim.rules import base as rules_base

# --- limits ---------------------------------------------------------------------------------------------------------
#: Largest YAML file read (scenario, experiment, tournament, case file), in bytes.
MAX_FILE_BYTES = 1_000_000
#: Deepest nesting of YAML collections (also after alias expansion).
MAX_YAML_DEPTH = 50
#: Most aliases (``*name``) in one file.
MAX_YAML_ALIASES = 1_000
#: Most YAML values in one file, counting every alias expansion (a "billion laughs" file has 10^9).
MAX_YAML_NODES = 500_000
#: Longest integer literal (characters): no field needs more than a 63-bit seed.
MAX_INT_CHARS = 40
#: Map width and height (hexes) of a rectangle or parallelogram board.
MAX_SIDE = 200
#: Radius (hexes) of a hexagon board.
MAX_RADIUS = 100
#: Largest |q| and |r| of any hex named in a file (anything beyond is off every legal map).
MAX_COORD = 10_000
#: Most hexes in one list (terrain ``hexes``, deployment zones).
MAX_HEXES = 50_000
#: Most terrain entries, and most hexes all of them may cover together after clipping to the map.
MAX_TERRAIN = 2_000
MAX_TERRAIN_CELLS = 1_000_000
#: Most ``map.features`` entries and objectives.
MAX_FEATURES = 10_000
MAX_OBJECTIVES = 1_000
#: Most tanks per side.
MAX_TANKS = 100
#: Most records in a scenario's ``vehicles:`` block.
MAX_VEHICLES = 200
#: Most characters of a ``map.layout`` picture (at most :data:`MAX_SIDE` lines of :data:`MAX_SIDE` characters),
#: and most entries of its ``map.legend``.
MAX_LAYOUT_CHARS = MAX_SIDE * (MAX_SIDE + 2)
MAX_LEGEND = 100
#: Longest battle (turns), whether given by ``turn_limit`` or by the rule set's default from its options.
MAX_TURNS = 1_000
#: Largest |number| in a rule-set block (``ruleset.options``, ``tanks[].rules``, ``map.features``).
MAX_BLOCK_NUMBER = 1_000_000
#: Largest |number| in a policy's ``params``.
MAX_PARAM_NUMBER = 10**18
#: Longest name (scenario, side, label, vehicle, tile, policy) and longest free text (characters).
MAX_NAME = 200
MAX_TEXT = 10_000
#: Most problem lines in one report (the rest are counted).
MAX_ERRORS = 40



class ScenarioError(ValueError):
    """A scenario (or experiment) file is invalid.  ``errors`` holds one ``file: path: message`` line each (at most
    :data:`MAX_ERRORS`; a last line counts the others; each line is one line of at most 1,000 characters)."""

    def __init__(self, errors: list[str]):
        # one line each, echoing nothing a terminal would act on: a line break joins as " | ", any other control
        # character (from a key name, a path) is written as its escape
        errors = [clip(escaped_line(str(e).replace("\r\n", "\n").replace("\n", " | ")), 1000) for e in errors]
        if len(errors) > MAX_ERRORS:
            more = len(errors) - (MAX_ERRORS - 1)
            src = errors[0].split(": ", 1)[0]
            errors = errors[: MAX_ERRORS - 1] + [f"{src}: ... and {more} more problems"]
        self.errors = errors
        super().__init__("\n".join(errors))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


Coord = Annotated[int, Field(ge=-MAX_COORD, le=MAX_COORD)]
HexPair = tuple[Coord, Coord]
#: A name (scenario, side, vehicle id, tank label, tile): at most :data:`MAX_NAME` characters, no control
#: characters (:func:`sim.messages.printable_name`: an echoed name cannot forge an output line or a terminal escape).
Name = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(printable_name)]
#: A free text (a description): at most :data:`MAX_TEXT` characters; newlines and tabs but no other controls.
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(printable_text)]
Seconds = Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)]


class PolicySpec(_Model):
    """A doctrine by name (built-in or ``package.module:Class``) with its parameters.  A plug-in doctrine only:
    process-spawning policies (isolated entrants) come from tournament entrants, never from a scenario."""

    name: Name
    params: dict[str, Any] = Field(default_factory=dict)


def _policy(v: Any) -> Any:
    if isinstance(v, str):
        return {"name": v}
    return v


class TankSpec(_Model):
    """One tank: catalog ``vehicle``, ``hex`` [q, r], hull ``facing`` (vertex 0..5), ``label``; optional
    per-tank ``policy`` override and ``rules`` block (the rule set's ``TankExt``)."""

    vehicle: Name
    hex: HexPair
    facing: int = Field(default=0, ge=0, le=5)
    label: Name | None = None
    policy: PolicySpec | None = None
    rules: dict[str, Any] = Field(default_factory=dict)

    _p = field_validator("policy", mode="before")(_policy)


class SideSpec(_Model):
    """A side: ``name``, ``role`` (attacker / defender / none), ``policy`` (or ``controller``), fault handling,
    optional ``exit_edge`` (north / south / east / west) and its ``tanks`` (at most :data:`MAX_TANKS`).

    ``activation_order``: who picks which of the side's tanks acts when the rule set lets the side choose (an
    ``activate`` decision with several actors: Panzer Squadron's alternate activations, ASL's Prep Fire and
    Movement phases): ``policy`` (default: the doctrine) or ``random`` (the side's controller draws the tank
    uniformly from the side's own stream, then asks that tank's doctrine for its mode).  Hummel Quest orders tanks
    by initiative itself (one actor per decision), so there the option changes nothing."""

    name: Name
    role: Literal["attacker", "defender", "none"] = "none"
    policy: PolicySpec = Field(default_factory=lambda: PolicySpec(name="hold"))
    activation_order: Literal["policy", "random"] = "policy"
    on_fault: Literal["pass", "forfeit"] = "pass"
    max_faults: int = Field(default=5, ge=1, le=1_000_000)
    decision_timeout_s: Seconds | None = None
    exit_edge: Literal["north", "south", "east", "west"] | None = None
    tanks: list[TankSpec] = Field(min_length=1, max_length=MAX_TANKS)

    _p = field_validator("policy", mode="before")(_policy)

    @model_validator(mode="before")
    @classmethod
    def _controller(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "controller" in data and "policy" not in data:
            data = {("policy" if k == "controller" else k): v for k, v in data.items()}
        return data


class Columns:
    """The hexes of a board column by column: ``runs[q]`` is a sorted tuple of disjoint ``(r_low, r_high)`` runs
    (inclusive).  The built-in shapes have one run per column (:meth:`of_spans`); a ``cells`` or ``layout`` board
    may have several.  Clipping a region to a board costs one step per run."""

    def __init__(self, runs: Mapping[int, tuple[tuple[int, int], ...]]):
        self.runs: dict[int, tuple[tuple[int, int], ...]] = dict(runs)
        self.q_low = min(self.runs, default=0)
        self.q_high = max(self.runs, default=-1)

    @classmethod
    def of_spans(cls, spans: Mapping[int, tuple[int, int]]) -> Columns:
        """The :class:`Columns` of one ``(r_low, r_high)`` run per column ``q``."""
        return cls({q: (span,) for q, span in spans.items()})

    @classmethod
    def of_cells(cls, cells: Iterable[tuple[int, int]]) -> Columns:
        """The :class:`Columns` of any set of hexes."""
        by_q: dict[int, list[int]] = {}
        for q, r in cells:
            by_q.setdefault(q, []).append(r)
        spans: dict[int, tuple[tuple[int, int], ...]] = {}
        for q, rs in by_q.items():
            rs.sort()
            runs, lo, prev = [], rs[0], rs[0]
            for r in rs[1:]:
                if r > prev + 1:
                    runs.append((lo, prev))
                    lo = r
                prev = r
            runs.append((lo, prev))
            spans[q] = tuple(runs)
        return cls(spans)

    def __contains__(self, h: Any) -> bool:
        runs = self.runs.get(h[0])
        return runs is not None and any(lo <= h[1] <= hi for lo, hi in runs)

    def clip(self, q: int, r_low: int, r_high: int) -> list[tuple[int, int]]:
        """The parts of rows ``r_low .. r_high`` of column ``q`` on the board, as ``(low, high)`` runs."""
        out = []
        for lo0, hi0 in self.runs.get(q, ()):
            lo, hi = max(r_low, lo0), min(r_high, hi0)
            if lo <= hi:
                out.append((lo, hi))
        return out


#: Every hex any legal board may hold (deployment zones are clipped to it before the board is known).
UNIVERSE = Columns.of_spans({q: (-MAX_SIDE, MAX_SIDE) for q in range(-MAX_RADIUS, MAX_SIDE)})


def rect_ranges(cls: type, v: dict[str, tuple[int, int]] | None) -> dict[str, tuple[int, int]] | None:
    """Validator of a ``rect``: both axes given, each ``[low, high]`` with low <= high."""
    if v is not None:
        if set(v) != {"q", "r"}:
            raise ValueError("a rect needs both axial ranges, {q: [q0, q1], r: [r0, r1]}")
        for axis, (lo, hi) in v.items():
            if lo > hi:
                raise ValueError(f"rect.{axis} [{lo}, {hi}]: expected [low, high] with low <= high")
    return v


class TerrainSpec(_Model):
    """Terrain by hex list (``hexes``), by a disc (``center`` + ``radius``) or by ``rect`` (inclusive axial ranges
    ``{q: [q0, q1], r: [r0, r1]}``).  Regions are clipped to the board before any hex is listed, so a disc of
    radius 10^4 costs no more than the board."""

    tile: Name
    hexes: list[HexPair] = Field(default_factory=list, max_length=MAX_HEXES)
    center: HexPair | None = None
    radius: int = Field(default=0, ge=0, le=2 * MAX_COORD)
    rect: dict[Literal["q", "r"], tuple[Coord, Coord]] | None = None

    _rect = field_validator("rect")(rect_ranges)

    def spans(self, columns: Columns) -> list[tuple[int, int, int]]:
        """The region (disc and rect, not the hex list) clipped to ``columns`` as ``(q, r_low, r_high)`` runs."""
        out = []
        if self.center is not None:
            (cq, cr), rad = self.center, self.radius
            for q in range(max(cq - rad, columns.q_low), min(cq + rad, columns.q_high) + 1):
                dq = q - cq
                for run in columns.clip(q, cr + max(-rad, -dq - rad), cr + min(rad, -dq + rad)):
                    out.append((q, *run))
        if self.rect is not None:
            (q0, q1), (r0, r1) = self.rect["q"], self.rect["r"]
            for q in range(max(q0, columns.q_low), min(q1, columns.q_high) + 1):
                for run in columns.clip(q, r0, r1):
                    out.append((q, *run))
        return out

    def size(self, columns: Columns) -> int:
        """How many hexes :meth:`cells` lists (counted without listing them)."""
        return len(self.hexes) + sum(hi - lo + 1 for _, lo, hi in self.spans(columns))

    def cells(self, columns: Columns | None = None) -> list[Hex]:
        """The entry's hexes on ``columns`` (default: :data:`UNIVERSE`); listed hexes off it are left out."""
        columns = columns or UNIVERSE
        out = [Hex(*h) for h in self.hexes if h in columns]
        for q, lo, hi in self.spans(columns):
            out += [Hex(q, r) for r in range(lo, hi + 1)]
        return out


#: The legend every ``map.layout`` starts from (a file's own ``map.legend`` adds to it or overrides it).
DEFAULT_LEGEND: dict[str, str | None] = {".": "open"}
LegendChar = Annotated[str, Field(min_length=1, max_length=1)]


@dataclass(frozen=True)
class Board:
    """The hexes of a map before any terrain entry: ``cells`` in a fixed order, the ``terrain`` a layout paints,
    ``problems`` (``(field path, message)`` pairs: ragged rows, unknown characters, duplicate or disconnected
    cells), and ``where``: a hex's place in the file (``line 3, column 7`` of the picture, or ``map.cells[4]``)."""

    cells: tuple[Hex, ...]
    terrain: Mapping[Hex, str] = field(default_factory=dict)
    problems: tuple[tuple[str, str], ...] = ()
    where: Mapping[Hex, str] = field(default_factory=dict)
    lines: int = 0
    width: int = 0


def parse_layout(text: str, legend: Mapping[str, str | None]) -> Board:
    """The board a ``map.layout`` picture draws: one character per hex, line ``i`` (from 1, top = north) and
    column ``j`` (from 1) being offset cell ``(j - 1, i - 1)`` of a flat-top board whose odd columns sit half a
    hex lower, i.e. axial ``q = j - 1``, ``r = (i - 1) - (j - 1) // 2`` (:func:`sim.hexgrid.offset_to_axial`; a
    full picture of W x H characters is exactly the ``rectangle`` board of W x H).  ``legend`` maps each
    character to a terrain name, or to ``None`` for "no hex here".  The final newline of a YAML block is dropped
    and a ``\r`` before a line break ignored.

    Problems (never raised; :attr:`Board.problems`, each naming the line and column): more than
    :data:`MAX_SIDE` lines or columns, rows of different lengths (ragged), characters not in the legend, an empty
    board, parts of the board not connected to the largest part (isolated cells included)."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    problems: list[tuple[str, str]] = []
    if not lines:
        return Board((), problems=(("map.layout", "the picture is empty; draw one character per hex"),))
    width = len(lines[0])
    if len(lines) > MAX_SIDE:
        problems.append(("map.layout", f"{len(lines)} lines; a picture has at most {MAX_SIDE} lines"))
    if width > MAX_SIDE:
        problems.append(("map.layout", f"line 1: {width} characters; a picture is at most {MAX_SIDE} wide"))
    ragged = [i for i, ln in enumerate(lines) if len(ln) != width]
    for i in ragged[:3]:
        problems.append(("map.layout", f"line {i + 1}: {len(lines[i])} characters where line 1 has {width}: every "
                                       f"line is one row with one character per column (ragged rows)"))
    if len(ragged) > 3:
        problems.append(("map.layout", f"{len(ragged)} lines in all differ in length from line 1"))
    if problems:
        return Board((), problems=tuple(problems), lines=len(lines), width=width)
    unknown: dict[str, list] = {}
    cells: list[Hex] = []
    terrain: dict[Hex, str] = {}
    where: dict[Hex, str] = {}
    for i, ln in enumerate(lines):
        for j, ch in enumerate(ln):
            if ch not in legend:
                u = unknown.setdefault(ch, [i, j, 0])
                u[2] += 1
                continue
            name = legend[ch]
            if name is None:
                continue
            h = offset_to_axial(j, i)
            cells.append(h)
            where[h] = f"line {i + 1}, column {j + 1}"
            if name != "open":
                terrain[h] = name
    known = ", ".join(repr(c) for c in sorted(legend))
    for ch, (i, j, n) in list(unknown.items())[:5]:
        more = f" ({n} times)" if n > 1 else ""
        problems.append(("map.layout", f"line {i + 1}, column {j + 1}: the character {ch!r}{more} is not in "
                                       f"map.legend (it has {clip(known, 200)}); add it, e.g. {{{ch!r}: woods}}"))
    if len(unknown) > 5:
        problems.append(("map.layout", f"{len(unknown) - 5} more characters are not in map.legend"))
    if not problems and not cells:
        problems.append(("map.layout", "the picture holds no hex: every character maps to null (no hex)"))
    if not problems:
        problems += _disconnected(cells, where, "map.layout")
    return Board(tuple(cells), terrain, tuple(problems), where, len(lines), width)


def draw_layout(cells: Iterable[tuple[int, int]], terrain: Mapping[tuple[int, int], str],
                chars: Mapping[str, str], no_hex: str = "-") -> str:
    """The ``map.layout`` picture of a board (the inverse of :func:`parse_layout`): one line per offset row, one
    character per column, ``chars[terrain]`` for a hex (terrain ``open`` where ``terrain`` has none), ``no_hex``
    where the picture's rectangle holds no hex; lines end with ``\n``.  Raises ``ValueError`` for a hex left of
    column 0 or above row 0 (shifting a picture would rename its hexes) or a terrain without a character."""
    cellset = {Hex(*c) for c in cells}
    if not cellset:
        return ""
    offs = {h: axial_to_offset(h) for h in cellset}
    if min(c for c, _ in offs.values()) < 0 or min(r for _, r in offs.values()) < 0:
        raise ValueError("a layout starts at column 0, row 0 (axial [0, 0]); this board has hexes left of or above it")
    width = 1 + max(c for c, _ in offs.values())
    height = 1 + max(r for _, r in offs.values())
    grid = [[no_hex] * width for _ in range(height)]
    for h, (c, r) in offs.items():
        name = terrain.get(h, "open")
        if name not in chars:
            raise ValueError(f"no layout character for terrain {name!r}")
        grid[r][c] = chars[name]
    return "".join("".join(row) + "\n" for row in grid)


def _disconnected(cells: Sequence[Hex], where: Mapping[Hex, str], path: str) -> list[tuple[str, str]]:
    """Problems naming each part of the board that no chain of neighbouring hexes joins to its largest part."""
    parts = components(cells)
    out: list[tuple[str, str]] = []
    for part in parts[1:4]:
        first = min(part, key=lambda h: (axial_to_offset(h)[1], axial_to_offset(h)[0]))
        at = where.get(first, "")
        pre = f"{at}: " if at and not at.startswith("map.") else ""
        p = at if at.startswith("map.") else path
        if len(part) == 1:
            what = f"hex [{first.q}, {first.r}] is an isolated cell: none of its six neighbours is on the board"
        else:
            what = (f"hex [{first.q}, {first.r}] and {len(part) - 1} more form a part of the board that no chain of "
                    f"neighbouring hexes joins to the main part ({len(parts[0])} hexes)")
        out.append((p, f"{pre}{what}; a board is one connected piece"))
    if len(parts) > 4:
        out.append((path, f"the board falls into {len(parts)} separate parts"))
    return out


def cells_board(cells: Sequence[tuple[int, int]]) -> Board:
    """The board of an explicit ``map.cells`` list: problems for an empty list, a hex listed twice and parts not
    connected to the largest part (each named by its index in the list)."""
    where: dict[Hex, str] = {}
    problems: list[tuple[str, str]] = []
    out: list[Hex] = []
    for i, c in enumerate(cells):
        h = Hex(*c)
        if h in where:
            if len(problems) < 5:
                problems.append((f"map.cells[{i}]", f"[{h.q}, {h.r}] is listed twice (first at {where[h]})"))
            continue
        where[h] = f"map.cells[{i}]"
        out.append(h)
    if not out:
        problems.append(("map.cells", "a cells map lists at least one hex [q, r]"))
    if not problems:
        problems += _disconnected(out, where, "map.cells")
    return Board(tuple(out), {}, tuple(problems), where)


class MapSpec(_Model):
    """The board: ``shape`` rectangle (columns x rows in axial names, see :func:`rectangle_hexes`), parallelogram
    (``width``, ``height`` at most :data:`MAX_SIDE`), hexagon (``radius`` at most :data:`MAX_RADIUS`), ``cells``
    (an explicit list ``cells: [[q, r], ...]``, at most :data:`MAX_HEXES`) or ``layout`` (a text picture, one
    character per hex, with a ``legend`` mapping characters to terrain names or to ``null`` for no hex: see
    :func:`parse_layout`); ``hex_size_m`` metres per hex; ``terrain`` entries (painted over a layout's);
    ``features`` per-hex rule-set blocks (``{hex, ...}``).  A map with ``layout`` (or ``cells``) and no ``shape``
    takes that shape."""

    shape: Literal["rectangle", "parallelogram", "hexagon", "cells", "layout"] = "rectangle"
    width: int = Field(default=25, ge=1, le=MAX_SIDE)
    height: int = Field(default=25, ge=1, le=MAX_SIDE)
    radius: int = Field(default=12, ge=1, le=MAX_RADIUS)
    cells: list[HexPair] | None = Field(default=None, max_length=MAX_HEXES)
    layout: str | None = Field(default=None, max_length=MAX_LAYOUT_CHARS)
    legend: dict[LegendChar, Name | None] = Field(default_factory=dict, max_length=MAX_LEGEND)
    hex_size_m: int = Field(default=10, ge=1, le=100_000)
    terrain: list[TerrainSpec] = Field(default_factory=list, max_length=MAX_TERRAIN)
    features: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_FEATURES)

    _board: Board | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _shape_of(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "shape" not in data:
            if "layout" in data:
                return {**data, "shape": "layout"}
            if "cells" in data:
                return {**data, "shape": "cells"}
        return data

    def full_legend(self) -> dict[str, str | None]:
        """:data:`DEFAULT_LEGEND` with this map's ``legend`` over it."""
        return {**DEFAULT_LEGEND, **self.legend}

    def board(self) -> Board:
        """The board's hexes (and a layout's terrain), computed once; check :attr:`Board.problems` first."""
        if self._board is None:
            if self.shape == "layout":
                self._board = parse_layout(self.layout or "", self.full_legend())
            elif self.shape == "cells":
                self._board = cells_board(self.cells or [])
            elif self.shape == "rectangle":
                self._board = Board(tuple(rectangle_hexes(self.width, self.height)))
            elif self.shape == "parallelogram":
                self._board = Board(tuple(parallelogram_hexes(self.width, self.height)))
            else:
                self._board = Board(tuple(hexagon_hexes(self.radius)))
        return self._board

    def cells_list(self) -> list[Hex]:
        """The board's hexes (every shape)."""
        return list(self.board().cells)

    def columns(self) -> Columns:
        """The board's hexes as :class:`Columns` (the same hexes as :meth:`cells_list`)."""
        if self.shape == "rectangle":
            return Columns.of_spans({q: (-(q // 2), -(q // 2) + self.height - 1) for q in range(self.width)})
        if self.shape == "parallelogram":
            return Columns.of_spans({q: (0, self.height - 1) for q in range(self.width)})
        if self.shape == "hexagon":
            rad = self.radius
            return Columns.of_spans({q: (max(-rad, -q - rad), min(rad, -q + rad)) for q in range(-rad, rad + 1)})
        return Columns.of_cells(self.board().cells)

    def shape_key(self) -> tuple[Any, ...]:
        """What identifies the board's hexes (static geometry is shared between boards with one key)."""
        if self.shape in ("cells", "layout"):
            digest = hashlib.sha256(json.dumps(sorted(self.board().cells)).encode()).hexdigest()[:16]
            return ("cells", len(self.board().cells), digest)
        return (self.shape, self.width, self.height, self.radius)

    def size_text(self) -> str:
        if self.shape == "hexagon":
            return f"radius {self.radius}"
        if self.shape == "layout":
            b = self.board()
            return f"{b.width} x {b.lines} layout, {len(b.cells)} hexes"
        if self.shape == "cells":
            return f"{len(self.board().cells)} listed hexes"
        return f"{self.width} x {self.height}"


class ObjectiveSpec(_Model):
    """An objective hex worth ``points`` to the side holding it at the end (``side`` 0 or 1 restricts who may
    score)."""

    hex: HexPair
    points: int = Field(default=1, ge=0, le=1_000_000)
    name: Name | None = None
    side: int | None = Field(default=None, ge=0, le=1)


class VictorySpec(_Model):
    kill_points: int = Field(default=1, ge=0, le=1_000_000)
    exit_points: int = Field(default=1, ge=0, le=1_000_000)


#: A vehicle id of a scenario's ``vehicles:`` block: letters, digits, ``_`` and ``-`` (so a dotted path such as
#: ``vehicles.t34_1944.mp`` names one field).
def _vehicle_key(text: str) -> str:
    printable_name(text)   # an invisible or control character: the one wording of every name
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError("expected an id of letters, digits, _ and - (no spaces or dots)")
    return text


VehicleKey = Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_vehicle_key)]


def merge_record(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged field by field: where both hold a mapping the two merge key by key (at any
    depth); any other value of ``over`` (a number, a text, a list, ``null``) replaces ``base``'s.  Neither input is
    changed."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_record(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class RulesetSpec(_Model):
    name: Name = "panzer_squadron"
    options: dict[str, Any] = Field(default_factory=dict)


#: Battles a :meth:`Scenario.battle_board` template serves before it is built afresh (its shared static answers
#: then start empty): bounds what the battles of one scenario keep in one process (issue 14).
TEMPLATE_BATTLES = 64


class Scenario(_Model):
    """A validated scenario.  ``source`` is the file it came from (for messages)."""

    name: Name = "unnamed"
    description: Text = ""
    ruleset: RulesetSpec = Field(default_factory=RulesetSpec)
    map: MapSpec = Field(default_factory=MapSpec)
    turn_limit: int | None = Field(default=None, ge=1, le=MAX_TURNS)
    objectives: list[ObjectiveSpec] = Field(default_factory=list, max_length=MAX_OBJECTIVES)
    victory: VictorySpec = Field(default_factory=VictorySpec)
    vehicles: dict[VehicleKey, dict[str, Any]] = Field(default_factory=dict, max_length=MAX_VEHICLES)
    sides: list[SideSpec] = Field(min_length=2, max_length=2)
    source: str = ""

    _vehicles: dict[str, Any] = PrivateAttr(default_factory=dict)
    #: The pristine board :meth:`battle_board` copies, with the key it was built under (:meth:`_board_key`).
    _template: tuple[MapSpec, Board, tuple[Any, ...], HexMap, list[int]] | None = PrivateAttr(None)

    @field_validator("ruleset", mode="before")
    @classmethod
    def _rs(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    def __iter__(self) -> Any:
        """Not iterable (pydantic models iterate their fields): so ``mesa.batch_run(parameters={"scenario":
        spec})`` takes a Scenario as one value instead of expanding it field by field.  Use ``model_dump()`` for
        the fields.  Raises ``TypeError``."""
        raise TypeError("a Scenario is one value, not a sequence of fields (use model_dump())")

    def __getstate__(self) -> dict[Any, Any]:
        """Pickled without the template board of :meth:`battle_board` (a process that plays the copy builds its
        own): a scenario sent to a worker stays the size of its fields."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_template") is not None:
            state["__pydantic_private__"] = {**private, "_template": None}
        return state

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> "Scenario":
        """A deep copy without the template board of :meth:`battle_board` (the copy builds its own)."""
        got = self._template
        self._template = None
        try:
            return super().__deepcopy__(memo)
        finally:
            self._template = got

    # --- derived ----------------------------------------------------------------------------------------------
    def rules(self) -> rules_base.Ruleset:
        return rules_base.get(self.ruleset.name)

    def options(self) -> Any:
        return self.rules().Options(**self.ruleset.options)

    def vehicle_record(self, vid: str) -> dict[str, Any]:
        """The record of the scenario's vehicle ``vid`` in its rule set's catalog schema: the ``vehicles:`` entry
        itself, or, when it names a ``base`` catalog vehicle, that catalog record with the entry's fields merged
        over it (:func:`merge_record`).  Raises ``KeyError`` if ``vid`` is not in ``vehicles``, and
        :class:`~sim.rules.base.VehicleError` (path ``base``) for an unknown base."""
        rec = dict(self.vehicles[vid])
        if "base" not in rec:
            return rec
        base = rec.pop("base")
        rs = self.rules()
        if not isinstance(base, str):
            raise rules_base.VehicleError([("base", f"expected the id of a {rs.name} catalog vehicle (text), got "
                                                    f"{type(base).__name__}")], vid)
        cat = rs.catalog_records()
        if base not in cat:
            raise rules_base.VehicleError([("base", f"unknown {rs.name} catalog vehicle {short(base)}"
                                                    f"{did_you_mean(base, cat)}; known: "
                                                    f"{clip(', '.join(cat), 300)} (tanksim catalog {rs.name})")], vid)
        return merge_record(cat[base], rec)

    def vehicle(self, vid: str, options: Any = None) -> Any:
        """The rule set's vehicle object for ``vid``: built from the ``vehicles:`` block when defined there (by the
        rule set's own catalog schema, ``options`` or the scenario's options deciding missing data; cached), else
        the rule set's catalog vehicle.  Raises ``KeyError`` for an unknown id and
        :class:`~sim.rules.base.VehicleError` for a bad record."""
        if vid not in self.vehicles:
            return self.rules().vehicle(vid)
        if vid not in self._vehicles:
            opts = options if options is not None else self.options()
            self._vehicles[vid] = self.rules().vehicle_from_record(vid, self.vehicle_record(vid), opts)
        return self._vehicles[vid]

    def effective_turn_limit(self) -> int:
        return self.turn_limit or self.rules().default_turn_limit(self.options())

    def build_map(self) -> HexMap:
        """The board as a :class:`HexMap`: a layout's terrain, then each ``terrain`` entry in order."""
        columns = self.map.columns()
        terrain: dict[Hex, str] = dict(self.map.board().terrain)
        for t in self.map.terrain:
            for h in t.cells(columns):
                terrain[h] = t.tile
        # a rectangle, parallelogram or hexagon board is a convex shape by construction (sim.hexgrid.convex_shape
        # says why); a listed or drawn board is tested when a distance field first needs it
        convex = True if self.map.shape in ("rectangle", "parallelogram", "hexagon") else None
        return HexMap(self.map.board().cells, terrain, shape_key=self.map.shape_key(),
                      description=self.map.size_text(), convex=convex)

    def _board_key(self) -> tuple[Any, ...]:
        """What :meth:`build_map` reads besides the map spec and its board of hexes (:meth:`MapSpec.board`, made
        once per map spec; :meth:`battle_board` holds both and compares them by identity): the shape fields (the
        convexity and the description) and every ``terrain`` entry's fields by value (a few per entry: a long
        ``hexes`` list costs what painting it costs)."""
        m = self.map
        return (m.shape, m.width, m.height, m.radius,
                tuple((t.tile, tuple(map(tuple, t.hexes)), None if t.center is None else tuple(t.center), t.radius,
                       None if t.rect is None else tuple(sorted((k, tuple(v)) for k, v in t.rect.items())))
                      for t in m.terrain))

    def battle_board(self) -> HexMap:
        """A fresh board for one battle of this scenario: :meth:`sim.hexgrid.HexMap.for_another_battle` of a
        pristine board built once per scenario (:meth:`build_map`), so the battles of one scenario in one process
        build the board, its set-up event block and its static geometry once (issue 14), as batch workers do with
        their own board per point; the event log is the same as on a board built afresh.  The template is rebuilt
        when anything :meth:`build_map` reads has changed (:meth:`_board_key`); it is never played on itself, so
        it stays pristine.  One template per scenario object, built afresh every :data:`TEMPLATE_BATTLES` battles:
        its size is that of one board plus the static answers at most that many battles share (a rule set may keep
        a per-pair answer dict there, e.g. ASL's lines of sight, which would otherwise grow with every battle)."""
        key = self._board_key()
        m = self.map
        got = self._template
        if (got is None or got[0] is not m or got[1] is not m.board() or got[2] != key
                or got[3].terrain_version or got[4][0] >= TEMPLATE_BATTLES):
            got = self._template = (m, m.board(), key, self.build_map(), [0])
        got[4][0] += 1
        return got[3].for_another_battle()

    def digest(self) -> str:
        """A stable hash of the resolved scenario (without its source path)."""
        d = self.model_dump(mode="json", exclude={"source"})
        for side in d.get("sides", []):  # a field at its default added later: absent keeps older digests
            if side.get("activation_order") == "policy":
                del side["activation_order"]
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _fmt_validation(src: str, exc: ValidationError, prefix: str = "", model: Any = None) -> list[str]:
    """:func:`sim.messages.validation_lines` with this module's :data:`MAX_ERRORS` (kept for the callers that
    import it from here)."""
    return validation_lines(src, exc, prefix, model=model, limit=MAX_ERRORS)


def _check_block(value: Any, path: str, limit: float, errors: list[str], src: str, depth: int = 0) -> None:
    """Free-form blocks (rule-set options, ``rules``, ``features``, policy ``params``) hold plain values only:
    text keys, finite numbers of at most ``limit`` in size, texts of at most :data:`MAX_TEXT` characters."""
    if len(errors) > MAX_ERRORS or depth > MAX_YAML_DEPTH:
        return
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > limit:
            errors.append(f"{src}: {path}: {short(value)} is too large; numbers here are at most {limit:,.0f}")
    elif isinstance(value, float):
        if not math.isfinite(value) or abs(value) > limit:
            errors.append(f"{src}: {path}: {short(value)}: expected a finite number of at most {limit:,.0f}")
    elif isinstance(value, str):
        if len(value) > MAX_TEXT:
            errors.append(f"{src}: {path}: a text of {len(value)} characters; at most {MAX_TEXT}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{src}: {path}: key {short(k)}: expected a name (text), got {type(k).__name__}")
                continue
            _check_block(v, f"{path}.{clip(k, 40)}", limit, errors, src, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_block(v, f"{path}[{i}]", limit, errors, src, depth + 1)
    else:
        errors.append(f"{src}: {path}: {type(value).__name__} values are not allowed here; expected text, a number, "
                      f"true/false, a list or a mapping")


_HEX = TypeAdapter(HexPair, config=ConfigDict(defer_build=True))
"""Validator of one ``[q, r]`` pair (a map feature's ``hex``).  Built on first use, not at import: building it
cost about 0.1 CPU s of start-up (pydantic's schema build and its plugin scan of every installed package's entry
points, issue 14)."""


def _map_field_errors(m: MapSpec, names: set[str] | None, ruleset: str, src: str) -> list[str]:
    """The map's fields must fit its shape: a layout has ``layout`` (and maybe ``legend``), a cells map ``cells``,
    the other shapes neither; width and height belong to rectangles and parallelograms.  Legend terrain names
    must be the rule set's (``names``, when known)."""
    out = []
    given = m.model_fields_set
    own = {"rectangle": {"width", "height"}, "parallelogram": {"width", "height"},
           "hexagon": {"radius", "width", "height"}, "cells": {"cells"}, "layout": {"layout", "legend"}}[m.shape]
    for f in ("width", "height", "cells", "layout", "legend"):
        if f in given and f not in own:
            hint = {"layout": "the picture gives the board", "cells": "the list gives the board"}.get(m.shape, "")
            out.append(f"{src}: map.{f}: a {m.shape} map has no {f}" + (f" ({hint})" if hint else "")
                       + (f"; set shape: {f}" if f in ("cells", "layout") else ""))
    if m.shape == "layout" and m.layout is None:
        out.append(f"{src}: map.layout: a layout map needs its picture (one character per hex, see map.legend)")
    if m.shape == "cells" and m.cells is None:
        out.append(f"{src}: map.cells: a cells map needs its list of hexes [[q, r], ...]")
    if m.shape in ("cells", "layout") and "radius" in given:
        out.append(f"{src}: map.radius: only a hexagon map has a radius")
    if names is not None and m.shape == "layout":
        for ch, name in m.legend.items():
            if name is not None and name not in names:
                out.append(f"{src}: map.legend.{ch!r}: unknown terrain {short(name)} for {ruleset}; expected one of "
                           f"{', '.join(sorted(names))}, or null for no hex")
    return out


def _check_vehicles(sc: Scenario, opts: Any, src: str, errors: list[str]) -> None:
    """Each ``vehicles:`` entry, merged over its ``base`` if it names one, is checked by the rule set's own
    catalog schema (``vehicle_from_record``); problems name ``vehicles.ID.field.path``."""
    for vid, rec in sc.vehicles.items():
        where = f"vehicles.{vid}"
        n_before = len(errors)
        _check_block(rec, where, MAX_BLOCK_NUMBER, errors, src)
        if len(errors) > n_before:
            continue
        try:
            sc.vehicle(vid, opts)
        except rules_base.VehicleError as exc:
            for p, msg in exc.problems[:10]:
                errors.append(f"{src}: {where}{'.' + p if p and not p.startswith('[') else p}: {msg}")


def validate(data: Mapping[str, Any], src: str = "<scenario>") -> Scenario:
    """Validate a scenario mapping; raises :class:`ScenarioError` with every problem found (at most
    :data:`MAX_ERRORS` lines).

    Checks everything a battle reads before anything is built: the schema and its limits (module constants:
    board size, hexes per list, terrain cover, tanks, turns, numbers in rule-set blocks), the rule set's options,
    terrain names, every named hex on the board (tanks, terrain lists, features, objectives), vehicles, per-tank
    ``rules`` and per-hex ``features`` blocks, the effective turn limit, and each policy (built-in, or a plug-in
    checked statically: nothing is imported or constructed, no command is accepted)."""
    from agents.plugins import source_budget

    with source_budget():
        return _validate(data, src)


def _raw_rule_errors(data: Mapping[str, Any], src: str, already: list[str]) -> list[str]:
    """The rule-set problems of a scenario mapping whose schema failed, so that one pass reports them with the
    schema's lines: ``ruleset.options`` checked by the rule set's options schema, each tank's ``rules`` block by its
    tank schema, and each ``sides[i].tanks[j].vehicle`` that is text, not a key of a ``vehicles:`` mapping and not
    in the rule set's catalog.  Read from the raw mapping, defensively (a value of an unexpected shape is skipped:
    the schema's lines already name it; blocks pass the same plain-value limits first); nothing when the rule set's
    name is not a known one, and no line for a path the schema already reported.  At most :data:`MAX_ERRORS` lines."""
    ruleset = data.get("ruleset")
    name = ruleset.get("name") if isinstance(ruleset, Mapping) else None
    if not isinstance(name, str):
        return []
    try:
        rs = rules_base.get(name)
    except rules_base.UnknownRuleset:
        return []
    out: list[str] = []

    def reported(path: str) -> bool:
        where = f"{src}: {path}"
        return any(a.startswith(where) for a in already)

    def block(value: Any, path: str, schema: Any) -> None:
        if not isinstance(value, Mapping) or reported(path):
            return
        n_before = len(out)
        _check_block(value, path, MAX_BLOCK_NUMBER, out, src)
        if len(out) == n_before:
            try:
                schema(**value)
            except ValidationError as exc:
                out.extend(_fmt_validation(src, exc, path, model=schema))
            except TypeError:  # keys that are not names: the schema's lines say so
                pass

    block(ruleset.get("options", {}) if isinstance(ruleset, Mapping) else None, "ruleset.options", rs.Options)
    local = data.get("vehicles")
    defined = set(local) if isinstance(local, Mapping) else set()
    sides = data.get("sides")
    for si, side in enumerate(sides[:MAX_ERRORS] if isinstance(sides, list) else ()):
        tanks = side.get("tanks") if isinstance(side, Mapping) else None
        for ti, t in enumerate(tanks[:MAX_TANKS] if isinstance(tanks, list) else ()):
            if len(out) >= MAX_ERRORS:
                return out[:MAX_ERRORS]
            if not isinstance(t, Mapping):
                continue
            block(t.get("rules", {}), f"sides[{si}].tanks[{ti}].rules", rs.TankExt)
            vid = t.get("vehicle")
            path = f"sides[{si}].tanks[{ti}].vehicle"
            if not isinstance(vid, str) or vid in defined or reported(path):
                continue
            try:
                rs.vehicle(vid)
            except KeyError as exc:
                out.append(f"{src}: {path}: {unknown_vehicle_message(rs, vid, defined, exc)}")
    return out[:MAX_ERRORS]


def unknown_vehicle_message(rs: Any, vid: str, defined: Iterable[str], exc: KeyError) -> str:
    """What is wrong with a tank's ``vehicle: VID`` that is neither under the scenario's own ``vehicles:`` (the
    ids ``defined``) nor in rule set ``rs``'s catalog (``exc``: the catalog's ``KeyError``, which names the
    closest catalog id).  When one of the scenario's own ids is the closest name of all, the message suggests it:
    ``unknown vehicle 'slowpok' (did you mean 'slowpoke'?); defined under vehicles: slowpoke; not in the
    hummel_quest catalog either``; otherwise it is the catalog's message (its ``known:`` list) followed by the
    scenario's own ids (``; defined under vehicles: t34_85``), or by ``(or define it under vehicles:)`` when it
    defines none."""
    import difflib

    local = [str(v) for v in defined]
    best = difflib.get_close_matches(str(vid), [*local, *rs.vehicle_ids()], n=1)
    if best and best[0] in local:
        return (f"unknown vehicle {short(vid)}{did_you_mean(vid, best)}; defined under vehicles: "
                f"{clip(', '.join(local), 200)}; not in the {rs.name} catalog either")
    if local:   # the known names are the catalog's and the scenario's own
        return f"{clip(str(exc.args[0]), 300)}; defined under vehicles: {clip(', '.join(local), 200)}"
    return f"{clip(str(exc.args[0]), 300)} (or define it under vehicles:)"


def _validate(data: Mapping[str, Any], src: str) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError([f"{src}: (top level): expected a mapping of scenario fields, got {top_level_kind(data)}"])
    try:
        sc = Scenario.model_validate({**{k: v for k, v in data.items() if k != "source"}, "source": src})
    except ValidationError as exc:
        lines = _fmt_validation(src, exc, model=Scenario)
        raise ScenarioError(lines + _raw_rule_errors(data, src, lines)) from None
    except RecursionError:
        raise ScenarioError([f"{src}: (top level): nested too deeply"]) from None
    errors: list[str] = []
    try:
        rs = sc.rules()
    except rules_base.UnknownRuleset as exc:
        raise ScenarioError([f"{src}: ruleset.name: {clip(str(exc), 300)}"]) from None
    _check_block(sc.ruleset.options, "ruleset.options", MAX_BLOCK_NUMBER, errors, src)
    opts = None
    if not errors:
        try:
            opts = rs.Options(**sc.ruleset.options)
        except ValidationError as exc:
            errors += _fmt_validation(src, exc, "ruleset.options", model=rs.Options)
    names = set(rs.terrain_names(opts)) if opts is not None else None
    map_errors = _map_field_errors(sc.map, names, rs.name, src)
    if map_errors:
        raise ScenarioError(errors + map_errors)
    board = sc.map.board()
    if board.problems:
        raise ScenarioError(errors + [f"{src}: {p}: {m}" for p, m in board.problems])
    columns = sc.map.columns()
    size = sc.map.size_text()
    if opts is not None:
        _check_vehicles(sc, opts, src, errors)
    cover = 0
    for i, entry in enumerate(sc.map.terrain):
        if names is not None and entry.tile not in names:
            errors.append(f"{src}: map.terrain[{i}].tile: unknown terrain {short(entry.tile)} for {rs.name}; "
                          f"expected one of {', '.join(sorted(names))}")
        off = [h for h in entry.hexes if h not in columns]
        if off:
            more = f" (and {len(off) - 3} more)" if len(off) > 3 else ""
            errors.append(f"{src}: map.terrain[{i}].hexes: {', '.join(str(list(h)) for h in off[:3])}{more} "
                          f"{'is' if len(off) == 1 else 'are'} off the map ({size})")
        cover += entry.size(columns)
    if cover > MAX_TERRAIN_CELLS:
        errors.append(f"{src}: map.terrain: the entries cover {cover:,} hexes of the map together; at most "
                      f"{MAX_TERRAIN_CELLS:,}")
    seen_features: dict[tuple[int, int], int] = {}
    for i, f in enumerate(sc.map.features):
        where = f"map.features[{i}]"
        if "hex" not in f:
            errors.append(f"{src}: {where}.hex: field required (the [q, r] of the hex this block describes)")
            continue
        try:
            h = _HEX.validate_python(f["hex"])
        except ValidationError as exc:
            errors += _fmt_validation(src, exc, f"{where}.hex")
            continue
        if h not in columns:
            errors.append(f"{src}: {where}.hex: {list(h)} is off the map ({size})")
        elif h in seen_features:
            errors.append(f"{src}: {where}.hex: {list(h)} already has a block at map.features[{seen_features[h]}]; "
                          f"give each hex one block")
        seen_features.setdefault(h, i)
        rest = {k: v for k, v in f.items() if k != "hex"}
        n_before = len(errors)
        _check_block(rest, where, MAX_BLOCK_NUMBER, errors, src)
        if len(errors) == n_before:
            try:
                rs.HexExt(**rest)
            except ValidationError as exc:
                errors += _fmt_validation(src, exc, where, model=rs.HexExt)
    for i, o in enumerate(sc.objectives):
        if o.hex not in columns:
            errors.append(f"{src}: objectives[{i}].hex: {list(o.hex)} is off the map ({size})")
    seen: dict[tuple[int, int], str] = {}
    for si, side in enumerate(sc.sides):
        for ti, t in enumerate(side.tanks):
            where = f"{src}: sides[{si}].tanks[{ti}]"
            if t.vehicle not in sc.vehicles:
                try:
                    rs.vehicle(t.vehicle)
                except KeyError as exc:
                    errors.append(f"{where}.vehicle: {unknown_vehicle_message(rs, t.vehicle, sc.vehicles, exc)}")
            h = t.hex
            if h not in columns:
                errors.append(f"{where}.hex: {list(t.hex)} is off the map ({size})")
            elif h in seen:
                errors.append(f"{where}.hex: {list(t.hex)} is already occupied by {short(seen[h])}")
            seen.setdefault(h, t.label or f"sides[{si}].tanks[{ti}]")
            n_before = len(errors)
            _check_block(t.rules, f"sides[{si}].tanks[{ti}].rules", MAX_BLOCK_NUMBER, errors, src)
            if len(errors) == n_before:
                try:
                    rs.TankExt(**t.rules)
                except ValidationError as exc:
                    errors += _fmt_validation(src, exc, f"sides[{si}].tanks[{ti}].rules", model=rs.TankExt)
    if sc.turn_limit is None and opts is not None:
        default = rs.default_turn_limit(opts)
        if not 1 <= default <= MAX_TURNS:
            errors.append(f"{src}: ruleset.options: the rule set's turn limit from these options is {short(default)}; "
                          f"at most {MAX_TURNS} (or set turn_limit)")
    for si, side in enumerate(sc.sides):
        specs = [(f"sides[{si}].policy", side.policy)] + [
            (f"sides[{si}].tanks[{ti}].policy", t.policy) for ti, t in enumerate(side.tanks) if t.policy]
        for where, p in specs:
            n_before = len(errors)
            _check_block(p.params, f"{where}.params", MAX_PARAM_NUMBER, errors, src)
            if len(errors) > n_before:
                continue
            # imported outside the try: an import cut short (Ctrl-C) must not leave the except clause's name unbound
            from agents.controllers import PolicyLoadError, check_policy

            try:
                check_policy(p.name, p.params)
            except PolicyLoadError as exc:
                errors.append(f"{src}: {where}: {clip(str(exc), 500)}")
    seen_labels: dict[str, str] = {}
    for si, side in enumerate(sc.sides):
        for ti, t in enumerate(side.tanks):
            if t.label is None:
                continue
            if t.label in seen_labels:
                errors.append(f"{src}: sides[{si}].tanks[{ti}].label: {short(t.label)} is already used by "
                              f"{seen_labels[t.label]}; labels must be unique")
            seen_labels.setdefault(t.label, f"sides[{si}].tanks[{ti}]")
    if sc.sides[0].name == sc.sides[1].name:
        errors.append(f"{src}: sides[1].name: {short(sc.sides[1].name)} is also the name of sides[0]; side names "
                      f"must differ")
    if sc.map.shape == "hexagon" and "radius" not in sc.map.model_fields_set:
        errors.append(f"{src}: map.radius: a hexagon map needs its radius (hexes from the centre to the edge)")
    elif sc.map.shape != "hexagon" and "radius" in sc.map.model_fields_set:
        errors.append(f"{src}: map.radius: only a hexagon map has a radius; a {sc.map.shape} has width and height")
    if errors:
        raise ScenarioError(errors)
    return sc


# --- the one YAML reader ---------------------------------------------------------------------------------------------
class _LimitError(yaml.MarkedYAMLError):
    """A file past one of the reader's limits (depth, aliases, values, integer length)."""


_INT_TAG = "tag:yaml.org,2002:int"
_NOT_PLAIN = ("tag:yaml.org,2002:binary", "tag:yaml.org,2002:set", "tag:yaml.org,2002:omap",
              "tag:yaml.org,2002:pairs")


class _Composer(yaml.composer.Composer):
    """PyYAML's composer with limits: nesting depth, number of values, aliases (and what they expand to, cycles
    included), integer length; integer errors name the field path."""

    _depth: int
    _nodes: int
    _aliases: int
    #: The indices of the nodes being composed, outermost first: a list position, a mapping key's node, ``None``.
    _path: list[int | yaml.Node | None]

    if TYPE_CHECKING:  # supplied by the parser the loader mixes in (PyYAML's Parser or libyaml's CParser)
        def check_event(self, *choices: type[yaml.Event]) -> bool: ...

        def peek_event(self) -> yaml.Event:  # never None here: a node is being composed, so an event is next
            ...

    def compose_document(self) -> Any:
        self._depth, self._nodes, self._aliases, self._path = 0, 0, 0, []
        node = super().compose_document()
        if self._aliases:
            _check_expansion(node)
        return node

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise self._limit(f"more than {MAX_YAML_ALIASES} aliases (*name)")
            return super().compose_node(parent, index)
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise self._limit(f"more than {MAX_YAML_NODES:,} values")
        if self._depth >= MAX_YAML_DEPTH:
            raise self._limit(f"nested more than {MAX_YAML_DEPTH} levels deep")
        self._depth += 1
        self._path.append(index)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._path.pop()
            self._depth -= 1
        if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_CHARS:
            where = self._where(index)
            raise _LimitError(None, None, f"{where}: an integer of {len(node.value):,} characters; integers are at "
                                          f"most {MAX_INT_CHARS} characters", node.start_mark)
        return node

    def _limit(self, problem: str) -> _LimitError:
        """A :class:`_LimitError` marked at the next event (the node about to be composed)."""
        mark = self.peek_event().start_mark
        # the stub takes PyYAML's own Mark only; libyaml's events carry yaml._yaml.Mark, which has the same fields
        return _LimitError(None, None, problem, mark)  # type: ignore[arg-type]

    def _where(self, index: Any) -> str:
        out = ""
        for ix in [*self._path[1:], index]:
            if isinstance(ix, int):
                out += f"[{ix}]"
            elif isinstance(ix, yaml.ScalarNode):
                out += ("." if out else "") + clip(str(ix.value), 40)
            elif ix is None and out:
                out += " (a key)"
        return out or "(top level)"


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


def _check_expansion(root: Any) -> None:
    """Raise :class:`_LimitError` when aliases make the document a cycle, deeper than :data:`MAX_YAML_DEPTH` or
    larger than :data:`MAX_YAML_NODES` values once expanded (computed on the shared node graph, never expanded)."""
    sizes: dict[int, tuple[int, int]] = {}
    entered: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            entered.discard(nid)
            kids = [sizes[id(k)] for k in _children(node)]
            count = 1 + sum(k[0] for k in kids)
            depth = 1 + max((k[1] for k in kids), default=0)
            if count > MAX_YAML_NODES:
                raise _LimitError(None, None, f"the aliases (*name) here expand to more than {MAX_YAML_NODES:,} "
                                              f"values", node.start_mark)
            if depth > MAX_YAML_DEPTH:
                raise _LimitError(None, None, f"the aliases (*name) here nest more than {MAX_YAML_DEPTH} levels "
                                              f"deep", node.start_mark)
            sizes[nid] = (count, depth)
            continue
        if nid in sizes:
            continue
        if nid in entered:
            raise _LimitError(None, None, "an alias (*name) refers to a collection that contains it (a cycle)",
                              node.start_mark)
        entered.add(nid)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in sizes)


class _Constructor(yaml.constructor.SafeConstructor):
    """Safe construction of plain values only; a value that fails to construct (a date like 2024-13-45) is a
    marked error, not an exception."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
            raise yaml.constructor.ConstructorError(None, None, f"cannot read this value: {clip(str(exc), 120)}",
                                                    node.start_mark) from None

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A mapping whose keys differ: a key written twice (``name: a`` ... ``name: b``, or ``yes`` and ``true``,
        which read as the same key) is a marked error at the second one, where PyYAML would keep the last value
        silently.  Keys a merge (``<<: *base``) brings in are overridden by the mapping's own, as YAML says."""
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {clip(repr(key), 60)} (first at line {first.start_mark.line + 1}); "
                        f"expected each key once in a mapping", key_node.start_mark)
        return super().construct_mapping(node, deep)

    def _not_plain(self, node: Any) -> Any:
        raise yaml.constructor.ConstructorError(None, None, f"the tag {node.tag.rsplit(':', 1)[-1]!r} is not allowed; "
                                                f"expected plain values (text, numbers, lists, mappings)",
                                                node.start_mark)


for _tag in _NOT_PLAIN:
    # the stub bounds a constructor's loader to PyYAML's own Loader classes; ours is a loader of its own mix
    _Constructor.add_constructor(_tag, _Constructor._not_plain)  # type: ignore[type-var]

if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser as _Parser  # libyaml scans and parses; composing stays in Python, with limits

    class _Loader(_Composer, _Parser, _Constructor, yaml.resolver.Resolver):
        def __init__(self, text: str):
            _Parser.__init__(self, text)
            _Composer.__init__(self)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _BYTE_POSITIONS = True
else:  # pragma: no cover - PyYAML without libyaml
    # (no-redef: this is the other branch's loader; exactly one of the two definitions runs)
    class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Composer,  # type: ignore[no-redef]
                  _Constructor, yaml.resolver.Resolver):
        def __init__(self, text: str):
            yaml.reader.Reader.__init__(self, text)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            _Composer.__init__(self)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _BYTE_POSITIONS = False


def _line_col(text: str, position: int, in_bytes: bool) -> tuple[int, int]:
    """1-based line and column of a character (or UTF-8 byte) offset."""
    if in_bytes:
        raw = text.encode("utf-8", "replace")
        position = len(raw[:position].decode("utf-8", "replace"))
    line = text.count("\n", 0, position) + 1
    return line, position - (text.rfind("\n", 0, position) + 1) + 1


def parse_yaml(text: str, src: str) -> Any:
    """Parse one YAML document of plain values (the safe schema minus binary / set / ordered-map tags) from the
    text of a scenario, experiment, tournament or case file.

    Limits, checked while reading (module constants): at most :data:`MAX_FILE_BYTES`, :data:`MAX_YAML_DEPTH`
    levels of nesting, :data:`MAX_YAML_ALIASES` aliases, :data:`MAX_YAML_NODES` values after alias expansion (an
    alias bomb is refused without being expanded; a cycle too), integers of at most :data:`MAX_INT_CHARS`
    characters.  Raises :class:`ScenarioError` ``src: line L, column C: ...`` (an integer error also names its
    field path)."""
    if len(text) > MAX_FILE_BYTES:
        raise ScenarioError([f"{src}: (file): {len(text):,} characters; a tanksim YAML file is at most "
                             f"{MAX_FILE_BYTES:,}"])
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "(file)"
        what = exc.problem or exc.context or "not valid YAML"
        kind = "" if isinstance(exc, _LimitError) else "not valid YAML: "
        raise ScenarioError([f"{src}: {where}: {kind}{clip(str(what), 300)}"]) from None
    except yaml.reader.ReaderError as exc:
        line, col = _line_col(text, exc.position, _BYTE_POSITIONS)
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise ScenarioError([f"{src}: line {line}, column {col}: not valid YAML: {clip(str(exc.reason), 120)} "
                             f"(character {char!r})"]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([f"{src}: (file): not valid YAML: {clip(str(exc), 300)}"]) from None
    except RecursionError:
        raise ScenarioError([f"{src}: (file): nested too deeply"]) from None
    finally:
        loader.dispose()


class FlowMap(dict):
    """A mapping :func:`dump_yaml` writes on one line (``{vehicle: t34_85, hex: [1, 8], facing: 0}``)."""


class _Dumper(yaml.SafeDumper):
    """Plain YAML as tanksim's own files are written: block mappings, ``[q, r]`` pairs and :class:`FlowMap`
    on one line, multi-line texts (a ``map.layout``) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, s: str) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


def _represent_list(dumper: yaml.SafeDumper, v: list[Any] | tuple[Any, ...]) -> Any:
    flow = len(v) <= 12 and all(isinstance(x, (int, float, str)) and not isinstance(x, bool) or x is None
                                for x in v) and sum(len(str(x)) for x in v) <= 80
    return dumper.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=flow)


def _represent_flow_map(dumper: yaml.SafeDumper, v: FlowMap) -> Any:
    return dumper.represent_mapping("tag:yaml.org,2002:map", dict(v), flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)
_Dumper.add_representer(FlowMap, _represent_flow_map)


def dump_yaml(data: Any) -> str:
    """``data`` (plain values: mappings, lists, texts, numbers, booleans, ``None``) as YAML text that
    :func:`parse_yaml` reads back to equal values; keys keep their order.  Deterministic: equal data, equal
    text."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120,
                     default_flow_style=False)


def path_kind(path: str | Path) -> str:
    """``"file"``, ``"dir"``, ``"other"`` (a device, a pipe) or ``"missing"`` -- never raises (a name too long
    for the file system, a NUL byte, a permission problem on the way all count as ``"missing"``)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return "missing"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "dir" if stat.S_ISDIR(st.st_mode) else "other"


def read_text(path: str | Path, src: str | None = None) -> str:
    """The text of a YAML file, read only if it is a regular file of at most :data:`MAX_FILE_BYTES`.  Raises
    :class:`ScenarioError` (missing, a folder, a device or pipe, too large, not UTF-8) or ``OSError``."""
    src = str(path) if src is None else src
    p = Path(path)
    kind = path_kind(p)
    if kind != "file":
        what = {"missing": "no such file (or it cannot be reached)", "dir": "is a folder"}.get(
            kind, "not a regular file (a device or a pipe)")
        raise ScenarioError([f"{src}: (file): {what}; expected a YAML file"])
    with p.open("rb") as fh:
        raw = fh.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError([f"{src}: (file): larger than {MAX_FILE_BYTES:,} bytes; a tanksim YAML file is at most "
                             f"that"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError([f"{src}: (file): not a UTF-8 text file; expected YAML text"]) from None


def bundled_dir() -> Any:
    """The bundled scenarios folder (a Traversable: works from a wheel or a clone)."""
    return resources.files("tanksim_scenarios")


def bundled_scenarios() -> list[str]:
    """The file names of the bundled scenarios, sorted: the bundled ``.yaml`` files with a top-level ``sides:``
    (every scenario has one; the bundled experiment, tournament and rule-set comparison files, which sit in the same
    folder as examples, have none and are left out)."""
    return sorted(x.name for x in bundled_dir().iterdir()
                  if x.name.endswith(".yaml") and re.search(r"(?m)^sides\s*:", x.read_text(encoding="utf-8")))


def find_scenario(name_or_path: str | Path) -> tuple[str, str]:
    """Resolve a path or a bundled scenario name to ``(source name, YAML text)``.

    Raises ``FileNotFoundError`` listing the bundled names when nothing matches."""
    p = Path(name_or_path)
    kind = path_kind(p)
    if kind == "dir":
        raise FileNotFoundError(f"{clip(str(name_or_path), 300)}: is a folder, expected a scenario YAML file")
    if kind != "missing":
        return str(name_or_path), read_text(p, str(name_or_path))
    stem = p.name if p.suffix in (".yaml", ".yml") else p.name + ".yaml"
    cand = bundled_dir().joinpath(stem)
    if len(stem) < 256 and "\0" not in stem and cand.is_file():
        return f"scenarios/{stem}", cand.read_text(encoding="utf-8")
    known = bundled_scenarios()
    hint = did_you_mean(p.stem, [k.removesuffix(".yaml") for k in known]) if p.parent == Path(".") else ""
    raise FileNotFoundError(f"{clip(str(name_or_path), 300)}: no such file, and no bundled scenario of that name"
                            f"{hint} (bundled: {', '.join(known)})")


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Load and validate a scenario file (or bundled name), applying dotted-path ``overrides`` first.

    Raises :class:`ScenarioError` (file, field path, what was expected) or ``FileNotFoundError``."""
    src, text = find_scenario(name_or_path)
    data = parse_yaml(text, src)
    if overrides:
        data = apply_overrides(data, overrides, src)
    return validate(data, src)


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any], src: str = "<scenario>") -> dict:
    """A copy of ``data`` with each dotted path set (``sides.attacker.policy.params.flank_bias``); a side may be
    addressed by name, role or index (``sides.1`` / ``sides.0``).  Raises :class:`ScenarioError` for a path that
    does not exist (except the last key of a mapping, which is created)."""
    out = copy.deepcopy(dict(data))
    for path, value in overrides.items():
        if not isinstance(path, str):
            raise ScenarioError([f"{src}: {short(path)}: expected a dotted path (text)"])
        parts = path.split(".")
        node: Any = out
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                idx = _list_index(node, part)
                if idx is None:
                    known = [str(x[k]) for x in node if isinstance(x, dict) for k in ("name", "role", "label")
                             if isinstance(x.get(k), str)]
                    raise ScenarioError([f"{src}: {clip(path, 200)}: no element {short(part)}"
                                         f"{did_you_mean(part, known)} in {clip('.'.join(parts[:i]), 200) or 'root'}"])
                if last:
                    node[idx] = value
                else:
                    node = node[idx]
            elif isinstance(node, dict):
                if last:
                    node[part] = value
                elif part not in node:
                    if parts[i] in ("params", "options", "rules", "policy", "ruleset", "victory", "map"):
                        node[part] = {}
                        node = node[part]
                    else:
                        raise ScenarioError([f"{src}: {clip(path, 200)}: unknown field {short(part)}"])
                else:
                    if part == "policy" and isinstance(node[part], str):
                        node[part] = {"name": node[part]}
                    if part == "ruleset" and isinstance(node[part], str):
                        node[part] = {"name": node[part]}
                    node = node[part]
            else:
                raise ScenarioError([f"{src}: {clip(path, 200)}: {clip('.'.join(parts[:i]), 200)} is not a mapping "
                                     f"or list"])
    return out


def _list_index(node: list, part: str) -> int | None:
    if part.lstrip("-").isdecimal() and len(part) <= 18:
        i = int(part)
        return i if -len(node) <= i < len(node) else None
    for i, item in enumerate(node):
        if isinstance(item, dict) and part in (item.get("name"), item.get("role"), item.get("label")):
            return i
    return None


def side_index(sc: Scenario, key: str) -> int:
    """A side by name (or role), in any case where unambiguous (:func:`sim.messages.match_name`), or by position
    ``1`` / ``2``; raises ``KeyError`` naming the sides."""
    if key.isdecimal() and len(key) <= 18 and 1 <= int(key) <= len(sc.sides):
        return int(key) - 1
    for names in ([s.name for s in sc.sides], [s.role for s in sc.sides]):
        found = match_name(key, names)
        if found is not None:
            return found
    raise KeyError(unknown_side_message(key, [s.name for s in sc.sides], [s.role for s in sc.sides]))
