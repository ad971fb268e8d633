"""The ``lookahead`` search doctrine: registered with parameters, deterministic, within its node budget, blind to
hidden enemies, legal under every rule set, and stronger than ``greedy`` on fixed seeds (a sign test on side-swapped
pairs; the full SPRT is the README's benchmark command, too slow for the suite)."""
from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys

import pytest
from scipy import stats

from sim.actions import Activate, Plan, Special
from agents.controllers import PolicyLoadError, load_policy
from agents.observation import Observation
from agents.policies import BUILTIN
from agents.policies.lookahead import Lookahead
from conftest import ROOT
from sim.hexgrid import Hex
from sim.model import BattleModel, build_battle
from sim.scenario import load_scenario, validate
from sim.search import ChosenDice


def test_registered_with_parameters():
    assert BUILTIN["lookahead"] is Lookahead
    pol = load_policy("lookahead", {"budget": "40", "risk_weight": "3/2", "fallback": "advance"})
    assert (pol.budget, pol.risk_weight, pol.fallback) == (40, 1.5, "advance")
    with pytest.raises(PolicyLoadError, match="fallback"):
        load_policy("lookahead", {"fallback": "lookahead"})
    with pytest.raises(PolicyLoadError, match="budget"):
        load_policy("lookahead", {"budget": "0"})


def play(scenario: str, seed: int, la_side: int, turns: int | None = None, **params):
    """A battle of lookahead (on ``la_side``) against greedy; returns (model, lookahead's answers)."""
    m = BattleModel(load_scenario(scenario), seed, {la_side: ("lookahead", params), 1 - la_side: ("greedy", {})},
                    decision_timeout_s=0)
    answers = []
    m.decision_listeners.append(lambda d, a: answers.append((d.kind, d.actors, a)) if d.side == la_side else None)
    m.run(max_turns=turns)
    return m, answers


def log_digest(m) -> str:
    return hashlib.sha256(repr([(e.event, e.rolls) for e in m.battle.log]).encode()).hexdigest()


