"""AI-vs-AI tournaments: the tournament file, the round-robin or gauntlet schedule, playing games, and the results.

A tournament file (YAML) names its entrants, scenarios and settings::

    name: doctrines
    root_seed: 2024
    games_per_pairing: 4          # per scenario, an even number: 2 = one mirrored pair
    isolation: in_process         # or process (every entrant in its own sandboxed process, see agents.isolation)
    limits: {cpu_s: 60, memory_mb: 1024, processes: 64, decision_wall_s: 10}      # for process entrants
    decision_timeout_s: 30        # in-process decisions slower than this forfeit (0 = off)
    executor: {workers: 2}        # or {scheduler: tcp://host:8786} / {dask_local: 4}; battle_timeout_s
    format: round_robin           # or gauntlet: the first `seeds` entrants (default 1) each play all the others
    ratings: {confidence: 0.95, prior_draws: 2, bootstrap: 400}
    metagame: {enabled: true, population: 50, alpha: 10}             # round robins only
    entrants:
      - {name: hold, policy: hold}
      - {name: careful, policy: advance, params: {min_odds: 0.2}}
      - {name: mine, policy: mypackage.bots:Bot}                   # a plug-in
      - {name: awk-bot, command: [awk, -f, bot.awk]}               # another language (always isolated)
    scenarios:
      - {file: default}                                            # bundled name or path next to this file
      - {file: my_map.yaml, label: short, overrides: {turn_limit: 6}}

**Schedule** (:func:`schedule`): every pairing (:meth:`Tournament.pairings`: all unordered pairs for a round
robin; the seeds against the field for a gauntlet, as fastchess's ``-tournament gauntlet``) plays every scenario
from both sides: for
replicate ``k`` the two games (A on the first side, then B on the first side) share one seed, derived from the root
seed, the scenario label and ``k`` -- common random numbers, and the same dice for every pairing at that replicate.
A game's key (``run_key``) hashes the scenario's contents, both entrants and the seed, so results are identical on
any number of workers, and a folder is resumable: stored games are skipped.

**Playing** (:func:`play_game`): :class:`sim.model.BattleModel` with ``policies={side: PolicySpec}`` and
``on_fault="forfeit"``; a raise, a timeout or a wrong return forfeits the game (``forfeit``, ``fault_kind`` and
the engine's ``reason`` are recorded).  A game whose isolated entrant was killed from outside is void: replayed,
then stored with ``status`` ``void`` (:func:`play_game`).  The manifest records the confinement of isolated
entrants (:func:`agents.sandbox.confinement`).  A battle past ``battle_timeout_s`` is forfeited by the side that was
deciding.  Games go through the batch executors (:func:`sim.experiments.batch.open_executor`: a ``forkserver`` process
pool or Dask); the driver streams finished games into Parquet parts (:mod:`sim.experiments.store`) and shows a tqdm bar.

**Results** (:func:`analyse`): leaderboard (games, W/D/L, score with Wilson interval, Bradley-Terry Elo with
profile-likelihood interval and LOS -- the ranking column --, openskill mu/sigma as the live-ladder view;
:mod:`sim.tournaments.ratings`), head-to-head matrix, per-scenario and per-rule-set scores, side bias, and for a round
robin the meta-game (replicator dynamics, equilibrium mixes and their stability, alpha-rank with bootstrap intervals;
:mod:`sim.tournaments.metagame`).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import re
import textwrap
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agents.isolation import Limits
from sim.hexgrid import HexMap
from sim.messages import printable_name, top_level_kind
from sim.scenario import (
    Name,
    Scenario,
    ScenarioError,
    Text,
    _fmt_validation,
    apply_overrides,
    clip,
    find_scenario,
    parse_yaml,
    path_kind,
    validate,
)
from sim.tournaments import ratings as R

MANIFEST = "tournament.json"
ENTRANT_NAME = re.compile(r"^[A-Za-z0-9_.+\-#@ ]{1,64}$")
#: Limits of a tournament file: entrants, scenarios, games in the whole schedule.
MAX_ENTRANTS = 256
MAX_SCENARIOS = 64
MAX_GAMES = 200_000


class TournamentError(ValueError):
    """An invalid tournament file or folder; ``errors`` holds one ``file: field: message`` line each."""

    def __init__(self, errors: list[str]):
        self.errors = ScenarioError(list(errors)).errors  # the same bounds: lines clipped, many counted
        super().__init__("\n".join(self.errors))


class TournamentFolderError(TournamentError):
    """The results folder (``--out``) cannot take this tournament: it holds a batch's results, another
    tournament's, or an unreadable manifest.  ``tanksim tournament`` prints each line after its own name, as
    ``tanksim batch`` does for its folder (the file's own errors start with the file's name instead)."""


class EntrantLoadFailure(TournamentError):
    """One or more entrants cannot be loaded (reported before any game is played)."""


# --- the file --------------------------------------------------------------------------------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _finite_limits(cls: type, v: Any) -> Any:
    """Resource limits are finite numbers of at most 10^7 (seconds, MB)."""
    if v is not None:
        for k, x in v.model_dump().items():
            if isinstance(x, float | int) and not (math.isfinite(x) and abs(x) <= 1e7):
                raise ValueError(f"limits.{k}: expected a finite number of at most 10,000,000")
    return v


class EntrantSpec(_Model):
    """An entrant: a unique ``name``; ``policy`` (built-in doctrine or ``package.module:Class``) with ``params``,
    or ``command`` (a program speaking the isolation protocol; always isolated); optional per-entrant
    ``isolation`` and ``limits`` overriding the tournament's."""

    name: str
    policy: str | None = Field(None, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)
    command: list[Annotated[str, Field(max_length=4096)]] | None = Field(None, max_length=256)
    isolation: Literal["in_process", "process"] | None = None
    limits: Limits | None = None

    _limits = field_validator("limits")(_finite_limits)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        printable_name(v)   # an invisible or control character: the one wording of every name
        if not ENTRANT_NAME.match(v):
            raise ValueError("1-64 letters, digits, spaces or _ . + - # @")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> EntrantSpec:
        if (self.policy is None) == (self.command is None):
            raise ValueError("give exactly one of policy (a doctrine) or command (an external program)")
        if self.command is not None and not self.command:
            raise ValueError("command must name a program")
        if self.command is not None and self.isolation == "in_process":
            raise ValueError("an external command always runs isolated (isolation: process)")
        return self


class ScenarioRef(_Model):
    """A scenario: ``file`` (path, relative to the tournament file, or a bundled name) or ``inline`` (a scenario
    mapping), an optional ``label`` (default: the scenario's name) and dotted-path ``overrides``."""

    file: str | None = Field(None, max_length=4096)
    inline: dict[str, Any] | None = None
    label: Name | None = None
    overrides: dict[str, Any] = Field(default_factory=dict, max_length=50)

    @model_validator(mode="after")
    def _one_source(self) -> ScenarioRef:
        if (self.file is None) == (self.inline is None):
            raise ValueError("give exactly one of file or inline")
        return self


class ExecutorSpec(_Model):
    """Where games run: ``workers`` local worker processes (default: cores), or a Dask
    ``scheduler`` address, or ``dask_local`` worker processes; ``chunk_games`` games per task;
    ``battle_timeout_s`` the watchdog per battle (0 = none)."""

    workers: int | None = Field(None, ge=1, le=1024)
    scheduler: str | None = Field(None, max_length=4096)
    dask_local: int | None = Field(None, ge=1, le=1024)
    chunk_games: int = Field(8, ge=1, le=1024)
    battle_timeout_s: float = Field(600.0, ge=0, le=7 * 86_400, allow_inf_nan=False)


class RatingSpec(_Model):
    """Rating settings: interval ``confidence``; ``prior_draws``, the Bradley-Terry prior (virtual draws added to
    every pairing that met, > 0, keeps a perfect record finite); ``bootstrap``, resamples of mirrored pairs for the
    meta-game's intervals (0 = none)."""

    confidence: float = Field(0.95, gt=0, lt=1)
    prior_draws: float = Field(2.0, gt=0, le=1000)
    bootstrap: int = Field(400, ge=0, le=100000)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "prior_sd" in data:
            raise ValueError("prior_sd was replaced by prior_draws (virtual draws per pairing, default 2): Elo is "
                             "now a Bradley-Terry fit with profile-likelihood intervals")
        return data


class MetagameSpec(_Model):
    """The meta-game report section (round robins only, :mod:`sim.tournaments.metagame`): ``enabled``; alpha-rank's
    Moran ``population`` and selection strength ``alpha``; ``t_max``, how long the replicator dynamics run (score
    units)."""

    enabled: bool = True
    population: int = Field(50, ge=2, le=100000)
    alpha: float = Field(10.0, gt=0, le=10000)
    t_max: float = Field(1000.0, gt=0, le=1e7)


