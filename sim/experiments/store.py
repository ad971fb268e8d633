"""Results on disk: Parquet written atomically, the part checksums, the folder lock and quarantine.

``write_battle(result, out_dir)`` writes ``battle.parquet`` (one row: seed, resolved parameters, outcome),
``events.parquet`` (the event log, every roll included), ``series.parquet`` (per-turn DataCollector rows) and
``final_state.json``; a batch or tournament folder holds part folders (:func:`write_run_part`).

**Checksums.**  Every file this module commits has a SHA-256, a byte count and a row count recorded *before* the
rename that commits it, so a part on disk always has its checksum.  Records go to an append-only journal,
``DIR/parts.jsonl`` (one JSON line per write: ``{"op": "chunk", "seq": N, "files": {path: {sha256, bytes,
rows}}}``, ``{"op": "rewrite", "seq": N, "files": {path: {sha256, bytes, rows, prev}}}`` for parts of a chunk
rewritten in place, ``{"op": "remove", "seq": N}`` for a quarantined chunk); :func:`write_manifest` folds the
journal into the manifest's ``parts`` table (``{"N": {path: {sha256, bytes, rows}}}``) and empties it.  So the
manifest plus the journal name the checksum of every part, and :func:`verify_parts` finds a part that is
truncated, changed, missing, or that no driver wrote.  The checksums
detect damage (a truncated copy, a disk error, an edit); they are not signatures: whoever can write the folder can
also rewrite the checksums.

**One writer.**  :func:`folder_lock` takes ``DIR/.lock`` (``flock``; the file holds the owner's pid) for the whole
session of a batch or tournament; a second writer fails at once with ``DIR: in use by pid N``.  The kernel drops
the lock when its process dies (even by ``kill -9``), so a stale lock file of a dead pid is simply taken over.

**Quarantine.**  :func:`quarantine` moves every part of a bad chunk (runs, events, series) to
``DIR/quarantine/<time>-<pid>/`` with a ``REASON.txt``, for inspection; the runs of that chunk are then no longer
stored and a resumed batch plays them again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

#: The event log (:func:`sim.runner.log_rows`): ``data`` / ``rolls`` as JSON text, and the shot columns typed
#: (filled on ``ShotResolved`` rows only).
EVENT_SCHEMA = pa.schema([("seq", pa.int64()), ("turn", pa.int64()), ("kind", pa.string()), ("data", pa.string()),
                          ("rolls", pa.string()), ("shooter", pa.int64()), ("target", pa.int64()),
                          ("result", pa.string()), ("hit", pa.bool_()), ("kill", pa.bool_())])
#: One roll of a shot: the die (``d10``, ``d6``, ...), its natural value and the rule set's label.
ROLL_TYPE = pa.struct([("die", pa.string()), ("value", pa.int64()), ("label", pa.string())])
#: ``shots.parquet``: one row per shot (:func:`sim.runner.shot_rows`; columns documented in docs/batch.md).
SHOT_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("turn", pa.int32()), ("ruleset", pa.string()),
    ("shooter", pa.int32()), ("shooter_label", pa.string()), ("shooter_side", pa.int8()),
    ("shooter_vehicle", pa.string()),
    ("target", pa.int32()), ("target_label", pa.string()), ("target_side", pa.int8()), ("target_vehicle", pa.string()),
    ("shooter_q", pa.int32()), ("shooter_r", pa.int32()), ("shooter_facing", pa.int8()),
    ("target_q", pa.int32()), ("target_r", pa.int32()), ("target_facing", pa.int8()),
    ("range", pa.int32()), ("range_m", pa.int64()), ("face", pa.string()), ("attack", pa.string()),
    ("reaction", pa.bool_()),
    ("p_hit", pa.string()), ("p_kill", pa.string()), ("p_hit_float", pa.float64()), ("p_kill_float", pa.float64()),
    ("rolls", pa.list_(ROLL_TYPE)), ("hit", pa.bool_()), ("kill", pa.bool_()), ("result", pa.string()),
    ("key", pa.string()), ("details", pa.string()),
])
#: ``tanks.parquet``: one row per tank per turn, the set-up (turn 0) first (:func:`sim.runner.tank_rows`); an
#: experiment's extra agent reporters follow as typed columns.
TANK_SCHEMA = pa.schema([
    ("turn", pa.int32()), ("tank_id", pa.int32()), ("label", pa.string()), ("side", pa.int8()),
    ("vehicle", pa.string()), ("q", pa.int32()), ("r", pa.int32()), ("facing", pa.int8()),
    ("turret_facing", pa.int8()), ("status", pa.string()), ("shots", pa.int32()), ("hits", pa.int32()),
    ("kills", pa.int32()), ("rules_state", pa.string()),
])
#: ``sides.parquet``: the lookup of per-side columns (:func:`sim.runner.side_rows`): ``side`` (0-based index),
#: ``column`` (the 1-based suffix of ``alive_1``, ``points_1``, ``side1_*``), name, role, tanks.
SIDE_SCHEMA = pa.schema([("side", pa.int8()), ("column", pa.int8()), ("name", pa.string()), ("role", pa.string()),
                         ("tanks", pa.int32())])
#: The journal of part checksums (see the module docstring).
LEDGER = "parts.jsonl"
#: The lock file of a results folder.
LOCK = ".lock"
#: Where bad parts are moved.
QUARANTINE = "quarantine"
#: The part folders of a results folder, in commit order (a runs part is the commit point of its chunk).
KINDS = ("events", "series", "shots", "tanks", "runs")
#: The opt-in part folders of a chunk (written before its runs part).
SIDE_KINDS = tuple(k for k in KINDS if k != "runs")
#: Manifest file names a ledger folds its checkpoint into (batch, tournament).
MANIFEST_NAMES = ("manifest.json", "tournament.json")


def other_results(out: Path, mine: str) -> str | None:
    """What marks ``out`` as another command's results folder, as ``"NAME: WHOSE"`` (``"tournament.json: a
    tournament's"``, ``"battle.parquet: a tanksim run battle's"``), or ``None``.  ``mine`` is the calling
    command's own manifest name (``manifest.json`` for a batch, ``tournament.json`` for a tournament,
    ``comparison.json`` for a rule-set comparison): a batch or a tournament writes its chunks' checksums into
    ``parts.jsonl``, which a ``tanksim run --out`` folder holds for its one battle, so no command writes into
    another's folder."""
    from sim.messages import RESULTS_MARKERS

    for name, who in RESULTS_MARKERS.items():
        if name != mine and (out / name).is_file():
            return f"{name}: {who}"
    if not (out / mine).is_file() and (out / "battle.parquet").is_file():
        return "battle.parquet: a tanksim run battle's"
    return None
