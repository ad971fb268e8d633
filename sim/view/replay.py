"""Replays: a stored battle's event log turned into board frames and an animated GIF (or MP4).

``tanksim replay RESULTS_DIR|EVENTS.parquet [--battle ID] --out battle.gif [--per activation|turn] [--fps N]``

A replay needs the event log **alone**: its first event, ``BattleStarted``, holds the map cells and terrain, the
sides, the tanks (vehicle, hex, facing, turret) and the objectives, so a battle replays without its scenario file.
The log's events are rebuilt with :func:`sim.events.event_from_payload` and applied with :func:`sim.events.apply`
(the same single writer the live battle uses) to a light :class:`~sim.battle.BattleState` that has no rule set and no
dice.  The rule-set state a rule set sets up before the first event (e.g. Panzer Squadron's movement markers) comes
from ``BattleStarted``'s per-tank ``rules_state`` (logs written before it carried one start from empty state);
everything the battle changes afterwards (positions, facing, turrets, statuses, ``panicked`` / ``shocked``
markers) comes through events, so the last frame equals the final state stored at run time.

**A log is checked, never trusted.**  Before a replay reads a file, its checksum is checked where the folder records
one (:func:`sim.experiments.store.verify_files`).  Then every row is validated (:func:`events_of`): ``seq`` runs 0, 1,
2, ... without gaps; ``turn`` is the current turn; the kind is known, its fields are exactly the event's fields, each of
its type (ints, not bools or floats; facings 0..5; hexes ``[q, r]``; a known status).  Each event is checked
against the board before it is applied (:func:`check_event`): tank, side and winner ids in range; hexes on the map;
a ``Moved`` tank on the board stepping to an adjacent hex (every rule set moves one hex per ``Moved`` event: steps,
flight paths and evasions alike); turns counted up one at a time; nothing after ``BattleEnded``.  A stored log must
end with ``BattleEnded``, and its last frame must equal the stored final state (a batch's events part carries it on
each battle's last row, ``tanksim run --out`` writes ``final_state.json``).  Any problem is a :class:`ReplayError`
``FILE: event N (seq S): what was expected``; nothing in a log can raise anything else.

Frames: frame 0 is the set-up; then one frame per ``Activated`` event (``--per activation``, the default) or per
``TurnStarted`` event (``--per turn``), each showing the board after all events up to the next boundary, the moves
made in it as dotted trails, its shots as lines coloured by outcome (:func:`sim.view.render.shot_outcome`), wrecks,
markers, objective hexes and a turn counter in the title.  So ``len(frames) == 1 + number of boundary events`` and
the last frame's state is the battle's final state.

Inputs (see :func:`read_event_rows`):

* a Parquet file of one battle's events (``tanksim run --out DIR`` writes ``DIR/events.parquet``);
* a folder holding ``events.parquet`` (one battle);
* a results folder (a batch's output, ``tanksim batch --events``: ``DIR/events/part-N.parquet`` with a
  ``run_key`` column) holding event parts below it: any ``*.parquet`` file whose schema has the event columns
  ``seq, turn, kind, data`` counts (those under ``events/`` first; ``quarantine/`` is never read), and the battle is
  picked by the first id column found among :data:`ID_COLUMNS` (``battle_id``, ``run_key``, ``battle``), or by a
  Hive-style folder ``battle_id=ID``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sim.battle import BattleState, SideInfo, TankState
from sim.events import (
    EVENT_TYPES,
    Activated,
    BattleEnded,
    BattleStarted,
    Event,
    Moved,
    ShotResolved,
    Status,
    TerrainChanged,
    TurnStarted,
    apply,
    event_from_payload,
    to_json,
)
from sim.experiments import store
from sim.hexgrid import Hex, HexMap, distance
from sim.messages import output_file
from sim.view import render

#: Columns an event table must have.
EVENT_COLUMNS = ("seq", "turn", "kind", "data")
#: Columns that name the battle in a multi-battle event table, in the order they are looked for.
ID_COLUMNS = ("battle_id", "run_key", "battle")
PER_CHOICES = {"activation": "Activated", "turn": "TurnStarted"}
#: Largest ``data`` text of one event row (characters) and largest map (cells) a replay accepts.
MAX_DATA_CHARS = 20_000_000
MAX_CELLS = 250_000
_STATUSES = frozenset({Status.ACTIVE, Status.DESTROYED, Status.INCAPACITATED, *Status.OFF_BOARD})


class ReplayError(ValueError):
    """A replay input problem; the message names the file or folder and what was expected."""


class LogEvent(NamedTuple):
    """One validated log row: its ``turn``, the rebuilt ``event`` and ``where`` it came from
    (``FILE: event N (seq S)``, the prefix of every error about it)."""

    turn: int
    event: Event
    where: str


def _show(v: Any, n: int = 40) -> str:
    """A bounded repr of a value from a file (never the whole of an unbounded value)."""
    try:
        r = repr(v)
    except Exception:  # noqa: BLE001 - a value we cannot even repr
        r = f"<{type(v).__name__}>"
    return r if len(r) <= n else r[: n - 3] + "..."


def _read_pq(path: Path, **kwargs: Any) -> pa.Table:
    try:
        return store.read_table(path, **kwargs)
    except store.CorruptResults as exc:
        raise ReplayError(exc.problems[0]) from None


# --- reading -------------------------------------------------------------------------------------------------------

def _schema(f: Path) -> pa.Schema | None:
    try:
        return pq.read_schema(f)
    except (pa.ArrowException, OSError, ValueError):
        return None


def _event_files(folder: Path) -> list[Path]:
    """Parquet files below ``folder`` (its ``events/`` subfolder first, where a batch keeps them) whose schema has
    the event columns.  Under ``events/`` an unreadable Parquet file is an error (a damaged part, never skipped);
    elsewhere files that are not Parquet at all are skipped.  ``quarantine/`` is never read."""
    files = []
    for base in ((folder / "events"), folder):
        if not base.is_dir():
            continue
        for f in sorted(base.rglob("*.parquet")):
            rel = f.relative_to(folder).parts
            if rel and rel[0] == store.QUARANTINE:
                continue
            schema = _schema(f)
            if schema is None and base.name == "events" and base != folder:
                raise ReplayError(f"{f}: not a readable Parquet file (a damaged events part)")
            if schema is not None and set(EVENT_COLUMNS) <= set(schema.names):
                files.append(f)
        if files:
            break
    return files


def _hive_id(path: Path, root: Path) -> tuple[str, str] | None:
    for part in path.relative_to(root).parts[:-1]:
        key, sep, value = part.partition("=")
        if sep and key in ID_COLUMNS:
            return key, value
    return None


def _id_column(schema: pa.Schema) -> str | None:
    return next((c for c in ID_COLUMNS if c in schema.names), None)


def _check_columns(path: Path, schema: pa.Schema) -> None:
    for c in ("seq", "turn"):
        if not pa.types.is_integer(schema.field(c).type):
            raise ReplayError(f"{path}: column {c}: expected integers, found {schema.field(c).type}")
    for c in ("kind", "data"):
        t = schema.field(c).type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise ReplayError(f"{path}: column {c}: expected text, found {t}")


def _ids_in(path: Path, root: Path) -> tuple[str | None, list[str]]:
    """``(id column, ids)`` of one event table, reading the id column only (or the Hive folder name)."""
    hive = _hive_id(path, root) if root != path else None
    schema = _schema(path)
    col = _id_column(schema) if schema is not None else None
    if col is not None:
        return col, [str(x) for x in _read_pq(path, columns=[col]).column(col).to_pylist()]
    if hive is not None:
        return hive[0], [hive[1]]
    return None, []


def _read_one(path: Path, root: Path, battle: str | None) -> pd.DataFrame:
    """One event table; with ``battle`` given, only that battle's rows are read (a pushed-down filter on the id
    column, so large batch parts are not loaded whole).  Adds ``_file`` (the path, for messages)."""
    hive = _hive_id(path, root) if root != path else None
    schema = _schema(path)
    if schema is None:
        raise ReplayError(f"{path}: not a readable Parquet file")
    _check_columns(path, schema)
    col = _id_column(schema)
    filters = None
    if battle is not None:
        if col is not None:
            try:
                value: Any = int(battle) if pa.types.is_integer(schema.field(col).type) else str(battle)
            except ValueError:
                return pd.DataFrame()
            filters = [(col, "=", value)]
        elif hive is not None and hive[1] != str(battle):
            return pd.DataFrame()
    df = _read_pq(path, filters=filters).to_pandas()
    if hive and hive[0] not in df.columns:
        df[hive[0]] = hive[1]
    df["_file"] = str(path)
    return df


def _sources(source: str | Path) -> tuple[Path, list[Path]]:
    src = Path(source)
    if not src.exists():
        raise ReplayError(f"{src}: no such file or folder (expected an events Parquet file or a results folder)")
    if src.is_file():
        schema = _schema(src)
        if schema is None or not set(EVENT_COLUMNS) <= set(schema.names):
            raise ReplayError(f"{src}: not an event table (expected a Parquet file with columns "
                              f"{', '.join(EVENT_COLUMNS)})")
        return src, [src]
    if (src / "events.parquet").is_file():
        return src, [src / "events.parquet"]
    files = _event_files(src)
    if not files:
        raise ReplayError(f"{src}: no event table found below it (a Parquet file with columns "
                          f"{', '.join(EVENT_COLUMNS)}; batches store events only when asked to, e.g. --events)")
    return src, files


def _verify(root: Path, files: Sequence[Path]) -> None:
    """Check the files against the folder's part checksums, where it records them (for a single file, the folder
    above it that does: ``DIR/events.parquet`` or a batch's ``DIR/events/part-N.parquet``).  A batch's or a
    tournament's results folder is checked whole, as ``tanksim report`` and ``run --from`` check it
    (:func:`sim.experiments.store.verify_parts`: every part listed, present, of its recorded size and SHA-256):
    a folder with a damaged part is refused even when the battle's own event part is intact, since what else
    was changed in it cannot be told."""
    folder = root if root.is_dir() else root.parent
    if not root.is_dir():
        folder = next((d for d in (root.parent, root.parent.parent)
                       if (d / store.LEDGER).is_file() or any((d / m).is_file() for m in store.MANIFEST_NAMES)),
                      root.parent)
    extra = [folder / "final_state.json"] if (folder / "final_state.json").is_file() and \
        (folder / "events.parquet") in files else []
    try:
        v = store.verify_files(folder, [*files, *extra])
    except store.CorruptResults as exc:
        raise ReplayError(exc.problems[0]) from None
    problems = list(v.problems)
    manifest = next((m for m in store.MANIFEST_NAMES if (folder / m).is_file()), None)
    if manifest is not None and not problems:
        try:
            problems = list(store.verify_parts(folder, manifest).problems)
        except store.CorruptResults as exc:
            raise ReplayError(exc.problems[0]) from None
    if problems:
        raise ReplayError("\n".join(str(p) for p in problems[:20])
                          + (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))


def battle_ids(source: str | Path) -> list[str]:
    """The battle ids stored in ``source`` (sorted text; empty for a single battle without an id column).
    Raises :class:`ReplayError` as :func:`read_event_rows`."""
    root, files = _sources(source)
    ids: set[str] = set()
    for f in files:
        ids.update(_ids_in(f, root)[1])
    return sorted(ids)


def read_event_rows(source: str | Path, battle: str | None = None) -> tuple[pd.DataFrame, str | None]:
    """The event rows of one stored battle, sorted by ``seq``, and its id (``None`` for a single-battle file).

    ``source``: an events Parquet file, a folder with ``events.parquet``, or a results folder with event parts (see
    the module docstring).  ``battle``: the battle id (compared as text) when the rows hold several battles; a
    single battle stored without an id column (``tanksim run --out``) has none to pick, and giving one is refused
    (a typo or the wrong folder, not something to ignore).  The files read are checked against the folder's part
    checksums first.  Returns a DataFrame with at least ``seq, turn, kind, data`` (``data`` a JSON string per row)
    and ``_file``.  Raises :class:`ReplayError` for a missing path, no event table, a file that fails its checksum
    or is not readable, columns of the wrong type, an unknown id, an id for a battle stored without one, several
    battles and no id, or a log that does not
    start with ``BattleStarted``.
    """
    root, files = _sources(source)
    _verify(root, files)
    ids = battle_ids(source)
    if battle is None and len(ids) > 1:
        raise ReplayError(f"{root}: holds {len(ids)} battles; pick one with --battle ID (e.g. {', '.join(ids[:5])})")
    if battle is not None and ids and str(battle) not in ids:
        raise ReplayError(f"{root}: no battle {_show(str(battle))} ({len(ids)} battles, e.g. {', '.join(ids[:5])})")
    if not ids and len(files) > 1:
        raise ReplayError(f"{root}: several event tables but no battle id column ({', '.join(ID_COLUMNS)})")
    if battle is not None and not ids:
        raise ReplayError(f"{root}: holds one battle stored without an id (tanksim run --out); there is no battle "
                          f"{_show(str(battle))} to pick: leave out --battle")
    chosen = (str(battle) if battle is not None else ids[0]) if ids else None
    df = pd.concat([_read_one(f, root, chosen) for f in files], ignore_index=True)
    if chosen is not None and not df.empty:
        col = next(c for c in ID_COLUMNS if c in df.columns)
        df = df[df[col].astype(str) == chosen]
    for c in ("seq", "turn"):
        if c in df.columns and df[c].isna().any():
            f = df.loc[df[c].isna(), "_file"].iloc[0]
            raise ReplayError(f"{f}: column {c}: expected an integer in every row, found an empty value")
    df = df.sort_values("seq", kind="stable").reset_index(drop=True)
    if df.empty or df.loc[0, "kind"] != "BattleStarted":
        where = root if df.empty else str(df.loc[0, "_file"])
        raise ReplayError(f"{where}: the event log{'' if chosen is None else f' of battle {chosen}'} does not start "
                          f"with a BattleStarted event (first kind: "
                          f"{'none' if df.empty else _show(df.loc[0, 'kind'])}); it cannot be replayed alone")
    return df, chosen


def stored_final_state(source: str | Path, rows: pd.DataFrame) -> list[dict[str, Any]] | None:
    """The battle's final tank states stored with its log: the ``final_state`` column of its last row (a batch's
    events part) or ``final_state.json`` beside ``events.parquet`` (``tanksim run --out``); ``None`` if neither is
    stored (logs written before they were).  Raises :class:`ReplayError` for an unreadable one."""
    if "final_state" in rows.columns and len(rows):
        text, where = rows["final_state"].iloc[-1], rows["_file"].iloc[-1] if "_file" in rows.columns else "log"
        if isinstance(text, str):
            return _final_from_text(text, f"{where}: final_state of the last row")
    src = Path(source)
    folder = src if src.is_dir() else src.parent
    f = folder / "final_state.json"
    if (folder / "events.parquet").is_file() and f.is_file() and (src.is_dir() or src.name == "events.parquet"):
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise ReplayError(f"{f}: unreadable (expected JSON text)") from None
        return _final_from_text(text, str(f))
    return None


def _final_from_text(text: str, where: str) -> list[dict[str, Any]]:
    try:
        state = json.loads(text) if len(text) <= MAX_DATA_CHARS else None
    except (ValueError, RecursionError):
        state = None
    if not (isinstance(state, list) and all(isinstance(t, dict) for t in state)):
        raise ReplayError(f"{where}: expected a JSON list of tank states")
    return state


# --- validation ----------------------------------------------------------------------------------------------------

def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_like(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _hexv(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(_int(x) for x in v)


def _facing(v: Any) -> bool:
    return _int(v) and 0 <= v <= 5


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _json_plain(v: Any, depth: int = 0) -> bool:
    if depth > 50:
        return False
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_json_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _json_plain(x, depth + 1) for k, x in v.items())
    return False


_TEXT = (lambda v: isinstance(v, str), "text")
_TANK = (lambda v: _int(v) and v >= 0, "a tank id (an integer >= 0)")
_OPT_TANK = (_opt(lambda v: _int(v) and v >= 0), "null or a tank id")
_SIDE = (lambda v: _int(v) and v >= 0, "a side index (an integer >= 0)")
_FACING = (_facing, "a facing (an integer 0..5)")
_HEX = (_hexv, "a hex [q, r] of two integers")
_MAP = (lambda v: isinstance(v, dict) and _json_plain(v), "a mapping")
_BOOL = (lambda v: isinstance(v, bool), "true or false")
_ANY = (_json_plain, "a JSON value")
_LIST = (lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, dict) for x in v), "a list of mappings")

#: The field types of every event kind (``(check, what is expected)``); a payload must have exactly these fields.
FIELD_TYPES: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    "BattleStarted": {"ruleset": _TEXT, "map": (lambda v: isinstance(v, dict), "a mapping"), "sides": _LIST,
                      "tanks": _LIST, "objectives": _LIST},
    "TurnStarted": {"turn": (lambda v: _int(v) and v >= 1, "a turn number (an integer >= 1)")},
    "Moved": {"tank": _TANK, "hex": _HEX, "facing": _FACING,
              "cost": (lambda v: _int(v) and v >= 0, "a cost (an integer >= 0)")},
    "Pivoted": {"tank": _TANK, "facing": _FACING, "turret_facing": (_opt(_facing), "null or a facing 0..5"),
                "cost": (lambda v: _int(v) and v >= 0, "a cost (an integer >= 0)")},
    "TurretTurned": {"tank": _TANK, "turret_facing": _FACING},
    "StatusChanged": {"tank": _TANK, "status": (lambda v: v in _STATUSES,
                                                f"a status ({', '.join(sorted(_STATUSES))})"),
                      "reason": _TEXT, "by": _OPT_TANK},
    "TankStateSet": {"tank": _TANK, "key": _TEXT, "value": _ANY},
    "BattleStateSet": {"key": _TEXT, "value": _ANY},
    "TerrainChanged": {"hex": _HEX, "terrain": _TEXT},
    "Activated": {"side": _SIDE, "tank": _TANK, "mode": _TEXT},
    "ShotResolved": {"shooter": _TANK, "target": _OPT_TANK, "result": _TEXT, "hit": _BOOL, "kill": _BOOL,
                     "key": _MAP, "details": _MAP, "reaction": _BOOL},
    "RuleEvent": {"name": _TEXT, "tank": _OPT_TANK, "data": _MAP},
    "ActionRejected": {"side": _SIDE, "tank": _OPT_TANK, "decision": _TEXT, "action": _TEXT},
    "PolicyFault": {"side": _SIDE, "tank": _OPT_TANK, "decision": _TEXT, "fault": _TEXT, "message": _TEXT},
    "BattleEnded": {"winner": (_opt(lambda v: _int(v) and v >= 0), "null or a side index"),
                    "reason": _TEXT, "points": (lambda v: isinstance(v, (list, tuple)) and all(_int(x) for x in v),
                                                "a list of integers")},
}
assert set(FIELD_TYPES) == set(EVENT_TYPES)
assert all(set(FIELD_TYPES[k]) == {f.name for f in dataclasses.fields(c)} for k, c in EVENT_TYPES.items())


def _where(f: Any, i: int, seq: Any) -> str:
    return f"{f}: event {i} (seq {seq})"


def events_of(rows: pd.DataFrame, source: str | Path | None = None) -> list[LogEvent]:
    """The log's events rebuilt from its rows (``seq``, ``turn``, ``kind`` and JSON ``data`` columns), each
    validated: ``seq`` is the row's index (0, 1, 2, ... without gaps or repeats), ``turn`` an integer >= 0, the kind
    known, the payload a JSON object with exactly the event's fields, each of its type (:data:`FIELD_TYPES`).

    Raises :class:`ReplayError` ``FILE: event N (seq S): what was expected`` (``FILE`` from the rows' ``_file``
    column, else ``source``)."""
    out: list[LogEvent] = []
    files = rows["_file"] if "_file" in rows.columns else [source or "log"] * len(rows)
    for i, (seq, turn, kind, data, f) in enumerate(zip(rows["seq"], rows["turn"], rows["kind"], rows["data"],
                                                        files)):
        where = _where(f, i, seq)
        if not (_int_like(seq) and _int_like(turn)):
            raise ReplayError(f"{where}: seq and turn: expected integers, found {_show(seq)} and {_show(turn)}")
        seq_i, turn_i = int(seq), int(turn)
        if seq_i != i:
            what = "a gap: events are missing" if seq_i > i else "a repeated or out-of-order seq"
            raise ReplayError(f"{where}: expected seq {i} ({what}; a log is numbered 0, 1, 2, ...)")
        if turn_i < 0:
            raise ReplayError(f"{where}: turn: expected an integer >= 0, found {turn_i}")
        if not isinstance(kind, str) or kind not in EVENT_TYPES:
            raise ReplayError(f"{where}: kind: expected one of {', '.join(sorted(EVENT_TYPES))}, found {_show(kind)}")
        if not isinstance(data, str):
            raise ReplayError(f"{where}: data: expected the event's JSON text, found {type(data).__name__}")
        if len(data) > MAX_DATA_CHARS:
            raise ReplayError(f"{where}: data: {len(data)} characters, more than {MAX_DATA_CHARS}")
        try:
            payload = json.loads(data)
        except RecursionError:
            raise ReplayError(f"{where}: data: nested too deeply") from None
        except ValueError as exc:
            raise ReplayError(f"{where}: data: not valid JSON ({str(exc)[:80]})") from None
        if not isinstance(payload, dict):
            raise ReplayError(f"{where}: data: expected a JSON object of {kind} fields, found "
                              f"{type(payload).__name__}")
        spec = FIELD_TYPES[kind]
        unknown = sorted(set(payload) - set(spec))
        missing = sorted(set(spec) - set(payload))
        if unknown or missing:
            raise ReplayError(f"{where}: {kind}: expected the fields {', '.join(sorted(spec))}"
                              + (f"; unknown {', '.join(_show(k, 30) for k in unknown[:5])}" if unknown else "")
                              + (f"; missing {', '.join(missing)}" if missing else ""))
        for name, (check, expected) in spec.items():
            try:
                ok = check(payload[name])
            except RecursionError:
                ok = False
            if not ok:
                raise ReplayError(f"{where}: {kind}.{name}: expected {expected}, found {_show(payload[name])}")
        try:
            out.append(LogEvent(turn_i, event_from_payload(kind, payload), where))
        except (KeyError, TypeError, ValueError) as exc:  # pragma: no cover - the checks above cover the fields
            raise ReplayError(f"{where}: cannot rebuild the event ({type(exc).__name__})") from None
    return out


def _setup_error(where: str, what: str) -> ReplayError:
    return ReplayError(f"{where}: BattleStarted.{what}")


def check_setup(e: BattleStarted, where: str) -> None:
    """Validate a ``BattleStarted`` event's set-up before a board is built from it: map cells (at most
    :data:`MAX_CELLS`, unique ``[q, r]`` pairs), terrain keyed ``"q,r"`` on the map, two sides with names, tanks
    with ids 0..n-1 in order, each on a side, on the map (or off it: ``null``), facings 0..5, objectives on the map.
    Raises :class:`ReplayError` ``where: BattleStarted.field: what was expected``."""
    m = e.map
    cells = m.get("cells")
    if not (isinstance(cells, (list, tuple)) and cells and all(_hexv(c) for c in cells)):
        raise _setup_error(where, "map.cells: expected a non-empty list of hexes [q, r]")
    if len(cells) > MAX_CELLS:
        raise _setup_error(where, f"map.cells: {len(cells)} cells, more than {MAX_CELLS}")
    cellset = {tuple(c) for c in cells}
    if len(cellset) != len(cells):
        raise _setup_error(where, "map.cells: a hex is listed twice")
    terrain = m.get("terrain", {})
    if not isinstance(terrain, dict):
        raise _setup_error(where, "map.terrain: expected a mapping {\"q,r\": terrain}")
    for k, name in terrain.items():
        q, _, r = str(k).partition(",")
        try:
            h = (int(q), int(r))
        except ValueError:
            h = None
        if h is None or h not in cellset or not isinstance(name, str):
            raise _setup_error(where, f"map.terrain: expected \"q,r\" keys of map cells with terrain names, found "
                                      f"{_show(k)}")
    size = m.get("hex_size_m", 10)
    if size is not None and not (_int(size) and size > 0):
        raise _setup_error(where, f"map.hex_size_m: expected a positive integer, found {_show(size)}")
    if len(e.sides) != 2 or not all(isinstance(s.get("name"), str) and isinstance(s.get("role", "none"), str)
                                    and (s.get("exit_edge") is None or isinstance(s.get("exit_edge"), str))
                                    for s in e.sides):
        raise _setup_error(where, "sides: expected two sides {name, role, exit_edge}")
    if not e.tanks:
        raise _setup_error(where, "tanks: expected at least one tank")
    known = {"tank_id", "label", "side", "vehicle", "hex", "facing", "turret_facing", "turret", "rules_state"}
    for i, t in enumerate(e.tanks):
        bad = sorted(set(t) - known)
        checks = [(t.get("tank_id") == i and _int(t.get("tank_id")), f"tank_id: expected {i} (ids 0..n-1 in order)"),
                  (isinstance(t.get("label"), str), "label: expected text"),
                  (_int(t.get("side")) and 0 <= t["side"] < 2, "side: expected 0 or 1"),
                  (isinstance(t.get("vehicle", ""), str), "vehicle: expected text"),
                  (t.get("hex") is None or (_hexv(t.get("hex")) and tuple(t["hex"]) in cellset),
                   "hex: expected null or a hex [q, r] on the map"),
                  (_facing(t.get("facing")), "facing: expected an integer 0..5"),
                  (t.get("turret_facing") is None or _facing(t.get("turret_facing")),
                   "turret_facing: expected null or an integer 0..5"),
                  (isinstance(t.get("turret", False), bool), "turret: expected true or false"),
                  (t.get("rules_state") is None or (isinstance(t.get("rules_state"), dict)
                                                    and _json_plain(t.get("rules_state"))),
                   "rules_state: expected a mapping"),
                  (not bad, f"unknown field {_show(bad[0], 30) if bad else ''}")]
        for ok, what in checks:
            if not ok:
                raise _setup_error(where, f"tanks[{i}].{what}")
    for i, o in enumerate(e.objectives):
        if not (_hexv(o.get("hex")) and tuple(o["hex"]) in cellset):
            raise _setup_error(where, f"objectives[{i}].hex: expected a hex [q, r] on the map")


def check_event(b: BattleState, e: Event, where: str) -> None:
    """Check one event against the board it is about to change (ids in range, hexes on the map, a ``Moved`` tank
    on the board stepping to an adjacent hex, turns counted one by one, nothing after ``BattleEnded``).  Raises
    :class:`ReplayError` ``where: what was expected``."""
    n, k = len(b.tanks), e.kind
    if b.ended:
        raise ReplayError(f"{where}: {k} after BattleEnded (the log must end there)")
    if k == "BattleStarted":
        raise ReplayError(f"{where}: a second BattleStarted (only the first event sets up the battle)")
    for name in ("tank", "shooter", "target", "by"):
        v = getattr(e, name, None)
        if v is not None and not 0 <= v < n:
            raise ReplayError(f"{where}: {k}.{name}: expected a tank id 0..{n - 1}, found {_show(v)}")
    for name in ("side", "winner"):
        v = getattr(e, name, None)
        if v is not None and not 0 <= v < len(b.sides):
            raise ReplayError(f"{where}: {k}.{name}: expected a side index 0..{len(b.sides) - 1}, found {_show(v)}")
    if isinstance(e, TurnStarted) and e.turn != b.turn + 1:
        raise ReplayError(f"{where}: TurnStarted.turn: expected {b.turn + 1} (turns count up by one), found {e.turn}")
    if isinstance(e, (Moved, TerrainChanged)) and Hex(*e.hex) not in b.map:
        raise ReplayError(f"{where}: {k}.hex: expected a hex on the map, found {list(e.hex)}")
    if isinstance(e, Moved):
        t = b.tanks[e.tank]
        if t.hex is None:
            raise ReplayError(f"{where}: Moved: tank {e.tank} ({t.label}) is not on the board (status {t.status})")
        if distance(t.hex, Hex(*e.hex)) != 1:
            raise ReplayError(f"{where}: Moved.hex: tank {e.tank} ({t.label}) stands on {[t.hex.q, t.hex.r]}; "
                              f"expected an adjacent hex (one step per Moved event), found {list(e.hex)}")


def _check_turn(item: LogEvent, b: BattleState) -> None:
    want = item.event.turn if isinstance(item.event, TurnStarted) else b.turn
    if item.turn != want:
        raise ReplayError(f"{item.where}: turn: expected {want} (the current turn), found {item.turn}")


# --- the light board -----------------------------------------------------------------------------------------------

def board_from_setup(e: BattleStarted, where: str = "BattleStarted") -> BattleState:
    """A :class:`BattleState` in its set-up state from a ``BattleStarted`` event, with no rule set, options or dice:
    enough for :func:`sim.events.apply` and :func:`sim.view.render.picture_of`.  The set-up is checked first
    (:func:`check_setup`); raises :class:`ReplayError` naming ``where`` and the field."""
    check_setup(e, where)
    m = dict(e.map)
    terrain = {}
    for key, name in dict(m.get("terrain", {})).items():
        q, _, r = str(key).partition(",")
        terrain[(int(q), int(r))] = name
    hexmap = HexMap([tuple(c) for c in m["cells"]], terrain)
    tanks = []
    for t in e.tanks:
        tanks.append(TankState(
            tank_id=int(t["tank_id"]), label=t["label"], side=int(t["side"]), vehicle_id=t.get("vehicle", ""),
            vehicle=None, hex=None if t.get("hex") is None else Hex(*t["hex"]), facing=int(t["facing"]),
            turret_facing=t.get("turret_facing"), rules_state=dict(t.get("rules_state") or {})))
    sides = [SideInfo(s["name"], s.get("role", "none"), s.get("exit_edge")) for s in e.sides]
    b = BattleState(hexmap, tanks, sides, None, None, objectives=[dict(o) for o in e.objectives],
               hex_size_m=int(m.get("hex_size_m") or 10))
    b.rules_state["ruleset"] = e.ruleset
    return b


def snapshot(b: BattleState) -> list[dict[str, Any]]:
    """Tank positions and statuses, one mapping per tank in id order, in the format of
    :func:`sim.runner.final_state` (``hex`` ``[q, r]`` or ``None``, ``rules_state`` JSON-plain)."""
    return [{"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
             "hex": None if t.hex is None else [t.hex.q, t.hex.r], "facing": t.facing,
             "turret_facing": t.turret_facing, "status": t.status,
             "rules_state": json.loads(to_json(t.rules_state))} for t in b.tanks]


@dataclass
class Frame:
    """One replay frame: ``index`` (0 = set-up), the ``turn`` it belongs to, the number of activations so far,
    a one-line ``caption``, the :class:`~sim.view.render.BoardPicture` and the tank ``state`` (:func:`snapshot`)."""

    index: int
    turn: int
    activations: int
    caption: str
    picture: render.BoardPicture
    state: list[dict[str, Any]]


@dataclass
class _Segment:
    """What the frame being built has gathered (:func:`frames`): its shot lines ``(from hex, to hex, outcome)``,
    move trails per tank id, the caption's activation text (``what``; ``prev_what`` is the closed frame's) and
    whether an ``Activated`` event fell in it."""

    shots: list[tuple[tuple[int, int], tuple[int, int], str]] = dataclasses.field(default_factory=list)
    trails: dict[int, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    what: str = ""
    has_act: bool = False
    prev_what: str = ""


@dataclass
class _Progress:
    """The replay's running count (:func:`frames`): the current turn, activations so far and the end text."""

    turn: int = 0
    acts: int = 0
    end: str = ""


