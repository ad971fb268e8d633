"""ASL's shot-key families (issue 14) against the parameter parser.

``ASL._shot_geometry`` takes a shot's :class:`~sim.rules.asl.odds.ShotKey` from the ``_KeyFamily`` of its
non-geometric values, which builds keys after the first by setting the seven geometric fields on a template instead
of re-parsing every parameter.  After a real battle, every key every family made -- and keys for random geometry,
including values ``parse_params`` refuses -- must equal ``_shot_key`` of the same values (``parse_params``).
"""
from __future__ import annotations

import random

import benchmarks.battle as bench
from sim.rules.asl import play
from sim.runner import run_battle


def _subs(rng: random.Random, n: int) -> list[tuple]:
    faces = ("front", "side", "rear", "top", 1)
    out = []
    for _ in range(n):
        out.append((rng.choice((0, 0, 1, 2, 5, 12, 30, -1)), rng.choice((0, 0, 1, 2, 3, 4, True)),
                    rng.choice((0, 1, 2, 3, -1, True)), rng.choice((0, 1, 2, 5, 6, -1)),
                    rng.choice((False, True, 1)), rng.choice(faces), rng.choice(faces)))
    return out


def test_families_match_parse_params():
    play._KEY_FAMILIES.clear()
    run_battle(bench.cases(turns=2)["asl_25v25"](), seed=3)
    fams = list(play._KEY_FAMILIES.values())
    assert fams, "the battle made no shot keys"
    made = 0
    for fam in fams:
        for sub, key in fam.keys.items():
            assert key == play._shot_key(fam.full(sub)), (sub, fam.values)
            made += 1
    assert made > len(fams), "no family made a second key (the template path was not exercised)"
    rng = random.Random(14)
    refused = derived = 0
    for fam in rng.sample(fams, min(40, len(fams))):
        fresh = play._KeyFamily(fam.values)
        for sub in _subs(rng, 60):
            got = fresh.make(sub)
            want = play._shot_key(fresh.full(sub))
            assert got == want, (sub, got, want)
            assert type(got) is type(want)
            refused += isinstance(got, str)
            derived += fresh.template is not None and not isinstance(got, str)
    assert refused and derived
