"""Every golden case in every case file (tests/cases/*.yaml: the copied shared files and the play case files) runs
through the same harness as ``tanksim cases``; the copies must equal ../shared/cases whenever it exists."""
from __future__ import annotations

import pytest

from conftest import ROOT, SHARED
from sim.play_cases import load_cases, run_case
from sim.rules import base as rules_base
from sim.rules.cases import compare

CASE_FILES = sorted((ROOT / "tests" / "cases").glob("*.yaml"))


def _params():
    for f in CASE_FILES:
        ruleset, cases = load_cases(f)
        for i, c in enumerate(cases):
            yield pytest.param(ruleset, c, f"tests/cases/{f.name}", i, id=f"{f.stem}:{c['id']}")


def test_case_files_present():
    assert {f.name for f in CASE_FILES} >= {"panzer_squadron.yaml", "asl.yaml", "hummel_quest.yaml"}


@pytest.mark.parametrize("ruleset,case,src,index", list(_params()))
def test_golden_case(ruleset, case, src, index):
    try:
        rules_base.get(ruleset)
    except rules_base.UnknownRuleset as exc:
        pytest.skip(f"rule set {ruleset!r} not implemented yet: {exc}")
    result = run_case(ruleset, case, src, index)
    assert result.ok, f"{case['id']}:\n{result.message}"


@pytest.mark.skipif(not (SHARED / "cases").is_dir(), reason="no ../shared/cases beside this checkout")
@pytest.mark.parametrize("name", ["panzer_squadron.yaml", "asl.yaml", "hummel_quest.yaml", "README.md"])
def test_copies_equal_shared(name):
    src = SHARED / "cases" / name
    dst = ROOT / "tests" / "cases" / name
    if name == "README.md" and not dst.exists():
        pytest.skip("README not copied")
    assert dst.read_bytes() == src.read_bytes(), f"tests/cases/{name} differs from ../shared/cases/{name}"


@pytest.mark.skipif(not (SHARED / "rules").is_dir(), reason="no ../shared beside this checkout")
def test_specs_and_data_equal_shared():
    for f in (SHARED / "rules").glob("*.md"):
        assert (ROOT / "docs" / "rules" / f.name).read_bytes() == f.read_bytes(), f"docs/rules/{f.name} is stale"
    for f in (SHARED / "data").glob("*.yaml"):
        assert (ROOT / "sim" / "rules" / "data" / f.name).read_bytes() == f.read_bytes(), f"data {f.name} is stale"


def test_harness_reports_a_wrong_answer():
    case = {"id": "x", "kind": "odds", "given": {"penetration": 118, "armour": 177, "modifier": 0},
            "expect": {"p_kill": "1/2"}}
    bad = compare(case["expect"], rules_base.get("panzer_squadron").run_case(case))
    assert bad and "53/200" in bad[0]
