"""The oracle (sim/experiments/oracle.py): exact chains against brute force and Brown's square law, simulations
against the chains, the order of fire as part of the chain, refusals, the random_target doctrine, activation_order."""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
from fractions import Fraction

import numpy as np
import pytest
import yaml
from scipy import stats

from sim.experiments import oracle
from sim.experiments.oracle import AlternatingActivations, Ending, RandomOrderRounds, RandomShooter, Volleys, solve
from sim.scenario import find_scenario, load_scenario, validate

CONF = 0.999  # per-quantity interval of the simulation checks (six quantities: about 0.6 % family-wise)


# --- brute force: every tank by name, no lumping -------------------------------------------------------------------

def brute(kind: str, n: tuple[int, int], p: tuple[Fraction, Fraction], turns: int, rule: str = "draw",
          initiative: str = "roll", pattern: tuple[int, ...] = (0, 1, 1, 0)) -> dict[Ending, Fraction]:
    """The probability of every ending, by enumerating the rule set's procedure over named tanks: which tank fires
    (Panzer Squadron: the side's lowest id not yet activated; Hummel Quest: any tank not yet fired, uniformly; ASL:
    the volley side in id order), at which enemy (each live enemy, uniformly), hit or miss."""
    side = {i: (0 if i < n[0] else 1) for i in range(sum(n))}

    def count(alive: frozenset) -> tuple[int, int]:
        return (sum(1 for i in alive if side[i] == 0), sum(1 for i in alive if side[i] == 1))

    def merge(into: dict, src: dict, w: Fraction) -> None:
        for k, v in src.items():
            into[k] = into.get(k, 0) + w * v

    def limit(alive: frozenset, t: int) -> dict:
        c = count(alive)
        win = None if rule == "draw" or c[0] == c[1] else (0 if c[0] > c[1] else 1)
        return {Ending(win, c, t): Fraction(1)}

    def fire(shooter: int, alive: frozenset, then) -> dict:
        """Shooter fires at each live enemy with probability 1/k; ``then(alive)`` continues."""
        s = side[shooter]
        enemies = sorted(i for i in alive if side[i] != s)
        out: dict = {}
        for e in enemies:
            left = alive - {e}
            if not any(side[i] != s for i in left):
                merge(out, {Ending(s, count(left), None): Fraction(1)}, p[s] / len(enemies))
            else:
                merge(out, then(left), p[s] / len(enemies))
        merge(out, then(alive), 1 - p[s])
        return out

    def stamp(d: dict, t: int) -> dict:
        """Endings inside a turn learn their turn here; an ending may arrive both unstamped (this shot) and stamped
        (a later shot of the same turn), so the probabilities add."""
        out: dict = {}
        for k, v in d.items():
            merge(out, {(Ending(k.winner, k.alive, t) if k.turn is None else k): v}, Fraction(1))
        return out

    @functools.cache
    def ps(t: int, s, alive: frozenset, fired: frozenset) -> dict:
        if s is None:  # start of turn t
            firsts = [0, 1] if initiative == "roll" else [0 if t % 2 == 1 else 1]
            out: dict = {}
            for f in firsts:
                merge(out, ps(t, f, alive, frozenset()), Fraction(1, len(firsts)))
            return out
        pend = [sorted(i for i in alive - fired if side[i] == x) for x in (0, 1)]
        if not pend[0] and not pend[1]:
            return limit(alive, t) if t >= turns else ps(t + 1, None, alive, frozenset())
        if not pend[s]:
            s = 1 - s
        shooter = pend[s][0]
        return stamp(fire(shooter, alive, lambda a: ps(t, 1 - s, a, (fired | {shooter}) & a)), t)

    @functools.cache
    def hq(t: int, alive: frozenset, fired: frozenset) -> dict:
        waiting = sorted(alive - fired)
        if not waiting:
            return limit(alive, t) if t >= turns else hq(t + 1, alive, frozenset())
        out: dict = {}
        for shooter in waiting:
            merge(out, fire(shooter, alive, lambda a, sh=shooter: hq(t, a, (fired | {sh}) & a)),
                  Fraction(1, len(waiting)))
        return stamp(out, t)

    @functools.cache
    def asl(t: int, k: int, alive: frozenset, queue: tuple) -> dict:
        if queue is None or not queue:
            if queue is not None:
                k += 1
            if k == len(pattern):
                if t >= turns:
                    return limit(alive, t)
                t, k = t + 1, 0
            return asl(t, k, alive, tuple(sorted(i for i in alive if side[i] == pattern[k])))
        shooter, rest = queue[0], queue[1:]
        return stamp(fire(shooter, alive, lambda a: asl(t, k, a, rest)), t)

    everyone = frozenset(range(sum(n)))
    if kind == "ps":
        return ps(1, None, everyone, frozenset())
    if kind == "hq":
        return hq(1, everyone, frozenset())
    return asl(1, 0, everyone, None)


