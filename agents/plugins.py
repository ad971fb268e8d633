"""Plug-in doctrine names (``package.module:ClassName``) checked without importing or constructing anything.

A scenario, an experiment or a results folder may name plug-in doctrines, but reading one must run no code: the
file may come from someone else.  :func:`check_plugin` therefore locates the module's source file with the import
system's *finders* only (``importlib.util.find_spec`` for the top-level name, which imports nothing, then
``importlib.machinery.PathFinder`` on the parent's search path for each submodule, so no package ``__init__`` runs;
``importlib.util.find_spec("a.b")`` itself would import ``a``), parses the source with :mod:`ast` and checks that
the module defines the class: a ``class`` statement (or a ``from ... import`` of one, followed up to
:data:`MAX_HOPS` modules) that has a ``decide`` method or derives, by name, from a known doctrine base
(:data:`KNOWN_BASES`) or from such a class.  A module that is already imported is inspected as it is (static
attribute look-ups only: nothing is called).

The actual import happens only when a battle is really played (:func:`agents.controllers.load_policy`): an
in-process plug-in is code the user chose to run, and it can reach everything in its process.

Process-spawning policies (isolated entrants, :class:`agents.isolation.RemotePolicy`, anything with a ``command``)
are never plug-ins: a policy class declaring ``spawns_processes = True``, a subclass of ``RemotePolicy``, any class
of the modules in :data:`PROCESS_MODULES`, and parameters holding a ``command`` or ``entrant`` key are refused
here; they exist only in tournament entrant definitions (the organiser's tournament file, ``tanksim match``).
"""
from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import importlib.util
import keyword
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sim.messages import clip, did_you_mean, short

#: Class names a plug-in may derive from (matched by name: the module is not imported).
KNOWN_BASES = frozenset({"Policy", "Doctrine", "Hold", "Advance", "Flank", "Cover", "Rush", "Greedy",
                         "RandomPolicy", "FocusFire", "Objective"})
#: Modules holding the process machinery of isolated entrants: none of their classes is a plug-in.
PROCESS_MODULES = ("agents.isolation", "agents.remote")
#: Class names that are process-spawning policies wherever they appear as a base.
PROCESS_BASES = frozenset({"RemotePolicy"})
#: Parameter keys that only an isolated entrant may carry (at any depth of ``params``).
COMMAND_KEYS = frozenset({"command", "entrant"})
#: Steps followed from a name to its class: ``from x import Name`` re-exports and base classes.
MAX_HOPS = 12
#: Largest plug-in source file read (bytes), and most source bytes one file's check may parse in all.
MAX_SOURCE_BYTES = 1_000_000
MAX_SOURCE_BUDGET = 2_000_000
#: Longest plug-in name (characters).
MAX_NAME = 200


class PolicyLoadError(LookupError, ValueError):
    """A policy name or plug-in could not be loaded (says what was not found).  A ``ValueError`` too, so command
    lines report it as bad input."""


@dataclass(frozen=True)
class PluginInfo:
    """What a static check learned about a plug-in class.

    ``module`` / ``cls``: the name's parts; ``path``: the source file read (``None`` for an already imported
    module); ``defaults``: its parameters and their default values when they are a literal (``None``: unknown, e.g.
    the class defines its own ``__init__``); ``bounds``: literal ``(low, high)`` ranges."""

    module: str
    cls: str
    path: str | None
    defaults: Mapping[str, Any] | None
    bounds: Mapping[str, Any]


@dataclass
class _Source:
    name: str
    path: str
    tree: ast.Module
    is_package: bool


def split_name(name: Any) -> tuple[str, str]:
    """``"package.module:Class"`` -> ``("package.module", "Class")``; raises :class:`PolicyLoadError` for anything
    else (empty parts, not identifiers, too long)."""
    if not isinstance(name, str) or not name.strip():
        raise PolicyLoadError(f"policy name {short(name)}: expected a built-in name or package.module:ClassName")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise PolicyLoadError(f"policy name {short(name)}: longer than {MAX_NAME} characters")
    mod, _, cls = name.partition(":")
    parts = mod.split(".")
    if not mod or not cls or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts) \
            or not cls.isidentifier() or keyword.iskeyword(cls):
        raise PolicyLoadError(f"policy {short(name)}: expected package.module:ClassName")
    return mod, cls


