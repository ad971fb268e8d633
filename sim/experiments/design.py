"""Experiment files: which battles a batch plays.  The pydantic schema, YAML loading, the design and run identity.

An experiment names a base **scenario** (a path relative to the experiment file, or a bundled name), fixed
**overrides** and **factors** by dotted path (:func:`sim.scenario.apply_overrides`: any scenario field or policy
parameter, sides addressed by name, role or index, e.g. ``sides.attacker.policy.params.min_odds`` or
``sides.Soviets.policy.name``), each with ``levels`` or a ``range``; set-up randomisation (``setup: random``: every
tank of a side that has a **deployment** zone is placed by the run's seed on a free, passable hex of its zone), which
may itself be a factor (``path: setup, levels: [fixed, random]``); a **design** (``full_factorial``,
``latin_hypercube`` or ``nolh`` with ``n`` points, or ``sobol`` with ``n`` base samples:
:mod:`sim.experiments.samplers`);
**replications** per point and a root **seed**; optional extra data columns, ``collect: {model: {NAME: SPEC},
agents: {NAME: SPEC}}`` (dotted attributes or plug-in functions, :mod:`agents.collect`; not part of the identity)::

    name: doctrine_experiment
    scenario: default                     # bundled name, or a path relative to this file
    overrides: {turn_limit: 12}
    factors:
      - {name: attacker, path: sides.attacker.policy.name, levels: [advance, hold]}
      - {path: sides.defender.policy.params.min_odds, range: [0.0, 0.3], steps: 3}
    design: full_factorial                # or {kind: latin_hypercube, n: 20}
    replications: 50
    seed: 1

Instead of ``scenario`` an experiment may name a **generator** (``generator: {kind, params}``,
:mod:`sim.generate`): every design point plays the scenario its generator draws, and factors may vary
``generator.kind`` or ``generator.params.NAME`` (e.g. ``generator.params.seed`` over a range, to sample maps).  A
point's ``params`` then hold the resolved generator under ``generator`` (:func:`generator_of`) and
:func:`point_data` builds its scenario; the base scenario (for path checks and the manifest) is the file's own
generator's.

Identity (what makes results independent of worker count, executor and design order): a design point's key hashes
the base scenario (and deployment zones, when a point places tanks at random) with the point's resolved
parameters; a run's seed hashes the point key, the replication number and the root seed (or only the replication
and root seed with ``common_random_numbers: true``), and its key hashes the point key, replication and seed.  So
adding a level later leaves every stored run's key unchanged.

Errors name the file, the field path and the expectation, e.g.
``exp.yaml: factors[0].path: sides.attacker.policy.params.flank_bias: unknown parameter 'flank_bias' for policy
advance; parameters: min_odds, threat_candidates, stop_at``.  They are raised as :class:`sim.scenario.ScenarioError`.
"""
from __future__ import annotations

import hashlib
import json
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agents.collect import CollectSpec
from sim import generate as gen
from sim import scenario as scn
from sim.messages import did_you_mean, top_level_kind, unknown_policy_message
from sim.scenario import ScenarioError

#: Parameter name of the set-up factor (not a scenario path).
SETUP = "setup"
SETUP_LEVELS = ("fixed", "random")
#: Parameter name of a point's generator (``{kind, params}``, resolved: the file's ``generator`` with the point's
#: ``generator.*`` factor values merged in); factor paths ``generator.kind`` and ``generator.params.NAME``.
GENERATOR = "generator"
#: Limits of an experiment file: design points, levels per factor, factors (and overrides), runs.
MAX_POINTS = 10_000
MAX_LEVELS = 1_000
MAX_FACTORS = 50
MAX_RUNS = 1_000_000
Number = Annotated[float, Field(allow_inf_nan=False, ge=-1e12, le=1e12)]


# --- schema ------------------------------------------------------------------------------------------------------

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ZoneSpec(_Model):
    """A deployment zone: a hex list (``hexes``), a disc (``center`` + ``radius``) and/or ``rect`` (axial ranges
    ``{q: [q0, q1], r: [r0, r1]}``, inclusive).  The union of the three, clipped to the hexes any legal board may
    hold (:data:`sim.scenario.UNIVERSE`) before any hex is listed."""

    hexes: list[scn.HexPair] = Field(default_factory=list, max_length=scn.MAX_HEXES)
    center: scn.HexPair | None = None
    radius: int = Field(0, ge=0, le=2 * scn.MAX_COORD)
    rect: dict[Literal["q", "r"], tuple[scn.Coord, scn.Coord]] | None = None

    _rect = field_validator("rect")(scn.rect_ranges)

    def cells(self) -> list[tuple[int, int]]:
        """The zone's hexes as ``(q, r)`` pairs, sorted, without duplicates (may include hexes off a given map)."""
        t = scn.TerrainSpec(tile="open", hexes=self.hexes, center=self.center, radius=self.radius, rect=self.rect)
        return sorted({(h.q, h.r) for h in t.cells(scn.UNIVERSE)})

    @model_validator(mode="after")
    def _nonempty(self) -> ZoneSpec:
        if not self.hexes and self.center is None and self.rect is None:
            raise ValueError("a zone needs hexes, center (+ radius) or rect")
        return self


class FactorSpec(_Model):
    """One factor: a dotted ``path`` (or ``setup``) with either ``levels`` (a non-empty list of values) or a
    ``range`` ``[low, high]`` (``steps`` evenly spaced values for a full factorial; sampled continuously by a Latin
    hypercube).  ``integer`` rounds range values.  ``name`` is the factor's column in results (default: the path
    without a leading ``sides.``)."""

    path: str = Field(min_length=1, max_length=scn.MAX_NAME)
    name: scn.Name | None = None
    levels: list[Any] | None = Field(None, max_length=MAX_LEVELS)
    range: tuple[Number, Number] | None = None
    steps: int | None = Field(None, ge=2, le=MAX_LEVELS)
    integer: bool = False

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[Any] | None) -> list[Any] | None:
        if v is not None and len(v) == 0:
            raise ValueError("expected at least one level")
        if v is not None:
            seen: set[str] = set()
            for x in v:
                c = _canon(x)
                if c in seen:
                    raise ValueError(f"level {scn.short(x)} is repeated")
                seen.add(c)
        return v

    @model_validator(mode="after")
    def _one_of(self) -> FactorSpec:
        if (self.levels is None) == (self.range is None):
            raise ValueError("give exactly one of levels (a list of values) or range ([low, high])")
        if self.range is not None and not self.range[0] <= self.range[1]:
            raise ValueError(f"range {list(self.range)}: expected low <= high")
        if self.steps is not None and self.range is None:
            raise ValueError("steps applies to a range only")
        return self

    def label(self) -> str:
        return self.name or (self.path.removeprefix("sides."))