@pytest.mark.parametrize("kind,schedule", [
    ("ps", AlternatingActivations(4, "draw", "roll")),
    ("ps", AlternatingActivations(3, "most_tanks", "alternate")),
    ("hq", RandomOrderRounds(4, "draw")),
    ("asl", Volleys(3, "draw", (0, 1, 1, 0))),
    ("asl", Volleys(3, "most_tanks", (1, 0, 0, 1))),
])
def test_chain_equals_brute_force_enumeration_of_3_v_2(kind, schedule):
    p = (Fraction(1, 3), Fraction(2, 5))
    kw = {}
    if kind == "ps":
        kw = {"initiative": schedule.initiative}
    if kind == "asl":
        kw = {"pattern": schedule.pattern}
    want = brute(kind, (3, 2), p, schedule.turn_limit, schedule.limit_result, **kw)
    assert sum(want.values()) == 1
    got = solve(schedule, (3, 2), p)
    assert got.exact
    assert {k: v for k, v in got.endings.items() if v} == {k: v for k, v in want.items() if v}
    assert sum(got.endings.values()) == 1
    assert got.p_draw() > 0  # the turn limit is reached with positive probability at these odds


def brown(x: int, y: int, r: Fraction) -> Fraction:
    """Brown (1963), Operations Research 11(3) 418-425: P(x, y) = A P(x, y - 1) + (1 - A) P(x - 1, y) with
    P(x, 0) = 1, P(0, y) = 0 and, for the square law, A(x, y) = r x / (r x + y)."""
    @functools.cache
    def P(a: int, b: int) -> Fraction:
        if b == 0:
            return Fraction(1)
        if a == 0:
            return Fraction(0)
        A = r * a / (r * a + b)
        return A * P(a, b - 1) + (1 - A) * P(a - 1, b)
    return P(x, y)


@pytest.mark.parametrize("p", [(Fraction(1, 2), Fraction(1, 2)), (Fraction(1, 3), Fraction(1, 2)),
                               (Fraction(17, 40), Fraction(3, 10))])
def test_random_shooter_chain_is_browns_square_law(p):
    r = p[0] / p[1]
    for x in range(1, 6):
        for y in range(1, 6):
            sol = solve(RandomShooter(), (x, y), p)
            assert sol.exact and sol.p_win(0) == brown(x, y, r) and sol.p_win(0) + sol.p_win(1) == 1
        # the closed form of Brown's recursion for one enemy tank: P(lose) = prod_{k <= x} 1 / (r k + 1)
        lose = Fraction(1)
        for k in range(1, x + 1):
            lose /= r * k + 1
        assert solve(RandomShooter(), (x, 1), p).p_win(1) == lose
    assert solve(RandomShooter(), (3, 3), (Fraction(1, 2), Fraction(1, 2))).p_win(0) == Fraction(1, 2)