def command_keys(params: Any, path: str = "params", depth: int = 0) -> str | None:
    """The path of the first ``command`` / ``entrant`` key inside ``params`` (``None`` if there is none)."""
    if depth > 64:
        return None
    if isinstance(params, Mapping):
        for k, v in params.items():
            here = f"{path}.{clip(str(k), 30)}"
            if isinstance(k, str) and k in COMMAND_KEYS:
                return here
            hit = command_keys(v, here, depth + 1)
            if hit:
                return hit
    elif isinstance(params, (list, tuple)):
        for i, v in enumerate(params[:10_000]):
            hit = command_keys(v, f"{path}[{i}]", depth + 1)
            if hit:
                return hit
    return None


def refuse_commands(name: str, params: Any) -> None:
    """Raise :class:`PolicyLoadError` when ``params`` hold a command (a data file may not start programs)."""
    hit = command_keys(params)
    if hit:
        raise PolicyLoadError(f"policy {short(name)}: {hit}: a command or isolated entrant is allowed only in a "
                              f"tournament's entrant definitions (entrants: [{{name, command: [...]}}]), never in "
                              f"a scenario, experiment or results file")


def spawn_refusal(name: str) -> PolicyLoadError:
    """The error for a process-spawning policy named where only plug-ins may be."""
    return PolicyLoadError(f"policy {short(name)}: a process-spawning policy (isolated entrant) is allowed only in a "
                           f"tournament's entrant definitions (isolation: process, or command: [...]), never in a "
                           f"scenario, experiment or results file")


def _read_source(mod_name: str, path: str, is_package: bool) -> _Source:
    try:
        st = os.stat(path)
        if st.st_size > MAX_SOURCE_BYTES:
            raise PolicyLoadError(f"module {mod_name!r}: its source {path} is larger than {MAX_SOURCE_BYTES} bytes")
        key = (path, st.st_mtime_ns, st.st_size)
    except OSError as exc:
        raise PolicyLoadError(f"module {mod_name!r}: cannot read {path}: {exc.strerror}") from None
    hit = _TREES.get(key)
    if hit is None:
        if _BUDGET:
            if st.st_size > _BUDGET[-1]:
                raise PolicyLoadError(f"module {mod_name!r}: checking the plug-ins this file names would parse more "
                                      f"than {MAX_SOURCE_BUDGET:,} bytes of Python source; name fewer plug-in "
                                      f"modules")
            _BUDGET[-1] -= st.st_size
        try:
            with open(path, "rb") as fh:
                text = importlib.util.decode_source(fh.read())
            hit = ast.parse(text, filename=path)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError) as exc:
            raise PolicyLoadError(f"module {mod_name!r}: cannot be read as Python source ({type(exc).__name__})"
                                  ) from None
        if len(_TREES) > 256:
            _TREES.clear()
        _TREES[key] = hit
    return _Source(mod_name, path, hit, is_package)


_TREES: dict[tuple[str, int, int], ast.Module] = {}
_BUDGET: list[int] = []


@contextlib.contextmanager
def source_budget(limit: int = MAX_SOURCE_BUDGET) -> Iterator[None]:
    """Within this block, static checks parse at most ``limit`` bytes of plug-in source not parsed before (a file
    naming hundreds of big modules gets an error, not minutes of parsing).  Nested blocks share the outer one."""
    if _BUDGET:
        yield
        return
    _BUDGET.append(limit)
    try:
        yield
    finally:
        _BUDGET.pop()