def test_same_decisions_twice_and_in_another_process():
    m1, a1 = play("default", 11, 0, turns=2)
    m2, a2 = play("default", 11, 0, turns=2)
    assert a1 == a2 and len(a1) > 10 and log_digest(m1) == log_digest(m2)
    assert m1.controllers[0].policy.total_nodes == m2.controllers[0].policy.total_nodes > 0
    code = ("import sys; sys.path.insert(0, 'tests'); from test_lookahead import play, log_digest; "
            "print(log_digest(play('default', 11, 0, turns=2)[0]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "4321"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == log_digest(m1)
    m3, _ = play("default", 12, 0, turns=2)
    assert log_digest(m3) != log_digest(m1)


@pytest.mark.parametrize("scenario, budget, turns", [("default", 1, 2), ("default", 20, 2), ("asl_1941_meeting", 20, 2),
                                                     ("hq_skirmish", 20, 1)])
def test_respects_its_node_budget(scenario, budget, turns):
    m = BattleModel(load_scenario(scenario), 5, {0: ("lookahead", {"budget": budget}), 1: ("greedy", {})},
                    decision_timeout_s=0)
    pol = m.controllers[0].policy
    spent = []
    decide = pol.decide

    def counted(obs, decision):
        act = decide(obs, decision)
        spent.append(pol.last_nodes)
        return act

    pol.decide = counted
    m.run(max_turns=turns)
    assert spent and max(spent) <= budget
    assert sum(spent) == pol.total_nodes
    if budget > 1:
        assert max(spent) > budget // 2, "the budget binds: some decision searched up to it"


# --- hidden enemies ---------------------------------------------------------------------------------------------
def hidden_scenario(hidden_hex: tuple[int, int]):
    """One T34-85 at (3, 4) behind a building at (4, 4); a Panzer IV it sees at (1, 0); a Tiger it cannot see."""
    return validate({
        "name": "hidden_enemy", "ruleset": {"name": "panzer_squadron"},
        "map": {"shape": "rectangle", "width": 14, "height": 10,
                "terrain": [{"tile": "building", "hexes": [[4, 4]]}]},
        "turn_limit": 5,
        "sides": [
            {"name": "A", "policy": "hold", "tanks": [{"vehicle": "t34_85", "hex": [3, 4], "facing": 0}]},
            {"name": "B", "policy": "hold", "tanks": [{"vehicle": "pz_iv_h", "hex": [1, 0], "facing": 3},
                                                    {"vehicle": "tiger_i", "hex": list(hidden_hex), "facing": 3}]},
        ]}, "hidden_enemy.yaml")


def move_decision(hidden_hex, remembered: bool):
    """Lookahead's answer to the T34's first move step (mode ``move``, 4 movement points), with the Tiger hidden
    on ``hidden_hex``; ``remembered``: the side last saw the Tiger there (so it may plan against it)."""
    b = build_battle(hidden_scenario(hidden_hex), ChosenDice([10, 1, 4], random.Random(0)))
    b.turn = 1
    gen = b.ruleset.play_turn(b, b.dice)
    next(gen)
    d = gen.send(Activate(0, "move"))
    assert d.kind == "move_step"
    pol = load_policy("lookahead")
    memory = {}
    if remembered:
        memory = {2: Hex(*hidden_hex), ("facing", 2): 3}
        pol._seen[2] = (Hex(*hidden_hex), 3, 3, dict(b.tanks[2].rules_state))
    obs = Observation(b, 0, d, random.Random(5), last_known=memory)
    assert obs.visible_ids() == (1,) and obs.hidden_ids() == (2,)
    copy = obs.determinize(pol._ghosts(obs))
    seen = [(t.tank_id, t.hex, t.facing, t.status, dict(t.rules_state)) for t in copy.tanks]
    return pol.decide(obs, obs.decision), pol.last_nodes, seen


def test_never_reads_hidden_enemies():
    """Where the hidden Tiger stands changes nothing the doctrine does; if it knew (remembered) the Tiger's hex,
    it would not make the same move: the test would catch a leak."""
    answers = {h: move_decision(h, remembered=False) for h in [(5, 4), (6, 4), (7, 4)]}
    first = answers[(5, 4)]
    assert all(a == first for a in answers.values())
    act, _nodes, seen = first
    assert isinstance(act, Plan) and act.steps[-1].to == Hex(4, 5)
    assert seen[2][1] is None and seen[2][4] == {}, "the hidden Tiger is off the board in the copy"
    knowing, _n, seen_k = move_decision((5, 4), remembered=True)
    assert seen_k[2][1] == Hex(5, 4)
    assert knowing != act and isinstance(knowing, Special) and knowing.name == "end_move"


# --- every rule set -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scenario, turns", [("default", 3), ("asl_1941_meeting", 2), ("hq_skirmish", 1),
                                             ("hq_ram_brawl", None)])
def test_plays_legal_actions_under_every_rule_set(scenario, turns):
    for la in (0, 1):
        m = BattleModel(load_scenario(scenario), 3, {la: ("lookahead", {"budget": 120}), 1 - la: ("greedy", {})},
                        decision_timeout_s=0)
        bad = []
        m.decision_listeners.append(lambda d, a, la=la, bad=bad: bad.append((d.kind, a))
                                    if d.side == la and not d.legal.contains(a) else None)
        m.run(max_turns=turns)
        kinds = {e.event.kind for e in m.battle.log}
        assert not bad and "PolicyFault" not in kinds and "ActionRejected" not in kinds, (scenario, la, bad)
        assert m.controllers[la].policy.total_nodes > 0


# --- strength ------------------------------------------------------------------------------------------------------
PAIRS = 16


def test_beats_greedy_on_fixed_seeds():
    """Side-swapped pairs on the default scenario (seeds 0..PAIRS-1, the match's pairing): a one-sided sign test on
    the pairs that are not even (pairs are independent; games within a pair are not) must reject "no better than
    greedy" at the 5 % level."""
    better = worse = 0
    for seed in range(PAIRS):
        score = 0.0
        for la in (0, 1):
            m, _ = play("default", seed, la)
            w = m.outcome.winner
            score += 0.5 if w is None else float(w == la)
        better += score > 1
        worse += score < 1
    p = stats.binomtest(better, better + worse, 0.5, alternative="greater").pvalue
    assert p < 0.05, (better, worse, p)
