"""The hostile-file fuzzer shared by ``tests/test_fuzz.py`` (hypothesis, a few hundred files) and
``benchmarks/fuzz.py`` (2,000+ files, each in a confined worker process).

:func:`mutate` derives a file from one of the bundled files (``scenarios/*.yaml``: scenarios, the doctrine
experiment, the tournament) by one to three mutations, each drawn through a :class:`Chooser` (hypothesis draws in the
test, a seeded ``random.Random`` in the benchmark, so both run the same fuzzer).  Mutations: huge, negative and
non-finite numbers, 5,000-digit integers, wrong types, wrong arity of hex pairs, huge shapes (boards, terrain rects and
discs, off-map hex lists of 20,000), duplicated list elements (tanks, levels, entrants), dropped and unknown keys, deep
nesting (60 and 1,000 levels), alias bombs inside ``policy.params``, recursive aliases, hostile policy names
(``this:x``, ``antigravity:X``, ``agents.isolation:RemotePolicy`` with a command, ``os:system``), YAML tags, binary
junk, NUL and unicode text, truncation.

:func:`check_file` loads one file the way ``tanksim validate`` does and, for an accepted scenario, builds its
battle and answers a few decisions (every field a battle reads must have been validated).  It classifies the file:
``accepted``, ``error`` (a clean error: every line names the file, then a field path or a line), ``unnamed`` (an
error that does not), ``traceback`` (any other exception).
"""
from __future__ import annotations

import copy
import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

ROOT = Path(__file__).resolve().parents[1]
SEED_FILES = sorted((ROOT / "scenarios").glob("*.yaml"))


class Chooser(Protocol):
    """Where the fuzzer's choices come from."""

    def pick(self, options: Sequence[Any]) -> Any: ...

    def number(self, low: int, high: int) -> int: ...


class RandomChooser:
    """Choices from a seeded ``random.Random`` (the benchmark)."""

    def __init__(self, seed: int):
        import random

        self.rng = random.Random(seed)

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


class DataChooser:
    """Choices drawn from hypothesis ``st.data()`` (the test; shrinks a failure to a small file)."""

    def __init__(self, data: Any):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.data.draw(self.st.integers(0, len(options) - 1))]

    def number(self, low: int, high: int) -> int:
        return self.data.draw(self.st.integers(low, high))


# --- mutations -------------------------------------------------------------------------------------------------------
HUGE_NUMBERS = [10**6, 10**9, 10**18, -(10**18), 10**30, 2**63, -1, 0, 10**39]
ODD_VALUES: list[Any] = [None, True, "", "x" * 100_000, "\u202e\u0645\u0631\u062d\u0628\u0627 \U0001f4a5", [], {},
                         [[[[]]]], {"a": {"b": {}}}, 1.5, -0.0, 3.0, "12", "0x1F", "1e309", "nan", [1, 2, 3],
                         float("inf"), float("-inf"), float("nan"), 1e308, "../../etc/passwd", "\t\n",
                         "1e9999999", "9" * 5000, "1/0", "-1e-9999999"]
POLICY_NAMES: list[Any] = [
    "this:x", "antigravity:X", "os:system", "subprocess:Popen", "agents.isolation:RemotePolicy", "agents.remote:main",
    "no_such_mod_xyz:Bot", "a.b.c.d:E", ":", "x:", ":Y", "hold:extra", "1bad:Name", "sim.scenario:Scenario",
    "agents.policies:Doctrine", "agents.policies.base:Policy", "agents.policies:Hold", "collections:OrderedDict",
    {"name": "agents.isolation:RemotePolicy", "params": {"entrant": {"command": ["/bin/sh", "-c", "id > PWNED"]}}},
    {"name": "advance", "params": {"command": ["/bin/sh", "-c", "id > PWNED"]}},
    {"name": "agents.policies:Hold", "params": {"entrant": {"name": "x", "command": ["true"]}}},
    {"name": "advance", "params": {"min_odds": float("inf")}}, {"name": "advance", "params": {"candidates": 10**30}},
    {"name": "advance", "params": {"candidates": float("nan")}}, {"name": "greedy", "params": {"risk_weight": "lots"}},
    {"name": "advance", "params": {"min_odds": "1e9999999"}}, {"name": "flank", "params": {"flank_bias": "9" * 5000}},
]
BAD_HEXES: list[Any] = [[73, 20, 1], [1], [], [10**6, 10**6], [-(10**4), 3], ["a", "b"], [1.5, 2], [None, 1],
                        [True, False], {"q": 1, "r": 2}, "3,4", [[1, 2]], [10**30, 0]]
