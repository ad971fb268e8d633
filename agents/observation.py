"""Observation: the lazy, read-only view one decision gives a controller.

A doctrine sees only what this offers, and it is the same under every rule set:

* facts: ``ruleset`` (a name), ``has_ramming``, ``turn``, ``turn_limit``, ``role``, ``kind``, ``context``;
* tanks: ``me``, ``tank(id)``, ``friends()``, ``enemies()`` (visible, live), ``last_known()`` (enemy id -> hex),
  ``objectives()``;
* the decision: ``modes(actor)``, ``targets(actor)``, ``reachable(actor)`` (``{state: (cost, path)}``),
  ``plan_to(path)``, ``is_legal(action)``;
* geometry: ``distance``, ``los``, ``passable``, ``distance_field``, ``hex_of`` / ``facing_of`` (of a movement
  state), ``facing_towards``, ``in_arc``, ``hypo(state)``;
* exact odds: ``odds(target, as_if=Hypo(hex, facing, moved))``, ``face(target, as_if)`` (the face struck),
  ``threat(hex, facing)`` (the summed kill odds of the visible enemies against the actor standing there),
  ``side_odds(target)`` (summed over the side's tanks);
* ``rng``: the side's own random stream (never the rule dice).

Tanks come as :class:`TankView` proxies that refuse writes; mappings come as read-only mappings, lists as tuples,
rule-set records behind read-only proxies.  No dice and no rule-set object are reachable through the public API
(names starting with ``_`` are private and not part of it).

Speed: everything is computed on first access.  Odds, threats and visibility are cached under the battle's version
and shared by every observation of that battle (an activation decision asks about every actor, a greedy doctrine
about many hypothetical states: each distinct question is computed once until an event changes the board);
``targets`` and ``reachable`` are cached per decision.
"""
from __future__ import annotations

import random
import weakref
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from sim.battle import HypoView
from sim.hexgrid import Hex, as_hex, cube_vector, distance, in_arc, rotate_cube
from sim.rules.base import Decision, Hypo, Illegal, Odds


class ReadOnlyError(AttributeError):
    """Raised when a policy tries to change the model through an observation."""


_IMMUTABLE = (str, int, float, bool, bytes, Fraction, type(None), frozenset)


def read_only(v: Any) -> Any:
    """A read-only version of ``v``: mappings -> ``MappingProxyType`` (values converted too), lists and sets ->
    tuples / frozensets, plain immutable values and named tuples unchanged, other objects -> :class:`ReadOnly`."""
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


#: Per battle: [version, {question: answer}] -- answers valid until the next event (weak: dies with the battle).
_SHARED: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()


def _shared_cache(b: Any) -> dict:
    ent = _SHARED.get(b)
    if ent is None or ent[0] != b.version:
        ent = [b.version, {}]
        _SHARED[b] = ent
    return ent[1]


def frozen_decision(decision: Decision) -> Decision:
    """``decision`` with a read-only ``context`` (what a policy is handed)."""
    if isinstance(decision.context, MappingProxyType):
        return decision
    return Decision(decision.side, decision.kind, tuple(decision.actors), decision.legal, decision.default,
                    read_only(decision.context))


class StateQueries:
    """Pure geometry helpers shared by :class:`Observation` and the isolated entrant's observation
    (``agents.remote``): distances, movement states, arcs, facings.  They need ``self.me`` only."""

    __slots__ = ()

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


