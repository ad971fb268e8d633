"""Isolated entrants (agents.isolation + agents.remote): protocol fidelity, limits and forfeits, other languages."""
from __future__ import annotations

import re
import shutil
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from agents import remote
from agents.controllers import EntrantPolicy
from agents.isolation import close_policies
from sim import actions as A
from sim.hexgrid import Hex
from sim.runner import run_battle
from sim.scenario import PolicySpec, validate

ROOT = Path(__file__).resolve().parents[1]

DUEL = {
    "name": "duel",
    "ruleset": {"name": "panzer_squadron", "options": {"turn_limit_result": "most_tanks"}},
    "map": {"shape": "rectangle", "width": 8, "height": 8},
    "turn_limit": 4,
    "sides": [
        {"name": "Red", "role": "attacker", "tanks": [{"vehicle": "t34_85", "hex": [1, 2], "facing": 0},
                                                      {"vehicle": "t34_85", "hex": [1, 4], "facing": 0}]},
        {"name": "Blue", "role": "defender", "tanks": [{"vehicle": "pz_iv_h", "hex": [6, -1], "facing": 3},
                                                       {"vehicle": "pz_iv_h", "hex": [6, 1], "facing": 3}]},
    ],
}

#: A bad entrant, as a stand-alone script speaking the protocol through agents.remote.serve.
BOT = textwrap.dedent('''
    import gc, os, sys, time
    from agents.remote import serve
    from agents.policies import BUILTIN

    class Bot:
        def __init__(self, mode):
            self.mode, self.inner = mode, BUILTIN["hold"]()

        def decide(self, obs, decision):
            m = self.mode
            if m == "sneaky":
                for attempt in (lambda: obs._b, lambda: obs.battle(), lambda: obs.model(), lambda: obs.dice(),
                                lambda: obs._rs, lambda: decision.legal._obs._b):
                    try:
                        attempt()
                    except AttributeError:
                        continue
                    raise SystemExit("found something it should not see")
                live = [o for o in gc.get_objects()
                        if type(o).__name__ in ("BattleModel", "Battle", "DiceSource", "SideController")]
                raise RuntimeError(f"nothing to read: {len(live)} model, battle, dice or controller objects here")
            if m == "sleeper":
                time.sleep(60)
            if m == "hog":
                blob = bytearray(3 * 1024 ** 3)
            if m == "burner":
                while True:
                    pass
            if m == "crasher":
                os._exit(3)
            if m == "garbage":
                return {"not": "an action"}

            return self.inner.decide(obs, decision)

    serve(Bot(sys.argv[1]), name="bot-" + sys.argv[1])
''')

LIMITS = {"cpu_s": 2, "memory_mb": 400, "decision_wall_s": 1.5, "startup_wall_s": 30}
#: For entrants that must not hit a limit even on a loaded machine.
GENEROUS = {"cpu_s": 120, "memory_mb": 2048, "decision_wall_s": 60, "startup_wall_s": 60}


@pytest.fixture
def bot(tmp_path):
    f = tmp_path / "bot.py"
    f.write_text(BOT)
    return lambda mode: {"name": f"bot-{mode}", "command": [sys.executable, str(f), mode]}


def remote_spec(entrant, limits=None):
    return EntrantPolicy("agents.isolation:RemotePolicy", {"entrant": entrant, "limits": limits or LIMITS})


def play(spec, policies, seed=1):
    holder = []
    try:
        r = run_battle(spec, seed, policies, record_events=False, decision_timeout_s=0, on_fault="forfeit",
                       model_out=holder)
    finally:
        for m in holder:
            close_policies(m)
    return r.row


def test_codec_round_trips_states_fractions_and_actions():
    values = [((Hex(2, -1), 3), 1), {(Hex(0, 0), 5): (4, ((Hex(0, 0), 5), (Hex(1, 0), 5)))}, Fraction(53, 200),
              frozenset({1, 2}), {"a": [1, (2, 3)], "$odd": 1}, None, "x", 2.5]
    for v in values:
        assert remote.decode(remote.encode(v)) == v
    acts = [A.Pass(None), A.Activate(2, "fire"), A.Step(1, Hex(3, -1)), A.Pivot(1, 4), A.Fire(2, 5, ("main",), "apcr"),
            A.Fire(2, Hex(4, 4)), A.Ram(3, 4), A.Special(2, "end_move", {"status": "moving", "facing": None}),
            A.Plan(1, (A.Step(1, Hex(1, 0)), A.Pivot(1, 2)), then=A.Fire(1, 4), end_status="moving")]
    for a in acts:
        assert remote.action_from_json(remote.action_to_json(a)) == a
    with pytest.raises(remote.ProtocolError, match="type one of"):
        remote.action_from_json({"type": "Teleport", "actor": 1})
    with pytest.raises(remote.ProtocolError, match="malformed Fire"):
        remote.action_from_json({"type": "Fire", "actor": 1})