class TournamentSpec(_Model):
    """The validated tournament file (see the module docstring)."""

    name: Name = "tournament"
    description: Text = ""
    root_seed: int = Field(0, ge=-(2**63), le=2**63 - 1)
    games_per_pairing: int = Field(2, ge=2, le=100000)
    isolation: Literal["in_process", "process"] = "in_process"
    limits: Limits = Field(default_factory=Limits)
    decision_timeout_s: float = Field(30.0, ge=0, le=86_400, allow_inf_nan=False)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    ratings: RatingSpec = Field(default_factory=RatingSpec)
    metagame: MetagameSpec = Field(default_factory=MetagameSpec)
    format: Literal["round_robin", "gauntlet"] = "round_robin"
    seeds: int = Field(1, ge=1, le=MAX_ENTRANTS)
    entrants: list[EntrantSpec] = Field(min_length=2, max_length=MAX_ENTRANTS)
    scenarios: list[ScenarioRef] = Field(min_length=1, max_length=MAX_SCENARIOS)

    _limits = field_validator("limits")(_finite_limits)

    @model_validator(mode="after")
    def _gauntlet(self) -> TournamentSpec:
        if self.format == "gauntlet" and self.seeds >= len(self.entrants):
            raise ValueError(f"seeds: a gauntlet's first {self.seeds} entrant(s) play the rest, so seeds must be "
                             f"below the number of entrants ({len(self.entrants)})")
        if self.format == "round_robin" and "seeds" in self.model_fields_set:
            raise ValueError("seeds: only a gauntlet has seeds (format: gauntlet)")
        return self

    @field_validator("games_per_pairing")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"must be even (each seed is played from both sides: 2 games), got {v}")
        return v

    @field_validator("entrants")
    @classmethod
    def _unique(cls, v: list[EntrantSpec]) -> list[EntrantSpec]:
        names = [e.name for e in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"entrant names must be unique, repeated: {', '.join(dup)}")
        return v


@dataclass(frozen=True)
class Entrant:
    """A resolved entrant (plain, picklable, hashed into game keys): ``name``, ``policy``, ``params``,
    ``command``, ``isolation`` (``in_process`` / ``process``) and ``limits`` (process only)."""

    name: str
    policy: str | None
    params: Mapping[str, Any]
    command: tuple[str, ...] | None
    isolation: str
    limits: Mapping[str, Any] | None

    def identity(self) -> dict[str, Any]:
        """What identifies the entrant in game keys (a plain mapping)."""
        return {"name": self.name, "policy": self.policy, "params": dict(self.params),
                "command": list(self.command) if self.command else None, "isolation": self.isolation,
                "limits": dict(self.limits) if self.limits else None}

    def policy_spec(self) -> Any:
        """What a battle plays for this entrant: an isolated entrant is an
        :class:`agents.controllers.EntrantPolicy` (the only kind that may start a process); an in-process one is a
        plug-in :class:`~sim.scenario.PolicySpec`."""
        from agents.controllers import EntrantPolicy
        from sim.scenario import PolicySpec

        if self.isolation == "process":
            if self.limits is None:
                raise ValueError(f"entrant {self.name}: an isolated entrant needs its resource limits "
                                 f"(load_tournament resolves them)")
            ent = {"name": self.name, "policy": self.policy, "params": dict(self.params),
                   "command": list(self.command) if self.command else None}
            return EntrantPolicy("agents.isolation:RemotePolicy", {"entrant": ent, "limits": dict(self.limits)})
        return PolicySpec(name=str(self.policy), params=dict(self.params))

    def describe(self) -> str:
        """A short human-readable form: ``advance:min_odds=0.2 [isolated]``."""
        what = " ".join(self.command) if self.command else str(self.policy)
        if self.params:
            what += ":" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return what + (" [isolated]" if self.isolation == "process" else "")


@dataclass(frozen=True)
class Tournament:
    """A loaded tournament: the ``spec``, its ``source`` file, the resolved ``entrants`` and ``scenarios``
    (``(label, Scenario)`` pairs, in file order)."""

    spec: TournamentSpec
    source: str
    entrants: tuple[Entrant, ...]
    scenarios: tuple[tuple[str, Scenario], ...]

    def identity(self) -> str:
        """A hash of everything that decides the games (not the executor or rating settings)."""
        fmt = [] if self.spec.format == "round_robin" else [self.spec.format, self.spec.seeds]
        return _hash(["tournament", self.spec.root_seed, self.spec.games_per_pairing, self.spec.decision_timeout_s,
                      [e.identity() for e in self.entrants], [(lab, sc.digest()) for lab, sc in self.scenarios],
                      *fmt])

    def pairings(self) -> list[tuple[int, int]]:
        """The pairings ``(i, j)`` (entrant indices, ``i`` first) in schedule order: every unordered pair in file
        order for a round robin; for a gauntlet each of the first ``seeds`` entrants against every other entrant
        (seeds do not meet each other, as in fastchess and cutechess)."""
        n = len(self.entrants)
        if self.spec.format == "gauntlet":
            k = self.spec.seeds
            return [(i, j) for i in range(k) for j in range(k, n)]
        return [(i, j) for i in range(n) for j in range(i + 1, n)]

    @property
    def names(self) -> list[str]:
        """Entrant names in file order."""
        return [e.name for e in self.entrants]


def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), default=str)


