"""Exact small-engagement theory as an oracle: the absorbing Markov chain of a fixed-odds tank duel.

When every shot of a battle is the same clear duel (identical tanks on an open map that stand still and fire at a
uniformly random enemy: the ``random_target`` doctrine), the battle is a Markov chain on how many tanks each side
has alive, driven by two numbers, the exact kill probability of one shot fired by each side
(``ruleset.odds(shot.key).p_kill``, a ``Fraction``), and by the order in which the rule set lets tanks fire.  This
module builds that chain from a scenario and solves it exactly: P(each side wins), P(draw at the turn limit), the
distribution of survivors (and their mean given a win) and of the duration in turns, as fractions where feasible.
``tanksim oracle SCENARIO [--json] [--simulate N]`` (:mod:`sim.cli.oracle`) prints it (beside the simulated result
with its interval when asked); ``tanksim report`` adds the same comparison for every design point that qualifies
(:func:`report_section`).

**What the oracle assumes** (:func:`engagement` checks each point and refuses otherwise, saying which failed):

1. Both sides play ``random_target`` (no per-tank doctrine), with a ``min_odds`` every shot reaches.
2. Every tank is the same vehicle with the same per-tank ``rules`` block; the board is all ``open`` terrain, with no
   ``map.features``, no objectives and no exit edge (the turn limit is decided by the rule set's own rule: a draw,
   or Panzer Squadron's ``most_tanks``).
3. Every shot is the same duel: from every live tank at every live enemy the shot is legal and its kill
   probability is the same for every pair of one side, whatever other tanks have been destroyed.  Panzer
   Squadron and Hummel Quest are checked on the board itself for every combination of destroyed tanks (a wreck
   blocks sight in Panzer Squadron and gives hard cover in Hummel Quest); ASL is checked on the initial board and
   requires that no tank stands on the hex line between any shooter and target (wrecks hinder or block there).
4. A shot either destroys its target or changes nothing that later odds depend on, and the rules keep no state
   that would change the odds: Panzer Squadron: all tanks start ``stationary``, and a shot that turns the turret
   is allowed only with ``auto_recentre_turret``; Hummel Quest: every hit incapacitates (P(kill) = P(hit), no OST
   loss from a hit), no weapon needs reloading, no ambush, and no tank can panic from seeing its friends fall (its
   OST exceeds ``ost_witness_loss`` x (its side's tanks - 1)); ASL: no result but Burn / Elim / Dud / no effect
   (no Immobilization, Shock or Possible Shock that counts), no ROF, no malfunction, no special ammunition, no
   turret or hull turn (every target in every firer's CA), no start in Motion, and the kill odds do not change
   with Acquisition (C6.5: -1, -2 on later shots at one target).
5. The rule set's order of fire, which is part of the chain (:class:`Schedule`):

   * Panzer Squadron (D15): initiative each turn (``roll``: each side first with probability 1/2 by symmetry;
     ``alternate``: the first side on odd turns), then the sides alternate single activations, each live tank
     firing once per turn; a side with none left passes and the other fires the rest
     (:class:`AlternatingActivations`).
   * Hummel Quest (§3): each round every live tank rolls d10 + Reflexes; identical tanks make the order a uniformly
     random permutation, so the next to fire is uniform among the tanks that have not yet fired this round
     (:class:`RandomOrderRounds`).
   * ASL (section 4): each Player Turn the ATTACKER's AFVs Prep Fire one after another, then the DEFENDER's fire
     in the DFPh; the first side is ATTACKER first, so a Game Turn is four volleys: first, second, second, first
     (:class:`Volleys`).

   Which tank of a side fires does not matter to the chain (identical tanks, random targets), so a side's
   ``activation_order`` changes nothing here.

Exact arithmetic: the chain is acyclic (the turn counter only grows), so it is solved by pushing probability mass
forward in a topological order, with ``Fraction`` throughout.  When the state space passes
:data:`MAX_EXACT_STATES` or a probability's denominator passes :data:`MAX_DENOMINATOR_DIGITS` digits, the chain is
solved again in floats and the result says so (``exact: false`` and a ``note``); beyond :data:`MAX_STATES` it is
refused.

:class:`RandomShooter` is the textbook stochastic square law (Brown 1963, "Theory of combat: the probability of
winning", Operations Research 11(3), 418-425): the next shot comes from a live tank drawn uniformly from both sides,
so the next casualty is on the second side with probability ``r x / (r x + y)``, ``r = p_1 / p_2``.  Its chain is
given as the ``reference`` beside every rule set's (the square law without a turn structure).
"""
from __future__ import annotations

import heapq
import itertools
import json
import math
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

#: Exact solving stops (and the chain is solved in floats) past this many states or denominator digits.
MAX_EXACT_STATES = 200_000
MAX_DENOMINATOR_DIGITS = 3_000
#: The chain is refused past this many states (floats too).
MAX_STATES = 3_000_000
#: Most tanks per side, and most tanks in all, the oracle takes on (the board check visits every combination of
#: destroyed tanks for Panzer Squadron and Hummel Quest).
MAX_TANKS_PER_SIDE = 8
MAX_TANKS = 10
#: The doctrine the oracle assumes on both sides.
DOCTRINE = "random_target"

Number = Fraction | float


class OracleRefused(ValueError):
    """The scenario does not fit the oracle's assumptions; ``reasons`` lists each one that failed (sentences)."""

    def __init__(self, reasons: Sequence[str]):
        self.reasons = list(reasons)
        super().__init__("; ".join(self.reasons))


class OracleTooLarge(OracleRefused):
    """The chain has more than :data:`MAX_STATES` states."""


# --- the chain ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ending:
    """An absorbing state: ``winner`` (side index, ``None`` for a draw), ``alive`` per side, the ``turn`` it ended
    in (``None`` for a schedule without turns)."""

    winner: int | None
    alive: tuple[int, int]
    turn: int | None