HUGE_SHAPES: list[tuple[str, Any]] = [
    ("width", 10**4), ("height", 10**6), ("radius", 10**6), ("width", 400), ("width", 200), ("height", 200),
    ("terrain", [{"tile": "woods", "rect": {"q": [0, 10**4], "r": [0, 10**4]}}]),
    ("terrain", [{"tile": "woods", "center": [3, 3], "radius": 10**6}]),
    ("terrain", [{"tile": "woods", "center": [3, 3], "radius": 19_999}] * 60),
    ("terrain", [{"tile": "woods", "rect": {"q": [-10**4, 10**4], "r": [-10**4, 10**4]}}] * 50),
    ("terrain", [{"tile": "woods", "hexes": [[1000 + i, i % 500] for i in range(20_000)]}]),
    ("terrain", [{"tile": "woods", "hexes": [[i % 9000, -(i // 9000)] for i in range(20_000)]}]),
    ("terrain", [{"tile": "woods", "hexes": [[1, 1]] * 60_000}]),
    ("features", [{"hex": [73, 20, 1]}]), ("features", [{"hex": [1, 1], "structure": {"dur": 10**9, "dt": 1}}]),
    ("features", [{"hex": [i % 25, i // 25]} for i in range(12_000)]),
]
TAGS = ["!!binary /w==", "!!python/object/apply:os.system ['id']", "!!set {a, b}", "!!omap [{a: 1}]",
        "!!timestamp 2024-13-45", "!!float 1e999", "!!int 0x" + "F" * 50, "!custom x", "2024-13-45",
        "!!python/name:os.system", "!!str"]


def _paths(node: Any, prefix: tuple = (), depth: int = 0) -> list[tuple]:
    """Every path into a parsed YAML tree (mapping keys and list indexes)."""
    out = [prefix]
    if depth > 12:
        return out
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k), depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node[:40]):
            out += _paths(v, (*prefix, i), depth + 1)
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = _get(root, path[:-1])
    parent[path[-1]] = value
    return root


def _find(root: Any, key: str) -> list[tuple]:
    return [p for p in _paths(root) if p and p[-1] == key]


def _structural(ch: Chooser, root: Any) -> tuple[Any, str]:
    """One mutation of the parsed tree; returns the new root and a short description."""
    paths = _paths(root)
    kind = ch.pick(["number", "odd", "drop", "unknown", "dup", "hex", "shape", "policy", "nest", "swap_list",
                    "number", "hex", "policy", "shape"])
    if kind == "number":
        nums = [p for p in paths if isinstance(_get(root, p), int | float) and not isinstance(_get(root, p), bool)]
        target = ch.pick(nums or paths)
        return _set(root, target, ch.pick(HUGE_NUMBERS + [float("inf"), float("nan"), -1.5])), f"number {target}"
    if kind == "odd":
        target = ch.pick(paths)
        return _set(root, target, copy.deepcopy(ch.pick(ODD_VALUES))), f"odd {target}"
    if kind == "drop":
        keyed = [p for p in paths if p and isinstance(p[-1], str)]
        if keyed:
            target = ch.pick(keyed)
            del _get(root, target[:-1])[target[-1]]
            return root, f"drop {target}"
        return root, "drop none"
    if kind == "unknown":
        maps = [p for p in paths if isinstance(_get(root, p), dict)]
        target = ch.pick(maps or [()])
        node = _get(root, target)
        if isinstance(node, dict):
            node[ch.pick(["turn_limt", "source", "command", "entrant", "x" * 5000, "\u00e9\u00e8", "controller"])] = 1
        return root, f"unknown key at {target}"
    if kind == "dup":
        lists = [p for p in paths if isinstance(_get(root, p), list) and _get(root, p)]
        if lists:
            target = ch.pick(lists)
            node = _get(root, target)
            node.extend(copy.deepcopy(node[0]) for _ in range(ch.pick([1, 5, 150, 600, 2500])))
            return root, f"dup {target}"
        return root, "dup none"
    if kind == "hex":
        hexes = _find(root, "hex") + _find(root, "center") + _find(root, "hexes")
        if hexes:
            target = ch.pick(hexes)
            value = copy.deepcopy(ch.pick(BAD_HEXES))
            if target[-1] == "hexes":
                value = [value]
            return _set(root, target, value), f"hex {target}"
        return root, "hex none"
    if kind == "shape":
        maps = _find(root, "map") + _find(root, "inline")
        key, value = ch.pick(HUGE_SHAPES)
        if maps:
            node = _get(root, ch.pick(maps))
            if isinstance(node, dict):
                node = node.get("map", node) if "sides" in node else node
                if isinstance(node, dict):
                    node[key] = copy.deepcopy(value)
                    if key == "radius":
                        node["shape"] = "hexagon"
        elif isinstance(root, dict) and "factors" in root:
            root.setdefault("deployment", {})[ch.pick(["Soviets", "attacker", "0", "nobody"])] = (
                copy.deepcopy(value[0]) if isinstance(value, list) and value and "tile" in value[0] else
                {"center": [0, 0], "radius": 10**6})
        return root, f"shape {key}"
    if kind == "policy":
        pols = _find(root, "policy") + _find(root, "levels")
        if pols:
            target = ch.pick(pols)
            value = copy.deepcopy(ch.pick(POLICY_NAMES))
            if target[-1] == "levels":
                value = ["hold", value]
            elif target[-2:-1] and isinstance(target[-2], int) and "entrants" in target:
                value = value["name"] if isinstance(value, dict) else value
            return _set(root, target, value), f"policy {target}"
        return root, "policy none"
    if kind == "nest":
        target = ch.pick(paths)
        value: Any = _get(root, target)
        for _ in range(ch.pick([5, 49, 60])):
            value = [value]
        return _set(root, target, value), f"nest {target}"
    lists = [p for p in paths if isinstance(_get(root, p), list) and len(_get(root, p)) > 1]
    if lists:
        target = ch.pick(lists)
        node = _get(root, target)
        node.reverse()
        return root, f"reverse {target}"
    return root, "none"


def _textual(ch: Chooser, text: str) -> tuple[str, str]:
    """One mutation of the YAML text."""
    lines = text.splitlines()
    at = ch.number(0, max(0, len(lines) - 1))
    kind = ch.pick(["bigint", "deep", "bomb", "cycle", "tag", "junk", "truncate", "nul", "unicode", "indent",
                    "bigint", "bomb"])
    if kind == "bigint":
        digits = "9" * ch.pick([41, 4301, 5000, 100_000])
        sub = re.sub(r"(?<![\w.\-])(\d+)(?![\w.])", digits, lines[at], count=1) if lines else digits
        lines[at:at + 1] = [sub if sub != lines[at] else lines[at] + f"  # {digits[:3]}"]
        if sub == (lines[at] if lines else ""):
            lines.append(f"turn_limit: {digits}")
        return "\n".join(lines), "bigint"
    if kind == "deep":
        n = ch.pick([60, 1000, 5000])
        return "\n".join(lines) + "\nextra: " + "[" * n + "]" * n + "\n", f"deep {n}"
    if kind == "bomb":
        width = ch.pick([10, 20])
        levels = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
        for i in range(1, 9):
            levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
        bomb = "bomb_anchors:\n" + "\n".join("  " + x for x in levels) + "\n"
        out = bomb + text
        out = re.sub(r"policy: (\w+)", r"policy: {name: \1, params: {min_odds: 0.1, bomb: *a8}}", out, count=1)
        if "*a8" not in out:
            out += "\nbomb: *a8\n"
        return out, "bomb"
    if kind == "cycle":
        return "\n".join(lines) + "\nloop: &l [1, *l]\nloop2: &m {a: *m}\n", "cycle"
    if kind == "tag":
        tag = ch.pick(TAGS)
        sub = re.sub(r":\s+(\S.*)$", f": {tag}", lines[at], count=1) if lines else ""
        lines[at:at + 1] = [sub if sub else f"x: {tag}"]
        return "\n".join(lines), f"tag {tag}"
    if kind == "truncate":
        return text[: ch.number(0, len(text))], "truncate"
    if kind == "nul":
        return text[:at] + ch.pick(["\x00", "\x07", "\ufffe", "\x1b[2J", "\ud800"]) + text[at:], "control char"
    if kind == "unicode":
        word = ch.pick(["\u202eevil", "\U0001f4a5" * 500, "\u0000", "Z\u0336\u0336\u0336", "\ufeff"])
        lines[at:at + 1] = [lines[at] + " " + word if lines else word]
        return "\n".join(lines), "unicode"
    if kind == "indent":
        lines[at:at + 1] = ["   " + (lines[at] if lines else "x")]
        return "\n".join(lines), "indent"
    return text, "none"


def mutate(ch: Chooser) -> tuple[str, bytes, str]:
    """Pick a seed file and mutate it: returns ``(seed file name, file bytes, description)``."""
    seed = ch.pick(SEED_FILES)
    text = seed.read_text(encoding="utf-8")
    done = []
    root = yaml.safe_load(text)
    for _ in range(ch.number(1, 2)):
        root, what = _structural(ch, root)
        done.append(what)
    try:
        text = yaml.safe_dump(root, sort_keys=False, allow_unicode=True, width=200)
    except (yaml.YAMLError, ValueError, RecursionError):
        text = seed.read_text(encoding="utf-8")
    if ch.number(0, 2) == 0:
        text, what = _textual(ch, text)
        done.append(what)
    raw = text.encode("utf-8", "surrogatepass")
    if ch.number(0, 25) == 0:
        at = ch.number(0, len(raw))
        raw = raw[:at] + bytes(ch.number(0, 255) for _ in range(ch.number(1, 16))) + raw[at:]
        done.append("binary junk")
    return seed.name, raw, "; ".join(done)


# --- checking --------------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """How one file fared: ``status`` (``accepted`` / ``error`` / ``unnamed`` / ``traceback``), ``cpu_s`` spent,
    ``message`` (the first lines of the error or the traceback)."""

    status: str
    cpu_s: float
    message: str = ""


_WHERE = re.compile(r"^(line \d+, column \d+|\(file\)|\(top level\)|[^\s:][^:]{0,400})(: |$)")


def clean_lines(lines: Sequence[str], src: str) -> str:
    """``""`` when every line names ``src`` and then a field path or a line; else the first offending line."""
    for line in lines:
        if not line.startswith(src + ": ") or len(line) > 1200:
            return line[:300]
        if not _WHERE.match(line[len(src) + 2:]):
            return line[:300]
    return ""


def kind_of(data: Any) -> str:
    if isinstance(data, dict) and "entrants" in data:
        return "tournament"
    if isinstance(data, dict) and ("factors" in data or ("scenario" in data and "replications" in data)):
        return "experiment"
    return "scenario"


@functools.cache
def _seed_kind(seed_name: str) -> str:
    return kind_of(yaml.safe_load((ROOT / "scenarios" / seed_name).read_text(encoding="utf-8")))


def check_file(path: Path, seed_name: str, decisions: int = 4) -> Outcome:
    """Load ``path`` as ``tanksim validate`` would (its kind from its seed file) and, for an accepted scenario,
    build the battle and answer ``decisions`` decisions.  Never raises (see the module docstring)."""
    from sim.experiments.design import load_experiment
    from sim.scenario import load_scenario
    from sim.tournaments.tournament import load_tournament

    src = str(path)
    seed_kind = _seed_kind(seed_name)
    t0 = time.process_time()
    loaded: Any = None
    try:
        if seed_kind == "experiment":
            load_experiment(path)
        elif seed_kind == "tournament":
            loaded = load_tournament(path)
        else:
            loaded = load_scenario(path)
    except (ValueError, LookupError, OSError) as exc:
        lines = getattr(exc, "errors", None) or [str(exc.args[0] if isinstance(exc, KeyError) and exc.args
                                                    else exc)]
        bad = clean_lines(lines, src)
        return Outcome("unnamed" if bad else "error", time.process_time() - t0, bad or lines[0][:300])
    except Exception as exc:  # noqa: BLE001 - anything else is a traceback the user would see
        return Outcome("traceback", time.process_time() - t0, _tail(exc))
    try:  # what the file was accepted for must work: nothing a battle reads was left unchecked
        if seed_kind == "tournament":
            from sim.tournaments.tournament import check_entrants

            check_entrants([e for e in loaded.entrants if e.isolation != "process"])  # no process is started
        elif seed_kind == "scenario":
            from agents.isolation import close_policies
            from sim.model import BattleModel

            model = BattleModel(loaded, 1, decision_timeout_s=0)
            try:
                model.advance(decisions)
            finally:
                close_policies(model)
    except Exception as exc:  # noqa: BLE001 - validate accepted it, so any failure here is a bug
        return Outcome("traceback", time.process_time() - t0, "accepted, then failed: " + _tail(exc))
    return Outcome("accepted", time.process_time() - t0)


def _tail(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])[-2000:]
