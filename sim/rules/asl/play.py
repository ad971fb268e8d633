"""Rule set ``asl``: ASL Chapter C ordnance fired by fully-tracked, closed-topped AFVs at AFVs (docs/rules/asl.md).

Scope (asl.md 1): main-armament AP, APCR, APDS, HEAT and HE against the Vehicle Target Type; To Hit (C3, C4, the
TH DRM of 6.3), critical, improbable and Multiple Hits, ROF, malfunction, special-ammo depletion, acquisition, hit
location and Target Facing on the hex grid, hull-down, the To Kill tables with Cases A, C and D, the AFV
Destruction Table's Direct Fire column, Shock, Immobilization, wrecks, crew checks, and a simplified sequence of
play.  Out of scope, and rejected or ignored: Infantry, Guns, SW, LATW, MG/ATR/IFE armament, unarmored,
open-topped and partially armored vehicles (rejected at catalog load), CE crews, mines, DC, aircraft, FT/MOL,
OBA, SMOKE/WP, canister, Intensive Fire, Gun Duels, Deliberate Immobilization, Bore Sighting, concealment/HIP,
Armor Leaders, elevation (hull-down comes only from the scenario), Bypass, ESB, Platoon Movement, OVR, night,
weather.

The exact math lives in :mod:`sim.rules.asl.odds` (staged odds and the dice resolution sharing its stage
functions) and the chart data in :mod:`sim.rules.asl.tables`.  This module holds the :class:`ASL` rule-set object:
catalog, options, golden cases and play; the geometry (Target Facing, CA, hull-down) is in :mod:`sim.rules.asl.sight`.

Decision points yielded by :meth:`ASL.play_turn` (one Game Turn = two Player Turns, asl.md 4):

* ``activate`` (PFPh) -- the ATTACKER's AFVs not in Motion with a target; modes ``fire`` / ``hold``.  ``fire`` is
  followed by ``fire`` / ``fire_again`` decisions for that AFV while it keeps ROF; an AFV that Prep Fires may not
  move.  Default: the first actor holds.
* ``activate`` (MPh) -- the ATTACKER's AFVs that may move (an Immobilized one only if it has a turret to turn);
  modes ``move_and_fire`` (may Bounding First Fire), ``move``, ``hold`` (a vehicle in Motion that holds still
  spends a Stop MP).
* ``move_step`` -- one MP expenditure of the mover: ``Step`` (front hex; a rear hex is a Reverse), ``Pivot`` (one
  hexspine), ``Fire`` (Bounding First Fire, after an automatic Stop MP if Non-Stopped), ``Special`` ``stop``,
  ``delay`` (both with an optional ``turret_facing``), ``motion_fire``, ``end_move`` (``status: motion`` to stay
  in Motion, legal only as D2.4 allows), or ``Pass``.  Context ``mp`` is the MP left in **half MPs** (so are
  :meth:`ASL.reachable` costs, which include the Start and a final Stop); ``interrupted`` is True after the mover
  was fired at; ``mobile`` is False for an Immobilized mover (Delay and Bounding First Fire only);
  ``can_motion`` says whether Motion may be declared now.
* ``react`` -- after every MP expenditure, the DEFENDER's AFVs that may Defensive First Fire at the mover
  (``Fire(actor, mover)``, one shot per decision, in the order the side chooses) or ``Pass``.
* ``fire`` / ``fire_again`` (DFPh for the DEFENDER, AFPh for the ATTACKER, one shot there) -- per AFV in id
  order; ``Fire(actor, target, ammo=...)`` (``None`` = AP, ``"best"`` = highest exact kill odds) or ``Pass``.

Not modelled in play (no in-scope cause or out of scope): Stun and Recall (the states exist), exits across board
edges, Reverse in :meth:`ASL.reachable` (single ``Step`` only), the end-of-move ``end_facing`` of a plan.

DECISIONS where asl.md is silent (also in the README, "Rules decisions"; audit: docs/rules/asl_audit.md):

* Bounding First Fire is allowed before the mover's first MP (section 4: "at any point of its move"); it is Case C
  with C2 (0 MP spent in the target's LOS) and must be within the current CA; after any MP expenditure the TCA may
  be set with that MP (D3.12), so a later BFF shot may turn the turret at no Case A.
* Acquisition (6.5): a VCA change carries the turret with it (the TCA keeps its angle to the hull), so it is a CA
  change; a CA change in the MPh (VCA change, or a TCA set with a Delay or Stop MP) loses the Acquisition at the
  end of the mover's MPh unless the AFV fired at the acquired target after it (only a stabilized gun's BFF can).
  LOS to the acquired target is re-checked after every hex entered, every kill or abandonment, the RPh and the
  start of each Player Turn (a new wreck, an AFV that stops being a moving target, the target moving).  The free
  CA change at the end of a side's last fire phase keeps the CA of an AFV that holds an Acquisition on a live
  target in its LOS (turning would lose it).
* Motion (D2.4) may be declared only by a Non-Stopped mover that spent at least one MP and cannot afford a hex it
  could enter next: a front hex (forward) or a rear hex (in Reverse) that is on the map, holds no enemy AFV and
  costs more than the MP left.  Otherwise ``end_move`` with ``status: motion`` is illegal and the move ends with a
  Stop MP.
* An Immobilized turreted AFV takes part in the MPh: no Start, VCA or hex MP, but Delay MPs to turn its turret and
  Bounding First Fire; an Immobilized NT AFV is not activated.  A bogged AFV still ends its MPh (D8.21).
* The Start of a switch between forward and Reverse is a Start MP like any other: a red-MP AFV rolls its
  mechanical reliability DR (D2.51).
* An AFPh shot by an AFV that Bounding First Fired (and kept ROF) is Case C, or C4 in Motion, even if it entered
  no new hex (D3.32).
"""
from __future__ import annotations

import dataclasses
import weakref
from fractions import Fraction
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Callable, Generator, Hashable, Iterable, Literal, Mapping

from pydantic import Field, field_validator

from sim.actions import Action, Activate, Fire, Pass, Pivot, Plan, Special, Step
from sim.battle import Battle, BattleState, BoardView, HypoView, TankState
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
    TurretTurned,
)
from sim.hexgrid import Hex, as_hex, distance, hex_line
from sim.messages import did_you_mean
from sim.rules.asl import tables as asl_tables
from sim.rules.asl.odds import DEFAULT_PREFERENCE, ShotKey, odds_json, parse_params, resolve_key, shot_odds
from sim.rules.asl.sight import (
    HindMasks,
    LosGrid,
    ca_turns,
    geometry_case,
    hull_down_hexsides,
    line_mask,
    target_face,
    turn_vertex,
)
from sim.rules.base import (
    CaseError,
    Decision,
    Hypo,
    Illegal,
    Legal,
    Odds,
    Outcome,
    Ruleset,
    RulesOptions,
    Shot,
    fraction_str,
)
from sim.victory import draw, standard_outcome

# ==============================================================================================================
# Options (asl.md 12)
# ==============================================================================================================

