"""Panzer Squadron data: vehicle cards and Tiles (docs/rules/panzer_squadron.md sections 2 and 12).

The catalog is ``sim/rules/data/panzer_squadron_vehicles.yaml`` (copied from the project's shared data): each number
is stored as ``{value, derived, basis}``; only two are printed game values.  :class:`Vehicle` keeps the names of the
derived fields so outputs can flag them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field

FACES = ("front", "side", "rear")


@dataclass(frozen=True)
class Vehicle:
    """A Panzer Squadron card: ``penetration``, ``armour`` per face, ``movement_restriction`` (subtracted from the
    movement roll), ``turret`` (False for self-propelled guns).  ``derived`` lists fields not printed by the game."""

    id: str
    name: str
    turret: bool
    penetration: int
    armour: Mapping[str, int]
    movement_restriction: int
    derived: frozenset[str]


def _value(node: Any, path: str, derived: set[str]) -> int:
    if isinstance(node, Mapping):
        if node.get("derived", False):
            derived.add(path)
        return int(node["value"])
    return int(node)


def parse_catalog(doc: Mapping[str, Any]) -> dict[str, Vehicle]:
    """Vehicles of a catalog document, keyed by id.  Raises ``KeyError``/``ValueError`` on a malformed record."""
    out: dict[str, Vehicle] = {}
    for rec in doc["vehicles"]:
        derived: set[str] = set()
        armour = {f: _value(rec["armour"][f], f"armour.{f}", derived) for f in FACES}
        v = Vehicle(
            id=str(rec["id"]), name=str(rec.get("name", rec["id"])), turret=bool(rec.get("turret", True)),
            penetration=_value(rec["penetration"], "penetration", derived), armour=armour,
            movement_restriction=_value(rec["movement_restriction"], "movement_restriction", derived),
            derived=frozenset(derived))
        out[v.id] = v
    return out


@lru_cache(maxsize=1)
def catalog() -> dict[str, Vehicle]:
    """The packaged catalog (cached)."""
    text = resources.files("sim.rules.data").joinpath("panzer_squadron_vehicles.yaml").read_text(encoding="utf-8")
    return parse_catalog(yaml.safe_load(text))


def find_vehicle(key: str) -> Vehicle:
    """A vehicle by catalog ``id`` or by ``name`` (case-insensitive).  Raises ``KeyError`` naming the known ids."""
    cat = catalog()
    if key in cat:
        return cat[key]
    low = str(key).strip().lower()
    for v in cat.values():
        if v.name.lower() == low or v.id.lower() == low:
            return v
    raise KeyError(f"unknown Panzer Squadron vehicle {key!r}; known: {', '.join(cat)}")


class Tile(BaseModel):
    """A Tile type (D17): movement cost, blocking, and the modifiers to shots at / by a tank standing in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    move_cost: int = Field(1, ge=1)
    blocks_move: bool = False
    blocks_los: bool = False
    target_modifier: int = 0
    firer_modifier: int = 0


#: The project's default Tile set (panzer_squadron.md section 12; not the game's numbers).
DEFAULT_TILES: dict[str, Tile] = {
    "open": Tile(),
    "woods": Tile(move_cost=2, blocks_los=True, target_modifier=-1),
    "rubble": Tile(move_cost=2, target_modifier=-1),
    "building": Tile(move_cost=1, blocks_move=True, blocks_los=True),
    "water": Tile(move_cost=1, blocks_move=True),
}
