"""Tank(mesa.Agent): the Mesa face of one tank.

The rule-set state lives in a :class:`sim.battle.TankState` (rules never import Mesa); the agent reads through to it,
so DataCollector agent reporters and the interactive app see the live values.  Tanks are never ``remove()``-d: a
wreck or a tank that fled keeps its row in the results.
"""
from __future__ import annotations

from typing import Any

from sim.battle import TankState
from sim.mesa_core import Agent, Model


class Tank(Agent):
    """One tank: ``tank_id`` (scenario order), ``label``, ``side``, ``vehicle_id``, ``hex``, ``facing``,
    ``turret_facing``, ``status`` and ``rules_state``, all read from its :class:`TankState`."""

    def __init__(self, model: Model, state: TankState):
        super().__init__(model)
        self.state = state

    def __getattr__(self, name: str) -> Any:
        if name in ("tank_id", "label", "side", "vehicle_id", "vehicle", "hex", "facing", "turret_facing",
                    "status", "rules_state", "alive"):
            return getattr(self.__dict__["state"], name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        s = self.state
        where = tuple(s.hex) if s.hex else None
        return f"Tank({s.tank_id} {s.label!r} side {s.side} {s.vehicle_id} at {where} {s.status})"
