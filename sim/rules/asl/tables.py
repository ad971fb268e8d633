"""ASL chart data as typed tables, and the AFV catalog (asl.md section 3).

Every chart number comes from ``sim/rules/data/asl_ordnance.yaml`` (a copy of the verified shared table); this
module only indexes it.  Nothing here rolls dice or decides a ruling beyond a table look-up.

* To Hit: Basic TH# by colour and range band (C3 Vehicle Target Type row) and the C4 Basic TH# modifications.
* To Kill: the Basic TK# tables of C7.31 (AP), C7.32 (APCR/APDS), C7.33 (HEAT), C7.34 (HE), the Case D range
  change of C7.24 and the AF scale of C7.11.
* ``sim_terrain`` (MP, TEM, LOS, Bog DRM) and ``sim_vehicles`` (the catalog, section 3.2).

Units: ranges in hexes, calibres in mm, MP in whole MP (the movement code counts half MPs).
"""
from __future__ import annotations

import copy
import logging
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any, Literal, Mapping, Sequence

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from sim.messages import printable_name, printable_text
from sim.rules.base import CatalogName, CatalogText, VehicleError, validation_problems

log = logging.getLogger(__name__)

AMMO_TYPES = ("AP", "APCR", "APDS", "HEAT", "HE")
TURRET_TYPES = ("T", "ST", "RST", "1MT", "NT")
SIZES = ("very_large", "large", "average", "small", "very_small")
GROUND_PRESSURES = ("low", "normal", "high")
COLOURS = ("black", "red")
#: German tapered-bore guns: AP-type fire always on the APCR/APDS rows with no Depletion Number (C4.3, C7.32).
#: DECISION (asl.md 6.2 names "the German 28LL/40LL"; the data holds no other): the designation decides, so a
#: 28LL/40LL takes these rows whatever the ``nationality`` parameter says.
TAPERED_BORE = ("28LL", "40LL")


class TableError(LookupError):
    """A table look-up has no entry (unknown gun, no such ammunition for it, range outside every band)."""


#: The safe YAML loader of the bundled tables: libyaml's (``CSafeLoader``) where PyYAML has it, else the pure-Python
#: ``SafeLoader``.  Both build the same Python values with the same safe constructors (no tags that run code); the
#: C parser reads the file many times faster (issue 14: the pure-Python parse was about 5 % of the
#: instructions of a whole ASL benchmark process).  ``tests/test_asl_rules.py`` checks the two agree on the file.
SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def data_text() -> str:
    """The text of ``asl_ordnance.yaml`` (package data ``sim.rules.data``)."""
    return resources.files("sim.rules.data").joinpath("asl_ordnance.yaml").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def raw_data() -> Mapping[str, Any]:
    """The parsed ``asl_ordnance.yaml`` (package data ``sim.rules.data``), read with :data:`SAFE_LOADER` (the same
    values as ``yaml.safe_load``)."""
    return yaml.load(data_text(), Loader=SAFE_LOADER)   # (a safe loader: CSafeLoader or SafeLoader)


# --- range bands --------------------------------------------------------------------------------------------

def _band_bounds(label: str) -> tuple[int, int | None]:
    """``"3-6"`` -> (3, 6); ``"2"`` -> (2, 2); ``"79+"`` -> (79, None); ``">54"`` -> (55, None)."""
    label = str(label).strip()
    if label.startswith(">"):
        return int(label[1:]) + 1, None
    if label.endswith("+"):
        return int(label[:-1]), None
    if "-" in label:
        lo, hi = label.split("-")
        return int(lo), int(hi)
    return int(label), int(label)


def band_index(bands: tuple[str, ...], range_hexes: int) -> int:
    """Index of the band holding ``range_hexes`` (hexes, >= 0) in a chart's band labels."""
    for i, label in enumerate(bands):
        lo, hi = _band_bounds(label)
        if range_hexes >= lo and (hi is None or range_hexes <= hi):
            return i
    raise TableError(f"range {range_hexes} hexes is outside the bands {bands}")


# --- gun designations ---------------------------------------------------------------------------------------

_GUN_RE = re.compile(r"^(?P<cal>\d+(?:\.\d+)?)(?P<suffix>\*|LL|L|)$")


