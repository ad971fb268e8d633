"""Writing results to Parquet: one battle's files, atomically (temp file + rename).

``write_battle(result, out_dir)`` writes ``battle.parquet`` (one row: seed, resolved parameters, outcome),
``events.parquet`` (the event log, every roll included) and ``series.parquet`` (per-turn DataCollector rows).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

EVENT_SCHEMA = pa.schema([("seq", pa.int64()), ("turn", pa.int64()), ("kind", pa.string()), ("data", pa.string()),
                          ("rolls", pa.string())])


def write_table_atomic(table: pa.Table, path: str | Path) -> None:
    """Write ``table`` to ``path`` through a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
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
    return paths
