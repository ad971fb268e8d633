"""Golden-case harness (tests/cases/README.md format, plus ``kind: play`` of tests/cases/PLAY.md), at the model's
level of the flow (it builds battles and answers with a script policy).

``run_file(path)`` evaluates every case of a case file.  Per-shot kinds (``odds``, ``outcome``, ``geometry``) go
down to the rules (:func:`sim.rules.cases.run_rule_case`: the rule set's ``run_case``, each expected key compared;
exact fractions as ``Fraction`` values, everything else with ``==``).  ``kind: play`` cases are run here for every
rule set (:func:`run_play_case`): a small battle is built the way :class:`sim.model.BattleModel` builds one (from a
scenario assembled out of the case's ``given``), the rule dice are a :class:`~sim.dice.FixedDice`, each side's
controller answers from the case's script, and the decisions offered, the events emitted, the final tank state and
the outcome are compared with ``expect``.  Used by ``tanksim cases`` and by ``tests/test_golden_cases.py``.
"""
from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from agents.policies.base import Policy
from sim.actions import Action, Activate, Fire, Pass, Pivot, Plan, Ram, Special, Step
from sim.dice import DiceError, DiceExhausted, FixedDice
from sim.events import EVENT_TYPES, BattleStateSet, TankStateSet
from sim.hexgrid import Hex
from sim.messages import top_level_kind
from sim.rules import base as rules_base
from sim.rules.base import Decision
from sim.rules.cases import CaseResult, _norm, run_rule_case
from sim.scenario import ScenarioError, _fmt_validation, find_scenario, parse_yaml, read_text, validate

#: Longest play a case may drive (decisions); a rule set looping for ever fails the case instead of hanging.
MAX_DECISIONS = 5000
_P = ParamSpec("_P")
_R = TypeVar("_R")


def load_cases(path: str | Path) -> tuple[str, list[dict]]:
    """``(ruleset, cases)`` of a case file.  Raises ``ValueError`` naming the file for malformed YAML, a missing
    ``ruleset``/``cases``, a case without ``id``/``kind``/``given``/``expect``, or a repeated id."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{path}: is a folder, expected a case YAML file")
    try:
        doc = parse_yaml(read_text(p, str(path)), str(path))
    except ScenarioError as exc:
        raise ValueError(exc.errors[0]) from None
    if not isinstance(doc, Mapping) or "ruleset" not in doc or not isinstance(doc.get("cases"), list):
        what = ("it is a scenario file: run it with tanksim run" if isinstance(doc, Mapping) and "sides" in doc else
                f"got {top_level_kind(doc)}" if not isinstance(doc, Mapping) else
                f"top-level keys: {', '.join(sorted(map(str, doc))[:8]) or 'none'}")
        raise ValueError(f"{path}: (top level): expected a case file, a mapping with 'ruleset' and a list 'cases' "
                         f"({what})")
    ids: set[str] = set()
    for i, c in enumerate(doc["cases"]):
        missing = [k for k in ("id", "kind", "given", "expect") if not (isinstance(c, Mapping) and c.get(k))]
        if missing:
            raise ValueError(f"{path}: cases[{i}]: missing or empty {', '.join(missing)}")
        if c["id"] in ids:
            raise ValueError(f"{path}: cases[{i}].id: {c['id']!r} is repeated; ids must be unique")
        ids.add(c["id"])
    return str(doc["ruleset"]), list(doc["cases"])


def run_case(ruleset: str, case: Mapping[str, Any], src: str = "<cases>", index: int = 0) -> CaseResult:
    """Run one case of any kind: ``play`` here (:func:`run_play_case`), the per-shot kinds down in the rules
    (:func:`sim.rules.cases.run_rule_case`).  ``src`` and ``index`` (the file and the case's position) name the
    case in error messages."""
    if case.get("kind") == "play":
        return run_play_case(ruleset, case, src, index)
    return run_rule_case(ruleset, case)


def run_file(path: str | Path) -> list[CaseResult]:
    """Every case of the case file ``path``; raises ``ValueError`` for a malformed file (see :func:`load_cases`)."""
    ruleset, cases = load_cases(path)
    return [run_case(ruleset, c, str(path), i) for i, c in enumerate(cases)]


# =================================================================================================================
# Play cases (tests/cases/PLAY.md)
# =================================================================================================================

class PlayCaseError(ValueError):
    """A play case is malformed.  ``errors`` holds one ``FILE: cases[i].given.field: what was expected`` line each."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlayTank(_Strict):
    """A tank of a play case: a scenario tank entry plus its ``side`` (0 or 1) and a required ``label``."""

    label: str = Field(min_length=1)
    side: int = Field(ge=0, le=1)
    vehicle: str
    hex: tuple[int, int]
    facing: int = Field(default=0, ge=0, le=5)
    rules: dict[str, Any] = Field(default_factory=dict)


class PlaySide(_Strict):
    """Name, role and exit edge of one side (the defaults are a scenario's)."""

    name: str | None = None
    role: Literal["attacker", "defender", "none"] | None = None
    exit_edge: Literal["north", "south", "east", "west"] | None = None


class PlayGiven(_Strict):
    """The ``given`` block of a play case (PLAY.md "Given")."""

    map: dict[str, Any] | None = None
    scenario: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    sides: list[PlaySide] | None = Field(default=None, min_length=2, max_length=2)
    turn_limit: int | None = Field(default=None, ge=1)
    objectives: list[dict[str, Any]] | None = None
    victory: dict[str, Any] | None = None
    tanks: list[PlayTank] | None = None
    rules_state: dict[str, dict[str, Any]] = Field(default_factory=dict)
    start_turn: int = Field(default=1, ge=1)
    turns: int = Field(default=1, ge=1, le=200)
    dice: list[StrictInt] = Field(default_factory=list)
    answers: list[Any] = Field(default_factory=list)


class LegalSpec(_Strict):
    contains: list[Any] = Field(default_factory=list)
    excludes: list[Any] = Field(default_factory=list)


class DecisionSpec(_Strict):
    """An expected (or forbidden) decision: every field given must match."""

    kind: str | None = None
    side: int | None = None
    actor: str | None = None
    actors: list[str] | None = None
    default: Any = None
    context: dict[str, Any] | None = None
    legal: LegalSpec | None = None


class FinalSpec(_Strict):
    hex: tuple[int, int] | None = None
    facing: int | None = None
    turret_facing: int | None = None
    status: str | None = None
    rules_state: dict[str, Any] | None = None


class OutcomeSpec(_Strict):
    ended: bool = True
    winner: int | None = None
    reason: str | None = None
    points: list[int] | None = None


class PlayExpect(_Strict):
    """The ``expect`` block of a play case (PLAY.md "Expect")."""

    decisions: list[DecisionSpec] = Field(default_factory=list)
    no_decisions: list[DecisionSpec] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    no_events: list[dict[str, Any]] = Field(default_factory=list)
    final: dict[str, FinalSpec] = Field(default_factory=dict)
    outcome: OutcomeSpec | None = None


_FORMS = ("activate", "step", "pivot", "fire", "ram", "special", "plan")
_FORM_KEYS = {"activate": {"mode"}, "step": set(), "pivot": set(), "fire": {"weapons", "ammo"}, "ram": set(),
              "special": {"args"}, "plan": {"then", "end_facing", "end_status"}}
#: Event and context fields that hold tank ids (shown as labels in messages).
_ID_KEYS = frozenset({"tank", "shooter", "target", "by", "mover", "actor", "rammer", "evader"})
_MISSING = object()


def _hexpair(v: Any) -> Hex | None:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                for x in v):
        return Hex(int(v[0]), int(v[1]))
    return None


