"""Writing results to Parquet, atomically (temp file + rename): one battle's files, and a batch's part folders.

``write_battle(result, out_dir)`` writes ``battle.parquet`` (one row: seed, resolved parameters, outcome),
``events.parquet`` (the event log, every roll included) and ``series.parquet`` (per-turn DataCollector rows).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

EVENT_SCHEMA = pa.schema([("seq", pa.int64()), ("turn", pa.int64()), ("kind", pa.string()), ("data", pa.string()),
                          ("rolls", pa.string())])


def write_table_atomic(table: pa.Table, path: str | Path, *, before_rename: Callable[[], None] | None = None
                       ) -> None:
    """Write ``table`` to ``path`` through a temporary file and an atomic rename (``before_rename``, for crash
    tests, is called between the two)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    if before_rename is not None:
        before_rename()
    os.replace(tmp, path)


def events_table(events: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> pa.Table:
    """The event rows as a table with the explicit event schema (plus constant ``extra`` columns)."""
    cols = {name: [e[name] for e in events] for name in EVENT_SCHEMA.names}
    table = pa.table(cols, schema=EVENT_SCHEMA)
    for k, v in (extra or {}).items():
        table = table.append_column(k, pa.array([v] * len(events)))
    return table


def write_battle(result: Any, out_dir: str | Path) -> dict[str, Path]:
    """Write one :class:`~sim.runner.BattleResult`; returns the paths written."""
    out = Path(out_dir)
    paths = {"battle": out / "battle.parquet", "events": out / "events.parquet", "series": out / "series.parquet"}
    write_table_atomic(pa.Table.from_pandas(pd.DataFrame([result.row]), preserve_index=False), paths["battle"])
    write_table_atomic(events_table(result.events), paths["events"])
    write_table_atomic(pa.Table.from_pandas(result.series_frame(), preserve_index=False), paths["series"])
    if getattr(result, "final_state", None):
        paths["final_state"] = write_final_state(result.final_state, out / "final_state.json")
    return paths


def write_final_state(state: list[dict[str, Any]], path: str | Path) -> Path:
    """Write a battle's final tank states (:func:`sim.runner.final_state` rows: tank_id, hex, facing, turret_facing,
    status, rules_state, ...) as a JSON list, atomically; replays compare their last frame against it."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True, indent=1))
    os.replace(tmp, path)
    return path


# --- batch results folders -------------------------------------------------------------------------------------------
# A batch's output folder holds ``manifest.json`` and three part folders written only by the driver:
# ``runs/part-NNNNNN.parquet`` (one row per battle, :func:`run_schema`), and with ``--events``
# ``events/part-NNNNNN.parquet`` (``run_key`` + :data:`EVENT_SCHEMA`) and ``series/part-NNNNNN.parquet``
# (``run_key`` + the per-turn DataCollector columns).  A runs part is the commit point of its chunk: event and series
# parts without their runs part are leftovers of an interrupted write and are removed on resume.

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
    ("extra", pa.string()), ("worker", pa.string()), ("wall_s", pa.float64()),
)
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
    return int(path.stem.rsplit("-", 1)[-1])


def part_paths(out_dir: str | Path, kind: str = "runs") -> list[Path]:
    """The committed parts of one kind (``runs``, ``events``, ``series``), in write order."""
    return sorted((Path(out_dir) / kind).glob("part-*.parquet"), key=_seq)


def clean_partial(out_dir: str | Path) -> list[Path]:
    """Remove what an interrupted write left: ``*.tmp`` files and event/series parts whose runs part is missing.
    Returns the removed paths."""
    out = Path(out_dir)
    removed = [p for p in out.rglob("*.tmp")]
    committed = {_seq(p) for p in part_paths(out, "runs")}
    removed += [p for k in ("events", "series") for p in part_paths(out, k) if _seq(p) not in committed]
    for p in removed:
        p.unlink(missing_ok=True)
    return removed


def next_part_number(out_dir: str | Path) -> int:
    parts = part_paths(out_dir, "runs")
    return (_seq(parts[-1]) + 1) if parts else 1


def write_run_part(out_dir: str | Path, seq: int, rows: list[dict[str, Any]], schema: pa.Schema, *,
                   events: list[dict[str, Any]] | None = None, series: list[dict[str, Any]] | None = None,
                   before_commit: Any = None) -> Path:
    """Write one chunk's parts atomically: events and series first, then the runs part (the commit point).
    ``events`` / ``series`` rows carry ``run_key``.  ``before_commit`` (tests) is called between the temporary
    write and the rename of the runs part.  Returns the runs part's path."""
    out = Path(out_dir)
    name = f"part-{seq:06d}.parquet"
    if events:
        schema_e = pa.schema([("run_key", pa.string())] + list(zip(EVENT_SCHEMA.names, EVENT_SCHEMA.types)))
        write_table_atomic(pa.Table.from_pylist(events, schema=schema_e), out / "events" / name)
    if series:
        cols = list(dict.fromkeys(k for r in series for k in r))
        fields = [("run_key", pa.string())] + [(c, value_type([r.get(c) for r in series])) for c in cols
                                                if c != "run_key"]
        write_table_atomic(pa.Table.from_pylist(series, schema=pa.schema(fields)), out / "series" / name)
    path = out / "runs" / name
    write_table_atomic(pa.Table.from_pylist(rows, schema=schema), path, before_rename=before_commit)
    return path


def read_parts(out_dir: str | Path, kind: str = "runs") -> pd.DataFrame:
    """All committed parts of one kind as one DataFrame (nullable pandas integer dtypes; parts written under an
    earlier version of the experiment may lack factor columns, which are then missing values)."""
    tables = [pq.read_table(p) for p in part_paths(out_dir, kind)]
    if not tables:
        return pd.DataFrame({n: pd.Series(dtype="object") for n, _ in RUN_FIELDS}) if kind == "runs" \
            else pd.DataFrame()
    table = pa.concat_tables(tables, promote_options="permissive")
    return table.to_pandas(types_mapper=_PANDAS_INTS.get)


def stored_run_keys(out_dir: str | Path) -> set[str]:
    """The ``run_key`` of every committed run (reads that column only)."""
    keys: set[str] = set()
    for p in part_paths(out_dir, "runs"):
        keys.update(pq.read_table(p, columns=["run_key"]).column("run_key").to_pylist())
    return keys
