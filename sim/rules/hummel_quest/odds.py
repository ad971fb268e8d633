"""Hummel Quest exact odds and the resolve stages that roll the same mechanics.

Specification: ``docs/rules/hummel_quest.md`` §6 (pool checks), §7 (shooting), §8 (damage), §9 (overkill),
§10 (OST), §12 (ramming), §17 (the odds command).  Everything here is pure: no battle, no board.

Two halves share one description of each mechanic:

* **odds** (:func:`attack_odds`, :func:`ram_odds`, :func:`check_odds`): exact ``Fraction`` distributions, cached on
  hashable keys of primitives.  Keep-k-lowest damage is computed by order statistics (a dynamic programme over the
  faces 1..10 counting how many dice show each face, :func:`keep_lowest_dist`), bursts and several weapons by
  convolution; no enumeration of every die.
* **stages** (:func:`roll_attack`, :func:`attack_effect`, :func:`roll_ram`, :func:`ram_effect`,
  :func:`roll_pool`): the same mechanics rolled with a :class:`~sim.dice.DiceSource`, consuming dice in the orders
  of §7.4, §12.2 and §6.  Play, golden outcome cases and the exhaustive consistency tests all call these.

Units: ranges in metres, DT / OST / Dur / Size / Firepower in HQ points, dice are d10.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import TYPE_CHECKING

from sim.dice import DiceSource
from sim.messages import did_you_mean, error_message

if TYPE_CHECKING:
    from sim.rules.hummel_quest.stats import HQOptions

ONE = Fraction(1)
ZERO = Fraction(0)
#: Overkill: 2d10 showing a total of 2 destroys the core (§9): 1/100.
P_CORE = Fraction(1, 100)

Dist = dict[int, Fraction]


# --- bands and TN (§7.1 - §7.3) -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Band:
    """One distance band (§7.1): ``number`` 1..6, ``tn`` (band TN) and ``fp_needed`` (Firepower needed)."""

    number: int
    tn: int
    fp_needed: int


#: (band, lower edge m, upper edge m or None, band TN, Firepower needed) -- §7.1 [HQ values].
BANDS: tuple[tuple[int, int, int | None, int, int], ...] = (
    (1, 0, 100, 8, 2),
    (2, 100, 400, 12, 3),
    (3, 400, 800, 14, 5),
    (4, 800, 1200, 16, 6),
    (5, 1200, 3000, 18, 8),
    (6, 3000, None, 22, 8),
)


@lru_cache(maxsize=4096)
def band_of(range_m: int, band_edges: str = "lower_inclusive") -> Band:
    """The distance band of a range in metres (§7.1); cached (a pure function of its two arguments).

    ``lower_inclusive`` (default): a band includes its lower edge, so 100, 400, 800 and 1200 m open the farther
    band; 3000 m stays in band 5 (band 6 is strictly over 3000 m).  ``upper_inclusive``: 100, 400, 800 and 1200 m
    stay in the nearer band.  Raises ``ValueError`` for a negative range.
    """
    if range_m < 0:
        raise ValueError(f"range_m must be >= 0, got {range_m}")
    for number, _lo, hi, tn, fp in BANDS:
        if hi is None:
            return Band(number, tn, fp)
        if number == 5 or band_edges == "upper_inclusive":
            inside = range_m <= hi
        else:
            inside = range_m < hi
        if inside:
            return Band(number, tn, fp)
    raise AssertionError("unreachable")


def tn_to_hit(band_tn: int, target_size: int, *, moved_half: bool = False, half_cover: bool = False,
              tn_mod: int = 0, tn_min: int = 3, tn_clamp: str = "sequential") -> int:
    """TN to Hit (§7.2): band TN minus target Size, clamped at ``tn_min``; +1 if the shooter moved at least half
    its Speed, +1 if the target is at least half behind hard cover (the caller passes ``False`` for indirect
    fire), plus ``tn_mod``; clamped again.  ``tn_clamp = "final"`` clamps once at the end.  No upper limit."""
    t1 = band_tn - target_size
    if tn_clamp == "sequential":
        t1 = max(tn_min, t1)
    return max(tn_min, t1 + int(moved_half) + int(half_cover) + tn_mod)


def effective_dur(dur: int, *, indirect: bool = False, aspect: str = "front", reinforced_turret: bool = False,
                  half_cover: bool = False) -> int:
    """Effective Dur for the Firepower test (§8.1): doubled for a Reinforced Turret at least half behind hard cover
    (direct fire only); then -2 if indirect, otherwise -1 for a side or rear aspect; never below 0."""
    d = dur
    if reinforced_turret and half_cover and not indirect:
        d *= 2
    if indirect:
        d -= 2
    elif aspect in ("side", "rear"):
        d -= 1
    return max(0, d)


# --- distributions -------------------------------------------------------------------------------------------

def point(v: int) -> Dist:
    return {v: ONE}


def convolve(a: Mapping[int, Fraction], b: Mapping[int, Fraction]) -> Dist:
    """Distribution of the sum of two independent integer variables."""
    out: Dist = {}
    for x, px in a.items():
        for y, py in b.items():
            out[x + y] = out.get(x + y, ZERO) + px * py
    return out


def convolve_power(a: Mapping[int, Fraction], n: int) -> Dist:
    """Distribution of the sum of ``n`` independent copies (exponentiation by squaring)."""
    result: Dist = point(0)
    base = dict(a)
    while n:
        if n & 1:
            result = convolve(result, base)
        n >>= 1
        if n:
            base = convolve(base, base)
    return result


def mixture(parts: Iterable[tuple[Fraction, Mapping[int, Fraction]]]) -> Dist:
    out: Dist = {}
    for w, d in parts:
        if w == 0:
            continue
        for x, p in d.items():
            out[x] = out.get(x, ZERO) + w * p
    return out


def expectation(d: Mapping[int, Fraction]) -> Fraction:
    return sum((x * p for x, p in d.items()), ZERO)


@lru_cache(maxsize=4096)
def _keep_lowest_counts(n: int, k: int) -> tuple[tuple[int, int], ...]:
    """Ways (out of ``10**n``) for each sum of the ``k`` lowest of ``n`` d10, by order statistics.

    Dynamic programme over the faces v = 1..10 in ascending order: choose how many of the still unassigned dice
    show v (``comb`` ways); the lowest dice are exactly the first ones assigned, so the kept count is known from
    how many dice were assigned before.  State: (dice assigned, kept sum); O(10 * n^2 * sum range).
    """
    states: dict[tuple[int, int], int] = {(0, 0): 1}
    for v in range(1, 11):
        nxt: dict[tuple[int, int], int] = {}
        for (m, s), ways in states.items():
            left = n - m
            cs = (left,) if v == 10 else range(left + 1)
            for c in cs:
                kept = min(c, max(0, k - m))
                key = (m + c, s + kept * v)
                nxt[key] = nxt.get(key, 0) + ways * comb(left, c)
        states = nxt
    return tuple(sorted((s, w) for (m, s), w in states.items() if m == n))


def keep_lowest_dist(n: int, k: int, mod: int = 0) -> Dist:
    """Damage of one hit (§8.3): the ``k`` lowest of ``n`` d10 summed, plus ``mod``, minimum 0."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= keep <= dice, got {n}d10 keep {k}")
    total = 10 ** n
    out: Dist = {}
    for s, w in _keep_lowest_counts(n, k):
        v = max(0, s + mod)
        out[v] = out.get(v, ZERO) + Fraction(w, total)
    return out


