"""The doctrines' per-hex fast paths (issue 14) against the direct computation they replace, on random states."""
from __future__ import annotations

import random
from types import SimpleNamespace

from agents.distances import nearest_hexes
from agents.observation import StateQueries
from agents.policies.base import Doctrine, facing_towards, nearest_hex
from sim.hexgrid import Hex, distance


class _Obs(StateQueries):
    """Just the geometry queries plus the enemies ``one_per_hex`` aims at."""

    __slots__ = ("_enemies", "_me")

    def __init__(self, enemies: list, me: SimpleNamespace):
        self._enemies = enemies
        self._me = me

    @property
    def me(self):  # type: ignore[override]
        return self._me

    def enemies(self) -> list:
        return [SimpleNamespace(hex=h) for h in self._enemies]

    def last_known(self) -> dict:
        return {}


def _direct_one_per_hex(obs, states, face=None) -> dict:
    """``one_per_hex`` as first written: every state ranked by (aim quality, cost, repr)."""
    vis = tuple(sorted({e.hex for e in obs.enemies()}))
    aims: dict = {}
    out: dict = {}
    for st, (cost, _p) in states.items():
        h = obs.hex_of(st)
        f = obs.facing_of(st)
        if h not in aims:
            aim = face if face is not None else min(vis, key=lambda e: (distance(h, e), e), default=None)
            aims[h] = (aim, None if aim is None or aim == h else obs.facing_towards(h, aim))
        aim, best_f = aims[h]
        good = 0 if best_f is None or f == best_f else (1 if obs.in_arc(h, aim, f) else 2)
        k = (good, cost, repr(st))
        if h not in out or k < out[h][0]:
            out[h] = (k, st)
    return {h: st for h, (_k, st) in sorted(out.items())}


def test_one_per_hex_and_nearest_equal_the_direct_ranking():
    rnd = random.Random(14)
    doc = Doctrine()
    checked = 0
    for trial in range(300):
        cells = [Hex(rnd.randrange(-6, 7), rnd.randrange(-6, 7)) for _ in range(rnd.randrange(1, 40))]
        enemies = [Hex(rnd.randrange(-8, 9), rnd.randrange(-8, 9)) for _ in range(rnd.randrange(0, 6))]
        obs = _Obs(enemies, SimpleNamespace(hex=cells[0], facing=rnd.randrange(6)))
        states: dict = {}
        for _ in range(rnd.randrange(1, 120)):
            h = rnd.choice(cells)
            f = rnd.randrange(6)
            # (Hex, facing) states mostly; plain-tuple and bare-hex states take the general queries
            st = (h, f) if trial % 5 else rnd.choice([(h, f), ((h.q, h.r), f), h])
            states[st] = (rnd.randrange(4), [st])   # few costs: ties broken by repr
        face = rnd.choice(cells) if trial % 7 == 0 else None
        got = doc.one_per_hex(obs, states, face)
        want = _direct_one_per_hex(obs, states, face)
        assert list(got.items()) == list(want.items())
        assert all(type(a) is type(b) for a, b in zip(got.values(), want.values()))
        direct = [min(enemies, key=lambda e: (distance(h, e), e), default=None) for h in cells]
        assert [nearest_hex(h, enemies) for h in cells] == direct
        assert nearest_hexes(cells, enemies) == direct
        for h in cells:
            for e in enemies + cells[:3]:
                assert facing_towards(h, e) == StateQueries.facing_towards(h, e), (h, e)
        checked += len(got)
    assert checked > 2000


def _direct_approach(doc, obs, states, goals, stop_at=1, threat_weight=1.0):
    """``approach`` as first written: every equally near candidate ranked with all its threats asked."""
    from fractions import Fraction

    from agents.policies.base import BIG

    if not goals or not states:
        return None
    field = obs.distance_field(goals)
    here = field.get(obs.me.hex, BIG)
    if here <= stop_at:
        return None

    def closeness(st):
        return max(field.get(obs.hex_of(st), BIG), stop_at)

    ranked = sorted(_direct_one_per_hex(obs, states).values(), key=lambda s: (closeness(s), states[s][0], repr(s)))
    if not ranked or closeness(ranked[0]) >= here:
        return None
    tied = [s for s in ranked if closeness(s) == closeness(ranked[0])][: doc.candidates]
    visible = bool(obs.visible_ids())

    def path_threat(path):
        total, prev = Fraction(0), None
        for p in tuple(path)[:-1]:
            h = obs.hex_of(p)
            if h != prev and prev is not None:
                total += obs.threat(h, obs.facing_of(p))
            prev = h
        return total

    def key(s):
        h, f = obs.hex_of(s), obs.facing_of(s)
        goal = min(goals, key=lambda g: (distance(h, g), g))
        risk = Fraction(0)
        if visible and threat_weight:
            risk = threat_weight * obs.threat(h, f) + path_threat(states[s][1]) / 2
        return (0 if obs.in_arc(h, goal, f) else 1, risk, states[s][0], repr(s))

    return min(tied, key=key)


def test_approach_equals_the_full_ranking_in_real_battles(monkeypatch):
    """In real battles (ASL and Panzer Squadron) every ``approach`` answer, at the doctrine's threat weight and at
    others, equals the ranking that asks every candidate's threats."""
    import benchmarks.battle as bench
    from sim.runner import run_battle

    orig = Doctrine.approach
    asked = [0, 0]

    def approach(self, obs, states, goals, stop_at=1, threat_weight=1.0):
        got = orig(self, obs, states, goals, stop_at, threat_weight)
        for tw in (threat_weight, 0.5, 3):
            mine = got if tw == threat_weight else orig(self, obs, states, goals, stop_at, tw)
            want = _direct_approach(self, obs, states, goals, stop_at, tw)
            assert mine == want, (tw, mine, want)
            asked[0] += 1
            asked[1] += want is not None
        return got

    monkeypatch.setattr(Doctrine, "approach", approach)
    run_battle(bench.cases(turns=1)["asl_25v25"](), seed=3)
    run_battle(bench.cases(turns=2)["ps_25v25"](), seed=3)
    assert asked[0] >= 60 and asked[1] >= 30, asked