def _hash(x: Any, n: int = 16) -> str:
    return hashlib.sha256(_canon(x).encode()).hexdigest()[:n]


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from the SHA-256 of ``parts`` (canonical JSON)."""
    return int.from_bytes(hashlib.sha256(_canon(["seed", *parts]).encode()).digest()[:8], "big") >> 1


def _resolve_scenario(ref: ScenarioRef, i: int, src: str, base_dir: Path) -> tuple[str, Scenario]:
    where = f"{src}: scenarios[{i}]"
    if ref.inline is not None:
        data, name = dict(ref.inline), f"{where}.inline"
    else:
        assert ref.file is not None  # ScenarioRef's validator requires exactly one of file / inline
        cand = base_dir / ref.file
        target = str(cand) if path_kind(cand) == "file" else ref.file
        try:
            name, text = find_scenario(target)
            data = parse_yaml(text, name)
        except FileNotFoundError as exc:
            raise TournamentError([f"{where}.file: {clip(str(exc), 500)}"]) from None
        except ScenarioError as exc:
            raise TournamentError([f"{where}.file: {e}" for e in exc.errors]) from None
        except OSError as exc:
            raise TournamentError([f"{where}.file: cannot read {clip(str(ref.file), 200)}: "
                                   f"{exc.strerror or type(exc).__name__}"]) from None
    try:
        if ref.overrides:
            data = apply_overrides(data, ref.overrides, name)
        sc = validate(data, name)
    except ScenarioError as exc:
        raise TournamentError([f"{where}: {e}" for e in exc.errors]) from None
    return ref.label or sc.name, sc


def tournament_from_mapping(data: Any, src: str = "<tournament>", base_dir: str | Path = ".") -> Tournament:
    """Validate a tournament mapping (as in a file); scenario files are looked up next to ``base_dir``.

    Raises :class:`TournamentError` with one ``src: field.path: message`` line per problem (with any other
    problem, the entrants' doctrines checked statically too, as :func:`entrant_problems`)."""
    if not isinstance(data, Mapping):
        raise TournamentError([(f"{src}: (top level): expected a mapping of tournament fields, got "
                                f"{top_level_kind(data)}")])
    try:
        spec = TournamentSpec.model_validate(data)
    except ValidationError as exc:
        lines = _fmt_validation(src, exc, model=TournamentSpec)
        raise TournamentError(lines + _raw_entrant_problems(data, src, lines)) from None
    errors: list[str] = []
    scenarios: list[tuple[str, Scenario]] = []
    for i, ref in enumerate(spec.scenarios):
        try:
            scenarios.append(_resolve_scenario(ref, i, src, Path(base_dir)))
        except TournamentError as exc:
            errors += exc.errors
    n_games = len(spec.scenarios) * spec.games_per_pairing * len(spec.entrants) * (len(spec.entrants) - 1) // 2
    if n_games > MAX_GAMES:
        errors.append(f"{src}: games_per_pairing: {len(spec.scenarios)} scenarios x {spec.games_per_pairing} games x "
                      f"{len(spec.entrants) * (len(spec.entrants) - 1) // 2} pairings = {n_games:,} games; at most "
                      f"{MAX_GAMES:,}")
    labels = [lab for lab, _ in scenarios]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        errors.append(f"{src}: scenarios[].label: scenario labels must be unique, repeated: {', '.join(dup)} "
                      f"(give each a label)")
    entrants = []
    for e in spec.entrants:
        iso = "process" if e.command else (e.isolation or spec.isolation)
        command = None
        if e.command:
            command = tuple(str(Path(base_dir) / c)
                            if path_kind(Path(base_dir) / c) == "file" and not Path(c).is_absolute() else c
                            for c in e.command)
        limits = (e.limits or spec.limits).model_dump() if iso == "process" else None
        entrants.append(Entrant(e.name, e.policy, dict(e.params), command, iso, limits))
    if errors:   # every problem, one line each: a bad scenario does not hide a misspelt entrant's doctrine
        provisional = Tournament(spec, src, tuple(entrants), tuple(scenarios))
        raise TournamentError(errors + list(_static_entrant_problems(provisional).values()))
    return Tournament(spec, src, tuple(entrants), tuple(scenarios))


def _raw_entrant_problems(data: Mapping[str, Any], src: str, already: Sequence[str]) -> list[str]:
    """The doctrines of the entrants of a file whose schema check failed, checked statically
    (:func:`agents.controllers.check_policy`) where the entry's own fields passed, so that another field's problem
    does not hide a misspelt ``policy`` (one line each, none twice)."""
    from agents.controllers import PolicyLoadError, check_policy

    out: list[str] = []
    raw = data.get("entrants")
    for i, e in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(e, Mapping) or e.get("command") is not None or not isinstance(e.get("policy"), str):
            continue
        if any(line.startswith(f"{src}: entrants[{i}]") for line in already):
            continue
        given = e.get("params")
        params: dict[str, Any] = {str(k): v for k, v in given.items()} if isinstance(given, Mapping) else {}
        try:
            check_policy(e["policy"], params)
        except PolicyLoadError as exc:
            out.append(f"{src}: entrants[{i}].policy: {exc}")
        except Exception:  # noqa: BLE001, S112 - a doctrine this check cannot judge is judged once the file loads
            continue
    return out


def load_tournament(path: str | Path) -> Tournament:
    """Load and validate a tournament file (a path, or the name of a bundled one such as ``tournament``).  Raises
    ``FileNotFoundError`` or :class:`TournamentError` (also for a binary file or a scenario/experiment file)."""
    from sim.experiments.design import read_yaml_file, wrong_kind
    from sim.scenario import ScenarioError

    try:
        src, data, base_dir = read_yaml_file(path, "tournament")
    except ScenarioError as exc:
        raise TournamentError(list(exc.errors)) from None
    wrong_kind(data, src, "tournament", TournamentError)
    return tournament_from_mapping(data, src, base_dir)


# --- entrants are checked before any game ------------------------------------------------------------------------
def entrant_problems(t: Tournament) -> list[str]:
    """The entrants' doctrines checked statically, the way ``tanksim validate`` checks data files: nothing is
    imported, no entrant's program is started (:func:`agents.controllers.check_policy`).  Returns one
    ``FILE: entrants[i].policy: what is wrong`` line per bad entrant (empty when all pass); entrants given by
    ``command`` are left to :func:`check_entrants`."""
    return list(_static_entrant_problems(t).values())


def isolation_problem(e: Entrant) -> str | None:
    """Why entrant ``e`` cannot play under its ``isolation``, or ``None``: a built-in doctrine marked
    ``in_process_only`` (``lookahead``: it searches on a copy of the battle, which the isolation protocol of
    docs/isolation_protocol.md does not carry, so every one of its games would be a forfeit) under ``process``."""
    from agents.policies import BUILTIN

    cls = BUILTIN.get(str(e.policy).strip()) if e.policy and not e.command else None
    if e.isolation == "process" and getattr(cls, "in_process_only", False):
        return (f"{str(e.policy).strip()} runs in-process only (it searches on a copy of the battle, which an "
                f"isolated entrant never gets); run it in-process (isolation: in_process; tanksim match "
                f"--isolation in_process)")
    return None


def _static_entrant_problems(t: Tournament) -> dict[int, str]:
    from agents.controllers import PolicyLoadError, check_policy

    out = {}
    for i, e in enumerate(t.entrants):
        if e.command:
            continue
        try:
            check_policy(str(e.policy), dict(e.params))
        except PolicyLoadError as exc:
            out[i] = f"{t.source}: entrants[{i}].policy: {exc}"
            continue
        why = isolation_problem(e)
        if why is not None:
            out[i] = f"{t.source}: entrants[{i}].isolation: {why}"
    return out


def check_entrants(entrants: Sequence[Entrant]) -> list[str]:
    """Load every entrant once (instantiate in-process doctrines; start isolated ones and complete the
    handshake).  Returns one line per entrant that cannot be loaded (empty when all load)."""
    from agents.controllers import PolicyLoadError, load_policy
    from agents.isolation import EntrantFault, probe
    from agents.sandbox import warn_if_unconfined

    if any(e.isolation == "process" for e in entrants):
        warn_if_unconfined()
    problems = []
    for e in entrants:
        why = isolation_problem(e)
        if why is not None:
            problems.append(f"entrant {e.name!r} ({e.describe()}) cannot be loaded: {why}")
            continue
        try:
            if e.isolation == "process":
                probe({"name": e.name, "policy": e.policy, "params": dict(e.params),
                       "command": list(e.command) if e.command else None}, e.limits)
            else:
                load_policy(str(e.policy), dict(e.params))
        except (PolicyLoadError, EntrantFault) as exc:
            problems.append(f"entrant {e.name!r} ({e.describe()}) cannot be loaded: {exc}")
        except Exception as exc:  # noqa: BLE001 - a plug-in's constructor may raise anything
            problems.append(f"entrant {e.name!r} ({e.describe()}) cannot be loaded: {type(exc).__name__}: {exc}")
    return problems


# --- the schedule ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Game:
    """One game to play: ``run_key`` (its identity), ``pair_key`` (its mirrored pair), ``order`` in the schedule,
    scenario ``label`` and ``digest``, replicate ``rep``, ``leg`` (0: the pairing's first entrant on the first side;
    1: swapped), ``seed`` and the ``entrants`` on the first and second side."""

    run_key: str
    pair_key: str
    order: int
    label: str
    digest: str
    rep: int
    leg: int
    seed: int
    entrants: tuple[Entrant, Entrant]


def pair_games(label: str, sc: Scenario, a: Entrant, b: Entrant, rep: int, seed: int, decision_timeout_s: float,
               order: int = 0) -> tuple[Game, Game]:
    """The two games of one mirrored pair (same seed, sides swapped)."""
    digest = sc.digest()
    pair_key = _hash(["pair", digest, a.identity(), b.identity(), seed])
    out = []
    for leg, (x, y) in enumerate(((a, b), (b, a))):
        key = _hash(["game", digest, x.identity(), y.identity(), seed, decision_timeout_s])
        out.append(Game(key, pair_key, order + leg, label, digest, rep, leg, seed, (x, y)))
    return out[0], out[1]


def schedule(t: Tournament) -> list[Game]:
    """Every game of the round robin (or gauntlet, :meth:`Tournament.pairings`), in a fixed order: scenario, then
    replicate, then pairing, then leg.  Seeds: :func:`derive_seed` of (root seed, scenario label, replicate), so a
    pairing's games are the same games in either format."""
    games: list[Game] = []
    pairings = t.pairings()
    for label, sc in t.scenarios:
        for rep in range(t.spec.games_per_pairing // 2):
            seed = derive_seed(t.spec.root_seed, label, rep)
            for i, j in pairings:
                games += pair_games(label, sc, t.entrants[i], t.entrants[j], rep, seed,
                                    t.spec.decision_timeout_s, len(games))
    return games


# --- playing -------------------------------------------------------------------------------------------------------
#: The columns of a stored game (a part of DIR/runs/), in order.
GAME_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("run_key", pa.string()), ("pair_key", pa.string()), ("label", pa.string()), ("rep", pa.int32()),
    ("leg", pa.int8()), ("seed", pa.int64()), ("entrant1", pa.string()), ("entrant2", pa.string()),
    ("status", pa.string()), ("error", pa.string()), ("scenario", pa.string()), ("ruleset", pa.string()),
    ("scenario_hash", pa.string()), ("side1_name", pa.string()), ("side2_name", pa.string()),
    ("winner", pa.string()), ("winner_index", pa.int8()), ("winner_entrant", pa.string()), ("score1", pa.float64()),
    ("reason", pa.string()), ("forfeit", pa.bool_()), ("forfeit_entrant", pa.string()), ("fault_kind", pa.string()),
    ("turns", pa.int32()), ("decisions", pa.int64()), ("shots", pa.int32()), ("hits", pa.int32()),
    ("kills", pa.int32()), ("faults", pa.int32()), ("side1_tanks", pa.int16()), ("side1_lost", pa.int16()),
    ("side2_tanks", pa.int16()), ("side2_lost", pa.int16()), ("policies", pa.string()), ("worker", pa.string()),
    ("wall_s", pa.float64()),
)
GAME_SCHEMA = pa.schema(list(GAME_FIELDS))
#: Columns that differ between identical games (left out when comparing tables).
VOLATILE = ("worker", "wall_s")
_FORFEIT = re.compile(r" forfeits: (\w+) in \w+( \((\w+): )?")
#: Replays of a void game (an isolated entrant killed from outside) before it is stored as ``status == "void"``.
MAX_VOID_REPLAYS = 2


def fault_kind(reason: str) -> str | None:
    """The kind of fault behind a forfeit reason (``None`` if ``reason`` is not a forfeit).

    In-process policies (:mod:`agents.controllers`): ``raise``, ``wrong_type`` (not an action), ``timeout`` (over
    ``decision_timeout_s``), ``memory`` (raised ``MemoryError``); tournament watchdogs: ``decision_timeout``,
    ``battle_timeout``; isolated entrants (:data:`agents.isolation.FAULT_KINDS`, from the fault's class): ``timeout``
    (wall time), ``cpu``, ``memory``, ``crash``, ``raise`` (its policy raised), ``wrong_type`` (its policy returned
    something else), ``protocol`` (it broke the protocol: not JSON, an unknown message, a malformed action),
    ``load``.  The class name is read right after the decision kind, where an entrant's own text cannot reach."""
    from agents.isolation import FAULT_KINDS

    m = _FORFEIT.search(reason or "")
    if not m:
        return None
    kind, cls = m.group(1), m.group(3)
    if kind == "raise" and cls in FAULT_KINDS:
        return FAULT_KINDS[cls]
    if kind == "raise" and cls == "MemoryError":
        return "memory"
    return kind


@dataclass(frozen=True)
class Chunk:
    """Games sent to one worker in one call, with the scenarios they need (by digest)."""

    scenarios: Mapping[str, Scenario]
    games: tuple[Game, ...]
    battle_timeout_s: float = 0.0
    decision_timeout_s: float = 0.0
    attempt: int = 0


def _worker() -> str:
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


#: This process's pristine boards, one per scenario digest, most recently used last (see :func:`board_for`).
_BOARDS: OrderedDict[str, HexMap] = OrderedDict()
#: At most this many boards are kept (a tournament has a few scenarios; the oldest is dropped first).
MAX_BOARDS = 32


def board_for(sc: Scenario) -> HexMap:
    """The pristine board of ``sc`` this process keeps for its games (built on the first game of the scenario):
    every game plays on ``board.for_another_battle()``, which shares the board's terrain cache, so a worker builds
    each scenario's board and static geometry once, not once per game (issue 14), with the same event log as a
    board built afresh.  Keyed by :meth:`Scenario.digest`, the hash of the whole resolved scenario (its map
    included, which is all :meth:`Scenario.build_map` reads); at most :data:`MAX_BOARDS` are kept."""
    key = sc.digest()
    board = _BOARDS.get(key)
    if board is None:
        board = _BOARDS[key] = sc.build_map()
        while len(_BOARDS) > MAX_BOARDS:
            _BOARDS.popitem(last=False)
    else:
        _BOARDS.move_to_end(key)
    return board


def play_game(sc: Scenario, g: Game, decision_timeout_s: float = 0.0, battle_timeout_s: float = 0.0
              ) -> dict[str, Any]:
    """Play one game in this process and return its row (:data:`GAME_FIELDS`); never raises for the battle's
    own failure (``status`` ``failed`` with ``error``).  Faults forfeit (``on_fault="forfeit"``).

    A void game -- an isolated entrant killed by a signal that came neither from the engine nor from its limits
    (:class:`agents.isolation.EntrantVoid`), which is never that entrant's fault -- is replayed up to
    :data:`MAX_VOID_REPLAYS` times (same seed, so the same game); if it is still void, the row has ``status``
    ``void`` (not scored; a later run of the tournament plays it again).

    In a worker process the driver is told when the game starts and ends (:func:`sim.experiments.batch.watchdog` with
    the game's key): a decision blocked outside Python (a C call such as ``time.sleep``, blocking I/O) that neither
    watchdog can interrupt is reported ``stuck`` with the row of the deciding side's forfeit (``battle_timeout`` or
    ``decision_timeout``), and the driver kills the worker and stores that row (:func:`run_chunks`)."""
    row: dict[str, Any] = {}
    for attempt in range(1 + MAX_VOID_REPLAYS):
        row = _play_once(sc, g, decision_timeout_s, battle_timeout_s)
        if row["status"] != "void":
            return row
        row["error"] = f"void after {attempt + 1} tries: {row['error']}"[:2000]
    return row


def _play_once(sc: Scenario, g: Game, decision_timeout_s: float, battle_timeout_s: float) -> dict[str, Any]:
    from agents.isolation import close_policies, void_reason
    from sim.experiments.batch import BattleTimeout, progress_sink, watchdog
    from sim.model import BattleModel
    from sim.rules.base import Outcome

    e1, e2 = g.entrants
    base: dict[str, Any] = {"run_key": g.run_key, "pair_key": g.pair_key, "label": g.label, "rep": g.rep,
                            "leg": g.leg, "seed": g.seed, "entrant1": e1.name, "entrant2": e2.name,
                            "scenario": sc.name, "ruleset": sc.ruleset.name, "scenario_hash": g.digest,
                            "worker": _worker()}
    t0 = time.perf_counter()
    holder: list[Any] = []
    in_process = [e.isolation != "process" for e in g.entrants]
    stuck: dict[str, Any] = {}

    def stuck_row(kind: str, past: str) -> dict[str, Any] | None:
        m = holder[0] if holder else None
        d = getattr(m, "_decision", None) if m is not None else None
        if m is None or m.ended or d is None:
            return None
        return _game_row(base, g, m, time.perf_counter() - t0, forfeit=(d.side, f"{kind} in {d.kind} (the "
                         f"decision was blocked outside Python, e.g. in a C call, past {past}; the worker process "
                         f"was killed)"))

    send = progress_sink()
    try:
        with watchdog(battle_timeout_s or None, g.run_key, on_stuck=lambda: stuck_row(
                "battle_timeout", f"the battle watchdog of {battle_timeout_s:g} s")), \
                _decision_watchdog(holder, in_process, decision_timeout_s, stuck, send, g.run_key, lambda: stuck_row(
                    "decision_timeout", f"decision_timeout_s of {decision_timeout_s:g} s plus its grace")):
            try:
                holder.append(BattleModel(sc, g.seed, {0: e1.policy_spec(), 1: e2.policy_spec()},
                                          decision_timeout_s=decision_timeout_s, on_fault="forfeit",
                                          board=board_for(sc)))
                holder[0].run()
            except BattleTimeout:
                m = holder[0] if holder else None
                if m is None or m.ended or m._decision is None:
                    raise
                side = m._decision.side
                if stuck.get("fired"):
                    why = (f"decision_timeout in {m._decision.kind} (an in-process decision still running "
                           f"after {stuck['limit']:g} s was cut off; decision_timeout_s is {decision_timeout_s:g})")
                else:
                    why = (f"battle_timeout in {m._decision.kind} (the battle exceeded its {battle_timeout_s:g} s "
                           f"watchdog while this side was deciding)")
                m._end(Outcome(1 - side, f"{m.battle.sides[side].name} forfeits: {why}", ()))
    except BattleTimeout:
        return {**base, "status": "timeout", "error": f"exceeded the battle watchdog of {battle_timeout_s:g} s",
                "wall_s": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - a failed game is a row, never the tournament's end
        return {**base, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000],
                "wall_s": time.perf_counter() - t0}
    finally:
        if holder:
            close_policies(holder[0])
    model = holder[0]
    void = void_reason(model)
    if void is not None:
        return {**base, "status": "void", "error": void[:1500], "wall_s": time.perf_counter() - t0}
    return _game_row(base, g, model, time.perf_counter() - t0)


def _game_row(base: Mapping[str, Any], g: Game, model: Any, wall_s: float,
              forfeit: tuple[int, str] | None = None) -> dict[str, Any]:
    """A finished game's row; ``forfeit=(side, why)`` scores it as that side's forfeit (a game stopped from the
    outside: its model never reached its end)."""
    from sim.runner import summarise

    row = summarise(model, wall_s)
    if forfeit is not None:
        side, why = forfeit
        names = [s.name for s in model.battle.sides]
        row.update(winner_index=1 - side, winner=names[1 - side], reason=f"{names[side]} forfeits: {why}")
    wi = int(row["winner_index"])
    reason = row["reason"]
    kind = fault_kind(reason)
    return {**base, **{k: row[k] for k in ("winner", "winner_index", "reason", "turns", "decisions", "shots",
                                            "hits", "kills", "faults", "side1_name", "side2_name", "side1_tanks",
                                            "side1_lost", "side2_tanks", "side2_lost", "policies")},
            "status": "ok", "error": None, "winner_entrant": None if wi < 0 else g.entrants[wi].name,
            "score1": 1.0 if wi == 0 else (0.0 if wi == 1 else 0.5), "forfeit": kind is not None,
            "forfeit_entrant": None if kind is None or wi < 0 else g.entrants[1 - wi].name, "fault_kind": kind,
            "wall_s": row["wall_s"]}


@contextmanager
def _decision_watchdog(holder: list[Any], in_process: Sequence[bool], decision_timeout_s: float,
                       state: dict[str, Any], send: Callable[..., None] | None = None, key: str = "",
                       on_stuck: Callable[[], dict[str, Any] | None] | None = None) -> Iterator[None]:
    """Cut off an in-process decision that runs past ``decision_timeout_s`` plus a grace of
    ``max(1, decision_timeout_s / 2)`` seconds: a thread polls the model (``holder[0]``) every 50 ms and raises
    :class:`sim.experiments.batch.BattleTimeout` in the playing thread (``state["fired"]`` is then set), which
    :func:`play_game` turns into a forfeit of the deciding side.  The model's own limit is measured only after a
    decision returns, so without this a decision that never returns would hang the game until the battle
    watchdog.  It interrupts Python code, not a blocking C call (``time.sleep``): when its exception has not landed
    :data:`sim.experiments.batch.STUCK_AFTER_S` later, the game is reported ``stuck`` through ``send`` (see
    :func:`sim.experiments.batch.progress_sink`) with ``on_stuck()``'s row, and the driver kills the worker.  Untrusted
    code still belongs in ``isolation: process``.  Sides played by isolated entrants are left to
    :mod:`agents.isolation`."""
    import ctypes
    import threading

    from sim.experiments.batch import STUCK_AFTER_S, BattleTimeout

    if not decision_timeout_s or not any(in_process):
        yield
        return
    limit = decision_timeout_s + max(1.0, decision_timeout_s / 2)
    state["limit"] = limit
    tid = threading.get_ident()
    stop = threading.Event()
    lock = threading.Lock()

    class DecisionOverrun(BattleTimeout):
        def __init__(self, *args: Any) -> None:
            state["delivered"] = True
            super().__init__("decision overrun")

    def watch() -> None:
        last, since = None, time.monotonic()
        while not stop.wait(0.05):
            m = holder[0] if holder else None
            d = getattr(m, "_decision", None) if m is not None else None
            if d is not last:
                last, since = d, time.monotonic()
                continue
            if d is None or not in_process[getattr(d, "side", 0)] or time.monotonic() - since < limit:
                continue
            with lock:
                if stop.is_set():
                    return
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(DecisionOverrun))
            if send is not None and not stop.wait(STUCK_AFTER_S) and not state.get("delivered"):
                row = None
                try:
                    row = on_stuck() if on_stuck is not None else None
                except Exception:  # noqa: BLE001 - the driver stores a timeout row instead
                    row = None
                send("stuck", key, row=row, limit=limit)
            return

    th = threading.Thread(target=watch, name="tanksim-decision-watch", daemon=True)
    th.start()
    try:
        yield
    finally:
        with lock:
            stop.set()
        if state.get("fired") and not state.get("delivered"):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)


