"""Echoing a user's values in error messages safely (``FILE: field.path: what was expected``, DESIGN.md "Trust
boundaries"): a value is shown cut to a limit, and a huge or self-referencing one is never expanded.

Engine core: imported by the scenario and experiment loaders, the rule sets' parameter checks and the plug-in
checks of ``agents/``, so it imports nothing of the project.
"""
from __future__ import annotations

import argparse
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (``...`` marks a cut), for echoing a user's value in a
    message: safe for any value (huge integers, deep or self-referencing containers, alias-shared YAML data are
    never expanded)."""

    class _Short(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 200:
                return f"<integer of about {int(x.bit_length() * 0.30103) + 1} digits>"
            return repr(x)

    r = _Short(maxlevel=3, maxtuple=6, maxlist=6, maxarray=6, maxdict=6, maxset=6, maxfrozenset=6, maxdeque=6,
               maxstring=limit, maxlong=limit, maxother=limit)
    try:
        text = r.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is named by its type
        text = f"<{type(value).__name__}>"
    return clip(text, limit)


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to at most ``limit`` characters (``...`` marks a cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Prefixes pydantic puts before the text of an error a validator raised (``ValueError`` / ``AssertionError``);
#: they say nothing to a user and are dropped from every printed message.
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_message(error: Mapping[str, Any]) -> str:
    """The text of one pydantic error (an item of ``ValidationError.errors()``) as a user reads it: the
    ``"Value error, "`` (or ``"Assertion failed, "``) pydantic prefixes to a validator's own message removed.
    Every place that prints validation errors goes through this."""
    msg = str(error.get("msg", ""))
    for prefix in _PYDANTIC_PREFIXES:
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def match_name(text: str, names: Sequence[str]) -> int | None:
    """The index in ``names`` a user's ``text`` names: an exact match first, else the one name equal to it
    ignoring case (``--play soviets`` for a side ``Soviets``); ``None`` when none, or several, match without case.

    Decision (the spec is silent): names of sides and keywords typed on a command line match case-insensitively
    wherever that is unambiguous; two names that differ only in case must be typed exactly."""
    if text in names:
        return list(names).index(text)
    folded = [i for i, n in enumerate(names) if n.casefold() == text.casefold()]
    return folded[0] if len(folded) == 1 else None


def expected_fields(model: Any, loc: Sequence[Any]) -> list[str] | None:
    """The field names (aliases where set) that the pydantic model class ``model`` accepts at the mapping that holds
    ``loc``'s last part (an ``extra_forbidden`` error's location: ``loc[:-1]`` is walked through nested models,
    lists, tuples, dicts and optional or union types; the first model found is used); ``None`` where the walk
    does not end at a model."""
    import types
    import typing

    def model_in(tp: Any) -> Any:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            return model_in(typing.get_args(tp)[0])
        if origin in (typing.Union, types.UnionType):
            return next((m for m in map(model_in, typing.get_args(tp)) if m is not None), None)
        return tp if isinstance(tp, type) and hasattr(tp, "model_fields") else None

    def element(tp: Any) -> Any:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin in (list, tuple, set, frozenset) and args:
            return args[0]
        if origin is dict and len(args) == 2:
            return args[1]
        m = model_in(tp)
        if m is None:
            for a in args:  # an Optional[list[...]] and the like
                if typing.get_origin(a) in (list, tuple, dict):
                    return element(a)
        return None

    cur: Any = model
    for part in loc[:-1]:
        m = model_in(cur)
        if isinstance(part, str) and m is not None:
            field = next((f for n, f in m.model_fields.items() if part in (n, f.alias)), None)
            if field is None:
                return None
            cur = field.annotation
        else:
            cur = element(cur)
            if cur is None:
                return None
    m = model_in(cur)
    if m is None:
        return None
    return [f.alias or n for n, f in m.model_fields.items()]


def unknown_field_message(name: Any, allowed: Sequence[str], limit: int = 600) -> str:
    """``unknown field 'X'; expected one of a, b, c`` with the closest name first when one is close
    (:func:`difflib.get_close_matches`): what a misspelt field's error says instead of pydantic's "Extra inputs are
    not permitted").  The names are listed whole: past about ``limit`` characters the rest are counted
    (``... and 12 more``), never cut inside a name."""
    head = f"unknown field {short(name)}{did_you_mean(name, allowed)}; expected one of "
    names = sorted(allowed)
    shown: list[str] = []
    size = len(head)
    for i, n in enumerate(names):
        if shown and size + len(n) + 2 > limit:
            return head + ", ".join(shown) + f", ... and {len(names) - i} more"
        shown.append(n)
        size += len(n) + 2
    return head + ", ".join(shown)


def unknown_policy_message(name: Any, builtin: Iterable[str]) -> str:
    """``unknown policy 'X' (did you mean 'Y'?); built-in: a, b, ..., or give package.module:ClassName``: the one
    wording of an unknown doctrine name everywhere (a scenario's, an experiment's or a tournament's policy, ``run
    --policy``, ``match``), with the closest built-in name when one is close (:func:`did_you_mean`)."""
    names = sorted(builtin)
    return (f"unknown policy {short(name)}{did_you_mean(name, names)}; built-in: {', '.join(names)}, or give "
            f"package.module:ClassName")


def unknown_side_message(key: Any, names: Sequence[str], roles: Sequence[str] = (), extra: str = "") -> str:
    """``no side 'Sovets' (did you mean 'Soviets'?); sides are Soviets, Germans (or 1, 2)``: the one wording of a
    side a user named that the scenario does not have (``run --policy``, ``report`` / ``power --side``, ``app
    --play``; the command puts the option typed before it).  The hint is the closest name, else the closest of
    ``roles``; ``extra`` is added inside the parenthesis (``, or nobody``)."""
    hint = did_you_mean(key, names) or did_you_mean(key, roles)
    numbers = ", ".join(str(i + 1) for i in range(len(names)))
    return f"no side {short(key)}{hint}; sides are {', '.join(names)} (or {numbers}{extra})"


def did_you_mean(name: Any, names: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` naming the one of ``names`` closest to a user's misspelt ``name``
    (:func:`difflib.get_close_matches`, its default cut-off 0.6), or ``""`` when none is close: the hint every
    "unknown field / parameter" message carries."""
    import difflib

    close = difflib.get_close_matches(str(name), list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def field_path(loc: Sequence[Any]) -> str:
    """A pydantic error location written as a user reads it: ``sides[0].tanks[2].hex`` (a dict key's own error
    says ``(a key)``; each name cut to 40 characters); ``(top level)`` for an empty location."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (a key)"
        else:
            out += ("." if out else "") + clip(str(part), 40)
    return out or "(top level)"


def problem_message(error: Mapping[str, Any], model: Any = None) -> str:
    """The text of one pydantic error as every input file prints it: :func:`error_message`, except that a field the
    schema does not know (``extra_forbidden``) says :func:`unknown_field_message` -- with the closest valid name and
    the valid names when the validated ``model`` class is given (:func:`expected_fields`), ``unknown field 'X'``
    alone when not."""
    loc = tuple(x for x in error.get("loc", ()) if not (isinstance(x, str) and x.startswith(("function-", "tuple[",
                                                                                             "list["))))
    if error.get("type") == "extra_forbidden" and loc:
        allowed = expected_fields(model, loc) if model is not None else None
        if allowed:
            return unknown_field_message(loc[-1], allowed)
        return f"unknown field {short(loc[-1])}"
    return error_message(error)


def says_value(msg: str, value: Any) -> bool:
    """Whether the message ``msg`` already shows ``value`` (a validator's own ``..., got 3`` or a quoted
    ``'advnce'``), so :func:`validation_lines` adds no second ``(got 3)``.  A number counts only after ``got`` or
    as the message's first word (``7 is not an Armor Factor ...``; a bare ``3`` elsewhere may be a bound, not the
    value); a text counts quoted anywhere."""
    shown = {short(value), repr(value)} | (set() if isinstance(value, str) else {str(value)})
    for t in shown:   # the value as a whole word: "got 2" is not said by "got 20"
        if re.search(rf"(?:\bgot |^){re.escape(t)}(?!\w|\.\d)", msg):
            return True
    return isinstance(value, str) and any(t in msg for t in (short(value), repr(value)))


def validation_lines(src: str, exc: Any, prefix: str = "", *, model: Any = None, limit: int = 40) -> list[str]:
    """One ``src: field.path: message (got VALUE)`` line per error of the pydantic ``ValidationError`` ``exc``
    (VALUE cut short, never expanded; a misspelt field says the closest valid name, :func:`problem_message`, given
    the validated ``model`` class).  The same problem at other indexes of a list is counted, not repeated; at most
    ``limit`` lines (the last counts the others).  ``prefix`` is the path of the validated value inside the file.
    The one formatter of every pydantic-validated input file (scenario, experiment, tournament, play case,
    generator parameters)."""
    lines: list[str] = []
    alike: dict[tuple[Any, ...], int] = {}
    counts: list[int] = []
    other = 0
    for e in exc.errors(include_url=False, include_context=False):
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith(("function-", "tuple[", "list["))))
        msg = problem_message(e, model)
        got = None if e.get("type") == "extra_forbidden" else e.get("input")  # a misspelt field's value says nothing
        pattern = (tuple("#" if isinstance(x, int) else x for x in loc), msg)
        if pattern in alike:
            counts[alike[pattern]] += 1
            continue
        if len(lines) >= limit - 1:
            other += 1
            continue
        path = field_path(loc)
        if prefix:
            path = prefix + ("" if path.startswith("[") else ".") + path if path != "(top level)" else prefix
        got_txt = ("" if isinstance(got, (dict, list, tuple)) or got is None or says_value(msg, got)
                   else f" (got {short(got)})")
        alike[pattern] = len(lines)
        lines.append(f"{src}: {path}: {clip(msg, 300 if e.get('type') != 'extra_forbidden' else 700)}{got_txt}")
        counts.append(0)
    out = [line + (f" (and {n:,} more like it)" if n else "") for line, n in zip(lines, counts)]
    return out + ([f"{src}: ... and {other:,} more problems"] if other else [])



#: Characters a name or a text may not hold: C0/C1 controls (ESC starts a terminal escape, CR and NUL rewrite a
#: line), the Unicode line and paragraph separators, and the bidirectional embedding / override / isolate marks
#: (a name that prints its own characters in reverse).  A text may hold newlines and tabs.
_BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c")


def unprintable(text: str, allow: str = "", invisible: bool = False) -> int | None:
    """The index of the first character of ``text`` that must not reach a terminal or a table -- a control character
    (Unicode category Cc, except those in ``allow``), a line or paragraph separator (Zl, Zp) or a bidirectional
    control mark -- or ``None`` when there is none.  ``invisible``: also every other invisible format character
    (category Cf: the zero-width space, non-joiner and joiner U+200B-U+200D, the word joiner U+2060, the byte-order
    mark U+FEFF, the soft hyphen, ...), refused in names, where one makes two names that print alike differ.  Names
    and texts of the data files are checked with it, so an echoed name can neither forge an output line nor send a
    terminal escape sequence."""
    import unicodedata

    for i, ch in enumerate(text):
        if ch in allow:
            continue
        cat = unicodedata.category(ch)
        if ch in _BIDI or cat in ("Cc", "Zl", "Zp") or (invisible and cat == "Cf"):
            return i
    return None


def escaped_line(text: str) -> str:
    """``text`` with every character :func:`unprintable` refuses in a name written as its escape (``\\x1b``,
    ``\\u200b``, a line break as ``\\n``): what a message may echo of a user's input -- a key name, a path -- so
    that a message line can neither send a terminal escape, nor forge another line, nor hide a character."""
    if unprintable(text, invisible=True) is None:
        return text
    return "".join(ch if unprintable(ch, invisible=True) is None else ascii(ch)[1:-1] for ch in text)


def top_level_kind(doc: object) -> str:
    """What a YAML file's top level holds, for ``FILE: (top level): expected a mapping of ..., got WHAT``:
    ``an empty file`` for ``None`` (an empty file, or one of comments only), else the value's type name
    (``list``, ``str``, ...)."""
    return "an empty file" if doc is None else type(doc).__name__


def printable_name(text: str) -> str:
    """A pydantic ``AfterValidator`` for a name (scenario, side, tank label, tournament, entrant, vehicle id and
    name): ``text`` unchanged, or ``ValueError`` ``expected a name without control characters; found '\\x1b' at
    character 5 (got 'red\\x1b[2J')`` (invisible format characters too: ``expected a name without control or
    invisible format characters; found '\\u200b' at character 3 (got 'ho\\u200bld')``): the one wording of such a
    name wherever it is read, the value shown cut short and escaped."""
    i = unprintable(text, invisible=True)
    if i is not None:
        import unicodedata

        kind = "invisible format" if unicodedata.category(text[i]) == "Cf" and text[i] not in _BIDI else "control"
        what = "control characters" if kind == "control" else "control or invisible format characters"
        raise ValueError(f"expected a name without {what}; found {text[i]!r} at character {i + 1} (got "
                         f"{short(text)})")
    return text


def printable_text(text: str) -> str:
    """A pydantic ``AfterValidator`` for a free text (a description): like :func:`printable_name`, but newlines
    and tabs are allowed."""
    i = unprintable(text, allow="\n\t")
    if i is not None:
        raise ValueError(f"expected a text without control characters other than newlines and tabs; found "
                         f"{text[i]!r} at character {i + 1}")
    return text


# --- command-line argument types (argparse ``type=``): a bad option is refused while the arguments are parsed,
# before anything is read, started or written; shared by ``sim/cli`` and the wings' own ``main`` functions ------------
def at_least(low: float, kind: type = int) -> Callable[[str], Any]:
    """An argparse ``type=`` for a number (``int`` or ``float``) of at least ``low``: a bad value is refused while
    the arguments are parsed, before anything is read, started or written (``tanksim batch: error: argument
    --workers: expected an integer >= 1, got '0'``)."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} >= {low:g}, got {text!r}") from None
        if not v >= low:  # also refuses nan
            raise argparse.ArgumentTypeError(f"expected {what} >= {low:g}, got {text!r}")
        return v

    parse.__name__ = f"{kind.__name__} >= {low:g}"
    return parse


