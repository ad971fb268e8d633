"""Scenario generators: ``tanksim generate KIND --ruleset R --size N --tanks K [--terrain ...] --seed S -o FILE``.

Each generator writes a validated scenario for any rule set: an ``N x N`` board drawn as a ``map.layout`` picture
(so the file is readable and editable), ``K`` tanks a side from the rule set's own catalog deployed in columns at
the west (first side) and east (second side) edges, terrain the rule set knows, and objectives for the assault
kinds.  Kinds (:data:`KINDS`):

* ``meeting``: an open meeting engagement; scattered woods (and, under ``asl``, a road along the middle row); both
  sides ``advance``; one objective, the centre hex (:func:`_centre_objective`), which both sides race for.
* ``village``: a village assault; a village of buildings and streets two thirds of the way east, its square and
  the two ends of its main street are objectives; attacker west, defender east, both play ``objective``.
* ``river``: a river crossing; a river winds north to south across the middle, crossed at two or more fords or
  bridges; the east-bank end of every crossing is an objective; attacker west, defender east, ``objective``.
  Under ``asl``, whose terrain table has no water, the river's hexes are left off the board (cells off the board
  are never entered and are open ground for every sight rule), and the crossings are road hexes.
* ``random``: random terrain with a ``density`` (the share of the board covered, default 0.25) split over the rule
  set's mix of terrain (:data:`PROFILES`), in clumps; both sides ``advance``; the centre hex is the objective.

``terrain`` (``--terrain woods=0.1,building=0.05``) replaces a kind's scattered terrain: the share of the board
each named terrain covers, in clumps.  Every board is checked with the rule set's own ``passable`` rule: where
impassable terrain (water, buildings, walls, hills under the rule sets that forbid entering them) would cut a
deployment zone or an objective off from the enemy's zone, the cheapest cut is cleared to open ground.

Determinism: the same kind and parameters give the same file, byte for byte, on any machine (``random.Random``
seeded with the text of the kind and seed; nothing iterates over an unordered set).  Generators are also an
experiment factor (``generator: {kind, params}`` in an experiment file, :mod:`sim.experiments.design`); the
command is :mod:`sim.cli.generate`.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sim.battle import BattleState, SideInfo
from sim.hexgrid import offset_to_axial
from sim.messages import clip, did_you_mean, short
from sim.rules import base as rules_base
from sim.scenario import MAX_SIDE, MAX_TANKS, MAX_TURNS, FlowMap, Name, ScenarioError, dump_yaml, validate

#: The generator kinds.
KINDS = ("meeting", "village", "river", "random")
#: Smallest board side (hexes).
MIN_SIZE = 8
#: Version of the generators' output: part of a generated scenario's description, so a change to what a generator
#: draws shows in the digest of everything it makes.
GENERATOR_VERSION = 1


class GeneratorError(ValueError):
    """Generator parameters are invalid; ``errors`` holds ``where: what was expected`` lines."""

    def __init__(self, errors: Sequence[str]):
        self.errors = [clip(str(e), 1000) for e in errors][:40]
        super().__init__("\n".join(self.errors))


# --- rule-set profiles ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    """What a generator needs to know about a rule set: the two sides (name, catalog vehicles cycled in order),
    ``hex_size_m``, rule-set ``options``, the terrain name for each role a generator draws (``None``: the rule set
    has none; a ``water`` of ``None`` leaves the river off the board), the ``mix`` of the ``random`` kind (shares
    of its density) and the layout character of each terrain name."""

    sides: tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]
    hex_size_m: int
    options: Mapping[str, Any]
    woods: str
    building: str
    hard_building: str
    rough: str | None
    road: str | None
    water: str | None
    mix: Mapping[str, float]
    chars: Mapping[str, str]


#: Layout characters (one per terrain name of any rule set; ``~`` is also the off-board river under asl).
CHARS = {"open": ".", "woods": "T", "building": "B", "stone_building": "S", "road": "=", "water": "~",
         "rubble": ":", "rocks": "o", "wall": "#", "hill": "^", "smoke": "s"}

PROFILES: dict[str, Profile] = {
    "panzer_squadron": Profile(
        sides=(("Soviets", ("t34_85", "t34_85", "t34_76")), ("Germans", ("pz_iv_h", "pz_iv_h", "panther"))),
        hex_size_m=50, options={"turn_limit_result": "draw"}, woods="woods", building="building",
        hard_building="building", rough="rubble", road=None, water="water",
        mix={"woods": 0.6, "rubble": 0.2, "building": 0.15, "water": 0.05},
        chars={k: CHARS[k] for k in ("open", "woods", "rubble", "building", "water")}),
    "asl": Profile(
        sides=(("Germans", ("pzkpfw_iiih",)), ("Soviets", ("t34_m41",))),
        hex_size_m=40, options={"date": "1941", "hex_size_m": 40}, woods="woods", building="building",
        hard_building="stone_building", rough=None, road="road", water=None,
        mix={"woods": 0.65, "building": 0.25, "stone_building": 0.1},
        chars={k: CHARS[k] for k in ("open", "road", "woods", "building", "stone_building")}),
    "hummel_quest": Profile(
        sides=(("Red", ("hq_example_medium", "hq_example_scout", "hq_example_medium", "hq_example_heavy")),
               ("Blue", ("hq_example_medium", "hq_quest_era_sample", "hq_example_heavy", "hq_example_spg"))),
        hex_size_m=10, options={}, woods="woods", building="building", hard_building="building", rough="rocks",
        road=None, water="water", mix={"woods": 0.45, "rocks": 0.25, "building": 0.1, "wall": 0.1, "water": 0.1},
        chars={k: CHARS[k] for k in ("open", "woods", "rocks", "rubble", "wall", "building", "hill", "water")}),
}


# --- parameters ----------------------------------------------------------------------------------------------------

class GeneratorParams(BaseModel):
    """Parameters of every generator (units: hexes, turns).

    ``ruleset``; ``size`` (board side, :data:`MIN_SIZE`..200); ``tanks`` per side (1..100, at most what the edge
    columns hold); ``seed``; ``terrain``: share of the board per terrain name (each 0..0.9, together at most 0.9),
    replacing the kind's scattered terrain; ``density`` (``random`` only, 0..0.9, default 0.25); ``turns`` (the
    turn limit, default ``max(8, round(0.6 size))``); ``attacker`` / ``defender``: catalog vehicle ids cycled over
    the first / second side's tanks (default: the profile's); ``name`` of the scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ruleset: str = Field(default="panzer_squadron", max_length=100)
    size: int = Field(default=25, ge=MIN_SIZE, le=MAX_SIDE)
    tanks: int = Field(default=5, ge=1, le=MAX_TANKS)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    terrain: dict[str, float] | None = Field(default=None, max_length=20)
    density: float | None = Field(default=None, ge=0.0, le=0.9, allow_inf_nan=False)
    turns: int | None = Field(default=None, ge=1, le=MAX_TURNS)
    attacker: list[str] | None = Field(default=None, min_length=1, max_length=MAX_TANKS)
    defender: list[str] | None = Field(default=None, min_length=1, max_length=MAX_TANKS)
    name: Name | None = None

    @field_validator("terrain")
    @classmethod
    def _shares(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is None:
            return v
        for k, x in v.items():
            if not isinstance(x, (int, float)) or isinstance(x, bool) or not 0 <= x <= 0.9:
                raise ValueError(f"{short(k)}: expected a share of the board from 0 to 0.9, got {short(x)}")
        if sum(v.values()) > 0.9:
            raise ValueError(f"the shares add up to {sum(v.values()):.2f}; at most 0.9")
        return {k: float(x) for k, x in v.items()}

    @model_validator(mode="after")
    def _fits(self) -> GeneratorParams:
        depth = math.ceil(self.tanks / self.size)
        if 2 * depth + 4 > self.size:
            raise ValueError(f"{self.tanks} tanks a side need {depth} columns at each edge; a board of size "
                             f"{self.size} is too small (at least {2 * depth + 4})")
        return self


class GeneratorSpec(BaseModel):
    """A generator in a data file: ``kind`` (:data:`KINDS`) and its ``params`` (:class:`GeneratorParams`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["meeting", "village", "river", "random"]
    params: GeneratorParams = Field(default_factory=GeneratorParams)


def check_params(kind: str, params: Mapping[str, Any] | GeneratorParams, where: str = "generator") -> GeneratorParams:
    """Validate ``params`` for ``kind`` against the schema and the rule set (its name, its catalog vehicles, its
    terrain names).  Raises :class:`GeneratorError` with ``where.field: what was expected`` lines."""
    from sim.scenario import _fmt_validation

    if kind not in KINDS:
        raise GeneratorError([f"{where}.kind: unknown generator {short(kind)}; expected one of {', '.join(KINDS)}"])
    if isinstance(params, GeneratorParams):
        p = params
    else:
        if not isinstance(params, Mapping):
            raise GeneratorError([f"{where}.params: expected a mapping of parameters"])
        try:
            p = GeneratorParams.model_validate(dict(params))
        except ValidationError as exc:
            lines = _fmt_validation("", exc, f"{where}.params", model=GeneratorParams)
            raise GeneratorError([line.removeprefix(": ") for line in lines]) from None
    errors = []
    if p.ruleset not in PROFILES:
        errors.append(f"{where}.params.ruleset: no generator profile for rule set {short(p.ruleset)}; expected one "
                      f"of {', '.join(PROFILES)}")
        raise GeneratorError(errors)
    rs = rules_base.get(p.ruleset)
    known = set(rs.vehicle_ids())
    for key in ("attacker", "defender"):
        for i, vid in enumerate(getattr(p, key) or ()):
            if vid not in known:
                errors.append(f"{where}.params.{key}[{i}]: unknown {p.ruleset} vehicle {short(vid)}"
                              f"{did_you_mean(vid, sorted(known))}; known: {', '.join(sorted(known))}")
    names = set(rs.terrain_names(rs.Options(**PROFILES[p.ruleset].options)))
    for t in p.terrain or {}:
        if t not in names or t == "open":
            errors.append(f"{where}.params.terrain: {short(t)} is not a terrain to scatter under {p.ruleset}; "
                          f"expected one of {', '.join(sorted(names - {'open'}))}")
        elif t not in CHARS:
            errors.append(f"{where}.params.terrain: {short(t)} has no layout character")
    if p.density is not None and kind != "random":
        errors.append(f"{where}.params.density: only the random generator takes a density (use terrain for the "
                      f"others)")
    if p.density is not None and p.terrain is not None:
        errors.append(f"{where}.params.density: give density or terrain, not both")
    if errors:
        raise GeneratorError(errors)
    return p


# --- the board -----------------------------------------------------------------------------------------------------

Cell = tuple[int, int]  # (column, row) offset coordinates of the layout picture


@dataclass
class _Board:
    """A board being drawn: ``grid[(col, row)]`` is a terrain name or ``None`` (no hex), ``keep`` the cells
    nothing may be drawn on (deployment zones, objectives)."""

    size: int
    grid: dict[Cell, str | None]
    keep: set[Cell] = field(default_factory=set)

    def neighbours(self, c: Cell) -> list[Cell]:
        h = offset_to_axial(*c)
        out = []
        for n in h.neighbours():
            col, row = n.q, n.r + n.q // 2
            if 0 <= col < self.size and 0 <= row < self.size:
                out.append((col, row))
        return out


def _scatter(b: _Board, rng: random.Random, name: str, count: int, avoid: set[Cell]) -> None:
    """Paint ``count`` open, free cells with ``name`` in clumps of 1..6 grown from random seeds."""
    free = sorted(c for c, t in b.grid.items() if t == "open" and c not in b.keep and c not in avoid)
    placed, tries = 0, 0
    while placed < count and free and tries < 20 * count + 100:
        tries += 1
        seed = free[rng.randrange(len(free))]
        if b.grid[seed] != "open":
            continue
        blob = [seed]
        b.grid[seed] = name
        placed += 1
        target = rng.randint(1, 6)
        while len(blob) < target and placed < count:
            frontier = sorted({n for c in blob for n in b.neighbours(c)
                               if b.grid.get(n) == "open" and n not in b.keep and n not in avoid})
            if not frontier:
                break
            n = frontier[rng.randrange(len(frontier))]
            b.grid[n] = name
            blob.append(n)
            placed += 1


def _zones(size: int, tanks: int) -> tuple[list[Cell], list[Cell]]:
    """The deployment cells of the west and east sides, in placing order: edge column first, rows nearest the
    middle first."""
    depth = math.ceil(tanks / size)
    mid = (size - 1) / 2

    def order(cols: Sequence[int]) -> list[Cell]:
        return sorted(((c, r) for c in cols for r in range(size)),
                      key=lambda cr: (cols.index(cr[0]), abs(cr[1] - mid), cr[1]))

    return order(list(range(depth))), order([size - 1 - i for i in range(depth)])


# --- the kinds -------------------------------------------------------------------------------------------------------

@dataclass
class _Draft:
    """What a kind draws: the board, objectives (cell, points, name), roles and policies of the two sides."""

    board: _Board
    objectives: list[tuple[Cell, int, str]] = field(default_factory=list)
    roles: tuple[str, str] = ("none", "none")
    policies: tuple[str, str] = ("advance", "advance")
    default_scatter: dict[str, float] = field(default_factory=dict)
    title: str = ""


def _centre_objective(b: _Board) -> list[tuple[Cell, int, str]]:
    """The open kinds' one objective: the board's centre hex, kept clear of terrain.

    DECISION: a meeting engagement needs somewhere to meet.  Without an objective, and with the enemy out of sight at
    the start, the ``advance`` doctrine has no goal and every tank holds to the turn limit (a newcomer found every
    generated ``meeting`` and ``random`` battle under panzer_squadron and hummel_quest ended 0 shots, a draw), so
    both sides race for the centre (2 points) and meet there."""
    centre = (b.size // 2, b.size // 2)
    b.keep.add(centre)
    return [(centre, 2, "centre")]


def _meeting(b: _Board, rng: random.Random, prof: Profile) -> _Draft:
    if prof.road:
        row = b.size // 2
        for col in range(b.size):
            b.grid[(col, row)] = prof.road
    return _Draft(b, _centre_objective(b), default_scatter={prof.woods: 0.08},
                  title="Meeting engagement: both sides advance across open ground and scattered woods to the centre")


def _village(b: _Board, rng: random.Random, prof: Profile, depth: int) -> _Draft:
    size = b.size
    east_limit = size - 1 - (depth + 1)
    radius = max(2, size // 6)
    cx = min(round(0.62 * (size - 1)), east_limit - radius)
    cy = size // 2 + rng.randint(-(size // 10), size // 10)
    centre = offset_to_axial(cx, cy)
    street = prof.road or "open"
    for (col, row) in sorted(b.grid):
        h = offset_to_axial(col, row)
        d = max(abs(h.q - centre.q), abs(h.r - centre.r), abs(h.q + h.r - centre.q - centre.r))
        if d > radius:
            continue
        if row == cy or col == cx:
            b.grid[(col, row)] = street
        elif d <= 1:
            b.grid[(col, row)] = "open"  # the square
        else:
            x = rng.random()
            if x < 0.5:
                b.grid[(col, row)] = prof.building
            elif x < 0.6:
                b.grid[(col, row)] = prof.hard_building
            elif x < 0.7 and prof.rough:
                b.grid[(col, row)] = prof.rough
    objectives = [((cx, cy), 3, "village square")]
    if size >= 15:
        objectives += [((cx - radius, cy), 2, "west end of the main street"),
                       ((cx + radius, cy), 2, "east end of the main street")]
    b.keep |= {c for c, _, _ in objectives}
    return _Draft(b, objectives, ("attacker", "defender"), ("objective", "objective"), {prof.woods: 0.05},
                  "Village assault: the attacker takes the village square and main street from the defender")


def _river(b: _Board, rng: random.Random, prof: Profile, depth: int) -> _Draft:
    size = b.size
    lo, hi = max(depth + 2, size // 2 - size // 6), min(size - depth - 4, size // 2 + size // 6)
    width = 1 if size < 20 else 2
    col = min(max(size // 2 + rng.randint(-1, 1), lo), hi)
    course: dict[int, tuple[int, int]] = {}  # row -> (first, last) river column
    prev = col
    for row in range(size):
        col = min(max(col + rng.choice((-1, 0, 0, 1)), lo), hi)
        course[row] = (min(col, prev), max(col, prev) + width - 1)
        prev = col
    n_cross = max(2, size // 10)
    band = (size - 4) / n_cross
    rows = [2 + int(band * i) + rng.randrange(max(1, int(band))) for i in range(n_cross)]
    rows = sorted(set(min(max(r, 1), size - 2) for r in rows))
    water = prof.water  # None: the river is left off the board
    for row, (c0, c1) in course.items():
        for c in range(c0, c1 + 1):
            b.grid[(c, row)] = (prof.road or "open") if row in rows else water
    objectives = [((course[r][1] + 1, r), 2, f"bridgehead {i + 1}") for i, r in enumerate(rows)]
    b.keep |= {(c, r) for r, (c0, c1) in course.items() for c in range(c0 - 1, c1 + 2)}  # banks stay clear
    return _Draft(b, objectives, ("attacker", "defender"), ("objective", "objective"), {prof.woods: 0.06},
                  "River crossing: the attacker seizes the bridgeheads on the far bank")


def _random(b: _Board, rng: random.Random, prof: Profile, density: float) -> _Draft:
    return _Draft(b, _centre_objective(b), default_scatter={k: v * density for k, v in prof.mix.items()},
                  title=f"Random terrain, density {density:g}: both sides advance to the centre")


# --- putting it together ---------------------------------------------------------------------------------------------

def generate(kind: str, params: Mapping[str, Any] | GeneratorParams) -> dict[str, Any]:
    """The scenario mapping a generator draws (plain values; tanks and objectives as :class:`FlowMap`).

    The result is validated (:func:`sim.scenario.validate`) before it is returned.  Raises
    :class:`GeneratorError` for bad parameters."""
    p = check_params(kind, params)
    prof = PROFILES[p.ruleset]
    rng = random.Random(f"tanksim-generate|{kind}|{p.seed}")
    size = p.size
    west, east = _zones(size, p.tanks)
    depth = math.ceil(p.tanks / size)
    b = _Board(size, {(c, r): "open" for c in range(size) for r in range(size)})
    b.keep |= set(west[: p.tanks]) | set(east[: p.tanks])
    edge = {c for c in b.grid if c[0] <= depth or c[0] >= size - 1 - depth}
    if kind == "meeting":
        draft = _meeting(b, rng, prof)
    elif kind == "village":
        draft = _village(b, rng, prof, depth)
    elif kind == "river":
        draft = _river(b, rng, prof, depth)
    else:
        draft = _random(b, rng, prof, 0.25 if p.density is None else p.density)
    scatter = p.terrain if p.terrain is not None else draft.default_scatter
    for name in sorted(scatter):
        _scatter(b, rng, name, round(scatter[name] * size * size), edge)
    data = _scenario(kind, p, prof, draft, west[: p.tanks], east[: p.tanks])
    _connect(data, b, prof, p, draft, west[: p.tanks], east[: p.tanks])
    data = _scenario(kind, p, prof, draft, west[: p.tanks], east[: p.tanks])
    try:
        validate(data, "<generated>")
    except ScenarioError as exc:  # pragma: no cover - a generator bug
        raise RuntimeError("a generator drew an invalid scenario: " + "; ".join(exc.errors[:5])) from None
    return data


def _layout(b: _Board, prof: Profile) -> tuple[str, dict[str, str | None]]:
    chars = dict(prof.chars)
    legend: dict[str, str | None] = {ch: name for name, ch in chars.items()}
    if prof.water is None:
        legend[CHARS["water"]] = None
    lines = []
    for row in range(b.size):
        line = ""
        for col in range(b.size):
            t = b.grid[(col, row)]
            line += CHARS["water"] if t is None else chars[t]
        lines.append(line)
    return "".join(line + "\n" for line in lines), dict(sorted(legend.items(), key=lambda kv: kv[0]))


def _scenario(kind: str, p: GeneratorParams, prof: Profile, draft: _Draft, west: list[Cell], east: list[Cell]
              ) -> dict[str, Any]:
    layout, legend = _layout(draft.board, prof)
    name = p.name or f"{kind}_{p.ruleset}_{p.size}x{p.size}_{p.tanks}v{p.tanks}_seed{p.seed}"
    sides = []
    for si, (cells, facing) in enumerate(((west, 0), (east, 3))):
        side_name, default_vehicles = prof.sides[si]
        vehicles = (p.attacker if si == 0 else p.defender) or list(default_vehicles)
        tanks = []
        for i, c in enumerate(cells):
            h = offset_to_axial(*c)
            tanks.append(FlowMap(vehicle=vehicles[i % len(vehicles)], hex=[h.q, h.r], facing=facing,
                                 label=f"{side_name}-{i + 1}"))
        sides.append({"name": side_name, "role": draft.roles[si], "policy": draft.policies[si], "tanks": tanks})
    data: dict[str, Any] = {
        "name": name,
        "description": (f"{draft.title}. Generated by tanksim generate {kind} (generator version "
                        f"{GENERATOR_VERSION}): {p.tanks} v {p.tanks} on {p.size} x {p.size} hexes of "
                        f"{prof.hex_size_m} m, seed {p.seed}."),
        "ruleset": {"name": p.ruleset, "options": dict(prof.options)} if prof.options else {"name": p.ruleset},
        "map": {"shape": "layout", "hex_size_m": prof.hex_size_m, "legend": legend, "layout": layout},
        "turn_limit": p.turns or max(8, round(0.6 * p.size)),
    }
    if draft.objectives:
        data["objectives"] = [FlowMap(hex=list(offset_to_axial(*c)), points=pts, name=nm)
                              for c, pts, nm in draft.objectives]
    data["victory"] = {"kill_points": 1}
    data["sides"] = sides
    return data


def _connect(data: dict[str, Any], b: _Board, prof: Profile, p: GeneratorParams, draft: _Draft,
             west: list[Cell], east: list[Cell]) -> None:
    """Clear impassable terrain (the rule set's own ``passable``) where it cuts the west zone, the east zone or an
    objective off from each other: the cheapest path through it (networkx Dijkstra, 1 per passable hex, 25 per
    impassable one) is turned to open ground."""
    spec = validate(data, "<generated>")
    rs = spec.rules()
    battle = BattleState(spec.build_map(), [], [SideInfo(s.name, s.role) for s in spec.sides], rs, spec.options(),
                    hex_size_m=spec.map.hex_size_m)
    sample: dict[str, Cell] = {}
    for c in sorted(b.grid):
        t = b.grid[c]
        if t is not None:
            sample.setdefault(t, c)
    passable = {t: rs.passable(battle, offset_to_axial(*c)) for t, c in sample.items()}
    passable["open"] = True

    def cost(c: Cell) -> int:  # c is a cell of the map (its grid entry is a terrain name)
        t = b.grid[c]
        return 1 if t is not None and passable[t] else 25

    g: nx.Graph[Cell] = nx.Graph()
    for c in sorted(b.grid):
        if b.grid[c] is None:
            continue
        for n in b.neighbours(c):
            if b.grid.get(n) is not None and c < n:
                g.add_edge(c, n, weight=cost(c) + cost(n))
    for goal in [east[0], *(c for c, _, _ in draft.objectives)]:
        for c in nx.dijkstra_path(g, west[0], goal, weight="weight"):
            t = b.grid[c]
            if t is not None and not passable[t]:
                b.grid[c] = "open"
                for n in g.neighbors(c):
                    g[c][n]["weight"] = cost(c) + cost(n)


def generate_text(kind: str, params: Mapping[str, Any] | GeneratorParams) -> str:
    """The generated scenario as YAML text, headed by comments that say how it was made and how a layout's
    characters map to hexes.  Equal arguments give equal text, byte for byte."""
    p = check_params(kind, params)
    data = generate(kind, p)
    given = p.model_dump(exclude_none=True)
    args = " ".join(f"--{k} {_arg(v)}" for k, v in given.items() if k != "ruleset")
    head = (f"# {data['description']}\n"
            f"# Made by: tanksim generate {kind} --ruleset {p.ruleset} {args}\n"
            f"# map.layout: one character per hex (map.legend); line i, column j (from 0) is the hex q = j,\n"
            f"# r = i - j // 2 (flat-top hexes, odd columns half a hex lower). Edit the picture freely; tanksim\n"
            f"# validate checks it.\n")
    return head + dump_yaml(data)


def _arg(v: Any) -> str:
    if isinstance(v, Mapping):
        return ",".join(f"{k}={x:g}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


__all__ = ["KINDS", "PROFILES", "GeneratorError", "GeneratorParams", "GeneratorSpec", "check_params", "generate",
           "generate_text"]