def play_chunk(chunk: Chunk) -> list[dict[str, Any]]:
    """Worker entry point: play the chunk's games in order (see :func:`play_game`)."""
    return [play_game(chunk.scenarios[g.digest], g, chunk.decision_timeout_s, chunk.battle_timeout_s)
            for g in chunk.games]


def _failed_rows(chunk: Chunk, exc: BaseException) -> list[dict[str, Any]]:
    out = []
    for g in chunk.games:
        sc = chunk.scenarios[g.digest]
        out.append({"run_key": g.run_key, "pair_key": g.pair_key, "label": g.label, "rep": g.rep, "leg": g.leg,
                    "seed": g.seed, "entrant1": g.entrants[0].name, "entrant2": g.entrants[1].name,
                    "scenario": sc.name, "ruleset": sc.ruleset.name, "scenario_hash": g.digest, "status": "failed",
                    "error": f"worker lost: {type(exc).__name__}: {exc}"[:2000]})
    return out


# --- executing ------------------------------------------------------------------------------------------------------
def run_chunks(chunks: Iterable[Chunk], *, workers: int | None = None, scheduler: str | None = None,
               dask_local: int | None = None, pool_info: dict | None = None
               ) -> Generator[tuple[Chunk, list[dict[str, Any]]], None, None]:
    """Play ``chunks`` (pulled lazily, at most two per worker in flight) and yield ``(chunk, rows)`` as they
    finish, on the batch executors (:func:`sim.experiments.batch.open_executor`: a ``forkserver`` process pool of
    ``workers`` processes, one included: games never run in the driver's process, so a plug-in blocked in a C call
    cannot stop the driver; or Dask).  A worker that dies is replaced and its chunk re-played game by game; a game that
    kills its worker twice becomes a ``failed`` row.  A game blocked past its watchdogs
    (:class:`sim.experiments.batch.HangWatch`: reported stuck, or running :func:`sim.experiments.batch.kill_after` its
    battle timeout) has its worker killed and replaced and is stored once: as the deciding side's forfeit when the
    worker said who was deciding, else a ``timeout`` row; the other games of its chunk are played again.  Closing the
    generator cancels pending work. ``pool_info`` receives the executor ``kind`` and ``workers``."""
    from sim.experiments.batch import POLL_S, Hang, HangWatch, hang_error, open_executor

    it = iter(chunks)
    with open_executor(workers, scheduler, dask_local) as pool:
        if pool_info is not None:
            pool_info.update(kind=pool.kind, workers=pool.workers)
        inflight: dict[cf.Future, Chunk] = {}
        submitted: dict[cf.Future, cf.Executor] = {}
        retry: deque[Chunk] = deque()
        watch = HangWatch(pool)
        exhausted = False

        def one_by_one(ch: Chunk, attempt: int) -> list[Chunk]:
            return [Chunk(ch.scenarios, (g,), ch.battle_timeout_s, ch.decision_timeout_s, attempt=attempt)
                    for g in ch.games]

        def on_hang(h: Hang) -> tuple[Chunk, list[dict[str, Any]]] | None:
            fut = next((f for f, ch in inflight.items() if any(g.run_key == h.key for g in ch.games)), None)
            if fut is None:  # finished meanwhile: its worker is not stuck
                return None
            pool.kill(h.worker)
            ch = inflight.pop(fut)
            lost = submitted.pop(fut, None)
            game = next(g for g in ch.games if g.run_key == h.key)
            rest = [g for g in ch.games if g.run_key != h.key]
            if rest:
                retry.appendleft(Chunk(ch.scenarios, tuple(rest), ch.battle_timeout_s, ch.decision_timeout_s,
                                       ch.attempt))
            if pool.kind == "process":  # the pool dies with its worker: play its other chunks again
                for f in [f for f in inflight if submitted.get(f) is lost]:
                    other = inflight.pop(f)
                    submitted.pop(f, None)
                    watch.forget(g.run_key for g in other.games)
                    retry.appendleft(other)
                if lost is pool.executor:
                    pool.restart()
                watch.reset()
            else:
                fut.cancel()
            watch.forget(g.run_key for g in ch.games)
            one = Chunk(ch.scenarios, (game,), ch.battle_timeout_s, ch.decision_timeout_s, ch.attempt)
            row = h.row if h.row and h.row.get("run_key") == game.run_key else None
            if row is None:
                row = {**_failed_rows(one, RuntimeError(""))[0], "status": "timeout", "error": hang_error(h)}
            return one, [row]

        try:
            while True:
                while len(inflight) < 2 * pool.workers:
                    if retry:
                        ch = retry.popleft()
                    elif exhausted:
                        break
                    else:
                        pulled = next(it, None)
                        if pulled is None:
                            exhausted = True
                            continue
                        ch = pulled
                    try:
                        fut = pool.executor.submit(play_chunk, ch)
                    except cf.BrokenExecutor:
                        retry.appendleft(ch)
                        pool.restart()
                        watch.reset()
                        continue
                    inflight[fut] = ch
                    submitted[fut] = pool.executor
                if not inflight:
                    break
                timed = any(ch.battle_timeout_s or ch.decision_timeout_s for ch in inflight.values())
                done, _ = cf.wait(list(inflight), timeout=POLL_S if timed else None,
                                  return_when=cf.FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: inflight[f].games[0].order):
                    ch = inflight.pop(fut)
                    watch.forget(g.run_key for g in ch.games)
                    try:
                        rows = fut.result()
                    except cf.CancelledError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - the worker died (or the cluster lost it)
                        if isinstance(exc, cf.BrokenExecutor) and submitted.get(fut) is pool.executor:
                            pool.restart()
                            watch.reset()
                        submitted.pop(fut, None)
                        if len(ch.games) > 1 or ch.attempt == 0:
                            retry.extendleft(reversed(one_by_one(ch, 1)))
                            continue
                        rows = _failed_rows(ch, exc)
                    submitted.pop(fut, None)
                    yield ch, rows
                for h in watch.poll():
                    got = on_hang(h)
                    if got is not None:
                        yield got
        finally:
            for fut in inflight:
                fut.cancel()
            if inflight:
                pool.close()


