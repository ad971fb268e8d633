"""The ``tanksim`` console script's entry point (``pyproject.toml``): :func:`main`.

It is part of the command-line layer (with :mod:`sim.cli`), but lives beside the package rather than in it, so that
importing it loads nothing but ``sim``'s small ``__init__``: the command's own modules (:mod:`sim.cli` and what it
imports: pydantic, the rule sets, the doctrines) are imported inside :func:`main`, where a Ctrl-C in the first
moments, while they load, ends the command as every later interrupt does.
"""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tanksim ARGS...`` (:func:`sim.cli.main.main`) and return its exit code.  A Ctrl-C (SIGINT) -- or a
    SIGTERM, which is taken for one as everywhere in the command -- that comes while the command's modules are
    still loading prints one line, ``tanksim: interrupted``, and returns 130 (no traceback), as an interrupt does
    once the command runs."""
    term_before = (signal.signal(signal.SIGTERM, _raise_interrupt)
                   if threading.current_thread() is threading.main_thread() else None)
    try:
        from sim.cli import main as run
    except KeyboardInterrupt:
        print("tanksim: interrupted", file=sys.stderr)
        return 130
    finally:
        if term_before is not None:
            signal.signal(signal.SIGTERM, term_before)
    return run(argv)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
