"""Mesa's core classes (``Model``, ``Agent``, ``DataCollector``) without importing the rest of Mesa at start-up.

``import mesa`` runs ``mesa/__init__.py``, which imports every Mesa wing: ``mesa.discrete_space`` (scipy.spatial),
``mesa.experimental`` (continuous space: scipy.spatial.distance), ``mesa.batchrunner``, and pandas at the top of
``mesa.agent`` and of the experimental data recorders.  A battle uses only ``mesa.Model``, ``mesa.Agent`` and
``mesa.DataCollector``; importing all of Mesa cost about 0.8 CPU s of the 1.1 s that ``import sim.runner`` took
(issue 14).  This module imports those three classes from their own modules and defers the rest:

- ``mesa`` and ``mesa.experimental`` are entered in ``sys.modules`` as package shells (the real ``__path__`` and
  ``__spec__``, so their submodules import normally) whose ``__init__`` runs on the first access of any other
  attribute (``mesa.discrete_space``, ``mesa.batch_run``, ``mesa.__version__``...).  After that the shell *is* the
  full package: ``import mesa`` anywhere later behaves exactly as usual.
- ``pandas``, if not yet imported, is entered as a :class:`LazyModule` that imports the real pandas on the first
  attribute access (``pd.DataFrame``...) and forwards every access to it.  Mesa only touches pandas in
  DataFrame-producing methods a battle never calls; the project's own pandas users import it where they use it.
- Mesa's logging helpers find the calling module and class with ``inspect.stack()`` / ``inspect.getouterframes``,
  which reads the source of every frame on the stack and walks ``sys.modules`` (about 0.1 CPU s at import).  They
  are replaced, before Mesa's modules import them, by equivalents reading ``sys._getframe`` (same logger names, same
  debug messages).

If ``mesa`` was already imported in full (by the interactive app, a notebook), nothing is deferred.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import sys
import types
from typing import TYPE_CHECKING, Any, Callable

__all__ = ["Agent", "DataCollector", "LazyModule", "Model"]


class LazyModule(types.ModuleType):
    """A ``sys.modules`` stand-in that imports the real module on first attribute access and forwards to it.

    ``__spec__``, ``__file__`` and ``__name__`` are plain attributes, so the import system and ``inspect`` do not
    trigger the load.  Raises whatever the real import raises, at first use.
    """

    def __getattr__(self, attr: str) -> Any:
        name = self.__dict__["__name__"]
        if sys.modules.get(name) is self:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)


def defer(name: str) -> None:
    """Enter module ``name`` in ``sys.modules`` as a :class:`LazyModule` unless it is imported already."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    mod = LazyModule(name)
    mod.__spec__ = spec
    mod.__file__ = spec.origin
    sys.modules[name] = mod


class _PackageShell(types.ModuleType):
    """A package whose ``__init__`` runs on the first access of an attribute it does not have yet."""

    def __getattr__(self, attr: str) -> Any:
        d = self.__dict__
        if attr.startswith("__") and attr.endswith("__") and attr not in ("__version__", "__all__"):
            raise AttributeError(attr)
        if not d.get("_shell_loaded"):
            d["_shell_loaded"] = True
            spec = d["__spec__"]
            with open(spec.origin, encoding="utf-8") as f:
                code = compile(f.read(), spec.origin, "exec")
            exec(code, d)  # the package's own __init__, in its own namespace (submodules already imported stay)
            if attr in d:
                return d[attr]
        raise AttributeError(f"module {d['__name__']!r} has no attribute {attr!r}")


def _shell(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package")
    mod = _PackageShell(name)
    mod.__spec__ = spec
    mod.__file__ = spec.origin
    mod.__path__ = list(spec.submodule_search_locations)
    mod.__package__ = name
    mod.__loader__ = spec.loader
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)


def _cheap_logging() -> None:
    import mesa.mesa_logging as ml

    def create_module_logger(name: str | None = None) -> logging.Logger:
        if name is None:
            name = sys._getframe(1).f_globals["__name__"]
        logger = logging.getLogger(f"{ml.LOGGER_NAME}.{name}")
        ml._module_loggers[name] = logger
        return logger

    def method_logger(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        logger = ml.get_module_logger(name)
        classname = sys._getframe(1).f_code.co_name  # the class body calling the decorator

        def real_decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                logger.debug(f"calling {classname}.{func.__name__} with {args[1::]} and {kwargs}")
                return func(*args, **kwargs)
            return wrapper
        return real_decorator

    ml.create_module_logger = create_module_logger
    ml.method_logger = method_logger


def _load() -> tuple[Any, Any, Any]:
    if "mesa" not in sys.modules:
        defer("pandas")
        _shell("mesa")
        _shell("mesa.experimental")
        _cheap_logging()
    from mesa.agent import Agent as _Agent
    shell = sys.modules["mesa"]
    shell.__dict__.setdefault("Agent", _Agent)  # mesa.datacollection does ``from mesa import Agent``
    from mesa.model import Model as _Model
    shell.__dict__.setdefault("Model", _Model)
    from mesa.datacollection import DataCollector as _DataCollector
    return _Model, _Agent, _DataCollector


if TYPE_CHECKING:
    from mesa import Agent, DataCollector, Model
else:
    Model, Agent, DataCollector = _load()