@dataclass
class RunSummary:
    """What one :func:`run_tournament` call did: games in the schedule, already stored, played now, failed,
    forfeits among those played, wall seconds, executor kind and workers."""

    out: Path
    total: int
    stored_before: int
    played: int = 0
    failed: int = 0
    forfeits: int = 0
    wall_s: float = 0.0
    executor: str = ""
    workers: int = 0
    interrupted: bool = False

    @property
    def rate(self) -> float:
        """Games per second played by this call."""
        return self.played / self.wall_s if self.wall_s > 0 else 0.0


def read_manifest(out: str | Path) -> dict[str, Any] | None:
    """The folder's ``tournament.json`` (hash, spec, entrants, scenarios, sessions, part checksums), or ``None``
    if absent.  Raises :class:`sim.experiments.store.CorruptResults` naming the file (and line) if it is not a JSON
    object."""
    from sim.experiments import store

    p = Path(out) / MANIFEST
    if not p.is_file():
        return None
    m = store.read_json(p)
    if not isinstance(m, dict):
        raise store.CorruptResults([f"{p}: expected a JSON object (a tournament manifest)"])
    return m


def _write_manifest(out: Path, m: dict[str, Any]) -> None:
    from sim.experiments import store

    store.write_manifest(out, MANIFEST, m)