def hit_faces(bonus: int, tn: int, naturals: bool = False) -> int:
    """How many faces of the To Hit d10 hit (§7.4): ``d10 + bonus >= tn``; with ``naturals`` a 10 always hits
    and a 1 always misses."""
    n = 0
    for v in range(1, 11):
        if naturals and v == 10:
            n += 1
        elif naturals and v == 1:
            continue
        elif v + bonus >= tn:
            n += 1
    return n


def to_hit_succeeds(natural: int, bonus: int, tn: int, naturals: bool = False) -> bool:
    """One To Hit d10 (§7.4), the rolled counterpart of :func:`hit_faces`."""
    if naturals and natural == 10:
        return True
    if naturals and natural == 1:
        return False
    return natural + bonus >= tn


# --- pool checks (§6) ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckOdds:
    """Exact odds of a pool check (§6)."""

    p_success: Fraction
    p_auto_fail: Fraction
    p_auto_pass: Fraction


def _success_faces(tn: int) -> tuple[bool, bool, int]:
    """(a 1 succeeds, a 10 succeeds, how many of the faces 2..9 succeed) for a die against ``tn``."""
    return tn <= 1, tn <= 10, sum(1 for v in range(2, 10) if v >= tn)


def check_passes(n1: int, n10: int, successes: int, need: int, pool: int, ones_tens: bool) -> tuple[bool, str]:
    """Verdict of a rolled pool (§6): ``(passed, how)`` with ``how`` in ``count`` / ``auto_fail`` / ``auto_pass``.

    A pool of 0 fails.  With the two-ones/two-tens rule, two or more 1s fail and two or more 10s pass, unless both
    happen (then successes are counted)."""
    if pool <= 0:
        return False, "count"
    if ones_tens:
        if n1 >= 2 and n10 < 2:
            return False, "auto_fail"
        if n10 >= 2 and n1 < 2:
            return True, "auto_pass"
    return successes >= need, "count"


@lru_cache(maxsize=4096)
def check_odds(pool: int, tn: int, successes: int = 1, ones_tens: bool = False) -> CheckOdds:
    """Exact pool-check odds (§6): ``pool`` d10, each die ``>= tn`` a success, pass with ``successes`` or more.

    Enumerates the counts of 1s, 10s, other successes and other failures (multinomial weights), not every die.
    """
    if pool <= 0:
        return CheckOdds(ZERO, ZERO, ZERO)
    one_ok, ten_ok, mid_ok = _success_faces(tn)
    mid_bad = 8 - mid_ok
    total = 10 ** pool
    p_pass = p_af = p_ap = 0
    for n1 in range(pool + 1):
        for n10 in range(pool - n1 + 1):
            rest = pool - n1 - n10
            base = comb(pool, n1) * comb(pool - n1, n10)
            for ns in range(rest + 1):
                nf = rest - ns
                ways = base * comb(rest, ns) * mid_ok ** ns * mid_bad ** nf
                if ways == 0:
                    continue
                succ = n1 * one_ok + n10 * ten_ok + ns
                passed, how = check_passes(n1, n10, succ, successes, pool, ones_tens)
                p_pass += ways * passed
                p_af += ways * (how == "auto_fail")
                p_ap += ways * (how == "auto_pass")
    return CheckOdds(Fraction(p_pass, total), Fraction(p_af, total), Fraction(p_ap, total))


@dataclass(frozen=True)
class PoolRoll:
    """A rolled pool check: ``passed``, the number of ``successes`` (dice >= TN), ``how`` it was decided
    (``count``, ``auto_fail``, ``auto_pass``) and the natural ``rolls``."""

    passed: bool
    successes: int
    how: str
    rolls: tuple[int, ...]


def roll_pool(dice: DiceSource, pool: int, tn: int, successes: int = 1, ones_tens: bool = False,
              label: str = "pool") -> PoolRoll:
    """Roll a pool check (§6): ``pool`` d10 in one batch, then judge it with :func:`check_passes`."""
    rolls = tuple(dice.rolls(max(0, pool), "d10", label))
    succ = sum(1 for v in rolls if v >= tn)
    passed, how = check_passes(rolls.count(1), rolls.count(10), succ, successes, pool, ones_tens)
    return PoolRoll(passed, succ, how, rolls)


# --- OST step (§10) ------------------------------------------------------------------------------------------

