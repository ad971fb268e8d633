"""Echoing a user's values in error messages safely (``FILE: field.path: what was expected``, DESIGN.md "Trust
boundaries"): a value is shown cut to a limit, and a huge or self-referencing one is never expanded.

Engine core: imported by the scenario and experiment loaders, the rule sets' parameter checks and the plug-in
checks of ``agents/``, so it imports nothing of the project.
"""
from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from typing import Any


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (``...`` marks a cut), for echoing a user's value in a
    message: safe for any value (huge integers, deep or self-referencing containers, alias-shared YAML data are
    never expanded)."""

    class _Short(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 200:
                return f"<integer of about {int(x.bit_length() * 0.30103) + 1} digits>"
            return repr(x)

    r = _Short(maxlevel=3, maxtuple=6, maxlist=6, maxarray=6, maxdict=6, maxset=6, maxfrozenset=6, maxdeque=6,
               maxstring=limit, maxlong=limit, maxother=limit)
    try:
        text = r.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is named by its type
        text = f"<{type(value).__name__}>"
    return clip(text, limit)


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to at most ``limit`` characters (``...`` marks a cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Prefixes pydantic puts before the text of an error a validator raised (``ValueError`` / ``AssertionError``);
#: they say nothing to a user and are dropped from every printed message.
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_message(error: Mapping[str, Any]) -> str:
    """The text of one pydantic error (an item of ``ValidationError.errors()``) as a user reads it: the
    ``"Value error, "`` (or ``"Assertion failed, "``) pydantic prefixes to a validator's own message removed.
    Every place that prints validation errors goes through this."""
    msg = str(error.get("msg", ""))
    for prefix in _PYDANTIC_PREFIXES:
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def match_name(text: str, names: Sequence[str]) -> int | None:
    """The index in ``names`` a user's ``text`` names: an exact match first, else the one name equal to it
    ignoring case (``--play soviets`` for a side ``Soviets``); ``None`` when none, or several, match without case.

    Decision (the spec is silent): names of sides and keywords typed on a command line match case-insensitively
    wherever that is unambiguous; two names that differ only in case must be typed exactly."""
    if text in names:
        return list(names).index(text)
    folded = [i for i, n in enumerate(names) if n.casefold() == text.casefold()]
    return folded[0] if len(folded) == 1 else None
