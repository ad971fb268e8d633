"""Hummel Quest stat blocks and options: pydantic schemas, loading and validation.

Specification: ``docs/rules/hummel_quest.md`` §5 (stat block fields and load errors) and §16 (options).
Units: ``speed_m`` in metres per round, ``hex_size_m`` in metres per hex; Size, Dur, DT and OST are HQ scores.

The catalog is read from ``sim/rules/data/hummel_quest_vehicles.yaml`` (next to this module's package), never from
``../shared``.
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sim.rules.base import CatalogName, CatalogText, RulesOptions, VehicleError, validation_problems

#: Rule-set warnings go to tanksim's logging (shown with TANKSIM_LOG=warning; sim.logs).
log = logging.getLogger(__name__)

#: Project copy of the stat blocks (§5).
CATALOG_PATH = Path(__file__).resolve().parent.parent / "data" / "hummel_quest_vehicles.yaml"


#: Trust limits on stat-block numbers (§5 gives only lower bounds; these keep exact odds and pools small):
#: damage dice per hit, shots per burst, dice in a pool, weapons per tank, other scores, DT / OST / ram damage
#: points, speed in metres per round.
MAX_DICE = 20
MAX_BURST = 20
MAX_POOL = 30
MAX_WEAPONS = 20
MAX_SCORE = 100
MAX_POINTS = 1000
MAX_SPEED_M = 10_000
Score = Annotated[int, Field(ge=-MAX_SCORE, le=MAX_SCORE)]


class StatBlockError(VehicleError):
    """A Hummel Quest stat block breaks a §5 schema rule (message names the file, vehicle and field path;
    ``problems`` lists ``(field path, message)`` pairs)."""

    def __init__(self, message: str, problems: Sequence[tuple[str, str]] | None = None, vid: str | None = None):
        super().__init__(problems if problems is not None else [("", message)], vid)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DamageDice(_Strict):
    """Weapon Damage: roll ``dice`` d10 and keep the ``keep`` lowest (§5.2, §8.3)."""

    dice: int = Field(ge=1, le=MAX_DICE)
    keep: int = Field(ge=1, le=MAX_DICE)

    @model_validator(mode="after")
    def _keep_le_dice(self) -> DamageDice:
        if self.keep > self.dice:
            raise ValueError(f"keep {self.keep} > dice {self.dice}")
        return self


class Weapon(_Strict):
    """One weapon (§5.2).  ``size`` counts against the tank's Size; ``firepower`` must reach the band's Firepower
    needed (§7.3) and the target's effective Dur (§8.1); ``burst`` shots per attack; ``reload`` rounds to wait."""

    id: str
    name: str
    size: int = Field(ge=1, le=MAX_SCORE)
    firepower: int = Field(ge=0, le=MAX_SCORE)
    damage: DamageDice
    indirect: bool
    bunker_buster: bool
    burst: int = Field(ge=1, le=MAX_BURST)
    reload: int = Field(ge=0, le=MAX_SCORE)


class Abilities(_Strict):
    """HQ abilities (§5.1).  ``reality_com`` adds to the To Hit roll, ``reflexes`` to initiative, ``mentality`` is
    the panic-recovery pool, ``perception`` the sights-focus pool, ``human_com`` the intimidation pool; the rest are
    carried from the HQ sheet with no combat use in this version."""

    reality_com: Score
    human_com: int = Field(ge=0, le=MAX_POOL)
    digi_com: Score
    mechani_con: Score
    dexterity: Score
    mobility: Score
    perception: int = Field(ge=0, le=MAX_POOL)
    reflexes: Score
    strength: Score
    buffer: Score
    power: Score
    mentality: int = Field(ge=0, le=MAX_POOL)


class Derived(_Strict):
    """Derived HQ values, always given (§5.1): To Hit score, Interaction Pool (ram check dice), TN to be Struck,
    Damage from Strike (ram damage before reduction)."""

    to_hit: Score
    interaction_pool: int = Field(ge=0, le=MAX_POOL)
    tn_to_be_struck: int = Field(ge=1, le=MAX_SCORE)
    damage_from_strike: int = Field(ge=0, le=MAX_POINTS)


class Features(_Strict):
    """Features (§5.1): Artillery Sights rating 0..4 (0 = none, §7.6) and Reinforced Turret (§8.1).
    Unknown feature keys are load errors."""

    artillery_sights: int = Field(ge=0, le=4)
    reinforced_turret: bool


