"""The policy layer's contract: neutral, read-only observations; doctrines that import no rule set and see no dice;
decision kinds a doctrine does not know get the default; every doctrine parameter settable from scenario data and
from ``--policy SIDE=NAME[:param=value,...]``; every doctrine plays under every available rule set."""
from __future__ import annotations

import ast
import json
import random
from fractions import Fraction

import pytest
import yaml

from agents.controllers import load_policy
from agents.observation import Observation, ReadOnlyError, TankView
from agents.policies import BUILTIN
from agents.policies.base import Policy
from conftest import ROOT, small_ps_scenario
from sim.actions import Pass
from sim.cli.main import main as cli_main
from sim.cli.main import parse_policy_arg
from sim.events import Moved, Pivoted
from sim.hexgrid import Hex
from sim.model import BattleModel
from sim.rules import base as rules_base
from sim.rules.base import Decision, Hypo, Illegal, Legal
from sim.runner import run_battle
from sim.scenario import PolicySpec, bundled_dir, side_index, validate

OBJ = {"hex": [6, 2], "points": 2, "name": "crossroads"}


def first_obs(policies=None, **over):
    """A model of the small board and an observation for the first decision of side 0."""
    m = BattleModel(validate(small_ps_scenario(objectives=[OBJ], **over)), 3, policies)
    while m._decision is None or m._decision.side != 0:
        m.advance(1)
    return m, m._observation(0)(m._decision)


# --- read-only ------------------------------------------------------------------------------------------------

def test_observation_refuses_every_write():
    m, obs = first_obs()
    b = m.battle
    before = [(t.hex, t.facing, t.status, dict(t.rules_state)) for t in b.tanks]
    me = obs.me
    enemy = obs.enemies()[0]
    with pytest.raises(ReadOnlyError):
        obs.side = 1
    with pytest.raises(ReadOnlyError):
        obs.rng = random.Random(0)
    with pytest.raises(ReadOnlyError):
        del obs.actor
    with pytest.raises(ReadOnlyError):
        me.hex = Hex(0, 0)
    with pytest.raises(ReadOnlyError):
        enemy.status = "destroyed"
    with pytest.raises(ReadOnlyError):
        obs.friends()[0].facing = 3
    with pytest.raises(TypeError):
        me.rules_state["marker"] = "in_movement"
    with pytest.raises(TypeError):
        me.vehicle.armour["front"] = 0
    with pytest.raises((ReadOnlyError, AttributeError)):
        me.vehicle.penetration = 999
    with pytest.raises(TypeError):
        obs.context["modes"] = {}
    with pytest.raises(TypeError):
        obs.decision.context["turn"] = 99
    with pytest.raises((TypeError, AttributeError)):
        obs.decision.kind = "fire"
    with pytest.raises(TypeError):
        obs.objectives()[0]["points"] = 100
    with pytest.raises(TypeError):
        obs.last_known()[enemy.tank_id] = Hex(0, 0)
    reach = obs.reachable()
    with pytest.raises(TypeError):
        reach[(Hex(0, 0), 0)] = (0, ())
    assert all(isinstance(p, tuple) for _c, p in reach.values())
    with pytest.raises(AttributeError):
        me.state  # noqa: B018 - the read itself must raise
    # no dice, no rule-set object through the public API
    assert not any(hasattr(obs, n) for n in ("dice", "battle", "model", "rules"))
    assert isinstance(obs.ruleset, str) and obs.ruleset == "panzer_squadron"
    assert not hasattr(me, "dice")
    assert [(t.hex, t.facing, t.status, dict(t.rules_state)) for t in b.tanks] == before
    assert b.objectives[0]["points"] == 2 and b.tanks[me.tank_id].vehicle.armour["front"] > 0


class Vandal(Policy):
    """Tries to move its tank by writing through the observation (it raises: a fault, the board unchanged)."""

    def decide(self, obs, decision):
        if obs.me is not None:
            obs.me.hex = Hex(0, 0)
        return decision.default


def test_a_policy_writing_through_its_observation_faults_and_changes_nothing():
    d = small_ps_scenario(turn_limit=2)
    d["sides"][0]["policy"] = "test_policies:Vandal"
    d["sides"][0]["max_faults"] = 1000
    res = run_battle(validate(d), seed=1)
    faults = [json.loads(e["data"]) for e in res.events if e["kind"] == "PolicyFault"]
    assert faults and all("ReadOnlyError" in f["message"] for f in faults)
    moved = [json.loads(e["data"]) for e in res.events if e["kind"] == "Moved"]
    assert not [x for x in moved if x["tank"] < 3]