#: What to do about a corrupt tournament folder (printed after the problems).
REPAIR_HINT = ("run the tournament again (tanksim tournament FILE --out DIR): it moves bad parts to DIR/quarantine "
               "and plays their games again")


def stored_games(out: str | Path) -> pd.DataFrame:
    """Every stored game row of a folder (all parts; a replayed game keeps its ``ok`` row), after checking every
    part against its checksum (:func:`sim.experiments.store.verify_parts`).  Raises
    :class:`sim.experiments.store.CorruptResults` naming each bad part."""
    from sim.experiments import store

    parts = store.part_paths(out, "runs")
    if not parts:
        return pd.DataFrame({n: pd.Series(dtype="object") for n, _ in GAME_FIELDS})
    store.verify_parts(out, MANIFEST, deep=("runs",)).check(REPAIR_HINT)
    df = store.read_parts(out, "runs")
    df = df.assign(_ok=(df["status"] == "ok").astype(int)).sort_values("_ok", ascending=False, kind="stable")
    return df.drop_duplicates("run_key", keep="first").drop(columns="_ok").reset_index(drop=True)


def prepare_folder(t: Tournament, out: str | Path, new: bool = False, write: bool = True) -> dict[str, Any]:
    """Create or reopen a results folder (the caller holds its lock, :func:`sim.experiments.store.folder_lock`); refuses
    (:class:`TournamentError`) one holding games of another tournament unless ``new`` (stored games that the new
    schedule still contains are reused); a manifest without any stored game does not bind the folder.  Every stored
    part is verified and each bad chunk quarantined (:func:`sim.experiments.batch.repair_folder`: its games are played
    again; the warnings are in the manifest's ``warnings``).  ``write``: write the manifest and clean partial writes now
    (else the caller does both, in that order)."""
    from sim.experiments import store
    from sim.experiments.batch import repair_folder

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    other = store.other_results(out, MANIFEST)
    if other:
        raise TournamentFolderError([f"{out}: holds other results ({other}); choose another --out folder"])
    notes: list[str] = []
    try:
        old = read_manifest(out)
    except store.CorruptResults as exc:
        if not new:
            raise TournamentFolderError(exc.problems + ["re-run with --new to rebuild it (the bad one is kept in "
                                                  "DIR/quarantine)"]) from None
        dest = out / store.QUARANTINE / f"{time.strftime('%Y%m%dT%H%M%S')}-manifest"
        dest.mkdir(parents=True, exist_ok=True)
        (out / MANIFEST).replace(dest / MANIFEST)
        notes.append(f"{out / MANIFEST}: unreadable ({exc.problems[0]}); moved to {dest} and rebuilt")
        old = None
    ident = t.identity()
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if old is not None and old.get("tournament_hash") != ident and not new and store.part_paths(out, "runs"):
        raise TournamentFolderError([(f"{out}: holds results of a different tournament ({old.get('source')}, hash "
                                f"{old.get('tournament_hash')}); {t.source} hashes to {ident}. Re-run with --new "
                                f"to switch this folder to it (stored games it still contains are reused), or "
                                f"choose another --out folder.")])
    notes += repair_folder(out, MANIFEST)
    sessions = (old or {}).get("sessions", [])
    m = {"format": store.FORMAT, "tournament_hash": ident, "source": t.source, "name": t.spec.name,
         "created": (old or {}).get("created", now), "updated": now,
         "spec": t.spec.model_dump(mode="json"), "entrants": [e.identity() for e in t.entrants],
         "scenarios": [{"label": lab, "name": sc.name, "ruleset": sc.ruleset.name, "digest": sc.digest()}
                       for lab, sc in t.scenarios],
         "sessions": list(sessions) if isinstance(sessions, list) else [], "status": "running", "warnings": notes}
    if any(e.isolation == "process" for e in t.entrants):
        from agents.sandbox import confinement

        m["confinement"] = confinement().as_dict()   # what confined the isolated entrants (this machine's workers)
    if write:
        _write_manifest(out, m)
        store.clean_partial(out)
    return m


def _chunks(t: Tournament, games: Sequence[Game]) -> Iterator[Chunk]:
    by_digest = {sc.digest(): sc for _, sc in t.scenarios}
    size = t.spec.executor.chunk_games
    size += size % 2  # keep mirrored pairs together
    for i in range(0, len(games), size):
        part = tuple(games[i:i + size])
        yield Chunk({g.digest: by_digest[g.digest] for g in part}, part, t.spec.executor.battle_timeout_s,
                    t.spec.decision_timeout_s)


def run_tournament(t: Tournament, out: str | Path, *, workers: int | None = None, scheduler: str | None = None,
                   dask_local: int | None = None, new: bool = False, progress: bool = True,
                   check: bool = True, on_start: Callable[[], None] | None = None) -> RunSummary:
    """Play every scheduled game not yet stored in ``out`` and store it (Parquet parts in ``out/runs``).

    ``on_start`` (if given) is called once every check that can refuse the file or the folder has passed, just
    before the first game (``tanksim tournament`` prints its header there, so a refused file prints only the
    error).

    Entrants are checked first (``check``), before anything is created: statically, with ``tanksim validate``'s
    wording (:func:`entrant_problems`), then loaded for real (:func:`check_entrants`; for a folder that does not
    exist yet before it is made, else those the remaining games need); any problem raises
    :class:`EntrantLoadFailure` before a game starts and, for a new folder, before it (or its lock) exists.
    Executor arguments override the file's ``executor`` block.  Ctrl-C stops cleanly (finished games are kept;
    ``interrupted`` is set).  The folder is locked for the call (a second writer gets
    :class:`sim.experiments.store.FolderInUse`: ``DIR: in use by pid N``) and verified first
    (:func:`prepare_folder`)."""
    from sim.experiments import store

    out = Path(out)
    if check:
        # the whole file first, before anything is created: the static check (validate's wording), then, for a
        # folder that does not exist yet, every remaining entrant loaded for real (so a failure leaves no folder)
        static = _static_entrant_problems(t)
        problems = list(static.values())
        if not out.exists():
            rest = [e for i, e in enumerate(t.entrants) if i not in static]
            problems += [f"{t.source}: {p}" for p in check_entrants(rest)]
            check = False   # loaded once here; not again under the lock
        if problems:
            raise EntrantLoadFailure(problems)
    with store.folder_lock(out, "tanksim tournament"):
        return _run_tournament(t, out, workers=workers, scheduler=scheduler, dask_local=dask_local, new=new,
                               progress=progress, check=check, on_start=on_start)


