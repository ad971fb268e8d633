"""One side's view as fixed-shape arrays, and every answer as an index of one discrete action table.

This is the layout shared by the PettingZoo and Gymnasium environments (:mod:`sim.env`), the ``learned`` doctrine
(:mod:`agents.policies.learned`) and the isolated protocol's opt-in ``arrays`` field, so a policy trained in the
environment plays unchanged in ``tanksim match`` and ``tanksim tournament``, in-process or isolated.

Everything is built from the public queries of :class:`agents.observation.Observation` (what the side may know:
its own tanks, the enemies it sees or may engage now, where it last saw the others, tanks out of the fight, the
public board), with numpy only.  The layout is **the same under every rule set**: the vocabularies below are fixed,
and a scenario enters only through the map's bounding box and the number of tanks per side.

Observation (``Encoded.arrays``; float32 unless noted; ``M`` own slots = the larger side's tank count, ``E`` = ``M``
enemy slots, ``H`` x ``W`` the map's bounding box in offset rows and columns, :class:`Layout`):

* ``board`` ``(C, H, W)``: per-hex planes, named in :data:`BOARD_PLANES`: the map (``on_map``, ``passable``, one
  plane per terrain of :data:`TERRAINS` and ``terrain_other``), ``objective`` (points / the scenario's largest),
  own tanks (``own`` count, ``own_facing_k`` for hull facing ``k``, ``own_actor``: the hexes of the tanks the
  decision asks about), enemies known now (``enemy`` count, ``enemy_facing_k``), ``enemy_last_known`` (enemies out
  of sight where last seen) and ``out_of_action`` (tanks of either side no longer fighting that are still on the
  board: wrecks, incapacitated tanks).  Counts are tanks in the hex (several may share one).
* ``own`` ``(M, F_own)``: per own tank slot (the side's tanks in scenario order), :data:`OWN_FEATURES`.
* ``enemy`` ``(E, F_enemy)``: per enemy slot (the enemy's tanks in scenario order), :data:`ENEMY_FEATURES`; a hidden
  enemy shows only ``exists`` and, if it was seen before, ``remembered`` with its last hex.
* ``decision`` ``(K,)``: :data:`DECISION_FEATURES`: the decision kind, rule set, side and role one-hot, the turn
  as a fraction of the turn limit, and a few context facts.
* ``action_mask`` ``(A,)`` int8, 1 = legal (PettingZoo Classic's convention).

Row and column of hex ``(q, r)``: ``col = q - q0``, ``row = r + q // 2 - row0`` (offset columns of the flat-top
layout; a ``rectangle`` map fills the grid, other shapes leave cells with ``on_map`` 0).  ``row`` / ``col``
features are these divided by ``H - 1`` / ``W - 1``.

Actions (:class:`ActionTable`, ``A = 2 + M * P``): index 0 is the decision's **default** (always legal: it is what
the rules apply when no answer is given), index 1 is **pass**; then, for own slot ``i``, ``P`` verbs at
``2 + i * P + v``: :data:`SLOT_VERBS` (step to the neighbour in direction ``k``, pivot to facing ``f``, activate in
each mode of :data:`MODES`, the ``end_move`` variants, ``recentre_turret``, ``stop``, ``delay``) followed by, per
enemy slot ``j``, :data:`TARGET_VERBS` (fire at, ram, ``motion_fire``, ``focus``, ``intimidate``).

The mask (:meth:`ActionTable.mask`) is the rule set's legality asked through the observation
(``obs.is_legal``), for the candidates each decision can take (DECISION, documented for users):

* the actions of the decision's own actors only;
* ``activate`` decisions: the ``Activate`` verbs of the modes ``obs.modes(actor)`` offers, and ``Ram`` at the
  visible enemies where the rule set has ramming (Hummel Quest accepts a ram there);
* other decisions: ``Step`` / ``Pivot`` where the decision takes a move (``legal.plan_to``) or is an ``evade``
  (a step to a neighbouring hex; the farther evasions of Hummel Quest §12.3 are the default's); the specials the
  decision lists in ``legal.specials`` (of the ``end_move`` variants, those the rule set tells apart: Panzer
  Squadron's markers, ASL's Motion, Hummel Quest's end facings; the others would only repeat one of them);
  ``Fire`` at the actor's ``targets``; ``Ram`` and the targeted specials at the enemies the side knows now
  (visible, a legal target, or the mover / rammer that caused the decision).

So a mask entry of 1 is always a legal answer, and the table is a subset of all legal answers: it has no whole move
plans, no area fire at a hex, no ammunition choice, no evasion beyond one hex (the default covers the farthest).
An index whose action cannot be formed (an empty slot, a tank off the board) decodes to
``Special(None, "unavailable")``, which every rule set rejects.
"""
from __future__ import annotations

