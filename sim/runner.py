"""One battle, headless: ``(scenario, seed, policies) -> BattleResult``.

:class:`BattleResult` is the only thing that crosses process boundaries (batch, tournament): plain data with one
outcome row, the event log as rows (every roll included) and the per-turn series.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from sim.events import Status, to_json
from sim.hexgrid import HexMap
from sim.model import BattleModel
from sim.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class BattleResult:
    """Result of one battle.

    ``row``: one flat mapping (scenario, rule set, seed, winner, reason, turns, losses per side, shots, hits, kills,
    policies, the deciding shot); ``events``: list of log rows (``seq, turn, kind, data, rolls``); ``series``: per-turn
    rows from the DataCollector; ``final_state``: tank positions and statuses at the end (for replays and checks).
    """

    row: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    final_state: list[dict[str, Any]] = field(default_factory=list)

    def events_frame(self) -> pd.DataFrame:
        import pandas as pd  # not at module level: a battle never needs pandas (start-up cost, issue 14)
        return pd.DataFrame(self.events, columns=["seq", "turn", "kind", "data", "rolls"])

    def series_frame(self) -> pd.DataFrame:
        import pandas as pd
        return pd.DataFrame(self.series)


def log_rows(model: BattleModel) -> list[dict[str, Any]]:
    """The event log as plain rows; ``data`` and ``rolls`` are JSON strings."""
    return [{"seq": e.seq, "turn": e.turn, "kind": e.event.kind, "data": to_json(e.event.payload()),
             "rolls": to_json([[r.die, r.value, r.label] for r in e.rolls])} for e in model.battle.log]


def series_rows(model: BattleModel) -> list[dict[str, Any]]:
    """The DataCollector's model rows, one per collected turn (the records of ``get_model_vars_dataframe()``,
    built without pandas)."""
    cols = model.datacollector.model_vars
    return [dict(zip(cols, vals)) for vals in zip(*cols.values())]


def final_state(model: BattleModel) -> list[dict[str, Any]]:
    return [{"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
             "hex": None if t.hex is None else [t.hex.q, t.hex.r], "facing": t.facing,
             "turret_facing": t.turret_facing, "status": t.status,
             "rules_state": json.loads(to_json(t.rules_state))} for t in model.battle.tanks]


def deciding_shot(model: BattleModel) -> str:
    """A readable line for the last killing shot (the one that decided the battle), or ``""``."""
    b = model.battle
    for entry in reversed(b.log):
        e = entry.event
        if e.kind == "ShotResolved" and e.kill:
            s, t = b.tanks[e.shooter], b.tanks[e.target]
            d = dict(e.details)
            return (f"turn {entry.turn}: {s.label} ({s.vehicle_id}) -> {t.label} ({t.vehicle_id}) "
                    f"{d.get('face', '')} at range {d.get('range', '?')}: {e.result}")
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
               model_out: list | None = None, board: HexMap | None = None) -> BattleResult:
    """Play one battle to its end and return its :class:`BattleResult` (``model_out`` receives the model;
    ``board``: a pristine board of ``spec`` to reuse, see :func:`sim.model.build_battle`)."""
    t0 = time.perf_counter()
    model = BattleModel(spec, seed, policies, decision_timeout_s=decision_timeout_s, on_fault=on_fault, board=board)
    model.run()
    wall = time.perf_counter() - t0
    if model_out is not None:
        model_out.append(model)
    return BattleResult(summarise(model, wall), log_rows(model) if record_events else [], series_rows(model),
                        final_state(model))