#: Manifest format with part checksums.
FORMAT = 2
#: Exit code of an injected crash (:func:`crash_point`).
CRASH_EXIT = 86
_PART = re.compile(r"^part-(\d{1,12})\.parquet$")


class CorruptResults(ValueError):
    """A results folder that fails verification; ``problems`` holds one ``PATH: what is wrong`` line each."""

    def __init__(self, problems: Iterable[Any], hint: str = ""):
        self.problems = [str(p) for p in problems]
        self.hint = hint
        super().__init__("\n".join(self.problems) + (f"\n{hint}" if hint else ""))


class FolderInUse(ValueError):
    """Another process holds the folder's lock (a refused folder, like any other bad input); the message is
    ``DIR: in use by pid N (...)``."""


# --- crash injection (tests) -----------------------------------------------------------------------------------------
_CRASH_COUNTS: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Exit hard (``os._exit(86)``, like ``kill -9``: no clean-up runs) at the N-th time this process passes the
    point ``name``, when ``TANKSIM_CRASH_AT`` holds ``name:N`` (comma-separated for several).  Points:
    ``part-written`` (temporary files written), ``part-recorded`` (checksums journalled), ``part-side-renamed``
    (events / series renamed, runs not yet), ``checkpoint`` (manifest written, journal not yet emptied),
    ``rewrite`` (parts of a chunk rewritten in place: journalled, before each rename), ``quarantine`` (chunk
    removed from the ledger, its files not yet all moved)."""
    spec = os.environ.get("TANKSIM_CRASH_AT", "")
    if not spec:
        return
    _CRASH_COUNTS[name] = n = _CRASH_COUNTS.get(name, 0) + 1
    for item in spec.split(","):
        point, _, count = item.strip().partition(":")
        if point == name and count.strip().isdigit() and int(count) == n:
            os._exit(CRASH_EXIT)


# --- single files ----------------------------------------------------------------------------------------------------

def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_table_atomic(table: pa.Table, path: str | Path, *, before_rename: Callable[[], None] | None = None
                       ) -> None:
    """Write ``table`` to ``path`` through a temporary file and an atomic rename (``before_rename``, for crash
    tests, is called between the two).  No checksum is recorded: use :func:`write_run_part` or
    :func:`write_battle` for results."""
    path = Path(path)
    tmp = _write_tmp(table, path)
    if before_rename is not None:
        before_rename()
    os.replace(tmp, path)


def _write_tmp(table: pa.Table, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    return tmp


def _write_tmp_text(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    return tmp


def _not_nan(v: Any) -> Any:
    return None if isinstance(v, float) and v != v else v


def events_table(events: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> pa.Table:
    """The event rows as a table with the explicit event schema (plus constant ``extra`` columns); a row without
    the typed shot columns (read from a log stored before them) gets nulls there, as does a pandas NaN."""
    cols = {name: [_not_nan(e.get(name)) for e in events] for name in EVENT_SCHEMA.names}
    table = pa.table(cols, schema=EVENT_SCHEMA)
    for k, v in (extra or {}).items():
        table = table.append_column(k, pa.array([v] * len(events)))
    return table


def _plain_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)


def typed_table(rows: list[dict[str, Any]], fixed: pa.Schema) -> pa.Table:
    """``rows`` as a table: the ``fixed`` schema's columns first (explicit types), then any other column of the
    rows typed by :func:`value_type` (a value that is not a bool, number or text is stored as JSON text)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    extra = [c for c in cols if c not in fixed.names]
    fields = list(zip(fixed.names, fixed.types))
    prepared = rows
    if extra:
        prepared = [{**r, **{c: _plain_value(r.get(c)) for c in extra}} for r in rows]
        fields += [(c, value_type([r.get(c) for r in prepared])) for c in extra]
    return pa.Table.from_pylist(prepared, schema=pa.schema(fields))


