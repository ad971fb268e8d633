"""``TankEnv``: a tanksim battle as a PettingZoo AEC environment.

The rule set drives the battle as a generator of decisions (:meth:`sim.model.BattleModel.pending` /
:meth:`~sim.model.BattleModel.respond`); each decision belongs to a side.  The agents are the sides the
environment plays (``side_0``, ``side_1``; a side given a doctrine in ``policies`` is played by the engine and is
no agent), and ``agent_selection`` is the side that must answer the current decision.  One ``step`` answers one
decision; the decisions of doctrine sides in between are answered by their doctrines.

Observations and actions follow :mod:`agents.encoding` (one layout under every rule set) in the format
``obs_type`` of :mod:`sim.env.spaces`; the mask is ``obs["action_mask"]`` (``dict`` / ``classic``) and
``infos[agent]["action_mask"]`` (every format), int8 with 1 = legal, and index 0 (the decision's default) is always
legal, also for a side with nothing to answer, so no mask is ever all zeros.  Each side's observation is built by
its own :class:`agents.observation.Observation` (what the side may know); the memory of where enemies were last
seen is updated at the side's own decisions only, so observing an agent out of turn changes nothing.

An action the mask rules out is not an error: the engine's rule for an illegal answer applies (``ActionRejected``
in the log, then its replacement), as for any controller; :attr:`TankEnv.illegal_actions` counts them.

Rewards (:class:`Rewards`): at the end ``win`` / ``loss`` / ``draw`` for each agent by the battle's outcome;
optionally shaped, ``kill`` per enemy tank lost and ``own_loss`` per own tank lost (destroyed, incapacitated,
withdrawn or fled), given with the step in which it happened (what happens before the first decision comes with
the first step: PettingZoo wants nothing earned at ``reset``).  The battle's own end (a side wiped out, the turn
limit) is a termination; ``max_decisions`` (optional) truncates.

Seeding: ``reset(seed=s)`` plays the battle of seed ``s`` -- the same dice and doctrine streams as
``tanksim run --seed s`` and :func:`sim.runner.run_battle` with seed ``s``, so the same answers give the same event
log; ``reset()`` without a seed draws the next battle seed from the generator the last seed (or the constructor's
``seed``) started.

``skip_trivial=True`` (DECISION, default off, since an AEC environment normally asks every time): a decision whose
mask allows only one action (the default) is answered with it without asking the agent.

``render()`` (``render_mode="rgb_array"``) returns the whole board (both sides: it is for people watching) as an
``(H, W, 3)`` uint8 array drawn by :mod:`sim.view.render`.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from gymnasium import logger
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from agents.encoding import Encoded, Encoder
from agents.observation import Observation
from agents.policies.base import Policy
from agents.policies.learned import Learned
from sim.actions import Pass
from sim.env import spaces as S
from sim.events import Status, StatusChanged
from sim.model import BattleModel
from sim.rules.base import Decision, Legal
from sim.scenario import PolicySpec, Scenario, apply_overrides, load_scenario, validate

#: The bundled scenario each rule set plays when only ``ruleset`` is given.
DEFAULT_SCENARIOS = {"panzer_squadron": "default", "asl": "asl_1941_meeting", "hummel_quest": "hq_skirmish"}


@dataclass(frozen=True)
class Rewards:
    """Reward values: ``win`` / ``loss`` / ``draw`` at the end of the battle (by its outcome), ``kill`` per enemy
    tank lost and ``own_loss`` per own tank lost (shaping, 0 by default)."""

    win: float = 1.0
    loss: float = -1.0
    draw: float = 0.0
    kill: float = 0.0
    own_loss: float = 0.0

    @staticmethod
    def of(value: Rewards | Mapping[str, float] | None) -> Rewards:
        """``value`` as :class:`Rewards` (a mapping may name any subset of the fields); raises ``ValueError`` for
        an unknown name or a value that is not a number."""
        if value is None:
            return Rewards()
        if isinstance(value, Rewards):
            return value
        names = {f.name for f in fields(Rewards)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise ValueError(f"reward: unknown key(s) {', '.join(unknown)}; keys: {', '.join(sorted(names))}")
        try:
            return Rewards(**{k: float(v) for k, v in value.items()})
        except (TypeError, ValueError):
            raise ValueError(f"reward: expected numbers, got {dict(value)}") from None


def resolve_scenario(scenario: str | Scenario | Mapping[str, Any] | None = None, ruleset: str | None = None,
                     overrides: Mapping[str, Any] | None = None) -> Scenario:
    """The scenario to play: a bundled name or a file path, a validated :class:`Scenario` or a scenario mapping;
    with only ``ruleset``, that rule set's bundled scenario (:data:`DEFAULT_SCENARIOS`).  ``overrides``: dotted
    paths as for ``tanksim run --set``.  Raises ``ValueError`` if ``ruleset`` is not the scenario's (its vehicles
    are the rule set's catalog), :class:`sim.scenario.ScenarioError` / ``FileNotFoundError`` for bad input."""
    if scenario is None:
        rs = ruleset or "panzer_squadron"
        if rs not in DEFAULT_SCENARIOS:
            raise ValueError(f"ruleset {rs!r}: no bundled scenario; known: {', '.join(DEFAULT_SCENARIOS)}")
        scenario = DEFAULT_SCENARIOS[rs]
    if isinstance(scenario, Scenario):
        spec = validate(apply_overrides(scenario.model_dump(mode="json", exclude={"source"}), overrides,
                                        scenario.source), scenario.source) if overrides else scenario
    elif isinstance(scenario, Mapping):
        spec = validate(apply_overrides(scenario, overrides or {}), "<scenario>")
    else:
        spec = load_scenario(scenario, overrides)
    if ruleset is not None and spec.ruleset.name != ruleset:
        raise ValueError(f"scenario {spec.name!r} is a {spec.ruleset.name} scenario, not {ruleset}: its vehicles "
                         f"come from that rule set's catalog")
    return spec