class Schedule(Protocol):
    """The order in which a rule set lets tanks fire, as the transitions of a Markov chain.

    ``initial(alive)`` is the start state for ``alive = (n0, n1)`` tanks; ``step(state, p)`` lists ``(probability,
    next)`` pairs (``next`` a state or an :class:`Ending`; probabilities sum to 1; ``p = (p0, p1)`` the kill
    probability of one shot fired by each side); ``order(state)`` grows strictly along every transition except a
    self-loop (the solver's topological order)."""

    @property
    def name(self) -> str: ...

    def initial(self, alive: tuple[int, int]) -> Hashable: ...

    def step(self, state: Any, p: tuple[Number, Number]) -> list[tuple[Number, Any]]: ...

    def order(self, state: Any) -> tuple: ...

    def describe(self) -> dict[str, Any]: ...


def _limit_ending(alive: tuple[int, int], turn: int, rule: str) -> Ending:
    """The end after the last turn: ``draw``, or ``most_tanks`` (more tanks alive wins, equal draws)."""
    if rule == "most_tanks" and alive[0] != alive[1]:
        return Ending(0 if alive[0] > alive[1] else 1, alive, turn)
    return Ending(None, alive, turn)


def _shot(p: Number, waiting: int, done: int) -> list[tuple[Number, str | None]]:
    """One shot with kill probability ``p`` at a live enemy drawn uniformly from ``waiting`` (not yet fired this
    turn) and ``done`` (fired) tanks: ``[(prob, "waiting" | "done" | None for a miss), ...]``."""
    n = waiting + done
    out: list[tuple[Number, str | None]] = []
    if waiting:
        out.append((p * waiting / n, "waiting"))
    if done:
        out.append((p * done / n, "done"))
    out.append((1 - p, None))
    return [(q, k) for q, k in out if q != 0]


@dataclass(frozen=True)
class _Turns:
    """Shared by the schedules with turns: the ``turn_limit`` and the rule that decides it (``draw`` or
    ``most_tanks``)."""

    turn_limit: int
    limit_result: str = "draw"


@dataclass(frozen=True)
class AlternatingActivations(_Turns):
    """Panzer Squadron D15: initiative, then the sides alternate activating one tank each; every live tank fires
    once per turn; a side with no tank left to activate passes and the other activates the rest.

    ``initiative``: ``roll`` (each side rolls d10, ties re-rolled: either side first with probability 1/2) or
    ``alternate`` (side 0 first on odd turns, side 1 on even turns).  States: ``("start", turn, n0, n1)`` and
    ``("act", turn, side to act, waiting0, done0, waiting1, done1)``."""

    initiative: str = "roll"
    name: str = "alternating_activations"

    def initial(self, alive: tuple[int, int]) -> Hashable:
        return ("start", 1, alive[0], alive[1])

    def order(self, state: Any) -> tuple:
        if state[0] == "start":
            return (state[1], 0, 0)
        _, t, _s, w0, _d0, w1, _d1 = state
        return (t, 1, -(w0 + w1))

    def step(self, state: Any, p: tuple[Number, Number]) -> list[tuple[Number, Any]]:
        one = p[0] ** 0  # 1 in the arithmetic of p (Fraction or float)
        if state[0] == "start":
            _, t, n0, n1 = state
            if self.initiative == "alternate":
                return [(one, ("act", t, 0 if t % 2 == 1 else 1, n0, 0, n1, 0))]
            half = one / 2
            return [(half, ("act", t, 0, n0, 0, n1, 0)), (half, ("act", t, 1, n0, 0, n1, 0))]
        _, t, s, w0, d0, w1, d1 = state
        w, d = [w0, w1], [d0, d1]
        if w0 + w1 == 0:
            alive = (d0, d1)
            if t >= self.turn_limit:
                return [(one, _limit_ending(alive, t, self.limit_result))]
            return [(one, ("start", t + 1, d0, d1))]
        if w[s] == 0:
            s = 1 - s
        e = 1 - s
        w[s] -= 1
        d[s] += 1
        out: list[tuple[Number, Any]] = []
        for q, hit in _shot(p[s], w[e], d[e]):
            ww, dd = list(w), list(d)
            if hit == "waiting":
                ww[e] -= 1
            elif hit == "done":
                dd[e] -= 1
            if ww[e] + dd[e] == 0:
                out.append((q, Ending(s, (ww[0] + dd[0], ww[1] + dd[1]), t)))
            else:
                out.append((q, ("act", t, e, ww[0], dd[0], ww[1], dd[1])))
        return out

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "initiative": self.initiative, "turn_limit": self.turn_limit,
                "limit_result": self.limit_result,
                "text": "each turn " + ("a d10 initiative roll picks the side that starts"
                                        if self.initiative == "roll" else "the first side starts on odd turns")
                        + "; the sides alternate single activations (one shot each), every live tank once per "
                          "turn; a side with none left passes (Panzer Squadron D15)"}


@dataclass(frozen=True)
class RandomOrderRounds(_Turns):
    """Hummel Quest §3 with identical tanks: each round the live tanks fire once each in a uniformly random order
    (a tank destroyed before its turn skips it).  States: ``("start", round, n0, n1)`` and ``("act", round,
    waiting0, done0, waiting1, done1)``."""

    name: str = "random_order_rounds"

    def initial(self, alive: tuple[int, int]) -> Hashable:
        return ("start", 1, alive[0], alive[1])

    def order(self, state: Any) -> tuple:
        if state[0] == "start":
            return (state[1], 0, 0)
        _, t, w0, _d0, w1, _d1 = state
        return (t, 1, -(w0 + w1))

    def step(self, state: Any, p: tuple[Number, Number]) -> list[tuple[Number, Any]]:
        one = p[0] ** 0
        if state[0] == "start":
            _, t, n0, n1 = state
            return [(one, ("act", t, n0, 0, n1, 0))]
        _, t, w0, d0, w1, d1 = state
        if w0 + w1 == 0:
            if t >= self.turn_limit:
                return [(one, _limit_ending((d0, d1), t, self.limit_result))]
            return [(one, ("start", t + 1, d0, d1))]
        out: list[tuple[Number, Any]] = []
        for s in (0, 1):
            ws = (w0, w1)[s]
            if ws == 0:
                continue
            pick = one * ws / (w0 + w1)
            w, d = [w0, w1], [d0, d1]
            e = 1 - s
            w[s] -= 1
            d[s] += 1
            for q, hit in _shot(p[s], w[e], d[e]):
                ww, dd = list(w), list(d)
                if hit == "waiting":
                    ww[e] -= 1
                elif hit == "done":
                    dd[e] -= 1
                if ww[e] + dd[e] == 0:
                    out.append((pick * q, Ending(s, (ww[0] + dd[0], ww[1] + dd[1]), t)))
                else:
                    out.append((pick * q, ("act", t, ww[0], dd[0], ww[1], dd[1])))
        return out

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "turn_limit": self.turn_limit, "limit_result": self.limit_result,
                "text": "each round every live tank fires once, in a uniformly random order (initiative d10 + "
                        "Reflexes with identical tanks, Hummel Quest section 3)"}


