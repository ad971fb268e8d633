"""BattleModel(mesa.Model): builds a battle from a scenario and drives the rule set's ``play_turn`` generator.

One ``step()`` is one game turn: the rule set yields decisions, each side's controller answers, and events apply at
once.  After every kill or withdrawal the outcome is checked; a battle may end mid-turn, and the DataCollector
still records that turn's row (once per turn, keyed on ``model.time``).  ``advance(n)`` steps decision by decision
(the interactive app).  Determinism: ``SeedSequence(seed).spawn(3)`` gives the rule dice and each side's controller
stream, so one side's policy never shifts the other's draws or the dice.
"""
from __future__ import annotations

import gc
import numbers
import os
from typing import Any, Callable, Generator, Mapping

from agents.controllers import EntrantPolicy, SideController, load_policy
from agents.observation import Observation
from agents.side_controller import OverrunGuard
from agents.tank import Tank
from sim.actions import Action, Pass
from sim.battle import BattleState, LogEntry, SideInfo, TankState
from sim.dice import DiceSource, side_rng, spawn_streams
from sim.events import (
    ActionRejected,
    BattleEnded,
    BattleStarted,
    BattleStateSet,
    PolicyFault,
    ShotResolved,
    Status,
    StatusChanged,
    TurnStarted,
)
from sim.hexgrid import Hex, HexMap
from sim.mesa_core import DataCollector, Model
from sim.rules.base import Decision, Outcome
from sim.scenario import PolicySpec, Scenario, ScenarioError, apply_overrides, load_scenario, validate

_DECISIVE = (StatusChanged,)


def _hex_pair(tank: Tank) -> tuple[int, int] | None:
    h = tank.hex
    return None if h is None else (h.q, h.r)


def _state_reporter(key: str) -> Callable[[Tank], Any]:
    def report(tank: Tank) -> Any:
        return tank.rules_state.get(key)
    report.__name__ = f"rules_state_{key}"
    return report


#: Agent reporters of every battle (one row per tank per collected turn): ``turn`` (the game turn),
#: ``tank_id``, ``label``, ``side`` (0-based index), ``vehicle``, ``hex`` (``(q, r)``, ``None`` off the board),
#: ``facing``, ``turret_facing`` (vertex 0..5; ``None`` without a turret), ``status``, ``tank_shots`` /
#: ``tank_hits`` / ``tank_kills`` (this tank's own, cumulative; prefixed because ``mesa.batch_run`` merges model
#: and agent columns into one row), ``rules_state`` (the rule set's per-tank values, a dict).
AGENT_REPORTERS: dict[str, Any] = {
    "turn": lambda tank: tank.model.battle.turn, "tank_id": "tank_id", "label": "label", "side": "side",
    "vehicle": "vehicle_id", "hex": _hex_pair,
    "facing": "facing", "turret_facing": "turret_facing", "status": "status",
    "tank_shots": "shots", "tank_hits": "hits", "tank_kills": "kills", "rules_state": "rules_state",
}


def build_battle(spec: Scenario, dice: DiceSource | None = None, board: HexMap | None = None) -> BattleState:
    """A fresh :class:`BattleState` in its set-up state (no events yet) for ``spec``.

    ``board``: a pristine board built from this scenario (``spec.build_map()``) to reuse: the battle plays on
    ``board.for_another_battle()``, which shares its terrain cache (batch workers, issue 14); the event log is the
    same as with a board built afresh.  Without one, the battle plays on :meth:`Scenario.battle_board` (the same
    reuse, from a template board the scenario keeps)."""
    rs = spec.rules()
    options = spec.options()
    hexmap = spec.battle_board() if board is None else board.for_another_battle()
    tanks = []
    tid = 0
    for si, side in enumerate(spec.sides):
        for t in side.tanks:
            veh = spec.vehicle(t.vehicle)
            ext = rs.TankExt(**t.rules).model_dump()
            tanks.append(TankState(
                tank_id=tid, label=t.label or f"{side.name[:1].upper()}{tid + 1}", side=si, vehicle_id=t.vehicle,
                vehicle=veh, hex=Hex(*t.hex), facing=t.facing,
                turret_facing=t.facing if rs.has_turret(veh) else None, ext=ext))
            tid += 1
    sides = [SideInfo(s.name, s.role, s.exit_edge) for s in spec.sides]
    hex_ext = {Hex(*f["hex"]): rs.HexExt(**{k: v for k, v in f.items() if k != "hex"}) for f in spec.map.features}
    b = BattleState(hexmap, tanks, sides, rs, options, objectives=[o.model_dump() for o in spec.objectives],
               turn_limit=spec.effective_turn_limit(), hex_size_m=spec.map.hex_size_m,
               kill_points=spec.victory.kill_points, exit_points=spec.victory.exit_points, dice=dice, hex_ext=hex_ext)
    rs.setup(b)
    return b


