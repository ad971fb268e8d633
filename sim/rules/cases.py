"""The per-shot golden cases of a rule set (tests/cases/README.md): ``odds``, ``outcome`` and ``geometry`` cases
run through the rule set's own ``run_case`` and compared key by key with the case's ``expect``.

Exact fractions are compared as ``Fraction`` values (a string such as ``"53/200"`` is read as one), everything else
with ``==``, nested mappings key by key.  Rules level: imports only the rules and the engine core; the case files
and ``kind: play`` cases (which build battles) are read and run one level up, in :mod:`sim.play_cases`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from sim.rules import base as rules_base


@dataclass
class CaseResult:
    """One case's verdict: ``ok``, a ``message`` saying what did not match (lines), ``skipped``."""

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
            return rules_base.parse_fraction(v)
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


def run_rule_case(ruleset: str, case: Mapping[str, Any]) -> CaseResult:
    """Run one per-shot case (``odds``, ``outcome``, ``geometry``) of rule set ``ruleset`` through the rule set's
    ``run_case`` and compare each expected key (:func:`compare`).  An unknown rule set or a raising case is a
    failed :class:`CaseResult` naming the error, never an exception."""
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
