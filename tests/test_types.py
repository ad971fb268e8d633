"""The type checker runs in the suite (issue 13): mypy, configured in pyproject.toml ([tool.mypy]: defaults plus
``check_untyped_defs``, ``warn_unused_ignores``, pydantic's plugin; the stub packages of networkx, pandas, scipy,
tqdm and PyYAML installed by the ``test`` extra), over ``sim/`` and ``agents/``, and must report no error.

A ``# type: ignore`` must name its error code (a bare one is refused here) and is reported by mypy once it is no
longer needed; no module is silenced as a whole.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_mypy() -> tuple[str, int]:
    """Run mypy as the project configures it; return (output, exit status)."""
    env = dict(os.environ, MYPY_FORCE_COLOR="0", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-pretty", "--show-error-codes",
                           "--cache-dir", str(ROOT / ".mypy_cache")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    return proc.stdout + proc.stderr, proc.returncode


@pytest.mark.slow
def test_mypy_passes_over_sim_and_agents():
    out, rc = run_mypy()
    assert rc == 0, f"mypy reports errors over sim/ and agents/ (exit {rc}):\n{out[-6000:]}"
    assert "Success: no issues found" in out, out[-3000:]


def test_the_checker_is_configured_without_blanket_silencing():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for option in ("[tool.mypy]", "check_untyped_defs = true", "warn_unused_ignores = true",
                   "pandas-stubs", "scipy-stubs", "types-networkx"):
        assert option in pyproject, option
    assert not re.search(r"^\s*ignore_errors\s*=", pyproject, re.M)   # no module silenced as a whole
    for pkg in ("sim", "agents"):
        assert (ROOT / pkg / "py.typed").is_file()
        for path in (ROOT / pkg).rglob("*.py"):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                assert not re.search(r"#\s*type:\s*ignore(?!\[)", line), f"{path.relative_to(ROOT)}:{n}: bare ignore"
                assert not line.startswith("# mypy: ignore-errors"), f"{path.relative_to(ROOT)}: module silenced"
