"""Hostile command lines (issue 11's reviewer pass, second round): every option a user types is refused while the
arguments are parsed, with ``tanksim CMD: error: argument --OPT: what was expected`` (exit 2), before a battle is
played or a file is written.  Kinds covered: output paths (a folder where a file is written, a missing or non-folder
parent, an unsupported picture or animation format, a file where a results folder goes), seeds past the files' 63
bits, worker counts past a tournament file's 1024, counts with no end (``--simulate``, ``--max-games``), timeouts
of ``inf`` and ports out of range.  Each case goes through :func:`sim.cli.main.main`, the path ``./tanksim`` takes."""
from __future__ import annotations

import argparse

import pytest

from sim.cli.main import main
from sim.messages import between, output_file, output_folder, seed, workers

BIG = "18446744073709551616"  # 2**64


@pytest.fixture()
def places(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x\n")
    return tmp_path


CASES = [
    # (argv, option, the expected text after "argument OPTION: ")
    (["run", "--plot", "{t}/folder"], "--plot", "{t}/folder: is a folder; expected a file to write"),
    (["run", "--plot", "{t}/nope/b.png"], "--plot",
     "{t}/nope/b.png: {t}/nope: no such folder; expected a file in an existing folder"),
    (["run", "--plot", "{t}/file/b.png"], "--plot",
     "{t}/file/b.png: {t}/file: is not a folder; expected a file in an existing folder"),
    (["run", "--plot", "{t}/b.weird"], "--plot", "{t}/b.weird: expected a file name ending in .png, .svg, .pdf"),
    (["run", "--out", "{t}/file"], "--out", "{t}/file: is a file; expected a folder (created if missing)"),
    (["run", "--out", "{t}/file/sub"], "--out", "{t}/file: is a file; expected a folder (created if missing)"),
    (["run", "--seed", BIG], "--seed", f"expected an integer >= 0 and <= 9223372036854775807, got '{BIG}'"),
    (["generate", "meeting", "-o", "{t}/folder"], "-o/--out", "{t}/folder: is a folder; expected a file to write"),
    (["generate", "meeting", "--seed", "-1"], "--seed", "expected an integer >= 0 and <= 9223372036854775807"),
    (["batch", "{exp}", "--out", "{t}/file"], "--out", "{t}/file: is a file; expected a folder"),
    (["batch", "{exp}", "--out", "{t}/res", "--workers", "100000"], "--workers",
     "expected an integer >= 1 and <= 1024, got '100000'"),
    (["batch", "{exp}", "--out", "{t}/res", "--dask-local", "5000"], "--dask-local",
     "expected an integer >= 1 and <= 1024"),
    (["tournament", "{exp}", "--out", "{t}/file"], "--out", "{t}/file: is a file; expected a folder"),
    (["tournament", "{exp}", "--out", "{t}/res", "--workers", "2000"], "--workers", "expected an integer >= 1"),
    (["compare-rulesets", "ruleset_comparison", "--out", "{t}/file"], "--out", "{t}/file: is a file"),
    (["match", "hold", "advance", "--scenario", "default", "--out", "{t}/file"], "--out", "{t}/file: is a file"),
    (["match", "hold", "advance", "--scenario", "default", "--max-games", "9" * 23], "--max-games",
     "expected an integer >= 2 and <= 100000"),
    (["match", "hold", "advance", "--scenario", "default", "--seed", BIG], "--seed",
     "expected an integer >= -9223372036854775808 and <= 9223372036854775807"),
    (["match", "hold", "advance", "--scenario", "default", "--decision-timeout", "inf"], "--decision-timeout",
     "expected a number >= 0 and <= 86400, got 'inf'"),
    (["match", "hold", "advance", "--scenario", "default", "--battle-timeout", "nan"], "--battle-timeout",
     "expected a number >= 0 and <= 604800, got 'nan'"),
    (["oracle", "ps_square_law", "--simulate", "10000000000000"], "--simulate",
     "expected an integer >= 0 and <= 100000"),
    (["oracle", "ps_square_law", "--seed", BIG], "--seed", "expected an integer >= 0"),
    (["report", "{t}/folder", "--plot", "{t}/folder"], "--plot", "{t}/folder: is a folder; expected a file to write"),
    (["replay", "{t}/folder", "--out", "{t}/folder"], "--out", "{t}/folder: is a folder; expected a file to write"),
    (["replay", "{t}/folder", "--out", "{t}/nope/r.gif"], "--out", "{t}/nope: no such folder"),
    (["app", "--port", "999999"], "--port", "expected an integer >= 0 and <= 65535, got '999999'"),
    (["app", "--port", "-1"], "--port", "expected an integer >= 0 and <= 65535, got '-1'"),
]


@pytest.mark.parametrize(("argv", "option", "expect"), CASES, ids=[" ".join(c[0][:2]) + " " + c[1] for c in CASES])
def test_a_hostile_option_is_refused_while_parsing(places, capsys, argv, option, expect):
    exp = places / "e.yaml"
    exp.write_text("name: e\nscenario: default\nreplications: 2\n")
    before = sorted(p.name for p in places.rglob("*"))
    with pytest.raises(SystemExit) as ex:
        main([a.format(t=places, exp=exp) for a in argv])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"tanksim {argv[0]}: error: argument {option}: "), err
    assert expect.format(t=places) in line, err
    assert "Traceback" not in err
    assert sorted(p.name for p in places.rglob("*")) == before  # nothing written: no picture, no results folder


