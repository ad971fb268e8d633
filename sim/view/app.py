"""The interactive app: ``tanksim app [SCENARIO] [--port N] [--host H] [--seed N] [--open]``.

It serves a Mesa ``SolaraViz`` page (the components live in :mod:`sim.view.board`): our own hex-board component,
Mesa's step / play / reset controls, seed and per-side policy inputs, and live charts of tanks alive per side and
cumulative kills from the model's DataCollector.  This module holds the parts that need no web stack, so they are
tested without a browser:

* :class:`AppModel`, a :class:`~sim.model.BattleModel` that SolaraViz can (re-)create from keyword parameters and
  whose ``step()`` plays **one activation** through :meth:`BattleModel.advance` (the battle's rules are unchanged);
* :func:`model_params`, the SolaraViz inputs for a scenario;
* :func:`main`, which starts the Solara server (``solara run sim.view.board:Page``) with the scenario and seed passed
  through the environment (:data:`ENV_SCENARIO`, :data:`ENV_SEED`).

Requires the ``app`` extra (``mesa[viz]``: solara, altair) for :func:`main` and :mod:`sim.view.board`.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.policies import BUILTIN
from sim.model import BattleModel
from sim.scenario import PolicySpec, Scenario, ScenarioError, load_scenario

#: Environment variables through which ``tanksim app`` hands its arguments to the page in the server process.
ENV_SCENARIO = "TANKSIM_APP_SCENARIO"
ENV_SEED = "TANKSIM_APP_SEED"
#: The policy choice meaning "what the scenario file says for this side".
SCENARIO_POLICY = "scenario"
#: The Solara app the server runs.
PAGE = "sim.view.board:Page"


@functools.lru_cache(maxsize=8)
def _load(scenario: str) -> Scenario:
    return load_scenario(scenario)


def parse_seed(seed: int | str) -> int:
    """A seed from an int or text (the page's seed box).  Raises ``ValueError`` naming the field for non-integers
    and negative numbers."""
    try:
        value = int(str(seed).strip())
    except ValueError:
        raise ValueError(f"seed: expected a whole number, got {seed!r}") from None
    if value < 0:
        raise ValueError(f"seed: expected a number >= 0, got {value}")
    return value


class AppModel(BattleModel):
    """A :class:`BattleModel` for the page, built from keyword parameters only (SolaraViz re-creates the model on
    reset with ``type(model)(**params)``).

    ``scenario_name``: a scenario file path or bundled name (not ``scenario``: SolaraViz fills a parameter of that
    name with a Mesa scenario object on reset); ``seed``: int or text; ``policy_1`` / ``policy_2``: a
    built-in policy name or ``package.module:Class`` for side 1 / 2, or ``"scenario"`` (or empty) to keep the
    scenario's own doctrine.  ``step()`` plays one activation; ``step_turn()`` the rest of the turn.
    After each step ``marks`` holds what that step showed: ``shots`` ``[(from hex, to hex, result)]`` and ``moves``
    ``{tank id: [hexes]}``.  Raises ``ScenarioError`` / ``FileNotFoundError`` for a bad scenario, ``ValueError`` for
    a bad seed and ``PolicyLoadError`` for an unknown policy.
    """

    def __init__(self, scenario_name: str = "default", seed: int | str = 0, policy_1: str = SCENARIO_POLICY,
                 policy_2: str = SCENARIO_POLICY):
        spec = _load(str(scenario_name))
        policies = {}
        for si, name in enumerate((policy_1, policy_2)):
            if name and name != SCENARIO_POLICY:
                policies[si] = PolicySpec(name=name)
        self.scenario_name = str(scenario_name)
        self.activations = 0
        self.marks: dict[str, Any] = {"shots": [], "moves": {}}
        self._pos: dict[int, tuple[int, int] | None] = {}
        self._answered = None
        super().__init__(spec, parse_seed(seed), policies)
        self.battle.listeners.append(self._on_app_event)
        self._begin_step()

    def _on_app_event(self, entry: Any) -> None:
        e = entry.event
        b = self.battle
        if e.kind == "Activated":
            self.activations += 1
        elif e.kind == "Moved":
            trail = self.marks["moves"].setdefault(e.tank, [])
            if not trail and self._pos.get(e.tank) is not None:
                trail.append(self._pos[e.tank])
            trail.append(tuple(e.hex))
        elif e.kind == "ShotResolved" and e.target is not None:
            a, t = b.tanks[e.shooter].hex, b.tanks[e.target].hex
            if a is not None and t is not None:
                self.marks["shots"].append((tuple(a), tuple(t), e.result))
        self._pos = {t.tank_id: None if t.hex is None else tuple(t.hex) for t in b.tanks}

    def _answer(self, decision: Any):
        self._answered = decision
        return super()._answer(decision)

    def _begin_step(self) -> None:
        self.marks = {"shots": [], "moves": {}}
        self._pos = {t.tank_id: None if t.hex is None else tuple(t.hex) for t in self.battle.tanks}

    def step(self) -> None:
        """Play one activation: answer decisions until an ``Activated`` event has appeared and the next decision
        is of the kind that started it (the next activation), or the turn or battle ends.  A rule set that emits no
        ``Activated`` event is stepped a turn at a time."""
        if self.ended:
            return
        self._begin_step()
        log = self.battle.log
        trigger = None
        while not self.ended:
            pending = self._decision
            if trigger is not None and (pending is None or pending.kind == trigger):
                break
            before = len(log)
            if self.advance(1) == 0:
                break
            if trigger is None and any(x.event.kind == "Activated" for x in log[before:]):
                trigger = self._answered.kind if self._answered is not None else ""
            if self._gen is None:  # the turn ended
                break

    def step_turn(self) -> None:
        """Play the rest of the current turn (or the whole next one), one activation at a time."""
        if self.ended:
            return
        turn = self.battle.turn if self._gen is not None else self.battle.turn + 1
        while not self.ended and (self._gen is not None or self.battle.turn < turn):
            self.step()

    def status_line(self) -> str:
        """``"Turn T of L · activation A · D decisions"`` plus the result once the battle has ended."""
        b = self.battle
        text = f"Turn {b.turn} of {b.turn_limit} · activation {self.activations} · {self.decisions} decisions"
        if self.ended and self.outcome is not None:
            win = "draw" if self.outcome.winner is None else f"{b.sides[self.outcome.winner].name} win"
            text += f" · {win} ({self.outcome.reason})"
        return text


def policy_choices() -> list[str]:
    """The policy names offered on the page: ``"scenario"`` then the built-in doctrines."""
    return [SCENARIO_POLICY, *sorted(BUILTIN)]


def model_params(scenario: str, seed: int = 0) -> dict[str, Any]:
    """SolaraViz ``model_params`` for :class:`AppModel`: the scenario (fixed), a seed box and one policy select per
    side (labelled with the side's name and the scenario's own doctrine)."""
    spec = _load(str(scenario))
    params: dict[str, Any] = {"scenario_name": str(scenario),
                              "seed": {"type": "InputText", "value": str(seed), "label": "Seed"}}
    for si, side in enumerate(spec.sides):
        params[f"policy_{si + 1}"] = {"type": "Select", "value": SCENARIO_POLICY, "values": policy_choices(),
                                      "label": f"{side.name} policy (scenario: {side.policy.name})"}
    return params


def app_settings() -> tuple[str, int]:
    """``(scenario, seed)`` handed to the page by :func:`main` through the environment (default: the bundled
    default battle, seed 0)."""
    return os.environ.get(ENV_SCENARIO, "default"), parse_seed(os.environ.get(ENV_SEED, "0"))


def main(argv: Iterable[str] | None = None) -> int:
    """``tanksim app``: serve the page until interrupted.  Exit 2 for a bad scenario, seed or missing web stack."""
    p = argparse.ArgumentParser(prog="tanksim app", description="Step and watch a battle in the browser "
                                "(a Mesa SolaraViz page).")
    p.add_argument("scenario", nargs="?", default="default", help="scenario file or bundled name (default: default)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--seed", default="0", help="initial seed (the page can change it)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    args = p.parse_args(list(argv) if argv is not None else None)
    scenario = args.scenario
    if Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())
    try:
        seed = parse_seed(args.seed)
        _load(scenario)
    except ScenarioError as exc:
        print("\n".join(exc.errors), file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as exc:
        print(f"tanksim app: {exc}", file=sys.stderr)
        return 2
    try:
        from mesa.visualization import SolaraViz  # noqa: F401  (what sim.view.board needs: fail here, clearly)
        from solara.__main__ import cli
    except ModuleNotFoundError as exc:
        print(f"tanksim app: needs the web stack ({exc.name} is missing): pip install 'tanksim[app]'",
              file=sys.stderr)
        return 2
    os.environ[ENV_SCENARIO] = scenario
    os.environ[ENV_SEED] = str(seed)
    os.environ.setdefault("SOLARA_TELEMETRY_MIXPANEL_ENABLE", "False")
    print(f"tanksim app: serving {scenario} (seed {seed}) at http://{args.host}:{args.port}/", flush=True)
    solara_args = ["run", PAGE, "--host", args.host, "--port", str(args.port), "--production",
                   "--no-check-version", "--open" if args.open else "--no-open"]
    try:
        cli.main(args=solara_args, prog_name="tanksim app", standalone_mode=False)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
