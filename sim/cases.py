"""Golden-case harness (shared/cases/README.md format): runs case files against the engine.

``run_file(path)`` evaluates every case with its rule set's ``run_case`` and compares each expected key; exact
fractions are compared as ``Fraction`` values, everything else with ``==`` (nested mappings key by key).  Used by
``tanksim cases`` and by ``tests/test_golden_cases.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from sim.rules import base as rules_base
from sim.scenario import ScenarioError, parse_yaml


@dataclass
class CaseResult:
    case_id: str
    ok: bool
    message: str = ""
    skipped: bool = False


def _norm(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, Fraction)):
        return Fraction(v)
    if isinstance(v, float):
        return Fraction(v).limit_denominator(10**9)
    if isinstance(v, str):
        try:
            return Fraction(v.strip())
        except (ValueError, ZeroDivisionError):
            return v
    if isinstance(v, Mapping):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def compare(expect: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Mismatches between ``expect`` and ``actual`` as ``key: expected X, got Y`` lines."""
    bad = []
    for k, ev in expect.items():
        if k not in actual:
            bad.append(f"{k}: expected {ev!r}, got nothing")
            continue
        if _norm(ev) != _norm(actual[k]):
            bad.append(f"{k}: expected {ev!r}, got {actual[k]!r}")
    return bad


def load_cases(path: str | Path) -> tuple[str, list[dict]]:
    """``(ruleset, cases)`` of a case file.  Raises ``ValueError`` naming the file for malformed YAML, a missing
    ``ruleset``/``cases``, a case without ``id``/``kind``/``given``/``expect``, or a repeated id."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{path}: is a folder, expected a case YAML file")
    try:
        doc = parse_yaml(p.read_text(encoding="utf-8"), str(path))
    except ScenarioError as exc:
        raise ValueError(exc.errors[0]) from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file") from None
    if not isinstance(doc, Mapping) or "ruleset" not in doc or not isinstance(doc.get("cases"), list):
        raise ValueError(f"{path}: expected a mapping with 'ruleset' and a list 'cases'")
    ids: set[str] = set()
    for i, c in enumerate(doc["cases"]):
        missing = [k for k in ("id", "kind", "given", "expect") if not (isinstance(c, Mapping) and c.get(k))]
        if missing:
            raise ValueError(f"{path}: cases[{i}]: missing or empty {', '.join(missing)}")
        if c["id"] in ids:
            raise ValueError(f"{path}: cases[{i}].id: {c['id']!r} is repeated; ids must be unique")
        ids.add(c["id"])
    return str(doc["ruleset"]), list(doc["cases"])


def run_case(ruleset: str, case: Mapping[str, Any]) -> CaseResult:
    cid = str(case.get("id", "?"))
    try:
        rs = rules_base.get(ruleset)
    except rules_base.UnknownRuleset as exc:
        return CaseResult(cid, False, str(exc))
    try:
        actual = rs.run_case(case)
    except Exception as exc:  # noqa: BLE001 - report the case, keep going
        return CaseResult(cid, False, f"raised {type(exc).__name__}: {exc}")
    bad = compare(case.get("expect", {}), actual)
    return CaseResult(cid, not bad, "; ".join(bad))


def run_file(path: str | Path) -> list[CaseResult]:
    ruleset, cases = load_cases(path)
    return [run_case(ruleset, c) for c in cases]