class DesignSpec(_Model):
    """``kind``: ``full_factorial`` (every combination of levels; a range needs ``steps``), ``latin_hypercube``
    (``n`` points, scipy.stats.qmc.LatinHypercube seeded by the root seed), ``nolh`` (a nearly orthogonal Latin
    hypercube of ``n`` points) or ``sobol`` (Saltelli's sample of ``n`` base points, a power of two, for Sobol'
    indices; ``second_order`` (default true) adds the rows for second-order indices).  See
    :mod:`sim.experiments.samplers`."""

    kind: Literal["full_factorial", "latin_hypercube", "nolh", "sobol"] = "full_factorial"
    n: int | None = Field(default=None, ge=1, le=MAX_POINTS)
    second_order: bool | None = None

    @model_validator(mode="after")
    def _sobol(self) -> DesignSpec:
        if self.kind == "sobol" and self.n is not None and self.n & (self.n - 1):
            raise ValueError(f"n: a sobol design needs a power of two base samples (2, 4, 8, ...), got {self.n}")
        if self.second_order is not None and self.kind != "sobol":
            raise ValueError("second_order applies to a sobol design only")
        return self


class ExperimentSpec(_Model):
    """A validated experiment file (see the module docstring).  Limits: ``max_runs`` (points x replications,
    default 100 000, at most :data:`MAX_RUNS`); ``watchdog_s`` (seconds one battle may take before it becomes a
    ``timeout`` row, at most a day); ``chunk_s`` (target seconds of work per task sent to a worker).  A design has
    at most :data:`MAX_POINTS` points, a factor :data:`MAX_LEVELS` levels, a file :data:`MAX_FACTORS` factors."""

    name: scn.Name = "experiment"
    description: scn.Text = ""
    scenario: str | None = Field(None, min_length=1, max_length=4096)
    generator: gen.GeneratorSpec | None = None
    overrides: dict[str, Any] = Field(default_factory=dict, max_length=MAX_FACTORS)
    setup: Literal["fixed", "random"] = "fixed"
    deployment: dict[str, ZoneSpec] = Field(default_factory=dict, max_length=2)
    factors: list[FactorSpec] = Field(default_factory=list, max_length=MAX_FACTORS)
    design: DesignSpec = Field(default_factory=DesignSpec)
    replications: int = Field(1, ge=1, le=MAX_RUNS)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    common_random_numbers: bool = False
    max_runs: int = Field(100_000, ge=1, le=MAX_RUNS)
    watchdog_s: scn.Seconds = 300.0
    chunk_s: float = Field(3.0, gt=0, le=3600, allow_inf_nan=False)
    collect: CollectSpec = Field(default_factory=CollectSpec)

    @field_validator("design", mode="before")
    @classmethod
    def _design(cls, v: Any) -> Any:
        return {"kind": v} if isinstance(v, str) else v

    @field_validator("scenario", mode="before")
    @classmethod
    def _scenario(cls, v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    @model_validator(mode="after")
    def _base(self) -> ExperimentSpec:
        if (self.scenario is None) == (self.generator is None):
            raise ValueError("give exactly one of scenario (a file or bundled name) or generator ({kind, params})")
        return self


# --- the resolved experiment ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Factor:
    """A resolved factor: column ``name``, canonical ``path`` (list elements by index), its ``values`` (full
    factorial levels) and, for a range, ``low``/``high``/``integer``."""

    name: str
    path: str
    values: tuple[Any, ...]
    is_range: bool = False
    low: float = 0.0
    high: float = 0.0
    integer: bool = False


@dataclass(frozen=True)
class DesignPoint:
    """One design point: ``index`` in design order, ``key`` (12 hex digits), ``params`` (every override of the
    base scenario, dotted path -> value, plus ``setup``) and ``values`` (factor name -> value)."""

    index: int
    key: str
    params: dict[str, Any]
    values: dict[str, Any]

    @property
    def params_json(self) -> str:
        return _canon(self.params)


@dataclass(frozen=True)
class Run:
    """One battle of the design: ``key`` (16 hex digits, the battle id), ``point`` key, ``rep`` and ``seed``."""

    key: str
    point: str
    rep: int
    seed: int


@dataclass
class Experiment:
    """An experiment ready to run.

    ``spec``: the file's fields; ``source``: the file (for messages); ``base_src`` / ``base_data``: the base
    scenario's name and raw mapping; ``base_digest``: its validated digest; ``base_key``: the hash every point key
    builds on (scenario + deployment zones when used); ``zones``: side index -> zone hexes; ``factors``;
    ``points`` in design order; ``n_runs`` = points x replications; ``design_rows``: the point index of every row
    of the design in its own order (a row that repeats an earlier one is played once); ``design_info``: what
    :func:`sim.experiments.samplers.build` says about the design (Sobol' problem, NOLH correlation).
    """

    spec: ExperimentSpec
    source: str
    base_src: str
    base_data: dict[str, Any]
    base_digest: str
    base_key: str
    zones: dict[int, list[tuple[int, int]]]
    factors: list[Factor]
    points: list[DesignPoint]
    side_names: list[str] = field(default_factory=list)
    design_rows: list[int] = field(default_factory=list)
    design_info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return len(self.points) * self.spec.replications

    def runs(self) -> list[Run]:
        """Every run, ordered replication-major (all points of replication 0, then 1, ...), so a partial batch is
        balanced across the design."""
        return [run_identity(p.key, rep, self.spec.seed, self.spec.common_random_numbers)
                for rep in range(self.spec.replications) for p in self.points]

    def identity(self) -> str:
        """Hash of everything that decides the runs (not the name, description or executor limits); a results
        folder refuses a different one unless asked to start anew."""
        return experiment_identity(self.spec.model_dump(mode="json"), self.base_key)

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for the manifest: the file's fields, the base scenario and the design points."""
        return {"experiment": self.spec.model_dump(mode="json"), "source": self.source,
                "scenario": {"source": self.base_src, "digest": self.base_digest, "data": self.base_data},
                "base_key": self.base_key, "zones": {str(k): [list(h) for h in v] for k, v in self.zones.items()},
                "factors": [f.__dict__ | {"values": list(f.values)} for f in self.factors],
                "points": [{"index": p.index, "key": p.key, "params": p.params, "values": p.values}
                           for p in self.points],
                "replications": self.spec.replications, "seed": self.spec.seed, "n_runs": self.n_runs,
                "side_names": self.side_names, "design_info": self.design_info,
                **({"design_rows": self.design_rows} if self.design_info.get("kind") == "sobol" else {})}


# --- hashing ---------------------------------------------------------------------------------------------------------

def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _canon(x: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): the input of every hash."""
    return json.dumps(_plain(x), sort_keys=True, separators=(",", ":"), default=str)


def _hash(x: Any, n: int) -> str:
    return hashlib.sha256(_canon(x).encode() if not isinstance(x, str) else x.encode()).hexdigest()[:n]


#: Experiment fields that do not decide the runs (left out of :func:`experiment_identity`).
IDENTITY_EXCLUDED = frozenset({"name", "description", "max_runs", "watchdog_s", "chunk_s", "scenario", "collect"})


def experiment_identity(fields: Mapping[str, Any], base_key: str) -> str:
    """The 16-hex-digit hash of an experiment: its fields as dumped to JSON (``ExperimentSpec.model_dump(mode=
    "json")``, as a manifest stores them) without :data:`IDENTITY_EXCLUDED`, plus the base key."""
    d = {k: v for k, v in fields.items() if k not in IDENTITY_EXCLUDED}
    d["base"] = base_key
    design = d.get("design")
    if isinstance(design, dict) and design.get("second_order") is None:  # added later: absent keeps older hashes
        d["design"] = {k: v for k, v in design.items() if k != "second_order"}
    return _hash(d, 16)


def base_key_of(scenario_digest: str, zones: Mapping[str, Any] | None) -> str:
    """The 16-hex-digit key of a base scenario: its validated digest plus the deployment zones (``None`` or
    empty when the design places no tank at random)."""
    return _hash({"scenario": scenario_digest, "zones": dict(sorted((zones or {}).items()))}, 16)


def point_key(base_key: str, params: Mapping[str, Any]) -> str:
    """The 12-hex-digit key of a design point: base scenario key + resolved parameters."""
    return _hash(f"point|{base_key}|{_canon(params)}", 12)


def run_identity(point: str, rep: int, root_seed: int, common_random_numbers: bool = False) -> Run:
    """The :class:`Run` for replication ``rep`` of design point ``point``.  Its seed is the first 63 bits of a
    SHA-256 of (point, rep, root seed), or of (rep, root seed) with common random numbers; its key hashes point,
    rep and seed.  Independent of the point's index, the worker count and the executor."""
    material = f"seed|{rep}|{root_seed}" if common_random_numbers else f"seed|{point}|{rep}|{root_seed}"
    seed = int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big") >> 1
    return Run(run_key_of(point, rep, seed), point, rep, seed)


def run_key_of(point: str, rep: int, seed: int) -> str:
    """A run's key (16 hex digits, the battle id): a hash of its point key, replication and seed."""
    return _hash(f"run|{point}|{rep}|{seed}", 16)


# --- loading ---------------------------------------------------------------------------------------------------------

def load_experiment(path: str | Path) -> Experiment:
    """Load, validate and resolve an experiment file.

    Raises :class:`ScenarioError` (``file: field path: expectation``) for any problem: schema, unknown base
    scenario, unknown factor path or policy parameter, empty levels, a design larger than ``max_runs``, a zone too
    small for its side; ``FileNotFoundError`` if the file is missing."""
    src, data, base_dir = read_yaml_file(path, "experiment")
    wrong_kind(data, src, "experiment", ScenarioError)
    return experiment_from_mapping(data, src, base_dir)


def read_yaml_file(path: str | Path, kind: str) -> tuple[str, Any, Path]:
    """Read a YAML file given as a path or as the name of a bundled file (``doctrine_experiment``,
    ``tournament.yaml``: the packaged scenarios folder, as ``tanksim run`` resolves names).

    Returns ``(source name, parsed data, folder for relative paths)``.  Raises ``FileNotFoundError`` listing the
    bundled files, :class:`ScenarioError` for a binary (non-UTF-8) file or invalid YAML."""
    p = Path(path)
    if scn.path_kind(p) == "dir":
        raise FileNotFoundError(f"{path}: is a folder, expected {'an' if kind[0] in 'aeiou' else 'a'} {kind} YAML "
                                f"file")
    if scn.path_kind(p) in ("file", "other"):
        src, base_dir = str(path), p.parent
        return src, scn.parse_yaml(scn.read_text(p, src), src), base_dir
    else:
        stem = p.name if p.suffix in (".yaml", ".yml") else p.name + ".yaml"
        cand = scn.bundled_dir().joinpath(stem)
        if p.parent != Path(".") or scn.path_kind(Path(str(cand))) != "file":
            known = sorted(x.name for x in scn.bundled_dir().iterdir() if x.name.endswith(".yaml"))
            hint = did_you_mean(p.stem, [k.removesuffix(".yaml") for k in known]) if p.parent == Path(".") else ""
            raise FileNotFoundError(f"{path}: no such {kind} file, and no bundled file of that name{hint} "
                                    f"(bundled: {', '.join(known)})")
        src, raw = f"scenarios/{stem}", cand.read_bytes()
        base_dir = Path(str(scn.bundled_dir()))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError([f"{src}: (file): not a UTF-8 text file; expected YAML text"]) from None
    return src, scn.parse_yaml(text, src), base_dir


def wrong_kind(data: Any, src: str, kind: str, error: type[Exception]) -> None:
    """Raise ``error([message])`` when ``data`` is plainly another kind of tanksim file than ``kind``
    (``experiment`` or ``tournament``): a scenario (it has ``sides``), an experiment or a tournament."""
    if not isinstance(data, Mapping):
        return
    is_scenario = "sides" in data and "entrants" not in data and "factors" not in data
    is_tournament = "entrants" in data
    is_experiment = "factors" in data or ("scenario" in data or "generator" in data) and "replications" in data
    msg = None
    if is_scenario:
        msg = f"this is a scenario file (it has sides); play it with: tanksim run {src}"
        msg += (f" (or name it as the 'scenario:' of an {kind} file)" if kind == "experiment" else
                " (or list it under the 'scenarios:' of a tournament file)")
    elif kind == "experiment" and is_tournament:
        msg = f"this is a tournament file (it has entrants); use: tanksim tournament {src}"
    elif kind == "tournament" and is_experiment:
        msg = f"this is an experiment file (it has factors); use: tanksim batch {src}"
    if msg:
        raise error([f"{src}: {msg}"])


def experiment_from_mapping(data: Any, src: str = "<experiment>", base_dir: str | Path = ".") -> Experiment:
    """Validate and resolve an experiment given as a mapping; ``scenario`` is looked up relative to ``base_dir``
    first, then among the bundled scenarios.  Raises :class:`ScenarioError` like :func:`load_experiment`."""
    if not isinstance(data, Mapping):
        raise ScenarioError([f"{src}: (top level): expected a mapping of experiment fields, "
                             f"got {top_level_kind(data)}"])
    from agents.plugins import source_budget

    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(scn._fmt_validation(src, exc, model=ExperimentSpec)) from None
    with source_budget():
        return resolve(spec, src, Path(base_dir))


def _shown_name(name: str | Path, found: str) -> str:
    """How output and messages name an experiment's base scenario (decided here): by the path the user gave (the
    experiment file's path as typed, joined with its ``scenario`` field) when that is relative, else relative to
    the current directory when the file lies under it; a bundled file otherwise as ``NAME.yaml (bundled)``, never
    by this machine's absolute path to the package nor by the repository's ``scenarios/`` folder when the user
    typed neither.  ``name``: what :func:`sim.scenario.find_scenario` was asked for; ``found``: the source name
    it returned."""
    try:
        bundled = Path(str(scn.bundled_dir())).resolve()
        if isinstance(name, Path):
            if not name.is_absolute():
                return str(name)
            full = name.resolve()
            if full.is_relative_to(Path.cwd().resolve()):
                return str(full.relative_to(Path.cwd().resolve()))
            if full.parent == bundled:
                return f"{name.name} (bundled)"
            return str(name)
        if scn.path_kind(Path(name)) == "missing":  # not a file: found among the bundled scenarios
            return f"{Path(found).name} (bundled)"
    except OSError:
        pass
    return found


def _find_base(spec: ExperimentSpec, src: str, base_dir: Path) -> tuple[str, dict[str, Any]]:
    if spec.generator is not None:
        try:
            data = gen.generate(spec.generator.kind, gen.check_params(spec.generator.kind, spec.generator.params,
                                                                      f"{src}: generator"))
        except gen.GeneratorError as exc:
            raise ScenarioError(exc.errors) from None
        return f"{src}: generator {spec.generator.kind}", data
    assert spec.scenario is not None
    cand = base_dir / spec.scenario
    name: str | Path = cand if scn.path_kind(cand) == "file" else spec.scenario
    try:
        bsrc, text = scn.find_scenario(name)
        bsrc = _shown_name(name, bsrc)
    except FileNotFoundError as exc:
        raise ScenarioError([f"{src}: scenario: {scn.clip(str(exc), 500)} (paths are relative to the experiment "
                             f"file)"]) from None
    except ScenarioError as exc:
        raise ScenarioError([f"{src}: scenario: {e}" for e in exc.errors]) from None
    except OSError as exc:
        raise ScenarioError([f"{src}: scenario: cannot read {scn.short(spec.scenario)}: "
                             f"{exc.strerror or type(exc).__name__}"]) from None
    try:
        raw = scn.parse_yaml(text, bsrc)
    except ScenarioError as exc:
        raise ScenarioError([f"{src}: scenario: {e}" for e in exc.errors]) from None
    if not isinstance(raw, dict):
        raise ScenarioError([f"{src}: scenario: {bsrc}: expected a mapping of scenario fields"])
    return bsrc, raw


def resolve(spec: ExperimentSpec, src: str, base_dir: Path) -> Experiment:
    """Resolve a validated :class:`ExperimentSpec`: base scenario, factor paths, zones and the design points."""
    bsrc, raw = _find_base(spec, src, base_dir)
    try:
        base = scn.validate(raw, bsrc)
    except ScenarioError as exc:
        raise ScenarioError([f"{src}: scenario: {e}" for e in exc.errors]) from None
    errors: list[str] = []
    factors_spec = spec.factors
    # policy names each owner (side / tank path prefix) may take, for checking parameter paths
    canon_over: dict[str, Any] = {}
    for path, value in spec.overrides.items():
        if len(path) > scn.MAX_NAME:
            errors.append(f"{src}: overrides: the path {scn.short(path)} is longer than {scn.MAX_NAME} characters")
            continue
        if path == SETUP:
            errors.append(f"{src}: overrides.{path}: use the top-level 'setup' field or a setup factor")
            continue
        if path == GENERATOR or path.startswith(GENERATOR + "."):
            errors.append(f"{src}: overrides.{path}: put fixed generator parameters in generator.params")
            continue
        c = _check_path(raw, path, f"{src}: overrides.{path}", errors)
        if c is not None:
            canon_over[c] = value
    canon_paths: list[str | None] = []
    for i, f in enumerate(factors_spec):
        if f.path == SETUP:
            canon_paths.append(SETUP)
            bad = [x for x in (f.levels or []) if not isinstance(x, str) or x not in SETUP_LEVELS]
            if f.range is not None or bad:
                errors.append(f"{src}: factors[{i}].levels: setup levels must be among {', '.join(SETUP_LEVELS)}"
                              + (f" (got {scn.short(bad[0])})" if bad else ""))
            continue
        if f.path == GENERATOR or f.path.startswith(GENERATOR + "."):
            canon_paths.append(_check_generator_path(spec, f.path, f"{src}: factors[{i}].path", errors))
            continue
        canon_paths.append(_check_path(raw, f.path, f"{src}: factors[{i}].path", errors))
    seen: dict[str, int] = {}
    for i, c in enumerate(canon_paths):
        if c is None:
            continue
        if c in seen:
            errors.append(f"{src}: factors[{i}].path: {factors_spec[i].path} is the same field as "
                          f"factors[{seen[c]}].path")
        if c in canon_over:
            errors.append(f"{src}: factors[{i}].path: {factors_spec[i].path} is also set in overrides")
        seen.setdefault(c, i)
    names = [f.label() for f in factors_spec]
    for i, n in enumerate(names):
        if names.count(n) > 1:
            errors.append(f"{src}: factors[{i}].name: {scn.short(n)} is used by several factors; give each a "
                          f"distinct name")
        if n in RESERVED_COLUMNS:
            errors.append(f"{src}: factors[{i}].name: {scn.short(n)} is a result column; choose another name")
    _check_policies(raw, canon_over, factors_spec, canon_paths, src, errors)
    # design size before enumerating anything
    if spec.design.kind == "full_factorial":
        counts = []
        for i, f in enumerate(factors_spec):
            if f.range is not None and f.steps is None:
                errors.append(f"{src}: factors[{i}].steps: a range in a full_factorial design needs steps "
                              f"(the number of evenly spaced levels), or use design latin_hypercube")
            counts.append(len(f.levels) if f.levels is not None else (f.steps or 1))
        n_points = math.prod(counts)
        size_txt = " x ".join(str(c) for c in counts) or "1"
    else:
        kind = spec.design.kind
        if spec.design.n is None:
            errors.append(f"{src}: design.n: a {kind} design needs n (the number of "
                          + ("base samples, a power of two)" if kind == "sobol" else "points)"))
        if not factors_spec:
            errors.append(f"{src}: factors: a {kind} design needs at least one factor")
        n_points = spec.design.n or 0
        size_txt = str(n_points)
        if kind == "sobol":
            from sim.experiments.samplers import sobol_rows

            n_points = sobol_rows(n_points, len(factors_spec), spec.design.second_order is not False)
            size_txt = f"{n_points} (sobol: n = {spec.design.n} base samples)"
    n_runs = n_points * spec.replications
    if n_points > MAX_POINTS:
        errors.append(f"{src}: design: {size_txt} = {n_points:,} design points; at most {MAX_POINTS:,} (each point's "
                      f"scenario is checked before anything runs); use fewer levels or a latin_hypercube")
    elif n_runs > spec.max_runs:
        errors.append(f"{src}: design: {size_txt} points x {spec.replications} replications = {n_runs} runs, more "
                      f"than max_runs ({spec.max_runs}); use fewer levels or replications, or raise max_runs")
    uses_random = spec.setup == "random" or any(f.path == SETUP and "random" in (f.levels or [])
                                                for f in factors_spec)
    zones: dict[int, list[tuple[int, int]]] = {}
    for key, z in spec.deployment.items():
        si = _side_of(raw, key)
        if si is None:
            known = [str(x.get(k)) for x in raw.get("sides", []) if isinstance(x, dict) for k in ("name", "role")
                     if x.get(k) not in (None, "none")]
            errors.append(f"{src}: deployment.{scn.clip(key, 40)}: no side {scn.short(key)}"
                          f"{did_you_mean(key, known)}; sides are "
                          f"{', '.join(_side_names(raw))} (by name, role or index 0, 1)")
        elif si in zones:
            errors.append(f"{src}: deployment.{key}: side {si} already has a zone")
        else:
            zones[si] = z.cells()
    if uses_random and not zones:
        errors.append(f"{src}: deployment: random set-up needs a deployment zone for at least one side")
    if errors:
        raise ScenarioError(errors)
    if uses_random:
        try:
            data0 = scn.apply_overrides(raw, canon_over, bsrc)
            cands = placement_candidates(scn.validate(data0, bsrc), zones)
        except ScenarioError as exc:
            raise ScenarioError([f"{src}: overrides: {e}" for e in exc.errors]) from None
        for si, cells in cands.items():
            need = len(raw["sides"][si].get("tanks", []))
            if len(cells) < need:
                key = next(k for k in spec.deployment if _side_of(raw, k) == si)
                errors.append(f"{src}: deployment.{key}: {len(cells)} free passable hexes on the map for "
                              f"{need} tanks; enlarge the zone")
        if errors:
            raise ScenarioError(errors)
    base_key = base_key_of(base.digest(), {str(k): v for k, v in sorted(zones.items())} if uses_random else None)
    factors = []
    for f, c in zip(factors_spec, canon_paths):
        assert c is not None
        if f.levels is not None:
            vals = tuple(f.levels)
        elif f.steps is not None and f.range is not None:  # steps come with a range (FactorSpec checks)
            vals = tuple(_range_value(x, f.integer) for x in np.linspace(f.range[0], f.range[1], f.steps))
            vals = tuple(dict.fromkeys(vals))
        else:
            vals = ()
        factors.append(Factor(f.label(), c, vals, f.range is not None, *(f.range or (0.0, 0.0)), f.integer))
    design = _design(spec, factors)
    points: list[DesignPoint] = []
    keys: dict[str, int] = {}
    row_points: list[int] = []
    for values in design.rows:
        params = dict(canon_over)
        if spec.setup == "random" or uses_random:
            params[SETUP] = spec.setup
        for fac in factors:
            if not fac.path.startswith(GENERATOR + "."):
                params[fac.path] = values[fac.name]
        if spec.generator is not None:
            params[GENERATOR] = generator_of(spec.generator, {f.path: values[f.name] for f in factors})
        k = point_key(base_key, params)
        if k not in keys:  # a sampled design may repeat a combination of discrete levels: played once
            keys[k] = len(points)
            points.append(DesignPoint(len(points), k, params, dict(values)))
        row_points.append(keys[k])
    _check_points(raw, bsrc, src, points)
    return Experiment(spec, src, bsrc, raw, base.digest(), base_key, zones, factors, points,
                      [s.name for s in base.sides], row_points, design.info)


def _check_generator_path(spec: ExperimentSpec, path: str, where: str, errors: list[str]) -> str | None:
    """A factor path into the experiment's generator: ``generator.kind`` or ``generator.params.NAME`` (a field of
    :class:`sim.generate.GeneratorParams`); ``None`` after appending an error."""
    fields = sorted(gen.GeneratorParams.model_fields)
    if spec.generator is None:
        errors.append(f"{where}: {path}: this experiment has no generator (it names a scenario)")
        return None
    if path == f"{GENERATOR}.kind":
        return path
    name = path.removeprefix(f"{GENERATOR}.params.")
    if not path.startswith(f"{GENERATOR}.params.") or name not in fields:
        errors.append(f"{where}: {path}: expected generator.kind or generator.params.NAME with NAME one of "
                      f"{', '.join(fields)}")
        return None
    return path


def generator_of(base: gen.GeneratorSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """A design point's generator as plain values, ``{"kind": ..., "params": {...}}``: the experiment's
    ``generator`` with the point's ``generator.kind`` / ``generator.params.NAME`` factor ``values`` merged in
    (parameters left at their defaults are omitted, so adding a default later keeps point keys)."""
    params = base.params.model_dump(exclude_none=True, exclude_defaults=True)
    kind = base.kind
    for path, v in values.items():
        if path == f"{GENERATOR}.kind":
            kind = v
        elif path.startswith(f"{GENERATOR}.params."):
            params[path.removeprefix(f"{GENERATOR}.params.")] = v
    return {"kind": kind, "params": dict(sorted(params.items()))}


def point_data(base: Mapping[str, Any], params: Mapping[str, Any], src: str) -> dict[str, Any]:
    """The scenario mapping of a design point: the base scenario, or the point's generated one when ``params``
    hold a ``generator`` (:func:`sim.generate.generate`), with the point's other overrides applied (``setup``
    is not an override and is ignored here).  Raises :class:`ScenarioError` (a generator's parameter problems
    as ``src: generator.params.NAME: ...`` lines)."""
    over = {k: v for k, v in params.items() if k not in (SETUP, GENERATOR)}
    g = params.get(GENERATOR)
    if g is not None:
        try:
            base = gen.generate(g["kind"], gen.check_params(g["kind"], g["params"], f"{src}: generator"))
        except gen.GeneratorError as exc:
            raise ScenarioError(exc.errors) from None
    return scn.apply_overrides(base, over, src)


def _policy_owner(path: str) -> tuple[str, str] | None:
    """``("sides.0", "min_odds")`` for ``sides.0.policy.params.min_odds`` (``sides.0.tanks.1`` for a tank's
    policy); ``None`` for any other path."""
    owner, sep, rest = path.partition(".policy.params.")
    return (owner, rest) if sep and rest else None


#: Values of the base scenario's terrain and features that design-point checks may walk in all (a budget that
#: keeps a big board times thousands of board-changing points from taking minutes).
MAX_CHECK_VALUES = 20_000_000


def _count_values(x: Any) -> int:
    n, todo = 0, [x]
    while todo:
        v = todo.pop()
        n += 1
        if isinstance(v, Mapping):
            todo.extend(v.values())
        elif isinstance(v, list | tuple):
            todo.extend(v)
    return n


def _is_board(path: str) -> bool:
    """Paths whose change can change what the terrain and features checks find (the board, the rule set)."""
    return path.split(".", 1)[0] in ("map", "ruleset")


def _light(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without its terrain and feature lists (shallow): what the checks of everything else need."""
    out = dict(data)
    if isinstance(out.get("map"), Mapping):
        out["map"] = {k: v for k, v in out["map"].items() if k not in ("terrain", "features")}
    return out


class _PointChecker:
    """Checks design points' scenarios with caching, so that the work grows with what the points change.

    A point's overrides split into board paths (``map.*``, ``ruleset.*``: checked once per distinct combination
    with the whole scenario), plain policy parameters (checked per owner with :func:`check_policy`) and the rest
    (checked once per distinct combination on the scenario without its terrain and feature lists, which those
    paths cannot affect)."""

    def __init__(self, raw: Mapping[str, Any], bsrc: str):
        self.raw, self.bsrc = raw, bsrc
        self.boards: dict[str, tuple[dict[str, Any] | None, list[str]]] = {}
        self.rests: dict[str, tuple[Any, list[str]]] = {}
        self.policies: dict[str, list[str]] = {}

    def _validate(self, data: Mapping[str, Any]) -> tuple[Any, list[str]]:
        try:
            return scn.validate(data, self.bsrc), []
        except ScenarioError as exc:
            return None, [e.removeprefix(f"{self.bsrc}: ") for e in exc.errors]

    def problems(self, over: Mapping[str, Any]) -> list[str]:
        """The problems of one design point (lines without the file name)."""
        from agents.controllers import PolicyLoadError, check_policy

        board = {k: v for k, v in over.items() if _is_board(k)}
        owned: dict[str, tuple[str, str]] = {}  # a plain policy parameter's path -> (owner, parameter)
        for k in over:
            po = _policy_owner(k)
            if k not in board and po is not None and "." not in po[1]:
                owned[k] = po
        params = {k: over[k] for k in owned}
        rest = {k: v for k, v in over.items() if k not in board and k not in params}
        # an owner whose policy itself changes in this point is checked whole, with its parameters
        moved = {k for k in params if any(r == owned[k][0] or r.startswith(owned[k][0] + ".policy")
                                          or owned[k][0].startswith(r + ".") for r in rest)}
        for k in moved:
            rest[k] = params.pop(k)
        bk = _canon(board)
        if bk not in self.boards:
            try:
                data = scn.apply_overrides(self.raw, board, self.bsrc)
            except ScenarioError as exc:
                self.boards[bk] = (None, [e.removeprefix(f"{self.bsrc}: ") for e in exc.errors])
            else:
                self.boards[bk] = (_light(data), self._validate(data)[1])
        light, out = self.boards[bk]
        out = list(out)
        if light is None:
            return out
        rk = _canon([board, rest])
        if rk not in self.rests:
            try:
                self.rests[rk] = self._validate(scn.apply_overrides(light, rest, self.bsrc))
            except ScenarioError as exc:
                self.rests[rk] = (None, [e.removeprefix(f"{self.bsrc}: ") for e in exc.errors])
        sc, errs = self.rests[rk]
        out += [e for e in errs if e not in out]
        if sc is None or not params:
            return out
        owners: dict[str, dict[str, Any]] = {}
        for k, v in params.items():
            owner, name = owned[k]
            owners.setdefault(owner, {})[name] = v
        for owner, values in owners.items():
            parts = owner.split(".")
            side = sc.sides[int(parts[1])]
            pol = side.tanks[int(parts[3])].policy if len(parts) == 4 else side.policy
            if pol is None:
                pol = side.policy
            where = f"sides[{parts[1]}]" + (f".tanks[{parts[3]}]" if len(parts) == 4 else "") + ".policy"
            merged = {**pol.params, **values}
            key = _canon([pol.name, merged])
            if key not in self.policies:
                errs2: list[str] = []
                scn._check_block(merged, f"{where}.params", scn.MAX_PARAM_NUMBER, errs2, "")
                if not errs2:
                    try:
                        check_policy(pol.name, merged)
                    except PolicyLoadError as exc:
                        errs2.append(f"{where}: {scn.clip(str(exc), 500)}")
                self.policies[key] = [e.removeprefix(": ") for e in errs2]
            out += [e for e in self.policies[key] if e not in out]
        return out


def _check_points(raw: Mapping[str, Any], bsrc: str, src: str, points: Sequence[DesignPoint]) -> None:
    """Validate every design point's resolved scenario (schema, vehicles, each policy with its params: built-ins
    constructed, plug-ins checked statically) before any battle runs (see :class:`_PointChecker`).  Raises
    :class:`ScenarioError` with one line per distinct problem naming the points that have it, e.g.
    ``exp.yaml: design points 2 (attacker=rush, flank_bias=1.5), ...: sides[0].policy: ...``; or when checking
    would walk more than :data:`MAX_CHECK_VALUES` values of terrain and features."""
    boards = {_canon({k: v for k, v in p.params.items() if k != SETUP and _is_board(k)}) for p in points}
    m = raw.get("map")
    if not isinstance(m, Mapping):
        m = {}
    heavy = _count_values([m.get("terrain"), m.get("features")])
    if len(boards) * heavy > MAX_CHECK_VALUES:
        raise ScenarioError([f"{src}: factors: {len(boards):,} distinct boards (map / ruleset levels) x {heavy:,} "
                             f"values of terrain and features in the base scenario is more than "
                             f"{MAX_CHECK_VALUES:,} to check; use fewer map or ruleset levels"])
    base_checker = _PointChecker(raw, bsrc)
    generated: dict[str, _PointChecker | list[str]] = {}  # canonical generator -> its checker or its problems
    by_problem: dict[str, list[str]] = {}
    bad = 0
    for p in points:
        over = {k: v for k, v in p.params.items() if k not in (SETUP, GENERATOR)}
        g = p.params.get(GENERATOR)
        checker: _PointChecker | list[str] = base_checker
        if g is not None:
            gk = _canon(g)
            if gk not in generated:
                try:
                    gdata = gen.generate(g["kind"], gen.check_params(g["kind"], g["params"], GENERATOR))
                    generated[gk] = _PointChecker(gdata, bsrc)
                except gen.GeneratorError as exc:
                    generated[gk] = list(exc.errors)
            checker = generated[gk]
        problems = checker if isinstance(checker, list) else checker.problems(over)
        bad += bool(problems)
        label = f"{p.index}" + (f" ({', '.join(f'{k}={scn.clip(str(v), 30)}' for k, v in p.values.items())})"
                                if p.values else "")
        for e in problems:
            by_problem.setdefault(e, []).append(label)
    if not by_problem:
        return
    lines = []
    for problem, labels in by_problem.items():
        shown = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
        lines.append(f"{src}: design point{'s' if len(labels) > 1 else ''} {shown}: {problem}")
    lines = lines[: scn.MAX_ERRORS - 2]
    lines.append(f"{src}: {bad} of {len(points)} design points are invalid; nothing was run (fix the levels, or "
                 f"move a parameter that only some levels accept into a separate experiment)")
    raise ScenarioError(lines)


def _range_value(x: float, integer: bool) -> Any:
    from sim.experiments.samplers import range_value

    return range_value(x, integer)


def _design(spec: ExperimentSpec, factors: list[Factor]) -> Any:
    """The design's rows (:func:`sim.experiments.samplers.build`)."""
    from sim.experiments import samplers as designs

    return designs.build(spec.design.kind, factors, spec.seed, spec.design.n, spec.design.second_order)


# --- paths -----------------------------------------------------------------------------------------------------------

def _side_names(raw: Mapping[str, Any]) -> list[str]:
    return [f"{s.get('name')} ({s.get('role', 'none')})" for s in raw.get("sides", []) if isinstance(s, dict)]


def _side_of(raw: Mapping[str, Any], key: str) -> int | None:
    sides = raw.get("sides", [])
    idx = scn._list_index(sides, str(key))
    return idx % len(sides) if idx is not None else None


def _unwrap(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        return _unwrap(arms[0]) if len(arms) == 1 else arms[0]
    return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _check_path(raw: Mapping[str, Any], path: str, where: str, errors: list[str]) -> str | None:
    """Check a dotted path against the base scenario and the schema; returns the canonical path (list elements by
    index) or ``None`` after appending an error."""
    parts = path.split(".")
    if any(not p for p in parts):
        errors.append(f"{where}: {path}: empty path component")
        return None
    canon: list[str] = []
    node: Any = raw
    tp: Any = scn.Scenario
    rs = None
    for i, part in enumerate(parts):
        here = ".".join(canon) or "the scenario"
        if isinstance(node, list):
            idx = scn._list_index(node, part)
            if idx is None:
                errors.append(f"{where}: {path}: no element {part!r} in {here}{_choices(raw, parts)}")
                return None
            idx %= len(node)
            canon.append(str(idx))
            node = node[idx]
        else:
            canon.append(part)
            node = node.get(part) if isinstance(node, dict) else None
            if part in ("policy", "ruleset") and isinstance(node, str):
                node = {"name": node}
        key = canon[-1]
        origin = typing.get_origin(tp)
        if _is_model(tp):
            fields = tp.model_fields
            if tp is scn.SideSpec and key == "controller":
                key = canon[-1] = "policy"
            if key not in fields:
                errors.append(f"{where}: {path}: unknown field {part!r} in {here}{did_you_mean(part, fields)}; "
                              f"expected one of "
                              f"{', '.join(sorted(f for f in fields if f != 'source'))}")
                return None
            if tp is scn.RulesetSpec and key == "options":
                rs = rs or _ruleset_of(raw)
                tp = rs.Options if rs is not None else dict
            elif tp is scn.TankSpec and key == "rules":
                rs = rs or _ruleset_of(raw)
                tp = rs.TankExt if rs is not None else dict
            elif tp is scn.PolicySpec and key == "params":
                canon += parts[i + 1:]  # checked against the policies the owner may take, later
                break
            else:
                tp = _unwrap(fields[key].annotation)
        elif origin in (list, tuple):
            if not key.lstrip("-").isdecimal() or len(key) > 18:
                errors.append(f"{where}: {path}: {here} is a list; expected an index, got {part!r}")
                return None
            args = typing.get_args(tp)
            if origin is tuple and int(key) >= len([a for a in args if a is not Ellipsis]):
                errors.append(f"{where}: {path}: {here} has {len(args)} elements; index {part} is out of range")
                return None
            tp = _unwrap(args[0]) if args else Any
        elif origin is dict or tp is dict:
            canon += parts[i + 1:]  # a free-form mapping (terrain features, ...)
            break
        else:
            errors.append(f"{where}: {path}: {'.'.join(canon[:-1])} is a single value, not a mapping or list")
            return None
    try:  # the schema allows it; the base scenario must hold every element on the way
        scn.apply_overrides(raw, {path: None}, "")
    except ScenarioError as exc:
        errors.append(f"{where}: {path}: {exc.errors[0].split(': ', 2)[-1]}")
        return None
    return ".".join(canon)


def _choices(raw: Mapping[str, Any], parts: list[str]) -> str:
    """``; expected ...`` for the first list along ``parts`` that lacks its element."""
    node: Any = raw
    for part in parts:
        if isinstance(node, list):
            idx = scn._list_index(node, part)
            if idx is None:
                names = [str(x.get("label") or x.get("name")) for x in node if isinstance(x, dict)]
                roles = [x["role"] for x in node if isinstance(x, dict) and x.get("role") not in (None, "none")]
                known = list(dict.fromkeys(names + roles))
                return f"{did_you_mean(part, known)}; expected an index 0..{len(node) - 1} or one of {', '.join(known)}"
            node = node[idx]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return ""
    return ""


def _ruleset_of(raw: Mapping[str, Any]) -> Any:
    from sim.rules import base as rules_base

    rs = raw.get("ruleset", "panzer_squadron")
    name = rs if isinstance(rs, str) else (rs or {}).get("name", "panzer_squadron")
    try:
        return rules_base.get(name)
    except Exception:  # noqa: BLE001 - validation of the base scenario reports it
        return None


def _policy_params(name: str) -> set[str] | None:
    """Parameter names a policy accepts, or ``None`` when unknown (a plug-in that cannot be inspected)."""
    from agents.policies import BUILTIN

    if ":" not in name:
        cls = BUILTIN.get(name)
        return None if cls is None else set(cls.defaults)
    from agents.plugins import PolicyLoadError, check_plugin

    try:
        d = check_plugin(name).defaults  # static: the plug-in is not imported
    except PolicyLoadError:
        return None  # reported with the design points
    return set(d) if isinstance(d, Mapping) and d else None


def _check_policies(raw: Mapping[str, Any], over: Mapping[str, Any], factors: Sequence[FactorSpec],
                    canon: Sequence[str | None], src: str, errors: list[str]) -> None:
    """Policy names must be built-in (or ``module:Class``); a ``...policy.params.X`` path must name a parameter
    of at least one policy its owner may take in the design.  Plug-ins are checked statically (never imported);
    commands and process-spawning policies are refused (they exist only in tournament entrants)."""
    from agents.plugins import PolicyLoadError, check_plugin, refuse_commands
    from agents.policies import BUILTIN

    def names_at(owner: str) -> list[str]:
        out = []
        node: Any = raw
        for part in owner.split("."):
            node = node[int(part)] if isinstance(node, list) else (node or {}).get(part)
        pol = (node or {}).get("policy", (node or {}).get("controller"))
        if isinstance(pol, str):
            out.append(pol)
        elif isinstance(pol, dict) and "name" in pol:
            out.append(pol["name"])
        elif owner.count(".") == 1:  # a side without a policy holds
            out.append("hold")
        return out

    sources: list[tuple[str, str, list[Any]]] = [(f"overrides.{k}", k, [v]) for k, v in over.items()]
    for i, (f, c) in enumerate(zip(factors, canon)):
        if c is not None and c != SETUP and f.levels is not None:
            sources.append((f"factors[{i}].levels", c, list(f.levels)))
    possible: dict[str, list[str]] = {}
    for where, c, values in sources:
        for suffix in (".policy.name", ".policy"):
            if c.endswith(suffix) and ".params" not in c:
                owner = c[: -len(suffix)]
                for j, v in enumerate(values):
                    name = v.get("name") if isinstance(v, dict) else v
                    at = f"{src}: {where}" + (f"[{j}]" if where.startswith("factors") else "")
                    if not isinstance(name, str) or (":" not in name and name not in BUILTIN):
                        errors.append(f"{at}: {unknown_policy_message(name, BUILTIN)}")
                        continue
                    try:
                        refuse_commands(name, v.get("params") if isinstance(v, dict) else None)
                        if ":" in name:
                            check_plugin(name)  # static: nothing is imported, no command accepted
                    except PolicyLoadError as exc:
                        errors.append(f"{at}: {scn.clip(str(exc), 500)}")
                        continue
                    possible.setdefault(owner, []).append(name)
    checks = [(f"overrides.{k}", k) for k in over] + [(f"factors[{i}].path", c) for i, c in enumerate(canon) if c]
    for where, c in checks:
        if ".policy.params." not in c:
            continue
        owner, _, param = c.partition(".policy.params.")
        param = param.split(".")[0]
        names = list(dict.fromkeys(names_at(owner) + possible.get(owner, [])))
        sets = [ps for n in names if (ps := _policy_params(n)) is not None]
        if len(sets) < len(names):
            continue  # a plug-in whose parameters cannot be listed: its worker reports a bad one
        allowed: set[str] = set().union(*sets)
        if param not in allowed:
            errors.append(f"{src}: {where}: {c}: unknown parameter {scn.short(param)} for policy "
                          f"{scn.clip(' / '.join(names), 200)}; parameters: {', '.join(sorted(allowed)) or 'none'}")


# --- set-up randomisation --------------------------------------------------------------------------------------------

def placement_candidates(spec: scn.Scenario, zones: Mapping[int, Sequence[tuple[int, int]]]
                         ) -> dict[int, list[tuple[int, int]]]:
    """For each zoned side, the zone's hexes (sorted) that are on the map, passable for the rule set and not
    held by a tank of an unzoned side."""
    from sim.hexgrid import Hex
    from sim.model import build_battle

    b = build_battle(spec)
    rs = b.ruleset
    fixed = {tuple(t.hex) for si, s in enumerate(spec.sides) if si not in zones for t in s.tanks}
    out = {}
    for si, cells in sorted(zones.items()):
        out[si] = [h for h in sorted(cells) if Hex(*h) in b.map and rs.passable(b, Hex(*h)) and h not in fixed]
    return out


def place_tanks(data: Mapping[str, Any], candidates: Mapping[int, Sequence[tuple[int, int]]], seed: int
                ) -> dict[str, Any]:
    """A copy of scenario ``data`` with every tank of each zoned side moved to a distinct hex drawn from its side's
    ``candidates`` by ``seed`` (numpy Generator on ``SeedSequence([seed, 0x5E7])``, independent of the battle's
    own streams).  Facings are kept.  Raises ``ValueError`` if a zone holds fewer hexes than its side's tanks."""
    import copy

    out = copy.deepcopy(dict(data))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5E7]))
    for si, cells in sorted(candidates.items()):
        tanks = out["sides"][si]["tanks"]
        if len(cells) < len(tanks):
            raise ValueError(f"deployment zone of side {si} has {len(cells)} free hexes for {len(tanks)} tanks")
        chosen = rng.choice(len(cells), size=len(tanks), replace=False)
        for t, j in zip(tanks, chosen):
            t["hex"] = list(cells[int(j)])
    return out


#: Columns of the results table that a factor name may not take.
RESERVED_COLUMNS = frozenset({
    "run_key", "point_key", "rep", "seed", "params", "status", "error", "worker", "wall_s", "scenario", "ruleset",
    "scenario_hash", "winner", "winner_index", "reason", "turns", "decisions", "shots", "hits", "kills", "faults",
    "points", "policies", "deciding_shot", "extra", "point", "placement", "battle_turn_limit",
    *(f"side{i}_{k}" for i in (1, 2) for k in ("name", "tanks", "lost", "alive")),
})