class _Labels:
    """Tank labels <-> ids of one play battle."""

    def __init__(self, labels: Mapping[str, int]):
        self.ids = dict(labels)
        self.names = {v: k for k, v in labels.items()}

    def id(self, label: Any, where: str) -> int:
        if isinstance(label, str) and label in self.ids:
            return self.ids[label]
        raise PlayCaseError([f"{where}: {label!r} is not a tank label; expected one of {', '.join(self.ids)}"])

    def name(self, tid: Any) -> str:
        return self.names.get(tid, repr(tid))

    def to_ids(self, v: Any) -> Any:
        """``v`` with every string that is a tank label replaced by its id (lists become tuples: frozen values)."""
        if isinstance(v, str) and v in self.ids:
            return self.ids[v]
        if isinstance(v, Mapping):
            return {k: self.to_ids(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return tuple(self.to_ids(x) for x in v)
        return v


def build_action(raw: Any, where: str, labels: _Labels, actor: int | None, default: Action | None) -> Action:
    """The :class:`~sim.actions.Action` a scripted answer stands for (PLAY.md "Answers").

    ``actor`` is the tank the answer acts for unless it names its own ``actor:``; ``default`` is the decision's
    default (``None`` while validating, where ``default`` answers are accepted as they are).  Raises
    :class:`PlayCaseError` (``where: what was expected``) for a malformed answer or an unknown label."""
    if raw == "default":
        return default if default is not None else Pass(actor, "default")
    if raw == "pass":
        return Pass(actor)
    if not isinstance(raw, Mapping):
        raise PlayCaseError([f"{where}: expected default, pass or a mapping with one of {', '.join(_FORMS)}, "
                             f"got {raw!r}"])
    raw = dict(raw)
    if "actor" in raw:
        actor = labels.id(raw.pop("actor"), f"{where}.actor")
    forms = [k for k in _FORMS if k in raw]
    if len(forms) != 1:
        raise PlayCaseError([f"{where}: expected exactly one of {', '.join(_FORMS)}, got "
                             f"{', '.join(map(str, raw)) or 'none'}"])
    form = forms[0]
    extra = sorted(set(raw) - {form} - _FORM_KEYS[form])
    if extra:
        allowed = ", ".join(sorted(_FORM_KEYS[form] | {"actor"}))
        raise PlayCaseError([f"{where}.{extra[0]}: unknown field for a {form} answer; expected {allowed}"])
    v = raw[form]
    if form == "activate":
        mode = raw.get("mode")
        if not isinstance(mode, str):
            raise PlayCaseError([f"{where}.mode: expected the action mode's name (a string), got {mode!r}"])
        return Activate(labels.id(v, f"{where}.activate"), mode)
    if form == "step":
        h = _hexpair(v)
        if h is None:
            raise PlayCaseError([f"{where}.step: expected a hex [q, r], got {v!r}"])
        return Step(actor, h)
    if form == "pivot":
        if not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 5):
            raise PlayCaseError([f"{where}.pivot: expected a facing 0..5, got {v!r}"])
        return Pivot(actor, v)
    if form == "fire":
        h = _hexpair(v)
        target: int | Hex = h if h is not None else labels.id(v, f"{where}.fire")
        weapons = raw.get("weapons", [])
        if not (isinstance(weapons, list) and all(isinstance(w, str) for w in weapons)):
            raise PlayCaseError([f"{where}.weapons: expected a list of weapon names, got {weapons!r}"])
        ammo = raw.get("ammo")
        if ammo is not None and not isinstance(ammo, str):
            raise PlayCaseError([f"{where}.ammo: expected an ammunition name, got {ammo!r}"])
        return Fire(actor, target, tuple(weapons), ammo)
    if form == "ram":
        return Ram(actor, labels.id(v, f"{where}.ram"))
    if form == "special":
        args = raw.get("args", {})
        if not isinstance(v, str) or not isinstance(args, Mapping):
            raise PlayCaseError([f"{where}: expected {{special: NAME, args: {{...}}}}, got {raw!r}"])
        return Special(actor, v, labels.to_ids(args))
    # plan
    if not isinstance(v, list):
        raise PlayCaseError([f"{where}.plan: expected a list of steps ({{step: [q, r]}} / {{pivot: F}}), got {v!r}"])
    steps = tuple(build_action(s, f"{where}.plan[{k}]", labels, actor, None) for k, s in enumerate(v))
    then = raw.get("then")
    then_act = None if then is None else build_action(then, f"{where}.then", labels, actor, None)
    end_facing = raw.get("end_facing")
    if end_facing is not None and not (isinstance(end_facing, int) and 0 <= end_facing <= 5):
        raise PlayCaseError([f"{where}.end_facing: expected a facing 0..5, got {end_facing!r}"])
    end_status = raw.get("end_status")
    if end_status is not None and not isinstance(end_status, str):
        raise PlayCaseError([f"{where}.end_status: expected a status name, got {end_status!r}"])
    return Plan(actor, steps, then=then_act, end_facing=end_facing, end_status=end_status)


@dataclass
class _Answer:
    """One scripted answer: its selectors and the answer as written."""

    index: int
    where: str
    kind: str | None = None
    side: int | None = None
    actor: int | None = None
    answer: Any = "default"

    def matches(self, d: Decision) -> bool:
        return ((self.kind is None or d.kind == self.kind) and (self.side is None or d.side == self.side)
                and (self.actor is None or self.actor in d.actors))

    def describe(self, labels: _Labels) -> str:
        sel = [f"decision: {self.kind}"] if self.kind else []
        if self.side is not None:
            sel.append(f"side: {self.side}")
        if self.actor is not None:
            sel.append(f"actor: {labels.name(self.actor)}")
        return f"answers[{self.index}] {{{', '.join(sel) or 'any decision'}}} -> {self.answer!r}"


def _parse_answers(raws: list[Any], where: str, labels: _Labels) -> list[_Answer]:
    out = []
    for k, raw in enumerate(raws):
        w = f"{where}[{k}]"
        if raw == "default":
            out.append(_Answer(k, w))
            continue
        if not isinstance(raw, Mapping) or "answer" not in raw:
            raise PlayCaseError([f"{w}: expected default or a mapping {{decision, side, actor, answer}} with an "
                                 f"answer, got {raw!r}"])
        extra = sorted(set(raw) - {"decision", "side", "actor", "answer"})
        if extra:
            raise PlayCaseError([f"{w}.{extra[0]}: unknown field; expected decision, side, actor, answer"])
        kind, side = raw.get("decision"), raw.get("side")
        if kind is not None and not isinstance(kind, str):
            raise PlayCaseError([f"{w}.decision: expected a decision kind (a string), got {kind!r}"])
        if side is not None and side not in (0, 1):
            raise PlayCaseError([f"{w}.side: expected the side index 0 or 1, got {side!r}"])
        actor = labels.id(raw["actor"], f"{w}.actor") if raw.get("actor") is not None else None
        build_action(raw["answer"], f"{w}.answer", labels, actor if actor is not None else 0, None)
        out.append(_Answer(k, w, kind, side, actor, raw["answer"]))
    return out


class _Script:
    """The answers of one play case, used in order (PLAY.md "Answers")."""

    def __init__(self, answers: list[_Answer], labels: _Labels):
        self.answers = answers
        self.labels = labels
        self.next = 0
        self.used_at: list[int] = []  # decision index at which each answer was used
        self.decision_index = 0

    def answer(self, d: Decision) -> Action:
        if self.next < len(self.answers) and self.answers[self.next].matches(d):
            a = self.answers[self.next]
            self.next += 1
            self.used_at.append(self.decision_index)
            actor = a.actor if a.actor is not None else (d.actors[0] if d.actors else None)
            return build_action(a.answer, f"{a.where}.answer", self.labels, actor, d.default)
        return d.default


class ScriptPolicy(Policy):
    """A policy that answers from a play case's script (the next answer whose selectors match, else the
    decision's default).  Used for both sides, so the script's order is the order of play."""

    name = "script"

    def __init__(self, script: _Script):
        super().__init__()
        self.script = script

    def decide(self, observation: Any, decision: Decision) -> Action:
        return self.script.answer(decision)


# --- comparing values ----------------------------------------------------------------------------------------------

def _plain(v: Any) -> Any:
    """A decision context or event payload value in case-file terms: hexes and tuples as lists, mappings as
    dicts (keys kept), fractions kept."""
    if isinstance(v, Hex):
        return [v.q, v.r]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_plain(x) for x in v), key=repr)
    if is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v)}
    return v