def _setup_hex(t: TankState) -> list[int]:
    """``[q, r]`` of a tank at set-up; raises ``ValueError`` if it has no hex (every tank starts on the board)."""
    if t.hex is None:
        raise ValueError(f"tank {t.label} has no hex at set-up (every tank starts on the board)")
    return [t.hex.q, t.hex.r]


def setup_board(b: BattleState) -> tuple[tuple[Hex, ...], dict[str, str], list[tuple[str, str]]]:
    """The set-up event's board block of ``b`` now: ``cells`` (the board's own :class:`Hex` cells, sorted: a
    tuple, so the event holds the board's description by reference instead of 10^4 new ``[q, r]`` lists on a
    100 x 100 map, issue 14; a :class:`Hex` is a ``(q, r)`` pair, written ``[q, r]`` in the log as before),
    ``terrain`` (``{"q,r": name}`` of the cells that are not open, in that order) and a slot for their JSON text
    (empty until :func:`sim.runner.log_rows` writes a log and fills it with ``(cells_json, terrain_json)``).  Kept
    until the terrain changes (:meth:`sim.hexgrid.HexMap.terrain_cached`: the key reads nothing else), so the
    battles of one board share it.  The dict is shared: nothing may change it."""
    m = b.map

    def board() -> tuple[tuple[Hex, ...], dict[str, str], list[tuple[str, str]]]:
        return tuple(m.sorted_cells()), {f"{h.q},{h.r}": t for h, t in m.terrain_cells().items()}, []

    return m.terrain_cached(("setup_event_board",), board)


def setup_event(spec: Scenario, b: BattleState) -> BattleStarted:
    """The first log event: everything needed to draw and replay the battle without its scenario file.  Its board
    block (``map.cells``, ``map.terrain``) is made once per board and terrain version (shared by the boards of
    :meth:`sim.hexgrid.HexMap.for_another_battle`); :func:`setup_board` gives it with its JSON slot.  ``map.cells``
    is that block's immutable tuple of :class:`Hex` itself (``map.terrain`` a copy of its dict)."""
    cells, terrain, _json = setup_board(b)
    return BattleStarted(
        ruleset=b.ruleset.name,
        map={"shape": spec.map.shape, "width": spec.map.width, "height": spec.map.height,
             "radius": spec.map.radius, "hex_size_m": spec.map.hex_size_m,
             "cells": cells, "terrain": dict(terrain)},
        sides=tuple({"name": s.name, "role": s.role, "exit_edge": s.exit_edge} for s in b.sides),
        tanks=tuple({"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle": t.vehicle_id,
                     "hex": _setup_hex(t), "facing": t.facing, "turret_facing": t.turret_facing,
                     "turret": t.turret_facing is not None, "rules_state": dict(t.rules_state)} for t in b.tanks),
        objectives=tuple(b.objectives))


#: What ``rng=`` / ``seed=`` were not given as (distinguishes "not given" from an explicit ``None``).
_UNSET: Any = object()
#: Scenario a :class:`BattleModel` plays when none is named.
DEFAULT_SCENARIO = "default"


class SeedError(ValueError):
    """``rng`` / ``seed`` missing (``None``), not an integer, or two different values."""


