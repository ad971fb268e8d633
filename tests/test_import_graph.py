"""The import graph of ``sim/`` and ``agents/`` runs one way (issue 13, docs/DESIGN.md "Layout"):
cli -> experiments / tournaments / view / env -> model -> agents -> rules -> engine core, with no circles.

The graph is read from the source with :mod:`ast`: every ``import`` and ``from ... import`` anywhere in a module,
function-level ones included (a lazy import is still a dependency).  Imports under ``if TYPE_CHECKING:`` are left
out: they exist for the type checker only and never run.  ``from package import name`` counts as an import of
the submodule ``package.name`` when there is one, else of the package.  Importing a submodule also runs its
package's ``__init__``; that implicit edge is not counted (every package would be a circle with its children).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent

#: Layers, lowest first: a module may import its own layer (without circles) and the layers below, never above.
#: ``sim.scenario`` sits with the model: validating a scenario checks its policy names through ``agents/``
#: (statically, :mod:`agents.plugins`), and the model builds battles from scenarios.  ``sim.victory`` holds the
#: outcomes the rule sets share (it reads ``sim.rules.base.Outcome``), so it sits with the rules.  ``sim.generate``
#: builds scenarios (it reads ``sim.scenario`` and the rules, nothing above), so it sits with the scenario.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("engine core", ("sim", "sim.hexgrid", "sim.dice", "sim.actions", "sim.events", "sim.battle", "sim.search",
                     "sim.messages", "sim.stats")),
    ("rules", ("sim.rules", "sim.victory")),
    ("agents", ("agents",)),
    ("model", ("sim.scenario", "sim.generate", "sim.model", "sim.runner", "sim.play_cases")),
    ("wings", ("sim.experiments", "sim.tournaments", "sim.view", "sim.env")),
    ("cli", ("sim.cli", "sim.console")),  # sim.console: the console script, beside sim.cli so it loads first
)

def modules() -> dict[str, Path]:
    out = {}
    for top in ("sim", "agents"):
        for p in sorted((ROOT / top).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skip.update(id(x) for x in ast.walk(inner))
    return skip


@functools.lru_cache(maxsize=1)
def import_graph() -> nx.DiGraph:
    """Directed graph: module -> project module it imports."""
    mods = modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    g = nx.DiGraph()
    for mod, path in mods.items():
        g.add_node(mod)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for name in names:
                target = owner(name)
                if target is not None and target != mod:
                    g.add_edge(mod, target)
    return g


def layer_of(mod: str) -> int:
    best, rank = -1, None
    for i, (_name, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{mod} is in no layer of LAYERS: add it where it belongs"
    return rank


def test_the_graph_is_read_from_the_source():
    g = import_graph()
    assert g.number_of_nodes() > 80 and g.number_of_edges() > 200
    assert g.has_edge("sim.rules.asl.play", "sim.battle")                    # module-level import
    assert g.has_edge("sim.experiments.report", "sim.experiments.store")      # function-level import
    assert g.has_edge("sim.rules.hummel_quest.play", "sim.rules.hummel_quest.odds")   # from package import module


def test_no_circles():
    g = import_graph()
    circles = sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)
    assert not circles, f"import circles: {circles}"


def test_imports_run_down_the_layers():
    g = import_graph()
    up = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
          for a, b in sorted(g.edges) if layer_of(b) > layer_of(a)]
    assert not up, "imports against the flow:\n" + "\n".join(up)


def test_rules_import_nothing_from_agents_or_the_wings_and_the_core_no_wing():
    g = import_graph()
    above_rules = ("agents", "sim.experiments", "sim.tournaments", "sim.view", "sim.cli", "sim.env", "sim.model")
    bad = [(a, b) for a, b in g.edges if a.startswith("sim.rules") and b.startswith(above_rules)]
    assert not bad, f"rules importing above themselves: {bad}"
    wings = ("sim.experiments", "sim.tournaments", "sim.view", "sim.cli", "sim.env")
    core = LAYERS[0][1]
    bad = [(a, b) for a, b in g.edges if a in core and b.startswith(wings)]
    assert not bad, f"engine core importing a wing: {bad}"
