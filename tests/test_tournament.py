"""Tournaments (sim.tournaments.tournament, ``tanksim tournament``): schema, schedule, forfeits, determinism, resume,
output."""
from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest
import yaml

from sim.tournaments import tournament as T

SMALL_PS = {
    "name": "small_ps",
    "ruleset": {"name": "panzer_squadron", "options": {"turn_limit_result": "most_tanks"}},
    "map": {"shape": "rectangle", "width": 9, "height": 9, "terrain": [{"tile": "woods", "hexes": [[4, 1], [4, 2]]}]},
    "turn_limit": 5,
    "sides": [
        {"name": "Red", "role": "attacker", "tanks": [{"vehicle": "t34_85", "hex": [1, 2], "facing": 0},
                                                      {"vehicle": "t34_85", "hex": [1, 4], "facing": 0}]},
        {"name": "Blue", "role": "defender", "tanks": [{"vehicle": "pz_iv_h", "hex": [7, -1], "facing": 3},
                                                       {"vehicle": "pz_iv_h", "hex": [7, 1], "facing": 3}]},
    ],
}


def three_entrants(**over) -> dict:
    d = {"name": "three", "root_seed": 11, "games_per_pairing": 2, "decision_timeout_s": 0,
         "ratings": {"bootstrap": 50},
         "entrants": [{"name": "hold", "policy": "hold"}, {"name": "advance", "policy": "advance"},
                      {"name": "greedy", "policy": "greedy", "params": {"risk_weight": 0.5}}],
         "scenarios": [{"label": "ps", "inline": SMALL_PS},
                       {"file": "hq_ram_brawl", "label": "brawl", "overrides": {"turn_limit": 3}}]}
    d.update(over)
    return d