class Vehicle(_Strict):
    """One Hummel Quest tank stat block (§5.1).  Runtime state (DT now, OST now, ...) is not part of it."""

    id: CatalogName
    name: CatalogName
    origin: Literal["public_sheet", "project_example"]
    source: CatalogText
    assumed: tuple[CatalogName, ...] = Field(max_length=100)
    notes: CatalogText
    size: int = Field(ge=1, le=MAX_SCORE)
    dur: int = Field(ge=0, le=MAX_SCORE)
    dt: int = Field(ge=1, le=MAX_POINTS)
    ost: int = Field(ge=1, le=MAX_POINTS)
    speed_m: int = Field(ge=10, le=MAX_SPEED_M)
    abilities: Abilities
    derived: Derived
    features: Features
    weapons: tuple[Weapon, ...] = Field(max_length=MAX_WEAPONS)

    @model_validator(mode="after")
    def _weapon_budget(self) -> Vehicle:
        total = sum(w.size for w in self.weapons)
        if total > self.size:
            raise ValueError(f"weapon sizes add up to {total}, over the tank's Size {self.size}")
        ids = [w.id for w in self.weapons]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate weapon ids {ids}")
        return self

    def speed_hexes(self, hex_size_m: int) -> int:
        """Speed in hexes per round: ``floor(speed_m / hex_size_m)`` (§2)."""
        return self.speed_m // hex_size_m

    def weapon(self, wid: str) -> Weapon:
        for w in self.weapons:
            if w.id == wid:
                return w
        raise KeyError(f"{self.id} has no weapon {wid!r}")


def _path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


#: The ``origin`` of a scenario's own ``vehicles:`` block (the rule set's ``vehicle_from_record``).
SCENARIO_ORIGIN = "vehicles"


def vehicle_from_record(vid: str, record: Mapping[str, Any], *, origin: str = "<data>",
                        hex_size_m: int = 10) -> Vehicle:
    """One stat block (§5.1) from ``record``; its ``id`` defaults to ``vid`` and, when given, must equal it.

    Raises :class:`StatBlockError` (``problems`` name the field paths) for any §5 load error; warns (a log
    record) when ``speed_m`` is not a multiple of ``hex_size_m`` (§2) -- except for a scenario's own block
    (``origin`` :data:`SCENARIO_ORIGIN`), whose battle set-up warns the same for each tank using it, so that the
    one problem is said once."""
    if not isinstance(record, Mapping):
        raise StatBlockError(f"{origin}: vehicle {vid}: expected a mapping of stat-block fields",
                             [("", "expected a mapping of stat-block fields")], vid)
    if "id" in record and record["id"] != vid:
        msg = f"{str(record['id'])[:60]!r} differs from the vehicle's key {vid[:60]!r}"
        raise StatBlockError(f"{origin}: vehicle {vid}: id: {msg}", [("id", msg)], vid)
    try:
        v = Vehicle.model_validate({**record, "id": vid})
    except ValidationError as exc:
        problems = validation_problems(exc, model=Vehicle)
        msgs = "; ".join(f"{p or '<block>'}: {m}" for p, m in problems)
        raise StatBlockError(f"{origin}: vehicle {vid}: {msgs}", problems, vid) from None
    if v.speed_m % hex_size_m and origin != SCENARIO_ORIGIN:
        log.warning(f"{origin}: vehicle {v.id}: speed_m {v.speed_m} is not a multiple of hex_size_m "
                    f"{hex_size_m}; Speed in hexes rounds down")
    return v


def parse_vehicles(data: Mapping[str, Any], *, origin: str = "<data>", hex_size_m: int = 10) -> dict[str, Vehicle]:
    """Validate a decoded catalog (``{"vehicles": [...]}``) into ``{id: Vehicle}`` (§5).

    Raises :class:`StatBlockError` naming ``origin``, the vehicle and the field path for: weapon sizes over the
    tank's Size, keep > dice, an unknown ``features`` key, a sights rating outside 0..4, any missing field, and a
    duplicate vehicle id.  Warns (``UserWarning``) when a ``speed_m`` is not a multiple of ``hex_size_m`` (§2).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("vehicles"), list):
        raise StatBlockError(f"{origin}: expected a mapping with a list 'vehicles'")
    out: dict[str, Vehicle] = {}
    for i, raw in enumerate(data["vehicles"]):
        vid = raw.get("id", f"#{i}") if isinstance(raw, Mapping) else f"#{i}"
        if not isinstance(vid, str):
            raise StatBlockError(f"{origin}: vehicle #{i}: id: expected text")
        v = vehicle_from_record(vid, raw, origin=origin, hex_size_m=hex_size_m)
        if v.id in out:
            raise StatBlockError(f"{origin}: duplicate vehicle id {v.id!r}")
        out[v.id] = v
    return out


def load_vehicles(path: str | Path, *, hex_size_m: int = 10) -> dict[str, Vehicle]:
    """Load and validate a stat-block YAML file (§5); see :func:`parse_vehicles` for the errors raised."""
    p = Path(path)
    with p.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return parse_vehicles(data, origin=str(p), hex_size_m=hex_size_m)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Vehicle]:
    """The project's packaged catalog (``sim/rules/data/hummel_quest_vehicles.yaml``), loaded once."""
    return load_vehicles(CATALOG_PATH)