def locate(mod_name: str) -> Any:
    """The already imported module ``mod_name``, or a :class:`_Source` of its file, found without executing
    anything.  Raises :class:`PolicyLoadError` (not found, not Python source)."""
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    parts = mod_name.split(".")
    spec: Any = None
    locations: Any = None
    for i in range(len(parts)):
        full = ".".join(parts[: i + 1])
        live = sys.modules.get(full)
        if live is not None:  # an imported parent package: its own search path
            spec, locations = getattr(live, "__spec__", None), getattr(live, "__path__", None)
            continue
        try:
            if i == 0:
                spec = importlib.util.find_spec(full)  # a top-level name: finders only, nothing is imported
            elif locations is None:
                raise PolicyLoadError(f"module {mod_name!r} not found ({'.'.join(parts[:i])!r} is not a package)")
            else:  # the parent's search path, without importing the parent (its __init__ never runs)
                spec = importlib.machinery.PathFinder.find_spec(full, list(locations))
        except (ImportError, ValueError, OSError) as exc:
            raise PolicyLoadError(f"module {mod_name!r} not found ({type(exc).__name__})") from None
        if spec is None:
            raise PolicyLoadError(f"module {mod_name!r} not found (is its folder on sys.path / PYTHONPATH?)")
        locations = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    if not isinstance(origin, str) or not origin.endswith(".py") or not os.path.isfile(origin):
        raise PolicyLoadError(f"module {mod_name!r} is not a Python source module (a plug-in doctrine is a .py file "
                              f"on sys.path)")
    return _read_source(mod_name, origin, spec.submodule_search_locations is not None)


