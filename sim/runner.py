"""One battle, headless: ``(scenario, seed, policies) -> BattleResult``.

:class:`BattleResult` is the only thing that crosses process boundaries (batch, tournament): plain data with one
outcome row, the event log as rows (every roll included) and the per-turn series.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from sim.events import ShotResolved, Status, to_json
from sim.hexgrid import Hex

if TYPE_CHECKING:
    import pandas as pd

    from sim.hexgrid import HexMap
    from sim.model import BattleModel
    from sim.scenario import Scenario

# Start-up (issue 14): importing this module loads no third-party package.  The model (agents, Mesa and with it
# numpy), the scenario schema (pydantic, PyYAML) and the rules' base (pydantic) load where a function first needs
# them: a battle process pays for them once, when it builds its first battle, and a process that only reads
# results (a report, a tournament table) never does.  ``BattleModel`` stays importable from here (module
# ``__getattr__``).


def __getattr__(name: str) -> Any:
    if name == "BattleModel":
        from sim.model import BattleModel
        return BattleModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class BattleResult:
    """Result of one battle.

    ``row``: one flat mapping (scenario, rule set, seed, winner, reason, turns, losses per side, shots, hits, kills,
    policies, the deciding shot); ``events``: list of log rows (:func:`log_rows`); ``series``: per-turn rows from
    the DataCollector (:func:`series_rows`); ``final_state``: tank positions and statuses at the end (for replays
    and checks); the tidy tables, when asked for (``run_battle(..., tables=True)``): ``shots`` (:func:`shot_rows`),
    ``tanks`` (:func:`tank_rows`) and ``sides`` (:func:`side_rows`, the side-index lookup).
    """

    row: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    final_state: list[dict[str, Any]] = field(default_factory=list)
    shots: list[dict[str, Any]] = field(default_factory=list)
    tanks: list[dict[str, Any]] = field(default_factory=list)
    sides: list[dict[str, Any]] = field(default_factory=list)

    def events_frame(self) -> pd.DataFrame:
        import pandas as pd  # not at module level: a battle never needs pandas (start-up cost, issue 14)
        return pd.DataFrame(self.events, columns=["seq", "turn", "kind", "data", "rolls"])

    def series_frame(self) -> pd.DataFrame:
        import pandas as pd
        return pd.DataFrame(self.series)


#: Typed columns of a log row that only ``ShotResolved`` rows fill (``None`` elsewhere): the shot's details stay in
#: ``data`` too, but need no JSON parsing to filter or join.
SHOT_EVENT_COLUMNS = ("shooter", "target", "result", "hit", "kill")


#: Stand-ins for the set-up event's board block while the rest of its payload is written (:func:`_setup_json`);
#: their JSON text (``"\u0000cells\u0000"``) is then replaced by the block's own.
_CELLS, _TERRAIN = "\x00cells\x00", "\x00terrain\x00"


def _setup_json(ev: Any, block: Any) -> str | None:
    """``to_json(ev.payload())`` of the set-up event ``ev`` (a ``BattleStarted``), its board block written once per
    board: ``block`` is the model's :func:`sim.model.setup_board` ``(cells, terrain, json_slot)``, whose JSON is
    kept in ``json_slot`` for the next battle on that board (a 100 x 100 map's block holds 10^4 cells, and writing
    it through :func:`sim.events.to_json` costs more than a short battle).  The same text: the board block is a
    tuple of :class:`Hex` of two ``int`` and ``str`` -> ``str`` (checked), which ``json`` writes as the payload's
    conversion would (a :class:`Hex` as ``[q, r]``), and ``to_json`` sorts the keys at every level, so the block's
    text goes where its stand-in is.
    ``None`` (write it the plain way) when the event's block is not this one, or anything is not plain."""
    import json

    cells, terrain, slot = block
    mp = getattr(ev, "map", None)
    if not isinstance(mp, Mapping):
        return None
    got_cells, got_terrain = mp.get("cells"), mp.get("terrain")
    if not (got_cells is cells and type(got_terrain) is dict and got_terrain == terrain):
        return None
    if not slot:
        # a Hex is a tuple of two ints, which json writes as [q, r], as the payload's conversion does
        if not (type(cells) is tuple and all(type(c) is Hex and type(c.q) is int and type(c.r) is int for c in cells)
                and all(type(k) is str and type(v) is str for k, v in terrain.items())):
            return None
        slot.append((json.dumps(cells, separators=(",", ":")),
                     json.dumps(terrain, sort_keys=True, separators=(",", ":"))))
    cells_json, terrain_json = slot[0]
    payload = {f: getattr(ev, f) for f in ev.__dataclass_fields__ if f != "map"}
    payload["map"] = {**{k: v for k, v in mp.items() if k not in ("cells", "terrain")},
                      "cells": _CELLS, "terrain": _TERRAIN}
    text = to_json(payload)
    c, t = json.dumps(_CELLS), json.dumps(_TERRAIN)
    if text.count(c) != 1 or text.count(t) != 1:
        return None
    return text.replace(c, cells_json).replace(t, terrain_json)


