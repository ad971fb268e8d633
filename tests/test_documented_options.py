"""The README and docs/*.md match the program: every ``tanksim <subcommand> ... --option`` they show exists in that
subcommand's parser, the files ``run --out`` writes are all named, the ``sim.env`` snippet renders RGB.

The uses are read from fenced code blocks (line by line) and from inline code spans; a shell comment (`` # ``),
a pipe or ``&&`` ends a command.  A subcommand's parser is taken from the module that implements it (the first
``ArgumentParser.parse_args`` call its ``main`` makes), so the test follows the real command line.
"""
from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

cli = importlib.import_module("sim.cli.main")  # `sim.cli.main` the attribute is the function

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Commands of the ``./tanksim`` launcher script itself (not of the Python command line).
LAUNCHER = {"test"}
_FENCE = re.compile(r"^\s*```")
_SPAN = re.compile(r"`([^`\n]+)`")
_USE = re.compile(r"(?<![\w-])tanksim\s+([a-z][\w-]*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]*)")


def _segments(text: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of every code line in a fence and every inline code span elsewhere."""
    out: list[tuple[int, str]] = []
    fenced, held = False, ""
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced and line.rstrip().endswith("\\"):  # a shell continuation line
            held += line.rstrip()[:-1] + " "
            continue
        out.extend([(n, held + line)] if fenced else [(n, m) for m in _SPAN.findall(line)])
        held = ""
    return out


def documented_uses() -> list[tuple[str, str, str]]:
    """``(where, subcommand, --option)`` for every option shown after ``tanksim <subcommand>`` in the docs."""
    uses = []
    for doc in DOCS:
        for n, seg in _segments(doc.read_text(encoding="utf-8")):
            seg = re.split(r"\s#|\||&&|;", seg)[0] if "tanksim" in seg else seg
            hits = list(_USE.finditer(seg))
            for i, m in enumerate(hits):
                end = hits[i + 1].start() if i + 1 < len(hits) else len(seg)
                for flag in _FLAG.findall(seg[m.end():end]):
                    uses.append((f"{doc.relative_to(ROOT)}:{n}", m.group(1), flag))
    return uses


class _Caught(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def subcommand_parser(name: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser ``tanksim <name>`` parses its arguments with."""
    if name not in cli.EXTERNAL:
        sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices[name]
    mod, _, fn = cli.EXTERNAL[name].partition(":")

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Caught(self)

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", catch)
        m.setattr(argparse.ArgumentParser, "parse_known_args", catch)
        try:
            getattr(importlib.import_module(mod), fn)([])
        except _Caught as caught:
            return caught.parser
    raise AssertionError(f"tanksim {name}: its main never parsed its arguments")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def test_the_docs_show_tanksim_options_at_all():
    uses = documented_uses()
    assert len(uses) > 50 and {"batch", "run", "tournament", "validate"} <= {s for _, s, _ in uses}
    assert ("README.md", "batch", "--tables") in {(w.split(":")[0], s, f) for w, s, f in uses}


def test_every_documented_option_exists_in_its_subcommand(monkeypatch):
    parsers: dict[str, argparse.ArgumentParser] = {}
    missing = []
    known = set(cli.EXTERNAL) | {"run", "odds", "cases", "validate"}
    for where, sub, flag in documented_uses():
        if sub in LAUNCHER:
            continue
        if sub not in known:
            missing.append(f"{where}: tanksim {sub}: no such subcommand")
            continue
        if sub not in parsers:
            parsers[sub] = subcommand_parser(sub, monkeypatch)
        if flag not in _options(parsers[sub]):
            missing.append(f"{where}: tanksim {sub} {flag}: not an option of that command")
    assert not missing, "\n".join(missing)


def test_batch_help_shows_tables(capsys):
    with pytest.raises(SystemExit):
        cli.main(["batch", "--help"])
    assert "--tables" in capsys.readouterr().out


def _readme_row(command: str) -> str:
    """The README's command-table row that starts with ``| `tanksim <command>``."""
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            if line.startswith(f"| `tanksim {command}")]
    assert len(rows) == 1, rows
    return rows[0]


def test_the_readme_names_every_file_run_out_writes(tmp_path):
    from sim.cli.main import main

    assert main(["run", "skirmish_2v2", "--seed", "1", "--out", str(tmp_path / "o")]) == 0
    written = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert {"battle.parquet", "final_state.json", "parts.jsonl"} <= set(written)
    row = _readme_row("run [SCENARIO]")
    assert [n for n in written if f"`{n}`" not in row] == []


def test_the_readme_environment_snippet_renders_rgb():
    """The README's ``sim.env`` block, run as written: its ``render()`` is an ``(H, W, 3)`` uint8 array."""
    pytest.importorskip("pettingzoo")
    import numpy as np

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "from sim import env" in b)
    scope: dict[str, object] = {}
    exec(compile(block, "README.md (sim.env block)", "exec"), scope)
    frame = scope["frame"]
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


def _bare_options(synopsis: str) -> list[str]:
    """The options a synopsis shows outside ``[...]`` (so as required), in order."""
    depth, bare = 0, []
    for ch in synopsis:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        bare.append(ch if depth == 0 and ch not in "[]" else " ")
    return re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", "".join(bare))


def test_generate_synopsis_shows_optional_options_as_optional(monkeypatch):
    """``tanksim generate``: only KIND is required, so the usage line and the README's synopsis bracket every
    option, and the README's synopsis shows every option it names in brackets (each of them exists)."""
    p = subcommand_parser("generate", monkeypatch)
    options = [a for a in p._actions if a.option_strings and a.dest != "help"]
    assert options and not [a.dest for a in options if a.required]
    usage = " ".join(p.format_usage().split())
    assert "KIND" in usage and _bare_options(usage.removeprefix("usage: tanksim generate")) == []
    for a in options:
        assert f"[{a.option_strings[0]} {a.metavar}]" in usage, a.dest
        assert a.metavar and a.metavar.upper() == a.metavar, a.dest  # a placeholder, not the dest echoed
    synopsis = re.search(r"`(tanksim generate [^`]+)`", _readme_row("generate KIND")).group(1)
    assert synopsis.split()[2] == "KIND" and _bare_options(synopsis) == []
    shown = re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", synopsis)
    known = {s for a in options for s in a.option_strings}
    assert len(shown) >= 5 and set(shown) <= known


def test_the_readme_names_every_map_shape_the_schema_accepts():
    """Every value of ``map.shape`` in the scenario schema is listed in the README's map example (``shape:
    rectangle  # rectangle | ...``); the list is read from the schema, so a new shape must be documented."""
    import typing

    from sim.scenario import MapSpec

    shapes = typing.get_args(MapSpec.model_fields["shape"].annotation)
    assert {"rectangle", "layout", "cells"} <= set(shapes)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    comment = next(line for line in text.splitlines() if line.strip().startswith("shape: rectangle"))
    listed = set(re.findall(r"[a-z_]+", comment.split("#", 1)[1]))
    missing = [s for s in shapes if s not in listed]
    assert not missing, f"README map example: shapes {missing} not listed in {comment.strip()!r}"
