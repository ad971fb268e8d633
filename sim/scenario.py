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
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sim.hexgrid import Hex, HexMap, hexagon_hexes, parallelogram_hexes, rectangle_hexes
from sim.rules import base as rules_base

HexPair = tuple[int, int]


class ScenarioError(ValueError):
    """A scenario (or experiment) file is invalid.  ``errors`` holds one ``file: path: message`` line each."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PolicySpec(_Model):
    """A doctrine by name (built-in or ``package.module:Class``) with its parameters."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


def _policy(v: Any) -> Any:
    if isinstance(v, str):
        return {"name": v}
    return v


class TankSpec(_Model):
    """One tank: catalog ``vehicle``, ``hex`` [q, r], hull ``facing`` (vertex 0..5), ``label``; optional
    per-tank ``policy`` override and ``rules`` block (the rule set's ``TankExt``)."""

    vehicle: str
    hex: HexPair
    facing: int = Field(0, ge=0, le=5)
    label: str | None = None
    policy: PolicySpec | None = None
    rules: dict[str, Any] = Field(default_factory=dict)

    _p = field_validator("policy", mode="before")(_policy)


class SideSpec(_Model):
    """A side: ``name``, ``role`` (attacker / defender / none), ``policy`` (or ``controller``), fault handling,
    optional ``exit_edge`` (north / south / east / west) and its ``tanks``."""

    name: str
    role: Literal["attacker", "defender", "none"] = "none"
    policy: PolicySpec = Field(default_factory=lambda: PolicySpec(name="hold"))
    on_fault: Literal["pass", "forfeit"] = "pass"
    max_faults: int = Field(5, ge=1)
    decision_timeout_s: float | None = Field(None, gt=0)
    exit_edge: Literal["north", "south", "east", "west"] | None = None
    tanks: list[TankSpec] = Field(min_length=1)

    _p = field_validator("policy", mode="before")(_policy)

    def __init__(self, **data: Any):
        if "controller" in data and "policy" not in data:
            data["policy"] = data.pop("controller")
        super().__init__(**data)


class TerrainSpec(_Model):
    """Terrain by hex list (``hexes``), by a disc (``center`` + ``radius``) or by ``rect`` (axial ranges)."""

    tile: str
    hexes: list[HexPair] = Field(default_factory=list)
    center: HexPair | None = None
    radius: int = Field(0, ge=0)
    rect: dict[Literal["q", "r"], tuple[int, int]] | None = None

    def cells(self) -> list[Hex]:
        out = [Hex(*h) for h in self.hexes]
        if self.center is not None:
            c = Hex(*self.center)
            out += [c + h for h in hexagon_hexes(self.radius)]
        if self.rect is not None:
            (q0, q1), (r0, r1) = self.rect.get("q", (0, -1)), self.rect.get("r", (0, -1))
            out += [Hex(q, r) for q in range(q0, q1 + 1) for r in range(r0, r1 + 1)]
        return out


class MapSpec(_Model):
    """The board: ``shape`` rectangle (columns x rows in axial names, see :func:`rectangle_hexes`), parallelogram
    or hexagon (``radius``); ``hex_size_m`` metres per hex; ``terrain`` entries; ``features`` per-hex rule-set
    blocks (``{hex, ...}``)."""

    shape: Literal["rectangle", "parallelogram", "hexagon"] = "rectangle"
    width: int = Field(25, ge=1, le=400)
    height: int = Field(25, ge=1, le=400)
    radius: int = Field(12, ge=1, le=200)
    hex_size_m: int = Field(10, ge=1)
    terrain: list[TerrainSpec] = Field(default_factory=list)
    features: list[dict[str, Any]] = Field(default_factory=list)

    def cells(self) -> list[Hex]:
        if self.shape == "rectangle":
            return rectangle_hexes(self.width, self.height)
        if self.shape == "parallelogram":
            return parallelogram_hexes(self.width, self.height)
        return hexagon_hexes(self.radius)

    def size_text(self) -> str:
        return f"radius {self.radius}" if self.shape == "hexagon" else f"{self.width} x {self.height}"


class ObjectiveSpec(_Model):
    """An objective hex worth ``points`` to the side holding it at the end (``side`` restricts who may score)."""

    hex: HexPair
    points: int = Field(1, ge=0)
    name: str | None = None
    side: int | None = None


class VictorySpec(_Model):
    kill_points: int = Field(1, ge=0)
    exit_points: int = Field(1, ge=0)


class RulesetSpec(_Model):
    name: str = "panzer_squadron"
    options: dict[str, Any] = Field(default_factory=dict)


