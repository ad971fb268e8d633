"""The rule-set interface: decisions, legality, shots, odds, outcomes, and the registry by name.

A rule set drives a turn as a generator of :class:`Decision` values (DESIGN.md "The sequence of play belongs to the
rule set"); the engine sends back each side's :class:`~sim.actions.Action`.  Odds are exact ``Fraction`` values
computed from a :class:`Shot`'s ``key`` (primitives only, cached); ``resolve`` rolls the same stages.

Rule sets never import Mesa.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Annotated, Any, Callable, ClassVar, Generator, Hashable, Iterable, Mapping, Sequence

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from sim.actions import Action, Pass
from sim.battle import Battle, BoardView
from sim.dice import DiceSource
from sim.messages import did_you_mean, printable_name, printable_text, problem_message

#: A catalog record's name or id (a vehicle's ``id``, ``name``; a listing): at most 200 characters and no control
#: characters (:func:`sim.messages.printable_name`), as a scenario's names -- a record is echoed by ``tanksim
#: catalog``, the reports and the app, so it must not forge an output line or send a terminal escape.
CatalogName = Annotated[str, Field(max_length=200), AfterValidator(printable_name)]
#: A catalog record's free text (``notes``, ``source``, ``basis``): at most 10,000 characters; newlines and tabs
#: but no other control characters (:func:`sim.messages.printable_text`).
CatalogText = Annotated[str, Field(max_length=10_000), AfterValidator(printable_text)]


class Illegal(str):
    """Why a shot or action is not allowed (a string; falsy checks are never used: test ``isinstance``)."""


@dataclass(frozen=True)
class Legal:
    """Lazy legality for one decision.

    ``contains(action)`` decides any action; ``reachable(actor)`` returns ``{state: (cost, path)}`` (a movement
    search run on demand, never a list of paths built up front; a path is a list or a tuple of states, and an
    answer that is a ``types.MappingProxyType`` with tuple paths is immutable as it is, so the observation hands it
    on without a copy); ``targets(actor)`` the target ids a shot may be
    aimed at now; ``modes`` the action modes (for ``activate``), ``specials`` the rule set's special action names;
    ``plan_to(actor, state, then)`` turns a reachable state into a :class:`~sim.actions.Plan`.  ``rams(actor)``,
    where a rule set gives it, lists the tank ids ``actor`` may ram now, in id order: exactly the ``e`` for which
    ``contains(Ram(actor, e))`` holds, asked on the same board (``None``: not enumerated, ask ``contains``).
    """

    contains: Callable[[Action], bool] = lambda a: isinstance(a, Pass)
    reachable: Callable[[int], Mapping[Hashable, tuple[int, Sequence[Any]]]] = lambda actor: {}
    targets: Callable[[int], tuple[int, ...]] = lambda actor: ()
    modes: tuple[str, ...] = ()
    specials: tuple[str, ...] = ()
    plan_to: Callable[..., Action] | None = None
    rams: Callable[[int], tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Decision:
    """A choice a ``side`` must make: ``kind`` names it (``activate``, ``move``, ``move_step``, ``fire``, ``react``,
    ``fire_again``, ``evade``, ...); ``actors`` may act, in order; ``legal`` is lazy; ``default`` is what happens
    when the controller has no opinion; ``context`` carries facts such as ``{"interrupted": True}``."""

    side: int
    kind: str
    actors: tuple[int, ...]
    legal: Legal
    default: Action
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Odds:
    """Exact odds of one shot: ``p_hit``, ``p_kill`` and ``values`` (every key of the rule set's odds JSON)."""

    p_hit: Fraction
    p_kill: Fraction
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def expected_damage(self) -> Fraction:
        return Fraction(self.values.get("expected_damage", 0))


@dataclass(frozen=True)
class Shot:
    """Who fires at what: ids, the face struck and the figures, plus ``key``, the hashable primitives the odds
    depend on (``ruleset.odds(shot.key)``).  ``info`` holds rule-set details for logs and geometry cases."""

    shooter: int
    target: int | None
    key: Hashable
    face: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hypo:
    """A hypothetical position of the shooter for ``Observation.odds(target, as_if=...)``: ``hex``, ``facing``,
    and whether it will have ``moved`` this turn."""

    hex: Any
    facing: int
    moved: bool = True


@dataclass(frozen=True)
class Outcome:
    """The end of a battle: ``winner`` (side index or ``None`` for a draw), ``reason``, victory ``points``."""

    winner: int | None
    reason: str
    points: tuple[int, ...] = ()


class RulesOptions(BaseModel):
    """Base for each rule set's ``Options`` (scenario ``ruleset.options``); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class EmptyExt(BaseModel):
    """No per-tank / per-hex extension fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class CaseError(ValueError):
    """A golden case or odds parameter set is malformed (unknown name, bad value)."""


#: The spellings of a yes/no parameter (``tanksim odds ... partial_cover=true``, an odds case's ``params``), the same
#: in every rule set: YAML 1.1's booleans (what a case file's ``yes`` already means) and ``1``/``0``, any case.
FLAG_SPELLINGS: Mapping[str, bool] = {"true": True, "yes": True, "on": True, "1": True,
                                      "false": False, "no": False, "off": False, "0": False}


def flag_value(v: object) -> bool | None:
    """A yes/no parameter's value: ``v`` itself when a bool, ``0``/``1`` as an int, or a string in
    :data:`FLAG_SPELLINGS` (case and surrounding spaces ignored); ``None`` when ``v`` is none of these (the caller
    refuses it, naming the parameter)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return {0: False, 1: True}.get(v)
    if isinstance(v, str):
        return FLAG_SPELLINGS.get(v.strip().lower())
    return None


class VehicleError(ValueError):
    """A vehicle record breaks its rule set's catalog schema.

    ``problems`` holds ``(field path, message)`` pairs; the path is relative to the record (``armour.front``,
    ``weapons[0].damage.keep``; ``""`` for the record as a whole).  ``vid`` names the vehicle when known."""

    def __init__(self, problems: Sequence[tuple[str, str]], vid: str | None = None):
        self.problems = tuple((str(p), str(m)) for p, m in problems)
        self.vid = vid
        text = "; ".join(f"{p}: {m}" if p else m for p, m in self.problems)
        super().__init__(f"vehicle {vid}: {text}" if vid is not None else text)


def validation_problems(exc: ValidationError, limit: int = 20, model: Any = None) -> list[tuple[str, str]]:
    """``(field path, message)`` pairs of a pydantic error, paths written ``a.b[0].c`` (at most ``limit``; a
    message never repeats the input value, so an unbounded value is never echoed).  Messages are
    :func:`sim.messages.problem_message`'s: a misspelt field names the closest of the validated ``model``'s fields."""
    out: list[tuple[str, str]] = []
    for e in exc.errors(include_url=False, include_context=False, include_input=False):
        path = ""
        for part in e["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            else:
                text = str(part)
                path += ("." if path else "") + (text if len(text) <= 40 else text[:37] + "...")
        msg = problem_message(e, model)
        out.append((path, msg if len(msg) <= 300 else msg[:297] + "..."))
        if len(out) >= limit:
            break
    return out


class Ruleset:
    """Base class of every rule set.  Subclasses set ``name``, ``Options``, ``TankExt``, ``HexExt`` and implement
    the methods below.  Instances are stateless apart from caches; one instance serves many battles.

    Required: ``vehicle``, ``has_turret``, ``setup``, ``play_turn``, ``reachable``, ``visible``, ``shot``, ``odds``,
    ``resolve``, ``outcome``, ``odds_from_params``, ``run_case``.  Optional: ``shot_params`` (odds parameters of a
    shot on a board, for ``tanksim odds --scenario``), ``terrain_names``; the search hooks ``play_activation`` and
    ``strength``.
    """

    name: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = RulesOptions
    TankExt: ClassVar[type[BaseModel]] = EmptyExt
    HexExt: ClassVar[type[BaseModel]] = EmptyExt
    #: Whether the rule set has ramming (doctrines such as ``rush`` ask).
    has_ramming: ClassVar[bool] = False
    #: Whether every legal shot's firer is a live tank that sees its target (the rule set's ``visible``): then an
    #: enemy its side does not see is no live tank's legal target, and ``Observation.known_ids`` asks the shots
    #: at it only of the decision's actors that are not live tanks.
    shots_need_sight: ClassVar[bool] = False

    # --- catalog ---------------------------------------------------------------------------------------------
    def vehicle(self, vid: str) -> Any:
        raise NotImplementedError

    def vehicle_ids(self) -> tuple[str, ...]:
        raise NotImplementedError

    def catalog_records(self) -> Mapping[str, Mapping[str, Any]]:
        """Every catalog vehicle as its catalog file stores it, keyed by id and without its ``id`` field: exactly
        the form a scenario's ``vehicles:`` block takes (``tanksim catalog RULESET ID`` prints it).  The caller
        must not change the mappings returned (copy them)."""
        raise NotImplementedError(f"rule set {self.name!r} has no vehicle records")

    def vehicle_from_record(self, vid: str, record: Mapping[str, Any], options: Any = None) -> Any:
        """Build vehicle ``vid`` from one record in the rule set's catalog schema (a scenario's ``vehicles:``
        entry), checked exactly as the packaged catalog is.  ``options`` are the scenario's rule-set options (or
        ``None`` for the defaults).  Raises :class:`VehicleError` naming each bad field."""
        raise VehicleError([("", f"rule set {self.name!r} does not take vehicle records")], vid)

    def has_turret(self, vehicle: Any) -> bool:
        return bool(getattr(vehicle, "turret", True))

    def terrain_names(self, options: Any = None) -> tuple[str, ...]:
        """The terrain names a map of this rule set may use under ``options`` (its validated options model, ``None``
        for the defaults): what scenario validation checks ``map.terrain`` tiles against."""
        return ("open",)

    def default_turn_limit(self, options: Any) -> int:
        return 20

    #: Whether :meth:`passable` reads only the map's terrain and the options (never wrecks, tanks or rule-set
    #: state): then distance fields are kept until the terrain changes instead of being rebuilt after each event
    #: that bumps the map version (a wreck).
    passable_is_static: bool = False

    def passable(self, b: BoardView, h: Any) -> bool:
        """Whether static terrain lets a tank enter ``h`` at all (used for long-range path guidance only)."""
        return h in b.map

    def impassable_terrains(self, b: BoardView) -> frozenset[str] | None:
        """The terrain names a tank may never enter on ``b``, when :meth:`passable` is static and exactly "on the
        map and its terrain not one of these" (then a distance field gets the impassable cells from the terrain,
        :meth:`sim.hexgrid.HexMap.cells_with_terrain`, instead of asking :meth:`passable` cell by cell); ``None``
        (the default) when :meth:`passable` reads more than the terrain name, e.g. per-hex state."""
        return None

    # --- play ------------------------------------------------------------------------------------------------
    def setup(self, b: Battle) -> None:
        """Fill in initial rule-set state (no dice, no events)."""

    def play_turn(self, b: Battle, dice: DiceSource) -> Generator[Decision, Action | None, None]:
        raise NotImplementedError

    def play_activation(self, b: Battle, dice: DiceSource, side: int, action: Action
                        ) -> Generator[Decision, Action | None, None]:
        """Search hook: on ``b`` (a search copy, :mod:`sim.search`), play what the answer ``action`` to ``side``'s
        ``activate`` decision at the current point of play starts -- the activation's own decision points
        (moves, shots, the other side's reactions), with the rules' own dice from ``dice`` -- and stop where the
        turn would ask for the next activation.  The caller guarantees ``action`` is legal at that decision
        (unchecked).  The engine never calls this; ``play_turn`` is the sequence of play.

        Raises ``NotImplementedError`` for a rule set without the hook (a search doctrine then plans without
        simulating the activation)."""
        raise NotImplementedError(f"rule set {self.name!r} has no play_activation hook")
        yield  # pragma: no cover  (makes this a generator)

    def strength(self, b: BoardView, tank: int, damage: int = 0) -> Fraction:
        """Search hook: the share of its fighting strength tank ``tank`` keeps on ``b``, 0..1 (1 intact, 0 out of
        the fight), as if it took ``damage`` more damage points (rule sets with damage points).  A planning
        doctrine's material count; never a rule.  Default: 1 for a live tank on the board, else 0 (a hit kills or
        does nothing that lasts)."""
        t = b.tanks[tank]
        return Fraction(1 if t.alive and t.hex is not None else 0)

    def reachable(self, b: BoardView, tank: int, budget: int) -> Mapping[Hashable, tuple[int, Sequence[Any]]]:
        return {}

    def visible(self, b: BoardView, side: int) -> tuple[int, ...]:
        return tuple(t.tank_id for t in b.enemies_of(side))

    def shot(self, b: BoardView, shooter: int, target: int, fire: Action | None = None, as_if: Hypo | None = None
             ) -> Shot | Illegal:
        raise NotImplementedError

    def shots(self, b: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None
              ) -> list[Shot | Illegal]:
        """The shots of one firer at many targets: ``[shot(b, shooter, t, None, as_if) for t in targets]``, the
        same answers in that order (what a rule set may answer faster, doing the firer's part once)."""
        return [self.shot(b, shooter, t, None, as_if) for t in targets]

    def shots_at(self, b: BoardView, shooters: Iterable[int], target: int) -> list[Shot | Illegal]:
        """The shots of many firers at one target: ``[shot(b, s, target) for s in shooters]``, the same answers in
        that order (what a rule set may answer faster, doing the target's part once)."""
        return [self.shot(b, s, target) for s in shooters]

    def odds(self, key: Hashable) -> Odds:
        raise NotImplementedError

    def logged_odds(self, key: Mapping[str, Any]) -> Odds:
        """Exact odds of a shot already played, from the ``key`` mapping its ``ShotResolved`` event logged (JSON
        values: lists for tuples); the same :meth:`odds` the shot was rolled against.  Used by the shots table
        (:func:`sim.runner.shot_rows`).  Default: :meth:`odds` of the mapping itself.  Raises ``TypeError`` /
        ``ValueError`` / :class:`CaseError` for a key this rule set never logs."""
        return self.odds(key)

    def resolve(self, b: Battle, shot: Shot, dice: DiceSource) -> Mapping[str, Any] | None:
        """Roll ``shot`` with ``dice`` and emit its events.  Returns ``None``, or the resolution (rule-set keys,
        e.g. ``asl``'s ``fired`` / ``rof_again``) where the rule set's sequence of play reads it; the engine never
        does."""
        raise NotImplementedError

    def outcome(self, b: BoardView) -> Outcome | None:
        raise NotImplementedError

    # --- odds command and golden cases ----------------------------------------------------------------------
    def odds_from_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``tanksim odds RULESET name=value ...``: the JSON object (fractions as strings).

        Raises :class:`CaseError` for unknown names or malformed values."""
        raise NotImplementedError

    def run_case(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate one golden case (``kind`` odds / outcome / geometry) and return the actual values for the keys
        its ``expect`` names (the harness compares them)."""
        raise NotImplementedError

    def shot_params(self, b: BoardView, shooter: int, target: int) -> dict[str, Any] | Illegal:
        raise NotImplementedError


_REGISTRY: dict[str, str] = {
    "panzer_squadron": "sim.rules.panzer_squadron:PanzerSquadron",
    "asl": "sim.rules.asl:ASL",
    "hummel_quest": "sim.rules.hummel_quest:HummelQuest",
}
_INSTANCES: dict[str, Ruleset] = {}


class UnknownRuleset(LookupError):
    pass


def register(name: str, target: str) -> None:
    """Register a rule set ``name`` as ``"package.module:Class"`` (plug-in rule sets)."""
    _REGISTRY[name] = target
    _INSTANCES.pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def module_names() -> tuple[str, ...]:
    """The modules of the registered rule sets (``"sim.rules.asl"``...), in registry order, without importing
    them: what a worker pool's forkserver imports once for all its workers (:mod:`sim.experiments.batch`)."""
    return tuple(dict.fromkeys(target.partition(":")[0] for target in _REGISTRY.values()))


def available() -> tuple[str, ...]:
    """Registered rule sets whose module imports (the others are not implemented yet)."""
    out = []
    for n in _REGISTRY:
        try:
            get(n)
        except UnknownRuleset:
            continue
        out.append(n)
    return tuple(out)


def get(name: str) -> Ruleset:
    """The rule set registered as ``name``; raises :class:`UnknownRuleset` (naming the known ones) otherwise."""
    if name in _INSTANCES:
        return _INSTANCES[name]
    if name not in _REGISTRY:
        raise UnknownRuleset(f"unknown rule set {name!r}{did_you_mean(name, _REGISTRY)}; known: {', '.join(_REGISTRY)}")
    mod, _, cls = _REGISTRY[name].partition(":")
    try:
        module = importlib.import_module(mod)
    except ModuleNotFoundError as exc:
        if exc.name == mod:
            raise UnknownRuleset(f"rule set {name!r} is not implemented yet (module {mod} missing)") from None
        raise
    inst = getattr(module, cls)()
    _INSTANCES[name] = inst
    return inst


#: An exact number as text: an integer, a decimal, a decimal with a small exponent, or ``p/q``.  Bounded, so that
#: text such as ``"1e9999999"`` (which ``Fraction`` would expand into a ten-million-digit integer) is refused.
_FRACTION_TEXT = re.compile(r"[+-]?(?:\d{1,40}(?:\.\d{0,40})?|\.\d{1,40})(?:[eE][+-]?\d{1,2})?"
                            r"|[+-]?\d{1,40}\s*/\s*\d{1,40}")


def parse_fraction(text: str) -> Fraction:
    """The exact value of ``text`` (``"53/200"``, ``"0.25"``, ``"1e-3"``, ``"7"``), for numbers that come from
    files, command lines or other processes.

    At most 40 digits per part and an exponent of at most two digits, so a hostile value cannot make ``Fraction``
    build a huge integer.  Raises ``ValueError`` (malformed or too long) or ``ZeroDivisionError`` (``p/0``)."""
    t = text.strip()
    if len(t) > 100 or not _FRACTION_TEXT.fullmatch(t):
        raise ValueError(f"not an exact number (at most 40 digits, e.g. 53/200 or 0.25): {t[:40]!r}")
    return Fraction(t)


def fraction_str(x: Fraction | int) -> str:
    """Exact fraction string in lowest terms: ``"53/200"``, ``"0"``, ``"1"``."""
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
