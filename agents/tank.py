"""Tank(mesa.Agent): the Mesa face of one tank.

The rule-set state lives in a :class:`sim.battle.TankState` (rules never import Mesa); the agent reads through to it,
so DataCollector agent reporters and the interactive app see the live values.  Tanks are never ``remove()``-d: a
wreck or a tank that fled keeps its row in the results.

Each tank carries its doctrine (``policy``) and answers its own decisions (:meth:`Tank.decide`); the side's
controller (:class:`agents.side_controller.SideController`) keeps the side-level decisions (which tank activates,
several actors at once), plans and the fault bookkeeping.

Ids: ``tank_id`` is the event log's id (scenario order, from 0); Mesa numbers its agents from 1, so
``unique_id == tank_id + 1`` for every tank of a :class:`sim.model.BattleModel` (no other agents are made).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.policies.base import Policy
from sim.battle import TankState
from sim.mesa_core import Agent, Model

if TYPE_CHECKING:
    from agents.side_controller import SideController
    from sim.actions import Action


class Tank(Agent):
    """One tank: ``tank_id`` (scenario order), ``label``, ``side``, ``vehicle_id``, ``hex``, ``facing``,
    ``turret_facing``, ``status`` and ``rules_state``, all read from its :class:`TankState`; ``policy``, the
    doctrine that answers its own decisions (its per-tank doctrine, else its side's; ``None`` until the model
    assigns one).
    ``shots``, ``hits`` and ``kills`` count this tank's own shots so far (kept by the model from the log)."""

    def __init__(self, model: Model, state: TankState, policy: Policy | None = None):
        super().__init__(model)
        self.state = state
        self.shots = 0
        self.hits = 0
        self.kills = 0
        self._policy = policy
        #: The side's controller (set by the model): a tank without a doctrine of its own follows its side's.
        self.controller: SideController | None = None

    @property
    def policy(self) -> Policy | None:
        """The doctrine that answers this tank's decisions: one given to the tank itself, else its side
        controller's per-tank doctrine for it (a scenario's ``tanks[].policy``), else the side's doctrine (read
        when asked, so a side whose doctrine is replaced carries its tanks along)."""
        if self._policy is not None:
            return self._policy
        c = self.controller
        if c is None:
            return None
        return c.per_tank.get(self.state.tank_id, c.policy)

    @policy.setter
    def policy(self, policy: Policy | None) -> None:
        self._policy = policy

    def decide(self, observation: Any, decision: Any) -> Action:
        """This tank's answer to ``decision`` (an action, or a plan of actions) given ``observation`` (what its
        side may know, :class:`agents.observation.Observation`): its doctrine's ``decide``.  Exceptions propagate:
        the controller records them as faults.  Raises ``RuntimeError`` if no doctrine is assigned."""
        if self.policy is None:
            raise RuntimeError(f"tank {self.state.label!r} has no doctrine")
        return self.policy.decide(observation, decision)

    def __getattr__(self, name: str) -> Any:
        if name in ("tank_id", "label", "side", "vehicle_id", "vehicle", "hex", "facing", "turret_facing",
                    "status", "rules_state", "alive"):
            return getattr(self.__dict__["state"], name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        s = self.state
        where = tuple(s.hex) if s.hex else None
        return f"Tank({s.tank_id} {s.label!r} side {s.side} {s.vehicle_id} at {where} {s.status})"
