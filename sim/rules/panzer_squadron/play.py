"""Rule set ``panzer_squadron``: the Panzer Squadron hex tank game (docs/rules/panzer_squadron.md, D1-D22).

Shooting follows seed ``000_0e0b8aa4689ade84.txt`` exactly: a modified ``d10`` read on the hit table (D6), then for a
hit a ``d100`` whose natural 96-100 destroys and 01-05 is a dud before anything is added (D7), else
``penetration + bonus + d100 > armour`` destroys.  The rest (alternate activation, D4/2D4 movement, vertex facing,
ambush, Tiles, sight) follows the spec's decisions.

Decision points yielded by :meth:`PanzerSquadron.play_turn` (each addressed to a side):

* ``activate`` — actors: the side's tanks not yet activated; answer :class:`Activate` with a mode from
  ``legal.modes`` (``hold``, ``fire``, ``move``, ``move_and_fire``, ``ambush``).  Default: the first actor holds.
* ``recentre_turret`` — only with ``auto_recentre_turret: false``, at the start of the activation of a tank whose
  turret is off-centre (section 5.3): ``Special("recentre_turret")`` sets it back to the hull facing at no cost;
  ``Pass`` (the default) keeps it.  Context: ``turret_facing``, ``facing``.
* ``fire`` — the activated tank may fire (``Fire(actor, target)``) or ``Pass``.
* ``move_step`` — one step of a move: ``Step`` into a front neighbour (or across the side's exit edge),
  ``Pivot`` by one vertex, ``Fire`` (only in ``move_and_fire`` with 3 points left),
  ``Special("end_move", {"status": ...})`` or ``Pass`` to stop.  Context: ``mp`` left, ``entered``,
  ``compulsory`` (a hex entry is still owed), ``can_fire``, ``interrupted`` (after an ambush shot at the mover),
  ``final`` (nothing is left to do but choose the marker: ``Pass`` or ``end_move``).
* ``react`` — the ambushers of the other side that may fire at the mover that just entered a hex; answer
  ``Fire(ambusher, mover)`` (one at a time, in the order the side chooses) or ``Pass``.

Decisions taken here where the spec is silent (also in the README's "Rules decisions"; each checked by a play case
of ``tests/cases/play_panzer_squadron.yaml``):

* Compulsory hex (section 4): "any legal entry is affordable" counts an entry after pivots and leaving across the
  exit edge; while the entry is owed, passing, ``end_move``, a shot and a pivot after which no entry is affordable
  are illegal (the default is the first action of the cheapest entry).
* Marker after a move (D20): when nothing is left to do, one last ``move_step`` decision (``final``) still takes
  the owner's choice, so a plan's ``end_status`` reaches the rules however the move ends.
* Exit edge (section 11): leaving costs :data:`EXIT_COST` (1, as open ground) across a front hexside that crosses
  the side's exit edge; it is not a hex entry for ambushes.
* Re-centring with ``auto_recentre_turret: false`` (section 5.3): asked; the default keeps the turret.
"""
from __future__ import annotations

import weakref
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Callable, Generator, Hashable, Iterable, Literal, Mapping, TypeVar, cast

from pydantic import Field

from sim.actions import Action, Activate, Fire, Pass, Pivot, Plan, Special, Step
from sim.battle import Battle, BattleState, BoardView, TankState, sight_matrix
from sim.dice import DiceSource
from sim.events import (
    Activated,
    BattleStateSet,
    Moved,
    Pivoted,
    RuleEvent,
    ShotResolved,
    Status,
    StatusChanged,
    TankStateSet,
    TurretTurned,
)
from sim.hexgrid import (
    DIRECTIONS,
    FRONT,
    PAIR_CACHE_MAX,
    REAR,
    SIDE,
    Hex,
    HexMap,
    as_hex,
    bounded_dijkstra,
    sight_lines,
)
from sim.rules.base import CaseError, Decision, Hypo, Illegal, Legal, Odds, Outcome, Ruleset, RulesOptions, Shot
from sim.rules.panzer_squadron import data as ps_data
from sim.rules.panzer_squadron.data import DEFAULT_TILES, Tile, Vehicle, catalog, find_vehicle
from sim.rules.panzer_squadron.odds import (
    IN_MOVEMENT,
    STATIONARY,
    PSKey,
    key_from_params,
    net_modifier,
    odds_json,
    resolve_key,
    shot_odds,
)
from sim.rules.panzer_squadron.sight import SightRules, clear_lines, shot_geometry, thicker, turret_facing_for
from sim.victory import draw, most_tanks, standard_outcome

MODES = ("hold", "fire", "move", "move_and_fire", "ambush")
#: One option of a ``move_step``: the (hex, facing) after it (``None`` after leaving across the exit edge), its
#: movement points and the action.
_MoveOption = tuple[tuple[Hex, int] | None, int, Action]
FIRE_COST = 3
#: Movement points to leave the board across the side's exit edge (section 11; decided: as open ground).
EXIT_COST = 1


class PSOptions(RulesOptions):
    """Scenario options of section 13 (defaults as the spec), plus extra ``tiles`` types (D17)."""

    initiative: Literal["roll", "alternate"] = "roll"
    moving_may_fire_in_place: bool = False
    allow_reverse: bool = False
    auto_recentre_turret: bool = True
    initial_status: Literal["stationary", "in_movement"] = STATIONARY
    max_range_hexes: int | None = Field(default=None, ge=1)
    los_origin: Literal["centre", "front_vertex"] = "centre"
    hexside_blocks: Literal["both", "either"] = "both"
    live_tanks_block_los: bool = False
    exceptional_modifier: int = -1
    max_turns: int = Field(default=20, ge=1)
    turn_limit_result: Literal["draw", "most_tanks"] = "draw"
    tiles: dict[str, Tile] = Field(default_factory=dict)


class PSTankExt(RulesOptions):
    """Per-tank scenario block: ``status`` overrides ``initial_status``; ``turret_facing`` sets an off-centre
    turret at the start."""

    status: Literal["stationary", "in_movement"] | None = None
    turret_facing: int | None = Field(default=None, ge=0, le=5)


# --- the rule set ------------------------------------------------------------------------------------------------

