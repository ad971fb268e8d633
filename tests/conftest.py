"""Shared test helpers: paths, small scenarios, the tanksim console script."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# A built-in doctrine that crashes fails the test instead of being recorded as a fault (which would only make the
# tank pass, and the test go on passing without checking anything): agents.side_controller.STRICT_BUILTIN_POLICIES.
# Set before anything imports it, and inherited by every process a test starts (CLI runs, pool and Dask workers).
os.environ["TANKSIM_STRICT_BUILTIN_POLICIES"] = "1"

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def tanksim_cmd() -> list[str]:
    """The installed console script (next to this interpreter), else ``python -m sim.cli``."""
    exe = Path(sys.executable).with_name("tanksim")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("tanksim")
    return [found] if found else [sys.executable, "-m", "sim.cli"]


@pytest.fixture
def root() -> Path:
    return ROOT


def small_ps_scenario(**over) -> dict:
    """A 3-v-3 Panzer Squadron scenario on a 12 x 12 board (as a mapping, for sim.scenario.validate)."""
    d = {
        "name": "small",
        "ruleset": {"name": "panzer_squadron", "options": {"turn_limit_result": "most_tanks"}},
        "map": {"shape": "rectangle", "width": 12, "height": 12,
                "terrain": [{"tile": "woods", "hexes": [[5, 2], [6, 2], [6, 1]]},
                            {"tile": "building", "hexes": [[5, 6], [6, 5]]}]},
        "turn_limit": 8,
        "sides": [
            {"name": "Red", "role": "attacker", "policy": "advance",
             "tanks": [{"vehicle": "t34_85", "hex": [1, 3], "facing": 0},
                       {"vehicle": "t34_85", "hex": [1, 5], "facing": 0},
                       {"vehicle": "t34_85", "hex": [1, 7], "facing": 0}]},
            {"name": "Blue", "role": "defender", "policy": "hold",
             "tanks": [{"vehicle": "pz_iv_h", "hex": [10, -2], "facing": 3},
                       {"vehicle": "pz_iv_h", "hex": [10, 0], "facing": 3},
                       {"vehicle": "pz_iv_h", "hex": [10, 2], "facing": 3}]},
        ],
    }
    d.update(over)
    return d


@pytest.fixture(autouse=True)
def _assertions_inside_policies_fail_the_test():
    """A test's ``assert`` that runs inside a policy's decision (a check patched into a rule set's or the
    observation's query, which doctrines call) would otherwise be caught by the side controller like any policy
    crash and become a recorded ``PolicyFault``: the battle goes on and the test could pass.  Every fault whose
    exception is an ``AssertionError`` is collected here and fails the test at its end, with the messages."""
    from agents import side_controller

    caught: list[str] = []
    orig = side_controller.SideController._ask

    def ask(self, decision, make_obs):
        act, faults = orig(self, decision, make_obs)
        caught.extend(f.message for f in faults if f.fault == "raise" and f.message.startswith("AssertionError"))
        return act, faults

    side_controller.SideController._ask = ask  # type: ignore[method-assign]
    try:
        yield
    finally:
        side_controller.SideController._ask = orig  # type: ignore[method-assign]
    if caught:
        pytest.fail(f"{len(caught)} assertion(s) failed inside policy decisions (recorded as faults): "
                    + "; ".join(caught[:5]), pytrace=False)


def fresh_threat(o, tid, h, facing, known, remembered):
    """The threat :meth:`agents.observation.Observation.threat` defines, computed without its memos: on the side's
    view of observation ``o``, the sum of the kill odds of each ``known`` enemy's shot at tank ``tid`` placed on
    ``h`` facing ``facing``, plus each ``remembered`` ``(enemy, hex, facing, key)``'s shot from where and as it was
    last seen (its turret and rule-set state in the side's memory; none from ``h`` itself); one ``shot`` per enemy
    on ``HypoView`` copies.  An exact ``Fraction``."""
    import dataclasses
    from fractions import Fraction

    from sim.battle import HypoView, StandInView
    from sim.rules.base import Illegal

    rs, b = o._rs, o._b
    total = Fraction(0)
    with o._side_view():
        view = HypoView(b, tid, h, facing)
        for e in known:
            sh = rs.shot(view, e, tid)
            if not isinstance(sh, Illegal):
                total += rs.odds(sh.key).p_kill
        for e, eh, ef, _key in remembered:
            if eh == h:
                continue
            turret, state = o._last_known[("seen", e)]
            ghost = dataclasses.replace(b.tanks[e], facing=ef, turret_facing=turret, rules_state=dict(state))
            sh = rs.shot(HypoView(HypoView(StandInView(b, {e: ghost}), e, eh, ef), tid, h, facing), e, tid)
            if not isinstance(sh, Illegal):
                total += rs.odds(sh.key).p_kill
    return total
