"""The type checker runs in the suite (issue 13): mypy, configured in pyproject.toml ([tool.mypy]: defaults plus
``check_untyped_defs``), over ``sim/`` and ``agents/``.

The code base predates the checker: the errors known when it was switched on are listed per file and error code
in ``tests/mypy_baseline.json``.  The test fails on any error beyond that list (a new file, a new code, or more
of a known one), so new code is checked in full and old code cannot get worse; when a fix removes known errors,
``python tests/test_types.py --update`` shrinks the list (never grow it by hand: type the new code instead).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(__file__).with_name("mypy_baseline.json")
LINE = re.compile(r"^(?P<path>[^:\n]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")


def run_mypy() -> tuple[Counter, str, int]:
    """Run mypy as the project configures it; return (errors per "path [code]", output, exit status)."""
    env = dict(os.environ, MYPY_FORCE_COLOR="0", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary", "--show-error-codes",
                           "--cache-dir", str(ROOT / ".mypy_cache")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m:
            counts[f"{m['path'].replace(os.sep, '/')} [{m['code']}]"] += 1
    return counts, proc.stdout + proc.stderr, proc.returncode


@pytest.mark.slow
def test_mypy_over_sim_and_agents_adds_no_error_to_the_baseline():
    counts, out, rc = run_mypy()
    assert rc in (0, 1), f"mypy did not run (exit {rc}):\n{out[-3000:]}"
    if rc == 1:
        assert counts, f"mypy failed without a parsable error line:\n{out[-3000:]}"
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    worse = {k: (baseline.get(k, 0), n) for k, n in sorted(counts.items()) if n > baseline.get(k, 0)}
    lines = [line for line in out.splitlines() if any(line.startswith(k.split(" [")[0] + ":")
                                                      and line.endswith(k.split(" ")[1]) for k in worse)]
    assert not worse, ("mypy errors beyond tests/mypy_baseline.json (file [code]: known -> now):\n"
                       + "\n".join(f"  {k}: {a} -> {b}" for k, (a, b) in worse.items()) + "\n" + "\n".join(lines[:60]))


def test_the_checker_and_the_markers_are_shipped():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.mypy]" in pyproject and "check_untyped_defs = true" in pyproject
    assert not re.search(r"^\s*ignore_errors\s*=", pyproject, re.M)   # no blanket silencing of a module
    for pkg in ("sim", "agents"):
        assert (ROOT / pkg / "py.typed").is_file()


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    found, output, status = run_mypy()
    assert status in (0, 1), output
    old = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else {}
    grown = {k for k, n in found.items() if n > old.get(k, 0)} if old else set()
    if grown:
        sys.exit("refusing to grow the baseline; type these instead:\n" + "\n".join(sorted(grown)))
    BASELINE.write_text(json.dumps(dict(sorted(found.items())), indent=1) + "\n", encoding="utf-8")
    print(f"{sum(found.values())} known errors in {len({k.split(' [')[0] for k in found})} files")