class PanzerSquadron(Ruleset):
    """The ``panzer_squadron`` rule set (see the module docstring for its decision points)."""

    name = "panzer_squadron"
    Options = PSOptions
    TankExt = PSTankExt
    has_ramming = False
    #: A legal shot needs 2+ clear lines (6.4) or a legal masked-side situation (7.2, ``los`` partial), so its
    #: geometry's ``los`` is never ``blocked``, and :meth:`visible` counts exactly the enemies some live tank of the
    #: side has a geometry ``los`` other than ``blocked`` to (section 8 step 1; ``tests/test_ps_known_ids.py``).
    shots_need_sight = True

    # catalog ---------------------------------------------------------------------------------------------------
    def vehicle(self, vid: str) -> Vehicle:
        return find_vehicle(vid)

    def vehicle_ids(self) -> tuple[str, ...]:
        return tuple(catalog())

    def catalog_records(self) -> dict[str, dict[str, Any]]:
        """The cards of ``panzer_squadron_vehicles.yaml`` keyed by id (numbers as ``{value, derived, basis}``)."""
        return ps_data.catalog_records()

    def vehicle_from_record(self, vid: str, record: Mapping[str, Any], options: Any = None) -> Vehicle:
        """A card in the catalog's schema (section 2; :class:`~sim.rules.panzer_squadron.data.VehicleRecord`)."""
        return ps_data.vehicle_from_record(vid, record)

    def has_turret(self, vehicle: Vehicle) -> bool:
        return vehicle.turret

    def tiles(self, options: PSOptions) -> Mapping[str, Tile]:
        """The Tiles by terrain name: the defaults with the scenario's ``tiles`` over them (kept per options
        object: options are not changed after validation)."""
        ent = _TILES.get(id(options))
        if ent is not None and ent[0] is options:
            return ent[1]
        return _per_object(_TILES, options, lambda o: MappingProxyType({**DEFAULT_TILES, **o.tiles}))

    def terrain_names(self, options: PSOptions | None = None) -> tuple[str, ...]:
        return tuple(self.tiles(options or PSOptions()))

    def default_turn_limit(self, options: PSOptions) -> int:
        return options.max_turns

    passable_is_static = True  # terrain and options only

    def passable(self, battle: BoardView, h: Hex) -> bool:
        return h in battle.map and not self.tile(battle, h).blocks_move

    def impassable_terrains(self, battle: BoardView) -> frozenset[str]:
        """The terrains whose Tile has ``blocks_move`` (:meth:`passable` reads nothing else)."""
        return frozenset(name for name, t in self.tiles(battle.options).items() if t.blocks_move)

    def tile(self, battle: BoardView, h: Hex) -> Tile:
        return self.tiles(battle.options)[battle.map.terrain(h)]

    # set-up ----------------------------------------------------------------------------------------------------
    def setup(self, battle: Battle) -> None:
        for t in battle.tanks:
            ext = t.ext or {}
            t.rules_state.setdefault("marker", ext.get("status") or battle.options.initial_status)
            t.rules_state.setdefault("ambush", False)
            t.rules_state.setdefault("activated_turn", 0)
            t.rules_state.setdefault("start_status", t.rules_state["marker"])
            if not t.vehicle.turret:
                t.turret_facing = None
            elif ext.get("turret_facing") is not None:
                t.turret_facing = ext["turret_facing"]

    # sight -----------------------------------------------------------------------------------------------------
    def obstacles(self, battle: BoardView) -> frozenset[Hex]:
        """Obstacle hexes (6.1): ``blocks_los`` Tiles and wrecks, cached under the map version; plus live tanks
        when ``live_tanks_block_los``."""
        base = battle.map.cached(("ps_obstacles",), lambda: self.static_obstacles(battle) | _hexes(battle.wrecks()))
        if battle.options.live_tanks_block_los:
            return base | _hexes(battle.live_tanks())
        return base

    def static_obstacles(self, battle: BoardView) -> frozenset[Hex]:
        """The cells whose Tile blocks sight: from the terrain names of the ``blocks_los`` Tiles
        (:meth:`sim.hexgrid.HexMap.cells_with_terrain`, kept until the terrain changes), not a pass over cells."""
        return battle.map.cells_with_terrain([name for name, t in self.tiles(battle.options).items() if t.blocks_los])

    def sight_rules(self, options: PSOptions) -> SightRules:
        return _sight_rules(options.los_origin, options.hexside_blocks, options.max_range_hexes)

    def geometry(self, battle: BoardView, shooter: int, target: int, as_if: Hypo | None = None) -> dict:
        """:func:`shot_geometry` for two tanks on the board.

        When live tanks do not block sight the answer depends only on the two tanks and on the obstacles in the
        pair's sight ellipse, so it is kept across map versions (:meth:`sim.hexgrid.HexMap.pair_cached`) and
        recomputed only when a wreck appears or leaves in that ellipse or the terrain changes."""
        s, t = battle.tanks[shooter], battle.tanks[target]
        hx: Hex | None
        if as_if:
            hx, facing = as_hex(as_if.hex), as_if.facing
            gun = facing
        else:
            hx, facing = s.hex, s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
        th = t.hex
        if hx is None or th is None:
            raise ValueError(f"geometry: tank {shooter if hx is None else target} is not on the board")
        opts = battle.options
        if opts.live_tanks_block_los:
            return shot_geometry(hx, facing, gun, s.vehicle.turret, th, t.facing, t.vehicle.armour,
                                 self.obstacles(battle), self.sight_rules(opts), opts.exceptional_modifier)
        key = ("ps_geo", hx, facing, gun, s.vehicle.turret, th, t.facing, _armour_key(t.vehicle),
               opts.los_origin, opts.hexside_blocks, opts.max_range_hexes, opts.exceptional_modifier)
        return battle.map.pair_cached(key, hx, th, lambda: shot_geometry(
            hx, facing, gun, s.vehicle.turret, th, t.facing, t.vehicle.armour, self.obstacles(battle),
            self.sight_rules(opts), opts.exceptional_modifier))

    def visible(self, battle: BoardView, side: int) -> tuple[int, ...]:
        """Enemy tanks that at least one live tank of ``side`` has a line of sight to (2+ clear lines).  Kept up to
        date pair by pair (:class:`sim.battle.SightMatrix`) when live tanks do not block sight."""
        m = None if battle.options.live_tanks_block_los else sight_matrix(battle, "ps_los", _sees,
                                                                                footprint=_sees_footprint)
        if m is not None:
            return m.visible(side)
        own = battle.live_tanks(side)
        out = []
        for e in battle.enemies_of(side):
            if any(self.geometry(battle, s.tank_id, e.tank_id)["los"] != "blocked" for s in own):
                out.append(e.tank_id)
        return tuple(out)

    # shots -----------------------------------------------------------------------------------------------------
    def shot(self, battle: BoardView, shooter: int, target: int | Hex, fire: Action | None = None,
             as_if: Hypo | None = None) -> Shot | Illegal:
        """The shot ``shooter`` -> ``target`` now (or from the hypothetical ``as_if`` position), or why not.

        ``target`` may be anything a :class:`Fire` names: a hex or a bad id is ``Illegal`` (sections 6, 8).
        Raises ``ValueError`` (from :meth:`geometry`) when the shooter is off the board."""
        if not isinstance(target, int) or not 0 <= target < len(battle.tanks):
            return Illegal("target is not a tank")
        s, t = battle.tanks[shooter], battle.tanks[target]
        if not t.alive or t.hex is None:
            return Illegal("target is not a live tank")
        if t.side == s.side:
            return Illegal("target is a friendly tank")
        hx = as_hex(as_if.hex) if as_if else s.hex
        if hx is None:
            raise ValueError(f"geometry: tank {shooter} is not on the board")
        if as_if:
            status = IN_MOVEMENT if as_if.moved and s.rules_state.get("start_status") == IN_MOVEMENT else \
                s.rules_state.get("start_status", STATIONARY)
        elif battle.rules_state.get("active") == shooter:
            status = s.rules_state["start_status"]
        else:
            status = s.rules_state["marker"]
        target_moving = t.rules_state.get("marker") == IN_MOVEMENT
        opts = battle.options
        if opts.live_tanks_block_los:
            return self._shot(battle, shooter, target, as_if, hx, status, target_moving)
        if as_if:
            facing = gun = as_if.facing
        else:
            facing = s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
        return self._pair_shot(battle, shooter, target, as_if, hx, facing, gun, t.hex, status, target_moving)

    def _pair_shot(self, battle: BoardView, shooter: int, target: int, as_if: Hypo | None, hx: Hex, facing: int,
                   gun: int, th: Hex, status: str, target_moving: bool) -> Shot | Illegal:
        """:meth:`shot` of a pair of enemy tanks on the board (the target live) when live tanks do not block sight,
        its parts worked out by the caller: kept by ``pair_cached``."""
        # everything the shot reads besides the obstacles of the pair's sight ellipse and the terrain, which
        # pair_cached watches: the two tanks (their vehicles are fixed), where they stand and face, the firer's
        # status, whether the target moves, and the options
        t = battle.tanks[target]
        n = _blocked_count(self, battle, hx, facing, th, t.facing, t.vehicle)
        if n is not None:  # no line of sight, whatever else the shot reads (see _blocked_count)
            refused = GeometryIllegal(f"no line of sight ({n} of 7 lines clear)")
            refused.los = "blocked"
            return refused
        key = ("ps_shot", shooter, target, hx, facing, gun, th, t.facing, status, target_moving,
               _options_key(battle.options))
        return battle.map.pair_cached(key, hx, th, lambda: self._shot(battle, shooter, target, as_if, hx, status,
                                                                      target_moving))

    def pair_local_shots(self, battle: BoardView) -> bool:
        """Whether a shot between two tanks reads nothing of the board but those two tanks (hex, facing, turret
        facing, status, ``rules_state``), ``battle.rules_state`` (the active tank), the options, the terrain and
        the wrecks: true unless live tanks block sight (6.1), which makes every live tank an obstacle.  Caches kept
        across versions (:class:`agents.observation.Observation`'s threat) then patch only the pairs of the tanks
        that changed (``BattleState.state_changes``) and redo everything when the map changes."""
        return not battle.options.live_tanks_block_los

    def shot_footprint(self, battle: BoardView, shot: Shot | Illegal, firer_hex: Hex, firer_facing: int,
                       target_hex: Hex) -> Callable[[Hex], bool] | None:
        """For the answer ``shot`` of a shot from ``firer_hex`` (hull facing ``firer_facing``) at ``target_hex``:
        ``touches(h)``, true for every hex whose obstacles could change that answer (:func:`_footprint`: the hexes
        the geometry read), or ``None`` when any obstacle change may (an exceptional-line geometry, a refusal
        not made by the geometry).  With :meth:`pair_local_shots`, what caches kept across versions drop an
        answer by when a wreck appears or leaves."""
        fp = _footprint(shot, firer_hex, firer_facing, target_hex, battle.options)
        if fp is None:
            return None
        aq, ar = firer_hex
        low, bits = fp

        def touches(c: Hex) -> bool:
            i = c[0] - aq + _FP_W * (c[1] - ar) - low
            return i >= 0 and (bits >> i) & 1 == 1
        return touches

    def shots(self, battle: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None
              ) -> list[Shot | Illegal]:
        """``[shot(battle, shooter, t, None, as_if) for t in targets]`` (the same answers, in that order), with the
        firer's part (hex, facing, gun, status) worked out once and each pair answered from :func:`_front_cache`
        when it holds the pair.  Raises ``ValueError`` when the shooter is off the board and a target is a live
        enemy (as :meth:`shot`).

        A battle's answers for several targets are also kept across versions (:func:`_lasting_shots`): asked again
        after events that changed only other tanks, only the pairs of the targets that changed are redone."""
        if isinstance(battle, BattleState) and not battle.options.live_tanks_block_los:
            ts = tuple(targets)
            if len(ts) > 1:
                return _lasting_shots(self, battle, shooter, ts, as_if)
            targets = ts
        return self._shots_now(battle, shooter, targets, as_if)

    def odds_bound(self, battle: BoardView, shooter: int, target: int, as_if: Hypo | None = None) -> Odds | None:
        """An upper bound on the odds of :meth:`shot` ``shooter`` -> ``target`` (``as_if`` as there): odds whose
        ``p_kill`` and ``p_hit`` are at least the shot's own, or ``None`` when the shot is surely illegal.  What a
        doctrine picking its best target (:meth:`agents.observation.Observation.best_by_bound`) ranks the enemies
        by, so that it works out the exact shots best bound first and stops when no bound can beat the best.

        It is the shot with its seven lines of sight taken as clear (no obstacle counted on them), everything else
        exact: the range and its bonus, the turret rotation and the hull arc (5.3), the face struck and its armour
        (7.1, D2), side masking and, for a masked side, the exceptional lines (7.2 step 3, counted for real), the
        maximum range, the statuses and the Tile modifiers (8.1).  **Why it is sound**: of the whole shot only the
        seven-line count of an unmasked face depends on the lines, and it enters in one place (7.2, 8.1): 7 clear
        lines give cover 0, 2 to 6 give cover -1, 0 or 1 make the shot illegal; the face, its armour and every
        other modifier are read before the count.  So the real shot is illegal or has the same penetration and
        armour and a net modifier lower by 0 or 1.  The odds (D22, :func:`shot_odds`) do not fall as the modifier
        rises: each natural d10 lands on the same or a better row of the hit table (D6: miss, then bonus 0, 10, 20,
        30, 50) and a higher bonus never lowers the penetration chance (D7), so both ``p_hit`` and ``p_kill`` of
        the clear-lines key are >= the real ones.  With live tanks blocking sight (6.1) the bound is the exact
        odds (the shot itself).  ``tests/test_ps_odds_bound.py`` checks the bound against the exact odds."""
        if battle.options.live_tanks_block_los:
            sh = self.shot(battle, shooter, target, None, as_if)
            return None if isinstance(sh, Illegal) else shot_odds(sh.key)
        tanks = battle.tanks
        if target.__class__ is not int or not 0 <= target < len(tanks):
            return None
        s, t = tanks[shooter], tanks[target]
        th = t.hex
        if not t.alive or th is None or t.side == s.side:
            return None
        if as_if:
            hx = as_hex(as_if.hex)
            facing = gun = as_if.facing
            status = IN_MOVEMENT if as_if.moved and s.rules_state.get("start_status") == IN_MOVEMENT else \
                s.rules_state.get("start_status", STATIONARY)
        else:
            here = s.hex
            if here is None:
                raise ValueError(f"geometry: tank {shooter} is not on the board")
            hx, facing = here, s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
            status = s.rules_state["start_status"] if battle.rules_state.get("active") == shooter else \
                s.rules_state["marker"]
        key = self._bound_key(battle, s, t, hx, facing, gun, status)
        if key is False:  # a masked side: the shot itself (its exceptional lines counted)
            sh = self.shot(battle, shooter, target, None, as_if)
            return None if isinstance(sh, Illegal) else shot_odds(sh.key)
        return None if key is None else shot_odds(key)

    def _bound_key(self, battle: BoardView, s: TankState, t: TankState, hx: Hex, facing: int, gun: int,
                   status: str) -> PSKey | None | bool:
        """The key of :meth:`odds_bound`'s odds (``None``: surely illegal), or ``False`` when the struck side is
        masked (7.2: the bound would count the exceptional lines, as the shot does; the caller asks the shot).

        The geometry of :func:`shot_geometry` up to the line count, written out for one pair (the range, the arc
        test, the aspect with D2's thicker face on a boundary, the masking test of the side's hexside), then the
        range and hull-arc limits and the net modifier with cover 0 (seven clear lines)."""
        th = t.hex
        assert th is not None
        dq, dr = th[0] - hx[0], th[1] - hx[1]
        rng = max(abs(dq), abs(dr), abs(dq + dr))
        a, b, c = dq, dr, -dq - dr
        for _ in range(gun % 6):
            a, b, c = -b, -c, -a
        rotated = a < max(b, c)
        opts = battle.options
        rules = self.sight_rules(opts)
        if (rules.max_range_hexes is not None and rng > rules.max_range_hexes) or (rotated and not s.vehicle.turret):
            return None
        a, b, c = -dq, -dr, dq + dr
        tf = t.facing
        for _ in range(tf % 6):
            a, b, c = -b, -c, -a
        hi, lo = (b, c) if b >= c else (c, b)
        armour = t.vehicle.armour
        if a > hi or (a == b == c == 0):
            face = FRONT
        elif a == hi:
            face = thicker(armour, (FRONT, SIDE))
        elif a < lo:
            face = REAR
        elif a == lo:
            face = thicker(armour, (SIDE, REAR))
        else:
            face = SIDE
        if face == SIDE:
            across = th.neighbour((tf + 1) % 6 if c > b else (tf + 4) % 6)
            if across != hx and across in self.obstacles(battle):
                return False
        tiles = self.tiles(opts)
        tile_mod = tiles[battle.map.terrain(th)].target_modifier + tiles[battle.map.terrain(hx)].firer_modifier
        m = net_modifier(firer_status=status, turret_rotated=rotated,
                         target_moving=t.rules_state.get("marker") == IN_MOVEMENT,
                         cover_modifier=0, range_hexes=rng, tile_modifier=tile_mod)
        return PSKey(s.vehicle.penetration, int(armour[face]), m)

    def best_by_bound(self, battle: BoardView, shooter: int, targets: Iterable[int], min_odds: float | None = None
                      ) -> tuple[int, Odds] | None:
        """Of the ``targets`` (enemy ids) of live tank ``shooter`` (on the board, shooting from where it stands),
        the one whose legal shot has the greatest ``(p_kill, p_hit, -target)`` among those with ``p_kill`` or
        ``p_hit`` above 0 and, given ``min_odds``, ``float(p_kill) >= min_odds``, as ``(target, odds)``; ``None``
        if there is none.  The same answer as working out every shot (:meth:`shots`) and taking the best, found by
        branch and bound: the targets are ranked by :meth:`odds_bound` (or by their exact odds where the shot is
        already known), the exact shots worked out best bound first, and the search stops at the first bound
        below the best exact key (every later target's exact key is at most its bound, so below the best; keys
        differ in the target id, so none ties) or failing the filter (a target whose bound fails it fails it
        exactly too: its ``p_kill`` and ``p_hit`` are at most the bound's).  On a :class:`BattleState` whose live
        tanks do not block sight the shots and bounds are kept across versions (:func:`_lasting_best`)."""
        ts = tuple(targets)
        if isinstance(battle, BattleState) and not battle.options.live_tanks_block_los:
            try:
                return _lasting_best(self, battle, shooter, ts, min_odds)
            except TypeError:  # an unhashable target: the plain search
                pass
        best: tuple[int, Odds] | None = None
        bk: tuple[Any, Any, int] | None = None
        for t, sh in zip(ts, self.shots(battle, shooter, ts)):
            if isinstance(sh, Illegal):
                continue
            o = shot_odds(sh.key)
            k = (o.p_kill, o.p_hit, -t)
            if (k[0] <= 0 and k[1] <= 0) or (min_odds is not None and float(k[0]) < min_odds):
                continue
            if bk is None or k > bk:
                bk, best = k, (t, o)
        return best

    def _shots_now(self, battle: BoardView, shooter: int, targets: Iterable[Any], as_if: Hypo | None = None,
                   fps: list[tuple[int, int] | None] | None = None) -> list[Shot | Illegal]:
        """:meth:`shots` without the lasting memo; with ``fps``, also appends there each answer's footprint (the
        hexes whose obstacles it read, :func:`_footprint`, as offsets from the firer; ``None``: the sight ellipse;
        :data:`_NO_HEXES` for a refusal that reads no hex: a target that is no live enemy).  Live tanks must not
        block sight when ``fps`` is given."""
        tanks = battle.tanks
        opts = battle.options
        if opts.live_tanks_block_los:
            return [self.shot(battle, shooter, t, None, as_if) for t in targets]
        s = tanks[shooter]
        if as_if:
            hx: Hex | None = as_hex(as_if.hex)
            facing = gun = as_if.facing
            status = IN_MOVEMENT if as_if.moved and s.rules_state.get("start_status") == IN_MOVEMENT else \
                s.rules_state.get("start_status", STATIONARY)
        else:
            hx, facing = s.hex, s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
            status = s.rules_state["start_status"] if battle.rules_state.get("active") == shooter else \
                s.rules_state["marker"]
        front, changes = _front_cache(battle.map, opts)
        n = len(changes)
        side, ntanks = s.side, len(tanks)
        out: list[Shot | Illegal] = []
        for target in targets:
            if hx is None or target.__class__ is not int or not 0 <= target < ntanks:
                out.append(self.shot(battle, shooter, target, None, as_if))
                if fps is not None:
                    fps.append(_NO_HEXES)
                continue
            t = tanks[target]
            th = t.hex
            if th is None or not t.alive or t.side == side:
                out.append(self.shot(battle, shooter, target, None, as_if))
                if fps is not None:
                    fps.append(_NO_HEXES)
                continue
            key = (shooter, target, hx, facing, gun, th, t.facing, status, t.rules_state.get("marker") == IN_MOVEMENT)
            ent = front.get(key)
            if ent is not None and (ent[1] == n or _still_valid(front, key, ent, changes, hx, th)):
                out.append(ent[0])
                if fps is not None:
                    fps.append(ent[2])
                continue
            v = self._pair_shot(battle, shooter, target, as_if, hx, facing, gun, th, status, key[8])
            fp = _footprint(v, hx, facing, th, opts)
            _front_put(front, key, v, n, fp)
            out.append(v)
            if fps is not None:
                fps.append(fp)
        return out

    def shots_at(self, battle: BoardView, shooters: Iterable[int], target: int) -> list[Shot | Illegal]:
        """``[shot(battle, s, target) for s in shooters]`` (the same answers, in that order), with the target's part
        worked out once and each pair answered from :func:`_front_cache` when it holds the pair: the enemies'
        shots at one tank (a threat).  Raises ``ValueError`` for a shooter off the board (as :meth:`shot`)."""
        tanks = battle.tanks
        opts = battle.options
        if opts.live_tanks_block_los or target.__class__ is not int or not 0 <= target < len(tanks):
            return [self.shot(battle, s, target) for s in shooters]
        t = tanks[target]
        th = t.hex
        if th is None or not t.alive:
            return [self.shot(battle, s, target) for s in shooters]
        tf, tm, tside = t.facing, t.rules_state.get("marker") == IN_MOVEMENT, t.side
        active = battle.rules_state.get("active")
        front, changes = _front_cache(battle.map, opts)
        n = len(changes)
        out: list[Shot | Illegal] = []
        for shooter in shooters:
            s = tanks[shooter]
            hx = s.hex
            if hx is None or s.side == tside:
                out.append(self.shot(battle, shooter, target))
                continue
            facing = s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
            status = s.rules_state["start_status"] if active == shooter else s.rules_state["marker"]
            key = (shooter, target, hx, facing, gun, th, tf, status, tm)
            ent = front.get(key)
            if ent is not None and (ent[1] == n or _still_valid(front, key, ent, changes, hx, th)):
                out.append(ent[0])
                continue
            v = self._pair_shot(battle, shooter, target, None, hx, facing, gun, th, status, tm)
            _front_put(front, key, v, n, _footprint(v, hx, facing, th, opts))
            out.append(v)
        return out

    def shots_at_from(self, battle: BoardView, target: int, hex: Hex, facing: int,
                      shooters: Iterable[tuple[int, Hex, int]]) -> list[Shot | Illegal]:
        """The shots at ``target`` standing on ``hex`` facing ``facing`` of each enemy ``s`` placed on ``sh`` facing
        ``sf`` (its turret keeping its offset) for ``(s, sh, sf)`` in ``shooters``: the same answers, in that
        order, as ``shots_at(HypoView(HypoView(battle, s, sh, sf), target, hex, facing), (s,), target)[0]`` -- the
        threat of enemies where they were last seen (:meth:`agents.observation.Observation.threat`) -- but a pair
        the front cache (:func:`_front_cache`) holds is read from it without building the two views: its key
        (what :meth:`shots_at` reads on those views) is worked out from the two tanks here.  Raises ``ValueError``
        as :meth:`shots_at`."""
        from sim.battle import HypoView

        tanks = battle.tanks
        opts = battle.options
        out: list[Shot | Illegal] = []
        fast = not opts.live_tanks_block_los and target.__class__ is int and 0 <= target < len(tanks) \
            and tanks[target].alive
        if fast:
            t = tanks[target]
            tm, tside = t.rules_state.get("marker") == IN_MOVEMENT, t.side
            active = battle.rules_state.get("active")
            front, changes = _front_cache(battle.map, opts)
            n = len(changes)
        for shooter, sh, sf in shooters:
            if fast:
                s = tanks[shooter]
                if s.side != tside and sh is not None:
                    gun = sf if s.turret_facing is None else (s.turret_facing + sf - s.facing) % 6
                    status = s.rules_state["start_status"] if active == shooter else s.rules_state["marker"]
                    key = (shooter, target, sh, sf, gun, hex, facing, status, tm)
                    ent = front.get(key)
                    if ent is not None and (ent[1] == n or _still_valid(front, key, ent, changes, sh, hex)):
                        out.append(ent[0])
                        continue
            view = HypoView(HypoView(battle, shooter, sh, sf), target, hex, facing)
            out.append(self.shots_at(view, (shooter,), target)[0])
        return out

    def _shot(self, battle: BoardView, shooter: int, target: int, as_if: Hypo | None, hx: Hex, status: str,
              target_moving: bool) -> Shot | Illegal:
        """:meth:`shot` computed (a legal pair of tanks; ``hx`` the shooter's hex, ``status`` its status for the
        shot, ``target_moving`` the target's marker).  The geometry is :meth:`geometry`'s, computed here directly
        (the shot itself is what the caller keeps).

        When live tanks do not block sight, *terrain-only* answers are shared by every battle of the scenario
        (issue 14: batch workers and the benchmark's seeds play on copies of one board,
        :meth:`sim.hexgrid.HexMap.for_another_battle`, which share :meth:`~sim.hexgrid.HexMap.terrain_cached`).  A
        shot reads the obstacles only in its footprint (:func:`_geometry_footprint`), so one computed while no
        wreck lies there is the shot on the terrain alone, the same in every battle on that terrain.  Such shots
        are kept in a dict of the terrain cache (dropped when the terrain changes; at most
        :data:`TERRAIN_SHOTS_MAX` entries, emptied when full) under the key ``(shooter, target, firer hex, facing,
        gun facing, turret, penetration, target hex, target facing, target armour, status, target moving,
        options)`` -- everything the shot reads besides those obstacles: the tanks' ids (in the Shot), the two
        vehicles' figures it uses, where they stand and face, the firer's status, the target's marker and the
        options key (:func:`_options_key`: the sight rules, the exceptional modifier and the Tiles, which decide the
        terrain obstacles and the tile modifiers of the two hexes' terrain); an entry is used only while no wreck of
        this battle lies in its footprint (the battle's wrecks, a few, tested one by one, :func:`_wreck_in`).
        ``tests/test_ps_shots_batch.py`` compares the shots of later battles with the direct computation."""
        s, t = battle.tanks[shooter], battle.tanks[target]
        if as_if:
            facing = gun = as_if.facing
        else:
            facing = s.facing
            gun = facing if s.turret_facing is None else s.turret_facing
        assert t.hex is not None  # shot() checked
        opts = battle.options
        if opts.live_tanks_block_los:
            return self._shot_of(battle, s, t, hx, status, target_moving, shot_geometry(
                hx, facing, gun, s.vehicle.turret, t.hex, t.facing, t.vehicle.armour, self.obstacles(battle),
                self.sight_rules(opts), opts.exceptional_modifier))
        # the terrain-only shots shared by the battles of the scenario (see the docstring for the key)
        hexmap = battle.map
        store: dict[tuple, tuple[Shot | Illegal, tuple[int, int] | None]] = hexmap.terrain_cached(
            ("ps_terrain_shots",), dict)
        th = t.hex
        okey = _options_key(opts)
        key = (shooter, target, hx, facing, gun, s.vehicle.turret, s.vehicle.penetration, th, t.facing,
               _armour_key(t.vehicle), status, target_moving, okey)
        wrecks = _wreck_hexes(battle)
        ent = store.get(key)
        if ent is not None and (not wrecks or not _wreck_in(ent[1], wrecks, hx, th)):
            return ent[0]
        g, fp, clean = _geometry_footprint(battle, hx, facing, gun, s.vehicle, th, t.facing, t.vehicle,
                                           self.obstacles(battle), self.sight_rules(opts), wrecks, okey)
        v = self._shot_of(battle, s, t, hx, status, target_moving, g)
        if clean:
            if len(store) >= TERRAIN_SHOTS_MAX:
                store.clear()
            store[key] = (v, fp)
        return v

    def _shot_of(self, battle: BoardView, s: TankState, t: TankState, hx: Hex, status: str, target_moving: bool,
                 g: dict) -> Shot | Illegal:
        """The shot of ``s`` from ``hx`` at ``t`` (:meth:`_shot`) once its geometry ``g`` (a dict of its own, which
        this fills in) is known: the refusal, or the modifiers (8.1) and the :class:`Shot`."""
        assert t.hex is not None
        if not g["shot_allowed"]:
            refused = GeometryIllegal(g["reason"])
            refused.los = g["los"]
            return refused
        tiles = self.tiles(battle.options)
        tile_mod = tiles[battle.map.terrain(t.hex)].target_modifier + tiles[battle.map.terrain(hx)].firer_modifier
        m = net_modifier(firer_status=status, turret_rotated=g["turret_rotation"], target_moving=target_moving,
                         cover_modifier=g["cover_modifier"], range_hexes=g["range"], tile_modifier=tile_mod)
        key = PSKey(s.vehicle.penetration, g["armour"], m)
        g["firer_status"] = status  # g is this shot's own (computed or copied by the caller, not shared)
        g["tile_modifier"] = tile_mod
        return Shot(s.tank_id, t.tank_id, key, g["face"], MappingProxyType(g))

    def odds(self, key: Hashable) -> Odds:
        """Exact odds (D22) of a shot's key, a :class:`PSKey`; raises ``TypeError`` for any other key."""
        if not isinstance(key, PSKey):
            raise TypeError(f"panzer_squadron odds take a PSKey (a shot's key), not {type(key).__name__}")
        return shot_odds(key)

    def logged_odds(self, key: Mapping[str, Any]) -> Odds:
        """Odds of a logged shot: its key is ``PSKey._asdict()`` (penetration, armour, modifier)."""
        return shot_odds(PSKey(**{f: int(key[f]) for f in PSKey._fields}))

    def resolve(self, battle: Battle, shot: Shot, dice: DiceSource, reaction: bool = False) -> None:
        """Roll ``shot``, emit :class:`ShotResolved` (with its rolls), turn the turret if needed, and destroy the
        target on a kill (it becomes a wreck, D11).  ``shot`` comes from :meth:`shot` (a tank target, a
        :class:`PSKey`); raises ``TypeError`` for any other."""
        key, target = _ps_key(shot), shot.target
        if target is None:
            raise TypeError("panzer_squadron shots are aimed at a tank (shot.target is None)")
        s, t = battle.tanks[shot.shooter], battle.tanks[target]
        if shot.info.get("turret_rotation") and s.turret_facing is not None:
            if s.hex is None or t.hex is None:
                raise ValueError(f"resolve: tank {s.label if s.hex is None else t.label} is not on the board")
            battle.emit(TurretTurned(s.tank_id, turret_facing_for(s.hex, t.hex, s.turret_facing)))
        r = resolve_key(key, dice)
        battle.emit(ShotResolved(shooter=shot.shooter, target=target, result=r["result"], hit=r["hit"],
                            kill=r["kill"], key=key._asdict(),
                            details={k: v for k, v in r.items() if k not in ("hit", "kill", "result")}
                            | {"face": shot.face, "range": shot.info["range"], "los": shot.info["los"]},
                            reaction=reaction))
        if r["kill"]:
            battle.emit(StatusChanged(target, Status.DESTROYED, r["result"], by=shot.shooter))

    def _allowed_shot(self, battle: BoardView, shooter: int, target: int | Hex) -> Shot:
        """The shot a legality check has just allowed (``contains`` asked :meth:`shot`); raises ``RuntimeError``
        if the rules now call it illegal (they would disagree with themselves)."""
        sh = self.shot(battle, shooter, target)
        if isinstance(sh, Illegal):
            raise RuntimeError(f"the shot {shooter} -> {target} was allowed but is now illegal: {sh}")
        return sh

    def shot_params(self, battle: BoardView, shooter: int, target: int) -> dict[str, Any] | Illegal:
        sh = self.shot(battle, shooter, target)
        if isinstance(sh, Illegal):
            return sh
        key = _ps_key(sh)
        return {"penetration": key.penetration, "armour": key.armour, "modifier": key.modifier}

    # movement --------------------------------------------------------------------------------------------------
    def move_options(self, battle: BoardView, tank: int, state: tuple[Hex, int]
                     ) -> list[tuple[tuple[Hex, int], int, Action]]:
        """Legal single moves from ``state = (hex, facing)`` (D13): enter a front neighbour at the Tile's cost,
        pivot one vertex for 1, or (``allow_reverse``) back into a rear neighbour for cost + 1."""
        h, f = state
        out: list[tuple[tuple[Hex, int], int, Action]] = []
        opts = battle.options
        dirs = [(f % 6, 0), ((f - 1) % 6, 0)]
        if opts.allow_reverse:
            dirs += [((f + 2) % 6, 1), ((f + 3) % 6, 1)]
        costs = _move_costs(self, battle)
        occupants = battle.occupants
        for k, extra in dirs:
            n = h.neighbour(k)
            c = costs.get(n)
            if c is not None and not occupants(n):  # enterable: on the map, a Tile that allows moving, empty
                out.append(((n, f), c + extra, Step(tank, n)))
        for nf in ((f + 1) % 6, (f - 1) % 6):
            out.append(((h, nf), 1, Pivot(tank, nf)))
        return out

    def reachable(self, battle: BoardView, tank: int, budget: int) -> dict:
        """``{(hex, facing): (cost, path)}`` within ``budget`` movement points.  Raises ``ValueError`` for a tank
        off the board."""
        t = battle.tanks[tank]
        if t.hex is None:
            raise ValueError(f"reachable: tank {t.label} is not on the board")
        return bounded_dijkstra((t.hex, t.facing), _move_successors(self, battle), budget)

    def plan_to(self, battle: BoardView, tank: int, path: list, then: Action | None = None,
                end_status: str | None = None) -> Plan:
        """A :class:`Plan` following ``path`` (states from :meth:`reachable`)."""
        steps = []
        for (h0, _f0), (h1, f1) in zip(path, path[1:]):
            steps.append(Step(tank, h1) if h1 != h0 else Pivot(tank, f1))
        return Plan(tank, tuple(steps), then=then, end_status=end_status)

    def exit_steps(self, battle: BoardView, tank: int, state: tuple[Hex, int] | None = None) -> list[Step]:
        """Front steps off the board across the side's exit edge from ``state`` (default: where the tank stands),
        each costing :data:`EXIT_COST` (section 11, decided: like entering open ground, across a front hexside).
        Raises ``ValueError`` when ``state`` is not given and the tank is off the board."""
        t = battle.tanks[tank]
        edge = battle.sides[t.side].exit_edge
        if not edge:
            return []
        if state is None:
            if t.hex is None:
                raise ValueError(f"exit_steps: tank {t.label} is not on the board")
            state = (t.hex, t.facing)
        h, f = state
        out = []
        for k in (f % 6, (f - 1) % 6):
            n = h.neighbour(k)
            if n not in battle.map and edge_of(battle.map, h, n) == edge:
                out.append(Step(tank, n))
        return out

    def exit_step(self, battle: BoardView, tank: int) -> Step | None:
        """The first of :meth:`exit_steps` from where the tank stands, or ``None``."""
        steps = self.exit_steps(battle, tank)
        return steps[0] if steps else None

    def entry_cost(self, battle: BoardView, tank: int, state: tuple[Hex, int]) -> int | None:
        """Fewest movement points to enter a hex (or leave across the exit edge) from ``state = (hex, facing)``:
        pivots (1 point per vertex) then one entry (D13).  ``None`` when no entry is possible at any cost.  The
        compulsory hex (section 4) is owed while this is within the points left."""
        h, f = state
        best: int | None = None
        for nf in range(6):
            turns = min((nf - f) % 6, (f - nf) % 6)
            costs = [c for _st, c, a in self.move_options(battle, tank, (h, nf)) if isinstance(a, Step)]
            if self.exit_steps(battle, tank, (h, nf)):
                costs.append(EXIT_COST)
            if costs and (best is None or turns + min(costs) < best):
                best = turns + min(costs)
        return best

    # turn ------------------------------------------------------------------------------------------------------
    def _modes(self, battle: BoardView, tid: int) -> tuple[str, ...]:
        t = battle.tanks[tid]
        ok = list(MODES)
        if t.rules_state["marker"] != STATIONARY and not battle.options.moving_may_fire_in_place:
            ok.remove("fire")
        return tuple(ok)

    def _targets(self, battle: BoardView, tid: int) -> tuple[int, ...]:
        ids = [e.tank_id for e in battle.enemies_of(battle.tanks[tid].side)]
        return tuple(e for e, sh in zip(ids, self.shots(battle, tid, ids)) if not isinstance(sh, Illegal))

    def _enemy_ids(self, battle: BoardView, tid: int) -> tuple[int, ...]:
        return tuple(e.tank_id for e in battle.enemies_of(battle.tanks[tid].side))

    def play_turn(self, battle: Battle, dice: DiceSource) -> Generator[Decision, Action | None, None]:
        """One game turn (D15): initiative, then the sides alternate activating one tank each."""
        first = yield from self._initiative(battle, dice)
        side = first
        nsides = len(battle.sides)
        while True:
            if battle.ended:
                return
            pending = {s: [t.tank_id for t in battle.live_tanks(s) if t.rules_state["activated_turn"] != battle.turn]
                       for s in range(nsides)}
            if not any(pending.values()):
                return
            if not pending[side]:
                side = (side + 1) % nsides
                continue
            actors = tuple(pending[side])

            def contains(a: Action, actors: tuple[int, ...] = actors) -> bool:
                return (isinstance(a, Activate) and a.actor is not None and a.actor in actors
                        and a.mode in self._modes(battle, a.actor))
            legal = Legal(contains=contains, modes=MODES, targets=ShotTargets(self, battle),
                          reachable=lambda tid: self.reachable(battle, tid, 8))
            act = yield Decision(side, "activate", actors, legal, Activate(actors[0], "hold"),
                                 {"turn": battle.turn, "modes": {a: self._modes(battle, a) for a in actors}})
            if isinstance(act, Activate) and act.actor is not None and legal.contains(act):
                tid, mode = act.actor, act.mode
            else:
                tid, mode = actors[0], "hold"
            yield from self._activation(battle, dice, tid, mode)
            side = (side + 1) % nsides

    def _initiative(self, battle: Battle, dice: DiceSource) -> Generator[Decision, Action | None, int]:
        if battle.options.initiative == "alternate":
            first = 0 if battle.turn % 2 == 1 else 1
            battle.emit(RuleEvent("initiative", None, {"first": first, "method": "alternate"}))
            return first
        while True:
            rolls = [dice.roll("d10", f"initiative side {s}") for s in range(len(battle.sides))]
            best = max(rolls)
            if rolls.count(best) == 1:
                first = rolls.index(best)
                battle.emit(RuleEvent("initiative", None, {"first": first, "rolls": rolls}))
                return first
            battle.emit(RuleEvent("initiative_tie", None, {"rolls": rolls}))
        yield  # pragma: no cover  (makes this a generator)

    def _activation(self, battle: Battle, dice: DiceSource, tid: int, mode: str
                    ) -> Generator[Decision, Action | None, None]:
        t = battle.tanks[tid]
        if not t.alive or t.hex is None:  # e.g. withdrawn after policy faults while the side was choosing
            return
        battle.emit(Activated(t.side, tid, mode))
        battle.emit(TankStateSet(tid, "activated_turn", battle.turn))
        battle.emit(TankStateSet(tid, "start_status", t.rules_state["marker"]))
        if t.rules_state["ambush"]:
            battle.emit(TankStateSet(tid, "ambush", False))
        if t.turret_facing is not None and t.turret_facing != t.facing:
            yield from self._recentre(battle, tid)
        battle.emit(BattleStateSet("active", tid))
        try:
            if mode in ("hold", "ambush"):
                if mode == "ambush":
                    battle.emit(TankStateSet(tid, "ambush", True))
                self._set_marker(battle, tid, STATIONARY)
            elif mode == "fire":
                yield from self._fire_decision(battle, dice, tid)
                self._set_marker(battle, tid, STATIONARY)
            else:
                yield from self._move(battle, dice, tid, mode)
        finally:
            if not battle.ended:
                battle.emit(BattleStateSet("active", None))

    def play_activation(self, battle: Battle, dice: DiceSource, side: int, action: Action
                        ) -> Generator[Decision, Action | None, None]:
        """Search hook (:meth:`sim.rules.base.Ruleset.play_activation`): the activation that the legal answer
        ``action`` (an :class:`Activate`) to ``side``'s ``activate`` decision starts, D15 -- re-centring, the
        shot or the move with its ambushes, the marker -- exactly as in play; the other side's next activation is
        not played.  Raises ``TypeError`` if ``action`` is not an :class:`Activate` naming a tank."""
        if not isinstance(action, Activate) or action.actor is None:
            raise TypeError(f"play_activation answers an activate decision: an Activate naming a tank, not {action!r}")
        yield from self._activation(battle, dice, action.actor, action.mode)

    def _recentre(self, battle: Battle, tid: int) -> Generator[Decision, Action | None, None]:
        """Section 5.3: at the start of its activation an off-centre turret may be set back to the hull facing at
        no cost: at once with ``auto_recentre_turret``, else the owner is asked (``recentre_turret`` decision:
        ``Special("recentre_turret")`` turns it back, ``Pass``, the default, keeps it)."""
        t = battle.tanks[tid]
        if battle.options.auto_recentre_turret:
            battle.emit(TurretTurned(tid, t.facing))
            return
        legal = Legal(contains=lambda a: (isinstance(a, Pass) and a.actor in (tid, None)) or (
            isinstance(a, Special) and a.actor == tid and a.name == "recentre_turret"), specials=("recentre_turret",))
        act = yield Decision(t.side, "recentre_turret", (tid,), legal, Pass(tid),
                             {"turret_facing": t.turret_facing, "facing": t.facing})
        if isinstance(act, Special) and legal.contains(act):
            battle.emit(TurretTurned(tid, t.facing))

    def _set_marker(self, battle: Battle, tid: int, marker: str) -> None:
        if battle.tanks[tid].alive and battle.tanks[tid].rules_state["marker"] != marker:
            battle.emit(TankStateSet(tid, "marker", marker))

    def _fire_decision(self, battle: Battle, dice: DiceSource, tid: int) -> Generator[Decision, Action | None, bool]:
        t = battle.tanks[tid]
        legal = Legal(contains=lambda a: isinstance(a, Pass) or (
            isinstance(a, Fire) and a.actor == tid and not isinstance(self.shot(battle, tid, a.target), Illegal)),
            targets=ShotTargets(self, battle, tid))
        act = yield Decision(t.side, "fire", (tid,), legal, Pass(tid))
        if isinstance(act, Fire) and legal.contains(act):
            self.resolve(battle, self._allowed_shot(battle, tid, act.target), dice)
            return True
        return False

    def _move(self, battle: Battle, dice: DiceSource, tid: int, mode: str) -> Generator[Decision, Action | None, None]:
        """Section 4: roll the allowance (D14), then one ``move_step`` decision per step until the move ends.

        The compulsory hex: a tank that started in movement owes one hex entry while any entry is affordable from
        where it stands, pivots included (decided: "any legal entry" counts an entry after pivots; leaving across
        the exit edge is an entry).  While it is owed, an action is legal only if an entry stays affordable after
        it: no pass, no ``end_move``, no shot, no pivot that leaves too few points (the default is the first
        action of the cheapest entry).  When no step, pivot or shot is left (every point used), one last
        ``move_step`` decision (context ``final``) still takes the owner's marker choice (D20): ``Pass`` (the
        default marker) or ``Special("end_move", {"status": ...})``, so a plan's ``end_status`` reaches the rules
        however the move ends.  No decision follows a shot, an exit or the mover's destruction."""
        t = battle.tanks[tid]
        started = t.rules_state["start_status"]
        n = 2 if started == IN_MOVEMENT else 1
        roll = sum(dice.rolls(n, "d4", "movement"))
        mp = max(0, roll - t.vehicle.movement_restriction)
        battle.emit(RuleEvent("movement_allowance", tid, {"roll": roll, "dice": n, "mp": mp}))
        entered = 0
        interrupted = False
        fired = False
        status_choice: str | None = None
        while t.alive and t.hex is not None:
            here = (t.hex, t.facing)
            opts: list[_MoveOption] = [(st, c, a) for st, c, a in self.move_options(battle, tid, here) if c <= mp]
            if mp >= EXIT_COST:
                opts += [(None, EXIT_COST, ex) for ex in self.exit_steps(battle, tid)]
            cost_now = self.entry_cost(battle, tid, here) if started == IN_MOVEMENT and entered == 0 else None
            compulsory = cost_now is not None and cost_now <= mp
            default: Action = Pass(tid)
            if compulsory:
                # the options after which an entry stays affordable, each with its cost plus that entry's
                owed: list[tuple[_MoveOption, int]] = []
                for st, c, a in opts:
                    ec = 0 if isinstance(a, Step) or st is None else self.entry_cost(battle, tid, st)
                    if ec is not None and c + ec <= mp:
                        owed.append(((st, c, a), c + ec))
                opts = [o for o, _ in owed]
                default = min(owed, key=lambda o: o[1])[0][2]
            can_fire = mode == "move_and_fire" and mp >= FIRE_COST and not compulsory
            final = not opts and not can_fire
            allowed = {a for _, _, a in opts}

            def contains(a: Action, allowed=allowed, compulsory=compulsory, can_fire=can_fire) -> bool:
                if isinstance(a, Fire):
                    return can_fire and a.actor == tid and not isinstance(self.shot(battle, tid, a.target), Illegal)
                if isinstance(a, Pass):
                    return not compulsory and a.actor in (tid, None)
                if isinstance(a, Special):
                    return (not compulsory and a.actor == tid and a.name == "end_move"
                            and a.args.get("status") in (None, STATIONARY, IN_MOVEMENT))
                return isinstance(a, (Step, Pivot)) and a in allowed

            def reachable(_t: int, budget: int = mp) -> dict:
                return self.reachable(battle, tid, budget)
            legal = Legal(contains=contains, reachable=reachable,
                          targets=ShotTargets(self, battle, tid, mode == "move_and_fire"),
                          specials=("end_move",),
                          plan_to=lambda _t, path, then=None, end_status=None: self.plan_to(battle, tid, path, then,
                                                                                             end_status))
            act = yield Decision(t.side, "move_step", (tid,), legal, default,
                                 {"mp": mp, "entered": entered, "compulsory": compulsory, "mode": mode,
                                  "interrupted": interrupted, "can_fire": can_fire, "fire_cost": FIRE_COST,
                                  "final": final})
            interrupted = False
            if act is None or not contains(act):
                act = default
            if isinstance(act, (Pass, Special)):
                if isinstance(act, Special):
                    status_choice = act.args.get("status")
                break
            if isinstance(act, Fire):
                mp -= FIRE_COST
                battle.emit(RuleEvent("fire_cost", tid, {"mp_spent": FIRE_COST, "mp_left": mp}))
                self.resolve(battle, self._allowed_shot(battle, tid, act.target), dice)
                fired = True
                break
            cost = next(c for st, c, a in opts if a == act)
            mp -= cost
            if isinstance(act, Pivot):
                tf = None if t.turret_facing is None else (t.turret_facing + act.facing - t.facing) % 6
                battle.emit(Pivoted(tid, act.facing, tf, cost))
                continue
            assert isinstance(act, Step)  # contains() lets through Fire, Pass, Special, Pivot (above) and Step only
            if act.to not in battle.map:
                battle.emit(StatusChanged(tid, Status.EXITED, "exit edge"))
                entered += 1
                break
            battle.emit(Moved(tid, act.to, t.facing, cost))
            entered += 1
            interrupted = yield from self._ambushes(battle, dice, tid)
        if t.alive and t.hex is not None:
            if fired:
                marker = STATIONARY
            elif status_choice in (STATIONARY, IN_MOVEMENT):
                marker = status_choice
            else:
                marker = IN_MOVEMENT if entered else STATIONARY
            self._set_marker(battle, tid, marker)

    def _ambushes(self, battle: Battle, dice: DiceSource, mover: int) -> Generator[Decision, Action | None, bool]:
        """D16: after the mover entered a hex, ambushers of the other side that may fire at it are asked, one shot
        each, in the order their side chooses.  Returns True if anyone fired."""
        m = battle.tanks[mover]
        fired_any = False
        for side in battle.side_ids():
            if side == m.side:
                continue
            done: set[int] = set()
            while m.alive and m.hex is not None:
                ready = tuple(t.tank_id for t in battle.live_tanks(side) if t.rules_state["ambush"]
                              and t.tank_id not in done
                              and not isinstance(self.shot(battle, t.tank_id, mover), Illegal))
                if not ready:
                    break

                def contains(a: Action, ready: tuple[int, ...] = ready) -> bool:
                    return isinstance(a, Pass) or (isinstance(a, Fire) and a.actor in ready and a.target == mover)
                legal = Legal(contains=contains, targets=lambda tid: (mover,))
                act = yield Decision(side, "react", ready, legal, Pass(None), {"mover": mover, "trigger": "ambush"})
                if not isinstance(act, Fire) or act.actor is None or not legal.contains(act):
                    break
                firer = act.actor
                done.add(firer)
                battle.emit(TankStateSet(firer, "ambush", False))
                self.resolve(battle, self._allowed_shot(battle, firer, mover), dice, reaction=True)
                fired_any = True
        return fired_any

    # outcome ---------------------------------------------------------------------------------------------------
    def outcome(self, battle: BoardView) -> Outcome | None:
        """D21: last tank lost loses at once; after the turn limit, victory points or ``turn_limit_result``."""
        return standard_outcome(battle, most_tanks if battle.options.turn_limit_result == "most_tanks" else draw)

    # odds command and cases ------------------------------------------------------------------------------------
    def odds_from_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        key, _ = key_from_params(params)
        return odds_json(key)

    def run_case(self, case: Mapping[str, Any]) -> dict[str, Any]:
        """Evaluate a golden case of section 16 (odds / outcome / geometry)."""
        kind, g = case["kind"], dict(case["given"])
        if kind == "odds":
            return self.odds_from_params(g)
        if kind == "outcome":
            from sim.dice import FixedDice
            dice = FixedDice(g.pop("dice"))
            key, _ = key_from_params(g)
            r = resolve_key(key, dice)
            dice.check_done()
            return r
        if kind == "geometry":
            f, t = g["firer"], g["target"]
            tiles = self.tiles(PSOptions())
            obstacles = {as_hex(x["hex"]) for x in g.get("tiles", []) if tiles[x["tile"]].blocks_los}
            obstacles |= {as_hex(w) for w in g.get("wrecks", [])}
            armour = t.get("armour") or self.vehicle(t["vehicle"]).armour
            turret = f.get("turret", True)
            return shot_geometry(as_hex(f["hex"]), f["facing"], f.get("turret_facing", f["facing"]), turret,
                                 as_hex(t["hex"]), t["facing"], armour, obstacles)
        raise CaseError(f"unknown case kind {kind!r}")


