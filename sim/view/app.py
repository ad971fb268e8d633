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
import socket
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.observation import Observation
from agents.policies import BUILTIN
from sim.actions import Activate, Fire, Pass, Pivot, Ram, Special, Step
from sim.battle import LogEntry
from sim.events import Activated, Moved, ShotResolved
from sim.messages import between, match_name, unknown_side_message
from sim.model import BattleModel
from sim.rules.base import Decision, Legal
from sim.scenario import PolicySpec, Scenario, ScenarioError, load_scenario
from sim.view.render import event_outcome

#: Environment variables through which ``tanksim app`` hands its arguments to the page in the server process.
ENV_SCENARIO = "TANKSIM_APP_SCENARIO"
ENV_SEED = "TANKSIM_APP_SEED"
ENV_PLAY = "TANKSIM_APP_PLAY"
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
    ``{tank id: [hexes]}``; with a person playing (``human``), only what that side saw: an enemy's trail holds the
    hexes where it was in sight (the board draws a shot only between tanks that side knows now, as
    :meth:`shot_log` names them).  Raises
    ``ScenarioError`` / ``FileNotFoundError`` for a bad scenario, ``ValueError`` for a bad seed and
    ``PolicyLoadError`` for an unknown policy.
    """

    def __init__(self, scenario_name: str = "default", seed: int | str = 0, policy_1: str = SCENARIO_POLICY,
                 policy_2: str = SCENARIO_POLICY, human: str | int | None = None):
        spec = _load(str(scenario_name))
        self.human = parse_human(human, [s.name for s in spec.sides])
        self.selected: int | None = None
        policies = {}
        for si, name in enumerate((policy_1, policy_2)):
            if name and name != SCENARIO_POLICY:
                policies[si] = PolicySpec(name=name)
        self.scenario_name = str(scenario_name)
        self.activations = 0
        self.marks: dict[str, Any] = {"shots": [], "moves": {}}
        self._pos: dict[int, tuple[int, int] | None] = {}
        self._seen: set[int] = set()  # with a person playing: the enemies that side sees (as of the last event)
        self._answered = None
        self._human_obs: tuple | None = None
        self._choices: tuple | None = None
        super().__init__(spec, parse_seed(seed), policies)
        self.battle.listeners.append(self._on_app_event)
        if self.human is not None:
            self._seen = set(self.battle.ruleset.visible(self.battle, self.human))
        self._begin_step()

    def _on_app_event(self, entry: LogEntry) -> None:
        e = entry.event
        b = self.battle
        if isinstance(e, Activated):
            self.activations += 1
        elif isinstance(e, Moved):
            trail = self.marks["moves"].setdefault(e.tank, [])
            # with a person playing, an enemy's trail holds only the hexes where that side saw it (before the
            # move: as of the last event; after it: now), never the way it went out of sight
            start = self._pos.get(e.tank)
            if not trail and start is not None and self._saw(e.tank, before=True):
                trail.append(start)
            if self._saw(e.tank, before=False):
                trail.append(tuple(e.hex))
            if not trail:
                del self.marks["moves"][e.tank]
        elif isinstance(e, ShotResolved) and e.target is not None:
            a, t = b.tanks[e.shooter].hex, b.tanks[e.target].hex
            if a is not None and t is not None:
                self.marks["shots"].append((tuple(a), tuple(t), event_outcome(e)))
        self._pos = {t.tank_id: None if t.hex is None else (t.hex.q, t.hex.r) for t in b.tanks}
        if self.human is not None:
            self._seen = set(b.ruleset.visible(b, self.human))

    def _saw(self, tid: int, before: bool) -> bool:
        """Whether the person's side sees tank ``tid`` (any tank when nobody plays; its own tanks and tanks out of
        the fight always): ``before`` the event being handled (as of the previous one), else now."""
        b = self.battle
        t = b.tanks[tid]
        if self.human is None or t.side == self.human or not t.alive:
            return True
        return tid in (self._seen if before else set(b.ruleset.visible(b, self.human)))

    def _answer(self, decision: Any):
        self._answered = decision
        return super()._answer(decision)

    def _begin_step(self) -> None:
        self.marks = {"shots": [], "moves": {}}
        self._pos = {t.tank_id: None if t.hex is None else (t.hex.q, t.hex.r) for t in self.battle.tanks}

    def step(self) -> None:
        """Play one activation: answer decisions until an ``Activated`` event has appeared and the next decision
        is of the kind that started it (the next activation), or the turn or battle ends.  A rule set that emits no
        ``Activated`` event is stepped a turn at a time."""
        if self.ended or self.waiting_for_human():
            return
        self._begin_step()
        log = self.battle.log
        trigger = None
        while not self.ended:
            if self.waiting_for_human():
                break
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
        while not self.ended and (self._gen is not None or self.battle.turn < turn) and not self.waiting_for_human():
            self.step()

    # --- a person playing one side --------------------------------------------------------------------------------
    def waiting_for_human(self) -> bool:
        """True when the pending decision belongs to the side a person plays (:attr:`human`)."""
        if self.human is None or self.ended:
            return False
        d = self.pending()
        return d is not None and d.side == self.human

    def human_observation(self) -> Observation | None:
        """The :class:`~agents.observation.Observation` of the person's pending decision (``None`` when none is
        pending): everything the page shows that side comes through it."""
        if not self.waiting_for_human():
            return None
        d = self.pending()
        if d is None:  # pragma: no cover - waiting_for_human() saw a pending decision
            return None
        key = (id(d), len(self.battle.log))
        if self._human_obs is None or self._human_obs[0] != key:
            ctrl = self.controllers[d.side]
            self._human_obs = (key, Observation(self.battle, d.side, d, ctrl.rng, last_known=self._last_known[d.side]))
        return self._human_obs[1]

    def viewer(self, side: int, actor: int | None = None) -> Observation:
        """An observation of ``side`` for the page (hover odds, what the side sees) when that side has no decision
        pending: a decision of kind ``view`` with no actors; the side's memory of enemy positions is copied, so
        looking never changes what a policy remembers."""
        obs = self.human_observation()
        if obs is not None and side == self.human:
            return obs if actor is None else obs.for_actor(actor)
        d = Decision(side, "view", (), Legal(), Pass())
        return Observation(self.battle, side, d, self.controllers[side].rng, actor=actor,
                           last_known=dict(self._last_known[side]))

    def human_choices(self) -> list[Choice]:
        """The legal answers to the person's pending decision, each a :class:`Choice` (empty when none is pending).

        The candidates are the environments' action table (:class:`agents.encoding.ActionTable`: steps, pivots,
        activations per mode, fire and ram at known enemies, the rule set's ``end_move`` variants, pass, the
        default), kept where the rule set's legality asked **through the side's observation** allows them
        (``mask``), so a person sees and may pick exactly what a policy of that side could."""
        obs = self.human_observation()
        if obs is None:
            return []
        key = id(obs)
        if self._choices is not None and self._choices[0] == key:
            return self._choices[1]
        from agents.encoding import ActionTable, Layout

        d = self.pending()
        if d is None:  # pragma: no cover - a pending decision came with the observation
            return []
        view: Any = obs  # (the encoding's ObservationLike protocol, which Observation implements)
        table = ActionTable(Layout.of(view))
        hexes = {tid: obs.tank(tid).hex for tid in obs.own_ids()}
        out: list[Choice] = []
        seen: set = set()
        for i in table.mask(view, d).nonzero()[0]:
            a = table.action(int(i), d, hexes)
            if repr(a) in seen:
                continue
            seen.add(repr(a))
            out.append(self._choice(obs, d.side, a, default=int(i) == 0))
        self._choices = (key, out)
        return out

    def _choice(self, obs: Observation, side: int, a: Any, default: bool) -> Choice:
        b = self.battle
        me = b.tanks[a.actor] if a.actor is not None else None
        label = me.label if me is not None else b.sides[side].name
        hex_ = None
        if isinstance(a, Activate):
            text, kind = f"{label}: {a.mode.replace('_', ' ')}", "activate"
            hex_ = None if me is None else _hx(me.hex)
        elif isinstance(a, Step):
            text, kind, hex_ = f"{label}: move to {a.to.q},{a.to.r}", "step", (a.to.q, a.to.r)
        elif isinstance(a, Pivot):
            text, kind = f"{label}: pivot to {FACING_NAMES[a.facing % 6]}", "pivot"
        elif isinstance(a, (Fire, Ram)) and isinstance(a.target, int):
            o = obs.odds(a.target, shooter=a.actor) if isinstance(a, Fire) else None
            odds = "" if o is None else f" (hit {_pct(o.p_hit)}, kill {_pct(o.p_kill)})"
            verb = "fire at" if isinstance(a, Fire) else "ram"
            text, kind = f"{label}: {verb} {b.tanks[a.target].label}{odds}", "fire" if isinstance(a, Fire) else "ram"
            hex_ = _hx(b.tanks[a.target].hex)
        elif isinstance(a, Special):
            extra = " ".join(str(v).replace("_", " ") for v in a.args.values() if not isinstance(v, int)
                             or isinstance(v, bool))
            text, kind = f"{label}: {a.name.replace('_', ' ')}" + (f" ({extra})" if extra else ""), "special"
            if a.name == "end_move" and "facing" in a.args:
                text = f"{label}: end move facing {FACING_NAMES[int(a.args['facing']) % 6]}"
        elif isinstance(a, Pass):
            text, kind = f"{label}: pass / end", "pass"
        else:
            text, kind = f"{label}: {type(a).__name__.lower()}", "other"
        if default:
            text += " [default]"
        return Choice(a, text, kind, hex_)

    def play(self, action: Any) -> None:
        """Answer the person's pending decision with ``action`` (:meth:`BattleModel.respond`: an illegal one is
        logged and replaced by the default), then let the AI answer every decision up to the person's next one or
        the end of the battle.  This step's marks collect everything in between.  Raises ``RuntimeError`` when no
        decision of the person's side is pending."""
        if not self.waiting_for_human():
            raise RuntimeError("no decision of the side you play is pending")
        self._begin_step()
        self.respond(action)
        self._human_obs = self._choices = None
        self.run_ai()

    def ai_answer(self) -> None:
        """Let the side's own doctrine answer the person's pending decision (as if nobody played it), then go on as
        :meth:`play` does.  Raises ``RuntimeError`` when no decision of the person's side is pending."""
        if not self.waiting_for_human():
            raise RuntimeError("no decision of the side you play is pending")
        self._begin_step()
        self.advance(1)
        self._human_obs = self._choices = None
        self.run_ai()

    def run_ai(self, limit: int = 5000) -> None:
        """Answer decisions with the sides' doctrines until the person's side must decide (or, with nobody
        playing, until the battle ends); at most ``limit`` decisions."""
        n = 0
        while not self.ended and not self.waiting_for_human() and n < limit:
            if self.advance(1) == 0:
                break
            n += 1

    def shot_log(self, limit: int = 200) -> list[dict[str, Any]]:
        """The last ``limit`` shots, oldest first: ``turn``, ``shooter``, ``target`` (labels), ``result``, ``hit``,
        ``kill`` and ``dice`` (the rolls the rule set reports in the event's details, as text).  With a person
        playing, a shooter or target that side does not know now is shown as ``"unseen enemy"``."""
        b = self.battle
        known = None
        if self.human is not None:
            obs = self.viewer(self.human)
            known = set(obs.own_ids()) | set(obs.known_ids()) | {t.tank_id for t in b.tanks if not t.alive}
        rows = []
        for x in b.log:
            e = x.event
            if e.kind != "ShotResolved":
                continue

            def name(tid: int | None) -> str:
                if tid is None:
                    return "(a hex)"
                return b.tanks[tid].label if known is None or tid in known else "unseen enemy"

            assert isinstance(e, ShotResolved)
            rows.append({"turn": x.turn, "shooter": name(e.shooter), "target": name(e.target), "result": e.result,
                         "hit": e.hit, "kill": e.kill, "dice": dice_text(e.details)})
        return rows[-limit:]

    def status_line(self) -> str:
        """``"Turn T of L · activation A · D decisions"`` plus the result once the battle has ended."""
        b = self.battle
        waiting = self.waiting_for_human()  # (starts the next turn if the person's side opens it)
        text = f"Turn {b.turn} of {b.turn_limit} · activation {self.activations} · {self.decisions} decisions"
        if waiting and self.human is not None:
            text += f" · your move ({b.sides[self.human].name})"
        if self.ended and self.outcome is not None:
            win = "draw" if self.outcome.winner is None else f"{b.sides[self.outcome.winner].name} win"
            text += f" · {win} ({self.outcome.reason})"
        return text


