"""Start-up check that the ``sim`` and ``agents`` packages Python imported are tanksim's own (README, "Project
layout": keep tanksim in its own environment).

Both names are short and other distributions use them too; when one of those comes first on ``sys.path`` (an
earlier ``PYTHONPATH`` entry, another project installed in the same environment), tanksim would otherwise fail
somewhere deep in an import with a message about a missing module or attribute.  Each of tanksim's packages
carries the marker ``__tanksim__`` (its own name) in its ``__init__``; a package without it is named together with
the distribution that provides that name (:func:`importlib.metadata.packages_distributions`) or its file.

Cost: one attribute look-up per package on the normal path; the distribution scan runs only on a collision.
Limit: a foreign ``sim`` that shadows tanksim's completely stops the ``tanksim`` console script before any tanksim
code runs (``No module named 'sim.cli'``); this check covers ``agents`` and a ``sim`` mixed from two places.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import sys

#: tanksim's top-level packages, each with ``__tanksim__ = <its name>`` in its ``__init__``.
OWN_PACKAGES = ("sim", "agents")


def foreign_package(name: str) -> str | None:
    """``None`` if the package ``name`` that Python imports is tanksim's own, else one line saying where the other
    one comes from (its file and the distribution(s) that provide the name, if any).  Never raises: a package that
    fails to import is reported the same way."""
    try:
        mod = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - a broken foreign package is reported, not raised
        return f"the Python package {name!r} could not be imported ({type(exc).__name__}: {exc})"
    if getattr(mod, "__tanksim__", None) == name:
        return None
    where = getattr(mod, "__file__", None) or ", ".join(getattr(mod, "__path__", [])) or "an unknown place"
    dists = sorted(set(importlib.metadata.packages_distributions().get(name, [])) - {"tanksim"})
    owner = (f"distribution {', '.join(dists)}" if dists
             else "no installed distribution (check PYTHONPATH and the current folder)")
    return f"the Python package {name!r} imported from {where} is not tanksim's: it belongs to {owner}"


def check_own_packages() -> None:
    """Exit with status 2 and a message on stderr if ``sim`` or ``agents`` is not tanksim's (see the module)."""
    problems = [p for p in (foreign_package(n) for n in OWN_PACKAGES) if p]
    if problems:
        for p in problems:
            print(f"tanksim: {p}", file=sys.stderr)
        print("tanksim: keep tanksim in its own Python environment (its launcher ./tanksim makes .venv), or remove "
              "the other package from the path", file=sys.stderr)
        raise SystemExit(2)
