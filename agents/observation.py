"""Observation: the lazy, read-only view one decision gives a controller.

A doctrine sees only what this offers, and it is the same under every rule set:

* facts: ``ruleset`` (a name), ``has_ramming``, ``turn``, ``turn_limit``, ``role``, ``kind``, ``context``;
* tanks: ``me``, ``tank(id)``, ``friends()``, ``own_ids()``, ``enemies()`` / ``visible_ids()`` (visible, live),
  ``known_ids()`` (visible, or engageable by this decision), ``last_known()`` (enemy id -> hex), ``holder(hex)``,
  ``objectives()``;
* the decision: ``modes(actor)``, ``targets(actor)``, ``reachable(actor)`` (``{state: (cost, path)}``),
  ``plan_to(path)``, ``is_legal(action)``, ``ram_targets(actor)`` (the legal rams in one call);
* geometry: ``distance``, ``los``, ``passable``, ``distance_field``, ``hex_of`` / ``facing_of`` (of a movement
  state), ``facing_towards``, ``in_arc``, ``hypo(state)``;
* exact odds: ``odds(target, as_if=Hypo(hex, facing, moved))``, ``face(target, as_if)`` (the face struck),
  ``threat(hex, facing)`` (the summed kill odds of the visible enemies against the actor standing there),
  ``side_odds(target)`` (summed over the side's tanks);
* ``rng``: the side's own random stream (never the rule dice).

Only what the side may know goes into any answer (see :class:`Observation`): every query runs on the board without
the live enemies the side does not know, so where they stand changes nothing a policy can read
(``tests/test_observation_hiding.py`` checks every public query, in-process and over the isolation protocol).

Tanks come as :class:`TankView` proxies that refuse writes; mappings come as read-only mappings, lists as tuples,
rule-set records behind read-only proxies.  No dice and no rule-set object are reachable through the public API
(names starting with ``_`` are private and not part of it).

Speed: everything is computed on first access.  Odds, threats and visibility are cached under the battle's version
and shared by every observation of that battle (an activation decision asks about every actor, a greedy doctrine
about many hypothetical states: each distinct question is computed once until an event changes the board);
``targets`` and ``reachable`` are cached per decision.  Where the rule set's shots are pair-local
(``pair_local_shots``: Panzer Squadron unless live tanks block sight; Hummel Quest only without tank cover and
spotting) or read only the occupants of a footprint besides the pair (``shots_read_footprint_occupants``: ASL, where
live AFVs on the line hinder), threats are also kept across versions, term by term, and only the terms of the tanks
an event changed (``BattleState.state_changes``), of the footprints a changed tank left or entered
(``BattleState.state_change_hexes``) or of the pairs a new wreck may block are redone
(:meth:`Observation._lasting_threat`; Panzer Squadron keeps its shots the same way).
"""
from __future__ import annotations

import contextlib
import functools
import random
import weakref
from collections.abc import Callable
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol

from sim.actions import Action, Ram
from sim.battle import BattleState, BoardView, HypoView, StandInView, tanks_named_since
from sim.hexgrid import Hex, as_hex, cube_vector, distance, in_arc, rotate_cube
from sim.rules.base import Decision, Hypo, Illegal, Legal, Odds

if TYPE_CHECKING:
    from sim.dice import DiceSource
    from sim.search import SearchBattle


class ReadOnlyError(AttributeError):
    """Raised when a policy tries to change the model through an observation."""


_IMMUTABLE = (str, int, float, bool, bytes, Fraction, type(None), frozenset)
#: Exact classes :func:`read_only` returns as they are without further checks.
_PLAIN = frozenset({str, int, float, bool, bytes, Fraction, type(None), Hex})


def read_only(v: Any) -> Any:
    """A read-only version of ``v``: mappings -> ``MappingProxyType`` (values converted too), lists and sets ->
    tuples / frozensets, plain immutable values and named tuples unchanged, other objects -> :class:`ReadOnly`."""
    cls = v.__class__
    if cls in _PLAIN:  # the exact classes first (a decision's context is mostly these): no ABC checks
        return v
    if cls is tuple and all(x.__class__ in _PLAIN for x in v):
        return v  # what the general case below makes of it: an equal tuple
    if cls is dict:
        return MappingProxyType({k: read_only(x) for k, x in v.items()})
    if isinstance(v, _IMMUTABLE) or isinstance(v, Hex):
        return v
    if isinstance(v, Mapping):
        return MappingProxyType({k: read_only(x) for k, x in v.items()})
    if isinstance(v, tuple):
        return v if hasattr(v, "_fields") else tuple(read_only(x) for x in v)
    if isinstance(v, list):
        return tuple(read_only(x) for x in v)
    if isinstance(v, set):
        return frozenset(v)
    if callable(v):
        return v
    return ReadOnly(v)