@dataclass(frozen=True)
class Volleys(_Turns):
    """Fire by whole sides in turn: each turn is the volleys of ``pattern`` (side indices); in a volley every live
    tank of that side fires once, one after another (kills apply at once).  ASL: ``(first, second, second,
    first)`` (the ATTACKER's Prep Fire, the DEFENDER's Defensive Fire, then the same with the roles swapped).
    States: ``("volley", turn, k, n0, n1, left)`` (``left``: tanks of ``pattern[k]`` still to fire)."""

    pattern: tuple[int, ...] = (0, 1, 1, 0)
    name: str = "volleys"

    def initial(self, alive: tuple[int, int]) -> Hashable:
        return ("volley", 1, 0, alive[0], alive[1], alive[self.pattern[0]])

    def order(self, state: Any) -> tuple:
        _, t, k, _n0, _n1, left = state
        return (t, k, -left)

    def step(self, state: Any, p: tuple[Number, Number]) -> list[tuple[Number, Any]]:
        one = p[0] ** 0
        _, t, k, n0, n1, left = state
        n = [n0, n1]
        if left == 0:
            if k + 1 < len(self.pattern):
                return [(one, ("volley", t, k + 1, n0, n1, n[self.pattern[k + 1]]))]
            if t >= self.turn_limit:
                return [(one, _limit_ending((n0, n1), t, self.limit_result))]
            return [(one, ("volley", t + 1, 0, n0, n1, n[self.pattern[0]]))]
        s = self.pattern[k]
        e = 1 - s
        out: list[tuple[Number, Any]] = []
        for q, hit in _shot(p[s], n[e], 0):
            nn = list(n)
            if hit:
                nn[e] -= 1
            if nn[e] == 0:
                out.append((q, Ending(s, (nn[0], nn[1]), t)))
            else:
                out.append((q, ("volley", t, k, nn[0], nn[1], left - 1)))
        return out

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "pattern": list(self.pattern), "turn_limit": self.turn_limit,
                "limit_result": self.limit_result,
                "text": "each turn the sides fire whole volleys in the order " + ", ".join(
                    f"side {s + 1}" for s in self.pattern) + " (ASL section 4: Prep Fire, Defensive Fire)"}


@dataclass(frozen=True)
class RandomShooter:
    """Brown's (1963) stochastic square law: the next shot is fired by a live tank drawn uniformly from both sides
    at a uniformly random enemy; no turns, no limit.  States: ``(n0, n1)``; a miss is a self-loop."""

    name: str = "random_shooter"

    def initial(self, alive: tuple[int, int]) -> Hashable:
        return alive

    def order(self, state: Any) -> tuple:
        return (-(state[0] + state[1]),)

    def step(self, state: Any, p: tuple[Number, Number]) -> list[tuple[Number, Any]]:
        one = p[0] ** 0
        n0, n1 = state
        out: list[tuple[Number, Any]] = []
        miss = 0 * one
        for s in (0, 1):
            pick = one * (n0, n1)[s] / (n0 + n1)
            if pick == 0:
                continue
            nxt = [n0, n1]
            nxt[1 - s] -= 1
            out.append((pick * p[s], Ending(s, (nxt[0], nxt[1]), None) if nxt[1 - s] == 0 else tuple(nxt)))
            miss += pick * (1 - p[s])
        if miss:
            out.append((miss, state))
        return out

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "text": "the next shot comes from a live tank drawn uniformly from both sides "
                                           "(the stochastic square law of Brown 1963; no turns)"}


@dataclass
class Solution:
    """A solved chain: ``endings`` (each :class:`Ending` with its probability), ``states`` (transient states
    visited), ``exact`` (``Fraction`` arithmetic throughout) and ``note`` (why not exact)."""

    endings: dict[Ending, Number]
    states: int
    exact: bool
    note: str = ""

    def p_win(self, side: int) -> Number:
        return sum((q for e, q in self.endings.items() if e.winner == side), self._zero())

    def p_draw(self) -> Number:
        return sum((q for e, q in self.endings.items() if e.winner is None), self._zero())

    def survivors(self, side: int) -> dict[int, Number]:
        """P(side ``side`` wins with k tanks alive), by k (unconditional; sums to :meth:`p_win`)."""
        out: dict[int, Number] = {}
        for e, q in self.endings.items():
            if e.winner == side:
                out[e.alive[side]] = out.get(e.alive[side], self._zero()) + q
        return dict(sorted(out.items()))

    def alive(self, side: int) -> dict[int, Number]:
        """The distribution of side ``side``'s tanks alive at the end (every ending)."""
        out: dict[int, Number] = {}
        for e, q in self.endings.items():
            out[e.alive[side]] = out.get(e.alive[side], self._zero()) + q
        return dict(sorted(out.items()))

    def expected_survivors_given_win(self, side: int) -> Number | None:
        pw = self.p_win(side)
        if pw == 0:
            return None
        return sum((k * q for k, q in self.survivors(side).items()), self._zero()) / pw

    def expected_alive(self, side: int) -> Number:
        return sum((k * q for k, q in self.alive(side).items()), self._zero())

    def duration(self) -> dict[int, Number] | None:
        """The distribution of the turn the battle ends in (``None`` for a schedule without turns)."""
        if any(e.turn is None for e in self.endings):
            return None
        out: dict[int, Number] = {}
        for e, q in self.endings.items():
            if e.turn is not None:
                out[e.turn] = out.get(e.turn, self._zero()) + q
        return dict(sorted(out.items()))

    def expected_duration(self) -> Number | None:
        d = self.duration()
        return None if d is None else sum((t * q for t, q in d.items()), self._zero())

    def _zero(self) -> Number:
        return Fraction(0) if self.exact else 0.0