def frames(events: Sequence[LogEvent | tuple[int, Event]], per: str = "activation") -> list[Frame]:
    """Replay ``events`` (as from :func:`events_of`, or plain ``(turn, event)`` pairs; the first must be
    ``BattleStarted``) into frames: the set-up frame plus one frame per ``Activated`` event (``per="activation"``)
    or per ``TurnStarted`` event (``per="turn"``), so ``len(result) == 1 + count of those events``.  Each event is
    checked against the board before it is applied (:func:`check_event`).

    Per activation, a turn's opening events (``TurnStarted``, initiative) open the frame of its first activation,
    and events after a turn's last activation (end-of-turn bookkeeping, ``BattleEnded``) close the frame of that
    activation; a turn without any activation folds into its neighbours.  The last frame shows the final state.
    Raises :class:`ReplayError` for an unknown ``per``, a log that does not start with ``BattleStarted`` or an
    event that the board cannot take."""
    if per not in PER_CHOICES:
        raise ReplayError(f"--per {per!r}: expected one of {', '.join(PER_CHOICES)}")
    items = [x if isinstance(x, LogEvent) else LogEvent(x[0], x[1], f"event {i}") for i, x in enumerate(events)]
    first = items[0].event if items else None
    if not isinstance(first, BattleStarted):
        raise ReplayError(f"{items[0].where if items else 'log'}: the event log does not start with a BattleStarted "
                          f"event")
    if items[0].turn != 0:
        raise ReplayError(f"{items[0].where}: turn: expected 0 for BattleStarted, found {items[0].turn}")
    b = board_from_setup(first, items[0].where)
    out: list[Frame] = []
    seg = _Segment(what="set-up")
    state = _Progress()

    def close(replace_last: bool = False) -> None:
        if replace_last:
            seg.what = seg.prev_what
        moves = [(b.tanks[tid].side, path) for tid, path in sorted(seg.trails.items())]
        caption = (f"turn {state.turn}" + (f" · activation {state.acts}" if state.acts else "")
                   + (f" · {seg.what}" if seg.what else "") + (f" · {state.end}" if state.end else ""))
        title = caption.replace(f" · {state.end}", f"\n{state.end}") if state.end else caption
        pic = render.picture_of(b, seg.shots, title)
        pic.moves = moves
        if replace_last:
            prev = out.pop()
            pic.shots = prev.picture.shots + pic.shots
            pic.moves = prev.picture.moves + pic.moves
        out.append(Frame(len(out), state.turn, state.acts, caption, pic, snapshot(b)))
        seg.shots, seg.trails, seg.has_act, seg.prev_what, seg.what = [], {}, False, seg.what, ""

    for item in items[1:]:
        turn, e = item.turn, item.event
        check_event(b, e, item.where)
        _check_turn(item, b)
        if per == "turn":
            new_frame = isinstance(e, TurnStarted)
        else:
            new_frame = isinstance(e, (TurnStarted, Activated)) and (not out or seg.has_act)
        if new_frame:
            close()
        if isinstance(e, TurnStarted):
            state.turn = e.turn
        elif isinstance(e, Activated):
            state.acts += 1
            seg.has_act = True
            if per == "activation":
                seg.what = f"{b.tanks[e.tank].label} {e.mode}".strip()
        elif isinstance(e, Moved):
            at = b.tanks[e.tank].hex
            trail = seg.trails.setdefault(e.tank, [] if at is None else [(at[0], at[1])])
            trail.append((e.hex[0], e.hex[1]))
        elif isinstance(e, ShotResolved) and e.target is not None:
            a, t = b.tanks[e.shooter].hex, b.tanks[e.target].hex
            if a is not None and t is not None:
                seg.shots.append(((a[0], a[1]), (t[0], t[1]), render.event_outcome(e)))
        elif isinstance(e, BattleEnded):
            winner = "draw" if e.winner is None else f"{b.sides[e.winner].name} win"
            state.end = f"{winner} ({e.reason})" if e.reason else winner
        try:
            apply(b, e)
        except (ValueError, KeyError, IndexError, TypeError) as exc:  # pragma: no cover - check_event covers these
            raise ReplayError(f"{item.where}: {e.kind} cannot be applied ({type(exc).__name__})") from None
        state.turn = max(state.turn, turn)
    close(replace_last=per == "activation" and bool(out) and not seg.has_act)
    return out