class ReadOnly:
    """Attribute proxy that refuses writes and returns read-only values (used for rule-set records such as a
    tank's ``vehicle``)."""

    __slots__ = ("_o",)

    def __init__(self, o: Any):
        object.__setattr__(self, "_o", o)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return read_only(getattr(object.__getattribute__(self, "_o"), name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        o = object.__getattribute__(self, "_o")
        return o == (object.__getattribute__(other, "_o") if isinstance(other, ReadOnly) else other)

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_o"))

    def __repr__(self) -> str:
        return f"ReadOnly({object.__getattribute__(self, '_o')!r})"


class TankView:
    """Read-only view of a tank: ``tank_id``, ``label``, ``side``, ``vehicle_id``, ``vehicle`` (read-only record),
    ``hex`` (``None`` off the board), ``facing``, ``turret_facing``, ``status``, ``alive``, ``on_board``,
    ``rules_state`` and ``ext`` (read-only mappings).  Any write raises :class:`ReadOnlyError`."""

    __slots__ = ("_t",)
    FIELDS = frozenset({"tank_id", "label", "side", "vehicle_id", "vehicle", "hex", "facing", "turret_facing",
                        "status", "alive", "on_board", "rules_state", "ext"})

    def __init__(self, t: Any):
        object.__setattr__(self, "_t", t)

    def __getattr__(self, name: str) -> Any:
        if name not in TankView.FIELDS:
            raise AttributeError(f"TankView has no field {name!r}; fields: {', '.join(sorted(TankView.FIELDS))}")
        v = getattr(object.__getattribute__(self, "_t"), name)
        if name in ("rules_state", "ext", "vehicle"):
            return read_only(v)
        return v

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TankView) and other.tank_id == self.tank_id

    def __hash__(self) -> int:
        return hash(("TankView", self.tank_id))

    def __repr__(self) -> str:
        t = object.__getattribute__(self, "_t")
        return f"TankView({t.tank_id} {t.label!r} {t.vehicle_id} at {t.hex})"


def _plain_field(name: str) -> property:
    """A :class:`TankView` field read straight from the tank (an immutable value: no read-only copy): the same
    answer as ``__getattr__``, found without the failed lookup that reaches it (the doctrines read ``hex`` of
    every enemy many times a decision)."""
    def get(self: TankView) -> Any:
        return getattr(object.__getattribute__(self, "_t"), name)
    get.__name__ = name
    return property(get)


for _name in ("tank_id", "label", "side", "vehicle_id", "hex", "facing", "turret_facing", "status", "alive",
              "on_board"):
    setattr(TankView, _name, _plain_field(_name))
del _name


#: Per battle: [version, {question: answer}] -- answers valid until the next event (weak: dies with the battle).
_SHARED: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()


class _ExactSum:
    """An exact sum of fractions kept as integer numerators per denominator (the odds of one rule set share a few
    denominators, so this costs integer additions where summing ``Fraction`` objects costs a gcd each)."""

    __slots__ = ("_by_den",)

    def __init__(self) -> None:
        self._by_den: dict[int, int] = {}

    def add(self, x: Fraction) -> None:
        d = x.denominator
        self._by_den[d] = self._by_den.get(d, 0) + x.numerator

    def value(self) -> Fraction:
        """The sum (an exact ``Fraction``; 0 for no terms)."""
        return sum((Fraction(n, d) for d, n in self._by_den.items()), Fraction(0))


#: The side's view when it knows every enemy: the board itself (a reusable, re-entrant no-op context).
_NOTHING_HIDDEN = contextlib.nullcontext()


#: Per battle object: answers kept across versions, patched as tanks change (:meth:`Observation._lasting`; weak:
#: dies with the battle, a search copy has its own).
_LASTING: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
#: Most entries of one battle's lasting memo (emptied when full).
_LASTING_MAX = 8_000


def _NO_HEX(_h: Hex) -> bool:
    """The footprint of an answer that reads no obstacle: no hex touches it."""
    return False


def _sum_terms(terms: Mapping[Any, Fraction | None]) -> Fraction:
    """The exact sum of the terms that are not ``None`` (0 for none)."""
    total = _ExactSum()
    for x in terms.values():
        if x is not None:
            total.add(x)
    return total.value()


def _shared_cache(b: BoardView) -> dict:
    ent = _SHARED.get(b)
    if ent is None or ent[0] != b.version:
        ent = [b.version, {}]
        _SHARED[b] = ent
    return ent[1]


#: The read-only context :func:`frozen_decision` made last (held, so its id cannot be reused): an observation of
#: that decision takes it as it is rather than converting it again (issue 14: every policy call does both).
_FROZEN_CONTEXT: list[Any] = [None]


def frozen_decision(decision: Decision) -> Decision:
    """``decision`` with a read-only ``context`` (what a policy is handed)."""
    if isinstance(decision.context, MappingProxyType):
        return decision
    ctx = _FROZEN_CONTEXT[0] = read_only(decision.context)
    return Decision(decision.side, decision.kind, tuple(decision.actors), decision.legal, decision.default, ctx)


class LegalView(Protocol):
    """What a policy reads of ``decision.legal`` besides its queries: the modes, the specials and ``plan_to``
    (``None`` where the decision takes no move plan).  :class:`sim.rules.base.Legal`, :class:`SideLegal` and the
    isolated child's ``agents.remote.RemoteLegal`` have them."""

    @property
    def modes(self) -> tuple[str, ...]: ...
    @property
    def specials(self) -> tuple[str, ...]: ...
    @property
    def plan_to(self) -> Callable[..., Any] | None: ...


class DecisionView(Protocol):
    """A decision as a policy is handed it: the fields of :class:`sim.rules.base.Decision` (in the isolated child,
    ``agents.remote.RemoteDecision``), read-only."""

    @property
    def side(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def actors(self) -> tuple[int, ...]: ...
    @property
    def legal(self) -> LegalView: ...
    @property
    def default(self) -> Action: ...
    @property
    def context(self) -> Mapping[str, Any]: ...


class TankLike(Protocol):
    """What :class:`StateQueries` reads of the actor's tank (a :class:`TankView`, or the child's ``RemoteTank``)."""

    @property
    def hex(self) -> Hex | None: ...
    @property
    def facing(self) -> int: ...


class StateQueries:
    """Pure geometry helpers shared by :class:`Observation` and the isolated entrant's observation
    (``agents.remote``): distances, movement states, arcs, facings.  They need the subclass's ``actor``,
    ``decision`` and ``me`` (declared here for the type checker; set by each subclass)."""

    __slots__ = ()
    actor: int | None
    decision: DecisionView
    if TYPE_CHECKING:
        @property
        def me(self) -> TankLike | None: ...

    @staticmethod
    def distance(a: Any, b: Any) -> int:
        """Cube distance in hexes."""
        return distance(a, b)

    def modes(self, actor: int | None = None) -> tuple[str, ...]:
        """The action modes ``actor`` may choose in an ``activate`` decision (the rule set's names)."""
        a = self.actor if actor is None else actor
        per = self.decision.context.get("modes") or {}
        return tuple(per.get(a, self.decision.legal.modes))

    @staticmethod
    def hex_of(state: Any) -> Hex:
        """The hex of a movement state (``(hex, facing)`` or a bare hex)."""
        if isinstance(state, Hex):
            return state
        if isinstance(state, tuple) and len(state) >= 1 and isinstance(state[0], tuple):
            return as_hex(state[0])
        return as_hex(state)

    def facing_of(self, state: Any) -> int:
        """The facing of a movement state (the actor's facing if the state has none)."""
        if isinstance(state, tuple) and len(state) >= 2 and isinstance(state[0], tuple):
            return int(state[1])
        return self.me.facing if self.me else 0

    @staticmethod
    def in_arc(frm: Any, to: Any, facing: int) -> bool:
        """Whether ``to`` lies in the 120-degree arc of vertex ``facing`` seen from ``frm``."""
        return in_arc(frm, to, facing)

    @staticmethod
    def facing_towards(frm: Any, to: Any) -> int:
        """The vertex facing (0..5) pointing most directly from ``frm`` at ``to`` (ties: the lower index)."""
        v = cube_vector(frm, to)

        def centred(f: int) -> int:
            a, b, c = rotate_cube(v, f)
            return a - max(b, c)

        return max(range(6), key=lambda f: (centred(f), -f))

    def hypo(self, state: Any) -> Hypo:
        """The :class:`Hypo` of the actor standing in movement ``state`` (``moved`` if it left its hex)."""
        h = self.hex_of(state)
        return Hypo(h, self.facing_of(state), self.me is not None and h != self.me.hex)


def _plan_to(obs: Observation, actor: int, path: Any, then: Any = None, end_status: str | None = None) -> Any:
    """``SideLegal.plan_to``: own tank ``actor``'s move plan along ``path`` (:meth:`Observation.plan_to`)."""
    return obs.for_actor(actor).plan_to(path, then, end_status)


class SideLegal:
    """``decision.legal`` as a policy sees it: the rule set's :class:`~sim.rules.base.Legal` asked on the board as
    the side knows it (:meth:`Observation._side_view`), so no answer depends on an enemy the side does not know.

    Fields as :class:`~sim.rules.base.Legal`: ``contains(action)``, ``reachable(actor)``, ``targets(actor)``,
    ``modes``, ``specials``, ``plan_to`` (``None`` where the decision takes no move plan)."""

    __slots__ = ("_obs", "modes", "plan_to", "specials")
    _obs: Observation
    modes: tuple[str, ...]
    plan_to: Any
    specials: tuple[str, ...]

    def __init__(self, obs: Observation, legal: Legal):
        set_ = object.__setattr__
        set_(self, "_obs", obs)
        set_(self, "modes", tuple(legal.modes))
        set_(self, "specials", tuple(legal.specials))
        # the plan maker holds the observation, not this SideLegal (a bound method stored here would be a
        # reference cycle, freed only by the cyclic collector)
        set_(self, "plan_to", None if legal.plan_to is None else functools.partial(_plan_to, obs))

    def contains(self, action: Any) -> bool:
        """Whether ``action`` is legal, as far as the side knows (:meth:`Observation.is_legal`)."""
        return self._obs.is_legal(action)

    def reachable(self, actor: int) -> Mapping[Any, tuple[int, tuple]]:
        """``{state: (cost, path)}`` for own tank ``actor`` (:meth:`Observation.reachable`)."""
        return self._obs.reachable(actor)

    def targets(self, actor: int) -> tuple[int, ...]:
        """Target ids of own tank ``actor`` (:meth:`Observation.targets`)."""
        return self._obs.targets(actor)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __repr__(self) -> str:
        return f"SideLegal(modes={self.modes}, specials={self.specials})"


#: Context keys of a decision that name the enemy tank whose action caused it (a reaction's mover, an evasion's
#: rammer): that enemy is known for the decision.
ACTING_ENEMY_KEYS = ("mover", "rammer")


#: The key of the side's memory (:class:`Observation`'s ``last_known`` dict) under which the constructor notes how
#: far its records are current: ``(state_changes list, its length then, the visible ids then)``.
_MEMORY_SYNC = ("synced",)


#: Per battle, per side: ``[the ChangeMark then (sim.battle.tanks_named_since), live enemy ids (a set), the enemies
#: with status active in id order]`` (:func:`_enemy_ids`).
_ENEMY_IDS: "weakref.WeakKeyDictionary[BattleState, dict[int, list[Any]]]" = weakref.WeakKeyDictionary()


def _enemy_ids(b: Any, side: int) -> tuple[set[int] | frozenset[int], tuple[int, ...]]:
    """``(live, active)`` for ``side`` on the board ``b``: the ids of the enemies that are live tanks
    (``b.live_tanks()``: status active, on the board) and, in id order, of those whose status is active
    (``TankState.alive``, on the board or not).  The caller must not change ``live``.

    On a :class:`~sim.battle.BattleState` outside a side's view kept per battle and side (:data:`_ENEMY_IDS`) and
    patched from ``state_changes``: a tank's status and hex change only through events naming it; built afresh
    when the battle's ``state_changes`` is another list or its version moved without an event.  Otherwise (a
    side's view, another board) computed from the tanks."""
    tanks = b.tanks
    if type(b) is not BattleState or b.hidden_tanks:
        return (frozenset(t.tank_id for t in b.live_tanks() if t.side != side),
                tuple(t.tank_id for t in tanks if t.side != side and t.alive))
    per = _ENEMY_IDS.get(b)
    if per is None:
        per = _ENEMY_IDS[b] = {}
    rec = per.get(side)
    now, named = tanks_named_since(b, None if rec is None else rec[0])
    if rec is not None and named is not None:
        if not named:
            return rec[1], rec[2]
        redo: Iterable[int] = named
        live, active = rec[1], set(rec[2])
    else:
        redo = range(len(tanks))
        live, active = set(), set()
    changed = False
    for i in redo:
        t = tanks[i]
        if t.side == side:
            continue
        on = t.alive
        if on != (i in active):
            changed = True
            if on:
                active.add(i)
            else:
                active.discard(i)
        if on and t.hex is not None:
            live.add(i)
        else:
            live.discard(i)
    act = tuple(sorted(active)) if changed or rec is None or named is None else rec[2]
    per[side] = [now, live, act]
    return live, act


def _memory_todo(mem: dict[Any, Any], battle: Any, vis: tuple[int, ...]) -> Iterable[int]:
    """The visible enemies ``vis`` whose record in the side's memory ``mem`` must be written now (the rest hold
    what would be written: the same hex, facing, turret facing and rule-set state), and note ``mem``'s sync.

    On a :class:`~sim.battle.BattleState` a record reads only its tank, which changes only through events naming
    it (``state_changes``): an enemy visible at the last update whose tank no event named since has the same
    record.  Otherwise (a first update, another battle's list, a memory made by hand, a board that logs no
    changes) every visible enemy is written, as every update did before."""
    if type(battle) is not BattleState:
        return vis
    sc = battle.state_changes
    sync = mem.get(_MEMORY_SYNC)
    n = len(sc)
    mem[_MEMORY_SYNC] = (sc, n, vis)
    if sync is None or sync[0] is not sc or sync[1] > n:
        return vis
    changed = set(sc[sync[1]:n]) if sync[1] != n else ()
    if sync[2] is vis or sync[2] == vis:
        return [i for i in vis if i in changed] if changed else ()
    before = set(sync[2])
    return [i for i in vis if i in changed or i not in before]


class Observation(StateQueries):
    """What side ``side`` may know when answering ``decision`` for ``actor`` (the first actor by default).

    ``battle`` is the live battle (kept private); ``rng`` the side's ``random.Random`` stream; ``last_known`` the
    side's memory of enemy positions (a dict owned by the engine, one per side, updated here).

    **What the side knows** (every query answers from this alone):

    * its own tanks, everything about them;
    * every tank out of the fight (destroyed, incapacitated, withdrawn, exited, fled): its status and, while it
      is on the board (a wreck), its hex -- outcomes are public, and wrecks are obstacles in every rule set;
    * the live enemies the rule set's spotting shows it (:meth:`visible_ids`, ``ruleset.visible``), where they
      are now;
    * for this decision, also the live enemies its actors could engage now -- the rule set allows a shot at them
      (``ruleset.shot``) or this decision a ``Ram`` (Hummel Quest's Artillery Sights locate enemies out of sight,
      §7.6/§13; its ram needs no sight, §12.1) -- and the enemy whose action caused the decision (context
      ``mover`` / ``rammer``, :data:`ACTING_ENEMY_KEYS`): :meth:`known_ids`;
    * where it last saw the others (:meth:`last_known`).

    Every other live enemy is **hidden**: each query is answered on the side's view, the board with the hidden
    enemies taken off it, so their positions change no answer (occupancy, holders, movement searches that would
    route around them, legality, lines of sight they would block, odds, threats).  An answer made without them
    can be wrong about the true board (a path runs into a hidden tank, a hidden tank blocks a shot): the engine's
    legality decides -- the answer is rejected (``ActionRejected``) and the decision's default applies; an
    enemy adjacent to one of the side's tanks is always visible in Panzer Squadron and Hummel Quest, so a single
    step is never refused because of a hidden tank, and in ASL every unit is Known (asl.md 1: no concealment).

    **Last known positions**: ``last_known()[e]`` is the hex (and, for :meth:`threat`, the facing) of live enemy
    ``e`` at the most recent decision of this side's policy at which ``e`` was in :meth:`visible_ids`.  It is
    updated when the observation of a policy call is made (this constructor), so it does not depend on which
    queries the policy asks; decisions the engine answers without the policy (steps of a move plan, reactions
    of a policy that never reacts, the defaults of a withdrawing tank) do not update it; with the hex, the memory
    keeps what else was seen then (facing, turret facing, rule-set state), which :meth:`threat` reads for an
    enemy not known now -- never its present state, which it may have changed out of sight (a Panzer Squadron
    marker, a Hummel Quest weapon's readiness).  Enemies no longer alive are left out.  Enemies known only for
    one decision (:meth:`known_ids` minus :meth:`visible_ids`) are not remembered.
    """

    __slots__ = ("_b", "_cache", "_last_known", "_legal", "_rs", "_shared", "actor", "decision", "rng", "side")
    # the slots' types (set once in __init__ through object.__setattr__: an observation is read-only)
    _b: BoardView
    _cache: dict[Any, Any]
    _last_known: dict[Any, Any]
    _legal: Legal
    _rs: Any  # the battle's rule set (sim.rules.base.Ruleset; BoardView.ruleset's type)
    _shared: dict[Any, Any]
    actor: int | None
    decision: Decision
    rng: random.Random
    side: int

    def __init__(self, battle: BoardView, side: int, decision: Decision, rng: random.Random, actor: int | None = None,
                 last_known: dict[Any, Any] | None = None, _cache: dict | None = None):
        set_ = object.__setattr__
        set_(self, "_b", battle)
        set_(self, "_rs", battle.ruleset)
        set_(self, "_shared", _shared_cache(battle))
        set_(self, "side", side)
        legal = decision.legal._obs._legal if isinstance(decision.legal, SideLegal) else decision.legal
        set_(self, "_legal", legal)
        # SideLegal answers Legal's queries on the side's view (duck-typed: Legal is a concrete class)
        # a decision handed on by another observation (for_actor) has a read-only context already
        # (or made by :func:`frozen_decision`: read-only all through, as read_only would make it again)
        ctx = decision.context
        if not isinstance(decision.legal, SideLegal) and ctx is not _FROZEN_CONTEXT[0]:
            ctx = read_only(ctx)
        # first the decision with the rule set's own legal set: the private twin built below keeps it
        set_(self, "decision", Decision(decision.side, decision.kind, tuple(decision.actors), legal,
                                        decision.default, ctx))
        a = actor if actor is not None else (decision.actors[0] if decision.actors else None)
        if a is not None and not self._own(a):
            raise KeyError(f"tank {a} is not one of this side's tanks")
        set_(self, "actor", a)
        set_(self, "rng", rng)
        set_(self, "_cache", {} if _cache is None else _cache)
        set_(self, "_last_known", last_known if last_known is not None else {})
        mem = self._last_known
        vis = self.visible_ids()
        for i in _memory_todo(mem, battle, vis):
            t = battle.tanks[i]
            mem[i] = t.hex
            mem[("facing", i)] = t.facing
            # the rest of what was seen (turret, rule-set state): what the enemy's ghost is in threat()
            mem[("seen", i)] = (t.turret_facing, dict(t.rules_state))
        # the memory may have changed: a memo of it in a cache handed on (for_actor after an event) is dropped
        self._cache.pop(("last_known",), None)
        # ``decision.legal`` answers through a private twin of this observation (every field and cache shared;
        # its own ``decision`` keeps the rule set's legal set) rather than through ``self``: a SideLegal bound to
        # ``self`` would make observation -> decision -> legal -> observation a reference cycle, which only the
        # cyclic garbage collector frees, so each decision's observation and its memos (an ASL movement search's
        # paths: thousands of tuples) would outlive the decision, fill the collector's oldest generation and make
        # its full passes a fifth of an ASL battle.  Without the cycle they go when the decision's last
        # reference does.  The twin is reachable only through SideLegal's private field.
        twin = object.__new__(Observation)
        for name in Observation.__slots__:
            set_(twin, name, getattr(self, name))
        d = self.decision
        set_(self, "decision", Decision(d.side, d.kind, d.actors, SideLegal(twin, legal),  # type: ignore[arg-type]
                                        d.default, d.context))

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot delete {name}")

    def for_actor(self, actor: int) -> Observation:
        """The same observation focused on another of the side's own tanks (sharing its caches); ``KeyError`` for
        any other id."""
        if not self._own(actor):
            raise KeyError(f"tank {actor} is not one of this side's tanks")
        shared = _shared_cache(self._b)
        if shared is not self._shared:  # the board changed since this observation was made: build afresh
            return Observation(self._b, self.side, self.decision, self.rng, actor, self._last_known, self._cache)
        # the same board and decision: share everything but the actor (the side's memory is already up to date,
        # and ``decision.legal`` answers through the shared caches whichever observation it is bound to)
        new = object.__new__(Observation)
        set_ = object.__setattr__
        for name in ("_b", "_cache", "_last_known", "_legal", "_rs", "_shared", "decision", "rng", "side"):
            set_(new, name, getattr(self, name))
        set_(new, "actor", actor)
        return new

    def _memo(self, key: Any, fn: Any) -> Any:
        c = self._cache
        if key not in c:
            c[key] = fn()
        return c[key]

    def _shared_memo(self, key: Any, fn: Any) -> Any:
        c = self._shared
        try:
            return c[key]
        except KeyError:
            v = c[key] = fn()
            return v

    def _tank_id(self, tid: Any) -> int:
        if isinstance(tid, bool) or not isinstance(tid, int) or not 0 <= tid < len(self._b.tanks):
            raise KeyError(f"no tank {tid!r}")
        return tid

    def _own(self, tid: Any) -> bool:
        return (not isinstance(tid, bool) and isinstance(tid, int) and 0 <= tid < len(self._b.tanks)
                and self._b.tanks[tid].side == self.side)

    def _own_id(self, tid: Any) -> int:
        if not self._own(tid):
            raise KeyError(f"tank {tid!r} is not one of this side's tanks")
        return tid

    # --- what the side knows ---------------------------------------------------------------------------------
    def _hidden(self) -> tuple[int, ...]:
        """Live enemies on the board that the side does not know for this decision (see the class docstring)."""
        got = self._cache.get(("hidden",))
        if got is not None:  # asked by every query: the memo read first, without making the closure below
            return got

        def compute() -> tuple[int, ...]:
            known = set(self.known_ids())
            return tuple(i for i in _enemy_ids(self._b, self.side)[1] if i not in known)

        return self._memo(("hidden",), compute)

    def known_ids(self) -> tuple[int, ...]:
        """Ids of the live enemies the side knows for this decision (the class docstring): the visible ones, the
        ones the decision's actors may engage now, and the one whose action caused the decision; in id order."""
        got = self._cache.get(("known",))
        if got is not None:  # the memo read first, without making the closure below
            return got

        def compute() -> tuple[int, ...]:
            b, legal, rs = self._b, self._legal, self._rs
            if b.hidden_tanks:
                raise RuntimeError("known_ids is computed on the true board")
            live = _enemy_ids(b, self.side)[0]
            known = set(self.visible_ids()) & live
            ctx = self.decision.context
            known |= {ctx[k] for k in ACTING_ENEMY_KEYS if ctx.get(k) in live}
            actors = [a for a in self.decision.actors if self._own(a) and b.tanks[a].hex is not None]
            if rs.shots_need_sight and not rs.has_ramming:
                # a live actor's legal shot is at an enemy it sees, which is in visible_ids already: only the
                # actors that are not live tanks (normally none) are asked about the enemies out of sight
                actors = [a for a in actors if not b.tanks[a].alive]
                if not actors:
                    return tuple(sorted(known))
            for e in sorted(live - known):  # only the enemies out of sight: usually few, often none
                if any(not isinstance(sh, Illegal) for sh in rs.shots_at(b, actors, e)) or (
                        rs.has_ramming and any(legal.contains(Ram(a, e)) for a in actors)):
                    known.add(e)
            return tuple(sorted(known))

        return self._memo(("known",), compute)

    def _side_view(self) -> Any:
        """A context manager: inside it the battle is the board as this side knows it (the hidden enemies off the
        board; :meth:`sim.battle.Battle.hiding`).  Every query below runs in it; a policy never needs it."""
        hidden = self._hidden()
        return _NOTHING_HIDDEN if not hidden and not self._b.hidden_tanks else self._b.hiding(hidden)

    def _is_hidden(self, tid: int) -> bool:
        return tid in self._hidden()

    # --- facts ------------------------------------------------------------------------------------------------
    @property
    def ruleset(self) -> str:
        """The rule set's name (never the rule-set object)."""
        return self._rs.name

    @property
    def has_ramming(self) -> bool:
        """Whether the rule set has ramming."""
        return bool(self._rs.has_ramming)

    @property
    def turn(self) -> int:
        """The current turn (1-based)."""
        return self._b.turn

    @property
    def turn_limit(self) -> int:
        """The last turn of the battle."""
        return self._b.turn_limit

    @property
    def role(self) -> str:
        """This side's role: ``attacker``, ``defender`` or ``none``."""
        return self._b.sides[self.side].role

    @property
    def kind(self) -> str:
        """The decision's kind (``activate``, ``move_step``, ``fire``, ``react``, ...)."""
        return self.decision.kind

    @property
    def context(self) -> Mapping[str, Any]:
        """The decision's context (read-only)."""
        return self.decision.context

    @property
    def me(self) -> TankView | None:
        """The actor (an own tank), or ``None`` for a side-level decision without actors."""
        return None if self.actor is None else TankView(self._b.tanks[self.actor])

    def tank(self, tid: int) -> TankView:
        """Any own tank, a known live enemy (:meth:`known_ids`) or a tank no longer alive; ``KeyError`` for a
        hidden enemy or an id that is no tank."""
        t = self._b.tanks[self._tank_id(tid)]
        if t.side != self.side and t.alive and tid not in self.known_ids():
            raise KeyError(f"tank {tid} is not visible")
        return TankView(t)

    def friends(self) -> list[TankView]:
        """Live own tanks other than the actor, in id order."""
        return [TankView(t) for t in self._b.live_tanks(self.side) if t.tank_id != self.actor]

    def own_ids(self) -> tuple[int, ...]:
        """Ids of the side's live tanks on the board (the actor included)."""
        return tuple(t.tank_id for t in self._b.live_tanks(self.side))

    def visible_ids(self) -> tuple[int, ...]:
        """Ids of the live enemy tanks the side sees (the rule set's spotting), in id order."""
        got = self._shared.get(("visible", self.side))
        if got is not None:  # the memo read first, without making the closure below
            return got
        b = self._b

        def compute() -> tuple[int, ...]:
            if b.hidden_tanks:
                raise RuntimeError("visible_ids is computed on the true board")
            return tuple(self._rs.visible(b, self.side))

        return self._shared_memo(("visible", self.side), compute)

    def enemies(self) -> list[TankView]:
        """Visible live enemy tanks, in id order (a new list each call; the read-only views are made once per
        board version and side, as :meth:`visible_ids`, whose answer is all they read besides the tanks they
        proxy)."""
        b = self._b
        views = self._shared_memo(("enemies", self.side),
                                  lambda: tuple(TankView(b.tanks[i]) for i in self.visible_ids()))
        return list(views)

    def _enemy_hexes(self) -> tuple[Hex, ...]:
        """The distinct hexes of the visible live enemies (:meth:`enemies`), sorted: kept per board version and
        side, as :meth:`enemies` (whose views it reads; issue 14: the doctrines' goals ask it many times a
        decision, and every actor of an activation asks the same)."""
        return self._shared_memo(("enemy_hexes", self.side), lambda: tuple(sorted({e.hex for e in self.enemies()})))

    def last_known(self) -> Mapping[int, Hex]:
        """Last hex each live enemy was seen on, the visible ones included (see the class docstring).

        Kept per decision and board version: the answer reads the side's memory, which only an observation's
        constructor changes (and it drops this memo from the cache it is given), and which tanks are alive, which
        only an event changes (it bumps the version)."""
        c = self._cache
        ent = c.get(("last_known",))
        b = self._b
        if ent is not None and ent[0] == b.version:
            return ent[1]
        tanks = b.tanks
        v = MappingProxyType({k: h for k, h in sorted((k, h) for k, h in self._last_known.items()
                                                      if isinstance(k, int))
                              if tanks[k].alive})
        c[("last_known",)] = (b.version, v)
        return v

    def _remembered(self) -> tuple[tuple[int, Hex, int, Any], ...]:
        """Live enemies not known now, with the hex and facing they were last seen with and the key of the rest
        of what was seen then (:meth:`_ghost`; a term of :meth:`threat` reads it): ``(id, hex, facing, key)``."""
        def compute() -> tuple:
            known = set(self.known_ids())
            mem = self._last_known
            out = []
            for k, h in self.last_known().items():
                if k in known:
                    continue
                turret, state = self._seen_record(k, mem.get(("facing", k), 0))
                try:
                    key: Any = (turret, tuple(sorted(state.items())))
                    hash(key)
                except TypeError:  # an unhashable rule-set value: the record itself (kept by the memory)
                    key = ("record", id(mem.get(("seen", k))))
                out.append((k, h, mem.get(("facing", k), 0), key))
            return tuple(out)

        return self._memo(("remembered",), compute)

    def _seen_record(self, e: int, facing: int) -> tuple[int | None, Mapping[str, Any]]:
        """``(turret facing, rule-set state)`` of enemy ``e`` when the side last saw it (the memory's record).  A
        memory made by hand without one (not by an observation) gets the turret on the hull's ``facing`` (if
        the vehicle has one) and the state the tank was set up with (the battle's ``BattleStarted`` record;
        none on a board without one) -- never the tank's present state, which the side does not see."""
        rec = self._last_known.get(("seen", e))
        if rec is not None:
            return rec[0], rec[1]
        t = self._b.tanks[e]
        state: Mapping[str, Any] = {}
        log = getattr(self._b, "log", None)
        first = log[0].event if log else None
        if first is not None and type(first).__name__ == "BattleStarted":
            for rec_t in first.tanks:
                if rec_t.get("tank_id") == e:
                    state = rec_t.get("rules_state") or {}
        return (None if t.turret_facing is None else facing), state

    def _ghost(self, e: int, facing: int) -> Any:
        """The stand-in of hidden enemy ``e`` remembered facing ``facing``: the tank (vehicle, status) with the
        turret and rule-set state it was last seen with (:meth:`_seen_record`), where the side's view has it (off
        the board); made on the side's view."""
        import dataclasses

        turret, state = self._seen_record(e, facing)
        t = self._b.tanks[e]
        return dataclasses.replace(t, facing=facing, turret_facing=turret, rules_state=dict(state))

    def objectives(self) -> list[Mapping[str, Any]]:
        """The scenario's objectives: read-only ``{hex, points, name, side}`` mappings (``hex`` a :class:`Hex`)."""
        return [read_only({**o, "hex": as_hex(o["hex"])}) for o in self._b.objectives]

    def holder(self, h: Any) -> int | None:
        """The side holding hex ``h`` as far as this side knows (a live tank of that side in it and no live enemy
        of it: hidden enemies are not counted), else ``None``."""
        hx = as_hex(h)
        with self._side_view():
            sides = {self._b.tanks[i].side for i in self._b.occupants(hx) if self._b.tanks[i].alive}
        return sides.pop() if len(sides) == 1 else None

    # --- the board and the order of battle: the scenario both sides play (public) ------------------------------
    def terrain_map(self) -> Mapping[Hex, str]:
        """Every cell of the map with its terrain name, in cell order (the board is public, and so is a terrain
        change the rules make, such as a structure collapsing into rubble).  The same read-only mapping is returned
        until the terrain changes (cached under the map's terrain version)."""
        m = self._b.map
        return m.terrain_cached(("terrain_map",),
                                lambda: MappingProxyType({h: m.terrain(h) for h in sorted(m.cells)}))

    def order_of_battle(self) -> tuple[tuple[int, ...], ...]:
        """Each side's tank ids in scenario order, by side index (the scenario's order of battle is public; what
        the side may know of an enemy tank itself is what :meth:`tank` answers)."""
        b = self._b
        return tuple(tuple(t.tank_id for t in b.tanks if t.side == s) for s in b.side_ids())

    # --- the decision -----------------------------------------------------------------------------------------
    def targets(self, actor: int | None = None) -> tuple[int, ...]:
        """Target ids own tank ``actor`` (default the actor) may fire at in this decision, on the side's view (a
        hidden enemy is never one)."""
        a = self._own_id(self.actor if actor is None else actor)

        def compute() -> tuple[int, ...]:
            with self._side_view():
                return tuple(self._legal.targets(a))

        return self._memo(("targets", a), compute)

    def reachable(self, actor: int | None = None) -> Mapping[Any, tuple[int, tuple]]:
        """``{state: (cost, path)}`` own tank ``actor`` can reach in this decision (the rule set's movement search,
        on the side's view: paths run through hexes where only hidden enemies stand).  A rule set's answer that is
        already immutable (a ``MappingProxyType`` whose paths are tuples: :class:`~sim.rules.base.Legal`) is kept as
        it is; any other is copied into one (the same values)."""
        a = self._own_id(self.actor if actor is None else actor)

        def compute() -> Mapping[Any, tuple[int, tuple]]:
            with self._side_view():
                found = self._legal.reachable(a)
                if type(found) is MappingProxyType:
                    return found
                return MappingProxyType({s: (c, tuple(p)) for s, (c, p) in found.items()})

        return self._memo(("reach", a), compute)

    def plan_to(self, path: Any, then: Any = None, end_status: str | None = None) -> Any:
        """A move plan along ``path`` (from :meth:`reachable`) for the actor; raises ``ValueError`` if this
        decision takes no plan."""
        if self._legal.plan_to is None:
            raise ValueError(f"decision {self.decision.kind!r} takes no move plan")
        with self._side_view():
            return self._legal.plan_to(self.actor, list(path), then, end_status)

    def is_legal(self, action: Any) -> bool:
        """Whether ``action`` is legal in this decision as far as the side knows (the rule set's legality on the
        side's view; an action naming a hidden enemy is not legal)."""
        def compute() -> bool:
            with self._side_view():
                return bool(self._legal.contains(action))

        try:
            key = ("legal", action)
            hash(key)
        except TypeError:
            return compute()
        return self._memo(key, compute)

    def ram_targets(self, actor: int | None = None) -> tuple[int, ...] | None:
        """Ids of the tanks own tank ``actor`` (default the observation's) may ram in this decision as far as the
        side knows, in id order: exactly the ``e`` for which :meth:`is_legal` of ``Ram(actor, e)`` holds, in one
        call (the rule set's ``Legal.rams`` on the side's view, so a hidden enemy is never listed).  ``None``
        when the rule set's legal set does not enumerate its rams (ask :meth:`is_legal` enemy by enemy then).
        Kept per decision as :meth:`is_legal` is."""
        rams = self._legal.rams
        if rams is None:
            return None
        a = self.actor if actor is None else actor
        if a is None:
            return ()   # a ram names its actor: none is legal without one

        def compute(a: int = a) -> tuple[int, ...]:
            with self._side_view():
                return tuple(rams(a))

        return self._memo(("rams", a), compute)

    # --- geometry ---------------------------------------------------------------------------------------------
    def passable(self, h: Any) -> bool:
        """Whether static terrain lets a tank enter ``h`` at all."""
        return self._rs.passable(self._b, as_hex(h))

    def _blocked_terrains(self, static: bool) -> Any:
        """The rule set's impassable terrain names when its static ``passable`` reads nothing else
        (``Ruleset.impassable_terrains``; ``None`` if it does not say)."""
        hint = getattr(self._rs, "impassable_terrains", None) if static else None
        return hint(self._b) if hint is not None else None

    #: Most distance fields kept per board and cache version (:meth:`distance_field`).
    _DFIELD_CACHE = 64

    def distance_field(self, sources: Any) -> Mapping[Hex, int]:
        """Steps to the nearest of ``sources`` over passable terrain: a read-only ``{hex: steps}`` mapping
        (:class:`sim.hexgrid.DistanceField`; iterating it gives the reachable hexes in breadth-first order).

        Where the rule set's ``passable`` is static (reads the terrain and options only) the field is lazy: a
        lookup costs what it asks (often one hex distance per source), not the map.  Fields are shared by the
        side's tanks, kept per source set: under the terrain version if ``passable`` is static (wrecks do not
        change it), else under the map version (the key is the sorted sources; the rest of what a field reads is
        the board's cells, terrain and, if not static, obstacles, which those versions cover).  At most
        ``_DFIELD_CACHE`` fields are kept per board and version (least recently used dropped first)."""
        b = self._b
        srcs = tuple(sorted(as_hex(s) for s in sources))
        static = bool(getattr(self._rs, "passable_is_static", False))
        cache = b.map.terrain_cached if static else b.map.cached  # a static field outlives wrecks
        lru: dict[tuple[Hex, ...], Mapping[Hex, int]] = cache(("dfields", self._rs.name), dict)
        field = lru.pop(srcs, None)  # re-inserted below: the dict's order is least recently used first
        if field is None:
            # a partial, not a lambda: called once per cell when the impassable set is made (one frame less each)
            field = b.map.distance_field(srcs, functools.partial(self._rs.passable, b), passable_key=self._rs.name,
                                         static=static, blocked_terrains=self._blocked_terrains(static))
            if len(lru) >= self._DFIELD_CACHE:
                del lru[next(iter(lru))]
        lru[srcs] = field
        return field

    def los(self, frm: int, to: int) -> bool:
        """Whether tank ``frm`` could fire at tank ``to`` now (the rule set's sight and legality, on the side's
        view; ``False`` if either is a hidden enemy)."""
        frm, to = self._tank_id(frm), self._tank_id(to)
        if self._is_hidden(frm) or self._is_hidden(to):
            return False
        return self._shot(frm, to, None) is not None

    # --- odds ---------------------------------------------------------------------------------------------------
    def _shot(self, s: int, target: Any, as_if: Hypo | None) -> Any:
        """The rule set's shot ``s`` -> ``target`` on the side's view (``None`` if illegal)."""
        hidden = self._hidden()
        tanks = self._b.tanks
        if s in hidden or target in hidden or tanks[s].hex is None or (
                isinstance(target, int) and 0 <= target < len(tanks) and tanks[target].hex is None):
            return None

        def compute() -> Any:
            with self._side_view():
                shot = self._rs.shot(self._b, s, target, None, as_if)
            return None if isinstance(shot, Illegal) else shot

        return self._shared_memo(("shot", hidden, s, target, as_if), compute)

    def _shots(self, s: int, targets: tuple[Any, ...], as_if: Hypo | None) -> list[Any]:
        """``[self._shot(s, t, as_if) for t in targets]`` in one rule-set call (:meth:`sim.rules.base.Ruleset.shots`),
        without the per-pair memo (the rule set keeps its own)."""
        hidden = self._hidden()
        tanks = self._b.tanks
        if s in hidden or tanks[s].hex is None:
            return [None] * len(targets)
        n = len(tanks)
        ask = [t for t in targets if t not in hidden and not (
            isinstance(t, int) and 0 <= t < n and tanks[t].hex is None)]
        if not ask:
            return [None] * len(targets)
        # a rule set may answer only which shots are legal (``legal_shots``: the same shots, any reason)
        shots = getattr(self._rs, "legal_shots", None) or self._rs.shots
        with self._side_view():
            got = shots(self._b, s, ask, as_if)
        if len(ask) == len(targets):
            return [None if isinstance(sh, Illegal) else sh for sh in got]
        it = iter(got)
        return [None if t in hidden or (isinstance(t, int) and 0 <= t < n and tanks[t].hex is None)
                or isinstance(sh := next(it), Illegal) else sh for t in targets]

    def odds_many(self, targets: Iterable[int], as_if: Hypo | None = None, shooter: int | None = None
                  ) -> list[Odds | None]:
        """``[odds(t, as_if, shooter) for t in targets]`` (the same answers, in that order), the shots asked of the
        rule set in one call: what a doctrine scoring one firer against many enemies uses."""
        ts = tuple(targets)
        s = self.actor if shooter is None else shooter
        if s is None:
            return [None] * len(ts)
        self._own_id(s)
        odds = self._rs.odds
        return [None if sh is None else odds(sh.key) for sh in self._shots(s, ts, as_if)]

    def best_by_bound(self, actor: int, min_odds: float | None = None) -> tuple[tuple[int, Odds] | None] | None:
        """The target of own tank ``actor`` in this decision with the best exact odds now, found by branch and
        bound: ``(answer,)`` where ``answer`` is ``(target, odds)`` with the greatest ``(p_kill, p_hit, -target)``
        among :meth:`targets` whose odds have ``p_kill`` or ``p_hit`` above 0 and, when ``min_odds`` is given,
        ``float(p_kill) >= min_odds`` (``None`` if there is none) -- the answer of the default
        :meth:`agents.policies.base.Doctrine.best_target` -- or ``None`` when this observation cannot bound: the
        rule set has no ``best_by_bound``, the decision's targets are not "the candidates with a legal shot"
        (``decision.legal.targets.candidates``), or they are already worked out (the plain loop is as cheap).

        The rule set's ``best_by_bound`` (:meth:`sim.rules.panzer_squadron.play.PanzerSquadron.best_by_bound`)
        searches the candidates not hidden, on the side's view (a hidden enemy is never a target, and its
        shot is never legal there), so the answer is the one of :meth:`targets` and :meth:`odds_many`.
        ``tests/test_ps_odds_bound.py`` compares it with the full ranking at every decision of played battles."""
        a = self._own_id(actor)
        if ("targets", a) in self._cache:
            return None
        cands = getattr(self._legal.targets, "candidates", None)
        search = getattr(self._rs, "best_by_bound", None)
        if cands is None or search is None:
            return None
        hidden = self._hidden()
        if a in hidden or self._b.tanks[a].hex is None:
            return (None,)
        with self._side_view():
            ts = [t for t in cands(a) if t not in hidden]
            return (search(self._b, a, ts, min_odds) if ts else None,)

    def odds(self, target: int, as_if: Hypo | None = None, shooter: int | None = None) -> Odds | None:
        """Exact odds of own tank ``shooter`` (default the actor) firing at ``target`` now, or from the
        hypothetical position ``as_if``; ``None`` if the shot is not legal (always for a hidden enemy)."""
        s = self.actor if shooter is None else shooter
        if s is None:
            return None
        self._own_id(s)
        shot = self._shot(s, target, as_if)
        return None if shot is None else self._rs.odds(shot.key)

    def face(self, target: int, as_if: Hypo | None = None, shooter: int | None = None) -> str | None:
        """The face (``front`` / ``side`` / ``rear`` or the rule set's name) that own tank ``shooter``'s shot would
        strike, or ``None`` if it is not legal."""
        s = self.actor if shooter is None else shooter
        if s is None:
            return None
        self._own_id(s)
        shot = self._shot(s, target, as_if)
        return None if shot is None else shot.face

    def side_odds(self, target: int) -> Fraction:
        """Summed kill odds of every live tank of this side firing at ``target`` from where it stands now."""
        total = _ExactSum()
        for s in self.own_ids():
            o = self.odds(target, shooter=s)
            if o is not None:
                total.add(o.p_kill)
        return total.value()

    def threat(self, hex: Any, facing: int, tank: int | None = None) -> Fraction:
        """Summed exact kill odds of the enemies against own tank ``tank`` (the actor) standing on ``hex`` facing
        ``facing``: the known enemies (:meth:`known_ids`) where they are, and those not known now where (and as)
        they were last seen -- hull and turret facing and rule-set state then, not now -- on the side's view
        (hidden enemies count only as remembered)."""
        tid = self._own_id(self.actor if tank is None else tank)
        h = as_hex(hex)
        known = self.known_ids()
        if not known and not self._remembered():
            return Fraction(0)
        hidden = self._hidden()
        remembered = self._remembered()

        def compute() -> Fraction:
            lasting = self._lasting()
            if lasting is None:
                return _sum_terms(self._threat_terms(tid, h, facing, known, remembered))
            return self._lasting_threat(lasting, tid, h, facing, known, remembered)

        return self._shared_memo(("threat", self.side, hidden, known, tid, h, facing, remembered), compute)

    def _threat_terms(self, tid: int, h: Hex, facing: int, known: tuple[int, ...],
                      remembered: tuple[tuple[int, Hex, int, Any], ...], touches: dict | None = None
                      ) -> dict[int, Fraction | None]:
        """The terms of :meth:`threat`: per enemy of ``known`` (where it is) and of ``remembered`` (where and as it
        was last seen -- its turret and rule-set state then, :meth:`_ghost` -- unless that is ``h``), its kill odds
        against ``tid`` on ``h`` facing ``facing``, ``None`` where it has no legal shot; on the side's view.  Each
        term reads only its own pair (the rule set's shots are pair by pair), so the terms of a subset are those of
        the whole.  With ``touches`` (rule sets with
        ``shot_footprint`` only), also ``touches[e]``: the predicate of the hexes whose obstacles the shot read
        (``None``: any)."""
        terms: dict[int, Fraction | None] = {}
        odds = self._rs.odds
        where = self._rs.shot_footprint if touches is not None else None
        # a rule set may answer the kill odds without making the shots (the same values; its footprint then reads
        # no shot: it is given None)
        kills_at = getattr(self._rs, "kill_odds_at", None)
        with self._side_view():
            if known:
                tanks = self._b.tanks
                view = HypoView(self._b, tid, h, facing)
                if kills_at is not None:
                    for e, pk in zip(known, kills_at(view, known, tid)):
                        terms[e] = pk
                        if where is not None:
                            te = tanks[e]
                            touches[e] = None if te.hex is None else where(self._b, None, te.hex, te.facing, h)  # type: ignore[index]
                    known = ()
                for e, shot in zip(known, self._rs.shots_at(view, known, tid)):
                    terms[e] = None if isinstance(shot, Illegal) else odds(shot.key).p_kill
                    if where is not None:
                        te = tanks[e]
                        touches[e] = None if te.hex is None else where(self._b, shot, te.hex, te.facing, h)  # type: ignore[index]
            ghosts = [g for g in remembered if g[1] != h]
            if not ghosts:
                return terms
            # each ghost is the enemy as it was last seen (:meth:`_ghost`): its turret and rule-set state then,
            # never its present ones (which it may have changed out of sight)
            stand = StandInView(self._b, {e: self._ghost(e, ef) for e, _eh, ef, _k in ghosts})
            from_ghosts = getattr(self._rs, "shots_at_from", None)
            if from_ghosts is not None:  # the rule set answers the ghosts' shots in one call (same answers)
                triples = [(e, eh, ef) for e, eh, ef, _k in ghosts]
                for (e, eh, ef), shot in zip(triples, from_ghosts(stand, tid, h, facing, triples)):
                    terms[e] = None if isinstance(shot, Illegal) else odds(shot.key).p_kill
                    if where is not None:
                        touches[e] = where(self._b, shot, eh, ef, h)  # type: ignore[index]
                return terms
            hidden = self._hidden()
            for e, eh, ef, rk in ghosts:
                # the enemy where (and as) it was last seen: one view per board version and side view (the key:
                # what the view copies), shared by every threat query
                seen = self._shared_memo(("ghost", hidden, e, eh, ef, rk),
                                         lambda e=e, eh=eh, ef=ef: HypoView(stand, e, eh, ef))
                if kills_at is not None:
                    terms[e] = kills_at(HypoView(seen, tid, h, facing), (e,), tid)[0]
                    shot = None
                else:
                    shot = self._rs.shots_at(HypoView(seen, tid, h, facing), (e,), tid)[0]
                    terms[e] = None if isinstance(shot, Illegal) else odds(shot.key).p_kill
                if where is not None:
                    touches[e] = where(self._b, shot, eh, ef, h)  # type: ignore[index]
        return terms

    def _lasting(self) -> tuple[dict, tuple | None, bool] | None:
        """``(store, rules key, occupants)`` of the battle's lasting memo (answers kept across versions, patched
        pair by pair as tanks change), or ``None`` where it does not apply: the battle is not a
        :class:`~sim.battle.BattleState` (which logs ``state_changes``), the rule set says neither that its shots
        are pair-local (``pair_local_shots``) nor that they read, besides the pair, only the occupants of their
        footprint (``shots_read_footprint_occupants``, with ``shot_footprint``: ASL, where live AFVs on the LOS
        line hinder; then ``occupants`` is true), or its battle-level state is not hashable.  The rules key is
        ``battle.rules_state`` as sorted items (a shot may read it: Panzer Squadron's active tank); ``None`` when
        the rule set names what its shots at a tank read of it (``lasting_rules_key(battle, target)``, asked per
        threat)."""
        def compute() -> tuple[dict, tuple | None, bool] | None:
            b = self._b
            rs = self._rs
            if not isinstance(b, BattleState):
                return None
            local = getattr(rs, "pair_local_shots", None)
            occupants = False
            if local is None or not local(b):
                reads = getattr(rs, "shots_read_footprint_occupants", None)
                if reads is None or not hasattr(rs, "shot_footprint") or not reads(b):
                    return None
                occupants = True
            rules: tuple | None = None
            if not hasattr(rs, "lasting_rules_key"):
                try:
                    rules = tuple(sorted(b.rules_state.items()))
                    hash(rules)
                except TypeError:
                    return None
            store = _LASTING.get(b)
            if store is None:
                store = _LASTING[b] = {}
            elif len(store) >= _LASTING_MAX:
                store.clear()
            return store, rules, occupants

        return self._shared_memo(("lasting",), compute)

    def _lasting_threat(self, lasting: tuple[dict, tuple | None, bool], tid: int, h: Hex, facing: int,
                        known: tuple[int, ...], remembered: tuple[tuple[int, Hex, int, Any], ...]) -> Fraction:
        """:meth:`threat` kept across versions, term by term (:meth:`_threat_terms`).

        Under pair-local shots (:meth:`_lasting`) a term reads only its enemy (where it is, or its memory ``(hex,
        facing)``, part of the term's key, and its own state), ``tid`` standing on ``h`` facing ``facing``, the
        battle's rule-set state and the map -- not which other enemies the side knows or does not: so the entry is
        keyed ``(side, tank, hex, facing, rules key)`` and holds ``[{term key: (kill odds or None, footprint)},
        len(state_changes), len(map.changes), (known, remembered) of the last sum, that sum]``.  When asked again,
        a located map change since (a wreck appearing or leaving) drops the terms whose footprint it touches (the
        rule set's ``shot_footprint``: the hexes whose obstacles the shot read; ``None`` or a rule set without it:
        any change), an unlocated one (the terrain) empties the entry, a change of ``tid`` empties it, a change of
        an enemy drops that enemy's terms (``BattleState.state_changes``); the terms missing are computed, and the
        sum is redone unless the terms summed last time are all kept.  So the answer is always the fresh one.

        Where shots also read the occupants of their footprint (``occupants``: ASL's LOS line, whose AFVs and
        wrecks hinder; the rules key then ``lasting_rules_key(battle, tid)``, what shots at ``tid`` read of the
        battle-level state, or ``None``: answers about ``tid`` not worth keeping, the sum computed afresh), a term
        also reads which tanks stand on its footprint in the side's view: so a change
        of any tank that stood or now stands on it (``BattleState.state_change_hexes``: its hex before and after
        each event; ``None`` footprint: any tank on the board) drops the term, and so does a tank joining or
        leaving the side's hidden set (off the board in the side's view) on it; the entry holds that hidden set
        too."""
        store, rules, occupants = lasting
        b = self._b
        if rules is None:
            try:
                rules = self._rs.lasting_rules_key(b, tid)
                hash(rules)
            except TypeError:   # an unhashable battle-level value: the fresh sum
                rules = None
            if rules is None:   # (or answers about ``tid`` not worth keeping, says the rule set)
                return _sum_terms(self._threat_terms(tid, h, facing, known, remembered))
        sc = b.state_changes  # type: ignore[attr-defined]  # a BattleState (_lasting checked)
        nsc, nmc = len(sc), len(b.map.changes)
        key = ("threat", self.side, tid, h, facing, rules)
        ent = store.get(key)
        if ent is None:
            ent = store[key] = [{}, nsc, nmc, None, Fraction(0), self._hidden() if occupants else None]
        terms: dict[Any, tuple[Fraction | None, Callable[[Hex], bool] | None]] = ent[0]
        if ent[2] != nmc:
            logged = b.map.changes[ent[2]:]
            new = [c for c in logged if c is not None]
            if len(new) < len(logged) or not hasattr(self._rs, "shot_footprint"):
                terms.clear()
            else:
                for k in [k for k, (_x, t) in terms.items() if t is None or any(t(c) for c in new)]:
                    del terms[k]
            ent[3] = None
        if ent[1] != nsc:
            changed = set(sc[ent[1]:])
            if tid in changed:
                terms.clear()
                ent[3] = None
            elif terms:
                for k in [k for k in terms if k[1] in changed]:
                    del terms[k]
                    ent[3] = None
                if occupants and terms:
                    moved = {c for pair in b.state_change_hexes[ent[1]:nsc]  # type: ignore[attr-defined]
                             for c in pair if c is not None}
                    if moved and self._drop_touching(terms, moved):
                        ent[3] = None
        if occupants:
            hidden = self._hidden()
            if ent[5] != hidden:
                if terms:
                    tanks = b.tanks
                    flipped = {tanks[x].hex for x in set(hidden).symmetric_difference(ent[5])}
                    flipped.discard(None)
                    if flipped and self._drop_touching(terms, flipped):  # type: ignore[arg-type]
                        ent[3] = None
                ent[5] = hidden
        ent[1], ent[2] = nsc, nmc
        sel = (known, remembered)
        if ent[3] == sel:
            return ent[4]
        ask_k = tuple(e for e in known if ("k", e) not in terms)
        ask_g = tuple(g for g in remembered if ("g", *g) not in terms)
        if ask_k or ask_g:
            where: dict[int, Any] = {}
            got = self._threat_terms(tid, h, facing, ask_k, ask_g,
                                     where if hasattr(self._rs, "shot_footprint") else None)
            for e in ask_k:
                terms[("k", e)] = (got[e], where.get(e))
            for g in ask_g:
                # a ghost on ``h`` itself has no term (None), whatever the obstacles
                terms[("g", *g)] = (got[g[0]], where.get(g[0])) if g[0] in got else (None, _NO_HEX)
        total = _ExactSum()
        for e in known:
            x = terms[("k", e)][0]
            if x is not None:
                total.add(x)
        for g in remembered:
            x = terms[("g", *g)][0]
            if x is not None:
                total.add(x)
        v = total.value()
        ent[3], ent[4] = sel, v
        return v

    @staticmethod
    def _drop_touching(terms: dict[Any, tuple[Fraction | None, Callable[[Hex], bool] | None]],
                       hexes: set[Hex]) -> bool:
        """Drop from ``terms`` (of :meth:`_lasting_threat`) every term whose footprint holds one of ``hexes``
        (``None``: any); whether one was dropped."""
        drop = [k for k, (_x, t) in terms.items() if t is None or any(t(c) for c in hexes)]
        for k in drop:
            del terms[k]
        return bool(drop)

    # --- search ---------------------------------------------------------------------------------------------------
    def hidden_ids(self) -> tuple[int, ...]:
        """Ids of the live enemies on the board that the side does not know for this decision (the complement of
        :meth:`known_ids` among the live enemies), in id order.  Knowing *which* ids are hidden tells nothing the
        side does not know (it knows the enemy's order of battle and which of its tanks are out); their positions
        and states stay hidden."""
        return self._hidden()

    def determinize(self, ghosts: Mapping[int, tuple[Any, int, int | None, Mapping[str, Any]]] | None = None,
                    dice: DiceSource | None = None) -> SearchBattle:
        """A search copy of the battle as this side may know it (a *determinization*, for planning doctrines).

        The copy (:func:`sim.search.fork`) holds the side's own tanks and every tank out of the fight as they are,
        the known enemies (not in :meth:`hidden_ids`) as they are, and each hidden enemy only as the caller
        remembers it: ``ghosts[enemy_id] = (hex, facing, turret_facing, rules_state)`` -- where and as the side
        last saw it -- places it so (if the hex is on the map and holds no other tank); a hidden enemy
        without a ghost is off the board in the copy (``hex`` ``None``, empty ``rules_state``, ``facing`` 0, a
        turret's facing 0).  Nothing of a hidden
        enemy's true hex, facing or state reaches the copy.  The battle-level rule-set state (phase, active tank,
        structures) is public and copied.  ``dice`` are attached to the copy (see :class:`sim.search.SampledDice`).

        Returns a :class:`sim.search.SearchBattle` the caller may change freely (events apply to it only).
        Raises ``TypeError`` if this observation's battle is not a :class:`sim.battle.BattleState` (a stand-in
        implementing only the :class:`~sim.battle.BoardView` protocol has no state to copy)."""
        from sim.search import fork

        if not isinstance(self._b, BattleState):
            raise TypeError(f"determinize copies a sim.battle.BattleState; this observation's battle is a "
                            f"{type(self._b).__name__}")
        hidden = self.hidden_ids()
        place = {}
        taken = {t.hex for t in self._b.tanks if t.hex is not None and t.tank_id not in hidden}
        for e, g in sorted((ghosts or {}).items()):
            if e not in hidden:
                continue
            h = as_hex(g[0])
            if h in self._b.map and h not in taken:
                place[e] = (h, int(g[1]), g[2], dict(g[3]))
                taken.add(h)
        return fork(self._b, dice=dice, remove=hidden, place=place)

