"""Replays: a stored battle's event log turned into board frames and an animated GIF (or MP4).

``tanksim replay RESULTS_DIR|EVENTS.parquet [--battle ID] --out battle.gif [--per activation|turn] [--fps N]``

A replay needs the event log **alone**: its first event, ``BattleStarted``, holds the map cells and terrain, the
sides, the tanks (vehicle, hex, facing, turret) and the objectives, so a battle replays without its scenario file.
The log's events are rebuilt with :func:`sim.events.event_from_payload` and applied with :func:`sim.events.apply`
(the same single writer the live battle uses) to a light :class:`~sim.battle.Battle` that has no rule set and no
dice.  The rule-set state a rule set sets up before the first event (e.g. Panzer Squadron's movement markers) comes
from ``BattleStarted``'s per-tank ``rules_state`` (logs written before it carried one start from empty state);
everything the battle changes afterwards (positions, facing, turrets, statuses, ``panicked`` / ``shocked``
markers) comes through events, so the last frame equals the final state stored at run time.

Frames: frame 0 is the set-up; then one frame per ``Activated`` event (``--per activation``, the default) or per
``TurnStarted`` event (``--per turn``), each showing the board after all events up to the next boundary, the moves
made in it as dotted trails, its shots as lines coloured by result (:data:`sim.render.RESULT_COLOURS`), wrecks,
markers, objective hexes and a turn counter in the title.  So ``len(frames) == 1 + number of boundary events`` and
the last frame's state is the battle's final state.

Inputs (tolerant on purpose; see :func:`read_event_rows`):

* a Parquet file of one battle's events (``tanksim run --out DIR`` writes ``DIR/events.parquet``);
* a folder holding ``events.parquet`` (one battle);
* a results folder (a batch's output, ``tanksim batch --events``: ``DIR/events/part-N.parquet`` with a
  ``run_key`` column) holding event parts below it: any ``*.parquet`` file whose schema has the event columns
  ``seq, turn, kind, data`` counts (those under ``events/`` first), and the battle is picked by the first id column
  found among :data:`ID_COLUMNS` (``battle_id``, ``run_key``, ``battle``), or by a Hive-style folder
  ``battle_id=ID``.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sim import render
from sim.battle import Battle, SideInfo, TankState
from sim.events import Event, apply, event_from_payload, to_json
from sim.hexgrid import Hex, HexMap

#: Columns an event table must have.
EVENT_COLUMNS = ("seq", "turn", "kind", "data")
#: Columns that name the battle in a multi-battle event table, in the order they are looked for.
ID_COLUMNS = ("battle_id", "run_key", "battle")
PER_CHOICES = {"activation": "Activated", "turn": "TurnStarted"}


class ReplayError(ValueError):
    """A replay input problem; the message names the file or folder and what was expected."""


# --- reading -------------------------------------------------------------------------------------------------------

def _event_files(folder: Path) -> list[Path]:
    """Parquet files below ``folder`` (its ``events/`` subfolder first, where a batch keeps them) whose schema has
    the event columns; files that are not Parquet at all are skipped."""
    files = []
    for base in ((folder / "events"), folder):
        for f in sorted(base.rglob("*.parquet")) if base.is_dir() else ():
            try:
                names = set(pq.read_schema(f).names)
            except (pa.ArrowInvalid, OSError):  # not a Parquet file after all: not an event table
                names = set()
            if set(EVENT_COLUMNS) <= names:
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


def _ids_in(path: Path, root: Path) -> tuple[str | None, list[str]]:
    """``(id column, ids)`` of one event table, reading the id column only (or the Hive folder name)."""
    hive = _hive_id(path, root) if root != path else None
    col = _id_column(pq.read_schema(path))
    if col is not None:
        return col, [str(x) for x in pq.read_table(path, columns=[col]).column(col).to_pylist()]
    if hive is not None:
        return hive[0], [hive[1]]
    return None, []


def _read_one(path: Path, root: Path, battle: str | None) -> pd.DataFrame:
    """One event table; with ``battle`` given, only that battle's rows are read (a pushed-down filter on the id
    column, so large batch parts are not loaded whole)."""
    hive = _hive_id(path, root) if root != path else None
    schema = pq.read_schema(path)
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
    df = pq.read_table(path, filters=filters).to_pandas()
    if hive and hive[0] not in df.columns:
        df[hive[0]] = hive[1]
    return df


def _sources(source: str | Path) -> tuple[Path, list[Path]]:
    src = Path(source)
    if not src.exists():
        raise ReplayError(f"{src}: no such file or folder (expected an events Parquet file or a results folder)")
    if src.is_file():
        try:
            names = set(pq.read_schema(src).names)
        except (pa.ArrowInvalid, OSError):
            names = set()
        if not set(EVENT_COLUMNS) <= names:
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
    the module docstring).  ``battle``: the battle id (compared as text) when the rows hold several battles; it is
    ignored for a single battle stored without an id column.  Returns a DataFrame with at least
    ``seq, turn, kind, data`` (``data`` a JSON string per row).  Raises :class:`ReplayError` for a missing path,
    no event table, an unknown id, several battles and no id, or a log that does not start with ``BattleStarted``.
    """
    root, files = _sources(source)
    ids = battle_ids(source)
    if battle is None and len(ids) > 1:
        raise ReplayError(f"{root}: holds {len(ids)} battles; pick one with --battle ID (e.g. {', '.join(ids[:5])})")
    if battle is not None and ids and str(battle) not in ids:
        raise ReplayError(f"{root}: no battle {str(battle)!r} ({len(ids)} battles, e.g. {', '.join(ids[:5])})")
    if not ids and len(files) > 1:
        raise ReplayError(f"{root}: several event tables but no battle id column ({', '.join(ID_COLUMNS)})")
    chosen = (str(battle) if battle is not None else ids[0]) if ids else None
    df = pd.concat([_read_one(f, root, chosen) for f in files], ignore_index=True)
    if chosen is not None:
        col = next(c for c in ID_COLUMNS if c in df.columns)
        df = df[df[col].astype(str) == chosen]
    df = df.sort_values("seq", kind="stable").reset_index(drop=True)
    if df.empty or df.loc[0, "kind"] != "BattleStarted":
        raise ReplayError(f"{root}: the event log{'' if chosen is None else f' of battle {chosen}'} does not start "
                          f"with a BattleStarted event (first kind: {'none' if df.empty else df.loc[0, 'kind']!r}); "
                          f"it cannot be replayed alone")
    return df, chosen