def series_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Per-turn DataCollector rows (:func:`sim.runner.series_rows`), every column typed by :func:`value_type`."""
    return typed_table(rows, pa.schema([]))


def write_battle(result: Any, out_dir: str | Path) -> dict[str, Path]:
    """Write one :class:`~sim.runner.BattleResult` (``battle.parquet``, ``events.parquet``, ``series.parquet``,
    and when the result has them the tidy tables ``shots.parquet``, ``tanks.parquet`` and ``sides.parquet`` with
    their explicit schemas, plus ``final_state.json``) with their checksums in ``DIR/parts.jsonl``; returns the
    paths written."""
    out = Path(out_dir)
    paths = {"battle": out / "battle.parquet", "events": out / "events.parquet", "series": out / "series.parquet"}
    staged = {paths["battle"]: _write_tmp(pa.Table.from_pandas(pd.DataFrame([result.row]), preserve_index=False),
                                          paths["battle"]),
              paths["events"]: _write_tmp(events_table(result.events), paths["events"]),
              paths["series"]: _write_tmp(series_table(result.series), paths["series"])}
    for name, schema in (("shots", SHOT_SCHEMA), ("tanks", TANK_SCHEMA), ("sides", SIDE_SCHEMA)):
        rows = getattr(result, name, None)
        if rows or (name == "shots" and getattr(result, "tanks", None)):  # a battle without a shot: an empty table
            paths[name] = out / f"{name}.parquet"
            staged[paths[name]] = _write_tmp(typed_table(list(rows or []), schema), paths[name])
    if getattr(result, "final_state", None):
        paths["final_state"] = out / "final_state.json"
        staged[paths["final_state"]] = _write_tmp_text(json.dumps(result.final_state, sort_keys=True, indent=1),
                                                       paths["final_state"])
    PartLedger(out).record_chunk(0, staged)
    for final, tmp in staged.items():
        os.replace(tmp, final)
    return paths


def write_final_state(state: list[dict[str, Any]], path: str | Path) -> Path:
    """Write a battle's final tank states (:func:`sim.runner.final_state` rows: tank_id, hex, facing, turret_facing,
    status, rules_state, ...) as a JSON list, atomically; replays compare their last frame against it."""
    path = Path(path)
    os.replace(_write_tmp_text(json.dumps(state, sort_keys=True, indent=1), path), path)
    return path


# --- the checksum ledger ---------------------------------------------------------------------------------------------

def _rel(out: Path, path: Path) -> str:
    return Path(path).relative_to(out).as_posix()


def _file_entry(path: Path, rows: int | None) -> dict[str, Any]:
    return {"sha256": file_sha256(path), "bytes": path.stat().st_size, "rows": rows}


def _rows_of(path: Path) -> int | None:
    if path.name.endswith(".parquet.tmp") or path.suffix == ".parquet":
        return pq.read_metadata(path).num_rows
    if path.name.endswith(".json.tmp") or path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return len(data) if isinstance(data, list) else None
    return None


def _is_entry(e: Any) -> bool:
    return (isinstance(e, dict) and isinstance(e.get("sha256"), str) and isinstance(e.get("bytes"), int)
            and (e.get("prev") is None or isinstance(e.get("prev"), str)))


class PartLedger:
    """The part checksums of one results folder: the manifest's ``parts`` checkpoint plus the journal
    ``parts.jsonl`` (see the module docstring).  ``manifest``: the manifest file name (default: whichever of
    :data:`MANIFEST_NAMES` exists; ``None`` for a single battle's folder).  Only the folder's lock holder writes."""

    def __init__(self, out_dir: str | Path, manifest: str | None = None):
        self.out = Path(out_dir)
        self.manifest_name = manifest or next((n for n in MANIFEST_NAMES if (self.out / n).is_file()), None)
        self.journal = self.out / LEDGER

    # reading
    def _checkpoint(self) -> tuple[dict[int, dict[str, dict[str, Any]]], bool]:
        """``(parts table, the manifest has one)``; raises :class:`CorruptResults` naming the manifest."""
        if self.manifest_name is None or not (self.out / self.manifest_name).is_file():
            return {}, False
        path = self.out / self.manifest_name
        m = read_json(path)
        if not isinstance(m, dict):
            raise CorruptResults([f"{path}: expected a JSON object (a results manifest)"])
        parts = m.get("parts")
        if parts is None:
            return {}, int(m.get("format") or 1) >= FORMAT if isinstance(m.get("format"), int) else False
        bad = CorruptResults([f"{path}: parts: expected {{chunk number: {{file: {{sha256, bytes, rows}}}}}}"])
        if not isinstance(parts, dict):
            raise bad
        out: dict[int, dict[str, dict[str, Any]]] = {}
        for k, files in parts.items():
            if not (isinstance(k, str) and k.isdigit() and isinstance(files, dict)
                    and all(isinstance(p, str) and _is_entry(e) for p, e in files.items())):
                raise bad
            out[int(k)] = {p: dict(e) for p, e in files.items()}
        return out, True

    def _journal_ops(self) -> tuple[list[dict[str, Any]], bool]:
        """``(journal records, the journal exists)``.  A last line cut short (a write in progress, or a crash
        during it) is ignored; any other bad line raises :class:`CorruptResults` naming the line."""
        try:
            text = self.journal.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [], False
        except (UnicodeDecodeError, OSError) as exc:
            raise CorruptResults([f"{self.journal}: unreadable ({type(exc).__name__})"]) from None
        lines = text.split("\n")
        ops = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                op = json.loads(line)
                ok = _valid_op(op)
            except (ValueError, RecursionError):
                ok, op = False, None
            if not ok:
                if i == len(lines):  # no newline after it: a torn last write
                    continue
                raise CorruptResults([f"{self.journal}: line {i}: expected a part checksum record "
                                      f"(op chunk / rewrite / remove with seq and sha256 fields); something other "
                                      f"than tanksim changed the journal: restore it, or delete that line (a part "
                                      f"it no longer vouches for is then quarantined and its battles played "
                                      f"again)"])
            ops.append(op)
        return ops, True

    def chunks(self) -> dict[int, dict[str, dict[str, Any]]]:
        """Chunk number -> ``{relative path: {"sha256", "bytes", "rows"[, "prev"]}}`` (``prev``: the checksum
        before a pending in-place rewrite, also accepted).  Raises :class:`CorruptResults`."""
        ops, _ = self._journal_ops()  # the journal first: a checkpoint in between only adds to the manifest
        state, _ = self._checkpoint()
        for op in ops:
            seq = op["seq"]
            if op["op"] == "chunk":
                state[seq] = {p: dict(e) for p, e in op["files"].items()}
            elif op["op"] == "remove":
                state.pop(seq, None)
            else:
                files = state.setdefault(seq, {})
                for p, e in op["files"].items():
                    files[p] = {k: e.get(k) for k in ("sha256", "bytes", "rows", "prev")}
        return state

    def known(self) -> bool:
        """Whether the folder records checksums (a journal, or a manifest of format >= 2): ``False`` for a
        folder written before checksums existed."""
        return self.journal.is_file() or self._checkpoint()[1]

    # writing (lock holder only)
    def _append(self, records: Iterable[Mapping[str, Any]]) -> None:
        text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.journal, "a", encoding="utf-8") as f:
            f.write(text)

    def record_chunk(self, seq: int, staged: Mapping[Path, Path], rows: Mapping[Path, int | None] | None = None
                     ) -> None:
        """Journal the checksums of chunk ``seq``'s files (``final path -> written temporary file``) before they
        are renamed; replaces what the ledger held for that chunk."""
        files = {_rel(self.out, final): _file_entry(tmp, (rows or {}).get(final, _rows_of(tmp)))
                 for final, tmp in staged.items()}
        self._append([{"op": "chunk", "seq": int(seq), "files": files}])

    def record_rewrite(self, seq: int, staged: Mapping[Path, Path]) -> None:
        """Journal parts of chunk ``seq`` about to be rewritten in place (``final path -> temporary file``) in one
        record: each file's old checksum is kept as ``prev``, and until the next checkpoint the chunk verifies if
        its rewritten files are all new or all old, never a mix (a crash between the renames: the chunk is then
        quarantined and its runs played again)."""
        known = self.chunks().get(int(seq), {})
        files = {}
        for final, tmp in staged.items():
            rel = _rel(self.out, final)
            old = known.get(rel)
            files[rel] = {**_file_entry(tmp, _rows_of(tmp)), "prev": old["sha256"] if old else None}
        self._append([{"op": "rewrite", "seq": int(seq), "files": files}])

    def record_removal(self, seqs: Iterable[int]) -> None:
        """Journal that chunks ``seqs`` leave the folder (quarantine)."""
        self._append([{"op": "remove", "seq": int(s)} for s in seqs])

    def snapshot(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The ledger as a manifest ``parts`` table: committed chunks only (their runs part, or for a folder
        without part folders their files, on disk), pending rewrites settled by the file on disk."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for seq, files in sorted(self.chunks().items()):
            runs = [p for p in files if p.startswith("runs/")]
            if runs and not all((self.out / p).is_file() for p in runs):
                continue  # an interrupted write: never committed
            keep = {}
            pending = {p for p, e in files.items() if e.get("prev") is not None and (self.out / p).is_file()}
            reverted = bool(pending) and all(file_sha256(self.out / p) == files[p]["prev"] for p in pending)
            for p, e in sorted(files.items()):
                path = self.out / p
                if not path.is_file() and not runs:
                    continue  # (a file the chunk no longer has; a part folder's missing file stays: verify says so)
                if reverted and p in pending:  # the rewrite did not land: the old files stand
                    keep[p] = {"sha256": e["prev"], "bytes": path.stat().st_size, "rows": _rows_of(path)}
                else:
                    keep[p] = {k: e.get(k) for k in ("sha256", "bytes", "rows")}
            if keep:
                out[str(seq)] = keep
        return out

    def reset_journal(self) -> None:
        """Empty the journal (after :func:`write_manifest` folded it into the manifest)."""
        tmp = self.journal.with_name(LEDGER + ".tmp")
        tmp.write_text("", encoding="utf-8")
        os.replace(tmp, self.journal)


def _valid_op(op: Any) -> bool:
    if not isinstance(op, dict) or not isinstance(op.get("seq"), int) or isinstance(op.get("seq"), bool):
        return False
    kind = op.get("op")
    if kind == "chunk":
        files = op.get("files")
        return isinstance(files, dict) and all(isinstance(p, str) and _is_entry(e) for p, e in files.items())
    if kind == "rewrite":
        files = op.get("files")
        return isinstance(files, dict) and all(isinstance(p, str) and _is_entry(e) for p, e in files.items())
    return kind == "remove"


#: The largest JSON file of a results folder that is read (a manifest of a million runs is far smaller).
MAX_JSON_BYTES = 256 * 2**20


def read_json(path: str | Path) -> Any:
    """A JSON file's value; raises :class:`CorruptResults` naming the file and the line / column of a syntax
    error (``FileNotFoundError`` if it is missing)."""
    path = Path(path)
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CorruptResults([f"{path}: larger than {MAX_JSON_BYTES:,} bytes (expected a results folder's JSON)"])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CorruptResults([f"{path}: not UTF-8 text (expected JSON)"]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptResults([f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"]) from None
    except (ValueError, RecursionError) as exc:
        raise CorruptResults([f"{path}: not valid JSON ({type(exc).__name__})"]) from None


def write_manifest(out_dir: str | Path, name: str, manifest: dict[str, Any]) -> None:
    """Write a folder's manifest atomically with the ledger folded in (``parts`` and ``format`` set), then empty
    the journal.  Only the folder's lock holder calls it."""
    out = Path(out_dir)
    ledger = PartLedger(out, name)
    manifest["format"] = max(FORMAT, int(manifest.get("format") or 1))
    manifest["parts"] = ledger.snapshot()
    tmp = out / (name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=False, default=str), encoding="utf-8")
    os.replace(tmp, out / name)
    crash_point("checkpoint")
    ledger.reset_journal()