@pytest.mark.parametrize("scenario", ["ps", "hq"])
def test_isolated_doctrines_play_exactly_as_in_process(scenario):
    """Every deterministic built-in doctrine, served over the protocol, makes the same moves as in-process."""
    from agents.policies import BUILTIN

    if scenario == "ps":
        spec = validate(DUEL)
        # random draws (learned: masked random; random_target: random targets); lookahead plans on an in-process
        # search copy (``determinize``), which the protocol does not carry: isolated, it is refused like any unknown
        # query
        names = [n for n in BUILTIN if n not in ("random", "learned", "lookahead", "random_target")]
        pairs = list(zip(names[::2], names[1::2] + names[:1]))      # every doctrine plays at least once
    else:
        from sim.scenario import load_scenario
        spec = load_scenario("hq_ram_brawl", {"turn_limit": 3})
        pairs = [("rush", "greedy")]
    keys = ("winner", "reason", "turns", "decisions", "shots", "hits", "kills", "faults")
    for i, (name, other) in enumerate(pairs):
        local = play(spec, {0: PolicySpec(name=name), 1: PolicySpec(name=other)}, seed=i)
        isolated = play(spec, {0: remote_spec({"name": name, "policy": name}, GENEROUS),
                               1: remote_spec({"name": other, "policy": other}, GENEROUS)}, seed=i)
        assert {k: isolated[k] for k in keys} == {k: local[k] for k in keys}, (name, other)
    rnd = play(spec, {0: remote_spec({"name": "random", "policy": "random"}, GENEROUS), 1: PolicySpec(name="hold")})
    assert rnd["faults"] == 0 and "forfeit" not in rnd["reason"]


@pytest.mark.parametrize("mode,kind,text,limits", [
    ("sneaky", "raise", "nothing to read: 0 model", LIMITS),
    ("sleeper", "timeout", "wall-time limit", LIMITS),
    ("hog", "memory", "MemoryError", LIMITS),
    ("burner", "cpu", "CPU-time limit", {**LIMITS, "cpu_s": 1, "decision_wall_s": 20}),
    ("crasher", "crash", "exited with code 3", LIMITS),
    ("garbage", "wrong_type", "wrong return", LIMITS),
])
def test_misbehaving_isolated_entrant_forfeits(bot, mode, kind, text, limits):
    from sim.tournaments.tournament import fault_kind

    spec = validate(DUEL)
    row = play(spec, {0: remote_spec(bot(mode), limits), 1: PolicySpec(name="hold")})
    assert row["winner_index"] == 1, row["reason"]
    assert "Red forfeits" in row["reason"] and text in row["reason"], row["reason"]
    assert fault_kind(row["reason"]) == kind
    assert row["faults"] == 1


@pytest.mark.parametrize("answer,text", [
    ("this is not JSON", "not a JSON line"),
    ('{"type": "gossip"}', "unexpected message 'gossip'"),
    ('{"type": "action", "action": {"type": "Teleport", "actor": 1}}', "wrong return: action must be"),
    ('[1, 2]', "message without a type"),
])
def test_protocol_errors_are_protocol_faults(answer, text):
    """A child that breaks the protocol forfeits with fault kind ``protocol`` (not ``raise``)."""
    from sim.tournaments.tournament import fault_kind

    sh = ["/bin/sh", "-c", "read h; echo '{\"type\": \"ready\"}'; read d; printf '%s\\n' \"$0\"; sleep 5", answer]
    row = play(validate(DUEL), {0: remote_spec({"name": "sh-bot", "command": sh}), 1: PolicySpec(name="hold")})
    assert row["winner_index"] == 1 and text in row["reason"], row["reason"]
    assert fault_kind(row["reason"]) == "protocol"


def test_unloadable_isolated_entrants_are_reported(tmp_path):
    from sim.tournaments.tournament import Entrant, check_entrants

    bad = [Entrant("ghost", None, {}, ("/nonexistent/program",), "process", LIMITS),
           Entrant("nosuch", "nosuch_doctrine", {}, None, "process", LIMITS),
           Entrant("badparam", "hold", {"bogus": 1}, None, "process", LIMITS),
           Entrant("fine", "hold", {}, None, "process", LIMITS)]
    problems = check_entrants(bad)
    assert len(problems) == 3
    assert "ghost" in problems[0] and "cannot start" in problems[0]
    assert "nosuch" in problems[1] and "unknown doctrine" in problems[1]
    assert "badparam" in problems[2] and "bogus" in problems[2]


