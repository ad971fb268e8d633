"""Hostile files, second reviewer pass: a key written twice in any tanksim YAML file (scenario, experiment,
tournament, case file) is ``FILE: line L, column C: ... duplicate key 'K' (first at line M)``, not a silent
override by the last value (PyYAML's default).  Fed through the commands a user runs: ``tanksim validate``,
``tanksim batch`` and ``tanksim cases``."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

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
    assert main(["cases", str(f)]) == 2  # not a case file: bad input
    out = capsys.readouterr().err
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


# --- control characters in names (a name printed raw could forge an output line or send a terminal escape) --------
def _scenario_with(tmp_path, **names):
    data = parse_yaml((ROOT / "scenarios" / "ps_square_law.yaml").read_text(), "ps")
    data["name"] = names.get("name", data["name"])
    data["sides"][0]["name"] = names.get("side", data["sides"][0]["name"])
    data["sides"][0]["tanks"][0]["label"] = names.get("label", "B1")
    data["description"] = names.get("description", "two lines\n\tand a tab")
    from sim.scenario import dump_yaml

    f = tmp_path / "s.yaml"
    f.write_text(dump_yaml(data))
    return f


@pytest.mark.parametrize(("field", "value", "path", "char", "at"), [
    ("side", "Blue\x1b[2J\x1b[31mEVIL", "sides[0].name", "'\\x1b'", 5),
    ("side", "Red\nFAKE LINE: ok", "sides[0].name", "'\\n'", 4),
    ("label", "B1\x1b]0;pwn\x07", "sides[0].tanks[0].label", "'\\x1b'", 3),
    ("name", "sq\u202eevil", "name", "'\\u202e'", 3),
    ("name", "a\u2028b", "name", "'\\u2028'", 2),
    ("description", "fine\x1b[2J", "description", "'\\x1b'", 5),
])
def test_validate_refuses_control_characters_in_names(tmp_path, capsys, field, value, path, char, at):
    f = _scenario_with(tmp_path, **{field: value})
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    what = "a text without control characters other than newlines and tabs" if field == "description" else \
        "a name without control characters"
    assert any(line.startswith(f"{f}: {path}: expected {what}; found {char} at character {at} (got ")
               for line in lines), lines
    assert "\x1b" not in out.out + out.err  # the value is echoed escaped (repr), never raw
    assert not any(line.startswith("FAKE LINE") for line in lines)


INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", *map(chr, range(0x202A, 0x202F)),
             *map(chr, range(0x2066, 0x206A))]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_validate_refuses_invisible_format_characters_in_names(tmp_path, capsys, char):
    """Zero-width and other invisible format characters (category Cf) were accepted in a name (two names that print
    alike then differ): refused as control characters are, in the scenario's, a side's, a tank's and a catalog
    vehicle's name, each with its ``FILE: field.path: ...`` line and the character escaped."""
    bidi = 0x202A <= ord(char) <= 0x202E or 0x2066 <= ord(char) <= 0x2069
    what = "a name without control characters" if bidi else \
        "a name without control or invisible format characters"
    esc = ascii(char)
    for field, path in (("name", "name"), ("side", "sides[0].name"), ("label", "sides[0].tanks[0].label")):
        f = _scenario_with(tmp_path, **{field: f"Pz{char}IV"})
        assert main(["validate", str(f)]) == 2
        err = capsys.readouterr().err
        assert f"{f}: {path}: expected {what}; found {esc} at character 3 (got 'Pz{esc[1:-1]}IV')" in err, err
        assert char not in err
    data = {"name": "v", "ruleset": {"name": "hummel_quest"},
            "map": {"shape": "rectangle", "width": 8, "height": 8, "hex_size_m": 50},
            "vehicles": {"heavy": {"base": "hq_example_heavy", "name": f"Slow{char} heavy"}},
            "sides": [{"name": "Red", "tanks": [{"vehicle": "heavy", "hex": [1, 2], "label": "A1"}]},
                      {"name": "Blue", "tanks": [{"vehicle": "hq_example_medium", "hex": [6, 0], "label": "B1"}]}]}
    f = tmp_path / "v.yaml"
    f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: vehicles.heavy.name: expected {what}; found {esc} at character 5" in err, err


