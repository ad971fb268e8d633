"""Numeric options are checked while the arguments are parsed: a bad value is refused (exit 2, one line naming the
option and what was expected) before any file is read or written."""
from __future__ import annotations

import argparse

import pytest

from sim.cli import compare
from sim.cli.argtypes import above, at_least
from sim.cli.main import main


def test_at_least_and_above():
    assert at_least(1)("3") == 3 and at_least(0.0, float)("0") == 0.0 and above(0)("0.5") == 0.5
    for parse, text in ((at_least(1), "0"), (at_least(1), "-1"), (at_least(1), "1.5"), (at_least(1), "x"),
                        (at_least(0.0, float), "nan"), (at_least(0.0, float), "-0.1"), (above(0), "0"),
                        (above(0), "inf"), (above(0), "nan"), (above(0), "soon")):
        with pytest.raises(argparse.ArgumentTypeError, match="expected"):
            parse(text)


@pytest.mark.parametrize("argv", [
    ["batch", "{exp}", "--out", "{out}", "--workers", "0"],
    ["batch", "{exp}", "--out", "{out}", "--workers", "-1"],
    ["batch", "{exp}", "--out", "{out}", "--dask-local", "0"],
    ["batch", "{exp}", "--out", "{out}", "--watchdog", "0"],
    ["batch", "{exp}", "--out", "{out}", "--chunk-seconds", "-2"],
])
def test_batch_refuses_a_bad_number_before_it_writes_anything(tmp_path, capsys, argv):
    exp = tmp_path / "e.yaml"
    exp.write_text("name: e\nscenario: default\nreplications: 2\n")
    out = tmp_path / "res"
    with pytest.raises(SystemExit) as ex:
        main([a.format(exp=exp, out=out) for a in argv])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {argv[-2]}: expected" in err and "Traceback" not in err
    assert not out.exists()  # nothing written: no manifest, no parts


@pytest.mark.parametrize("parser, argv, option", [
    (compare.build_parser, ["c.yaml", "--workers", "0"], "--workers"),
    (compare.build_parser, ["c.yaml", "--resamples", "-5"], "--resamples"),
])
def test_other_commands_refuse_bad_numbers(capsys, parser, argv, option):
    with pytest.raises(SystemExit) as ex:
        parser().parse_args(argv)
    assert ex.value.code == 2 and f"argument {option}: expected" in capsys.readouterr().err


def test_tournament_and_match_refuse_bad_numbers(capsys):
    for argv, option in ((["match", "greedy", "random", "--max-games", "1"], "--max-games"),
                         (["match", "greedy", "random", "--decision-timeout", "-1"], "--decision-timeout"),
                         (["oracle", "default", "--simulate", "-1"], "--simulate"),
                         (["tournament", "t.yaml", "--out", "o", "--workers", "0"], "--workers")):
        with pytest.raises(SystemExit) as ex:
            main(argv)
        assert ex.value.code == 2 and f"argument {option}: expected" in capsys.readouterr().err, argv
