"""The scripted doctrines by name: the built-in doctrines that decide by fixed rules from the observation alone,
with neither a search nor a learned model.

:data:`SCRIPTED` is the lower half of the doctrines' registry (:data:`agents.policies.BUILTIN` adds ``learned`` and
``lookahead`` to it, in that order).  It sits below the search doctrine: :class:`agents.policies.lookahead.Lookahead`
plays its simulations with one of these as its ``fallback``, and reads them here without importing the registry
that lists it (no import circle).
"""
from __future__ import annotations

from agents.policies.advance import Advance
from agents.policies.base import Doctrine
from agents.policies.cover import Cover
from agents.policies.flank import Flank
from agents.policies.focus_fire import FocusFire
from agents.policies.greedy import Greedy
from agents.policies.hold import Hold
from agents.policies.objective import Objective
from agents.policies.random_policy import RandomPolicy
from agents.policies.random_target import RandomTarget
from agents.policies.rush import Rush

#: Name -> class of every scripted built-in doctrine, in the order ``BUILTIN`` lists them.
SCRIPTED: dict[str, type[Doctrine]] = {
    "hold": Hold,
    "advance": Advance,
    "flank": Flank,
    "cover": Cover,
    "rush": Rush,
    "greedy": Greedy,
    "random": RandomPolicy,
    "focus_fire": FocusFire,
    "objective": Objective,
    "random_target": RandomTarget,
}

__all__ = ["SCRIPTED"]