def _frac(v: Any) -> Fraction | None:
    """``v`` as an exact number the way per-shot cases read one (:func:`sim.rules.cases._norm`), else ``None``."""
    n = _norm(v)
    return n if isinstance(n, Fraction) else None


def _actual_key(k: Any, actual: Mapping[Any, Any], labels: _Labels) -> Any:
    if k in actual:
        return k
    if isinstance(k, str):
        if k in labels.ids and labels.ids[k] in actual:
            return labels.ids[k]
        if k.lstrip("-").isdigit() and int(k) in actual:
            return int(k)
    for ak in actual:
        if str(ak) == str(k):
            return ak
    return _MISSING


def value_matches(expected: Any, actual: Any, labels: _Labels) -> bool:
    """Whether ``actual`` matches ``expected`` as PLAY.md says: a label stands for its tank id, ``[q, r]`` for a
    hex, a mapping is compared as a subset (recursively), numbers as exact values (``"1/2"`` equals one half)."""
    actual = _plain(actual)
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        for k, v in expected.items():
            ak = _actual_key(k, actual, labels)
            if ak is _MISSING or not value_matches(v, actual[ak], labels):
                return False
        return True
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(value_matches(e, a, labels) for e, a in zip(expected, actual)))
    if expected is None:
        return actual is None
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual == expected
    if isinstance(expected, str):
        if isinstance(actual, int) and not isinstance(actual, bool) and expected in labels.ids:
            return labels.ids[expected] == actual
        if isinstance(actual, str) and actual == expected:
            return True
        fe, fa = _frac(expected), _frac(actual)
        return fe is not None and fa is not None and fe == fa
    if isinstance(expected, (int, float, Fraction)):
        fe, fa = _frac(expected), _frac(actual)
        return fa is not None and fe == fa
    return expected == actual