def ost_hit_due(hit: bool, dt_before: int, dt_after: int, *, threshold: int = 8,
                timing: str = "after_damage") -> bool:
    """Whether an attack costs its target OST (§10): it hit (or a ram collided), the target was not incapacitated
    by it or before it (DT after > 0), and DT (after the damage, or before it with ``timing = before_damage``) is
    below ``threshold``."""
    if not hit or dt_before <= 0 or dt_after <= 0:
        return False
    return (dt_after if timing == "after_damage" else dt_before) < threshold


# --- shots ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WeaponKey:
    """One firing weapon in a shot key: ``damaging`` (passes the Firepower tests), Damage ``dice`` keep ``keep``,
    ``damage_mod`` per shot, ``burst`` shots; ``label`` names it in dice labels only."""

    damaging: bool
    dice: int
    keep: int
    damage_mod: int = 0
    burst: int = 1
    label: str = ""


@dataclass(frozen=True)
class ShotKey:
    """The primitives the odds of one attack depend on (§7.4, §8, §9, §10); hashable, cached on.

    ``tn`` TN to Hit; ``roll_bonus`` = RealityCom + To Hit + roll modifiers; ``weapons`` in stat-block order;
    ``target_dt`` the target's DT now (0 = incapacitated: overkill); ``auto_hit`` for structures (no To Hit roll,
    §14); ``structure`` = target is a structure (no OST, no overkill).
    """

    tn: int
    roll_bonus: int
    weapons: tuple[WeaponKey, ...]
    target_dt: int
    to_hit_naturals: bool = False
    burst_first_shot: str = "shared_roll"
    overkill_roll: str = "per_attack"
    ost_hit_threshold_dt: int = 8
    ost_hit_timing: str = "after_damage"
    auto_hit: bool = False
    structure: bool = False

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "weapons"}
        d["weapons"] = [dict(w.__dict__) for w in self.weapons]
        return d


@dataclass(frozen=True)
class AttackOdds:
    """Exact odds of one attack: ``p_hit`` (at least one shot hits), ``damage`` (total DT damage before the
    clamp; 0 includes misses), ``hit_damage`` (joint: at least one hit and that damage), ``p_kill``, ``p_ost_loss``,
    ``p_core_destroyed``."""

    p_hit: Fraction
    damage: Mapping[int, Fraction]
    expected_damage: Fraction
    p_kill: Fraction
    p_ost_loss: Fraction
    p_core_destroyed: Fraction
    hit_damage: Mapping[int, Fraction] = field(default_factory=dict)


def _shot_uses_shared(key: ShotKey, w: WeaponKey, j: int) -> bool:
    """Whether shot ``j`` of weapon ``w`` is decided by the attack's shared To Hit roll (§7.4)."""
    if j > 0:
        return False
    return not (key.burst_first_shot == "own_roll" and w.burst > 1)


@lru_cache(maxsize=65536)
def attack_odds(key: ShotKey) -> AttackOdds:
    """Exact odds of one attack (§7.4 - §10), cached on the key.

    Condition on the shared To Hit roll (hit with p, miss with 1 - p); given it, every shot hits independently
    (shots on the shared roll with probability 1 or 0, every other shot with p), each hitting shot rolls its own
    keep-lowest damage; the attack's total is the convolution over shots (a burst by convolution powers).
    """
    p = ONE if key.auto_hit else Fraction(hit_faces(key.roll_bonus, key.tn, key.to_hit_naturals), 10)
    hit_dists: list[Dist] = []
    for w in key.weapons:
        hit_dists.append(keep_lowest_dist(w.dice, w.keep, w.damage_mod) if w.damaging else point(0))
    damage: Dist = {}
    p_nohit = ZERO
    p_core = ZERO
    uses_shared = any(_shot_uses_shared(key, w, 0) for w in key.weapons)
    branches = ((p, True), (ONE - p, False)) if uses_shared and not key.auto_hit else ((ONE, None),)
    for weight, shared in branches:
        if weight == 0:
            continue
        dist = point(0)
        nohit = ONE
        no_core = ONE
        for w, hd in zip(key.weapons, hit_dists):
            q = sum((pr for v, pr in hd.items() if v > 0), ZERO)
            for j_group, count in ((0, 1), (1, w.burst - 1)):
                if count <= 0:
                    continue
                if key.auto_hit:
                    h = ONE
                elif _shot_uses_shared(key, w, j_group):
                    h = ONE if shared else ZERO
                else:
                    h = p
                one = mixture(((ONE - h, point(0)), (h, hd)))
                dist = convolve(dist, convolve_power(one, count))
                nohit *= (ONE - h) ** count
                no_core *= (ONE - h * q * P_CORE) ** count
        for v, pr in dist.items():
            damage[v] = damage.get(v, ZERO) + weight * pr
        p_nohit += weight * nohit
        if key.overkill_roll == "per_damaging_hit":
            p_core += weight * (ONE - no_core)
    damage = {v: pr for v, pr in sorted(damage.items()) if pr != 0}
    p_hit = ONE - p_nohit
    hit_damage = dict(damage)
    hit_damage[0] = hit_damage.get(0, ZERO) - p_nohit
    hit_damage = {v: pr for v, pr in hit_damage.items() if pr != 0}
    dt = key.target_dt
    p_kill = ZERO if dt <= 0 else sum((pr for v, pr in damage.items() if v >= dt), ZERO)
    p_ost = ZERO
    if not key.structure:
        p_ost = sum((pr for v, pr in hit_damage.items()
                     if ost_hit_due(True, dt, max(0, dt - v), threshold=key.ost_hit_threshold_dt,
                                    timing=key.ost_hit_timing)), ZERO)
    if key.structure or dt > 0:
        p_core = ZERO
    elif key.overkill_roll == "per_attack":
        p_core = sum((pr for v, pr in damage.items() if v > 0), ZERO) * P_CORE
    return AttackOdds(p_hit, damage, expectation(damage), p_kill, p_ost, p_core, hit_damage)


@dataclass(frozen=True)
class ShotRoll:
    """One rolled shot of an attack: weapon index, shot index in its burst, its own To Hit natural (``None`` when
    it used the shared roll or auto-hit), ``hit``, damage ``rolls`` and ``damage`` (after keep-lowest and mod)."""

    weapon: int
    index: int
    natural: int | None
    hit: bool
    rolls: tuple[int, ...]
    damage: int


