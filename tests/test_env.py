"""The PettingZoo / Gymnasium environments (sim.env) and the array layout (agents.encoding): conformance under all
three rule sets with no warnings, seeding that reproduces event logs, masks that never need an illegal action,
observations that reveal no hidden enemy, rewards, rendering."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("gymnasium")

import gymnasium  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import api_test, seed_test  # noqa: E402

from agents import encoding as E  # noqa: E402
from agents.policies.base import Policy  # noqa: E402
from sim import env as tenv  # noqa: E402
from sim.rules import base as rules_base  # noqa: E402
from sim.runner import log_rows, run_battle  # noqa: E402
from sim.scenario import load_scenario, validate  # noqa: E402

#: One bundled scenario per rule set.  Hummel Quest's ``hq_skirmish`` is a 120 x 120 map whose steps are slow (its
#: sight rules on long lines), so the HQ conformance runs use ``hq_ram_brawl`` (30 x 30, rams and evasions) and
#: ``hq_skirmish`` gets a shorter API test of its own.
BUNDLED = [("default", 60), ("asl_1941_meeting", 60), ("hq_ram_brawl", 60)]
VEHICLES = {"panzer_squadron": "pz_iv_h", "asl": "pzkpfw_iiih", "hummel_quest": "hq_example_medium"}
HEX_M = {"panzer_squadron": 50, "asl": 40, "hummel_quest": 10}

#: PettingZoo's api_test warns about any dict observation unless the environment's name is one of its own Classic
#: environments (pettingzoo/test/api_test.py, ``env_obs_dicts`` / ``env_obs_space``): those two messages, and only
#: those, are allowed for the dict formats; the flat format must pass with no warning at all.
PZ_DICT_BY_NAME = (r"Observation is not a NumPy array",
                   r"Observation space for each agent probably should be gymnasium.spaces.box or "
                   r"gymnasium.spaces.discrete")


def small(ruleset: str, turns: int = 6, **over) -> dict:
    """2 v 2 of one vehicle on an open 8 x 8 map, mirrored."""
    v = VEHICLES[ruleset]
    d = {"name": f"small_{ruleset}", "ruleset": ruleset, "turn_limit": turns,
         "map": {"width": 8, "height": 8, "hex_size_m": HEX_M[ruleset]},
         "sides": [{"name": "West", "tanks": [{"vehicle": v, "hex": [1, 2]}, {"vehicle": v, "hex": [1, 5]}]},
                   {"name": "East", "tanks": [{"vehicle": v, "hex": [6, -1], "facing": 3},
                                              {"vehicle": v, "hex": [6, 2], "facing": 3}]}]}
    d.update(over)
    return d


def strict():
    """A context in which every warning is an error."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def test_every_rule_sets_terrain_is_in_the_layout_vocabulary():
    for name in E.RULESETS:     # the three rule sets (other tests register a probe rule set of their own)
        assert set(rules_base.get(name).terrain_names()) <= set(E.TERRAINS), name