@dataclass(frozen=True)
class Gun:
    """A main-armament designation (C2.2): calibre in mm and barrel suffix ``""``, ``"*"``, ``"L"`` or ``"LL"``.

    ``qualifier`` is the part after ``/`` of a colour-coded listing named directly (e.g. ``75/us-grant``);
    ``size`` is the designation without it (``"75"``).
    """

    designation: str
    calibre: Fraction
    suffix: str
    qualifier: str | None = None

    @property
    def size(self) -> str:
        return self.designation.split("/", 1)[0]

    @property
    def calibre_key(self) -> str:
        """Calibre as written in the HEAT table (``"75"``)."""
        c = self.calibre
        return str(c.numerator) if c.denominator == 1 else str(float(c))


def parse_gun(designation: str) -> Gun:
    """Parse ``"50"``, ``"75*"``, ``"76L"``, ``"57LL"``, ``"75/us-grant"``; raises ``ValueError`` otherwise."""
    text = str(designation).strip()
    size, _, qual = text.partition("/")
    m = _GUN_RE.match(size)
    if not m:
        raise ValueError(f"gun designation {designation!r} is not calibre + suffix ('', '*', 'L', 'LL')")
    return Gun(text, Fraction(m.group("cal")), m.group("suffix"), qual or None)


# --- To Hit (C3, C4) ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ToHitTables:
    """C3 Vehicle Target Type row (``black``/``red``), the C4 modification rows and Case P (target size)."""

    bands: tuple[str, ...]
    black: tuple[int, ...]
    red: tuple[int, ...]
    mods: Mapping[str, tuple[int, ...]]
    size_drm: Mapping[str, int]

    def basic_th(self, colour: str, range_hexes: int) -> int:
        """Basic TH# (C3 Vehicle Target Type) for ``colour`` at ``range_hexes`` (range 0 uses the 0-6 band)."""
        row = self.black if colour == "black" else self.red
        return row[band_index(self.bands, range_hexes)]

    def modification(self, gun: Gun, ammo: str, range_hexes: int) -> int:
        """Sum of the C4 Basic TH# modifications that apply (C4.1-C4.5; asl.md 6.2)."""
        i = band_index(self.bands, range_hexes)
        total = 0
        if gun.suffix == "*":
            total += self.mods["star_short_barrel"][i]
        elif gun.suffix == "L":
            total += self.mods["L"][i]
        elif gun.suffix == "LL":
            total += self.mods["LL"][i]
        if ammo in ("APCR", "APDS") or gun.size in TAPERED_BORE:
            total += self.mods["apcr_apds"][i]
        if gun.calibre <= 57:
            total += self.mods["le_57mm"][i]
        if gun.calibre <= 40:
            total += self.mods["le_40mm_additional"][i]
        return total


@lru_cache(maxsize=1)
def to_hit_tables() -> ToHitTables:
    """The C3/C4 tables from the data file."""
    th = raw_data()["to_hit"]
    mods = th["basic_th_modifications"]
    return ToHitTables(
        bands=tuple(th["range_bands"]),
        black=tuple(th["vehicle"]["black"]),
        red=tuple(th["vehicle"]["red"]),
        mods={k: tuple(mods[k]) for k in ("star_short_barrel", "L", "LL", "apcr_apds", "le_57mm",
                                         "le_40mm_additional")},
        size_drm={k: int(th["target_size_drm"][k]) for k in SIZES},
    )