@dataclass(frozen=True)
class AttackRoll:
    """A rolled attack: the shared To Hit ``natural`` and ``total`` (``None`` for auto-hit), every shot, the
    ``damage`` total, ``any_hit``, the overkill rolls and whether the core was destroyed."""

    natural: int | None
    total: int | None
    shared_hit: bool
    shots: tuple[ShotRoll, ...]
    damage: int
    any_hit: bool
    overkill_rolls: tuple[tuple[int, int], ...] = ()
    core_destroyed: bool = False


def roll_attack(key: ShotKey, dice: DiceSource) -> AttackRoll:
    """Roll one attack in the dice order of §7.4: the shared To Hit d10; then per weapon (stat-block order) and
    per shot its own To Hit d10 (not for a shot on the shared roll) and its damage dice if it hit and is damaging;
    last the overkill 2d10 when due (§9: target DT was 0 and the attack deals damage; once per attack, or once per
    damaging shot with ``overkill_roll = per_damaging_hit``).

    DECISIONS: with ``burst_first_shot = own_roll`` the shared d10 is still rolled first (it is the attack's roll
    and decides every burst-1 weapon) while each shot of a burst weapon rolls its own d10; with
    ``per_damaging_hit`` all overkill pairs are rolled at the end, even after one of them destroyed the core.
    Structures (``auto_hit``) roll no To Hit die at all (§14)."""
    if key.auto_hit:
        natural = total = None
        shared_hit = True
    else:
        natural = dice.roll("d10", "to_hit")
        total = natural + key.roll_bonus
        shared_hit = to_hit_succeeds(natural, key.roll_bonus, key.tn, key.to_hit_naturals)
    shots: list[ShotRoll] = []
    for wi, w in enumerate(key.weapons):
        for j in range(w.burst):
            own = None
            if key.auto_hit:
                hit = True
            elif _shot_uses_shared(key, w, j):
                hit = shared_hit
            else:
                own = dice.roll("d10", f"to_hit {w.label}#{j + 1}".strip())
                hit = to_hit_succeeds(own, key.roll_bonus, key.tn, key.to_hit_naturals)
            rolls: tuple[int, ...] = ()
            dmg = 0
            if hit and w.damaging:
                rolls = tuple(dice.rolls(w.dice, "d10", f"damage {w.label}".strip()))
                dmg = max(0, sum(sorted(rolls)[:w.keep]) + w.damage_mod)
            shots.append(ShotRoll(wi, j, own, hit, rolls, dmg))
    damage = sum(s.damage for s in shots)
    overkill: list[tuple[int, int]] = []
    if not key.structure and key.target_dt <= 0:
        n = (1 if damage > 0 else 0) if key.overkill_roll == "per_attack" else sum(1 for s in shots if s.damage > 0)
        for _ in range(n):
            overkill.append((dice.roll("d10", "overkill"), dice.roll("d10", "overkill")))
    core = any(a + b == 2 for a, b in overkill)
    return AttackRoll(natural, total, shared_hit, tuple(shots), damage, any(s.hit for s in shots),
                      tuple(overkill), core)


@dataclass(frozen=True)
class Effect:
    """What an attack does to one tank: DT and OST before/after, ``ost_loss`` (OST points lost), and the two
    transitions that queue events (§10): ``became_incapacitated`` and ``became_panicked``."""

    dt_before: int
    dt_after: int
    ost_before: int
    ost_after: int
    ost_loss: int
    became_incapacitated: bool
    became_panicked: bool
    core_destroyed: bool = False

    @property
    def incapacitated(self) -> bool:
        return self.dt_after <= 0

    @property
    def panicked(self) -> bool:
        return self.ost_after <= 0


def damage_effect(dt: int, ost: int, damage: int, hit: bool, *, threshold: int = 8, timing: str = "after_damage",
                  loss: int = 1, core_destroyed: bool = False, ost_applies: bool = True) -> Effect:
    """Apply an attack's total DT ``damage`` (clamped at 0, §8.3) and its OST step (§10) to a tank with ``dt`` /
    ``ost``.  A tank brought to DT 0 gets no OST step (§9)."""
    dt_after = max(0, dt - damage)
    lose = loss if ost_applies and ost_hit_due(hit, dt, dt_after, threshold=threshold, timing=timing) else 0
    ost_after = max(0, ost - lose)
    return Effect(dt, dt_after, ost, ost_after, ost - ost_after, dt > 0 and dt_after == 0,
                  ost > 0 and ost_after == 0, core_destroyed)


# --- rams (§12) -----------------------------------------------------------------------------------------------

def ram_damage(dfs: int, strike_mod: int, dur: int, size: int) -> int:
    """Collision damage (§12.3): Damage from Strike plus its modifier, minus the struck tank's Dur + Size, >= 0."""
    return max(0, dfs + strike_mod - (dur + size))


@dataclass(frozen=True)
class RamKey:
    """The primitives of one ram's odds (§12): attacker's ``pool``, ``tn`` (already capped), collision ``damage``
    to the target and ``return_damage`` to the attacker, the DTs now (``attacker_dt`` ``None`` = unknown), and the
    options that matter.  ``return_applies``: the target's Size is at least the attacker's, so the attacker is
    struck back (even if ``return_damage`` is 0)."""

    pool: int
    tn: int
    damage: int
    return_damage: int
    target_dt: int
    attacker_dt: int | None = None
    ones_tens: bool = False
    ost_hit_threshold_dt: int = 8
    ost_hit_timing: str = "after_damage"
    return_applies: bool = False

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class RamOdds:
    """Exact odds of one ram (§12, §17.2)."""

    p_success: Fraction
    damage: Mapping[int, Fraction]
    expected_damage: Fraction
    return_damage: Mapping[int, Fraction]
    expected_return_damage: Fraction
    p_kill: Fraction
    p_attacker_incapacitated: Fraction | None
    p_ost_loss: Fraction
    p_core_destroyed: Fraction

    @property
    def p_hit(self) -> Fraction:
        return self.p_success