class _Fallback(Exception):
    """Exact solving gave up (too many states or digits): solve in floats."""


def solve(schedule: Schedule, alive: tuple[int, int], p: tuple[Fraction, Fraction], *, exact: bool = True,
          max_exact_states: int = MAX_EXACT_STATES, max_digits: int = MAX_DENOMINATOR_DIGITS,
          max_states: int = MAX_STATES) -> Solution:
    """Solve the chain of ``schedule`` from ``alive = (n0, n1)`` tanks with per-shot kill probabilities ``p``
    (fired by side 0, by side 1; each in [0, 1]): the probability of every :class:`Ending`.

    Mass is pushed forward from the start in ``schedule.order``; a self-loop of probability ``s`` scales a state's
    other transitions by ``1 / (1 - s)`` (the chain leaves the state eventually; a state that can never be left is an
    error).  With ``exact`` the arithmetic is ``Fraction``; past ``max_exact_states`` states or a denominator of
    ``max_digits`` digits the chain is solved again in floats (``exact=False``, ``note`` says why).  Raises
    :class:`OracleTooLarge` past ``max_states`` states, ``ValueError`` for a probability outside [0, 1] or a state
    that loops on itself with probability 1."""
    for q in p:
        if not 0 <= q <= 1:
            raise ValueError(f"kill probability {q}: expected 0..1")
    if exact:
        try:
            return _solve(schedule, alive, (Fraction(p[0]), Fraction(p[1])), True, max_exact_states, max_digits)
        except _Fallback as why:
            sol = _solve(schedule, alive, (float(p[0]), float(p[1])), False, max_states, 0)
            sol.note = f"solved in floating point: {why}"
            return sol
    return _solve(schedule, alive, (float(p[0]), float(p[1])), False, max_states, 0)


def _solve(schedule: Schedule, alive: tuple[int, int], p: tuple[Number, Number], exact: bool, max_states: int,
           max_digits: int) -> Solution:
    start = schedule.initial(alive)
    one: Number = Fraction(1) if exact else 1.0
    mass: dict[Any, Number] = {start: one}
    heap: list[tuple[tuple, int, Any]] = [(schedule.order(start), 0, start)]
    tie = itertools.count(1)
    endings: dict[Ending, Number] = {}
    seen = 0
    max_bits = int(max_digits * 3.33) if max_digits else 0
    while heap:
        _, _, state = heapq.heappop(heap)
        m = mass.pop(state, None)
        if m is None:
            continue
        seen += 1
        if seen > max_states:
            if exact:
                raise _Fallback(f"more than {max_states:,} states for exact arithmetic")
            raise OracleTooLarge([f"the chain has more than {max_states:,} states"])
        trans = schedule.step(state, p)
        loop = sum((q for q, nxt in trans if nxt == state), 0 * one)
        if loop:
            if loop >= 1:
                raise ValueError(f"state {state!r} is never left")
            m = m / (1 - loop)
        for q, nxt in trans:
            if nxt == state:
                continue
            add = m * q
            if isinstance(nxt, Ending):
                endings[nxt] = endings.get(nxt, 0 * one) + add
                continue
            if nxt in mass:
                mass[nxt] += add
            else:
                mass[nxt] = add
                heapq.heappush(heap, (schedule.order(nxt), next(tie), nxt))
            got = mass[nxt]
            if max_bits and isinstance(got, Fraction) and got.denominator.bit_length() > max_bits:
                raise _Fallback(f"a probability's denominator passed {max_digits:,} digits")
    return Solution(endings, seen, exact)


# --- which scenarios qualify -------------------------------------------------------------------------------------

@dataclass
class Engagement:
    """A scenario seen as a fixed-odds duel (see the module docstring): ``sides`` (names), ``tanks`` per side,
    ``vehicle``, ``p_kill`` per firing side (exact), ``odds`` (the shot's odds JSON per firing side: every key
    the rule set gives), ``schedule``, ``checked`` (what was verified, sentences) and ``configurations`` (boards
    checked)."""

    scenario: str
    source: str
    ruleset: str
    sides: tuple[str, str]
    tanks: tuple[int, int]
    vehicle: str
    p_kill: tuple[Fraction, Fraction]
    odds: tuple[dict[str, Any], dict[str, Any]]
    schedule: Any
    checked: list[str] = field(default_factory=list)
    configurations: int = 0

    def solve(self, exact: bool = True) -> Solution:
        return solve(self.schedule, self.tanks, self.p_kill, exact=exact)

    def reference(self, exact: bool = True) -> Solution:
        """Brown's square law (:class:`RandomShooter`) with the same tanks and kill probabilities."""
        return solve(RandomShooter(), self.tanks, self.p_kill, exact=exact)


def _frac(x: Any) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(str(x))


