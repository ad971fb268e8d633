"""Start-up (issue 14): importing the battle runner loads no third-party package, and a battle loads only the
parts of Mesa it uses.

Not timed (CPU figures live in ``benchmarks/battle.py``); it checks which modules a fresh interpreter has loaded.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
import sim.runner
from sim.scenario import load_scenario
from sim.model import BattleModel
BattleModel(load_scenario("default"), 1, decision_timeout_s=0).step()
from sim.mesa_core import LazyModule
loaded = sorted(m for m, mod in sys.modules.items() if mod is not None and not isinstance(mod, LazyModule)
                and m.split('.')[0] in ('pandas', 'scipy', 'pyarrow', 'matplotlib', 'mesa'))
print(json.dumps(loaded))
"""

#: Third-party packages ``import sim.runner`` must not load: the battle's own (Mesa, numpy, networkx, pydantic,
#: PyYAML) load when a battle or a scenario is first used, the analysis ones (pandas, scipy...) never in a battle.
NOT_AT_IMPORT = ("numpy", "pandas", "scipy", "networkx", "mesa", "pydantic", "yaml", "pyarrow", "matplotlib")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_runner_import_loads_no_third_party_package():
    code = "import json, sys, sim.runner; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(_run(code))
    heavy = sorted({m.split(".")[0] for m in loaded} & set(NOT_AT_IMPORT))
    assert heavy == [], f"import sim.runner loaded {heavy}"
    assert "sim.runner" in loaded and "sim.model" not in loaded and "agents" not in loaded
    code = ("import sim.runner\nfrom sim.runner import BattleModel\nimport mesa\n"
            "print(issubclass(BattleModel, mesa.Model), BattleModel.__module__)")
    assert _run(code).split() == ["True", "sim.model"]  # still importable from the runner, still a mesa.Model


def test_a_battle_leaves_out_pandas_scipy_and_mesa_wings():
    loaded = json.loads(_run(PROBE))
    heavy = [m for m in loaded if m.split(".")[0] in ("pandas", "scipy", "pyarrow", "matplotlib")]
    assert heavy == []
    assert "mesa.model" in loaded and "mesa.agent" in loaded and "mesa.datacollection" in loaded
    assert not any(m.startswith(("mesa.discrete_space", "mesa.batchrunner", "mesa.experimental.continuous_space"))
                   for m in loaded)


def test_full_mesa_and_pandas_still_load_on_use():
    code = """
import sim.runner, mesa, pandas
from mesa.discrete_space import OrthogonalMooreGrid
from sim.mesa_core import Model, Agent, DataCollector
assert mesa.Model is Model and mesa.Agent is Agent and mesa.DataCollector is DataCollector
assert callable(mesa.batch_run) and isinstance(mesa.__version__, str)
from sim.runner import run_battle
from sim.scenario import load_scenario
out = []
r = run_battle(load_scenario('default'), 0, record_events=False, model_out=out)
def plain(rows):  # pandas writes a missing value (None) of a numeric column as NaN
    return [{k: None if isinstance(v, float) and v != v else v for k, v in row.items()} for row in rows]
old = plain(out[0].datacollector.get_model_vars_dataframe().reset_index(drop=True).to_dict("records"))
assert r.series == old and plain(r.series_frame().to_dict("records")) == old, (r.series, old)
assert not any(isinstance(v, float) for row in r.series for v in row.values()), r.series[0]
print(type(pandas.DataFrame).__name__, len(r.series))
"""
    out = _run(code).split()
    assert out[0] == "type" and int(out[1]) >= 1