def check_final(frs: Sequence[Frame], items: Sequence[LogEvent], final: list[dict[str, Any]] | None,
                where: str) -> None:
    """A stored log must end with ``BattleEnded``, and its last frame must equal the stored final state (when one
    is stored).  Raises :class:`ReplayError` naming the first difference."""
    last = items[-1]
    if last.event.kind != "BattleEnded":
        raise ReplayError(f"{last.where}: the log ends with {last.event.kind}, not BattleEnded (truncated?)")
    if final is None:
        return
    got = frs[-1].state
    if len(final) != len(got):
        raise ReplayError(f"{where}: the stored final state has {len(final)} tanks, the replay {len(got)}")
    for mine, theirs in zip(got, final):
        for k in sorted(set(mine) | set(theirs)):
            if mine.get(k) != theirs.get(k):
                raise ReplayError(f"{where}: the replayed final state differs from the stored one: tank "
                                  f"{mine.get('tank_id')} ({_show(mine.get('label'))}) {k}: replay "
                                  f"{_show(mine.get(k))}, stored {_show(theirs.get(k))}")


@dataclass
class Replay:
    """A checked replay: its ``frames``, the battle ``id`` (``None`` for a single-battle file) and whether its last
    frame was compared with a stored final state (``final_checked``)."""

    frames: list[Frame]
    id: str | None
    final_checked: bool