def test_doctrines_import_no_rule_set_and_see_no_dice():
    folder = ROOT / "agents" / "policies"
    for f in sorted(folder.glob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            for mod in mods:
                assert not mod.startswith(("sim.rules", "sim.dice", "sim.model", "sim.battle", "sim.events")), \
                    f"{f.name} imports {mod}"
                assert mod.startswith(("agents.", "sim.actions", "sim.hexgrid", "sim.messages", "__future__", "typing",
                                       "fractions", "collections", "dataclasses", "math")), f"{f.name} imports {mod}"
        assert ".dice" not in f.read_text(encoding="utf-8")


def test_unknown_decision_kinds_get_the_default():
    _m, obs = first_obs()
    odd = Decision(0, "negotiate_surrender", obs.decision.actors, Legal(), Pass(obs.actor), {})
    for name, cls in BUILTIN.items():
        assert cls().decide(obs, odd) == odd.default, name
    assert Policy().decide(obs, odd) == odd.default


# --- neutral queries ------------------------------------------------------------------------------------------

def test_neutral_queries_agree_with_the_rule_set():
    m, obs = first_obs()
    b, rs = m.battle, m.battle.ruleset
    me = obs.me
    enemies = obs.enemies()
    assert [e.tank_id for e in enemies] == list(rs.visible(b, 0)) and all(isinstance(e, TankView) for e in enemies)
    assert {f.tank_id for f in obs.friends()} == {t.tank_id for t in b.live_tanks(0)} - {me.tank_id}
    assert dict(obs.last_known()) == {e.tank_id: e.hex for e in enemies}
    assert obs.objectives()[0]["hex"] == Hex(6, 2) and obs.role == "attacker"
    e = enemies[0].tank_id
    shot = rs.shot(b, me.tank_id, e)
    assert obs.los(me.tank_id, e) == (not isinstance(shot, Illegal))
    if not isinstance(shot, Illegal):
        assert obs.odds(e) == rs.odds(shot.key) and obs.face(e) == shot.face
    assert obs.distance(me.hex, enemies[0].hex) == max(abs(me.hex.q - enemies[0].hex.q),
                                                       abs(me.hex.r - enemies[0].hex.r),
                                                       abs(me.hex.s - enemies[0].hex.s))
    # odds from a hypothetical position: the rule set's shot from there
    st = next(s for s in obs.reachable() if obs.hex_of(s) != me.hex)
    hyp = obs.hypo(st)
    assert hyp == Hypo(obs.hex_of(st), obs.facing_of(st), True)
    for t in obs.visible_ids():
        sh = rs.shot(b, me.tank_id, t, None, hyp)
        assert obs.odds(t, as_if=hyp) == (None if isinstance(sh, Illegal) else rs.odds(sh.key))
    # threat: the enemies' summed kill odds against me standing there
    from sim.battle import HypoView
    view = HypoView(b, me.tank_id, hyp.hex, hyp.facing)
    expect = sum((rs.odds(s.key).p_kill for s in (rs.shot(view, t, me.tank_id) for t in obs.visible_ids())
                  if not isinstance(s, Illegal)), Fraction(0))
    assert obs.threat(hyp.hex, hyp.facing) == expect
    assert obs.side_odds(e) == sum((o.p_kill for o in (obs.odds(e, shooter=s) for s in obs.own_ids()) if o),
                                   Fraction(0))
    with pytest.raises(KeyError):
        obs.odds(me.tank_id, shooter=e)  # an enemy's shot is asked through threat(), not odds()


def test_last_known_positions_and_threat_from_remembered_enemies():
    m, obs = first_obs()
    b = m.battle
    e = obs.enemies()[0]
    seen_at, seen_facing = e.hex, e.facing
    memory = obs._last_known
    # the enemy drives out of sight: it is remembered where this side's policy last saw it (each observation made
    # for a policy call records the visible enemies), and still counted there as a threat
    for h in sorted(b.map.cells, reverse=True):
        if b.occupants(h):
            continue
        b.emit(Moved(e.tank_id, h, seen_facing))
        obs2 = Observation(b, 0, obs.decision, obs.rng, last_known=memory)
        if e.tank_id not in obs2.visible_ids():
            break
        seen_at = h
    else:
        pytest.skip("no hidden hex on this board")
    assert obs2.last_known()[e.tank_id] == seen_at != b.tanks[e.tank_id].hex
    assert e.tank_id not in [x.tank_id for x in obs2.enemies()]
    with pytest.raises(KeyError):
        obs2.tank(e.tank_id)
    fresh = Observation(b, 0, obs.decision, obs.rng, last_known={})
    me = obs2.me
    ghost = obs2.threat(me.hex, me.facing) - fresh.threat(me.hex, me.facing)
    rs = b.ruleset
    from sim.battle import HypoView
    view = HypoView(b, e.tank_id, seen_at, seen_facing)
    shot = rs.shot(view, e.tank_id, me.tank_id)
    assert ghost == (0 if isinstance(shot, Illegal) else rs.odds(shot.key).p_kill)


def test_shared_caches_are_per_battle_version():
    m, obs = first_obs()
    me = obs.me
    t1 = obs.threat(me.hex, me.facing)
    obs_b = obs.for_actor(obs.friends()[0].tank_id)
    assert obs_b._shared is obs._shared and obs_b._cache is obs._cache
    m.battle.emit(Pivoted(me.tank_id, (me.facing + 3) % 6))
    obs_c = m._observation(0)(m._decision)
    assert obs_c._shared is not obs._shared and set(obs_c._shared) == {("visible", 0)}  # recorded at construction
    assert obs_c.threat(me.hex, me.facing) == t1  # the same question, asked again against the new board


# --- parameters are data --------------------------------------------------------------------------------------

def other_value(cls, k, default):
    """A valid non-default value for parameter ``k``."""
    _lo, hi = cls.bounds.get(k, (None, None))
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        v = default + 1
        return v if hi is None or v <= hi else default - 1
    if isinstance(default, float):
        v = round(default + 0.25, 2)
        return v if hi is None or v <= hi else round(default - 0.25, 2)
    return default


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_parameter_is_settable_from_yaml_and_the_command_line(name, tmp_path):
    cls = BUILTIN[name]
    assert cls.defaults, f"{name} documents no parameters"
    doc = (cls.__module__ and __import__(cls.__module__, fromlist=["x"]).__doc__) or ""
    values = {k: other_value(cls, k, v) for k, v in cls.defaults.items()}
    for k, v in cls.defaults.items():
        assert f"``{k}``" in doc, f"{name}: parameter {k} is not documented in its module docstring"
        assert values[k] != v or isinstance(v, str)
    # from scenario data (YAML mapping): sides[].policy {name, params}
    d = small_ps_scenario(turn_limit=2)
    d["sides"][1]["policy"] = {"name": name, "params": values}
    spec = validate(yaml.safe_load(yaml.safe_dump(d)), "p.yaml")
    m = BattleModel(spec, 0)
    assert m.controllers[1].policy.params == values and type(m.controllers[1].policy) is cls
    # from the command line: SIDE=NAME[:param=value,...], side by name or by position
    arg = f"{name}:" + ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items())
    for side_key in ("2", "Blue"):
        side, pname, params = parse_policy_arg(f"{side_key}={arg}")
        assert side_index(spec, side) == 1 and pname == name
        m2 = BattleModel(validate(small_ps_scenario(turn_limit=2)), 0, {1: PolicySpec(name=pname, params=params)})
        assert m2.controllers[1].policy.params == values
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario(turn_limit=2)))
    assert cli_main(["run", str(f), "--seed", "1", "--json", "--policy", f"Blue={arg}", "--policy",
                     f"1={name}"]) == 0


