"""Hostile files get a clear error fast: a few hundred files mutated from the bundled scenarios, experiment and
tournament (``tests/fuzz_files.py``: huge numbers and shapes, deep nesting, alias bombs, wrong types and arity,
hostile policy names, binary junk, unicode) are each loaded as ``tanksim validate`` loads them, and an accepted
scenario is also built and played for a few decisions.  No file may raise anything but a clean error naming the file
and a field path or a line, nor take more than 5 s of CPU, nor run a command.  Hypothesis draws the mutations with a
fixed seed (``derandomize``), so the same files are tried on every run; ``benchmarks/fuzz.py`` runs the same fuzzer
on 2,000+ files in confined worker processes."""
from __future__ import annotations

import signal
from pathlib import Path

import fuzz_files as F
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: CPU seconds one file may take (the guard below stops a runaway file well after that, so it fails, not hangs).
LIMIT_S = 5.0


class _Runaway(Exception):
    pass


def _guarded(path: Path, seed: str) -> F.Outcome:
    """:func:`fuzz_files.check_file` under a CPU-time guard (SIGVTALRM, so pytest-timeout's SIGALRM is left
    alone)."""

    def stop(signum, frame):
        raise _Runaway(f"{path.name} used more than {4 * LIMIT_S:g} s of CPU")

    old = signal.signal(signal.SIGVTALRM, stop)
    signal.setitimer(signal.ITIMER_VIRTUAL, 4 * LIMIT_S)
    try:
        return F.check_file(path, seed)
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=200, derandomize=True, deadline=None, database=None, print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_files_fail_cleanly_and_fast(workdir, data):
    seed, raw, what = F.mutate(F.DataChooser(data))
    path = workdir / "case.yaml"
    path.write_bytes(raw)
    out = _guarded(path, seed)
    assert out.status in ("accepted", "error"), f"{seed} mutated ({what}): {out.status}: {out.message}"
    assert out.cpu_s <= LIMIT_S, f"{seed} mutated ({what}) took {out.cpu_s:.1f} s of CPU"
    assert not (workdir / "PWNED").exists() and not Path("PWNED").exists(), f"{seed} ({what}) ran a command"