def _run_tournament(t: Tournament, out: Path, *, workers: int | None, scheduler: str | None,
                    dask_local: int | None, new: bool, progress: bool, check: bool,
                    on_start: Callable[[], None] | None = None) -> RunSummary:
    import warnings

    from tqdm import tqdm

    from sim.experiments import store

    manifest = prepare_folder(t, out, new, write=False)
    for w in manifest["warnings"]:
        warnings.warn(w, stacklevel=3)
    games = schedule(t)
    done = set(stored_games(out).query("status == 'ok'")["run_key"]) if store.part_paths(out, "runs") else set()
    todo = [g for g in games if g.run_key not in done]
    summary = RunSummary(out, len(games), len(games) - len(todo))
    ex = t.spec.executor
    workers = workers or ex.workers
    scheduler = scheduler or ex.scheduler
    dask_local = dask_local or ex.dask_local
    if todo and check:
        names = {e.name for g in todo for e in g.entrants}
        problems = check_entrants([e for e in t.entrants if e.name in names])
        if problems:
            raise EntrantLoadFailure([f"{t.source}: {p}" for p in problems])
    _write_manifest(out, manifest)  # only once the entrants load: a failed start leaves the folder unbound
    store.clean_partial(out)
    if on_start is not None:
        on_start()
    t0 = time.perf_counter()
    seq = store.next_part_number(out)
    info: dict[str, Any] = {}
    bar = tqdm(total=len(games), initial=summary.stored_before, unit="game", desc=t.spec.name, smoothing=0.05,
               disable=not progress, dynamic_ncols=True)
    gen = run_chunks(_chunks(t, todo), workers=workers, scheduler=scheduler, dask_local=dask_local,
                     pool_info=info) if todo else None
    try:
        for _chunk, rows in gen or ():
            store.write_run_part(out, seq, rows, GAME_SCHEMA)
            seq += 1
            summary.played += len(rows)
            summary.failed += sum(r["status"] != "ok" for r in rows)
            summary.forfeits += sum(bool(r.get("forfeit")) for r in rows)
            bar.update(len(rows))
            if summary.failed or summary.forfeits:
                bar.set_postfix(forfeits=summary.forfeits, failed=summary.failed, refresh=False)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        if gen is not None:
            gen.close()
        bar.close()
        summary.wall_s = time.perf_counter() - t0
        summary.executor, summary.workers = info.get("kind", ""), info.get("workers", 0)
    stored = stored_games(out)
    ok = set(stored.loc[stored["status"] == "ok", "run_key"])
    complete = all(g.run_key in ok for g in games)
    manifest["status"] = "complete" if complete else ("interrupted" if summary.interrupted else "partial")
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest["sessions"].append({"at": manifest["updated"], "executor": summary.executor,
                                 "workers": summary.workers, "played": summary.played, "failed": summary.failed,
                                 "wall_s": round(summary.wall_s, 3), "interrupted": summary.interrupted})
    _write_manifest(out, manifest)
    return summary


def load_games(t: Tournament, out: str | Path) -> pd.DataFrame:
    """The stored games of ``t``'s current schedule, in schedule order, with an ``order`` column (games not yet
    played are absent)."""
    games = schedule(t)
    order = pd.DataFrame({"run_key": [g.run_key for g in games], "order": [g.order for g in games]})
    df = stored_games(out)
    df = df.merge(order, on="run_key", how="inner")
    return df.sort_values("order", kind="stable").reset_index(drop=True)


def comparable(games: pd.DataFrame) -> pd.DataFrame:
    """A game table without worker ids and wall times, sorted by ``run_key`` (equal for equal tournaments on
    any executor)."""
    cols = [c for c in games.columns if c not in VOLATILE]
    return games[cols].sort_values("run_key").reset_index(drop=True)


# --- results ------------------------------------------------------------------------------------------------------
@dataclass
class Results:
    """Result tables of a tournament (all ``pandas.DataFrame``): ``leaderboard`` (one row per entrant, best
    first), ``head_to_head`` (row entrant's score against column entrant), ``by_scenario`` / ``by_ruleset`` (long
    form: entrant, label or rule set, games, W/D/L, score and interval), ``side_bias`` (the first side's score per
    scenario and over all games), ``forfeits`` (one row per forfeited game), ``failed`` (games that could not be
    played), ``games`` (the rated games), ``metagame`` (:class:`sim.tournaments.metagame.Metagame` for a round robin,
    else ``None``) and ``notes`` (why a section is missing)."""

    leaderboard: pd.DataFrame
    head_to_head: pd.DataFrame
    by_scenario: pd.DataFrame
    by_ruleset: pd.DataFrame
    side_bias: pd.DataFrame
    forfeits: pd.DataFrame
    failed: pd.DataFrame
    games: pd.DataFrame
    extra: dict[str, Any] = field(default_factory=dict)
    metagame: Any = None            # sim.tournaments.metagame.Metagame, or None (gauntlet, disabled, or not analysable)
    notes: list[str] = field(default_factory=list)


def side_bias(games: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """The first side's score per scenario label and over all games (``label == "(all)"``): games, ``seeds`` (the
    distinct dice streams: scenario label and seed), wins, draws, losses, score with Wilson interval, and ``biased``
    when the interval excludes 1/2.

    DECISION: games that share a seed share their dice (the two games of a mirrored pair; with the tournament's
    common random numbers, every pairing at one replicate), so they are not independent evidence about the
    scenario's first side.  The interval counts one observation per seed: Wilson's interval of the score at
    ``seeds`` trials (each game of a seed weighing ``seeds / games``), as if the games of one seed were one game --
    conservative, and exactly Wilson's over the games when every game has its own seed.  A tournament of one
    seed per scenario is never flagged ``biased`` (one dice stream tells nothing of the side)."""
    rows = []
    groups = [(lab, g) for lab, g in games.groupby("label", sort=False)] + [("(all)", games)]
    for lab, g in groups:
        s = g["score1"].astype(float)
        n = len(s)
        k = int(g[["label", "seed"]].astype(str).drop_duplicates().shape[0]) if n else 0
        p, lo, hi = R.wilson_interval(float(s.mean()) * k if n else 0.0, k, confidence)
        first = g["side1_name"].iloc[0] if lab != "(all)" and n else ""
        rows.append({"label": lab, "first_side": first, "games": n, "seeds": k, "wins": int((s == 1).sum()),
                     "draws": int((s == 0.5).sum()), "losses": int((s == 0).sum()), "score": p, "score_lo": lo,
                     "score_hi": hi, "biased": bool(n and (lo > 0.5 or hi < 0.5))})
    return pd.DataFrame(rows)


def analyse(t: Tournament, games: pd.DataFrame) -> Results:
    """Ratings and tables from the stored games of ``t`` (see :class:`Results`).  Games that failed are left
    out of every rating and listed in ``failed``."""
    rs = t.spec.ratings
    ok = games[games["status"] == "ok"].copy()
    failed = games[games["status"] != "ok"][["run_key", "label", "entrant1", "entrant2", "seed", "status",
                                             "error"]].reset_index(drop=True)
    rated = pd.DataFrame({"a": ok["entrant1"].astype(str), "b": ok["entrant2"].astype(str),
                          "score_a": ok["score1"].astype(float), "cluster": ok["pair_key"].astype(str),
                          "label": ok["label"].astype(str), "ruleset": ok["ruleset"].astype(str)})
    names = t.names
    opts = R.RatingOptions(confidence=rs.confidence, prior_draws=rs.prior_draws)
    board = R.standings(rated, names, opts)
    lost = ok[ok["forfeit"].fillna(False).astype(bool)]
    board["forfeits"] = board["entrant"].map(lost["forfeit_entrant"].value_counts()).fillna(0).astype(int)
    board["description"] = board["entrant"].map({e.name: e.describe() for e in t.entrants})
    h2h = R.head_to_head(rated, names)
    by_sc = R.score_table(rated, by=["label"], confidence=rs.confidence)
    by_rs = R.score_table(rated, by=["ruleset"], confidence=rs.confidence)
    bias = side_bias(ok.assign(label=ok["label"].astype(str)), rs.confidence)
    forfeits = lost[["run_key", "label", "entrant1", "entrant2", "seed", "forfeit_entrant", "fault_kind",
                     "reason"]].reset_index(drop=True)
    mg, notes = _metagame(t, rated)
    return Results(board, h2h, by_sc, by_rs, bias, forfeits, failed, ok.reset_index(drop=True), metagame=mg,
                   notes=notes)


def _metagame(t: Tournament, rated: pd.DataFrame) -> tuple[Any, list[str]]:
    """The meta-game of a round robin (``None`` and a note when it cannot or should not be computed)."""
    from sim.tournaments import metagame as G

    ms = t.spec.metagame
    if not ms.enabled:
        return None, []
    if t.spec.format != "round_robin":
        return None, ["meta-game: needs a round robin (in a gauntlet the field's entrants never meet)"]
    opts = G.MetagameOptions(population=ms.population, alpha=ms.alpha, bootstrap=t.spec.ratings.bootstrap,
                             seed=t.spec.root_seed, confidence=t.spec.ratings.confidence, t_max=ms.t_max)
    try:
        return G.analyse(rated, t.names, opts), []
    except G.MetagameError as exc:
        return None, [f"meta-game: {exc}"]


def _pivot(long: pd.DataFrame, col: str, names: Sequence[str]) -> pd.DataFrame:
    if long.empty:
        return pd.DataFrame(index=pd.Index(names, name="entrant"))
    p = long.pivot(index="entrant", columns=col, values="score")
    return p.reindex(index=[n for n in names if n in p.index], columns=list(dict.fromkeys(long[col])))


def write_results(res: Results, t: Tournament, out: str | Path, plots: bool = True) -> list[Path]:
    """Save every table as Parquet and CSV (``leaderboard``, ``head_to_head``, ``by_scenario``, ``by_ruleset``,
    ``side_bias``, ``forfeits``, ``games``; for a round robin ``metagame`` and ``metagame_fixation``, plus
    ``metagame.json``) and, with ``plots``, ``leaderboard.png`` (scores with Wilson intervals), ``elo.png`` (Elo
    with profile-likelihood intervals), ``head_to_head.png`` and ``metagame.png``.  Returns the paths."""
    out = Path(out)
    written = []
    tables = {"leaderboard": res.leaderboard, "head_to_head": res.head_to_head.reset_index(),
              "by_scenario": res.by_scenario, "by_ruleset": res.by_ruleset, "side_bias": res.side_bias,
              "forfeits": res.forfeits, "games": res.games}
    if not res.failed.empty:
        tables["failed"] = res.failed
    if res.metagame is not None:
        tables["metagame"] = res.metagame.table()
        fx = res.metagame.fixation_table()
        if not fx.empty:
            tables["metagame_fixation"] = fx.reset_index()
    for name, df in tables.items():
        df = df.copy()
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].astype("string")
        df.to_parquet(out / f"{name}.parquet", index=False)
        df.to_csv(out / f"{name}.csv", index=False)
        written += [out / f"{name}.parquet", out / f"{name}.csv"]
    if res.metagame is not None:
        from sim.tournaments import metagame as G

        (out / "metagame.json").write_text(json.dumps(G.to_json(res.metagame), indent=1), encoding="utf-8")
        written.append(out / "metagame.json")
    if plots and len(res.leaderboard):
        from sim.view.render import heatmap, interval_plot

        b = res.leaderboard
        conf = f"{t.spec.ratings.confidence:.0%}"
        labels = list(b["entrant"])
        interval_plot(str(out / "leaderboard.png"), labels, list(b["score"].fillna(0.5)),
                      list(b["score_lo"].fillna(0)), list(b["score_hi"].fillna(1)),
                      title=f"{t.spec.name}: score with Wilson {conf} interval",
                      ylabel="score (win = 1, draw = 1/2)", reference=0.5)
        rated = b[b["elo"].notna()]
        if len(rated):
            interval_plot(str(out / "elo.png"), list(rated["entrant"]), list(rated["elo"]), list(rated["elo_lo"]),
                          list(rated["elo_hi"]),
                          title=f"{t.spec.name}: Bradley-Terry Elo with {conf} profile-likelihood interval",
                          ylabel="Elo (mean 0)", reference=0.0)
            written.append(out / "elo.png")
        h = res.head_to_head.reindex(index=labels, columns=labels)
        heatmap(str(out / "head_to_head.png"), h.to_numpy(), labels, labels,
                title=f"{t.spec.name}: head to head (row's score against column)", xlabel="opponent",
                ylabel="entrant", colorbar_label="score")
        written += [out / "leaderboard.png", out / "head_to_head.png"]
        if res.metagame is not None:
            from sim.tournaments import metagame as G

            G.plot_metagame(res.metagame, str(out / "metagame.png"), title=f"{t.spec.name}: meta-game")
            written.append(out / "metagame.png")
    return written