def test_printable_names_and_texts_pass(tmp_path, capsys):
    f = _scenario_with(tmp_path, side="Panzer-Lehr Üß 戦車", description="line one\n\tline two")
    assert main(["validate", str(f)]) == 0


def test_a_tournament_name_with_an_escape_is_refused(tmp_path, capsys):
    text = (ROOT / "scenarios" / "tournament.yaml").read_text().replace("name: all_doctrines",
                                                                         'name: "t\\e[2J"', 1)
    f = tmp_path / "t.yaml"
    f.write_text(text)
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr()
    assert f"{f}: name: expected a name without control characters; found '\\x1b' at character 2" in out.out + out.err


def test_validate_knows_an_experiment_without_factors(tmp_path, capsys):
    """An experiment of replications only (``tanksim batch`` runs it) was validated as a scenario and refused with
    ``scenario: unknown field``; its ``scenario`` is checked as batch checks it (a device is not read)."""
    ok = tmp_path / "e.yaml"
    ok.write_text("name: e\nscenario: default\nreplications: 2\n")
    dev = tmp_path / "d.yaml"
    dev.write_text("name: e\nscenario: /dev/zero\nreplications: 2\n")
    assert main(["validate", str(ok)]) == 0
    assert capsys.readouterr().out.strip() == f"{ok}: ok (experiment)"
    assert main(["validate", str(dev)]) == 2
    out = capsys.readouterr()
    assert (f"{dev}: scenario: /dev/zero: (file): not a regular file (a device or a pipe); expected a YAML file"
            in out.out + out.err)


@pytest.mark.parametrize(("bundled", "field", "value", "what"), [
    ("ps_square_law.yaml", "name", "X\x1b[2J", "a name without control characters"),
    ("ps_square_law.yaml", "id", "evil\u202e", "a name without control characters"),
    ("asl_1941_meeting.yaml", "name", "X\x1b[2J", "a name without control characters"),
    ("asl_1941_meeting.yaml", "nationality", "German\nFAKE", "a name without control characters"),
    ("asl_1941_meeting.yaml", "notes", "ok\x1b]0;pwn\x07", "a text without control characters other than"),
    ("hq_skirmish.yaml", "name", "X\x1b[2J", "a name without control characters"),
    ("hq_skirmish.yaml", "notes", "ok\x1b[31m", "a text without control characters other than"),
])
def test_a_vehicle_record_with_control_characters_is_refused(tmp_path, capsys, bundled, field, value, what):
    """A ``vehicles:`` record is checked by its rule set's catalog model: its names and texts are echoed by
    ``tanksim catalog``, the reports and the app, so they are held to the scenario's own rule for names."""
    from sim.scenario import dump_yaml

    data = parse_yaml((ROOT / "scenarios" / bundled).read_text(), bundled)
    tank = data["sides"][0]["tanks"][0]
    record = {"base": tank["vehicle"], field: value}
    if field == "id":
        record["id"] = value
    data.setdefault("vehicles", {})["mine"] = record
    tank["vehicle"] = "mine"
    f = tmp_path / "s.yaml"
    f.write_text(dump_yaml(data))
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert f"{f}: vehicles.mine.{field}: expected {what}" in text, text
    assert "\x1b" not in text and "FAKE" not in text.replace("\\nFAKE", "")


@pytest.mark.parametrize(("make", "what"), [
    (lambda d: d / "nofile.yaml", "(file): no such file (or it cannot be reached); expected a YAML file"),
    (lambda d: d, "is a folder, expected a case YAML file"),
    (lambda d: (d / "e.yaml", (d / "e.yaml").write_text("# nothing\n"))[0],
     "(top level): expected a case file, a mapping with 'ruleset' and a list 'cases' (got an empty file)"),
    (lambda d: ROOT / "scenarios" / "default.yaml",
     "(top level): expected a case file, a mapping with 'ruleset' and a list 'cases' (it is a scenario file: run "
     "it with tanksim run)"),
])
def test_cases_refuses_a_file_that_is_not_a_case_file_as_bad_input(tmp_path, capsys, make, what):
    """``tanksim cases``: a file that is not a case file is bad input (exit 2, ``tanksim cases: FILE: ...`` on
    stderr), the other files still run; a failing case is exit 1."""
    bad = make(tmp_path)
    good = ROOT / "tests" / "cases" / "panzer_squadron.yaml"
    assert main(["cases", str(bad), str(good)]) == 2
    out = capsys.readouterr()
    assert f"tanksim cases: {bad}: {what}" in out.err, out.err
    assert " 0 failed, 1 file not read" in out.out.strip().splitlines()[-1]
    assert not out.out.strip().splitlines()[-1].startswith("0 passed")  # the good file ran