# --- verification ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartProblem:
    """One bad part: its ``path``, chunk number ``seq`` and ``what`` is wrong."""

    path: Path
    seq: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


@dataclass
class Verification:
    """What :func:`verify_parts` found: ``problems``, the bad chunk numbers, and ``legacy`` (the folder records no
    checksums: written before they existed, so nothing could be checked)."""

    problems: list[PartProblem] = field(default_factory=list)
    legacy: bool = False

    @property
    def bad_seqs(self) -> set[int]:
        return {p.seq for p in self.problems}

    def check(self, hint: str = "") -> None:
        """Raise :class:`CorruptResults` if there is any problem."""
        if self.problems:
            raise CorruptResults(self.problems, hint)


def _short(sha: str) -> str:
    return sha[:16]


def _check_file(path: Path, seq: int, e: Mapping[str, Any], deep: bool) -> tuple[PartProblem | None, str]:
    """``(problem or None, which version the file is: "new", "old" (its ``prev``) or "" when not hashed)``."""
    if not path.is_file():
        return PartProblem(path, seq, f"missing (the manifest lists it: sha256 {_short(e['sha256'])}..., "
                                      f"{e['bytes']} bytes)"), ""
    size = path.stat().st_size
    if size != e["bytes"] and e.get("prev") is None:
        return PartProblem(path, seq, f"truncated or changed: the manifest says {e['bytes']} bytes, the file has "
                                      f"{size}"), ""
    if not deep:
        return None, ""
    actual = file_sha256(path)
    if actual == e["sha256"]:
        return None, "new"
    if e.get("prev") is not None and actual == e["prev"]:
        return None, "old"
    return PartProblem(path, seq, f"checksum mismatch (changed or damaged): the manifest says sha256 "
                                  f"{_short(e['sha256'])}..., the file has {_short(actual)}..."), ""


