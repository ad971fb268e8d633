"""Observation: the lazy, read-only view one decision gives a controller.

A doctrine sees only what this offers: its own tank, friends, visible enemies and last-known positions, the
decision's legal moves and targets, distances and LOS, exact odds (``odds(target, as_if=Hypo(...))``), the summed
enemy threat at a hex (``threat(hex, facing)``), objectives, and its side's own random stream.  Tanks come as
:class:`TankView` proxies that refuse writes; the battle itself is not reachable through the public API, and no dice
are exposed.  Everything is computed on first access and cached for this decision (or, for side visibility, under
the battle's version).
"""
from __future__ import annotations

import random
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from sim.battle import HypoView
from sim.hexgrid import Hex, as_hex, distance
from sim.rules.base import Decision, Hypo, Illegal, Odds


class ReadOnlyError(AttributeError):
    """Raised when a policy tries to change the model through an observation."""


class TankView:
    """Read-only view of a tank: ``tank_id``, ``label``, ``side``, ``vehicle_id``, ``vehicle``, ``hex``, ``facing``,
    ``turret_facing``, ``status``, ``alive``, ``rules_state`` (a read-only mapping)."""

    __slots__ = ("_t",)

    def __init__(self, t: Any):
        object.__setattr__(self, "_t", t)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        v = getattr(object.__getattribute__(self, "_t"), name)
        if name == "rules_state":
            return MappingProxyType(v)
        return v

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot delete {name}")

    def __repr__(self) -> str:
        t = object.__getattribute__(self, "_t")
        return f"TankView({t.tank_id} {t.label!r} {t.vehicle_id} at {t.hex})"


