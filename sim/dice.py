"""Dice: every random number a rule set uses comes from here (CONVENTIONS.md "Dice").

* :class:`DiceSource` draws from a seeded stream and **records** every roll; the battle attaches the recorded rolls
  to the event that consumed them (``take()``).
* :class:`FixedDice` **replays** given natural rolls (golden outcome cases, exhaustive enumeration) and fails on too
  few (:class:`DiceExhausted`) or too many (:meth:`FixedDice.check_done`).
* :func:`spawn_streams` splits one seed into independent streams (rule dice, side 1's controller, side 2's
  controller) with ``numpy.random.SeedSequence``, so one side's policy never shifts the other's draws or the dice.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy as np

#: Dice names and their number of faces.  ``d100`` reads 1..100 ("00" = 100).
FACES = {"d4": 4, "d6": 6, "d8": 8, "d10": 10, "d12": 12, "d20": 20, "d100": 100}


class DiceError(RuntimeError):
    """A fixed dice sequence does not fit the rolls the rules asked for."""


class DiceExhausted(DiceError):
    """The rules asked for more rolls than a :class:`FixedDice` holds."""


@dataclass(frozen=True, slots=True)
class Roll:
    """One natural roll: ``die`` (e.g. ``"d10"``), its ``value`` and a short ``label`` naming its use."""

    die: str
    value: int
    label: str = ""


def _faces(die: str) -> int:
    try:
        return FACES[die]
    except KeyError:
        raise ValueError(f"unknown die {die!r}; expected one of {sorted(FACES)}") from None


class DiceSource:
    """Seeded dice that record every roll.

    ``roll(die, label)`` returns one natural roll; ``rolls(n, die, label)`` returns ``n`` of them in order.
    ``take()`` returns and clears the rolls recorded since the last ``take()`` (the battle calls it when it emits
    the event that consumed them).  ``history`` keeps every roll ever made.
    """

    def __init__(self, seed: int | np.random.SeedSequence | None = None):
        if seed is not None and not isinstance(seed, int):
            import numpy as np  # on first use: ``import sim.runner`` stays cheap (issue 14)

            if isinstance(seed, np.random.SeedSequence):
                state = seed.generate_state(2)
                seed = int(state[0]) << 32 | int(state[1])
        self._rng = random.Random(seed)
        self._pending: list[Roll] = []
        self.history: list[Roll] = []

    def _draw(self, faces: int) -> int:
        return self._rng.randint(1, faces)

    def roll(self, die: str = "d10", label: str = "") -> int:
        """One natural roll of ``die`` (``"d4"``, ``"d10"``, ``"d100"``, ...), recorded."""
        value = self._draw(_faces(die))
        r = Roll(die, value, label)
        self._pending.append(r)
        self.history.append(r)
        return value

    def rolls(self, n: int, die: str = "d10", label: str = "") -> list[int]:
        """``n`` natural rolls of ``die`` in the order consumed."""
        return [self.roll(die, label) for _ in range(n)]

    def take(self) -> tuple[Roll, ...]:
        """Rolls recorded since the last call, in order; clears them."""
        out = tuple(self._pending)
        self._pending.clear()
        return out

    def check_done(self) -> None:
        """For live dice nothing can be left over; :class:`FixedDice` overrides this."""


class FixedDice(DiceSource):
    """Dice that replay ``values`` in order.

    Raises :class:`DiceExhausted` when asked for more rolls than given and ``ValueError`` when a value does not fit
    the die asked for; :meth:`check_done` raises :class:`DiceError` if values are left over.
    """

    def __init__(self, values: Iterable[int]):
        super().__init__(0)
        self._values = list(values)
        self._i = 0

    def _draw(self, faces: int) -> int:
        if self._i >= len(self._values):
            raise DiceExhausted(f"the rules asked for roll #{self._i + 1} but only {len(self._values)} were given")
        v = self._values[self._i]
        if not 1 <= v <= faces:
            raise ValueError(f"fixed roll #{self._i + 1} = {v} does not fit a {faces}-sided die")
        self._i += 1
        return v

    @property
    def remaining(self) -> Sequence[int]:
        return self._values[self._i:]

    def check_done(self) -> None:
        if self._i != len(self._values):
            raise DiceError(f"{len(self._values) - self._i} fixed rolls left unused: {self.remaining}")


def spawn_streams(seed: int, n: int = 3) -> list[np.random.SeedSequence]:
    """``SeedSequence(seed).spawn(n)``: [rule dice, side 1 controller, side 2 controller, ...]."""
    import numpy as np

    return np.random.SeedSequence(seed).spawn(n)


def side_rng(seq: np.random.SeedSequence) -> random.Random:
    """A ``random.Random`` for one side's controller, from its spawned seed sequence."""
    state = seq.generate_state(2)
    return random.Random(int(state[0]) << 32 | int(state[1]))
