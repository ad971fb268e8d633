"""Built-in doctrines.  Each is a short class with named parameters (documented in its docstring) that uses only the
neutral queries of :class:`agents.observation.Observation`, so it plays unchanged under every rule set.

``BUILTIN`` maps the names a scenario (``sides[].policy: {name, params}``), a tournament or ``tanksim run --policy
SIDE=NAME[:param=value,...]`` may use to the classes: ``hold``, ``advance``, ``flank``, ``cover``, ``rush``,
``greedy``, ``random``, ``focus_fire``, ``objective``, ``lookahead`` (a search doctrine), ``random_target`` (hold,
fire at a uniformly random enemy: the square-law firer of :mod:`sim.experiments.oracle`), ``learned`` (any
callable from observation arrays to an action index, e.g. a policy trained in :mod:`sim.env`).  Any other policy is
named ``package.module:ClassName`` (a plug-in; see ``docs/plugin_example.py`` for a complete one).
"""
from __future__ import annotations

from agents.policies.advance import Advance
from agents.policies.base import Doctrine, Policy
from agents.policies.cover import Cover
from agents.policies.flank import Flank
from agents.policies.focus_fire import FocusFire
from agents.policies.greedy import Greedy
from agents.policies.hold import Hold
from agents.policies.learned import Learned
from agents.policies.lookahead import Lookahead
from agents.policies.objective import Objective
from agents.policies.random_policy import RandomPolicy
from agents.policies.random_target import RandomTarget
from agents.policies.rush import Rush
from agents.policies.scripted import SCRIPTED

#: Name -> class of every built-in doctrine: the scripted ones (:data:`agents.policies.scripted.SCRIPTED`), then the
#: learned and the search doctrine.
BUILTIN: dict[str, type[Policy]] = {
    **SCRIPTED,
    "learned": Learned,
    "lookahead": Lookahead,
}

__all__ = ["BUILTIN", "Doctrine", "Policy", "Hold", "Advance", "Flank", "Cover", "Rush", "Greedy", "RandomPolicy",
           "FocusFire", "Objective", "RandomTarget", "Learned", "Lookahead"]