def test_float_fallback_when_denominators_explode():
    sol = solve(AlternatingActivations(20), (4, 3), (Fraction(17, 40), Fraction(17, 40)), max_digits=50)
    assert not sol.exact and "floating point" in sol.note
    exact = solve(AlternatingActivations(20), (4, 3), (Fraction(17, 40), Fraction(17, 40)))
    assert exact.exact and abs(sol.p_win(0) - float(exact.p_win(0))) < 1e-12
    with pytest.raises(oracle.OracleTooLarge):
        solve(AlternatingActivations(20), (4, 3), (Fraction(1, 2), Fraction(1, 2)), exact=False, max_states=100)


def test_order_of_fire_is_part_of_the_chain():
    """Strict alternation (Panzer Squadron) and a random order (Hummel Quest) give different survivors from the
    same tanks and odds; so do volleys (ASL) and Brown's random shooter."""
    p = (Fraction(9, 10), Fraction(9, 10))
    alt = solve(AlternatingActivations(20), (2, 2), p)
    rnd = solve(RandomOrderRounds(20), (2, 2), p)
    vol = solve(Volleys(20), (2, 2), p)
    assert alt.p_win(0) == alt.p_win(1) and rnd.p_win(0) == rnd.p_win(1)   # symmetric either way
    assert 0 < alt.p_draw() < Fraction(1, 10**20) and 0 < rnd.p_draw() < Fraction(1, 10**20)
    assert float(rnd.expected_survivors_given_win(0)) - float(alt.expected_survivors_given_win(0)) > 0.3
    assert vol.p_win(0) > Fraction(8, 10)                      # the first volley decides most battles
    assert solve(RandomShooter(), (2, 2), p).expected_survivors_given_win(0) not in (
        alt.expected_survivors_given_win(0), rnd.expected_survivors_given_win(0))


# --- scenarios -----------------------------------------------------------------------------------------------------

def scenario_data(name: str) -> dict:
    src, text = find_scenario(name)
    return yaml.safe_load(text)


def ps_duel_2v2(**side_extra) -> dict:
    """Two T34-85 against two at range 4 (+1), facing each other: kill probability 133/200 a shot."""
    d = scenario_data("ps_square_law")
    d["name"] = "ps_duel_2v2"
    d["sides"][0]["tanks"] = [{"vehicle": "t34_85", "hex": [2, 1], "facing": 0, "label": "B1"},
                              {"vehicle": "t34_85", "hex": [2, 3], "facing": 0, "label": "B2"}]
    d["sides"][1]["tanks"] = [{"vehicle": "t34_85", "hex": [6, -1], "facing": 3, "label": "R1"},
                              {"vehicle": "t34_85", "hex": [6, 1], "facing": 3, "label": "R2"}]
    d["sides"][0].update(side_extra)
    return d


def hq_duel_2v2() -> dict:
    """Two one-hit Hummel Quest tanks against two at 5 hexes (band 1): kill probability 9/10 an attack."""
    d = scenario_data("hq_square_law")
    d["name"] = "hq_duel_2v2"
    d["sides"][0]["tanks"] = d["sides"][0]["tanks"][:2]
    d["sides"][1]["tanks"] = [{**t, "hex": h} for t, h in zip(d["sides"][1]["tanks"][:2], ([7, -1], [7, 1]))]
    return d


def winner_survivors(frame) -> np.ndarray:
    w = frame["winner_index"].to_numpy()
    return np.where(w == 0, frame["side1_alive"], frame["side2_alive"])[w >= 0].astype(float)


def t_interval(x: np.ndarray, conf: float = CONF) -> tuple[float, float]:
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(conf)
    return float(ci.low), float(ci.high)


def test_bundled_square_law_scenarios_qualify():
    ps = oracle.engagement(load_scenario("ps_square_law"))
    assert ps.tanks == (4, 3) and ps.p_kill == (Fraction(17, 40), Fraction(17, 40))
    assert isinstance(ps.schedule, AlternatingActivations) and ps.configurations == 15 * 7
    hq = oracle.engagement(load_scenario("hq_square_law"))
    assert hq.p_kill == (Fraction(1, 2), Fraction(1, 2)) and isinstance(hq.schedule, RandomOrderRounds)
    assert hq.schedule.turn_limit == 50


