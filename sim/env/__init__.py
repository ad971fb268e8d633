"""tanksim as a reinforcement-learning environment: PettingZoo (AEC) and Gymnasium (one side learns).

Needs the ``env`` extra (``pip install "tanksim[env]"``: PettingZoo and Gymnasium).  Constructors, registry style::

    from sim import env
    aec = env.env(scenario="default", seed=0)            # PettingZoo AEC, order-enforcing wrapper
    raw = env.raw_env(ruleset="asl")                      # the bare TankEnv (that rule set's bundled scenario)
    gym = env.gym_env("skirmish_2v2", opponent="greedy")  # Gymnasium, side 0 learns
    # or gymnasium.make("tanksim/TankSim-v0", scenario="default", opponent="random")

No parallel form is offered: decisions come one at a time, in the order the rule set needs them.  The layout of
observations and actions is :mod:`agents.encoding`; the formats are :mod:`sim.env.spaces`.  See ``docs/learning.md``.
"""
from __future__ import annotations

from typing import Any

import gymnasium
from pettingzoo.utils import wrappers

from sim.env.aec import DEFAULT_SCENARIOS, Rewards, TankEnv, resolve_scenario
from sim.env.gym import TankGymEnv

GYM_ID = "tanksim/TankSim-v0"


def raw_env(**kwargs: Any) -> TankEnv:
    """A bare :class:`TankEnv` (keyword arguments as its constructor)."""
    return TankEnv(**kwargs)


def env(**kwargs: Any) -> Any:
    """A :class:`TankEnv` in PettingZoo's ``OrderEnforcingWrapper`` (errors for calls before ``reset``) and
    ``AssertOutOfBoundsWrapper`` (an index outside the action space is an error)."""
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(TankEnv(**kwargs)))


def gym_env(scenario: Any = "default", **kwargs: Any) -> TankGymEnv:
    """A :class:`TankGymEnv` (keyword arguments as its constructor)."""
    return TankGymEnv(scenario, **kwargs)


if GYM_ID not in gymnasium.registry:
    gymnasium.register(id=GYM_ID, entry_point="sim.env.gym:TankGymEnv")

__all__ = ["DEFAULT_SCENARIOS", "GYM_ID", "Rewards", "TankEnv", "TankGymEnv", "env", "gym_env", "raw_env",
           "resolve_scenario"]