def log_rows(model: BattleModel) -> list[dict[str, Any]]:
    """The event log as plain rows: ``seq``, ``turn``, ``kind``, ``data`` and ``rolls`` (JSON text: the event's
    payload, and ``[die, value, label]`` per roll), plus :data:`SHOT_EVENT_COLUMNS` (typed, ``ShotResolved`` rows
    only).  The set-up event's board block is written once per board (:func:`_setup_json`)."""
    rows = []
    block = getattr(model, "setup_board", None)
    for e in model.battle.log:
        ev = e.event
        data = _setup_json(ev, block) if block is not None and ev.kind == "BattleStarted" else None
        row: dict[str, Any] = {"seq": e.seq, "turn": e.turn, "kind": ev.kind,
                               "data": ev.payload_json() if data is None else data,
                               "rolls": to_json([[r.die, r.value, r.label] for r in e.rolls]) if e.rolls else "[]"}
        shot = ev.kind == "ShotResolved"
        for c in SHOT_EVENT_COLUMNS:
            row[c] = getattr(ev, c) if shot else None
        rows.append(row)
    return rows


def series_rows(model: BattleModel) -> list[dict[str, Any]]:
    """The DataCollector's model rows (one per collected turn, the set-up first) as plain dicts, missing values as
    ``None`` (not pandas' NaN)."""
    dc = model.datacollector
    names = list(dc.model_vars)
    n = len(dc.model_vars[names[0]]) if names else 0
    return [{k: dc.model_vars[k][i] for k in names} for i in range(n)]


def _face(details: Mapping[str, Any]) -> str | None:
    for k in ("face", "hull_face", "aspect"):
        v = details.get(k)
        if isinstance(v, str):
            return v
    return None


def shot_rows(model: BattleModel, *, odds: bool = True) -> list[dict[str, Any]]:
    """One row per shot (``ShotResolved``; Hummel Quest rams too, with ``attack`` = ``ram``), in log order.

    Columns (see ``docs/batch.md``): ``seq``, ``turn``, ``ruleset``; ``shooter`` / ``target`` (tank ids; target
    ``None`` for a structure), ``*_label``, ``*_side`` (0-based side index), ``*_vehicle``; ``shooter_q`` /
    ``shooter_r`` / ``shooter_facing`` and the target's (where they stood when the shot was resolved), ``range``
    (hexes, as the rule set measured it), ``range_m`` (``range`` x the scenario's ``hex_size_m``), ``face`` (the
    target's face struck as the rule set logged it: front / side / rear, ``None`` when no face applied, e.g. an
    ASL miss), ``attack`` (``fire`` or ``ram``), ``reaction``; ``p_hit`` / ``p_kill`` (exact fractions as text,
    :meth:`sim.rules.base.Ruleset.logged_odds` of the logged key) and ``p_hit_float`` / ``p_kill_float``;
    ``rolls`` (``[{die, value, label}]`` consumed by this event), ``hit``, ``kill``, ``result``; ``key`` and
    ``details`` (the rule set's odds primitives and figures, JSON text).

    ``odds=False`` leaves the probability columns ``None`` (a rule set without :meth:`logged_odds`).  Raises
    nothing for a shot whose odds cannot be rebuilt: its probability columns are ``None``."""
    from sim.rules.base import fraction_str

    b = model.battle
    places = {p["seq"]: p for p in model.shot_places}
    rs = b.ruleset
    out = []
    for entry in b.log:
        e = entry.event
        if not isinstance(e, ShotResolved):
            continue
        s = b.tanks[e.shooter]
        t = b.tanks[e.target] if e.target is not None else None
        d = dict(e.details)
        place = places.get(entry.seq, {})
        sh, th = place.get("shooter_hex"), place.get("target_hex")
        rng = d.get("range")
        p_hit = p_kill = None
        if odds:
            try:
                o = rs.logged_odds(json.loads(to_json(e.key)))
                p_hit, p_kill = o.p_hit, o.p_kill
            except (TypeError, ValueError, KeyError, NotImplementedError):
                pass
        out.append({
            "seq": entry.seq, "turn": entry.turn, "ruleset": rs.name,
            "shooter": e.shooter, "shooter_label": s.label, "shooter_side": s.side, "shooter_vehicle": s.vehicle_id,
            "target": e.target, "target_label": None if t is None else t.label,
            "target_side": None if t is None else t.side, "target_vehicle": None if t is None else t.vehicle_id,
            "shooter_q": None if sh is None else sh.q, "shooter_r": None if sh is None else sh.r,
            "shooter_facing": place.get("shooter_facing"),
            "target_q": None if th is None else th.q, "target_r": None if th is None else th.r,
            "target_facing": place.get("target_facing"),
            "range": rng if isinstance(rng, int) and not isinstance(rng, bool) else None,
            "range_m": rng * b.hex_size_m if isinstance(rng, int) and not isinstance(rng, bool) else None,
            "face": _face(d), "attack": "ram" if d.get("attack") == "ram" else "fire", "reaction": bool(e.reaction),
            "p_hit": None if p_hit is None else fraction_str(p_hit),
            "p_kill": None if p_kill is None else fraction_str(p_kill),
            "p_hit_float": None if p_hit is None else float(p_hit),
            "p_kill_float": None if p_kill is None else float(p_kill),
            "rolls": [{"die": r.die, "value": r.value, "label": r.label} for r in entry.rolls],
            "hit": bool(e.hit), "kill": bool(e.kill), "result": e.result,
            "key": to_json(e.key), "details": to_json(d),
        })
    return out