def _two_point(p: Fraction, v: int) -> Dist:
    return {k: pr for k, pr in sorted(mixture(((ONE - p, point(0)), (p, point(v)))).items()) if pr != 0}


@lru_cache(maxsize=4096)
def ram_odds(key: RamKey) -> RamOdds:
    """Exact odds of one ram (§12): collision iff the Interaction pool check (1 success, TN capped) passes; the
    damage figures are fixed numbers, so every distribution has at most two points."""
    p = check_odds(key.pool, key.tn, 1, key.ones_tens).p_success
    dmg = _two_point(p, key.damage)
    ret = _two_point(p, key.return_damage)
    p_kill = p if 0 < key.target_dt <= key.damage else ZERO
    p_att = None
    if key.attacker_dt is not None:
        p_att = p if 0 < key.attacker_dt <= key.return_damage else ZERO
    after = max(0, key.target_dt - key.damage)
    p_ost = p if ost_hit_due(True, key.target_dt, after, threshold=key.ost_hit_threshold_dt,
                             timing=key.ost_hit_timing) else ZERO
    p_core = p * P_CORE if key.target_dt <= 0 and key.damage > 0 else ZERO
    return RamOdds(p, dmg, expectation(dmg), ret, expectation(ret), p_kill, p_att, p_ost, p_core)


@dataclass(frozen=True)
class RamRoll:
    """A rolled ram: the pool check, ``collision``, the damage dealt each way, overkill rolls, core destroyed."""

    check: PoolRoll
    collision: bool
    damage: int
    return_damage: int
    overkill_rolls: tuple[tuple[int, int], ...] = ()
    core_destroyed: bool = False
    return_applies: bool = False


def roll_ram(key: RamKey, dice: DiceSource) -> RamRoll:
    """Roll one ram in the dice order of §12.2: the Interaction pool, then the overkill 2d10 if due (target DT was
    0 and the collision deals damage > 0)."""
    check = roll_pool(dice, key.pool, key.tn, 1, key.ones_tens, "ram")
    if not check.passed:
        return RamRoll(check, False, 0, 0)
    overkill: tuple[tuple[int, int], ...] = ()
    if key.target_dt <= 0 and key.damage > 0:
        overkill = ((dice.roll("d10", "overkill"), dice.roll("d10", "overkill")),)
    return RamRoll(check, True, key.damage, key.return_damage, overkill, any(a + b == 2 for a, b in overkill),
                   key.return_applies)


def ram_effect(roll: RamRoll, *, target_dt: int, target_ost: int, attacker_dt: int, attacker_ost: int,
               threshold: int = 8, timing: str = "after_damage", loss: int = 1,
               return_costs_ost: bool = False) -> tuple[Effect, Effect]:
    """Effects of a rolled ram on (target, attacker) (§12.3, §10): both damages apply at once; the target's OST
    step follows a collision if it is not incapacitated; the attacker's return damage costs OST only with
    ``ram_return_costs_ost`` (DECISION: then the attacker counts as hit whenever the return strike applies, i.e.
    the target's Size is at least its own, even for 0 damage, like a shot that hits without DT damage)."""
    tgt = damage_effect(target_dt, target_ost, roll.damage, roll.collision, threshold=threshold, timing=timing,
                        loss=loss, core_destroyed=roll.core_destroyed)
    att = damage_effect(attacker_dt, attacker_ost, roll.return_damage, roll.collision and roll.return_applies,
                        threshold=threshold, timing=timing, loss=loss, ost_applies=return_costs_ost)
    return tgt, att


# --- the odds command and outcome cases (§17, §18) ---------------------------------------------------------------

class Required(enum.Enum):
    """The default of a parameter that must be given (the parameter tables' ``REQUIRED``)."""

    REQUIRED = "required"


_Required = Required
REQUIRED = _REQUIRED = Required.REQUIRED

#: A parsed parameter value: an integer, a flag, one of a parameter's named choices, or ``None`` (not given).
ParamValue = int | bool | str | None
#: A parameter's kind: ``"int"``, ``"bool"`` or the tuple of its allowed strings.
ParamKind = str | tuple[str, ...]
#: Parameters of one mode: name -> (kind, default).
ParamSpec = dict[str, tuple[ParamKind, ParamValue | _Required]]

#: §17.1 parameters: name -> (kind, default).  kind: "int", "bool" or a tuple of allowed strings.
SHOT_PARAMS: ParamSpec = {
    "reality_com": ("int", _REQUIRED), "to_hit": ("int", 0), "roll_mod": ("int", 0), "range_m": ("int", _REQUIRED),
    "target_size": ("int", _REQUIRED), "shooter_moved_half": ("bool", False), "hard_cover": ("bool", False),
    "tn_mod": ("int", 0), "firepower": ("int", _REQUIRED), "target_dur": ("int", _REQUIRED),
    "aspect": (("front", "side", "rear"), "front"), "indirect": ("bool", False), "reinforced_turret": ("bool", False),
    "damage_dice": ("int", _REQUIRED), "damage_keep": ("int", _REQUIRED), "damage_mod": ("int", 0),
    "burst": ("int", 1), "target_dt": ("int", _REQUIRED),
}
#: §17.2 parameters (``ones_tens_rule`` defaults to the ``pool_ones_tens_rule`` option).
RAM_PARAMS: ParamSpec = {
    "pool": ("int", _REQUIRED), "tn_to_be_struck": ("int", _REQUIRED), "damage_from_strike": ("int", _REQUIRED),
    "strike_mod": ("int", 0), "target_dur": ("int", _REQUIRED), "target_size": ("int", _REQUIRED),
    "target_dt": ("int", _REQUIRED), "attacker_size": ("int", None), "attacker_dur": ("int", 0),
    "attacker_dt": ("int", None), "target_damage_from_strike": ("int", 0), "target_strike_mod": ("int", 0),
    "ones_tens_rule": ("bool", None),
}
#: §17.3 parameters.
CHECK_PARAMS: ParamSpec = {
    "pool": ("int", _REQUIRED), "tn": ("int", _REQUIRED), "successes": ("int", 1), "ones_tens_rule": ("bool", None),
}
#: Extra parameters of outcome cases (§18), besides ``dice``.
OUTCOME_EXTRA: dict[str, ParamSpec] = {
    "shot": {"target_ost": ("int", _REQUIRED)},
    "ram": {"target_ost": ("int", _REQUIRED), "attacker_ost": ("int", None)},
    "check": {},
    "panic_check": {"mentality": ("int", _REQUIRED), "ost": ("int", 0), "ones_tens_rule": ("bool", None)},
}
#: Lower bounds (and a few upper bounds that keep the exact computation small) checked after parsing.
_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "range_m": (0, None), "target_size": (1, None), "firepower": (0, None), "target_dur": (0, None),
    "damage_dice": (1, 200), "damage_keep": (1, 200), "burst": (1, 200), "target_dt": (0, None),
    "pool": (0, 200), "tn_to_be_struck": (1, None), "damage_from_strike": (0, None), "attacker_size": (1, None),
    "attacker_dur": (0, None), "attacker_dt": (1, None), "target_damage_from_strike": (0, None),
    "successes": (0, None), "target_ost": (0, None), "attacker_ost": (0, None), "mentality": (0, 200), "ost": (0, 0),
}
_INT_CHARS = set("0123456789")