def test_round_robin_both_sides_and_identical_on_one_and_two_workers(tmp_path, capsys):
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(three_entrants()))
    t = T.load_tournament(f)
    games = T.schedule(t)
    assert len(games) == 3 * 2 * 2        # pairings x scenarios x both sides
    s1 = T.run_tournament(t, tmp_path / "w1", workers=1, progress=False)
    s2 = T.run_tournament(t, tmp_path / "w2", workers=2, progress=False)
    assert (s1.played, s2.played, s1.executor, s2.executor) == (12, 12, "process", "process")
    g1, g2 = T.load_games(t, tmp_path / "w1"), T.load_games(t, tmp_path / "w2")
    pd.testing.assert_frame_equal(T.comparable(g1), T.comparable(g2))
    assert (g1["status"] == "ok").all() and g1["worker"].nunique() == 1 and g2["worker"].nunique() >= 1
    # every pairing played every scenario from both sides, each mirrored pair on one seed
    for _key, g in g1.groupby(["label", "pair_key"]):
        assert len(g) == 2 and g["seed"].nunique() == 1
        assert set(zip(g["entrant1"], g["entrant2"])) == {(g["entrant1"].iloc[0], g["entrant2"].iloc[0]),
                                                          (g["entrant2"].iloc[0], g["entrant1"].iloc[0])}
    pairs = {(lab, frozenset((a, b))) for lab, a, b in zip(g1["label"], g1["entrant1"], g1["entrant2"])}
    assert len(pairs) == 6
    # common random numbers across pairings: one seed per scenario and replicate
    assert g1.groupby("label")["seed"].nunique().eq(1).all()
    r1, r2 = T.analyse(t, g1), T.analyse(t, g2)
    pd.testing.assert_frame_equal(r1.leaderboard, r2.leaderboard)
    pd.testing.assert_frame_equal(r1.head_to_head, r2.head_to_head)
    board = r1.leaderboard
    assert (board["games"] == 8).all()
    # competition ranks; an exact tie (equal Elo) shares its rank, marked "=", in file order, never by name
    assert list(board["rank"]) == [1 + int((board["elo"] > e + 1e-6).sum()) for e in board["elo"]]
    for r in board.itertuples():
        tied = int((board["rank"] == r.rank).sum()) > 1
        assert r.rank_label == f"{r.rank}{'=' if tied else ''}"
    for _rank, g in board.groupby("rank"):
        assert list(g["entrant"]) == [n for n in t.names if n in set(g["entrant"])]
    assert board["points"].sum() == pytest.approx(12)
    assert set(r1.by_ruleset["ruleset"]) == {"panzer_squadron", "hummel_quest"}
    assert list(r1.side_bias["label"]) == ["ps", "brawl", "(all)"]
    assert r1.side_bias.iloc[-1]["games"] == 12
    # the CLI on a complete folder plays nothing more, prints the tables and saves them
    from sim.cli.tournaments import main

    assert main([str(f), "--out", str(tmp_path / "w2"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "Leaderboard" in out and "Head to head" in out and "Side bias" in out and "Score per rule set" in out
    flat = " ".join(out.split())
    assert "Ranked by Elo" in flat and "openskill (Plackett-Luce) is the live-ladder view" in flat
    assert "Meta-game" in out and "Equilibrium mixes" in out
    assert "played 0 games (12 already stored)" in out
    assert main([str(f), "--out", str(tmp_path / "w2"), "--no-progress", "--no-plots", "--json"]) == 0
    got = capsys.readouterr()
    doc = json.loads(got.out)  # stdout is the JSON object alone; the report went to stderr
    assert "Leaderboard" in got.err and doc["games"] == 12 and doc["played"] == 0
    assert [r["entrant"] for r in doc["leaderboard"]] == list(r1.leaderboard["entrant"])
    assert doc["leaderboard"][0]["elo"] == pytest.approx(float(r1.leaderboard["elo"].iloc[0]))
    assert set(doc["head_to_head"]) == set(t.names)
    for name in ("leaderboard", "head_to_head", "by_scenario", "by_ruleset", "side_bias", "games"):
        assert (tmp_path / "w2" / f"{name}.parquet").is_file() and (tmp_path / "w2" / f"{name}.csv").is_file()
    for png in ("leaderboard.png", "elo.png", "head_to_head.png", "metagame.png"):
        assert (tmp_path / "w2" / png).stat().st_size > 5000
    lb = pd.read_parquet(tmp_path / "w2" / "leaderboard.parquet")
    assert {"score_lo", "score_hi", "mu", "sigma", "elo", "elo_lo", "elo_hi", "los_next", "rank_label", "os_rank",
            "forfeits"} <= set(lb.columns)
    assert lb["elo_lo"].lt(lb["elo"]).all() and lb["elo_hi"].gt(lb["elo"]).all()
    mg = pd.read_csv(tmp_path / "w2" / "metagame.csv")
    assert list(mg["doctrine"]) == t.names and mg["equilibrium"].sum() == pytest.approx(1)
    assert r1.metagame is not None and r1.metagame.payoff.shape == (3, 3)


PLUGIN = textwrap.dedent('''
    from agents.policies.base import Policy
    from agents.policies import BUILTIN


    class Crasher(Policy):
        """Raises on its second decision."""
        def __init__(self, **kw):
            super().__init__(**kw)
            self.n = 0
        def decide(self, obs, decision):
            self.n += 1
            if self.n > 1:
                raise ZeroDivisionError("boom")
            return BUILTIN["hold"]().decide(obs, decision)


    class Looper(Policy):
        def decide(self, obs, decision):
            while True:
                pass


    class Liar(Policy):
        def decide(self, obs, decision):
            return "fire!"


    class Broken(Policy):
        def __init__(self, **kw):
            raise RuntimeError("cannot even start")
''')


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    (tmp_path / "tt_plugins.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "tt_plugins"


def test_faulty_entrants_forfeit_and_the_tournament_finishes(tmp_path, plugins):
    data = three_entrants(entrants=[{"name": "hold", "policy": "hold"},
                                    {"name": "crasher", "policy": f"{plugins}:Crasher"},
                                    {"name": "looper", "policy": f"{plugins}:Looper"},
                                    {"name": "liar", "policy": f"{plugins}:Liar"}],
                          scenarios=[{"label": "ps", "inline": SMALL_PS}],
                          executor={"workers": 1, "battle_timeout_s": 1.0})
    t = T.tournament_from_mapping(data, "faulty.yaml")
    s = T.run_tournament(t, tmp_path / "out", progress=False)
    assert s.played == 12 and s.failed == 0
    g = T.load_games(t, tmp_path / "out")
    assert (g["status"] == "ok").all()
    vs_hold = g[(g["entrant1"] == "hold") | (g["entrant2"] == "hold")]
    assert vs_hold["forfeit"].all() and (vs_hold["winner_entrant"] == "hold").all()
    kinds = vs_hold.groupby("forfeit_entrant")["fault_kind"].agg(set).to_dict()
    assert kinds == {"crasher": {"raise"}, "looper": {"battle_timeout"}, "liar": {"wrong_type"}}
    crash = vs_hold[vs_hold["forfeit_entrant"] == "crasher"].iloc[0]
    assert "ZeroDivisionError: boom" in crash["reason"]
    res = T.analyse(t, g)
    board = res.leaderboard.set_index("entrant")
    assert board.loc["hold", "wins"] == 6 and board.index[0] == "hold"
    assert board.loc[["crasher", "looper", "liar"], "forfeits"].sum() == 12
    assert len(res.forfeits) == 12


def test_unloadable_entrant_is_reported_before_any_game(tmp_path, plugins):
    data = three_entrants(entrants=[{"name": "hold", "policy": "hold"},
                                    {"name": "broken", "policy": f"{plugins}:Broken"},
                                    {"name": "missing", "policy": "no_such_pkg.bots:Bot"},
                                    {"name": "typo", "policy": "hodl"},
                                    {"name": "param", "policy": "advance", "params": {"speed": 3}}])
    t = T.tournament_from_mapping(data, "bad.yaml")
    with pytest.raises(T.EntrantLoadFailure) as exc:
        T.run_tournament(t, tmp_path / "out", progress=False)
    text = str(exc.value)
    assert len(exc.value.errors) == 4
    # what a static check finds is worded as validate words it; what only a real load finds names the entrant
    for i, why in [(2, "no_such_pkg"), (3, "unknown policy 'hodl'"), (4, "speed")]:
        assert f"bad.yaml: entrants[{i}].policy: " in text and why in text
    assert "bad.yaml: entrant 'broken'" in text and "cannot even start" in text
    assert not (tmp_path / "out").exists()      # nothing created: not even the folder or its lock


def test_tournament_command_rejects_a_misspelled_policy_as_validate_does_and_creates_nothing(tmp_path, capsys):
    from sim.cli.main import main

    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(three_entrants(entrants=[{"name": "hold", "policy": "hold"},
                                                         {"name": "advance", "policy": "advance"},
                                                         {"name": "rnd", "policy": "randon"}])))
    assert main(["validate", str(f)]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"{f}: entrants[2].policy: unknown policy 'randon'")
    out = tmp_path / "out"
    assert main(["tournament", str(f), "--out", str(out), "--workers", "1", "--no-progress", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not out.exists()


def test_an_isolated_lookahead_is_refused_before_any_game_not_forfeited_in_every_one(tmp_path, capsys):
    """lookahead searches on a copy of the battle, which an isolated entrant never gets: under isolation: process
    every game it played was a forfeit; now validate, tournament and match refuse it up front (exit 2)."""
    from sim.cli.main import main

    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(three_entrants(isolation="process", entrants=[
        {"name": "hold", "policy": "hold"}, {"name": "la", "policy": "lookahead", "params": {"budget": 5}}])))
    assert main(["validate", str(f)]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"{f}: entrants[1].isolation: lookahead runs in-process only"), said
    out = tmp_path / "out"
    assert main(["tournament", str(f), "--out", str(out), "--workers", "1", "--no-progress", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and not out.exists()
    assert main(["match", "lookahead", "hold", "--scenario", "skirmish_2v2", "--max-games", "2",
                 "--isolation", "process"]) == 2
    err = capsys.readouterr().err
    assert "cannot be loaded: lookahead runs in-process only" in err and "--isolation in_process" in err
    # in-process (the default, or per entrant) it is accepted
    f.write_text(yaml.safe_dump(three_entrants(isolation="process", entrants=[
        {"name": "hold", "policy": "hold"},
        {"name": "la", "policy": "lookahead", "params": {"budget": 5}, "isolation": "in_process"}])))
    assert main(["validate", str(f)]) == 0


@pytest.mark.parametrize("change,message", [
    ({"games_per_pairing": 3}, "games_per_pairing: must be even"),
    ({"entrants": [{"name": "a", "policy": "hold"}, {"name": "a", "policy": "advance"}]}, "repeated: a"),
    ({"entrants": [{"name": "a", "policy": "hold", "command": ["x"]}, {"name": "b", "policy": "hold"}]},
     "exactly one of policy"),
    ({"scenarios": [{"file": "nowhere.yaml"}]}, "scenarios[0].file: nowhere.yaml: no such file"),
    ({"scenarios": [{"file": "default", "overrides": {"sides.Nobody.policy": "hold"}}]}, "no element 'Nobody'"),
    ({"scenarios": [{"inline": {**SMALL_PS, "turn_limit": 0}}]}, "scenarios[0]: <tournament>"),
    ({"scenarios": [{"file": "default"}, {"file": "default"}]}, "labels must be unique"),
    ({"executor": {"workers": 0}}, "executor.workers"),
    ({"colour": "red"}, "colour: unknown field 'colour'; expected one of"),
])
def test_bad_tournament_files_name_the_field(change, message):
    with pytest.raises(T.TournamentError) as exc:
        T.tournament_from_mapping(three_entrants(**change))
    assert message in str(exc.value), str(exc.value)


def test_resume_and_a_changed_tournament(tmp_path):
    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}], executor={"workers": 1})
    t = T.tournament_from_mapping(data, "a.yaml")
    assert T.run_tournament(t, tmp_path / "o", progress=False).played == 6
    parts = sorted((tmp_path / "o" / "runs").glob("*.parquet"))
    parts[-1].unlink()                                       # as if interrupted before the last part
    again = T.run_tournament(t, tmp_path / "o", progress=False)
    assert again.stored_before == 0 < again.played < 6 or again.stored_before + again.played == 6
    assert again.stored_before + again.played == 6
    assert T.run_tournament(t, tmp_path / "o", progress=False).played == 0
    bigger = T.tournament_from_mapping({**data, "entrants": data["entrants"] + [{"name": "rush", "policy": "rush"}]},
                                       "b.yaml")
    with pytest.raises(T.TournamentError, match="different tournament"):
        T.run_tournament(bigger, tmp_path / "o", progress=False)
    s = T.run_tournament(bigger, tmp_path / "o", progress=False, new=True)
    assert (s.stored_before, s.played) == (6, 6)               # the games of the first three are reused
    assert len(T.load_games(bigger, tmp_path / "o")) == 12


HANGING = '''
from agents.policies.hold import Hold

class Hang(Hold):
    """Never returns from a decision."""
    def decide(self, obs, decision):
        while True:
            pass
'''


def test_in_process_hanging_entrant_is_cut_off_by_the_decision_watchdog(tmp_path, monkeypatch):
    import time

    (tmp_path / "hang_plugins.py").write_text(HANGING, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = three_entrants(decision_timeout_s=0.3, entrants=[{"name": "hold", "policy": "hold"},
                                                            {"name": "hang", "policy": "hang_plugins:Hang"}],
                          scenarios=[{"label": "ps", "inline": SMALL_PS}], executor={"workers": 1})
    t = T.tournament_from_mapping(spec, "t.yaml", tmp_path)
    t0 = time.perf_counter()
    T.run_tournament(t, tmp_path / "out", workers=1, progress=False)
    assert time.perf_counter() - t0 < 30
    games = T.load_games(t, tmp_path / "out")
    assert len(games) == 2 and (games["status"] == "ok").all()
    assert (games["winner_entrant"] == "hold").all()
    assert games["reason"].str.contains("decision_timeout").all()


def test_failed_entrant_load_leaves_the_folder_unbound_and_bundled_names_resolve(tmp_path, monkeypatch):
    bad = three_entrants(entrants=[{"name": "hold", "policy": "hold"},
                                   {"name": "ghost", "policy": "no_such_module_xyz:Ghost"}])
    t = T.tournament_from_mapping(bad, "t.yaml", tmp_path)
    with pytest.raises(T.EntrantLoadFailure):
        T.run_tournament(t, tmp_path / "out", workers=1, progress=False)
    assert T.read_manifest(tmp_path / "out") is None
    good = T.tournament_from_mapping(three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}],
                                                    entrants=[{"name": "hold", "policy": "hold"},
                                                              {"name": "advance", "policy": "advance"}]),
                                     "t2.yaml", tmp_path)
    T.run_tournament(good, tmp_path / "out", workers=1, progress=False)  # not refused
    assert T.read_manifest(tmp_path / "out")["tournament_hash"] == good.identity()
    monkeypatch.chdir(tmp_path)
    assert T.load_tournament("tournament").source == "scenarios/tournament.yaml"
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(SMALL_PS), encoding="utf-8")
    with pytest.raises(T.TournamentError, match="this is a scenario file"):
        T.load_tournament(tmp_path / "sc.yaml")