import importlib
import inspect
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sim.actions import Action, Activate, Fire, Pass, Pivot, Ram, Special, Step
from sim.hexgrid import Hex

if TYPE_CHECKING:
    from agents.observation import DecisionView

#: Decision kinds of the three rule sets (DESIGN.md); anything else is ``other``, no decision is ``none``.
DECISION_KINDS = ("activate", "move", "move_step", "fire", "fire_again", "react", "ram", "evade",
                  "recentre_turret", "attack")
#: Action modes of ``Activate`` across the rule sets.
MODES = ("hold", "fire", "move", "move_and_fire", "ambush", "ram")
#: Tank statuses (``sim.events.Status``).
STATUSES = ("active", "destroyed", "incapacitated", "withdrawn", "exited", "fled")
#: Terrain names of the three rule sets (a test checks each rule set's ``terrain_names`` is covered).
TERRAINS = ("open", "road", "woods", "smoke", "rocks", "rubble", "wall", "building", "stone_building", "hill",
            "water")
RULESETS = ("panzer_squadron", "asl", "hummel_quest")
ROLES = ("attacker", "defender", "none")
#: ``end_move`` statuses the rule sets name (Panzer Squadron markers, ASL Motion).
END_STATUSES = ("stationary", "in_movement", "motion")

BOARD_PLANES = ("on_map", "passable", *(f"terrain_{t}" for t in TERRAINS), "terrain_other", "objective",
                "own", *(f"own_facing_{k}" for k in range(6)), "own_actor",
                "enemy", *(f"enemy_facing_{k}" for k in range(6)), "enemy_last_known", "out_of_action")
OWN_FEATURES = ("exists", "live", *(f"status_{s}" for s in STATUSES), "row", "col",
                *(f"facing_{k}" for k in range(6)), "has_turret", *(f"turret_{k}" for k in range(6)),
                "actor", "first_actor")
ENEMY_FEATURES = ("exists", "visible", "remembered", "out", *(f"status_{s}" for s in STATUSES), "row", "col",
                  *(f"facing_{k}" for k in range(6)), "target", "acting")
DECISION_FEATURES = (*(f"kind_{k}" for k in DECISION_KINDS), "kind_other", "kind_none",
                     *(f"ruleset_{r}" for r in RULESETS), "ruleset_other", "side_0", "side_1",
                     *(f"role_{r}" for r in ROLES), "turn", "mp", "interrupted", "compulsory", "can_fire", "final",
                     "has_ramming")

#: A verb of an own slot: ``(name, argument)``; the argument is a direction or facing (``int``), a mode, status or
#: special name (``str``), or ``None``.
SlotVerb = tuple[str, int | str | None]
SLOT_VERBS: tuple[SlotVerb, ...] = (
    *(("step", k) for k in range(6)), *(("pivot", f) for f in range(6)), *(("activate", m) for m in MODES),
    ("end_move", None), *(("end_move_status", s) for s in END_STATUSES),
    *(("end_move_facing", f) for f in range(6)),
    ("special", "recentre_turret"), ("special", "stop"), ("special", "delay"))
TARGET_VERBS = ("fire", "ram", "motion_fire", "focus", "intimidate")
DEFAULT, PASS = 0, 1

_P = {name: i for i, name in enumerate(BOARD_PLANES)}
_OWN = {name: i for i, name in enumerate(OWN_FEATURES)}
_EN = {name: i for i, name in enumerate(ENEMY_FEATURES)}
_DEC = {name: i for i, name in enumerate(DECISION_FEATURES)}
_TERRAIN_PLANE = {t: _P[f"terrain_{t}"] for t in TERRAINS}
_CONTEXT_ENEMIES = ("mover", "rammer")


