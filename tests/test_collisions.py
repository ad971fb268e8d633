"""Name collisions (issue 13): tanksim checks at start-up that the ``sim`` and ``agents`` it imported are its own,
and names the distribution that took a name instead of failing obscurely."""
import os
import subprocess
import sys
from pathlib import Path

from sim.cli.collisions import OWN_PACKAGES, foreign_package

ROOT = Path(__file__).resolve().parent.parent


def _tanksim(args, pythonpath, cwd):
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, "-m", "sim.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_own_packages_pass():
    assert OWN_PACKAGES == ("sim", "agents")
    assert [foreign_package(n) for n in OWN_PACKAGES] == [None, None]


def test_a_foreign_agents_on_the_path_is_named_with_its_distribution(tmp_path):
    fake = tmp_path / "path"
    (fake / "agents").mkdir(parents=True)
    (fake / "agents" / "__init__.py").write_text("TOOL = 'someone else'\n", encoding="utf-8")
    dist = fake / "othertool-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: othertool\nVersion: 1.0\n", encoding="utf-8")
    (dist / "top_level.txt").write_text("agents\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    r = _tanksim(["--version"], fake, work)
    assert r.returncode == 2, r.stderr
    assert "'agents'" in r.stderr and str(fake / "agents" / "__init__.py") in r.stderr
    assert "distribution othertool" in r.stderr and "own Python environment" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_foreign_agents_without_a_distribution_points_at_the_path(tmp_path):
    fake = tmp_path / "path"
    (fake / "agents").mkdir(parents=True)
    (fake / "agents" / "__init__.py").write_text("", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    r = _tanksim(["--version"], fake, work)
    assert r.returncode == 2 and "no installed distribution (check PYTHONPATH" in r.stderr, r.stderr
    ok = _tanksim(["--version"], tmp_path / "empty", work)      # the same command without the fake: runs
    assert ok.returncode == 0 and ok.stdout.startswith("tanksim "), ok.stderr