def edge_of(hexmap: HexMap, inside: Hex, outside: Hex) -> str | None:
    """Which board edge the step ``inside`` -> ``outside`` crosses: ``west`` / ``east`` by column, else ``north``
    (up the screen) / ``south``."""
    if outside in hexmap:
        return None
    qs = [h.q for h in hexmap.cells]
    if outside.q < min(qs):
        return "west"
    if outside.q > max(qs):
        return "east"
    return "north" if (outside.r < inside.r or (outside.r == inside.r and outside.q < inside.q)) else "south"


@lru_cache(maxsize=64)
def _sight_rules(los_origin: str, hexside_blocks: str, max_range_hexes: int | None) -> SightRules:
    return SightRules(los_origin, hexside_blocks, max_range_hexes)


_ARMOUR_KEYS: dict[int, tuple[Any, Any]] = {}
#: ``PanzerSquadron.tiles`` per options object.
_TILES: dict[int, tuple[Any, Any]] = {}
_OPTION_KEYS: dict[int, tuple[Any, Any]] = {}
_O = TypeVar("_O")
_V = TypeVar("_V")


def _per_object(table: dict[int, tuple[Any, Any]], obj: _O, make: Callable[[_O], _V], bound: int = 64) -> _V:
    """``make(obj)``, computed once per object (vehicle records and validated options are frozen): kept in
    ``table`` by identity, with the object beside its value (so a reused id is never mistaken for it), at most
    ``bound`` entries (the oldest dropped first)."""
    ent = table.get(id(obj))
    if ent is None or ent[0] is not obj:
        if len(table) >= bound:
            table.pop(next(iter(table)))
        ent = table[id(obj)] = (obj, make(obj))
    return ent[1]