def _show_value(v: Any, labels: _Labels, key: str | None = None) -> str:
    v = _plain(v)
    if key in _ID_KEYS and isinstance(v, int) and not isinstance(v, bool) and v in labels.names:
        return labels.name(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {_show_value(x, labels, str(k))}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_show_value(x, labels) for x in v) + "]"
    if isinstance(v, Fraction):
        return str(v)
    return repr(v) if isinstance(v, str) else str(v)


def show_action(a: Any, labels: _Labels) -> str:
    """A short text for an action, with tank labels."""
    if a is None:
        return "None"
    who = labels.name(a.actor) if getattr(a, "actor", None) is not None else "side"
    if isinstance(a, Activate):
        return f"activate {who} {a.mode}"
    if isinstance(a, Step):
        return f"{who} step {list(a.to)}"
    if isinstance(a, Pivot):
        return f"{who} pivot {a.facing}"
    if isinstance(a, Fire):
        tgt = list(a.target) if isinstance(a.target, tuple) else labels.name(a.target)
        extra = (f" weapons {list(a.weapons)}" if a.weapons else "") + (f" ammo {a.ammo}" if a.ammo else "")
        return f"{who} fire {tgt}{extra}"
    if isinstance(a, Ram):
        return f"{who} ram {labels.name(a.target)}"
    if isinstance(a, Special):
        return f"{who} special {a.name} {_show_value(dict(a.args), labels)}"
    if isinstance(a, Plan):
        steps = ", ".join(show_action(s, labels) for s in a.steps)
        return (f"{who} plan [{steps}] then {show_action(a.then, labels)} end_facing {a.end_facing} "
                f"end_status {a.end_status}")
    if isinstance(a, Pass):
        return f"{who} pass"
    return repr(a)


# --- the play itself -------------------------------------------------------------------------------------------

class _CaseDice(FixedDice):
    """:class:`FixedDice` whose errors name the die and what it was rolled for."""

    def roll(self, die: str = "d10", label: str = "") -> int:
        try:
            return super().roll(die, label)
        except DiceExhausted as exc:
            raise DiceExhausted(f"{exc} (missing dice: a {die} for {label or 'an unnamed roll'})") from None
        except ValueError as exc:
            raise DiceError(f"{exc} (the {die} for {label or 'an unnamed roll'})") from None


class _TooLong(RuntimeError):
    pass


@dataclass
class _Offered:
    """One decision offered during play, the action it got, where the log stood, and (computed at once, while the
    battle is in that state) what each expected decision entry found different about it."""

    index: int
    decision: Decision
    action: Action
    log_seq: int
    mismatch: dict[tuple[str, int], list[str]] = field(default_factory=dict)


@dataclass
class PlaySetup:
    """A validated play case, ready to run: the scenario, labels, script and expectations."""

    case_id: str
    where: str
    spec: Any
    labels: _Labels
    given: PlayGiven
    expect: PlayExpect
    rules_state: dict[int, dict[str, Any]]
    answers: list[_Answer]


def _rewrite(line: str, marker: str, where: str, tank_index: Mapping[tuple[int, int], int], tanks_given: bool) -> str:
    """A scenario validation error in play-case terms: ``FILE: cases[i].given.tanks[j].hex: ...``."""
    body = line[len(marker) + 2:] if line.startswith(marker + ": ") else line
    path, sep, msg = body.partition(": ")
    if not sep:
        return f"{where}: {body}"
    m = re.match(r"sides\[(\d)\]\.tanks\[(\d+)\](.*)", path)
    if m and tanks_given:
        j = tank_index.get((int(m.group(1)), int(m.group(2))))
        path = f"tanks[{j}]{m.group(3)}"
    elif path.startswith("ruleset.options"):
        path = "options" + path[len("ruleset.options"):]
    elif path == "(top level)":
        return f"{where}: {msg}"
    return f"{where}.{path}: {msg}"


