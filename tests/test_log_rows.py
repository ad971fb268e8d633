"""The event log's rows (:func:`sim.runner.log_rows`) are the text the original two-pass conversion wrote.

The reference below is the conversion as it was before the one-pass :meth:`sim.events.Event.payload_json`: each
field through ``_plain`` (``payload``), then the whole payload through ``_plain`` again and ``json.dumps`` with sorted
keys (``to_json``).  The fast path must give the same ``data`` and ``rolls`` text for every row of the bundled
battles and of the benchmark battles of all three rule sets, and for random events with awkward payloads (int keys
that sort differently as text, nested mappings, frozensets, fractions, bools, ``None``, hexes of odd coordinates).
"""
from __future__ import annotations

import dataclasses
import json
import random
import sys
import types
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import pytest

from sim import events as E
from sim.hexgrid import Hex

ROOT = Path(__file__).resolve().parents[1]

_REF_SCALARS = (str, int, float, bool, type(None))


def ref_plain(v: Any) -> Any:
    """The original ``sim.events._plain``, kept verbatim as the reference."""
    if type(v) in _REF_SCALARS:
        return v
    if isinstance(v, Hex):
        return [v.q, v.r]
    if isinstance(v, Mapping):
        return {str(k): ref_plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, frozenset, set)):
        return [ref_plain(x) for x in v]
    if hasattr(v, "numerator") and hasattr(v, "denominator") and not isinstance(v, (int, bool)):
        return str(v)
    return v


def ref_to_json(v: Any) -> str:
    return json.dumps(ref_plain(v), sort_keys=True, separators=(",", ":"))


def ref_payload(ev: E.Event) -> dict[str, Any]:
    return {f.name: ref_plain(getattr(ev, f.name)) for f in dataclasses.fields(ev)}


def ref_rows(model: Any) -> list[tuple[str, str]]:
    """``(data, rolls)`` of every log entry, the original way."""
    return [(ref_to_json(ref_payload(e.event)), ref_to_json([[r.die, r.value, r.label] for r in e.rolls]))
            for e in model.battle.log]


def _check_model(model: Any) -> int:
    from sim.runner import log_rows

    rows = log_rows(model)
    want = ref_rows(model)
    assert len(rows) == len(want) == len(model.battle.log)
    for row, (data, rolls), e in zip(rows, want, model.battle.log):
        assert row["data"] == data, (row["seq"], row["kind"])
        assert row["rolls"] == rolls, row["seq"]
        assert E.to_json(e.event.payload()) == data
        assert e.event.payload() == ref_payload(e.event)
    return len(rows)


def _battle_files() -> list[Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_log_hashes import battle_files
    finally:
        sys.path.remove(str(ROOT / "tests"))
    return battle_files()


@pytest.mark.parametrize("path", _battle_files(), ids=lambda p: p.stem)
def test_rows_of_the_bundled_battles_are_the_two_pass_text(path):
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    model = BattleModel(load_scenario(path), 1, decision_timeout_s=0)
    model.run(max_turns=3)
    assert _check_model(model) > 1


@pytest.mark.parametrize("name,decisions", [("ps_50v50", 250), ("asl_50v50", 150), ("hq_50v50_long", 1500)])
def test_rows_of_the_benchmark_battles_are_the_two_pass_text(name, decisions):
    """The first ``decisions`` decisions of each benchmark battle (enough for shots in every rule set)."""
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    model = BattleModel(load_scenario(ROOT / "benchmarks" / "scenarios" / f"{name}.yaml"), 1, decision_timeout_s=0)
    assert model.advance(decisions) == decisions
    kinds = {e.event.kind for e in model.battle.log}
    assert {"BattleStarted", "Moved", "ShotResolved", "RuleEvent"} <= kinds, kinds
    assert _check_model(model) > 50


def _awkward(rng: random.Random, depth: int = 0) -> Any:
    """A random value of the kinds an event may carry, nested up to three levels."""
    leaf = [lambda: rng.randint(-20, 20), lambda: rng.random(), lambda: rng.choice([True, False, None]),
            lambda: rng.choice(["a", "b", "10", "9", "", "é", "\x00"]), lambda: Fraction(rng.randint(-9, 9),
                                                                                           rng.randint(1, 9)),
            lambda: Hex(rng.randint(-12, 12), rng.randint(-12, 12)),
            lambda: Hex(Fraction(rng.randint(1, 5), 2), rng.randint(0, 3))]
    if depth >= 3 or rng.random() < 0.4:
        return rng.choice(leaf)()
    kind = rng.randrange(6)
    n = rng.randint(0, 4)
    if kind == 0:
        # int keys >= 10 sort differently as text; bool, None, Hex and str keys that collide with them as text
        keys = [rng.choice([rng.randint(0, 30), str(rng.randint(0, 30)), True, None, Hex(1, 2), "x"]) for _ in range(n)]
        return {k: _awkward(rng, depth + 1) for k in keys}
    if kind == 1:
        return types.MappingProxyType({str(rng.randint(0, 30)): _awkward(rng, depth + 1) for _ in range(n)})
    if kind == 2:
        return tuple(_awkward(rng, depth + 1) for _ in range(n))
    if kind == 3:
        return [_awkward(rng, depth + 1) for _ in range(n)]
    if kind == 4:
        return frozenset(rng.randint(0, 40) for _ in range(n)) | frozenset(str(rng.randint(0, 9)) for _ in range(n))
    return {rng.randint(0, 30) for _ in range(n)}


def test_random_awkward_payloads_give_the_two_pass_text():
    rng = random.Random(14)
    checked = 0
    for _ in range(3000):
        ev: E.Event = rng.choice([
            lambda: E.RuleEvent(name="x", tank=rng.choice([None, 3]), data=_awkward(rng)),
            lambda: E.ShotResolved(shooter=1, target=rng.choice([None, 2]), result="hit", hit=True,
                                   key=_awkward(rng), details=_awkward(rng)),
            lambda: E.TankStateSet(tank=4, key="k", value=_awkward(rng)),
            lambda: E.BattleStateSet(key="k", value=_awkward(rng)),
            lambda: E.Moved(tank=2, hex=Hex(rng.randint(-5, 5), rng.randint(-5, 5)), facing=3, cost=1),
            lambda: E.BattleEnded(winner=None, reason="r", points=(1, 2)),
        ])()
        try:
            want = ref_to_json(ref_payload(ev))
        except TypeError:
            with pytest.raises(TypeError):
                ev.payload_json()
            continue
        assert ev.payload_json() == want, ev
        assert ev.payload() == ref_payload(ev)
        assert E.to_json(ev.payload()) == want
        checked += 1
    assert checked > 1000
    # int keys as text: "10" sorts before "9"; a fraction as "p/q"; a set in its iteration order
    ev = E.RuleEvent(name="n", data={9: Fraction(1, 3), 10: frozenset({3}), "b": (Hex(1, -2), None, True)})
    assert ev.payload_json() == '{"data":{"10":[3],"9":"1/3","b":[[1,-2],null,true]},"name":"n","tank":null}'