def tank_rows(model: BattleModel) -> list[dict[str, Any]]:
    """One row per tank per collected turn (the set-up row first), from the DataCollector's agent reporters:
    ``turn``, ``tank_id``, ``label``, ``side`` (0-based), ``vehicle``, ``q`` / ``r`` (``None`` off the board),
    ``facing``, ``turret_facing``, ``status``, ``shots`` / ``hits`` / ``kills`` (the tank's own so far) and
    ``rules_state`` (JSON text: DT / OST, marker, acquisition, ...); extra agent reporters of an experiment's
    ``collect:`` follow as their own columns."""
    dc = model.datacollector
    fixed = {"turn", "tank_id", "label", "side", "vehicle", "hex", "facing", "turret_facing", "status",
             "tank_shots", "tank_hits", "tank_kills", "rules_state"}
    extra = [k for k in model.extra_agent_columns if k in dc.agent_reporters]
    names = list(dc.agent_reporters)
    out = []
    for _time, records in sorted(dc._agent_records.items()):
        for rec in records:
            v = dict(zip(names, rec[2:]))
            h = v.get("hex")
            row = {"turn": v["turn"], "tank_id": v["tank_id"], "label": v["label"], "side": v["side"],
                   "vehicle": v["vehicle"], "q": None if h is None else h[0], "r": None if h is None else h[1],
                   "facing": v["facing"], "turret_facing": v["turret_facing"], "status": v["status"],
                   "shots": v["tank_shots"], "hits": v["tank_hits"], "kills": v["tank_kills"],
                   "rules_state": to_json(v["rules_state"])}
            for k in extra:
                if k not in fixed:
                    row[k] = v[k]
            out.append(row)
    return out


def side_rows(model: BattleModel) -> list[dict[str, Any]]:
    """The side lookup of per-side columns: ``side`` (0-based index, as in ``tanks.side`` and ``shots.*_side``),
    ``column`` (the 1-based suffix of ``alive_1`` / ``points_1`` / ``side1_*``), ``name``, ``role``, ``tanks``."""
    b = model.battle
    return [{"side": si, "column": si + 1, "name": s.name, "role": s.role,
             "tanks": sum(1 for t in b.tanks if t.side == si)} for si, s in enumerate(b.sides)]


def final_state(model: BattleModel) -> list[dict[str, Any]]:
    return [{"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
             "hex": None if t.hex is None else [t.hex.q, t.hex.r], "facing": t.facing,
             "turret_facing": t.turret_facing, "status": t.status,
             "rules_state": json.loads(to_json(t.rules_state))} for t in model.battle.tanks]


def deciding_shot(model: BattleModel) -> str:
    """A readable line for the last killing shot (the one that decided the battle), or ``""``: who fired at whom,
    the face and range, the shot's result in the rule set's words and, where that word is not itself the loss
    (Hummel Quest's ``hit``, whose damage put the target out), what became of the target (its next
    ``StatusChanged``: ``hit -> incapacitated``)."""
    from sim.events import StatusChanged

    b = model.battle
    log = b.log
    for i in range(len(log) - 1, -1, -1):
        entry = log[i]
        e = entry.event
        if isinstance(e, ShotResolved) and e.kill and e.target is not None:
            s, t = b.tanks[e.shooter], b.tanks[e.target]
            d = dict(e.details)
            then = next((x.event for x in log[i + 1:] if isinstance(x.event, StatusChanged)
                         and x.event.tank == e.target), None)
            tail = "" if then is None or e.result in (then.reason, then.status) else f" -> {then.status}"
            return (f"turn {entry.turn}: {s.label} ({s.vehicle_id}) -> {t.label} ({t.vehicle_id}) "
                    f"{d.get('face', '')} at range {d.get('range', '?')}: {e.result}{tail}")
    return ""