def _parse_int(name: str, raw: object) -> int:
    from sim.rules.base import CaseError
    if isinstance(raw, bool):
        raise CaseError(f"parameter {name}: expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, Fraction) and raw.denominator == 1:
        return int(raw)
    if isinstance(raw, str):
        t = raw.strip()
        body = t[1:] if t[:1] in "+-" else t
        if body and set(body) <= _INT_CHARS:
            return int(t)
    raise CaseError(f"parameter {name}: expected an integer, got {raw!r}")


def _parse_bool(name: str, raw: object) -> bool:
    from sim.rules.base import CaseError, flag_value
    b = flag_value(raw)
    if b is None:
        raise CaseError(f"parameter {name}={raw!r}: expected true or false")
    return b


def _parse_value(name: str, kind: ParamKind, raw: object) -> ParamValue:
    from sim.rules.base import CaseError
    if kind == "int":
        v = _parse_int(name, raw)
        lo, hi = _BOUNDS.get(name, (None, None))
        if lo is not None and v < lo:
            raise CaseError(f"parameter {name}: must be >= {lo}, got {v}")
        if hi is not None and v > hi:
            raise CaseError(f"parameter {name}: must be <= {hi}, got {v}")
        return v
    if kind == "bool":
        return _parse_bool(name, raw)
    assert isinstance(kind, tuple)
    if isinstance(raw, str) and raw.strip() in kind:
        return raw.strip()
    raise CaseError(f"parameter {name}: expected one of {', '.join(kind)}, got {raw!r}")


def parse_params(params: Mapping[str, object], *, outcome: bool = False
                 ) -> tuple[str, dict[str, ParamValue], HQOptions]:
    """Parse ``tanksim odds hummel_quest name=value ...`` parameters (§17) into ``(mode, values, options)``.

    Values may be strings (command line) or already-typed YAML values.  Besides the mode's own parameters, any
    §16 option name is accepted as an override (DECISION: e.g. ``band_edges=upper_inclusive``; options not given
    take their defaults).  Unknown names, missing required parameters and malformed values raise
    :class:`~sim.rules.base.CaseError`.  ``outcome=True`` also accepts the §18 outcome-case parameters.
    """
    from pydantic import ValidationError

    from sim.rules.base import CaseError
    from sim.rules.hummel_quest.stats import HQOptions

    if not isinstance(params, Mapping):
        raise CaseError(f"parameters must be a mapping of name -> value, got {type(params).__name__}")
    mode = str(params.get("mode", "shot")).strip()
    table = {"shot": SHOT_PARAMS, "ram": RAM_PARAMS, "check": CHECK_PARAMS}
    if outcome:
        if mode not in OUTCOME_EXTRA:
            raise CaseError(f"unknown outcome mode {mode!r}; expected one of {', '.join(OUTCOME_EXTRA)}")
        spec = dict(table.get(mode, {}))
        spec.update(OUTCOME_EXTRA[mode])
    else:
        if mode not in table:
            raise CaseError(f"unknown mode {mode!r}; expected one of shot, ram, check")
        spec = dict(table[mode])
    option_fields = HQOptions.model_fields
    values: dict[str, ParamValue] = {}
    overrides: dict[str, object] = {}
    for name, raw in params.items():
        if name == "mode":
            continue
        if name in spec:
            values[name] = _parse_value(name, spec[name][0], raw)
        elif name in option_fields:
            overrides[name] = raw.strip() if isinstance(raw, str) else raw
        else:
            known = sorted(set(spec) | {"mode"})
            raise CaseError(f"unknown parameter {name!r} for mode={mode}"
                            f"{did_you_mean(name, [*known, *option_fields])}; known: {', '.join(known)} "
                            f"(and the options of hummel_quest.md §16)")
    for name, (_kind, default) in spec.items():
        if name not in values:
            if isinstance(default, _Required):
                raise CaseError(f"missing required parameter {name!r} for mode={mode}")
            values[name] = default
    try:
        opts = HQOptions.model_validate(overrides)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(map(str, e['loc']))}: {error_message(e)}" for e in exc.errors())
        raise CaseError(f"bad option override: {msgs}") from None
    if values.get("ones_tens_rule", 0) is None:
        values["ones_tens_rule"] = opts.pool_ones_tens_rule
    if mode == "shot" and _int_param(values, "damage_keep") > _int_param(values, "damage_dice"):
        raise CaseError(f"damage_keep {values['damage_keep']} > damage_dice {values['damage_dice']}")
    return mode, values, opts