def above(low: float) -> Callable[[str], float]:
    """An argparse ``type=`` for a finite number greater than ``low`` (seconds: ``--watchdog 0`` is refused)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number > {low:g}, got {text!r}") from None
        if not (v > low and v != float("inf")):
            raise argparse.ArgumentTypeError(f"expected a finite number > {low:g}, got {text!r}")
        return v

    parse.__name__ = f"number > {low:g}"
    return parse


def between(low: float, high: float, kind: type = int) -> Callable[[str], Any]:
    """An argparse ``type=`` for a number (``int`` or ``float``, finite) from ``low`` to ``high`` inclusive: the
    same bounds the file schema puts on the same quantity (a tournament file's ``workers`` 1..1024, a root seed of
    63 bits, ``decision_timeout_s`` up to a day), so an option can never ask for more than the file could
    (``argument --port: expected an integer >= 0 and <= 65535, got '999999'``).  Refuses ``nan`` and ``inf``."""
    what = "an integer" if kind is int else "a number"
    span = f">= {low} and <= {high}" if kind is int else f">= {low:g} and <= {high:g}"

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not low <= v <= high:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(f"expected {what} {span}, got {_cut(text)!r}")
        return v

    parse.__name__ = f"{kind.__name__} {span}"
    return parse


#: Largest seed any option takes: the file schemas' 63-bit seeds (``seed``, ``root_seed``).
MAX_SEED = 2**63 - 1
#: Most worker processes an option may start: a tournament file's ``executor.workers`` bound.
MAX_WORKERS = 1024

#: ``--seed`` of ``run``, ``oracle`` and ``generate``: an integer from 0 to 2**63 - 1.
seed = between(0, MAX_SEED)
#: ``--workers`` / ``--dask-local``: an integer from 1 to :data:`MAX_WORKERS`.
workers = between(1, MAX_WORKERS)


def _cut(text: str, limit: int = 40) -> str:
    """A user's argument cut for echoing (a 5,000-character value is not printed back whole)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def output_file(suffixes: tuple[str, ...] = ()) -> Callable[[str], str]:
    """An argparse ``type=`` for a file the command will write (``--plot``, ``replay --out``, ``generate -o``):
    checked while the arguments are parsed, so a battle is not played before the write fails.  Refused: a path that
    is an existing folder (``--plot results/`` must not silently become ``results.png``), one whose parent is not an
    existing folder, and, when ``suffixes`` is given, a name ending in none of them (the formats the writer
    supports; case-insensitive).  ``-`` (standard output) passes when ``suffixes`` is empty."""
    from pathlib import Path

    def parse(text: str) -> str:
        if text == "-" and not suffixes:
            return text
        if not text or "\0" in text:
            raise argparse.ArgumentTypeError(f"{clip(text)!r}: expected a file name")
        p = Path(text)
        if p.is_dir():
            raise argparse.ArgumentTypeError(f"{clip(text)}: is a folder; expected a file to write")
        parent = p.parent
        if not parent.is_dir():
            why = "is not a folder" if parent.exists() else "no such folder"
            raise argparse.ArgumentTypeError(f"{clip(text)}: {clip(str(parent))}: {why}; expected a file in an "
                                             f"existing folder")
        if suffixes and p.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(f"{clip(text)}: expected a file name ending in {', '.join(suffixes)}")
        return text

    parse.__name__ = "file to write"
    return parse


