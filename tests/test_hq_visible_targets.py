"""Hummel Quest's ``visible`` (its pair facts kept per enemy hex across calls, its last answer per side) and
``_targets`` (legality from the batched shot tests) against the direct answers -- ``los`` of every pair, ``shot``
of every enemy -- on random boards whose tanks move, change state and leave between calls, so the kept facts meet
changed boards (issue 14)."""
from __future__ import annotations

import random

import pytest
from test_hq_kill_odds import _random_battle

from sim.events import Moved, TankStateSet
from sim.rules.base import Illegal


@pytest.mark.filterwarnings("ignore:hummel_quest")
def test_visible_and_targets_equal_the_direct_answers_on_random_boards():
    rnd = random.Random(11)
    calls = seen = legal = 0
    for _ in range(30):
        b = _random_battle(rnd)
        rs = b.ruleset
        cells = list(b.map)
        for _round in range(12):
            for t in b.tanks:
                pick = rnd.random()
                if pick < 0.35 and t.hex is not None:   # a move (any hex: the facts are keyed by hex)
                    b.emit(Moved(t.tank_id, rnd.choice(cells), rnd.randrange(6), 1))
                elif pick < 0.38:
                    b.emit(TankStateSet(t.tank_id, "dt", 0))
                elif pick < 0.45 and t.vehicle.weapons:
                    b.emit(TankStateSet(t.tank_id, f"ready.{rnd.choice(t.vehicle.weapons).id}", rnd.randint(1, 3)))
            b.turn = rnd.randint(1, 3)
            for side in (0, 1):
                own = [t.hex for t in b.tanks if t.side == side and not rs.is_out(t)]
                want = tuple(e.tank_id for e in b.tanks if e.side != side and not rs.is_out(e)
                             and any(rs.los(b, h, e.hex) for h in own))
                assert rs.visible(b, side) == want, (side, want)
                assert rs.visible(b, side) == want   # asked again: the kept answer
                calls += 1
                seen += len(want)
            for a in range(len(b.tanks)):
                s = b.tanks[a]
                want_t = tuple(e.tank_id for e in b.tanks if e.side != s.side and not rs.is_out(e)
                               and not isinstance(rs.shot(b, a, e.tank_id), Illegal)) if rs.can_act(s) else ()
                assert rs._targets(b, a) == want_t, (a, want_t)
                legal += len(want_t)
    assert calls == 720 and seen > 500 and legal > 300, (calls, seen, legal)