def test_the_argument_types_accept_what_the_files_accept(tmp_path):
    assert seed("0") == 0 and seed(str(2**63 - 1)) == 2**63 - 1
    assert workers("1") == 1 and workers("1024") == 1024
    assert between(0.0, 86_400.0, float)("0") == 0.0 and between(0, 65535)("8765") == 8765
    png = tmp_path / "b.PNG"
    assert output_file((".png",))(str(png)) == str(png)
    assert output_file()("-") == "-" and output_file()(str(tmp_path / "s.yaml")) == str(tmp_path / "s.yaml")
    assert output_folder(str(tmp_path / "new" / "deeper")) == str(tmp_path / "new" / "deeper")
    assert output_folder(str(tmp_path)) == str(tmp_path)
    for parse, text in ((seed, "-1"), (seed, str(2**63)), (seed, "1e3"), (workers, "0"), (workers, "x" * 5000),
                        (output_file(), ""), (output_folder, "a\0b")):
        with pytest.raises(argparse.ArgumentTypeError) as ex:
            parse(text)
        assert len(str(ex.value)) < 120  # a 5,000-character value is cut, never echoed whole


@pytest.mark.parametrize("argv", [
    ["run", "ps_square_law", "--policy", "1={long}"],
    ["odds", "panzer_squadron", "penetration={long}"],
    ["match", "hold", "advance", "--scenario", "ps_square_law", "--sprt", "{long}"],
    ["report", "{long}"],
    ["validate", "{long}"],
])
def test_an_argument_of_100000_characters_is_refused_unechoed(capsys, argv):
    long = "a" * 100_000
    assert main([a.format(long=long) for a in argv]) == 2
    err = capsys.readouterr().err
    n, arg = next((i, a.format(long=long)) for i, a in enumerate(argv, 1) if "{long}" in a)
    assert err.startswith(f"tanksim: argument {n} ('"), err
    assert err.rstrip().endswith(f"): {len(arg):,} characters; expected at most 4,096 (a path, a name or a "
                                 f"NAME:param=value list)"), err
    assert len(err) < 300