@pytest.mark.parametrize("scenario,cycles", BUNDLED)
def test_pettingzoo_api_test_with_no_warnings(scenario, cycles):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        api_test(tenv.env(scenario=scenario, obs_type="flat"), num_cycles=cycles)
    for obs_type in ("dict", "classic"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for msg in PZ_DICT_BY_NAME:
                warnings.filterwarnings("ignore", message=msg)
            api_test(tenv.env(scenario=scenario, obs_type=obs_type), num_cycles=cycles // 3)


def test_pettingzoo_api_test_on_the_big_hummel_quest_map():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        api_test(tenv.env(scenario="hq_skirmish", obs_type="flat"), num_cycles=8)


@pytest.mark.parametrize("scenario,cycles", BUNDLED)
def test_pettingzoo_seed_test(scenario, cycles):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for obs_type in ("dict", "flat"):
            seed_test(lambda obs_type=obs_type: tenv.env(scenario=scenario, obs_type=obs_type), num_cycles=cycles)


@pytest.mark.parametrize("scenario", [s for s, _ in BUNDLED])
def test_gymnasium_check_env_with_no_warnings(scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for obs_type in ("dict", "classic", "flat"):
            env = gymnasium.make(tenv.GYM_ID, scenario=scenario, opponent="greedy", obs_type=obs_type)
            check_env(env.unwrapped)      # render modes checked through the registered spec too


def test_the_layout_is_the_same_under_every_rule_set():
    envs = [tenv.TankEnv(validate(small(rs), "small")) for rs in ("panzer_squadron", "asl", "hummel_quest")]
    spaces = [(e.observation_space("side_0"), e.action_space("side_0")) for e in envs]
    assert all(s == spaces[0] for s in spaces)
    assert spaces[0][0]["board"].shape == (len(E.BOARD_PLANES), 8, 8)
    assert spaces[0][1].n == 2 + 2 * (len(E.SLOT_VERBS) + 2 * len(E.TARGET_VERBS))
    for e in envs:
        e.reset(seed=1)
        obs = e.observe(e.agent_selection)
        assert set(obs) == {"board", "own", "enemy", "decision", "action_mask"}
        assert obs["action_mask"].dtype == np.int8 and obs["board"].dtype == np.float32
        assert np.array_equal(obs["action_mask"], e.infos[e.agent_selection]["action_mask"])


def drive(env: tenv.TankEnv, choose, check=None) -> None:
    """Play ``env`` (reset already) to the end, answering every agent with ``choose(env, agent)``."""
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        if check is not None:
            check(env, agent)
        env.step(choose(env, agent))


def test_masked_random_agents_play_100_battles_without_an_illegal_action():
    rng = np.random.default_rng(7)
    rulesets = ("panzer_squadron", "asl", "hummel_quest")
    envs = {rs: tenv.TankEnv(validate(small(rs, turns=5), "small")) for rs in rulesets}
    checked = 0

    def every_masked_action_is_legal(env, agent):
        nonlocal checked
        d = env.model.pending()
        enc = env._current
        for i in np.flatnonzero(enc.mask):
            act = enc.action(int(i))
            assert d.legal.contains(act), (env.spec.ruleset.name, d.kind, env.action_space(agent), act)
            checked += 1

    def masked_random(env, agent):
        legal = np.flatnonzero(env.infos[agent]["action_mask"])
        return int(legal[rng.integers(len(legal))])

    kinds = set()
    for k in range(100):
        rs = rulesets[k % 3]
        env = envs[rs]
        env.reset(seed=k)
        drive(env, masked_random, every_masked_action_is_legal if k < 15 else None)
        log = [e.event for e in env.model.battle.log]
        kinds |= {e.kind for e in log}
        assert env.illegal_actions == 0, (rs, k)
        assert not [e for e in log if e.kind in ("ActionRejected", "PolicyFault")], (rs, k)
        assert log[-1].kind == "BattleEnded"
    assert checked > 1000
    assert {"ShotResolved", "Moved", "Pivoted"} <= kinds  # the agents did fire, move and turn


class Defaulter(Policy):
    """Always the decision's default (what the environment's action 0 answers)."""


def test_reset_seed_reproduces_the_event_log_of_the_same_battle():
    spec = load_scenario("skirmish_2v2")
    env = tenv.TankEnv(spec, policies={1: "greedy"})
    env.reset(seed=11)
    drive(env, lambda e, a: 0)
    expect = run_battle(spec, 11, {0: Defaulter(), 1: ("greedy", {})}).events
    assert log_rows(env.model) == expect
    assert {"ShotResolved", "BattleEnded"} <= {e["kind"] for e in expect}
    # the same seed and the same answers again: the same log; another seed: another battle
    logs = []
    for seed in (5, 5, 6):
        rng = np.random.default_rng(3)
        env.reset(seed=seed)
        drive(env, lambda e, a, rng=rng: int(rng.choice(np.flatnonzero(e.infos[a]["action_mask"]))))
        logs.append(log_rows(env.model))
    assert logs[0] == logs[1] and logs[0] != logs[2]
    # reset() without a seed draws the next battle seed from the generator the last seed started
    env.reset(seed=5)
    env.reset()
    first = env.battle_seed
    env.reset(seed=5)
    env.reset()
    assert env.battle_seed == first


def test_an_illegal_index_is_the_engines_business_not_an_error():
    env = tenv.TankEnv(validate(small("panzer_squadron"), "small"))
    env.reset(seed=2)
    agent = env.agent_selection
    bad = int(np.flatnonzero(env.infos[agent]["action_mask"] == 0)[0])
    env.step(bad)
    assert env.illegal_actions == 1
    assert [e.event.kind for e in env.model.battle.log].count("ActionRejected") == 1
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(env.action_space(env.agent_selection).n)


def test_observations_reveal_no_hidden_enemy():
    """Two battles that differ only in where a hidden enemy stands give its opponent the same arrays."""
    wall = [[4, r - 2] for r in range(0, 8)] + [[3, r - 1] for r in range(0, 8)]

    def spec(east_hex):
        d = small("panzer_squadron")
        d["map"]["terrain"] = [{"tile": "building", "hexes": wall}]
        d["sides"][1]["tanks"][1]["hex"] = east_hex
        return validate(d, "walled")

    views = []
    for east in ([6, 2], [7, -1]):
        env = tenv.TankEnv(spec(east))
        env.reset(seed=4)
        assert env.agent_selection == "side_0" or env.agent_selection == "side_1"
        views.append({a: env.observe(a) for a in env.agents})
        hidden = [t.tank_id for t in env.model.battle.tanks if t.side == 1]
        assert not set(hidden) & set(env._idle_observation(0).visible_ids())
    for k in ("board", "own", "enemy", "decision"):
        assert np.array_equal(views[0]["side_0"][k], views[1]["side_0"][k]), k
    assert not np.array_equal(views[0]["side_1"]["board"], views[1]["side_1"]["board"])  # its own tank moved


def test_rewards_outcome_and_shaping():
    env = tenv.TankEnv(validate(small("panzer_squadron", turns=8), "small"), policies={1: "random"},
                       reward={"win": 2.0, "loss": -3.0, "kill": 0.25, "own_loss": -0.5})
    rng = np.random.default_rng(0)
    totals = []
    for seed in range(8):
        env.reset(seed=seed)
        total = 0.0
        while env.agents:
            _obs, r, term, trunc, _info = env.last()
            total += r
            if term or trunc:
                env.step(None)
                continue
            env.step(int(rng.choice(np.flatnonzero(env.infos["side_0"]["action_mask"]))))
        m = env.model
        lost = {s: sum(t.status in ("destroyed", "incapacitated", "withdrawn", "fled") for t in m.battle.tanks
                       if t.side == s) for s in (0, 1)}
        w = m.outcome.winner
        expect = (2.0 if w == 0 else -3.0 if w == 1 else 0.0) + 0.25 * lost[1] - 0.5 * lost[0]
        assert total == pytest.approx(expect), (seed, w, lost)
        totals.append(total)
    assert len(set(totals)) > 1
    with pytest.raises(ValueError, match="unknown key"):
        tenv.TankEnv("default", reward={"victory": 1})


def test_skip_trivial_asks_only_real_choices():
    env = tenv.TankEnv("default", skip_trivial=True)   # compulsory moves with one way out happen here
    rng = np.random.default_rng(1)
    asked = skipped = 0
    for seed in range(3):
        env.reset(seed=seed)
        while env.agents:
            a = env.agent_selection
            if env.terminations[a]:
                env.step(None)
                continue
            assert env._current.choices() > 1
            asked += 1
            env.step(int(rng.choice(np.flatnonzero(env.infos[a]["action_mask"]))))
        skipped += env.skipped
    assert asked > 0 and skipped > 0


def test_gym_wrapper_masks_and_render():
    env = tenv.gym_env("skirmish_2v2", side="East", opponent=("advance", {}), render_mode="rgb_array",
                       max_decisions=3)
    obs, info = env.reset(seed=9)
    assert env.side == 1
    assert np.array_equal(env.action_masks(), obs["action_mask"].astype(bool))
    assert np.array_equal(info["action_mask"], obs["action_mask"])
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0
    done, n = False, 0
    while not done:
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        done, n = term or trunc, n + 1
    assert n <= 3 and (trunc or term)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_frozen_callable_opponent_and_bad_arguments():
    from learned_policies import last_legal

    env = tenv.gym_env("skirmish_2v2", opponent=last_legal, obs_type="flat")
    obs, _ = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape
    with pytest.raises(ValueError, match="obs_type"):
        tenv.TankEnv("default", obs_type="pixels")
    with pytest.raises(ValueError, match="not asl"):
        tenv.TankEnv("default", ruleset="asl")
    assert tenv.TankEnv(None, ruleset="hummel_quest").spec.name == "hq_skirmish"
    with pytest.raises(ValueError, match="every side has a doctrine"):
        tenv.TankEnv("default", policies={0: "hold", "Germans": "hold"})


def test_actions_decode_as_documented():
    env = tenv.TankEnv(validate(small("panzer_squadron"), "small"))
    env.reset(seed=0)
    enc = env._current
    table = enc.table
    d = enc.decision
    assert enc.action(E.DEFAULT) == d.default
    own = table.layout.own_ids
    enemy = table.layout.enemy_ids
    assert table.describe(table.index(1, "fire", 0)) == "slot 1: fire enemy slot 0"
    fire = enc.action(table.index(1, "fire", 0))
    assert (type(fire).__name__, fire.actor, fire.target) == ("Fire", own[1], enemy[0])
    step = enc.action(table.index(0, ("step", 5)))
    assert step.to == enc.hexes[own[0]].neighbour(5)
    assert json.dumps(table.describe(0)) == '"default"'