def _common_checks(spec: Any) -> list[str]:
    """Assumptions 1 and 2 (doctrine, identical tanks, open board): the reasons that fail (empty if none)."""
    bad = []
    for s in spec.sides:
        if s.policy.name != DOCTRINE:
            bad.append(f"side {s.name} plays {s.policy.name!r}; the oracle assumes both sides play {DOCTRINE} "
                       f"(hold, fire at a uniformly random enemy)")
        if any(t.policy is not None for t in s.tanks):
            bad.append(f"side {s.name} has a tank with its own doctrine; the oracle assumes {DOCTRINE} everywhere")
        if s.exit_edge:
            bad.append(f"side {s.name} has an exit edge (victory points would decide the turn limit)")
    vehicles = {t.vehicle for s in spec.sides for t in s.tanks}
    if len(vehicles) > 1:
        bad.append(f"the tanks are not identical: vehicles {', '.join(sorted(vehicles))}")
    blocks = {json.dumps(t.rules, sort_keys=True) for s in spec.sides for t in s.tanks}
    if len(blocks) > 1:
        bad.append("the tanks are not identical: their per-tank rules blocks differ")
    if spec.objectives:
        bad.append("the scenario has objectives (victory points would decide the turn limit)")
    if spec.map.features:
        bad.append("the map has features (per-hex rule-set blocks)")
    n = [len(s.tanks) for s in spec.sides]
    if max(n) > MAX_TANKS_PER_SIDE or sum(n) > MAX_TANKS:
        bad.append(f"{n[0]} v {n[1]} tanks: the oracle takes at most {MAX_TANKS_PER_SIDE} per side and "
                   f"{MAX_TANKS} in all (small engagements)")
    return bad


def _open_board(b: Any) -> list[str]:
    tiles = sorted({b.map.terrain(h) for h in b.map.cells} - {"open"})
    return [f"the board has terrain other than open ground ({', '.join(tiles)})"] if tiles else []


def _configurations(n: tuple[int, int]) -> list[frozenset[int]]:
    """Every set of destroyed tanks that leaves each side at least one (tank ids: side 0 first)."""
    ids0, ids1 = range(n[0]), range(n[0], n[0] + n[1])
    out = []
    for k0 in range(n[0]):
        for dead0 in itertools.combinations(ids0, k0):
            for k1 in range(n[1]):
                for dead1 in itertools.combinations(ids1, k1):
                    out.append(frozenset(dead0 + dead1))
    return out


def _side_odds(spec: Any, kill: Callable[[Any, int], None] | None, value: Callable[[Any, Any], dict[str, Any]],
               configs: Iterable[frozenset[int]]) -> tuple[list[dict[str, Any] | None], list[str], int]:
    """Evaluate every shot from a live tank at a live enemy on the board with each set of destroyed tanks in
    ``configs`` (``kill(battle, tank)`` destroys one; ``None``: only the initial board).  ``value(battle, shot)``
    gives the odds that matter (a mapping).  Returns the common odds per firing side (``None`` if there was no
    shot), the reasons against, and the number of boards checked."""
    from sim.actions import Fire
    from sim.model import build_battle
    from sim.rules.base import Illegal

    ref: list[dict[str, Any] | None] = [None, None]
    where: list[str] = ["", ""]
    bad: list[str] = []
    boards = 0
    for dead in configs:
        b = build_battle(spec)
        if kill is not None:
            for tid in sorted(dead):
                kill(b, tid)
        boards += 1
        live = [t for t in b.tanks if t.tank_id not in dead]
        for s in live:
            for t in live:
                if t.side == s.side:
                    continue
                shot = b.ruleset.shot(b, s.tank_id, t.tank_id, Fire(s.tank_id, t.tank_id))
                lab = f"{s.label} -> {t.label}" + (f" (with {', '.join(b.tanks[i].label for i in sorted(dead))} "
                                                     f"destroyed)" if dead else "")
                if isinstance(shot, Illegal):
                    bad.append(f"{lab}: no shot ({shot}); the oracle needs every live tank to be able to fire at "
                               f"every live enemy")
                    return ref, bad, boards
                v = value(b, shot)
                known = ref[s.side]
                if known is None:
                    ref[s.side], where[s.side] = v, lab
                elif v != known:
                    diff = sorted(k for k in set(v) | set(known) if v.get(k) != known.get(k))
                    bad.append(f"the shots differ: {where[s.side]} has {_odds_text(known, diff)} but {lab} has "
                               f"{_odds_text(v, diff)}; the oracle needs one fixed duel per side")
                    return ref, bad, boards
    return ref, bad, boards