class Scenario(_Model):
    """A validated scenario.  ``source`` is the file it came from (for messages)."""

    name: str = "unnamed"
    description: str = ""
    ruleset: RulesetSpec = Field(default_factory=RulesetSpec)
    map: MapSpec = Field(default_factory=MapSpec)
    turn_limit: int | None = Field(None, ge=1)
    objectives: list[ObjectiveSpec] = Field(default_factory=list)
    victory: VictorySpec = Field(default_factory=VictorySpec)
    sides: list[SideSpec] = Field(min_length=2, max_length=2)
    source: str = ""

    @field_validator("ruleset", mode="before")
    @classmethod
    def _rs(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    # --- derived ----------------------------------------------------------------------------------------------
    def rules(self) -> rules_base.Ruleset:
        return rules_base.get(self.ruleset.name)

    def options(self) -> Any:
        return self.rules().Options(**self.ruleset.options)

    def effective_turn_limit(self) -> int:
        return self.turn_limit or self.rules().default_turn_limit(self.options())

    def build_map(self) -> HexMap:
        terrain: dict[Hex, str] = {}
        for t in self.map.terrain:
            for h in t.cells():
                terrain[h] = t.tile
        cells = self.map.cells()
        key = (self.map.shape, self.map.width, self.map.height, self.map.radius)
        return HexMap(cells, {h: v for h, v in terrain.items() if h in set(cells)}, shape_key=key,
                      description=self.map.size_text())

    def digest(self) -> str:
        """A stable hash of the resolved scenario (without its source path)."""
        d = self.model_dump(mode="json", exclude={"source"})
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _fmt_validation(src: str, exc: ValidationError, prefix: str = "") -> list[str]:
    lines = []
    for e in exc.errors():
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith(("function-", "tuple[", "list["))))
        path = _loc(loc)
        if prefix:
            path = prefix + ("" if path.startswith("[") else ".") + path if path != "(top level)" else prefix
        got = e.get("input")
        got_txt = "" if isinstance(got, (dict, list, tuple)) or got is None else f" (got {got!r})"
        lines.append(f"{src}: {path}: {e['msg']}{got_txt}")
    return lines


def validate(data: Mapping[str, Any], src: str = "<scenario>") -> Scenario:
    """Validate a scenario mapping; raises :class:`ScenarioError` with every problem found."""
    if not isinstance(data, Mapping):
        raise ScenarioError([f"{src}: (top level): expected a mapping of scenario fields, got {type(data).__name__}"])
    try:
        sc = Scenario(**{k: v for k, v in data.items() if k != "source"}, source=src)
    except ValidationError as exc:
        raise ScenarioError(_fmt_validation(src, exc)) from None
    errors: list[str] = []
    try:
        rs = sc.rules()
    except rules_base.UnknownRuleset as exc:
        raise ScenarioError([f"{src}: ruleset.name: {exc}"]) from None
    try:
        opts = rs.Options(**sc.ruleset.options)
    except ValidationError as exc:
        errors += _fmt_validation(src, exc, "ruleset.options")
        opts = None
    cells = set(sc.map.cells())
    size = sc.map.size_text()
    names = set(rs.terrain_names(opts)) if opts is not None else None
    for i, t in enumerate(sc.map.terrain):
        if names is not None and t.tile not in names:
            errors.append(f"{src}: map.terrain[{i}].tile: unknown terrain {t.tile!r} for {rs.name}; "
                          f"expected one of {', '.join(sorted(names))}")
        for h in t.cells():
            if h not in cells and (t.hexes and tuple(h) in {tuple(x) for x in t.hexes}):
                errors.append(f"{src}: map.terrain[{i}].hexes: {list(h)} is off the map ({size})")
    for i, f in enumerate(sc.map.features):
        if "hex" not in f:
            errors.append(f"{src}: map.features[{i}].hex: field required")
            continue
        try:
            rs.HexExt(**{k: v for k, v in f.items() if k != "hex"})
        except ValidationError as exc:
            errors += _fmt_validation(src, exc, f"map.features[{i}]")
    for i, o in enumerate(sc.objectives):
        if Hex(*o.hex) not in cells:
            errors.append(f"{src}: objectives[{i}].hex: {list(o.hex)} is off the map ({size})")
    seen: dict[Hex, str] = {}
    for si, side in enumerate(sc.sides):
        for ti, t in enumerate(side.tanks):
            where = f"{src}: sides[{si}].tanks[{ti}]"
            try:
                rs.vehicle(t.vehicle)
            except KeyError as exc:
                errors.append(f"{where}.vehicle: {exc.args[0]}")
            h = Hex(*t.hex)
            if h not in cells:
                errors.append(f"{where}.hex: {list(t.hex)} is off the map ({size})")
            elif h in seen:
                errors.append(f"{where}.hex: {list(t.hex)} is already occupied by {seen[h]}")
            seen.setdefault(h, t.label or f"sides[{si}].tanks[{ti}]")
            try:
                rs.TankExt(**t.rules)
            except ValidationError as exc:
                errors += _fmt_validation(src, exc, f"sides[{si}].tanks[{ti}].rules")
    from agents.controllers import PolicyLoadError, load_policy

    for si, side in enumerate(sc.sides):
        specs = [(f"sides[{si}].policy", side.policy)] + [
            (f"sides[{si}].tanks[{ti}].policy", t.policy) for ti, t in enumerate(side.tanks) if t.policy]
        for where, p in specs:
            try:
                load_policy(p.name, p.params)
            except PolicyLoadError as exc:
                errors.append(f"{src}: {where}: {exc}")
            except Exception as exc:  # noqa: BLE001 - a plug-in's own constructor failed: report it with the rest
                errors.append(f"{src}: {where}: policy {p.name!r} failed to start: {type(exc).__name__}: {exc}")
    seen_labels: dict[str, str] = {}
    for si, side in enumerate(sc.sides):
        for ti, t in enumerate(side.tanks):
            if t.label is None:
                continue
            if t.label in seen_labels:
                errors.append(f"{src}: sides[{si}].tanks[{ti}].label: {t.label!r} is already used by "
                              f"{seen_labels[t.label]}; labels must be unique")
            seen_labels.setdefault(t.label, f"sides[{si}].tanks[{ti}]")
    if sc.sides[0].name == sc.sides[1].name:
        errors.append(f"{src}: sides[1].name: {sc.sides[1].name!r} is also the name of sides[0]; side names must "
                      f"differ")
    if sc.map.shape == "hexagon" and "radius" not in sc.map.model_fields_set:
        errors.append(f"{src}: map.radius: a hexagon map needs its radius (hexes from the centre to the edge)")
    elif sc.map.shape != "hexagon" and "radius" in sc.map.model_fields_set:
        errors.append(f"{src}: map.radius: only a hexagon map has a radius; a {sc.map.shape} has width and height")
    if errors:
        raise ScenarioError(errors)
    return sc


