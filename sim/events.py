"""Frozen event records.  :func:`apply` is the only writer of battle state.

The battle applies each event at once in :meth:`sim.battle.BattleState.emit` and appends it, with the rolls that
produced it, to the log.  Replaying the log on the same scenario reproduces the final state (tested).
Rule-set state (markers, DT/OST, MP counters, depletion, ...) changes only through :class:`TankStateSet` and
:class:`BattleStateSet`; rule-set happenings with no state of their own are :class:`RuleEvent`.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from sim.hexgrid import Hex, HexMap


class TankRecord(Protocol):
    """The per-tank fields an event writes (:class:`sim.battle.TankState` has them)."""

    facing: int
    turret_facing: int | None
    rules_state: dict[str, Any]


class EventTarget(Protocol):
    """The narrow surface of the battle state that :func:`apply` writes: turn, end flag, rule-set state, tanks,
    terrain, and the moves that keep the board's occupancy and change records consistent (place a tank, change
    its status, turn its hull or turret).

    :class:`sim.battle.BattleState` implements it; this module imports nothing from :mod:`sim.battle`, so the
    dependency runs one way (battle -> events)."""

    turn: int
    ended: bool
    rules_state: dict[str, Any]

    @property
    def map(self) -> HexMap: ...

    @property
    def tanks(self) -> Sequence[TankRecord]: ...

    def _place(self, tid: int, h: Hex, facing: int) -> None: ...

    def _set_status(self, tid: int, status: str) -> None: ...

    def _turn(self, tid: int, facing: int | None, turret_facing: int | None) -> None: ...


class Status:
    """Tank status names.  Only ``ACTIVE`` tanks can fight; ``DESTROYED`` leaves a wreck on its hex;
    ``INCAPACITATED`` stays on its hex as a tank (Hummel Quest); the last three leave the board."""

    ACTIVE = "active"
    DESTROYED = "destroyed"
    INCAPACITATED = "incapacitated"
    WITHDRAWN = "withdrawn"
    EXITED = "exited"
    FLED = "fled"
    OFF_BOARD = frozenset({"withdrawn", "exited", "fled"})
    LOST = frozenset({"destroyed", "incapacitated", "withdrawn", "fled"})


@dataclass(frozen=True)
class Event:
    """Base event.  Subclasses are frozen value records; ``apply`` changes the battle (default: nothing)."""

    def apply(self, b: EventTarget) -> None:  # pragma: no cover - informational events
        return None

    @property
    def kind(self) -> str:
        return type(self).__name__

    def payload(self) -> dict[str, Any]:
        """The event's fields (in declaration order) as plain JSON-ready data (see :func:`_plain`)."""
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _field_names(type(self))
        return {n: _plain(getattr(self, n)) for n in names}

    def payload_json(self) -> str:
        """``to_json(self.payload())`` (the ``data`` text of the event's log row), in one conversion pass.

        Equal to it byte for byte (tested against the two-pass form): the payload is already plain except where a
        hex's coordinates are not ``int`` (the second pass of ``to_json`` converts them; so does :func:`_plain2`)."""
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _field_names(type(self))
        d: dict[str, Any] = {}
        for n in names:
            v = getattr(self, n)
            d[n] = v if type(v) in _SCALAR_TYPES else _plain2(v)
        return _ENCODER.encode(d)


#: Field names per event class, in declaration order (what ``dataclasses.fields`` gives; read once per class).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)

#: ``json.dumps(v, sort_keys=True, separators=(",", ":"))`` as one reused encoder (``dumps`` with options builds
#: one per call).  No circularity check: it only encodes the fresh containers :func:`_plain` builds (a cycle in an
#: event's value would recurse without end in ``_plain`` first).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)


def _plain(v: Any) -> Any:
    """``v`` as plain JSON-ready data: a hex as ``[q, r]``, mappings with string keys, sequences and sets as lists, a
    fraction as its text ``"p/q"``; strings, numbers, booleans and ``None`` as they are (checked first: most values
    of an event are).  Exact ``dict``, ``tuple`` and ``list`` take a fast path with the same result."""
    t = type(v)
    if t in _SCALAR_TYPES:
        return v
    if t is Hex:
        return [v.q, v.r]
    if t is dict:
        return {(k if type(k) is str else str(k)): (x if type(x) in _SCALAR_TYPES else _plain(x))
                for k, x in v.items()}
    if t is tuple or t is list:
        return [x if type(x) in _SCALAR_TYPES else _plain(x) for x in v]
    return _plain_other(v)


def _plain2(v: Any) -> Any:
    """``_plain(_plain(v))`` in one pass: :func:`_plain` again, except that a hex's coordinates are converted too
    (``_plain`` writes them as they are, and a second pass converts them where they are not plain)."""
    t = type(v)
    if t in _SCALAR_TYPES:
        return v
    if t is Hex:
        q, r = v
        if type(q) is int and type(r) is int:
            return [q, r]
        return [_plain(q), _plain(r)]
    if t is dict:
        return {(k if type(k) is str else str(k)): (x if type(x) in _SCALAR_TYPES else _plain2(x))
                for k, x in v.items()}
    if t is tuple or t is list:
        return [x if type(x) in _SCALAR_TYPES else _plain2(x) for x in v]
    if isinstance(v, Hex):
        return _plain([v.q, v.r])
    if isinstance(v, Mapping):
        return {str(k): _plain2(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, frozenset, set)):
        return [_plain2(x) for x in v]
    return _plain_other(v)


def _plain_other(v: Any) -> Any:
    """:func:`_plain` of a value that is not a scalar, ``Hex``, ``dict``, ``tuple`` or ``list`` of exactly that
    type (the general checks, in their order)."""
    if isinstance(v, Hex):
        return [v.q, v.r]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, frozenset, set)):
        return [_plain(x) for x in v]
    if hasattr(v, "numerator") and hasattr(v, "denominator") and not isinstance(v, (int, bool)):
        return str(v)
    return v


