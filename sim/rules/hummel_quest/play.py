"""Rule set ``hummel_quest``: the battle rules of Hummel Quest (HQ), a tabletop RPG of sentient tanks.

Specification: ``docs/rules/hummel_quest.md`` (section numbers below as "§n"); seed
``002_b8ef7e6e5aa0f847.txt``.  The exact odds and the rolled stages live in :mod:`sim.rules.hummel_quest.odds`,
the stat blocks and options in :mod:`sim.rules.hummel_quest.stats`, the board in ``board``, ``sight``, ``panic``
(flight) and ``ramming``; this module holds the sequence of play.

Units: distances in hexes (cube distance) unless named ``*_m`` (metres = hexes x ``hex_size_m``); Speed ``S`` in
hexes per round = ``floor(speed_m / hex_size_m)``; half Speed ``H = ceil(S / 2)``; one round = one engine turn.

Decision points yielded by :meth:`HummelQuest.play_turn` (one call = one round, §3):

* ``activate`` -- the tank whose turn it is (initiative order, §3) picks a mode from ``legal.modes``: ``hold``,
  ``fire`` (attack without moving), ``move``, ``move_and_fire``, ``ram`` (only when a ram is legal, §12.1).  A
  ``Ram(actor, target)`` answer is accepted here too.  Default: hold.
* ``move_step`` -- one neighbour step (``Step``), or ``Special("end_move", {"facing": f})`` / ``Pass`` to stop;
  context ``mp`` (hexes left), ``entered``.  Turning is free: the facing is set once, at the end of the move (§4).
  At the first step a ``Ram`` is still accepted (nothing moved yet).  In ``move_and_fire`` mode a legal ``Fire``
  (or ``focus`` / ``intimidate`` ``Special``) also ends the move (default facing) and is made as the attack, with
  no ``fire`` decision: this is how a plan's ``then`` reaches the attack.
* ``fire`` -- the attack (§4 step 2): ``Fire(actor, target, weapons)`` at a tank (any state) or at a structure hex;
  ``Special("focus", {"target": id})`` (Artillery Sights, §7.6); ``Special("intimidate", {"target": id})`` (only
  with the ``intimidation`` option, §10); ``Ram`` if the tank has not moved; or ``Pass``.
* ``ram`` -- after ``Activate(mode="ram")``: ``Ram(actor, target)`` or ``Pass``.
* ``evade`` -- addressed to the rammed tank's side after a failed ram check (§12.3): ``Step(target, to=hex)`` with
  any hex of ``legal.reachable`` (the destination, not only a neighbour); default ``Pass``: the farthest hex
  (``evade_default``), chosen on the true board once the answer is in.

Forced behaviour (Mentality checks, flight, the OST cascade) never reaches a controller.

DECISIONS taken here where the spec is silent (each also noted where it is implemented):

* The map's ``hex_size_m`` (scenario ``map.hex_size_m``) is the battle's scale; the ``hex_size_m`` option is used by
  odds and golden cases, and a differing explicit option only warns.
* Terrain types are named here (:data:`TERRAIN`: open, woods, smoke, rocks, rubble, wall, building, hill, water);
  the spec names only flags, which ``map.features`` may override per hex (:class:`HQHexExt`).
* The ambushing side is the option ``ambushing_side`` (side index); it still rolls initiative in round 1 like
  everyone (§3 "every tank ... rolls"), the ambushed side rolls too but takes no turn.
* Initiative ties: tied groups are settled from the highest total down; roll-offs are resolved depth first.
* The victory test after every turn ends the round early when the battle is decided.
* Movement: the hull keeps its facing during the steps; it is set once at the end (the controller's
  ``end_move`` facing, else ``keep_if_front`` from the facing before the move).  A last ``move_step`` decision is
  asked even when the Speed is used up, so a plan's end facing reaches the rules.
* Flight and rams turn the hull by the ``keep_if_front`` rule at every step.
* Rams and evasion (§12.3): the rammer drives the line to the hex it stands on at the check (``Moved`` events
  before the check's ``ShotResolved``, for an evasion as for a collision), so the rammed tank's controller sees it
  there at the ``evade`` decision (context ``rammer_hex``).  The rammer's start hex, which it has left, is open to
  the evading tank like the rest of the line; only the rammer's hex is closed (to end on and to pass through).
  An ``evade`` answer ``Step(to=hex)`` names the destination (any hex of ``legal.reachable``); ``Pass`` takes the
  default (farthest) hex.  A ram resolved by :meth:`HummelQuest.resolve` outside play takes the default evasion.
* A ``Fire`` (or an attack ``Special``) answered at a ``move_step`` in ``move_and_fire`` mode ends the move with
  the default facing and is the attack; no ``fire`` decision follows.  ``can_fire`` stays False in the
  ``move_step`` context, since the attack normally has its own ``fire`` decision.
* A flee of no step (§11.2 item 6) includes the case where the tank could step but the start hex is already the
  reached hex nearest to the aim (ties: fewer steps): it stays, on an edge hex too.
* A ram may be declared at ``activate``, at the first ``move_step`` (nothing moved), at ``fire`` if the tank has
  not moved, or in the ``ram`` decision (default there: the target with the best kill odds).  Its result is logged
  as a ``ShotResolved`` (``collision`` / ``evaded``) so the engine counts it as an attack.
* ``legal.targets`` lists only enemies that are not out; a ``Fire`` at an incapacitated tank is still legal.
* "Moved at least half Speed" counts only during the shooter's own turn; a what-if position (``Hypo``) adds the
  distance to it.
* An incapacitated tank whose core is destroyed keeps status ``incapacitated`` with ``core_destroyed`` set.
* With several weapons, a requested set that contains a non-indirect weapon makes the attack direct; with no
  weapons named, the attack is indirect (indirect weapons only) whenever that is legal, else direct (§13).
* Artillery Sights focus (``Special("focus", {"target": id})``) needs the target located by the sights; it lasts
  until the end of the tank's next turn or its next shot at that target.
* Intimidation targets an enemy that is not out; Reload bookkeeping only for weapons with ``reload`` > 0.
* Structures: an attack on one has no OST or overkill; ``ShotResolved.target`` is ``None`` with the hex in its
  details; indirect fire is preferred when legal.
* After ``max_rounds``, victory points decide if the scenario has objectives (CONVENTIONS), else a draw (§15).
* ``has_turret`` is False: HQ has no firing arcs, the Reinforced Turret is only a Dur modifier.
"""
from __future__ import annotations

import functools
import logging
import weakref
from collections import deque
from collections.abc import Callable, Generator, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, cast

from sim.actions import Action, Activate, Fire, Pass, Plan, Ram, Special, Step
from sim.battle import Battle, BattleState, BoardView, HypoView, TankState, tanks_named_since
from sim.dice import DiceSource, FixedDice
from sim.events import (
    Activated,
    BattleStateSet,
    Moved,
    Pivoted,
    RuleEvent,
    ShotResolved,
    Status,
    StatusChanged,
    TankStateSet,
    TerrainChanged,
)
from sim.hexgrid import Hex, as_hex, aspect, bounded_dijkstra, direction_to, distance
from sim.messages import did_you_mean
from sim.rules.base import CaseError, Decision, Hypo, Illegal, Legal, Odds, Outcome, Ruleset, Shot
from sim.rules.hummel_quest import odds as hq_odds
from sim.rules.hummel_quest import stats as hq_stats
from sim.rules.hummel_quest.board import (
    TERRAIN,
    HexFlags,
    HQBoard,
    HQHexExt,
    HQTankExt,
    SightGrid,
    _ext_get,
    default_facing,
    flags,
    half_speed,
)
from sim.rules.hummel_quest.geometry import geometry_case
from sim.rules.hummel_quest.odds import (
    AttackRoll,
    Effect,
    RamKey,
    ShotKey,
    WeaponKey,
    attack_odds,
    band_of,
    effective_dur,
    ram_damage,
    ram_odds,
    tn_to_hit,
)
from sim.rules.hummel_quest.panic import FleePlan, flee_plan
from sim.rules.hummel_quest.ramming import evade_default, evade_options, ram_legal, ram_line
from sim.rules.hummel_quest.sight import Crossed, Sight, _line_steps, crossed, sight
from sim.rules.hummel_quest.stats import DEFAULT_OPTIONS, HQOptions, Vehicle, Weapon, catalog
from sim.victory import has_points_victory, victory_points

#: Rule-set warnings go to tanksim's logging (shown with TANKSIM_LOG=warning; sim.logs).
log = logging.getLogger(__name__)

#: The rule set's options (§16); see :class:`sim.rules.hummel_quest.stats.HQOptions`.
Options = HQOptions



# --- the rule set ---------------------------------------------------------------------------------------------------

_OUT = (Status.INCAPACITATED, Status.DESTROYED)
#: The statuses of a tank not in play whatever its DT (off the board, or out: :data:`_OUT`), one set to test.
_NOT_IN_PLAY = Status.OFF_BOARD | frozenset(_OUT)

#: The illegal answers of :meth:`HummelQuest.shot` that the batched queries give without building a shot (one
#: object each: ``Illegal`` is a string, equal by value).
_NO_SHOOTER = Illegal("shooter cannot attack (out or panicked)")
_FRIENDLY = Illegal("target is a friendly tank")
_GONE = Illegal("target has left the battle")
_SAME_HEX = Illegal("same hex")
_NO_WEAPON = Illegal("no ready weapon")
_HIDDEN = Illegal("hidden")
_BEYOND = Illegal("beyond_sight")
_FP_LOW = Illegal("firepower_below_band")
#: At most this many pairs in a battle's direct-shot memo (:meth:`HummelQuest._seen`) before it starts afresh.
_SEEN_MAX = 1 << 20


def _touches_none(_h: Hex) -> bool:
    """The footprint of an answer that read no hex's occupants or obstacles (:meth:`HummelQuest.shot_footprint`)."""
    return False


_TOUCHES_NONE = _touches_none

#: At most this many enemy hexes (and known-unseeing hexes per enemy hex) in :meth:`HummelQuest.visible`'s facts.
_SEEN_BY_MAX = 4096

#: A queued §10 event: kind (``incapacitated`` / ``panicked``), the tank's id and its hex when it happened.
_QueuedEvent = tuple[str, int, Hex]


@lru_cache(maxsize=1024)
def _ready_key(weapon_id: str) -> str:
    """The ``rules_state`` key of a weapon's first ready round (§7.4): ``ready.<weapon id>``."""
    return f"ready.{weapon_id}"


def _checked(shot: Shot | Illegal) -> Shot:
    """``shot`` itself, for an attack the caller has found legal; raises ``ValueError`` with the reason otherwise."""
    if isinstance(shot, Illegal):
        raise ValueError(f"hummel_quest: illegal attack: {shot}")
    return shot


def _as_states(reach: dict[Hex, tuple[int, list[Hex]]]) -> Mapping[Hashable, tuple[int, list[Hex]]]:
    """``reach`` (``{hex: (steps, path)}``) as the engine's ``{state: (cost, path)}`` (a state is a hex here).

    Only the static type changes: a mapping's key type is invariant, so a dict keyed by :class:`Hex` is not a
    ``Mapping[Hashable, ...]`` to a type checker although every hex is hashable."""
    return cast("Mapping[Hashable, tuple[int, list[Hex]]]", reach)


def _hex(t: TankState) -> Hex:
    """The hex of ``t``, a tank the caller knows is on the board; raises ``ValueError`` naming it otherwise."""
    if t.hex is None:
        raise ValueError(f"hummel_quest: tank {t.label} is not on the board")
    return t.hex


#: :func:`_weapon_table` entries: ``id(vehicle) -> (vehicle, table)`` (the vehicle held so its id stays its own).
_WEAPON_TABLES: dict[int, tuple[Vehicle, tuple[tuple[str, bool, int], ...]]] = {}
#: At most this many vehicles in :data:`_WEAPON_TABLES` before it starts afresh.
_WEAPON_TABLES_MAX = 4096



#: :meth:`HummelQuest.kill_odds_at`'s firers' parts: ``battle -> (version, turn, {tank id: part})`` (see there).
_FIRER_PARTS: "weakref.WeakKeyDictionary[BattleState, tuple[int, int, dict[int, int]]]" = weakref.WeakKeyDictionary()
#: :meth:`HummelQuest._shooter_table`'s tables per battle: ``{key: [state_changes, its length read, version -
#: len(log), turn, hidden tanks, entry per shooter (or None), the entries not None]}``.
_SHOOTER_TABLES: "weakref.WeakKeyDictionary[BattleState, dict[Any, list[Any]]]" = weakref.WeakKeyDictionary()
#: Most :meth:`HummelQuest._shooter_table` tables kept per battle.
_SHOOTER_TABLES_MAX = 64
#: :meth:`HummelQuest._target_table`'s tables per battle (the same layout, the per-target entries and the answers
#: fixed whatever the shooter's hex).
_TARGET_TABLES: "weakref.WeakKeyDictionary[BattleState, dict[Any, list[Any]]]" = weakref.WeakKeyDictionary()
#: :meth:`HummelQuest._in_play_enemies`' lists per battle: ``{side: [the ChangeMark then
#: (sim.battle.tanks_named_since), the set of ids, the ids in order]}``.
_IN_PLAY_ENEMIES: "weakref.WeakKeyDictionary[BattleState, dict[int, list[Any]]]" = weakref.WeakKeyDictionary()


@lru_cache(maxsize=1024)
def _reach(best: int, max_h: int, hs: int, edges: str, no_damage: bool) -> int:
    """The greatest range in whole hexes (at most ``max_h``, the ``max_sight_m`` range) at which a direct shot
    with best ready Firepower ``best`` meets the band's Firepower needed (§7.1; any under ``no_damage``), every
    shorter range meeting it too; ``-1`` when the ranges that meet it are no such prefix (ask every range)."""
    if no_damage:
        return max_h
    ok = [band_of(d * hs, edges).fp_needed <= best for d in range(1, max_h + 1)]
    got = ok.index(False) if False in ok else max_h
    return -1 if any(ok[got:]) else got
#: A firer's part in :data:`_FIRER_PARTS`: it cannot attack (out or panicked).
_CANNOT = -3
#: A firer's part in :data:`_FIRER_PARTS`: an indirect weapon ready (the full shot, §13).
_INDIRECT = -2


def _sight_range_verdict(sees: bool | None, frm: Hex, to: Hex, firepower: int, hex_size_m: int, max_sight_m: int,
                         edges: Any, no_damage: bool) -> Illegal | None:
    """The batched shot checks (:meth:`HummelQuest.shots` / ``shots_at``) once a direct shot's sight is known, in
    :meth:`HummelQuest.shot`'s order: ``_HIDDEN`` if ``sees`` is false or ``None``, ``_BEYOND`` past
    ``max_sight_m`` metres, ``_FP_LOW`` when the best ready ``firepower`` is under the range band's requirement
    (unless the option's mode is ``no_damage``), else ``None``: the shot may be legal, so
    :meth:`HummelQuest.shot` answers it in full."""
    if not sees:
        return _HIDDEN
    rng_m = distance(frm, to) * hex_size_m
    if rng_m > max_sight_m:
        return _BEYOND
    if no_damage or firepower >= band_of(rng_m, edges).fp_needed:
        return None
    return _FP_LOW

def _weapon_table(v: Vehicle) -> tuple[tuple[str, bool, int], ...]:
    """``(ready key, indirect, firepower)`` of each weapon of ``v`` in its order (§5.2, §7.4): what the batched
    shot queries read of a firer's weapons.  Kept per vehicle object: a vehicle is frozen (pydantic), so its
    weapons never change; bounded by :data:`_WEAPON_TABLES_MAX`."""
    got = _WEAPON_TABLES.get(id(v))
    if got is not None and got[0] is v:
        return got[1]
    table = tuple((_ready_key(w.id), bool(w.indirect), w.firepower) for w in v.weapons)
    if len(_WEAPON_TABLES) >= _WEAPON_TABLES_MAX:
        _WEAPON_TABLES.clear()
    _WEAPON_TABLES[id(v)] = (v, table)
    return table


