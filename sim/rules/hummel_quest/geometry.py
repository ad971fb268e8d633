"""Geometry golden cases of ``hummel_quest`` (docs/rules/hummel_quest.md §18): range, aspect,
visibility, flee and ram legality on a small board described in the case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.hexgrid import Hex, as_hex, aspect, distance
from sim.rules.base import CaseError, validation_problems
from sim.rules.hummel_quest.board import HexFlags, HQBoard, flags
from sim.rules.hummel_quest.odds import band_of
from sim.rules.hummel_quest.panic import flee_plan
from sim.rules.hummel_quest.ramming import ram_legal
from sim.rules.hummel_quest.sight import line_pair, sight
from sim.rules.hummel_quest.stats import HQOptions

# --- geometry golden cases (§18) ---------------------------------------------------------------------------------

def _case_board(g: Mapping[str, Any], tanks: Mapping[str, Hex]) -> HQBoard:
    bd = g.get("board") or {}
    from sim.hexgrid import hexagon_hexes
    cells = frozenset(hexagon_hexes(int(bd.get("radius", 10))))
    imp = {as_hex(h) for h in bd.get("impassable", [])}
    blk = {as_hex(h) for h in bd.get("blocks_los", [])}
    cov = {as_hex(h) for h in bd.get("hard_cover", [])}
    tall = {as_hex(h) for h in bd.get("tall", [])} if "tall" in bd else None
    where = {h: i for i, h in enumerate(tanks.values())}

    def fl(h: Hex) -> HexFlags:
        return flags(passable=h not in imp, blocks_los=h in blk, hard_cover=h in cov,
                     tall=None if tall is None else h in tall)

    return HQBoard(cells, fl, lambda h: where.get(h))


def geometry_case(g: Mapping[str, Any]) -> dict[str, Any]:
    """A §18 geometry case.  ``given`` may also hold §16 option names (e.g. ``los_rule``, ``band_edges``)."""
    from pydantic import ValidationError
    query = g.get("query")
    optnames = {k: v for k, v in g.items() if k in HQOptions.model_fields}
    try:
        o = HQOptions.model_validate(optnames)
    except ValidationError as exc:
        raise CaseError("bad option in geometry case: " + "; ".join(
            f"{p}: {m}" if p else m for p, m in validation_problems(exc, model=HQOptions))) from None
    hs = o.hex_size_m
    tanks_raw = list(g.get("tanks") or [])
    tanks = {str(t["id"]): as_hex(t["hex"]) for t in tanks_raw}
    tank_rec = {str(t["id"]): t for t in tanks_raw}
    if query == "range":
        d = distance(as_hex(g["shooter"]), as_hex(g["target"]))
        band = band_of(d * hs, o.band_edges)
        return {"range_hexes": d, "range_m": d * hs, "band": band.number, "band_tn": band.tn,
                "fp_needed": band.fp_needed}
    if query == "aspect":
        tgt = as_hex(g["target"])
        f = int(g["target_facing"])
        return {"aspect": {str(k): aspect(tgt, f, as_hex(v)).face for k, v in (g.get("shooters") or {}).items()}}
    if query == "visibility":
        board = _case_board(g, tanks)
        sg = sight(board, as_hex(g["shooter"]), as_hex(g["target"]), los_rule=o.los_rule,
                   tanks_give_cover=o.tanks_give_cover)
        la, lb = line_pair(as_hex(g["shooter"]), as_hex(g["target"]))
        if o.los_rule == "one_line":
            lb = la   # line A only (§7.5)
        # direct fire also needs range <= max_sight_m (§7.1; "LOS" of §7.5): the lines alone do not decide it
        in_sight = distance(as_hex(g["shooter"]), as_hex(g["target"])) * hs <= o.max_sight_m
        return {"visibility": sg.visibility, "half_cover": sg.half_cover,
                "direct_shot": bool(sg.direct_shot and in_sight),
                "line_a": [list(h) for h in la], "line_b": [list(h) for h in lb]}
    if query == "flee":
        board = _case_board(g, tanks)
        me = str(g["tank"])
        rec = tank_rec[me]
        enemies = [tanks[k] for k, t in tank_rec.items() if t.get("side") != rec.get("side")
                   and not t.get("incapacitated") and not t.get("fled")]
        plan = flee_plan(board, tanks[me], int(rec["speed_m"]) // hs, enemies,
                         leaves_map_at_edge=o.panic_leaves_map_at_edge)
        return {"sector_counts": list(plan.sector_counts), "direction": plan.direction,
                "aim_hex": None if plan.aim_hex is None else list(plan.aim_hex), "end_hex": list(plan.end_hex),
                "path": [list(h) for h in plan.path], "left_map": plan.left_map}
    if query == "ram_legal":
        board = _case_board(g, tanks)
        me = str(g["attacker"])
        rec = tank_rec[me]
        s = int(rec["speed_m"]) // hs
        ok = not rec.get("panicked") and not rec.get("incapacitated") and not rec.get("moved_hexes")
        return {"ram_legal": {k: bool(ok and ram_legal(board, tanks[me], tanks[k], s))
                              for k, t in tank_rec.items() if t.get("side") != rec.get("side")}}
    raise CaseError(f"unknown geometry query {query!r}; expected range, aspect, visibility, flee, ram_legal")
