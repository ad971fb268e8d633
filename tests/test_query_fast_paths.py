"""Fast paths of shared queries (issue 14) against the direct computations they stand for, each with a check that
the comparison notices a broken fast path:

* ``Hex.neighbours`` (written out) equals ``neighbour(k)`` for ``k = 0..5``; ``as_hex`` of a ``Hex`` equals the
  ``Hex`` it makes;
* ``nearest_hexes`` (a plain scan for few pairs, the numpy matrix otherwise) equals ``min`` by ``(distance, hex)``;
* an observation of a decision ``frozen_decision`` made takes its context as it is: equal to ``read_only`` of it.
"""
from __future__ import annotations

import random

import pytest

import agents.distances as distances
from agents.distances import nearest_hexes
from agents.observation import Observation, frozen_decision, read_only
from sim.hexgrid import Hex, as_hex, distance


def test_neighbours_and_as_hex_equal_the_direct_ones() -> None:
    rnd = random.Random(5)
    for _ in range(500):
        h = Hex(rnd.randrange(-40, 41), rnd.randrange(-40, 41))
        assert h.neighbours() == tuple(h.neighbour(k) for k in range(6))
        assert all(type(n) is Hex for n in h.neighbours())
        got = as_hex(h)
        assert got == Hex(int(h.q), int(h.r)) and type(got) is Hex
    assert as_hex([1, 2]) == Hex(1, 2) and type(as_hex((1.0, 2))[0]) is int


def _direct_nearest(frms: list, hexes: list) -> list:
    return [min(hexes, key=lambda e: (distance(h, e), e), default=None) for h in frms]


@pytest.mark.parametrize("small", [0, distances.SMALL, 10 ** 9])
def test_nearest_hexes_equals_the_direct_min_on_both_paths(monkeypatch: pytest.MonkeyPatch, small: int) -> None:
    monkeypatch.setattr(distances, "SMALL", small)
    rnd = random.Random(small % 97)
    for _ in range(200):
        frms = [Hex(rnd.randrange(-9, 10), rnd.randrange(-9, 10)) for _ in range(rnd.randrange(0, 60))]
        hexes = [Hex(rnd.randrange(-9, 10), rnd.randrange(-9, 10)) for _ in range(rnd.randrange(0, 40))]
        assert nearest_hexes(frms, hexes) == _direct_nearest(frms, hexes)


def test_nearest_hexes_check_notices_a_broken_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distances, "SMALL", 10 ** 9)
    monkeypatch.setattr(distances, "_nearest_hexes_small", lambda frms, to: [to[-1] for _ in frms])
    with pytest.raises(AssertionError):
        test_nearest_hexes_equals_the_direct_min_on_both_paths(monkeypatch, 10 ** 9)


def test_observation_takes_a_frozen_context_as_it_is() -> None:
    import benchmarks.battle as bench
    from sim.model import BattleModel

    scen = bench.big_scenario(**{**bench.CASE_PARAMS["hq_50v50_long"], "n": 6}, turns=3)
    m = BattleModel(bench.validate(scen, "hq"), 1, decision_timeout_s=0)
    kinds = set()
    while (d := m.pending()) is not None and len(kinds) < 3:
        f = frozen_decision(d)
        obs = Observation(m.battle, d.side, f, random.Random(0))
        assert obs.decision.context is f.context
        assert dict(obs.decision.context) == dict(read_only(d.context))
        other = Observation(m.battle, d.side, d, random.Random(0))   # not made by frozen_decision: converted
        assert other.decision.context is not d.context and dict(other.decision.context) == dict(f.context)
        kinds.add(d.kind)
        m.advance(1)
    assert len(kinds) >= 2, kinds
