"""Actions: what a controller answers to a :class:`~sim.rules.base.Decision`.

Every action names its ``actor`` (a tank id, or ``None`` for a side-level answer such as passing).  Actions are
frozen values; the rule set checks them with ``decision.legal.contains(action)``; the engine logs an illegal one
(``ActionRejected``) and applies the decision's default instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from sim.hexgrid import Hex


@dataclass(frozen=True)
class Action:
    """Base of every action; ``actor`` is the tank id that acts (``None`` for the side)."""

    actor: int | None


@dataclass(frozen=True)
class Pass(Action):
    """Do nothing at this decision (end a move, decline an interrupt, hold)."""

    actor: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class Activate(Action):
    """Choose the tank to activate and its action ``mode`` (a name the rule set offers in ``legal.modes``)."""

    mode: str = "hold"


@dataclass(frozen=True)
class Step(Action):
    """Enter the adjacent hex ``to`` (one step of a move)."""

    to: Hex = Hex(0, 0)


@dataclass(frozen=True)
class Pivot(Action):
    """Turn the hull to vertex ``facing`` (0..5); rule sets charge their own cost per 60 degrees."""

    facing: int = 0


@dataclass(frozen=True)
class Fire(Action):
    """Fire at ``target`` (a tank id, or a hex for area/indirect fire) with ``weapons`` (empty = all ready) and
    ``ammo`` (rule-set ammunition name, ``None`` = standard)."""

    target: int | Hex = 0
    weapons: tuple[str, ...] = ()
    ammo: str | None = None


@dataclass(frozen=True)
class Ram(Action):
    """Ram ``target`` (only where the rule set has ramming)."""

    target: int = 0


@dataclass(frozen=True)
class Special(Action):
    """A rule-set specific action ``name`` with ``args`` (e.g. ``end_move`` with a status marker)."""

    name: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan(Action):
    """A whole move answered at once: ``steps`` (Step/Pivot actions in order), then ``then`` (e.g. a Fire, or
    ``None`` to stop) and an optional ``end_facing`` / ``end_status``.  The engine answers the following
    ``move_step`` decisions from the plan until it is used up or the move is interrupted."""

    steps: tuple[Action, ...] = ()
    then: Action | None = None
    end_facing: int | None = None
    end_status: str | None = None