def _options_key(options: PSOptions) -> tuple:
    """The options a shot reads, as a cache key (computed once per options object): the sight options, the
    exceptional-line modifier and the Tiles."""
    return _per_object(_OPTION_KEYS, options, lambda o: (
        o.los_origin, o.hexside_blocks, o.max_range_hexes, o.exceptional_modifier, o.moving_may_fire_in_place,
        tuple(sorted((k, repr(v)) for k, v in o.tiles.items()))))


def _armour_key(vehicle: Vehicle) -> tuple:
    """``vehicle.armour`` as a sorted tuple (a cache key), computed once per vehicle record."""
    return _per_object(_ARMOUR_KEYS, vehicle, lambda v: tuple(sorted(v.armour.items())), bound=1024)


#: The sight-ellipse slack of :meth:`sim.hexgrid.HexMap.pair_cached` (its default), which the front cache mirrors.
_SLACK = 3


def _front_cache(hexmap: HexMap, options: PSOptions) -> tuple[dict[tuple, tuple[Any, int, Any]], list]:
    """The front cache of :meth:`PanzerSquadron.shots` / :meth:`~PanzerSquadron.shots_at` for one board and options
    object, and the board's change log (:meth:`sim.hexgrid.HexMap.bump`).

    It maps a pair's key -- ``(shooter, target, firer hex, facing, gun facing, target hex, target facing, firer
    status, target moving)``, all :meth:`PanzerSquadron.shot` reads besides the options (the cache is per options
    object), the tanks' fixed vehicles, the terrain and the obstacles of the pair's sight ellipse -- to ``(shot,
    len(changes) when it was last known valid, footprint)`` (the hexes the shot read, :func:`_footprint`).
    It is the board's own (:meth:`HexMap.local_cached`: dropped when
    the terrain changes, not shared with a fork or another battle's board), an entry is reused only while no
    change logged since falls in its footprint, else in the pair's ellipse (:func:`_still_valid`), and it
    holds at most ``PAIR_CACHE_MAX`` entries (emptied when full).  A miss asks :meth:`PanzerSquadron.shot`, which
    keeps its own ``pair_cached`` answers (read through to a fork's parent): this cache only saves the per-pair
    work of reaching them."""
    box: list = hexmap.local_cached(("ps_front_shots",), lambda: [None, None])
    if box[0] is not options:
        box[0], box[1] = options, {}
    return box[1], hexmap.changes