def _body(tree: ast.Module) -> list[ast.stmt]:
    """Top-level statements, including those inside top-level ``if`` / ``try`` blocks."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        st = todo.pop(0)
        out.append(st)
        if isinstance(st, ast.If):
            todo[:0] = st.body + st.orelse
        elif isinstance(st, ast.Try):
            todo[:0] = st.body + st.orelse + st.finalbody
    return out


def _binding(src: _Source, name: str) -> ast.stmt | None:
    """The last top-level statement that binds ``name`` (a class, an import, an assignment)."""
    found: ast.stmt | None = None
    for st in _body(src.tree):
        if isinstance(st, ast.ClassDef) and st.name == name:
            found = st
        elif isinstance(st, (ast.ImportFrom, ast.Import)):
            for a in st.names:
                if (a.asname or a.name.split(".")[0]) == name:
                    found = st
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = st
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == name:
            found = st
    return found


def _absolute(src: _Source, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = src.name if src.is_package else src.name.rpartition(".")[0]
    parts = pkg.split(".") if pkg else []
    if node.level - 1 > len(parts):
        return ""
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@dataclass
class ClassFacts:
    """What a class is, as far as a check without running it can tell: a ``policy`` (has ``decide``), ``spawns``
    processes, its literal ``defaults`` / ``bounds``, and whether it has its ``own_init`` (parameters unknown)."""

    spawns: bool = False
    policy: bool = False
    defaults: Mapping[str, Any] | None = None
    bounds: Mapping[str, Any] | None = None
    own_init: bool = False


def _literal(cls: ast.ClassDef, attr: str) -> tuple[bool, Any]:
    """``(True, value)`` when the class body sets ``attr`` to a literal; ``(True, None)`` for a non-literal value;
    ``(False, None)`` when it does not set it."""
    hit: tuple[bool, Any] = (False, None)
    for st in cls.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in st.targets):
            value = st.value
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == attr and st.value:
            value = st.value
        else:
            continue
        try:
            hit = (True, ast.literal_eval(value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            hit = (True, None)
    return hit


def _builtin_base(name: str) -> Any:
    from agents import policies

    return getattr(policies, name, None)


def _inspect_class(src: _Source, cls: ast.ClassDef, hops: int) -> ClassFacts:
    out = ClassFacts()
    body_names = {st.name for st in cls.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out.policy = "decide" in body_names
    out.own_init = "__init__" in body_names or "__new__" in body_names
    has, val = _literal(cls, "spawns_processes")
    out.spawns = bool(has and val)
    d_has, d_val = _literal(cls, "defaults")
    b_has, b_val = _literal(cls, "bounds")
    inherited: list[ClassFacts] = []
    for base in cls.bases:
        bname = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
        if bname is None:
            continue
        if bname in PROCESS_BASES:
            out.spawns = True
        sub = None
        if isinstance(base, ast.Name):
            try:
                sub = _resolve(src, bname, hops + 1)
            except PolicyLoadError:
                sub = None
        if sub is None and bname in KNOWN_BASES:
            live = _builtin_base(bname)
            sub = ClassFacts(policy=True)
            if live is not None:
                sub.defaults = dict(getattr(live, "defaults", {}) or {})
                sub.bounds = dict(getattr(live, "bounds", {}) or {})
        if sub is not None:
            inherited.append(sub)
    first = inherited[0] if inherited else None
    out.policy = out.policy or any(f.policy for f in inherited)
    out.spawns = out.spawns or any(f.spawns for f in inherited)
    out.own_init = out.own_init or any(f.own_init for f in inherited)
    if d_has:
        out.defaults = d_val if isinstance(d_val, dict) and all(isinstance(k, str) for k in d_val) else None
    else:
        out.defaults = first.defaults if first is not None else {}
    if b_has:
        out.bounds = b_val if isinstance(b_val, dict) else {}
    else:
        out.bounds = first.bounds if first is not None and first.bounds is not None else {}
    return out


def class_facts(obj: Any) -> ClassFacts:
    """What a live class is, by static attribute look-ups only (nothing is called)."""
    import inspect

    out = ClassFacts()
    if not isinstance(obj, type):
        return out
    out.policy = callable(inspect.getattr_static(obj, "decide", None))
    out.spawns = bool(inspect.getattr_static(obj, "spawns_processes", False)) or any(
        c.__name__ in PROCESS_BASES or c.__module__ in PROCESS_MODULES for c in obj.__mro__)
    for c in obj.__mro__:
        if c.__name__ == "Policy" and c.__module__ == "agents.policies.base":
            break
        if "__init__" in vars(c) or "__new__" in vars(c):
            out.own_init = True
    d = inspect.getattr_static(obj, "defaults", {})
    out.defaults = dict(d) if isinstance(d, Mapping) and all(isinstance(k, str) for k in d) else None
    b = inspect.getattr_static(obj, "bounds", {})
    out.bounds = dict(b) if isinstance(b, Mapping) else {}
    return out


def _resolve(src: _Source, name: str, hops: int) -> ClassFacts | None:
    """What ``name`` bound at the top level of ``src`` is, as a class; ``None`` when it is not a class."""
    if hops > MAX_HOPS:
        return None
    st = _binding(src, name)
    if isinstance(st, ast.ClassDef):
        return _inspect_class(src, st, hops)
    if isinstance(st, ast.ImportFrom):
        alias = next(a for a in st.names if (a.asname or a.name) == name)
        target = _absolute(src, st)
        if not target:
            return None
        if target in PROCESS_MODULES:
            return ClassFacts(spawns=True, policy=True)
        where = locate(target)
        if isinstance(where, _Source):
            return _resolve(where, alias.name, hops + 1)
        return class_facts(vars(where).get(alias.name))
    return None


def policy_classes(src: Any) -> list[str]:
    """Names of the policy classes a module defines (for "did you mean" messages)."""
    if not isinstance(src, _Source):
        return sorted(k for k, v in vars(src).items() if isinstance(v, type) and not k.startswith("_")
                      and class_facts(v).policy and v.__module__ == src.__name__)
    out = []
    for st in _body(src.tree):
        if isinstance(st, ast.ClassDef) and not st.name.startswith("_"):
            try:
                if _inspect_class(src, st, MAX_HOPS - 1).policy:
                    out.append(st.name)
            except PolicyLoadError:
                continue
    return sorted(set(out))


def check_plugin(name: str) -> PluginInfo:
    """Check a ``package.module:ClassName`` plug-in name statically (see the module docstring).

    Returns a :class:`PluginInfo`.  Raises :class:`PolicyLoadError` naming what was not found: the module, the
    class in the module (listing the policy classes there), a name that is not a class with ``decide``; and for a
    process-spawning policy (isolated entrants are never plug-ins)."""
    mod_name, cls_name = split_name(name)
    if mod_name in PROCESS_MODULES or any(mod_name.startswith(m + ".") for m in PROCESS_MODULES):
        raise spawn_refusal(name)
    where = locate(mod_name)
    if isinstance(where, _Source):
        st = _binding(where, cls_name)
        if st is None:
            found = policy_classes(where)
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} has no class {cls_name!r}"
                                  + (f" (policy classes there: {', '.join(found)})" if found else ""))
        info = _resolve(where, cls_name, 0)
        path: str | None = where.path
    else:
        if cls_name not in vars(where):
            found = policy_classes(where)
            raise PolicyLoadError(f"policy {name!r}: module {mod_name!r} has no class {cls_name!r}"
                                  + (f" (policy classes there: {', '.join(found)})" if found else ""))
        info = class_facts(vars(where)[cls_name])
        path = None
    if info is not None and info.spawns:
        raise spawn_refusal(name)
    if info is None or not info.policy:
        raise PolicyLoadError(f"policy {name!r}: {cls_name!r} is not a policy class with a decide(obs, decision) "
                              f"method")
    defaults = None if info.own_init else info.defaults
    return PluginInfo(mod_name, cls_name, path, defaults, dict(info.bounds or {}))


def check_params(cls_name: str, defaults: Mapping[str, Any] | None, bounds: Mapping[str, Any],
                 params: Mapping[str, Any]) -> None:
    """Check ``params`` against a doctrine's ``defaults`` / ``bounds`` the way :class:`agents.policies.Policy`
    converts them, without constructing it (``defaults`` ``None``: unknown, nothing checked).  Raises
    :class:`PolicyLoadError` with the doctrine's own wording."""
    if defaults is None:
        return
    from agents.policies.base import _convert

    unknown = sorted(str(k) for k in params if k not in defaults)
    if unknown:
        names = clip(", ".join(clip(u, 40) for u in unknown), 160)
        raise PolicyLoadError(f"{cls_name} has no parameter(s) {names}{did_you_mean(unknown[0], defaults)}; "
                              f"parameters: {', '.join(defaults) or 'none'}")
    for k, v in params.items():
        try:
            value = _convert(cls_name, k, defaults[k], v)
        except (TypeError, ValueError, OverflowError) as exc:
            raise PolicyLoadError(clip(str(exc), 300)) from None
        lo_hi = bounds.get(k)
        if lo_hi is None:
            continue
        try:
            out = not lo_hi[0] <= value <= lo_hi[1]
        except (TypeError, IndexError, KeyError):
            out = False
        if out:
            raise PolicyLoadError(f"{cls_name}: parameter {k}={short(value)} is out of range [{lo_hi[0]}, "
                                  f"{lo_hi[1]}]")