def part_files(out_dir: str | Path, kinds: Iterable[str] = KINDS) -> dict[int, dict[str, Path]]:
    """Chunk number -> ``{kind: path}`` of the part files on disk."""
    out = Path(out_dir)
    found: dict[int, dict[str, Path]] = {}
    for kind in kinds:
        for p in part_paths(out, kind):
            found.setdefault(_seq(p), {})[kind] = p
    return found


def verify_parts(out_dir: str | Path, manifest: str | None = None, *, kinds: Iterable[str] = KINDS,
                 deep: Iterable[str] = KINDS) -> Verification:
    """Check every committed part of ``kinds`` against the ledger: each must be listed, present, of its recorded
    size and (for ``deep`` kinds) of its recorded SHA-256; each file the ledger lists for a committed chunk must
    exist; a runs part the ledger lists must not be missing unless its write was interrupted (its ``.tmp`` is
    there).  Uncommitted leftovers (events / series without their runs part) are not problems: resuming removes
    them.  Raises :class:`CorruptResults` for an unreadable manifest or journal."""
    out = Path(out_dir)
    kinds, deep = tuple(kinds), set(deep)
    ledger = PartLedger(out, manifest)
    on_disk = part_files(out, KINDS)
    if not ledger.known():
        return Verification([], legacy=bool(on_disk))
    state = ledger.chunks()
    problems: list[PartProblem] = []
    for seq in sorted(set(on_disk) | set(state)):
        files = on_disk.get(seq, {})
        entry = state.get(seq, {})
        if "runs" not in files:
            runs_rel = f"runs/part-{seq:06d}.parquet"
            if ("runs" in kinds and runs_rel in entry
                    and not (out / runs_rel).with_name(Path(runs_rel).name + ".tmp").is_file()):
                problems.append(PartProblem(out / runs_rel, seq, "missing (the manifest lists it; deleted?)"))
            continue
        for kind, path in files.items():
            if kind in kinds and _rel(out, path) not in entry:
                problems.append(PartProblem(path, seq, "not in the manifest's part checksums (not written by this "
                                                       "folder's driver)"))
        versions: dict[str, str] = {}
        for rel, e in sorted(entry.items()):
            kind = rel.split("/", 1)[0]
            if kind not in kinds:
                continue
            bad, version = _check_file(out / rel, seq, e, kind in deep or e.get("prev") is not None)
            if bad is not None:
                problems.append(bad)
            elif e.get("prev") is not None:
                versions[rel] = version
        if len(set(versions.values())) > 1:
            problems.append(PartProblem(files["runs"], seq, "an in-place rewrite of this chunk was interrupted "
                                                            "halfway (some of its parts old, some new)"))
    return Verification(problems)


def verify_files(out_dir: str | Path, paths: Iterable[Path], manifest: str | None = None) -> Verification:
    """Check the given files of a folder (any chunk, e.g. the events parts a replay reads or a single battle's
    ``events.parquet``) against the ledger: listed, present, of their recorded SHA-256."""
    out = Path(out_dir)
    ledger = PartLedger(out, manifest)
    if not ledger.known():
        return Verification([], legacy=True)
    where = {rel: (seq, e) for seq, files in ledger.chunks().items() for rel, e in files.items()}
    problems = []
    for p in paths:
        rel = _rel(out, Path(p))
        if rel not in where:
            problems.append(PartProblem(Path(p), -1, "not in the folder's part checksums (not written by tanksim)"))
            continue
        bad, _ = _check_file(Path(p), where[rel][0], where[rel][1], True)
        if bad is not None:
            problems.append(bad)
    return Verification(problems)


# --- quarantine ------------------------------------------------------------------------------------------------------

def quarantine(out_dir: str | Path, problems: Iterable[PartProblem]) -> Path | None:
    """Move every part of each bad chunk (runs first, then events and series) to
    ``DIR/quarantine/<time>-<pid>/<kind>/`` with ``REASON.txt`` listing the problems, after journalling the chunks'
    removal.  Returns the quarantine folder (``None`` if there was nothing to move)."""
    out = Path(out_dir)
    problems = list(problems)
    seqs = sorted({p.seq for p in problems if p.seq >= 0})
    if not seqs:
        return None
    dest = out / QUARANTINE / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "REASON.txt").write_text("Moved here by tanksim because verification failed:\n"
                                     + "".join(f"  {p}\n" for p in problems)
                                     + "The battles of these chunks are no longer stored; running the batch again "
                                       "plays them.\n", encoding="utf-8")
    PartLedger(out).record_removal(seqs)
    for seq in seqs:
        for kind in ("runs", *SIDE_KINDS):
            src = out / kind / f"part-{seq:06d}.parquet"
            if src.is_file():
                (dest / kind).mkdir(exist_ok=True)
                os.replace(src, dest / kind / src.name)
                crash_point("quarantine")
    return dest


# --- the folder lock -------------------------------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict):
        info = {}
    pid = info.get("pid", "?")
    extra = ", ".join(str(x) for x in (info.get("what"), info.get("host"), info.get("since")) if x)
    return f"pid {pid}" + (f" ({extra})" if extra else "")