def load_replay(source: str | Path, battle: str | None = None, per: str = "activation") -> Replay:
    """Read, verify and replay a stored battle: :func:`read_event_rows` (checksums), :func:`events_of` (every
    row), :func:`frames` (every event against the board), :func:`check_final` (ends with ``BattleEnded``, last
    frame equals the stored final state).  Raises :class:`ReplayError` only."""
    rows, bid = read_event_rows(source, battle)
    items = events_of(rows, source)
    final = stored_final_state(source, rows)
    frs = frames(items, per)
    check_final(frs, items, final, str(rows["_file"].iloc[-1]) if "_file" in rows.columns else str(source))
    return Replay(frs, bid, final is not None)


def replay(source: str | Path, battle: str | None = None, per: str = "activation") -> list[Frame]:
    """Frames of a stored battle, checked as :func:`load_replay` does."""
    return load_replay(source, battle, per).frames


# --- writing -------------------------------------------------------------------------------------------------------

def write_animation(frs: Sequence[Frame], out: str | Path, *, fps: float = 2.0, size: float = 7.0,
                    dpi: int = 80) -> Path:
    """Write the frames as an animation: ``.gif`` with Pillow, ``.mp4`` with ffmpeg (when on ``PATH``).

    ``size`` is the board's height in inches (the figure is wider by the legend), ``dpi`` its resolution; one
    image per frame, all with one view (:func:`sim.view.render.common_view`: a big map is cropped to the action
    of the whole battle).  Raises
    :class:`ReplayError` for another suffix or an ``.mp4`` without ffmpeg."""
    from matplotlib import animation
    from matplotlib.figure import Figure

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix == ".gif":
        # matplotlib annotates fps as int, but its writers use it as a rate (Pillow: 1000 / fps ms per frame;
        # ffmpeg: -framerate str(fps)), so --fps 0.5 works.
        writer: animation.AbstractMovieWriter = animation.PillowWriter(fps=fps)  # type: ignore[arg-type]
    elif suffix == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise ReplayError(f"{out}: writing .mp4 needs ffmpeg on PATH; write a .gif instead")
        writer = animation.FFMpegWriter(fps=fps)  # type: ignore[arg-type]  # a float rate works (see above)
    else:
        raise ReplayError(f"{out}: unsupported output {suffix or '(no suffix)'!r}; use .gif or .mp4")
    if not frs:
        raise ReplayError("no frames to write")
    out.parent.mkdir(parents=True, exist_ok=True)
    import matplotlib.pyplot as plt

    view = render.common_view(fr.picture for fr in frs)
    with plt.rc_context(render.STYLE):
        fig = Figure(figsize=(render.figure_width(view, size), size), dpi=dpi)
        ax = fig.add_subplot()
        with writer.saving(fig, str(out), dpi):
            for fr in frs:
                ax.clear()
                pic = dataclasses.replace(fr.picture, view=view)
                render.draw_board(ax, pic)
                render.side_legend(ax, pic)
                fig.tight_layout()
                writer.grab_frame()
    return out