def test_ps_square_law_simulation_agrees_with_its_chain():
    spec = load_scenario("ps_square_law")
    e = oracle.engagement(spec)
    sol = e.solve()
    frame = oracle.simulate(spec, 150, seed=1000)
    rows = oracle.compare(sol, frame, e.sides, CONF)
    assert [r["quantity"] for r in rows] == ["P(Blue wins)", "P(Red wins)", "P(draw)", "Blue survivors if it wins",
                                             "Red survivors if it wins", "duration (turns)"]
    assert all(r["inside"] for r in rows), rows


def test_alternation_is_what_panzer_squadron_plays():
    """2 v 2 at 133/200: the simulation agrees with the alternating chain and rejects the random-order chain (the
    winner's survivors: 1.36 against 1.53)."""
    spec = validate(ps_duel_2v2(activation_order="random"), "ps_duel_2v2")
    e = oracle.engagement(spec)
    assert e.p_kill == (Fraction(133, 200),) * 2
    frame = oracle.simulate(spec, 300, seed=2000)
    rows = oracle.compare(e.solve(), frame, e.sides, CONF)
    assert all(r["inside"] for r in rows), rows
    lo, hi = t_interval(winner_survivors(frame))
    alt = float(e.solve().expected_survivors_given_win(0))
    rnd = float(solve(RandomOrderRounds(e.schedule.turn_limit), e.tanks, e.p_kill).expected_survivors_given_win(0))
    assert lo <= alt <= hi and not lo <= rnd <= hi


def test_random_order_is_what_hummel_quest_plays():
    spec = validate(hq_duel_2v2(), "hq_duel_2v2")
    e = oracle.engagement(spec)
    assert e.p_kill == (Fraction(9, 10),) * 2 and isinstance(e.schedule, RandomOrderRounds)
    frame = oracle.simulate(spec, 200, seed=3000)
    rows = oracle.compare(e.solve(), frame, e.sides, CONF)
    assert all(r["inside"] for r in rows), rows
    lo, hi = t_interval(winner_survivors(frame))
    rnd = float(e.solve().expected_survivors_given_win(0))
    alt = float(solve(AlternatingActivations(e.schedule.turn_limit), e.tanks, e.p_kill).expected_survivors_given_win(0))
    assert lo <= rnd <= hi and not lo <= alt <= hi


def test_asl_volleys_with_a_one_shot_afv(monkeypatch):
    """No ASL catalog AFV gives kill-or-nothing shots (Immobilization / Shock at TK DR = Final TK#, Acquisition
    changes the To Hit DRM), so a test AFV does: very large (Case P -2), no armour, no ROF; 1 v 2 at range 2
    (Case L -1, BU +1: every DR hits; TK 13 - AF 0: every TK DR but the Dud kills)."""
    from sim.rules import base as rules_base

    rs = rules_base.get("asl")
    cls = type(rs)
    real = cls.vehicle
    base = real(rs, "t34_m41")
    fake = dataclasses.replace(base, id="oracle_test_afv", size="very_large", rof=0,
                               af={"hull_front": 0, "hull_side": 0, "turret_front": 0, "turret_side": 0})
    monkeypatch.setattr(cls, "vehicle", lambda self, vid: fake if vid == "oracle_test_afv" else real(self, vid))
    d = {"name": "asl_volley_test", "ruleset": {"name": "asl", "options": {"malfunction": False}},
         "map": {"shape": "rectangle", "width": 6, "height": 6, "hex_size_m": 40}, "turn_limit": 3,
         "sides": [{"name": "Axis", "role": "attacker", "policy": "random_target",
                    "tanks": [{"vehicle": "oracle_test_afv", "hex": [0, 2], "facing": 0}]},
                   {"name": "Allies", "role": "defender", "policy": "random_target",
                    "tanks": [{"vehicle": "oracle_test_afv", "hex": [2, 0], "facing": 3},
                              {"vehicle": "oracle_test_afv", "hex": [2, 2], "facing": 3}]}]}
    spec = validate(d, "asl_volley_test")
    e = oracle.engagement(spec)
    assert e.p_kill == (Fraction(35, 36),) * 2 and e.schedule.pattern == (0, 1, 1, 0)
    sol = e.solve()
    # Axis fires first and kills one (35/36); the other then kills it (35/36) unless it missed...
    assert sol.p_win(1) > Fraction(9, 10)
    frame = oracle.simulate(spec, 120, seed=4000)
    rows = oracle.compare(sol, frame, e.sides, CONF)
    assert all(r["inside"] is not False for r in rows), rows
    # the catalog AFVs are refused, with the reasons
    d2 = copy.deepcopy(d)
    for s in d2["sides"]:
        for t in s["tanks"]:
            t["vehicle"] = "t34_m41"
    with pytest.raises(oracle.OracleRefused) as err:
        oracle.engagement(validate(d2, "asl_catalog"))
    assert "Acquisition" in str(err.value) or "p_immobilized" in str(err.value)