#: Per battle object: ``PanzerSquadron.shots`` answers kept across versions (:func:`_lasting_shots`; weak: dies with
#: the battle, a search copy has its own), at most ``LASTING_MAX`` firer positions of up to one answer per tank.
_LASTING: "weakref.WeakKeyDictionary[BattleState, dict[tuple, list]]" = weakref.WeakKeyDictionary()
#: Most entries of one battle's lasting memo (emptied when full).
LASTING_MAX = 5_000


def _all_lines_clear(_firer: Hex, _facing: int, _target: Hex) -> int:
    """The ``lines`` of :func:`shot_geometry` for :meth:`PanzerSquadron.odds_bound`: all seven lines clear."""
    return 7


class ShotTargets:
    """The ``targets`` of a decision's :class:`~sim.rules.base.Legal` whose targets are the enemies a shot is legal
    at (sections 6, 8): ``targets(tid)`` the enemies of ``tid`` (of ``actor`` when given: the decision's one
    firer) whose :meth:`PanzerSquadron.shot` is legal, in the order of ``battle.enemies_of``; none when not
    ``enabled``.  ``candidates(tid)`` is that list before the legality test (the targets are exactly the
    candidates with a legal shot, in that order), which lets an observation rank them by
    :meth:`PanzerSquadron.odds_bound` without working out every shot."""

    __slots__ = ("actor", "battle", "enabled", "rs")

    def __init__(self, rs: PanzerSquadron, battle: BoardView, actor: int | None = None, enabled: bool = True):
        self.rs, self.battle, self.actor, self.enabled = rs, battle, actor, enabled

    def __call__(self, tid: int) -> tuple[int, ...]:
        if not self.enabled:
            return ()
        return self.rs._targets(self.battle, tid if self.actor is None else self.actor)

    def candidates(self, tid: int) -> tuple[int, ...]:
        """The enemies :meth:`__call__` tests (its answer is those of them with a legal shot)."""
        if not self.enabled:
            return ()
        return self.rs._enemy_ids(self.battle, tid if self.actor is None else self.actor)