# --- To Kill (C7.2-C7.34) ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TkEntry:
    """One Basic TK# listing: table ``key`` (e.g. ``"76L/russian-japanese"``), ``tk`` and ``applies_to``."""

    key: str
    tk: int
    applies_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToKillTables:
    """Basic TK# tables per ammunition family, HE bands, Case D rows and the AF scale."""

    ap: Mapping[str, TkEntry]
    apcr_apds: Mapping[str, TkEntry]
    heat: Mapping[str, TkEntry]
    he_bands: tuple[tuple[int, int], ...]          # (band lower calibre N of "N+", armored Basic TK#), ascending
    case_d_ap_bands: tuple[str, ...]
    case_d_ap: Mapping[str, tuple[int | None, ...]]
    case_d_apcr_bands: tuple[str, ...]
    case_d_apcr: Mapping[str, tuple[int | None, ...]]
    af_scale: tuple[int, ...]

    @staticmethod
    def _pick(table: Mapping[str, TkEntry], size: str, qualifier: str | None, nationality: str | None,
              what: str) -> TkEntry:
        if qualifier is not None:
            key = f"{size}/{qualifier}"
            if key not in table:
                raise TableError(f"no {what} listing {key!r}")
            return table[key]
        if nationality:
            for key, e in table.items():
                if key.split("/", 1)[0] == size and "/" in key and nationality in e.applies_to:
                    return e
        if size in table:
            return table[size]
        raise TableError(f"no {what} listing for gun {size!r}")

    def basic_tk(self, gun: Gun, ammo: str, nationality: str | None = None) -> int:
        """Basic TK# of ``gun`` firing ``ammo`` (asl.md 10.1 ``nationality`` rule; C7.31-C7.34).

        AP of a German tapered-bore gun (28LL, 40LL) reads the APCR/APDS table (C7.32).  APDS reads key ``D`` +
        gun size; HEAT the calibre; HE the highest ``N+`` band with ``N`` <= calibre (``armored_basic_tk``).
        """
        if ammo == "AP" and gun.size in TAPERED_BORE:
            return self._pick(self.apcr_apds, gun.size, gun.qualifier, nationality, "APCR/APDS").tk
        if ammo == "AP":
            return self._pick(self.ap, gun.size, gun.qualifier, nationality, "AP").tk
        if ammo == "APCR":
            return self._pick(self.apcr_apds, gun.size, gun.qualifier, nationality, "APCR").tk
        if ammo == "APDS":
            return self._pick(self.apcr_apds, "D" + gun.size, gun.qualifier, nationality, "APDS").tk
        if ammo == "HEAT":
            return self._pick(self.heat, gun.calibre_key, None, nationality, "HEAT").tk
        if ammo == "HE":
            best = None
            for lo, tk in self.he_bands:
                if lo <= gun.calibre:
                    best = tk
            if best is None:
                raise TableError(f"no HE band for calibre {gun.calibre_key} mm")
            return best
        raise TableError(f"unknown ammunition {ammo!r}")

    def basic_tk_by_key(self, ammo: str, key: str) -> int:
        """Basic TK# of a vehicle record's exact ``tk_key`` entry for ``ammo`` (asl.md 3.2): the AP, APCR/APDS or
        HEAT table key, or the HE band key (``"70+"``).  AP keys missing from the AP table are read on the
        APCR/APDS table (German tapered-bore guns, C7.32)."""
        if ammo == "HE":
            m = re.match(r"^(\d+)\+$", key)
            if m:
                for lo, tk in self.he_bands:
                    if lo == int(m.group(1)):
                        return tk
            raise TableError(f"no HE band {key!r}")
        table = {"AP": self.ap, "APCR": self.apcr_apds, "APDS": self.apcr_apds, "HEAT": self.heat}[ammo]
        if key in table:
            return table[key].tk
        if ammo == "AP" and key in self.apcr_apds:
            return self.apcr_apds[key].tk
        raise TableError(f"no {ammo} listing {key!r}")

    def he_key(self, gun: Gun) -> str:
        """The HE band key (``"70+"``) for ``gun``."""
        best = None
        for lo, _ in self.he_bands:
            if lo <= gun.calibre:
                best = f"{lo}+"
        if best is None:
            raise TableError(f"no HE band for calibre {gun.calibre_key} mm")
        return best

    def case_d(self, gun: Gun, ammo: str, range_hexes: int) -> int | None:
        """Case D TK# change (C7.24) for ``gun``/``ammo`` at ``range_hexes``; ``None`` = NA; 0 for HEAT and HE.

        DECISION ``case_d_calibre_rows`` (``chart``): AP rows cover <= 25 mm, 26-64 mm (the 37-57 mm row) and
        >= 65 mm; APCR uses the <= 57 mm row up to 57 mm and the >= 75 mm row above; tapered-bore AP is APCR.
        """
        if ammo in ("HEAT", "HE"):
            return 0
        if ammo == "AP" and gun.size in TAPERED_BORE:
            ammo = "APCR"
        if ammo == "AP":
            row = ("le_25mm" if gun.calibre <= 25 else "mm_37_to_57" if gun.calibre < 65 else "ge_65mm")
            return self.case_d_ap[row][band_index(self.case_d_ap_bands, range_hexes)]
        row = "apds" if ammo == "APDS" else ("apcr_le_57mm" if gun.calibre <= 57 else "apcr_ge_75mm")
        return self.case_d_apcr[row][band_index(self.case_d_apcr_bands, range_hexes)]


