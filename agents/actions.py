"""Deprecated path of the action vocabulary: import it from :mod:`sim.actions`.

The actions (``Step``, ``Pivot``, ``Fire``, ``Ram``, ``Pass``, ``Activate``, ``Special``, ``Plan``) moved to
:mod:`sim.actions` because the rule sets and the controllers share them and the rules import nothing from
``agents/`` (docs/DESIGN.md, "Layout").  This module stays for plug-in authors: every name read from it is the very
object of :mod:`sim.actions` and raises a :class:`DeprecationWarning` that points at the importing line.  It will
be removed in a later release.
"""
from __future__ import annotations

import warnings
from typing import Any

import sim.actions as _actions

# the names live in sim.actions and are served by __getattr__ below, so ruff cannot see them here
__all__ = ["Action", "Activate", "Fire", "Pass", "Pivot", "Plan", "Ram", "Special", "Step"]  # noqa: F822


def __getattr__(name: str) -> Any:
    """Module attribute hook (PEP 562): the name from :mod:`sim.actions`, with a :class:`DeprecationWarning`;
    raises :class:`AttributeError` for a name it does not have."""
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(_actions, name)   # AttributeError for an unknown name, as a module would raise
    warnings.warn(f"agents.actions is deprecated: import {name} from sim.actions", DeprecationWarning, stacklevel=2)
    return value