class _SeenMemo:
    """``seen(frm, to)`` of :meth:`HummelQuest._seen`: whether a direct shot ``frm`` -> ``to`` is possible by the
    terrain's lines on ``grid`` under ``rule`` (:func:`~sim.rules.hummel_quest.sight.direct_shot`), ``None`` for
    an end off the grid's box.

    Answers are kept in ``memo`` under the two hexes' grid indices, ``((aq - q0) * span + ar - r0) * size +
    (bq - q0) * span + br - r0`` (the batched shot queries read it inline with the same key): the answer reads
    only the grid's blocking bits and the rule, which the owner renews with the terrain.  Bounded: the memo is
    cleared past :data:`_SEEN_MAX` pairs."""

    __slots__ = ("grid", "rule", "memo", "q0", "r0", "span", "qlo", "rlo", "q1", "r1", "size")

    def __init__(self, grid: SightGrid, rule: str) -> None:
        p = SightGrid.PAD
        self.grid, self.rule = grid, rule
        self.memo: dict[int, bool] = {}
        self.q0, self.r0, self.span, self.q1, self.r1 = grid.q0, grid.r0, grid.span, grid.q1, grid.r1
        self.qlo, self.rlo = grid.q0 + p, grid.r0 + p
        self.size = len(grid.bits) + 1

    def __call__(self, frm: tuple[int, int], to: tuple[int, int]) -> bool | None:
        aq, ar = frm[0], frm[1]
        bq, br = to[0], to[1]
        qlo, rlo, q1, r1 = self.qlo, self.rlo, self.q1, self.r1
        if not (qlo <= aq <= q1 and rlo <= ar <= r1 and qlo <= bq <= q1 and rlo <= br <= r1):
            return None
        q0, r0, span = self.q0, self.r0, self.span
        key = ((aq - q0) * span + ar - r0) * self.size + (bq - q0) * span + br - r0
        memo = self.memo
        got = memo.get(key)
        if got is None:
            # :func:`direct_shot` (both ends in the box, so ``grid.index(frm)`` is this index), inlined
            i = (aq - q0) * span + ar - r0
            blocks = self.grid.blocks_mask
            got = False
            for lo, mask, _last, _off in _line_steps(bq - aq, br - ar, span, self.rule):
                if not (blocks >> (i + lo)) & mask:
                    got = True
                    break
            if len(memo) >= _SEEN_MAX:
                memo.clear()
            memo[key] = got
        return got


#: :meth:`HummelQuest._ram_targets` reads the hexes within reach rather than scanning the tanks when there are
#: fewer such hexes than this many times the tanks (tests set it to force either way).
_RING_FACTOR = 1