def battle_seed(rng: Any = _UNSET, seed: Any = _UNSET) -> int:
    """The battle's integer seed from ``rng`` (Mesa 3's name) or its alias ``seed``; ``0`` when neither is given.

    DECISION: a battle always has an explicit integer seed (determinism: the same scenario and seed give the same
    log).  ``None`` (Mesa's "fresh entropy") is refused rather than drawn at random, because ``mesa.batch_run``
    passes ``seed=None`` for its own ``rng`` argument when that is not given, *replacing* a ``"seed"`` entry of
    ``parameters`` (it names the model's seed argument ``seed`` when the signature has one): a silent ``None``
    there would play every run with the same or a random seed.  So ``parameters={"rng": range(10)}`` and
    ``batch_run(..., rng=range(10))`` work, and ``parameters={"seed": ...}`` fails loudly with the fix.

    Raises :class:`SeedError`."""
    given = {name: v for name, v in (("rng", rng), ("seed", seed)) if v is not _UNSET and v is not None}
    if not given:
        if rng is _UNSET and seed is _UNSET:
            return 0
        raise SeedError("BattleModel: no seed (rng=None): a battle needs an integer seed. With mesa.batch_run use "
                        "parameters={'rng': [...]} or batch_run(..., rng=[...]); batch_run replaces a 'seed' "
                        "parameter by its own rng argument (None when not given)")
    for name, v in given.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 0:
            raise SeedError(f"BattleModel: {name}={v!r}: expected an integer seed >= 0 (a numpy Generator or "
                            f"SeedSequence is not accepted: the battle spawns its own streams from the integer)")
    values = {int(v) for v in given.values()}
    if len(values) > 1:
        raise SeedError(f"BattleModel: rng={given['rng']} and seed={given['seed']} differ; give one of them")
    return values.pop()


def resolve_scenario(scenario: Scenario | str | os.PathLike[str] | None,
                     overrides: Mapping[str, Any] | None = None) -> Scenario:
    """The validated :class:`Scenario` a model plays: ``scenario`` is a :class:`Scenario`, a bundled name
    (``"default"``) or a path to a YAML file (``None``: :data:`DEFAULT_SCENARIO`); ``overrides`` are dotted paths
    as experiments use them (:func:`sim.scenario.apply_overrides`: ``turn_limit``,
    ``sides.attacker.policy.name``, ``sides.0.policy.params.min_odds``, ...), applied before validation.

    Raises :class:`~sim.scenario.ScenarioError` (file: field path: expectation) or ``FileNotFoundError``."""
    if scenario is None:
        scenario = DEFAULT_SCENARIO
    if isinstance(scenario, Scenario):
        if not overrides:
            return scenario
        src = scenario.source or scenario.name
        data = scenario.model_dump(mode="json", exclude={"source"}, exclude_defaults=True)
        return validate(apply_overrides(data, overrides, src), src)
    if isinstance(scenario, (str, os.PathLike)):
        return load_scenario(os.fspath(scenario), overrides or None)
    raise ScenarioError([f"BattleModel: scenario: expected a Scenario, a bundled scenario name or a YAML path, got "
                         f"{type(scenario).__name__}"])


#: The cyclic garbage collector's thresholds while :meth:`BattleModel.run` plays (see there), each at least the
#: caller's: a young pass after 50,000 net allocations (CPython's default: 700), a middle pass every 20 young ones
#: (default 10), a full pass every :data:`FULL_GC_EVERY` middle ones (default 10).
YOUNG_GC_EVERY = 50_000
MIDDLE_GC_EVERY = 20
FULL_GC_EVERY = 100