def prepare_play_case(ruleset: str, case: Mapping[str, Any], src: str = "<cases>", index: int = 0) -> PlaySetup:
    """Validate a play case and assemble its scenario.  Raises :class:`PlayCaseError` with lines such as
    ``FILE: cases[3].given.tanks[0].hex: [40, 2] is off the map (8 x 6)``."""
    where = f"{src}: cases[{index}]"
    gw = f"{where}.given"
    try:
        given = PlayGiven(**case["given"]) if isinstance(case.get("given"), Mapping) else None
    except ValidationError as exc:
        raise PlayCaseError(_fmt_validation(src, exc, f"cases[{index}].given", model=PlayGiven)) from None
    if given is None:
        raise PlayCaseError([f"{gw}: expected a mapping (map or scenario, tanks, dice, answers, ...)"])
    try:
        expect = PlayExpect(**case["expect"]) if isinstance(case.get("expect"), Mapping) else None
    except ValidationError as exc:
        raise PlayCaseError(_fmt_validation(src, exc, f"cases[{index}].expect", model=PlayExpect)) from None
    if expect is None:
        raise PlayCaseError([f"{where}.expect: expected a mapping (decisions, events, final, outcome, ...)"])
    if (given.map is None) == (given.scenario is None):
        raise PlayCaseError([f"{gw}: expected exactly one of map (a scenario map block) or scenario (a bundled "
                             f"scenario name or path)"])
    try:
        rules_base.get(ruleset)
    except rules_base.UnknownRuleset as exc:
        raise PlayCaseError([f"{src}: ruleset: {exc}"]) from None

    data: dict[str, Any] = {}
    if given.scenario is not None:
        try:
            ssrc, text = find_scenario(given.scenario)
            data = dict(parse_yaml(text, ssrc) or {})
        except (FileNotFoundError, ScenarioError) as exc:
            raise PlayCaseError([f"{gw}.scenario: {exc}"]) from None
        rs_name = data.get("ruleset", {})
        rs_name = rs_name.get("name", "panzer_squadron") if isinstance(rs_name, Mapping) else rs_name
        if rs_name != ruleset:
            raise PlayCaseError([f"{gw}.scenario: {given.scenario!r} is a {rs_name} scenario; this file's rule set "
                                 f"is {ruleset}"])
        options = dict((data.get("ruleset") or {}).get("options", {})) if isinstance(data.get("ruleset"), Mapping) \
            else {}
        options.update(given.options)
    else:
        if not given.tanks:
            raise PlayCaseError([f"{gw}.tanks: a case with a map needs its tanks (label, side, vehicle, hex, ...)"])
        data = {"map": given.map, "sides": [{"name": "Side 1"}, {"name": "Side 2"}]}
        options = dict(given.options)
    data["name"] = str(case.get("id", "play case"))
    data["ruleset"] = {"name": ruleset, "options": options}
    if given.map is not None:
        data["map"] = given.map
    for name in ("turn_limit", "objectives", "victory"):
        if getattr(given, name) is not None:
            data[name] = getattr(given, name)
    sides = [dict(s) for s in data.get("sides", [])]
    for si, s in enumerate(sides):
        s["policy"] = "hold"  # the script answers every decision
        s.pop("controller", None)
        for t in s.get("tanks", []) if isinstance(s.get("tanks"), list) else []:
            if isinstance(t, dict):
                t.pop("policy", None)
        if given.sides is not None:
            for key, value in given.sides[si].model_dump().items():
                if value is not None:
                    s[key] = value
    tank_index: dict[tuple[int, int], int] = {}
    if given.tanks is not None:
        labels_seen: dict[str, int] = {}
        for j, t in enumerate(given.tanks):
            if t.label in labels_seen:
                raise PlayCaseError([f"{gw}.tanks[{j}].label: {t.label!r} is already used by "
                                     f"tanks[{labels_seen[t.label]}]; labels must be unique"])
            labels_seen[t.label] = j
        for si, s in enumerate(sides):
            s["tanks"] = []
            for j, t in enumerate(given.tanks):
                if t.side == si:
                    tank_index[(si, len(s["tanks"]))] = j
                    s["tanks"].append({"label": t.label, "vehicle": t.vehicle, "hex": list(t.hex),
                                       "facing": t.facing, "rules": t.rules})
            if not s["tanks"]:
                raise PlayCaseError([f"{gw}.tanks: side {si} has no tank; each side needs at least one"])
    data["sides"] = sides
    marker = "<play case>"  # the source name of the validation lines, taken off again by _rewrite
    try:
        spec = validate(data, marker)
    except ScenarioError as exc:
        raise PlayCaseError([_rewrite(e, marker, gw, tank_index, given.tanks is not None) for e in exc.errors]) \
            from None
    spec = spec.model_copy(update={"source": f"{src}: cases[{index}]"})

    # labels in scenario order (tank ids), as the battle numbers them
    names: dict[str, int] = {}
    tid = 0
    for side in spec.sides:
        for t in side.tanks:
            names[t.label or f"{side.name[:1].upper()}{tid + 1}"] = tid
            tid += 1
    labels = _Labels(names)
    errors: list[str] = []

    def check(fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        """``fn(*args, **kwargs)``, or ``None`` with its :class:`PlayCaseError` lines added to ``errors``."""
        try:
            return fn(*args, **kwargs)
        except PlayCaseError as exc:
            errors.extend(exc.errors)
            return None

    answers = check(_parse_answers, given.answers, f"{gw}.answers", labels) or []
    rules_state: dict[int, dict[str, Any]] = {}
    for label, values in given.rules_state.items():
        t_id = check(labels.id, label, f"{gw}.rules_state")
        if t_id is not None:
            rules_state[t_id] = {k: labels.to_ids(v) for k, v in values.items()}
    ew = f"{where}.expect"
    for group in ("decisions", "no_decisions"):
        for k, d in enumerate(getattr(expect, group)):
            w = f"{ew}.{group}[{k}]"
            if d.actor is not None:
                check(labels.id, d.actor, f"{w}.actor")
            for a in d.actors or []:
                check(labels.id, a, f"{w}.actors")
            if "default" in d.model_fields_set:
                check(build_action, d.default, f"{w}.default", labels, 0, None)
            if d.legal is not None:
                for part in ("contains", "excludes"):
                    for n, a in enumerate(getattr(d.legal, part)):
                        check(build_action, a, f"{w}.legal.{part}[{n}]", labels, 0, None)
    for group in ("events", "no_events"):
        for k, e in enumerate(getattr(expect, group)):
            w = f"{ew}.{group}[{k}]"
            kind = e.get("kind")
            if kind is None:
                continue
            if kind not in EVENT_TYPES:
                errors.append(f"{w}.kind: unknown event kind {kind!r}; expected one of {', '.join(EVENT_TYPES)}")
                continue
            known = {f.name for f in fields(EVENT_TYPES[kind])}
            for name in e:
                if name != "kind" and name not in known:
                    errors.append(f"{w}.{name}: {kind} has no field {name!r}; its fields: {', '.join(sorted(known))}")
    for label in expect.final:
        check(labels.id, label, f"{ew}.final")
    if errors:
        raise PlayCaseError(errors)
    return PlaySetup(str(case.get("id", "?")), where, spec, labels, given, expect, rules_state, answers)


def _decision_mismatches(spec: DecisionSpec, off: _Offered, labels: _Labels) -> list[str]:
    """What about the offered decision differs from ``spec`` (empty: it matches).  Runs while the battle is in the
    state of the decision, so ``legal`` answers as it did then."""
    d = off.decision
    bad = []
    if spec.kind is not None and d.kind != spec.kind:
        bad.append(f"kind {d.kind}")
    if spec.side is not None and d.side != spec.side:
        bad.append(f"side {d.side}")
    if spec.actor is not None and labels.ids[spec.actor] not in d.actors:
        bad.append(f"actors [{', '.join(labels.name(a) for a in d.actors)}]")
    if spec.actors is not None and [labels.ids[a] for a in spec.actors] != list(d.actors):
        bad.append(f"actors [{', '.join(labels.name(a) for a in d.actors)}]")
    if bad:  # the cheap selectors first: no legality check on decisions of another kind or tank
        return bad
    actor = labels.ids[spec.actor] if spec.actor is not None else (d.actors[0] if d.actors else None)
    if "default" in spec.model_fields_set:
        want = build_action(spec.default, "default", labels, actor, None)
        # ``pass`` names no actor: it matches a side-level Pass(None) default as well as the tank's own
        if want != d.default and not (isinstance(want, Pass) and isinstance(d.default, Pass)):
            bad.append(f"default {show_action(d.default, labels)} (expected {show_action(want, labels)})")
    if spec.context is not None:
        ctx = _plain(dict(d.context))
        for k, v in spec.context.items():
            ak = _actual_key(k, ctx, labels)
            if ak is _MISSING:
                bad.append(f"context has no {k}")
            elif not value_matches(v, ctx[ak], labels):
                bad.append(f"context {k}: {_show_value(ctx[ak], labels, str(k))} (expected {v!r})")
    if spec.legal is not None:
        for part, want_in in (("contains", True), ("excludes", False)):
            for raw in getattr(spec.legal, part):
                a = build_action(raw, "legal", labels, actor, d.default)
                try:
                    got = bool(d.legal.contains(a))
                except Exception as exc:  # noqa: BLE001 - a rule set's crash is a finding of the case
                    bad.append(f"legal.contains({show_action(a, labels)}) raised {type(exc).__name__}: {exc}")
                    continue
                if got != want_in:
                    bad.append(f"{show_action(a, labels)} is {'not ' if want_in else ''}legal")
    return bad


def _event_mismatches(spec: Mapping[str, Any], entry: Any, labels: _Labels) -> list[str]:
    e = entry.event
    if "kind" in spec and e.kind != spec["kind"]:
        return [f"kind {e.kind}"]
    payload = e.payload() if hasattr(e, "payload") else {}
    raw = {f.name: getattr(e, f.name) for f in fields(e)}
    bad = []
    for k, v in spec.items():
        if k == "kind":
            continue
        if k not in raw:
            bad.append(f"no field {k}")
        elif not (value_matches(v, raw[k], labels) or value_matches(v, payload.get(k), labels)):
            bad.append(f"{k}: {_show_value(raw[k], labels, k)} (expected {v!r})")
    return bad


def show_decision(off: _Offered, labels: _Labels) -> str:
    d = off.decision
    ctx = _show_value(dict(d.context), labels)
    return (f"decision #{off.index} {d.kind} side {d.side} actors [{', '.join(labels.name(a) for a in d.actors)}] "
            f"context {ctx} default {show_action(d.default, labels)}; answered {show_action(off.action, labels)}")


def show_event(entry: Any, labels: _Labels) -> str:
    e = entry.event
    payload = {f.name: getattr(e, f.name) for f in fields(e)}
    return f"event #{entry.seq} (turn {entry.turn}) {e.kind} {_show_value(payload, labels)}"


def _subsequence(specs: list[Any], items: list[Any], mismatches: Callable[[int, Any], list[str]], what: str,
                 show: Callable[[Any], str], ew: str) -> list[str]:
    """Match ``specs`` as an ordered subsequence of ``items``; lines for each entry that found no match, with the
    nearest candidates after the previous match."""
    problems = []
    last = -1
    for k, spec in enumerate(specs):
        found = None
        scored = []
        for pos in range(last + 1, len(items)):
            bad = mismatches(k, items[pos])
            if not bad:
                found = pos
                break
            scored.append((any(x.startswith("kind ") for x in bad), len(bad), pos, bad))
        if found is not None:
            last = found
            continue
        shown = _show_spec(spec)
        after = f"after {show(items[last])}" if last >= 0 else "at all"
        lines = [f"{ew}.{what}[{k}] {shown}: not found {after}"]
        scored.sort(key=lambda x: x[:3])
        kind = getattr(spec, "kind", None) if isinstance(spec, BaseModel) else spec.get("kind")
        if scored and not scored[0][0]:  # candidates of the right kind exist: show only those
            scored = [x for x in scored if not x[0]]
        elif kind is not None and scored:
            lines.append(f"  (no {kind} {what[:-1]} came after it)")
            scored = []
        if not scored and len(lines) == 1:
            lines.append(f"  (no {what[:-1]} came after it)")
        for _k, _n, pos, bad in scored[:3]:
            lines.append(f"  nearest: {show(items[pos])}\n    differs: {'; '.join(bad)}")
        problems.append("\n".join(lines))
    return problems


def _show_spec(spec: Any) -> str:
    if isinstance(spec, BaseModel):
        spec = {k: getattr(spec, k) for k in spec.model_fields_set}
        if isinstance(spec.get("legal"), BaseModel):
            spec["legal"] = spec["legal"].model_dump(exclude_defaults=True)
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in spec.items()) + "}"