def _int_param(v: Mapping[str, ParamValue], name: str) -> int:
    """The parsed integer parameter ``name`` of ``v``; raises :class:`~sim.rules.base.CaseError` if it is not one."""
    x = v[name]
    if isinstance(x, int):
        return int(x)
    from sim.rules.base import CaseError
    raise CaseError(f"parameter {name}: expected an integer, got {x!r}")


def _opt_int_param(v: Mapping[str, ParamValue], name: str) -> int | None:
    """Like :func:`_int_param`, for a parameter that may be left out (``None``)."""
    return None if v[name] is None else _int_param(v, name)


def dist_json(d: Mapping[int, Fraction]) -> dict[str, str]:
    """A distribution as §17 JSON: integer-string keys ascending, zero entries left out, fraction strings."""
    from sim.rules.base import fraction_str
    return {str(k): fraction_str(v) for k, v in sorted(d.items()) if v != 0}


@dataclass(frozen=True)
class ShotSetup:
    """A §17.1 shot worked out: band, TN, effective Dur, legality and the odds key."""

    band: Band
    tn: int
    effective_dur: int
    damaging: bool
    legal: bool
    reason: str | None
    key: ShotKey


def shot_setup(v: Mapping[str, ParamValue], opts: HQOptions) -> ShotSetup:
    """Band, TN, effective Dur, Firepower test and legality of a §17.1 shot (one weapon), plus its :class:`ShotKey`.

    Illegality reasons, checked in this order (DECISION where several apply): ``beyond_sight`` (direct, range over
    ``max_sight_m``), ``indirect_below_min_range``, ``firepower_below_band`` (``cannot_fire`` mode).
    ``damaging`` needs Firepower >= effective Dur and Firepower >= the band's Firepower needed.
    """
    rng = _int_param(v, "range_m")
    indirect = bool(v["indirect"])
    band = band_of(rng, opts.band_edges)
    cover = bool(v["hard_cover"]) and not indirect
    tn = tn_to_hit(band.tn, _int_param(v, "target_size"), moved_half=bool(v["shooter_moved_half"]), half_cover=cover,
                   tn_mod=_int_param(v, "tn_mod"), tn_min=opts.tn_min, tn_clamp=opts.tn_clamp)
    eff = effective_dur(_int_param(v, "target_dur"), indirect=indirect, aspect=str(v["aspect"]),
                        reinforced_turret=bool(v["reinforced_turret"]), half_cover=cover)
    fp = _int_param(v, "firepower")
    reason = None
    if not indirect and rng > opts.max_sight_m:
        reason = "beyond_sight"
    elif indirect and rng < opts.min_indirect_m:
        reason = "indirect_below_min_range"
    elif fp < band.fp_needed and opts.fp_requirement_mode == "cannot_fire":
        reason = "firepower_below_band"
    damaging = fp >= eff and fp >= band.fp_needed
    w = WeaponKey(damaging, _int_param(v, "damage_dice"), _int_param(v, "damage_keep"), _int_param(v, "damage_mod"),
                  _int_param(v, "burst"))
    bonus = _int_param(v, "reality_com") + _int_param(v, "to_hit") + _int_param(v, "roll_mod")
    key = ShotKey(tn=tn, roll_bonus=bonus, weapons=(w,), target_dt=_int_param(v, "target_dt"),
                  to_hit_naturals=opts.to_hit_naturals, burst_first_shot=opts.burst_first_shot,
                  overkill_roll=opts.overkill_roll, ost_hit_threshold_dt=opts.ost_hit_threshold_dt,
                  ost_hit_timing=opts.ost_hit_timing)
    return ShotSetup(band, tn, eff, damaging, reason is None, reason, key)


def ram_key_from_values(v: Mapping[str, ParamValue], opts: HQOptions) -> RamKey:
    """The :class:`RamKey` of §17.2 parameters: TN capped at ``ram_tn_cap``; return damage only when
    ``attacker_size`` is given and the target's Size is at least the attacker's."""
    tn = min(opts.ram_tn_cap, _int_param(v, "tn_to_be_struck"))
    dmg = ram_damage(_int_param(v, "damage_from_strike"), _int_param(v, "strike_mod"), _int_param(v, "target_dur"),
                     _int_param(v, "target_size"))
    applies = v["attacker_size"] is not None and _int_param(v, "target_size") >= _int_param(v, "attacker_size")
    ret = 0
    if applies:
        ret = ram_damage(_int_param(v, "target_damage_from_strike"), _int_param(v, "target_strike_mod"),
                         _int_param(v, "attacker_dur"), _int_param(v, "attacker_size"))
    return RamKey(pool=_int_param(v, "pool"), tn=tn, damage=dmg, return_damage=ret,
                  target_dt=_int_param(v, "target_dt"), attacker_dt=_opt_int_param(v, "attacker_dt"),
                  ones_tens=bool(v["ones_tens_rule"]), ost_hit_threshold_dt=opts.ost_hit_threshold_dt,
                  ost_hit_timing=opts.ost_hit_timing, return_applies=applies)


def shot_json(s: ShotSetup) -> dict[str, object]:
    """The §17.1 JSON object of a worked-out shot."""
    from sim.rules.base import fraction_str
    out: dict[str, object] = {
        "mode": "shot", "legal": s.legal, "reason": s.reason, "band": s.band.number, "band_tn": s.band.tn,
        "fp_needed": s.band.fp_needed, "tn": s.tn, "effective_dur": s.effective_dur, "damaging": s.damaging,
    }
    if not s.legal:
        out.update(p_hit="0", damage={"0": "1"}, expected_damage="0", p_kill="0", p_ost_loss="0",
                   p_core_destroyed="0")
        return out
    o = attack_odds(s.key)
    out.update(p_hit=fraction_str(o.p_hit), damage=dist_json(o.damage), expected_damage=fraction_str(o.expected_damage),
               p_kill=fraction_str(o.p_kill), p_ost_loss=fraction_str(o.p_ost_loss),
               p_core_destroyed=fraction_str(o.p_core_destroyed))
    return out