@contextlib.contextmanager
def folder_lock(out_dir: str | Path, what: str = "tanksim") -> Iterator[Path]:
    """Hold ``DIR/.lock`` for the block: ``flock`` (exclusive, non-blocking), the file rewritten with this pid.
    Raises :class:`FolderInUse` (``DIR: in use by pid N (...)``) at once if another process holds it.  A lock file
    left by a dead process is taken over (the kernel released its ``flock``).  Where ``fcntl`` is missing, an
    ``O_EXCL`` file whose pid is checked for life stands in."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "what": what,
                       "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield from _excl_lock(path, info)
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderInUse(f"{out}: in use by {_holder(path)}; wait for it to finish or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _excl_lock(path: Path, info: str) -> Iterator[Path]:  # pragma: no cover - not POSIX
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid = int(json.loads(path.read_text(encoding="utf-8")).get("pid"))
            except (OSError, ValueError, TypeError, AttributeError):
                pid = -1
            if pid > 0 and _pid_alive(pid):
                raise FolderInUse(f"{path.parent}: in use by {_holder(path)}; wait for it to finish or stop it"
                                  ) from None
            path.unlink(missing_ok=True)  # stale: its process is gone
            continue
        os.write(fd, info.encode())
        os.close(fd)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)
        return
    raise FolderInUse(f"{path.parent}: in use (lock file {path} keeps reappearing)")


def lock_holder(out_dir: str | Path) -> str | None:
    """``"pid N (...)"`` if the folder's lock file names a live process, else ``None`` (readers use it to warn that
    results are still being written; they never take the lock)."""
    path = Path(out_dir) / LOCK
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        pid = int(info.get("pid"))
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return _holder(path) if pid > 0 and pid != os.getpid() and _pid_alive(pid) else None


# --- batch results folders -------------------------------------------------------------------------------------------
# A batch's output folder holds ``manifest.json`` and part folders written only by the driver:
# ``runs/part-NNNNNN.parquet`` (one row per battle, :func:`run_schema`), with ``--events``
# ``events/part-NNNNNN.parquet`` (``run_key`` + :data:`EVENT_SCHEMA` + ``final_state`` on each battle's last row)
# and ``series/part-NNNNNN.parquet`` (``run_key`` + the per-turn DataCollector columns), and with ``--tables``
# ``shots/`` and ``tanks/`` parts (``run_key`` + :data:`SHOT_SCHEMA` / :data:`TANK_SCHEMA`; the runs part's
# ``side1_name`` / ``side2_name`` are the side lookup).  A runs part is the commit point of its chunk: other parts
# without their runs part are leftovers of an interrupted write and are removed on resume.

#: The fixed columns of a runs part, in order (factor columns follow, typed per factor).
RUN_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("run_key", pa.string()), ("point_key", pa.string()), ("base_key", pa.string()), ("rep", pa.int32()),
    ("seed", pa.int64()), ("params", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("scenario", pa.string()), ("ruleset", pa.string()), ("scenario_hash", pa.string()),
    ("winner", pa.string()), ("winner_index", pa.int8()), ("reason", pa.string()), ("turns", pa.int32()),
    ("decisions", pa.int64()), ("shots", pa.int32()), ("hits", pa.int32()), ("kills", pa.int32()),
    ("faults", pa.int32()),
    ("side1_name", pa.string()), ("side1_tanks", pa.int16()), ("side1_lost", pa.int16()), ("side1_alive", pa.int16()),
    ("side2_name", pa.string()), ("side2_tanks", pa.int16()), ("side2_lost", pa.int16()), ("side2_alive", pa.int16()),
    ("points", pa.string()), ("policies", pa.string()), ("deciding_shot", pa.string()), ("placement", pa.string()),
    ("extra", pa.string()), ("worker", pa.string()), ("wall_s", pa.float64()), ("battle_turn_limit", pa.int32()),
)
#: The columns of an events part: the battle's id, :data:`EVENT_SCHEMA`, and the battle's final tank states
#: (:func:`sim.runner.final_state`, JSON) on its last event row only (null elsewhere).
EVENT_PART_SCHEMA = pa.schema([("run_key", pa.string()), *zip(EVENT_SCHEMA.names, EVENT_SCHEMA.types),
                               ("final_state", pa.string())])
#: The columns of a shots / tanks part: the battle's id, then :data:`SHOT_SCHEMA` / :data:`TANK_SCHEMA`.
SHOT_PART_SCHEMA = pa.schema([("run_key", pa.string()), *zip(SHOT_SCHEMA.names, SHOT_SCHEMA.types)])
TANK_PART_SCHEMA = pa.schema([("run_key", pa.string()), *zip(TANK_SCHEMA.names, TANK_SCHEMA.types)])
#: Columns that differ between otherwise identical runs (left out when comparing result tables).
VOLATILE_COLUMNS = ("worker", "wall_s")
_PANDAS_INTS = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}


def value_type(values: list[Any]) -> pa.DataType:
    """The Arrow type of a factor column: bool, int64, float64 or string (anything else is stored as JSON)."""
    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals):
        return pa.bool_()
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return pa.int64()
    if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return pa.float64()
    return pa.string()


def run_schema(factor_types: dict[str, pa.DataType] | None = None) -> pa.Schema:
    """The explicit schema of a runs part: :data:`RUN_FIELDS` then one column per factor."""
    return pa.schema(list(RUN_FIELDS) + list((factor_types or {}).items()))


def _seq(path: Path) -> int:
    m = _PART.match(Path(path).name.removesuffix(".tmp"))
    return int(m.group(1)) if m else -1


def part_paths(out_dir: str | Path, kind: str = "runs") -> list[Path]:
    """The committed parts of one kind (``runs``, ``events``, ``series``), in write order (files named
    ``part-N.parquet`` only)."""
    folder = Path(out_dir) / kind
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if _PART.match(p.name) and p.is_file()), key=_seq)


def clean_partial(out_dir: str | Path) -> list[Path]:
    """Remove what an interrupted write left: ``*.tmp`` files in the folder and its part folders, and event / series
    parts whose runs part is missing.  Returns the removed paths."""
    out = Path(out_dir)
    removed = [p for d in (out, *(out / k for k in KINDS)) if d.is_dir() for p in d.glob("*.tmp")]
    committed = {_seq(p) for p in part_paths(out, "runs")}
    removed += [p for k in SIDE_KINDS for p in part_paths(out, k) if _seq(p) not in committed]
    for p in removed:
        p.unlink(missing_ok=True)
    return removed


def next_part_number(out_dir: str | Path) -> int:
    """One past the highest part number on disk (runs, events or series) and in the ledger."""
    out = Path(out_dir)
    seqs = [_seq(p) for k in KINDS for p in part_paths(out, k)]
    return max(seqs, default=0) + 1


def write_run_part(out_dir: str | Path, seq: int, rows: list[dict[str, Any]], schema: pa.Schema, *,
                   events: list[dict[str, Any]] | None = None, series: list[dict[str, Any]] | None = None,
                   shots: list[dict[str, Any]] | None = None, tanks: list[dict[str, Any]] | None = None,
                   before_commit: Any = None) -> Path:
    """Write one chunk's parts: every temporary file first (events, series, shots, tanks, runs), then their
    checksums to the ledger, then the renames, the runs part last (the commit point).  ``events`` rows carry
    ``run_key`` (and optionally ``final_state``); ``series``, ``shots`` and ``tanks`` rows ``run_key``.
    ``before_commit`` (tests) is called right before the runs part's rename.  Returns the runs part's path.  Only
    the folder's lock holder calls it."""
    out = Path(out_dir)
    name = f"part-{seq:06d}.parquet"
    staged: dict[Path, Path] = {}
    counts: dict[Path, int] = {}
    if events:
        t = pa.Table.from_pylist(events, schema=EVENT_PART_SCHEMA)
        staged[out / "events" / name] = _write_tmp(t, out / "events" / name)
        counts[out / "events" / name] = t.num_rows
    if series:
        t = typed_table(series, pa.schema([("run_key", pa.string())]))
        staged[out / "series" / name] = _write_tmp(t, out / "series" / name)
        counts[out / "series" / name] = t.num_rows
    for kind, part_rows, part_schema in (("shots", shots, SHOT_PART_SCHEMA), ("tanks", tanks, TANK_PART_SCHEMA)):
        if part_rows:
            t = typed_table(part_rows, part_schema)
            staged[out / kind / name] = _write_tmp(t, out / kind / name)
            counts[out / kind / name] = t.num_rows
    path = out / "runs" / name
    t = pa.Table.from_pylist(rows, schema=schema)
    staged[path] = _write_tmp(t, path)
    counts[path] = t.num_rows
    crash_point("part-written")
    PartLedger(out).record_chunk(seq, staged, counts)
    crash_point("part-recorded")
    for final, tmp in staged.items():
        if final != path:
            os.replace(tmp, final)
            crash_point("part-side-renamed")
    if before_commit is not None:
        before_commit()
    os.replace(staged[path], path)
    return path