def events_of(rows: pd.DataFrame) -> list[tuple[int, Event]]:
    """``(turn, event)`` pairs rebuilt from event rows (``kind`` and JSON ``data`` columns).

    Raises :class:`ReplayError` naming the row for an unknown kind or unreadable data."""
    out = []
    for seq, turn, kind, data in zip(rows["seq"], rows["turn"], rows["kind"], rows["data"]):
        try:
            payload = json.loads(data) if isinstance(data, str) else dict(data)
            out.append((int(turn), event_from_payload(kind, payload)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayError(f"event row seq={seq} kind={kind!r}: cannot rebuild it ({exc})") from None
    return out


# --- the light board -----------------------------------------------------------------------------------------------

def board_from_setup(e: Any) -> Battle:
    """A :class:`Battle` in its set-up state from a ``BattleStarted`` event, with no rule set, options or dice:
    enough for :func:`sim.events.apply` and :func:`sim.render.picture_of`.  Raises :class:`ReplayError` if the
    event lacks the map cells or tanks."""
    m = dict(e.map)
    if not m.get("cells") or not e.tanks:
        raise ReplayError("BattleStarted event lacks map cells or tanks; the log cannot be replayed alone")
    terrain = {}
    for key, name in dict(m.get("terrain", {})).items():
        q, _, r = str(key).partition(",")
        terrain[(int(q), int(r))] = name
    hexmap = HexMap([tuple(c) for c in m["cells"]], terrain)
    tanks = []
    for t in sorted(e.tanks, key=lambda t: t["tank_id"]):
        tanks.append(TankState(
            tank_id=int(t["tank_id"]), label=t["label"], side=int(t["side"]), vehicle_id=t.get("vehicle", ""),
            vehicle=None, hex=None if t.get("hex") is None else Hex(*t["hex"]), facing=int(t["facing"]),
            turret_facing=t.get("turret_facing"), rules_state=dict(t.get("rules_state") or {})))
    sides = [SideInfo(s["name"], s.get("role", "none"), s.get("exit_edge")) for s in e.sides]
    b = Battle(hexmap, tanks, sides, None, None, objectives=[dict(o) for o in e.objectives],
               hex_size_m=int(m.get("hex_size_m") or 10))
    b.rules_state["ruleset"] = e.ruleset
    return b


def snapshot(b: Battle) -> list[dict[str, Any]]:
    """Tank positions and statuses, one mapping per tank in id order, in the format of
    :func:`sim.runner.final_state` (``hex`` ``[q, r]`` or ``None``, ``rules_state`` JSON-plain)."""
    return [{"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
             "hex": None if t.hex is None else [t.hex.q, t.hex.r], "facing": t.facing,
             "turret_facing": t.turret_facing, "status": t.status,
             "rules_state": json.loads(to_json(t.rules_state))} for t in b.tanks]


@dataclass
class Frame:
    """One replay frame: ``index`` (0 = set-up), the ``turn`` it belongs to, the number of activations so far,
    a one-line ``caption``, the :class:`~sim.render.BoardPicture` and the tank ``state`` (:func:`snapshot`)."""

    index: int
    turn: int
    activations: int
    caption: str
    picture: render.BoardPicture
    state: list[dict[str, Any]]


def frames(events: Sequence[tuple[int, Event]], per: str = "activation") -> list[Frame]:
    """Replay ``events`` (as from :func:`events_of`; the first must be ``BattleStarted``) into frames: the set-up
    frame plus one frame per ``Activated`` event (``per="activation"``) or per ``TurnStarted`` event
    (``per="turn"``), so ``len(result) == 1 + count of those events``.

    Per activation, a turn's opening events (``TurnStarted``, initiative) open the frame of its first activation,
    and events after a turn's last activation (end-of-turn bookkeeping, ``BattleEnded``) close the frame of that
    activation; a turn without any activation folds into its neighbours.  The last frame shows the final state.
    Raises :class:`ReplayError` for an unknown ``per`` or a log that does not start with ``BattleStarted``."""
    if per not in PER_CHOICES:
        raise ReplayError(f"--per {per!r}: expected one of {', '.join(PER_CHOICES)}")
    if not events or events[0][1].kind != "BattleStarted":
        raise ReplayError("the event log does not start with a BattleStarted event")
    b = board_from_setup(events[0][1])
    out: list[Frame] = []
    seg: dict[str, Any] = {"shots": [], "trails": {}, "what": "set-up", "has_act": False}
    state = {"turn": 0, "acts": 0, "end": ""}

    def close(replace_last: bool = False) -> None:
        if replace_last:
            seg["what"] = seg["prev_what"]
        moves = [(b.tanks[tid].side, path) for tid, path in sorted(seg["trails"].items())]
        caption = (f"turn {state['turn']}" + (f" · activation {state['acts']}" if state["acts"] else "")
                   + (f" · {seg['what']}" if seg["what"] else "") + (f" · {state['end']}" if state["end"] else ""))
        title = caption.replace(f" · {state['end']}", f"\n{state['end']}") if state["end"] else caption
        pic = render.picture_of(b, seg["shots"], title)
        pic.moves = moves
        if replace_last:
            prev = out.pop()
            pic.shots = prev.picture.shots + pic.shots
            pic.moves = prev.picture.moves + pic.moves
        out.append(Frame(len(out), state["turn"], state["acts"], caption, pic, snapshot(b)))
        seg.update(shots=[], trails={}, what="", has_act=False, prev_what=seg["what"])

    for turn, e in events[1:]:
        if per == "turn":
            new_frame = e.kind == "TurnStarted"
        else:
            new_frame = ((e.kind == "TurnStarted" and (not out or seg["has_act"]))
                         or (e.kind == "Activated" and (not out or seg["has_act"])))
        if new_frame:
            close()
        if e.kind == "TurnStarted":
            state["turn"] = e.turn
        elif e.kind == "Activated":
            state["acts"] += 1
            seg["has_act"] = True
            if per == "activation":
                seg["what"] = f"{b.tanks[e.tank].label} {e.mode}".strip()
        elif e.kind == "Moved":
            t = b.tanks[e.tank]
            trail = seg["trails"].setdefault(e.tank, [] if t.hex is None else [tuple(t.hex)])
            trail.append(tuple(e.hex))
        elif e.kind == "ShotResolved" and e.target is not None:
            a, t = b.tanks[e.shooter].hex, b.tanks[e.target].hex
            if a is not None and t is not None:
                seg["shots"].append((tuple(a), tuple(t), e.result))
        elif e.kind == "BattleEnded":
            winner = "draw" if e.winner is None else f"{b.sides[e.winner].name} win"
            state["end"] = f"{winner} ({e.reason})" if e.reason else winner
        apply(b, e)
        state["turn"] = max(state["turn"], turn)
    close(replace_last=per == "activation" and bool(out) and not seg["has_act"])
    return out


def replay(source: str | Path, battle: str | None = None, per: str = "activation") -> list[Frame]:
    """Frames of a stored battle: :func:`read_event_rows` + :func:`events_of` + :func:`frames`."""
    rows, _ = read_event_rows(source, battle)
    return frames(events_of(rows), per)


# --- writing -------------------------------------------------------------------------------------------------------

def write_animation(frs: Sequence[Frame], out: str | Path, *, fps: float = 2.0, size: float = 7.0,
                    dpi: int = 80) -> Path:
    """Write the frames as an animation: ``.gif`` with Pillow, ``.mp4`` with ffmpeg (when on ``PATH``).

    ``size`` is the figure edge in inches, ``dpi`` its resolution; one image per frame.  Raises
    :class:`ReplayError` for another suffix or an ``.mp4`` without ffmpeg."""
    from matplotlib import animation
    from matplotlib.figure import Figure

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix == ".gif":
        writer: Any = animation.PillowWriter(fps=fps)
    elif suffix == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise ReplayError(f"{out}: writing .mp4 needs ffmpeg on PATH; write a .gif instead")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise ReplayError(f"{out}: unsupported output {suffix or '(no suffix)'!r}; use .gif or .mp4")
    if not frs:
        raise ReplayError("no frames to write")
    out.parent.mkdir(parents=True, exist_ok=True)
    import matplotlib.pyplot as plt

    with plt.rc_context(render.STYLE):
        fig = Figure(figsize=(size, size), dpi=dpi)
        ax = fig.add_subplot()
        with writer.saving(fig, str(out), dpi):
            for fr in frs:
                ax.clear()
                render.draw_board(ax, fr.picture)
                render.side_legend(ax, fr.picture)
                fig.tight_layout()
                writer.grab_frame()
    return out


def main(argv: Iterable[str] | None = None) -> int:
    """``tanksim replay``: exit 0 on success, 2 for bad usage or input (message on stderr)."""
    p = argparse.ArgumentParser(prog="tanksim replay",
                                description="Turn a stored battle's event log into a GIF/MP4.")
    p.add_argument("source", help="events Parquet file, a 'tanksim run --out' folder, or a batch results folder")
    p.add_argument("--battle", help="battle id (battle_id / run_key column) when the source holds several battles")
    p.add_argument("--out", required=True, help="output animation: .gif (Pillow) or .mp4 (needs ffmpeg)")
    p.add_argument("--per", choices=sorted(PER_CHOICES), default="activation", help="one frame per activation or turn")
    p.add_argument("--fps", type=float, default=2.0, help="frames per second (default 2)")
    p.add_argument("--size", type=float, default=7.0, help="picture edge in inches (default 7)")
    p.add_argument("--dpi", type=int, default=80, help="resolution (default 80)")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.fps <= 0 or args.size <= 0 or args.dpi <= 0:
        print("tanksim replay: --fps, --size and --dpi must be positive", file=sys.stderr)
        return 2
    try:
        rows, bid = read_event_rows(args.source, args.battle)
        frs = frames(events_of(rows), args.per)
        path = write_animation(frs, args.out, fps=args.fps, size=args.size, dpi=args.dpi)
    except ReplayError as exc:
        print(f"tanksim replay: {exc}", file=sys.stderr)
        return 2
    last = frs[-1]
    print(f"replay{'' if bid is None else f' of battle {bid}'}: {len(frs)} frames (per {args.per}), "
          f"{last.turn} turns, {last.activations} activations -> {path}")
    print(f"  last frame: {last.caption}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