@functools.lru_cache(maxsize=64)
def _ring_offsets(lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    """The axial offsets ``(dq, dr)`` at hex distance ``lo`` to ``hi`` (inclusive) from a hex, in ``(dq, dr)``
    order (:meth:`HummelQuest._ram_targets`: the hexes a ram may reach, half Speed to Speed, §12)."""
    return tuple((dq, dr) for dq in range(-hi, hi + 1) for dr in range(-hi, hi + 1)
                 if lo <= max(abs(dq), abs(dr), abs(dq + dr)) <= hi)


class _VisibleSync:
    """The record of :meth:`HummelQuest._visible_synced` for one side: ``changes`` the battle's ``state_changes``
    list and ``n`` how much of it has been read, ``offset`` the battle's ``version - len(log)`` then, ``own``
    ``{own tank: hex}`` and ``count`` ``{hex: own tanks on it}`` for the own tanks in play, ``foes`` ``{enemy:
    hex}`` for the enemies in play, ``witness`` ``{enemy: an own hex that sees it, or None}``, ``answer`` the
    last answer."""

    __slots__ = ("answer", "changes", "count", "foes", "n", "offset", "own", "witness")

    def __init__(self, changes: list[int], offset: int) -> None:
        self.changes, self.offset, self.n = changes, offset, 0
        self.own: dict[int, Hex] = {}
        self.count: dict[Hex, int] = {}
        self.foes: dict[int, Hex] = {}
        self.witness: dict[int, Hex | None] = {}
        self.answer: tuple[int, ...] = ()


class HummelQuest(Ruleset):
    """The ``hummel_quest`` rule set (see the module docstring for its decision points and decisions).

    Tank state lives in ``rules_state`` (changed only by events): ``dt``, ``ost``, ``panicked``, ``incapacitated``,
    ``core_destroyed``, ``fled``, ``moved_hexes`` (hexes moved this turn), ``ready.<weapon id>`` (first round the
    weapon may fire again, §7.4), ``sights_focus`` / ``sights_focus_round`` (§7.6).  Battle state:
    ``active`` (whose turn it is), ``structure_dt:<q>,<r>`` (a damaged structure's DT, §14).
    """

    name = "hummel_quest"
    Options = HQOptions
    TankExt = HQTankExt
    HexExt = HQHexExt
    has_ramming = True
    #: :meth:`passable` reads the terrain, the scenario's per-hex blocks and a structure's collapse, which comes
    #: with a ``TerrainChanged`` (a new terrain version), so distance fields outlive wrecks and moves.
    passable_is_static = True

    # --- catalog (§5) -----------------------------------------------------------------------------------------
    def vehicle(self, vid: str) -> Vehicle:
        """The stat block ``vid``; raises ``KeyError`` naming the known ids."""
        cat = catalog()
        if vid not in cat:
            raise KeyError(f"unknown hummel_quest vehicle {vid!r}{did_you_mean(vid, cat)}; known: {', '.join(cat)}")
        return cat[vid]

    def vehicle_ids(self) -> tuple[str, ...]:
        return tuple(catalog())

    def catalog_records(self) -> dict[str, dict[str, Any]]:
        """The stat blocks of ``hummel_quest_vehicles.yaml`` keyed by id (§5)."""
        return hq_stats.catalog_records()

    def vehicle_from_record(self, vid: str, record: Mapping[str, Any], options: object = None) -> Vehicle:
        """A stat block in the §5 schema; warns when its ``speed_m`` is not a multiple of the options'
        ``hex_size_m`` (§2)."""
        hex_size = int(getattr(options, "hex_size_m", DEFAULT_OPTIONS.hex_size_m))
        return hq_stats.vehicle_from_record(vid, record, origin="vehicles", hex_size_m=hex_size)

    def has_turret(self, vehicle: object) -> bool:
        """DECISION: HQ has no firing arcs and no turret facing; the Reinforced Turret is only a Dur modifier
        (§8.1), so no tank carries a separate turret facing."""
        return False

    def terrain_names(self, options: object = None) -> tuple[str, ...]:
        return tuple(TERRAIN)

    def default_turn_limit(self, options: object) -> int:
        """``max_rounds`` (§15), in rounds."""
        return int(getattr(options, "max_rounds", 50))

    # --- state helpers ----------------------------------------------------------------------------------------
    @staticmethod
    def _opts(battle: BoardView) -> HQOptions:
        o = getattr(battle, "options", None)
        return o if isinstance(o, HQOptions) else DEFAULT_OPTIONS

    def hex_size(self, battle: BoardView) -> int:
        """Metres per hex: the battle's map scale (DECISION), else the ``hex_size_m`` option."""
        return int(getattr(battle, "hex_size_m", None) or self._opts(battle).hex_size_m)

    def speed_hexes(self, battle: BoardView, tid: int) -> int:
        """Speed S in hexes per round (§2)."""
        return battle.tanks[tid].vehicle.speed_m // self.hex_size(battle)

    @staticmethod
    def dt(t: TankState) -> int:
        return int(t.rules_state.get("dt", t.vehicle.dt))

    @staticmethod
    def ost(t: TankState) -> int:
        return int(t.rules_state.get("ost", t.vehicle.ost))

    @staticmethod
    def on_board(t: TankState) -> bool:
        return t.hex is not None and t.status not in Status.OFF_BOARD

    @staticmethod
    def board_hex(t: TankState) -> Hex | None:
        """The hex of ``t`` while it is on the board (any state), else ``None``: ``on_board(t)`` with the hex."""
        return t.hex if t.status not in Status.OFF_BOARD else None

    def incapacitated(self, t: TankState) -> bool:
        return t.status in _OUT or int(t.rules_state.get("dt", t.vehicle.dt)) <= 0   # :meth:`dt`

    def is_out(self, t: TankState) -> bool:
        """Out of the battle (§15): incapacitated (core destroyed included) or gone from the board
        (:meth:`on_board` and :meth:`incapacitated`, inlined)."""
        st = t.status
        return t.hex is None or st in Status.OFF_BOARD or st in _OUT or \
            int(t.rules_state.get("dt", t.vehicle.dt)) <= 0

    def hex_in_play(self, t: TankState) -> Hex | None:
        """The hex of ``t`` while it is not out (§15), else ``None``: ``not is_out(t)`` with the hex."""
        h = t.hex
        if h is None or self.is_out(t):
            return None
        return h

    def panicked(self, t: TankState) -> bool:
        return not self.is_out(t) and self.ost(t) <= 0

    def can_act(self, t: TankState) -> bool:
        """Not out and OST above 0 (:meth:`is_out`, :meth:`ost`, inlined)."""
        st = t.status
        if t.hex is None or st in Status.OFF_BOARD or st in _OUT:
            return False
        rs = t.rules_state
        v = t.vehicle
        return int(rs.get("dt", v.dt)) > 0 and int(rs.get("ost", v.ost)) > 0

    # --- board ------------------------------------------------------------------------------------------------
    def hex_flags(self, battle: BoardView, h: Hex) -> HexFlags:
        """Terrain flags of ``h``: the terrain's (:data:`TERRAIN`) with the per-hex ``map.features`` overrides; a
        collapsed structure leaves ``rubble`` (§14).  Cached per map version."""
        cache: dict[Hex, HexFlags] = battle.map.cached(("hq_flags",), dict)
        got = cache.get(h)
        if got is not None:
            return got
        terrain = battle.map.terrain(h)
        base = TERRAIN.get(terrain, TERRAIN["open"])
        ext = battle.hex_ext.get(h) if getattr(battle, "hex_ext", None) else None
        collapsed = battle.rules_state.get(f"structure_dt:{h[0]},{h[1]}") == 0
        if collapsed:
            out = TERRAIN["rubble"]
        elif ext is None:
            out = base
        else:
            st = _ext_get(ext, "structure")
            structure = None
            if st is not None:
                structure = (int(_ext_get(st, "dur")), int(_ext_get(st, "dt")))
            def pick(name: str) -> bool:
                v = _ext_get(ext, name)
                return getattr(base, name) if v is None else bool(v)

            blocks = pick("blocks_los")
            tall = _ext_get(ext, "tall")
            if tall is None:   # tall defaults to blocks_los (§7.5): the terrain's, or the override's
                tall = base.tall if _ext_get(ext, "blocks_los") is None else blocks
            out = flags(passable=pick("passable"), blocks_los=blocks, hard_cover=pick("hard_cover"),
                        tall=bool(tall), structure=structure)
        cache[h] = out
        return out

    def board(self, battle: BoardView, *, moved: tuple[int, Hex] | None = None) -> HQBoard:
        """The :class:`HQBoard` of ``battle``; ``moved = (tank, hex)`` places one tank elsewhere (what-if).  Its
        sight memo (what the lines cross: terrain flags only, which no wreck or tank changes, §7.5) is kept until
        the terrain changes (:meth:`sim.hexgrid.HexMap.local_cached`)."""
        def occupant(h: Hex) -> int | None:
            occ = battle.occupants(h)
            if moved is not None:
                occ = tuple(x for x in occ if x != moved[0])
                if h == moved[1]:
                    return moved[0]
            return occ[0] if occ else None
        flags_of = lambda h: self.hex_flags(battle, h)  # noqa: E731
        return HQBoard(battle.map, flags_of, occupant, battle.map.local_cached(("hq_sight",), dict),
                       battle.map.local_cached(("hq_sight_grid",), lambda: SightGrid.of(battle.map.cells, flags_of)))

    def passable(self, battle: BoardView, h: Hex) -> bool:
        """On the map and passable terrain (occupancy not considered)."""
        return h in battle.map and self.hex_flags(battle, h).passable

    def sight(self, battle: BoardView, frm: Hex, to: Hex, board: HQBoard | None = None) -> Sight:
        o = self._opts(battle)
        return sight(board or self.board(battle), frm, to, los_rule=o.los_rule, tanks_give_cover=o.tanks_give_cover)

    def _sight_entry(self, battle: BoardView, frm: Hex, to: Hex, los_rule: str) -> Crossed:
        """What the lines of ``frm``-``to`` cross (:func:`sim.rules.hummel_quest.sight.crossed`), from the
        battle's sight memo (the one :meth:`board` gives; kept until the terrain changes) without building a
        board on a hit."""
        memo: dict[Hashable, Crossed] = battle.map.local_cached(("hq_sight",), dict)
        ent = memo.get((frm, to, los_rule))
        return ent if ent is not None else crossed(self.board(battle), frm, to, los_rule)

    @staticmethod
    def _sight_of(battle: BoardView, ent: Crossed, tanks_give_cover: bool, moved: tuple[int, Hex] | None) -> Sight:
        """The :class:`Sight` of a :meth:`_sight_entry` on ``battle`` (``moved`` as in :meth:`board`): the
        tanks on the lines' last hexes read here, exactly as :func:`sim.rules.hummel_quest.sight.sight` reads
        them through ``self.board(battle, moved=moved)``."""
        fixed, check, covered, uncovered = ent
        if fixed is not None:
            return fixed
        if tanks_give_cover:
            m = battle.map
            for h in check:
                if h not in m:
                    continue
                if moved is None:
                    if battle.occupants(h):
                        return covered
                elif h == moved[1] or any(x != moved[0] for x in battle.occupants(h)):
                    return covered
        return uncovered

    def los(self, battle: BoardView, frm: Hex, to: Hex, board: HQBoard | None = None) -> bool:
        """"LOS" of the spec (§7.5): not hidden and range within ``max_sight_m``."""
        o = self._opts(battle)
        if distance(frm, to) * self.hex_size(battle) > o.max_sight_m:
            return False
        # tanks never block sight (§7.5): the terrain's answer alone, no occupancy read
        return crossed(board or self.board(battle), frm, to, o.los_rule)[2].direct_shot

    def visible(self, battle: BoardView, side: int) -> tuple[int, ...]:
        """Enemy tanks not out that a tank of ``side`` not out has LOS to (§7.5), in id order.

        On the battle itself (a :class:`~sim.battle.BattleState` with no tank hidden) the answer is patched from
        the events since the side's last ask (:meth:`_visible_synced`); on any other board (a what-if view, a
        side's view) it is worked out afresh (:meth:`_visible_full`).  Both give the same answer
        (``tests/test_hq_fast_paths.py`` compares them at every ask of a played battle)."""
        if type(battle) is BattleState and not battle.hidden_tanks:
            return self._visible_synced(battle, side)
        return self._visible_full(battle, side)

    def _visible_full(self, battle: BoardView, side: int) -> tuple[int, ...]:
        """:meth:`visible` worked out from every tank: :meth:`los` of
        every own x enemy pair until one sees, with the range test (``max_sight_m`` as whole hexes) and the
        terrain's answer (:meth:`_seen`, else :func:`crossed` for an end off the sight grid) inlined.

        Pair facts are kept per enemy hex: a hex seen to see it (a witness), or the hexes found not to.  A pair's
        answer reads only the two hexes, the terrain's sight flags, ``los_rule`` and the range in whole hexes
        (tanks never block sight, §7.5), so the facts live in a :meth:`~sim.hexgrid.HexMap.local_cached` dict
        keyed by the rule and the range (renewed when the terrain changes); an enemy whose witness holds an own
        tank not out is seen with no pair asked, and only own hexes not yet known to miss are asked.  Bounded:
        cleared past :data:`_SEEN_BY_MAX` enemy hexes, a hex's misses past as many hexes.  The last answer of each
        side is kept beside them (same dict owner, same renewal) with the own hexes and the enemies' ids and hexes
        it was computed from, which with the terrain, rule and range are all it reads: asked again with the same
        tanks in the same places, it is given back unchanged."""
        own = []
        foes = []
        not_in_play = _NOT_IN_PLAY
        for t in battle.tanks:
            h = t.hex
            if h is None or t.status in not_in_play or int(t.rules_state.get("dt", t.vehicle.dt)) <= 0:
                continue   # not :meth:`hex_in_play`
            if t.side == side:
                own.append(h)
            else:
                foes.append((t.tank_id, h))
        if not own or not foes:
            return ()
        o = self._opts(battle)
        max_h = o.max_sight_m // self.hex_size(battle)   # d * hs > max_m  <=>  d > max_m // hs (whole hexes)
        rule = o.los_rule
        # the last answer per side, under what it reads besides the terrain: the own hexes and the enemies' ids
        # and hexes (a decision often follows one that changed neither)
        last: dict[int, tuple[tuple[Hex, ...], tuple[tuple[int, Hex], ...], tuple[int, ...]]] = \
            battle.map.local_cached(("hq_visible_last", rule, max_h), dict)
        own_t, foes_t = tuple(own), tuple(foes)
        prev = last.get(side)
        if prev is not None and prev[0] == own_t and prev[1] == foes_t:
            return prev[2]
        seen_of = self._seen(battle)
        # per enemy hex: a hex that sees it, or the hexes known not to (pair facts of this terrain, rule, range)
        facts: dict[Hex, Hex | set[Hex]] = battle.map.local_cached(("hq_seen_by", rule, max_h), dict)
        if len(facts) > _SEEN_BY_MAX:
            facts.clear()
        board: HQBoard | None = None
        own_set = set(own)
        out = []
        for tid, eh in foes:
            got = facts.get(eh)
            if type(got) is Hex and got in own_set:   # noqa: E721  (a witness, not a set of misses)
                out.append(tid)
                continue
            misses = got if isinstance(got, set) else set()
            eq, er = eh
            for sh in own:
                if sh in misses:
                    continue
                dq = sh[0] - eq
                dr = sh[1] - er
                ds = dq + dr
                if dq > max_h or -dq > max_h or dr > max_h or -dr > max_h or ds > max_h or -ds > max_h:
                    seen: bool | None = False
                else:
                    seen = seen_of(sh, eh)
                    if seen is None:
                        board = board or self.board(battle)
                        seen = crossed(board, sh, eh, rule)[2].direct_shot
                if seen:
                    facts[eh] = sh
                    out.append(tid)
                    break
                misses.add(sh)
            else:
                if len(misses) > _SEEN_BY_MAX:
                    misses = set()
                facts[eh] = misses
        answer = tuple(out)
        if len(last) > 8:   # bounded: one entry per side in practice
            last.clear()
        last[side] = (own_t, foes_t, answer)
        return answer

    def _visible_synced(self, battle: BattleState, side: int) -> tuple[int, ...]:
        """:meth:`visible` of the battle ``battle``, patched from the events since the side's last ask (issue 14:
        the answer is asked at every new version, i.e. after every step of a move).

        The answer reads, besides the terrain, ``los_rule`` and the range in whole hexes (the keys of the
        :meth:`~sim.hexgrid.HexMap.local_cached` record, renewed with the terrain), only which tanks are in play
        and where (:meth:`hex_in_play`: hex, status, DT), and a tank's hex, status and ``rules_state`` change only
        through events naming it (``BattleState.state_changes``).  The record (:class:`_VisibleSync`) keeps the
        own hexes in play (with how many own tanks stand on each), the enemies in play and, per enemy, an own hex
        that sees it (a witness) or ``None``; at an ask only the tanks listed since are read again: an enemy that
        changed is asked of every own hex, an enemy whose witness no own tank holds any more likewise, an enemy
        seen by none only of the own hexes newly held.  Built afresh on a first ask, when the battle's
        ``state_changes`` is another list, or when the battle's version moved without an event (a change made
        by hand: ``version - len(log)`` differs)."""
        o = self._opts(battle)
        max_h = o.max_sight_m // self.hex_size(battle)
        rule = o.los_rule
        store: dict[int, _VisibleSync] = battle.map.local_cached(("hq_visible_sync", rule, max_h), dict)
        rec = store.get(side)
        sc = battle.state_changes
        n = len(sc)
        off = battle.version - len(battle.log)
        if rec is not None and rec.changes is sc and rec.offset == off and rec.n == n:
            return rec.answer   # no tank changed since the last ask
        tanks = battle.tanks
        not_in_play = _NOT_IN_PLAY
        seen_of = self._seen(battle)
        board: list[HQBoard] = []

        def sees(sh: Hex, eh: Hex) -> bool:
            # :meth:`los` of the pair, as :meth:`_visible_full` asks it
            dq = sh[0] - eh[0]
            dr = sh[1] - eh[1]
            ds = dq + dr
            if dq > max_h or -dq > max_h or dr > max_h or -dr > max_h or ds > max_h or -ds > max_h:
                return False
            got = seen_of(sh, eh)
            if got is None:
                if not board:
                    board.append(self.board(battle))
                got = crossed(board[0], sh, eh, rule)[2].direct_shot
            return bool(got)

        def in_play(t: TankState) -> Hex | None:
            h = t.hex
            if h is None or t.status in not_in_play or int(t.rules_state.get("dt", t.vehicle.dt)) <= 0:
                return None
            return h

        if rec is None or rec.changes is not sc or rec.offset != off or rec.n > n:
            if len(store) > 8:   # bounded: one record per side in practice
                store.clear()
            rec = store[side] = _VisibleSync(sc, off)
            changed: Iterable[int] = range(len(tanks))
        else:
            changed = set(sc[rec.n:n])
        rec.n = n
        own, count, foes, wit = rec.own, rec.count, rec.foes, rec.witness
        vacated = False
        added: list[Hex] = []
        dirty: list[int] = []
        for tid in changed:
            t = tanks[tid]
            h = in_play(t)
            if t.side == side:
                oh = own.get(tid)
                if oh == h:
                    continue
                if oh is not None:
                    c = count[oh] - 1
                    if c:
                        count[oh] = c
                    else:
                        del count[oh]
                        vacated = True
                if h is None:
                    del own[tid]
                else:
                    own[tid] = h
                    if h in count:
                        count[h] += 1
                    else:
                        count[h] = 1
                        added.append(h)
            elif h is None:
                if foes.pop(tid, None) is not None:
                    del wit[tid]
            elif foes.get(tid) != h:
                foes[tid] = h
                dirty.append(tid)
        if vacated:   # an enemy whose witness no own tank holds now is asked again
            dirty.extend(e for e, w in wit.items() if w is not None and w not in count)
        redo = set(dirty)
        if redo:
            # the pair facts of :meth:`_visible_full` (per enemy hex: a witness, or the hexes known not to see it)
            facts: dict[Hex, Hex | set[Hex]] = battle.map.local_cached(("hq_seen_by", rule, max_h), dict)
            if len(facts) > _SEEN_BY_MAX:
                facts.clear()
            for e in redo:
                eh = foes[e]
                got = facts.get(eh)
                if type(got) is Hex and got in count:   # noqa: E721  (a witness, not a set of misses)
                    wit[e] = got
                    continue
                misses = got if isinstance(got, set) else set()
                w = None
                for sh in count:
                    if sh in misses:
                        continue
                    if sees(sh, eh):
                        w = facts[eh] = sh
                        break
                    misses.add(sh)
                else:
                    facts[eh] = misses if len(misses) <= _SEEN_BY_MAX else set()
                wit[e] = w
        if added:   # an enemy seen by no own hex before is asked of the hexes newly held only
            for e, w in wit.items():
                if w is None and e not in redo:
                    eh = foes[e]
                    wit[e] = next((sh for sh in added if sh in count and sees(sh, eh)), None)
        rec.answer = tuple(sorted(e for e, w in wit.items() if w is not None))
        return rec.answer

    # --- set-up -----------------------------------------------------------------------------------------------
    def setup(self, battle: Battle) -> None:
        """Initial runtime state of every tank (§5.1), no dice and no events.  Weapons start loaded, except on an
        ambushed side, where they count as fired in round 1 (§7.4).  Warns when a Speed is not a whole number of
        hexes or the ``hex_size_m`` option disagrees with the map."""
        o = self._opts(battle)
        hs = self.hex_size(battle)
        if "hex_size_m" in o.model_fields_set and o.hex_size_m != hs:
            log.warning(f"hummel_quest: option hex_size_m={o.hex_size_m} differs from the map's {hs} m; "
                        f"the map's scale is used")
        ambushed = None if o.ambushing_side is None else 1 - o.ambushing_side
        for t in battle.tanks:
            v = t.vehicle
            if v.speed_m % hs:
                log.warning(f"hummel_quest: {t.label}: speed_m {v.speed_m} is not a multiple of {hs} m")
            ext = t.ext or {}
            rs = t.rules_state
            rs.setdefault("dt", _ext_get(ext, "dt") if _ext_get(ext, "dt") is not None else v.dt)
            rs.setdefault("ost", _ext_get(ext, "ost") if _ext_get(ext, "ost") is not None else v.ost)
            rs.setdefault("panicked", rs["ost"] <= 0)
            rs.setdefault("incapacitated", rs["dt"] <= 0)
            rs.setdefault("core_destroyed", False)
            rs.setdefault("fled", False)
            rs.setdefault("moved_hexes", 0)
            rs.setdefault("sights_focus", None)
            rs.setdefault("sights_focus_round", None)
            for w in v.weapons:
                rs.setdefault(f"ready.{w.id}", 1 + w.reload + 1 if t.side == ambushed else 1)
            t.turret_facing = None
            if rs["dt"] <= 0 and t.status == Status.ACTIVE:
                t.status = Status.INCAPACITATED

    # --- shots (§7, §8, §13, §14) -----------------------------------------------------------------------------
    def _ready(self, battle: BoardView, t: TankState, w: Weapon) -> bool:
        return int(t.rules_state.get(_ready_key(w.id), 1)) <= max(1, int(getattr(battle, "turn", 1) or 1))

    def _moved_half(self, battle: BoardView, tid: int, as_if: Hypo | None) -> bool:
        t = battle.tanks[tid]
        h = half_speed(self.speed_hexes(battle, tid))
        moved = int(t.rules_state.get("moved_hexes", 0)) if battle.rules_state.get("active") == tid else 0
        if as_if is not None and as_if.moved:
            moved += distance(_hex(t), as_if.hex)
        return moved >= h and moved > 0

    def _located(self, battle: BoardView, s: TankState, hx: Hex, target_hex: Hex, board: HQBoard,
                 target_id: int | None) -> tuple[bool, bool]:
        """(located at all, located only by the shooter's own Artillery Sights) for indirect fire (§13)."""
        o = self._opts(battle)
        if self.los(battle, hx, target_hex, board):
            return True, False
        if o.spotting:
            for a in battle.tanks:
                if a.side != s.side or a.tank_id == s.tank_id:
                    continue
                ah = self.hex_in_play(a)
                if ah is not None and self.los(battle, ah, target_hex, board):
                    return True, False
        rating = s.vehicle.features.artillery_sights
        if rating and distance(hx, target_hex) * self.hex_size(battle) <= 400 * rating and \
                not self.sight(battle, hx, target_hex, board).tall_both:
            return True, True
        return False, False

    def shot(self, battle: BoardView, shooter: int, target: object, fire: Action | None = None,
             as_if: Hypo | None = None) -> Shot | Illegal:
        """The attack ``shooter`` -> ``target`` now (or from ``as_if``), or why not.

        ``target``: a tank id (any state but gone; §9 overkill) or a structure hex (§14).  ``fire``: a ``Fire``
        (its ``weapons``; empty = every ready weapon) or a ``Ram`` (§12).  The key holds the odds primitives.
        """
        if isinstance(fire, Ram):
            return self.ram_shot(battle, shooter, target)
        if not isinstance(shooter, int) or not 0 <= shooter < len(battle.tanks):
            return Illegal("no such shooter")
        s = battle.tanks[shooter]
        if not self.can_act(s):
            return Illegal("shooter cannot attack (out or panicked)")
        if isinstance(target, tuple) and not isinstance(target, bool):
            return self._structure_shot(battle, shooter, as_hex(target), fire, as_if)
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < len(battle.tanks):
            return Illegal("target is not a tank")
        t = battle.tanks[target]
        if t.side == s.side:
            return Illegal("target is a friendly tank")
        th = self.board_hex(t)
        if th is None:
            return Illegal("target has left the battle")
        o = self._opts(battle)
        hx = as_hex(as_if.hex) if as_if is not None else _hex(s)
        if hx == th:
            return Illegal("same hex")
        weapons = self._weapon_pool(battle, s, fire)
        if isinstance(weapons, Illegal):
            return weapons
        moved_to = (shooter, hx) if as_if is not None else None
        rng_h = distance(hx, th)
        rng_m = rng_h * self.hex_size(battle)
        band = band_of(rng_m, o.band_edges)
        # the terrain's part of the sight (§7.5) decides whether a direct shot is possible; the tanks giving
        # cover are read only for the attack made (:meth:`_sight_of`): the same answer as ``self.sight``
        ent = self._sight_entry(battle, hx, th, o.los_rule)
        seen = bool(ent[2].direct_shot)
        direct_ok = seen and rng_m <= o.max_sight_m
        explicit = bool(isinstance(fire, Fire) and fire.weapons)
        ind = [w for w in weapons if w.indirect]
        # location (§13) matters only to an indirect attack: asked only when one is tried
        if ind:
            located, sights_only = self._located(battle, s, hx, th, self.board(battle, moved=moved_to), target)
        else:
            located, sights_only = False, False
        indirect_ok = rng_m >= o.min_indirect_m and located
        tries: list[bool] = []
        if ind and not (explicit and len(ind) < len(weapons)):
            tries.append(True)
        tries.append(False)   # an indirect weapon may also fire directly (§13)
        reason = "no attack possible"
        for indirect in tries:
            pool = ind if indirect else list(weapons)
            if indirect and not indirect_ok:
                reason = "indirect_below_min_range" if located else "target not located"
                continue
            if not indirect and not direct_ok:
                reason = "beyond_sight" if seen else "hidden"
                continue
            firing = [w for w in pool if w.firepower >= band.fp_needed or o.fp_requirement_mode == "no_damage"]
            if not firing:
                reason = "firepower_below_band"
                continue
            sg = self._sight_of(battle, ent, o.tanks_give_cover, moved_to)
            moved = self._moved_half(battle, shooter, as_if)
            cover = sg.half_cover if not indirect else False
            focused = s.rules_state.get("sights_focus") == target
            roll_mod = -2 if (indirect and sights_only and not focused) else 0
            tn = tn_to_hit(band.tn, t.vehicle.size, moved_half=moved, half_cover=cover, tn_min=o.tn_min,
                           tn_clamp=o.tn_clamp)
            face = aspect(th, t.facing, hx).face
            eff = effective_dur(t.vehicle.dur, indirect=indirect, aspect=face,
                                reinforced_turret=t.vehicle.features.reinforced_turret, half_cover=cover)
            wkeys = tuple(WeaponKey(w.firepower >= eff and w.firepower >= band.fp_needed, w.damage.dice,
                                    w.damage.keep, 0, w.burst, w.id) for w in firing)
            key = ShotKey(tn=tn, roll_bonus=s.vehicle.abilities.reality_com + s.vehicle.derived.to_hit + roll_mod,
                          weapons=wkeys, target_dt=self.dt(t), to_hit_naturals=o.to_hit_naturals,
                          burst_first_shot=o.burst_first_shot, overkill_roll=o.overkill_roll,
                          ost_hit_threshold_dt=o.ost_hit_threshold_dt, ost_hit_timing=o.ost_hit_timing)
            info = {"attack": "shot", "range_hexes": rng_h, "range_m": rng_m, "band": band.number,
                    "fp_needed": band.fp_needed, "tn": tn, "indirect": indirect, "visibility": sg.visibility,
                    "half_cover": cover, "moved_half": moved, "effective_dur": eff, "roll_mod": roll_mod,
                    "sights_only": indirect and sights_only, "weapons": tuple(w.id for w in firing),
                    "aspect": None if indirect else face}
            return Shot(shooter, target, key, None if indirect else face, info)
        return Illegal(reason)

    # --- batched shots (:meth:`sim.rules.base.Ruleset.shots` / ``shots_at``) -------------------------------------
    def _firer_part(self, battle: BoardView, s: TankState, turn: int) -> Illegal | int | None:
        """The firer's part of :meth:`shot` with ``fire=None``: ``Illegal`` when it cannot attack (out or
        panicked), ``None`` when it has an indirect weapon ready (then every pair takes :meth:`shot`, which tries
        the indirect attack and location, §13), else the highest Firepower of its ready weapons (``-1``: none
        ready, §7.4) -- the same tests as :meth:`can_act` and :meth:`_weapon_pool` (inlined, over
        :func:`_weapon_table`), read off the firer's state now.  (The batched queries inline this too.)"""
        st = s.status
        if s.hex is None or st in Status.OFF_BOARD or st in _OUT:
            return _NO_SHOOTER
        rs = s.rules_state
        v = s.vehicle
        if int(rs.get("dt", v.dt)) <= 0 or int(rs.get("ost", v.ost)) <= 0:
            return _NO_SHOOTER
        best = -1
        for key, indirect, fp in _weapon_table(v):
            if int(rs.get(key, 1)) <= turn:
                if indirect:
                    return None
                if fp > best:
                    best = fp
        return best

    def _seen(self, battle: BoardView) -> _SeenMemo:
        """``seen(frm, to)``: whether a direct shot ``frm`` -> ``to`` is possible by the terrain's lines (§7.5,
        :func:`~sim.rules.hummel_quest.sight.direct_shot` on the battle's sight grid, ``los_rule`` of the
        options), ``None`` for an end off the grid's box (ask :func:`crossed`): a :class:`_SeenMemo`.

        Kept as the map's :meth:`~sim.hexgrid.HexMap.local_cached` entry under the rule, like the grid itself:
        renewed when the terrain changes (a structure collapsing included, which logs a terrain change)."""
        rule = self._opts(battle).los_rule
        return battle.map.local_cached(("hq_seen", rule), lambda: _SeenMemo(self.board(battle).sight_grid(), rule))

    def legal_shots(self, battle: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None
                    ) -> list[Shot | Illegal]:
        """:meth:`shots` where only the legal shots matter (:meth:`agents.observation.Observation.odds_many`):
        the same :class:`Shot` answers; an illegal one is an :class:`Illegal` whose reason may differ from
        :meth:`shot`'s.  The range (``max_sight_m``, §7.5) and the band's Firepower needed (§7.1) are tested
        before the terrain's lines (most pairs fail them): each is a test :meth:`shot` makes of a direct shot,
        so a pair failing one has no legal shot whatever its lines."""
        return self.shots(battle, shooter, targets, as_if, _reasons=False)

    def shots(self, battle: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None,
              _reasons: bool = True) -> list[Shot | Illegal]:
        """``[shot(battle, shooter, t, None, as_if) for t in targets]``, the same answers in that order: the
        firer's part (:meth:`_firer_part`) and the batch's options once, each tank target first through the
        tests of :meth:`shot` whose answers need no sight detail (in its order: friendly target, target gone,
        same hex, no ready weapon, then whether the shot is direct by the terrain's lines, §7.5 (:meth:`_seen`;
        ``hidden``), ``max_sight_m`` (``beyond_sight``) and the band's Firepower needed, §7.1
        (``firepower_below_band``)), the rest by :meth:`shot`."""
        ts = list(targets)
        tanks = battle.tanks
        n = len(tanks)
        if not isinstance(shooter, int) or not 0 <= shooter < n:
            return [self.shot(battle, shooter, t, None, as_if) for t in ts]
        s = tanks[shooter]
        part = self._firer_part(battle, s, max(1, int(getattr(battle, "turn", 1) or 1)))
        if isinstance(part, Illegal):
            return [part] * len(ts)
        if part is None:
            return [self.shot(battle, shooter, t, None, as_if) for t in ts]
        try:
            hx = as_hex(as_if.hex) if as_if is not None else _hex(s)
        except (TypeError, ValueError):   # a malformed what-if hex: :meth:`shot` says so where it reads it
            return [self.shot(battle, shooter, t, None, as_if) for t in ts]
        o = self._opts(battle)
        hs = self.hex_size(battle)
        max_m, edges = o.max_sight_m, o.band_edges
        no_damage = o.fp_requirement_mode == "no_damage"
        seen = self._seen(battle)
        memo = seen.memo
        q0, r0, span, qlo, rlo, q1, r1, size = seen.q0, seen.r0, seen.span, seen.qlo, seen.rlo, seen.q1, seen.r1, \
            seen.size
        aq, ar = hx[0], hx[1]
        ia = ((aq - q0) * span + ar - r0) * size if qlo <= aq <= q1 and rlo <= ar <= r1 else -1
        side = s.side
        off_board = Status.OFF_BOARD
        out: list[Shot | Illegal] = []
        add = out.append
        max_h = max_m // hs   # d * hs > max_m  <=>  d > max_m // hs (whole hexes)
        need_at: dict[int, int] = {}   # range in hexes -> the band's Firepower needed (§7.1)
        if not _reasons and part >= 0 and type(battle) is BattleState:
            tab = self._target_table(battle, side, ts)
            if tab is not None:   # :meth:`legal_shots` on the battle: the targets read off the table
                reach = _reach(part, max_h, hs, edges, no_damage)
                out = list(tab[0])
                for k, tt, bq, br, eh in tab[1]:
                    dq = aq - bq   # :func:`sim.hexgrid.distance`, inlined
                    dr = ar - br
                    ds = dq + dr
                    if dq < 0:
                        dq = -dq
                    if dr < 0:
                        dr = -dr
                    if ds < 0:
                        ds = -ds
                    d = dq if dq >= dr and dq >= ds else (dr if dr >= ds else ds)
                    if d == 0:
                        out[k] = _SAME_HEX
                        continue
                    if reach >= 0 and d > reach:
                        out[k] = _FP_LOW   # beyond sight or under the band's Firepower (any reason will do)
                        continue
                    if ia < 0 or not (qlo <= bq <= q1 and rlo <= br <= r1):
                        out[k] = self.shot(battle, shooter, tt, None, as_if)   # an end off the grid
                        continue
                    got = memo.get(ia + (bq - q0) * span + br - r0)
                    if got is None:
                        got = seen(hx, eh)
                    verdict = _sight_range_verdict(got, hx, eh, part, hs, max_m, edges, no_damage)
                    out[k] = self.shot(battle, shooter, tt, None, as_if) if verdict is None else verdict
                return out
        for tt in ts:
            if not (isinstance(tt, int) and not isinstance(tt, bool) and 0 <= tt < n):
                add(self.shot(battle, shooter, tt, None, as_if))
                continue
            t = tanks[tt]
            if t.side == side:
                add(_FRIENDLY)
                continue
            th = t.hex
            if th is None or t.status in off_board:
                add(_GONE)
                continue
            if hx == th:
                add(_SAME_HEX)
                continue
            if part < 0:
                add(_NO_WEAPON)
                continue
            bq, br = th[0], th[1]
            if ia < 0 or not (qlo <= bq <= q1 and rlo <= br <= r1):
                add(self.shot(battle, shooter, tt, None, as_if))   # an end off the grid: the full sight
                continue
            if not _reasons:   # :meth:`legal_shots`: range and Firepower first
                dq = aq - bq   # :func:`sim.hexgrid.distance`, inlined
                dr = ar - br
                ds = dq + dr
                if dq < 0:
                    dq = -dq
                if dr < 0:
                    dr = -dr
                if ds < 0:
                    ds = -ds
                d = dq if dq >= dr and dq >= ds else (dr if dr >= ds else ds)
                if d > max_h:
                    add(_BEYOND)
                    continue
                if not no_damage:
                    need = need_at.get(d)
                    if need is None:
                        need = need_at[d] = band_of(d * hs, edges).fp_needed
                    if part < need:
                        add(_FP_LOW)
                        continue
            got = memo.get(ia + (bq - q0) * span + br - r0)
            if got is None:
                got = seen(hx, th)
            verdict = _sight_range_verdict(got, hx, th, part, hs, max_m, edges, no_damage)
            add(self.shot(battle, shooter, tt, None, as_if) if verdict is None else verdict)
        return out

    def shots_at(self, battle: BoardView, shooters: Iterable[int], target: int) -> list[Shot | Illegal]:
        """``[shot(battle, s, target) for s in shooters]``, the same answers in that order: the batch's options
        and the target once, each firer's part (:meth:`_firer_part`, inlined) and pair (the tests of
        :meth:`shots`, inlined) without building a shot when the answer is one of the common illegal ones, the
        rest by :meth:`shot`."""
        ss = list(shooters)
        tanks = battle.tanks
        n = len(tanks)
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < n:
            return [self.shot(battle, x, target) for x in ss]
        t = tanks[target]
        turn = max(1, int(getattr(battle, "turn", 1) or 1))
        o = self._opts(battle)
        hs = self.hex_size(battle)
        max_m, edges = o.max_sight_m, o.band_edges
        no_damage = o.fp_requirement_mode == "no_damage"
        seen = self._seen(battle)
        memo = seen.memo
        q0, r0, span, qlo, rlo, q1, r1, size = seen.q0, seen.r0, seen.span, seen.qlo, seen.rlo, seen.q1, seen.r1, \
            seen.size
        off_board = Status.OFF_BOARD
        tside = t.side
        th: Hex = t.hex if t.hex is not None else Hex(0, 0)
        gone = t.hex is None or t.status in off_board
        if gone:
            bq = br = 0
            jb = -1
        else:
            bq, br = th[0], th[1]
            jb = (bq - q0) * span + br - r0 if qlo <= bq <= q1 and rlo <= br <= r1 else -1
        tables = _WEAPON_TABLES
        out: list[Shot | Illegal] = []
        add = out.append
        for x in ss:
            if not isinstance(x, int) or not 0 <= x < n:
                add(self.shot(battle, x, target))
                continue
            s = tanks[x]
            # the firer's part (:meth:`_firer_part`)
            st = s.status
            hx = s.hex
            if hx is None or st in off_board or st in _OUT:
                add(_NO_SHOOTER)
                continue
            rs = s.rules_state
            v = s.vehicle
            if int(rs.get("dt", v.dt)) <= 0 or int(rs.get("ost", v.ost)) <= 0:
                add(_NO_SHOOTER)
                continue
            best = -1
            wt = tables.get(id(v))   # :func:`_weapon_table`, its hit inlined
            for key, indirect, fp in (wt[1] if wt is not None and wt[0] is v else _weapon_table(v)):
                if int(rs.get(key, 1)) <= turn:
                    if indirect:
                        best = -2
                        break
                    if fp > best:
                        best = fp
            if best == -2:   # an indirect weapon ready: the full shot (§13)
                add(self.shot(battle, x, target))
                continue
            # the pair (:meth:`shots`' tests)
            if s.side == tside:
                add(_FRIENDLY)
                continue
            if gone:
                add(_GONE)
                continue
            if hx == th:
                add(_SAME_HEX)
                continue
            if best < 0:
                add(_NO_WEAPON)
                continue
            aq, ar = hx[0], hx[1]
            if jb < 0 or not (qlo <= aq <= q1 and rlo <= ar <= r1):
                add(self.shot(battle, x, target))   # an end off the grid: the full sight
                continue
            got = memo.get(((aq - q0) * span + ar - r0) * size + jb)
            if got is None:
                got = seen(hx, th)
            verdict = _sight_range_verdict(got, hx, th, best, hs, max_m, edges, no_damage)
            add(self.shot(battle, x, target) if verdict is None else verdict)
        return out

    def kill_odds_at(self, battle: BoardView, shooters: Iterable[int], target: int) -> list[Fraction | None]:
        """``[None if illegal else odds(sh.key).p_kill for sh in shots_at(battle, shooters, target)]``, the same
        exact values in that order: what a side's threat sums (:meth:`agents.observation.Observation.threat`).

        A ``None`` needs no reason, so the tests of a direct shot are taken cheapest first: the firer's part
        (:meth:`_firer_part`, inlined), the pair's refusals of :meth:`shots_at`, then the range in whole hexes
        (``max_sight_m``, §7.5) and the band's Firepower needed (§7.1; asked once per range in the call) before
        the terrain's lines (:meth:`_seen`), which most pairs never reach; a pair that passes them all, a firer
        with an indirect weapon ready (§13: location, not sight), an end off the sight grid or an odd id is
        answered by :meth:`shot` and :meth:`odds`.  Every test is one :meth:`shot` makes, and a direct shot is
        legal exactly when all pass (the best ready Firepower reaching the band's is ``firing`` non-empty), so
        the order changes no answer.

        The firer's part (cannot attack, an indirect weapon ready, or the best ready Firepower, -1 for none) is
        kept per battle in :data:`_FIRER_PARTS` under the battle's ``version`` and ``turn`` (a threat asks it of
        the same enemies at every candidate hex): it reads the firer's status, DT, OST, weapon readiness (its
        ``rules_state``, §7.4) and vehicle, which change only by events, each of which bumps the version, and the
        turn.  Only a tank that is the battle's own object is kept (a what-if view's placed copy is read afresh);
        hiding (:meth:`sim.battle.BattleState.hiding`) changes a tank's hex alone, which is read on every ask, not
        kept.  Bounded: one table per battle object (weakly held), renewed at each version."""
        ss = list(shooters)
        tanks = battle.tanks
        n = len(tanks)
        odds = self.odds
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < n:
            return [None if isinstance(x, Illegal) else odds(x.key).p_kill for x in self.shots_at(battle, ss, target)]
        t = tanks[target]
        th = t.hex
        if th is None or t.status in Status.OFF_BOARD:
            return [None] * len(ss)   # every shot at a tank gone is refused (:meth:`shot`), whoever fires
        turn = max(1, int(getattr(battle, "turn", 1) or 1))
        o = self._opts(battle)
        hs = self.hex_size(battle)
        max_h = o.max_sight_m // hs   # d * hs > max_m  <=>  d > max_m // hs (whole hexes)
        edges = o.band_edges
        no_damage = o.fp_requirement_mode == "no_damage"
        seen = self._seen(battle)
        memo = seen.memo
        q0, r0, span, qlo, rlo, q1, r1, size = seen.q0, seen.r0, seen.span, seen.qlo, seen.rlo, seen.q1, seen.r1, \
            seen.size
        off_board = Status.OFF_BOARD
        tside = t.side
        bq, br = th[0], th[1]
        jb = (bq - q0) * span + br - r0 if qlo <= bq <= q1 and rlo <= br <= r1 else -1
        need_at: dict[int, int] = {}   # range in hexes -> the band's Firepower needed (§7.1)
        tables = _WEAPON_TABLES
        if type(battle) is HypoView and battle.moved[0] == target and type(battle.base) is BattleState:
            cand = self._shooter_table(battle.base, ss, tside, turn, max_h, hs, edges, no_damage)
            if cand is not None:   # a threat's what-if view: the shooters' answers read off the table
                out_f: list[Fraction | None] = [None] * len(ss)
                for k, x, aq, ar, reach in cand:
                    if reach >= 0:
                        dq = aq - bq   # :func:`sim.hexgrid.distance`, inlined
                        dr = ar - br
                        ds = dq + dr
                        if dq < 0:
                            dq = -dq
                        if dr < 0:
                            dr = -dr
                        if ds < 0:
                            ds = -ds
                        d = dq if dq >= dr and dq >= ds else (dr if dr >= ds else ds)
                        if d > reach or d == 0:
                            continue   # beyond sight or the Firepower's band, or the same hex
                        if jb >= 0 and qlo <= aq <= q1 and rlo <= ar <= r1:
                            got = memo.get(((aq - q0) * span + ar - r0) * size + jb)
                            if got is None:
                                got = seen((aq, ar), th)
                            if not got:
                                continue   # hidden
                    sh = self.shot(battle, x, target)
                    if not isinstance(sh, Illegal):
                        out_f[k] = odds(sh.key).p_kill
                return out_f
        # the firers' parts of the battle (under its what-if views) at this version and turn
        root: Any = battle
        while type(root) is HypoView:
            root = root.base
        root_tanks: list[Any]
        if type(root) is BattleState:
            ent = _FIRER_PARTS.get(root)
            if ent is None or ent[0] != root.version or ent[1] != turn:
                ent = _FIRER_PARTS[root] = (root.version, turn, {})
            parts, root_tanks = ent[2], root.tanks
        else:
            parts, root_tanks = {}, [None] * n
        out: list[Fraction | None] = []
        add = out.append
        for x in ss:
            if type(x) is not int or not 0 <= x < n:
                sh = self.shot(battle, x, target)
                add(None if isinstance(sh, Illegal) else odds(sh.key).p_kill)
                continue
            s = tanks[x]
            hx = s.hex
            if hx is None or s.side == tside or hx == th:
                add(None)
                continue
            best = parts.get(x) if s is root_tanks[x] else None
            if best is None:
                st = s.status
                rs = s.rules_state
                v = s.vehicle
                if st in off_board or st in _OUT or int(rs.get("dt", v.dt)) <= 0 or int(rs.get("ost", v.ost)) <= 0:
                    best = _CANNOT
                else:
                    best = -1
                    wt = tables.get(id(v))   # :func:`_weapon_table`, its hit inlined
                    for key, indirect, fp in (wt[1] if wt is not None and wt[0] is v else _weapon_table(v)):
                        if int(rs.get(key, 1)) <= turn:
                            if indirect:
                                best = _INDIRECT
                                break
                            if fp > best:
                                best = fp
                if s is root_tanks[x]:
                    parts[x] = best
            if best < 0 and best != _INDIRECT:   # cannot attack, or no ready weapon
                add(None)
                continue
            aq, ar = hx[0], hx[1]
            if best >= 0:
                dq = aq - bq   # :func:`sim.hexgrid.distance`, inlined
                dr = ar - br
                ds = dq + dr
                if dq > max_h or -dq > max_h or dr > max_h or -dr > max_h or ds > max_h or -ds > max_h:
                    add(None)   # beyond ``max_sight_m``
                    continue
                if not no_damage:
                    if dq < 0:
                        dq = -dq
                    if dr < 0:
                        dr = -dr
                    if ds < 0:
                        ds = -ds
                    d = dq if dq >= dr and dq >= ds else (dr if dr >= ds else ds)
                    need = need_at.get(d)
                    if need is None:
                        need = need_at[d] = band_of(d * hs, edges).fp_needed
                    if best < need:
                        add(None)   # firepower below the band's
                        continue
                if jb >= 0 and qlo <= aq <= q1 and rlo <= ar <= r1:
                    got = memo.get(((aq - q0) * span + ar - r0) * size + jb)
                    if got is None:
                        got = seen(hx, th)
                    if not got:
                        add(None)   # hidden
                        continue
            sh = self.shot(battle, x, target)
            add(None if isinstance(sh, Illegal) else odds(sh.key).p_kill)
        return out

    def _target_table(self, root: BattleState, side: int, ts: list[Any]
                      ) -> tuple[list[Any], list[tuple[int, int, int, int, Hex]]] | None:
        """For :meth:`legal_shots` on the battle ``root`` by a shooter of ``side`` at the tank ids ``ts``:
        ``(answers, entries)`` -- ``answers`` per target the :class:`Illegal` it gets whatever the shooter's hex
        (a friendly tank, a tank off the board or hidden), else ``None``; ``entries`` ``[(position in ts, target,
        q, r, hex)]`` for the others.  ``None`` when an id is not a tank's (the caller's general loop answers).

        Kept per battle (:data:`_TARGET_TABLES`) under ``(side, ts)`` and patched like :meth:`_shooter_table`: an
        entry reads only its target's side, hex and status, which change only through events naming it
        (``BattleState.state_changes``), and the hiding; built afresh when the hidden tanks differ, when the
        battle's ``state_changes`` is another list, or when its version moved without an event.  Bounded: at
        most :data:`_SHOOTER_TABLES_MAX` tables per battle."""
        try:
            key = (side, tuple(ts))
            hash(key)
        except TypeError:
            return None
        per = _TARGET_TABLES.get(root)
        if per is None:
            per = _TARGET_TABLES[root] = {}
        hidden = root.hidden_tanks
        sc = root.state_changes
        n = len(sc)
        off = root.version - len(root.log)
        rec = per.get(key)
        if rec is not None and rec[0] is sc and rec[2] == off and rec[3] == hidden and rec[1] <= n:
            if rec[1] == n:
                return rec[4], rec[6]
            changed = set(sc[rec[1]:n])
            answers, slots = rec[4], rec[5]
            redo = [k for k, x in enumerate(ts) if x in changed]
        else:
            if rec is None and len(per) >= _SHOOTER_TABLES_MAX:
                per.clear()
            answers = [None] * len(ts)
            slots = [None] * len(ts)
            redo = list(range(len(ts)))
        tanks = root.tanks
        nt = len(tanks)
        off_board = Status.OFF_BOARD
        for k in redo:
            x = ts[k]
            if type(x) is not int or not 0 <= x < nt:
                return None
            t = tanks[x]
            th = t.hex
            slots[k] = None
            if t.side == side:
                answers[k] = _FRIENDLY
            elif th is None or t.status in off_board:
                answers[k] = _GONE
            else:
                answers[k] = None
                slots[k] = (k, x, th[0], th[1], th)
        entries = [e for e in slots if e is not None]
        per[key] = [sc, n, off, hidden, answers, slots, entries]
        return answers, entries

    def _shooter_table(self, root: BattleState, ss: list[Any], tside: int, turn: int, max_h: int, hs: int,
                       edges: str, no_damage: bool) -> list[tuple[int, int, int, int, int]] | None:
        """For :meth:`kill_odds_at` on a what-if view of ``root`` that moves only the target (a threat's view:
        every shooter is ``root``'s own tank): ``[(position in ss, shooter, q, r, reach)]`` for the shooters
        whose answer may be a kill odds -- the others (off the board or hidden, of the target's side ``tside``,
        unable to attack, no weapon ready) answer ``None`` whatever the target's hex --, where ``reach`` is the
        greatest range in whole hexes at which a direct shot is neither beyond ``max_sight_m`` nor under the
        band's Firepower needed (§7.1, §7.5) with every shorter range passing both, or ``-1``: ask :meth:`shot`
        at any range (an indirect weapon ready, §13; or bands whose passing ranges are no prefix).  ``None`` when
        an id is not a tank's (the caller's general loop answers).

        Kept per battle (:data:`_SHOOTER_TABLES`) under ``(tside, ss)`` and the options' values, patched from
        the events since the last ask: an entry reads only its shooter's hex, side, status, DT, OST, weapon
        readiness and vehicle (what :meth:`kill_odds_at` reads of a shooter before the sight and the shot) --
        which change only through events naming the tank (``BattleState.state_changes``) -- the turn and the
        hiding (a side's view takes tanks off the board without an event).  Built afresh when the turn or the
        hidden tanks differ, when the battle's ``state_changes`` is another list, or when its version moved
        without an event (a change by hand: ``version - len(log)`` differs).  Bounded: at most
        :data:`_SHOOTER_TABLES_MAX` tables per battle."""
        try:
            key = (tside, tuple(ss), max_h, hs, edges, no_damage)
            hash(key)
        except TypeError:   # an unhashable id: the general loop
            return None
        per = _SHOOTER_TABLES.get(root)
        if per is None:
            per = _SHOOTER_TABLES[root] = {}
        hidden = root.hidden_tanks
        sc = root.state_changes
        n = len(sc)
        off = root.version - len(root.log)
        rec = per.get(key)
        if rec is not None and rec[0] is sc and rec[2] == off and rec[3] == turn and rec[4] == hidden \
                and rec[1] <= n:
            if rec[1] == n:
                return rec[6]
            changed = set(sc[rec[1]:n])
            slots = rec[5]
            redo = [k for k, x in enumerate(ss) if x in changed]
        else:
            if rec is None and len(per) >= _SHOOTER_TABLES_MAX:
                per.clear()
            slots = [None] * len(ss)
            redo = list(range(len(ss)))
        tanks = root.tanks
        nt = len(tanks)
        tables = _WEAPON_TABLES
        off_board = Status.OFF_BOARD
        for k in redo:
            x = ss[k]
            slots[k] = None
            if type(x) is not int or not 0 <= x < nt:
                return None
            s = tanks[x]
            hx = s.hex
            if hx is None or s.side == tside:
                continue
            st = s.status
            rs = s.rules_state
            v = s.vehicle
            if st in off_board or st in _OUT or int(rs.get("dt", v.dt)) <= 0 or int(rs.get("ost", v.ost)) <= 0:
                continue   # cannot attack
            best = -1
            wt = tables.get(id(v))   # :func:`_weapon_table`, its hit inlined
            for wkey, indirect, fp in (wt[1] if wt is not None and wt[0] is v else _weapon_table(v)):
                if int(rs.get(wkey, 1)) <= turn:
                    if indirect:
                        best = _INDIRECT
                        break
                    if fp > best:
                        best = fp
            if best == -1:
                continue   # no weapon ready
            if best == _INDIRECT:
                reach = -1
            else:
                reach = _reach(best, max_h, hs, edges, no_damage)
            slots[k] = (k, x, hx[0], hx[1], reach)
        cand = [e for e in slots if e is not None]
        per[key] = [sc, n, off, turn, hidden, slots, cand]
        return cand

    # --- what a shot reads (the hooks of answers kept across versions, :class:`agents.observation.Observation`) ----
    def _any_indirect(self, battle: BoardView) -> bool:
        """Whether a tank of ``battle`` carries an indirect weapon (§13): the vehicles are fixed for a battle."""
        return any(w.indirect for t in battle.tanks for w in t.vehicle.weapons)

    def pair_local_shots(self, battle: BoardView) -> bool:
        """Whether a tank shot reads nothing of the board but its two tanks (hex, facing, status, ``rules_state``:
        DT, OST, weapon readiness, ``moved_hexes``, ``sights_focus``), ``battle.rules_state`` (the active tank,
        ``turns_completed`` -- which fixes ``battle.turn``, read for readiness, §7.4: ``turns_completed + 1`` at
        every decision --, collapsed structures), the options, the terrain and the map's logged changes.

        False where a shot reads a third tank: with ``tanks_give_cover`` (§7.5) a tank on the last intermediate
        hex of a line gives the target hard cover (+1 TN, Reinforced Turret), whoever it is and whatever its
        state (a move, not a map change, puts it there); with ``spotting`` (§13) an indirect attack is located by
        any ally's LOS, so it reads every ally's hex -- false then whenever a tank of the battle has an indirect
        weapon.  The hexes whose occupants a shot read are its :meth:`shot_footprint`."""
        o = self._opts(battle)
        if o.tanks_give_cover:
            return False
        return not (o.spotting and self._any_indirect(battle))

    def shot_footprint(self, battle: BoardView, shot: Shot | Illegal | None, firer_hex: Hex, firer_facing: int,
                       target_hex: Hex) -> Callable[[Hex], bool] | None:
        """For the answer ``shot`` of :meth:`shot` (``fire=None``) from ``firer_hex`` at the tank on
        ``target_hex`` (``firer_facing`` is not read: HQ sight has no facing, §7.5): ``touches(h)``, true for every
        hex whose occupants or obstacles the answer read besides the two tanks' own, or ``None`` when it may have
        read any hex's (the allies' positions of §13 spotting).

        - a direct attack (a :class:`Shot` without ``indirect``): the last intermediate hex of each line that
          is not hard cover itself, when ``tanks_give_cover`` and the lines cross no blocking hex and the
          target's hex is no hard cover (:data:`~sim.rules.hummel_quest.sight.Crossed`'s ``check``: a tank
          there gives cover, §7.5); else no hex (the terrain alone decided);
        - an indirect attack, or a refusal: no hex when the firer has LOS to the target (§13 (a): located
          without asking the allies; an indirect attack ignores cover) or ``spotting`` is off or no tank of the
          battle has an indirect weapon (no location was asked of the allies); else ``None``: an ally's LOS
          (§13 (b)) may have been read.  (Other refusals -- friendly, gone, same hex, no ready weapon -- read the
          pair alone, so they are covered by the same answer.)
        - ``shot`` ``None`` (the answer was not made: :meth:`kill_odds_at`): what either of the two above may have
          read -- ``None`` where an indirect attack or refusal may have read the allies, else the direct
          attack's hexes.
        Tanks never block sight (§7.5), so the lines' blocking, the range and the Firepower needed read no
        tank.  A wreck in HQ is a tank on its hex (§9), so it is an occupant like any other."""
        o = self._opts(battle)
        a, b = as_hex(firer_hex), as_hex(target_hex)
        if isinstance(shot, Shot) and not shot.info.get("indirect"):
            if not o.tanks_give_cover:
                return _TOUCHES_NONE
            fixed, check = self._sight_entry(battle, a, b, o.los_rule)[:2]
            if fixed is not None or not check:
                return _TOUCHES_NONE
            hexes = frozenset(check)
            return hexes.__contains__
        if o.spotting and self._any_indirect(battle) and not self.los(battle, a, b):
            return None
        if shot is None and o.tanks_give_cover:   # the answer not given: the direct attack's hexes (a superset)
            fixed, check = self._sight_entry(battle, a, b, o.los_rule)[:2]
            if fixed is None and check:
                return frozenset(check).__contains__
        return _TOUCHES_NONE

    def _weapon_pool(self, battle: BoardView, s: TankState, fire: Action | None) -> list[Weapon] | Illegal:
        ws = list(s.vehicle.weapons)
        if isinstance(fire, Fire) and fire.weapons:
            ids = list(fire.weapons)
            known = {w.id: w for w in ws}
            bad = [i for i in ids if i not in known]
            if bad:
                return Illegal(f"unknown weapon(s) {', '.join(bad)}")
            pool = [w for w in ws if w.id in ids]
            late = [w.id for w in pool if not self._ready(battle, s, w)]
            if late:
                return Illegal(f"reloading: {', '.join(late)}")
            return pool
        rs = s.rules_state
        turn = max(1, int(getattr(battle, "turn", 1) or 1))
        pool = [w for w in ws if int(rs.get(_ready_key(w.id), 1)) <= turn]   # :meth:`_ready`
        if not pool:
            return Illegal("no ready weapon")
        return pool

    def structure_at(self, battle: BoardView, h: Hex) -> tuple[int, int] | None:
        """``(dur, dt now)`` of the standing structure on ``h``, or ``None`` (§14)."""
        if h not in battle.map:
            return None
        st = self.hex_flags(battle, h).structure
        if st is None:
            return None
        dt_now = int(battle.rules_state.get(f"structure_dt:{h.q},{h.r}", st[1]))
        return None if dt_now <= 0 else (st[0], dt_now)

    def _structure_shot(self, battle: BoardView, shooter: int, h: Hex, fire: Action | None, as_if: Hypo | None
                        ) -> Shot | Illegal:
        """An attack on a structure (§14): no To Hit roll; bunker busters only (option); the band's Firepower
        needed; the hex visible (direct) or at least ``min_indirect_m`` away (indirect; always located)."""
        s = battle.tanks[shooter]
        o = self._opts(battle)
        st = self.structure_at(battle, h)
        if st is None:
            return Illegal("no standing structure on that hex")
        weapons = self._weapon_pool(battle, s, fire)
        if isinstance(weapons, Illegal):
            return weapons
        if o.structures_need_bunker_buster:
            weapons = [w for w in weapons if w.bunker_buster]
            if not weapons:
                return Illegal("no bunker buster weapon ready")
        hx = as_hex(as_if.hex) if as_if is not None else _hex(s)
        rng_m = distance(hx, h) * self.hex_size(battle)
        band = band_of(rng_m, o.band_edges)
        board = self.board(battle, moved=(shooter, hx) if as_if is not None else None)
        direct_ok = self.los(battle, hx, h, board)
        ind = [w for w in weapons if w.indirect]
        for indirect in ((True, False) if ind else (False,)):
            if indirect and rng_m < o.min_indirect_m:
                continue
            if not indirect and not direct_ok:
                continue
            pool = ind if indirect else weapons
            firing = [w for w in pool if w.firepower >= band.fp_needed or o.fp_requirement_mode == "no_damage"]
            if not firing:
                continue
            d = max(0, st[0] - (2 if indirect else 0))
            wkeys = tuple(WeaponKey(w.firepower >= d and w.firepower >= band.fp_needed, w.damage.dice, w.damage.keep,
                                    0, w.burst, w.id) for w in firing)
            key = ShotKey(tn=0, roll_bonus=0, weapons=wkeys, target_dt=st[1], auto_hit=True, structure=True,
                          burst_first_shot=o.burst_first_shot)
            info = {"attack": "structure", "structure": h, "range_m": rng_m, "band": band.number,
                    "indirect": indirect, "effective_dur": d, "weapons": tuple(w.id for w in firing)}
            return Shot(shooter, None, key, None, info)
        return Illegal("structure out of reach (sight, range or Firepower)")

    def ram_shot(self, battle: BoardView, attacker: int, target: object) -> Shot | Illegal:
        """The ram ``attacker`` -> ``target`` (§12), or why not: the attacker can act and has not moved this turn,
        the target is an enemy tank on the board (any state), and :func:`ram_legal` holds."""
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < len(battle.tanks):
            return Illegal("ram target is not a tank")
        a, t = battle.tanks[attacker], battle.tanks[target]
        if not self.can_act(a):
            return Illegal("attacker cannot ram (out or panicked)")
        if int(a.rules_state.get("moved_hexes", 0)) > 0:
            return Illegal("attacker has moved this turn")
        th = self.board_hex(t)
        if t.side == a.side or th is None:
            return Illegal("ram target is not an enemy tank on the board")
        ah = _hex(a)
        s = self.speed_hexes(battle, attacker)
        # the distance test of :func:`ram_legal` first: no board needed for a target out of reach
        if not (s >= 1 and half_speed(s) <= distance(ah, th) <= s) or not ram_legal(self.board(battle), ah, th, s):
            return Illegal("ram out of reach (half Speed to Speed, clear straight line)")
        key = self.ram_key(battle, attacker, target)
        return Shot(attacker, target, key, None, {"attack": "ram", "distance": distance(ah, th),
                                                  "line": ram_line(ah, th)})

    def ram_key(self, battle: BoardView, attacker: int, target: int) -> RamKey:
        """The :class:`RamKey` of a ram (§12.2, §12.3): pool, capped TN, both damages (``strike_mod`` 0)."""
        o = self._opts(battle)
        a, t = battle.tanks[attacker].vehicle, battle.tanks[target].vehicle
        applies = t.size >= a.size
        ret = ram_damage(t.derived.damage_from_strike, 0, a.dur, a.size) if applies else 0
        return RamKey(pool=a.derived.interaction_pool, tn=min(o.ram_tn_cap, t.derived.tn_to_be_struck),
                      damage=ram_damage(a.derived.damage_from_strike, 0, t.dur, t.size), return_damage=ret,
                      target_dt=self.dt(battle.tanks[target]), attacker_dt=self.dt(battle.tanks[attacker]),
                      ones_tens=o.pool_ones_tens_rule, ost_hit_threshold_dt=o.ost_hit_threshold_dt,
                      ost_hit_timing=o.ost_hit_timing, return_applies=applies)

    def odds(self, key: Hashable) -> Odds:
        """Exact odds of a shot or ram key (cached in :mod:`.odds`).  ``p_kill`` = probability that
        the attack incapacitates the target given its DT now; ``values`` holds ``expected_damage``, ``damage``,
        ``p_ost_loss``, ``p_core_destroyed`` (and for rams ``return_damage``, ``p_attacker_incapacitated``)."""
        if isinstance(key, RamKey):
            r = ram_odds(key)
            vals = {"p_hit": r.p_success, "p_success": r.p_success, "p_kill": r.p_kill, "damage": dict(r.damage),
                    "expected_damage": r.expected_damage, "return_damage": dict(r.return_damage),
                    "expected_return_damage": r.expected_return_damage, "p_ost_loss": r.p_ost_loss,
                    "p_core_destroyed": r.p_core_destroyed, "tn": key.tn,
                    "p_attacker_incapacitated": r.p_attacker_incapacitated}
            return Odds(r.p_success, r.p_kill, vals)
        if isinstance(key, ShotKey):
            a = attack_odds(key)
            vals = {"p_hit": a.p_hit, "p_kill": a.p_kill, "damage": dict(a.damage),
                    "expected_damage": a.expected_damage, "p_ost_loss": a.p_ost_loss,
                    "p_core_destroyed": a.p_core_destroyed, "tn": key.tn}
            return Odds(a.p_hit, a.p_kill, vals)
        raise TypeError(f"not a hummel_quest odds key: {key!r}")

    def logged_odds(self, key: Mapping[str, Any]) -> Odds:
        """Odds of a logged attack: its key is ``RamKey.as_dict()`` (a ram: it has ``pool``) or
        ``ShotKey.as_dict()`` (weapons as a list of mappings)."""
        if "pool" in key:
            return self.odds(RamKey(**dict(key)))
        fields = {k: v for k, v in key.items() if k != "weapons"}
        weapons = tuple(WeaponKey(**dict(w)) for w in key.get("weapons", ()))
        return self.odds(ShotKey(weapons=weapons, **fields))

    def shot_params(self, battle: BoardView, shooter: int, target: int) -> dict[str, Any] | Illegal:
        """The §17.1 parameters of the shot ``shooter`` -> ``target`` for its first firing weapon (the odds command
        takes one weapon)."""
        sh = self.shot(battle, shooter, target)
        if isinstance(sh, Illegal):
            return sh
        if sh.info.get("attack") != "shot" or not isinstance(sh.key, ShotKey):
            return Illegal("not a shot at a tank")
        s, t = battle.tanks[shooter].vehicle, battle.tanks[target].vehicle
        w = s.weapon(sh.info["weapons"][0])
        return {"mode": "shot", "reality_com": s.abilities.reality_com, "to_hit": s.derived.to_hit,
                "roll_mod": sh.info["roll_mod"], "range_m": sh.info["range_m"], "target_size": t.size,
                "shooter_moved_half": sh.info["moved_half"], "hard_cover": sh.info["half_cover"],
                "firepower": w.firepower, "target_dur": t.dur, "aspect": sh.info["aspect"] or "front",
                "indirect": sh.info["indirect"], "reinforced_turret": t.features.reinforced_turret,
                "damage_dice": w.damage.dice, "damage_keep": w.damage.keep, "burst": w.burst,
                "target_dt": sh.key.target_dt}

    # --- resolution (emits) -----------------------------------------------------------------------------------
    def resolve(self, battle: Battle, shot: Shot, dice: DiceSource) -> None:
        """Roll ``shot`` through the stages of :mod:`.odds`, emit its events, then run the OST event
        queue (§10).  A ram resolved here (outside play) takes the default evasion (§12.3).  Raises ``TypeError``
        for a shot this rule set did not make (its key neither a :class:`ShotKey` nor a :class:`RamKey`)."""
        if isinstance(shot.key, RamKey):
            gen = self._ram(battle, dice, shot)
            try:
                d = next(gen)
                while True:
                    d = gen.send(d.default)
            except StopIteration:
                pass
            return
        if shot.info.get("attack") == "structure":
            self._resolve_structure(battle, shot, dice)
            return
        key, tid = shot.key, shot.target
        if not isinstance(key, ShotKey) or tid is None:
            raise TypeError(f"hummel_quest: not a shot at a tank of this rule set: {shot!r}")
        o = self._opts(battle)
        t = battle.tanks[tid]
        roll = hq_odds.roll_attack(key, dice)
        eff = hq_odds.damage_effect(self.dt(t), self.ost(t), roll.damage, roll.any_hit,
                                    threshold=o.ost_hit_threshold_dt, timing=o.ost_hit_timing, loss=o.ost_hit_loss,
                                    core_destroyed=roll.core_destroyed)
        battle.emit(ShotResolved(shooter=shot.shooter, target=shot.target, result="hit" if roll.any_hit else "miss",
                                 hit=roll.any_hit, kill=eff.became_incapacitated, key=key.as_dict(),
                                 details=self._roll_details(shot, key, roll, eff)))
        self._after_fire(battle, shot)
        queue: deque[_QueuedEvent] = deque()
        self._apply_effect(battle, tid, eff, shot.shooter, "shot", queue)
        self._run_queue(battle, queue)

    @staticmethod
    def _roll_details(shot: Shot, key: ShotKey, roll: AttackRoll, eff: Effect) -> dict[str, Any]:
        return {"natural": roll.natural, "to_hit_total": roll.total, "tn": key.tn, "damage": roll.damage,
                "shots": [[s.weapon, s.index, s.natural, s.hit, list(s.rolls), s.damage] for s in roll.shots],
                "overkill": [list(x) for x in roll.overkill_rolls], "dt_after": eff.dt_after,
                "range": shot.info.get("range_hexes"), "face": shot.face,
                "ost_after": eff.ost_after, "core_destroyed": eff.core_destroyed,
                **{k: v for k, v in shot.info.items() if k in ("range_m", "band", "indirect", "visibility",
                                                              "half_cover", "aspect", "weapons", "roll_mod")}}

    def _after_fire(self, battle: Battle, shot: Shot) -> None:
        """Reload bookkeeping (§7.4: fired in round r, ready in round r + reload + 1) and the used sights focus."""
        s = battle.tanks[shot.shooter]
        rnd = max(1, int(getattr(battle, "turn", 1) or 1))
        for wid in shot.info.get("weapons", ()):
            w = s.vehicle.weapon(wid)
            if w.reload > 0:
                battle.emit(TankStateSet(s.tank_id, f"ready.{wid}", rnd + w.reload + 1))
        if shot.target is not None and s.rules_state.get("sights_focus") == shot.target:
            battle.emit(TankStateSet(s.tank_id, "sights_focus", None))

    def _resolve_structure(self, battle: Battle, shot: Shot, dice: DiceSource) -> None:
        h = shot.info["structure"]
        key = shot.key
        if not isinstance(key, ShotKey):
            raise TypeError(f"hummel_quest: not a shot at a structure of this rule set: {shot!r}")
        roll = hq_odds.roll_attack(key, dice)
        before = key.target_dt
        after = max(0, before - roll.damage)
        battle.emit(ShotResolved(shooter=shot.shooter, target=None, result="hit", hit=True, kill=after == 0,
                                 key=key.as_dict(),
                                 details={"structure": [h.q, h.r], "damage": roll.damage, "dt_after": after,
                                          "shots": [[s.weapon, s.index, list(s.rolls), s.damage] for s in roll.shots],
                                          "indirect": shot.info["indirect"]}))
        self._after_fire(battle, shot)
        if after != before:
            battle.emit(BattleStateSet(f"structure_dt:{h.q},{h.r}", after))
        if after == 0:
            battle.emit(RuleEvent("structure_destroyed", shot.shooter, {"hex": [h.q, h.r]}))
            battle.emit(TerrainChanged(h, "rubble"))

    def _apply_effect(self, battle: Battle, tid: int, eff: Effect, by: int | None, cause: str,
                      queue: deque[_QueuedEvent]) -> None:
        """Emit an :class:`~.odds.Effect` on tank ``tid`` and queue its DT-0 / OST-0 events (§10)."""
        t = battle.tanks[tid]
        if eff.dt_after != eff.dt_before:
            battle.emit(TankStateSet(tid, "dt", eff.dt_after))
        if eff.became_incapacitated:
            battle.emit(TankStateSet(tid, "incapacitated", True))
            battle.emit(StatusChanged(tid, Status.INCAPACITATED, cause, by))
            queue.append(("incapacitated", tid, _hex(t)))
        if eff.core_destroyed and not t.rules_state.get("core_destroyed"):
            battle.emit(TankStateSet(tid, "core_destroyed", True))
            battle.emit(RuleEvent("core_destroyed", tid, {"by": by}))
        if eff.ost_loss:
            battle.emit(RuleEvent("ost_loss", tid, {"cause": cause, "loss": eff.ost_loss, "ost": eff.ost_after,
                                                    "by": by}))
            battle.emit(TankStateSet(tid, "ost", eff.ost_after))
        if eff.became_panicked:
            self._panic(battle, tid, cause, queue)

    def _panic(self, battle: Battle, tid: int, cause: str, queue: deque[_QueuedEvent]) -> None:
        h = _hex(battle.tanks[tid])
        battle.emit(TankStateSet(tid, "panicked", True))
        battle.emit(RuleEvent("panic", tid, {"cause": cause, "hex": [h.q, h.r]}))
        queue.append(("panicked", tid, h))

    def _run_queue(self, battle: Battle, queue: deque[_QueuedEvent]) -> None:
        """The FIFO event queue of §10: for each event, witnesses (ascending id) each lose ``ost_witness_loss``
        (a witness reaching 0 panics and queues its own event); a ``panicked`` event then makes its tank flee at
        once unless it was incapacitated meanwhile.  Witness: same side, not the tank itself, not incapacitated,
        OST above 0, LOS to the event hex when the event is processed (option ``witness_requires_los``)."""
        o = self._opts(battle)
        while queue:
            kind, tid, h = queue.popleft()
            subject = battle.tanks[tid]
            board = self.board(battle)
            for w in battle.tanks:
                if w.side != subject.side or w.tank_id == tid:
                    continue
                wh = self.hex_in_play(w)
                if wh is None or self.ost(w) <= 0:
                    continue
                if o.witness_requires_los and not self.los(battle, wh, h, board):
                    continue
                new = max(0, self.ost(w) - o.ost_witness_loss)
                battle.emit(RuleEvent("ost_loss", w.tank_id, {"cause": "witness", "event": kind, "of": tid,
                                                              "loss": self.ost(w) - new, "ost": new}))
                battle.emit(TankStateSet(w.tank_id, "ost", new))
                if new == 0:
                    self._panic(battle, w.tank_id, "witness", queue)
            if kind == "panicked" and not self.is_out(subject) and self.ost(subject) <= 0:
                self._flee(battle, tid)

    def _counted_enemies(self, battle: BoardView, tid: int) -> list[Hex]:
        """Enemies counted by a flee move (§11.2, ``flee_counts``)."""
        o = self._opts(battle)
        t = battle.tanks[tid]
        es = [h for e in battle.tanks if e.side != t.side and (h := self.hex_in_play(e)) is not None]
        if o.flee_counts == "visible":
            board = self.board(battle)
            eyes = [h for a in battle.tanks if a.side == t.side and (h := self.hex_in_play(a)) is not None]
            es = [eh for eh in es if any(self.los(battle, ah, eh, board) for ah in eyes)]
        return es

    def flee_plan(self, battle: BoardView, tid: int) -> FleePlan:
        """The flee move tank ``tid`` would make now (§11.2)."""
        here = _hex(battle.tanks[tid])
        return flee_plan(self.board(battle), here, self.speed_hexes(battle, tid), self._counted_enemies(battle, tid),
                         leaves_map_at_edge=self._opts(battle).panic_leaves_map_at_edge)

    def _flee(self, battle: Battle, tid: int) -> None:
        """Emit a flee move (§11.2): a ``flee`` RuleEvent, one ``Moved`` per hex (the hull turning by the default
        facing rule at each step), and ``fled`` status when it ends on an edge hex."""
        plan = self.flee_plan(battle, tid)
        battle.emit(RuleEvent("flee", tid, {"sector_counts": list(plan.sector_counts), "direction": plan.direction,
                                            "aim_hex": None if plan.aim_hex is None else list(plan.aim_hex),
                                            "path": [list(h) for h in plan.path], "left_map": plan.left_map}))
        self._walk(battle, tid, plan.path)
        if plan.left_map:
            battle.emit(TankStateSet(tid, "fled", True))
            battle.emit(StatusChanged(tid, Status.FLED, "fled off the map", None))

    def _walk(self, battle: Battle, tid: int, path: Iterable[Hex]) -> None:
        t = battle.tanks[tid]
        for h in path:
            k = direction_to(_hex(t), h)
            battle.emit(Moved(tid, Hex(*h), default_facing(t.facing, k), 1))

    def _ram(self, battle: Battle, dice: DiceSource, shot: Shot) -> Generator[Decision, Action | None, None]:
        """Resolve a ram (§12): the Interaction pool (and overkill 2d10) via :func:`hq_odds.roll_ram`; the rammer
        drives the line to its last intermediate hex (``Moved`` events before the ``ShotResolved``); on a miss the
        target evades (decision ``evade`` to its side, the rammer's hex closed, §12.3) and the rammer steps into its
        old hex, or stays if the target cannot leave; on a collision both damages apply, then the OST step and the
        event queue."""
        o = self._opts(battle)
        aid, tid, key = shot.shooter, shot.target, shot.key
        if not isinstance(key, RamKey) or tid is None:
            raise TypeError(f"hummel_quest: not a ram of this rule set: {shot!r}")
        a, t = battle.tanks[aid], battle.tanks[tid]
        ah, th = _hex(a), _hex(t)
        line = ram_line(ah, th)
        d = distance(ah, th)
        battle.emit(RuleEvent("ram", aid, {"target": tid, "distance": d, "line": [list(h) for h in line]}))
        roll = hq_odds.roll_ram(key, dice)
        # A has finished its move when the check is made (§12.3): it drives the line to its last intermediate hex
        # (stays put if adjacent) before the result; during an evasion it stands there, and the hexes it drove
        # through are open to T again.
        self._walk(battle, aid, line)
        if not roll.collision:
            battle.emit(ShotResolved(shooter=aid, target=tid, result="evaded", hit=False, kill=False, key=key.as_dict(),
                                     details={"attack": "ram", "rolls": list(roll.check.rolls), "range": d,
                                              "successes": roll.check.successes, "how": roll.check.how}))
            old = _hex(t)
            steps = self.speed_hexes(battle, tid) // 2
            opts: dict[Hex, tuple[int, list[Hex]]] = {}
            if not self.incapacitated(t) and steps >= 1:
                opts = evade_options(self.board(battle), old, steps)
            if opts:
                dflt = evade_default(opts, old)
                assert dflt is not None  # evade_default answers None only when there is no option

                def now(old: Hex = old, steps: int = steps) -> dict[Hex, tuple[int, list[Hex]]]:
                    # asked when legality is asked, so a side's view of the board (agents.observation) answers
                    # without the enemies that side cannot see
                    return evade_options(self.board(battle), old, steps)

                legal = Legal(contains=lambda x: isinstance(x, Pass) or (isinstance(x, Step) and x.actor == tid
                                                                          and as_hex(x.to) in now()),
                              reachable=lambda _a: _as_states(now()))
                # the default is Pass, "no hex given" (evade_default applies): a default Step to the farthest hex
                # would tell the evading side where its unseen enemies are not
                act = yield Decision(t.side, "evade", (tid,), legal, Pass(tid),
                                     {"rammer": aid, "max_steps": steps, "line": tuple(line),
                                      "rammer_hex": a.hex})
                dest = as_hex(act.to) if isinstance(act, Step) and legal.contains(act) else dflt
                path = [as_hex(h) for h in opts[dest][1][1:]]
                battle.emit(RuleEvent("evade", tid, {"rammer": aid, "path": [list(h) for h in path]}))
                self._walk(battle, tid, path)
                self._walk(battle, aid, [old])
            battle.emit(TankStateSet(aid, "moved_hexes", d))
            return
        battle.emit(TankStateSet(aid, "moved_hexes", d))
        tgt, att = hq_odds.ram_effect(roll, target_dt=self.dt(t), target_ost=self.ost(t), attacker_dt=self.dt(a),
                                      attacker_ost=self.ost(a), threshold=o.ost_hit_threshold_dt,
                                      timing=o.ost_hit_timing, loss=o.ost_hit_loss,
                                      return_costs_ost=o.ram_return_costs_ost)
        battle.emit(ShotResolved(shooter=aid, target=tid, result="collision", hit=True, kill=tgt.became_incapacitated,
                                 key=key.as_dict(),
                                 details={"attack": "ram", "rolls": list(roll.check.rolls), "range": d,
                                          "successes": roll.check.successes, "how": roll.check.how,
                                          "damage": roll.damage, "return_damage": roll.return_damage,
                                          "overkill": [list(x) for x in roll.overkill_rolls],
                                          "dt_after": tgt.dt_after, "attacker_dt_after": att.dt_after}))
        queue: deque[_QueuedEvent] = deque()
        self._apply_effect(battle, tid, tgt, aid, "ram", queue)
        self._apply_effect(battle, aid, att, tid, "ram_return", queue)
        self._run_queue(battle, queue)

    # --- movement ---------------------------------------------------------------------------------------------
    def reachable(self, battle: BoardView, tank: int, budget: int) -> Mapping[Hashable, tuple[int, list[Hex]]]:
        """``{hex: (hexes moved, path)}`` within ``budget`` steps through on-map, passable, empty hexes (§4);
        turning is free, so the state is the hex alone.  Raises ``ValueError`` for a tank not on the board."""
        start = _hex(battle.tanks[tank])
        m = battle.map
        flags_cache: dict[Hex, HexFlags] = m.cached(("hq_flags",), dict)   # :meth:`hex_flags`' own cache
        occupants = battle.occupants

        def succ(h: Hex) -> list[tuple[Hex, int]]:
            # ``self.board(battle).enterable(n)`` inlined: on the map, passable (:meth:`hex_flags`), empty
            out = []
            for n in h.neighbours():
                if n in m:
                    f = flags_cache.get(n)
                    if f is None:
                        f = self.hex_flags(battle, n)
                    if f.passable and not occupants(n):
                        out.append((n, 1))
            return out

        return _as_states(bounded_dijkstra(start, succ, max(0, budget)))

    def plan_to(self, battle: BoardView, tank: int, path: Sequence[tuple[int, int]], then: Action | None = None,
                end_status: str | None = None) -> Plan:
        """A :class:`Plan` of ``Step`` actions along ``path`` (from :meth:`reachable`)."""
        return Plan(tank, tuple(Step(tank, as_hex(h)) for h in path[1:]), then=then, end_status=end_status)

    # --- the round (§3, §4, §11) ------------------------------------------------------------------------------
    def initiative(self, battle: Battle, dice: DiceSource) -> list[int]:
        """Roll initiative for the round (§3) and return the turn order.

        Every tank not out rolls d10 + Reflexes (+ ``ambush_initiative_bonus`` for the ambushing side in round 1),
        dice in ascending tank id; higher first; ties by higher Reflexes, then roll-offs of one d10 each (ascending
        id, higher first), repeated among those still tied; tied groups are settled from the highest total down.
        Emits one ``initiative`` RuleEvent carrying the rolls.
        """
        o = self._opts(battle)
        rnd = int(getattr(battle, "turn", 1) or 1)
        entrants = [t for t in battle.tanks if not self.is_out(t)]
        totals: dict[int, int] = {}
        rolls: list[list[int]] = []
        for t in entrants:
            r = dice.roll("d10", "initiative")
            bonus = o.ambush_initiative_bonus if (o.ambushing_side == t.side and rnd == 1) else 0
            totals[t.tank_id] = r + t.vehicle.abilities.reflexes + bonus
            rolls.append([t.tank_id, r, totals[t.tank_id]])
        rolloffs: list[list[int]] = []

        def settle(ids: list[int]) -> list[int]:
            if len(ids) <= 1:
                return ids
            rr = {i: dice.roll("d10", "initiative roll-off") for i in sorted(ids)}
            rolloffs.append([x for i in sorted(ids) for x in (i, rr[i])])
            out: list[int] = []
            for v in sorted(set(rr.values()), reverse=True):
                out += settle([i for i in sorted(ids) if rr[i] == v])
            return out

        keyf = lambda i: (totals[i], battle.tanks[i].vehicle.abilities.reflexes)
        order: list[int] = []
        for k in sorted({keyf(i) for i in totals}, reverse=True):
            order += settle(sorted(i for i in totals if keyf(i) == k))
        battle.emit(RuleEvent("initiative", None, {"round": rnd, "rolls": rolls, "rolloffs": rolloffs,
                                                   "order": order}))
        return order

    def play_turn(self, battle: Battle, dice: DiceSource) -> Generator[Decision, Action | None, None]:
        """One round (§3): initiative, then each tank's turn in that order; the victory test after every turn
        ends the round early when the battle is decided (the engine then ends it)."""
        o = self._opts(battle)
        rnd = int(getattr(battle, "turn", 1) or 1)
        order = self.initiative(battle, dice)
        ambushed = None if o.ambushing_side is None else 1 - o.ambushing_side
        for tid in order:
            if battle.ended:
                return
            t = battle.tanks[tid]
            if self.is_out(t):
                continue
            if rnd == 1 and t.side == ambushed:
                continue
            yield from self._turn(battle, dice, tid)
            if self._decided(battle):
                return

    def _decided(self, battle: BoardView) -> bool:
        """``_elimination(battle) is not None``: fewer than two sides have a tank not out (:meth:`_not_out`),
        scanned once, stopping at the second such side."""
        sides = set(battle.side_ids())
        found: set[int] = set()
        counts_out = self._opts(battle).panicked_counts_as_out
        for t in battle.tanks:
            sd = t.side
            if sd in found or sd not in sides or self.is_out(t) or (counts_out and self.ost(t) <= 0):
                continue
            found.add(sd)
            if len(found) > 1:
                return False
        return True

    def _turn(self, battle: Battle, dice: DiceSource, tid: int) -> Generator[Decision, Action | None, None]:
        t = battle.tanks[tid]
        battle.emit(BattleStateSet("active", tid))
        if t.rules_state.get("moved_hexes", 0):
            battle.emit(TankStateSet(tid, "moved_hexes", 0))
        try:
            if self.ost(t) <= 0:
                battle.emit(Activated(t.side, tid, "panicked"))
                self._panic_turn(battle, dice, tid)
            else:
                yield from self._normal_turn(battle, dice, tid)
            self._expire_focus(battle, tid)
        finally:
            if not battle.ended:
                battle.emit(BattleStateSet("active", None))

    def _panic_turn(self, battle: Battle, dice: DiceSource, tid: int) -> None:
        """§11.1: Mentality pool check (TN ``panic_check_tn``, ``panic_check_successes``); pass -> OST 1, no move
        and no action; fail -> flee move, nothing else."""
        o = self._opts(battle)
        t = battle.tanks[tid]
        r = hq_odds.roll_pool(dice, t.vehicle.abilities.mentality, o.panic_check_tn, o.panic_check_successes,
                              o.pool_ones_tens_rule, "mentality")
        battle.emit(RuleEvent("mentality_check", tid, {"rolls": list(r.rolls), "successes": r.successes,
                                                       "passed": r.passed, "how": r.how}))
        if r.passed:
            battle.emit(TankStateSet(tid, "ost", 1))
            battle.emit(TankStateSet(tid, "panicked", False))
            battle.emit(RuleEvent("recover", tid, {"ost": 1}))
        else:
            self._flee(battle, tid)

    def _expire_focus(self, battle: Battle, tid: int) -> None:
        """A sights focus lasts until the end of the tank's next turn (§7.6)."""
        t = battle.tanks[tid]
        rnd = int(getattr(battle, "turn", 1) or 1)
        fr = t.rules_state.get("sights_focus_round")
        if t.rules_state.get("sights_focus") is not None and fr is not None and fr < rnd:
            battle.emit(TankStateSet(tid, "sights_focus", None))

    def _ram_targets(self, battle: BoardView, tid: int) -> tuple[int, ...]:
        """The enemies ``tid`` may ram now: those for which :meth:`ram_shot` is legal, in id order.  The
        attacker's tests (can act, has not moved, its Speed) are made once; an enemy off the board or outside the
        half-Speed-to-Speed distance is passed over without asking :meth:`ram_shot` (it would be illegal)."""
        a = battle.tanks[tid]
        if not self.can_act(a) or int(a.rules_state.get("moved_hexes", 0)) > 0:
            return ()
        s = self.speed_hexes(battle, tid)
        if s < 1:
            return ()
        lo = half_speed(s)
        ah = _hex(a)
        aq, ar = ah[0], ah[1]
        off_board = Status.OFF_BOARD
        side = a.side
        tanks = battle.tanks
        offsets = _ring_offsets(lo, s)
        if len(offsets) < len(tanks) * _RING_FACTOR:
            # the tanks within half Speed to Speed, read off the hexes there (every tank with a hex is among its
            # hex's occupants, BoardView.occupants): the same tanks as the scan below, in id order
            near: list[int] = []
            occupants = battle.occupants
            for dq, dr in offsets:
                got = occupants(Hex(aq + dq, ar + dr))
                if got:
                    near.extend(got)
            near.sort()
        else:
            near = []
            for e in tanks:
                th = e.hex
                if th is not None and lo <= distance(ah, th) <= s:
                    near.append(e.tank_id)
        out = []
        for i in near:
            e = tanks[i]
            if e.side == side or e.hex is None or e.status in off_board:
                continue
            if not isinstance(self.ram_shot(battle, tid, i), Illegal):
                out.append(i)
        return tuple(out)

    def _rams(self, battle: BoardView, tid: int, actor: int) -> tuple[int, ...]:
        """``Legal.rams`` of a decision of ``tid`` whose ``contains`` takes a ram when :meth:`_ram_ok` does: the
        ids ``e`` for which ``_ram_ok(battle, tid, Ram(actor, e))`` holds, in id order.  That is
        :meth:`_ram_targets` for ``actor == tid`` (both pass exactly the enemies on the board, within half Speed to
        Speed, for which :meth:`ram_shot` is legal; ``_ram_ok``'s inline tests are ones :meth:`ram_shot` makes
        too), and nothing for another actor (``_ram_ok`` takes only rams by ``tid``)."""
        return self._ram_targets(battle, tid) if actor == tid else ()

    def _targets(self, battle: BoardView, tid: int) -> tuple[int, ...]:
        """Enemies not out that ``tid`` may shoot now (DECISION: wrecks stay legal targets but are not listed).

        Exactly the enemies for which :meth:`shot` is legal.  On the battle itself (a
        :class:`~sim.battle.BattleState`) the enemies in play come from :meth:`_in_play_enemies` and are asked in
        one :meth:`legal_shots` (whose targets are read off :meth:`_target_table`, kept under that same tuple of
        ids: issue 14); elsewhere in one :meth:`shots`, an enemy whose band needs more Firepower than any ready
        weapon has (``fp_requirement_mode = cannot_fire``, §7.1) passed over without asking it, since every
        attack's weapons are a subset of the ready ones."""
        s = battle.tanks[tid]
        if not self.can_act(s):
            return ()
        pool = self._weapon_pool(battle, s, None)
        if isinstance(pool, Illegal):
            return ()
        side = s.side
        if type(battle) is BattleState:
            ids = self._in_play_enemies(battle, side)
            # the same legality as :meth:`shot` pair by pair (an enemy hidden in a side's view, hex None, is gone)
            return tuple(e for e, got in zip(ids, self.legal_shots(battle, tid, ids)) if not isinstance(got, Illegal))
        o = self._opts(battle)
        max_fp = max(w.firepower for w in pool) if o.fp_requirement_mode == "cannot_fire" else None
        sh = _hex(s)
        hs = self.hex_size(battle)
        cands = []
        not_in_play = _NOT_IN_PLAY
        for e in battle.tanks:
            # ``self.is_out(e)`` inlined
            if e.hex is None or e.side == side or e.status in not_in_play or \
                    int(e.rules_state.get("dt", e.vehicle.dt)) <= 0:
                continue
            if max_fp is not None and band_of(distance(sh, _hex(e)) * hs, o.band_edges).fp_needed > max_fp:
                continue
            cands.append(e.tank_id)
        # :meth:`shots`: the same answers as :meth:`shot` pair by pair
        return tuple(e for e, got in zip(cands, self.shots(battle, tid, cands)) if not isinstance(got, Illegal))

    def _in_play_enemies(self, root: BattleState, side: int) -> tuple[int, ...]:
        """Ids, in order, of the enemies of ``side`` on ``root`` whose status is not off the board or out and whose
        DT is above 0 (:meth:`is_out` but for the hex, which a side's view changes: the caller tests it).

        Kept per battle (:data:`_IN_PLAY_ENEMIES`) and side and patched from ``state_changes``: a tank's status
        and ``rules_state`` change only through events naming it; built afresh when the battle's
        ``state_changes`` is another list or its version moved without an event."""
        per = _IN_PLAY_ENEMIES.get(root)
        if per is None:
            per = _IN_PLAY_ENEMIES[root] = {}
        rec = per.get(side)
        tanks = root.tanks
        now, named = tanks_named_since(root, None if rec is None else rec[0])
        if rec is not None and named is not None:
            if not named:
                return cast(tuple[int, ...], rec[2])
            redo: Iterable[int] = named
            ids = rec[1]
            before = len(ids)
        else:
            redo = range(len(tanks))
            ids = set()
            before = -1
        not_in_play = _NOT_IN_PLAY
        moved = False
        for i in redo:
            e = tanks[i]
            if e.side == side:
                continue
            ok = e.status not in not_in_play and int(e.rules_state.get("dt", e.vehicle.dt)) > 0
            if ok != (i in ids):
                moved = True
                if ok:
                    ids.add(i)
                else:
                    ids.discard(i)
        order = tuple(sorted(ids)) if moved or before < 0 else cast(tuple[int, ...], rec[2])  # type: ignore[index]
        per[side] = [now, ids, order]
        return order

    def _modes(self, battle: BoardView, tid: int) -> tuple[str, ...]:
        modes = ["hold", "fire", "move", "move_and_fire"]
        if self._ram_targets(battle, tid):
            modes.append("ram")
        return tuple(modes)

    def _specials(self, battle: BoardView, tid: int) -> tuple[str, ...]:
        out = []
        if battle.tanks[tid].vehicle.features.artillery_sights:
            out.append("focus")
        if self._opts(battle).intimidation:
            out.append("intimidate")
        return tuple(out)

    def _ram_ok(self, battle: BoardView, tid: int, a: Action) -> bool:
        """Whether ``a`` is a ram by ``tid`` that :meth:`ram_shot` allows.  The tests of :meth:`ram_shot` that
        need no board (a tank target, an enemy on the board, the attacker on the board, the distance from half
        Speed to Speed, §12) are made first, inline: when one fails :meth:`ram_shot` is illegal too, so the
        answer is the same; otherwise it is :meth:`ram_shot`'s."""
        if not isinstance(a, Ram) or a.actor != tid:
            return False
        target = a.target
        tanks = battle.tanks
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < len(tanks):
            return False
        at, t = tanks[tid], tanks[target]
        ah, th = at.hex, t.hex
        if ah is None or th is None or t.side == at.side or t.status in Status.OFF_BOARD:
            return False
        sp = at.vehicle.speed_m // self.hex_size(battle)   # :meth:`speed_hexes`
        if sp < 1 or not half_speed(sp) <= distance(ah, th) <= sp:
            return False
        return not isinstance(self.ram_shot(battle, tid, target), Illegal)

    def _normal_turn(self, battle: Battle, dice: DiceSource, tid: int) -> Generator[Decision, Action | None, None]:
        t = battle.tanks[tid]
        s = self.speed_hexes(battle, tid)
        modes = self._modes(battle, tid)
        legal = Legal(contains=lambda a: (isinstance(a, Activate) and a.actor == tid and a.mode in modes)
                      or self._ram_ok(battle, tid, a),
                      modes=modes, targets=lambda _a: self._targets(battle, tid),
                      reachable=lambda _a: self.reachable(battle, tid, s), specials=self._specials(battle, tid),
                      rams=lambda a: self._rams(battle, tid, a))
        act = yield Decision(t.side, "activate", (tid,), legal, Activate(tid, "hold"),
                             {"round": battle.turn, "modes": {tid: modes}, "speed_hexes": s,
                              "half_speed": half_speed(s)})
        if act is None or not legal.contains(act):
            act = Activate(tid, "hold")
        yield from self._activated(battle, dice, tid, act)

    def _activated(self, battle: Battle, dice: DiceSource, tid: int, act: Action
                   ) -> Generator[Decision, Action | None, None]:
        """The tank's turn after its ``activate`` answer ``act`` (a legal ``Activate`` or ``Ram``), §4."""
        t = battle.tanks[tid]
        if isinstance(act, Ram):
            battle.emit(Activated(t.side, tid, "ram"))
            yield from self._ram(battle, dice, _checked(self.ram_shot(battle, tid, act.target)))
            return
        if not isinstance(act, Activate):
            raise TypeError(f"hummel_quest: an activation is answered by Activate or Ram, not {act!r}")
        mode = act.mode
        battle.emit(Activated(t.side, tid, mode))
        if mode == "hold":
            return
        if mode == "ram":
            yield from self._ram_decision(battle, dice, tid)
            return
        chosen: Action | None = None
        if mode in ("move", "move_and_fire"):
            rammed, chosen = yield from self._move(battle, dice, tid, mode)
            if rammed:
                return
        if mode in ("fire", "move_and_fire") and self.can_act(t):
            yield from self._attack(battle, dice, tid, chosen)

    def strength(self, battle: BoardView, tank: int, damage: int = 0) -> Fraction:
        """Search hook (:meth:`sim.rules.base.Ruleset.strength`): the DT a tank keeps after ``damage`` more points,
        over its stat block's DT (§5, §9); 0 once it is out (§15)."""
        t = battle.tanks[tank]
        if self.is_out(t):
            return Fraction(0)
        return Fraction(max(0, min(self.dt(t), t.vehicle.dt) - damage), max(1, t.vehicle.dt))

    def play_activation(self, battle: Battle, dice: DiceSource, side: int, action: Action
                        ) -> Generator[Decision, Action | None, None]:
        """Search hook (:meth:`sim.rules.base.Ruleset.play_activation`): the rest of the turn of ``action.actor``
        after its ``activate`` decision answered ``action`` (a legal ``Activate`` or ``Ram``): the same code as in
        play (move, attack, ram and evasion decisions, the OST cascade), then the end of the tank's turn (§3); the
        turns of the tanks after it in the round are not played.  Raises ``ValueError`` for an action naming no
        tank and ``TypeError`` for one that is neither an ``Activate`` nor a ``Ram``."""
        tid = action.actor
        if tid is None:
            raise ValueError(f"hummel_quest: play_activation needs an action naming its tank, not {action!r}")
        yield from self._activated(battle, dice, tid, action)
        self._expire_focus(battle, tid)
        if not battle.ended:
            battle.emit(BattleStateSet("active", None))

    def _best_ram(self, battle: BoardView, tid: int, targets: tuple[int, ...]) -> int:
        def k(x: int) -> tuple:
            o = self.odds(self.ram_key(battle, tid, x))
            return (o.p_kill, o.expected_damage, -x)
        return max(targets, key=k)

    def _ram_decision(self, battle: Battle, dice: DiceSource, tid: int) -> Generator[Decision, Action | None, None]:
        t = battle.tanks[tid]
        targets = self._ram_targets(battle, tid)
        if not targets:
            return
        legal = Legal(contains=lambda a: isinstance(a, Pass) or self._ram_ok(battle, tid, a),
                      targets=lambda _a: targets, rams=lambda a: self._rams(battle, tid, a))
        act = yield Decision(t.side, "ram", (tid,), legal, Ram(tid, self._best_ram(battle, tid, targets)), {})
        if isinstance(act, Ram) and legal.contains(act):
            yield from self._ram(battle, dice, _checked(self.ram_shot(battle, tid, act.target)))

    def _move(self, battle: Battle, dice: DiceSource, tid: int, mode: str
              ) -> Generator[Decision, Action | None, tuple[bool, Action | None]]:
        """The move of §4 step 1, one decision per step.  Returns ``(rammed, attack)``: ``rammed`` when a ram
        replaced the move and the attack; ``attack`` is a ``Fire`` or attack ``Special`` answered at a step in
        ``move_and_fire`` mode (e.g. a plan's ``then``), which ends the move and is made as the §4 step 2 attack
        without a ``fire`` decision (DECISION; ``can_fire`` stays False because the attack has its own decision)."""
        t = battle.tanks[tid]
        s = self.speed_hexes(battle, tid)
        f0 = t.facing
        moved = 0
        last_k = None
        end_facing = None
        chosen: Action | None = None
        while True:
            left = s - moved
            board = self.board(battle)
            steps = {Step(tid, n) for n in _hex(t).neighbours() if left > 0 and board.enterable(n)}
            may_ram = moved == 0

            def contains(a: Action, steps: set[Step] = steps, may_ram: bool = may_ram) -> bool:
                if isinstance(a, Step):
                    return a in steps
                if isinstance(a, Pass):
                    return True
                if isinstance(a, Special) and a.name == "end_move":
                    f = a.args.get("facing")
                    return f is None or (isinstance(f, int) and not isinstance(f, bool) and 0 <= f <= 5)
                if isinstance(a, (Fire, Special)):
                    return mode == "move_and_fire" and self._attack_ok(battle, tid, a)
                return may_ram and self._ram_ok(battle, tid, a)

            def rams(a: int, may_ram: bool = may_ram) -> tuple[int, ...]:
                return self._rams(battle, tid, a) if may_ram else ()

            def reach(_a: int, left: int = left) -> Mapping[Hashable, tuple[int, list[Hex]]]:
                return self.reachable(battle, tid, left)

            legal = Legal(contains=contains, reachable=reach,
                          targets=lambda _a: self._targets(battle, tid) if mode == "move_and_fire" else (),
                          specials=("end_move",),
                          plan_to=lambda _a, path, then=None, end_status=None: self.plan_to(battle, tid, path, then,
                                                                                             end_status),
                          rams=rams)
            act = yield Decision(t.side, "move_step", (tid,), legal, Pass(tid),
                                 {"mp": left, "entered": moved, "compulsory": False, "mode": mode,
                                  "interrupted": False, "can_fire": False, "fire_cost": 0, "speed_hexes": s,
                                  "half_speed": half_speed(s)})
            if act is None or not contains(act):
                act = Pass(tid)
            if isinstance(act, Ram):
                yield from self._ram(battle, dice, _checked(self.ram_shot(battle, tid, act.target)))
                return True, None
            if isinstance(act, Step):
                last_k = direction_to(_hex(t), act.to)
                battle.emit(Moved(tid, as_hex(act.to), t.facing, 1))
                moved += 1
                battle.emit(TankStateSet(tid, "moved_hexes", moved))
                continue
            if isinstance(act, Special) and act.name == "end_move":
                end_facing = act.args.get("facing")
            elif isinstance(act, (Fire, Special)):
                chosen = act
            break
        f = end_facing if end_facing is not None else default_facing(f0, last_k)
        if f != t.facing and self.on_board(t):
            battle.emit(Pivoted(tid, f))
        return False, chosen

    def _attack_ok(self, battle: BoardView, tid: int, a: Action) -> bool:
        """Whether ``a`` is a legal §4 step 2 attack of ``tid`` now: a ``Fire`` with a legal shot, or a ``focus`` /
        ``intimidate`` ``Special`` of this rule set."""
        if isinstance(a, Fire):
            return a.actor == tid and not isinstance(self.shot(battle, tid, a.target, a), Illegal)
        if isinstance(a, Special):
            return a.actor == tid and a.name in self._specials(battle, tid) and self._special_ok(battle, tid, a)
        return False

    def _attack(self, battle: Battle, dice: DiceSource, tid: int, chosen: Action | None = None
                ) -> Generator[Decision, Action | None, None]:
        """§4 step 2: one attack (a shot, a sights focus, intimidation, or a ram if the tank has not moved).
        ``chosen``: an attack already answered at the last ``move_step`` (no ``fire`` decision then)."""
        t = battle.tanks[tid]
        moved = int(t.rules_state.get("moved_hexes", 0))
        specials = self._specials(battle, tid)

        def contains(a: Action) -> bool:
            if isinstance(a, Pass):
                return True
            if isinstance(a, (Fire, Special)):
                return self._attack_ok(battle, tid, a)
            return moved == 0 and self._ram_ok(battle, tid, a)

        act: Action | None
        if chosen is not None:
            act = chosen
        else:
            legal = Legal(contains=contains, targets=lambda _a: self._targets(battle, tid), specials=specials,
                          rams=lambda a: self._rams(battle, tid, a) if moved == 0 else ())
            act = yield Decision(t.side, "fire", (tid,), legal, Pass(tid), {"moved": moved, "round": battle.turn})
        if act is None or not contains(act):
            return
        if isinstance(act, Fire):
            self.resolve(battle, _checked(self.shot(battle, tid, act.target, act)), dice)
        elif isinstance(act, Special):
            self._do_special(battle, dice, tid, act)
        elif isinstance(act, Ram):
            yield from self._ram(battle, dice, _checked(self.ram_shot(battle, tid, act.target)))

    def _special_ok(self, battle: BoardView, tid: int, a: Special) -> bool:
        tgt = a.args.get("target")
        if not isinstance(tgt, int) or isinstance(tgt, bool) or not 0 <= tgt < len(battle.tanks):
            return False
        s, t = battle.tanks[tid], battle.tanks[tgt]
        if t.side == s.side:
            return False
        th = self.hex_in_play(t)
        if th is None:
            return False
        sh = _hex(s)
        if a.name == "focus":
            rating = s.vehicle.features.artillery_sights
            return bool(rating) and distance(sh, th) * self.hex_size(battle) <= 400 * rating and \
                not self.sight(battle, sh, th).tall_both
        if a.name == "intimidate":
            o = self._opts(battle)
            return o.intimidation and self.los(battle, sh, th) and \
                distance(sh, th) * self.hex_size(battle) <= o.intimidation_range_m
        return False

    def _do_special(self, battle: Battle, dice: DiceSource, tid: int, a: Special) -> None:
        """Focus the Artillery Sights (§7.6: Perception pool, TN ``sights_focus_tn``, 1 success) or intimidate
        (§10 option: HumanCom pool, TN 6, 1 success; the target loses 1 OST)."""
        o = self._opts(battle)
        s = battle.tanks[tid]
        tgt = int(a.args["target"])
        if a.name == "focus":
            r = hq_odds.roll_pool(dice, s.vehicle.abilities.perception, o.sights_focus_tn, 1, o.pool_ones_tens_rule,
                                  "focus")
            battle.emit(RuleEvent("focus", tid, {"target": tgt, "rolls": list(r.rolls), "passed": r.passed}))
            if r.passed:
                battle.emit(TankStateSet(tid, "sights_focus", tgt))
                battle.emit(TankStateSet(tid, "sights_focus_round", int(battle.turn)))
            return
        r = hq_odds.roll_pool(dice, s.vehicle.abilities.human_com, 6, 1, o.pool_ones_tens_rule, "intimidate")
        battle.emit(RuleEvent("intimidate", tid, {"target": tgt, "rolls": list(r.rolls), "passed": r.passed}))
        if r.passed:
            t = battle.tanks[tgt]
            new = max(0, self.ost(t) - 1)
            queue: deque = deque()
            if new != self.ost(t):
                battle.emit(RuleEvent("ost_loss", tgt, {"cause": "intimidation", "loss": 1, "ost": new, "by": tid}))
                battle.emit(TankStateSet(tgt, "ost", new))
                if new == 0:
                    self._panic(battle, tgt, "intimidation", queue)
            self._run_queue(battle, queue)

    # --- victory (§15) ----------------------------------------------------------------------------------------
    def _not_out(self, battle: BoardView, t: TankState) -> bool:
        if self.is_out(t):
            return False
        return not (self._opts(battle).panicked_counts_as_out and self.ost(t) <= 0)

    def _elimination(self, battle: BoardView) -> Outcome | None:
        left = [s for s in battle.side_ids() if any(self._not_out(battle, t) for t in battle.tanks if t.side == s)]
        if len(left) == 1:
            return Outcome(left[0], f"{battle.sides[left[0]].name} is the only side with tanks not out",
                           victory_points(battle))
        if not left:
            return Outcome(None, "no side has a tank left that is not out", victory_points(battle))
        return None

    def outcome(self, battle: BoardView) -> Outcome | None:
        """§15: at most one side with tanks not out -> it wins (none: draw); after the last round a draw listing the
        tanks not out with DT and OST (victory points decide instead when the scenario has objectives)."""
        out = self._elimination(battle)
        if out is not None:
            return out
        if battle.rules_state.get("turns_completed", 0) < battle.turn_limit:
            return None
        pts = victory_points(battle)
        if has_points_victory(battle):
            best = max(pts)
            w = [s for s, p in enumerate(pts) if p == best]
            if len(w) == 1:
                return Outcome(w[0], f"victory points {list(pts)} after round {battle.turn_limit}", pts)
            return Outcome(None, f"victory points tied {list(pts)} after round {battle.turn_limit}", pts)
        parts = []
        for s in battle.side_ids():
            tanks = ", ".join(f"{t.label} DT {self.dt(t)} OST {self.ost(t)}" for t in battle.tanks
                              if t.side == s and self._not_out(battle, t))
            parts.append(f"{battle.sides[s].name}: {tanks}")
        return Outcome(None, f"max rounds {battle.turn_limit} reached (draw); not out: " + "; ".join(parts), pts)

    # --- odds command and golden cases (§17, §18) -------------------------------------------------------------
    def odds_from_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``tanksim odds hummel_quest name=value ...`` (§17); see :func:`.odds.odds_from_params`."""
        return hq_odds.odds_from_params(params)

    def run_case(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate one golden case (§18): ``odds`` via :meth:`odds_from_params`; ``outcome`` with
        ``FixedDice(given.dice)`` through the play stages, then ``dice.check_done()``; ``geometry`` on a board
        built from the case (queries ``range``, ``aspect``, ``visibility``, ``flee``, ``ram_legal``)."""
        kind = case.get("kind")
        g = dict(case.get("given") or {})
        if kind == "odds":
            return self.odds_from_params(g)
        if kind == "outcome":
            if "dice" not in g:
                raise CaseError("outcome case without given.dice")
            dice = FixedDice(g.pop("dice"))
            out = hq_odds.outcome_from_params(g, dice)
            dice.check_done()
            return out
        if kind == "geometry":
            return geometry_case(g)
        raise CaseError(f"unknown case kind {kind!r}")


