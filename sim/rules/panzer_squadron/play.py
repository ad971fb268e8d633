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

from functools import lru_cache
from typing import Any, Generator, Literal, Mapping

from pydantic import Field

from sim.actions import Action, Activate, Fire, Pass, Pivot, Plan, Special, Step
from sim.battle import Battle, BoardView, sight_matrix
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
from sim.hexgrid import Hex, as_hex, bounded_dijkstra
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
from sim.rules.panzer_squadron.sight import SightRules, shot_geometry, turret_facing_for
from sim.victory import draw, most_tanks, standard_outcome

MODES = ("hold", "fire", "move", "move_and_fire", "ambush")
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
    max_range_hexes: int | None = Field(None, ge=1)
    los_origin: Literal["centre", "front_vertex"] = "centre"
    hexside_blocks: Literal["both", "either"] = "both"
    live_tanks_block_los: bool = False
    exceptional_modifier: int = -1
    max_turns: int = Field(20, ge=1)
    turn_limit_result: Literal["draw", "most_tanks"] = "draw"
    tiles: dict[str, Tile] = Field(default_factory=dict)


class PSTankExt(RulesOptions):
    """Per-tank scenario block: ``status`` overrides ``initial_status``; ``turret_facing`` sets an off-centre
    turret at the start."""

    status: Literal["stationary", "in_movement"] | None = None
    turret_facing: int | None = Field(None, ge=0, le=5)


# --- the rule set ------------------------------------------------------------------------------------------------

