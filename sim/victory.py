"""Victory conditions shared by every rule set (CONVENTIONS.md "Victory").

* A side with no tank left that can fight loses at once (unless the rule set says otherwise).
* After the turn limit, victory points decide when the scenario has objectives or exit edges: each objective hex is
  worth its points to the side that holds it (a live tank of that side in the hex and no live enemy in it), each
  enemy tank destroyed is worth ``kill_points``, each own tank exited ``exit_points``; equal points draw.
* Otherwise the rule set's own turn-limit rule applies (passed in as ``fallback``).
"""
from __future__ import annotations

from typing import Any, Callable

from sim.battle import BoardView
from sim.events import Status
from sim.rules.base import Outcome


def eliminated_outcome(b: BoardView) -> Outcome | None:
    """The side(s) with no fighting tank left lose; both eliminated at once is a draw; ``None`` otherwise.

    A side whose every tank exited the board is not eliminated by this test (its points are counted at the end).
    """
    sides = list(b.side_ids())
    fighting = [any(t.alive and t.hex is not None for t in b.tanks if t.side == s) for s in sides]
    exited = [any(t.status == Status.EXITED for t in b.tanks if t.side == s) for s in sides]
    out = [s for s in sides if not fighting[s] and not exited[s]]
    if not out:
        return None
    left = [s for s in sides if s not in out]
    if len(left) == 1:
        return Outcome(left[0], f"{b.sides[out[0]].name} has no tank left that can fight", victory_points(b))
    if not left:
        return Outcome(None, "no side has a tank left that can fight", victory_points(b))
    return None


def holder(b: BoardView, h: tuple[int, int]) -> int | None:
    """Side holding hex ``h``: a live tank of that side in it and no live enemy in it."""
    sides = {b.tanks[i].side for i in b.occupants(h) if b.tanks[i].alive}
    return sides.pop() if len(sides) == 1 else None


def victory_points(b: BoardView) -> tuple[int, ...]:
    """Points per side: objectives held + enemy tanks destroyed x ``kill_points`` + own exits x ``exit_points``."""
    pts = [0 for _ in b.side_ids()]
    for o in b.objectives:
        s = holder(b, tuple(o["hex"]))
        if s is not None and (o.get("side") is None or o.get("side") == s):
            pts[s] += int(o.get("points", 1))
    for t in b.tanks:
        if t.status in (Status.DESTROYED, Status.INCAPACITATED, Status.WITHDRAWN, Status.FLED):
            for s in b.side_ids():
                if s != t.side:
                    pts[s] += b.kill_points
        elif t.status == Status.EXITED:
            pts[t.side] += b.exit_points
    return tuple(pts)


def has_points_victory(b: BoardView) -> bool:
    return bool(b.objectives) or any(s.exit_edge for s in b.sides)


def turn_limit_outcome(b: BoardView, fallback: Callable[[Any], Outcome]) -> Outcome | None:
    """At the end of the last turn: victory points if the scenario has objectives or exit edges, else ``fallback``.
    ``None`` before the limit."""
    if b.rules_state.get("turns_completed", 0) < b.turn_limit:
        return None
    if has_points_victory(b):
        pts = victory_points(b)
        best = max(pts)
        winners = [s for s, p in enumerate(pts) if p == best]
        if len(winners) == 1:
            return Outcome(winners[0], f"victory points {list(pts)} after turn {b.turn_limit}", pts)
        return Outcome(None, f"victory points tied {list(pts)} after turn {b.turn_limit}", pts)
    return fallback(b)


def most_tanks(b: BoardView) -> Outcome:
    """More surviving (fighting) tanks wins; equal is a draw."""
    n = [len(b.live_tanks(s)) for s in b.side_ids()]
    best = max(n)
    w = [s for s, k in enumerate(n) if k == best]
    if len(w) == 1:
        return Outcome(w[0], f"more tanks left after the turn limit {n}", victory_points(b))
    return Outcome(None, f"equal tanks left after the turn limit {n}", victory_points(b))


def draw(b: BoardView) -> Outcome:
    return Outcome(None, f"turn limit {b.turn_limit} reached", victory_points(b))


def standard_outcome(b: BoardView, fallback: Callable[[Any], Outcome] = draw) -> Outcome | None:
    """Elimination first, then the turn limit."""
    return eliminated_outcome(b) or turn_limit_outcome(b, fallback)
