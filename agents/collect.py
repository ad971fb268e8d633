"""Extra DataCollector reporters named in data: ``collect: {model: {NAME: SPEC}, agents: {NAME: SPEC}}``.

An experiment file (or ``BattleModel(collect=...)``) may add model columns (one value per turn) and agent columns
(one value per tank per turn).  ``SPEC`` is either

* a **dotted attribute path** read from the model (model reporters) or from the tank agent (agent reporters):
  ``battle.turn``, ``rules_state.dt``, ``state.vehicle_id``; each part is an attribute, or a key where the value so
  far is a mapping; a missing attribute or key gives ``None``; parts starting with ``_`` are refused (no private
  or dunder reach); nothing is called; or
* a **plug-in function** ``package.module:function``, called as ``function(model)`` or ``function(tank)``.

Validation runs no code (DESIGN.md "Trust boundaries"): :func:`check_collect` checks names and paths by syntax and
plug-in functions statically (:func:`agents.plugins.check_function`: the module's source is parsed, never
imported).  A plug-in is imported only when a battle is built (:func:`reporters`); an in-process plug-in is code the
user chose to run.
"""
from __future__ import annotations

import importlib
import keyword
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Most extra reporters of one kind (model or agents).
MAX_REPORTERS = 50
#: Longest reporter spec (characters).
MAX_SPEC = 200


class ReporterError(ValueError):
    """A bad ``collect`` entry; the message names the field path."""


def _check_name(name: str) -> None:
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        raise ValueError(f"column name {name!r}: expected an identifier (letters, digits, _)")


def check_spec(spec: Any) -> None:
    """Check one reporter spec by syntax (a dotted path) or statically (a plug-in function).  Raises
    ``ValueError``."""
    if not isinstance(spec, str) or not spec.strip() or len(spec) > MAX_SPEC:
        raise ValueError(f"expected a dotted attribute path or package.module:function of at most {MAX_SPEC} "
                         f"characters")
    if ":" in spec:
        from agents.plugins import check_function

        check_function(spec)
        return
    for part in spec.split("."):
        if not part.isidentifier() or part.startswith("_"):
            raise ValueError(f"{spec!r}: expected a dotted attribute path (parts are identifiers not starting "
                             f"with _), or package.module:function")


class CollectSpec(BaseModel):
    """``collect:`` of an experiment: ``model`` and ``agents`` map a column name to a reporter spec (see the module
    docstring).  Validation checks every spec (statically for plug-ins)."""

    model_config = ConfigDict(extra="forbid")

    model: dict[str, str] = Field(default_factory=dict, max_length=MAX_REPORTERS)
    agents: dict[str, str] = Field(default_factory=dict, max_length=MAX_REPORTERS)

    @field_validator("model", "agents")
    @classmethod
    def _specs(cls, v: dict[str, str]) -> dict[str, str]:
        for name, spec in v.items():
            _check_name(name)
            try:
                check_spec(spec)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        return v

    def as_mapping(self) -> dict[str, dict[str, str]]:
        """``{"model": {...}, "agents": {...}}`` without empty kinds (``{}`` when nothing is collected)."""
        return {k: dict(v) for k, v in (("model", self.model), ("agents", self.agents)) if v}


def check_collect(collect: Mapping[str, Any]) -> CollectSpec:
    """Validate a ``collect`` mapping.  Raises :class:`ReporterError` (``collect.agents.NAME: what``)."""
    from pydantic import ValidationError

    from sim.messages import problem_message

    try:
        return CollectSpec.model_validate(dict(collect))
    except ValidationError as exc:
        lines = [f"collect.{'.'.join(str(x) for x in e['loc'])}: {problem_message(e, CollectSpec)}"
                 for e in exc.errors()]
        raise ReporterError("; ".join(lines)) from None


def _path_reader(path: str) -> Callable[[Any], Any]:
    parts = path.split(".")

    def read(obj: Any) -> Any:
        for part in parts:
            if obj is None:
                return None
            obj = obj.get(part) if isinstance(obj, Mapping) else getattr(obj, part, None)
        return obj

    read.__name__ = f"read_{path.replace('.', '_')}"
    return read


def load_reporter(spec: str) -> Callable[[Any], Any]:
    """The callable of one checked spec: a path reader, or the plug-in function imported now.  Raises
    :class:`ReporterError` if the plug-in cannot be imported or is not callable."""
    if ":" not in spec:
        return _path_reader(spec)
    mod_name, _, fn = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(mod_name), fn)
    except (ImportError, AttributeError) as exc:
        raise ReporterError(f"reporter {spec!r}: cannot load it ({type(exc).__name__}: {exc})") from None
    if not callable(obj):
        raise ReporterError(f"reporter {spec!r}: not callable")
    return obj


def reporters(collect: Mapping[str, Any]) -> tuple[dict[str, Callable[[Any], Any]], dict[str, Callable[[Any], Any]]]:
    """``(model reporters, agent reporters)`` for a ``collect`` mapping, checked then loaded.  Raises
    :class:`ReporterError`."""
    spec = collect if isinstance(collect, CollectSpec) else check_collect(collect)
    return ({k: load_reporter(v) for k, v in spec.model.items()},
            {k: load_reporter(v) for k, v in spec.agents.items()})