class Options(RulesOptions):
    """Scenario ``ruleset_options`` of asl.md section 12, with their defaults.

    ``first_side`` (side index ATTACKER in the first Player Turn; ``None`` = the scenario's), ``elite`` per side
    (+1 Depletion, C8.2) and ``date`` (scenario date ``"YYYY"`` or ``"YYYY-MM"`` for the Depletion schedule,
    DECISION: the spec names a scenario date but no field; default ``"1941"``) complete the list.
    """

    hex_size_m: int = 40
    first_side: int | None = None
    crew_status: Literal["bu"] = "bu"
    final_fire_after_first: Literal["none"] = "none"
    obstacle_entry: Literal["bog", "forbidden"] = "bog"
    mechanical_reliability: bool = True
    same_hex_entry: bool = False
    burning_wreck_los: Literal["block", "hinder"] = "block"
    case_r_visibility: Literal["ignore"] = "ignore"
    case_d_calibre_rows: Literal["chart"] = "chart"
    case_d_na: Literal["no_tk_dr"] = "no_tk_dr"
    multiple_hits: bool = True
    multiple_hit_preference: tuple[str, ...] = DEFAULT_PREFERENCE
    multiple_hits_from_original_2: Literal[False] = False
    malfunction: bool = True
    red_cs_burn_needs_kill: bool = True
    crew_checks: bool = True
    missing_data: Literal["defaults_with_warning", "strict"] = "defaults_with_warning"
    depletion_schedule: Literal["last_entry_continues"] = "last_entry_continues"
    elite: tuple[bool, ...] = (False, False)
    date: str = "1941"

    @field_validator("multiple_hit_preference")
    @classmethod
    def _order(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if sorted(v) != sorted(DEFAULT_PREFERENCE):
            raise ValueError(f"multiple_hit_preference must order exactly {', '.join(DEFAULT_PREFERENCE)}")
        return tuple(v)

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        asl_tables._date_key(v)
        return str(v)


#: Per battle: {(terrain version, Case R content): [{(hex, hex): LOS answer}, masks]} (:meth:`ASL._los_memo`).
_LOS_MEMO: "weakref.WeakKeyDictionary[BattleState, dict[Hashable, list[Any]]]" = weakref.WeakKeyDictionary()
#: LOS tables kept per battle (the last ones used), and answers per table before it is emptied (bounds on memory).
_LOS_CONTENTS = 16
_LOS_MEMO_SIZE = 200_000
#: :meth:`ASL._hind_masks` by the Case R table's identity: ``id(table) -> (table, grid, masks)`` (holding the
#: table, so its id is not reused while the entry lives); the oldest goes at the size below.
_HIND_MASKS: "dict[int, tuple[Mapping, LosGrid, HindMasks]]" = {}
_HIND_MASKS_SIZE = 256
#: The map :meth:`ASL._los_grid` read last: [weak reference, its terrain version, its grid].
_GRID_LAST: list[Any] = []
#: The battle :meth:`ASL.los` asked last: [weak reference, its state key, its entry of ``_LOS_MEMO``] (checked
#: before the dictionary: the what-if views of one decision all read through to one battle).
_LOS_LAST: list[Any] = []
#: Per battle: (battle version and hidden tanks, the Case R table of :meth:`ASL._hindrances`, its content: the
#: hindering tanks' ``(id, hex, contribution)`` in id order, which determine the table).
_HIND_MEMO: "weakref.WeakKeyDictionary[BattleState, tuple[Hashable, dict, tuple]]" = weakref.WeakKeyDictionary()


class _HindSync:
    """The Case R table of one battle kept in step with its events (:meth:`ASL._hindrances`): ``n`` the length of
    the battle's ``state_changes`` read so far; ``entries`` ``{tank id: (hex, contribution)}`` of the hindering
    tanks of the whole board (none hidden); ``table`` and ``key`` the table and its content built from them
    (replaced, never changed, when an entry changes); ``hidden`` ``{hidden tanks: (table, key)}`` of the sides'
    views of the present ``table`` (emptied when it is replaced)."""

    __slots__ = ("n", "entries", "table", "key", "hidden")

    def __init__(self, n: int, entries: dict[int, tuple[Hex, int | None]]):
        self.n = n
        self.entries = entries
        self.table, self.key = _hind_table(entries, ())
        self.hidden: dict[tuple[int, ...], tuple[dict, tuple]] = {}


def _hind_table(entries: Mapping[int, tuple[Hex, int | None]], hidden: tuple[int, ...] | frozenset[int]
                ) -> tuple[dict[Hex, tuple[tuple[int, int | None], ...]], tuple]:
    """``(table, content)`` of :meth:`ASL._hindrances` from the hindering tanks ``entries`` (``{id: (hex,
    contribution)}``) but the ``hidden`` ones: each hex's occupants in id order, the content ``(id, hex,
    contribution)`` in id order."""
    out: dict[Hex, tuple[tuple[int, int | None], ...]] = {}
    flat = []
    for tid in sorted(entries):
        if tid in hidden:
            continue
        h, x = entries[tid]
        out[h] = out.get(h, ()) + ((tid, x),)
        flat.append((tid, h, x))
    return out, tuple(flat)


#: Per battle: its :class:`_HindSync`.
_HIND_SYNC: "weakref.WeakKeyDictionary[BattleState, _HindSync]" = weakref.WeakKeyDictionary()
#: Per what-if view (a view never changes): the Case R table of :meth:`ASL._hindrances`.
_HIND_VIEW_MEMO: "weakref.WeakKeyDictionary[HypoView, dict]" = weakref.WeakKeyDictionary()
#: The board asked last: [weak reference, its state key (``None`` for a view), its table, its content (``None`` for
#: a view)] (a what-if view is asked once per enemy in a row, so this is checked before the dictionaries).
_HIND_LAST: list[Any] = []


#: The per-tank values :meth:`ASL._shot_now` reads from ``rules_state`` (as firer: :func:`able_to_fire`, ammunition,
#: Case A/B/C, Acquisition, +1; as target: :func:`target_state_of`, hull-down, +1, Shock).
_SHOT_TANK_FIELDS = ("abandoned", "shocked", "uk", "stunned", "recall", "ma", "ammo_left", "immobilized", "bogged",
                     "started", "entered", "bff_fired", "motion", "acq", "plus1", "moved", "hd_hex", "hull_down")
#: The battle-level values it reads from ``rules_state`` (the kind of shot, the BFF turn, the LOS MP of C6.11).
_SHOT_BATTLE_FIELDS = ("phase", "mover", "attacker", "free_turn", "los_mp")
#: Entries of one battle's shot table before it is emptied (a bound on memory, not on correctness).
_SHOT_MEMO_SIZE = 40_000
#: Targets' kill-odds tables kept per battle (:attr:`_ShotMemo.kills`, :meth:`ASL._kill_odds_fast`) before they are
#: emptied.
_KILL_TARGETS = 4096
#: Whole batch answers kept per battle version (:attr:`_ShotMemo.batches`) before they are emptied.
_BATCH_MEMO_SIZE = 2048


class _ShotMemo:
    """One battle's table of :meth:`ASL._shot` answers and what its keys are made of (see :func:`_shot_memo_key`).

    ``ids`` interns the tanks' and the battle's value tuples (a small int per distinct tuple, so a key hashes
    fast); ``parts`` holds each tank's id for the battle ``version`` it was read at (``battle_part`` likewise the
    battle's); ``views`` the id of the one tank a what-if view places (its values are the view's own copy);
    ``pre`` the :meth:`ASL._shot_pre` answers of missed shots, keyed on the shot key without the target's place and
    the LOS (it holds at most one entry per miss of ``shots``); ``able`` the :func:`able_to_fire` answers of the
    battle's tanks on the board at ``version`` (it reads their status, hex and ``rules_state``, which change
    only by events, but for hiding, which sets a hex to ``None``: such a tank is never looked up; emptied with
    ``parts``; never a view's placed copy).  ``batches`` holds whole answers of :meth:`ASL.targets` and
    :meth:`ASL.shots` asked of the battle itself at ``version`` (see there; emptied with ``parts``, at most
    :data:`_BATCH_MEMO_SIZE`).  ``kills`` holds the kill odds of the shots :meth:`ASL.kill_odds_at` asked, per
    target placement and shooter (:meth:`ASL._kill_odds_fast`; ``None``: no legal shot), the shooter named there
    by its id in ``kill_ids`` (its ``(id, part, hex, VCA, TCA)`` interned); ``firers`` the shooters' parts of
    those asks that do not read the target's place, per target at ``version`` (emptied with ``parts``, and with
    ``kills`` and ``kill_ids``).  All are emptied together when ``shots`` reaches :data:`_SHOT_MEMO_SIZE`, so an
    id never outlives its table."""

    __slots__ = ("version", "parts", "battle_part", "ids", "shots", "views", "pre", "able", "batches", "kills",
                 "kill_ids", "firers")

    def __init__(self) -> None:
        self.version = -1
        self.parts: dict[int, int] = {}
        self.battle_part = -1
        self.ids: dict[tuple, int] = {}
        self.shots: dict[tuple, Shot | Illegal] = {}
        self.views: "weakref.WeakKeyDictionary[HypoView, int]" = weakref.WeakKeyDictionary()
        self.pre: dict[tuple, tuple | Illegal] = {}
        self.able: dict[int, str | None] = {}
        self.batches: dict[tuple, Any] = {}
        self.kills: dict[tuple, dict[tuple, Fraction | None]] = {}
        self.kill_ids: dict[tuple, int] = {}
        self.firers: dict[tuple, list[Any]] = {}

    def clear(self) -> None:
        self.version = -1
        self.parts = {}
        self.battle_part = -1
        self.ids = {}
        self.shots = {}
        self.views = weakref.WeakKeyDictionary()
        self.pre = {}
        self.able = {}
        self.batches = {}
        self.kills = {}
        self.kill_ids = {}
        self.firers = {}

    def intern(self, values: tuple) -> int:
        ids = self.ids
        got = ids.get(values)
        if got is None:
            got = ids[values] = len(ids)
        return got


#: :meth:`ASL.odds` of a :class:`~sim.rules.asl.odds.ShotKey` object, by the object's identity: ``id(key) -> (key,
#: odds)`` (the entry holds the key, so its id is not reused while the entry lives; a hit checks ``is``).  Play
#: hands the same key object to every asker (:func:`_shot_key` and the shot table), so this skips hashing the
#: key's 45 fields on every ask.  Emptied when it reaches the size below.
_ODDS_BY_ID: dict[int, tuple[ShotKey, Odds]] = {}
_ODDS_BY_ID_SIZE = 16_384
#: Per battle (exactly a :class:`~sim.battle.BattleState`: its tanks change only through events, which bump its
#: version): the :class:`_ShotMemo` of :meth:`ASL._shot`.
_SHOT_MEMO: "weakref.WeakKeyDictionary[BattleState, _ShotMemo]" = weakref.WeakKeyDictionary()


def _new_shot(shooter: int, target: int, key: Hashable, face: str | None, info: Mapping[str, Any]) -> Shot:
    """``Shot(shooter, target, key, face, info)``: the same frozen value, its fields written to the new instance's
    ``__dict__`` at once instead of by the dataclass's ``__init__`` (one ``object.__setattr__`` per field; issue
    14: a board shot is made per miss of the shot table, some 100 000 in a 50 v 50 battle).  Falls back to the
    constructor if ``Shot`` ever has slots or other fields."""
    if not _SHOT_BY_DICT:
        return Shot(shooter, target, key, face, info)
    sh = _object_new(Shot)
    sh.__dict__.update(shooter=shooter, target=target, key=key, face=face, info=info)
    return sh


_object_new = object.__new__
_SHOT_BY_DICT = (not hasattr(Shot, "__slots__") and not hasattr(Shot, "__post_init__")
                 and tuple(f.name for f in dataclasses.fields(Shot)) == ("shooter", "target", "key", "face", "info"))
#: The battle asked last: [weak reference, its :class:`_ShotMemo`] (checked before the dictionary).
_SHOT_LAST: list[Any] = []


def _tank_part(memo: _ShotMemo, t: TankState) -> int:
    """The interned id of what :meth:`ASL._shot_now` reads of tank ``t`` apart from its hex and facings: its
    status and :data:`_SHOT_TANK_FIELDS` of its ``rules_state``.  Raises ``TypeError`` for an unhashable value."""
    rs = t.rules_state
    return memo.intern((t.status,) + tuple([rs.get(f) for f in _SHOT_TANK_FIELDS]))


def _shot_table(root: Any) -> _ShotMemo | None:
    """The shot table of battle ``root`` (``None`` unless ``root`` is a :class:`~sim.battle.BattleState`), emptied
    when full (:data:`_SHOT_MEMO_SIZE`), its per-version parts (tank parts, fire checks, the battle part of the
    key) renewed when the battle's version moved on.  Raises ``TypeError`` for an unhashable battle
    ``rules_state`` value (the callers then compute the shot without the table)."""
    last = _SHOT_LAST
    if last and last[0]() is root:
        memo: _ShotMemo = last[1]
    else:
        if type(root) is not BattleState:
            return None
        got = _SHOT_MEMO.get(root)
        memo = _SHOT_MEMO[root] = _ShotMemo() if got is None else got
        _SHOT_LAST[:] = [weakref.ref(root), memo]
    if len(memo.shots) >= _SHOT_MEMO_SIZE:
        memo.clear()
    if memo.version != root.version:
        memo.version = root.version
        memo.parts = {}
        memo.able = {}
        memo.batches = {}
        memo.firers = {}
        brs = root.rules_state
        memo.battle_part = memo.intern(tuple([brs.get(f) for f in _SHOT_BATTLE_FIELDS]))
    return memo


def _shot_memo_key(battle: BoardView, s: TankState, t: TankState, ammo: str, kind: str | None,
                   los: tuple[bool, int]) -> tuple[_ShotMemo, tuple] | None:
    """``(memo, key)`` (the battle's :class:`_ShotMemo` and the key in its ``shots``) for the shot of ``s`` at
    ``t`` (both live on the board, enemies) on ``battle`` -- a :class:`~sim.battle.BattleState` or what-if views
    (:class:`~sim.battle.HypoView`) over one -- or ``None`` when there is no table (another kind of board, an
    unhashable state value).

    The key holds everything :meth:`ASL._shot_now` reads: the two ids (so the vehicles and sides), the
    ammunition asked and the ``kind`` given; each tank's hex, VCA and TCA as the board shows them and the interned
    rest of its state (:func:`_tank_part`: status and the ``rules_state`` values it reads; a view's placed tank
    from the view's own copy, the others at the battle's current version); the battle's ``rules_state`` values it
    reads (:data:`_SHOT_BATTLE_FIELDS`); the LOS answer ``los = (clear, hindrance)``, which the caller gives as
    :meth:`ASL.los` of the two hexes on this board (its only reading of other tanks and of the terrain between);
    and the map's terrain version (the TEM and obstacle of the two hexes).  The options are fixed for a battle's
    life and the catalog data is immutable."""
    root = battle
    while type(root) is HypoView:
        root = root.base
    try:
        memo = _shot_table(root)
        if memo is None:
            return None
        parts = memo.parts
        sid, tid = s.tank_id, t.tank_id
        spid = tpid = None
        b = battle
        while type(b) is HypoView:   # a tank a view places has the view's own copy of its state
            moved = b.moved[0]
            if (moved == sid and spid is None) or (moved == tid and tpid is None):
                pid = memo.views.get(b)
                if pid is None:
                    pid = memo.views[b] = _tank_part(memo, b.tanks[moved])
                if moved == sid:
                    spid = pid
                else:
                    tpid = pid
            b = b.base
        if spid is None:
            spid = parts.get(sid)
            if spid is None:
                spid = parts[sid] = _tank_part(memo, s)
        if tpid is None:
            tpid = parts.get(tid)
            if tpid is None:
                tpid = parts[tid] = _tank_part(memo, t)
    except TypeError:
        return None
    clear, hind = los
    return memo, (sid, tid, ammo, kind, spid, tpid, memo.battle_part, s.hex, s.facing,
                        s.turret_facing, t.hex, t.facing, t.turret_facing, clear, hind, root.map.terrain_version)


@lru_cache(maxsize=65_536)
def _line_hexes(a: Hex, c: Hex) -> frozenset[Hex]:
    """The hexes of the LOS line between ``a`` and ``c`` as :meth:`ASL.los` traces it (from the lower to the higher
    hex name, both ends included): :meth:`ASL.shot_footprint`."""
    a, c = as_hex(a), as_hex(c)
    p, q = (a, c) if a <= c else (c, a)
    return frozenset(hex_line(p, q))


@lru_cache(maxsize=65_536)
def _key_of(items: tuple[tuple[str, Any], ...]) -> ShotKey:
    """:func:`~sim.rules.asl.odds.parse_params` of a board shot's parameters, cached (play asks for the same
    shots many times); raises :class:`~sim.rules.base.CaseError` like it."""
    return parse_params(dict(items))


@lru_cache(maxsize=65_536)
def _pair_geometry(dq: int, dr: int, vertex: int, t_facing: int, t_vertex: int, af_hull_front: int,
                   af_hull_side: int, af_turret_front: int, af_turret_side: int
                   ) -> tuple[int, int, int, str | None, str | None]:
    """The geometry of a shot at a target ``(dq, dr)`` hexes from the firer (axial difference target - firer):
    ``(range, CA turns, CA vertex after them, hull Target Facing, turret Target Facing)`` for a firer's CA on
    ``vertex`` and a target with VCA ``t_facing`` and TCA ``t_vertex`` (:func:`~sim.rules.asl.sight.ca_turns`,
    :func:`~sim.rules.asl.sight.turn_vertex`, :func:`~sim.rules.asl.sight.target_face`; asl.md 7).  The facings
    are ``None`` in the same hex.  Each of these reads the difference of the two hexes only, so one cached answer
    serves every pair of hexes with that difference."""
    firer, tgt = Hex(0, 0), Hex(dq, dr)
    rng = distance(firer, tgt)
    if rng == 0:
        return 0, 0, vertex, None, None
    turns = ca_turns(firer, vertex, tgt)
    new_vertex = turn_vertex(firer, vertex, tgt) if turns else vertex
    return (rng, turns, new_vertex, target_face(tgt, t_facing, firer, af_hull_front, af_hull_side),
            target_face(tgt, t_vertex, firer, af_turret_front, af_turret_side))


@lru_cache(maxsize=1024)
def _basic_tk_of(ammo: str, tk_key: str) -> int | str:
    """Basic TK# of the ``tk_key`` entry for ``ammo`` (:meth:`~sim.rules.asl.tables.ToKillTables.basic_tk_by_key`),
    or the table's error message."""
    try:
        return asl_tables.to_kill_tables().basic_tk_by_key(ammo, tk_key)
    except asl_tables.TableError as exc:
        return str(exc)


def _basic_tk(veh: asl_tables.Vehicle, ammo: str) -> int | Illegal:
    """Basic TK# of ``veh`` firing ``ammo`` (a type in its ``tk_key``), or why there is none."""
    got = _basic_tk_of(ammo, veh.tk_key[ammo])
    return Illegal(got) if isinstance(got, str) else got


@lru_cache(maxsize=65_536)
def _shot_key(values: tuple[Any, ...]) -> ShotKey | str:
    """The :class:`~sim.rules.asl.odds.ShotKey` of a board shot from the values :meth:`ASL._shot` gathers (in
    the order it lists them), through :func:`~sim.rules.asl.odds.parse_params` (:func:`_key_of`); or the
    :class:`~sim.rules.base.CaseError` message if the parameters are refused.  Cached: play asks for the same
    shots many times."""
    (gun, colour, ammo, basic, rng, turret_type, ca_change, firer_obstacle, fm, gyro, firer_plus1, tstate,
     acquisition, size, tem, hind, af_hf, af_hs, af_tf, af_ts, rof, breakdown, multiple_hits, cs_red,
     target_plus1, target_shocked, malfunction, red_cs_burn_needs_kill, preference, nationality, depletion,
     crew_checks, cs, crew_morale, hull_down, aspect, turret_aspect, firer_los_mp, target_los_mp) = values
    p: dict[str, Any] = dict(
        gun=gun, colour=colour, ammo=ammo, basic_tk=basic, range_hexes=rng, turret_type=turret_type,
        ca_change=ca_change, firer_obstacle=firer_obstacle, firer_moved=fm, gyro=gyro, bu=True,
        firer_plus1=firer_plus1, target_state=tstate, acquisition=acquisition, size=size, tem=tem,
        hindrance=hind, af_hull_front=af_hf, af_hull_side=af_hs, af_turret_front=af_tf, af_turret_side=af_ts,
        rof=rof, breakdown=breakdown, multiple_hits=multiple_hits, cs_red=cs_red, target_plus1=target_plus1,
        target_shocked=target_shocked, malfunction=malfunction, red_cs_burn_needs_kill=red_cs_burn_needs_kill,
        multiple_hit_preference=preference)
    if nationality:
        p["nationality"] = nationality
    if depletion is not None:
        p["depletion"] = depletion
    if crew_checks:
        if cs is not None:
            p["cs"] = cs
        p["crew_morale"] = crew_morale
    if rng > 0:
        p["hull_down"] = hull_down
        p["aspect"] = aspect
        p["turret_aspect"] = turret_aspect
    if firer_los_mp is not None:
        p["firer_los_mp"] = firer_los_mp
    if target_los_mp is not None:
        p["target_los_mp"] = target_los_mp
    try:
        return _key_of(tuple(p.items()))
    except CaseError as exc:
        return str(exc)




class _MoveTable:
    """The movement states ``(hex, facing)`` of one map's cells (facings 0..5) as integers ``6 * cell + facing``,
    for :func:`_movement_search` (pure hex geometry of the cell set, shared by every search on it).

    ``cells[i]`` is cell ``i``, ``index`` its inverse, ``states[s]`` the state tuple of ``s`` and ``moves[s]``
    :func:`_moves` of it on integers: ``(front cell, state there, other front cell, state there, VCA right,
    VCA left, cell)``, a cell off the map being ``-1`` (its state then unused)."""

    __slots__ = ("cells", "index", "states", "moves")

    def __init__(self, cells: Iterable[Hex]):
        self.cells: tuple[Hex, ...] = tuple(cells)
        self.index: dict[Hex, int] = {h: i for i, h in enumerate(self.cells)}
        self.states: list[tuple[Hex, int]] = []
        self.moves: list[tuple[int, int, int, int, int, int, int]] = []
        index = self.index
        for i, h in enumerate(self.cells):
            for f in range(6):
                a = index.get(h.neighbour(f), -1)
                b = index.get(h.neighbour((f - 1) % 6), -1)
                self.states.append((h, f))
                self.moves.append((a, 6 * a + f, b, 6 * b + f, 6 * i + (f + 1) % 6, 6 * i + (f - 1) % 6, i))


#: The :class:`_MoveTable` of each cell set, by the ``id`` of the map's (immutable) cell frozenset, kept with it
#: (so the id is not reused while the entry lives); emptied when it reaches the size below.
_MOVE_TABLES: dict[int, tuple[frozenset[Hex], _MoveTable]] = {}
_MOVE_TABLES_SIZE = 16
#: Not looked up yet (:func:`_movement_search`'s per-search cost lists).
_UNSET: Any = object()


def _move_table(cells: frozenset[Hex]) -> _MoveTable:
    """The :class:`_MoveTable` of the cell set ``cells`` (made on first use)."""
    got = _MOVE_TABLES.get(id(cells))
    if got is not None and got[0] is cells:
        return got[1]
    if len(_MOVE_TABLES) >= _MOVE_TABLES_SIZE:
        _MOVE_TABLES.clear()
    table = _MoveTable(cells)
    _MOVE_TABLES[id(cells)] = (cells, table)
    return table


def _movement_search(start: tuple[Hex, int], budget: int, entry: Callable[[Hex], int | None],
                     vca: Callable[[Hex], int], extra: int, cells: frozenset[Hex] | None = None
                     ) -> dict[Hashable, tuple[int, tuple[tuple[Hex, int], ...]]]:
    """:func:`_movement_search_states` (the same answers, paths and order), on the integer states of
    :class:`_MoveTable` when ``cells`` (the map's cells) holds the start's hex and its facing is 0..5: every state
    it reaches is then on the map (``entry`` is ``None`` off it), so a state is an index into flat lists instead
    of a key of dicts of ``(hex, facing)`` tuples.  ``entry`` and ``vca`` are asked once per cell per search.
    Paths are tuples (the same states; :meth:`ASL.reachable` hands them over as they are).

    The same answers as :func:`_movement_search_states` without its breadth-first pass (issue 14): that pass
    only builds each state's successor dict, whose edges are the state's successors ``v`` with ``best + c <=
    budget`` (``best`` its cheapest cost, the one the Dijkstra pass settles it at, so exactly the edges that pass
    keeps) in the order first found.  Edges of one cost are found at the same scan (the first whose cost leaves
    room for them), so in the successor function's fixed order (front, other front, VCA right, VCA left); that
    order differs only between edges of different costs, which push into different per-cost lists, so the
    pushes, and with them every answer, path and the order, are the same when the settled state's successors
    are generated in place in the fixed order.  ``seen`` starts at ``budget + 1`` (so ``vu < seen`` is the state
    search's ``u not in seen or vu < seen[u]`` and implies ``vu <= budget``); a path is its settled parent's
    path and the state, the parent being the state whose push was the last (so the one it keeps).
    Issue 14."""
    h0, f0 = start
    table = None if cells is None else _move_table(cells)
    i0 = None if table is None else table.index.get(h0)
    if table is None or i0 is None or type(f0) is not int or not 0 <= f0 <= 5:
        found = _movement_search_states(start, budget, entry, vca, extra)
        return {s: (c, tuple(p)) for s, (c, p) in found.items()}
    s0 = 6 * i0 + f0
    states, moves, cell_of = table.states, table.moves, table.cells
    n = len(states)
    limit = budget + 1
    ent: list[Any] = [_UNSET] * len(cell_of) + [None]   # the last answers the off-map cell -1
    vcs: list[Any] = [_UNSET] * len(cell_of)
    order: list[int] = []
    dist = [-1] * n
    parent = [-1] * n
    seen = [limit] * n
    seen[s0] = 0
    buckets: list[list[int]] = [[] for _ in range(budget + 1)]
    buckets[0].append(s0)
    for d in range(budget + 1):
        for v in buckets[d]:   # a zero-cost edge appends to this bucket while it is read, as the original does
            if dist[v] >= 0:
                continue
            dist[v] = d
            order.append(v)
            # the four successors in order, unrolled (the successor dict's order where it matters: see above)
            a, sa, b, sb, right, left, i = moves[v]
            # the two hex moves (a: forward, b: reverse) are written out, not looped over: the search's hot loop
            ca = ent[a]
            if ca is _UNSET:
                ca = ent[a] = entry(cell_of[a])
            if ca is not None:
                vu = d + ca
                if vu < seen[sa] and dist[sa] < 0:   # (vu < seen <= limit: vu <= budget)
                    seen[sa] = vu
                    buckets[vu].append(sa)
                    parent[sa] = v
            cb = ent[b]
            if cb is _UNSET:
                cb = ent[b] = entry(cell_of[b])
            if cb is not None:
                vu = d + cb
                if vu < seen[sb] and dist[sb] < 0:
                    seen[sb] = vu
                    buckets[vu].append(sb)
                    parent[sb] = v
            cv = vcs[i]
            if cv is _UNSET:
                cv = vcs[i] = vca(cell_of[i])
            vu = d + cv
            if vu <= budget:
                if vu < seen[right] and dist[right] < 0:
                    seen[right] = vu
                    buckets[vu].append(right)
                    parent[right] = v
                if vu < seen[left] and dist[left] < 0:
                    seen[left] = vu
                    buckets[vu].append(left)
                    parent[left] = v
    paths: list[Any] = [None] * n
    paths[s0] = (start,)
    for s in order[1:]:   # a state's parent is settled before it, its path final when the state was pushed last
        paths[s] = paths[parent[s]] + (states[s],)
    res: dict[Hashable, tuple[int, tuple[tuple[Hex, int], ...]]] = {start: (0, paths[s0])}
    for s in order[1:]:
        res[states[s]] = (dist[s] + extra, paths[s])
    return res


def _movement_search_states(start: tuple[Hex, int], budget: int, entry: Callable[[Hex], int | None],
                            vca: Callable[[Hex], int], extra: int) -> dict[Hashable, tuple[int, list]]:
    """:func:`~sim.hexgrid.bounded_dijkstra` from ``start`` within ``budget`` half-MP over ASL's movement states
    ``(hex, facing)``, the successors of :meth:`ASL._successors` (the two hexes in front at ``entry(hex)``
    half-MP, ``None`` = not enterable, then the two VCA changes at ``vca(hex)``) generated in place; every cost
    but the start's plus ``extra`` (:meth:`ASL.reachable`'s ``{state: (cost, path)}``).

    The same algorithm step for step (so the same answers, paths and order): the breadth-first pass keeps the
    cheapest cost of every edge in the order edges are first found; the Dijkstra pass pops by (cost, push
    order), here from one first-in-first-out list per cost (costs are integers in ``0..budget`` and never
    negative, so taking the lists in cost order and each in push order is the binary heap's order).  Issue 14:
    it skips a successor call and list per state and the heap's tuple comparisons."""
    succ: dict[tuple[Hex, int], dict[tuple[Hex, int], int]] = {start: {}}
    frontier = [start]
    best = {start: 0}
    limit = budget + 1
    moves_of = _MOVES.get
    while frontier:
        nxt = []
        for u in frontier:
            bu = best[u]
            out = succ.get(u)
            moves = moves_of(u)
            if moves is None:
                moves = _moves(u)
            na, sa, nb, sb, right, left = moves
            v_c = vca(u[0])
            for v, c in ((sa, entry(na)), (sb, entry(nb)), (right, v_c), (left, v_c)):
                if c is None:
                    continue
                cost = bu + c
                if cost > budget:
                    continue
                if out is None:
                    out = succ[u] = {}
                if c < out.get(v, limit):
                    out[v] = c
                if v not in succ:
                    succ[v] = {}
                if cost < best.get(v, limit):
                    best[v] = cost
                    nxt.append(v)
        frontier = nxt
    dist: dict[tuple[Hex, int], int] = {}
    paths: dict[tuple[Hex, int], list] = {start: [start]}
    seen = {start: 0}
    buckets: list[list[tuple[Hex, int]]] = [[] for _ in range(budget + 1)]
    buckets[0].append(start)
    for d in range(budget + 1):
        bucket = buckets[d]
        i = 0
        while i < len(bucket):
            v = bucket[i]
            i += 1
            if v in dist:
                continue
            dist[v] = d
            pv = paths[v]
            for u, c in succ[v].items():
                vu = d + c
                if vu > budget or u in dist:
                    continue
                if u not in seen or vu < seen[u]:
                    seen[u] = vu
                    buckets[vu].append(u)
                    paths[u] = pv + [u]
    res: dict[Hashable, tuple[int, list]] = {s: ((0 if s == start else c + extra), paths[s]) for s, c in dist.items()}
    return res

#: Where :meth:`ASL._key_values` puts the seven values of a shot's geometry (range, CA change, TEM, hindrance,
#: hull-down, hull and turret Target Facing) in the values :func:`_shot_key` takes, and the key's field names.
_SUB_AT = (4, 6, 14, 15, 34, 35, 36)
_SUB_FIELDS = ("range_hexes", "ca_change", "tem", "hindrance", "hull_down", "aspect", "turret_aspect")
_FACES = frozenset(("front", "side", "rear"))   # (asl.md 10.1: the values parse_params accepts for a facing)


class _KeyFamily:
    """The :class:`~sim.rules.asl.odds.ShotKey` objects of board shots that share every value :func:`_shot_key`
    reads but the seven of the geometry (:data:`_SUB_AT`): ``keys`` maps those seven (``sub``, in
    :meth:`ASL._shot_geometry`'s order) to the key, or to the refusal's message.

    The first key is made by :func:`_shot_key` (so through :func:`~sim.rules.asl.odds.parse_params`) and kept as a
    template; every later one is the template with the seven fields set (:meth:`make`), when they are values
    ``parse_params`` takes unchanged and that no consistency rule of it reads with the rest: integers in range
    (range >= 0, CA change 0..3 and 0 for a Bounding First Fire shot, hindrance >= 0), a bool and facings of
    ``front`` / ``side`` / ``rear``; at range 0 the three target fields get ``parse_params``'s defaults (it is
    not given them: :func:`_shot_key`).  ``parse_params`` reads these seven only through those checks and the
    turret-facing default, and sets every other field from the others alone, so the key is equal to the one it
    would build; anything else (and every ask before the family's first key) goes through :func:`_shot_key`.
    Issue 14: this skips re-parsing some 40 parameters per new key.  ``kills`` maps a ``sub`` to the kill odds of
    its key (``None`` for a refusal: :meth:`ASL._kill_at`), at most :data:`_KEY_FAMILY_SIZE` entries."""

    __slots__ = ("values", "template", "keys", "kills")

    def __init__(self, values: tuple[Any, ...]):
        self.values = values   # :func:`_shot_key`'s values with None at _SUB_AT
        self.template: ShotKey | None = None
        self.keys: dict[tuple, ShotKey | str] = {}
        self.kills: dict[tuple, Fraction | None] = {}

    def full(self, sub: tuple) -> tuple[Any, ...]:
        """:func:`_shot_key`'s values for the geometry ``sub``."""
        v = self.values
        rng, ca, tem, hind, hd, asp, tasp = sub
        return v[:4] + (rng,) + v[5:6] + (ca,) + v[7:14] + (tem, hind) + v[16:34] + (hd, asp, tasp) + v[37:]

    def make(self, sub: tuple) -> ShotKey | str:
        """The key (or refusal) of the geometry ``sub``, kept in ``keys``."""
        keys = self.keys
        if len(keys) >= _KEY_FAMILY_SIZE:
            keys.clear()
        t = self.template
        rng, ca, tem, hind, hd, asp, tasp = sub
        if (t is not None and type(rng) is int and rng >= 0 and type(ca) is int and 0 <= ca <= 3
                and not (ca and self.values[8] == "bounding_first") and type(tem) is int
                and type(hind) is int and hind >= 0
                and (rng == 0 or (type(hd) is bool and type(asp) is str and asp in _FACES
                                  and type(tasp) is str and tasp in _FACES))):
            k = object.__new__(ShotKey)
            d = k.__dict__
            d.update(t.__dict__)
            if rng == 0:
                hd, asp, tasp = False, "front", "front"
            d["range_hexes"], d["ca_change"], d["tem"], d["hindrance"] = rng, ca, tem, hind
            d["hull_down"], d["aspect"], d["turret_aspect"] = hd, asp, tasp
            got: ShotKey | str = k
        else:
            got = _shot_key(self.full(sub))
            if t is None and isinstance(got, ShotKey):
                self.template = got
        keys[sub] = got
        return got


#: The :class:`_KeyFamily` of each set of non-geometric values (all the values :func:`_shot_key` reads: the
#: vehicles', the ammunition's, the firer's and target's states and the options); emptied at the size below.
_KEY_FAMILIES: dict[tuple, _KeyFamily] = {}
_KEY_FAMILIES_SIZE = 4096
_KEY_FAMILY_SIZE = 16_384
#: Not in a family's ``kills`` (a miss; ``None`` there is a refusal).
_NO_KILL: Any = object()

#: The moves of a movement state ``(hex, facing)`` (:func:`_moves`), shared by every search and map (pure hex
#: geometry); emptied when it reaches the size below.
_MOVES: dict[tuple[Hex, int], tuple[Hex, tuple[Hex, int], Hex, tuple[Hex, int], tuple[Hex, int], tuple[Hex, int]]] \
    = {}
_MOVES_SIZE = 200_000


def _moves(state: tuple[Hex, int]
           ) -> tuple[Hex, tuple[Hex, int], Hex, tuple[Hex, int], tuple[Hex, int], tuple[Hex, int]]:
    """``(front hex, state there, other front hex, state there, VCA right, VCA left)`` of the state ``(hex,
    facing)``: the two hexes in front (across hexsides ``facing`` and ``facing - 1``, entered keeping the VCA) and
    the two one-hexspine VCA changes (D2.1, D2.11), in the order :meth:`ASL._successors` lists them."""
    h, f = state
    na, nb = h.neighbour(f % 6), h.neighbour((f - 1) % 6)
    got = (na, (na, f), nb, (nb, f), (h, (f + 1) % 6), (h, (f - 1) % 6))
    if len(_MOVES) >= _MOVES_SIZE:
        _MOVES.clear()
    _MOVES[state] = got
    return got


# ==============================================================================================================
# Scenario blocks and per-tank state
# ==============================================================================================================

class TankExt(RulesOptions):
    """Per-tank scenario block (``rules:``).  ``hull_down``: hexside directions (0..5, absolute) the AFV is
    hull-down behind; it applies while the AFV stays in its set-up hex (D4.2; asl.md 7: hull-down comes only from
    the scenario; DECISION: it ends when the AFV leaves that hex).  ``turret_facing``: TCA vertex at set-up
    (default = VCA).  ``motion``: the AFV begins the battle in Motion (D2.4)."""

    hull_down: tuple[int, ...] = ()
    turret_facing: int | None = Field(default=None, ge=0, le=5)
    motion: bool = False

    @field_validator("hull_down")
    @classmethod
    def _sides(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 0 <= k <= 5 for k in v):
            raise ValueError("hull_down lists hexside directions 0..5")
        return tuple(sorted(set(v)))


def target_state_of(t: TankState) -> str:
    """Target status for To Hit (asl.md 5.2, C.8): ``moving`` (Non-Stopped or in Motion), ``stopped`` (moving
    this Player Turn but spent a Stop MP since its last Start) or ``stationary``."""
    rs = t.rules_state
    if rs.get("motion"):
        return "moving"
    if rs.get("moved"):
        return "moving" if rs.get("started") else "stopped"
    return "stationary"


def _hindrance_of(o: TankState, block: bool) -> int | None | Literal[False]:
    """What the AFV or wreck ``o`` adds to the LOS hindrance of its hex (asl.md 6.1, D9.4): ``None`` if it blocks
    (a burning wreck, ``burning_wreck_los: block``), 2 (a burning wreck that hinders), 1 (another wreck, an
    abandoned AFV, a live AFV not subject to Case J), or ``False`` (nothing: an AFV in motion)."""
    if o.status == Status.DESTROYED:
        return (None if block else 2) if o.rules_state.get("wreck") == "burning" else 1
    if o.status == Status.INCAPACITATED:
        return 1
    if o.alive and target_state_of(o) == "stationary":
        return 1
    return False


def able_to_fire(t: TankState) -> str | None:
    """Why the AFV cannot fire its MA now (asl.md 6.1, 9.1), or ``None``."""
    rs = t.rules_state
    if not t.alive or t.hex is None:
        return "not a live AFV"
    if rs.get("abandoned"):
        return "abandoned"
    if rs.get("shocked") or rs.get("uk"):
        return "shocked"
    if rs.get("stunned"):
        return "stunned"
    if rs.get("recall"):
        return "recalled"
    if rs.get("ma", "ok") != "ok":
        return f"MA {rs.get('ma')}"
    return None


HALF = 2                      #: half-MP units per MP: movement counts in half MPs (asl.md 5.1)
#: The kind of shot a fire phase makes (asl.md 4); the MPh's kinds depend on the firer (``ASL._shot_kind``).
_PHASE_SHOT_KIND: Mapping[str | None, str] = {"PFPh": "prep", "DFPh": "final", "AFPh": "advancing"}
MOVE_MODES = ("move_and_fire", "move", "hold")
PREP_MODES = ("fire", "hold")
MAX_SHOTS_PER_PHASE = 12      #: safety cap on ROF chains of one AFV in one phase (DECISION; ROF <= 3 in the data)
_J1_WINDOW = 3 * HALF         #: C6.11: MP in LOS up to which J1/J2 apply
_J_USE = 7                    #: C6.17 decision: a plain-J DFF shot uses 3.5 MP


# ==============================================================================================================
# The rule set
# ==============================================================================================================

_OUTCOME_KEYS = ("result", "hit", "location", "face", "critical", "improbable", "multiple", "second_location",
                 "second_result", "final_th_dr", "modified_th", "drm", "final_tk", "fired", "rof_again",
                 "malfunction", "special_ammo_left", "crew_survives", "abandoned", "ntc_shocked")


class ASL(Ruleset):
    """The ``asl`` rule set (asl.md).  Stateless apart from caches; one instance serves many battles."""

    name = "asl"
    Options = Options
    TankExt = TankExt

    # --- catalog ---------------------------------------------------------------------------------------------
    def vehicle(self, vid: str) -> asl_tables.Vehicle:
        """The catalog record ``vid`` (``sim_vehicles``, missing data defaulted with a warning -- given here, when
        the vehicle is used, once per process -- asl.md 3.2); raises ``KeyError`` for an unknown id."""
        try:
            v = asl_tables.catalog()[vid]
        except KeyError:
            known = self.vehicle_ids()
            raise KeyError(f"unknown asl vehicle {vid!r}{did_you_mean(vid, known)}; "
                           f"known: {', '.join(known)}") from None
        if v.defaulted:
            asl_tables.warn_defaults(vid, v.defaulted)
        return v

    def vehicle_ids(self) -> tuple[str, ...]:
        return tuple(asl_tables.catalog())

    def catalog_records(self) -> dict[str, dict[str, Any]]:
        """The ``sim_vehicles`` records of ``asl_ordnance.yaml`` keyed by id (asl.md 3.2)."""
        return asl_tables.catalog_records()

    def vehicle_from_record(self, vid: str, record: Mapping[str, Any], options: Any = None) -> asl_tables.Vehicle:
        """A record in the ``sim_vehicles`` schema (asl.md 3.2; :class:`~sim.rules.asl.tables.VehicleRecord`),
        nulls filled by the options' ``missing_data`` rule (``strict``: any null is an error)."""
        strict = getattr(options, "missing_data", "defaults_with_warning") == "strict"
        return asl_tables.vehicle_from_record(vid, record, strict=strict)

    def has_turret(self, vehicle: Any) -> bool:
        """True unless the vehicle is NT (D1.31)."""
        return getattr(vehicle, "turret_type", "T") != "NT"

    # --- odds command and golden cases ------------------------------------------------------------------------
    def odds_from_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``tanksim odds asl name=value ...``: the JSON object of asl.md 10.2 (fractions as strings).

        Raises :class:`~sim.rules.base.CaseError` for unknown names or malformed values."""
        return odds_json(parse_params(params))

    def run_case(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate one golden case of kind ``odds``, ``outcome`` or ``geometry`` (asl.md 11)."""
        kind = case.get("kind")
        given = dict(case.get("given") or {})
        if kind == "odds":
            return self.odds_from_params(given)
        if kind == "outcome":
            if "dice" not in given:
                raise CaseError("an outcome case needs given.dice")
            dice = FixedDice([int(x) for x in given.pop("dice")])
            res = resolve_key(parse_params(given), dice)
            dice.check_done()
            return {k: res[k] for k in _OUTCOME_KEYS}
        if kind == "geometry":
            return geometry_case(given)
        raise CaseError(f"unknown case kind {kind!r}; expected odds, outcome or geometry")

    # --- scenario blocks, terrain ------------------------------------------------------------------------------
    def terrain_names(self, options: Any = None) -> tuple[str, ...]:
        """Terrain classes of ``sim_terrain``: open, road, woods, building, stone_building (asl.md 5.1)."""
        return tuple(asl_tables.terrain_tables().classes)

    def default_turn_limit(self, options: Any) -> int:
        return 10

    def terrain(self, battle: BoardView, h: tuple[int, int]) -> asl_tables.Terrain:
        """The ``sim_terrain`` class of hex ``h`` (on the map; raises ``KeyError`` off it)."""
        return asl_tables.terrain_tables().classes[battle.map.terrain(h)]

    def sight_terrain(self, battle: BoardView, h: tuple[int, int]) -> asl_tables.Terrain:
        """The ``sim_terrain`` class of hex ``h`` as LOS and hindrance read it: a cell off the map is ``open``
        (CONVENTIONS.md "Lines"), so it never blocks or hinders and asking about it is never an error."""
        return asl_tables.terrain_tables().classes[battle.map.sight_terrain(h)]

    passable_is_static = True  # terrain and options only

    def passable(self, battle: BoardView, h: Hex) -> bool:
        """Whether a vehicle may ever enter ``h`` (static: on the map; woods/buildings unless
        ``obstacle_entry: forbidden``)."""
        return h in battle.map and (battle.options.obstacle_entry == "bog" or not self.terrain(battle, h).obstacle)

    # --- set-up ------------------------------------------------------------------------------------------------
    def setup(self, battle: Battle) -> None:
        """Initial rule-set state of every AFV (no dice, no events).  ``missing_data: strict`` re-reads each
        record without defaults and raises :class:`~sim.rules.asl.tables.CatalogError` on a null."""
        opts = battle.options
        for t in battle.tanks:
            if opts.missing_data == "strict":
                rec = t.vehicle.record or asl_tables.raw_vehicle(t.vehicle_id)
                asl_tables.vehicle_from_record(t.vehicle_id, rec, strict=True)
            ext = dict(t.ext or {})
            veh = t.vehicle
            if not self.has_turret(veh):
                t.turret_facing = None
            elif ext.get("turret_facing") is not None:
                t.turret_facing = int(ext["turret_facing"])
            elite = bool(opts.elite[t.side]) if t.side < len(opts.elite) else False
            ammo = []
            for a in veh.ammo_types():
                if a in ("AP", "HE"):
                    continue
                n = veh.depletion_number(a, opts.date, elite)
                if n is not None:
                    ammo.append((a, n))
            motion = bool(ext.get("motion", False))
            hd = tuple(ext.get("hull_down", ()))
            init = dict(motion=motion, moved=motion, entered=False, started=False, fire=None, prep_fired=False,
                        bff_fired=False, afph_fired=False, acq=None, ammo_left=tuple(ammo), immobilized=False,
                        bogged=False, mired=False, shocked=False, uk=False, stunned=False, stun_new=False,
                        plus1=False, recall=False, ma="ok", wreck=None, abandoned=False, hull_down=hd,
                        hd_hex=(t.hex.q, t.hex.r) if hd and t.hex is not None else None)
            for k, v in init.items():
                t.rules_state.setdefault(k, v)

    # --- small helpers -----------------------------------------------------------------------------------------
    @staticmethod
    def _set(battle: Battle, tid: int, key: str, value: Any) -> None:
        if battle.tanks[tid].rules_state.get(key) != value:
            battle.emit(TankStateSet(tid, key, value))

    @staticmethod
    def _bset(battle: Battle, key: str, value: Any) -> None:
        if battle.rules_state.get(key) != value:
            battle.emit(BattleStateSet(key, value))

    def _first_side(self, battle: BoardView) -> int:
        if battle.options.first_side is not None:
            return int(battle.options.first_side)
        for i, s in enumerate(battle.sides):
            if s.role == "attacker":
                return i
        return 0

    # --- sight (asl.md 6.1) ---------------------------------------------------------------------------------------
    def los(self, battle: BoardView, a: tuple[int, int], c: tuple[int, int]) -> tuple[bool, int]:
        """``(clear, hindrance)`` between two hexes: woods and buildings between them block (B.10); a burning
        wreck blocks (``burning_wreck_los: block``) or adds +2; Case R (D9.4) +1 per intermediate hex holding a
        non-burning wreck, an abandoned AFV or an AFV not subject to Case J; a total of 6 blocks.  Cells of the line
        that are off the map (a ragged board edge) are open ground: they neither block nor hinder (CONVENTIONS.md
        "Lines"); occupants of such a cell are none.

        DECISION: the hex line is traced from the lower to the higher hex name, so LOS is symmetric.

        Speed (issue 14): the line's interior is a bit mask (:func:`~sim.rules.asl.sight.line_mask`, per offset)
        tested against the map's obstacle bits and the bits of the board's hindering occupants (:meth:`_los`); the
        answer is kept per pair for as long as the terrain and the hindering occupants stay (:meth:`_los_memo`); a
        what-if view answers as its base board where the tank it places is on neither of its hexes' line interiors."""
        if type(a) is not Hex:
            a = as_hex(a)
        if type(c) is not Hex:
            c = as_hex(c)
        if a == c:
            return True, 0
        p, q = (a, c) if a <= c else (c, a)
        if type(battle) is HypoView:
            # the view's Case R table is its base's but at the placed tank's two hexes, so off them it answers as
            # its base does (whose answers are kept per battle version: shared by every view of that version)
            base = battle.base
            ent = None
            if type(base) is BattleState:   # its LOS entry (see below) holds the grid
                ent = self._los_entry(base)
                g = ent[2]
                idx = g.cells
                ip, iq = idx.get(p), idx.get(q)
            if ent is None or ip is None or iq is None:   # over another board, or an end off the map: by hex
                line = self._los_line(battle, p, q)
                if line is None:
                    return False, 0
                _tid, old, new = battle.moved
                if old not in line and new not in line:
                    return self.los(battle.base, p, q)
                return self._los_by_hex(battle, p, q)
            low, mask = line_mask(q[0] - p[0], q[1] - p[1], g.w)
            sh = ip + low
            if (g.obstacles >> sh) & mask:
                return False, 0
            _tid, old, new = battle.moved
            for h in (old, new):
                if h is not None:
                    i = idx.get(h)
                    if i is None or (i >= sh and (mask >> (i - sh)) & 1):
                        return self._los(battle, p, q)
            battle = base
        elif type(battle) is BattleState:
            # a battle: the answer depends on the board only, so it holds until the next event (and longer,
            # :meth:`_los_memo`)
            ent = self._los_entry(battle)
        else:   # another board (a search copy, a stand-in): by hex, its Case R table built afresh
            return self._los_by_hex(battle, p, q)
        got = ent[0].get((p, q))
        if got is None:
            got = ent[0][(p, q)] = self._los(battle, p, q, ent)
        return got

    def _los_entry(self, battle: BattleState) -> list[Any]:
        """:meth:`_los_memo` of ``battle`` in its present state (version, hidden tanks), the last one asked for
        answered without a look-up (:data:`_LOS_LAST`)."""
        state = (battle.version, battle.hidden_tanks)
        last = _LOS_LAST
        if last and last[0]() is battle and last[1] == state:
            return last[2]
        return self._los_memo(battle, state)

    def _los_memo(self, battle: BattleState, state: Hashable) -> list[Any]:
        """``[answers, masks, grid]`` of ``battle`` in its present state ``state`` (version, hidden tanks): the
        table of LOS answers ``{(hex, hex): (clear, hindrance)}``, the :class:`~sim.rules.asl.sight.HindMasks` of
        its Case R table (``None`` until a miss needs them) and the map's :meth:`_los_grid`.  One entry per
        terrain version and content of the Case R table (:meth:`_hindrances`: the hindering tanks' ids, hexes and
        contributions, which every answer reads besides the terrain's obstacles), so an event that moves no
        hindering occupant (a turn, a state change, a tank in motion moving, a side's view hiding the same tanks)
        keeps the answers.  The last :data:`_LOS_CONTENTS` entries are kept per battle, each table emptied at
        :data:`_LOS_MEMO_SIZE` answers."""
        per = _LOS_MEMO.get(battle)
        if per is None:
            per = _LOS_MEMO[battle] = {}
        self._hindrances(battle)
        key = (battle.map.terrain_version, _HIND_LAST[3])
        ent: list[Any] | None = per.pop(key, None)
        if ent is None:
            if len(per) >= _LOS_CONTENTS:
                per.pop(next(iter(per)))
            ent = [{}, None, self._los_grid(battle)]
        elif len(ent[0]) >= _LOS_MEMO_SIZE:
            ent[0] = {}
        per[key] = ent
        _LOS_LAST[:] = [weakref.ref(battle), state, ent]
        return ent

    def _los_grid(self, battle: BoardView) -> LosGrid:
        """The map's :class:`~sim.rules.asl.sight.LosGrid` (its obstacles as bits), kept until the terrain changes
        (it reads the map's cells and their sight terrain only)."""
        m = battle.map
        last = _GRID_LAST
        if last and last[0]() is m and last[1] == m.terrain_version:
            return last[2]
        g = m.terrain_cached("asl_los_grid", lambda: LosGrid(m.cells, lambda h: self.sight_terrain(battle, h).obstacle))
        _GRID_LAST[:] = [weakref.ref(m), m.terrain_version, g]
        return g

    @staticmethod
    def _hind_masks(table: Mapping[Hex, tuple[tuple[int, int | None], ...]], grid: LosGrid) -> HindMasks:
        """:class:`~sim.rules.asl.sight.HindMasks` of the Case R ``table`` on ``grid``, kept by the identity of
        both (a table is never changed once built: :meth:`_hindrances`)."""
        got = _HIND_MASKS.get(id(table))
        if got is not None and got[0] is table and got[1] is grid:
            return got[2]
        hm = HindMasks(table, grid)
        if len(_HIND_MASKS) >= _HIND_MASKS_SIZE:
            _HIND_MASKS.pop(next(iter(_HIND_MASKS)))
        _HIND_MASKS[id(table)] = (table, grid, hm)
        return hm

    def _los_line(self, battle: BoardView, p: Hex, q: Hex) -> tuple[Hex, ...] | None:
        """The interior hexes of the line ``p`` -> ``q`` (:func:`~sim.hexgrid.hex_line`), or ``None`` if terrain
        on it blocks LOS; kept (in one table per terrain version of the map) until the terrain changes."""
        lines: dict[tuple[Hex, Hex], tuple[Hex, ...] | None] = battle.map.terrain_cached("asl_los_lines", dict)
        try:
            return lines[(p, q)]
        except KeyError:
            line = hex_line(p, q)[1:-1]
            got = lines[(p, q)] = (None if any(self.sight_terrain(battle, h).obstacle for h in line) else line)
            return got

    def _hindrances(self, battle: BoardView) -> Mapping[Hex, tuple[tuple[int, int | None], ...]]:
        """``{hex: ((tank id, contribution), ...)}`` of the occupants that matter to LOS (asl.md 6.1), in id
        order: 2 for a burning wreck under ``burning_wreck_los: hinder`` (``None`` = it blocks), 1 for another
        wreck, an abandoned (incapacitated) AFV or a live AFV not subject to Case J; hexes without any are absent.
        Built from the tanks on the board (exactly the hexes' occupants) and kept per battle version (and hidden
        set); a what-if view's table is its base board's with the one tank it places moved (the last board asked
        is checked first: a view is asked once per enemy in a row)."""
        last = _HIND_LAST
        block = battle.options.burning_wreck_los == "block"
        if type(battle) is HypoView:
            if last and last[0]() is battle:
                return last[2]
            got = _HIND_VIEW_MEMO.get(battle)
            if got is None:
                base = self._hindrances(battle.base)
                tid, old, _new = battle.moved
                got = dict(base)
                if old is not None and old in got:
                    left = tuple(e for e in got[old] if e[0] != tid)
                    if left:
                        got[old] = left
                    else:
                        del got[old]
                o = battle.tanks[tid]
                x = _hindrance_of(o, block)
                if o.hex is not None and x is not False:
                    got[o.hex] = tuple(sorted(got.get(o.hex, ()) + ((tid, x),)))
                _HIND_VIEW_MEMO[battle] = got
            _HIND_LAST[:] = [weakref.ref(battle), None, got, None]
            return got
        state: Hashable = None
        if type(battle) is BattleState:
            state = (battle.version, battle.hidden_tanks)
            if last and last[0]() is battle and last[1] == state:
                return last[2]
            got_sync = self._hind_sync(battle, block)
            if got_sync is not None:
                _HIND_LAST[:] = [weakref.ref(battle), state, got_sync[0], got_sync[1]]
                return got_sync[0]
            ent = _HIND_MEMO.get(battle)
            if ent is not None and ent[0] == state:
                _HIND_LAST[:] = [weakref.ref(battle), state, ent[1], ent[2]]
                return ent[1]
        out: dict[Hex, tuple[tuple[int, int | None], ...]] = {}
        flat: list[tuple[int, Hex, int | None]] = []   # (tank id, hex, contribution) of every entry
        for o in battle.tanks:
            h = o.hex
            if h is None:
                continue
            x = _hindrance_of(o, block)
            if x is not False:
                out[h] = out.get(h, ()) + ((o.tank_id, x),)
                flat.append((o.tank_id, h, x))
        if type(battle) is BattleState:
            key = tuple(sorted(flat))
            _HIND_MEMO[battle] = (state, out, key)
            _HIND_LAST[:] = [weakref.ref(battle), state, out, key]
        return out

    @staticmethod
    def _hind_sync(battle: BattleState, block: bool) -> tuple[dict, tuple] | None:
        """``(table, content)`` of :meth:`_hindrances` for ``battle`` as it stands (its hidden tanks left out),
        patched from the events since the last ask instead of built from every tank (issue 14: the table is asked
        at every new version, i.e. after every MP): a tank's contribution (:func:`_hindrance_of`) reads its own
        status and ``rules_state`` only, and a tank's hex, status and ``rules_state`` change only through events
        naming it (``BattleState.state_changes``), so only the tanks listed there since are read again -- at their
        hex on the board, or for a tank hidden now (:meth:`~sim.battle.BattleState.hiding` takes it off the board
        without an event) at its hex after its last such event (``state_change_hexes``).  A table whose content
        did not change is handed out again (the same object: the LOS answers and masks keyed on it stay).
        ``None`` for a first ask while tanks are hidden (their hexes unknown here: the caller builds the table)."""
        rec = _HIND_SYNC.get(battle)
        sc = battle.state_changes
        n = len(sc)
        hidden = battle.hidden_tanks
        tanks = battle.tanks
        if rec is None:
            if hidden:
                return None
            entries: dict[int, tuple[Hex, int | None]] = {}
            for o in tanks:
                h = o.hex
                if h is not None:
                    x = _hindrance_of(o, block)
                    if x is not False:
                        entries[o.tank_id] = (h, x)
            rec = _HIND_SYNC[battle] = _HindSync(n, entries)
        elif rec.n != n:
            start = rec.n
            entries = rec.entries
            dirty = False
            hexes = battle.state_change_hexes
            nt = len(tanks)
            for tid in set(sc[start:n]):
                if not 0 <= tid < nt:
                    continue
                o = tanks[tid]
                if hidden and tid in hidden:
                    h = None
                    for i in range(n - 1, start - 1, -1):
                        if sc[i] == tid:
                            h = hexes[i][1]
                            break
                else:
                    h = o.hex
                e: tuple[Hex, int | None] | None = None
                if h is not None:
                    x = _hindrance_of(o, block)
                    if x is not False:
                        e = (h, x)
                if entries.get(tid) != e:
                    dirty = True
                    if e is None:
                        del entries[tid]
                    else:
                        entries[tid] = e
            rec.n = n
            if dirty:
                rec.table, rec.key = _hind_table(entries, ())
                rec.hidden = {}
        if not hidden:
            return rec.table, rec.key
        got = rec.hidden.get(hidden)
        if got is None:
            ents = rec.entries
            if any(tid in ents for tid in hidden):
                got = _hind_table(ents, frozenset(hidden))
            else:
                got = (rec.table, rec.key)
            if len(rec.hidden) >= 8:
                rec.hidden.clear()
            rec.hidden[hidden] = got
        return got

    def _batch_los(self, battle: BoardView, root: BattleState, ent: list[Any], view_moved: tuple[Any, ...] | None,
                   i_old: int | None, p: Hex, q: Hex, ip: int) -> tuple[bool, int]:
        """:meth:`los` of the ordered pair ``p <= q`` of cells of the LOS grid of ``ent`` (:meth:`_los_entry` of the
        battle ``root``; ``ip`` the grid index of ``p``), asked in a batch (``_shots_batch``, ``kill_odds_at``) on
        ``battle``: ``root`` itself (``view_moved`` ``None``) or a what-if view over it that places one tank
        (``view_moved`` its ``(tank, old hex, new hex)``, ``i_old`` the grid index of the old hex or ``None``).
        A line that terrain blocks is answered from the obstacle bits; on a view, a line through neither the old
        nor the new hex of the placed tank has the root's answer (kept in ``ent``'s table: worked out from this
        line's mask against the hindrance bit planes, as :meth:`_los` would), and one through either is
        :meth:`_los` of the view itself."""
        answers = ent[0]
        if view_moved is None:
            lo = answers.get((p, q))
            if lo is None:
                lo = answers[(p, q)] = self._los(root, p, q, ent)
            return lo
        g = ent[2]
        low, mask = line_mask(q[0] - p[0], q[1] - p[1], g.w)
        sh = ip + low
        if (g.obstacles >> sh) & mask:
            return (False, 0)
        old, new = view_moved[1], view_moved[2]
        for h in (old, new):
            if h is not None:
                i = i_old if h is old else g.cells.get(h)
                if i is None or (i >= sh and (mask >> (i - sh)) & 1):
                    return self._los(battle, p, q)
        lo = answers.get((p, q))
        if lo is None:
            hm = ent[1]
            if hm is None:
                hm = ent[1] = self._hind_masks(self._hindrances(root), g)
            if not (hm.any >> sh) & mask:
                lo = (True, 0)
            elif not hm.ok or (hm.block >> sh) & mask:
                lo = self._los_by_hex(root, p, q)
            else:
                hind = 0
                for j, plane in enumerate(hm.planes):
                    hind += ((plane >> sh) & mask).bit_count() << j
                lo = ((hind < 6), hind)
            answers[(p, q)] = lo
        return lo

    def _los(self, battle: BoardView, p: Hex, q: Hex, ent: list[Any] | None = None) -> tuple[bool, int]:
        """:meth:`los` of ``p <= q`` on a battle (``ent`` its entry of :meth:`_los_memo`) or a what-if view over one,
        computed: the line's interior (:func:`~sim.rules.asl.sight.line_mask`) tested
        at once against the obstacle bits of the map (:meth:`_los_grid`) and the Case R table's bits
        (:meth:`_hind_masks`: hindrance = the popcounts of its bit planes; ``ent`` an entry of :meth:`_los_memo`
        whose masks are these); a line through a blocking occupant, or ends or occupants off the grid, are read hex
        by hex (:meth:`_los_by_hex`, the definition)."""
        g = ent[2] if ent is not None else self._los_grid(battle)
        ip, iq = g.cells.get(p), g.cells.get(q)
        if ip is None or iq is None:
            return self._los_by_hex(battle, p, q)
        low, mask = line_mask(q[0] - p[0], q[1] - p[1], g.w)
        sh = ip + low
        if (g.obstacles >> sh) & mask:
            return False, 0
        hm = ent[1] if ent is not None else None
        if hm is None:
            hm = self._hind_masks(self._hindrances(battle), g)
            if ent is not None:
                ent[1] = hm
        if not (hm.any >> sh) & mask:
            return True, 0
        if not hm.ok or (hm.block >> sh) & mask:
            return self._los_by_hex(battle, p, q)
        hind = 0
        j = 0
        for plane in hm.planes:
            hind += ((plane >> sh) & mask).bit_count() << j
            j += 1
        return (hind < 6), hind

    def _los_by_hex(self, battle: BoardView, p: Hex, q: Hex) -> tuple[bool, int]:
        """:meth:`_los` read hex by hex along :func:`~sim.hexgrid.hex_line` (the definition; in line order, a
        hex's occupants in id order, so a blocking occupant ends the count where it stands)."""
        line = self._los_line(battle, p, q)
        if line is None:
            return False, 0
        return self._hind_along(self._hindrances(battle), line)

    @staticmethod
    def _hind_along(table: Mapping[Hex, tuple[tuple[int, int | None], ...]], line: tuple[Hex, ...]
                    ) -> tuple[bool, int]:
        """``(clear, hindrance)`` of an unblocked line's interior ``line`` through the Case R ``table``, hex by hex
        in line order (a hex's occupants in id order; a blocking one ends the count where it stands)."""
        if not table or table.keys().isdisjoint(line):   # no hindering occupant on the line (the common case)
            return True, 0
        hind = 0
        for h in line:
            got = table.get(h)
            if got is not None:
                for _tid, x in got:
                    if x is None:
                        return False, hind
                    hind += x
        return (hind < 6), hind

    # --- shots (asl.md 6) ---------------------------------------------------------------------------------------
    def shots_read_footprint_occupants(self, battle: BoardView) -> bool:
        """Whether a shot between two tanks reads nothing of the board but those two tanks (hex, facing, turret
        facing, status, ``rules_state``), :meth:`lasting_rules_key`, the options, the terrain and the occupants of
        the hexes of :meth:`shot_footprint` (the LOS line, whose live AFVs and wrecks hinder, asl.md 6.1): always
        true.  Caches kept across versions (:class:`agents.observation.Observation`'s threat) then drop an answer
        when one of its two tanks changed, when any tank that changed stood or now stands on its footprint
        (``BattleState.state_change_hexes``), when a tank leaves or joins a side's hidden set on it, and redo
        everything when the terrain changes."""
        return True

    def lasting_rules_key(self, battle: BoardView, target: int) -> tuple[Any, ...] | None:
        """What every shot at own tank ``target`` by an enemy reads of ``battle.rules_state``: the phase, the mover,
        the ATTACKER, ``free_turn`` and, only where a shot may read it, ``los_mp`` (a Bounding First shot by an
        enemy mover reads the target's LOS MP, C6.11: so in the MPh when the mover is an enemy of ``target``;
        :meth:`_shot_pre`).  Everything else a shot reads of the battle-level state is none
        (:data:`_SHOT_BATTLE_FIELDS`).  ``None`` when answers about ``target`` are not worth keeping across
        versions: ``target`` is the mover of the MPh (every MP it spends is an event that changes it, and the LOS MP
        a Defensive First shot at it reads: issue 14 measured no answer about a mover asked again before it
        changed).  Raises nothing; a value may be unhashable (the caller checks)."""
        brs = battle.rules_state
        phase = brs.get("phase")
        mover = brs.get("mover")
        los_mp = None
        if phase == "MPh" and mover is not None:
            if mover == target:
                return None
            tanks = battle.tanks
            if (isinstance(mover, int) and 0 <= mover < len(tanks) and 0 <= target < len(tanks)
                    and tanks[mover].side != tanks[target].side):
                los_mp = brs.get("los_mp")
        return (phase, mover, brs.get("attacker"), brs.get("free_turn"), los_mp)

    def shot_footprint(self, battle: BoardView, shot: Shot | Illegal | None, firer_hex: Hex, firer_facing: int,
                       target_hex: Hex) -> Callable[[Hex], bool] | None:
        """For the answer ``shot`` (unread: ``None`` is fine) of a shot from ``firer_hex`` at ``target_hex``:
        ``touches(h)``, true for every
        hex whose occupants or obstacles could change that answer: the hexes of the LOS line (:meth:`los`:
        :func:`~sim.hexgrid.hex_line` from the lower to the higher hex name), both ends included (asl.md 6.1:
        only the line's interior hinders; the ends are kept as a margin).  Raises nothing.

        Speed: the line is traced only for a hex asked that lies between the two ends (every hex of a hex line
        ``p`` -> ``q`` is ``i`` hexes from ``p`` and ``distance(p, q) - i`` from ``q``), most answers never being
        asked at all."""
        a, c = firer_hex, target_hex
        n = distance(a, c)

        def touches(h: Hex) -> bool:
            return distance(a, h) + distance(h, c) == n and h in _line_hexes(a, c)
        return touches

    def _shot_kind(self, battle: BoardView, shooter: int) -> str:
        phase = battle.rules_state.get("phase")
        if phase == "MPh":
            if battle.rules_state.get("mover") == shooter:
                return "bounding_first"
            return "defensive_first" if battle.tank(shooter).side != battle.rules_state.get("attacker") else "none"
        return _PHASE_SHOT_KIND.get(phase, "none")

    def shot(self, battle: BoardView, shooter: int, target: int | Hex, fire: Action | None = None,
             as_if: Hypo | None = None) -> Shot | Illegal:
        """The shot ``shooter`` -> ``target`` now (asl.md 6.1), or from the hypothetical ``as_if`` position, as a
        :class:`~sim.rules.base.Shot` whose ``key`` is the :class:`~sim.rules.asl.odds.ShotKey`; or why not.

        The phase context (Prep, Defensive First, Bounding First, Final, Advancing Fire) comes from the battle's
        ``phase`` / ``mover`` state; the fire-marker limits of section 4 are the sequence of play's business.
        ``fire.ammo``: ``None`` = AP (C8.1), a type name, or ``"best"`` (DECISION: the available type with the
        highest exact kill odds, AP first on a tie).  ``as_if.moved`` makes it an AFPh shot after moving.
        ``target`` may be anything a :class:`Fire` names: a hex or a bad id is ``Illegal``."""
        if as_if is not None:
            view = HypoView(battle, shooter, as_hex(as_if.hex), int(as_if.facing))
            return self._shot(view, shooter, target, fire, "hypo_moved" if as_if.moved else None)
        return self._shot(battle, shooter, target, fire, None)

    def _shot(self, battle: BoardView, shooter: int, target: int | Hex, fire: Action | None, kind: str | None
              ) -> Shot | Illegal:
        """:meth:`_shot_now`, kept per battle in a table keyed on everything it reads (:func:`_shot_memo_key`)."""
        if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(battle.tanks):
            return Illegal("target is not an AFV")
        tanks = battle.tanks
        s, t = tanks[shooter], tanks[target]
        if t.side == s.side or t.hex is None or s.hex is None or not t.alive:
            return self._shot_now(battle, shooter, target, fire, kind)
        # the refusals _shot_now makes first, in its order, answered without the table (most asks end here)
        why = able_to_fire(s)
        if why:
            return Illegal(f"firer cannot fire: {why}")
        ammo = fire.ammo if isinstance(fire, Fire) and fire.ammo else "AP"
        if ammo == "best":
            return self._shot_now(battle, shooter, target, fire, kind)
        los = self.los(battle, s.hex, t.hex)
        if not los[0]:
            return Illegal("no LOS")
        got = _shot_memo_key(battle, s, t, ammo, kind, los)
        if got is None:
            return self._shot_now(battle, shooter, target, fire, kind, los)
        smemo, key = got
        memo = smemo.shots
        try:
            return memo[key]
        except KeyError:
            pass
        # a miss: the part of the shot that does not read the target's place or the LOS is kept per key[:10]
        # and the terrain version (what _shot_pre reads), shared by the asks at a tank's many what-if places
        pre_tab = smemo.pre
        pre_key = key[:10] + key[15:]
        pre = pre_tab.get(pre_key)
        if pre is None:
            pre = pre_tab[pre_key] = self._shot_pre(battle, s, t, ammo, kind)
        v = memo[key] = self._shot_geometry(battle, s, t, ammo, los[1], pre)
        return v

    def shots(self, battle: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None
              ) -> list[Shot | Illegal]:
        """``[shot(battle, shooter, t, None, as_if) for t in targets]`` (the same answers in that order), the
        firer's part done once (:meth:`_shots_batch`; one what-if view for all when ``as_if`` is given)."""
        place: tuple | None = None
        kind = None
        if as_if is not None:
            place = (as_hex(as_if.hex), int(as_if.facing))
            kind = "hypo_moved" if as_if.moved else None
        # kept per battle version (the batch memo of _shot_table) when asked of the battle itself or of a view over
        # it: the answers read the battle (its tanks at this version, which are hidden, the terrain's version) and
        # the placed firer (its id, hex and facing: the view copies the rest from the battle); exact int ids only
        # (True == 1 as a key, but not as a target)
        memo: _ShotMemo | None = None
        batch_key: tuple = ()
        targets = list(targets)
        if type(battle) is BattleState and type(shooter) is int and all(type(x) is int for x in targets):
            memo = _shot_table(battle)
            if memo is not None:
                batch_key = ("shots", shooter, place, kind, tuple(targets), battle.hidden_tanks,
                             battle.map.terrain_version)
                done = memo.batches.get(batch_key)
                if done is not None:
                    return list(done)
        board: BoardView = battle if place is None else HypoView(battle, shooter, place[0], place[1])
        got = self._shots_batch(board, [(shooter, t) for t in targets], kind)
        if memo is not None and memo.version == battle.version and len(memo.batches) < _BATCH_MEMO_SIZE:
            memo.batches[batch_key] = tuple(got)
        return got

    def shots_at(self, battle: BoardView, shooters: Iterable[int], target: int) -> list[Shot | Illegal]:
        """``[shot(battle, s, target) for s in shooters]`` (the same answers in that order), the target's part
        done once (:meth:`_shots_batch`)."""
        return self._shots_batch(battle, [(s, target) for s in shooters], None)

    def kill_odds_at(self, battle: BoardView, shooters: Iterable[int], target: int) -> list[Fraction | None]:
        """``[None if illegal else odds(sh.key).p_kill for sh in shots_at(battle, shooters, target)]`` (the same
        exact values in that order), without making the shots where the shot table does not hold them
        (:meth:`_kill_at`): what a side's threat sums (:meth:`agents.observation.Observation.threat`)."""
        shooters = list(shooters)
        fast = self._kill_odds_fast(battle, shooters, target)
        if fast is not None:
            return fast
        odds = self.odds
        return [None if isinstance(x, Illegal) else odds(x.key).p_kill
                for x in self._shots_batch(battle, [(s, target) for s in shooters], None)]

    def _kill_odds_fast(self, battle: BoardView, shooters: list[int], target: int) -> list[Fraction | None] | None:
        """:meth:`kill_odds_at` on a battle or on one what-if view over a battle (what a threat asks: the target
        placed), target a live tank on the board; ``None`` for any other ask (the caller then takes the shots).

        The loop of :meth:`_shots_batch` for one target: the same refusals, LOS (the battle's answers table, the
        view's placed tank's two hexes checked on the line) and :meth:`_shot_pre` table, the target's part read
        once, and the kill odds (:meth:`_kill_at`) kept in the shot table's ``kills``:
        ``{(target, its part, hex, VCA, TCA, battle part, terrain version): {(shooter, its part, hex, VCA, TCA,
        hindrance): kill odds or None}}`` -- together the key of :func:`_shot_memo_key` for an AP shot of the
        ``kind`` of the phase with a clear LOS, so everything the answer reads (at most :data:`_KILL_TARGETS`
        targets' tables, emptied when full, each emptied at :data:`_SHOT_MEMO_SIZE`).  A shooter the view places,
        off the board, friendly or on the target's hex is asked of :meth:`_shot`."""
        view: HypoView | None = None
        if type(battle) is HypoView and isinstance(battle, HypoView):   # (isinstance: for the type checker)
            view = battle
        root = battle if view is None else view.base
        if type(root) is not BattleState or not isinstance(root, BattleState) or type(target) is not int:
            return None
        tanks = battle.tanks
        n = len(tanks)
        if not 0 <= target < n:
            return None
        t = tanks[target]
        th = t.hex
        if th is None or type(th) is not Hex or not t.alive:
            return None
        view_moved = None
        try:
            memo = _shot_table(root)
            if memo is None:
                return None
            tpid = None
            if view is not None:
                view_moved = view.moved
                if view_moved[0] == target:
                    tpid = memo.views.get(view)
                    if tpid is None:
                        tpid = memo.views[view] = _tank_part(memo, t)
            if tpid is None:
                tpid = memo.parts.get(target)
                if tpid is None:
                    tpid = memo.parts[target] = _tank_part(memo, t)
        except TypeError:
            return None
        ent = self._los_entry(root)
        g = ent[2]
        idx = g.cells
        if th not in idx:
            return None
        i_old = None
        if view_moved is not None and view_moved[1] is not None:
            i_old = idx.get(view_moved[1])
        bpart = memo.battle_part
        tv = root.map.terrain_version
        kills = memo.kills
        tkey = (target, tpid, th, t.facing, t.turret_facing, bpart, tv)
        tab = kills.get(tkey)
        if tab is None:
            if len(kills) >= _KILL_TARGETS or len(memo.kill_ids) >= _SHOT_MEMO_SIZE:
                kills.clear()
                memo.kill_ids.clear()
                memo.firers.clear()
            tab = kills[tkey] = {}
        elif len(tab) >= _SHOT_MEMO_SIZE:
            tab.clear()
        # the shooters' parts that do not read the target's place (kept per battle version, target and part,
        # hidden tanks, placed tank, terrain version and shooter list: everything they read)
        shooters_t = tuple(shooters)
        fkey = (target, tpid, view_moved[0] if view_moved is not None else None, root.hidden_tanks, tv, shooters_t)
        firers = memo.firers
        recs = firers.get(fkey)
        if recs is None:
            if len(firers) >= _KILL_TARGETS:
                firers.clear()
            recs = firers[fkey] = self._kill_firers(battle, memo, t, tpid, view_moved, shooters_t)
        pre_tab = memo.pre
        out: list[Fraction | None] = []
        tg = None   # (the target's part of the geometry, on the first miss: _kill_target)
        for rec in recs:
            sid = rec[0]
            sh_ = rec[1]
            if sh_ is None or sh_ == th:
                x = self._shot(battle, sid, target, None, None)
                out.append(None if isinstance(x, Illegal) else self.odds(x.key).p_kill)
                continue
            if rec[2]:   # cannot fire
                out.append(None)
                continue
            # los(battle, s.hex, t.hex)
            p, q = (sh_, th) if sh_ <= th else (th, sh_)
            ip = idx.get(p)
            if ip is None or q not in idx:
                lo = self.los(battle, sh_, th)
            else:
                lo = self._batch_los(battle, root, ent, view_moved, i_old, p, q, ip)
            if not lo[0]:
                out.append(None)
                continue
            kid = rec[3]
            if kid is None:   # (an unhashable state value: no table)
                x = self._shot_now(battle, sid, target, None, None, lo)
                out.append(None if isinstance(x, Illegal) else self.odds(x.key).p_kill)
                continue
            ikey = (kid, lo[1])
            pk = tab.get(ikey, _NO_KILL)
            if pk is _NO_KILL:
                pre = rec[5]
                if pre is None:
                    pre_key = rec[4]
                    pre = pre_tab.get(pre_key)
                    if pre is None:
                        if len(pre_tab) >= _SHOT_MEMO_SIZE:
                            pre_tab.clear()
                        pre = pre_tab[pre_key] = self._shot_pre(battle, tanks[sid], t, "AP", None)
                    rec[5] = pre
                if tg is None:
                    tg = self._kill_target(root, t)
                pk = tab[ikey] = self._kill_at(sh_, lo[1], pre, tg)
            out.append(pk)
        return out

    def _kill_firers(self, battle: BoardView, memo: _ShotMemo, t: TankState, tpid: int,
                     view_moved: tuple[Any, ...] | None, shooters: tuple[Any, ...]) -> list[list[Any]]:
        """Per shooter of :meth:`_kill_odds_fast` (in order), what its ask reads of the shooter alone, at the
        target ``t`` (its interned part ``tpid``) on ``battle`` (a battle or a view placing one tank,
        ``view_moved``): ``[id, hex, why it cannot fire, kill id, pre key, pre]`` -- hex ``None`` for an ask
        :meth:`_shot` answers (no such tank, off the board, friendly, the view's placed tank); the
        :func:`able_to_fire` answer; the id in ``memo.kill_ids`` of its ``(id, part, hex, VCA, TCA)`` (``None``:
        an unhashable state value), the key of its :meth:`_shot_pre` answer in ``memo.pre`` and that answer
        (``None`` until a miss needs it).  Reads the shooters' hexes, facings, status and ``rules_state``, the
        battle part and terrain version through the key: all fixed for a battle version, a hidden set and a
        view's placed tank."""
        tanks = battle.tanks
        n = len(tanks)
        tside = t.side
        target = t.tank_id
        vm0 = view_moved[0] if view_moved is not None else None
        parts = memo.parts
        able = memo.able
        kill_ids = memo.kill_ids
        bpart = memo.battle_part
        tv = battle.map.terrain_version
        no = "?"
        recs: list[list[Any]] = []
        for sid in shooters:
            s = tanks[sid] if type(sid) is int and 0 <= sid < n else None
            sh_ = s.hex if s is not None else None
            if s is None or sh_ is None or type(sh_) is not Hex or s.side == tside or sid == vm0:
                recs.append([sid, None, None, None, None, None])
                continue
            why = able.get(sid, no)
            if why is no:
                why = able[sid] = able_to_fire(s)
            if why:
                recs.append([sid, sh_, why, None, None, None])
                continue
            spid = parts.get(sid)
            if spid is None:
                try:
                    spid = parts[sid] = _tank_part(memo, s)
                except TypeError:
                    recs.append([sid, sh_, None, None, None, None])
                    continue
            pfx = (sid, spid, sh_, s.facing, s.turret_facing)
            kid = kill_ids.get(pfx)
            if kid is None:
                kid = kill_ids[pfx] = len(kill_ids)
            pre_key = (sid, target, "AP", None, spid, tpid, bpart, sh_, s.facing, s.turret_facing, tv)
            recs.append([sid, sh_, None, kid, pre_key, None])
        return recs

    def _kill_target(self, battle: BoardView, t: TankState) -> tuple[Hex, int, int, int, tuple | None]:
        """What :meth:`_geometry` reads of the target ``t`` (on the board ``battle``'s map), the same for every
        firer: ``(hex, VCA, TCA or else VCA, TEM of its hex, its hull-down hexsides or None)``, the hexsides
        ``tuple(rules_state["hull_down"])`` where its ``hd_hex`` is its hex, else ``None`` (never hull-down)."""
        th = t.hex
        assert th is not None
        trs = t.rules_state
        hd_hex = trs.get("hd_hex")
        hd = tuple(trs.get("hull_down", ())) if hd_hex and tuple(th) == tuple(hd_hex) else None
        return (th, t.facing, t.turret_facing if t.turret_facing is not None else t.facing,
                self.terrain(battle, th).tem, hd)

    def _kill_at(self, sh: Hex, hind: int, pre: tuple | Illegal, tg: tuple[Hex, int, int, int, tuple | None]
                 ) -> Fraction | None:
        """``odds(shot.key).p_kill`` of :meth:`_shot_geometry`'s answer (``None`` for a refusal, whichever) for a
        firer on hex ``sh`` (:meth:`_shot_pre`'s answer ``pre`` for it and the target, the LOS hindrance ``hind``)
        at the target of :meth:`_kill_target` ``tg``, without making the shot: :meth:`_geometry`'s steps, the
        target's reads done once per batch, give the same ``sub``, whose kill odds are kept per geometry in the
        :class:`_KeyFamily` (``kills``), as its keys are."""
        if isinstance(pre, Illegal):
            return None
        kind, tv, turret, vertex, basic, free_turn, stuck, fam = (pre[0], pre[2], pre[3], pre[4], pre[7], pre[16],
                                                                 pre[17], pre[18])
        th, t_facing, tv_vertex, tem, hd = tg
        af = tv.af
        rng, turns, _new_vertex, aspect, turret_aspect = _pair_geometry(
            th[0] - sh[0], th[1] - sh[1], vertex, t_facing, tv_vertex,
            af["hull_front"], af["hull_side"], af["turret_front"], af["turret_side"])
        ca_change = 0
        if turns:
            if kind == "bounding_first":
                if not (turret and free_turn):
                    return None
            elif turret or not stuck:
                ca_change = turns
            else:
                return None
        if isinstance(basic, Illegal):
            return None
        hull_down = bool(hull_down_hexsides(th, sh, hd)) if rng > 0 and hd is not None else False
        sub = (rng, ca_change, tem, hind, hull_down, aspect, turret_aspect)
        kills = fam.kills
        pk = kills.get(sub, _NO_KILL)
        if pk is _NO_KILL:
            key = fam.keys.get(sub)
            if key is None:
                key = fam.make(sub)
            pk = None if isinstance(key, str) else self.odds(key).p_kill
            if len(kills) >= _KEY_FAMILY_SIZE:
                kills.clear()
            kills[sub] = pk
        return pk

    def _shots_batch(self, battle: BoardView, pairs: list[tuple[int, Any]], kind: str | None
                     ) -> list[Shot | Illegal]:
        """``[_shot(battle, s, t, None, kind) for s, t in pairs]``, the same answers in that order, with what
        :meth:`_shot` and :func:`_shot_memo_key` read of one tank or of the board asked once per batch: the table
        (:class:`_ShotMemo`) and the battle part, each tank's interned part (a view's placed tank from the view's
        copy, as :func:`_shot_memo_key` takes it), each firer's :func:`able_to_fire`, and the LOS entry of the base
        battle (:meth:`los`, inlined for a battle and for a view over one).  Nothing here changes the board, so
        these hold for the whole batch; a table that fills up mid-batch is handed to :meth:`_shot` (which empties
        it), as is every ask this path does not take (bad or friendly targets, off-board tanks, another kind of
        board)."""
        out: list[Shot | Illegal] = []
        if not pairs:
            return out
        root = battle
        while type(root) is HypoView:
            root = root.base
        if type(root) is not BattleState:
            return [self._shot(battle, s, t, None, kind) for s, t in pairs]
        if not isinstance(root, BattleState):   # (for the type checker: the test above)
            return [self._shot(battle, s, t, None, kind) for s, t in pairs]
        state_root: BattleState = root
        # the table and the battle's part, as _shot_memo_key sets them up
        try:
            memo = _shot_table(state_root)
            if memo is None:   # (not reached: the root is a battle)
                return [self._shot(battle, s, t, None, kind) for s, t in pairs]
            # the tanks the views place (outermost first, as _shot_memo_key walks them): their parts
            placed: dict[int, int] = {}
            b = battle
            while type(b) is HypoView:
                moved = b.moved[0]
                if moved not in placed:
                    pid = memo.views.get(b)
                    if pid is None:
                        pid = memo.views[b] = _tank_part(memo, b.tanks[moved])
                    placed[moved] = pid
                b = b.base
        except TypeError:
            return [self._shot(battle, s, t, None, kind) for s, t in pairs]
        # the LOS: a battle's answers table, or a view over the battle itself (one tank placed) inlined
        view_moved = None
        inline = True
        if type(battle) is HypoView and battle.base is root:
            view_moved = battle.moved
        elif battle is not root:
            inline = False   # a view over a view: los() itself
        ent: list[Any] | None = None
        if inline:
            ent = self._los_entry(state_root)
        tanks = battle.tanks
        n = len(tanks)
        parts = memo.parts
        shots = memo.shots
        pre_tab = memo.pre
        bpart = memo.battle_part
        tv = root.map.terrain_version
        able = memo.able   # the battle's tanks' answers (at this version)
        able_here: dict[int, str | None] = {}   # and the placed tanks' (in this batch)
        no = "?"
        pids: dict[int, int | None] = {}   # each tank's interned part in this batch (None: unhashable state)

        def part_of(tank_id: int, tank: TankState) -> int | None:
            pid = parts.get(tank_id)
            if pid is None:
                try:
                    pid = parts[tank_id] = _tank_part(memo, tank)
                except TypeError:
                    pid = None
            pids[tank_id] = pid
            return pid

        shot = self._shot
        los = self.los
        i_old = None   # the grid index of the hex the view's tank left (None: off the grid, or no such hex)
        if ent is not None:
            idx = ent[2].cells
            if view_moved is not None and view_moved[1] is not None:
                i_old = idx.get(view_moved[1])
        for sid, tid in pairs:
            if len(shots) >= _SHOT_MEMO_SIZE or isinstance(tid, bool) or not isinstance(tid, int) \
                    or not 0 <= tid < n:
                out.append(shot(battle, sid, tid, None, kind))
                continue
            s, t = tanks[sid], tanks[tid]
            sh_, th = s.hex, t.hex
            if t.side == s.side or th is None or sh_ is None or not t.alive:
                out.append(shot(battle, sid, tid, None, kind))
                continue
            fire_tab = able_here if sid in placed else able
            why = fire_tab.get(sid, no)
            if why is no:
                why = fire_tab[sid] = able_to_fire(s)
            if why:
                out.append(Illegal(f"firer cannot fire: {why}"))
                continue
            # los(battle, s.hex, t.hex)
            if ent is None or sh_ == th or type(sh_) is not Hex or type(th) is not Hex:
                lo = los(battle, sh_, th)
            else:
                p, q = (sh_, th) if sh_ <= th else (th, sh_)
                ip = idx.get(p)
                if ip is None or q not in idx:
                    lo = los(battle, sh_, th)
                else:
                    lo = self._batch_los(battle, state_root, ent, view_moved, i_old, p, q, ip)
            if not lo[0]:
                out.append(Illegal("no LOS"))
                continue
            spid = placed.get(sid)
            if spid is None:
                spid = pids[sid] if sid in pids else part_of(sid, s)
            tpid = placed.get(tid)
            if tpid is None:
                tpid = pids[tid] if tid in pids else part_of(tid, t)
            if spid is None or tpid is None:
                out.append(self._shot_now(battle, sid, tid, None, kind, lo))
                continue
            key = (sid, tid, "AP", kind, spid, tpid, bpart, sh_, s.facing, s.turret_facing, th, t.facing,
                   t.turret_facing, lo[0], lo[1], tv)
            got = shots.get(key)
            if got is None:
                pre_key = key[:10] + key[15:]
                pre = pre_tab.get(pre_key)
                if pre is None:
                    pre = pre_tab[pre_key] = self._shot_pre(battle, s, t, "AP", kind)
                # (the root for the board: the geometry reads its map and rules_state, which a view reads through)
                got = shots[key] = self._shot_geometry(root, s, t, "AP", lo[1], pre)
            out.append(got)
        return out

    def _shot_now(self, battle: BoardView, shooter: int, target: int, fire: Action | None, kind: str | None,
                  los: tuple[bool, int] | None = None) -> Shot | Illegal:
        """The shot ``shooter`` -> ``target`` (a tank id) on ``battle`` now, computed (:meth:`shot`); ``los`` is
        :meth:`los` of the two hexes on ``battle`` if the caller has it."""
        s, t = battle.tank(shooter), battle.tank(target)
        if t.side == s.side:
            return Illegal("target is a friendly AFV")
        if not t.alive or t.hex is None:
            return Illegal("target is not a live AFV (wreck, abandoned or gone)")
        why = able_to_fire(s)
        if why:
            return Illegal(f"firer cannot fire: {why}")
        assert s.hex is not None  # able_to_fire() refused a firer off the board
        ammo = fire.ammo if isinstance(fire, Fire) and fire.ammo else "AP"
        if ammo == "best":
            best = None
            for a in s.vehicle.ammo_types():
                sh = self._shot(battle, shooter, target, Fire(shooter, target, (), a), kind)
                if isinstance(sh, Shot):
                    pk = shot_odds(sh.key)["p_kill"]
                    if best is None or pk > best[0]:
                        best = (pk, sh)
            return best[1] if best else Illegal("no ammunition can be fired")
        clear, hind = self.los(battle, s.hex, t.hex) if los is None else los
        if not clear:
            return Illegal("no LOS")
        return self._shot_geometry(battle, s, t, ammo, hind, self._shot_pre(battle, s, t, ammo, kind))

    def _shot_pre(self, battle: BoardView, s: TankState, t: TankState, ammo: str, kind: str | None
                  ) -> tuple | Illegal:
        """The part of :meth:`_shot_now` past the LOS check that does not read the target's hex, VCA or TCA, nor
        the LOS: a tuple for :meth:`_shot_geometry`, or the refusal it makes first.  Reads the two vehicles, the
        ammunition, the ``kind`` given, the firer's hex (its terrain), VCA and TCA, the two tanks' status and
        :data:`_SHOT_TANK_FIELDS`, the battle's :data:`_SHOT_BATTLE_FIELDS` and the options -- exactly what
        :meth:`_shot` keys its table of these on."""
        assert s.hex is not None
        shooter, target = s.tank_id, t.tank_id
        kind = kind or self._shot_kind(battle, shooter)
        veh, tv = s.vehicle, t.vehicle
        if ammo not in veh.tk_key:
            return Illegal(f"{veh.name} cannot fire {ammo}")
        rs = s.rules_state
        depletion = None
        if ammo not in ("AP", "HE"):
            left = dict(rs.get("ammo_left", ()))
            if ammo not in left:
                return Illegal(f"no {ammo} aboard")
            depletion = left[ammo]
        turret = self.has_turret(veh)
        vertex = s.turret_facing if turret and s.turret_facing is not None else s.facing
        if kind == "bounding_first":
            fm = "motion" if rs.get("started") else "bounding_first"
        elif kind == "advancing":
            # Case B, or Case C after entering a new hex or after Bounding First Fire with ROF kept (D3.32)
            moved = rs.get("entered") or rs.get("bff_fired")
            fm = "motion" if rs.get("motion") else ("bounding_afph" if moved else "afph")
        elif kind == "hypo_moved":
            fm = "bounding_afph"
        else:
            fm = "motion" if rs.get("motion") else "none"
        tstate = target_state_of(t)
        trs = t.rules_state
        acq = rs.get("acq")
        if fm in ("bounding_first", "motion") and not veh.gyro:
            acq = None          # a Bounding First or Motion shot does not use Acquisition (C6.55)
        basic = _basic_tk(veh, ammo)
        firer_obstacle = self.terrain(battle, s.hex).obstacle
        firer_los_mp = target_los_mp = None
        if kind == "bounding_first" or kind == "defensive_first":
            los_tab = {e: (mp, start) for e, mp, start in battle.rules_state.get("los_mp", ())}
            mover = battle.rules_state.get("mover")
            if kind == "bounding_first" and target in los_tab:
                firer_los_mp = Fraction(los_tab[target][0], HALF)
            if kind == "defensive_first" and target == mover and tstate != "stationary" and shooter in los_tab:
                mp, start = los_tab[shooter]
                target_los_mp = 99 if start else Fraction(mp, HALF)
        acquisition = acq[1] if acq and acq[0] == target else 0
        firer_plus1 = bool(rs.get("plus1"))
        target_plus1 = bool(trs.get("plus1"))
        target_shocked = bool(trs.get("shocked") or trs.get("uk") or trs.get("stunned"))
        free_turn = bool(battle.rules_state.get("free_turn"))
        stuck = bool(rs.get("immobilized") or rs.get("bogged"))
        fam = None
        if not isinstance(basic, Illegal):
            values = self._key_values(battle, veh, tv, ammo, basic, fm, firer_obstacle, firer_plus1, tstate,
                                      acquisition, target_plus1, target_shocked, depletion, firer_los_mp,
                                      target_los_mp, (None,) * 7)
            fam = _KEY_FAMILIES.get(values)
            if fam is None:
                if len(_KEY_FAMILIES) >= _KEY_FAMILIES_SIZE:
                    _KEY_FAMILIES.clear()
                fam = _KEY_FAMILIES[values] = _KeyFamily(values)
        return (kind, veh, tv, turret, vertex, fm, tstate, basic, firer_obstacle, firer_los_mp, target_los_mp,
                acquisition, firer_plus1, target_plus1, target_shocked, depletion, free_turn, stuck, fam)

    def _shot_geometry(self, battle: BoardView, s: TankState, t: TankState, ammo: str, hind: int,
                       pre: tuple | Illegal) -> Shot | Illegal:
        """The rest of :meth:`_shot_now`: the shot from :meth:`_shot_pre`'s answer ``pre`` (for these two tanks,
        ``ammo`` and the board) with the target's hex, VCA and TCA and the LOS hindrance ``hind``."""
        got = self._geometry(battle, s, t, hind, pre)
        if isinstance(got, Illegal):
            return got
        fam, sub, turn_to, pivot_to = got
        key = fam.keys.get(sub)
        if key is None:
            key = fam.make(sub)
        if isinstance(key, str):
            return Illegal(key)
        rng, _ca, _tem, _hind, hull_down, aspect, turret_aspect = sub
        info = {"range": rng, "kind": pre[0], "ammo": ammo, "turn_to": turn_to, "pivot_to": pivot_to,
                "hindrance": hind, "turret_face": turret_aspect if rng > 0 else None, "hull_down": hull_down,
                "phase": battle.rules_state.get("phase")}
        return _new_shot(s.tank_id, t.tank_id, key, aspect if rng > 0 else None, info)

    def _geometry(self, battle: BoardView, s: TankState, t: TankState, hind: int, pre: tuple | Illegal
                  ) -> tuple[_KeyFamily, tuple, int | None, int | None] | Illegal:
        """The part of :meth:`_shot_geometry` that reads the target's hex, VCA and TCA and the hindrance ``hind``:
        ``(family, sub, turn_to, pivot_to)`` -- the :class:`_KeyFamily` of ``pre``, the seven geometric values of
        the key, the TCA or VCA the shot turns to --, or the refusal it makes (``pre``'s own, a Case A the shot
        cannot pay, no basic TK number)."""
        if isinstance(pre, Illegal):
            return pre
        (kind, veh, tv, turret, vertex, fm, tstate, basic, firer_obstacle, firer_los_mp, target_los_mp,
         acquisition, firer_plus1, target_plus1, target_shocked, depletion, free_turn, stuck, fam) = pre
        assert s.hex is not None and t.hex is not None
        af = tv.af
        tv_vertex = t.turret_facing if t.turret_facing is not None else t.facing
        rng, turns, new_vertex, aspect, turret_aspect = _pair_geometry(
            t.hex[0] - s.hex[0], t.hex[1] - s.hex[1], vertex, t.facing, tv_vertex,
            af["hull_front"], af["hull_side"], af["turret_front"], af["turret_side"])
        turn_to = pivot_to = None
        ca_change = 0
        if turns:
            if kind == "bounding_first":
                if turret and free_turn:
                    turn_to = new_vertex
                else:
                    return Illegal("target outside the current CA: Bounding First Fire pays no Case A (C5.13)")
            elif turret:
                turn_to, ca_change = new_vertex, turns
            else:
                if stuck:
                    return Illegal("an NT firer cannot pivot while immobilized or bogged (D8.1)")
                pivot_to, ca_change = new_vertex, turns
        if isinstance(basic, Illegal):
            return basic
        trs = t.rules_state
        tem = self.terrain(battle, t.hex).tem
        hull_down = False
        if rng > 0:
            hd_hex = trs.get("hd_hex")
            hull_down = bool(hd_hex and tuple(t.hex) == tuple(hd_hex)
                             and hull_down_hexsides(t.hex, s.hex, tuple(trs.get("hull_down", ()))))
        # The ShotKey of these values is built once per distinct set: every other parameter is a value of the two
        # vehicles, the ammunition or the options (asl.md 10.1).  The values that are not part of ``pre`` (the
        # ones read from the two hexes, the facings and the LOS) key the table of the _KeyFamily ``pre`` carries
        # (the family of every shot with pre's other values, shared by all firers, targets and battles).
        return fam, (rng, ca_change, tem, hind, hull_down, aspect, turret_aspect), turn_to, pivot_to

    @staticmethod
    def _key_values(battle: BoardView, veh: asl_tables.Vehicle, tv: asl_tables.Vehicle, ammo: str, basic: int,
                    fm: str, firer_obstacle: Any, firer_plus1: bool, tstate: str, acquisition: int,
                    target_plus1: bool, target_shocked: bool, depletion: Any, firer_los_mp: Any, target_los_mp: Any,
                    sub: tuple) -> tuple[Any, ...]:
        """The values :func:`_shot_key` takes for a board shot (:meth:`_shot_geometry`'s, ``sub`` the geometric
        ones, at :data:`_SUB_AT`)."""
        rng, ca_change, tem, hind, hull_down, aspect, turret_aspect = sub
        opts = battle.options
        af = tv.af
        memo_key = (veh.gun, veh.th_colour, ammo, basic, rng, veh.turret_type, ca_change, firer_obstacle, fm,
                    veh.gyro, firer_plus1, tstate, acquisition, tv.size, tem, hind, af["hull_front"],
                    af["hull_side"], af["turret_front"], af["turret_side"], veh.rof, veh.breakdown,
                    opts.multiple_hits, tv.cs_red, target_plus1, target_shocked, opts.malfunction,
                    opts.red_cs_burn_needs_kill, opts.multiple_hit_preference, veh.nationality, depletion,
                    opts.crew_checks, tv.cs, tv.crew_morale, hull_down, aspect, turret_aspect, firer_los_mp,
                    target_los_mp)
        return memo_key

    def odds(self, key: Hashable | Mapping[str, Any]) -> Odds:
        """Exact odds of a :class:`~sim.rules.asl.odds.ShotKey` (cached, staged; asl.md 10), or of its odds
        parameters (a mapping or ``(name, value)`` pairs, as logged).  Raises :class:`~sim.rules.base.CaseError`
        for malformed parameters, ``TypeError`` for a key that is neither."""
        got = _ODDS_BY_ID.get(id(key))
        if got is not None and got[0] is key:
            return got[1]
        if isinstance(key, ShotKey):
            shot_key = key
        elif isinstance(key, Iterable):
            shot_key = parse_params(dict(key))
        else:
            raise TypeError(f"asl odds take a ShotKey or its parameters, not {type(key).__name__}")
        v = shot_odds(shot_key)
        odds = Odds(p_hit=v["p_hit"], p_kill=v["p_kill"], values=v)
        if key is shot_key:
            if len(_ODDS_BY_ID) >= _ODDS_BY_ID_SIZE:
                _ODDS_BY_ID.clear()
            _ODDS_BY_ID[id(key)] = (key, odds)
        return odds

    def shot_params(self, battle: BoardView, shooter: int, target: int) -> dict[str, Any] | Illegal:
        """The odds parameters (asl.md 10.1) of ``shooter`` firing at ``target`` on the board now."""
        sh = self.shot(battle, shooter, target)
        if isinstance(sh, Illegal):
            return sh
        return _asl_key(sh).as_params()

    def resolve(self, battle: Battle, shot: Shot, dice: DiceSource, reaction: bool = False) -> dict[str, Any]:
        """Roll ``shot`` through :func:`~sim.rules.asl.odds.resolve_key` (the odds' own stages), emit the turret
        turn or NT pivot, one :class:`ShotResolved`, and the state changes of asl.md 6.5 and 9 as events.
        Returns the resolution (``fired``, ``rof_again``, ``result``, ...) for the sequence of play.  ``shot``
        comes from :meth:`shot` (an AFV target, a :class:`~sim.rules.asl.odds.ShotKey`); raises ``TypeError``
        for any other."""
        key = _asl_key(shot)
        if shot.target is None:
            raise TypeError("asl shots are aimed at an AFV (shot.target is None)")
        s = battle.tanks[shot.shooter]
        info = shot.info
        if info.get("turn_to") is not None and s.turret_facing != info["turn_to"]:
            battle.emit(TurretTurned(s.tank_id, int(info["turn_to"])))
        if info.get("pivot_to") is not None and s.facing != info["pivot_to"]:
            battle.emit(Pivoted(s.tank_id, int(info["pivot_to"]), None, 0))
        r = resolve_key(key, dice)
        kill = r["result"] in ("burn", "elim")
        details = {k: r[k] for k in ("fired", "location", "face", "critical", "improbable", "multiple",
                                     "second_location", "second_result", "first_result", "final_th_dr",
                                     "modified_th", "drm", "final_tk", "rof_again", "malfunction", "last_round",
                                     "special_ammo_left", "crew_check", "crew_survives", "abandoned", "ntc_shocked",
                                     "th_dr", "subsequent_dr", "tk_dr", "second_tk_dr", "crew_dr")}
        details.update(phase=info.get("phase"), kind=info.get("kind"), ammo=info.get("ammo"), range=info["range"],
                       hull_face=shot.face, turret_face=info.get("turret_face"), hull_down=info.get("hull_down"))
        battle.emit(ShotResolved(shooter=shot.shooter, target=shot.target, result=r["result"], hit=r["hit"], kill=kill,
                            key=key.as_params(), details=details, reaction=reaction))
        self._after_shot(battle, shot.shooter, shot.target, key, shot.info, r)
        return r

    def _allowed_shot(self, battle: BoardView, shooter: int, target: int | Hex, fire: Action | None) -> Shot:
        """The shot a legality check has just allowed (``contains`` asked :meth:`shot`); raises ``RuntimeError``
        if the rules now call it illegal (they would disagree with themselves)."""
        sh = self.shot(battle, shooter, target, fire)
        if isinstance(sh, Illegal):
            raise RuntimeError(f"the shot {shooter} -> {target} was allowed but is now illegal: {sh}")
        return sh

    def _after_shot(self, battle: Battle, sid: int, tid: int, key: ShotKey, info: Mapping[str, Any],
                    r: Mapping[str, Any]) -> None:
        s = battle.tanks[sid]
        # firer: depletion (C8.9), malfunction (D3.7), acquisition (C6.5)
        if key.depletion is not None and (not r["fired"] or r["last_round"]):
            self._set(battle, sid, "ammo_left", tuple(x for x in s.rules_state.get("ammo_left", ())
                                                 if x[0] != info["ammo"]))
        if r["malfunction"]:
            self._set(battle, sid, "ma", "malfunctioned")
            self._set(battle, sid, "acq", None)
        elif r["fired"]:
            if key.firer_moved in ("bounding_first", "motion") and not key.gyro:
                self._set(battle, sid, "acq", None)
            else:
                acq = s.rules_state.get("acq")
                level = min(2, acq[1] + 1) if acq and acq[0] == tid else 1
                self._set(battle, sid, "acq", (tid, level))
        # target (asl.md 9)
        result = r["result"]
        if result in ("burn", "elim"):
            self._set(battle, tid, "wreck", "burning" if result == "burn" else "wreck")
            battle.emit(StatusChanged(tid, Status.DESTROYED, result, by=sid))
            if r["crew_survives"] is not None:
                battle.emit(RuleEvent("crew_survives" if r["crew_survives"] else "crew_lost", tid,
                                      {"cs_dr": r["crew_dr"]}))
        elif result == "immobilized":
            self._set(battle, tid, "immobilized", True)
            self._set(battle, tid, "motion", False)
            self._set(battle, tid, "started", False)
            self._set(battle, tid, "bogged", False)
            if r["abandoned"]:
                self._abandon(battle, tid, "Immobilization TC failed", sid)
        elif result == "shocked" or (result == "possible_shock" and r["ntc_shocked"]):
            self._shock(battle, tid)
        if result in ("burn", "elim") or r.get("abandoned"):
            self._check_acquisitions(battle)   # a new wreck or abandoned AFV may block an acquired target's LOS

    def _shock(self, battle: Battle, tid: int) -> None:
        """Shock (C7.4): stops at once, no fire, move or CA change; an Unconfirmed Kill flips back to Shock."""
        self._set(battle, tid, "uk", False)
        self._set(battle, tid, "shocked", True)
        self._set(battle, tid, "motion", False)
        self._set(battle, tid, "started", False)
        self._set(battle, tid, "acq", None)

    def _abandon(self, battle: Battle, tid: int, reason: str, by: int | None = None) -> None:
        """The crew bails out (D5.5): the AFV stays in its hex, out of action, not a kill (asl.md 9.1)."""
        self._set(battle, tid, "abandoned", True)
        self._set(battle, tid, "motion", False)
        battle.emit(StatusChanged(tid, Status.INCAPACITATED, reason, by=by))

    # --- the sequence of play (asl.md 4) ------------------------------------------------------------------------
    def play_turn(self, battle: Battle, dice: DiceSource) -> Generator[Decision, Action | None, None]:
        """One Game Turn: two Player Turns, ``first_side`` (or the ``attacker`` role) first (asl.md 2, 4)."""
        first = self._first_side(battle)
        for att in (first, 1 - first):
            if battle.ended:
                return
            yield from self._player_turn(battle, dice, att)

    def _player_turn(self, battle: Battle, dice: DiceSource, att: int) -> Generator[Decision, Action | None, None]:
        dfn = 1 - att
        self._bset(battle, "attacker", att)
        self._begin_player_turn(battle)
        self._bset(battle, "phase", "RPh")
        self._rally(battle, dice, att)
        self._bset(battle, "phase", "PFPh")
        yield from self._prep_fire_phase(battle, dice, att)
        self._bset(battle, "phase", "MPh")
        yield from self._movement_phase(battle, dice, att)
        self._bset(battle, "phase", "DFPh")
        yield from self._fire_phase(battle, dice, dfn, "DFPh")
        self._free_ca(battle, dfn)
        self._bset(battle, "phase", "AFPh")
        yield from self._fire_phase(battle, dice, att, "AFPh")
        self._free_ca(battle, att)
        self._end_player_turn(battle)
        self._bset(battle, "phase", None)

    def _begin_player_turn(self, battle: Battle) -> None:
        """A vehicle in Motion is a moving target for the whole Player Turn (asl.md 5.2); per-turn flags reset.
        An AFV that stops being a moving target becomes a Case R hindrance, so Acquisitions are checked (6.5)."""
        for t in battle.tanks:
            if t.status == Status.DESTROYED or t.hex is None:
                continue
            rs = t.rules_state
            self._set(battle, t.tank_id, "moved", bool(rs.get("motion")))
            for k, v in (("entered", False), ("started", False), ("fire", None), ("prep_fired", False),
                         ("bff_fired", False), ("afph_fired", False)):
                self._set(battle, t.tank_id, k, v)
        self._check_acquisitions(battle)

    def _end_player_turn(self, battle: Battle) -> None:
        """Fire markers go; a Stun made this Player Turn becomes "+1" (D5.34)."""
        for t in battle.tanks:
            if t.status == Status.DESTROYED or t.hex is None:
                continue
            self._set(battle, t.tank_id, "fire", None)
            if t.rules_state.get("stunned"):
                self._set(battle, t.tank_id, "stunned", False)
                self._set(battle, t.tank_id, "plus1", True)

    def _rally(self, battle: Battle, dice: DiceSource, att: int) -> None:
        """RPh (asl.md 9.3, D3.7): Shock/UK recovery in ascending id order, then the ATTACKER's MA repair."""
        for t in battle.tanks:
            if not t.alive or t.hex is None:
                continue
            rs = t.rules_state
            if rs.get("uk"):
                dr = dice.roll("d6", "UK recovery dr")
                if dr <= 3:
                    self._set(battle, t.tank_id, "uk", False)
                    battle.emit(RuleEvent("recovered", t.tank_id, {"dr": dr, "from": "unconfirmed_kill"}))
                else:
                    battle.emit(RuleEvent("unconfirmed_kill_confirmed", t.tank_id, {"dr": dr}))
                    self._set(battle, t.tank_id, "wreck", "wreck")
                    battle.emit(StatusChanged(t.tank_id, Status.DESTROYED, "unconfirmed kill"))
            elif rs.get("shocked"):
                dr = dice.roll("d6", "Shock recovery dr")
                if dr <= 2:
                    self._set(battle, t.tank_id, "shocked", False)
                    battle.emit(RuleEvent("recovered", t.tank_id, {"dr": dr, "from": "shocked"}))
                else:
                    self._set(battle, t.tank_id, "shocked", False)
                    self._set(battle, t.tank_id, "uk", True)
                    battle.emit(RuleEvent("unconfirmed_kill", t.tank_id, {"dr": dr}))
        for t in battle.live_tanks(att):
            if t.rules_state.get("ma") == "malfunctioned" and not t.rules_state.get("abandoned"):
                dr = dice.roll("d6", "MA repair dr")
                new = "ok" if dr == 1 else "disabled" if dr == 6 else "malfunctioned"
                self._set(battle, t.tank_id, "ma", new)
                battle.emit(RuleEvent("ma_repair", t.tank_id, {"dr": dr, "ma": new}))
        self._check_acquisitions(battle)   # a confirmed Unconfirmed Kill is a new wreck (6.5)

    def _free_ca(self, battle: Battle, side: int) -> None:
        """End of the side's last fire phase (C3.22, D2.11, D3.12): an AFV able to fire, not Shocked or Stunned,
        sets a new TCA (and an NT AFV, if Mobile, a new VCA) at no cost.  DECISION (the spec leaves the choice to
        the owner): an AFV holding an Acquisition on a live target in its LOS keeps its CA (a change would lose
        the Acquisition: no shot at that target follows in this phase, 6.5); any other AFV turns toward the
        nearest live enemy (lowest id on a tie), losing an Acquisition it still held (its target is a wreck or
        gone).  A turreted AFV turns only its turret (keeping its VCA is the owner's free choice)."""
        enemies = [(e, _board_hex(e)) for e in battle.live_tanks() if e.side != side]
        if not enemies:
            return
        for t in battle.live_tanks(side):
            if able_to_fire(t):
                continue
            assert t.hex is not None  # able_to_fire() refused an AFV off the board
            here = t.hex
            acq = t.rules_state.get("acq")
            if acq and battle.tanks[acq[0]].alive and battle.tanks[acq[0]].hex is not None \
                    and self.los(battle, here, battle.tanks[acq[0]].hex)[0]:
                continue
            goal, goal_hex = min(enemies, key=lambda eh: (distance(here, eh[1]), eh[0].tank_id))
            if goal_hex == here:
                continue
            if self.has_turret(t.vehicle) and t.turret_facing is not None:
                if ca_turns(here, t.turret_facing, goal_hex):
                    battle.emit(TurretTurned(t.tank_id, turn_vertex(here, t.turret_facing, goal_hex)))
                    if acq:
                        self._set(battle, t.tank_id, "acq", None)
            elif not (t.rules_state.get("immobilized") or t.rules_state.get("bogged")):
                if ca_turns(here, t.facing, goal_hex):
                    battle.emit(Pivoted(t.tank_id, turn_vertex(here, t.facing, goal_hex), None, 0))
                    if acq:
                        self._set(battle, t.tank_id, "acq", None)

    # --- fire phases ------------------------------------------------------------------------------------------
    def targets(self, battle: BoardView, tid: int, fire: Action | None = None) -> tuple[int, ...]:
        """Enemy AFVs ``tid`` has a legal shot at now (LOS, states, CA rules; not the fire-marker limits)."""
        t = battle.tanks[tid]
        if able_to_fire(t):
            return ()
        if fire is None or (isinstance(fire, Fire) and not fire.ammo):   # AP: one batch (_shots_batch)
            # kept per battle version (the batch memo of _shot_table): the answer reads the board only -- the
            # tanks (their version, and which are hidden), the terrain (its version) and the rules state
            memo: _ShotMemo | None = None
            batch_key: tuple = ()
            if type(battle) is BattleState and type(tid) is int:
                memo = _shot_table(battle)
                if memo is not None:
                    batch_key = ("targets", tid, battle.hidden_tanks, battle.map.terrain_version)
                    done = memo.batches.get(batch_key)
                    if done is not None:
                        return done
            enemies = [e.tank_id for e in battle.enemies_of(t.side)]
            got = self._shots_batch(battle, [(tid, e) for e in enemies], None)
            out = tuple(e for e, sh in zip(enemies, got) if not isinstance(sh, Illegal))
            if memo is not None and memo.version == battle.version and len(memo.batches) < _BATCH_MEMO_SIZE:
                memo.batches[batch_key] = out
            return out
        enemies = [e.tank_id for e in battle.enemies_of(t.side)]
        return tuple(e for e in enemies if not isinstance(self.shot(battle, tid, e, fire), Illegal))

    def has_target(self, battle: BoardView, tid: int) -> bool:
        """``bool(self.targets(battle, tid))``, stopping at the first legal shot (the phase loops ask it often)."""
        t = battle.tanks[tid]
        if able_to_fire(t):
            return False
        return any(not isinstance(self.shot(battle, tid, e.tank_id), Illegal) for e in battle.enemies_of(t.side))

    def _fire_legal(self, battle: BoardView, tid: int, targets: tuple[int, ...]) -> Legal:
        def contains(a: Action) -> bool:
            if isinstance(a, Pass):
                return True
            return (isinstance(a, Fire) and a.actor == tid and a.target in targets
                    and not isinstance(self.shot(battle, tid, a.target, a), Illegal))
        return Legal(contains=contains, targets=lambda _a: targets)

    def _may_fire_in(self, battle: BoardView, t: TankState, phase: str) -> bool:
        rs = t.rules_state
        if able_to_fire(t):
            return False
        if phase == "PFPh":
            return not rs.get("motion") and rs.get("fire") is None
        if phase == "DFPh":
            return rs.get("fire") is None   # DECISION final_fire_after_first: none
        if phase == "AFPh":
            return not rs.get("prep_fired") and rs.get("fire") is None and not rs.get("afph_fired")
        return False

    def _choose_actor(self, battle: Battle, side: int, actors: tuple[int, ...], modes: tuple[str, ...], phase: str
                      ) -> Generator[Decision, Action | None, tuple[int, str]]:
        """One ``activate`` decision of a phase: ``side`` picks which of ``actors`` acts next and its mode from
        ``modes``; an illegal answer (or none) holds the first actor.  Returns ``(actor, mode)``."""
        legal = Legal(contains=lambda a: isinstance(a, Activate) and a.actor in actors and a.mode in modes,
                      modes=modes, targets=lambda tid: self.targets(battle, tid),
                      reachable=lambda tid: self.reachable(battle, tid, HALF * battle.tanks[tid].vehicle.mp))
        act = yield Decision(side, "activate", actors, legal, Activate(actors[0], "hold"),
                             {"phase": phase, "modes": {a: modes for a in actors}})
        if isinstance(act, Activate) and act.actor is not None and legal.contains(act):
            return act.actor, act.mode
        return actors[0], "hold"

    def play_activation(self, battle: Battle, dice: DiceSource, side: int, action: Action
                        ) -> Generator[Decision, Action | None, None]:
        """Search hook (:meth:`sim.rules.base.Ruleset.play_activation`): what the legal answer ``action`` (an
        :class:`Activate`) to the ATTACKER's ``activate`` decision of the current phase starts, exactly as in play:
        in the PFPh the AFV's Prep Fire (``fire``; ``hold`` does nothing), in the MPh its whole move with the
        DEFENDER's Defensive First Fire (asl.md 4, 5).  The phase's next activation is not played.  Raises
        ``TypeError`` if ``action`` is not an :class:`Activate` naming a tank."""
        if not isinstance(action, Activate) or action.actor is None:
            raise TypeError(f"play_activation answers an activate decision: an Activate naming a tank, not {action!r}")
        phase = battle.rules_state.get("phase")
        if phase == "PFPh":
            if action.mode == "fire":
                yield from self._fire_sequence(battle, dice, action.actor, "PFPh")
        elif phase == "MPh":
            yield from self._move(battle, dice, action.actor, action.mode)

    def _prep_fire_phase(self, battle: Battle, dice: DiceSource, att: int) -> Generator[Decision, Action | None, None]:
        """PFPh: the ATTACKER's AFVs not in Motion are asked, in the order the side chooses (``activate`` with
        modes ``fire`` / ``hold``), whether to Prep Fire; one that fires may not move (D.3)."""
        decided: set[int] = set()
        while not battle.ended:
            actors = tuple(t.tank_id for t in battle.live_tanks(att)
                           if t.tank_id not in decided and self._may_fire_in(battle, t, "PFPh")
                           and self.has_target(battle, t.tank_id))
            if not actors:
                return
            tid, mode = yield from self._choose_actor(battle, att, actors, PREP_MODES, "PFPh")
            decided.add(tid)
            if mode == "fire":
                yield from self._fire_sequence(battle, dice, tid, "PFPh")

    def _fire_phase(self, battle: Battle, dice: DiceSource, side: int, phase: str
                    ) -> Generator[Decision, Action | None, None]:
        """DFPh (DEFENDER, Multiple ROF) or AFPh (ATTACKER, one shot each): per AFV in id order."""
        for t in list(battle.live_tanks(side)):
            if battle.ended:
                return
            if self._may_fire_in(battle, t, phase) and self.has_target(battle, t.tank_id):
                yield from self._fire_sequence(battle, dice, t.tank_id, phase)

    def _fire_sequence(self, battle: Battle, dice: DiceSource, tid: int, phase: str
                       ) -> Generator[Decision, Action | None, None]:
        """One AFV's shots in a fire phase: ``fire`` then ``fire_again`` while it keeps ROF (C2.24); a depletion
        no-shot (C8.9) asks again at once; the AFPh allows one shot (C5.2)."""
        t = battle.tanks[tid]
        kind = "fire"
        marker = {"PFPh": "prep", "DFPh": "final", "AFPh": "advancing"}[phase]
        for _ in range(MAX_SHOTS_PER_PHASE):
            if battle.ended or not t.alive:
                return
            targets = self.targets(battle, tid)
            if not targets:
                return
            legal = self._fire_legal(battle, tid, targets)
            act = yield Decision(t.side, kind, (tid,), legal, Pass(tid), {"phase": phase})
            if not isinstance(act, Fire) or not legal.contains(act):
                return
            r = self.resolve(battle, self._allowed_shot(battle, tid, act.target, act), dice)
            if not r["fired"]:
                continue
            if phase == "PFPh":
                self._set(battle, tid, "prep_fired", True)
            if phase == "AFPh":
                self._set(battle, tid, "afph_fired", True)
                self._set(battle, tid, "fire", marker)
                return
            if not (r["rof_again"] and able_to_fire(t) is None):
                self._set(battle, tid, "fire", marker)
                return
            kind = "fire_again"
        self._set(battle, tid, "fire", marker)

    # --- movement (asl.md 5) ----------------------------------------------------------------------------------
    def _started_now(self, battle: BoardView, t: TankState) -> bool:
        if battle.rules_state.get("mover") == t.tank_id:
            return bool(t.rules_state.get("started"))
        return bool(t.rules_state.get("motion"))

    def enterable(self, battle: BoardView, tid: int, h: Hex) -> bool:
        """Whether ``tid`` may enter ``h``: on the map, not woods/building under ``obstacle_entry: forbidden``,
        and no live enemy AFV there unless ``same_hex_entry`` (asl.md 5.1)."""
        if h not in battle.map:
            return False
        if battle.options.obstacle_entry == "forbidden" and self.terrain(battle, h).obstacle:
            return False
        if not battle.options.same_hex_entry:
            side = battle.tank(tid).side
            if any(battle.tank(o).alive and battle.tank(o).side != side for o in battle.occupants(h)):
                return False
        return True

    def entry_cost(self, battle: BoardView, tid: int, h: Hex) -> int:
        """Half-MP to enter ``h`` forward (D2.1, B13.41-B13.42, D2.14): the terrain's MP (woods/buildings: half the
        MP allotment, exact), +1 MP per vehicle or wreck already there (doubled in woods/building)."""
        ter = self.terrain(battle, h)
        t = battle.tank(tid)
        cost = t.vehicle.mp if ter.mp is None else HALF * ter.mp
        others = sum(1 for o in battle.occupants(h) if o != tid)
        tt = asl_tables.terrain_tables()
        return cost + others * HALF * tt.vehicle_in_hex_mp * (2 if ter.obstacle else 1)

    def vca_cost(self, battle: BoardView, h: Hex) -> int:
        """Half-MP per hexspine of VCA change (D2.11): 1 MP, 2 MP in woods/building."""
        tt = asl_tables.terrain_tables()
        return HALF * (tt.vca_change_mp_obstacle if self.terrain(battle, h).obstacle else tt.vca_change_mp)

    def _successors(self, battle: BoardView, tid: int, state: tuple[Hex, int]) -> list[tuple[tuple[Hex, int], int]]:
        h, f = state
        out = []
        for k in (f % 6, (f - 1) % 6):
            n = h.neighbour(k)
            if self.enterable(battle, tid, n):
                out.append(((n, f), self.entry_cost(battle, tid, n)))
        c = self.vca_cost(battle, h)
        out.append(((h, (f + 1) % 6), c))
        out.append(((h, (f - 1) % 6), c))
        return out

    def _search_costs(self, battle: BoardView, tid: int
                      ) -> tuple[Callable[[Hex], int | None], Callable[[Hex], int]]:
        """``(entry, vca)`` for one movement search on an unchanging board (:func:`_movement_search`):
        ``entry(hex)`` is :meth:`entry_cost` if :meth:`enterable` else ``None``, ``vca(hex)`` :meth:`vca_cost`,
        each computed once per hex per search."""
        step: dict[Hex, int | None] = {}
        vcas: dict[Hex, int] = {}
        # what enterable() and entry_cost() read that is the same for every hex, read once
        m = battle.map
        forbidden = battle.options.obstacle_entry == "forbidden"
        same_hex = battle.options.same_hex_entry
        me = battle.tank(tid)
        side, veh_mp = me.side, me.vehicle.mp
        in_hex_mp = asl_tables.terrain_tables().vehicle_in_hex_mp
        terrain, occupants, tank = self.terrain, battle.occupants, battle.tank

        def entry(n: Hex) -> int | None:
            try:
                return step[n]
            except KeyError:
                pass
            # enterable(battle, tid, n), then entry_cost(battle, tid, n), their reads in their order
            c: int | None = None
            if n in m:
                ter = terrain(battle, n)
                occ = occupants(n)
                if not (forbidden and ter.obstacle) and (
                        same_hex or not any(tank(o).alive and tank(o).side != side for o in occ)):
                    cost = veh_mp if ter.mp is None else HALF * ter.mp
                    others = sum(1 for o in occ if o != tid)
                    c = cost + others * HALF * in_hex_mp * (2 if ter.obstacle else 1)
            step[n] = c
            return c

        def vca(h: Hex) -> int:
            try:
                return vcas[h]
            except KeyError:
                v = vcas[h] = self.vca_cost(battle, h)
                return v

        return entry, vca

    def reachable(self, battle: BoardView, tank: int, budget: int
                  ) -> Mapping[Hashable, tuple[int, tuple[Hashable, ...]]]:
        """``{(hex, facing): (cost, path)}`` within ``budget`` **half-MP**, forward moves and VCA changes only
        (Reverse is offered as a single ``Step`` in ``move_step``).  A cost includes the Start MP (if the AFV is
        stopped) and a final Stop MP, so a plan within the MP left ends stopped; the start state costs 0.
        An immutable answer (a ``MappingProxyType`` over a fresh dict, each path a tuple of states), which
        :meth:`~agents.observation.Observation.reachable` hands on as it is (issue 14)."""
        t = battle.tank(tank)
        here = t.hex
        rs = t.rules_state
        if (not t.alive or here is None or rs.get("immobilized") or rs.get("bogged") or rs.get("abandoned")
                or rs.get("shocked") or rs.get("uk") or rs.get("stunned")):
            return MappingProxyType({(here, t.facing): (0, ((here, t.facing),))})
        start = (here, t.facing)
        extra = (0 if self._started_now(battle, t) else HALF) + HALF
        if budget < extra:
            return MappingProxyType({start: (0, (start,))})
        entry, vca = self._search_costs(battle, tank)
        return MappingProxyType(_movement_search(start, budget - extra, entry, vca, extra, battle.map.cells))

    def plan_to(self, battle: BoardView, tank: int, path: list, then: Action | None = None,
                end_status: str | None = None) -> Plan:
        """A :class:`Plan` of ``Step`` / ``Pivot`` actions following ``path`` (states from :meth:`reachable`)."""
        steps: list[Action] = []
        for (h0, _f0), (h1, f1) in zip(path, path[1:], strict=False):
            steps.append(Step(tank, h1) if h1 != h0 else Pivot(tank, f1))
        return Plan(tank, tuple(steps), then=then, end_status=end_status)

    def _may_move(self, battle: BoardView, t: TankState) -> bool:
        """Whether the ATTACKER's AFV takes part in the MPh (asl.md 4 step 3): it did not Prep Fire and can act;
        an Immobilized AFV only if it has a turret to turn with Delay MPs (D8.1; an Immobilized NT AFV has no MP
        to spend, DECISION)."""
        rs = t.rules_state
        if rs.get("immobilized") and not (self.has_turret(t.vehicle) and t.turret_facing is not None):
            return False
        return self._can_act(t) and not rs.get("prep_fired") and not rs.get("recall")

    def _movement_phase(self, battle: Battle, dice: DiceSource, att: int) -> Generator[Decision, Action | None, None]:
        """MPh: the ATTACKER's AFVs that did not Prep Fire move one at a time in the order the side chooses
        (``activate`` with modes ``move_and_fire`` (may Bounding First Fire), ``move``, ``hold``)."""
        done: set[int] = set()
        while not battle.ended:
            actors = tuple(t.tank_id for t in battle.live_tanks(att)
                           if t.tank_id not in done and self._may_move(battle, t))
            if not actors:
                return
            tid, mode = yield from self._choose_actor(battle, att, actors, MOVE_MODES, "MPh")
            done.add(tid)
            yield from self._move(battle, dice, tid, mode)

    # one AFV's MPh ------------------------------------------------------------------------------------------
    def _mp_event(self, battle: Battle, tid: int, kind: str, cost: int, mp_left: int, **data: Any) -> None:
        t = battle.tanks[tid]
        here = _board_hex(t)
        battle.emit(RuleEvent("mp", tid, {"kind": kind, "mp": fraction_str(Fraction(cost, HALF)),
                                          "mp_left": fraction_str(Fraction(mp_left, HALF)),
                                          "hex": [here.q, here.r], "vca": t.facing, "tca": t.turret_facing,
                                          **data}))

    def _after_mp(self, battle: Battle, dice: DiceSource, tid: int, cost: int, new_hex: bool
                  ) -> Generator[Decision, Action | None, bool]:
        """Book ``cost`` half-MP (MP in the current hex, MP in each enemy's LOS, C6.15-C6.17), then offer
        Defensive First Fire (D3.3).  Returns True if the mover was fired at."""
        t = battle.tanks[tid]
        self._bset(battle, "free_turn", True)
        self._bset(battle, "mover_hex_mp", cost if new_hex else battle.rules_state.get("mover_hex_mp", 0) + cost)
        if new_hex:
            self._bset(battle, "dff_used", ())
        tab = {e: (mp, st) for e, mp, st in battle.rules_state.get("los_mp", ())}
        new = []
        here = _board_hex(t)
        for e in battle.enemies_of(t.side):
            mp, st = tab.get(e.tank_id, (0, False))
            if self.los(battle, here, _board_hex(e))[0]:
                new.append((e.tank_id, mp + cost, st))
            else:
                new.append((e.tank_id, 0, False))
        self._bset(battle, "los_mp", tuple(new))
        return (yield from self._dff(battle, dice, tid))

    def _dff_ready(self, battle: BoardView, t: TankState, mover: int) -> bool:
        if able_to_fire(t) or t.rules_state.get("fire") is not None:
            return False
        used = dict(battle.rules_state.get("dff_used", ()))
        if battle.rules_state.get("mover_hex_mp", 0) - used.get(t.tank_id, 0) < HALF:
            return False
        return not isinstance(self.shot(battle, t.tank_id, mover), Illegal)

    def _dff(self, battle: Battle, dice: DiceSource, mover: int) -> Generator[Decision, Action | None, bool]:
        """Defensive First Fire at the mover after an MP expenditure (asl.md 4 step 3, 5.3): the DEFENDER's ready
        AFVs are asked one shot at a time (``react``), in the order the side chooses.  Each shot uses up MP of the
        mover in its hex (DECISION C6.17 of the spec): at J1/J2 the MP spent since that firer's previous shot
        there, at plain J 3.5 MP; a firer needs 1 unused MP."""
        m = battle.tanks[mover]
        dfn = 1 - m.side
        fired_any = False
        while not battle.ended and m.alive and m.hex is not None:
            ready = tuple(t.tank_id for t in battle.live_tanks(dfn) if self._dff_ready(battle, t, mover))
            if not ready:
                break

            def contains(a: Action, ready: tuple[int, ...] = ready) -> bool:
                return isinstance(a, Pass) or (isinstance(a, Fire) and a.actor is not None and a.actor in ready
                                               and a.target == mover
                                               and not isinstance(self.shot(battle, a.actor, mover, a), Illegal))

            def targets(tid: int, ready: tuple[int, ...] = ready) -> tuple[int, ...]:
                return (mover,) if tid in ready else ()

            legal = Legal(contains=contains, targets=targets)
            mp_in_hex = fraction_str(Fraction(battle.rules_state.get("mover_hex_mp", 0), HALF))
            act = yield Decision(dfn, "react", ready, legal, Pass(None),
                                 {"mover": mover, "trigger": "defensive_first_fire", "phase": "MPh",
                                  "mp_in_hex": mp_in_hex})
            if not isinstance(act, Fire) or act.actor is None or not contains(act):
                break
            firer = act.actor
            r = self.resolve(battle, self._allowed_shot(battle, firer, mover, act), dice, reaction=True)
            fired_any = True
            if not r["fired"]:
                continue
            tab = {e: (mp, st) for e, mp, st in battle.rules_state.get("los_mp", ())}
            mp_los, from_start = tab.get(firer, (0, False))
            hex_mp = battle.rules_state.get("mover_hex_mp", 0)
            used = dict(battle.rules_state.get("dff_used", ()))
            u = used.get(firer, 0)
            u = hex_mp if (not from_start and mp_los <= _J1_WINDOW) else u + min(_J_USE, hex_mp - u)
            used[firer] = u
            self._bset(battle, "dff_used", tuple(sorted(used.items())))
            if not (r["rof_again"] and able_to_fire(battle.tanks[firer]) is None):
                self._set(battle, firer, "fire", "first")
        return fired_any

    def _can_continue(self, t: TankState) -> bool:
        """The mover may still spend Start, VCA and hex MP: it can act and is neither Immobilized nor bogged."""
        rs = t.rules_state
        return self._can_act(t) and not rs.get("immobilized") and not rs.get("bogged")

    @staticmethod
    def _can_act(t: TankState) -> bool:
        """The AFV may still spend MP at all (Delay included): live, on the board, not Shocked, Unconfirmed
        Killed, Stunned or Abandoned (asl.md 9.1)."""
        rs = t.rules_state
        return (t.alive and t.hex is not None and not rs.get("shocked") and not rs.get("uk")
                and not rs.get("stunned") and not rs.get("abandoned"))

    def _check_acquisitions(self, battle: Battle) -> None:
        """C6.5 (asl.md 6.5): an Acquisition is lost as soon as its target is out of the firer's LOS, whatever
        took it out: the target moved, a new (burning) wreck or an abandoned AFV blocks the line, or the Case R
        total reached 6.  Called after every hex entered, every shot, the RPh and the start of a Player Turn."""
        for t in battle.tanks:
            acq = t.rules_state.get("acq")
            if not acq or not t.alive or t.hex is None:
                continue
            tg = battle.tanks[acq[0]]
            if tg.hex is None or not self.los(battle, t.hex, tg.hex)[0]:
                self._set(battle, t.tank_id, "acq", None)

    def _start(self, battle: Battle, dice: DiceSource, tid: int, mp_left: int, **data: Any
               ) -> Generator[Decision, Action | None, tuple[int, bool]]:
        """Start MP (D2.12), with the mechanical reliability DR of a red-MP AFV (D2.51), also for the Start of a
        switch between forward and Reverse (``reverse_switch=True`` in the MP event).  Returns (MP left, whether
        the mover was fired at)."""
        t = battle.tanks[tid]
        mp_left -= HALF
        self._set(battle, tid, "started", True)
        if battle.options.mechanical_reliability and t.vehicle.mp_red:
            c, w = dice.roll("d6", "mechanical reliability coloured"), dice.roll("d6", "mechanical reliability white")
            data["reliability_dr"] = [c, w]
            if c + w == 12:
                data["immobilized"] = True
        self._mp_event(battle, tid, "start", HALF, mp_left, **data)
        if data.get("immobilized"):
            self._set(battle, tid, "immobilized", True)
            self._set(battle, tid, "started", False)
        fired = yield from self._after_mp(battle, dice, tid, HALF, False)
        return mp_left, fired

    def _bog_check(self, battle: Battle, dice: DiceSource, tid: int, h: Hex) -> bool:
        """Bog Check on entering / turning in woods or a building (D8.21): DR + ground pressure + terrain DRM,
        Final >= 12 bogs.  Returns True if bogged."""
        t = battle.tanks[tid]
        ter = self.terrain(battle, h)
        if ter.bog_drm is None or battle.options.obstacle_entry != "bog":
            return False
        tt = asl_tables.terrain_tables()
        c, w = dice.roll("d6", "Bog Check coloured"), dice.roll("d6", "Bog Check white")
        final = c + w + tt.ground_pressure_bog_drm[t.vehicle.ground_pressure] + ter.bog_drm
        bogged = final >= tt.bog_threshold
        battle.emit(RuleEvent("bog_check", tid, {"dr": [c, w], "final": final, "bogged": bogged}))
        if bogged:
            self._set(battle, tid, "bogged", True)
            self._set(battle, tid, "started", False)
        return bogged

    def _move(self, battle: Battle, dice: DiceSource, tid: int, mode: str) -> Generator[Decision, Action | None, None]:
        """One AFV's MPh (asl.md 5): ``move_step`` decisions answered by ``Step`` (a front hex; a rear hex is a
        Reverse at 4x the cost, D2.21), ``Pivot`` (one hexspine of VCA), ``Fire`` (Bounding First Fire; a
        Non-Stopped mover first spends a Stop MP if it has one, DECISION), ``Special`` ``stop`` / ``delay``
        (args ``turret_facing``: set the TCA with that MP, D3.12; a ``Step`` or ``Pivot`` cannot carry one, the
        turret keeps its angle to the hull) / ``motion_fire`` (args ``target``: fire
        without stopping, C5.35) / ``end_move`` (args ``status: motion`` ends in Motion, else a Stop MP if one is
        left), or ``Pass`` (= ``end_move``).  Costs and context ``mp`` are in half MPs.

        An Immobilized AFV spends no Start, VCA or hex MP, but its MPh goes on (also when it is immobilized during
        it): it may spend Delay MPs, turning its turret (D8.1, D3.12), and Bounding First Fire (DECISION: the
        spec lets the turret turn and fire and names the Delay MP as the way to turn it without moving).  A bogged
        AFV ends its MPh (D8.21), also after a Bog Removal that did not free it.  ``end_move`` with ``status:
        motion`` is legal only when the AFV is Non-Stopped and cannot afford a hex it could enter next (a front
        hex, or a rear hex in Reverse: D2.4; DECISION: the hex it wants is one of those); otherwise it ends with
        a Stop MP.  A CA change (a VCA change carries the turret with it, or a Delay turning the turret) loses
        the Acquisition unless the AFV then fires at that target this MPh (6.5, C6.5)."""
        t = battle.tanks[tid]
        battle.emit(Activated(t.side, tid, mode))
        self._bset(battle, "mover", tid)
        began_motion = bool(t.rules_state.get("motion"))
        self._set(battle, tid, "started", began_motion)
        self._bset(battle, "free_turn", False)
        self._bset(battle, "mover_hex_mp", 0)
        self._bset(battle, "dff_used", ())
        here = _board_hex(t)
        self._bset(battle, "los_mp", tuple((e.tank_id, 0, self.los(battle, here, _board_hex(e))[0])
                                           for e in battle.enemies_of(t.side)))
        mp_left = HALF * t.vehicle.mp
        spent = 0
        direction: str | None = None
        bff_ready = True
        interrupted = False
        end_status: str | None = None
        acq_turned = False            # the CA changed this MPh while an Acquisition was held (6.5)
        if mode != "hold" and t.rules_state.get("bogged") and self._can_continue_bogged(t):
            mp_left, spent = yield from self._bog_removal(battle, dice, tid, mp_left)
        while mode != "hold" and self._can_act(t) and not battle.ended and not t.rules_state.get("bogged"):
            assert t.hex is not None  # _can_act(): the mover is on the board
            started = bool(t.rules_state.get("started"))
            mobile = self._can_continue(t)
            start_cost = 0 if started else HALF
            opts: dict[Action, tuple[int, str]] = {}
            short = False             # a hex it could enter next costs more than the MP left (D2.4)
            f = t.facing
            if mobile:
                for k in (f % 6, (f - 1) % 6):
                    n = t.hex.neighbour(k)
                    if self.enterable(battle, tid, n):
                        switch = 2 * HALF if (started and direction == "rev") else 0
                        c = self.entry_cost(battle, tid, n) + start_cost + switch
                        if c <= mp_left:
                            opts[Step(tid, n)] = (c, "fwd")
                        elif direction != "rev":
                            short = True
                for k in ((f + 2) % 6, (f + 3) % 6):
                    n = t.hex.neighbour(k)
                    if self.enterable(battle, tid, n):
                        switch = 2 * HALF if (started and direction == "fwd") else 0
                        c = 4 * self.entry_cost(battle, tid, n) + start_cost + switch
                        if c <= mp_left:
                            opts[Step(tid, n)] = (c, "rev")
                        elif direction == "rev":
                            short = True
                vc = self.vca_cost(battle, t.hex) + start_cost
                if vc <= mp_left:
                    for nf in ((f + 1) % 6, (f - 1) % 6):
                        opts[Pivot(tid, nf)] = (vc, "vca")
            can_fire = (mode == "move_and_fire" and bff_ready and t.rules_state.get("fire") is None
                        and able_to_fire(t) is None)
            can_stop = started and mp_left >= HALF
            can_delay = (not started) and mp_left >= HALF
            can_motion = started and spent > 0 and short

            def contains(a: Action, opts=opts, can_fire=can_fire, can_stop=can_stop, can_delay=can_delay,
                         started=started, can_motion=can_motion) -> bool:
                if isinstance(a, (Step, Pivot)):
                    return a in opts
                if isinstance(a, Fire):
                    return (can_fire and a.actor == tid
                            and not isinstance(self._shot_after_stop(battle, tid, a), Illegal))
                if isinstance(a, Special):
                    if a.actor not in (tid, None):
                        return False
                    if a.name == "end_move":
                        return a.args.get("status") != "motion" or can_motion
                    if a.name in ("stop", "delay"):
                        tf = a.args.get("turret_facing")
                        return (can_stop if a.name == "stop" else can_delay) and (
                            tf is None or (t.turret_facing is not None and isinstance(tf, int)
                                           and not isinstance(tf, bool) and 0 <= tf <= 5))
                    if a.name == "motion_fire":
                        tgt = a.args.get("target")
                        return (can_fire and started and isinstance(tgt, int)
                                and not isinstance(self.shot(battle, tid, tgt, Fire(tid, tgt, (), a.args.get("ammo"))),
                                                   Illegal))
                    return False
                return isinstance(a, Pass)

            def reachable(_a: int, budget: int = mp_left) -> Mapping[Hashable, tuple[int, tuple[Hashable, ...]]]:
                return self.reachable(battle, tid, budget)

            def targets(_a: int, can_fire: bool = can_fire) -> tuple[int, ...]:
                return self.targets(battle, tid) if can_fire else ()

            legal = Legal(contains=contains, reachable=reachable, targets=targets,
                          specials=("end_move", "stop", "delay", "motion_fire"),
                          plan_to=lambda _a, path, then=None, end_status=None: self.plan_to(battle, tid, path, then,
                                                                                             end_status))
            default = Special(tid, "end_move", {"status": None})
            act = yield Decision(t.side, "move_step", (tid,), legal, default,
                                 {"phase": "MPh", "mp": mp_left, "mp_whole": fraction_str(Fraction(mp_left, HALF)),
                                  "started": started, "entered": bool(t.rules_state.get("entered")),
                                  "interrupted": interrupted, "can_fire": can_fire, "fire_cost": 0,
                                  "mode": mode, "compulsory": False, "half_mp": True, "mobile": mobile,
                                  "can_motion": can_motion})
            interrupted = False
            if act is None or not contains(act):
                act = default
            if isinstance(act, Pass) or (isinstance(act, Special) and act.name == "end_move"):
                end_status = act.args.get("status") if isinstance(act, Special) else None
                break
            if isinstance(act, Fire) or (isinstance(act, Special) and act.name == "motion_fire"):
                if isinstance(act, Fire) and started and mp_left >= HALF:
                    mp_left -= HALF
                    spent += HALF
                    self._set(battle, tid, "started", False)
                    self._mp_event(battle, tid, "stop", HALF, mp_left)
                    interrupted = (yield from self._after_mp(battle, dice, tid, HALF, False)) or interrupted
                    direction = None
                    if not self._can_act(t) or able_to_fire(t):
                        continue
                if isinstance(act, Special):
                    tgt = act.args.get("target")
                    assert isinstance(tgt, int)  # contains() allowed this motion_fire: its target is an AFV
                    act = Fire(tid, tgt, (), act.args.get("ammo"))
                sh = self.shot(battle, tid, act.target, act)
                if isinstance(sh, Illegal):
                    continue
                if sh.info.get("turn_to") is not None and t.rules_state.get("acq"):
                    acq_turned = True
                r = self.resolve(battle, sh, dice)
                if r["fired"]:
                    acq_turned = False    # the Acquisition is kept on this target, replaced or gone (6.5)
                    self._set(battle, tid, "bff_fired", True)
                    self._bset(battle, "free_turn", False)
                    bff_ready = False
                    if not (r["rof_again"] and able_to_fire(t) is None):
                        self._set(battle, tid, "fire", "bounding")
                continue
            if isinstance(act, Special) and act.name == "stop":
                mp_left -= HALF
                spent += HALF
                self._set(battle, tid, "started", False)
                tf = act.args.get("turret_facing")
                if tf is not None and t.turret_facing is not None and int(tf) != t.turret_facing:
                    battle.emit(TurretTurned(tid, int(tf)))
                    acq_turned = acq_turned or bool(t.rules_state.get("acq"))
                self._mp_event(battle, tid, "stop", HALF, mp_left)
                interrupted = (yield from self._after_mp(battle, dice, tid, HALF, False)) or interrupted
                bff_ready = True
                direction = None
                continue
            if isinstance(act, Special) and act.name == "delay":
                mp_left -= HALF
                spent += HALF
                tf = act.args.get("turret_facing")
                if tf is not None and t.turret_facing is not None and int(tf) != t.turret_facing:
                    battle.emit(TurretTurned(tid, int(tf)))
                    acq_turned = acq_turned or bool(t.rules_state.get("acq"))
                self._mp_event(battle, tid, "delay", HALF, mp_left)
                interrupted = (yield from self._after_mp(battle, dice, tid, HALF, False)) or interrupted
                bff_ready = True
                continue
            cost, how = opts[act]
            if not started:
                mp_left, fired = yield from self._start(battle, dice, tid, mp_left)
                spent += HALF
                cost -= HALF
                interrupted = fired or interrupted
                if not self._can_continue(t):
                    continue
            elif (how == "fwd" and direction == "rev") or (how == "rev" and direction == "fwd"):
                # switching between forward and Reverse: a Stop and a Start MP first (D2.21)
                mp_left -= HALF
                spent += HALF
                cost -= 2 * HALF
                self._set(battle, tid, "started", False)
                self._mp_event(battle, tid, "stop", HALF, mp_left, reverse_switch=True)
                interrupted = (yield from self._after_mp(battle, dice, tid, HALF, False)) or interrupted
                if not self._can_continue(t):
                    continue
                mp_left, fired = yield from self._start(battle, dice, tid, mp_left, reverse_switch=True)
                spent += HALF
                interrupted = fired or interrupted
                if not self._can_continue(t):
                    continue
            mp_left -= cost
            spent += cost
            bff_ready = True
            if isinstance(act, Pivot):
                tf = None if t.turret_facing is None else (t.turret_facing + act.facing - t.facing) % 6
                acq_turned = acq_turned or bool(t.rules_state.get("acq"))
                battle.emit(Pivoted(tid, act.facing, tf, cost))
                self._mp_event(battle, tid, "vca", cost, mp_left)
                bogged = self.terrain(battle, t.hex).obstacle and self._bog_check(battle, dice, tid, t.hex)
                interrupted = (yield from self._after_mp(battle, dice, tid, cost, False)) or interrupted
                if bogged:
                    break
                continue
            assert isinstance(act, Step)  # opts, which holds the act, has Step and Pivot actions only
            direction = how
            battle.emit(Moved(tid, act.to, t.facing, cost))
            self._mp_event(battle, tid, "enter" if how == "fwd" else "reverse", cost, mp_left)
            self._set(battle, tid, "entered", True)
            self._set(battle, tid, "moved", True)
            self._set(battle, tid, "acq", None)
            acq_turned = False
            self._check_acquisitions(battle)
            bogged = self.terrain(battle, t.hex).obstacle and self._bog_check(battle, dice, tid, t.hex)
            interrupted = (yield from self._after_mp(battle, dice, tid, cost, True)) or interrupted
            if bogged:
                break
        if acq_turned and t.rules_state.get("acq"):
            self._set(battle, tid, "acq", None)   # turned its CA and did not fire at the acquired target (6.5)
        yield from self._end_move(battle, dice, tid, mode, began_motion, spent, mp_left, end_status)

    def _can_continue_bogged(self, t: TankState) -> bool:
        rs = t.rules_state
        return t.alive and t.hex is not None and not (rs.get("shocked") or rs.get("uk") or rs.get("abandoned"))

    def _bog_removal(self, battle: Battle, dice: DiceSource, tid: int, mp_left: int
                     ) -> Generator[Decision, Action | None, tuple[int, int]]:
        """Bog Removal instead of a Start MP (D8.3): spends coloured x white MP (at most the MP left, DECISION);
        Final coloured dr (+1 if Mired) 1-4 frees (the AFV is then started), 5 Mires, 6+ Immobilizes."""
        t = battle.tanks[tid]
        c, w = dice.roll("d6", "Bog Removal coloured"), dice.roll("d6", "Bog Removal white")
        cost = min(HALF * c * w, mp_left)
        final = c + (1 if t.rules_state.get("mired") else 0)
        outcome = "freed" if final <= 4 else "mired" if final == 5 else "immobilized"
        mp_left -= cost
        battle.emit(RuleEvent("bog_removal", tid, {"dr": [c, w], "final_coloured": final, "result": outcome,
                                               "mp": fraction_str(Fraction(cost, HALF))}))
        if outcome == "freed":
            self._set(battle, tid, "bogged", False)
            self._set(battle, tid, "mired", False)
            self._set(battle, tid, "started", True)
        elif outcome == "mired":
            self._set(battle, tid, "mired", True)
        else:
            self._set(battle, tid, "bogged", False)
            self._set(battle, tid, "mired", False)
            self._set(battle, tid, "immobilized", True)
        self._mp_event(battle, tid, "bog_removal", cost, mp_left)
        yield from self._after_mp(battle, dice, tid, cost, False)
        return mp_left, cost

    def _shot_after_stop(self, battle: BoardView, tid: int, fire: Fire) -> Shot | Illegal:
        """The Bounding First Fire shot as it will be after the automatic Stop MP (for legality)."""
        t = battle.tanks[tid]
        if t.rules_state.get("started") and t.hex is not None:
            view = HypoView(battle, tid, t.hex, t.facing)
            view.tanks[tid].rules_state["started"] = False
            return self._shot(view, tid, fire.target, fire, None)
        return self.shot(battle, tid, fire.target, fire)

    def _end_move(self, battle: Battle, dice: DiceSource, tid: int, mode: str, began_motion: bool, spent: int,
                  mp_left: int, end_status: str | None) -> Generator[Decision, Action | None, None]:
        """End of one AFV's MPh: Stop (D2.13) or Motion (D2.4); a vehicle that began in Motion spends at least
        one MP (a Stop, DECISION); the MPh bookkeeping is cleared."""
        t = battle.tanks[tid]
        if self._can_continue(t) and t.rules_state.get("started") and not battle.ended:
            want_motion = end_status == "motion" and spent > 0
            if want_motion or mp_left < HALF:
                self._set(battle, tid, "motion", True)
                self._set(battle, tid, "moved", True)
                battle.emit(RuleEvent("motion", tid, {"mp_left": fraction_str(Fraction(mp_left, HALF))}))
            else:
                mp_left -= HALF
                self._set(battle, tid, "started", False)
                self._set(battle, tid, "motion", False)
                self._mp_event(battle, tid, "stop", HALF, mp_left)
                yield from self._after_mp(battle, dice, tid, HALF, False)
        elif t.status != Status.DESTROYED:
            self._set(battle, tid, "motion", False)
        if t.rules_state.get("motion") and self._can_continue(t):
            self._set(battle, tid, "started", True)
        else:
            self._set(battle, tid, "started", False)
        self._bset(battle, "mover", None)
        self._bset(battle, "los_mp", ())
        self._bset(battle, "dff_used", ())
        self._bset(battle, "mover_hex_mp", 0)
        self._bset(battle, "free_turn", False)

    # --- outcome ----------------------------------------------------------------------------------------------
    def outcome(self, battle: BoardView) -> Outcome | None:
        """CONVENTIONS.md victory: a side with no AFV that can fight loses at once (wrecks and abandoned AFVs
        cannot; Shocked ones still can); after the turn limit, victory points if any, else a draw."""
        return standard_outcome(battle, draw)


def _asl_key(shot: Shot) -> ShotKey:
    """``shot.key`` as the :class:`~sim.rules.asl.odds.ShotKey` :meth:`ASL.shot` puts there; raises ``TypeError``
    for a shot of another rule set."""
    key = shot.key
    if not isinstance(key, ShotKey):
        raise TypeError(f"not an asl shot: its key is a {type(key).__name__}, not a ShotKey")
    return key


def _board_hex(t: TankState) -> Hex:
    """The hex of ``t``, which the caller knows to be on the board (a live AFV, the mover); raises ``ValueError``
    if it is not."""
    if t.hex is None:
        raise ValueError(f"tank {t.label} is not on the board")
    return t.hex
