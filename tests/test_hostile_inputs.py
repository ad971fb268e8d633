"""Hostile files, second reviewer pass: a key written twice in any tanksim YAML file (scenario, experiment,
tournament, case file) is ``FILE: line L, column C: ... duplicate key 'K' (first at line M)``, not a silent
override by the last value (PyYAML's default).  Fed through the commands a user runs: ``tanksim validate``,
``tanksim batch`` and ``tanksim cases``."""
from __future__ import annotations

from pathlib import Path

import pytest

from sim.cli.main import main
from sim.scenario import ScenarioError, parse_yaml

ROOT = Path(__file__).resolve().parents[1]


def _twice(text: str, key: str, value: str) -> str:
    """``text`` with a second ``key: value`` line right after the first top-level ``key:`` line."""
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(f"{key}:"))
    return "\n".join([*lines[: i + 1], f"{key}: {value}", *lines[i + 1:]]) + "\n"


@pytest.mark.parametrize(("bundled", "key", "value"), [
    ("default.yaml", "name", "other"),
    ("doctrine_experiment.yaml", "replications", "2"),
    ("tournament.yaml", "name", "other"),
])
def test_validate_names_a_duplicate_key_of_every_file_kind(tmp_path, capsys, bundled, key, value):
    text = (ROOT / "scenarios" / bundled).read_text()
    first = 1 + next(n for n, line in enumerate(text.splitlines()) if line.startswith(f"{key}:"))
    f = tmp_path / bundled
    f.write_text(_twice(text, key, value))
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr()
    msg = (out.out + out.err).strip().splitlines()
    assert f"{f}: line {first + 1}, column 1: not valid YAML: duplicate key '{key}' (first at line {first}); " \
           f"expected each key once in a mapping" in msg, msg


def test_batch_refuses_a_duplicate_key_before_it_writes(tmp_path, capsys):
    f = tmp_path / "e.yaml"
    f.write_text("name: e\nscenario: default\nreplications: 2\nreplications: 3\n")
    assert main(["batch", str(f), "--out", str(tmp_path / "res"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{f}: line 4, column 1: not valid YAML: duplicate key 'replications' (first at line 3)" in err
    assert not (tmp_path / "res").exists()


def test_a_case_file_with_a_duplicate_key_fails(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text("ruleset: panzer_squadron\ncases:\n  - {id: a, id: b, kind: odds}\n")
    assert main(["cases", str(f)]) == 1
    out = capsys.readouterr().out
    assert "line 3, column 13: not valid YAML: duplicate key 'id' (first at line 3)" in out


@pytest.mark.parametrize(("text", "expect"), [
    ("a: {b: 1, b: 2}\n", "line 1, column 11: not valid YAML: duplicate key 'b' (first at line 1)"),
    ("yes: 1\ntrue: 2\n", "line 2, column 1: not valid YAML: duplicate key True (first at line 1)"),
    ("s:\n  - t: 1\n    t: 2\n", "line 3, column 5: not valid YAML: duplicate key 't' (first at line 2)"),
])
def test_nested_and_equal_valued_keys_are_duplicates(text, expect):
    with pytest.raises(ScenarioError) as ex:
        parse_yaml(text, "F.yaml")
    assert ex.value.errors == [f"F.yaml: {expect}; expected each key once in a mapping"]


def test_merges_and_distinct_keys_are_not_duplicates():
    assert parse_yaml("b: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n", "F") == {"b": {"x": 1, "y": 2},
                                                                           "c": {"x": 3, "y": 2}}
    assert parse_yaml("1: a\n'1': b\n", "F") == {1: "a", "1": "b"}


def test_no_bundled_yaml_file_repeats_a_key():
    for f in [*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("tests/cases/**/*.yaml"), *ROOT.glob("sim/**/*.yaml")]:
        parse_yaml(f.read_text(), str(f.relative_to(ROOT)))