# --- refusals ------------------------------------------------------------------------------------------------------

def test_refusals_name_every_assumption_that_fails():
    with pytest.raises(oracle.OracleRefused) as err:
        oracle.engagement(load_scenario("default"))
    text = " ".join(err.value.reasons)
    assert "plays 'advance'" in text and "plays 'hold'" in text and "not identical" in text
    assert "objectives" in text
    # terrain
    d = scenario_data("ps_square_law")
    d["map"]["terrain"] = [{"tile": "woods", "hexes": [[8, -1]]}]
    with pytest.raises(oracle.OracleRefused, match="terrain other than open ground"):
        oracle.engagement(validate(d, "t"))
    # a wreck that would stand on a sight line: the shots differ once it is destroyed
    d = scenario_data("ps_square_law")
    d["sides"][0]["tanks"][1]["hex"] = [4, 1]
    with pytest.raises(oracle.OracleRefused, match="with B2 destroyed"):
        oracle.engagement(validate(d, "t"))
    # range-dependent odds: one red tank within 5 hexes (+1)
    d = scenario_data("ps_square_law")
    d["sides"][1]["tanks"][0]["hex"] = [6, -2]
    with pytest.raises(oracle.OracleRefused, match="the shots differ"):
        oracle.engagement(validate(d, "t"))
    # Hummel Quest: a tank that a hit may damage without incapacitating
    d = scenario_data("hq_square_law")
    for s in d["sides"]:
        for t in s["tanks"]:
            t["rules"] = {}
    with pytest.raises(oracle.OracleRefused, match="does not always incapacitate"):
        oracle.engagement(validate(d, "t"))
    d = scenario_data("hq_square_law")
    for s in d["sides"]:
        for t in s["tanks"]:
            t["rules"] = {"dt": 1, "ost": 6}
    with pytest.raises(oracle.OracleRefused, match="panic"):
        oracle.engagement(validate(d, "t"))