def _entries(section: Mapping[str, Any]) -> dict[str, TkEntry]:
    out = {}
    for key, rec in section.items():
        if isinstance(rec, Mapping) and "tk" in rec:
            out[str(key)] = TkEntry(str(key), int(rec["tk"]), tuple(str(a) for a in rec.get("applies_to", ())))
    return out


@lru_cache(maxsize=1)
def to_kill_tables() -> ToKillTables:
    """The To Kill tables from the data file."""
    d = raw_data()
    he = []
    for key, rec in d["he_basic_tk"].items():
        m = re.match(r"^(\d+)\+$", str(key))
        if m and isinstance(rec, Mapping):
            he.append((int(m.group(1)), int(rec["armored_basic_tk"])))
    he.sort()
    rt = d["range_tk_change"]
    return ToKillTables(
        ap=_entries(d["ap_basic_tk"]), apcr_apds=_entries(d["apcr_apds_basic_tk"]), heat=_entries(d["heat_basic_tk"]),
        he_bands=tuple(he),
        case_d_ap_bands=tuple(rt["ap"]["range_bands"]),
        case_d_ap={k: tuple(rt["ap"][k]) for k in ("le_25mm", "mm_37_to_57", "ge_65mm")},
        case_d_apcr_bands=tuple(rt["apcr_apds"]["range_bands"]),
        case_d_apcr={k: tuple(rt["apcr_apds"][k]) for k in ("apcr_le_57mm", "apcr_ge_75mm", "apds")},
        af_scale=tuple(d["armor_factor_values"]["scale"]),
    )


# --- terrain (B13, D2, D8.21) -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Terrain:
    """One terrain class of ``sim_terrain``: entry ``mp`` (int, or ``None`` = half the MP allotment), ``tem``
    (Case Q vs a vehicle target), ``obstacle`` (blocks LOS; woods/building for Case A/B/E and VCA costs),
    ``bog_drm`` (``None`` = no Bog Check on entry)."""

    name: str
    mp: int | None
    tem: int
    obstacle: bool
    bog_drm: int | None


@dataclass(frozen=True)
class TerrainTables:
    classes: Mapping[str, Terrain]
    ground_pressure_bog_drm: Mapping[str, int]
    vehicle_in_hex_mp: int
    vca_change_mp: int
    vca_change_mp_obstacle: int
    bog_threshold: int


@lru_cache(maxsize=1)
def terrain_tables() -> TerrainTables:
    """``sim_terrain`` from the data file."""
    st = raw_data()["sim_terrain"]
    classes = {}
    for name, rec in st.items():
        if isinstance(rec, Mapping) and "tem" in rec:
            mp = rec["mp"]
            classes[name] = Terrain(name, None if mp == "half_allotment" else int(mp), int(rec["tem"]),
                                    rec["los"] == "obstacle", None if rec["bog_drm"] is None else int(rec["bog_drm"]))
    return TerrainTables(classes, dict(st["ground_pressure_bog_drm"]), int(st["vehicle_or_wreck_in_hex_mp"]),
                         int(st["vca_change_mp"]["default"]), int(st["vca_change_mp"]["obstacle"]),
                         int(st["bog_threshold"]))


# --- vehicle catalog (section 3.2) --------------------------------------------------------------------------