class ObservationLike(Protocol):
    """The public queries of :class:`agents.observation.Observation` the encoder uses."""

    side: int

    @property
    def decision(self) -> DecisionView: ...  # read only (an observation's Decision matches)

    @property
    def actor(self) -> int | None: ...  # read only: an observation's actor (an ``int`` one matches too)
    @property
    def ruleset(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def turn(self) -> int: ...
    @property
    def turn_limit(self) -> int: ...
    @property
    def has_ramming(self) -> bool: ...
    def tank(self, tid: int) -> Any: ...
    def visible_ids(self) -> tuple[int, ...]: ...
    def last_known(self) -> Mapping[int, Hex]: ...
    def objectives(self) -> list[Mapping[str, Any]]: ...
    def targets(self, actor: int | None = None) -> tuple[int, ...]: ...
    def modes(self, actor: int | None = None) -> tuple[str, ...]: ...
    def is_legal(self, action: Any) -> bool: ...
    def passable(self, h: Any) -> bool: ...
    def terrain_map(self) -> Mapping[Hex, str]: ...
    def order_of_battle(self) -> tuple[tuple[int, ...], ...]: ...


# --- layout ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """The shapes of one side's arrays in one scenario.

    ``side``: the side index; ``own_ids`` / ``enemy_ids``: tank ids by slot (scenario order); ``slots`` (``M``):
    own and enemy slots (the larger side's tank count, so both sides get the same shapes); ``q0`` / ``row0``:
    the grid origin; ``height`` / ``width``: the grid (rows x columns); ``cells``: the map's cells; ``n_tanks``:
    tanks in the battle (the largest count a hex plane may hold)."""

    side: int
    own_ids: tuple[int, ...]
    enemy_ids: tuple[int, ...]
    slots: int
    q0: int
    row0: int
    height: int
    width: int
    cells: tuple[Hex, ...]
    n_tanks: int

    @staticmethod
    def of(obs: ObservationLike) -> Layout:
        """The layout of ``obs``'s side in its battle (public facts only: the map and the order of battle)."""
        oob = obs.order_of_battle()
        if len(oob) != 2:
            raise ValueError(f"the array layout needs two sides, the battle has {len(oob)}")
        cells = tuple(obs.terrain_map())
        qs = [h.q for h in cells]
        rows = [h.r + h.q // 2 for h in cells]
        side = obs.side
        return Layout(side, tuple(oob[side]), tuple(oob[1 - side]), max(len(s) for s in oob), min(qs), min(rows),
                      max(rows) - min(rows) + 1, max(qs) - min(qs) + 1, cells, sum(len(s) for s in oob))

    def cell(self, h: Hex) -> tuple[int, int]:
        """``(row, col)`` of hex ``h`` in the grid (may fall outside for a hex off the map)."""
        return h.r + h.q // 2 - self.row0, h.q - self.q0

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of every array (``action_mask`` included)."""
        return {"board": (len(BOARD_PLANES), self.height, self.width), "own": (self.slots, len(OWN_FEATURES)),
                "enemy": (self.slots, len(ENEMY_FEATURES)), "decision": (len(DECISION_FEATURES),),
                "action_mask": (ActionTable(self).size,)}

    def highs(self) -> dict[str, float]:
        """The upper bound of every array's values (the lower bound is 0): hex planes hold counts of tanks."""
        return {"board": float(max(1, self.n_tanks)), "own": 1.0, "enemy": 1.0, "decision": 1.0, "action_mask": 1}


# --- actions ---------------------------------------------------------------------------------------------------------
def unavailable(index: int) -> Action:
    """The action an index decodes to when it names no action here (rejected by every rule set)."""
    return Special(None, "unavailable", {"index": int(index)})


@dataclass(frozen=True)
class ActionTable:
    """The discrete action space of one side in one scenario (see the module docstring for the index layout).

    ``size`` is ``A = 2 + M * P`` with ``P = len(SLOT_VERBS) + M * len(TARGET_VERBS)``."""

    layout: Layout

    @property
    def per_slot(self) -> int:
        return len(SLOT_VERBS) + self.layout.slots * len(TARGET_VERBS)

    @property
    def size(self) -> int:
        return 2 + self.layout.slots * self.per_slot

    def index(self, slot: int, verb: tuple[str, Any] | str, target_slot: int | None = None) -> int:
        """The index of ``verb`` (an entry of :data:`SLOT_VERBS`, or a :data:`TARGET_VERBS` name with
        ``target_slot``) for own ``slot``."""
        base = 2 + slot * self.per_slot
        if isinstance(verb, str):
            assert target_slot is not None
            return base + len(SLOT_VERBS) + target_slot * len(TARGET_VERBS) + TARGET_VERBS.index(verb)
        return base + SLOT_VERBS.index(verb)

    def describe(self, index: int) -> str:
        """A readable name of ``index`` (e.g. ``"slot 1: fire at enemy slot 2"``)."""
        if index == DEFAULT:
            return "default"
        if index == PASS:
            return "pass"
        slot, v = divmod(int(index) - 2, self.per_slot)
        if v < len(SLOT_VERBS):
            name, arg = SLOT_VERBS[v]
            return f"slot {slot}: {name}" + ("" if arg is None else f" {arg}")
        j, t = divmod(v - len(SLOT_VERBS), len(TARGET_VERBS))
        return f"slot {slot}: {TARGET_VERBS[t]} enemy slot {j}"

    def action(self, index: int, decision: DecisionView, hexes: Mapping[int, Hex | None]) -> Action:
        """The :class:`~sim.actions.Action` index ``index`` stands for at ``decision`` (``hexes``: where the
        side's own tanks stand, for steps).  Raises ``IndexError`` outside ``0 .. size - 1``."""
        index = int(index)
        if not 0 <= index < self.size:
            raise IndexError(f"action {index} is outside the action space 0..{self.size - 1}")
        if index == DEFAULT:
            return decision.default
        actors = tuple(decision.actors)
        if index == PASS:
            return Pass(actors[0] if len(actors) == 1 else None)
        slot, v = divmod(index - 2, self.per_slot)
        lay = self.layout
        if slot >= len(lay.own_ids):
            return unavailable(index)
        a = lay.own_ids[slot]
        if v < len(SLOT_VERBS):
            match SLOT_VERBS[v]:
                case ("step", int(k)):
                    h = hexes.get(a)
                    return unavailable(index) if h is None else Step(a, h.neighbour(k))
                case ("pivot", int(f)):
                    return Pivot(a, f)
                case ("activate", str(mode)):
                    return Activate(a, mode)
                case ("end_move", None):
                    return Special(a, "end_move", {})
                case ("end_move_status", str(status)):
                    return Special(a, "end_move", {"status": status})
                case ("end_move_facing", int(f)):
                    return Special(a, "end_move", {"facing": f})
                case ("special", str(name)):
                    return Special(a, name, {})
                case other:
                    raise AssertionError(f"SLOT_VERBS entry {other!r} has no action")
        j, t = divmod(v - len(SLOT_VERBS), len(TARGET_VERBS))
        if j >= len(lay.enemy_ids):
            return unavailable(index)
        e = lay.enemy_ids[j]
        verb = TARGET_VERBS[t]
        if verb == "fire":
            return Fire(a, e)
        if verb == "ram":
            return Ram(a, e)
        return Special(a, verb, {"target": e})

    @cached_property
    def _idle(self) -> np.ndarray:
        m = np.zeros(self.size, dtype=np.int8)
        m[DEFAULT] = 1
        return m

    def mask(self, obs: ObservationLike | None, decision: DecisionView | None) -> np.ndarray:
        """``(A,)`` int8: 1 where the index is a legal answer to ``decision`` for ``obs``'s side (module docstring:
        which candidates are asked).  ``decision`` ``None`` (nothing to answer) gives only the default."""
        m = self._idle.copy()
        lay = self.layout
        if obs is None or decision is None or decision.side != lay.side:
            return m
        legal = obs.decision.legal
        actors = tuple(decision.actors)
        ok = obs.is_legal
        if ok(Pass(actors[0] if len(actors) == 1 else None)):
            m[PASS] = 1
        activating = decision.kind == "activate"
        moving = legal.plan_to is not None or decision.kind == "evade"
        specials = set(legal.specials)
        ramming = obs.has_ramming
        ctx = decision.context
        known = set(obs.visible_ids()) | {e for k in _CONTEXT_ENEMIES if isinstance(e := ctx.get(k), int)}
        slot_of, enemy_slot = self._own_slot, self._enemy_slot
        end_moves = _END_MOVES_BY_RULESET.get(obs.ruleset, _END_MOVES)
        per, nt = self.per_slot, len(TARGET_VERBS)
        for a in actors:
            slot = slot_of.get(a)
            if slot is None:
                continue
            h = obs.tank(a).hex
            if h is None:
                continue
            base = 2 + slot * per
            tbase = base + _N_SLOT_VERBS
            if activating:
                for mode in obs.modes(a):
                    v = _MODE_VERB.get(mode)
                    if v is not None and ok(Activate(a, mode)):
                        m[base + v] = 1
                if ramming:
                    for e in sorted(known & enemy_slot.keys()):
                        if ok(Ram(a, e)):
                            m[tbase + enemy_slot[e] * nt + _RAM] = 1
                continue
            if moving:
                for k in range(6):
                    if ok(Step(a, h.neighbour(k))):
                        m[base + _STEP0 + k] = 1
                    if ok(Pivot(a, k)):
                        m[base + _PIVOT0 + k] = 1
            if "end_move" in specials:
                for v, args in end_moves:
                    if ok(Special(a, "end_move", args)):
                        m[base + v] = 1
            for v, name in _SPECIALS:
                if name in specials and ok(Special(a, name, {})):
                    m[base + v] = 1
            targets = set(obs.targets(a))
            targeted = [(t, verb) for t, verb in _TARGET_SPECIALS if verb in specials]
            for e in sorted((known | targets) & enemy_slot.keys()):
                j = tbase + enemy_slot[e] * nt
                if e in targets and ok(Fire(a, e)):
                    m[j + _FIRE] = 1
                if ramming and ok(Ram(a, e)):
                    m[j + _RAM] = 1
                for t, verb in targeted:
                    if ok(Special(a, verb, {"target": e})):
                        m[j + t] = 1
        return m

    @cached_property
    def _own_slot(self) -> dict[int, int]:
        return {tid: i for i, tid in enumerate(self.layout.own_ids)}

    @cached_property
    def _enemy_slot(self) -> dict[int, int]:
        return {tid: j for j, tid in enumerate(self.layout.enemy_ids)}


_N_SLOT_VERBS = len(SLOT_VERBS)
_STEP0 = SLOT_VERBS.index(("step", 0))
_PIVOT0 = SLOT_VERBS.index(("pivot", 0))
_MODE_VERB = {m: SLOT_VERBS.index(("activate", m)) for m in MODES}
_END_MOVES: tuple[tuple[int, Mapping[str, str | int]], ...] = ((SLOT_VERBS.index(("end_move", None)), {}),
              *((SLOT_VERBS.index(("end_move_status", st)), {"status": st}) for st in END_STATUSES),
              *((SLOT_VERBS.index(("end_move_facing", f)), {"facing": f}) for f in range(6)))
#: The ``end_move`` variants each rule set tells apart (its spec): Panzer Squadron the marker (D20), ASL Motion
#: (asl.md 5), Hummel Quest the end facing (§4).  The rule sets accept the other variants too but ignore what
#: they do not know, so offering them would only duplicate an action; a rule set not listed gets them all.
_END_MOVES_BY_RULESET = {
    "panzer_squadron": tuple(e for e in _END_MOVES if set(e[1]) <= {"status"} and e[1].get("status") != "motion"),
    "asl": tuple(e for e in _END_MOVES if not e[1] or e[1].get("status") == "motion"),
    "hummel_quest": tuple(e for e in _END_MOVES if set(e[1]) <= {"facing"}),
}
_SPECIALS = tuple((v, arg) for v, (name, arg) in enumerate(SLOT_VERBS) if name == "special" and isinstance(arg, str))
_FIRE, _RAM = TARGET_VERBS.index("fire"), TARGET_VERBS.index("ram")
_TARGET_SPECIALS = tuple((t, verb) for t, verb in enumerate(TARGET_VERBS) if verb not in ("fire", "ram"))


# --- observation arrays ----------------------------------------------------------------------------------------------
@dataclass
class Encoder:
    """Turns observations of one side into arrays (:meth:`encode`); keeps the map's planes until its terrain
    changes.  Build it with :meth:`for_observation` (or from a :class:`Layout`)."""

    layout: Layout
    table: ActionTable = field(init=False)
    _terrain: Mapping[Hex, str] | None = field(default=None, init=False, repr=False)
    _static: np.ndarray | None = field(default=None, init=False, repr=False)
    _by_terrain: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _dec_key: tuple | None = field(default=None, init=False, repr=False)
    _dec: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.table = ActionTable(self.layout)

    @staticmethod
    def for_observation(obs: ObservationLike) -> Encoder:
        return Encoder(Layout.of(obs))

    def _map_planes(self, obs: ObservationLike) -> np.ndarray:
        terrain = obs.terrain_map()
        if terrain is self._terrain and self._static is not None:
            return self._static
        key = tuple(terrain.values())
        if key in self._by_terrain:
            known = self._by_terrain[key]
            self._terrain, self._static = terrain, known
            return known
        lay = self.layout
        planes = np.zeros((len(BOARD_PLANES), lay.height, lay.width), dtype=np.float32)
        for h, name in terrain.items():
            r, c = lay.cell(h)
            planes[_P["on_map"], r, c] = 1.0
            if obs.passable(h):
                planes[_P["passable"], r, c] = 1.0
            planes[_TERRAIN_PLANE.get(name, _P["terrain_other"]), r, c] = 1.0
        objectives = obs.objectives()
        top = max((float(o.get("points", 0) or 0) for o in objectives), default=0.0)
        for o in objectives:
            if top > 0 and o["hex"] in terrain:
                r, c = lay.cell(o["hex"])
                planes[_P["objective"], r, c] = max(planes[_P["objective"], r, c],
                                                    float(o.get("points", 0) or 0) / top)
        self._terrain, self._static = terrain, planes
        if len(self._by_terrain) < 8:    # the same map in battle after battle (objectives are static too)
            self._by_terrain[key] = planes
        return planes

    def _decision_base(self, obs: ObservationLike) -> np.ndarray:
        """The decision features that stay for the battle: rule set, side, role, ramming."""
        key = (obs.ruleset, obs.role, bool(obs.has_ramming))
        dec = self._dec
        if self._dec_key != key or dec is None:
            dec = np.zeros(len(DECISION_FEATURES), dtype=np.float32)
            dec[_DEC[f"ruleset_{key[0]}" if key[0] in RULESETS else "ruleset_other"]] = 1.0
            dec[_DEC[f"side_{self.layout.side}"]] = 1.0
            dec[_DEC[f"role_{key[1]}" if key[1] in ROLES else "role_none"]] = 1.0
            dec[_DEC["has_ramming"]] = float(key[2])
            self._dec_key, self._dec = key, dec
        return dec

    def encode(self, obs: ObservationLike, decision: DecisionView | None = None) -> Encoded:
        """The arrays of ``obs`` (its side's view) at ``decision`` (``None``: the side has nothing to answer; the
        mask then offers only the default).  Only public queries of the observation are used."""
        lay = self.layout
        nf_own, nf_en = len(OWN_FEATURES), len(ENEMY_FEATURES)
        own_rows = [[0.0] * nf_own for _ in range(lay.slots)]
        enemy_rows = [[0.0] * nf_en for _ in range(lay.slots)]
        board = self._map_planes(obs).copy()
        dec = self._decision_base(obs).copy()
        mine = decision if decision is not None and decision.side == lay.side else None  # a decision of this side
        actors = tuple(mine.actors) if mine is not None else ()
        hr, wc = 1.0 / max(1, lay.height - 1), 1.0 / max(1, lay.width - 1)
        row0, q0 = lay.row0, lay.q0
        hexes: dict[int, Hex | None] = {}

        for i, tid in enumerate(lay.own_ids):
            t = obs.tank(tid)
            status, h = t.status, t.hex
            row = own_rows[i]
            row[_O_EXISTS] = 1.0
            k = _O_STATUS.get(status)
            if k is not None:
                row[k] = 1.0
            hexes[tid] = h
            if h is None:
                continue
            r, c = h.r + h.q // 2 - row0, h.q - q0
            row[_O_ROW], row[_O_COL] = r * hr, c * wc
            if status == "active":
                f = t.facing % 6
                row[_O_LIVE] = 1.0
                row[_O_FACING + f] = 1.0
                board[_P_OWN, r, c] += 1.0
                board[_P_OWN_FACING + f, r, c] = 1.0
            else:
                board[_P_OUT, r, c] += 1.0
            tf = t.turret_facing
            if tf is not None:
                row[_O_TURRET] = 1.0
                row[_O_TURRET0 + tf % 6] = 1.0
            if tid in actors:
                row[_O_ACTOR] = 1.0
                board[_P_ACTOR, r, c] = 1.0
                if tid == actors[0]:
                    row[_O_FIRST] = 1.0

        visible = set(obs.visible_ids())
        last = obs.last_known()
        ctx: Mapping[str, Any] = mine.context if mine is not None else {}
        acting = {ctx.get(k) for k in _CONTEXT_ENEMIES} - {None}
        targets: set[int] = set()
        if mine is not None and mine.kind != "activate":
            for a in actors:
                if hexes.get(a) is not None:
                    targets.update(obs.targets(a))
        known = visible | targets | acting
        for j, tid in enumerate(lay.enemy_ids):
            row = enemy_rows[j]
            row[_E_EXISTS] = 1.0
            try:
                t = obs.tank(tid)
            except KeyError:
                t = None                       # a live enemy the side does not know now
            status = None if t is None else t.status
            if t is None or (status == "active" and tid not in known):
                h = last.get(tid)
                if h is not None:
                    r, c = h.r + h.q // 2 - row0, h.q - q0
                    row[_E_REMEMBERED] = 1.0
                    row[_E_ROW], row[_E_COL] = r * hr, c * wc
                    if 0 <= r < lay.height and 0 <= c < lay.width:
                        board[_P_LAST, r, c] += 1.0
                continue
            k = _E_STATUS.get(t.status)
            if k is not None:
                row[k] = 1.0
            h = t.hex
            if h is not None:
                r, c = h.r + h.q // 2 - row0, h.q - q0
                row[_E_ROW], row[_E_COL] = r * hr, c * wc
            if status != "active":
                row[_E_OUT] = 1.0
                if h is not None:
                    board[_P_OUT, r, c] += 1.0
                continue
            row[_E_VISIBLE] = 1.0
            if tid in targets:
                row[_E_TARGET] = 1.0
            if tid in acting:
                row[_E_ACTING] = 1.0
            if h is not None:
                f = t.facing % 6
                row[_E_FACING + f] = 1.0
                board[_P_ENEMY, r, c] += 1.0
                board[_P_ENEMY_FACING + f, r, c] = 1.0

        kind = mine.kind if mine is not None else None
        dec[_DEC_KIND.get(kind, _DEC["kind_other"]) if kind is not None else _DEC["kind_none"]] = 1.0
        dec[_DEC_TURN] = min(1.0, max(0.0, obs.turn / max(1, obs.turn_limit)))
        if mine is not None:
            mp = ctx.get("mp")
            if isinstance(mp, (int, float)) and not isinstance(mp, bool):
                dec[_DEC_MP] = min(1.0, max(0.0, float(mp) / 32.0))
            for flag, i in _DEC_FLAGS:
                if ctx.get(flag):
                    dec[i] = 1.0
        own = np.array(own_rows, dtype=np.float32)
        enemy = np.array(enemy_rows, dtype=np.float32)
        mask = self.table.mask(obs, decision)
        return Encoded({"board": board, "own": own, "enemy": enemy, "decision": dec, "action_mask": mask},
                       self.table, decision, hexes)


_P_OWN, _P_OWN_FACING, _P_ACTOR = _P["own"], _P["own_facing_0"], _P["own_actor"]
_P_ENEMY, _P_ENEMY_FACING, _P_LAST, _P_OUT = _P["enemy"], _P["enemy_facing_0"], _P["enemy_last_known"], \
    _P["out_of_action"]
_O_EXISTS, _O_LIVE, _O_ROW, _O_COL = _OWN["exists"], _OWN["live"], _OWN["row"], _OWN["col"]
_O_FACING, _O_TURRET, _O_TURRET0 = _OWN["facing_0"], _OWN["has_turret"], _OWN["turret_0"]
_O_ACTOR, _O_FIRST = _OWN["actor"], _OWN["first_actor"]
_O_STATUS = {s: _OWN[f"status_{s}"] for s in STATUSES}
_E_EXISTS, _E_VISIBLE, _E_REMEMBERED, _E_OUT = _EN["exists"], _EN["visible"], _EN["remembered"], _EN["out"]
_E_ROW, _E_COL, _E_FACING, _E_TARGET, _E_ACTING = _EN["row"], _EN["col"], _EN["facing_0"], _EN["target"], \
    _EN["acting"]
_E_STATUS = {s: _EN[f"status_{s}"] for s in STATUSES}
_DEC_KIND = {k: _DEC[f"kind_{k}"] for k in DECISION_KINDS}
_DEC_TURN, _DEC_MP = _DEC["turn"], _DEC["mp"]
_DEC_FLAGS = tuple((k, _DEC[k]) for k in ("interrupted", "compulsory", "can_fire", "final"))


@dataclass(frozen=True)
class Encoded:
    """One side's view at one decision as arrays, and the way back from an index to an action.

    ``arrays``: ``board``, ``own``, ``enemy``, ``decision`` and ``action_mask`` (module docstring); ``table``: the
    action table; ``decision``: what it answers (``None`` if nothing); ``hexes``: own tank id -> hex."""

    arrays: dict[str, np.ndarray]
    table: ActionTable
    decision: DecisionView | None
    hexes: Mapping[int, Hex | None]

    @property
    def mask(self) -> np.ndarray:
        return self.arrays["action_mask"]

    def action(self, index: int) -> Action:
        """The action of ``index`` (raises ``IndexError`` outside the table, ``ValueError`` with no decision)."""
        if self.decision is None:
            raise ValueError("no decision to answer")
        return self.table.action(index, self.decision, self.hexes)

    def choices(self) -> int:
        """How many different actions the mask allows (1: the decision is trivial, only the default)."""
        legal = np.flatnonzero(self.mask)
        if len(legal) > 3:
            return len(legal)
        return len({repr(self.action(int(i))) for i in legal})

    def flat(self) -> np.ndarray:
        """Every array but the mask, flattened and joined in the order board, own, enemy, decision (float32)."""
        a = self.arrays
        return np.concatenate([a["board"].ravel(), a["own"].ravel(), a["enemy"].ravel(), a["decision"]])

    def to_json(self) -> dict[str, Any]:
        """The protocol's ``arrays`` field: shapes, the arrays as nested lists, and the slot -> tank id maps."""
        lay = self.table.layout
        return {"shapes": {k: list(v.shape) for k, v in self.arrays.items()},
                "arrays": {k: v.tolist() for k, v in self.arrays.items()},
                "own_ids": list(lay.own_ids), "enemy_ids": list(lay.enemy_ids),
                "hexes": {str(k): None if h is None else [h.q, h.r] for k, h in self.hexes.items()},
                "layout": {"side": lay.side, "slots": lay.slots, "q0": lay.q0, "row0": lay.row0,
                           "height": lay.height, "width": lay.width, "n_tanks": lay.n_tanks}}

    @staticmethod
    def from_json(d: Mapping[str, Any], decision: DecisionView) -> Encoded:
        """The inverse of :meth:`to_json` (the isolated child's side), answering ``decision``.  Raises
        ``ValueError`` for a malformed field."""
        try:
            ly = d["layout"]
            lay = Layout(int(ly["side"]), tuple(int(x) for x in d["own_ids"]),
                         tuple(int(x) for x in d["enemy_ids"]), int(ly["slots"]), int(ly["q0"]), int(ly["row0"]),
                         int(ly["height"]), int(ly["width"]), (), int(ly["n_tanks"]))
            dtypes = {"action_mask": np.int8}
            arrays = {k: np.asarray(v, dtype=dtypes.get(k, np.float32)).reshape(d["shapes"][k])
                      for k, v in d["arrays"].items()}
            hexes = {int(k): None if h is None else Hex(int(h[0]), int(h[1])) for k, h in d["hexes"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed arrays field: {type(exc).__name__}: {exc}") from None
        return Encoded(arrays, ActionTable(lay), decision, hexes)


# --- callables -------------------------------------------------------------------------------------------------------
#: A learned policy: ``(observation arrays, mask) -> index`` or ``(observation arrays, mask, rng) -> index``.
PolicyFn = Callable[..., int]


def random_masked(observation: Mapping[str, np.ndarray], mask: np.ndarray, rng: random.Random) -> int:
    """A uniformly random legal index of ``mask`` drawn from ``rng`` (the masked random agent)."""
    legal = np.flatnonzero(mask)
    return int(legal[rng.randrange(len(legal))]) if len(legal) else DEFAULT


def takes_rng(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a third argument (the side's random stream): a parameter named ``rng`` or a third
    positional one."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    params = list(sig.parameters.values())
    if any(p.name == "rng" for p in params) or any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3


def load_callable(target: str) -> Callable[..., Any]:
    """The object named ``"package.module:name"`` (a dotted ``name`` reaches attributes); raises ``LookupError``
    naming what was not found, ``TypeError`` if it is not callable."""
    mod_name, sep, attr = str(target).strip().partition(":")
    if not sep or not mod_name or not attr:
        raise LookupError(f"{target!r}: expected package.module:name")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
            raise LookupError(f"{target!r}: module {mod_name!r} not found (is its folder on sys.path / "
                              f"PYTHONPATH?)") from None
        raise
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LookupError(f"{target!r}: {mod_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target!r} is not callable")
    return obj


def flatten(observation: Mapping[str, np.ndarray]) -> np.ndarray:
    """The ``flat`` vector of a ``dict`` observation (board, own, enemy, decision; float32): what
    :meth:`Encoded.flat` and the environments' ``obs_type="flat"`` give, so a policy trained on flat vectors can
    read the dict the ``learned`` doctrine hands it."""
    return np.concatenate([np.asarray(observation[k], dtype=np.float32).ravel()
                           for k in ("board", "own", "enemy", "decision")])