def test_bad_isolated_entrants_leave_the_others_results_unaffected(bot, tmp_path):
    import pandas as pd

    from sim.tournaments import tournament as T

    base = {"name": "iso", "root_seed": 5, "games_per_pairing": 2, "decision_timeout_s": 0,
            "executor": {"workers": 2, "chunk_games": 2}, "ratings": {"bootstrap": 20},
            "limits": {**LIMITS, "decision_wall_s": 1.0}, "scenarios": [{"inline": DUEL}]}
    good = [{"name": "hold", "policy": "hold"}, {"name": "advance", "policy": "advance"}]
    bad = [{"name": "sleeper", "command": bot("sleeper")["command"]}]
    t_good = T.tournament_from_mapping({**base, "entrants": good}, "good.yaml")
    t_all = T.tournament_from_mapping({**base, "entrants": good + bad}, "all.yaml")
    T.run_tournament(t_good, tmp_path / "good", progress=False)
    T.run_tournament(t_all, tmp_path / "all", progress=False)
    g_good = T.comparable(T.load_games(t_good, tmp_path / "good"))
    g_all = T.load_games(t_all, tmp_path / "all")
    assert len(g_all) == 6 and (g_all["status"] == "ok").all()
    both_good = g_all[(g_all["entrant1"] != "sleeper") & (g_all["entrant2"] != "sleeper")]
    pd.testing.assert_frame_equal(T.comparable(both_good).drop(columns="order"), g_good.drop(columns="order"))
    with_bad = g_all[(g_all["entrant1"] == "sleeper") | (g_all["entrant2"] == "sleeper")]
    assert with_bad["forfeit"].all() and set(with_bad["forfeit_entrant"]) == {"sleeper"}
    assert set(with_bad["fault_kind"]) == {"timeout"}
    res = T.analyse(t_all, g_all)
    board = res.leaderboard.set_index("entrant")
    assert board.loc["sleeper", "forfeits"] == board.loc["sleeper", "losses"] == 4
    assert board.index[-1] == "sleeper"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_entrant_from_the_protocol_document(tmp_path):
    doc = (ROOT / "docs" / "isolation_protocol.md").read_text()
    code = re.search(r"```js\n(.*?)```", doc, re.DOTALL).group(1)
    assert len(code.strip().splitlines()) <= 20
    js = tmp_path / "bot.js"
    js.write_text(code)
    spec = validate(DUEL)
    for side in (0, 1):
        # RLIMIT_AS counts address space: V8 needs about 768 MB of it to start (the default limit is 1024 MB)
        row = play(spec, {side: remote_spec({"name": "node-bot", "command": ["node", str(js)]}, GENEROUS),
                          1 - side: PolicySpec(name="hold")})
        assert row["faults"] == 0 and "forfeit" not in row["reason"], row["reason"]
        assert row["shots"] > 0


def test_child_pythonpath_leaves_out_this_interpreters_library():
    import os
    import site
    import sys

    from agents.isolation import child_pythonpath

    paths = child_pythonpath()
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    assert all(not os.path.realpath(p).startswith(stdlib) for p in paths)
    assert all(os.path.realpath(p) not in {os.path.realpath(x) for x in site.getsitepackages()} for p in paths)
    assert all(not os.path.realpath(p).startswith(os.path.realpath(sys.base_prefix) + os.sep) for p in paths)


def test_fault_kind_reads_the_fault_class_not_the_entrants_text():
    from agents.isolation import FAULT_KINDS
    from sim.tournaments.tournament import fault_kind

    for cls, kind in FAULT_KINDS.items():
        assert fault_kind(f"Red forfeits: raise in activate ({cls}: bot: whatever)") == kind
    spoof = "Red forfeits: raise in activate (EntrantError: bot: x (EntrantTimeout: MemoryError CPU-time limit)"
    assert fault_kind(spoof) == "raise"
    assert fault_kind("Red forfeits: raise in react (MemoryError: )") == "memory"
    assert fault_kind("Red forfeits: wrong_type in move (returned dict, expected an Action)") == "wrong_type"
    assert fault_kind("Red forfeits: battle_timeout in move (the battle exceeded ...)") == "battle_timeout"
    assert fault_kind("Blue has no tank left that can fight") is None