def _signed(x: float) -> str:
    return "-" if pd.isna(x) else ("+inf" if x == float("inf") else "-inf" if x == float("-inf")
                                   else f"{x + 0.0:+.0f}")


def rank_disagreements(board: pd.DataFrame, min_gap: int = 2) -> list[str]:
    """One line per entrant whose openskill rank differs from its Elo rank by at least ``min_gap`` places."""
    out = []
    for r in board.to_dict("records"):
        if pd.notna(r["elo"]) and abs(int(r["os_rank"]) - int(r["rank"])) >= min_gap:
            out.append(f"{r['entrant']}: Elo rank {r['rank_label']}, openskill rank {r['os_rank_label']}")
    return out


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 game"``, ``"6 games"``: a count with its noun in agreement (``many`` for an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def format_results(res: Results, t: Tournament) -> str:
    """The printed report: leaderboard with intervals and how to read it, head-to-head, per-scenario and per-rule-set
    scores, side bias, forfeits, and for a round robin the meta-game."""
    conf = f"{t.spec.ratings.confidence:.0%}"
    b = res.leaderboard
    kind = ("round robin" if t.spec.format == "round_robin" else
            f"gauntlet: {', '.join(t.names[:t.spec.seeds])} against the field")
    lines = [f"Leaderboard ({kind}; {plural(len(res.games), 'game')}; score with Wilson {conf} interval, Elo with "
             f"{conf} profile-likelihood interval, openskill Plackett-Luce mu +- sigma)"]
    tab = pd.DataFrame({
        "#": b["rank_label"], "entrant": b["entrant"], "games": b["games"], "W": b["wins"], "D": b["draws"],
        "L": b["losses"],
        "score": [f"{s:.3f} [{lo:.3f}, {hi:.3f}]" if pd.notna(s) else "-"
                  for s, lo, hi in zip(b["score"], b["score_lo"], b["score_hi"])],
        "Elo": [f"{_signed(e)} [{_signed(lo)}, {_signed(hi)}]" if pd.notna(e) else "-"
                for e, lo, hi in zip(b["elo"], b["elo_lo"], b["elo_hi"])],
        "LOS": [f"{x:.0%}" if pd.notna(x) else "" for x in b["los_next"]],
        "openskill": [f"{m:.1f} +- {s:.1f} (#{r})" for m, s, r in zip(b["mu"], b["sigma"], b["os_rank_label"])],
        "forfeits": b["forfeits"]})
    lines.append(tab.to_string(index=False))
    lines += textwrap.wrap(R.RANKING_NOTE.format(k=t.spec.ratings.prior_draws, conf=conf), 116,
                           break_on_hyphens=False)
    if t.spec.format == "gauntlet":
        lines += textwrap.wrap("In a gauntlet the field's entrants never meet: their Elo differences come only "
                               "through their results against the seeds (the intervals include that).", 116,
                               break_on_hyphens=False)
    dis = rank_disagreements(b)
    if dis:
        lines.append("Where the two columns disagree by two places or more: " + "; ".join(dis) + ".")
    names = list(b["entrant"])
    lines += ["", "Head to head (row's score against column)",
              res.head_to_head.reindex(index=names, columns=names).to_string(float_format=lambda x: f"{x:.2f}",
                                                                            na_rep="-")]
    lines += ["", "Score per scenario", _pivot(res.by_scenario, "label", names).to_string(
        float_format=lambda x: f"{x:.2f}", na_rep="-")]
    lines += ["", "Score per rule set", _pivot(res.by_ruleset, "ruleset", names).to_string(
        float_format=lambda x: f"{x:.2f}", na_rep="-")]
    sb = res.side_bias
    lines += ["", f"Side bias (first side's score, Wilson {conf} interval counting one observation per seed: "
                  f"games of one seed share their dice)"]
    for row in sb.to_dict("records"):
        who = f" ({row['first_side']})" if row["first_side"] else ""
        flag = "  <- biased" if row["biased"] else ""
        lines.append(f"  {row['label']}{who}: {row['score']:.3f} [{row['score_lo']:.3f}, {row['score_hi']:.3f}] over "
                     f"{plural(int(row['games']), 'game')} of {plural(int(row['seeds']), 'seed')} (W {row['wins']} D "
                     f"{row['draws']} L {row['losses']}){flag}")
    if len(res.forfeits):
        lines += ["", f"Forfeits ({len(res.forfeits)})"]
        for r in res.forfeits.head(20).itertuples():
            lines.append(f"  {r.forfeit_entrant} ({r.fault_kind}) in {r.entrant1} v {r.entrant2} on {r.label}: "
                         f"{str(r.reason)[:160]}")
        if len(res.forfeits) > 20:
            lines.append(f"  ... {len(res.forfeits) - 20} more in forfeits.csv")
    if len(res.failed):
        lines += ["", f"Games that could not be played ({len(res.failed)}; left out of the ratings)"]
        for r in res.failed.head(10).itertuples():
            lines.append(f"  {r.entrant1} v {r.entrant2} on {r.label} (seed {r.seed}): {r.status}: {r.error}")
    if res.metagame is not None:
        from sim.tournaments import metagame as G

        lines += ["", G.format_metagame(res.metagame)]
    lines += [f"\n{n}" for n in res.notes]
    return "\n".join(lines)