def ram_json(key: RamKey) -> dict[str, object]:
    """The §17.2 JSON object of a ram key (``p_attacker_incapacitated`` only when the attacker's DT is known)."""
    from sim.rules.base import fraction_str
    o = ram_odds(key)
    out: dict[str, object] = {
        "mode": "ram", "tn": key.tn, "p_success": fraction_str(o.p_success), "p_hit": fraction_str(o.p_success),
        "p_kill": fraction_str(o.p_kill), "damage": dist_json(o.damage),
        "expected_damage": fraction_str(o.expected_damage), "damage_on_collision": key.damage,
        "return_damage": dist_json(o.return_damage), "return_damage_on_collision": key.return_damage,
        "expected_return_damage": fraction_str(o.expected_return_damage),
    }
    if o.p_attacker_incapacitated is not None:
        out["p_attacker_incapacitated"] = fraction_str(o.p_attacker_incapacitated)
    out["p_ost_loss"] = fraction_str(o.p_ost_loss)
    out["p_core_destroyed"] = fraction_str(o.p_core_destroyed)
    return out


def check_json(pool: int, tn: int, successes: int, ones_tens: bool) -> dict[str, object]:
    """The §17.3 JSON object of a pool check."""
    from sim.rules.base import fraction_str
    o = check_odds(pool, tn, successes, ones_tens)
    return {"mode": "check", "pool": pool, "tn": tn, "successes": successes,
            "p_success": fraction_str(o.p_success), "p_auto_fail": fraction_str(o.p_auto_fail),
            "p_auto_pass": fraction_str(o.p_auto_pass), "p_hit": fraction_str(o.p_success), "p_kill": "0"}


def odds_from_params(params: Mapping[str, object]) -> dict[str, object]:
    """``tanksim odds hummel_quest name=value ...`` (§17): the JSON object for ``mode`` shot / ram / check.

    Probabilities and expected values are exact fraction strings; ``damage`` / ``return_damage`` are
    ``{"value": "fraction"}`` distributions.  Raises :class:`~sim.rules.base.CaseError` on bad parameters.
    """
    mode, v, opts = parse_params(params)
    if mode == "shot":
        return shot_json(shot_setup(v, opts))
    if mode == "ram":
        return ram_json(ram_key_from_values(v, opts))
    return check_json(_int_param(v, "pool"), _int_param(v, "tn"), _int_param(v, "successes"), bool(v["ones_tens_rule"]))


def outcome_from_params(params: Mapping[str, object], dice: DiceSource) -> dict[str, object]:
    """Resolve one §18 outcome case with ``dice`` through the same stages play uses; returns the expect keys.

    Modes: ``shot`` (:func:`roll_attack` + :func:`damage_effect`), ``ram`` (:func:`roll_ram` + :func:`ram_effect`),
    ``check`` and ``panic_check`` (:func:`roll_pool`; a passed Mentality check sets OST to 1, §11.1).
    """
    mode, v, opts = parse_params(params, outcome=True)
    if mode == "shot":
        s = shot_setup(v, opts)
        dt, ost = _int_param(v, "target_dt"), _int_param(v, "target_ost")
        if not s.legal:
            return {"result": "not_legal", "reason": s.reason, "tn": s.tn, "to_hit_total": None, "damage": 0,
                    "dt_after": dt, "ost_after": ost, "incapacitated": dt <= 0, "panicked": ost <= 0,
                    "core_destroyed": False}
        roll = roll_attack(s.key, dice)
        eff = damage_effect(dt, ost, roll.damage, roll.any_hit, threshold=opts.ost_hit_threshold_dt,
                            timing=opts.ost_hit_timing, loss=opts.ost_hit_loss, core_destroyed=roll.core_destroyed)
        return {"result": "hit" if roll.any_hit else "miss", "reason": None, "tn": s.tn,
                "to_hit_total": roll.total, "natural": roll.natural, "damage": roll.damage,
                "dt_after": eff.dt_after, "ost_after": eff.ost_after, "incapacitated": eff.incapacitated,
                "panicked": eff.panicked, "core_destroyed": eff.core_destroyed,
                "hits": sum(1 for x in roll.shots if x.hit)}
    if mode == "ram":
        key = ram_key_from_values(v, opts)
        ram_roll = roll_ram(key, dice)
        adt = _opt_int_param(v, "attacker_dt")
        aost = _opt_int_param(v, "attacker_ost")
        tgt, att = ram_effect(ram_roll, target_dt=_int_param(v, "target_dt"), target_ost=_int_param(v, "target_ost"),
                              attacker_dt=adt if adt is not None else 10 ** 9,
                              attacker_ost=aost if aost is not None else 10 ** 9,
                              threshold=opts.ost_hit_threshold_dt, timing=opts.ost_hit_timing,
                              loss=opts.ost_hit_loss, return_costs_ost=opts.ram_return_costs_ost)
        return {"result": "collision" if ram_roll.collision else "evaded", "successes": ram_roll.check.successes,
                "tn": key.tn, "damage": ram_roll.damage, "dt_after": tgt.dt_after, "ost_after": tgt.ost_after,
                "return_damage": ram_roll.return_damage,
                "attacker_dt_after": att.dt_after if adt is not None else None,
                "attacker_ost_after": att.ost_after if aost is not None else None,
                "attacker_incapacitated": att.incapacitated if adt is not None else None,
                "incapacitated": tgt.incapacitated, "panicked": tgt.panicked, "core_destroyed": tgt.core_destroyed}
    if mode == "check":
        r = roll_pool(dice, _int_param(v, "pool"), _int_param(v, "tn"), _int_param(v, "successes"),
                      bool(v["ones_tens_rule"]), "check")
        return {"result": "pass" if r.passed else "fail", "successes": r.successes, "how": r.how}
    # panic_check
    r = roll_pool(dice, _int_param(v, "mentality"), opts.panic_check_tn, opts.panic_check_successes,
                  bool(v["ones_tens_rule"]), "mentality")
    return {"result": "recovered" if r.passed else "flee", "successes": r.successes, "how": r.how,
            "ost_after": 1 if r.passed else 0, "panicked": not r.passed, "flees": not r.passed}