class Observation(StateQueries):
    """What side ``side`` may know when answering ``decision`` for ``actor`` (the first actor by default).

    ``battle`` is the live battle (kept private); ``rng`` the side's ``random.Random`` stream; ``last_known`` the
    side's memory of enemy positions (updated when enemies are seen)."""

    __slots__ = ("_b", "_rs", "_shared", "side", "decision", "actor", "rng", "_cache", "_last_known")

    def __init__(self, battle: Any, side: int, decision: Decision, rng: random.Random, actor: int | None = None,
                 last_known: dict[int, Hex] | None = None, _cache: dict | None = None):
        set_ = object.__setattr__
        set_(self, "_b", battle)
        set_(self, "_rs", battle.ruleset)
        set_(self, "_shared", _shared_cache(battle))
        set_(self, "side", side)
        set_(self, "decision", frozen_decision(decision))
        set_(self, "actor", actor if actor is not None else (decision.actors[0] if decision.actors else None))
        set_(self, "rng", rng)
        set_(self, "_cache", {} if _cache is None else _cache)
        set_(self, "_last_known", last_known if last_known is not None else {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot delete {name}")

    def for_actor(self, actor: int) -> "Observation":
        """The same observation focused on another of the decision's actors (sharing its caches)."""
        return Observation(self._b, self.side, self.decision, self.rng, actor, self._last_known, self._cache)

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

    # --- facts ------------------------------------------------------------------------------------------------
    @property
    def ruleset(self) -> str:
        """The rule set's name (never the rule-set object)."""
        return self._rs.name

    @property
    def has_ramming(self) -> bool:
        return bool(self._rs.has_ramming)

    @property
    def turn(self) -> int:
        return self._b.turn

    @property
    def turn_limit(self) -> int:
        return self._b.turn_limit

    @property
    def role(self) -> str:
        """This side's role: ``attacker``, ``defender`` or ``none``."""
        return self._b.sides[self.side].role

    @property
    def kind(self) -> str:
        return self.decision.kind

    @property
    def context(self) -> Mapping[str, Any]:
        return self.decision.context

    @property
    def me(self) -> TankView | None:
        return None if self.actor is None else TankView(self._b.tanks[self.actor])

    def tank(self, tid: int) -> TankView:
        """Any own tank, or an enemy tank that is visible, a legal target of this decision or no longer alive
        (raises ``KeyError`` for a hidden live enemy)."""
        t = self._b.tanks[tid]
        if t.side != self.side and t.alive and tid not in self.visible_ids() and \
                (self.actor is None or tid not in self.targets()):
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
        b = self._b
        return self._shared_memo(("visible", self.side), lambda: tuple(self._rs.visible(b, self.side)))

    def enemies(self) -> list[TankView]:
        """Visible live enemy tanks, in id order."""
        ids = self.visible_ids()
        mem = self._last_known
        for i in ids:
            t = self._b.tanks[i]
            mem[i] = t.hex
            mem[("facing", i)] = t.facing
        return [TankView(self._b.tanks[i]) for i in ids]

    def last_known(self) -> Mapping[int, Hex]:
        """Last hex each live enemy was seen on (by this side's controller), including the visible ones."""
        self.enemies()
        return MappingProxyType({k: v for k, v in sorted((k, v) for k, v in self._last_known.items()
                                                         if isinstance(k, int))
                                 if self._b.tanks[k].alive and self._b.tanks[k].hex is not None})

    def _remembered(self) -> tuple[tuple[int, Hex, int], ...]:
        """Live enemies out of sight now, with the hex and facing they were last seen with."""
        def compute() -> tuple:
            vis = set(self.visible_ids())
            return tuple((k, h, self._last_known.get(("facing", k), 0)) for k, h in self.last_known().items()
                         if k not in vis)

        return self._memo(("remembered",), compute)

    def objectives(self) -> list[Mapping[str, Any]]:
        """The scenario's objectives: read-only ``{hex, points, name, side}`` mappings (``hex`` a :class:`Hex`)."""
        return [read_only({**o, "hex": as_hex(o["hex"])}) for o in self._b.objectives]

    def holder(self, h: Any) -> int | None:
        """The side holding hex ``h`` (a live tank of that side in it and no live enemy), else ``None``."""
        sides = {self._b.tanks[i].side for i in self._b.occupants(as_hex(h)) if self._b.tanks[i].alive}
        return sides.pop() if len(sides) == 1 else None

    # --- the decision -----------------------------------------------------------------------------------------
    def targets(self, actor: int | None = None) -> tuple[int, ...]:
        """Target ids the actor may fire at in this decision."""
        a = self.actor if actor is None else actor
        return self._memo(("targets", a), lambda: tuple(self.decision.legal.targets(a)))

    def reachable(self, actor: int | None = None) -> Mapping[Any, tuple[int, tuple]]:
        """``{state: (cost, path)}`` the actor can reach in this decision (the rule set's movement search)."""
        a = self.actor if actor is None else actor

        def compute() -> Mapping[Any, tuple[int, tuple]]:
            return MappingProxyType({s: (c, tuple(p)) for s, (c, p) in self.decision.legal.reachable(a).items()})

        return self._memo(("reach", a), compute)

    def plan_to(self, path: Any, then: Any = None, end_status: str | None = None) -> Any:
        """A move plan along ``path`` (from :meth:`reachable`) for the actor; raises ``ValueError`` if this
        decision takes no plan."""
        if self.decision.legal.plan_to is None:
            raise ValueError(f"decision {self.decision.kind!r} takes no move plan")
        return self.decision.legal.plan_to(self.actor, list(path), then, end_status)

    def is_legal(self, action: Any) -> bool:
        return bool(self.decision.legal.contains(action))

    # --- geometry ---------------------------------------------------------------------------------------------
    def passable(self, h: Any) -> bool:
        """Whether static terrain lets a tank enter ``h`` at all."""
        return self._rs.passable(self._b, as_hex(h))

    def distance_field(self, sources: Any) -> Mapping[Hex, int]:
        """Steps to the nearest of ``sources`` over passable terrain (one BFS, cached under the map version and
        shared by the side's tanks)."""
        b = self._b
        key = ("dfield", tuple(sorted(as_hex(s) for s in sources)))
        return b.map.cached(key, lambda: b.map.distance_field(key[1], lambda h: self._rs.passable(b, h),
                                                              passable_key=self._rs.name))

    def los(self, frm: int, to: int) -> bool:
        """Whether tank ``frm`` could fire at tank ``to`` now (the rule set's sight and legality)."""
        return self._shot(frm, to, None) is not None

    # --- odds ---------------------------------------------------------------------------------------------------
    def _shot(self, s: int, target: int, as_if: Hypo | None) -> Any:
        def compute() -> Any:
            shot = self._rs.shot(self._b, s, target, None, as_if)
            return None if isinstance(shot, Illegal) else shot

        return self._shared_memo(("shot", s, target, as_if), compute)

    def odds(self, target: int, as_if: Hypo | None = None, shooter: int | None = None) -> Odds | None:
        """Exact odds of ``shooter`` (default the actor; any own tank) firing at ``target`` now, or from the
        hypothetical position ``as_if``; ``None`` if the shot is not legal."""
        s = self.actor if shooter is None else shooter
        if s is None:
            return None
        if self._b.tanks[s].side != self.side:
            raise KeyError(f"tank {s} is not one of this side's tanks")
        shot = self._shot(s, target, as_if)
        return None if shot is None else self._rs.odds(shot.key)

    def face(self, target: int, as_if: Hypo | None = None, shooter: int | None = None) -> str | None:
        """The face (``front`` / ``side`` / ``rear`` or the rule set's name) that shot would strike, or ``None``
        if it is not legal."""
        s = self.actor if shooter is None else shooter
        shot = None if s is None else self._shot(s, target, as_if)
        return None if shot is None else shot.face

    def side_odds(self, target: int) -> Fraction:
        """Summed kill odds of every live tank of this side firing at ``target`` from where it stands now."""
        total = Fraction(0)
        for s in self.own_ids():
            o = self.odds(target, shooter=s)
            if o is not None:
                total += o.p_kill
        return total

    def threat(self, hex: Any, facing: int, tank: int | None = None) -> Fraction:
        """Summed exact kill odds of the enemies against ``tank`` (the actor) standing on ``hex`` facing ``facing``:
        the visible enemies where they are, and those out of sight where (and as) they were last seen."""
        tid = self.actor if tank is None else tank
        h = as_hex(hex)
        if not self._last_known and not self.visible_ids():
            return Fraction(0)

        def compute() -> Fraction:
            view = HypoView(self._b, tid, h, facing)
            total = Fraction(0)
            for e in self.visible_ids():
                shot = self._rs.shot(view, e, tid)
                if not isinstance(shot, Illegal):
                    total += self._rs.odds(shot.key).p_kill
            for e, eh, ef in self._remembered():
                if eh == h:
                    continue
                ghost = HypoView(HypoView(self._b, e, eh, ef), tid, h, facing)
                shot = self._rs.shot(ghost, e, tid)
                if not isinstance(shot, Illegal):
                    total += self._rs.odds(shot.key).p_kill
            return total

        return self._shared_memo(("threat", self.side, tid, h, facing, self._remembered()), compute)

    # --- search ---------------------------------------------------------------------------------------------------
    def hidden_ids(self) -> tuple[int, ...]:
        """Ids of the live enemies on the board that the side does not know for this decision: not visible, not
        a legal target of the decision's actors, not the enemy whose action caused it (context ``mover`` /
        ``rammer``).  Knowing *which* ids are hidden tells nothing the side does not know (it knows the enemy's
        order of battle and which of its tanks are out); their positions and states stay hidden."""
        def compute() -> tuple[int, ...]:
            b = self._b
            live = {t.tank_id for t in b.live_tanks() if t.side != self.side}
            known = set(self.visible_ids()) & live
            ctx = self.decision.context
            known |= {ctx.get(k) for k in ("mover", "rammer") if ctx.get(k) in live}
            for a in self.decision.actors:
                if b.tanks[a].side == self.side and b.tanks[a].hex is not None:
                    known |= set(self.decision.legal.targets(a)) & live
            return tuple(sorted(live - known))

        return self._memo(("hidden_ids",), compute)

    def determinize(self, ghosts: Mapping[int, tuple[Any, int, int | None, Mapping[str, Any]]] | None = None,
                    dice: Any = None) -> Any:
        """A search copy of the battle as this side may know it (a *determinization*, for planning doctrines).

        The copy (:func:`sim.search.fork`) holds the side's own tanks and every tank out of the fight as they are,
        the known enemies (not in :meth:`hidden_ids`) as they are, and each hidden enemy only as the caller
        remembers it: ``ghosts[enemy_id] = (hex, facing, turret_facing, rules_state)`` -- where and as the side
        last saw it -- places it so (if the hex is on the map and holds no other tank); a hidden enemy
        without a ghost is off the board in the copy (``hex`` ``None``, empty ``rules_state``).  Nothing of a hidden
        enemy's true hex, facing or state reaches the copy.  The battle-level rule-set state (phase, active tank,
        structures) is public and copied.  ``dice`` are attached to the copy (see :class:`sim.search.SampledDice`).

        Returns a :class:`sim.search.SearchBattle` the caller may change freely (events apply to it only)."""
        from sim.search import fork

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