def test_gauntlet_plays_the_seeds_against_the_field_and_skips_the_metagame(tmp_path):
    data = three_entrants(format="gauntlet", scenarios=[{"label": "ps", "inline": SMALL_PS}],
                          entrants=[{"name": "greedy", "policy": "greedy"}, {"name": "hold", "policy": "hold"},
                                    {"name": "advance", "policy": "advance"}, {"name": "rush", "policy": "rush"}])
    t = T.tournament_from_mapping(data, "g.yaml")
    assert t.pairings() == [(0, 1), (0, 2), (0, 3)]
    games = T.schedule(t)
    assert len(games) == 3 * 2 and all(g.entrants[0].name == "greedy" or g.entrants[1].name == "greedy"
                                       for g in games)
    # a pairing's games are the same games as in the round robin (same keys and seeds): folders can be shared
    rr = T.tournament_from_mapping({**data, "format": "round_robin"}, "rr.yaml")
    assert {g.run_key for g in games} <= {g.run_key for g in T.schedule(rr)}
    assert t.identity() != rr.identity()
    two = T.tournament_from_mapping({**data, "seeds": 2}, "g2.yaml")
    assert two.pairings() == [(0, 2), (0, 3), (1, 2), (1, 3)]
    T.run_tournament(t, tmp_path / "g", workers=1, progress=False)
    res = T.analyse(t, T.load_games(t, tmp_path / "g"))
    board = res.leaderboard.set_index("entrant")
    assert board.loc["greedy", "games"] == 6 and (board.drop("greedy")["games"] == 2).all()
    assert board["elo"].notna().all() and (board["elo_hi"] > board["elo_lo"]).all()
    assert res.metagame is None and any("needs a round robin" in n for n in res.notes)
    text = T.format_results(res, t)
    assert "gauntlet: greedy against the field" in text and "Meta-game" not in text
    assert T.write_results(res, t, tmp_path / "g", plots=False)


