"""Panzer Squadron data: vehicle cards and Tiles (docs/rules/panzer_squadron.md sections 2 and 12).

The catalog is ``sim/rules/data/panzer_squadron_vehicles.yaml`` (copied from the project's shared data): each number
is stored as ``{value, derived, basis}``; only two are printed game values.  :class:`Vehicle` keeps the names of the
derived fields so outputs can flag them.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from sim.messages import did_you_mean
from sim.rules.base import CatalogName, CatalogText, VehicleError, validation_problems

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


class _Card(BaseModel):
    """One card number as the catalog stores it: ``value`` (an integer), ``derived`` (not printed by the game) and
    the ``basis`` of a derived value.  A plain integer stands for ``{value: N}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: StrictInt
    derived: StrictBool = False
    basis: CatalogText = ""


class _Penetration(_Card):
    value: Annotated[StrictInt, Field(ge=0, le=1000)]


class _Armour(_Card):
    value: Annotated[StrictInt, Field(ge=0, le=1000)]


class _MovementRestriction(_Card):
    value: Annotated[StrictInt, Field(ge=0, le=10)]


def _card(v: Any) -> Any:
    return v if isinstance(v, Mapping) else {"value": v}


class _ArmourRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    front: _Armour
    side: _Armour
    rear: _Armour

    _c = field_validator("front", "side", "rear", mode="before")(_card)


class VehicleRecord(BaseModel):
    """The schema of one vehicle card (panzer_squadron.md section 2), as the catalog file and a scenario's
    ``vehicles:`` block write it.  Numbers are integers or ``{value, derived, basis}``; ranges (trust limits, not
    game rules): ``penetration`` and each ``armour`` face 0..1000, ``movement_restriction`` 0..10 (subtracted from
    the movement roll).  Unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: CatalogName | None = None
    name: CatalogName | None = None
    turret: StrictBool = True
    penetration: _Penetration
    armour: _ArmourRecord
    movement_restriction: _MovementRestriction

    _c = field_validator("penetration", "movement_restriction", mode="before")(_card)


def vehicle_from_record(vid: str, record: Mapping[str, Any]) -> Vehicle:
    """One :class:`Vehicle` from a record in the card schema (:class:`VehicleRecord`).  A record's ``id``, when
    given, must be ``vid``.  Raises :class:`~sim.rules.base.VehicleError` naming each bad field."""
    if not isinstance(record, Mapping):
        raise VehicleError([("", f"expected a mapping of card fields, got {type(record).__name__}")], vid)
    try:
        rec = VehicleRecord.model_validate(record)
    except ValidationError as exc:
        raise VehicleError(validation_problems(exc, model=VehicleRecord), vid) from None
    if rec.id is not None and rec.id != vid:
        raise VehicleError([("id", f"{rec.id[:60]!r} differs from the vehicle's key {vid[:60]!r}")], vid)
    derived = {path for path, card in (("penetration", rec.penetration), ("movement_restriction",
                                                                         rec.movement_restriction),
                                       *((f"armour.{f}", getattr(rec.armour, f)) for f in FACES)) if card.derived}
    return Vehicle(id=vid, name=rec.name or vid, turret=rec.turret, penetration=rec.penetration.value,
                   armour={f: getattr(rec.armour, f).value for f in FACES},
                   movement_restriction=rec.movement_restriction.value, derived=frozenset(derived))


def parse_catalog(doc: Mapping[str, Any]) -> dict[str, Vehicle]:
    """Vehicles of a catalog document (``{vehicles: [{id, ...}, ...]}``), keyed by id, each checked by
    :func:`vehicle_from_record`.  Raises :class:`~sim.rules.base.VehicleError` on a malformed record, ``KeyError``
    on a record without ``id``."""
    out: dict[str, Vehicle] = {}
    for rec in doc["vehicles"]:
        v = vehicle_from_record(str(rec["id"]), rec)
        out[v.id] = v
    return out


@lru_cache(maxsize=1)
def _document() -> Mapping[str, Any]:
    text = resources.files("sim.rules.data").joinpath("panzer_squadron_vehicles.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Vehicle]:
    """The packaged catalog (cached)."""
    return parse_catalog(_document())


def catalog_records() -> dict[str, dict[str, Any]]:
    """The packaged cards as the catalog file stores them, keyed by id, without ``id`` (fresh copies)."""
    return {str(r["id"]): copy.deepcopy({k: v for k, v in r.items() if k != "id"}) for r in _document()["vehicles"]}


def find_vehicle(key: str) -> Vehicle:
    """A vehicle by catalog ``id`` or by ``name`` (case-insensitive).  Raises ``KeyError`` naming the known ids."""
    cat = catalog()
    if key in cat:
        return cat[key]
    low = str(key).strip().lower()
    for v in cat.values():
        if v.name.lower() == low or v.id.lower() == low:
            return v
    raise KeyError(f"unknown Panzer Squadron vehicle {key!r}{did_you_mean(key, cat)}; known: {', '.join(cat)}")


class Tile(BaseModel):
    """A Tile type (D17): movement cost, blocking, and the modifiers to shots at / by a tank standing in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    move_cost: int = Field(default=1, ge=1)
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