#: The footprint of an answer that reads no hex (:meth:`PanzerSquadron._shots_now`): no offset is in it.
_NO_HEXES = (0, 0)


def _lasting_shots(rs: PanzerSquadron, battle: BattleState, shooter: int, targets: tuple[Any, ...],
                   as_if: Hypo | None) -> list[Shot | Illegal]:
    """``rs._shots_now(battle, shooter, targets, as_if)``, kept per battle across versions, pair by pair.

    The key ``(shooter, as_if, hidden tanks, whether the shooter is the active tank)`` and the two tanks' states are
    everything a pair's shot reads besides the map (:meth:`PanzerSquadron.pair_local_shots`: each pair reads its
    two tanks -- the shooter's status reads only whether it is active --, the options, fixed for the battle, the
    terrain and the obstacles of its footprint; a hidden tank is off the board in the side's view, so the hidden
    set is in the key).  An entry ``[{target: (shot, footprint)}, len(state_changes), len(map.changes)]`` keeps
    the pairs asked.  When asked again, the tanks events changed since (``BattleState.state_changes``) are read
    first: the shooter among them empties the entry, a target among them drops its own pair; then the map's
    changes since (:meth:`sim.hexgrid.HexMap.bump`): an unlocated one (the terrain) empties it, a located one (a
    wreck appearing or leaving) drops the pairs whose footprint (:func:`_footprint`, offsets from the firer's hex;
    ``None``: any change drops it) holds it.  The pairs not kept are asked of ``_shots_now`` (the answers are pair
    by pair, so the list equals a fresh one).  The entry's fourth item keeps the odds bounds of
    :func:`_lasting_best` the same way (a bound reads the same two tanks, options and terrain, and obstacles only
    in its footprint, :func:`_bound_of`)."""
    try:
        ent = _lasting_entry(battle, shooter, as_if)
        kept: dict[Any, tuple[Shot | Illegal, tuple[int, int] | None]] = ent[0]
        ask = [t for t in targets if t not in kept]
    except TypeError:  # an unhashable target or position: asked directly
        return rs._shots_now(battle, shooter, targets, as_if)
    if ask:
        fps: list[tuple[int, int] | None] = []
        for t, v, fp in zip(ask, rs._shots_now(battle, shooter, ask, as_if, fps), fps):
            kept[t] = (v, fp)
    return [kept[t][0] for t in targets]


def _lasting_entry(battle: BattleState, shooter: int, as_if: Hypo | None) -> list:
    """The entry ``[shots, len(state_changes), len(map.changes), bounds]`` of :func:`_lasting_shots`'s memo for
    ``(shooter, as_if)`` on ``battle``, brought up to date (the pairs the changes since may have changed dropped
    from both dicts, see there).  Raises ``TypeError`` for an unhashable position."""
    store = _LASTING.get(battle)
    if store is None:
        store = _LASTING[battle] = {}
    sc = battle.state_changes
    mc = battle.map.changes
    nsc, nmc = len(sc), len(mc)
    key = (shooter, as_if, battle.hidden_tanks, battle.rules_state.get("active") == shooter)
    ent = store.get(key)
    if ent is None:
        if len(store) >= LASTING_MAX:
            store.clear()
        ent = store[key] = [{}, nsc, nmc, {}]
        return ent
    kept, bounds = ent[0], ent[3]
    if ent[1] != nsc:
        changed = set(sc[ent[1]:])
        if shooter in changed:
            kept.clear()
            bounds.clear()
        else:
            for t in changed:
                kept.pop(t, None)
                bounds.pop(t, None)
        ent[1] = nsc
    if ent[2] != nmc:
        new = mc[ent[2]:]
        a = as_hex(as_if.hex) if as_if else battle.tanks[shooter].hex
        if a is None or None in new:
            kept.clear()
            bounds.clear()
        else:
            aq, ar = a
            # the changes as offsets from the firer, one mask: a footprint holds one iff _in_footprint says so of
            # one of them (_mask_in_footprint)
            offs = _HexMask((c[0] - aq, c[1] - ar) for c in new if c is not None)
            for d in (kept, bounds):
                if d:
                    for t in [t for t, (_v, fp) in d.items()
                              if fp is None or _mask_in_footprint(offs, fp[0], fp[1])]:
                        del d[t]
        ent[2] = nmc
    return ent


def _lasting_best(rs: PanzerSquadron, battle: BattleState, shooter: int, targets: tuple[int, ...],
                  min_odds: float | None) -> tuple[int, Odds] | None:
    """:meth:`PanzerSquadron.best_by_bound` on a battle whose live tanks do not block sight, with the shots and the
    bounds kept across versions in :func:`_lasting_shots`'s memo (a target whose shot is kept is ranked by its
    exact odds, one whose bound is kept by that bound; only the rest get a new bound, :func:`_bound_of`; a masked
    side's target gets its shot at once).  Odds are ranked by :func:`_rank` (exact integers)."""
    ent = _lasting_entry(battle, shooter, None)
    kept: dict[Any, tuple[Shot | Illegal, tuple[int, int] | None]] = ent[0]
    bounds: dict[Any, tuple[PSKey | None, tuple[int, int] | None]] = ent[3]
    ranked: list[tuple[int, int, int, bool, PSKey]] = []
    for t in targets:
        got = kept.get(t)
        bkey: PSKey | None = None
        if got is None:
            b = bounds.get(t)
            if b is None:
                nb, fp = _bound_of(rs, battle, shooter, t)
                if nb is False:  # a masked side: its shot now
                    fps: list[tuple[int, int] | None] = []
                    v = rs._shots_now(battle, shooter, (t,), None, fps)[0]
                    got = kept[t] = (v, fps[0])
                else:
                    b = bounds[t] = (cast("PSKey | None", nb), fp)  # not False here
            if b is not None:
                bkey = b[0]
        if got is not None:
            v = got[0]
            if isinstance(v, Illegal):
                continue
            key, exact = cast(PSKey, v.key), True
        else:
            if bkey is None:
                continue
            key, exact = bkey, False
        pk, ph, fk = _rank(key)
        if (pk <= 0 and ph <= 0) or (min_odds is not None and fk < min_odds):
            continue
        ranked.append((pk, ph, -t, exact, key))
    ranked.sort(reverse=True)
    best: tuple[int, PSKey] | None = None
    bk: tuple[int, int, int] | None = None
    for pk, ph, nt, exact, key in ranked:
        k = (pk, ph, nt)
        if bk is not None and k < bk:
            break
        if not exact:
            fps = []
            v = rs._shots_now(battle, shooter, (-nt,), None, fps)[0]
            kept[-nt] = (v, fps[0])
            bounds.pop(-nt, None)
            if isinstance(v, Illegal):
                continue
            key = cast(PSKey, v.key)  # a PanzerSquadron shot's key is a PSKey
            pk, ph, fk = _rank(key)
            if (pk <= 0 and ph <= 0) or (min_odds is not None and fk < min_odds):
                continue
            k = (pk, ph, nt)
        if bk is None or k > bk:
            bk, best = k, (-nt, key)
    return None if best is None else (best[0], shot_odds(best[1]))