def rewrite_chunk(out_dir: str | Path, seq: int, tables: Mapping[Path, pa.Table]) -> None:
    """Replace parts of chunk ``seq`` in place (``path -> new table``): temporary files, one ledger record for them
    all (:meth:`PartLedger.record_rewrite`), then the renames, the runs part last.  Lock holder only."""
    out = Path(out_dir)
    order = sorted(tables, key=lambda p: KINDS.index(Path(p).parent.name) if Path(p).parent.name in KINDS else 0)
    staged = {Path(p): _write_tmp(tables[p], Path(p)) for p in order}
    PartLedger(out).record_rewrite(seq, staged)
    for final, tmp in staged.items():
        crash_point("rewrite")
        os.replace(tmp, final)


def read_table(path: str | Path, **kwargs: Any) -> pa.Table:
    """``pyarrow.parquet.read_table`` that raises :class:`CorruptResults` naming the file for an unreadable one."""
    try:
        return pq.read_table(path, **kwargs)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptResults([f"{path}: not a readable Parquet part ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:160] if str(exc) else ''})"]) from None


def read_parts(out_dir: str | Path, kind: str = "runs", columns: list[str] | None = None) -> pd.DataFrame:
    """All committed parts of one kind as one DataFrame (nullable pandas integer dtypes; parts written under an
    earlier version of the experiment may lack factor columns, which are then missing values).  Raises
    :class:`CorruptResults` for an unreadable part (callers verify the folder first, :func:`verify_parts`)."""
    tables = [read_table(p, columns=columns) for p in part_paths(out_dir, kind)]
    if not tables:
        return pd.DataFrame({n: pd.Series(dtype="object") for n, _ in RUN_FIELDS}) if kind == "runs" \
            else pd.DataFrame()
    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as exc:
        raise CorruptResults([f"{Path(out_dir) / kind}: parts with incompatible columns ({exc})"]) from None
    return table.to_pandas(types_mapper=_PANDAS_INTS.get)


def stored_run_keys(out_dir: str | Path) -> set[str]:
    """The ``run_key`` of every committed run (reads that column only)."""
    keys: set[str] = set()
    for p in part_paths(out_dir, "runs"):
        keys.update(read_table(p, columns=["run_key"]).column("run_key").to_pylist())
    return keys


def count_stored(out_dir: str | Path, keys: Iterable[str]) -> int:
    """How many of the run keys ``keys`` the folder ``out_dir`` has committed (0 for a folder that does not exist
    or whose parts cannot be read): what an interrupted command says it keeps, whether or not it played any."""
    try:
        if not Path(out_dir).is_dir():
            return 0
        return len(stored_run_keys(out_dir) & set(keys))
    except (OSError, ValueError, KeyError):
        return 0


# --- reading a results folder: its manifest checked, its runs verified (batch and report read through these) ---

#: The manifest's file name in a results folder.
MANIFEST = "manifest.json"


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    """The manifest of a results folder; raises ``FileNotFoundError`` naming the folder if there is none, and
    :class:`sim.experiments.CorruptResults` naming the file (and line) if it is not a JSON object."""
    p = Path(out_dir) / MANIFEST
    if not p.is_file():
        if not Path(out_dir).exists():
            raise FileNotFoundError(f"{out_dir}: no such folder (a batch results folder, written by tanksim batch)")
        raise FileNotFoundError(f"{out_dir}: not a batch results folder (no {MANIFEST})")
    m = read_json(p)
    if not isinstance(m, dict):
        raise CorruptResults([f"{p}: expected a JSON object (a batch manifest)"])
    return m