def main(argv: Iterable[str] | None = None) -> int:
    """``tanksim replay``: exit 0 on success, 2 for bad usage or input, including a log that fails its checks
    (message on stderr, ``FILE: event N (seq S): what was expected``)."""
    p = argparse.ArgumentParser(prog="tanksim replay",
                                description="Turn a stored battle's event log into a GIF/MP4.")
    p.add_argument("source", help="events Parquet file, a 'tanksim run --out' folder, or a batch results folder")
    p.add_argument("--battle", help="battle id (battle_id / run_key column) when the source holds several battles")
    p.add_argument("--out", required=True, type=output_file(),  # the format is checked by write_animation
                   help="output animation: .gif (Pillow) or .mp4 (needs ffmpeg)")
    p.add_argument("--per", choices=sorted(PER_CHOICES), default="activation", help="one frame per activation or turn")
    p.add_argument("--fps", type=float, default=2.0, help="frames per second (default 2)")
    p.add_argument("--size", type=float, default=7.0, help="picture edge in inches (default 7)")
    p.add_argument("--dpi", type=int, default=80, help="resolution (default 80)")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.fps <= 0 or args.size <= 0 or args.dpi <= 0:
        print("tanksim replay: --fps, --size and --dpi must be positive", file=sys.stderr)
        return 2
    try:
        rp = load_replay(args.source, args.battle, args.per)
        path = write_animation(rp.frames, args.out, fps=args.fps, size=args.size, dpi=args.dpi)
    except ReplayError as exc:
        print("\n".join(f"tanksim replay: {line}" for line in str(exc).splitlines()), file=sys.stderr)
        return 2
    frs, bid = rp.frames, rp.id
    last = frs[-1]
    print(f"replay{'' if bid is None else f' of battle {bid}'}: {len(frs)} frames (per {args.per}), "
          f"{last.turn} turns, {last.activations} activations -> {path}")
    print(f"  last frame: {last.caption}")
    print("  checked: every event; the last frame equals the stored final state" if rp.final_checked else
          "  checked: every event (no final state is stored with this log to compare the last frame with)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