#: Names of the six hull facings (vertex 0..5, CONVENTIONS.md: flat-top hexes, counter-clockwise from east).
FACING_NAMES = ("E", "NE", "NW", "W", "SW", "SE")
#: Detail keys of a ``ShotResolved`` event that hold dice (the rule sets' own names).
DICE_KEYS = ("natural_d10", "natural_d100", "modified_d10", "rolls", "th_dr", "tk_dr", "subsequent_dr",
             "second_tk_dr", "crew_dr", "dr", "roll", "dice")


@dataclass(frozen=True)
class Choice:
    """One legal answer offered to a person: the ``action``, a readable ``label``, its ``kind`` (``activate``,
    ``step``, ``pivot``, ``fire``, ``ram``, ``special``, ``pass``) and the ``hex`` clicked for it on the board
    (the step's destination, the target's hex, the activated tank's hex; ``None`` for buttons only)."""

    action: Any
    label: str
    kind: str
    hex: tuple[int, int] | None = None


def _hx(h: Any) -> tuple[int, int] | None:
    return None if h is None else (int(h[0]), int(h[1]))


def _pct(p: Any) -> str:
    """An exact probability as ``"3/5 (60.0%)"``."""
    return f"{p} ({float(p):.1%})"


def dice_text(details: Any) -> str:
    """The dice of a shot's ``details`` as ``"key=value"`` text (the keys of :data:`DICE_KEYS` present)."""
    parts = []
    for k in DICE_KEYS:
        v = details.get(k) if hasattr(details, "get") else None
        if v is not None:
            v = list(v) if isinstance(v, (list, tuple)) else v
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def parse_human(human: str | int | None, side_names: list[str]) -> int | None:
    """The side index a person plays, from ``None`` / ``""`` / ``"nobody"`` (nobody: watch the AI), a side name or
    a 1-based side number, names and keywords in any case where unambiguous (:func:`sim.messages.match_name`).
    Raises ``ValueError`` naming the sides for anything else."""
    text = "" if human is None else str(human).strip()
    found = match_name(text, side_names)
    if found is not None:
        return found
    if text.casefold() in ("", "nobody", "none"):
        return None
    if text.isdigit() and 1 <= int(text) <= len(side_names):
        return int(text) - 1
    raise ValueError(f"--play {human!r}: {unknown_side_message(text, side_names, extra=', or nobody')}")


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