#: A multiple of the denominators of every ``p_kill`` and ``p_hit`` of :func:`shot_odds` (D22: the d10 in tenths,
#: the d100 in hundredths and the automatic kill a twentieth of the hits: ``p_kill`` in thousandths).
_RANK_SCALE = 1000


@lru_cache(maxsize=65536)
def _rank(key: PSKey) -> tuple[int, int, float]:
    """``(p_kill, p_hit)`` of ``shot_odds(key)`` as exact integers (times :data:`_RANK_SCALE`: the same order and
    equalities as the Fractions, compared far faster) and ``float(p_kill)`` (the ``min_odds`` test).  Raises
    ``ArithmeticError`` if a probability is not a multiple of ``1 / _RANK_SCALE`` (it always is)."""
    o = shot_odds(key)
    pk, ph = o.p_kill * _RANK_SCALE, o.p_hit * _RANK_SCALE
    if pk.denominator != 1 or ph.denominator != 1:
        raise ArithmeticError(f"odds of {key} are not in thousandths")
    return pk.numerator, ph.numerator, float(o.p_kill)


def _bound_of(rs: PanzerSquadron, battle: BoardView, shooter: int, target: int
              ) -> tuple[PSKey | None | bool, tuple[int, int] | None]:
    """``(key, footprint)``: :meth:`PanzerSquadron._bound_key` of the shot ``shooter`` -> ``target`` now (``None``:
    surely illegal; ``False``: a masked side) and the obstacle hexes it read, as offsets from the firer: it reads
    only the hex across the struck side's hexside, one of the target's neighbours, which
    :func:`_line_footprint` holds."""
    tanks = battle.tanks
    s, t = tanks[shooter], tanks[target]
    hx, th = s.hex, t.hex
    if hx is None or th is None or not t.alive or t.side == s.side:
        return None, _NO_HEXES
    key = rs._bound_key(battle, s, t, hx, s.facing, s.facing if s.turret_facing is None else s.turret_facing,
                        s.rules_state["start_status"] if battle.rules_state.get("active") == shooter
                        else s.rules_state["marker"])
    return key, _line_footprint(th[0] - hx[0], th[1] - hx[1], None)


def _pair_lines(hexmap: HexMap, obstacles: frozenset[Hex], rules: SightRules, wrecks: tuple[Hex, ...],
                options_key: tuple) -> Callable[[Hex, int, Hex], int]:
    """The ``lines`` of :func:`shot_geometry` for a board whose obstacles are ``obstacles`` (its terrain and wrecks:
    live tanks do not block sight; ``wrecks`` the wrecks' hexes, :func:`_wreck_hexes`; ``options_key`` the
    options', :func:`_options_key`): :func:`clear_lines`, kept
    per pair of hexes in a dict of the board's own (:meth:`sim.hexgrid.HexMap.local_cached`: dropped when the
    terrain changes, not shared with a fork), at most ``PAIR_CACHE_MAX`` entries (emptied when full).

    Its key ``(firer hex, target hex, line origin, hexside_blocks)`` -- the origin the firer's facing when
    ``los_origin`` is ``front_vertex``, else the centre -- is everything the count reads besides the obstacles,
    and an entry is reused only while no change logged since (:meth:`sim.hexgrid.HexMap.bump`) is unlocated or
    falls in the pair's footprint (:func:`_line_footprint`, which holds every hex a line enters and every
    blockable hex beside a hexside it runs along).  So a count survives a pivot of either tank, a turn of the
    target and any wreck off its lines.

    A miss reads the counts on the terrain alone that the battles of the scenario share (the board's terrain cache,
    :meth:`~sim.hexgrid.HexMap.terrain_cached`, one dict per options key, which holds the Tiles that decide the
    terrain obstacles; same key; at most :data:`TERRAIN_SHOTS_MAX` entries, emptied when full): a count made while
    no wreck lay in its footprint, used only while none of ``wrecks`` does."""
    front = rules.los_origin != "centre"
    hs = rules.hexside_blocks
    box: dict[tuple, tuple[int, int]] = hexmap.local_cached(("ps_lines",), dict)
    shared: dict[tuple, int] = hexmap.terrain_cached(("ps_terrain_lines", options_key), dict)
    changes = hexmap.changes

    def lines(a: Hex, facing: int, b: Hex) -> int:
        origin = facing % 6 if front else None
        key = (a, b, origin, hs)
        n = len(changes)
        ent = box.get(key)
        fp = None
        if ent is not None:
            if ent[1] == n:
                return ent[0]
            aq, ar = a
            fp = _line_footprint(b[0] - aq, b[1] - ar, origin)
            for c in changes[ent[1]:]:
                if c is None or _in_footprint(fp, c[0] - aq, c[1] - ar):
                    break
            else:
                box[key] = (ent[0], n)
                return ent[0]
        v = shared.get(key)
        clean = True
        if v is None or wrecks:
            if wrecks:
                if fp is None:
                    fp = _line_footprint(b[0] - a[0], b[1] - a[1], origin)
                clean = not _wreck_in(fp, wrecks, a, b)
            if v is None or not clean:
                v = clear_lines(a, facing, b, obstacles, rules)
                if clean:
                    if len(shared) >= TERRAIN_SHOTS_MAX:
                        shared.clear()
                    shared[key] = v
        if len(box) >= PAIR_CACHE_MAX:
            box.clear()
        box[key] = (v, n)
        return v
    return lines


#: Most entries of a board's shared terrain-only shots (:meth:`PanzerSquadron._shot`; emptied when full).
TERRAIN_SHOTS_MAX = 100_000


def _move_costs(rs: PanzerSquadron, battle: BoardView) -> dict[Hex, int]:
    """The entry cost (the Tile's ``move_cost``, D13) of every cell whose Tile does not block movement, by hex: what
    :meth:`PanzerSquadron.move_options` reads of the terrain (a hex not in it is off the map or impassable).  It
    reads only the terrain and the Tiles, so it is kept in the terrain cache (shared by the battles of a
    scenario, dropped when the terrain changes) under the options key (:func:`_options_key`, which holds the
    Tiles)."""
    hexmap = battle.map
    opts = battle.options

    def compute() -> dict[Hex, int]:
        tiles = rs.tiles(opts)
        out = {}
        for h in hexmap:
            t = tiles[hexmap.terrain(h)]
            if not t.blocks_move:
                out[h] = t.move_cost
        return out
    return hexmap.terrain_cached(("ps_move_costs", _options_key(opts)), compute)


def _move_successors(rs: PanzerSquadron, battle: BoardView
                     ) -> Callable[[tuple[Hex, int]], list[tuple[tuple[Hex, int], int]]]:
    """``succ(state)``: ``[(next state, cost) for next state, cost, _action in rs.move_options(battle, tank,
    state)]`` -- the same moves in the same order (D13: the front neighbours, the rear ones with
    ``allow_reverse``, then the two pivots) -- without making the actions, for the searches of
    :meth:`PanzerSquadron.reachable`.  The entry costs and the occupancy are read as ``move_options`` reads them,
    at each call (a search asks on one board, so they do not change between its calls; the entry costs are the
    board's cached ones, :func:`_move_costs`).  ``tests/test_ps_play.py`` compares it with ``move_options``."""
    costs = _move_costs(rs, battle)
    occupants = battle.occupants
    reverse = battle.options.allow_reverse
    # per facing: the neighbour directions entered forwards (extra cost 0), then backwards (+1)
    dirs = [((DIRECTIONS[f], 0), (DIRECTIONS[(f - 1) % 6], 0))
            + (((DIRECTIONS[(f + 2) % 6], 1), (DIRECTIONS[(f + 3) % 6], 1)) if reverse else ())
            for f in range(6)]

    def succ(state: tuple[Hex, int]) -> list[tuple[tuple[Hex, int], int]]:
        h, f = state
        q, r = h
        out: list[tuple[tuple[Hex, int], int]] = []
        for d, extra in dirs[f % 6]:
            n = Hex(q + d[0], r + d[1])
            c = costs.get(n)
            if c is not None and not occupants(n):
                out.append(((n, f), c + extra))
        out.append(((h, (f + 1) % 6), 1))
        out.append(((h, (f - 1) % 6), 1))
        return out
    return succ


def _geometry_footprint(battle: BoardView, a: Hex, facing: int, gun: int, firer: Vehicle, b: Hex,
                        target_facing: int, target: Vehicle, obstacles: frozenset[Hex], rules: SightRules,
                        wrecks: tuple[Hex, ...], options_key: tuple) -> tuple[dict, tuple[int, int] | None, bool]:
    """:func:`shot_geometry` of the shot ``a`` -> ``b`` on ``battle`` (live tanks do not block sight; ``obstacles``
    its obstacles, terrain and wrecks; ``wrecks`` the wrecks' hexes, :func:`_wreck_hexes`; ``options_key`` the
    options', :func:`_options_key`), counted with the
    pair-by-pair line counts (:func:`_pair_lines`), as ``(geometry, footprint, clean)``: the footprint the hexes
    whose obstacles the geometry read (:func:`_line_footprint`: the hexes of the seven lines and of their
    hexsides, the target's neighbours and the two hexes; ``None``, the sight ellipse, when it counted the
    exceptional lines of a masked side), ``clean`` whether no wreck lies in it -- then the geometry is the one on
    the terrain alone, the same in every battle on that terrain (what :meth:`PanzerSquadron._shot` shares)."""
    g = shot_geometry(a, facing, gun, firer.turret, b, target_facing, target.armour, obstacles, rules,
                      battle.options.exceptional_modifier,
                      _pair_lines(battle.map, obstacles, rules, wrecks, options_key))
    fp = None if "exceptional_face" in g else _line_footprint(
        b[0] - a[0], b[1] - a[1], None if rules.los_origin == "centre" else facing % 6)
    return g, fp, not wrecks or not _wreck_in(fp, wrecks, a, b)


class _HexMask(tuple):
    """A tuple of hexes (a battle's wrecks, or offsets of map changes from a firer) with their flat indices ``q +
    _FP_W * r`` as one bit mask: bit ``flat(c) - base`` of ``mask`` set for each hex ``c`` (``base`` the least flat
    index, 0 for no hex).  What lets :func:`_wreck_in` and :func:`_lasting_entry` test a footprint against every
    hex in one shift and ``and`` of two integers (:func:`_mask_in_footprint`) instead of a pass over the hexes
    (the wrecks grow in number with the tanks of the battle)."""

    base: int
    mask: int

    def __new__(cls, hexes: Iterable[tuple[int, int]]) -> _HexMask:
        self = super().__new__(cls, hexes)
        flats = [c[0] + _FP_W * c[1] for c in self]
        self.base = base = min(flats, default=0)
        m = 0
        for f in flats:
            m |= 1 << (f - base)
        self.mask = m
        return self


def _wreck_hexes(battle: BoardView) -> _HexMask:
    """The hexes of the battle's wrecks, as :class:`_HexMask` (kept under the map version,
    :meth:`sim.hexgrid.HexMap.cached`)."""
    return battle.map.cached(("ps_wreck_hexes",), lambda: _HexMask(_hexes(battle.wrecks())))


def _wreck_in(fp: tuple[int, int] | None, wrecks: tuple[Hex, ...], a: Hex, b: Hex) -> bool:
    """Whether one of ``wrecks`` lies in the footprint ``fp`` of the pair ``a``-``b`` (offsets from ``a``,
    :func:`_line_footprint`; ``None``: the sight ellipse ``distance(c, a) + distance(c, b) <= distance(a, b) +
    slack``, the test of ``pair_cached``).

    With a footprint and ``wrecks`` a :class:`_HexMask`, the test reads its mask: wreck ``c`` is in ``fp`` when bit
    ``i = flat(c) - flat(a) - low`` of ``bits`` is set (``i >= 0``), that is bit ``i`` of the mask shifted right by
    ``k = flat(a) + low - base`` (left by ``-k`` when ``k < 0``: every ``i`` is then positive) -- the same answer as
    the wreck-by-wreck test, flat-index aliasing included (``tests/test_ps_shots_batch.py`` compares them)."""
    aq, ar = a
    if fp is not None:
        low, bits = fp
        if isinstance(wrecks, _HexMask):
            return _mask_in_footprint(wrecks, aq + _FP_W * ar + low, bits)
        for c in wrecks:
            i = c[0] - aq + _FP_W * (c[1] - ar) - low
            if i >= 0 and (bits >> i) & 1:
                return True
        return False
    bq, br = b
    x, y = bq - aq, br - ar
    lim = abs(x) + abs(y) + abs(x + y) + 2 * _SLACK
    for c in wrecks:
        x, y, u, w = c[0] - aq, c[1] - ar, c[0] - bq, c[1] - br
        if abs(x) + abs(y) + abs(x + y) + abs(u) + abs(w) + abs(u + w) <= lim:
            return True
    return False


