"""Controllers: loading a side's doctrines by name, and the per-side controller that plays them.

Loading a policy by name: a built-in doctrine name (``hold``, ``advance``, ...; :data:`agents.policies.BUILTIN`)
or ``package.module:ClassName`` with parameters (:func:`load_policy`, when a battle is played);
:func:`check_policy` checks such a name without importing or constructing a plug-in (validation of data files).
Process-spawning policies (isolated entrants) load only from an :class:`EntrantPolicy`, which only tournament code
makes.

The per-side controller that answers decisions, follows move plans and records faults is
:class:`agents.side_controller.SideController` (with :class:`~agents.side_controller.Fault`), re-exported here:
it lives below the doctrines' registry so the search kit (:mod:`agents.search`) can use it without a circle.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents import plugins
from agents.plugins import PolicyLoadError
from agents.policies import BUILTIN, Policy
from agents.side_controller import Fault, SideController
from sim.messages import did_you_mean, unknown_policy_message

__all__ = ["EntrantPolicy", "Fault", "PolicyLoadError", "SideController", "check_policy", "load_policy"]


@dataclass(frozen=True)
class EntrantPolicy:
    """A policy defined by a tournament entrant (the organiser's tournament file or a ``tanksim match`` command
    line): the only way to play a process-spawning policy (an isolated entrant, ``agents.isolation:RemotePolicy``
    with a ``command``).  Pass it in :class:`sim.model.BattleModel`'s ``policies``; a scenario, an experiment or a
    results folder can only give a :class:`sim.scenario.PolicySpec`, which names plug-in doctrines only."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


def check_policy(name: str, params: Mapping[str, Any] | None = None) -> None:
    """Check a doctrine named in a data file without importing or constructing any plug-in: a built-in name with
    its parameters (the built-in class checks them; it is the project's own code), or a ``package.module:Class``
    checked statically (:func:`agents.plugins.check_plugin`: the module file is located and parsed, never run;
    literal ``defaults`` / ``bounds`` check the parameters).  Commands and process-spawning policies are refused.

    Raises :class:`PolicyLoadError` with the same wording as :func:`load_policy`."""
    params = dict(params or {})
    plugins.refuse_commands(name, params)
    if isinstance(name, str) and ":" in name:
        info = plugins.check_plugin(name)
        try:
            plugins.check_params(info.cls, info.defaults, info.bounds, params)
        except PolicyLoadError as exc:
            raise PolicyLoadError(f"policy {plugins.short(name)}: bad parameters {plugins.short(params)}: {exc}"
                                  ) from None
        return
    _construct(_builtin(name), name, params)


def _builtin(name: Any) -> type[Policy]:
    if not isinstance(name, str) or not name.strip():
        raise PolicyLoadError(f"policy name {plugins.short(name)}: expected a built-in name or "
                              f"package.module:ClassName")
    if name.strip() not in BUILTIN:
        raise PolicyLoadError(unknown_policy_message(name.strip(), BUILTIN))
    return BUILTIN[name.strip()]


def _construct(cls: type, name: str, params: dict[str, Any]) -> Policy:
    try:
        return cls(**params)
    except (TypeError, ValueError, OverflowError) as exc:
        why = str(exc)
        found = getattr(cls, "defaults", None)
        defaults: list[str] = [str(k) for k in found] if isinstance(found, Mapping) else []
        unknown = sorted(str(k) for k in params if defaults and k not in defaults)
        if unknown and " has no parameter(s) " in why and "; parameters: " in why:   # the closest name, as a plug-in's
            why = why.replace("; parameters: ", f"{did_you_mean(unknown[0], defaults)}; parameters: ", 1)
        raise PolicyLoadError(f"policy {plugins.short(name)}: bad parameters {plugins.short(params)}: "
                              f"{plugins.clip(why, 300)}") from None


def load_policy(name: str, params: Mapping[str, Any] | None = None, *, entrant: bool = False) -> Policy:
    """Instantiate a doctrine by built-in name (see ``agents.policies.BUILTIN``) or ``package.module:ClassName``
    with ``params`` (values may be strings, as from the command line; doctrines convert them to the type of the
    default).

    A plug-in is first checked statically (:func:`check_policy`), then imported: an in-process plug-in is code
    the user chose to run.  Only ``entrant=True`` (a tournament entrant, :class:`EntrantPolicy`) may load a
    process-spawning policy or pass a ``command``; anything else names plug-in doctrines only.

    Raises :class:`PolicyLoadError` naming what was not found: the module, the class in the module, an unknown
    built-in name (listing the built-ins), a class without ``decide``, an unknown / malformed parameter, or a
    process-spawning policy outside a tournament entrant."""
    params = dict(params or {})
    if not isinstance(name, str) or not name.strip():
        raise PolicyLoadError(f"policy name {plugins.short(name)}: expected a built-in name or "
                              f"package.module:ClassName")
    name = name.strip()
    if ":" not in name:
        if not entrant:
            plugins.refuse_commands(name, params)
        return _construct(_builtin(name), name, params)
    mod_name, cls_name = plugins.split_name(name)
    if not entrant:
        plugins.refuse_commands(name, params)
        if mod_name in plugins.PROCESS_MODULES or mod_name.startswith(tuple(m + "." for m in plugins.PROCESS_MODULES)):
            raise plugins.spawn_refusal(name)
        if mod_name not in sys.modules:
            plugins.check_plugin(name)  # nothing of a module runs before it is known to define a policy class
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} not found (is its folder on "
                                  f"sys.path / PYTHONPATH?)") from None
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} failed to import: "
                              f"{plugins.clip(str(exc), 300)}") from None
    except Exception as exc:  # noqa: BLE001 - report any import-time crash of a plug-in
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} failed to import: "
                              f"{type(exc).__name__}: {plugins.clip(str(exc), 300)}") from None
    cls = vars(mod).get(cls_name)
    if cls is None:
        found = plugins.policy_classes(mod)
        raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} has no class {cls_name!r}"
                              + (f" (policy classes there: {', '.join(found)})" if found else ""))
    if not isinstance(cls, type) or not callable(getattr(cls, "decide", None)):
        raise PolicyLoadError(f"policy {name!r}: {cls_name!r} is not a policy class with a decide(obs, "
                              f"decision) method")
    if not entrant and plugins.class_facts(cls).spawns:
        raise plugins.spawn_refusal(name)
    return _construct(cls, name, params)
