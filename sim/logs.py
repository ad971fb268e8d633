"""One logging set-up for every way tanksim runs: the ``tanksim`` command, the Python API (``sim.env.env``,
``run_experiment``, notebooks) and every worker process (process pool, Dask worker).

``TANKSIM_LOG`` (``debug``, ``info``, ``warning``, ``error`` or ``critical``, any case; default ``error``) is the
level of tanksim's loggers (``sim.*``, ``agents.*``), so rule-set warnings such as ``asl catalog: vehicle ...:
defaults used for ...`` are shown only with ``TANKSIM_LOG=warning`` (or lower).  Records at that level or above go
to standard error as ``logger.name: message`` -- or, while a ``tanksim`` command runs (and in its worker
processes), ``tanksim run: warning: message`` -- through tanksim's own handler and nowhere else (they do not
propagate to the root logger, so a host application's handlers neither duplicate nor un-hide them).  Rule sets
report their warnings here (``logging``, never ``warnings.warn``), so ``TANKSIM_LOG`` governs them everywhere; a
warning is shown once per process.

Decision (the spec is silent): an unknown ``TANKSIM_LOG`` value falls back to ``error`` with one line on standard
error, rather than failing every entry point.  Engine core: imports nothing of the project.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

#: The loggers tanksim's modules log to (every module uses ``logging.getLogger(__name__)``).
LOGGERS = ("sim", "agents")
#: The environment variable that sets the level.
ENV = "TANKSIM_LOG"
DEFAULT = "ERROR"
_NAMES = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


#: The environment variable naming the command a record is printed for (``tanksim run``): set by the CLI for the
#: length of a command, so its worker processes (pool or local Dask, which inherit it) print alike.
PROG_ENV = "TANKSIM_LOG_PROG"


class _Formatter(logging.Formatter):
    """``PROG: warning: message`` (the level in lower case) while a command runs (:data:`PROG_ENV` set, e.g.
    ``tanksim run: warning: hummel_quest: A1: speed_m 30 is not a multiple of 50 m``), else ``logger.name:
    message`` (the Python API, notebooks); an exception's traceback follows on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (plus its exception's traceback, if any)."""
        prog = os.environ.get(PROG_ENV, "")
        msg = record.getMessage()
        text = f"{prog}: {record.levelname.lower()}: {msg}" if prog else f"{record.name}: {msg}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _Once(logging.Filter):
    """Lets a warning through once per process (as Python's ``warnings`` module does by default): a rule set that
    warns at every battle's set-up says it once per batch worker, not once per battle.  Other levels pass."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a warning (same logger, same text) already shown."""
        if record.levelno != logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (a captured or redirected stderr too)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(_Formatter())
        self.addFilter(_Once())

    @property
    def stream(self) -> TextIO:
        """Standard error, looked up at each record."""
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def log_level(text: str | None = None) -> str:
    """The level name for ``text`` (default: the ``TANKSIM_LOG`` environment variable, else ``ERROR``), upper
    case.  An unknown name gives ``ERROR`` and one line on standard error -- once: the set-up runs at ``import sim``
    and again in the CLI, so a value already reported is not reported again, and a bad ``TANKSIM_LOG`` is replaced
    in ``os.environ`` by ``error`` so that worker processes started later (which import ``sim`` anew) inherit the
    fallback rather than repeat the line."""
    from_env = text is None
    raw = os.environ.get(ENV, "") if from_env else str(text)
    name = raw.strip().upper() or DEFAULT
    if name not in _NAMES:
        if raw not in _reported:
            _reported.add(raw)
            print(f"tanksim: {ENV}={raw[:40]!r}: expected one of {', '.join(n.lower() for n in _NAMES)}; using error",
                  file=sys.stderr)
        if from_env:
            os.environ[ENV] = DEFAULT.lower()
        return DEFAULT
    return name


#: The bad level names already reported on standard error (each is reported once per process).
_reported: set[str] = set()


def configure_logging(level: str | None = None) -> str:
    """Set tanksim's loggers to ``level`` (a level name; default :func:`log_level` of ``TANKSIM_LOG``) with one
    standard-error handler each.  Idempotent (called at ``import sim``, again by the CLI and by every worker
    initialiser with the driver's level).  Returns the level name used."""
    name = log_level(level)
    for logger_name in LOGGERS:
        logger = logging.getLogger(logger_name)
        logger.setLevel(name)
        logger.propagate = False
        if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
            logger.addHandler(_StderrHandler())
    return name


#: The libraries whose loggers follow ``TANKSIM_LOG`` too once :func:`route_library_logging` ran (Dask's
#: ``distributed`` logs every worker start and stop at INFO, with its own handler and format, by default).
LIBRARY_LOGGERS = ("distributed",)
#: Dask's configuration key for its ``distributed`` logger's level, as an environment variable: worker processes
#: read it when they import ``distributed``, before any tanksim code runs in them.
DASK_LEVEL_ENV = "DASK_LOGGING__DISTRIBUTED"


def route_library_logging(level: str | None = None) -> str:
    """Put the :data:`LIBRARY_LOGGERS` under tanksim's set-up: their own handlers are replaced by tanksim's
    standard-error handler and their level is ``level`` (default: tanksim's current level), so a default run is
    quiet and ``TANKSIM_LOG=info`` shows Dask's records as ``tanksim batch: info: ...``.  Also sets
    :data:`DASK_LEVEL_ENV` (unless the user set it) so that Dask worker processes started from now on are quiet
    from their first line.  Called by a driver opening a Dask executor and by every Dask worker.  Returns the level
    name used."""
    name = log_level(level) if level is not None else current_level()
    os.environ.setdefault(DASK_LEVEL_ENV, name.lower())
    for logger_name in LIBRARY_LOGGERS:
        logger = logging.getLogger(logger_name)
        for h in list(logger.handlers):
            if not isinstance(h, _StderrHandler):
                logger.removeHandler(h)
        if not logger.handlers:
            logger.addHandler(_StderrHandler())
        logger.setLevel(name)
        logger.propagate = False
    return name


def current_level() -> str:
    """The level tanksim's loggers are set to now (what a driver passes to its worker processes)."""
    return logging.getLevelName(logging.getLogger(LOGGERS[0]).getEffectiveLevel())


class _Collect(logging.Handler):
    """Keeps every record's message (a :func:`showing_warnings` block's)."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the message."""
        self.into.append(record.getMessage())


@contextmanager
def showing_warnings(quiet: bool = False) -> Iterator[list[str]]:
    """A block in which tanksim's warnings are shown whatever ``TANKSIM_LOG`` says (``tanksim validate``: checking a
    file is asking for them) and collected: yields the list their messages are appended to.  ``quiet``: collected
    only, not written to standard error (the caller prints them, e.g. each prefixed with its file).  The level and
    the handlers are put back afterwards."""
    found: list[str] = []
    collect = _Collect(found)
    loggers = [logging.getLogger(n) for n in LOGGERS]
    before = [lg.level for lg in loggers]
    muted = {lg.name: [h for h in lg.handlers if isinstance(h, _StderrHandler)] if quiet else [] for lg in loggers}
    for lg in loggers:
        lg.setLevel(min(lg.getEffectiveLevel(), logging.WARNING))
        lg.addHandler(collect)
        for h in muted[lg.name]:
            lg.removeHandler(h)
    try:
        yield found
    finally:
        for lg, lv in zip(loggers, before):
            lg.removeHandler(collect)
            for h in muted[lg.name]:
                lg.addHandler(h)
            lg.setLevel(lv)
