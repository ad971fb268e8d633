"""The battle: board, tanks, per-rule-set state, version counter and the event log.

What a rule may touch is said by two protocols (docs/DESIGN.md, "Layout"):

* :class:`BoardView` -- the read-only board: map, tanks, sides, options, rule-set state, turn, log and the
  occupancy queries.  Legality, sight, odds, reachability and outcome take one; so do observations.
* :class:`Battle` -- a :class:`BoardView` that also has :meth:`~Battle.emit`, the only way to change the state.
  The sequence of play (``setup``, ``play_turn``, ``resolve``) takes one.

:class:`BattleState` implements both: ``emit`` applies the event at once (:func:`sim.events.apply`), appends it to
the log with the dice rolled for it, and bumps the version.  It has no Mesa in it, so rule tests build one directly
(:func:`MemoryBattle`); the Mesa model (:mod:`sim.model`) wraps it.  :class:`HypoView` is a :class:`BoardView`
only (a what-if placement of one tank).
"""
from __future__ import annotations

import weakref
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Protocol, Sequence

from sim.dice import DiceSource, Roll
from sim.events import Event, Status, apply
from sim.hexgrid import Hex, HexMap


@dataclass
class TankState:
    """One tank's state.  ``tank_id`` is its index in scenario order; ``side`` the side index (0, 1).

    ``vehicle`` is the rule set's catalog record (read-only); ``hex`` is ``None`` once the tank left the board;
    ``facing`` / ``turret_facing`` are vertex indices 0..5 (``turret_facing`` is ``None`` for turretless vehicles);
    ``rules_state`` holds the rule set's per-tank values, changed only by events.
    """

    tank_id: int
    label: str
    side: int
    vehicle_id: str
    vehicle: Any
    hex: Hex | None
    facing: int
    turret_facing: int | None = None
    status: str = Status.ACTIVE
    rules_state: dict[str, Any] = field(default_factory=dict)
    ext: Mapping[str, Any] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        """True while the tank can fight (status ``active``)."""
        return self.status == Status.ACTIVE

    @property
    def on_board(self) -> bool:
        return self.hex is not None


@dataclass(frozen=True)
class SideInfo:
    name: str
    role: str = "none"
    exit_edge: str | None = None


@dataclass(frozen=True)
class LogEntry:
    """One log row: sequence number, turn, the event and the natural rolls it consumed."""

    seq: int
    turn: int
    event: Event
    rolls: tuple[Roll, ...] = ()


#: :attr:`TankState.alive` is ``status == _ACTIVE`` (the hot scans compare it directly).
_ACTIVE = Status.ACTIVE