@dataclass
class PlayRecord:
    """What a play case's battle did: the decisions offered (in order), the log position where play began, the
    model (its battle and outcome), an error that stopped play (missing dice, a rule-set crash) and the script."""

    offered: list[_Offered]
    start_seq: int
    model: Any
    error: str | None
    script: _Script
    dice: _CaseDice


def play(setup: PlaySetup) -> PlayRecord:
    """Drive the battle of a validated play case: ``BattleModel`` with fixed dice and the script as both sides'
    policy, ``turns`` turns from ``start_turn`` (or until the battle ends)."""
    from sim.model import BattleModel

    dice = _CaseDice(setup.given.dice)
    model = BattleModel(setup.spec, seed=0, decision_timeout_s=0, dice=dice)
    script = _Script(setup.answers, setup.labels)
    for ctrl in model.controllers:
        ctrl.policy = ScriptPolicy(script)
        ctrl.per_tank.clear()
    b = model.battle
    for tid, values in setup.rules_state.items():
        for k, v in values.items():
            b.emit(TankStateSet(tid, k, v))
    if setup.given.start_turn > 1:
        b.turn = setup.given.start_turn - 1  # set-up write: the first TurnStarted names start_turn
        b.emit(BattleStateSet("turns_completed", setup.given.start_turn - 1))
    start_seq = len(b.log)
    offered: list[_Offered] = []
    groups = [("decisions", setup.expect.decisions), ("no_decisions", setup.expect.no_decisions)]

    def listen(decision: Decision, action: Action) -> None:
        if len(offered) >= MAX_DECISIONS:
            raise _TooLong(f"more than {MAX_DECISIONS} decisions: the play does not end")
        off = _Offered(len(offered), decision, action, len(b.log))
        for group, specs in groups:
            for k, spec in enumerate(specs):
                try:
                    off.mismatch[(group, k)] = _decision_mismatches(spec, off, setup.labels)
                except Exception as exc:  # noqa: BLE001 - reported as this entry's mismatch
                    off.mismatch[(group, k)] = [f"check raised {type(exc).__name__}: {exc}"]
        offered.append(off)
        script.decision_index = len(offered)

    model.decision_listeners.append(listen)
    error = None
    try:
        for _ in range(setup.given.turns):
            if model.ended:
                break
            model.step()
    except DiceError as exc:
        error = f"dice: {exc}"
    except _TooLong as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a rule set's crash is the case's finding, not the harness's
        tb = traceback.extract_tb(exc.__traceback__)
        at = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno} ({tb[-1].name})" if tb else ""
        error = f"play raised {type(exc).__name__}: {exc}{at}"
    if error is not None:
        last = [show_event(x, setup.labels) for x in b.log[max(start_seq, len(b.log) - 2):]]
        error += "\n  last events: " + ("; ".join(last) or "none")
        if offered:
            error += f"\n  last decision: {show_decision(offered[-1], setup.labels)}"
    script.decision_index = len(offered)
    return PlayRecord(offered, start_seq, model, error, script, dice)