def test_match_scores_a_pair_whose_games_come_back_one_by_one(tmp_path, capsys, monkeypatch):
    """A game past the battle watchdog, or one whose worker died, is yielded by ``run_chunks`` on its own and the
    pair's other game later (:func:`sim.tournaments.tournament.run_chunks`); ``tanksim match`` took every yield for
    a whole pair and died with ``ValueError: not enough values to unpack``.  Here the real games are played and
    each pair is handed back one game at a time, the second leg first."""
    import yaml
    from test_sprt import DUEL

    from sim.cli.tournaments import match_main
    from sim.tournaments import tournament as T

    real = T.run_chunks

    def one_by_one(*args, **kwargs):
        for chunk, rows in real(*args, **kwargs):
            for row in sorted(rows, key=lambda r: -r["leg"]):
                yield chunk, [row]

    monkeypatch.setattr(T, "run_chunks", one_by_one)
    duel = tmp_path / "duel.yaml"
    duel.write_text(yaml.safe_dump(DUEL))
    rc = match_main(["hold", "advance", "--scenario", str(duel), "--max-games", "4", "--workers", "1",
                     "--decision-timeout", "0", "--sprt", "elo0=0,elo1=5"])
    out = capsys.readouterr()
    assert rc == 3, out.err
    assert "Traceback" not in out.err
    assert "pair    1: hold " in out.out and "pair    2: hold " in out.out
    assert "2 pairs (4 games) in" in out.out


@pytest.mark.parametrize(("argv", "n", "char", "at"), [
    (["match", "hold\x1b[2J", "advance", "--scenario", "ps_square_law"], 2, "'\\x1b'", 5),
    (["run", "ps_square_law", "--policy", "1=hold\rFAKE"], 4, "'\\r'", 7),
    (["report", "{t}/folder", "--side", "Blue\u202e"], 4, "'\\u202e'", 5),
])
def test_an_argument_with_a_control_character_is_refused_escaped(places, capsys, argv, n, char, at):
    assert main([a.format(t=places) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tanksim: argument {n} ('"), err
    assert err.rstrip().endswith(f"): expected no control characters; found {char} at character {at}"), err
    assert not any(c in err for c in "\x1b\r\u202e")


@pytest.mark.parametrize(("argv", "n", "char", "at"), [
    (["run", "default\u200b"], 2, "'\\u200b'", 8),
    (["validate", "\ufeffscenarios/default.yaml"], 2, "'\\ufeff'", 1),
    (["run", "ps_square_law", "--policy", "1=ho\u2060ld"], 4, "'\\u2060'", 5),
])
def test_an_argument_with_an_invisible_format_character_is_refused_escaped(capsys, argv, n, char, at):
    # a path or name pasted with a zero-width space would otherwise be echoed looking like the right one
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tanksim: argument {n} ('"), err
    assert err.rstrip().endswith(f"): expected no control or invisible format characters; found {char} at "
                                 f"character {at}"), err
    assert not any(c in err for c in "\u200b\ufeff\u2060")


@pytest.mark.parametrize(("argv", "expect"), [
    (["run", "ps_square_law", "--policy", "1=advance:min_odds=0.1,min_odds=0.5"],
     "tanksim run: --policy '1=advance:min_odds=0.1,min_odds=0.5': parameter 'min_odds' given twice; expected each "
     "parameter once"),
    (["odds", "panzer_squadron", "penetration=1", "penetration=2"],
     "tanksim odds: 'penetration' given twice ('1', then '2'); expected each parameter once"),
    (["match", "hold", "advance", "--scenario", "ps_square_law", "--sprt", "elo0=0,elo0=5"],
     "tanksim match: --sprt 'elo0=0,elo0=5': elo0 given twice; expected each of elo0, elo1, alpha, beta, model once"),
    (["match", "hold:x=1,x=2", "advance", "--scenario", "ps_square_law"], "parameter 'x' given twice"),
])
def test_a_parameter_typed_twice_is_refused_not_overridden(capsys, argv, expect):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err, err


def test_a_terrain_typed_twice_is_refused(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["generate", "random", "--terrain", "woods=0.1,woods=0.2"])
    assert ex.value.code == 2
    assert ("tanksim generate: error: argument --terrain: --terrain 'woods=0.1,woods=0.2': 'woods' given twice; "
            "expected each terrain once") in capsys.readouterr().err