@pytest.mark.parametrize("kind", ["run", "validate", "batch", "tournament"])
def test_an_empty_file_is_called_empty(tmp_path, capsys, kind):
    f = tmp_path / "empty.yaml"
    f.write_text("")
    args = [kind, str(f)] + (["--out", str(tmp_path / "o")] if kind in ("batch", "tournament") else [])
    assert main(args) == 2
    out = capsys.readouterr()
    assert f"{f}: (top level): expected a mapping of " in out.err + out.out
    assert "fields, got an empty file" in out.err + out.out and "NoneType" not in out.err + out.out


@pytest.mark.parametrize(("args", "expect"), [
    (["run", "defualt"], "tanksim run: defualt: no such file, and no bundled scenario of that name (did you mean "
                         "'default'?)"),
    (["batch", "doctrine_experimnt", "--out", "{tmp}/o"], "(did you mean 'doctrine_experiment'?)"),
    (["catalog", "asl", "t34_m4l"], "no asl catalog vehicle 't34_m4l' (did you mean 't34_m41'?); known: "),
    (["odds", "panzr_squadron", "armour=1"], "unknown rule set 'panzr_squadron' (did you mean 'panzer_squadron'?)"),
    (["batch", "{tmp}", "--out", "{tmp}/o"], "tanksim batch: {tmp}: is a folder, expected an experiment YAML file"),
    (["tournament", "{tmp}", "--out", "{tmp}/o"], "{tmp}: is a folder, expected a tournament YAML file"),
])
def test_a_misspelt_name_gets_a_did_you_mean_and_a_folder_is_called_one(tmp_path, capsys, args, expect):
    args = [a.format(tmp=tmp_path) for a in args]
    assert main(args) == 2
    out = capsys.readouterr()
    assert expect.format(tmp=tmp_path) in out.err + out.out, out.err


def test_a_misspelt_vehicle_in_a_scenario_gets_a_did_you_mean(tmp_path, capsys):
    for bundled, wrong, right in (("default.yaml", "t34_58", "t34_85"), ("asl_1941_meeting.yaml", "t34_m14", "t34_m41"),
                                  ("hq_skirmish.yaml", "hq_example_mediun", "hq_example_medium")):
        data = parse_yaml((ROOT / "scenarios" / bundled).read_text(), bundled)
        data["sides"][0]["tanks"][0]["vehicle"] = wrong
        from sim.scenario import dump_yaml

        f = tmp_path / bundled
        f.write_text(dump_yaml(data))
        assert main(["validate", str(f)]) == 2
        out = capsys.readouterr()
        assert f"{f}: sides[0].tanks[0].vehicle: unknown " in out.out + out.err
        assert f"vehicle {wrong!r} (did you mean {right!r}?); known: " in out.out + out.err, out.out + out.err


@pytest.mark.parametrize("text", [
    'name: k\nruleset: {name: panzer_squadron, options: {"x\\e[2J\\rFORGED": 1}}\n',
    '"top\\e[2J\\u202e": 1\n',
    'name: k\nvehicles: {"slow\\e[2Jpoke": {base: t34_85}}\n',
])
def test_a_key_name_with_control_characters_is_echoed_escaped(tmp_path, capsys, text):
    """A message echoes a bad key's name (an unknown field, a path): its control characters are written as escapes,
    so a message can neither send a terminal escape nor forge a line (``ScenarioError`` lines,
    :func:`sim.messages.escaped_line`)."""
    f = tmp_path / "k.yaml"
    f.write_text(text)
    assert main(["validate", str(f)]) == 2
    out = capsys.readouterr()
    said = out.out + out.err
    assert "\\x1b[2J" in said, said
    assert "\x1b" not in said and "\r" not in said and "\u202e" not in said
    assert all(line.startswith(f"{f}: ") for line in said.strip().splitlines()), said