def summarise(model: BattleModel, wall_s: float = 0.0) -> dict[str, Any]:
    b = model.battle
    out = model.outcome
    row: dict[str, Any] = {
        "scenario": model.spec.name, "ruleset": b.ruleset.name, "seed": model.seed,
        "winner": None if out is None or out.winner is None else b.sides[out.winner].name,
        "winner_index": -1 if out is None or out.winner is None else out.winner,
        "reason": "" if out is None else out.reason, "turns": b.turn, "decisions": model.decisions,
        "shots": model._counts["shots"], "hits": model._counts["hits"], "kills": model._counts["kills"],
        "deciding_shot": deciding_shot(model),
        "points": to_json(list(out.points) if out else []),
        "policies": to_json(model.resolved_policies), "scenario_hash": model.spec.digest(),
        "faults": sum(1 for e in b.log if e.event.kind == "PolicyFault"), "wall_s": wall_s,
    }
    for si, s in enumerate(b.sides):
        tanks = [t for t in b.tanks if t.side == si]
        row[f"side{si + 1}_name"] = s.name
        row[f"side{si + 1}_tanks"] = len(tanks)
        row[f"side{si + 1}_lost"] = sum(t.status in Status.LOST for t in tanks)
        row[f"side{si + 1}_alive"] = sum(t.alive and t.hex is not None for t in tanks)
    return row


def run_battle(spec: Scenario, seed: int = 0, policies: Mapping[int, Any] | None = None, *,
               record_events: bool = True, decision_timeout_s: float | None = None, on_fault: str | None = None,
               model_out: list | None = None, tables: bool = False,
               collect: Mapping[str, Mapping[str, str]] | None = None, board: HexMap | None = None
               ) -> BattleResult:
    """Play one battle to its end and return its :class:`BattleResult` (``model_out`` receives the model;
    ``tables``: also the shots, tanks and sides tables; ``collect``: extra reporters, see :mod:`agents.collect`;
    ``board``: a pristine board of ``spec`` to reuse, see :func:`sim.model.build_battle`)."""
    from sim.model import BattleModel

    t0 = time.perf_counter()
    model = BattleModel(spec, seed, policies, decision_timeout_s=decision_timeout_s, on_fault=on_fault,
                        collect=collect, board=board)
    model.run()
    wall = time.perf_counter() - t0
    if model_out is not None:
        model_out.append(model)
    return result_of(model, wall, record_events=record_events, tables=tables)


def result_of(model: BattleModel, wall_s: float = 0.0, *, record_events: bool = True, tables: bool = False
              ) -> BattleResult:
    """The :class:`BattleResult` of a finished (or stopped) model."""
    return BattleResult(summarise(model, wall_s), log_rows(model) if record_events else [], series_rows(model),
                        final_state(model), shot_rows(model) if tables else [], tank_rows(model) if tables else [],
                        side_rows(model) if tables else [])


def losses_by_cause(log: Sequence[Any], tanks: Sequence[Any]) -> list[dict[str, int]]:
    """How each side's lost tanks were lost: per side (in side order) ``{reason: tanks}`` in order of first loss,
    from the reason of each lost tank's last ``StatusChanged`` event (the rule set's words: a shot's result such as
    ``KIA`` or ``destroyed``, ``unconfirmed kill`` (ASL C7.4 after possible shock), ``fled off the map``,
    ``withdrawn``).  ``log``: the battle's log entries; ``tanks``: its tank states (``tank_id``, ``side``,
    ``status``).  A shot's kill is counted in the run's ``kills``; a tank lost any other way is only here."""
    from sim.events import StatusChanged

    last: dict[int, str] = {}
    for entry in log:
        e = entry.event
        if isinstance(e, StatusChanged):
            last[e.tank] = e.reason or e.status
    sides = max((t.side for t in tanks), default=-1) + 1
    out: list[dict[str, int]] = [{} for _ in range(sides)]
    for t in sorted(tanks, key=lambda t: t.tank_id):
        if t.status in Status.LOST:
            why = last.get(t.tank_id, t.status)
            out[t.side][why] = out[t.side].get(why, 0) + 1
    return out
