"""Observations hide what the side cannot see (DESIGN.md "Trust boundaries").

In real battles of all three rule sets (bundled scenarios, built-in doctrines, fixed seeds), at decisions where the
side has hidden enemies, every public query of :class:`agents.observation.Observation` -- found by introspection,
so a new query fails :func:`test_every_public_query_is_classified` until it is walked here -- and every message of
the isolated protocol (the serialised observation, the answer to every query a child may ask) is recorded; then
the hidden enemies are moved to other hexes where they stay hidden, or taken off the board, and everything is
recorded again.  The records must be identical: nothing about a hidden enemy leaks.

Hypothesis draws the battles and the new hexes (derandomized: a fixed seed).  ASL has no hidden enemies (every unit
is Known, asl.md 1): the test checks that the observation shows every live enemy there.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import random
from collections.abc import Callable, Iterator, Mapping

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agents import isolation, remote
from agents.observation import Observation, ReadOnly, SideLegal, TankView
from agents.policies.base import Policy
from sim.actions import Activate, Fire, Pass, Pivot, Ram, Special, Step
from sim.battle import BattleState as Battle  # the concrete battle (sim.battle.Battle is its protocol)
from sim.battle import TankState
from sim.dice import DiceSource
from sim.events import Moved
from sim.hexgrid import Hex, HexMap, distance
from sim.model import BattleModel
from sim.rules.base import Hypo, Ruleset
from sim.scenario import load_scenario
from sim.search import SearchBattle

#: A bundled scenario per rule set and the doctrines that play it.
BATTLES = {
    "panzer_squadron": ("default", ("greedy", "flank")),
    "hummel_quest": ("hq_skirmish", ("random", "random")),
    "asl": ("asl_1941_meeting", ("greedy", "rush")),
}
#: Decisions with hidden enemies walked per battle (Hummel Quest's big map makes each walk slower).
POINTS = {"panzer_squadron": 2, "hummel_quest": 1, "asl": 2}
#: Rule sets whose walked battles must include a hidden enemy moved into the side's reach (where it would block a
#: move: the movement-search channel).  Hummel Quest's bundled map has no hiding place that close to a tank.
BLOCKING = ("panzer_squadron",)
#: Public attributes that are facts of the decision, not queries (compared by value).
FACTS = ("actor", "context", "decision", "has_ramming", "kind", "me", "role", "ruleset", "side", "turn",
         "turn_limit")
#: Queries whose answers are large (movement searches, distance fields): over the protocol they are asked for the
#: own tanks only (their encoding is the slow part; the in-process walk asks every id).
BIG_ANSWERS = ("reachable", "targets", "distance_field", "plan_to")
#: The side's own random stream: no board information in it (compared as "present").
OWN_STREAM = ("rng",)
ERRORS = (KeyError, ValueError, TypeError, IndexError, AttributeError)


# --- what a policy can ask ------------------------------------------------------------------------------------
class Probe:
    """The arguments every query is asked with at one decision: ids (all tanks plus bad ones), hexes (the actor's
    and its friends' neighbourhoods, and every hex a hidden enemy stands on in any variant, with neighbours) and
    actions (for every id: fire, ram, the specials with a target; steps to every probe hex)."""

    def __init__(self, obs: Observation, extra_hexes: set[Hex]):
        b = obs._b
        n = len(b.tanks)
        self.ids = list(range(n)) + [-1, n, True]
        self.own = [t.tank_id for t in b.tanks if t.side == obs.side]
        self.cells = sorted(b.map.cells)
        around = {t.hex for t in b.live_tanks(obs.side)} | set(extra_hexes)
        self.hexes = sorted({x for h in around for x in (h, *h.neighbours())})
        self.near_hidden = sorted({x for h in extra_hexes for x in (h, *h.neighbours())})
        me = obs.actor
        self.actions = [obs.decision.default, Pass(me), Pass(None), Special(me, "end_move", {"status": None})]
        for m in obs.decision.legal.modes:
            self.actions += [Activate(a, m) for a in obs.decision.actors]
        for t in self.ids:
            self.actions += [Fire(me, t), Ram(me, t)]
            self.actions += [Special(me, s, {"target": t}) for s in obs.decision.legal.specials]
        self.actions += [Step(me, h) for h in self.hexes] + [Pivot(me, f) for f in range(6)]
        reach = {}
        with contextlib.suppress(*ERRORS):
            reach = obs.reachable()
        paths = sorted((p for _c, p in reach.values() if len(p) > 1), key=lambda p: (-len(p), repr(p)))[:3]
        self.paths = paths
        self.states = [p[-1] for p in paths]
        self.hypos = [None] + [Hypo(obs.hex_of(s), obs.facing_of(s), True) for s in self.states] + \
            [Hypo(h, 0, True) for h in sorted(extra_hexes)]


def calls(probe: Probe, obs: Observation) -> dict[str, list[tuple[tuple, dict, int | None]]]:
    """For every public query: the ``(args, kwargs, actor)`` it is asked with (actor = for_actor / protocol
    ``actor``; ``None`` = the decision's first actor)."""
    own = probe.own
    me = obs.actor
    a0 = me if me is not None else (own[0] if own else None)
    h0 = obs.me.hex if obs.me is not None else probe.hexes[0]
    return {
        "tank": [((i,), {}, None) for i in probe.ids],
        "friends": [((), {}, a) for a in [None, *own]],
        "own_ids": [((), {}, None)],
        "visible_ids": [((), {}, None)],
        "known_ids": [((), {}, None)],
        "enemies": [((), {}, None)],
        "last_known": [((), {}, None)],
        "objectives": [((), {}, None)],
        "holder": [((h,), {}, None) for h in probe.hexes],
        "terrain_map": [((), {}, None)],
        "order_of_battle": [((), {}, None)],
        "targets": [((i,), {}, None) for i in probe.ids] + [((), {}, a) for a in own],
        "reachable": [((i,), {}, None) for i in probe.ids] + [((), {}, a) for a in own],
        "modes": [((i,), {}, None) for i in probe.ids],
        "plan_to": [((p,), {}, None) for p in probe.paths],
        "is_legal": [((act,), {}, None) for act in probe.actions],
        "ram_targets": [((i,), {}, None) for i in probe.ids] + [((), {}, a) for a in own],
        "passable": [((h,), {}, None) for h in probe.hexes],
        "distance_field": [(([h0],), {}, None)],
        "los": [((i, j), {}, None) for i in probe.ids[:-3] for j in probe.ids[:-3]],
        "odds": [((t,), {"as_if": hy, "shooter": a0}, None) for t in probe.ids for hy in probe.hypos]
        + [((t,), {"shooter": s}, None) for t in probe.ids for s in own],
        "odds_many": [((list(probe.ids),), {"as_if": hy, "shooter": a0}, None) for hy in probe.hypos]
        + [((list(probe.ids),), {"shooter": s}, None) for s in own],
        "best_by_bound": [((s,), {}, None) for s in own] + [((s,), {"min_odds": 0.1}, None) for s in own],
        "face": [((t,), {"as_if": hy, "shooter": a0}, None) for t in probe.ids for hy in probe.hypos]
        + [((t,), {"shooter": s}, None) for t in probe.ids for s in own],
        "side_odds": [((t,), {}, None) for t in probe.ids],
        "threat": [((h, f), {"tank": a0}, None) for h in probe.near_hidden for f in (0, 3)]
        + [((h, 1), {"tank": a0}, None) for h in probe.hexes] + [((h0, 1), {"tank": i}, None) for i in probe.ids],
        "for_actor": [((i,), {}, None) for i in probe.ids],
        "hidden_ids": [((), {}, None)],
        # the search copy: without ghosts, and with a ghost of each enemy (hidden ones placed as remembered)
        "determinize": [((), {}, None)]
        + [((), {"ghosts": {t: (h0, 0, None, {})}}, None) for t in probe.ids if t not in probe.own][:4],
        # geometry that needs no board (asked all the same: it must not matter)
        "distance": [((h0, h), {}, None) for h in probe.hexes[:4]],
        "hex_of": [((s,), {}, None) for s in probe.states],
        "facing_of": [((s,), {}, None) for s in probe.states],
        "hypo": [((s,), {}, None) for s in probe.states],
        "in_arc": [((h0, h, 1), {}, None) for h in probe.hexes[:4]],
        "facing_towards": [((h0, h), {}, None) for h in probe.hexes[:4]],
    }


def value(v: object) -> object:
    """A comparable form of an answer: a tank view becomes its fields (a view compares by id only), an observation
    its actor, a read-only mapping a dict, a list a tuple (one level down too); everything else compares by value
    as it is (hexes, fractions, odds, actions, paths)."""
    if isinstance(v, Observation):
        return ("observation for", v.actor)
    if isinstance(v, SearchBattle):  # a search copy: everything a planner can read of its tanks
        return ("search copy", v.turn, json.dumps(v.rules_state, sort_keys=True, default=str),
                tuple((t.tank_id, t.side, t.hex, t.facing, t.turret_facing, t.alive,
                       json.dumps(t.rules_state, sort_keys=True, default=str)) for t in v.tanks))
    if isinstance(v, TankView):
        return ("tank", *(getattr(v, f) for f in sorted(TankView.FIELDS)))
    if isinstance(v, ReadOnly):
        return ("record", object.__getattribute__(v, "_o"))
    if isinstance(v, Mapping):
        return {k: value(x) if isinstance(x, (TankView, Mapping)) else x for k, x in v.items()}
    if isinstance(v, list):
        return tuple(value(x) for x in v)
    return v


def ask(fn: Callable[[], object]) -> object:
    try:
        return value(fn())
    except ERRORS as exc:
        return f"{type(exc).__name__}"


def record(obs: Observation, probe: Probe) -> dict[str, object]:
    """Every public query's answers (in-process) at this decision."""
    out: dict[str, object] = {}
    for name in FACTS:
        v = getattr(obs, name)
        if name == "decision":
            v = {"side": v.side, "kind": v.kind, "actors": v.actors, "default": v.default, "context": v.context,
                 "modes": v.legal.modes, "specials": v.legal.specials, "takes_plans": v.legal.plan_to is not None}
        out[name] = value(v)
    out["rng"] = obs.rng is not None
    legal = obs.decision.legal
    out["decision.legal.contains"] = [ask(lambda a=a: legal.contains(a)) for a in probe.actions]
    out["decision.legal.targets"] = [ask(lambda i=i: legal.targets(i)) for i in probe.ids]
    out["decision.legal.reachable"] = [ask(lambda i=i: legal.reachable(i)) for i in probe.ids]
    for name, specs in calls(probe, obs).items():
        res = []
        for args, kwargs, actor in specs:
            def run(args=args, kwargs=kwargs, actor=actor, name=name):
                target = obs if actor is None else obs.for_actor(actor)
                return getattr(target, name)(*args, **kwargs)
            res.append(ask(run))
        out[name] = res
    return out


def record_protocol(obs: Observation, probe: Probe) -> dict[str, object]:
    """What the isolated protocol sends: the ``obs`` message and the answer to every query a child may ask."""
    snap, _paths = isolation.snapshot(obs, obs.decision)
    out: dict[str, object] = {"obs": json.loads(json.dumps(snap, sort_keys=True))}
    specs = calls(probe, obs)
    for name in sorted(isolation.allowed_calls()):
        assert name in specs, f"the protocol query {name!r} is not walked by this test"
        res = []
        asked = specs[name]
        if name in BIG_ANSWERS:  # the same method in-process is walked in full: here the own tanks, one bad id
            keep = [(a,) for a in (*probe.own, -1)]
            asked = asked[:1] + [sp for sp in asked[1:] if sp[0][:1] in keep or sp[2] is not None][:12]
        for args, kwargs, actor in asked:
            msg = {"type": "call", "method": name, "args": [remote.encode(a) for a in args],
                   "kwargs": {k: remote.encode(v) for k, v in kwargs.items()}, "actor": actor}
            res.append(json.loads(json.dumps(isolation.answer_call(obs, msg), sort_keys=True)))
        out[name] = res
    for name in sorted(isolation.REFUSED_CALLS):
        out[name] = isolation.answer_call(obs, {"type": "call", "method": name, "args": [1], "kwargs": {}})
    return out


# --- variants of the board --------------------------------------------------------------------------------------
def fresh(m: BattleModel, side: int, memory: dict) -> Observation:
    return Observation(m.battle, side, m._decision, m.controllers[side].rng, last_known=dict(memory))


@contextlib.contextmanager
def moved(b: Battle, where: dict[int, Hex]) -> Iterator[None]:
    """The tanks of ``where`` stand on those hexes inside the block (as events), and back afterwards."""
    back = {tid: (b.tanks[tid].hex, b.tanks[tid].facing) for tid in where}
    for tid, h in where.items():
        b.emit(Moved(tid, h, b.tanks[tid].facing))
    try:
        yield
    finally:
        for tid, (h, f) in back.items():
            b.emit(Moved(tid, h, f))


@contextlib.contextmanager
def removed(b: Battle, ids: tuple[int, ...]) -> Iterator[None]:
    """The tanks ``ids`` are off the board inside the block (test-only surgery; restored afterwards)."""
    saved = [(tid, b.tanks[tid].hex) for tid in ids]
    for tid, h in saved:
        b._vacate(tid, h)
        b.tanks[tid].hex = None
    b.version += 1
    try:
        yield
    finally:
        for tid, h in saved:
            b.tanks[tid].hex = h
            b._occupy(tid, h)
        b.version += 1


def knowledge(obs: Observation) -> tuple:
    return obs.visible_ids(), obs.known_ids(), obs._hidden()


def relocation(m: BattleModel, side: int, memory: dict, rnd: random.Random, into: set[Hex] | None = None
               ) -> dict[int, Hex] | None:
    """New hexes for the hidden enemies of ``side`` where they stay hidden and the side's knowledge is unchanged:
    one tank after the other, trying up to 25 free hexes near it (hiding places cluster: behind the same woods),
    or, with ``into``, among those hexes (the actor's reach: where a hidden tank would block its moves); ``None``
    if one has no such hex."""
    b = m.battle
    base = fresh(m, side, memory)
    before = knowledge(base)
    free = [h for h in sorted(b.map.cells) if not b.occupants(h) and base.passable(h)]
    where: dict[int, Hex] = {}
    for tid in before[2]:
        home = b.tanks[tid].hex
        near = [h for h in free if (h in into if into is not None else 0 < distance(h, home) <= 6)
                and h not in where.values()]
        rnd.shuffle(near)
        for h in near[:25]:
            with moved(b, {**where, tid: h}):
                if knowledge(fresh(m, side, memory)) == before:
                    where[tid] = h
                    break
        else:
            if into is None:
                return None
    return where or None


# --- the property -----------------------------------------------------------------------------------------------
def decision_points(ruleset: str, seed: int, limit: int) -> Iterator[tuple[BattleModel, int]]:
    """Decisions of a real battle at which the deciding side has hidden enemies (every decision under ASL)."""
    name, (p0, p1) = BATTLES[ruleset]
    m = BattleModel(load_scenario(name), seed=seed, policies={0: (p0, {}), 1: (p1, {})}, decision_timeout_s=0)
    found = 0
    step = 0
    while not m.ended and found < limit and step < 400:
        d = m._decision
        if d is not None and d.actors and step % 3 == 0:
            obs = fresh(m, d.side, m._last_known[d.side])
            if obs._hidden() or ruleset == "asl":
                found += 1
                yield m, d.side
        m.advance(1)
        step += 1


@settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
          phases=(Phase.explicit, Phase.generate), print_blob=False)
@pytest.mark.parametrize("ruleset", sorted(BATTLES))
@given(seed=st.integers(0, 50), data=st.data())
def test_no_query_reveals_a_hidden_enemy(ruleset, seed, data):
    checked = blocked = 0
    for m, side in decision_points(ruleset, seed, limit=15):
        if checked >= POINTS[ruleset] and (blocked or ruleset not in BLOCKING):
            break
        b = m.battle
        memory = dict(m._last_known[side])
        obs = fresh(m, side, memory)
        hidden = obs._hidden()
        if ruleset == "asl":
            assert not hidden and set(obs.visible_ids()) == {t.tank_id for t in b.live_tanks() if t.side != side}
            checked += 1
            continue
        where = relocation(m, side, memory, random.Random(data.draw(st.integers(0, 2 ** 32), label="hexes")))
        blocking = None
        if not blocked:
            reach = {obs.hex_of(s) for a in obs.own_ids() for s in obs.reachable(a)} - {t.hex for t in b.tanks}
            blocking = relocation(m, side, memory, random.Random(data.draw(st.integers(0, 2 ** 32), label="reach")),
                                  into=reach)
        if (where is None or checked >= POINTS[ruleset]) and blocking is None:
            continue  # a hiding place of one hex (behind a building), and none in reach: try the next decision
        probe = Probe(obs, {b.tanks[i].hex for i in hidden} | set((where or {}).values())
                      | set((blocking or {}).values()))
        original = record(fresh(m, side, memory), probe), record_protocol(fresh(m, side, memory), probe)
        if where is not None:
            with moved(b, where):
                elsewhere = record(fresh(m, side, memory), probe), record_protocol(fresh(m, side, memory), probe)
            assert_same(original, elsewhere, f"{ruleset} seed {seed}: hidden {hidden} moved to {where}")
            checked += 1
        if blocking is not None:
            with moved(b, blocking):
                in_the_way = record(fresh(m, side, memory), probe), record_protocol(fresh(m, side, memory), probe)
            assert_same(original, in_the_way, f"{ruleset} seed {seed}: hidden {hidden} moved into reach {blocking}")
            blocked += 1
        with removed(b, hidden):
            if knowledge(fresh(m, side, memory))[:2] == knowledge(obs)[:2]:
                gone = record(fresh(m, side, memory), probe), record_protocol(fresh(m, side, memory), probe)
                assert_same(original, gone, f"{ruleset} seed {seed}: hidden {hidden} removed")
    assert checked, "no decision with hidden enemies was walked"
    assert blocked or ruleset not in BLOCKING, "no hidden enemy could be moved into the side's reach"


def assert_same(a: tuple, b: tuple, what: str) -> None:
    for part, x, y in (("in-process", a[0], b[0]), ("protocol", a[1], b[1])):
        for k in x:
            assert x[k] == y[k], f"{what}: {part} answer of {k!r} changed"


# --- coverage of the API ------------------------------------------------------------------------------------------
def test_every_public_query_is_classified():
    m, side = next(decision_points("panzer_squadron", 1, limit=1))
    obs = fresh(m, side, m._last_known[side])
    specs = calls(Probe(obs, set()), obs)
    public = {n for n in dir(Observation) if not n.startswith("_")}
    unclassified = public - set(FACTS) - set(OWN_STREAM) - set(specs)
    assert not unclassified, f"public Observation members not walked by the leak test: {sorted(unclassified)}"
    assert set(specs) <= public and isolation.allowed_calls() <= set(specs)
    for n in specs:
        assert callable(getattr(Observation, n)), n


def test_hidden_enemies_exist_in_the_walked_battles():
    """The property is not vacuous: the battles it walks have hidden enemies (Panzer Squadron, Hummel Quest)."""
    for ruleset in ("panzer_squadron", "hummel_quest"):
        m, side = next(decision_points(ruleset, 1, limit=1))
        assert fresh(m, side, m._last_known[side])._hidden()


# --- the reproducers of issue 11 ----------------------------------------------------------------------------------
def test_holder_scan_and_for_actor_reveal_no_hidden_enemy():
    m, side = next(decision_points("panzer_squadron", 1, limit=1))
    b = m.battle
    obs = fresh(m, side, m._last_known[side])
    hidden = obs._hidden()
    assert hidden
    enemy_side = 1 - side
    held = [h for h in sorted(b.map.cells) if obs.holder(h) == enemy_side]
    assert {b.tanks[i].hex for i in hidden}.isdisjoint(held)
    assert set(held) == {t.hex for t in b.live_tanks(enemy_side) if t.tank_id in obs.known_ids()}
    for tid in hidden:
        with pytest.raises(KeyError):
            obs.for_actor(tid)
        with pytest.raises(KeyError):
            obs.tank(tid)
        assert obs.odds(tid) is None and not obs.los(obs.actor, tid)
        assert all(obs.odds(tid, as_if=Hypo(h, f, True)) is None for h in b.tanks[tid].hex.neighbours()
                   for f in range(6))
    # over the protocol: the same scan
    msgs = [isolation.answer_call(obs, {"type": "call", "method": "holder", "args": [remote.encode(h)]})
            for h in sorted(b.map.cells)]
    assert sum(r.get("value") == enemy_side for r in msgs) == len(held)
    msg = isolation.answer_call(obs, {"type": "call", "method": "tank", "args": [hidden[0]], "actor": hidden[0]})
    assert msg["error"].startswith("KeyError")


ENGINE_TYPES = (Battle, TankState, BattleModel, DiceSource, Ruleset, HexMap)


def test_no_engine_object_is_reachable_through_public_attributes():
    """From the observation, following public (non-underscore) attributes and calling no method, no battle, tank
    state, model, dice, rule set or map is reachable (an in-process plug-in can still reach its process: the
    README says so; the public surface does not hand these out)."""
    m, side = next(decision_points("hummel_quest", 1, limit=1))
    obs = fresh(m, side, m._last_known[side])
    seen: set[int] = set()
    todo = [(obs, "obs", 0), (obs.decision, "obs.decision", 0), (obs.me, "obs.me", 0)]
    todo += [(t, "obs.enemies()", 0) for t in obs.enemies()] + [(t, "obs.friends()", 0) for t in obs.friends()]
    while todo:
        o, path, depth = todo.pop()
        if id(o) in seen or depth > 5:
            continue
        seen.add(id(o))
        assert not isinstance(o, ENGINE_TYPES), f"{path} is a {type(o).__name__}"
        if isinstance(o, dict | tuple | list | frozenset | set):
            items = o.items() if isinstance(o, dict) else enumerate(o)
            todo += [(v, f"{path}[{k!r}]", depth + 1) for k, v in items]
            continue
        if hasattr(o, "items") and callable(o.items):
            todo += [(v, f"{path}[{k!r}]", depth + 1) for k, v in o.items()]
        names = TankView.FIELDS if isinstance(o, TankView) else [n for n in dir(o) if not n.startswith("_")]
        for n in names:
            with contextlib.suppress(*ERRORS):
                v = getattr(o, n)
                if inspect.ismethod(v) or inspect.isfunction(v) or inspect.isbuiltin(v):
                    continue
                todo.append((v, f"{path}.{n}", depth + 1))
    assert isinstance(obs.decision.legal, SideLegal) and isinstance(obs.me.vehicle, ReadOnly)


#: Battles (rule set, seed) in which enemies hide from side 0 early and have other hiding places (Hummel Quest's
#: bundled map has few: most seeds have none in six rounds).
CREATION_CASES = [("panzer_squadron", 0), ("panzer_squadron", 3), ("hummel_quest", 6)]


@pytest.mark.parametrize("ruleset,seed", CREATION_CASES)
def test_decisions_are_made_the_same_whatever_the_hidden_enemies_do(ruleset, seed):
    """The decision itself -- kind, actors, default, context, modes -- is made by the rule set on the true board.
    Two copies of a battle are played turn by turn; at the end of the first turn after which some enemies are
    hidden from side 0 (and have other hiding places), they are moved there in one copy; then both play on (every
    decision answered with its default) to side 0's next decision, which must be the same, with the same answer
    to every query."""
    name, (p0, p1) = BATTLES[ruleset]
    a, twin = (BattleModel(load_scenario(name), seed=seed, policies={0: (p0, {}), 1: (p1, {})},
                           decision_timeout_s=0) for _ in range(2))
    rnd = random.Random(seed)

    def next_decision(m: BattleModel) -> Observation | None:
        for ctrl in m.controllers:
            ctrl.policy = Policy()
            ctrl.per_tank.clear()
        while not m.ended and (m._decision is None or m._decision.side != 0):
            m.advance(1)
        return None if m.ended else fresh(m, 0, m._last_known[0])

    ba, rs = a.battle, a.battle.ruleset
    where: dict[int, Hex] = {}
    for _turn in range(6):
        a.step()
        twin.step()
        if a.ended:
            break
        seen = set(rs.visible(ba, 0))
        hidden = [t.tank_id for t in ba.live_tanks(1) if t.tank_id not in seen]
        free = [h for h in sorted(ba.map.cells) if not ba.occupants(h) and rs.passable(ba, h)]
        for tid in hidden:
            near = [h for h in free if 0 < distance(h, ba.tanks[tid].hex) <= 12 and h not in where.values()]
            rnd.shuffle(near)
            for h in near[:40]:
                with moved(ba, {**where, tid: h}):
                    if set(rs.visible(ba, 0)) == seen:
                        where[tid] = h
                        break
        if where:
            break
    assert where, f"{ruleset} seed {seed}: no enemy hidden from side 0 with another hiding place in 6 turns"
    for tid, h in where.items():
        twin.battle.emit(Moved(tid, h, twin.battle.tanks[tid].facing))
    obs, obs2 = next_decision(a), next_decision(twin)
    if obs is None:
        assert obs2 is None
        return
    assert knowledge(obs) == knowledge(obs2) and obs._hidden()
    probe = Probe(obs, {ba.tanks[i].hex for i in where} | set(where.values()))
    assert_same((record(obs, probe), record_protocol(obs, probe)),
                (record(obs2, probe), record_protocol(obs2, probe)), f"{ruleset} seed {seed}: moved {where}")




# --- a remembered enemy is what was seen, not what it is now ---------------------------------------------------
def _other_value(v: object) -> object:
    """A different value of the same kind (``None``: none to try)."""
    swap = {"stationary": "in_movement", "in_movement": "stationary"}
    if isinstance(v, str):
        return swap.get(v)
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1 if v < 3 else 0
    return None


@pytest.mark.parametrize("ruleset,seed", [("panzer_squadron", 0), ("panzer_squadron", 1), ("hummel_quest", 0)])
def test_threat_of_a_remembered_enemy_ignores_what_it_did_out_of_sight(ruleset, seed):
    """``threat`` counts an enemy out of sight where (and as) the side last saw it: a change of its turret, hull
    facing or any rule-set value (a Panzer Squadron movement marker, a Hummel Quest OST or weapon readiness) made
    while it stays hidden changes no threat, in-process or over the isolated protocol, and the side's memory of
    it does not change.  (The ghost read the tank's present state: a hidden enemy's marker or turret showed.)"""
    from sim.events import Pivoted, TankStateSet, TurretTurned

    for m, side in decision_points(ruleset, seed, limit=15):
        b = m.battle
        memory = dict(m._last_known[side])
        obs = fresh(m, side, memory)
        ghosts = [g for g in obs._remembered() if g[0] in obs._hidden()]
        if not ghosts or obs.actor is None:
            continue
        e, seen_at = ghosts[0][0], ghosts[0][1]
        near = [h for h in sorted(b.map.cells) if 0 < distance(h, seen_at) <= 10 and not b.occupants(h)]
        hexes = [h for h in near if obs._threat_terms(obs.actor, h, 0, (), ghosts[:1]).get(e) is not None][:6]
        if hexes:
            break
    else:
        pytest.fail(f"{ruleset} seed {seed}: no remembered hidden enemy with a shot at any hex")
    before = knowledge(obs)
    memo = dict(memory)

    def threats() -> tuple:
        o = fresh(m, side, memory)
        assert knowledge(o) == before, "the change made the enemy known: not a test of hiding"
        msgs = [isolation.answer_call(o, {"type": "call", "method": "threat", "args": [remote.encode(h), f],
                                          "kwargs": {}, "actor": None}) for h in hexes for f in (0, 3)]
        return [o.threat(h, f) for h in hexes for f in range(6)], json.dumps(msgs, sort_keys=True)

    base = threats()
    assert any(base[0]), "the remembered enemy threatens none of the probed hexes"
    t = b.tanks[e]
    changes = [(TankStateSet(e, k, alt), TankStateSet(e, k, v)) for k, v in sorted(t.rules_state.items())
               if (alt := _other_value(v)) is not None]
    if t.turret_facing is not None:
        changes.append((TurretTurned(e, (t.turret_facing + 2) % 6), TurretTurned(e, t.turret_facing)))
    changes.append((Pivoted(e, (t.facing + 3) % 6, t.turret_facing), Pivoted(e, t.facing, t.turret_facing)))
    for change, back in changes:
        b.emit(change)
        try:
            assert threats() == base, f"{ruleset} seed {seed}: hidden enemy {e} {change} changed a threat"
            assert memory == memo
        finally:
            b.emit(back)


def _state_changes(t: TankState) -> list[tuple]:
    """Event pairs ``(change, back)`` that change hidden tank ``t`` where it stands: each rule-set value, its
    turret, its hull facing."""
    from sim.events import Pivoted, TankStateSet, TurretTurned

    e = t.tank_id
    out: list[tuple] = [(TankStateSet(e, k, alt), TankStateSet(e, k, v)) for k, v in sorted(t.rules_state.items())
                        if (alt := _other_value(v)) is not None]
    if t.turret_facing is not None:
        out.append((TurretTurned(e, (t.turret_facing + 2) % 6), TurretTurned(e, t.turret_facing)))
    out.append((Pivoted(e, (t.facing + 3) % 6, t.turret_facing), Pivoted(e, t.facing, t.turret_facing)))
    return out


@pytest.mark.parametrize("ruleset,seed", [("panzer_squadron", 0), ("hummel_quest", 0)])
def test_no_query_reveals_what_a_hidden_enemy_does_where_it_stands(ruleset, seed):
    """A hidden enemy that turns its hull or turret or changes any rule-set value (a marker, DT/OST, a weapon's
    readiness) without moving changes no answer: every public query, every protocol message, the search copy
    (:meth:`Observation.determinize`) and the environment's arrays and mask (:mod:`agents.encoding`) are the same.
    (A search copy kept a hidden enemy's hull and turret facing.)"""
    from agents.encoding import Encoder

    walked = 0
    for m, side in decision_points(ruleset, seed, limit=2):
        b = m.battle
        memory = dict(m._last_known[side])
        obs = fresh(m, side, memory)
        hidden = obs._hidden()
        probe = Probe(obs, {b.tanks[i].hex for i in hidden})
        enc = Encoder.for_observation(obs)

        def everything(m=m, side=side, memory=memory, probe=probe, enc=enc) -> tuple:
            o = fresh(m, side, memory)
            arrays = enc.encode(o, o.decision).arrays
            return (knowledge(o), record(o, probe), record_protocol(fresh(m, side, memory), probe),
                    {k: (v.shape, v.tobytes()) for k, v in arrays.items()})

        base = everything()
        for e in hidden:
            for change, back in _state_changes(b.tanks[e]):
                b.emit(change)
                try:
                    now = everything()
                    if now[0] != base[0]:
                        continue  # the change made it seen (a facing that spots): not hidden any more
                    assert_same(base[1:3], now[1:3], f"{ruleset} seed {seed}: hidden {e} {change}")
                    assert now[3] == base[3], f"{ruleset} seed {seed}: hidden {e} {change}: arrays changed"
                    walked += 1
                finally:
                    b.emit(back)
    assert walked, "no change of a hidden enemy was walked"
