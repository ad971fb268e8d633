"""``TankGymEnv``: one side learns, the other is any doctrine -- a Gymnasium environment over :class:`TankEnv`.

The opponent is a doctrine by name with parameters (``"greedy"``, ``("flank", {"flank_bias": 0.5})``,
``"pkg.mod:Class"``), a policy object, or a frozen callable ``(observation, mask[, rng]) -> index`` (for self-play
against an earlier snapshot), played by the engine with its own random stream.  One ``step`` answers one decision
of the learning side; the opponent's decisions in between are played inside the step, and the reward of a step
is everything the learning side earned until its next decision (or the end).

Masks: ``obs["action_mask"]`` (``dict`` / ``classic`` formats), ``info["action_mask"]`` (every format), int8 with
1 = legal, and :meth:`TankGymEnv.action_masks` (bool) for sb3-contrib's ``MaskablePPO``.  An unmasked action is
answered by the engine's rule for illegal answers, never an exception.

Seeding: ``reset(seed=s)`` plays the battle of seed ``s`` (the same dice and doctrine streams as
``tanksim run --seed s``); ``reset()`` draws the next battle seed from ``self.np_random``.  Registered with
Gymnasium as ``tanksim/TankSim-v0`` (``gymnasium.make("tanksim/TankSim-v0", scenario=..., opponent=...)`` after
``import sim.env``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np

from sim.env.aec import PolicyArg, Rewards, TankEnv, resolve_scenario
from sim.scenario import Scenario


class TankGymEnv(gymnasium.Env):
    """A battle in which side ``side`` learns against ``opponent`` (see the module docstring).

    Args:
        scenario, ruleset, reward, obs_type, skip_trivial, max_decisions, render_mode, overrides: as
            :class:`~sim.env.aec.TankEnv`.
        side: the learning side (index or name; default 0).
        opponent: the other side's doctrine (default ``"random"``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, scenario: str | Scenario | Mapping[str, Any] | None = "default", ruleset: str | None = None,
                 *, side: int | str = 0, opponent: PolicyArg = "random",
                 reward: Rewards | Mapping[str, float] | None = None, obs_type: str = "dict",
                 skip_trivial: bool = False, max_decisions: int | None = None, render_mode: str | None = None,
                 overrides: Mapping[str, Any] | None = None):
        spec = resolve_scenario(scenario, ruleset, overrides)
        names = [s.name for s in spec.sides]
        me = names.index(side) if isinstance(side, str) and side in names else side
        if not isinstance(me, int) or isinstance(me, bool) or me not in (0, 1):
            raise ValueError(f"side {side!r}: expected 0, 1 or one of {', '.join(names)}")
        self.aec = TankEnv(spec, None, policies={1 - me: opponent}, reward=reward, obs_type=obs_type,
                           skip_trivial=skip_trivial, max_decisions=max_decisions, render_mode=render_mode)
        self.agent = self.aec.possible_agents[0]
        self.side = me
        self.render_mode = render_mode
        self.observation_space = self.aec.observation_space(self.agent)
        self.action_space = self.aec.action_space(self.agent)

    @property
    def model(self) -> Any:
        """The :class:`~sim.model.BattleModel` of the battle under way (its ``battle.log`` is the event log)."""
        return self.aec.model

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start the battle of seed ``seed`` (else the next seed from ``np_random``); returns ``(obs, info)``."""
        super().reset(seed=seed)
        battle_seed = int(seed) if seed is not None else int(self.np_random.integers(2 ** 31 - 1))
        self.aec.reset(seed=battle_seed)
        obs, _reward, _term, _trunc, info = self.aec.last()
        return obs, dict(info)

    def step(self, action: int | np.integer) -> tuple[Any, float, bool, bool, dict]:
        """Answer the learning side's decision; returns ``(obs, reward, terminated, truncated, info)``.  After the
        end, call :meth:`reset`."""
        if self.aec.terminations.get(self.agent) or self.aec.truncations.get(self.agent):
            raise RuntimeError("the battle is over: call reset()")
        self.aec.step(action)
        obs, reward, terminated, truncated, info = self.aec.last()
        return obs, float(reward), bool(terminated), bool(truncated), dict(info)

    def action_masks(self) -> np.ndarray:
        """The current mask as bools (sb3-contrib ``MaskablePPO`` calls this)."""
        return self.aec.action_mask(self.agent).astype(bool)

    def render(self) -> np.ndarray | None:
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()