def test_oracle_command(capsys):
    from sim.cli.main import main

    assert main(["oracle", "ps_square_law", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["qualifies"] and doc["exact"] and doc["p_kill"] == {"Blue": "17/40", "Red": "17/40"}
    total = Fraction(doc["p_win"]["Blue"]) + Fraction(doc["p_win"]["Red"]) + Fraction(doc["p_draw"])
    assert total == 1 and abs(doc["float"]["p_win"]["Blue"] - 0.7702) < 1e-3
    assert doc["schedule"]["name"] == "alternating_activations" and doc["reference"]["float"]["p_win"]["Blue"] < 0.75
    assert main(["oracle", "default"]) == 1
    assert "the oracle does not apply" in capsys.readouterr().err
    assert main(["oracle", "default", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["qualifies"] is False
    assert main(["oracle", "no_such_scenario"]) == 2
    rc = main(["oracle", "hq_square_law", "--float", "--simulate", "20", "--seed", "5"])
    out = capsys.readouterr().out
    assert "beside 20 simulated battles" in out and "P(Blue wins)" in out
    # six 95 % intervals over 20 battles: here the mean duration (1.85 [1.50, 2.20] against 2.243; 300 battles
    # give 2.277 [2.159, 2.395]) falls outside, and the command says so in its exit code
    assert rc == 1 and out.count("OUTSIDE") == 1 and "duration (turns)" in out.split("OUTSIDE")[0].splitlines()[-1]


# --- the doctrine and the activation order --------------------------------------------------------------------------

def test_random_target_draws_targets_uniformly_and_never_moves():
    d = scenario_data("ps_square_law")
    d["sides"][0]["tanks"] = d["sides"][0]["tanks"][:1]
    d["turn_limit"] = 1
    spec = validate(d, "one_v_three")
    from sim.runner import run_battle

    first = []
    for seed in range(240):
        res = run_battle(spec, seed)
        shots = [json.loads(e["data"]) for e in res.events if e["kind"] == "ShotResolved"]
        mine = [s for s in shots if s["shooter"] == 0]
        if mine:  # else the lone blue tank was destroyed before its activation
            first.append(mine[0]["target"])
        for fs in res.final_state:
            assert fs["hex"] == next(t["hex"] for s in d["sides"] for t in s["tanks"] if t["label"] == fs["label"])
    counts = np.bincount(first, minlength=4)[1:]
    assert counts.sum() == len(first) > 150 and stats.chisquare(counts).pvalue > 0.001


def test_activation_order_random_draws_the_actor_from_the_side_stream():
    from sim.runner import run_battle

    d = ps_duel_2v2()
    order_policy = validate(d, "a")
    order_random = validate(ps_duel_2v2(activation_order="random"), "b")
    assert order_policy.digest() == validate({**d, "sides": [{**d["sides"][0], "activation_order": "policy"},
                                                            d["sides"][1]]}, "c").digest()
    assert order_random.digest() != order_policy.digest()

    def first_actor(spec, seed):
        """The first activation of the battle if it is Blue's (Blue won the initiative: both its tanks live)."""
        res = run_battle(spec, seed)
        acts = [json.loads(e["data"]) for e in res.events if e["kind"] == "Activated"]
        return (acts[0]["tank"] if acts[0]["side"] == 0 else None), res

    firsts = [first_actor(order_policy, s)[0] for s in range(30)]
    assert set(firsts) == {0, None}                       # the doctrine's own choice: the lowest id
    firsts = [first_actor(order_random, s)[0] for s in range(30)]
    assert {0, 1} <= set(firsts)                          # drawn at random
    a, ra = first_actor(order_random, 3)
    b, rb = first_actor(order_random, 3)
    assert a is not None
    assert a == b and ra.events == rb.events              # from the side's seeded stream: deterministic


def test_simulated_survivor_intervals_stay_between_none_and_the_sides_tanks():
    # three battles won by side 0 with 1, 1 and 3 tanks left of 3: Student's t gives [-1.2, 4.5]; the comparison
    # clips it to [0, 3] (side 0 has 3 tanks), as the report's legend says; turns likewise to [0, inf)
    import pandas as pd

    sol = solve(AlternatingActivations(20), (3, 2), (Fraction(1, 2), Fraction(1, 2)))
    frame = pd.DataFrame({"winner_index": [0, 0, 0], "side1_alive": [1, 1, 3], "side2_alive": [0, 0, 0],
                          "turns": [2, 3, 9]})
    rows = {r["quantity"]: r for r in oracle.compare(sol, frame, ["Red", "Blue"])}
    red = rows["Red survivors if it wins"]
    raw = stats.ttest_1samp([1.0, 1.0, 3.0], 0.0).confidence_interval(0.95)
    assert raw.low < 0 and raw.high > 3
    assert (red["lo"], red["hi"]) == (0.0, 3.0)
    turns = rows["duration (turns)"]
    raw_t = stats.ttest_1samp([2.0, 3.0, 9.0], 0.0).confidence_interval(0.95)
    assert raw_t.low < 0 and turns["lo"] == 0.0 and turns["hi"] == pytest.approx(raw_t.high)