# --- structural events -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BattleStarted(Event):
    """First event of every log: the set-up (map cells with terrain, sides, tanks), so a log replays alone."""

    ruleset: str = ""
    map: Mapping[str, Any] = field(default_factory=dict)
    sides: tuple[Mapping[str, Any], ...] = ()
    tanks: tuple[Mapping[str, Any], ...] = ()
    objectives: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class TurnStarted(Event):
    turn: int = 0

    def apply(self, b: EventTarget) -> None:
        b.turn = self.turn


@dataclass(frozen=True)
class Moved(Event):
    """``tank`` now stands on ``hex`` facing ``facing`` (one step, a placement or a forced move)."""

    tank: int = 0
    hex: Hex = Hex(0, 0)
    facing: int = 0
    cost: int = 0

    def apply(self, b: EventTarget) -> None:
        b._place(self.tank, Hex(*self.hex), self.facing)


@dataclass(frozen=True)
class Pivoted(Event):
    """Hull turned to ``facing``; a turret turns with it (its offset kept) where ``turret_facing`` is given."""

    tank: int = 0
    facing: int = 0
    turret_facing: int | None = None
    cost: int = 0

    def apply(self, b: EventTarget) -> None:
        b._turn(self.tank, self.facing, self.turret_facing)


@dataclass(frozen=True)
class TurretTurned(Event):
    tank: int = 0
    turret_facing: int = 0

    def apply(self, b: EventTarget) -> None:
        b._turn(self.tank, None, self.turret_facing)


@dataclass(frozen=True)
class StatusChanged(Event):
    """``tank`` becomes ``status`` (see :class:`Status`) for ``reason``; a tank leaving the board keeps its row."""

    tank: int = 0
    status: str = Status.ACTIVE
    reason: str = ""
    by: int | None = None

    def apply(self, b: EventTarget) -> None:
        b._set_status(self.tank, self.status)


@dataclass(frozen=True)
class TankStateSet(Event):
    """Set ``tank.rules_state[key] = value`` (a frozen value: int, str, bool, tuple, None)."""

    tank: int = 0
    key: str = ""
    value: Any = None

    def apply(self, b: EventTarget) -> None:
        b.tanks[self.tank].rules_state[self.key] = self.value


@dataclass(frozen=True)
class BattleStateSet(Event):
    """Set ``battle.rules_state[key] = value``."""

    key: str = ""
    value: Any = None

    def apply(self, b: EventTarget) -> None:
        b.rules_state[self.key] = self.value


@dataclass(frozen=True)
class TerrainChanged(Event):
    hex: Hex = Hex(0, 0)
    terrain: str = "open"

    def apply(self, b: EventTarget) -> None:
        b.map.set_terrain(Hex(*self.hex), self.terrain)


# --- informational events --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Activated(Event):
    """``tank`` of ``side`` starts an activation (or a Hummel Quest turn, an ASL phase action) in ``mode``."""

    side: int = 0
    tank: int = 0
    mode: str = ""


@dataclass(frozen=True)
class ShotResolved(Event):
    """One shot: ``key`` are the odds primitives, ``result`` the outcome name, ``details`` the figures
    (modified roll, bonus, total, face, ...).  Effects follow as their own events."""

    shooter: int = 0
    target: int | None = None
    result: str = ""
    hit: bool = False
    kill: bool = False
    key: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    reaction: bool = False


@dataclass(frozen=True)
class RuleEvent(Event):
    """A rule-set happening with no state of its own (initiative, movement allowance, ram, panic, ...)."""

    name: str = ""
    tank: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionRejected(Event):
    """A controller's illegal action (not a fault): logged, and the decision's default applied instead."""

    side: int = 0
    tank: int | None = None
    decision: str = ""
    action: str = ""


@dataclass(frozen=True)
class PolicyFault(Event):
    """A controller raised, returned a wrong type or was too slow; its answer became the default / a pass."""

    side: int = 0
    tank: int | None = None
    decision: str = ""
    fault: str = ""
    message: str = ""


@dataclass(frozen=True)
class BattleEnded(Event):
    winner: int | None = None
    reason: str = ""
    points: tuple[int, ...] = ()

    def apply(self, b: EventTarget) -> None:
        b.ended = True


EVENT_TYPES: dict[str, type[Event]] = {
    c.__name__: c for c in (BattleStarted, TurnStarted, Moved, Pivoted, TurretTurned, StatusChanged, TankStateSet,
                            BattleStateSet, TerrainChanged, Activated, ShotResolved, RuleEvent, ActionRejected,
                            PolicyFault, BattleEnded)
}


def event_from_payload(kind: str, payload: Mapping[str, Any]) -> Event:
    """Rebuild an event from :meth:`Event.payload` (JSON-decoded), e.g. a log row read from Parquet.

    Raises ``KeyError`` for an unknown kind.
    """
    cls = EVENT_TYPES[kind]
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in payload:
            continue
        v = payload[f.name]
        if f.name == "hex" and v is not None:
            v = Hex(*v)
        elif isinstance(v, list):
            v = _freeze(v)
        kwargs[f.name] = v
    return cls(**kwargs)


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def apply(b: EventTarget, e: Event) -> None:
    """Apply ``e`` to ``b``: the only writer of battle state (called by ``BattleState.emit`` and by replay)."""
    e.apply(b)


def to_json(v: Any) -> str:
    """``v`` (see :func:`_plain`) as compact JSON text with sorted keys, e.g. a log row's ``data``."""
    return _ENCODER.encode(_plain(v))