def bundled_dir() -> Any:
    """The bundled scenarios folder (a Traversable: works from a wheel or a clone)."""
    return resources.files("tanksim_scenarios")


def _read_text(p: Any, src: str) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ScenarioError([f"{src}: (file): not a UTF-8 text file; expected scenario YAML"]) from None


def parse_yaml(text: str, src: str) -> Any:
    """``yaml.safe_load(text)``; raises :class:`ScenarioError` ``src: line L, column C: not valid YAML: ...``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"
        raise ScenarioError([f"{src}: {where}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None


def find_scenario(name_or_path: str | Path) -> tuple[str, str]:
    """Resolve a path or a bundled scenario name to ``(source name, YAML text)``.

    Raises ``FileNotFoundError`` listing the bundled names when nothing matches."""
    p = Path(name_or_path)
    if p.is_dir():
        raise FileNotFoundError(f"{name_or_path}: is a folder, expected a scenario YAML file")
    if p.exists():
        return str(name_or_path), _read_text(p, str(name_or_path))
    stem = p.name if p.suffix in (".yaml", ".yml") else p.name + ".yaml"
    cand = bundled_dir().joinpath(stem)
    if cand.is_file():
        return f"scenarios/{stem}", cand.read_text(encoding="utf-8")
    known = sorted(x.name for x in bundled_dir().iterdir() if x.name.endswith(".yaml"))
    raise FileNotFoundError(f"{name_or_path}: no such file, and no bundled scenario of that name "
                            f"(bundled: {', '.join(known)})")


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
        parts = path.split(".")
        node: Any = out
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                idx = _list_index(node, part)
                if idx is None:
                    raise ScenarioError([f"{src}: {path}: no element {part!r} in {'.'.join(parts[:i]) or 'root'}"])
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
                        raise ScenarioError([f"{src}: {path}: unknown field {part!r}"])
                else:
                    if part == "policy" and isinstance(node[part], str):
                        node[part] = {"name": node[part]}
                    if part == "ruleset" and isinstance(node[part], str):
                        node[part] = {"name": node[part]}
                    node = node[part]
            else:
                raise ScenarioError([f"{src}: {path}: {'.'.join(parts[:i])} is not a mapping or list"])
    return out


def _list_index(node: list, part: str) -> int | None:
    if part.lstrip("-").isdigit():
        i = int(part)
        return i if -len(node) <= i < len(node) else None
    for i, item in enumerate(node):
        if isinstance(item, dict) and part in (item.get("name"), item.get("role"), item.get("label")):
            return i
    return None


def side_index(sc: Scenario, key: str) -> int:
    """A side by name or by position ``1`` / ``2``; raises ``KeyError`` naming the sides."""
    if key.isdigit() and 1 <= int(key) <= len(sc.sides):
        return int(key) - 1
    for i, s in enumerate(sc.sides):
        if s.name == key or s.role == key:
            return i
    raise KeyError(f"no side {key!r}; sides are {', '.join(s.name for s in sc.sides)} (or 1, 2)")