def output_folder(text: str) -> str:
    """An argparse ``type=`` for a folder the command will create or fill (``--out`` of ``run``, ``batch``,
    ``tournament``, ``match``, ``compare-rulesets``): refused while the arguments are parsed when the path is an
    existing file (or anything else that is not a folder) or has one as an ancestor, instead of an ``OSError``
    after the battles were played."""
    from pathlib import Path

    if not text or "\0" in text:
        raise argparse.ArgumentTypeError(f"{clip(text)!r}: expected a folder name")
    p = Path(text)
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            what = "is a file" if q.is_file() else "is not a folder"
            raise argparse.ArgumentTypeError(f"{clip(str(q))}: {what}; expected a folder (created if missing)")
        if q.is_dir():
            break
    return text


output_folder.__name__ = "folder"

#: The files that mark a folder as another command's results: a batch's (``manifest.json``), a tournament's
#: (``tournament.json``), a rule-set comparison's (``comparison.json``).
RESULTS_MARKERS = {"manifest.json": "a batch's", "tournament.json": "a tournament's",
                   "comparison.json": "a rule-set comparison's"}


def battle_folder(text: str) -> str:
    """An argparse ``type=`` for ``tanksim run --out``: :func:`output_folder`, and refused while the arguments are
    parsed when the folder holds another command's results (:data:`RESULTS_MARKERS`): a battle's files and its
    ``parts.jsonl`` written there would replace that folder's own part checksums.  A folder holding an earlier
    ``tanksim run --out`` battle is accepted (its files are replaced: the command says so)."""
    from pathlib import Path

    output_folder(text)
    p = Path(text)
    if p.is_dir():
        for name, whose in RESULTS_MARKERS.items():
            if (p / name).is_file():
                raise argparse.ArgumentTypeError(
                    f"{clip(text)}: holds {whose} results ({name}); a battle's files written there would replace "
                    f"its part checksums (parts.jsonl): choose another folder")
    return text


battle_folder.__name__ = "folder"

#: The picture formats of ``--plot`` (what matplotlib's default backends write).
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".eps", ".ps", ".svgz")