@dataclass(frozen=True)
class Vehicle:
    """An AFV record of ``sim_vehicles`` after the ``missing_data`` defaults (asl.md 3.2).

    ``gun`` is the MA designation; ``tk_key`` maps ammo type -> exact TK table key; ``af`` the four AF values
    (side values serve the rear); ``special_ammo`` maps ammo type -> ((first year or ``YYYY-MM``, Depletion
    Number), ...) sorted; ``mp`` the MP allotment (whole MP); ``defaulted`` names the fields filled at load.
    """

    id: str
    name: str
    nationality: str
    th_colour: str
    gun: str
    tk_key: Mapping[str, str]
    turret_type: str
    rof: int
    breakdown: int
    gyro: bool
    mp: int
    mp_red: bool
    open_topped: bool
    ground_pressure: str
    size: str
    af: Mapping[str, int]
    special_ammo: Mapping[str, tuple[tuple[str, int], ...]]
    cs: int | None
    cs_red: bool
    crew_morale: int
    defaulted: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The record it was built from (``missing_data: strict`` re-reads it at set-up).
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def turret(self) -> bool:
        """True unless the vehicle is NT (no turret, D1.31)."""
        return self.turret_type != "NT"

    @property
    def gun_info(self) -> Gun:
        return parse_gun(self.gun)

    def ammo_types(self) -> tuple[str, ...]:
        """Ammunition the record can fire: AP/HE by ``tk_key`` (unlimited, C2.21), special ammo by schedule."""
        return tuple(a for a in AMMO_TYPES if a in self.tk_key and (a in ("AP", "HE") or a in self.special_ammo))

    def depletion_number(self, ammo: str, date: str, elite: bool = False) -> int | None:
        """Depletion Number of special ``ammo`` at scenario ``date`` (``"1941"`` or ``"1941-06"``), or ``None``
        when none is carried yet.  DECISION ``depletion_schedule``: the latest entry not after the date applies,
        the last one continues; ``elite`` adds +1 (C8.2)."""
        sched = self.special_ammo.get(ammo)
        if not sched:
            return None
        best = None
        for when, n in sched:
            if _date_key(when) <= _date_key(date):
                best = n
        if best is None:
            return None
        return best + (1 if elite else 0)


def _date_key(s: str) -> tuple[int, int]:
    s = str(s)
    if "-" in s:
        y, m = s.split("-", 1)
        return int(y), int(m)
    return int(s), 1


_DEFAULTS = {"rof": 0, "size": "average", "ground_pressure": "normal", "crew_morale": 8, "mp_red": False,
             "breakdown": 12}
#: Ammunition a record may carry as special ammunition (AP and HE are unlimited, C2.21).
SPECIAL_AMMO = ("APCR", "APDS", "HEAT")
_DATE = r"^[0-9]{4}(-(0[1-9]|1[0-2]))?$"