def test_a_four_nil_tournament_has_a_finite_wide_elo_interval(tmp_path, plugins):
    import math

    data = three_entrants(games_per_pairing=4, scenarios=[{"label": "ps", "inline": SMALL_PS}],
                          entrants=[{"name": "hold", "policy": "hold"}, {"name": "liar", "policy": f"{plugins}:Liar"}],
                          executor={"workers": 1})
    t = T.tournament_from_mapping(data, "four.yaml")
    T.run_tournament(t, tmp_path / "o", progress=False)
    res = T.analyse(t, T.load_games(t, tmp_path / "o"))
    hold = res.leaderboard.set_index("entrant").loc["hold"]
    assert (hold["wins"], hold["games"]) == (4, 4)
    # 4-0: centred Elo = half of 400 log10(5); the interval is finite, wide and asymmetric
    assert hold["elo"] == pytest.approx(200 * math.log10(5))
    assert math.isfinite(hold["elo_hi"]) and hold["elo_lo"] < 0 < hold["elo_hi"] - 300
    line = next(x for x in T.format_results(res, t).splitlines() if " hold " in x)
    assert "+140 [-19, +396]" in line and "1.000 [0.510, 1.000]" in line


@pytest.mark.parametrize("change,message", [
    ({"ratings": {"prior_sd": 400}}, "prior_sd was replaced by prior_draws"),
    ({"ratings": {"prior_draws": 0}}, "ratings.prior_draws"),
    ({"format": "gauntlet", "seeds": 3}, "seeds must be below the number of entrants (3)"),
    ({"seeds": 2}, "only a gauntlet has seeds"),
    ({"format": "swiss"}, "format: Input should be 'round_robin' or 'gauntlet'"),
    ({"metagame": {"population": 1}}, "metagame.population"),
])
def test_bad_rating_and_format_settings_name_the_field(change, message):
    with pytest.raises(T.TournamentError) as exc:
        T.tournament_from_mapping(three_entrants(**change))
    assert message in str(exc.value), str(exc.value)


