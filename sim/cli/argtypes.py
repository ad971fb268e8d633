"""Argument types shared by the ``tanksim`` subcommands: numbers checked while the arguments are parsed, so a bad
value is refused before anything is read, started or written."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def at_least(low: float, kind: type = int) -> Callable[[str], Any]:
    """An argparse ``type=`` for a number (``int`` or ``float``) of at least ``low``: a bad value is refused while
    the arguments are parsed, before anything is read, started or written (``tanksim batch: error: argument
    --workers: expected an integer >= 1, got '0'``)."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} >= {low:g}, got {text!r}") from None
        if not v >= low:  # also refuses nan
            raise argparse.ArgumentTypeError(f"expected {what} >= {low:g}, got {text!r}")
        return v

    parse.__name__ = f"{kind.__name__} >= {low:g}"
    return parse


def above(low: float) -> Callable[[str], float]:
    """An argparse ``type=`` for a finite number greater than ``low`` (seconds: ``--watchdog 0`` is refused)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number > {low:g}, got {text!r}") from None
        if not (v > low and v != float("inf")):
            raise argparse.ArgumentTypeError(f"expected a finite number > {low:g}, got {text!r}")
        return v

    parse.__name__ = f"number > {low:g}"
    return parse