class CatalogError(VehicleError):
    """A vehicle record cannot be loaded: a field breaks the schema of asl.md 3.2 (a null ``gun``, ``mp`` or hull
    AF, an unknown field, a TK key missing from the tables), or any null under ``missing_data: strict``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _on_af_scale(v: int) -> int:
    scale = to_kill_tables().af_scale
    if v not in scale:
        raise ValueError(f"{v} is not an Armor Factor of the C7.11 scale ({', '.join(str(x) for x in scale)})")
    return v


_AfValue = Annotated[StrictInt, AfterValidator(_on_af_scale)]
_Count = Annotated[StrictInt, Field(ge=0, le=12)]


class _AfRecord(_Strict):
    hull_front: _AfValue
    hull_side: _AfValue
    turret_front: _AfValue | None = None
    turret_side: _AfValue | None = None


class VehicleRecord(_Strict):
    """One ``sim_vehicles`` record (asl.md 3.2) as the data file and a scenario's ``vehicles:`` block write it.

    ``gun`` (calibre + suffix, C2.2), ``mp`` and the hull AF are required; every other field may be null (filled
    by DECISION ``missing_data``).  Checked beyond types: every ``tk_key`` entry names a listing of its TK table;
    AF values are on the C7.11 scale; ``special_ammo`` carries APCR, APDS or HEAT only, each with a ``tk_key`` to
    fire it with, dated ``YYYY`` or ``YYYY-MM``, Depletion Numbers 0..12; ``open_topped: true`` is out of scope
    (asl.md 1).  Trust limits: ``mp`` 1..60, ``rof`` 0..3, ``breakdown`` and ``cs`` 2..12, ``crew_morale`` 1..10.
    ``notes``, ``sources`` and ``radioless`` (no effect: Platoon Movement is not modelled) document the record."""

    id: CatalogName | None = None
    name: CatalogName | None = None
    nationality: Annotated[str, Field(max_length=60), AfterValidator(printable_name)] | None = None
    th_colour: Literal["black", "red"] | None = None
    gun: str = Field(max_length=40)
    tk_key: dict[Literal["AP", "APCR", "APDS", "HEAT", "HE"], Annotated[str, Field(max_length=60)]] | None = None
    turret_type: Literal["T", "ST", "RST", "1MT", "NT"] | None = None
    rof: Annotated[StrictInt, Field(ge=0, le=3)] | None = None
    breakdown: Annotated[StrictInt, Field(ge=2, le=12)] | None = None
    gyro: StrictBool | None = None
    mp: Annotated[StrictInt, Field(ge=1, le=60)]
    mp_red: StrictBool | None = None
    open_topped: StrictBool | None = None
    ground_pressure: Literal["low", "normal", "high"] | None = None
    size: Literal["very_large", "large", "average", "small", "very_small"] | None = None
    af: _AfRecord
    special_ammo: dict[Literal["APCR", "APDS", "HEAT"],
                       dict[Annotated[str, Field(pattern=_DATE)], _Count]] | None = None
    cs: Annotated[StrictInt, Field(ge=2, le=12)] | None = None
    cs_red: StrictBool | None = None
    crew_morale: Annotated[StrictInt, Field(ge=1, le=10)] | None = None
    notes: CatalogText | None = None
    sources: list[Annotated[str, Field(max_length=500), AfterValidator(printable_text)]] | None = Field(
        default=None, max_length=100)
    radioless: StrictBool | None = None

    @field_validator("gun", mode="before")
    @classmethod
    def _gun_text(cls, v: Any) -> Any:
        """YAML reads an unquoted ``gun: 50`` as an integer: take it as the designation."""
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("gun")
    @classmethod
    def _gun(cls, v: str) -> str:
        parse_gun(v)
        return v

    @field_validator("tk_key", mode="before")
    @classmethod
    def _keys_text(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            return {a: (str(k) if isinstance(k, int) and not isinstance(k, bool) else k) for a, k in v.items()}
        return v

    @field_validator("special_ammo", mode="before")
    @classmethod
    def _dates_as_text(cls, v: Any) -> Any:
        """YAML reads an unquoted year (``1942: 4``) as an integer: take it as the year."""
        if isinstance(v, Mapping):
            return {a: ({(str(k) if isinstance(k, int) and not isinstance(k, bool) else k): n
                         for k, n in sched.items()} if isinstance(sched, Mapping) else sched)
                    for a, sched in v.items()}
        return v

    @model_validator(mode="after")
    def _tables(self) -> VehicleRecord:
        if self.open_topped:
            raise ValueError("open_topped: open-topped AFVs are out of scope (asl.md 1)")
        tk = to_kill_tables()
        for ammo, key in (self.tk_key or {}).items():
            try:
                tk.basic_tk_by_key(ammo, key)
            except TableError:
                raise ValueError(f"tk_key.{ammo}: no {ammo} listing {key[:60]!r} in the To Kill tables "
                                 f"(C7.31-C7.34); e.g. AP '75L', APCR '76L/russian', HE '70+'") from None
        for ammo in self.special_ammo or {}:
            if ammo not in (self.tk_key or {}):
                raise ValueError(f"special_ammo.{ammo}: the record has no tk_key.{ammo} to fire it with")
        return self


def vehicle_from_record(vid: str, rec: Mapping[str, Any], strict: bool = False, warn: bool = True) -> Vehicle:
    """One record in the ``sim_vehicles`` schema (:class:`VehicleRecord`) -> :class:`Vehicle` (DECISION
    ``missing_data``, asl.md 3.2).

    Under ``strict`` every null is an error; otherwise nulls take the documented defaults (turret AF = hull AF
    of the same facing, D1.61-D1.62) and a warning is logged.  A record's ``id``, when given, must be ``vid``.
    Raises :class:`CatalogError` naming each bad field."""
    if not isinstance(rec, Mapping):
        raise CatalogError([("", f"expected a mapping of record fields, got {type(rec).__name__}")], vid)
    try:
        r = VehicleRecord.model_validate(rec)
    except ValidationError as exc:
        raise CatalogError(validation_problems(exc, model=VehicleRecord), vid) from None
    if r.id is not None and r.id != vid:
        raise CatalogError([("id", f"{r.id[:60]!r} differs from the vehicle's key {vid[:60]!r}")], vid)
    defaulted = []
    vals: dict[str, Any] = {}
    for k, dv in _DEFAULTS.items():
        v = getattr(r, k)
        if v is None:
            if strict:
                raise CatalogError([(k, "is null (missing_data: strict)")], vid)
            defaulted.append(k)
            v = dv
        vals[k] = v
    af = {"hull_front": r.af.hull_front, "hull_side": r.af.hull_side}
    for t, h in (("turret_front", "hull_front"), ("turret_side", "hull_side")):
        v = getattr(r.af, t)
        if v is None:
            if strict:
                raise CatalogError([(f"af.{t}", "is null (missing_data: strict)")], vid)
            defaulted.append(f"af.{t}")
            v = af[h]
        af[t] = v
    if strict:
        for k in ("cs", "turret_type", "nationality", "th_colour"):
            if getattr(r, k) is None:
                raise CatalogError([(k, "is null (missing_data: strict)")], vid)
    sa: dict[str, tuple[tuple[str, int], ...]] = {
        ammo: tuple(sorted(((k, v) for k, v in sched.items()), key=lambda kv: _date_key(kv[0])))
        for ammo, sched in (r.special_ammo or {}).items()}
    tk_key: dict[str, str] = {ammo: key for ammo, key in (r.tk_key or {}).items()}
    if defaulted and warn:
        warn_defaults(vid, defaulted)
    extra: dict[str, Any] = {k: getattr(r, k) for k in ("notes", "sources", "radioless") if k in r.model_fields_set}
    return Vehicle(
        id=vid, name=r.name or vid, nationality=r.nationality or "", th_colour=r.th_colour or "black", gun=r.gun,
        tk_key=tk_key, turret_type=r.turret_type or "T", rof=vals["rof"], breakdown=vals["breakdown"],
        gyro=bool(r.gyro), mp=r.mp, mp_red=vals["mp_red"], open_topped=False,
        ground_pressure=vals["ground_pressure"], size=vals["size"], af=af, special_ammo=sa, cs=r.cs,
        cs_red=bool(r.cs_red), crew_morale=vals["crew_morale"], defaulted=tuple(defaulted), extra=extra,
        record=dict(rec))


def build_vehicle(rec: Mapping[str, Any], strict: bool = False) -> Vehicle:
    """One ``sim_vehicles`` record (with its ``id``) -> :class:`Vehicle` (:func:`vehicle_from_record`)."""
    return vehicle_from_record(str(rec.get("id")), rec, strict)


def warn_defaults(vid: str, defaulted: Sequence[str]) -> None:
    """Log that vehicle ``vid`` plays with defaults for the fields ``defaulted`` (asl.md 3.2,
    ``missing_data: defaults_with_warning``; shown once per process, :mod:`sim.logs`)."""
    log.warning("asl catalog: vehicle %s: defaults used for %s (missing_data: defaults_with_warning)",
                vid, ", ".join(defaulted))


@lru_cache(maxsize=2)
def catalog(strict: bool = False) -> Mapping[str, Vehicle]:
    """The AFV catalog ``{id: Vehicle}`` from ``sim_vehicles`` (``strict`` = ``missing_data: strict``).  Built
    without warnings: a vehicle's defaults are reported when a scenario uses it (``ASL.vehicle``), so a catalog
    vehicle that is only a ``vehicles:`` entry's ``base`` (or not used at all) is not reported."""
    return {v.id: v for v in (vehicle_from_record(str(r.get("id")), r, strict, warn=False)
                              for r in raw_data()["sim_vehicles"])}


def raw_vehicle(vid: str) -> Mapping[str, Any]:
    """The unprocessed ``sim_vehicles`` record ``vid``."""
    for r in raw_data()["sim_vehicles"]:
        if r["id"] == vid:
            return r
    raise KeyError(vid)


def catalog_records() -> dict[str, dict[str, Any]]:
    """The ``sim_vehicles`` records as the data file stores them, keyed by id, without ``id`` (fresh copies)."""
    return {str(r["id"]): copy.deepcopy({k: v for k, v in r.items() if k != "id"}) for r in raw_data()["sim_vehicles"]}