def _odds_text(v: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(f"{k} {v.get(k)}" for k in keys[:4])


def _ps(spec: Any, b: Any) -> tuple[Any, list[dict[str, Any] | None], list[str], list[str], int]:
    from sim.events import Status, StatusChanged

    bad, checked = [], []
    opts = b.options
    moving = [t.label for t in b.tanks if t.rules_state.get("marker") != "stationary"]
    if moving:
        bad.append(f"tanks {', '.join(moving)} start in movement (they could not use the fire action)")
    turned: list[str] = []

    def value(bb: Any, shot: Any) -> dict[str, Any]:
        if shot.info.get("turret_rotation") and not opts.auto_recentre_turret:
            turned.append(f"{bb.tanks[shot.shooter].label} -> {bb.tanks[shot.target].label}")
        return {"p_kill": bb.ruleset.odds(shot.key).p_kill}

    def kill(bb: Any, tid: int) -> None:
        bb.emit(StatusChanged(tid, Status.DESTROYED, "oracle board check"))

    configs = _configurations((len(spec.sides[0].tanks), len(spec.sides[1].tanks)))
    ref, why, boards = _side_odds(spec, kill, value, configs)
    bad += why
    if turned:
        bad.append(f"the shot {turned[0]} turns the turret and auto_recentre_turret is off (the next shot's odds "
                   f"would depend on where the turret was left)")
    checked.append(f"every shot from each live tank at each live enemy on {boards} boards (every combination of "
                   f"destroyed tanks, wrecks being obstacles, D11) is legal with one kill probability per side")
    checked.append("all tanks start stationary and fire with the fire action (stationary +1, D3); a shot either "
                   "destroys (destroyed, auto_kill) or changes nothing (miss, dud, ricochet)")
    sched = AlternatingActivations(b.turn_limit, opts.turn_limit_result, opts.initiative)
    return sched, ref, bad, checked, boards


def _hq(spec: Any, b: Any) -> tuple[Any, list[dict[str, Any] | None], list[str], list[str], int]:
    from sim.events import Status, StatusChanged, TankStateSet

    bad, checked = [], []
    o = b.options
    if getattr(o, "ambushing_side", None) is not None:
        bad.append("the scenario has an ambushing side (the ambushed side skips round 1, its weapons start "
                   "unloaded)")
    t0 = b.tanks[0]
    if any(w.reload for w in t0.vehicle.weapons):
        bad.append(f"{t0.vehicle_id} has a weapon that reloads (reload > 0): it would not fire every round")
    n = [len(s.tanks) for s in spec.sides]
    for t in b.tanks:
        ost = int(t.rules_state.get("ost", 0))
        need = o.ost_witness_loss * (n[t.side] - 1)
        if ost <= need:
            bad.append(f"{t.label} has OST {ost}: seeing its {n[t.side] - 1} friends incapacitated could cost "
                       f"{need} and panic it; the oracle needs OST above {need}")
            break

    def value(bb: Any, shot: Any) -> dict[str, Any]:
        od = bb.ruleset.odds(shot.key)
        v = {"p_kill": od.p_kill, "p_hit": od.p_hit, "p_ost_loss": _frac(od.values.get("p_ost_loss", 0)),
             "p_core_destroyed": _frac(od.values.get("p_core_destroyed", 0))}
        return v

    def kill(bb: Any, tid: int) -> None:
        bb.emit(TankStateSet(tid, "dt", 0))
        bb.emit(TankStateSet(tid, "incapacitated", True))
        bb.emit(StatusChanged(tid, Status.INCAPACITATED, "oracle board check"))

    ref, why, boards = _side_odds(spec, kill, value, _configurations((n[0], n[1])))
    bad += why
    for s, v in enumerate(ref):
        if v is not None and (v["p_kill"] != v["p_hit"] or v["p_ost_loss"]):
            bad.append(f"a hit by side {spec.sides[s].name} does not always incapacitate (P(hit) {v['p_hit']}, "
                       f"P(kill) {v['p_kill']}): a damaged or shaken tank would change later odds")
    checked.append(f"every attack from each live tank at each live enemy on {boards} boards (every combination of "
                   f"incapacitated tanks, which stay as hard cover) is legal with one kill probability per side")
    checked.append("every hit incapacitates (no DT damage or OST loss carried over), no weapon reloads, no tank can "
                   "panic from witnessing its friends fall; initiative with identical Reflexes is a uniformly "
                   "random order each round")
    return RandomOrderRounds(b.turn_limit, "draw"), ref, bad, checked, boards


#: ASL odds keys that must be 0 for a kill-or-nothing shot (``p_possible_shock`` only with crew checks on).
_ASL_ZERO = ("p_immobilized", "p_shocked", "p_rof_again", "p_malfunction", "p_no_ammo", "p_last_round")


def _asl(spec: Any, b: Any) -> tuple[Any, list[dict[str, Any] | None], list[str], list[str], int]:
    from sim.hexgrid import hex_line

    bad: list[str] = []
    checked: list[str] = []
    rs = b.ruleset
    opts = b.options
    moving = [t.label for t in b.tanks if t.rules_state.get("motion")]
    if moving:
        bad.append(f"tanks {', '.join(moving)} start in Motion")
    occupied = {tuple(t.hex): t.label for t in b.tanks}
    for s in b.tanks:
        for t in b.tanks:
            if t.side != s.side:
                mid = [h for h in hex_line(s.hex, t.hex)[1:-1] if tuple(h) in occupied]
                if mid:
                    bad.append(f"{occupied[tuple(mid[0])]} stands on the hex line {s.label} -> {t.label} (as a live "
                               f"AFV or a wreck it would hinder or block, D9.4)")
                    return None, [None, None], bad, checked, 0
    zero = _ASL_ZERO + (("p_possible_shock",) if opts.crew_checks else ())

    def value(bb: Any, shot: Any) -> dict[str, Any]:
        params = shot.key.as_params()
        out: dict[str, Any] = {}
        for acq in (0, 1, 2):
            o = rs.odds_from_params({**params, "acquisition": acq})
            if acq == 0:
                out = {"p_kill": _frac(o["p_kill"]), "ca_change": params.get("ca_change", 0),
                       **{k: _frac(o.get(k, 0)) for k in zero}}
            elif _frac(o["p_kill"]) != out["p_kill"]:
                out[f"p_kill_acquisition_{acq}"] = _frac(o["p_kill"])
        return out

    ref, why, boards = _side_odds(spec, None, value, [frozenset()])
    bad += why
    for s, v in enumerate(ref):
        if v is None:
            continue
        name = spec.sides[s].name
        nz = [k for k in zero if v.get(k)]
        if nz:
            bad.append(f"side {name}'s shot has {', '.join(f'{k} {v[k]}' for k in nz)}: a shot must destroy or "
                       f"change nothing (no Immobilization, Shock, ROF, malfunction or special ammunition)")
        acq = [k for k in v if k.startswith("p_kill_acquisition")]
        if acq:
            bad.append(f"side {name}'s kill odds change with Acquisition (C6.5: {v['p_kill']} at first, "
                       + ", ".join(f"{v[k]} with {k[-1]}" for k in acq) + ")")
        if v.get("ca_change"):
            bad.append(f"side {name}'s firers must turn their CA for a shot (Case A); the oracle needs every "
                       f"target inside every firer's CA")
    checked.append("every shot on the initial board is legal with one kill probability per side; no tank stands on "
                   "the hex line between a shooter and a target, so wrecks and live AFVs never hinder or block")
    checked.append("a shot destroys (Burn, Elim) or changes nothing (Dud, no effect, miss); no ROF, malfunction, "
                   "special ammunition, CA change, Motion; the odds are the same with Acquisition 0, 1 and 2")
    first = opts.first_side if opts.first_side is not None else next(
        (i for i, s in enumerate(b.sides) if s.role == "attacker"), 0)
    first = int(first)
    return Volleys(b.turn_limit, "draw", (first, 1 - first, 1 - first, first)), ref, bad, checked, boards


_ADAPTERS = {"panzer_squadron": _ps, "hummel_quest": _hq, "asl": _asl}


def engagement(spec: Any) -> Engagement:
    """The fixed-odds duel a scenario is (``spec``: a validated :class:`sim.scenario.Scenario`), after checking
    every assumption of the module docstring.  Raises :class:`OracleRefused` listing what fails."""
    from sim.model import build_battle

    bad = _common_checks(spec)
    rsname = spec.ruleset.name
    if rsname not in _ADAPTERS:
        bad.append(f"rule set {rsname!r}: the oracle knows the order of fire of {', '.join(sorted(_ADAPTERS))}")
    if bad:
        raise OracleRefused(bad)
    b = build_battle(spec)
    bad = _open_board(b)
    if bad:
        raise OracleRefused(bad)
    sched, ref, bad, checked, boards = _ADAPTERS[rsname](spec, b)
    if bad:
        raise OracleRefused(bad)
    if ref[0] is None or ref[1] is None:
        raise OracleRefused(["a side has no shot at all"])
    p = (Fraction(ref[0]["p_kill"]), Fraction(ref[1]["p_kill"]))
    for s, side in enumerate(spec.sides):
        mo = float(side.policy.params.get("min_odds", 0) or 0)
        if mo > 0 and float(p[s]) < mo:
            raise OracleRefused([f"side {side.name}'s {DOCTRINE} min_odds {mo} is above its shots' kill odds "
                                 f"{p[s]}: it would never fire"])
    odds = []
    t0 = b.tanks[0]
    for s in (0, 1):
        shooter = next(t for t in b.tanks if t.side == s)
        target = next(t for t in b.tanks if t.side != s)
        from sim.actions import Fire

        shot = b.ruleset.shot(b, shooter.tank_id, target.tank_id, Fire(shooter.tank_id, target.tank_id))
        o = b.ruleset.odds(shot.key)
        odds.append({k: (str(v) if isinstance(v, Fraction) else v) for k, v in o.values.items()
                     if isinstance(v, (str, int, Fraction))} | {"p_hit": str(o.p_hit), "p_kill": str(o.p_kill)})
    return Engagement(spec.name, spec.source, rsname, (spec.sides[0].name, spec.sides[1].name),
                      (len(spec.sides[0].tanks), len(spec.sides[1].tanks)), t0.vehicle_id, p, (odds[0], odds[1]),
                      sched, checked, boards)


# --- output ------------------------------------------------------------------------------------------------------

def _fs(x: Number | None) -> str | None:
    """An exact fraction as a string in lowest terms (``"53/200"``, ``"0"``, ``"1"``); a float as its repr."""
    if x is None:
        return None
    return str(x) if isinstance(x, Fraction) else repr(float(x))


def _fl(x: Number | None) -> float | None:
    return None if x is None else float(x)


def solution_json(sol: Solution, sides: Sequence[str]) -> dict[str, Any]:
    """A solved chain as JSON-able values: exact fraction strings (floats when not exact) and float mirrors."""
    dur = sol.duration()
    out: dict[str, Any] = {
        "exact": sol.exact, "states": sol.states, "note": sol.note,
        "p_win": {sides[s]: _fs(sol.p_win(s)) for s in (0, 1)}, "p_draw": _fs(sol.p_draw()),
        "expected_survivors_given_win": {sides[s]: _fs(sol.expected_survivors_given_win(s)) for s in (0, 1)},
        "expected_alive": {sides[s]: _fs(sol.expected_alive(s)) for s in (0, 1)},
        "expected_duration": _fs(sol.expected_duration()),
        "survivors_if_win": {sides[s]: {str(k): _fs(q) for k, q in sol.survivors(s).items()} for s in (0, 1)},
        "duration": None if dur is None else {str(k): _fs(q) for k, q in dur.items()},
    }
    out["float"] = {
        "p_win": {sides[s]: _fl(sol.p_win(s)) for s in (0, 1)}, "p_draw": _fl(sol.p_draw()),
        "expected_survivors_given_win": {sides[s]: _fl(sol.expected_survivors_given_win(s)) for s in (0, 1)},
        "expected_alive": {sides[s]: _fl(sol.expected_alive(s)) for s in (0, 1)},
        "expected_duration": _fl(sol.expected_duration())}
    return out


def oracle_json(e: Engagement, exact: bool = True) -> dict[str, Any]:
    """``tanksim oracle --json``: the engagement, its chain's solution and Brown's square-law reference."""
    t0 = time.perf_counter()
    sol = e.solve(exact)
    ref = e.reference(exact)
    return {"scenario": e.scenario, "source": e.source, "ruleset": e.ruleset, "qualifies": True,
            "sides": list(e.sides), "tanks": {e.sides[s]: e.tanks[s] for s in (0, 1)}, "vehicle": e.vehicle,
            "p_kill": {e.sides[s]: str(e.p_kill[s]) for s in (0, 1)},
            "shot_odds": {e.sides[s]: e.odds[s] for s in (0, 1)},
            "schedule": e.schedule.describe(), "checked": e.checked, "boards_checked": e.configurations,
            **solution_json(sol, e.sides), "solve_s": round(time.perf_counter() - t0, 3),
            "reference": {"scheme": RandomShooter().describe(), **{k: v for k, v in solution_json(ref, e.sides).items()
                                                                  if k in ("p_win", "expected_survivors_given_win",
                                                                           "float", "exact")}}}


# --- beside a simulation -----------------------------------------------------------------------------------------

def compare(sol: Solution, frame: Any, sides: Sequence[str], confidence: float = 0.95) -> list[dict[str, Any]]:
    """The chain beside simulated battles: one row per quantity (each side's win rate, the draw rate, each side's
    mean survivors given a win, the mean duration) with ``oracle`` (float), ``simulated`` (mean), ``lo``, ``hi``
    (Wilson for rates, Student t for means, at ``confidence``: :mod:`sim.experiments.analysis`), ``n`` and
    ``inside`` (the oracle value lies in the interval; ``None`` without an interval).  A mean whose battles all
    gave one value ``v`` (no spread: the t interval is the point) is judged instead by the chain's P(``v``)
    against the Wilson lower bound of ``n`` out of ``n`` (row ``note``).  ``frame`` holds one row per battle with
    columns ``winner_index`` (-1 draw), ``side1_alive``, ``side2_alive``, ``turns``."""
    import numpy as np

    from sim.experiments.analysis import mean_interval, wilson

    w = frame["winner_index"].to_numpy(dtype=float)
    n = len(w)
    rows = []

    def add(what: str, oracle: Number | None, sim: float, lo: float, hi: float, k: int,
            sample: Any = None, law: Mapping[int, Number] | None = None) -> None:
        o = _fl(oracle)
        inside = None if o is None or math.isnan(lo) else bool(lo - 1e-12 <= o <= hi + 1e-12)
        row = {"quantity": what, "oracle": o, "simulated": sim, "lo": lo, "hi": hi, "n": k, "inside": inside}
        if sample is not None and law is not None and len(sample) >= 2 and np.all(sample == sample[0]):
            # no spread: the t interval is the point itself, which no non-degenerate mean can meet; judge
            # instead the share of battles at that value (all k of them) against its probability in the chain
            v = int(sample[0])
            total = sum((float(q) for q in law.values()), 0.0)
            p_v = float(law.get(v, 0)) / total if total else math.nan
            wlo, _whi = wilson(k, k, confidence)
            row["inside"] = bool(p_v >= wlo - 1e-12)
            row["note"] = (f"every battle at {v}: P({v}) = {p_v:.4g} in the chain against the Wilson bound "
                           f"{wlo:.4g} of {k}/{k}")
        rows.append(row)

    for s in (0, 1):
        k = int((w == s).sum())
        add(f"P({sides[s]} wins)", sol.p_win(s), k / n if n else math.nan, *wilson(k, n, confidence), n)
    k = int((w == -1).sum())
    add("P(draw)", sol.p_draw(), k / n if n else math.nan, *wilson(k, n, confidence), n)
    for s in (0, 1):
        alive = frame[f"side{s + 1}_alive"].to_numpy(dtype=float)[w == s]
        law_s = sol.survivors(s)
        # a mean of survivors lies between 0 and the side's tanks (the most alive in any ending of the chain, or in
        # a battle played): the interval is clipped to that range
        top = float(max([*sol.alive(s), *alive.tolist()], default=math.inf))
        lo, hi = mean_interval(alive, confidence, bounds=(0.0, top))
        add(f"{sides[s]} survivors if it wins", sol.expected_survivors_given_win(s),
            float(alive.mean()) if len(alive) else math.nan, lo, hi, len(alive), alive, law_s)
    if sol.duration() is not None:
        turns = frame["turns"].to_numpy(dtype=float)
        lo, hi = mean_interval(turns, confidence, bounds=(0.0, math.inf))
        add("duration (turns)", sol.expected_duration(), float(np.mean(turns)) if n else math.nan, lo, hi, n,
            turns, sol.duration())
    return rows


def simulate(spec: Any, battles: int, seed: int = 0) -> Any:
    """Play ``battles`` battles of ``spec`` with seeds ``seed``, ``seed + 1``, ... (no event logs) and return their
    result rows as a DataFrame."""
    import pandas as pd

    from sim.runner import run_battle

    return pd.DataFrame([run_battle(spec, seed + i, record_events=False).row for i in range(battles)])


def report_section(runs: Any, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """For ``tanksim report``: the oracle beside every design point whose scenario qualifies (the base scenario with
    the point's parameters; a point that places tanks at random does not).  Returns ``None`` when no point
    qualifies, else ``{"points": [...], "refused": [...]}``: per qualifying point its ``point_key``, ``values``,
    ``battles``, the engagement (``p_kill``, ``schedule``, ``exact``), the oracle's figures and the comparison rows
    of :func:`compare`; ``refused`` names the first reason per refused point (at most 5 points)."""
    from sim.scenario import ScenarioError, apply_overrides, validate

    d = manifest.get("design", {})
    base = d.get("scenario", {}).get("data")
    if not isinstance(base, Mapping) or not len(runs):
        return None
    if DOCTRINE not in json.dumps(base, default=str) and not any(
            DOCTRINE in json.dumps(p.get("params", {}), default=str) for p in d.get("points", [])):
        return None  # nobody plays random_target: no point can qualify (and no point is checked)
    ok = runs[runs["status"] == "ok"]
    points, refused = [], []
    sides = list(d.get("side_names") or [])
    for p in d.get("points", []):
        params = dict(p.get("params", {}))
        if params.pop("setup", "fixed") == "random":
            refused.append({"point_key": p["key"], "reason": "tanks are placed at random per battle"})
            continue
        try:
            spec = validate(apply_overrides(base, params, "point"), "point")
            e = engagement(spec)
        except OracleRefused as exc:
            refused.append({"point_key": p["key"], "reason": exc.reasons[0]})
            continue
        except (ScenarioError, ValueError) as exc:
            refused.append({"point_key": p["key"], "reason": str(exc)[:200]})
            continue
        sub = ok[ok["point_key"] == p["key"]]
        sol = e.solve()
        names = sides if len(sides) == 2 else list(e.sides)
        points.append({"point_key": p["key"], "values": p.get("values", {}), "battles": len(sub),
                       "p_kill": {names[s]: str(e.p_kill[s]) for s in (0, 1)},
                       "schedule": e.schedule.describe()["name"], **solution_json(sol, names),
                       "comparison": compare(sol, sub, names) if len(sub) else []})
    if not points:
        return None
    return {"points": points, "refused": refused[:5]}
