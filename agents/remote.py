"""The child side of the entrant isolation protocol (the parent side is :mod:`agents.isolation`).

An isolated entrant runs in its own process.  It never holds the battle, the model, the dice or the other side's
controller: all it gets is what its side's :class:`~agents.observation.Observation` would tell it, serialised to
JSON, and all it sends back is an action.  ``python -m agents.remote --policy NAME [--params JSON]`` serves any
doctrine (built-in name or ``package.module:Class``) over the protocol; :func:`serve` serves a policy object from
your own script; an entrant in another language speaks the protocol directly (``docs/isolation_protocol.md``).

Protocol 1 -- JSON lines
========================

One JSON object per line (UTF-8, ``\\n``-terminated), parent -> child on the child's stdin, child -> parent on its
stdout (stderr is free for logging; a Python child's ``print`` goes to stderr).  Every message has a ``type``.

1. Parent: ``{"type": "hello", "protocol": 1}``.
   Child: ``{"type": "ready", "name": "my-bot", "never_reacts": false}`` -- or ``{"type": "error", "message":
   "..."}`` if it cannot start (the entrant is then reported as not loadable).
2. For every decision its side must take, the parent sends ``{"type": "decide", "seq": 7, "obs": {...}}`` (the
   first one also carries ``"rng_seed"``: an integer from the side's own random stream, for random doctrines).
   The child may send any number of queries ``{"type": "call", "method": "threat", "args": [...], "kwargs": {},
   "actor": 3}``, each answered by ``{"type": "result", "value": ...}`` or ``{"type": "result", "error": "KeyError:
   ..."}``, then answers ``{"type": "action", "action": {...}}`` (or ``{"type": "error", "message": "..."}``, which
   forfeits).
3. Parent: ``{"type": "bye"}`` at the end of the battle; the child exits.

Opt-in arrays (additive): a child whose ``ready`` says ``"arrays": true`` (the policy has ``wants_arrays =
True``, e.g. the ``learned`` doctrine) gets in every ``obs`` also ``"arrays"``: the side's view as the fixed-shape
arrays of :mod:`agents.encoding` (``{"shapes": {name: [dims]}, "arrays": {name: nested lists}, "own_ids",
"enemy_ids", "hexes", "layout"}``; ``RemoteObservation.arrays()`` rebuilds it), the very arrays an in-process
``learned`` doctrine and :mod:`sim.env` compute.  Such a child may also answer ``{"type": "action", "index": k}``:
index ``k`` of the action table, turned into the action by the parent.

``obs`` (everything the side may know for this decision)::

    {"turn": 3, "turn_limit": 10, "ruleset": "panzer_squadron", "has_ramming": false, "side": 0,
     "role": "attacker", "actor": 2,                       # the first actor (null for a side-level decision)
     "decision": {"kind": "activate", "side": 0, "actors": [2, 4], "default": ACTION,
                  "modes": ["fire", "move", ...], "specials": [...], "context": VALUE},
     "own": [TANK, ...],                                    # the side's live tanks (actor first)
     "enemies": [TANK, ...],                                # visible live enemies (the rule set's spotting)
     "last_known": [{"tank_id": 5, "hex": [9, -1]}, ...],   # hex of each live enemy at the last decision of this
                                                            # side's policy at which it was visible
     "objectives": [{"hex": [5, 3], "points": 3, "name": "...", "side": null}],
     "targets": [{"shooter": 2, "target": 5, "p_hit": "1/2", "p_kill": "3/10", "p_hit_f": 0.5,
                  "p_kill_f": 0.3, "values": VALUE}, ...],  # legal targets of every actor, exact odds
     "reachable": {"2": [{"state": VALUE, "hex": [q, r], "facing": 1, "cost": 3, "path": [VALUE, ...]}, ...]}}
                                                            # move decisions only: the states the actor can reach
    TANK = {"tank_id": 2, "label": "T34-3", "side": 0, "vehicle_id": "t34_85", "hex": [1, 7] | null,
            "facing": 0, "turret_facing": 0 | null, "status": "active", "alive": true, "on_board": true,
            "rules_state": VALUE, "ext": VALUE, "vehicle": VALUE}

``ACTION`` (what the child answers; ``actor`` is a tank id or ``null``)::

    {"type": "Pass", "actor": 2}                  {"type": "Activate", "actor": 2, "mode": "fire"}
    {"type": "Fire", "actor": 2, "target": 5}     (target a tank id, or [q, r] for area fire; optional
                                                   "weapons": [...], "ammo": "...")
    {"type": "Step", "actor": 2, "to": [q, r]}    {"type": "Pivot", "actor": 2, "facing": 3}
    {"type": "Ram", "actor": 2, "target": 5}      {"type": "Special", "actor": 2, "name": "end_move", "args": {}}
    {"type": "Plan", "actor": 2, "to": 17}        (a move to entry 17 of obs.reachable["2"]; or "path": [VALUE..]
                                                   a path of states; optional "then": ACTION, "end_status")

An illegal action is not a fault: the engine logs it and applies the default.  A malformed one, an error message,
no answer within the wall-time limit, a crash or a limit breach forfeits the game.

``VALUE`` is JSON with tags for what plain JSON cannot say (so states and mappings survive the round trip):
``{"$hex": [q, r]}``, ``{"$tuple": [...]}``, ``{"$frac": "1/3"}``, ``{"$set": [...]}``, ``{"$map": [[k, v], ...]}``
(a mapping with non-string keys), ``{"$odds": {"p_hit": V, "p_kill": V, "values": V}}``, ``{"$tank": TANK}``,
``{"$action": ACTION}``, ``{"$hypo": {"hex": V, "facing": f, "moved": b}}``, ``{"$obj": {"type": "Vehicle", ...}}``
(a record's fields).  Plain strings, numbers, booleans, null, lists and string-keyed objects are themselves.

Queries (``call``) run the public :class:`~agents.observation.Observation` method of the same name in the parent,
for ``actor`` (default: the decision's first actor; only the side's own tanks) -- e.g. ``threat``, ``odds`` (with
``as_if``), ``face``, ``side_odds``, ``los``, ``passable``, ``distance_field``, ``holder``, ``reachable``,
``targets``, ``is_legal``, ``tank``, ``known_ids`` -- with arguments and results as ``VALUE``.  Nothing else is
reachable: no call returns the battle, the model, the dice or another side's controller, and names starting with
``_`` are refused.  Every answer, and ``obs`` itself, comes from what the side may know (the
:class:`~agents.observation.Observation` docstring): an enemy it does not see changes none of them.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import json
import os
import random
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from agents.observation import StateQueries
from sim import actions as A
from sim.hexgrid import Hex, as_hex
from sim.rules.base import parse_fraction

PROTOCOL = 1
#: Action classes by their protocol ``type``.
ACTION_TYPES: dict[str, type] = {c.__name__: c for c in (A.Pass, A.Activate, A.Step, A.Pivot, A.Fire, A.Ram,
                                                           A.Special, A.Plan)}


class ProtocolError(ValueError):
    """A message that does not follow the protocol (says what was wrong)."""


# --- actions -----------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PathPlan(A.Action):
    """A move plan made in the child: the parent turns ``path`` (states from ``reachable``) into the rule set's
    :class:`~sim.actions.Plan` with ``legal.plan_to``."""

    path: tuple = ()
    then: A.Action | None = None
    end_status: str | None = None


def action_to_json(a: Any) -> dict:
    """Plain protocol JSON for an action (see the module docstring).  Raises :class:`ProtocolError` for anything
    that is not an action."""
    if isinstance(a, PathPlan):
        return {"type": "Plan", "actor": a.actor, "path": [encode(s) for s in a.path],
                "then": None if a.then is None else action_to_json(a.then), "end_status": a.end_status}
    if not isinstance(a, A.Action) or type(a).__name__ not in ACTION_TYPES:
        raise ProtocolError(f"not an action: {type(a).__name__}")
    d: dict[str, Any] = {"type": type(a).__name__, "actor": a.actor}
    for f in dataclasses.fields(a):
        if f.name == "actor":
            continue
        v = getattr(a, f.name)
        if isinstance(a, A.Plan) and f.name == "steps":
            d["steps"] = [action_to_json(s) for s in v]
        elif isinstance(a, A.Plan) and f.name == "then":
            d["then"] = None if v is None else action_to_json(v)
        elif isinstance(v, Hex):
            d[f.name] = [v.q, v.r]
        elif f.name == "args":
            d[f.name] = encode(dict(v))
        elif isinstance(v, tuple):
            d[f.name] = list(v)
        else:
            d[f.name] = v
    return d


def _int_or_none(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProtocolError(f"{what} must be an integer or null, got {v!r}")
    return v


def _tank_id(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProtocolError(f"{what} must be a tank id (an integer), got {v!r}")
    return v


def action_from_json(d: Any, plan_hook: Callable[[dict], A.Action] | None = None) -> A.Action:
    """An :class:`~sim.actions.Action` from protocol JSON; a ``Plan`` given by ``to``/``path`` goes through
    ``plan_hook`` (the parent's), a ``Plan`` with ``steps`` is built directly.  Raises :class:`ProtocolError`."""
    if not isinstance(d, dict) or d.get("type") not in ACTION_TYPES:
        raise ProtocolError(f"action must be an object with type one of {', '.join(ACTION_TYPES)}; got {d!r}"[:300])
    kind = d["type"]
    actor = _int_or_none(d.get("actor"), f"{kind}.actor")
    try:
        if kind == "Pass":
            return A.Pass(actor, str(d.get("reason", "")))
        if kind == "Activate":
            return A.Activate(actor, str(d["mode"]))
        if kind == "Step":
            return A.Step(actor, as_hex(d["to"]))
        if kind == "Pivot":
            return A.Pivot(actor, int(d["facing"]))
        if kind == "Fire":
            t = d["target"]
            target = as_hex(t) if isinstance(t, list) else _tank_id(t, "Fire.target")
            return A.Fire(actor, target, tuple(str(w) for w in d.get("weapons") or ()), d.get("ammo"))
        if kind == "Ram":
            return A.Ram(actor, _tank_id(d["target"], "Ram.target"))
        if kind == "Special":
            args = decode(d.get("args") or {})
            if not isinstance(args, dict):
                raise ProtocolError("Special.args must be an object")
            return A.Special(actor, str(d["name"]), args)
        # Plan
        then = None if d.get("then") is None else action_from_json(d["then"], plan_hook)
        if "steps" in d:
            return A.Plan(actor, tuple(action_from_json(s, plan_hook) for s in d["steps"]), then,
                          d.get("end_facing"), d.get("end_status"))
        if plan_hook is None:
            raise ProtocolError("Plan by 'to'/'path' needs the parent")
        return plan_hook({**d, "then": then})
    except ProtocolError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed {kind} action {d!r}: {type(exc).__name__}: {exc}"[:300]) from None


# --- values ------------------------------------------------------------------------------------------------------
def tank_to_json(t: Any) -> dict:
    """Plain protocol JSON for a tank view (any object with the :class:`~agents.observation.TankView` fields)."""
    h = t.hex
    return {"tank_id": t.tank_id, "label": t.label, "side": t.side, "vehicle_id": t.vehicle_id,
            "hex": None if h is None else [h[0], h[1]], "facing": t.facing, "turret_facing": t.turret_facing,
            "status": str(t.status), "alive": bool(t.alive), "on_board": h is not None,
            "rules_state": encode(dict(t.rules_state)), "ext": encode(dict(getattr(t, "ext", None) or {})),
            "vehicle": encode(t.vehicle)}


def encode(v: Any) -> Any:
    """A JSON-able form of ``v`` with the tags of the module docstring.  Unknown objects become their ``repr``."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Hex):
        return {"$hex": [v.q, v.r]}
    if isinstance(v, Fraction):
        return {"$frac": str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"}
    if isinstance(v, tuple):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return {"$set": sorted((encode(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))}
    if isinstance(v, (A.Action, PathPlan)):
        return {"$action": action_to_json(v)}
    name = type(v).__name__
    if name == "ReadOnly":                      # agents.observation's read-only record proxy
        return encode(object.__getattribute__(v, "_o"))
    if name in ("TankView", "RemoteTank"):
        return {"$tank": tank_to_json(v)}
    if name in ("Odds", "RemoteOdds"):
        return {"$odds": {"p_hit": encode(Fraction(v.p_hit)), "p_kill": encode(Fraction(v.p_kill)),
                          "values": encode(dict(v.values))}}
    if name == "Hypo":
        return {"$hypo": {"hex": encode(v.hex), "facing": v.facing, "moved": v.moved}}
    if isinstance(v, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in v):
            return {k: encode(x) for k, x in v.items()}
        return {"$map": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, enum.Enum):
        return encode(v.value)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"$obj": {"type": name, **{f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}}
    if hasattr(v, "model_dump"):
        return {"$obj": {"type": name, **{k: encode(x) for k, x in v.model_dump().items()}}}
    return repr(v)


def decode(v: Any, hooks: Mapping[str, Callable[[Any], Any]] | None = None) -> Any:
    """Inverse of :func:`encode`.  ``hooks`` maps a tag (``"hypo"``, ``"odds"``, ``"tank"``, ``"obj"``) to a
    constructor taking the decoded payload; without one, odds become :class:`RemoteOdds`, tanks
    :class:`RemoteTank`, records :class:`Record`, hypotheticals a plain dict."""
    if isinstance(v, list):
        return [decode(x, hooks) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1:
        (tag, x), = v.items()
        if tag.startswith("$"):
            t = tag[1:]
            if t == "hex":
                return as_hex(x)
            if t == "tuple":
                return tuple(decode(y, hooks) for y in x)
            if t == "frac":
                return parse_fraction(x) if isinstance(x, str) else Fraction(x)  # bounded: x may be hostile
            if t == "set":
                return frozenset(decode(y, hooks) for y in x)
            if t == "map":
                return {_hashable(decode(k, hooks)): decode(y, hooks) for k, y in x}
            if t == "action":
                return action_from_json(x)
            payload = decode(x, hooks) if t != "tank" else x
            if hooks and t in hooks:
                return hooks[t](payload)
            if t == "odds":
                return RemoteOdds(Fraction(payload["p_hit"]), Fraction(payload["p_kill"]),
                                  MappingProxyType(payload.get("values") or {}))
            if t == "tank":
                return RemoteTank(payload)
            if t == "obj":
                return Record(payload)
            if t == "hypo":
                return payload
            raise ProtocolError(f"unknown tag {tag!r}")
    return {k: decode(x, hooks) for k, x in v.items()}


def _hashable(k: Any) -> Any:
    return tuple(_hashable(x) for x in k) if isinstance(k, list) else k


class Record:
    """A read-only record decoded from ``{"$obj": ...}`` (a vehicle card, ...): attribute and item access."""

    __slots__ = ("_d",)

    def __init__(self, d: Mapping[str, Any]):
        object.__setattr__(self, "_d", MappingProxyType(dict(d)))

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_d")[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self._d[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._d.get(name, default)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("records are read-only")

    def __repr__(self) -> str:
        return f"Record({dict(self._d)!r})"


@dataclasses.dataclass(frozen=True)
class RemoteOdds:
    """Exact odds as the child sees them (same fields as :class:`sim.rules.base.Odds`)."""

    p_hit: Fraction
    p_kill: Fraction
    values: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def expected_damage(self) -> Fraction:
        return Fraction(self.values.get("expected_damage", 0))


class RemoteTank:
    """Read-only tank view built from protocol JSON (the fields of :class:`~agents.observation.TankView`)."""

    __slots__ = (
        "alive",
        "ext",
        "facing",
        "hex",
        "label",
        "on_board",
        "rules_state",
        "side",
        "status",
        "tank_id",
        "turret_facing",
        "vehicle",
        "vehicle_id",
    )
    # the slots' types (set once in __init__ through object.__setattr__: the view is read-only)
    alive: bool
    ext: Mapping[str, Any]
    facing: int
    hex: Hex | None
    label: str
    on_board: bool
    rules_state: Mapping[str, Any]
    side: int
    status: str
    tank_id: int
    turret_facing: int | None
    vehicle: Any  # the decoded protocol value of the vehicle record (a Record, or plain JSON)
    vehicle_id: str | None

    def __init__(self, d: Mapping[str, Any]):
        vals = {"tank_id": d["tank_id"], "label": d.get("label", ""), "side": d["side"],
                "vehicle_id": d.get("vehicle_id"), "hex": None if d.get("hex") is None else as_hex(d["hex"]),
                "facing": d.get("facing", 0), "turret_facing": d.get("turret_facing"),
                "status": d.get("status", "active"), "alive": bool(d.get("alive", True)),
                "on_board": d.get("hex") is not None,
                "rules_state": MappingProxyType(decode(d.get("rules_state") or {})),
                "ext": MappingProxyType(decode(d.get("ext") or {})),
                "vehicle": decode(d.get("vehicle"))}
        for k, v in vals.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"observations are read-only: cannot set {name}")

    def __repr__(self) -> str:
        return f"RemoteTank({self.tank_id} {self.label!r} {self.vehicle_id} at {self.hex})"


# --- the connection ------------------------------------------------------------------------------------------------
class Connection:
    """JSON-lines messages over two binary streams (blocking; the parent enforces the time limits)."""

    def __init__(self, rfile: Any, wfile: Any):
        self.rfile, self.wfile = rfile, wfile

    def send(self, msg: Mapping[str, Any]) -> None:
        """Write one message line and flush."""
        self.wfile.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        self.wfile.flush()

    def read(self) -> dict:
        """The next message; raises ``EOFError`` at end of input, :class:`ProtocolError` for a bad line."""
        line = self.rfile.readline()
        if not line:
            raise EOFError("parent closed the pipe")
        msg = json.loads(line)
        if not isinstance(msg, dict) or "type" not in msg:
            raise ProtocolError(f"message without a type: {line[:200]!r}")
        return msg

    def call(self, method: str, args: tuple = (), kwargs: Mapping[str, Any] | None = None,
             actor: int | None = None) -> Any:
        """Run an observation query in the parent and return its decoded value (re-raising its error)."""
        self.send({"type": "call", "method": method, "args": [encode(a) for a in args],
                   "kwargs": {k: encode(v) for k, v in (kwargs or {}).items()}, "actor": actor})
        msg = self.read()
        if msg.get("type") != "result":
            raise ProtocolError(f"expected a result for {method}, got {msg.get('type')!r}")
        if "error" in msg:
            kind, _, text = str(msg["error"]).partition(": ")
            raise {"KeyError": KeyError, "ValueError": ValueError, "TypeError": TypeError,
                   "AttributeError": AttributeError}.get(kind, RuntimeError)(text or kind)
        return decode(msg.get("value"))


# --- the observation the child's policy sees -----------------------------------------------------------------------
class RemoteLegal:
    """``decision.legal`` in the child: ``modes``, ``specials`` from the snapshot; ``contains``, ``targets``,
    ``reachable`` and ``plan_to`` through the observation."""

    def __init__(self, obs: RemoteObservation):
        self._obs = obs
        d = obs._snap["decision"]
        self.modes = tuple(d.get("modes") or ())
        self.specials = tuple(d.get("specials") or ())

    def contains(self, action: Any) -> bool:
        return self._obs.is_legal(action)

    def targets(self, actor: int) -> tuple[int, ...]:
        return self._obs.targets(actor)

    def reachable(self, actor: int) -> Mapping[Any, tuple[int, tuple]]:
        return self._obs.reachable(actor)

    def plan_to(self, actor: int, path: Any, then: Any = None, end_status: str | None = None) -> PathPlan:
        return PathPlan(actor, tuple(path), then, end_status)


@dataclasses.dataclass(frozen=True)
class RemoteDecision:
    """``decision`` in the child: the fields of :class:`sim.rules.base.Decision` (``legal`` is a
    :class:`RemoteLegal`)."""

    side: int
    kind: str
    actors: tuple[int, ...]
    legal: Any
    default: A.Action
    context: Mapping[str, Any]


def _objective(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType({k: (as_hex(v) if k == "hex" else decode(v)) for k, v in d.items()})


class RemoteObservation(StateQueries):
    """The :class:`~agents.observation.Observation` API rebuilt from a snapshot plus queries to the parent.

    Read-only.  Facts, own tanks, visible enemies, objectives, modes, targets with odds and (for moves) reachable
    states come with the snapshot; geometry that needs no board (``distance``, ``hex_of``, ``facing_of``,
    ``in_arc``, ``facing_towards``, ``hypo``) is computed here; everything else (``threat``, ``distance_field``,
    ``passable``, ``los``, ``face``, hypothetical ``odds``, ``is_legal``, and any other public Observation method)
    is asked of the parent.  Answers are kept for the decision."""

    def __init__(self, snap: Mapping[str, Any], conn: Connection, rng: random.Random, actor: int | None,
                 shared: dict | None = None):
        s = object.__setattr__
        s(self, "_snap", snap)
        s(self, "_conn", conn)
        s(self, "rng", rng)
        s(self, "actor", actor)
        if shared is None:
            targets: dict[int, list] = {}
            odds: dict[tuple[int, int], RemoteOdds] = {}
            for e in snap.get("targets", []):
                targets.setdefault(e["shooter"], []).append(e["target"])
                odds[(e["shooter"], e["target"])] = RemoteOdds(Fraction(e["p_hit"]), Fraction(e["p_kill"]),
                                                               MappingProxyType(decode(e.get("values") or {})))
            reach = {}
            for a, entries in (snap.get("reachable") or {}).items():
                reach[int(a)] = MappingProxyType({decode(x["state"]): (x["cost"], tuple(decode(p) for p in x["path"]))
                                                  for x in entries})
            dec = snap["decision"]
            shared = {"own": {t["tank_id"]: RemoteTank(t) for t in snap.get("own", [])},
                      "enemies": [RemoteTank(t) for t in snap.get("enemies", [])], "targets": targets, "odds": odds,
                      "reach": reach, "calls": {},
                      "last_known": {d["tank_id"]: as_hex(d["hex"]) for d in snap.get("last_known", [])},
                      "objectives": [_objective(o) for o in snap.get("objectives", [])],
                      "default": action_from_json(dec["default"]),
                      "context": MappingProxyType(decode(dec.get("context") or {}))}
            shared["decision"] = RemoteDecision(dec["side"], dec["kind"], tuple(dec["actors"]), None,
                                                shared["default"], shared["context"])
        s(self, "_shared", shared)
        d0 = shared["decision"]
        s(self, "decision", dataclasses.replace(d0, legal=RemoteLegal(self)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"observations are read-only: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"observations are read-only: cannot delete {name}")

    def __getattr__(self, name: str) -> Any:
        """Any other public Observation method: a function that asks the parent."""
        if name.startswith("_"):
            raise AttributeError(name)

        def forward(*args: Any, **kwargs: Any) -> Any:
            key = (name, self.actor, json.dumps([encode(list(args)), encode(kwargs)], sort_keys=True))
            return self._cached(key, lambda: self._call(name, *args, **kwargs))

        forward.__name__ = name
        return forward

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._conn.call(method, args, kwargs, self.actor)

    def _cached(self, key: Any, fn: Callable[[], Any]) -> Any:
        c = self._shared["calls"]
        if key not in c:
            c[key] = fn()
        return c[key]

    def for_actor(self, actor: int) -> RemoteObservation:
        """The same observation focused on another of the decision's actors."""
        return RemoteObservation(self._snap, self._conn, self.rng, actor, self._shared)

    # --- facts ----------------------------------------------------------------------------------------------
    ruleset = property(lambda self: self._snap["ruleset"])
    has_ramming = property(lambda self: bool(self._snap.get("has_ramming")))
    turn = property(lambda self: self._snap["turn"])
    turn_limit = property(lambda self: self._snap["turn_limit"])
    role = property(lambda self: self._snap["role"])
    side = property(lambda self: self._snap["side"])
    kind = property(lambda self: self._snap["decision"]["kind"])
    context = property(lambda self: self.decision.context)

    # --- tanks ----------------------------------------------------------------------------------------------
    @property
    def me(self) -> RemoteTank | None:
        if self.actor is None:
            return None
        return self.tank(self.actor)

    def tank(self, tid: int) -> RemoteTank:
        if tid in self._shared["own"]:
            return self._shared["own"][tid]
        for e in self._shared["enemies"]:
            if e.tank_id == tid:
                return e
        return self._cached(("tank", tid), lambda: self._call("tank", tid))

    def friends(self) -> list[RemoteTank]:
        return [t for i, t in sorted(self._shared["own"].items()) if i != self.actor and t.alive
                and t.hex is not None]

    def own_ids(self) -> tuple[int, ...]:
        return tuple(i for i, t in sorted(self._shared["own"].items()) if t.alive and t.hex is not None)

    def visible_ids(self) -> tuple[int, ...]:
        return tuple(t.tank_id for t in self._shared["enemies"])

    def enemies(self) -> list[RemoteTank]:
        return list(self._shared["enemies"])

    def last_known(self) -> Mapping[int, Hex]:
        return MappingProxyType(dict(self._shared["last_known"]))

    def objectives(self) -> list[Mapping[str, Any]]:
        return list(self._shared["objectives"])

    # --- the decision -----------------------------------------------------------------------------------------
    def targets(self, actor: int | None = None) -> tuple[int, ...]:
        a = self.actor if actor is None else actor
        t = self._shared["targets"]
        if a in t or a in self.decision.actors:
            return tuple(t.get(a, ()))
        return tuple(self._cached(("targets", a), lambda: self._conn.call("targets", (a,), None, self.actor)))

    def reachable(self, actor: int | None = None) -> Mapping[Any, tuple[int, tuple]]:
        a = self.actor if actor is None else actor
        if a in self._shared["reach"]:
            return self._shared["reach"][a]
        return self._cached(("reach", a), lambda: MappingProxyType(
            self._conn.call("reachable", (a,), None, self.actor)))

    def plan_to(self, path: Any, then: Any = None, end_status: str | None = None) -> PathPlan:
        return PathPlan(self.actor, tuple(path), then, end_status)

    def arrays(self) -> Any:
        """The side's view as the arrays of :mod:`agents.encoding` (an :class:`~agents.encoding.Encoded`), from
        the snapshot's ``arrays`` field, which the parent sends when the handshake asked for it (``"arrays":
        true``, i.e. the policy has ``wants_arrays = True``).  Raises ``LookupError`` if it was not sent."""
        d = self._snap.get("arrays")
        if d is None:
            raise LookupError("the parent sent no arrays: the policy must declare wants_arrays = True")
        from agents.encoding import Encoded

        return self._cached(("arrays",), lambda: Encoded.from_json(d, self.decision))

    def is_legal(self, action: Any) -> bool:
        key = json.dumps(encode(action), sort_keys=True)
        return bool(self._cached(("legal", self.actor, key), lambda: self._call("is_legal", action)))

    # --- geometry -----------------------------------------------------------------------------------------------
    def passable(self, h: Any) -> bool:
        return bool(self._cached(("passable", tuple(h)), lambda: self._call("passable", as_hex(h))))

    def distance_field(self, sources: Any) -> Mapping[Hex, int]:
        key = ("dfield", tuple(sorted(as_hex(x) for x in sources)))
        return self._cached(key, lambda: MappingProxyType(self._call("distance_field", key[1])))

    def los(self, frm: int, to: int) -> bool:
        return bool(self._cached(("los", frm, to), lambda: self._call("los", frm, to)))

    # --- odds -----------------------------------------------------------------------------------------------------
    def odds(self, target: int, as_if: Any = None, shooter: int | None = None) -> Any:
        s = self.actor if shooter is None else shooter
        if s is None:
            return None
        if as_if is None and (s, target) in self._shared["odds"]:
            return self._shared["odds"][(s, target)]
        return self._cached(("odds", s, target, repr(as_if)),
                            lambda: self._conn.call("odds", (target,), {"as_if": as_if, "shooter": s}, self.actor))

    def threat(self, hex: Any, facing: int, tank: int | None = None) -> Fraction:
        tid = self.actor if tank is None else tank
        return self._cached(("threat", tid, tuple(hex), facing),
                            lambda: self._conn.call("threat", (as_hex(hex), facing), {"tank": tid}, self.actor))


# --- serving -------------------------------------------------------------------------------------------------------
def _protocol_streams() -> tuple[Any, Any]:
    """The protocol's streams: stdin, and a private copy of stdout; ``print`` is redirected to stderr so that
    a chatty policy cannot corrupt the protocol."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, os.fdopen(out_fd, "wb", buffering=0)


def serve(policy: Any, conn: Connection | None = None, name: str | None = None) -> int:
    """Answer the parent's messages with ``policy`` (anything with ``decide(obs, decision) -> Action``) until
    ``bye`` or end of input; returns the exit code.  Errors inside ``decide`` are reported, not fatal."""
    if conn is None:
        conn = Connection(*_protocol_streams())
    rng = random.Random(0)
    try:
        msg = conn.read()
    except EOFError:
        return 0
    if msg.get("type") != "hello":
        conn.send({"type": "error", "message": f"expected hello, got {msg.get('type')!r}"})
        return 2
    ready = {"type": "ready", "protocol": PROTOCOL, "name": name or type(policy).__name__,
             "never_reacts": bool(getattr(policy, "never_reacts", False))}
    if getattr(policy, "wants_arrays", False):
        ready["arrays"] = True
    conn.send(ready)
    while True:
        try:
            msg = conn.read()
        except EOFError:
            return 0
        kind = msg.get("type")
        if kind == "bye":
            return 0
        if kind != "decide":
            conn.send({"type": "error", "message": f"unexpected message {kind!r}"})
            continue
        if "rng_seed" in msg:
            rng = random.Random(int(msg["rng_seed"]))
        try:
            snap = msg["obs"]
            obs = RemoteObservation(snap, conn, rng, snap.get("actor"))
            act = policy.decide(obs, obs.decision)
            try:
                msg_out = {"type": "action", "action": action_to_json(act)}
            except ProtocolError:
                msg_out = {"type": "error", "message": f"wrong return: {type(act).__name__}, expected an Action"}
            conn.send(msg_out)
        except (EOFError, BrokenPipeError):
            return 0
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            try:
                conn.send({"type": "error", "message": f"{type(exc).__name__}: {exc}"[:2000]})
            except (BrokenPipeError, OSError):
                return 1


def load_doctrine(name: str, params: Mapping[str, Any]) -> Any:
    """A built-in doctrine (``agents.policies.BUILTIN``) or ``package.module:Class`` instantiated with ``params``
    (a light loader: the child never imports the engine).  Raises ``LookupError`` / ``TypeError``."""
    import importlib

    if ":" in name:
        mod, _, cls = name.partition(":")
        obj = getattr(importlib.import_module(mod), cls, None)
        if obj is None:
            raise LookupError(f"module {mod!r} has no class {cls!r}")
    else:
        from agents.policies import BUILTIN

        if name not in BUILTIN:
            raise LookupError(f"unknown doctrine {name!r}; built-in: {', '.join(sorted(BUILTIN))}")
        obj = BUILTIN[name]
    return obj(**dict(params))


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.remote --policy NAME [--params JSON]``: serve a doctrine over stdin/stdout."""
    p = argparse.ArgumentParser(prog="python -m agents.remote", description=__doc__.splitlines()[0])
    p.add_argument("--policy", required=True, help="built-in doctrine name or package.module:Class")
    p.add_argument("--params", default="{}", help="the doctrine's parameters as a JSON object")
    args = p.parse_args(argv)
    conn = Connection(*_protocol_streams())
    try:
        policy = load_doctrine(args.policy, json.loads(args.params))
    except Exception as exc:  # noqa: BLE001 - reported in the handshake
        with contextlib.suppress(Exception):
            conn.read()                     # the hello
        conn.send({"type": "error", "message": f"cannot load {args.policy!r}: {type(exc).__name__}: {exc}"})
        return 2
    return serve(policy, conn, name=args.policy)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