@lru_cache(maxsize=1)
def _document() -> Mapping[str, Any]:
    with CATALOG_PATH.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def catalog_records() -> dict[str, dict[str, Any]]:
    """The packaged stat blocks as the catalog file stores them, keyed by id, without ``id`` (fresh copies)."""
    return {str(r["id"]): copy.deepcopy({k: v for k, v in r.items() if k != "id"}) for r in _document()["vehicles"]}


# --- options (§16) ------------------------------------------------------------------------------------------------

class HQOptions(RulesOptions):
    """Hummel Quest options (scenario ``ruleset.options``), spec §16.  Unknown keys are errors.

    Options marked ``fixed`` in §16 accept only their default (the name is reserved).  Units: ``hex_size_m``,
    ``max_sight_m``, ``min_indirect_m``, ``intimidation_range_m`` in metres; ``max_rounds`` in rounds;
    ``*_dt`` thresholds in DT points; ``*_loss`` in OST points.
    """

    # Defaults are given as ``Field(default=...)``: type checkers read only the keyword as a field's default.
    hex_size_m: int = Field(default=10, ge=1)
    half_speed_rounding: Literal["ceil"] = "ceil"
    one_tank_per_hex: Literal[True] = True
    initiative_ties: Literal["reflexes_then_rolloff"] = "reflexes_then_rolloff"
    ambush_initiative_bonus: int = 2
    turn_order: Literal["move_then_attack"] = "move_then_attack"
    default_facing: Literal["keep_if_front"] = "keep_if_front"
    pool_ones_tens_rule: bool = False
    band_edges: Literal["lower_inclusive", "upper_inclusive"] = "lower_inclusive"
    max_sight_m: int = Field(default=3000, ge=0)
    tn_min: int = 3
    tn_clamp: Literal["sequential", "final"] = "sequential"
    fp_requirement_mode: Literal["cannot_fire", "no_damage"] = "cannot_fire"
    to_hit_naturals: bool = False
    burst_first_shot: Literal["shared_roll", "own_roll"] = "shared_roll"
    ambushed_reload: Literal["fired_round_1"] = "fired_round_1"
    los_rule: Literal["two_lines", "one_line"] = "two_lines"
    tanks_give_cover: bool = True
    sights_focus_tn: int = 6
    damage_application: Literal["sum_per_attack"] = "sum_per_attack"
    overkill_roll: Literal["per_attack", "per_damaging_hit"] = "per_attack"
    ost_hit_threshold_dt: int = 8
    ost_hit_loss: int = Field(default=1, ge=0)
    ost_witness_loss: int = Field(default=2, ge=0)
    ost_hit_timing: Literal["after_damage", "before_damage"] = "after_damage"
    ram_return_costs_ost: bool = False
    witness_requires_los: bool = True
    event_queue: Literal["fifo"] = "fifo"
    intimidation: bool = False
    intimidation_range_m: int = Field(default=400, ge=0)
    panic_check_tn: int = 6
    panic_check_successes: int = Field(default=1, ge=0)
    flee_algorithm: Literal["sectors"] = "sectors"
    flee_counts: Literal["all_active", "visible"] = "all_active"
    panic_leaves_map_at_edge: bool = True
    ram_tn_cap: int = 10
    ram_path: Literal["hex_line"] = "hex_line"
    ram_end_hex: Literal["before_target"] = "before_target"
    evade_default: Literal["farthest"] = "farthest"
    min_indirect_m: int = Field(default=100, ge=0)
    spotting: bool = True
    mixed_indirect_attack: Literal[False] = False
    structures_need_bunker_buster: bool = True
    structures_located: Literal[True] = True
    panicked_counts_as_out: bool = False
    max_rounds: int = Field(default=50, ge=1)
    #: Scenario set-up (§3: "it may name an ambushing side"): index (0, 1) of the ambushing side, or None.
    #: DECISION: named here, among the rule-set options, because the engine's scenario schema has no such field.
    ambushing_side: int | None = Field(default=None, ge=0, le=1)


#: The default options (shared, frozen).
DEFAULT_OPTIONS = HQOptions()