#: What ``tanksim batch`` does about a corrupt folder (printed after the problems).
REPAIR_HINT = ("run the batch again (tanksim batch EXPERIMENT --out DIR): it moves bad parts to DIR/quarantine and "
               "plays their battles again")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_manifest(manifest: Mapping[str, Any], out_dir: str | Path) -> None:
    """Check a batch manifest's shape and its stored hashes: the experiment hash of its fields and base key, each
    design point's key from its parameters, each factor value from its parameter, the run count.  Raises
    :class:`sim.experiments.CorruptResults` (``DIR/manifest.json: field: what was expected``)."""
    from sim.experiments.design import experiment_identity, point_key

    path = Path(out_dir) / MANIFEST
    bad: list[str] = []

    def need(cond: bool, where: str, what: str) -> bool:
        if not cond:
            bad.append(f"{path}: {where}: {what}")
        return cond

    d = manifest.get("design")
    if not isinstance(d, dict):
        raise CorruptResults([f"{path}: design: expected a mapping (the experiment's design)"])
    ok = (need(isinstance(d.get("experiment"), dict), "design.experiment", "expected a mapping")
          & need(isinstance(d.get("points"), list), "design.points", "expected a list")
          & need(isinstance(d.get("factors"), list), "design.factors", "expected a list")
          & need(_is_int(d.get("replications")) and d.get("replications", 0) >= 1, "design.replications",
                 "expected an integer >= 1")
          & need(_is_int(d.get("seed")), "design.seed", "expected an integer")
          & need(isinstance(d.get("base_key"), str), "design.base_key", "expected a string")
          & need(isinstance(d.get("scenario"), dict), "design.scenario", "expected a mapping")
          & need(isinstance(manifest.get("bases", {}), dict), "bases", "expected a mapping"))
    if not ok:
        raise CorruptResults(bad)
    facs = d["factors"]
    for i, f in enumerate(facs):
        need(isinstance(f, dict) and isinstance(f.get("name"), str) and isinstance(f.get("path"), str),
             f"design.factors[{i}]", "expected {name, path, ...}")
    for i, p in enumerate(d["points"]):
        if not need(isinstance(p, dict) and _is_int(p.get("index")) and isinstance(p.get("key"), str)
                    and isinstance(p.get("params"), dict) and isinstance(p.get("values"), dict),
                    f"design.points[{i}]", "expected {index, key, params, values}"):
            continue
        if p["key"] != point_key(d["base_key"], p["params"]):
            bad.append(f"{path}: design.points[{i}].params: do not hash to the point's key {p['key']} (edited)")
        for f in facs:
            if (isinstance(f, dict) and f.get("path") in p["params"] and f.get("name") in p["values"]
                    and p["values"][f["name"]] != p["params"][f["path"]]):
                bad.append(f"{path}: design.points[{i}].values.{f['name']}: differs from its parameter "
                           f"{f['path']} (edited)")
    for name in ("seed", "replications"):
        if d[name] != d["experiment"].get(name):
            bad.append(f"{path}: design.{name}: differs from design.experiment.{name} (edited)")
    if not bad:
        if d.get("n_runs") != len(d["points"]) * d["replications"]:
            bad.append(f"{path}: design.n_runs: expected {len(d['points'])} points x {d['replications']} "
                       f"replications = {len(d['points']) * d['replications']}")
        if manifest.get("experiment_hash") != experiment_identity(d["experiment"], d["base_key"]):
            bad.append(f"{path}: experiment_hash: the stored experiment does not hash to it (edited)")
    for key, b in (manifest.get("bases") or {}).items():
        need(isinstance(b, dict) and isinstance(b.get("data"), dict) and isinstance(b.get("src"), str)
             and isinstance(b.get("zones"), dict), f"bases.{key}", "expected {src, data, zones}")
    if bad:
        raise CorruptResults(bad[:20] + ([f"... and {len(bad) - 20} more"] if len(bad) > 20 else []))


def verified_manifest(out_dir: str | Path, deep: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """The manifest of a results folder after checking it (:func:`check_manifest`) and its parts
    (:func:`sim.experiments.verify_parts`: every part listed, present and of its recorded size; ``deep`` kinds, by
    default all, also by SHA-256: about 0.5 GB/s on one core).  Raises ``FileNotFoundError`` or
    :class:`sim.experiments.CorruptResults` naming each bad file with :data:`REPAIR_HINT`."""
    manifest = read_manifest(out_dir)
    check_manifest(manifest, out_dir)
    verify_parts(out_dir, MANIFEST, deep=deep).check(REPAIR_HINT)
    return manifest


def design_runs(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """The runs of the folder's current design, from its manifest: ``run_key, point_key, point, rep, seed``."""
    from sim.experiments.design import run_identity

    d = manifest["design"]
    exp = d["experiment"]
    rows = []
    for rep in range(d["replications"]):
        for p in d["points"]:
            r = run_identity(p["key"], rep, d["seed"], exp.get("common_random_numbers", False))
            rows.append({"run_key": r.key, "point_key": p["key"], "point": p["index"], "rep": rep, "seed": r.seed})
    return pd.DataFrame(rows)


def load_runs(out_dir: str | Path, current: bool = True) -> pd.DataFrame:
    """The stored runs of a results folder, one row per run key, sorted by design point then replication.

    ``current``: only the runs of the folder's current design (after ``--new`` the folder may also hold runs of
    an earlier design), with a ``point`` index column.  Raises ``FileNotFoundError`` for a folder without a
    manifest, :class:`sim.experiments.CorruptResults` for a bad manifest or part (:func:`verified_manifest`)."""
    manifest = verified_manifest(out_dir)
    df = read_parts(out_dir, "runs").drop_duplicates("run_key", keep="first")
    if not current:
        return df.reset_index(drop=True)
    design = design_runs(manifest)[["run_key", "point"]]
    df = df.merge(design, on="run_key", how="inner")
    return df.sort_values(["point", "rep"], kind="stable").reset_index(drop=True)