def test_tournament_output_agrees_in_number_and_ranks_ties_alike(tmp_path, capsys):
    # two copies of one doctrine: an exact tie, "1=" in both the Elo and the openskill column; one scenario
    from sim.cli.main import main

    data = three_entrants(scenarios=[{"label": "ps", "inline": SMALL_PS}],
                          entrants=[{"name": "hold", "policy": "hold"}, {"name": "hold2", "policy": "hold"}],
                          executor={"workers": 1})
    f = tmp_path / "tie.yaml"
    f.write_text(yaml.safe_dump(data))
    assert main(["tournament", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "2 entrants, 1 scenario (ps [panzer_squadron]), 2 games per pairing and scenario -> 2 games" in out
    assert "Leaderboard (round robin; 2 games;" in out and "played 2 games (0 already stored)" in out
    rows = [x.split() for x in out.splitlines() if x.split()[:2] in (["1=", "hold"], ["1=", "hold2"])]
    assert len(rows) == 2 and all(r[-2] == "(#1=)" for r in rows), out
    assert "over 2 games of 1 seed (W" in out
    assert T.plural(1, "game") == "1 game" and T.plural(0, "game") == "0 games"


def test_side_bias_counts_games_that_share_their_dice_once():
    """Games of one seed share their dice (mirrored pairs, common random numbers): the side-bias interval counts
    one observation per seed, so twelve first-side wins on one seed flag nothing, on twelve seeds they do; with a
    seed per game it is Wilson's interval over the games."""
    from sim.tournaments.ratings import wilson_interval
    from sim.tournaments.tournament import side_bias

    def games(seeds: list[int], scores: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"label": "s", "seed": seeds, "score1": scores, "side1_name": "Blue"})

    one = side_bias(games([7] * 12, [1.0] * 12))
    row = one[one["label"] == "s"].iloc[0]
    assert row["games"] == 12 and row["seeds"] == 1 and row["score"] == 1.0 and not row["biased"]
    assert (row["score_lo"], row["score_hi"]) == pytest.approx(wilson_interval(1.0, 1)[1:])
    many = side_bias(games(list(range(12)), [1.0] * 12))
    row = many[many["label"] == "s"].iloc[0]
    assert row["seeds"] == 12 and row["biased"]
    assert (row["score_lo"], row["score_hi"]) == pytest.approx(wilson_interval(12.0, 12)[1:])
    pairs = side_bias(games([1, 1, 2, 2, 3, 3], [1.0, 0.0, 1.0, 1.0, 0.5, 1.0]))  # three seeds, score 0.75
    row = pairs[pairs["label"] == "s"].iloc[0]
    assert row["seeds"] == 3 and row["score"] == pytest.approx(0.75)
    assert (row["score_lo"], row["score_hi"]) == pytest.approx(wilson_interval(2.25, 3)[1:])


def test_validate_of_a_tournament_reports_every_problem_one_line_each(tmp_path):
    """A tournament file with a missing scenario and a misspelt entrant doctrine: ``validate`` named only the
    scenario (the entrant's ``policy: advnce`` was hidden behind it); now one line for each, exit 2."""
    import subprocess

    from conftest import tanksim_cmd

    data = {"name": "t", "games_per_pairing": 2, "scenarios": [{"label": "x", "file": "nosuch.yaml"}],
            "entrants": [{"name": "a", "policy": "advnce"}, {"name": "b", "policy": "hold"}]}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    r = subprocess.run(tanksim_cmd() + ["validate", "t.yaml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("t.yaml: scenarios[0].file: nosuch.yaml: no such file")
    assert lines[1].startswith("t.yaml: entrants[0].policy: unknown policy 'advnce' (did you mean 'advance'?)")


def test_validate_of_a_tournament_with_a_schema_problem_still_checks_the_entrants(tmp_path):
    """``games_per_pairing: -1`` (a schema problem) hid the entrant's ``policy: advnce`` as well: both are
    reported, one line each."""
    import subprocess

    from conftest import tanksim_cmd

    data = {"name": "t", "games_per_pairing": -1, "scenarios": [{"label": "x", "file": "default"}],
            "entrants": [{"name": "a", "policy": "advnce"}, {"name": "b", "policy": "hold"}]}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    r = subprocess.run(tanksim_cmd() + ["validate", "t.yaml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("t.yaml: games_per_pairing: "), lines
    assert lines[1].startswith("t.yaml: entrants[0].policy: unknown policy 'advnce' (did you mean 'advance'?)")
