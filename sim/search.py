"""Search copies of a battle: the engine facilities a planning doctrine simulates on.

A search doctrine (``agents.policies.lookahead``) plans by playing the rule set's own decision points on a copy of
the battle, so the copy must be cheap, independent of the original and deterministic:

* :func:`fork` -- a :class:`SearchBattle`, a copy of a battle in O(tanks + cached answers): its own tanks, rule-set
  state, occupancy and dynamic caches; the static graph and terrain caches shared with the original until the
  copy's terrain changes (:meth:`sim.hexgrid.HexMap.fork`).  Events apply to the copy only, so its log starts
  empty.  Tanks may be taken off the board in the copy (``remove``) or placed elsewhere (``place``): that is how a
  side's view of the battle becomes a *determinization* (a board consistent with what the side knows), built by
  :meth:`agents.observation.Observation.determinize`.
* :class:`SampledDice` -- dice drawn from a given ``random.Random`` (a stream derived from the side's own, never
  the rule dice), so a simulation samples every chance outcome from the rule set's exact distribution;
  :class:`ChosenDice` rolls chosen values first (a forced initiative, a forced movement allowance), then samples.
* :func:`drive` -- runs a rule-set generator on a copy to its end (or to a decision budget), asking ``answer`` for
  every decision and applying the engine's legality rule (an illegal answer becomes the decision's default).

Nothing here reads a side's hidden information by itself: the caller decides what goes into the copy.  Rule sets
never import this module; the flow stays agents -> sim.search -> sim.battle.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

from sim.actions import Action, Pass
from sim.battle import BattleState, TankState
from sim.dice import DiceSource
from sim.hexgrid import Hex


class SearchBattle(BattleState):
    """A :class:`~sim.battle.BattleState` made by :func:`fork`: a search copy.

    It behaves like a battle (rule sets read it and ``emit`` applies events to it at once) with its own tank
    occupancy (``occupancy``: hex -> tank ids, sorted; not shared with the original), so copies never disturb
    each other or the original.  ``origin_version`` is the version of the battle it was copied
    from; ``log`` holds only the events emitted on the copy."""

    origin_version: int

    def fork(self, **kw: Any) -> SearchBattle:
        """:func:`fork` of this copy."""
        return fork(self, **kw)


def fork(battle: BattleState, *, dice: DiceSource | None = None, remove: Iterable[int] = (),
         place: Mapping[int, tuple[Hex, int, int | None, Mapping[str, Any]]] | None = None) -> SearchBattle:
    """A search copy of ``battle`` (see the module docstring).

    Args:
        battle: the battle (or search copy) to copy; it is not changed.
        dice: the copy's ``dice`` (``None``: none attached; pass the dice the simulation rolls so logged events
            carry their rolls).
        remove: tank ids taken off the board in the copy (``hex`` ``None``, ``rules_state`` emptied, ``facing`` 0
            and a turret's facing 0, status kept): the rules then ask nothing about them, and nothing of where
            they stood, faced or aimed is left in the copy -- for enemies the side does not know.
        place: ``{tank_id: (hex, facing, turret_facing, rules_state)}`` -- tanks put on ``hex`` with that facing,
            turret facing and rule-set state (e.g. an enemy where and as it was last seen); applied after
            ``remove``.  The caller must place a tank only on a hex of the map.

    Returns:
        A :class:`SearchBattle` with the battle's turn, rule-set state, options, sides and objectives, copies of
        its tanks, an empty log, no listeners and ``version`` equal to the battle's.

    Raises:
        ValueError: a ``place`` hex is not on the map.
    """
    new = SearchBattle.__new__(SearchBattle)
    new.__dict__.update(battle.__dict__)
    new.map = battle.map.fork()
    new.tanks = [dataclasses.replace(t, rules_state=dict(t.rules_state)) for t in battle.tanks]
    new.rules_state = dict(battle.rules_state)
    new.log = []
    new.listeners = []
    new.tank_changes = []  # the copy's own; incremental caches are kept per battle object (a copy starts afresh)
    new.state_changes = []
    new.state_change_hexes = []
    new.dice = dice
    new.origin_version = battle.version
    for tid in remove:
        t = new.tanks[tid]
        t.hex = None
        t.rules_state = {}
        t.facing = 0
        t.turret_facing = None if t.turret_facing is None else 0
    for tid, (h, facing, turret, state) in (place or {}).items():
        if h not in new.map:
            raise ValueError(f"fork: tank {tid} placed off the map at {tuple(h)}")
        t = new.tanks[tid]
        t.hex, t.facing, t.turret_facing, t.rules_state = Hex(*h), int(facing), turret, dict(state)
    new.occupancy = {}
    for t in new.tanks:
        if t.hex is not None:
            new._occupy(t.tank_id, t.hex)
    return new


def copy_tank(t: TankState) -> TankState:
    """An independent copy of one tank's state (its ``rules_state`` dict copied; values are frozen)."""
    return dataclasses.replace(t, rules_state=dict(t.rules_state))


class SampledDice(DiceSource):
    """Dice for simulations: natural rolls drawn from ``rng`` (a ``random.Random`` the caller derives from its own
    stream), so every chance outcome follows the rule set's exact distribution.  Rolls are not kept in
    ``history`` (a long search would grow it without use); ``rolled`` counts them."""

    def __init__(self, rng: random.Random):
        super().__init__(0)
        self._rng = rng
        self.rolled = 0

    def roll(self, die: str = "d10", label: str = "") -> int:
        value = super().roll(die, label)
        self.history.clear()
        self.rolled += 1
        return value

    def take(self) -> tuple:
        self._pending.clear()
        return ()


class ChosenDice(SampledDice):
    """:class:`SampledDice` that return ``chosen`` natural values first, in order, then sample from ``rng``.

    Raises ``ValueError`` when a chosen value does not fit the die the rules ask for."""

    def __init__(self, chosen: Iterable[int], rng: random.Random):
        super().__init__(rng)
        self._chosen = list(chosen)

    def _draw(self, faces: int) -> int:
        if self._chosen:
            v = self._chosen.pop(0)
            if not 1 <= v <= faces:
                raise ValueError(f"chosen roll {v} does not fit a {faces}-sided die")
            return v
        return super()._draw(faces)


@dataclasses.dataclass
class DriveResult:
    """What :func:`drive` did: ``decisions`` answered, whether the generator ``finished`` (else the budget ran
    out and it was closed)."""

    decisions: int
    finished: bool


def drive(gen: Generator[Any, Action | None, None], answer: Callable[[Any], Action], budget: int | None = None
          ) -> DriveResult:
    """Run a rule-set generator (``play_turn``, ``play_activation``) to its end on a search copy.

    Each yielded decision goes to ``answer(decision)``; an answer the decision's ``legal`` does not contain is
    replaced by ``Pass`` where passing is legal, else the decision's default (the engine's rule for faults).  After
    ``budget`` decisions (``None``: no limit) the generator is closed where it stands.  Exceptions from the rules
    propagate (a search copy that the rules cannot play is the caller's error)."""
    n = 0
    try:
        decision = next(gen)
    except StopIteration:
        return DriveResult(0, True)
    while True:
        if budget is not None and n >= budget:
            gen.close()
            return DriveResult(n, False)
        act = answer(decision)
        if not decision.legal.contains(act):
            p = Pass(getattr(act, "actor", None))
            act = p if decision.legal.contains(p) else decision.default
        n += 1
        try:
            decision = gen.send(act)
        except StopIteration:
            return DriveResult(n, True)