class Observation:
    """What side ``side`` may know when answering ``decision`` for ``actor`` (the first actor by default)."""

    __slots__ = ("_b", "_rs", "side", "decision", "actor", "rng", "_cache", "_last_known")

    def __init__(self, battle: Any, side: int, decision: Decision, rng: random.Random, actor: int | None = None,
                 last_known: dict[int, Hex] | None = None):
        object.__setattr__(self, "_b", battle)
        object.__setattr__(self, "_rs", battle.ruleset)
        object.__setattr__(self, "side", side)
        object.__setattr__(self, "decision", decision)
        object.__setattr__(self, "actor", actor if actor is not None else (decision.actors[0] if decision.actors
                                                                            else None))
        object.__setattr__(self, "rng", rng)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_last_known", last_known if last_known is not None else {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise ReadOnlyError(f"observations are read-only: cannot set {name}")

    def for_actor(self, actor: int) -> "Observation":
        """The same observation focused on another of the decision's actors."""
        return Observation(self._b, self.side, self.decision, self.rng, actor, self._last_known)

    def _memo(self, key: Any, fn: Any) -> Any:
        c = self._cache
        if key not in c:
            c[key] = fn()
        return c[key]

    # --- facts ------------------------------------------------------------------------------------------------
    @property
    def ruleset(self) -> str:
        return self._rs.name

    @property
    def has_ramming(self) -> bool:
        return self._rs.has_ramming

    @property
    def turn(self) -> int:
        return self._b.turn

    @property
    def turn_limit(self) -> int:
        return self._b.turn_limit

    @property
    def role(self) -> str:
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
        """Any own tank, or an enemy tank that is visible (raises ``KeyError`` for a hidden enemy)."""
        t = self._b.tanks[tid]
        if t.side != self.side and tid not in self.visible_ids() and t.alive:
            raise KeyError(f"tank {tid} is not visible")
        return TankView(t)

    def friends(self) -> list[TankView]:
        """Live own tanks other than the actor."""
        return [TankView(t) for t in self._b.live_tanks(self.side) if t.tank_id != self.actor]

    def visible_ids(self) -> tuple[int, ...]:
        b = self._b
        return b.map.cached(("visible", self.side, b.version), lambda: tuple(self._rs.visible(b, self.side)))

    def enemies(self) -> list[TankView]:
        """Visible live enemy tanks (the rule set's spotting), in id order."""
        ids = self.visible_ids()
        for i in ids:
            self._last_known[i] = self._b.tanks[i].hex
        return [TankView(self._b.tanks[i]) for i in ids]

    def last_known(self) -> Mapping[int, Hex]:
        """Last hex each enemy was seen on (by this side's controller), including currently visible ones."""
        self.enemies()
        return MappingProxyType({k: v for k, v in self._last_known.items()
                                 if self._b.tanks[k].alive})

    def objectives(self) -> list[dict]:
        return [dict(o) for o in self._b.objectives]

    # --- the decision -----------------------------------------------------------------------------------------
    def targets(self, actor: int | None = None) -> tuple[int, ...]:
        a = self.actor if actor is None else actor
        return self._memo(("targets", a), lambda: tuple(self.decision.legal.targets(a)))

    def reachable(self, actor: int | None = None) -> Mapping[Any, tuple[int, list]]:
        """``{state: (cost, path)}`` the actor can reach in this decision (the rule set's movement search)."""
        a = self.actor if actor is None else actor
        return self._memo(("reach", a), lambda: self.decision.legal.reachable(a))

    def plan_to(self, path: list, then: Any = None, end_status: str | None = None) -> Any:
        """A move plan along ``path`` (from :meth:`reachable`) for the actor."""
        if self.decision.legal.plan_to is None:
            raise ValueError(f"decision {self.decision.kind!r} takes no move plan")
        return self.decision.legal.plan_to(self.actor, path, then, end_status)

    def is_legal(self, action: Any) -> bool:
        return bool(self.decision.legal.contains(action))

    # --- geometry and odds ------------------------------------------------------------------------------------
    def distance(self, a: Any, b: Any) -> int:
        return distance(a, b)

    def passable(self, h: Any) -> bool:
        return self._rs.passable(self._b, as_hex(h))

    def distance_field(self, sources: tuple[Hex, ...]) -> Mapping[Hex, int]:
        """Steps to the nearest of ``sources`` over passable terrain (one BFS, cached per turn and sources)."""
        b = self._b
        key = ("dfield", b.turn, tuple(sorted(sources)))
        return b.map.cached(key, lambda: b.map.distance_field(sources, lambda h: self._rs.passable(b, h)))

    def hex_of(self, state: Any) -> Hex:
        """The hex of a movement state (``(hex, facing)`` or a bare hex)."""
        if isinstance(state, Hex):
            return state
        if isinstance(state, tuple) and len(state) >= 1 and isinstance(state[0], tuple):
            return as_hex(state[0])
        return as_hex(state)

    def facing_of(self, state: Any) -> int:
        if isinstance(state, tuple) and len(state) >= 2 and isinstance(state[0], tuple):
            return int(state[1])
        return self.me.facing if self.me else 0

    def odds(self, target: int, as_if: Hypo | None = None, shooter: int | None = None) -> Odds | None:
        """Exact odds of ``shooter`` (the actor) firing at ``target`` now, or from ``as_if``; ``None`` if illegal."""
        s = self.actor if shooter is None else shooter
        if s is None:
            return None

        def compute() -> Odds | None:
            shot = self._rs.shot(self._b, s, target, None, as_if)
            return None if isinstance(shot, Illegal) else self._rs.odds(shot.key)

        return self._memo(("odds", s, target, as_if), compute)

    def threat(self, hex: Any, facing: int, tank: int | None = None) -> Fraction:
        """Summed kill odds of the visible enemies against ``tank`` (the actor) standing on ``hex`` facing
        ``facing``."""
        tid = self.actor if tank is None else tank
        h = as_hex(hex)

        def compute() -> Fraction:
            view = HypoView(self._b, tid, h, facing)
            total = Fraction(0)
            for e in self.visible_ids():
                shot = self._rs.shot(view, e, tid)
                if not isinstance(shot, Illegal):
                    total += self._rs.odds(shot.key).p_kill
            return total

        return self._memo(("threat", tid, h, facing), compute)

    def los(self, frm: int, to: int) -> bool:
        """Whether ``frm`` could fire at ``to`` now (the rule set's sight and legality)."""
        return not isinstance(self._rs.shot(self._b, frm, to), Illegal)
