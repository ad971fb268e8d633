"""Built-in doctrines.  Each is a short class with named parameters (documented in its docstring) that uses only the
neutral queries of :class:`agents.observation.Observation`, so it plays unchanged under every rule set."""
from __future__ import annotations

from agents.policies.base import Doctrine, Policy
from agents.policies.hold import Hold
from agents.policies.advance import Advance

BUILTIN: dict[str, type[Policy]] = {
    "hold": Hold,
    "advance": Advance,
}

__all__ = ["BUILTIN", "Doctrine", "Policy", "Hold", "Advance"]