def check_function(name: Any, what: str = "reporter") -> str | None:
    """Check a ``package.module:function`` plug-in name statically, the way :func:`check_plugin` checks a doctrine:
    the module is located with the import system's finders and its source parsed (nothing imported), and it must
    bind ``function`` with a top-level ``def`` (or re-export one with ``from ... import``, followed up to
    :data:`MAX_HOPS` modules).  An already imported module is looked up as it is.  Returns the module's source path
    (``None`` for an imported module).  Raises :class:`PolicyLoadError` naming what was not found."""
    if not isinstance(name, str) or ":" not in name:
        raise PolicyLoadError(f"{what} {short(name)}: expected package.module:function")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise PolicyLoadError(f"{what} {short(name)}: longer than {MAX_NAME} characters")
    mod_name, _, fn = name.partition(":")
    parts = mod_name.split(".")
    if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts) or not fn.isidentifier() \
            or keyword.iskeyword(fn):
        raise PolicyLoadError(f"{what} {short(name)}: expected package.module:function")
    for hop in range(MAX_HOPS + 1):
        if mod_name in PROCESS_MODULES or any(mod_name.startswith(m + ".") for m in PROCESS_MODULES):
            raise PolicyLoadError(f"{what} {name!r}: {mod_name} is process machinery, not a plug-in module")
        where = locate(mod_name)
        if not isinstance(where, _Source):
            obj = vars(where).get(fn)
            if obj is None or isinstance(obj, type) or not callable(obj):
                raise PolicyLoadError(f"{what} {name!r}: module {mod_name!r} has no function {fn!r}")
            return None
        st = _binding(where, fn)
        if isinstance(st, ast.FunctionDef):
            return where.path
        if isinstance(st, ast.ImportFrom) and hop < MAX_HOPS:
            alias = next(a for a in st.names if (a.asname or a.name) == fn)
            mod_name, fn = _absolute(where, st), alias.name
            if not mod_name:
                break
            continue
        if st is None:
            raise PolicyLoadError(f"{what} {name!r}: module {mod_name!r} has no function {fn!r}")
        raise PolicyLoadError(f"{what} {name!r}: {fn!r} in {mod_name!r} is not a function defined with def")
    raise PolicyLoadError(f"{what} {name!r}: could not follow {fn!r} to its def within {MAX_HOPS} imports")