def _mask_in_footprint(hexes: _HexMask, low: int, bits: int) -> bool:
    """Whether a hex of ``hexes`` has its flat index ``f`` with ``f >= low`` and bit ``f - low`` of ``bits`` set: the
    footprint ``(low, bits)`` (:func:`_line_footprint`; ``low`` plus the firer's flat index when ``hexes`` are
    absolute) holds one of them.  The mask shifted right by ``k = low - base`` (left by ``-k`` when ``k < 0``,
    every hex then at or past ``low``), anded with ``bits``."""
    k = low - hexes.base
    m = hexes.mask
    return ((m >> k) if k >= 0 else (m << -k)) & bits != 0


def _still_valid(front: dict, key: tuple, ent: tuple[Any, int, tuple[int, int] | None], changes: list,
                 a: Hex, b: Hex) -> bool:
    """Whether the front-cache entry ``ent`` ``(shot, changes seen, footprint)`` of the pair ``a``-``b`` survives
    the changes logged since it was stored (none unlocated and none in the hexes the shot read,
    :func:`_footprint`; without a footprint, none in the pair's sight ellipse: ``distance(c, a) + distance(c, b) <=
    distance(a, b) + slack``, the hex distances written out, the test of ``pair_cached``); if so it is marked valid
    up to now."""
    aq, ar = a
    fp = ent[2]
    if fp is not None:
        for c in changes[ent[1]:]:
            if c is None or _in_footprint(fp, c[0] - aq, c[1] - ar):
                return False
        front[key] = (ent[0], len(changes), fp)
        return True
    bq, br = b
    x, y = bq - aq, br - ar
    lim = abs(x) + abs(y) + abs(x + y) + 2 * _SLACK  # twice distance(a, b) + slack: a hex distance is half the sum
    for c in changes[ent[1]:]:
        if c is None:
            return False
        x, y, u, w = c[0] - aq, c[1] - ar, c[0] - bq, c[1] - br
        if abs(x) + abs(y) + abs(x + y) + abs(u) + abs(w) + abs(u + w) <= lim:
            return False
    front[key] = (ent[0], len(changes), None)
    return True


def _front_put(front: dict, key: tuple, value: Any, n: int, fp: tuple[int, int] | None) -> None:
    if len(front) >= PAIR_CACHE_MAX:
        front.clear()
    front[key] = (value, n, fp)


def _footprint(shot: Shot | Illegal, a: Hex, facing: int, b: Hex, options: PSOptions
               ) -> tuple[int, int] | None:
    """The obstacle hexes the shot ``a`` -> ``b`` (firer facing ``facing``) of :meth:`PanzerSquadron._shot` read, as
    offsets from ``a`` (:func:`_line_footprint`), or ``None`` (test the whole sight ellipse) when its geometry also
    counted the exceptional lines of a masked side (7.2 step 3, lines from another origin: rare).

    Why that is everything: :func:`shot_geometry` reads the obstacles only through the side-masking test (the
    target's neighbours), the clear-line count of 6.4 (:func:`sim.hexgrid.count_clear_lines`: the hexes each line
    enters and the blockable hexes beside the hexsides it runs along, :func:`sim.hexgrid.sight_footprint`) and the
    exceptional lines; the firer's and target's own hexes are added too.  A wreck appearing or leaving elsewhere
    cannot change the answer, so the front cache keeps the entry (the terrain and an unlocated change still flush
    it)."""
    if isinstance(shot, Shot):
        if "exceptional_face" in shot.info:
            return None
    elif not isinstance(shot, GeometryIllegal) or shot.startswith("masked side"):
        return None
    origin = None if options.los_origin == "centre" else facing % 6
    return _line_footprint(b[0] - a[0], b[1] - a[1], origin)


#: The row stride of the footprints' flat hex indices ``q + _FP_W * r`` (:func:`_line_footprint`).
_FP_W = 64


@lru_cache(maxsize=20_000)
def _line_footprint(dq: int, dr: int, origin: int | None) -> tuple[int, int]:
    """The hexes (offsets ``(q, r)`` from the firer at ``(0, 0)``) an obstacle in which could change a shot's
    geometry at ``(dq, dr)`` with sight lines from ``origin`` (``None`` the centre, else a vertex), the exceptional
    lines aside: every hex and blockable hexside hex of the seven lines (:func:`sim.hexgrid.sight_lines`), the
    target's six neighbours (side masking, 7.2) and the two hexes themselves.  Pure geometry, shared by every board.

    Kept small (the lines' own bit masks, :meth:`sim.hexgrid.SightLines.masks`): ``(low, bits)``, bit ``i`` set for
    the flat index ``q + _FP_W * r == low + i`` of each such hex; test an offset with :func:`_in_footprint`.  Two
    offsets may share a flat index (far apart on a wide board): that only makes the test say "in" more often,
    never less, so a cache using it may recompute an answer but never keeps a stale one."""
    lines = sight_lines(dq, dr, origin)
    low, masks = lines.masks(_FP_W)
    bits = 0
    for m in masks:
        bits |= m
    extra = [(0, 0), (dq, dr)] + [(dq + x, dr + y) for x, y in DIRECTIONS]
    for sides in lines.hexsides:
        for x1, y1, x2, y2, ok1, ok2 in sides:
            if ok1:
                extra.append((x1, y1))
            if ok2:
                extra.append((x2, y2))
    flat = [x + _FP_W * y for x, y in extra]
    if not bits:
        low = min(flat)
    elif min(flat) < low:
        bits <<= low - min(flat)
        low = min(flat)
    for f in flat:
        bits |= 1 << (f - low)
    return low, bits


def _in_footprint(fp: tuple[int, int], x: int, y: int) -> bool:
    """Whether the offset ``(x, y)`` may be in the footprint ``fp`` of :func:`_line_footprint`."""
    i = x + _FP_W * y - fp[0]
    return i >= 0 and (fp[1] >> i) & 1 == 1


def _sees(battle: BoardView, s: int, e: int) -> bool:
    """The :class:`sim.battle.SightMatrix` pair test: ``s`` has a line of sight to ``e`` (6.4: 2+ clear lines).

    Read from the shot ``s`` -> ``e`` (:meth:`PanzerSquadron.shots`, which keeps it for the doctrines' queries):
    its geometry's ``los`` (a :class:`GeometryIllegal` keeps it too); any other answer asks :meth:`geometry`."""
    rs = battle.ruleset
    got = rs.shots(battle, s, (e,))[0]
    if isinstance(got, Shot):
        return got.info["los"] != "blocked"
    if isinstance(got, GeometryIllegal):
        return got.los != "blocked"
    return rs.geometry(battle, s, e)["los"] != "blocked"


def _sees_footprint(battle: BoardView, s: int, e: int) -> Callable[[Hex], bool] | None:
    """The :class:`sim.battle.SightMatrix` footprint of :func:`_sees` ``(s, e)`` (asked right after it, the two
    tanks unchanged): ``touches(h)``, true for every hex whose obstacles could change the answer -- the hexes the
    shot ``s`` -> ``e`` read (:func:`_footprint`, what the front cache of :meth:`PanzerSquadron.shots` keeps it
    by: :func:`_sees` reads nothing else, its ``los`` being part of that shot) -- or ``None`` (the sight ellipse)
    when the shot has none (an exceptional-line geometry, a refusal :func:`_sees` answers by :meth:`geometry`)."""
    ts, te = battle.tanks[s], battle.tanks[e]
    a, b = ts.hex, te.hex
    if a is None or b is None:
        return None
    rs = battle.ruleset
    got = rs.shots(battle, s, (e,))[0]  # the front cache's entry, just made or checked by _sees
    return rs.shot_footprint(battle, got, a, ts.facing, b)


def _blocked_count(rs: PanzerSquadron, battle: BoardView, a: Hex, facing: int, b: Hex, target_facing: int,
                   target: Vehicle) -> int | None:
    """The seven-line count (0 or 1) of a shot from ``a`` (hull facing ``facing``) at a tank of vehicle ``target``
    on ``b`` facing ``target_facing`` (live tanks not blocking sight) when it makes the shot illegal for want of a
    line of sight, else ``None`` (the rest of the geometry decides).

    :func:`shot_geometry` refuses a shot whose struck face is no masked side (7.2: an unmasked face is the seven
    lines' alone) and whose count is 0 or 1 (6.4) before it reads anything else (range, arcs, statuses, Tiles), with
    the reason ``no line of sight (N of 7 lines clear)`` and los ``blocked``: so that answer needs only the aspect
    and the masking test (:func:`shot_geometry`'s, written out) and the count (:func:`_pair_lines`, the one the shot
    uses, kept per pair of hexes).  At range 1 all seven lines are clear: ``None``."""
    dq, dr = b[0] - a[0], b[1] - a[1]
    if max(abs(dq), abs(dr), abs(dq + dr)) <= 1:
        return None
    hexmap = battle.map
    opts = battle.options
    # the obstacles and the line counts of this map version, made once per version (the board's own: a fork or
    # another battle's board makes its own)
    ctx: list[Any] = hexmap.local_cached(("ps_blocked", _options_key(opts)), lambda: [None, None, None])
    if ctx[0] != hexmap.version:
        obs = rs.obstacles(battle)
        ctx[0], ctx[1], ctx[2] = hexmap.version, obs, _pair_lines(hexmap, obs, rs.sight_rules(opts),
                                                                  _wreck_hexes(battle), _options_key(opts))
    obstacles: frozenset[Hex] = ctx[1]
    x, y, z = -dq, -dr, dq + dr  # aspect(target, target facing, firer): the cube vector turned by -60 x facing
    for _ in range(target_facing % 6):
        x, y, z = -y, -z, -x
    hi, lo = (y, z) if y >= z else (z, y)
    if not (x > hi or (x == y == z == 0) or x < lo):  # the side, or a boundary where the side may be the face
        if x == hi:
            face = thicker(target.armour, (FRONT, SIDE))
        elif x == lo:
            face = thicker(target.armour, (SIDE, REAR))
        else:
            face = SIDE
        if face == SIDE:
            across = b.neighbour((target_facing + 1) % 6 if z > y else (target_facing + 4) % 6)
            if across != a and across in obstacles:
                return None  # a masked side: the exceptional lines decide
    n = ctx[2](a, facing, b)
    return n if n <= 1 else None


class GeometryIllegal(Illegal):
    """A shot its geometry refuses (no line of sight, a masked side, out of range, outside a hull arc), with the
    geometry's sight result kept as ``los`` (``clear`` / ``partial`` / ``blocked``, :func:`shot_geometry`)."""

    los: str


def _hexes(tanks: list[TankState]) -> set[Hex]:
    """The hexes of ``tanks`` (tanks of ``wrecks()`` / ``live_tanks()``: all on the board)."""
    return {h for t in tanks if (h := t.hex) is not None}


def _ps_key(shot: Shot) -> PSKey:
    """``shot.key`` as the :class:`PSKey` :meth:`PanzerSquadron.shot` puts there; raises ``TypeError`` for a shot
    of another rule set."""
    key = shot.key
    if not isinstance(key, PSKey):
        raise TypeError(f"not a panzer_squadron shot: its key is a {type(key).__name__}, not a PSKey")
    return key