class BoardView(Protocol):
    """The battle as a rule may read it (no ``emit``): what legality, sight, odds, reachability, outcome and
    observations are allowed to touch.  Tank records are read, never assigned to (events do that).

    ``ruleset`` is the rule-set object (:class:`sim.rules.base.Ruleset`) and ``options`` its validated options
    model; both are ``Any`` here because the engine core imports nothing from the rules (each rule set reads its
    own options type)."""

    @property
    def map(self) -> HexMap: ...
    @property
    def tanks(self) -> Sequence[TankState]: ...
    @property
    def sides(self) -> Sequence[SideInfo]: ...
    @property
    def ruleset(self) -> Any: ...
    @property
    def options(self) -> Any: ...
    @property
    def rules_state(self) -> Mapping[str, Any]: ...
    @property
    def turn(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def ended(self) -> bool: ...
    @property
    def log(self) -> Sequence[LogEntry]: ...
    @property
    def objectives(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def turn_limit(self) -> int: ...
    @property
    def hex_size_m(self) -> int: ...
    @property
    def kill_points(self) -> int: ...
    @property
    def exit_points(self) -> int: ...
    @property
    def hex_ext(self) -> Mapping[Hex, Any]: ...
    @property
    def hidden_tanks(self) -> tuple[int, ...]: ...

    def hiding(self, tank_ids: Iterable[int]) -> AbstractContextManager[None]:
        """The board as a side knows it for the length of a block (see :meth:`BattleState.hiding`)."""
        ...
    def tank(self, tid: int) -> TankState: ...
    def occupants(self, h: tuple[int, int]) -> tuple[int, ...]: ...
    def live_tanks(self, side: int | None = None) -> list[TankState]: ...
    def enemies_of(self, side: int) -> list[TankState]: ...
    def wrecks(self) -> list[TankState]: ...
    def side_ids(self) -> range: ...
    def events(self) -> Iterator[Event]: ...
    def terrain(self, h: tuple[int, int]) -> str: ...


class Battle(BoardView, Protocol):
    """A :class:`BoardView` that may change: :meth:`emit` applies an event and logs it (the sequence of play,
    ``setup`` and ``resolve`` take one)."""

    def emit(self, e: Event) -> None: ...


#: A point in a battle's :attr:`BattleState.state_changes` (:func:`tanks_named_since`): the list itself, its
#: length then, and the battle's ``version - len(log)`` then (which a change made without an event moves).
ChangeMark = tuple[list[int], int, int]


def tanks_named_since(battle: BattleState, mark: ChangeMark | None) -> tuple[ChangeMark, set[int] | None]:
    """``(now, named)`` for a table over ``battle``'s tanks kept across versions and patched from what events
    changed (issue 14): ``now`` is the mark to keep with the table; ``named`` the ids of the tanks that events
    named since ``mark`` (empty: nothing changed), or ``None`` when the table must be built afresh from every
    tank -- no mark yet, a mark of another list (another battle's, a reset), or the version moved without an
    event (a change made by hand).  A tank's hex, facing, status and ``rules_state`` change only through events
    naming it (:attr:`BattleState.state_changes`)."""
    sc = battle.state_changes
    n = len(sc)
    now = (sc, n, battle.version - len(battle.log))
    if mark is None or mark[0] is not sc or mark[2] != now[2] or mark[1] > n:
        return now, None
    if mark[1] == n:
        return now, set()
    k = len(battle.tanks)
    return now, {i for i in sc[mark[1]:n] if type(i) is int and 0 <= i < k}


class BattleState:
    """Board + tanks + log (implements :class:`Battle`).  ``emit`` is the only way to change it.

    Attributes: ``map`` (:class:`HexMap`, node attribute ``tanks`` = ids on that hex), ``tanks`` (list indexed by
    tank id), ``sides`` (list of :class:`SideInfo`), ``ruleset`` (the rule set object), ``options`` (its validated
    options), ``rules_state`` (battle-level rule-set values), ``turn``, ``log``, ``version``, ``ended``,
    ``objectives`` (list of ``{hex, points, ...}``), ``turn_limit``, ``hex_size_m``.
    """

    def __init__(self, hexmap: HexMap, tanks: Iterable[TankState], sides: Iterable[SideInfo], ruleset: Any,
                 options: Any = None, *, objectives: Iterable[Mapping[str, Any]] = (), turn_limit: int = 20,
                 hex_size_m: int = 10, kill_points: int = 1, exit_points: int = 1,
                 dice: DiceSource | None = None, hex_ext: Mapping[Hex, Any] | None = None):
        self.map = hexmap
        self.tanks: list[TankState] = list(tanks)
        self.sides: list[SideInfo] = list(sides)
        self.ruleset = ruleset
        self.options = options
        self.objectives = [dict(o) for o in objectives]
        self.turn_limit = turn_limit
        self.hex_size_m = hex_size_m
        self.kill_points = kill_points
        self.exit_points = exit_points
        self.hex_ext = dict(hex_ext or {})
        self.rules_state: dict[str, Any] = {}
        self.turn = 0
        self.version = 0
        self.ended = False
        self.log: list[LogEntry] = []
        self.dice = dice
        #: Called with each new log entry, after the event has applied (the model counts shots with one).
        self.listeners: list[Callable[[LogEntry], None]] = []
        self._hidden: tuple[int, ...] = ()
        #: Ids of the tanks whose hex, facing, turret facing or status changed, one entry per change in log order
        #: (what incremental caches such as :class:`SightMatrix` read to redo only the pairs of those tanks).
        self.tank_changes: list[int] = []
        #: Ids of the tanks an event changed in any way (hex, facing, turret facing, status or ``rules_state``), one
        #: entry per event naming a ``tank`` (:class:`sim.events.Moved`, ``Pivoted``, ``TurretTurned``,
        #: ``StatusChanged``, ``TankStateSet``; informational events naming one add harmless extra entries), in log
        #: order: what caches kept across versions read to patch only the answers about those tanks
        #: (:class:`agents.observation.Observation`'s lasting memo).  No other event changes a tank.
        self.state_changes: list[int] = []
        #: Per entry of :attr:`state_changes`, the tank's hex just before and just after that event (``None``: off
        #: the board): what caches of answers that read the occupants of some hexes (an ASL shot's LOS line, asl.md
        #: 6.1) read to drop only the answers whose hexes a changed tank left or entered.
        self.state_change_hexes: list[tuple[Hex | None, Hex | None]] = []
        #: Tank ids on each hex (live, wrecked or incapacitated), sorted; hexes without tanks are left out.  A
        #: plain dict of the battle's own (not the map graph's node attributes): a side's view (:meth:`hiding`)
        #: and every movement search read and change it many times per decision.
        self.occupancy: dict[tuple[int, int], tuple[int, ...]] = {}
        for t in self.tanks:
            if t.hex is not None:
                self._occupy(t.tank_id, t.hex)

    # --- writing ----------------------------------------------------------------------------------------------
    def emit(self, e: Event) -> None:
        """Apply ``e`` now, append it to the log with the rolls consumed since the last event, bump the version.

        Raises ``RuntimeError`` inside :meth:`hiding` (a side's view of the board is read-only)."""
        if self._hidden:
            raise RuntimeError(f"cannot emit {e.kind} while tanks {list(self._hidden)} are hidden (a side's view)")
        tid = getattr(e, "tank", None)
        t = self.tanks[tid] if type(tid) is int and 0 <= tid < len(self.tanks) else None
        before = t.hex if t is not None else None
        apply(self, e)
        if type(tid) is int:
            self.state_changes.append(tid)
            self.state_change_hexes.append((before, t.hex if t is not None else None))
        rolls = self.dice.take() if self.dice is not None else ()
        entry = LogEntry(len(self.log), self.turn, e, rolls)
        self.log.append(entry)
        self.version += 1
        for fn in self.listeners:
            fn(entry)

    @property
    def hidden_tanks(self) -> tuple[int, ...]:
        """The tanks taken off the board by the :meth:`hiding` block under way (``()`` outside one)."""
        return self._hidden

    @contextmanager
    def hiding(self, tank_ids: Iterable[int]) -> Iterator[None]:
        """The board as a side knows it, for the length of the block: the tanks ``tank_ids`` (live enemies the side
        cannot see) are off the board -- ``hex`` ``None``, in no hex's occupants, not in ``live_tanks`` -- so every
        rule-set question asked inside (movement searches, legality, sight, shots) is answered without them.

        Used by :class:`agents.observation.Observation` only.  No event is emitted and no version changes: the
        block must be read-only (``emit`` raises inside it), and the tanks are put back exactly, in their hexes,
        on leaving it (also on an exception).  Nested blocks must hide the same tanks (``RuntimeError``
        otherwise)."""
        ids = tuple(sorted(set(tank_ids)))
        if self._hidden:
            if ids != self._hidden:
                raise RuntimeError(f"tanks {list(self._hidden)} are already hidden; cannot hide {list(ids)}")
            yield
            return
        saved = [(tid, h) for tid in ids if (h := self.tanks[tid].hex) is not None]
        occ = self.occupancy
        # the occupants of the hexes the hidden tanks stand on, as they are (put back as they were on leaving: the
        # block is read-only, so nothing else changes them meanwhile), in the order the tanks are listed
        before: dict[tuple[int, int], tuple[int, ...]] = {h: occ[h] for _tid, h in saved}
        gone = set(ids)
        for tid, _h in saved:
            self.tanks[tid].hex = None
        for cell, here in before.items():
            left = tuple(x for x in here if x not in gone)
            if left:
                occ[cell] = left
            else:
                del occ[cell]
        self._hidden = ids
        try:
            yield
        finally:
            self._hidden = ()
            for tid, h in saved:
                self.tanks[tid].hex = h
            occ.update(before)

    def _occupy(self, tid: int, h: Hex) -> None:
        self.occupancy[h] = tuple(sorted(self.occupancy.get(h, ()) + (tid,)))

    def _vacate(self, tid: int, h: Hex) -> None:
        left = tuple(x for x in self.occupancy.get(h, ()) if x != tid)
        if left:
            self.occupancy[h] = left
        else:
            self.occupancy.pop(h, None)

    def _place(self, tid: int, h: Hex, facing: int) -> None:
        t = self.tanks[tid]
        if t.hex is not None:
            self._vacate(tid, t.hex)
        if h not in self.map:
            raise ValueError(f"tank {t.label} moved off the map to {tuple(h)}")
        t.hex = h
        self._occupy(tid, h)
        if t.turret_facing is not None:
            t.turret_facing = (t.turret_facing + facing - t.facing) % 6
        t.facing = facing
        self.tank_changes.append(tid)

    def _turn(self, tid: int, facing: int | None, turret_facing: int | None) -> None:
        """Turn tank ``tid``'s hull to ``facing`` and/or its turret to ``turret_facing`` (``None``: unchanged)."""
        t = self.tanks[tid]
        if facing is not None:
            t.facing = facing
        if turret_facing is not None:
            t.turret_facing = turret_facing
        self.tank_changes.append(tid)

    def _set_status(self, tid: int, status: str) -> None:
        t = self.tanks[tid]
        t.status = status
        self.tank_changes.append(tid)
        if status in Status.OFF_BOARD and t.hex is not None:
            h = t.hex
            self._vacate(tid, h)
            t.hex = None
            self.map.bump((h,))
        elif status == Status.DESTROYED:
            self.map.bump(() if t.hex is None else (t.hex,))  # a wreck is a new obstacle for sight in some rule sets

    # --- reading (BoardView) ----------------------------------------------------------------------------------
    def tank(self, tid: int) -> TankState:
        return self.tanks[tid]

    def occupants(self, h: tuple[int, int]) -> tuple[int, ...]:
        """Tank ids (live, wrecked or incapacitated) on hex ``h``; empty off the map."""
        return self.occupancy.get(h, ())

    def live_tanks(self, side: int | None = None) -> list[TankState]:
        """Tanks that can fight (status active, on the board), in id order; of ``side`` if given (one pass over the
        tanks, :attr:`TankState.alive` written out: every query of every decision asks)."""
        if side is None:
            return [t for t in self.tanks if t.status == _ACTIVE and t.hex is not None]
        return [t for t in self.tanks if t.side == side and t.status == _ACTIVE and t.hex is not None]

    def enemies_of(self, side: int) -> list[TankState]:
        """The live tanks (:meth:`live_tanks`) of the other sides, in id order."""
        return [t for t in self.tanks if t.side != side and t.status == _ACTIVE and t.hex is not None]

    def wrecks(self) -> list[TankState]:
        return [t for t in self.tanks if t.status == Status.DESTROYED and t.hex is not None]

    def side_ids(self) -> range:
        return range(len(self.sides))

    def events(self) -> Iterator[Event]:
        return (e.event for e in self.log)

    def terrain(self, h: tuple[int, int]) -> str:
        return self.map.terrain(h)


def MemoryBattle(ruleset: Any, *, cells: Iterable[tuple[int, int]], tanks: Iterable[Mapping[str, Any]] = (),
                 terrain: Mapping[tuple[int, int], str] | None = None, options: Any = None,
                 sides: Iterable[SideInfo] | None = None, dice: DiceSource | None = None, **kw: Any) -> BattleState:
    """A battle built in memory for rule tests, with no scenario file and no Mesa.

    ``tanks`` are mappings with ``label``, ``side``, ``vehicle`` (catalog id), ``hex``, ``facing`` and optional
    ``turret_facing`` and ``rules_state``; the rule set fills in its own initial state.
    Raises ``KeyError`` for an unknown vehicle id.
    """
    from sim.hexgrid import as_hex

    m = HexMap(cells, terrain)
    if options is None:
        options = ruleset.Options()
    states = []
    for i, spec in enumerate(tanks):
        veh = ruleset.vehicle(spec["vehicle"])
        facing = int(spec.get("facing", 0))
        states.append(TankState(
            tank_id=i, label=spec.get("label", f"t{i}"), side=int(spec.get("side", 0)), vehicle_id=spec["vehicle"],
            vehicle=veh, hex=as_hex(spec["hex"]), facing=facing,
            turret_facing=spec.get("turret_facing", facing if ruleset.has_turret(veh) else None),
            rules_state=dict(spec.get("rules_state", {})), ext=dict(spec.get("ext", {}))))
    sides = list(sides or [SideInfo("side 1", "attacker"), SideInfo("side 2", "defender")])
    b = BattleState(m, states, sides, ruleset, options, dice=dice, **kw)
    ruleset.setup(b)
    return b


class _TanksOverlay:
    """What :class:`HypoView` and :class:`StandInView` share: a read-only view of the battle ``_b`` whose ``tanks``
    list replaces some of its tanks; everything else reads through to the battle, and it has no ``emit``."""

    _b: BoardView
    tanks: list[TankState]
    _kind = "a view"

    def __getattr__(self, name: str) -> Any:
        if name == "emit":
            raise AttributeError(f"{self._kind} cannot emit events")
        return getattr(self._b, name)

    def tank(self, tid: int) -> TankState:
        return self.tanks[tid]

    def live_tanks(self, side: int | None = None) -> list[TankState]:
        return [t for t in self.tanks if t.alive and t.hex is not None and (side is None or t.side == side)]

    def enemies_of(self, side: int) -> list[TankState]:
        return [t for t in self.live_tanks() if t.side != side]

    def wrecks(self) -> list[TankState]:
        return self._b.wrecks()


class HypoView(_TanksOverlay):
    """A read-only view of a battle with one tank placed elsewhere (``hex``, ``facing``): what-if queries such as
    "what are the enemies' kill odds against me if I stand there?".  Everything else reads through to the battle;
    it has no ``emit`` (a :class:`BoardView`, not a :class:`Battle`)."""

    _kind = "a hypothetical view"

    def __init__(self, b: BoardView, tank: int, hex: Hex, facing: int):
        import copy as _copy

        self._b = b
        self._tid = tank
        moved = _copy.copy(b.tanks[tank])
        moved.rules_state = dict(moved.rules_state)
        old = moved.hex
        if moved.turret_facing is not None:
            moved.turret_facing = (moved.turret_facing + facing - moved.facing) % 6
        moved.hex, moved.facing = hex, facing
        self.tanks = list(b.tanks)
        self.tanks[tank] = moved
        self._old, self._new = old, hex

    @property
    def base(self) -> BoardView:
        """The board this view reads through to (a battle, a search copy or another view)."""
        return self._b

    @property
    def moved(self) -> tuple[int, Hex | None, Hex]:
        """``(tank id, its hex on the base board (None if off it), its hex in this view)``: the one tank the view
        places elsewhere (incremental rule-set caches adjust the base board's answers by it)."""
        return self._tid, self._old, self._new

    def occupants(self, h: tuple[int, int]) -> tuple[int, ...]:
        occ = tuple(x for x in self._b.occupants(h) if x != self._tid)
        if h == self._new:
            occ = tuple(sorted(occ + (self._tid,)))
        return occ


class StandInView(_TanksOverlay):
    """A read-only view of a battle in which some tanks are replaced by stand-in records: ``stand_ins`` maps a
    tank id to a :class:`TankState` read in its place (the state a side remembers of an enemy it no longer sees:
    :meth:`agents.observation.Observation.threat`).  A stand-in must stand where the battle's tank does (the same
    ``hex``, normally ``None``: a hidden enemy on the side's view), so occupancy is the battle's; everything else
    reads through to the battle.  Like :class:`HypoView` it has no ``emit``."""

    _kind = "a stand-in view"

    def __init__(self, b: BoardView, stand_ins: Mapping[int, TankState]):
        self._b = b
        self.tanks = list(b.tanks)
        for tid, t in stand_ins.items():
            if t.hex != self.tanks[tid].hex:
                raise ValueError(f"stand-in of tank {tid} on {t.hex}, the tank on {self.tanks[tid].hex}")
            self.tanks[tid] = t


class SightMatrix:
    """Which enemies each side sees, kept up to date lazily and incrementally: the rule set's pair test
    ``los(b, s, e)`` ("does live tank ``s`` see live enemy ``e``") is asked only when a query needs the pair and
    the pair may have changed since it was last asked.

    A pair's answer must depend only on the two tanks (hex, facing, turret facing, status) and on obstacles: by
    default those in the sight ellipse of their hexes (``distance(h, s) + distance(h, e) <= distance(s, e) +
    slack``, :meth:`sim.hexgrid.HexMap.pair_cached`); a rule set that knows better gives ``footprint(b, s, e)``,
    asked right after ``los(b, s, e)``: a predicate ``touches(h)`` that is true for every hex whose obstacles
    could change that answer (or ``None``: the ellipse).  Each known pair is kept as ``(sees, n, touches)``,
    valid up to ``n`` entries of ``HexMap.changes``.

    On a query, the tanks listed in ``Battle.tank_changes`` since the last one have all their pairs forgotten
    (their answers read the tanks), and an unlocated change in ``HexMap.changes`` (a terrain change) forgets all.
    A located change (a wreck appearing or leaving) forgets nothing at once: a pair is checked against the changes
    logged since it was last valid when a query reads it (:meth:`_valid`), so only the pairs a query needs are
    checked, each against only its own footprint.  :meth:`visible` then asks, for each enemy, the known pairs that
    saw it (until one is still valid), else the other pairs one by one until one sees it: an enemy that many
    tanks see costs one pair check, not one test per tank.  Get one with :func:`sight_matrix` (one per battle
    object and rule-set ``tag``; a search copy gets its own)."""

    def __init__(self, b: BattleState, los: Callable[[BattleState, int, int], bool], slack: int = 3,
                 footprint: Callable[[BattleState, int, int], Callable[[Hex], bool] | None] | None = None):
        self.b = b
        self.los = los
        self.slack = slack
        self.footprint = footprint
        self.n_tanks = -1
        self.n_changes = -1
        #: The pairs known: ``(s, e) -> (sees, len(map.changes) when last known valid, touches or None)``.
        self.seen: dict[tuple[int, int], tuple[bool, int, Callable[[Hex], bool] | None]] = {}
        #: Per enemy id: the tanks whose known pair says they see it (checked for staleness when read).
        self.seers: list[set[int]] = [set() for _ in b.tanks]
        #: Per enemy id: the tank last found to see it (kept after its pair is forgotten: :meth:`visible` tries it
        #: first; only the order of the pair tests reads it, never an answer).
        self.hint: list[int | None] = [None] * len(b.tanks)
        #: Per side: ``{enemy: (len(tank_changes), len(map.changes))}`` when :meth:`visible` last found that no
        #: tank of the side sees it (every pair known not to, valid up to then): what lets a later query look only
        #: at the pairs of the tanks changed since.
        self.unseen: dict[int, dict[int, tuple[int, int]]] = {}
        #: Per side: ``((len(tank_changes), len(map.changes)) when asked, the answer)``.
        self.last: dict[int, tuple[tuple[int, int], tuple[int, ...]]] = {}

    def _set(self, s: int, e: int) -> bool:
        b = self.b
        ts, te = b.tanks[s], b.tanks[e]
        v = bool(ts.alive and te.alive and ts.hex is not None and te.hex is not None and self.los(b, s, e))
        if v:
            self.hint[e] = s
        fp = self.footprint(b, s, e) if self.footprint is not None and ts.hex is not None and te.hex is not None \
            else None
        self.seen[(s, e)] = (v, len(b.map.changes), fp)
        if v:
            self.seers[e].add(s)
        return v

    def _forget(self, s: int, e: int) -> None:
        if self.seen.pop((s, e), (False,))[0]:
            self.seers[e].discard(s)

    def _valid(self, s: int, e: int, ent: tuple[bool, int, Callable[[Hex], bool] | None]) -> bool:
        """Whether the known pair ``ent`` of ``s`` -> ``e`` survives the located changes logged since it was last
        valid (none of them ``touches`` it, or without a footprint none is in the pair's sight ellipse); if so it
        is marked valid up to now, else forgotten."""
        ch = self.b.map.changes
        n = len(ch)
        if ent[1] == n:
            return True
        fp = ent[2]
        if fp is not None:
            for c in ch[ent[1]:]:
                if fp(c):  # type: ignore[arg-type]  # update() cleared the pairs on an unlocated change
                    self._forget(s, e)
                    return False
        else:
            tanks = self.b.tanks
            a, z = tanks[s].hex, tanks[e].hex
            assert a is not None and z is not None  # a pair of tanks off the board is forgotten by update()
            aq, ar = a
            bq, br = z
            x, y = bq - aq, br - ar
            lim = abs(x) + abs(y) + abs(x + y) + 2 * self.slack  # twice (distance + slack): hex distances doubled
            for c in ch[ent[1]:]:
                assert c is not None
                x, y, u, w = c[0] - aq, c[1] - ar, c[0] - bq, c[1] - br
                if abs(x) + abs(y) + abs(x + y) + abs(u) + abs(w) + abs(u + w) <= lim:
                    self._forget(s, e)
                    return False
        self.seen[(s, e)] = (ent[0], n, fp)
        return True

    def update(self) -> None:
        """Forget the pairs of the tanks changed since the last query, or all after an unlocated change (see the
        class docstring)."""
        b = self.b
        tc, ch = b.tank_changes, b.map.changes
        if self.n_tanks == len(tc) and self.n_changes == len(ch):
            return
        if self.n_tanks < 0 or None in ch[self.n_changes:]:
            self.n_tanks, self.n_changes = len(tc), len(ch)
            self.seen = {}
            self.seers = [set() for _ in b.tanks]
            self.unseen = {}
            return
        dirty = sorted(set(tc[self.n_tanks:]))
        self.n_tanks, self.n_changes = len(tc), len(ch)
        tanks, seen, seers = b.tanks, self.seen, self.seers
        for d in dirty:  # every pair of d is forgotten (_forget inlined: a dirty tank has a pair per enemy)
            sd = tanks[d].side
            for t in tanks:
                if t.side != sd:
                    e = t.tank_id
                    ent = seen.pop((d, e), None)
                    if ent is not None and ent[0]:
                        seers[e].discard(d)
                    seen.pop((e, d), None)
            seers[d].clear()  # each of its seers' pairs was just forgotten

    def visible(self, side: int) -> tuple[int, ...]:
        """Ids of the live enemies of ``side`` that at least one live tank of ``side`` sees, in id order.  The
        answer is kept per side until a tank or an obstacle changes (``Battle.tank_changes``, ``HexMap.changes``:
        everything a pair answer reads)."""
        b = self.b
        mark = (len(b.tank_changes), len(b.map.changes))
        got = self.last.get(side)
        if got is not None and got[0] == mark:
            return got[1]
        self.update()
        tanks, seen = self.b.tanks, self.seen
        own = [s.tank_id for s in tanks if s.side == side and s.status == _ACTIVE and s.hex is not None]
        own_set = set(own)
        hint = self.hint
        n = len(self.b.map.changes)
        tc = self.b.tank_changes
        ntc = len(tc)
        unseen = self.unseen.setdefault(side, {})
        since: dict[int, set[int]] = {}  # tank_changes index -> the tanks changed since (per call)
        out = []
        for e in tanks:
            if e.side == side or e.status != _ACTIVE or e.hex is None:
                continue
            eid = e.tank_id
            found = False
            if self.seers[eid]:
                for s in sorted(self.seers[eid]):
                    if tanks[s].side == side and self._valid(s, eid, seen[(s, eid)]):
                        found = True
                        break
            if not found:
                # an enemy no tank saw at the last check (``unseen``), with no obstacle change since and unchanged
                # itself: only the pairs of the side's tanks changed since then are unknown (every other pair is
                # still known not to see it, valid up to now), so only those are looked at
                ue = unseen.get(eid)
                pool: Iterable[int] = own
                if ue is not None and ue[1] == n:
                    changed = since.get(ue[0])
                    if changed is None:
                        changed = since[ue[0]] = set(tc[ue[0]:])
                    if eid not in changed:
                        pool = sorted(changed & own_set)
                else:
                    # the tank that last saw it first (an enemy that moved or was seen by a tank that moved is
                    # most often still seen by it: one pair test instead of one per tank before it), then the
                    # others in id order; the answer is the same in any order (some tank sees it or none does)
                    h = hint[eid]
                    if h is not None and h in own_set:
                        pool = (h, *own)
                for s in pool:
                    ent = seen.get((s, eid))
                    if ent is not None and (ent[1] == n or self._valid(s, eid, ent)):
                        continue  # known not to see it (a seer would have been found above)
                    if self._set(s, eid):
                        found = True
                        break
            if found:
                out.append(eid)
                unseen.pop(eid, None)
            else:
                unseen[eid] = (ntc, n)
        self.last[side] = (mark, tuple(out))
        return self.last[side][1]


_SIGHT: weakref.WeakKeyDictionary[BattleState, dict[Hashable, SightMatrix]] = weakref.WeakKeyDictionary()


def sight_matrix(b: BoardView, tag: Hashable, los: Callable[[BattleState, int, int], bool], slack: int = 3,
                 footprint: Callable[[BattleState, int, int], Callable[[Hex], bool] | None] | None = None
                 ) -> SightMatrix | None:
    """The :class:`SightMatrix` of battle ``b`` for ``tag`` (made on first use with ``los``, ``slack`` and
    ``footprint``), or ``None`` when ``b`` is not a :class:`BattleState` with a change log (a :class:`HypoView`:
    ask the pairs directly) or inside :meth:`BattleState.hiding`."""
    if not isinstance(b, BattleState) or b.hidden_tanks:
        return None
    per = _SIGHT.get(b)
    if per is None:
        per = _SIGHT[b] = {}
    m = per.get(tag)
    if m is None:
        m = per[tag] = SightMatrix(b, los, slack, footprint)
    return m