def app_settings() -> tuple[str, int, str]:
    """``(scenario, seed, play)`` handed to the page by :func:`main` through the environment (default: the bundled
    default battle, seed 0, nobody playing)."""
    return (os.environ.get(ENV_SCENARIO, "default"), parse_seed(os.environ.get(ENV_SEED, "0")),
            os.environ.get(ENV_PLAY, ""))


def free_port(host: str, port: int) -> int:
    """``port`` if ``host`` can listen on it now, or, for ``port`` 0, a port the system picks as free (what the
    server then listens on).  Raises ``OSError`` (``errno`` ``EADDRINUSE`` for a port another program holds, or
    ``EADDRNOTAVAIL`` / a resolver error for a bad ``--host``).  Checked before the server is announced; a program
    taking the port in the moment between the check and the server's start is the server's error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server does: TIME_WAIT is no clash
        sock.bind((host, port))
        return int(sock.getsockname()[1])


def main(argv: Iterable[str] | None = None) -> int:
    """``tanksim app``: serve the page until stopped.  Exit statuses: 130 stopped with Ctrl-C (SIGINT), whether it
    came before or after the server started, as every command (one line on stderr: ``tanksim app: interrupted``,
    or ``tanksim app: interrupted: stopped serving http://HOST:PORT/`` once it served); 0 the server ended by
    itself (``tanksim app: stopped``); 2 a bad scenario, seed or ``--host``, a ``--port`` in use (``--port 0``
    picks a free one) or a missing web stack."""
    p = argparse.ArgumentParser(prog="tanksim app", description="Step and watch a battle in the browser "
                                "(a Mesa SolaraViz page).")
    p.add_argument("scenario", nargs="?", default="default", help="scenario file or bundled name (default: default)")
    p.add_argument("--port", type=between(0, 65535), default=8765, help="port to listen on (default 8765)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--seed", default="0", help="initial seed (the page can change it)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--play", default="", metavar="SIDE",
                   help="play this side yourself (side name or number 1, 2; the page can change it)")
    args = p.parse_args(list(argv) if argv is not None else None)
    scenario = args.scenario
    if Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())
    try:
        seed = parse_seed(args.seed)
        parse_human(args.play, [side.name for side in _load(scenario).sides])
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
    import errno

    import click

    try:
        port = free_port(args.host, args.port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print(f"tanksim app: --port {args.port}: address already in use (choose another, or --port 0 for a "
                  f"free one)", file=sys.stderr)
        else:
            print(f"tanksim app: --host {args.host!r} --port {args.port}: cannot listen there "
                  f"({exc.strerror or exc})", file=sys.stderr)
        return 2
    os.environ[ENV_SCENARIO] = scenario
    os.environ[ENV_SEED] = str(seed)
    os.environ[ENV_PLAY] = args.play
    os.environ.setdefault("SOLARA_TELEMETRY_MIXPANEL_ENABLE", "False")
    print(f"tanksim app: serving {scenario} (seed {seed}) at http://{args.host}:{port}/", flush=True)
    solara_args = ["run", PAGE, "--host", args.host, "--port", str(port), "--production",
                   "--no-check-version", "--open" if args.open else "--no-open"]
    try:
        cli.main(args=solara_args, prog_name="tanksim app", standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):  # Ctrl-C (uvicorn raises it again once it has shut down;
        # the click CLI may turn it into Abort): the same exit status as Ctrl-C before serving, 130
        print(f"tanksim app: interrupted: stopped serving http://{args.host}:{port}/", file=sys.stderr)
        return 130
    print("tanksim app: stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
