"""The bundled scenarios and rule data ship inside the wheel, so they work after a plain ``pip install``."""
from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import ROOT


def test_wheel_contains_scenarios_and_data(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("tanksim-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "tanksim_scenarios/default.yaml" in names
    for f in ("panzer_squadron_vehicles.yaml", "asl_ordnance.yaml", "hummel_quest_vehicles.yaml"):
        assert f"sim/rules/data/{f}" in names
    assert any(n.endswith("entry_points.txt") for n in names)