PolicyArg = str | tuple[str, Mapping[str, Any]] | PolicySpec | Policy | Callable[..., int]


def _policy(spec: PolicyArg) -> Policy | PolicySpec:
    """A doctrine argument as the engine takes it: a name (``"greedy"``, ``"pkg.mod:Class"``), ``(name, params)``,
    a :class:`PolicySpec`, a policy object (``decide(obs, decision)``) or a frozen callable ``(observation, mask
    [, rng]) -> index`` (wrapped in :class:`~agents.policies.learned.Learned`)."""
    if isinstance(spec, PolicySpec):
        return spec
    if isinstance(spec, str):
        return PolicySpec(name=spec)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return PolicySpec(name=spec[0], params=dict(spec[1]))
    if callable(getattr(spec, "decide", None)):
        # duck-typed: any object with decide(obs, decision) plays (the engine calls nothing else on it)
        return spec  # type: ignore[return-value]
    if callable(spec):
        return Learned.of(spec)
    raise TypeError(f"policy {spec!r}: expected a doctrine name, (name, params), a policy object or a callable")


#: The render modes :class:`TankEnv` offers (``metadata["render_modes"]``).
_RENDER_MODES = ("rgb_array",)


class TankEnv(AECEnv):
    """A battle as a PettingZoo AEC environment (see the module docstring).

    Args:
        scenario: bundled name, file path, :class:`Scenario` or mapping (:func:`resolve_scenario`).
        ruleset: the rule set (picks its bundled scenario when ``scenario`` is ``None``; else must match).
        seed: starts the generator of battle seeds for ``reset()`` without a seed.
        policies: ``{side index or side name: doctrine}`` for the sides the engine plays (:func:`_policy`); the
            other sides are the agents.
        reward: :class:`Rewards` or a mapping of its fields.
        obs_type: ``"dict"``, ``"classic"`` or ``"flat"`` (:mod:`sim.env.spaces`).
        skip_trivial: answer decisions with a single legal action without asking (off by default).
        max_decisions: truncate after this many agent steps (``None``: play to the battle's end).
        render_mode: ``None`` or ``"rgb_array"``.
        overrides: dotted-path scenario overrides.

    Raises ``ValueError`` for a bad argument (naming it), and what :func:`resolve_scenario` raises.
    """

    metadata = {"name": "tanksim_v0", "render_modes": list(_RENDER_MODES), "is_parallelizable": False,
                "render_fps": 2}

    def __init__(self, scenario: str | Scenario | Mapping[str, Any] | None = "default", ruleset: str | None = None,
                 *, seed: int | None = None, policies: Mapping[int | str, PolicyArg] | None = None,
                 reward: Rewards | Mapping[str, float] | None = None, obs_type: str = "dict",
                 skip_trivial: bool = False, max_decisions: int | None = None, render_mode: str | None = None,
                 overrides: Mapping[str, Any] | None = None):
        super().__init__()
        self.spec = resolve_scenario(scenario, ruleset, overrides)
        self.obs_type = S.check_obs_type(obs_type)
        if render_mode is not None and render_mode not in _RENDER_MODES:
            raise ValueError(f"render_mode {render_mode!r}: expected None or 'rgb_array'")
        if max_decisions is not None and int(max_decisions) < 1:
            raise ValueError(f"max_decisions {max_decisions!r}: expected a positive number or None")
        self.render_mode = render_mode
        self.reward = Rewards.of(reward)
        self.skip_trivial = bool(skip_trivial)
        self.max_decisions = None if max_decisions is None else int(max_decisions)
        names = [s.name for s in self.spec.sides]
        self._doctrines: dict[int, Policy | PolicySpec] = {}
        for key, pol in (policies or {}).items():
            side = names.index(key) if isinstance(key, str) and key in names else key
            if not isinstance(side, int) or isinstance(side, bool) or not 0 <= side < len(names):
                raise ValueError(f"policies: {key!r} is not a side (0, 1 or one of {', '.join(names)})")
            self._doctrines[side] = _policy(pol)
        self.sides = tuple(s for s in range(len(names)) if s not in self._doctrines)
        if not self.sides:
            raise ValueError("policies: every side has a doctrine; leave at least one side to the agents")
        self.possible_agents = [f"side_{s}" for s in self.sides]
        self._agent_side = {a: s for a, s in zip(self.possible_agents, self.sides)}
        self._side_agent = {s: a for a, s in self._agent_side.items()}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed = seed
        self.model: BattleModel | None = None
        self._build(0)
        self.layout = {a: self._encoders[s].layout for a, s in self._agent_side.items()}
        self.observation_spaces = {a: S.observation_space(self.layout[a], obs_type) for a in self.possible_agents}
        self.action_spaces = {a: S.action_space(self.layout[a]) for a in self.possible_agents}
        self.model = None

    # --- spaces -------------------------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> Any:
        """The agent's observation space (the same object every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        """The agent's ``Discrete(A)`` action space (the same object every call)."""
        return self.action_spaces[agent]

    def side_of(self, agent: str) -> int:
        """The side index an agent plays."""
        return self._agent_side[agent]

    # --- playing --------------------------------------------------------------------------------------------
    def _build(self, battle_seed: int) -> None:
        self.model = BattleModel(self.spec, battle_seed, dict(self._doctrines) or None)
        self._memory: dict[int, dict] = {s: {} for s in self.sides}
        idle = {s: self._idle_observation(s) for s in self.sides}
        if not hasattr(self, "_encoders"):
            self._encoders = {s: Encoder.for_observation(idle[s]) for s in self.sides}

    def _idle_observation(self, side: int) -> Observation:
        m = self.model
        assert m is not None
        d = Decision(side, "none", (), Legal(), Pass(None), {})
        return Observation(m.battle, side, d, random.Random(0), last_known=dict(self._memory[side]))

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new battle: of seed ``seed``, else of the next seed drawn from the generator (``options`` is
        accepted and unused)."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
            battle_seed = int(seed)
        else:
            if self._np_random is None:
                self._np_random, _ = seeding.np_random(self._np_random_seed)
            battle_seed = int(self._np_random.integers(2 ** 31 - 1))
        self.battle_seed = battle_seed
        self._build(battle_seed)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.num_steps = 0
        self.illegal_actions = 0
        self.skipped = 0
        self._lost: set[int] = set()
        self._log_pos = 0
        self._current: Encoded | None = None
        self._skip_agent_selection = None
        self.agent_selection = self.agents[0]
        self._advance()
        self._shaped()
        # PettingZoo: nothing is earned at reset; what happened before the first decision is paid with the first
        # step (or now, if the battle ended before any agent had a decision)
        self._carry = dict(self.rewards)
        if self.agents and all(self.terminations.values()):
            self._accumulate_rewards()
            self._carry = {}
        self.rewards = {a: 0.0 for a in self.agents}
        self._update_infos()

    def _advance(self) -> None:
        """Play on to the next decision of an agent (doctrine sides and skipped trivial decisions answered on the
        way); sets ``agent_selection`` and the current encoding, or the terminations at the end."""
        m = self.model
        assert m is not None
        self._current = None
        while True:
            d = m.pending()
            if d is None:
                break
            agent = self._side_agent.get(d.side)
            if agent is None:
                m.advance(1)
                continue
            obs = Observation(m.battle, d.side, d, m.controllers[d.side].rng, last_known=self._memory[d.side])
            enc = self._encoders[d.side].encode(obs, d)
            if self.skip_trivial and enc.choices() == 1:
                self.skipped += 1
                m.respond(d.default)
                continue
            self._current = enc
            self.agent_selection = agent
            return
        self._finish()

    def _finish(self) -> None:
        """The battle has ended: terminal rewards, every agent terminated."""
        m = self.model
        assert m is not None and m.outcome is not None
        for a in self.agents:
            s = self._agent_side[a]
            w = m.outcome.winner
            self.rewards[a] += self.reward.draw if w is None else (self.reward.win if w == s else self.reward.loss)
            self.terminations[a] = True
        self.agent_selection = self.agents[0]

    def _shaped(self) -> None:
        """Kill / loss rewards for the tanks lost since the last call."""
        m = self.model
        assert m is not None
        log = m.battle.log
        new = log[self._log_pos:]
        self._log_pos = len(log)
        if not (self.reward.kill or self.reward.own_loss):
            return
        for entry in new:
            e = entry.event
            if isinstance(e, StatusChanged) and e.status in Status.LOST and e.tank not in self._lost:
                self._lost.add(e.tank)
                side = m.battle.tanks[e.tank].side
                for a in self.agents:
                    self.rewards[a] += self.reward.own_loss if self._agent_side[a] == side else self.reward.kill

    def _update_infos(self) -> None:
        m = self.model
        assert m is not None
        cur = self._current
        for a in self.agents:
            enc = cur if a == self.agent_selection and not self.terminations[a] else None
            if enc is not None and enc.decision is not None:  # the agent's own decision (always one in _current)
                mask, kind = enc.mask.copy(), enc.decision.kind
            else:
                mask, kind = self._encoders[self._agent_side[a]].table.mask(None, None), "none"
            self.infos[a] = {"action_mask": mask, "decision": kind, "turn": int(m.battle.turn)}
            if self.terminations[a] and m.outcome is not None:
                w = m.outcome.winner
                self.infos[a]["outcome"] = "draw" if w is None else ("win" if w == self._agent_side[a] else "loss")
                self.infos[a]["reason"] = m.outcome.reason

    def step(self, action: int | np.integer | None) -> None:
        """Answer the current decision of ``agent_selection`` with action index ``action`` (``None`` for an agent
        that is done).  Raises ``ValueError`` for an index outside the action space."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None or isinstance(action, bool) or not hasattr(action, "__index__"):
            raise ValueError(f"action {action!r}: expected an index of the action space")
        index = action.__index__()
        if not 0 <= index < self.action_spaces[agent].n:
            raise ValueError(f"action {index} is outside the action space 0..{self.action_spaces[agent].n - 1}")
        m, enc = self.model, self._current
        assert m is not None and enc is not None
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: self._carry.get(a, 0.0) for a in self.agents}
        self._carry = {}
        if not enc.mask[index]:
            self.illegal_actions += 1
        m.respond(enc.action(index))
        self.num_steps += 1
        self._advance()
        self._shaped()
        if not any(self.terminations.values()) and self.max_decisions is not None \
                and self.num_steps >= self.max_decisions:
            for a in self.agents:
                self.truncations[a] = True
            self._current = None
        self._update_infos()
        self._accumulate_rewards()

    def observe(self, agent: str) -> Any:
        """The agent's observation now: at its own decision the decision's view and mask; otherwise its view of
        the board with nothing to answer (mask: the default only)."""
        enc = self._current
        if enc is None or agent != self.agent_selection or self.terminations[agent] or self.truncations[agent]:
            side = self._agent_side[agent]
            enc = self._encoders[side].encode(self._idle_observation(side), None)
        return S.to_obs(enc, self.obs_type)

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """The current mask of ``agent`` (default ``agent_selection``), as in ``infos[agent]["action_mask"]``."""
        return self.infos[agent or self.agent_selection]["action_mask"].copy()

    def render(self) -> np.ndarray | None:
        """The whole board as an ``(H, W, 3)`` uint8 RGB array (``render_mode="rgb_array"``); ``None`` with a
        warning when no render mode was set."""
        if self.render_mode is None:
            logger.warn("You are calling render method without specifying any render mode.")
            return None
        from sim.view.render import board_rgb

        assert self.model is not None
        return board_rgb(self.model.battle, title=f"{self.spec.name}: turn {self.model.battle.turn}")

    def close(self) -> None:
        """Nothing to release (doctrine sides run in-process)."""
