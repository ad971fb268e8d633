"""A doctrine that never returns cannot hang ``tanksim run``: with a decision limit (the scenario's
``decision_timeout_s`` or ``--decision-timeout``) the call is cut off ``max(1, limit / 2)`` s past it and recorded as
a ``timeout`` fault with the decision's default (:class:`agents.side_controller.OverrunGuard`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import ROOT, tanksim_cmd

HANGS = textwrap.dedent('''
    import time
    from agents.policies import Doctrine

    class Spin(Doctrine):
        """Loops forever in Python at its first activation, swallowing ordinary exceptions."""
        name = "spin"
        def intent(self, obs):
            while True:
                try:
                    sum(range(1000))
                except Exception:
                    pass

    class Sleep(Doctrine):
        """Blocks in a C call (time.sleep) at its first activation."""
        name = "sleep"
        def intent(self, obs):
            time.sleep(3600)
            return ("hold", 0.0)
''')

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")


def _run(tmp_path, policy: str, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "hangers.py").write_text(HANGS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run(tanksim_cmd() + ["run", "--json", "--policy", f"1=hangers:{policy}", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=240, env=env)


@pytest.mark.parametrize("policy", ["Spin", "Sleep"])
def test_run_cuts_off_a_decision_that_never_returns(tmp_path, policy):
    t0 = time.monotonic()
    r = _run(tmp_path, policy, "--decision-timeout", "0.2", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["faults"] >= 1
    import pandas as pd
    ev = pd.read_parquet(tmp_path / "o" / "events.parquet")
    faults = [json.loads(p) for k, p in zip(ev["kind"], ev["data"]) if k == "PolicyFault"]
    assert faults and all(f["fault"] == "timeout" and "did not return" in f["message"] for f in faults), faults
    # each cut-off decision took the limit plus the 1 s grace, not forever (the battle's other decisions are fast);
    # a generous bound: max_faults (5) cut-offs of ~1.2 s each, plus start-up, on a loaded machine
    assert time.monotonic() - t0 < 200


def test_the_guard_is_off_without_a_limit_and_never_fires_on_a_fast_battle(tmp_path):
    from sim.model import BattleModel
    m = BattleModel("default", 3, decision_timeout_s=30.0, cut_off_overruns=True)
    before = signal.getsignal(signal.SIGALRM)
    m.run()
    assert signal.getsignal(signal.SIGALRM) is before            # the previous handler is back
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)    # and no alarm is left armed
    plain = BattleModel("default", 3, decision_timeout_s=30.0)
    plain.run()
    assert [e.event for e in m.battle.log] == [e.event for e in plain.battle.log]
    assert all(c.overrun_guard is None for c in m.controllers)