class BattleModel(Model):
    """A battle as a Mesa model.

    ``scenario``: a validated :class:`Scenario`, a bundled scenario name or a YAML path (:func:`resolve_scenario`);
    ``rng``: the battle's integer seed (``seed=`` is an alias; see :func:`battle_seed`); ``policies``: optional
    per-side overrides ``{side_index: PolicySpec | (name, params) | EntrantPolicy | policy object}`` (plug-in
    doctrines only, except an :class:`agents.controllers.EntrantPolicy`, which tournaments use for isolated
    entrants; an object with ``decide(obs, decision)`` given from Python is used as it is, e.g. a trained policy
    held in memory); ``decision_timeout_s``: overrides the scenario's limit (``0`` disables limits, e.g. for
    determinism tests); ``dice``: the rule dice to use instead of the seeded stream (e.g.
    :class:`~sim.dice.FixedDice` for play cases); ``collect``: extra reporters ``{"model": {name: spec},
    "agents": {name: spec}}`` (:mod:`agents.collect`); ``cut_off_overruns``: while :meth:`run` plays in the main
    thread, an in-process decision still running ``max(1, limit / 2)`` seconds past its side's
    ``decision_timeout_s`` is cut off (:class:`agents.side_controller.OverrunGuard`, a real-time alarm) and
    recorded as a ``timeout`` fault with the decision's default, so a doctrine that never returns cannot hang the
    battle (``tanksim run`` sets it; tournaments and batches have their own watchdogs); any other keyword is a
    dotted-path scenario override (``turn_limit=8``, ``**{"sides.0.policy.name": "hold"}``), so
    ``mesa.batch_run`` can vary scenario fields::

        mesa.batch_run(BattleModel, parameters={"scenario": "default", "rng": range(10),
                                                "sides.0.policy.name": ["advance", "hold"]},
                       data_collection_period=1, display_progress=False)

    ``battle`` holds the state, ``outcome`` the result once ``ended``.  ``decision_listeners`` are called as
    ``fn(decision, action)`` for every decision answered (also those answered from a plan), before the action is
    sent to the rules.

    Data (``datacollector``): one row per game turn plus a turn-0 row at set-up, collected when the turn ends (or
    the battle ends mid-turn); model columns ``turn``, ``alive_1``/``alive_2`` (fighting tanks by side index,
    1-based like the run rows' ``side1_*``), ``shots``/``hits``/``kills`` (this turn) and ``cum_*``, ``winner``
    (side name, ``None`` until decided or on a draw), ``winner_index`` (0-based, -1), ``reason``, ``points_1``/
    ``points_2`` (victory points once ended); agent columns per tank (:data:`AGENT_REPORTERS`, plus each
    rule-set state key every tank has at set-up, e.g. ``marker``, ``dt``, ``ost``, ``shocked``).  The Mesa
    ``AgentID`` (``unique_id``, numbered from 1 by Mesa) of a tank is its ``tank_id + 1``; the ``tank_id`` column
    is the event log's id (scenario order, from 0).  Rows are keyed by
    Mesa's ``model.time``, which equals the turn when the model is driven by ``step()`` / ``run()`` /
    ``batch_run``; the ``turn`` column is the game turn in any case.

    Raises :class:`~sim.scenario.ScenarioError` / ``FileNotFoundError`` for a bad scenario or override,
    :class:`SeedError` for a bad seed.
    """

    def __init__(self, scenario: Scenario | str | os.PathLike[str] | None = None, rng: Any = _UNSET,
                 policies: Mapping[int, Any] | None = None, decision_timeout_s: float | None = None,
                 on_fault: str | None = None, dice: DiceSource | None = None, *, seed: Any = _UNSET,
                 collect: Mapping[str, Mapping[str, str]] | None = None, board: HexMap | None = None,
                 cut_off_overruns: bool = False, **overrides: Any):
        battle_seed_ = battle_seed(rng, seed)
        spec = resolve_scenario(scenario, overrides)
        super().__init__(rng=battle_seed_)
        self.spec = spec
        self.seed = battle_seed_
        self.cut_off_overruns = cut_off_overruns
        seed = battle_seed_
        streams = spawn_streams(seed, 1 + len(spec.sides))
        self.dice = dice if dice is not None else DiceSource(streams[0])
        self.battle = build_battle(spec, self.dice, board)
        self.ruleset = self.battle.ruleset
        self.controllers: list[SideController] = []
        self.resolved_policies: list[dict] = []
        #: The Mesa agents, in tank id order (``unique_id == tank_id + 1``); each carries its doctrine.
        self.tank_agents = [Tank(self, t) for t in self.battle.tanks]
        for si, side in enumerate(spec.sides):
            pspec: PolicySpec | EntrantPolicy = side.policy
            given = None
            if policies and si in policies:
                p = policies[si]
                if isinstance(p, (PolicySpec, EntrantPolicy)):
                    pspec = p
                elif callable(getattr(p, "decide", None)):
                    given = p
                else:
                    pspec = PolicySpec(name=p[0], params=dict(p[1]))
            per_tank = {}
            tid0 = sum(len(s.tanks) for s in spec.sides[:si])
            for i, t in enumerate(side.tanks):
                if t.policy is not None and not (policies and si in policies):
                    per_tank[tid0 + i] = load_policy(t.policy.name, t.policy.params)
            timeout = side.decision_timeout_s if decision_timeout_s is None else (decision_timeout_s or None)
            main = given if given is not None else load_policy(pspec.name, pspec.params,
                                                                entrant=isinstance(pspec, EntrantPolicy))
            own = {tid0 + i: self.tank_agents[tid0 + i] for i in range(len(side.tanks))}
            ctrl = SideController(si, main, side_rng(streams[1 + si]), per_tank, tanks=own,
                                  decision_timeout_s=timeout, on_fault=on_fault or side.on_fault,
                                  max_faults=side.max_faults,
                                  activation_order=side.activation_order)
            for tank in own.values():
                tank.controller = ctrl
            self.controllers.append(ctrl)
            if given is not None:
                self.resolved_policies.append({"name": str(getattr(given, "name", type(given).__name__)),
                                               "params": dict(getattr(given, "params", {}))})
            else:
                self.resolved_policies.append({"name": pspec.name, "params": dict(pspec.params)})
        self.outcome: Outcome | None = None
        self.ended = False
        #: The rule set's ``play_turn`` generator of the turn under way (``None`` between turns).
        self._gen: Generator[Decision, Action | None, None] | None = None
        self._decision: Decision | None = None
        self._checked = 0
        self._counts = {"shots": 0, "hits": 0, "kills": 0}
        self._turn_counts = dict(self._counts)
        #: Each side's memory of where it last saw the enemy (:class:`Observation`'s ``last_known``).
        self._last_known: list[dict[Any, Any]] = [{} for _ in spec.sides]
        #: One entry per ``ShotResolved`` (``seq``, shooter / target hex and facing at that moment): the shots
        #: table's positions (:func:`sim.runner.shot_rows`).
        self.shot_places: list[dict[str, Any]] = []
        self.decisions = 0
        self.decision_listeners: list[Callable[[Any, Action], None]] = []
        model_reps = self._reporters()
        agent_reps = self._agent_reporters(set(model_reps))
        #: Column names of the extra agent reporters (``collect``), in order.
        self.extra_agent_columns: list[str] = []
        if collect:
            from agents.collect import reporters

            extra_model, extra_agents = reporters(collect)
            model_reps.update(extra_model)
            agent_reps.update(extra_agents)
            self.extra_agent_columns = list(extra_agents)
        self.datacollector = DataCollector(model_reporters=model_reps, agent_reporters=agent_reps)
        self.battle.listeners.append(self._on_event)
        #: The set-up event's board block with its JSON slot (:func:`setup_board`), as the event holds it.
        self.setup_board = setup_board(self.battle)
        self.battle.emit(setup_event(spec, self.battle))
        self._collected_turn: int | None = None
        self._collect()  # the turn-0 row: the set-up

    # --- data collection --------------------------------------------------------------------------------------
    def _reporters(self) -> dict[str, Any]:
        """Model reporters: see the class docstring (per-side columns by 1-based side index)."""
        reps: dict[str, Any] = {"turn": lambda m: m.battle.turn}
        for si in range(len(self.spec.sides)):
            reps[f"alive_{si + 1}"] = lambda m, si=si: len(m.battle.live_tanks(si))
        for k in ("shots", "hits", "kills"):
            reps[k] = lambda m, k=k: m._turn_counts[k]
            reps[f"cum_{k}"] = lambda m, k=k: m._counts[k]
        reps["winner"] = lambda m: (None if m.outcome is None or m.outcome.winner is None
                                    else m.battle.sides[m.outcome.winner].name)
        reps["winner_index"] = lambda m: -1 if m.outcome is None or m.outcome.winner is None else m.outcome.winner
        reps["reason"] = lambda m: "" if m.outcome is None else m.outcome.reason
        for si in range(len(self.spec.sides)):
            reps[f"points_{si + 1}"] = lambda m, si=si: (
                None if m.outcome is None or len(m.outcome.points) <= si else m.outcome.points[si])
        return reps

    def _agent_reporters(self, taken: set[str]) -> dict[str, Any]:
        """Agent reporters: :data:`AGENT_REPORTERS` plus the rule-set state keys every tank has at set-up (a key
        that would clash with a model column in ``taken`` or a fixed agent column is left out)."""
        reps: dict[str, Any] = dict(AGENT_REPORTERS)
        tanks = self.battle.tanks
        common = [k for k in (tanks[0].rules_state if tanks else {})
                  if all(k in t.rules_state for t in tanks) and k not in reps and k not in taken]
        for k in common:
            reps[k] = _state_reporter(k)
        return reps

    def _on_event(self, entry: LogEntry) -> None:
        e = entry.event
        if isinstance(e, ShotResolved):
            shooter = self.tank_agents[e.shooter] if 0 <= e.shooter < len(self.tank_agents) else None
            self.shot_places.append(self._shot_place(entry.seq, e))
            self._counts["shots"] += 1
            self._turn_counts["shots"] += 1
            if shooter is not None:
                shooter.shots += 1
            if e.hit:
                self._counts["hits"] += 1
                self._turn_counts["hits"] += 1
                if shooter is not None:
                    shooter.hits += 1
            if e.kill:
                self._counts["kills"] += 1
                self._turn_counts["kills"] += 1
                if shooter is not None:
                    shooter.kills += 1

    def _shot_place(self, seq: int, e: ShotResolved) -> dict[str, Any]:
        """Where the shooter and the target stood (hex, facing) when shot ``e`` (log entry ``seq``) was resolved: the
        events apply at once, so this is the board the shot was rolled on (its effects follow as later events)."""
        b = self.battle
        s = b.tanks[e.shooter]
        t = b.tanks[e.target] if e.target is not None else None
        return {"seq": seq, "shooter_hex": s.hex, "shooter_facing": s.facing,
                "target_hex": None if t is None else t.hex, "target_facing": None if t is None else t.facing}

    def _collect(self) -> None:
        if self._collected_turn == self.battle.turn:
            return
        self._collected_turn = self.battle.turn
        self.datacollector.collect(self)
        self._turn_counts = {k: 0 for k in self._turn_counts}

    # --- driving ----------------------------------------------------------------------------------------------
    def step(self) -> None:
        """Play one whole turn (or what is left of the current one)."""
        if self.ended:
            return
        start_turn = self.battle.turn if self._gen is not None else self.battle.turn + 1
        while not self.ended and (self._gen is None and self.battle.turn < start_turn or self._gen is not None):
            self.advance(1)

    def run(self, max_turns: int | None = None) -> Outcome | None:
        """Play until the battle ends; returns the :class:`Outcome` (``None`` if ``max_turns`` turns were played
        first and the battle goes on).

        The objects that exist when the battle starts (modules, the scenario, the board and its caches, the
        model) are frozen out of the cyclic garbage collector while it plays (``gc.freeze``) and returned to it at
        the end (``gc.unfreeze``, also on an error): the collector's full passes then walk only what the battle
        made, not the whole heap again (about 5 % of a 50 v 50 battle's CPU, issue 14).  Nothing is kept alive
        that would otherwise be freed: unfreezing hands every frozen object back to the oldest generation, whose
        next pass collects any that became garbage meanwhile; the event log does not depend on it.
        DECISION: the collector has one frozen set, so objects frozen before the battle (CPython freezes a few
        hundred at start-up; a caller may have frozen its own) are handed back to it as well at the end.

        While it plays, the collector's thresholds are at least :data:`YOUNG_GC_EVERY`, :data:`MIDDLE_GC_EVERY`
        and :data:`FULL_GC_EVERY` (CPython's defaults: 700, 10, 10); they are put back at the end, also on an
        error.  The rule sets' caches grow through a battle (an ASL 50 v 50 keeps about 450k tracked objects: shot
        and odds memos keyed by tuples of hexes), and after the freeze CPython runs a full pass each time the
        survivors grow by a quarter: 11-14 full passes, ~0.9-1.2 CPU s of an ASL 50 v 50 battle, collecting almost
        nothing (a decision's observation holds no reference cycle, see :class:`agents.observation.SideLegal`).
        With the oldest threshold raised alone: 1-2 full passes, still 0.2-0.5 CPU s of a PS 100 v 100 battle (a
        pass walks every object the battle made); with the young and middle ones raised too, none in the benchmark
        battles (about 12 % less CPU in an ASL 50 v 50 and 15 % in a PS 100 v 100 battle; peak RSS unchanged).
        Cyclic garbage a policy makes is still collected by the young and middle passes, after at most
        ``YOUNG_GC_EVERY`` allocations, or ``MIDDLE_GC_EVERY`` times that if it survives one."""
        guarded = [c for c in self.controllers if c.decision_timeout_s is not None]
        guard = OverrunGuard() if self.cut_off_overruns and guarded and OverrunGuard.available() else None
        t0, t1, t2 = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(t0, YOUNG_GC_EVERY), max(t1, MIDDLE_GC_EVERY), max(t2, FULL_GC_EVERY))
        try:
            if guard is not None:
                with guard:
                    for c in guarded:
                        c.overrun_guard = guard
                    try:
                        self._play(max_turns)
                    finally:
                        for c in guarded:
                            c.overrun_guard = None
            else:
                self._play(max_turns)
        finally:
            gc.set_threshold(t0, t1, t2)
            gc.unfreeze()
        return self.outcome

    def _play(self, max_turns: int | None) -> None:
        while not self.ended:
            self.step()
            if max_turns is not None and self.battle.turn >= max_turns and not self.ended:
                break

    def advance(self, n_decisions: int = 1) -> int:
        """Answer up to ``n_decisions`` decisions (starting turns as needed); returns how many were answered."""
        done = 0
        while done < n_decisions:
            decision = self.pending()
            if decision is None:
                break
            self._send(decision, self._answer(decision))
            done += 1
        return done

    def pending(self) -> Decision | None:
        """The decision waiting for an answer, starting and finishing turns as needed (``None`` once the battle has
        ended).  Asking twice returns the same decision; nothing is answered."""
        while not self.ended:
            if self._gen is None:
                self._start_turn()
            elif self._decision is None:
                self._finish_turn()
            else:
                return self._decision
        return None

    def respond(self, action: Action) -> None:
        """Answer the pending decision (:meth:`pending`) with ``action`` instead of asking the side's controller
        (an environment or a person playing that side).  The engine's rule for an answer applies as for a
        controller's: an illegal action is logged (``ActionRejected``) and replaced; then the rules go on up to
        the next decision (or the end of the turn / battle).

        Raises ``RuntimeError`` if no decision is pending (the battle has ended, or :meth:`pending` was not
        called since the last answer)."""
        decision = self._decision
        if self.ended or self._gen is None or decision is None:
            raise RuntimeError("no decision is pending: call pending() first (or the battle has ended)")
        self._send(decision, self._legal_or_rejected(decision, action))

    def _send(self, decision: Decision, action: Action) -> None:
        """Tell the listeners, send ``action`` into the turn, check the outcome, close the turn if it is over."""
        for fn in self.decision_listeners:
            fn(decision, action)
        self.decisions += 1
        if self.ended:
            return
        assert self._gen is not None, "a decision is pending only while a turn is under way"
        try:
            self._decision = self._gen.send(action)
        except StopIteration:
            self._decision = None
        self._check_outcome()
        if self._decision is None and not self.ended:
            self._finish_turn()

    def _start_turn(self) -> None:
        b = self.battle
        b.emit(TurnStarted(b.turn + 1))
        self._gen = gen = self.ruleset.play_turn(b, self.dice)
        try:
            self._decision = next(gen)
        except StopIteration:
            self._decision = None
        self._check_outcome()

    def _finish_turn(self) -> None:
        b = self.battle
        self._gen = None
        self._decision = None
        self._withdraw_faulted()
        b.emit(BattleStateSet("turns_completed", b.turn))
        self._check_outcome(force=True)
        self._collect()

    def _check_outcome(self, force: bool = False) -> None:
        if self.ended:
            return
        b = self.battle
        new = b.log[self._checked:]
        self._checked = len(b.log)
        if not force and not any(isinstance(x.event, _DECISIVE) for x in new):
            return
        out = self.ruleset.outcome(b)
        if out is not None:
            self._end(out)

    def _end(self, out: Outcome) -> None:
        self.outcome = out
        self.ended = True
        self.battle.emit(BattleEnded(out.winner, out.reason, tuple(out.points)))
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        self._decision = None
        self.running = False
        self._collect()

    def _observation(self, side: int):
        ctrl = self.controllers[side]
        return lambda d: Observation(self.battle, side, d, ctrl.rng, last_known=self._last_known[side])

    def _answer(self, decision: Decision) -> Action:
        ctrl = self.controllers[decision.side]
        action, faults, from_plan = ctrl.answer(decision, self._observation(decision.side))
        b = self.battle
        for f in faults:
            b.emit(PolicyFault(decision.side, f.tank, f.decision, f.fault, f.message))
            ctrl.faults[f.tank] = ctrl.faults.get(f.tank, 0) + 1
            if ctrl.on_fault == "forfeit":
                other = next(s for s in b.side_ids() if s != decision.side)
                self._forfeit_after = (other, f"{b.sides[decision.side].name} forfeits: {f.fault} in "
                                              f"{f.decision} ({f.message})")
            elif f.tank is not None and ctrl.faults[f.tank] >= ctrl.max_faults and b.tanks[f.tank].alive:
                ctrl.withdrawing.add(f.tank)  # withdrawn when the turn ends (_withdraw_faulted)
        if faults and ctrl.on_fault == "forfeit":
            winner, reason = self._forfeit_after
            self._end(Outcome(winner, reason, ()))
            return Pass(None)
        return self._legal_or_rejected(decision, action)

    def _legal_or_rejected(self, decision: Decision, action: Action) -> Action:
        """``action`` if the rules allow it, else log ``ActionRejected`` and answer with a pass instead."""
        if not decision.legal.contains(action):
            actor = getattr(action, "actor", None)  # an answer from outside (respond) may be any object
            self.battle.emit(ActionRejected(decision.side, actor, decision.kind, repr(action)))
            if actor is not None:
                self.controllers[decision.side].plans.pop(actor, None)
            action = decision.default
        return action

    def _withdraw_faulted(self) -> None:
        """Withdraw the tanks charged with ``max_faults`` policy faults during the turn that just ended.

        DECISION: the withdrawal waits for the end of the turn, when no rule-set step is under way: withdrawing a
        tank while its rule set is in the middle of its activation (the decision that faulted is still being
        resolved) would leave the rules acting for a tank that is no longer on the board.  Until then the engine
        answers the tank's own decisions with their defaults, without asking its policy."""
        b = self.battle
        for ctrl in self.controllers:
            for tid in sorted(ctrl.withdrawing):
                if b.tanks[tid].alive and b.tanks[tid].hex is not None:
                    b.emit(StatusChanged(tid, Status.WITHDRAWN, f"{ctrl.faults[tid]} policy faults"))
            ctrl.withdrawing.clear()