class PanzerSquadron(Ruleset):
    """The ``panzer_squadron`` rule set (see the module docstring for its decision points)."""

    name = "panzer_squadron"
    Options = PSOptions
    TankExt = PSTankExt
    has_ramming = False

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

    def tiles(self, options: PSOptions) -> dict[str, Tile]:
        return {**DEFAULT_TILES, **options.tiles}

    def terrain_names(self, options: PSOptions | None = None) -> tuple[str, ...]:
        return tuple(self.tiles(options or PSOptions()))

    def default_turn_limit(self, options: PSOptions) -> int:
        return options.max_turns

    passable_is_static = True  # terrain and options only

    def passable(self, b: BoardView, h: Hex) -> bool:
        return h in b.map and not self.tile(b, h).blocks_move

    def tile(self, b: BoardView, h: Hex) -> Tile:
        return self.tiles(b.options)[b.map.terrain(h)]

    # set-up ----------------------------------------------------------------------------------------------------
    def setup(self, b: Battle) -> None:
        for t in b.tanks:
            ext = t.ext or {}
            t.rules_state.setdefault("marker", ext.get("status") or b.options.initial_status)
            t.rules_state.setdefault("ambush", False)
            t.rules_state.setdefault("activated_turn", 0)
            t.rules_state.setdefault("start_status", t.rules_state["marker"])
            if not t.vehicle.turret:
                t.turret_facing = None
            elif ext.get("turret_facing") is not None:
                t.turret_facing = ext["turret_facing"]

    # sight -----------------------------------------------------------------------------------------------------
    def obstacles(self, b: BoardView) -> frozenset[Hex]:
        """Obstacle hexes (6.1): ``blocks_los`` Tiles and wrecks, cached under the map version; plus live tanks
        when ``live_tanks_block_los``."""
        base = b.map.cached(("ps_obstacles",), lambda: self.static_obstacles(b) | {t.hex for t in b.wrecks()})
        if b.options.live_tanks_block_los:
            return base | {t.hex for t in b.live_tanks()}
        return base

    def static_obstacles(self, b: BoardView) -> frozenset[Hex]:
        """The Tiles that block sight (kept until the terrain changes)."""
        tiles = self.tiles(b.options)
        return b.map.terrain_cached(("ps_tile_obstacles",), lambda: frozenset(
            h for h in b.map.cells if tiles[b.map.terrain(h)].blocks_los))

    def sight_rules(self, options: PSOptions) -> SightRules:
        return _sight_rules(options.los_origin, options.hexside_blocks, options.max_range_hexes)

    def geometry(self, b: BoardView, shooter: int, target: int, as_if: Hypo | None = None) -> dict:
        """:func:`shot_geometry` for two tanks on the board.

        When live tanks do not block sight the answer depends only on the two tanks and on the obstacles in the
        pair's sight ellipse, so it is kept across map versions (:meth:`sim.hexgrid.HexMap.pair_cached`) and
        recomputed only when a wreck appears or leaves in that ellipse or the terrain changes."""
        s, t = b.tanks[shooter], b.tanks[target]
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
        opts = b.options
        if opts.live_tanks_block_los:
            return shot_geometry(hx, facing, gun, s.vehicle.turret, th, t.facing, t.vehicle.armour,
                                 self.obstacles(b), self.sight_rules(opts), opts.exceptional_modifier)
        key = ("ps_geo", hx, facing, gun, s.vehicle.turret, th, t.facing, _armour_key(t.vehicle),
               opts.los_origin, opts.hexside_blocks, opts.max_range_hexes, opts.exceptional_modifier)
        return b.map.pair_cached(key, hx, th, lambda: shot_geometry(
            hx, facing, gun, s.vehicle.turret, th, t.facing, t.vehicle.armour, self.obstacles(b),
            self.sight_rules(opts), opts.exceptional_modifier))

    def visible(self, b: BoardView, side: int) -> tuple[int, ...]:
        """Enemy tanks that at least one live tank of ``side`` has a line of sight to (2+ clear lines).  Kept up to
        date pair by pair (:class:`sim.battle.SightMatrix`) when live tanks do not block sight."""
        m = None if b.options.live_tanks_block_los else sight_matrix(b, "ps_los", _sees)
        if m is not None:
            return m.visible(side)
        own = b.live_tanks(side)
        out = []
        for e in b.enemies_of(side):
            if any(self.geometry(b, s.tank_id, e.tank_id)["los"] != "blocked" for s in own):
                out.append(e.tank_id)
        return tuple(out)

    # shots -----------------------------------------------------------------------------------------------------
    def shot(self, b: BoardView, shooter: int, target: int, fire: Action | None = None, as_if: Hypo | None = None
             ) -> Shot | Illegal:
        """The shot ``shooter`` -> ``target`` now (or from the hypothetical ``as_if`` position), or why not."""
        if not isinstance(target, int) or not 0 <= target < len(b.tanks):
            return Illegal("target is not a tank")
        s, t = b.tanks[shooter], b.tanks[target]
        if not t.alive or t.hex is None:
            return Illegal("target is not a live tank")
        if t.side == s.side:
            return Illegal("target is a friendly tank")
        g = self.geometry(b, shooter, target, as_if)
        if not g["shot_allowed"]:
            return Illegal(g["reason"])
        hx = as_hex(as_if.hex) if as_if else s.hex
        if as_if:
            status = IN_MOVEMENT if as_if.moved and s.rules_state.get("start_status") == IN_MOVEMENT else \
                s.rules_state.get("start_status", STATIONARY)
        elif b.rules_state.get("active") == shooter:
            status = s.rules_state["start_status"]
        else:
            status = s.rules_state["marker"]
        tiles = self.tiles(b.options)
        tile_mod = tiles[b.map.terrain(t.hex)].target_modifier + tiles[b.map.terrain(hx)].firer_modifier
        m = net_modifier(firer_status=status, turret_rotated=g["turret_rotation"],
                         target_moving=t.rules_state.get("marker") == IN_MOVEMENT,
                         cover_modifier=g["cover_modifier"], range_hexes=g["range"], tile_modifier=tile_mod)
        key = PSKey(s.vehicle.penetration, g["armour"], m)
        return Shot(shooter, target, key, g["face"], {**g, "firer_status": status, "tile_modifier": tile_mod})

    def odds(self, key: PSKey) -> Odds:
        return shot_odds(key)

    def logged_odds(self, key: Mapping[str, Any]) -> Odds:
        """Odds of a logged shot: its key is ``PSKey._asdict()`` (penetration, armour, modifier)."""
        return shot_odds(PSKey(**{f: int(key[f]) for f in PSKey._fields}))

    def resolve(self, b: Battle, shot: Shot, dice: DiceSource, reaction: bool = False) -> None:
        """Roll ``shot``, emit :class:`ShotResolved` (with its rolls), turn the turret if needed, and destroy the
        target on a kill (it becomes a wreck, D11)."""
        s = b.tanks[shot.shooter]
        if shot.info.get("turret_rotation") and s.turret_facing is not None:
            b.emit(TurretTurned(s.tank_id, turret_facing_for(s.hex, b.tanks[shot.target].hex, s.turret_facing)))
        r = resolve_key(shot.key, dice)
        b.emit(ShotResolved(shooter=shot.shooter, target=shot.target, result=r["result"], hit=r["hit"],
                            kill=r["kill"], key=shot.key._asdict(),
                            details={k: v for k, v in r.items() if k not in ("hit", "kill", "result")}
                            | {"face": shot.face, "range": shot.info["range"], "los": shot.info["los"]},
                            reaction=reaction))
        if r["kill"]:
            b.emit(StatusChanged(shot.target, Status.DESTROYED, r["result"], by=shot.shooter))

    def shot_params(self, b: BoardView, shooter: int, target: int) -> dict[str, Any] | Illegal:
        sh = self.shot(b, shooter, target)
        if isinstance(sh, Illegal):
            return sh
        return {"penetration": sh.key.penetration, "armour": sh.key.armour, "modifier": sh.key.modifier}

    # movement --------------------------------------------------------------------------------------------------
    def _enterable(self, b: BoardView, h: Hex) -> bool:
        if h not in b.map:
            return False
        if self.tile(b, h).blocks_move:
            return False
        return not b.occupants(h)

    def move_options(self, b: BoardView, tank: int, state: tuple[Hex, int]
                     ) -> list[tuple[tuple[Hex, int], int, Action]]:
        """Legal single moves from ``state = (hex, facing)`` (D13): enter a front neighbour at the Tile's cost,
        pivot one vertex for 1, or (``allow_reverse``) back into a rear neighbour for cost + 1."""
        h, f = state
        out = []
        dirs = [(f % 6, 0), ((f - 1) % 6, 0)]
        if b.options.allow_reverse:
            dirs += [((f + 2) % 6, 1), ((f + 3) % 6, 1)]
        for k, extra in dirs:
            n = h.neighbour(k)
            if self._enterable(b, n):
                out.append(((n, f), self.tile(b, n).move_cost + extra, Step(tank, n)))
        for nf in ((f + 1) % 6, (f - 1) % 6):
            out.append(((h, nf), 1, Pivot(tank, nf)))
        return out

    def reachable(self, b: BoardView, tank: int, budget: int) -> dict:
        """``{(hex, facing): (cost, path)}`` within ``budget`` movement points."""
        t = b.tanks[tank]
        succ = lambda st: [(n, c) for n, c, _ in self.move_options(b, tank, st)]  # noqa: E731
        return bounded_dijkstra((t.hex, t.facing), succ, budget)

    def plan_to(self, b: BoardView, tank: int, path: list, then: Action | None = None, end_status: str | None = None
                ) -> Plan:
        """A :class:`Plan` following ``path`` (states from :meth:`reachable`)."""
        steps = []
        for (h0, _f0), (h1, f1) in zip(path, path[1:]):
            steps.append(Step(tank, h1) if h1 != h0 else Pivot(tank, f1))
        return Plan(tank, tuple(steps), then=then, end_status=end_status)

    def exit_steps(self, b: BoardView, tank: int, state: tuple[Hex, int] | None = None) -> list[Step]:
        """Front steps off the board across the side's exit edge from ``state`` (default: where the tank stands),
        each costing :data:`EXIT_COST` (section 11, decided: like entering open ground, across a front hexside)."""
        t = b.tanks[tank]
        edge = b.sides[t.side].exit_edge
        if not edge:
            return []
        h, f = state if state is not None else (t.hex, t.facing)
        out = []
        for k in (f % 6, (f - 1) % 6):
            n = h.neighbour(k)
            if n not in b.map and edge_of(b.map, h, n) == edge:
                out.append(Step(tank, n))
        return out

    def exit_step(self, b: BoardView, tank: int) -> Step | None:
        """The first of :meth:`exit_steps` from where the tank stands, or ``None``."""
        steps = self.exit_steps(b, tank)
        return steps[0] if steps else None

    def entry_cost(self, b: BoardView, tank: int, state: tuple[Hex, int]) -> int | None:
        """Fewest movement points to enter a hex (or leave across the exit edge) from ``state = (hex, facing)``:
        pivots (1 point per vertex) then one entry (D13).  ``None`` when no entry is possible at any cost.  The
        compulsory hex (section 4) is owed while this is within the points left."""
        h, f = state
        best: int | None = None
        for nf in range(6):
            turns = min((nf - f) % 6, (f - nf) % 6)
            costs = [c for _st, c, a in self.move_options(b, tank, (h, nf)) if isinstance(a, Step)]
            if self.exit_steps(b, tank, (h, nf)):
                costs.append(EXIT_COST)
            if costs and (best is None or turns + min(costs) < best):
                best = turns + min(costs)
        return best

    # turn ------------------------------------------------------------------------------------------------------
    def _modes(self, b: BoardView, tid: int) -> tuple[str, ...]:
        t = b.tanks[tid]
        ok = list(MODES)
        if t.rules_state["marker"] != STATIONARY and not b.options.moving_may_fire_in_place:
            ok.remove("fire")
        return tuple(ok)

    def _targets(self, b: BoardView, tid: int) -> tuple[int, ...]:
        return tuple(e.tank_id for e in b.enemies_of(b.tanks[tid].side)
                     if not isinstance(self.shot(b, tid, e.tank_id), Illegal))

    def play_turn(self, b: Battle, dice: DiceSource) -> Generator[Decision, Action | None, None]:
        """One game turn (D15): initiative, then the sides alternate activating one tank each."""
        first = yield from self._initiative(b, dice)
        side = first
        nsides = len(b.sides)
        while True:
            if b.ended:
                return
            pending = {s: [t.tank_id for t in b.live_tanks(s) if t.rules_state["activated_turn"] != b.turn]
                       for s in range(nsides)}
            if not any(pending.values()):
                return
            if not pending[side]:
                side = (side + 1) % nsides
                continue
            actors = tuple(pending[side])
            legal = Legal(contains=lambda a, actors=actors: isinstance(a, Activate) and a.actor in actors
                          and a.mode in self._modes(b, a.actor),
                          modes=MODES, targets=lambda tid: self._targets(b, tid),
                          reachable=lambda tid: self.reachable(b, tid, 8))
            act = yield Decision(side, "activate", actors, legal, Activate(actors[0], "hold"),
                                 {"turn": b.turn, "modes": {a: self._modes(b, a) for a in actors}})
            if not isinstance(act, Activate) or not legal.contains(act):
                act = Activate(actors[0], "hold")
            yield from self._activation(b, dice, act.actor, act.mode)
            side = (side + 1) % nsides

    def _initiative(self, b: Battle, dice: DiceSource) -> Generator[Decision, Action | None, int]:
        if b.options.initiative == "alternate":
            first = 0 if b.turn % 2 == 1 else 1
            b.emit(RuleEvent("initiative", None, {"first": first, "method": "alternate"}))
            return first
        while True:
            rolls = [dice.roll("d10", f"initiative side {s}") for s in range(len(b.sides))]
            best = max(rolls)
            if rolls.count(best) == 1:
                first = rolls.index(best)
                b.emit(RuleEvent("initiative", None, {"first": first, "rolls": rolls}))
                return first
            b.emit(RuleEvent("initiative_tie", None, {"rolls": rolls}))
        yield  # pragma: no cover  (makes this a generator)

    def _activation(self, b: Battle, dice: DiceSource, tid: int, mode: str) -> Generator[Decision, Action | None, None]:
        t = b.tanks[tid]
        if not t.alive or t.hex is None:  # e.g. withdrawn after policy faults while the side was choosing
            return
        b.emit(Activated(t.side, tid, mode))
        b.emit(TankStateSet(tid, "activated_turn", b.turn))
        b.emit(TankStateSet(tid, "start_status", t.rules_state["marker"]))
        if t.rules_state["ambush"]:
            b.emit(TankStateSet(tid, "ambush", False))
        if t.turret_facing is not None and t.turret_facing != t.facing:
            yield from self._recentre(b, tid)
        b.emit(BattleStateSet("active", tid))
        try:
            if mode in ("hold", "ambush"):
                if mode == "ambush":
                    b.emit(TankStateSet(tid, "ambush", True))
                self._set_marker(b, tid, STATIONARY)
            elif mode == "fire":
                yield from self._fire_decision(b, dice, tid)
                self._set_marker(b, tid, STATIONARY)
            else:
                yield from self._move(b, dice, tid, mode)
        finally:
            if not b.ended:
                b.emit(BattleStateSet("active", None))

    def play_activation(self, b: Battle, dice: DiceSource, side: int, action: Action
                        ) -> Generator[Decision, Action | None, None]:
        """Search hook (:meth:`sim.rules.base.Ruleset.play_activation`): the activation that the legal answer
        ``action`` (an :class:`Activate`) to ``side``'s ``activate`` decision starts, D15 -- re-centring, the
        shot or the move with its ambushes, the marker -- exactly as in play; the other side's next activation is
        not played."""
        yield from self._activation(b, dice, action.actor, action.mode)

    def _recentre(self, b: Battle, tid: int) -> Generator[Decision, Action | None, None]:
        """Section 5.3: at the start of its activation an off-centre turret may be set back to the hull facing at
        no cost: at once with ``auto_recentre_turret``, else the owner is asked (``recentre_turret`` decision:
        ``Special("recentre_turret")`` turns it back, ``Pass``, the default, keeps it)."""
        t = b.tanks[tid]
        if b.options.auto_recentre_turret:
            b.emit(TurretTurned(tid, t.facing))
            return
        legal = Legal(contains=lambda a: (isinstance(a, Pass) and a.actor in (tid, None)) or (
            isinstance(a, Special) and a.actor == tid and a.name == "recentre_turret"), specials=("recentre_turret",))
        act = yield Decision(t.side, "recentre_turret", (tid,), legal, Pass(tid),
                             {"turret_facing": t.turret_facing, "facing": t.facing})
        if isinstance(act, Special) and legal.contains(act):
            b.emit(TurretTurned(tid, t.facing))

    def _set_marker(self, b: Battle, tid: int, marker: str) -> None:
        if b.tanks[tid].alive and b.tanks[tid].rules_state["marker"] != marker:
            b.emit(TankStateSet(tid, "marker", marker))

    def _fire_decision(self, b: Battle, dice: DiceSource, tid: int) -> Generator[Decision, Action | None, bool]:
        t = b.tanks[tid]
        legal = Legal(contains=lambda a: isinstance(a, Pass) or (
            isinstance(a, Fire) and a.actor == tid and not isinstance(self.shot(b, tid, a.target), Illegal)),
            targets=lambda _tid: self._targets(b, tid))
        act = yield Decision(t.side, "fire", (tid,), legal, Pass(tid))
        if isinstance(act, Fire) and legal.contains(act):
            self.resolve(b, self.shot(b, tid, act.target), dice)
            return True
        return False

    def _move(self, b: Battle, dice: DiceSource, tid: int, mode: str) -> Generator[Decision, Action | None, None]:
        """Section 4: roll the allowance (D14), then one ``move_step`` decision per step until the move ends.

        The compulsory hex: a tank that started in movement owes one hex entry while any entry is affordable from
        where it stands, pivots included (decided: "any legal entry" counts an entry after pivots; leaving across
        the exit edge is an entry).  While it is owed, an action is legal only if an entry stays affordable after
        it: no pass, no ``end_move``, no shot, no pivot that leaves too few points (the default is the first
        action of the cheapest entry).  When no step, pivot or shot is left (every point used), one last
        ``move_step`` decision (context ``final``) still takes the owner's marker choice (D20): ``Pass`` (the
        default marker) or ``Special("end_move", {"status": ...})``, so a plan's ``end_status`` reaches the rules
        however the move ends.  No decision follows a shot, an exit or the mover's destruction."""
        t = b.tanks[tid]
        started = t.rules_state["start_status"]
        n = 2 if started == IN_MOVEMENT else 1
        roll = sum(dice.rolls(n, "d4", "movement"))
        mp = max(0, roll - t.vehicle.movement_restriction)
        b.emit(RuleEvent("movement_allowance", tid, {"roll": roll, "dice": n, "mp": mp}))
        entered = 0
        interrupted = False
        fired = False
        status_choice: str | None = None
        while t.alive and t.hex is not None:
            here = (t.hex, t.facing)
            opts = [(st, c, a) for st, c, a in self.move_options(b, tid, here) if c <= mp]
            if mp >= EXIT_COST:
                opts += [(None, EXIT_COST, ex) for ex in self.exit_steps(b, tid)]
            cost_now = self.entry_cost(b, tid, here) if started == IN_MOVEMENT and entered == 0 else None
            compulsory = cost_now is not None and cost_now <= mp
            if compulsory:
                opts = [(st, c, a) for st, c, a in opts if isinstance(a, Step) or (
                    (ec := self.entry_cost(b, tid, st)) is not None and c + ec <= mp)]
            can_fire = mode == "move_and_fire" and mp >= FIRE_COST and not compulsory
            final = not opts and not can_fire
            allowed = {a for _, _, a in opts}

            def contains(a: Action, allowed=allowed, compulsory=compulsory, can_fire=can_fire) -> bool:
                if isinstance(a, Fire):
                    return can_fire and a.actor == tid and not isinstance(self.shot(b, tid, a.target), Illegal)
                if isinstance(a, Pass):
                    return not compulsory and a.actor in (tid, None)
                if isinstance(a, Special):
                    return (not compulsory and a.actor == tid and a.name == "end_move"
                            and a.args.get("status") in (None, STATIONARY, IN_MOVEMENT))
                return isinstance(a, (Step, Pivot)) and a in allowed

            budget = mp
            legal = Legal(contains=contains, reachable=lambda _t, budget=budget: self.reachable(b, tid, budget),
                          targets=lambda _t: self._targets(b, tid) if mode == "move_and_fire" else (),
                          specials=("end_move",),
                          plan_to=lambda _t, path, then=None, end_status=None: self.plan_to(b, tid, path, then,
                                                                                             end_status))
            default: Action = Pass(tid)
            if compulsory:
                default = min(opts, key=lambda o: o[1] + (0 if isinstance(o[2], Step) else
                                                           self.entry_cost(b, tid, o[0])))[2]
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
                b.emit(RuleEvent("fire_cost", tid, {"mp_spent": FIRE_COST, "mp_left": mp}))
                self.resolve(b, self.shot(b, tid, act.target), dice)
                fired = True
                break
            cost = next(c for st, c, a in opts if a == act)
            mp -= cost
            if isinstance(act, Pivot):
                tf = None if t.turret_facing is None else (t.turret_facing + act.facing - t.facing) % 6
                b.emit(Pivoted(tid, act.facing, tf, cost))
                continue
            if act.to not in b.map:
                b.emit(StatusChanged(tid, Status.EXITED, "exit edge"))
                entered += 1
                break
            b.emit(Moved(tid, act.to, t.facing, cost))
            entered += 1
            interrupted = yield from self._ambushes(b, dice, tid)
        if t.alive and t.hex is not None:
            if fired:
                marker = STATIONARY
            elif status_choice in (STATIONARY, IN_MOVEMENT):
                marker = status_choice
            else:
                marker = IN_MOVEMENT if entered else STATIONARY
            self._set_marker(b, tid, marker)

    def _ambushes(self, b: Battle, dice: DiceSource, mover: int) -> Generator[Decision, Action | None, bool]:
        """D16: after the mover entered a hex, ambushers of the other side that may fire at it are asked, one shot
        each, in the order their side chooses.  Returns True if anyone fired."""
        m = b.tanks[mover]
        fired_any = False
        for side in b.side_ids():
            if side == m.side:
                continue
            done: set[int] = set()
            while m.alive and m.hex is not None:
                ready = tuple(t.tank_id for t in b.live_tanks(side) if t.rules_state["ambush"]
                              and t.tank_id not in done
                              and not isinstance(self.shot(b, t.tank_id, mover), Illegal))
                if not ready:
                    break
                legal = Legal(contains=lambda a, ready=ready: isinstance(a, Pass) or (
                    isinstance(a, Fire) and a.actor in ready and a.target == mover),
                    targets=lambda tid: (mover,))
                act = yield Decision(side, "react", ready, legal, Pass(None), {"mover": mover, "trigger": "ambush"})
                if not isinstance(act, Fire) or not legal.contains(act):
                    break
                done.add(act.actor)
                b.emit(TankStateSet(act.actor, "ambush", False))
                self.resolve(b, self.shot(b, act.actor, mover), dice, reaction=True)
                fired_any = True
        return fired_any

    # outcome ---------------------------------------------------------------------------------------------------
    def outcome(self, b: BoardView) -> Outcome | None:
        """D21: last tank lost loses at once; after the turn limit, victory points or ``turn_limit_result``."""
        return standard_outcome(b, most_tanks if b.options.turn_limit_result == "most_tanks" else draw)

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


def edge_of(hexmap: Any, inside: Hex, outside: Hex) -> str | None:
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


_ARMOUR_KEYS: dict[int, tuple[Any, tuple]] = {}


def _armour_key(vehicle: Any) -> tuple:
    """``vehicle.armour`` as a sorted tuple (a cache key), computed once per vehicle record."""
    ent = _ARMOUR_KEYS.get(id(vehicle))
    if ent is None or ent[0] is not vehicle:
        ent = _ARMOUR_KEYS[id(vehicle)] = (vehicle, tuple(sorted(vehicle.armour.items())))
    return ent[1]


def _sees(b: Any, s: int, e: int) -> bool:
    """The :class:`sim.battle.SightMatrix` pair test: ``s`` has a line of sight to ``e`` (6.4: 2+ clear lines)."""
    return b.ruleset.geometry(b, s, e)["los"] != "blocked"