def check_play(setup: PlaySetup, rec: PlayRecord) -> list[str]:
    """Every way the play differs from the case's ``expect`` (and unused dice or answers), as message lines."""
    labels, ew = setup.labels, f"{setup.where}.expect"
    b = rec.model.battle
    problems: list[str] = []
    if rec.error:
        problems.append(rec.error)
    else:
        left = list(rec.dice.remaining)
        if left:
            problems.append(f"dice: {len(left)} fixed rolls left unused: {left} (the rules asked for "
                            f"{len(setup.given.dice) - len(left)} of {len(setup.given.dice)})")
    if rec.script.next < len(setup.answers):
        a = setup.answers[rec.script.next]
        since = rec.script.used_at[-1] if rec.script.used_at else -1
        lines = [f"{a.describe(labels)} was never used (play ended; every answer must match a later decision)"]
        cands = [o for o in rec.offered[since + 1:] if a.kind is None or o.decision.kind == a.kind]
        if not cands:
            lines.append(f"  no {a.kind or ''} decision came after "
                         + (f"decision #{since}" if since >= 0 else "the start"))
        for o in cands[:3]:
            lines.append(f"  candidate: {show_decision(o, labels)}")
        more = len(setup.answers) - rec.script.next - 1
        if more:
            lines.append(f"  ({more} later answers unused too)")
        problems.append("\n".join(lines))

    show_d = lambda o: show_decision(o, labels)  # noqa: E731
    problems += _subsequence(setup.expect.decisions, rec.offered, lambda k, o: o.mismatch[("decisions", k)],
                             "decisions", show_d, ew)
    for k, spec in enumerate(setup.expect.no_decisions):
        hits = [o for o in rec.offered if not o.mismatch[("no_decisions", k)]]
        if hits:
            problems.append(f"{ew}.no_decisions[{k}] {_show_spec(spec)}: offered as {show_d(hits[0])}")
    events = b.log[rec.start_seq:]
    show_e = lambda x: show_event(x, labels)  # noqa: E731
    problems += _subsequence(setup.expect.events, events,
                             lambda k, x: _event_mismatches(setup.expect.events[k], x, labels), "events", show_e, ew)
    for k, event_spec in enumerate(setup.expect.no_events):
        hits = [x for x in events if not _event_mismatches(event_spec, x, labels)]
        if hits:
            problems.append(f"{ew}.no_events[{k}] {_show_spec(event_spec)}: emitted as {show_e(hits[0])}")

    for label, fs in setup.expect.final.items():
        t = b.tanks[labels.ids[label]]
        got = {"hex": None if t.hex is None else [t.hex.q, t.hex.r], "facing": t.facing,
               "turret_facing": t.turret_facing, "status": t.status}
        for attr in ("hex", "facing", "turret_facing", "status"):
            if attr in fs.model_fields_set:
                want = getattr(fs, attr)
                want = list(want) if isinstance(want, tuple) else want
                if not value_matches(want, got[attr], labels):
                    problems.append(f"{ew}.final.{label}.{attr}: expected {want!r}, got {got[attr]!r}")
        for key, v in (fs.rules_state or {}).items():
            if key not in t.rules_state:
                problems.append(f"{ew}.final.{label}.rules_state.{key}: the tank has no such field "
                                f"(fields: {', '.join(sorted(t.rules_state))})")
            elif not value_matches(v, t.rules_state[key], labels):
                problems.append(f"{ew}.final.{label}.rules_state.{key}: expected {v!r}, got "
                                f"{_show_value(t.rules_state[key], labels)}")
    oc = setup.expect.outcome
    if oc is not None:
        out = rec.model.outcome
        if not oc.ended:
            if rec.model.ended:
                problems.append(f"{ew}.outcome: expected the battle to go on, it ended: winner {out.winner}, "
                                f"{out.reason!r}")
        elif not rec.model.ended:
            problems.append(f"{ew}.outcome: expected the battle to end, it has not after turn {b.turn}")
        else:
            if "winner" in oc.model_fields_set and out.winner != oc.winner:
                problems.append(f"{ew}.outcome.winner: expected {oc.winner}, got {out.winner} ({out.reason!r})")
            if oc.reason is not None and oc.reason not in out.reason:
                problems.append(f"{ew}.outcome.reason: expected a reason containing {oc.reason!r}, got "
                                f"{out.reason!r}")
            if oc.points is not None and list(out.points) != list(oc.points):
                problems.append(f"{ew}.outcome.points: expected {oc.points}, got {list(out.points)}")
    rejected = [x for x in events if x.event.kind == "ActionRejected"]
    if problems and rejected:
        problems.append("note: answers rejected as illegal: " + "; ".join(show_e(x) for x in rejected[:3]))
    return problems


def run_play_case(ruleset: str, case: Mapping[str, Any], src: str = "<cases>", index: int = 0) -> CaseResult:
    """Run one ``kind: play`` case (tests/cases/PLAY.md); the message lists every mismatch, one per line."""
    cid = str(case.get("id", "?"))
    try:
        setup = prepare_play_case(ruleset, case, src, index)
    except PlayCaseError as exc:
        return CaseResult(cid, False, "\n".join(exc.errors))
    rec = play(setup)
    problems = check_play(setup, rec)
    return CaseResult(cid, not problems, "\n".join(problems))