def test_bad_parameters_are_clear_errors():
    with pytest.raises(ValueError, match=r"Flank: parameter flank_bias='lots': expected float"):
        load_policy("flank", {"flank_bias": "lots"})
    with pytest.raises(ValueError, match=r"out of range \[0.0, 1.0\]"):
        load_policy("advance", {"min_odds": 1.5})
    with pytest.raises(ValueError, match=r"Greedy has no parameter\(s\) risk; parameters: risk_weight"):
        load_policy("greedy", {"risk": 1})
    assert load_policy("hold", {"overwatch": "no"}).overwatch is False
    assert load_policy("advance", {"min_odds": "1/4"}).min_odds == 0.25


# --- every doctrine under every rule set ----------------------------------------------------------------------

def bundled_for(ruleset: str) -> list[str]:
    out = []
    for f in sorted(bundled_dir().iterdir(), key=lambda x: x.name):
        if f.name.endswith(".yaml"):
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or "sides" not in data:
                continue  # an experiment file, not a scenario
            rs = data.get("ruleset")
            if (rs if isinstance(rs, str) else (rs or {}).get("name", "panzer_squadron")) == ruleset:
                out.append(f.name[:-5])
    return out


def small_version(name: str, tanks_per_side: int = 2, turns: int = 2):
    """A bundled scenario cut down to its first tanks on each side and a short turn limit (kept fast)."""
    from sim.scenario import find_scenario

    src, text = find_scenario(name)
    data = yaml.safe_load(text)
    for s in data["sides"]:
        s["tanks"] = s["tanks"][:tanks_per_side]
    data["turn_limit"] = turns
    return validate(data, src)


@pytest.mark.parametrize("ruleset", rules_base.available())
def test_every_doctrine_plays_every_rule_set_without_faults(ruleset):
    names = bundled_for(ruleset)
    if not names:
        pytest.skip(f"no bundled scenario for {ruleset}")
    spec = small_version(names[0])
    for i, doctrine in enumerate(sorted(BUILTIN)):
        side = i % 2
        res = run_battle(spec, 7, {side: (doctrine, {}), 1 - side: (sorted(BUILTIN)[-1 - i], {})})
        kinds = [e["kind"] for e in res.events]
        assert "PolicyFault" not in kinds, (ruleset, doctrine, side)
        rejected = [json.loads(e["data"]) for e in res.events if e["kind"] == "ActionRejected"]
        assert not rejected, (ruleset, doctrine, side, rejected[:2])
        assert kinds[-1] == "BattleEnded"
