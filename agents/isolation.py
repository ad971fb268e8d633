"""Isolated entrants: each runs in its own confined process and sees only its side's observations.

:class:`RemotePolicy` is an ordinary policy in the engine (load it as ``agents.isolation:RemotePolicy`` with
parameters ``entrant`` and ``limits``; only tournament entrant definitions may) that starts a child process and,
for every decision, sends the child a JSON snapshot of the :class:`~agents.observation.Observation` and reads back
an action.  The message format (JSON lines) is documented in :mod:`agents.remote`, which is also the Python child
(``python -m agents.remote --policy NAME``); ``docs/isolation_protocol.md`` shows an entrant written in another
language.

What the child cannot do through the protocol: read the battle, the model, the dice or the other side -- they live
in another process and nothing in the protocol returns them (queries are limited to the Observation's public
methods, answered for this side only).  What it cannot do around the protocol is the sandbox's business
(:mod:`agents.sandbox`): on Linux as root each entrant runs under its own uid, as pid 1 of its own pid, mount, ipc,
net and uts namespaces, with a private ``/proc``, a read-only file system and private ``/tmp``, in its own cgroup,
and is killed with all its descendants when the game ends.  What this machine cannot guarantee is reported by
:func:`agents.sandbox.confinement` (a warning at start-up, and in the tournament's manifest).  The child starts in
the filesystem root with a minimal environment (``PATH``, the parent's ``sys.path`` minus its own standard library
and site-packages as ``PYTHONPATH`` so plug-ins import and a foreign interpreter keeps its own library,
``PYTHONHASHSEED=0``, ``HOME=/tmp``) and no descriptors but its stdin, stdout and stderr.

Limits (:class:`Limits`): CPU seconds for the battle (all its processes together, watched through the cgroup;
per process where there is none), memory in MB (the cgroup's limit for all its processes, and each process's
address space), processes (``RLIMIT_NPROC`` of its own uid and the cgroup's ``pids.max``); and, measured by the
parent, wall seconds per decision and for start-up.  A breach, a crash, an error message or a malformed answer
raises an :class:`EntrantFault` inside ``decide``; the engine records it as a policy fault and, with
``on_fault: forfeit``, the entrant loses the game (the reason names the fault, and :data:`FAULT_KINDS` its kind).
A death by a signal that came neither from the engine, nor from a limit, nor from a fault of its own (someone
outside killed it) raises :class:`EntrantVoid`: the game is void, never the entrant's fault
(:func:`void_reason`; the tournament replays it).
"""
from __future__ import annotations

import functools
import json
import os
import selectors
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents import remote
from agents.policies.base import Policy
from agents.sandbox import OWN_FAULT_SIGNALS, READY_LINE, Sandbox, SandboxError
from sim.actions import Action
from sim.rules.base import fraction_str

#: The working directory of every child (the root: no project files under relative paths).
CHILD_CWD = os.path.abspath(os.sep)
#: Longest accepted message line from a child (bytes).
MAX_LINE = 16 * 1024 * 1024
#: Observation methods a child may never call (they hand out engine objects or are built child-side).
REFUSED_CALLS = frozenset({"for_actor", "plan_to", "determinize"})  # determinize: a battle copy, in-process only


@functools.lru_cache(maxsize=1)
def allowed_calls() -> frozenset[str]:
    """The Observation methods a child may query: every public method of
    :class:`agents.observation.Observation` except :data:`REFUSED_CALLS`."""
    from agents.observation import Observation

    return frozenset(n for n, v in vars(Observation).items() if not n.startswith("_") and n not in REFUSED_CALLS
                     and (callable(v) or isinstance(v, (staticmethod, classmethod))))


class Limits(BaseModel):
    """Resource limits of one isolated entrant: ``cpu_s`` CPU seconds per battle and ``memory_mb`` MB of memory
    (for all its processes together in the sandbox with cgroups, else per process; memory is also each process's
    address space limit), ``processes`` processes and threads at once (``RLIMIT_NPROC`` of its own uid, the
    cgroup's ``pids.max``; at least 8: the sandbox's set-up counts too), ``decision_wall_s`` wall seconds per
    decision (queries included), ``startup_wall_s`` wall seconds to answer the handshake."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    cpu_s: float = Field(60.0, gt=0)
    memory_mb: int = Field(1024, ge=32)
    processes: int = Field(64, ge=8, le=4096)
    decision_wall_s: float = Field(10.0, gt=0)
    startup_wall_s: float = Field(30.0, gt=0)


class EntrantFault(RuntimeError):
    """An isolated entrant failed; ``kind`` is the tournament's ``fault_kind`` (:data:`FAULT_KINDS`)."""

    kind = "raise"


class EntrantTimeout(EntrantFault):
    """No answer within the wall-time limit (the child is killed)."""

    kind = "timeout"


class EntrantCrashed(EntrantFault):
    """The child exited, died of a fault of its own (``SIGSEGV``, ...) or closed its output."""

    kind = "crash"


class EntrantCPULimit(EntrantCrashed):
    """The child's processes used up its CPU seconds."""

    kind = "cpu"


class EntrantMemoryLimit(EntrantCrashed):
    """The child ran out of memory (``MemoryError`` at the address-space limit, or killed by the cgroup's limit)."""

    kind = "memory"


class EntrantError(EntrantFault):
    """The child reported an error: its policy raised."""

    kind = "raise"


class EntrantWrongReturn(EntrantError):
    """The child reported that its policy returned something that is not an action."""

    kind = "wrong_type"


class EntrantProtocolError(EntrantFault):
    """The child sent something that is not the protocol (not JSON, an unknown message, a malformed action)."""

    kind = "protocol"


class EntrantLoadError(EntrantFault):
    """The child could not start or load its policy."""

    kind = "load"


class EntrantVoid(EntrantFault):
    """Not the entrant's fault: it was killed by a signal that came neither from the engine, nor from its limits,
    nor from a fault of its own, or its sandbox could not be set up.  The game is void (:func:`void_reason`)."""

    kind = "void"


#: ``fault_kind`` by fault class name (what a forfeit reason names after the decision kind).
FAULT_KINDS: dict[str, str] = {c.__name__: c.kind for c in (
    EntrantFault, EntrantTimeout, EntrantCrashed, EntrantCPULimit, EntrantMemoryLimit, EntrantError,
    EntrantWrongReturn, EntrantProtocolError, EntrantLoadError, EntrantVoid)}


def child_command(entrant: Mapping[str, Any]) -> list[str]:
    """The command line of an entrant: its ``command`` (another language), else this interpreter serving the
    doctrine ``policy`` with ``params`` through :mod:`agents.remote`."""
    if entrant.get("command"):
        return [str(x) for x in entrant["command"]]
    return [sys.executable, "-m", "agents.remote", "--policy", str(entrant["policy"]),
            "--params", json.dumps(dict(entrant.get("params") or {}), sort_keys=True)]


def child_pythonpath() -> list[str]:
    """The ``PYTHONPATH`` an entrant's process gets: the folders on this interpreter's ``sys.path`` that are not
    its own standard library or site-packages (plug-in folders, a source checkout), plus the project root when it
    is a checkout.  The interpreter's own folders are left out so any other Python (say a system ``python3``
    3.11 running ``bot.py``) keeps its own standard library (no "SRE module mismatch"); ``sys.executable`` finds
    them by itself."""
    import sysconfig

    mine = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    mine |= {os.path.realpath(p) for p in sysconfig.get_paths().values() if p}

    def own(path: str) -> bool:
        r = os.path.realpath(path)
        return any(r == m or r.startswith(m + os.sep) for m in mine)

    root = str(Path(__file__).resolve().parent.parent)
    cands = [p for p in sys.path if p and os.path.isdir(p)] + [root]
    return list(dict.fromkeys(os.path.abspath(p) for p in cands if not own(p)))


def child_env() -> dict[str, str]:
    """The whole environment of an entrant's process (nothing else of the parent's is passed)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(child_pythonpath()),
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8",
            "HOME": "/tmp"}


def child_expose() -> list[str]:
    """Paths every entrant may need to read besides its command's own (:func:`agents.sandbox.needed_paths`): this
    interpreter's prefixes and the ``PYTHONPATH`` it is given."""
    return [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *child_pythonpath()]


class Child:
    """One entrant process speaking JSON lines, confined by a :class:`agents.sandbox.Sandbox`; every read and write
    has a deadline.

    Raises :class:`EntrantTimeout` when a deadline passes (the process is killed), :class:`EntrantCrashed` (or
    :class:`EntrantCPULimit`, :class:`EntrantMemoryLimit`, :class:`EntrantVoid`) when it exits or closes its
    output, :class:`EntrantProtocolError` for a line that is not a JSON object, :class:`EntrantLoadError` when it
    cannot be started."""

    def __init__(self, command: Sequence[str], limits: Limits, label: str = "entrant"):
        self.label = label
        self.limits = limits
        self.usage: dict[str, Any] = {}
        self._tail = ""
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the child; anonymous
        try:
            self.sandbox = Sandbox(list(command), cpu_s=limits.cpu_s, memory_mb=limits.memory_mb,
                                   processes=limits.processes, env=child_env(), stderr=self._err,
                                   expose=child_expose())
        except (OSError, SandboxError) as exc:
            self._err.close()
            raise EntrantLoadError(f"{label}: cannot start {list(command)!r}: {exc}") from None
        self.proc = self.sandbox.proc
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None  # the sandbox always opens both as pipes
        self._stdin, self._stdout = stdin, stdout
        self._setting_up = self.sandbox.sandboxed       # the sandbox's set-up has not finished yet
        os.set_blocking(self._stdout.fileno(), False)
        os.set_blocking(self._stdin.fileno(), False)
        self._buf = bytearray()

    def start(self, deadline: float) -> None:
        """In the sandbox: wait for the set-up's ready line, hold the sandbox (:meth:`agents.sandbox.Sandbox.hold`)
        and let the entrant run.  Idempotent; nothing to do without the sandbox."""
        if not self._setting_up:
            return
        fd = self._stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._timeout("to start")
                if not sel.select(min(left, 0.1)):
                    if self.sandbox.ended():
                        self._crashed()
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._crashed()
                self._buf += chunk
        nl = self._buf.find(b"\n")
        line = bytes(self._buf[:nl])
        del self._buf[:nl + 1]
        if line != READY_LINE:
            self.sandbox.kill("setup")
            raise EntrantVoid(f"{self.label}: the sandbox set-up wrote {line[:100]!r} instead of its ready line")
        try:
            self.sandbox.hold()
        except (OSError, SandboxError) as exc:
            self.sandbox.kill("setup")
            raise EntrantVoid(f"{self.label}: the sandbox could not be held: {exc}") from None
        self._setting_up = False
        self._write(b"go\n", deadline)

    # --- io ---------------------------------------------------------------------------------------------------
    def send(self, msg: Mapping[str, Any], deadline: float) -> None:
        """Write one message line before ``deadline`` (``time.monotonic()`` seconds)."""
        self.start(deadline)
        self._write(json.dumps(msg, separators=(",", ":")).encode() + b"\n", deadline)

    def _write(self, raw: bytes, deadline: float) -> None:
        data = memoryview(raw)
        fd = self._stdin.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while data:
                if self.sandbox.killed is not None:
                    self._crashed()
                left = deadline - time.monotonic()
                if left <= 0:
                    self._timeout("to read its input")
                if not sel.select(min(left, 0.1)):
                    if self.sandbox.ended():
                        self._crashed()
                    continue
                try:
                    n = os.write(fd, data)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, OSError):
                    self._crashed()
                data = data[n:]

    def recv(self, deadline: float, what: str = "to answer") -> dict:
        """Read the next message before ``deadline``; ``what`` names the wait in a timeout message."""
        self.start(deadline)
        fd = self._stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                nl = self._buf.find(b"\n")
                if nl >= 0:
                    line = bytes(self._buf[:nl])
                    del self._buf[:nl + 1]
                    if not line.strip():
                        continue
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        raise EntrantProtocolError(f"{self.label}: not a JSON line: {line[:200]!r}") from None
                    if not isinstance(msg, dict) or "type" not in msg:
                        raise EntrantProtocolError(f"{self.label}: message without a type: {line[:200]!r}")
                    return msg
                if len(self._buf) > MAX_LINE:
                    raise EntrantProtocolError(f"{self.label}: message longer than {MAX_LINE} bytes")
                left = deadline - time.monotonic()
                if left <= 0:
                    self._timeout(what)
                if not sel.select(min(left, 0.1)):
                    if self.sandbox.ended():
                        self._crashed()
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._crashed()
                self._buf += chunk

    # --- ends ---------------------------------------------------------------------------------------------------
    def stderr_tail(self, n: int = 400) -> str:
        """The last ``n`` bytes the child wrote to stderr (for crash reports; after :meth:`close`, of its last
        64 KB)."""
        if self._err.closed:
            return self._tail[-n:].strip()
        try:
            self._err.seek(0, os.SEEK_END)
            size = self._err.tell()
            self._err.seek(max(0, size - n))
            return self._err.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _timeout(self, what: str) -> None:
        if self.sandbox.stopped_from_outside():
            self.sandbox.kill("stopped")
            raise EntrantVoid(f"{self.label}: stopped by a signal from outside its sandbox")
        self.sandbox.kill("timeout")
        limit = self.limits.decision_wall_s if what == "to answer" else self.limits.startup_wall_s
        raise EntrantTimeout(f"{self.label}: no answer within the wall-time limit ({what}, {limit:g} s)")

    def _crashed(self) -> None:
        deadline = time.monotonic() + 2
        while not self.sandbox.ended() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.sandbox.ended():
            self.sandbox.kill("crash")
        raise self.exit_fault()

    def exit_fault(self) -> EntrantFault:
        """The fault behind the ended child (:meth:`agents.sandbox.Sandbox.exit_status`).

        Killed by the engine for CPU time, ``SIGXCPU``, or ``SIGKILL`` with the CPU seconds used up: CPU limit;
        ``SIGKILL`` at a CPU limit it lowered itself (read from its zombie, :meth:`agents.sandbox.Sandbox.ended`):
        crash.
        ``SIGKILL`` after the memory cgroup's OOM killer struck, or ``MemoryError`` on stderr: memory limit.  A
        fault of its own (``SIGSEGV``, ``SIGBUS``, ``SIGILL``, ``SIGFPE``, ``SIGTRAP``, ``SIGSYS``, ``SIGABRT``)
        or an exit code: crash.  Any other signal came from outside (in the sandbox the entrant is its pid
        namespace's init, which ignores signals sent from inside): :class:`EntrantVoid`, as is a sandbox whose
        set-up failed."""
        tail = self.stderr_tail()
        said = f"; stderr: {tail[-200:]}" if tail else ""
        lab, lim = self.label, self.limits
        together = " for all its processes" if self.sandbox.cgroup is not None else ""
        rc, sig = self.sandbox.exit_status()
        if self._setting_up and self.sandbox.killed is None and sig is None:
            log = self.sandbox.monitor_log().strip()[-300:]
            return EntrantVoid(f"{lab}: the sandbox could not be set up (exit {rc}): {log or 'no message'}")
        if self.sandbox.killed == "cpu":
            return EntrantCPULimit(f"{lab}: CPU-time limit ({lim.cpu_s:g} s{together}) exceeded")
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
            if sig == signal.SIGXCPU:
                return EntrantCPULimit(f"{lab}: CPU-time limit ({lim.cpu_s:g} s) exceeded ({name})")
            if sig in OWN_FAULT_SIGNALS:
                return EntrantCrashed(f"{lab}: killed by {name} (a fault of its own){said}")
            end = self.sandbox.end or {}
            lowered = end.get("cpu_rlimit") is not None and end["cpu_rlimit"] < self.sandbox.cpu_rlimit
            # the kernel applies RLIMIT_CPU to tick-sampled CPU time, which may run ahead of what /proc reports
            # (0.92 s at a 1 s limit, seen on this project's machines): "at the limit" is within half of it
            if sig == signal.SIGKILL and lowered and end["cpu_s"] >= end["cpu_rlimit"] / 2:
                return EntrantCrashed(f"{lab}: killed by SIGKILL at the CPU-time limit it lowered itself "
                                      f"({end['cpu_rlimit']} s)")
            if sig == signal.SIGKILL:
                used = self.sandbox.cpu_used()
                used = end.get("cpu_s") if used is None else used
                if used is not None and used >= lim.cpu_s:
                    return EntrantCPULimit(f"{lab}: CPU-time limit ({lim.cpu_s:g} s{together}) exceeded ({name})")
                cg = self.sandbox.cgroup
                if cg is not None and cg.oom_kills() > 0:
                    return EntrantMemoryLimit(f"{lab}: killed by the memory limit ({lim.memory_mb} MB{together})")
            where = "" if self.sandbox.sandboxed else " (without the sandbox it may have sent it itself)"
            return EntrantVoid(f"{lab}: killed by {name}, which came neither from the engine nor from its "
                               f"limits{where}")
        if "MemoryError" in tail:
            return EntrantMemoryLimit(f"{lab}: MemoryError (memory limit {lim.memory_mb} MB){said}")
        return EntrantCrashed(f"{lab}: exited with code {rc}{said}")

    def close(self) -> dict[str, Any]:
        """Say bye, then end the child and every process it started, remove its cgroup; returns what it used
        (:meth:`agents.sandbox.Sandbox.usage`, also kept in :attr:`usage`).  Idempotent."""
        if self.proc.poll() is None and self.sandbox.killed is None and not self._setting_up:
            try:
                self.send({"type": "bye"}, time.monotonic() + 0.2)
            except (EntrantFault, OSError):
                pass
        self.usage = self.sandbox.close()
        if not self._err.closed:
            self._tail = self.stderr_tail(65536)
        for f in (self.proc.stdin, self.proc.stdout, self._err):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        return self.usage


# --- snapshot and queries ---------------------------------------------------------------------------------------
def snapshot(obs: Any, decision: Any) -> tuple[dict, dict[int, list]]:
    """The ``obs`` message for one decision (agents.remote docstring), built from the public Observation API
    only, and the reachable paths per actor (to resolve ``{"type": "Plan", "to": i}`` answers)."""
    me = obs.me
    own = ([me] if me is not None and me.alive and me.hex is not None else []) + obs.friends()
    actors = tuple(decision.actors)
    targets = []
    for a in actors:
        oa = obs if a == obs.actor else obs.for_actor(a)
        for t in oa.targets(a):
            o = oa.odds(t, shooter=a)
            if o is None:
                continue
            targets.append({"shooter": a, "target": t, "p_hit": fraction_str(o.p_hit),
                            "p_kill": fraction_str(o.p_kill), "p_hit_f": float(o.p_hit), "p_kill_f": float(o.p_kill),
                            "values": remote.encode(dict(o.values))})
    reach_msg: dict[str, list] = {}
    paths: dict[int, list] = {}
    if decision.kind in ("move", "move_step") and decision.legal.plan_to is not None:
        for a in actors:
            oa = obs if a == obs.actor else obs.for_actor(a)
            states = oa.reachable(a)
            entries, plist = [], []
            for st, (cost, path) in states.items():
                h = oa.hex_of(st)
                entries.append({"state": remote.encode(st), "hex": [h.q, h.r], "facing": oa.facing_of(st),
                                "cost": cost, "path": [remote.encode(p) for p in path]})
                plist.append(path)
            reach_msg[str(a)] = entries
            paths[a] = plist
    lk = obs.last_known()
    msg = {
        "turn": obs.turn, "turn_limit": obs.turn_limit, "ruleset": obs.ruleset, "has_ramming": obs.has_ramming,
        "side": obs.side, "role": obs.role, "actor": obs.actor,
        "decision": {"kind": decision.kind, "side": decision.side, "actors": list(actors),
                     "default": remote.action_to_json(decision.default), "modes": list(decision.legal.modes),
                     "specials": list(decision.legal.specials), "context": remote.encode(dict(decision.context))},
        "own": [remote.tank_to_json(t) for t in own],
        "enemies": [remote.tank_to_json(t) for t in obs.enemies()],
        "last_known": [{"tank_id": k, "hex": [h[0], h[1]]} for k, h in sorted(lk.items())],
        "objectives": [{k: ([v[0], v[1]] if k == "hex" else remote.encode(v)) for k, v in o.items()}
                       for o in obs.objectives()],
        "targets": targets,
    }
    if reach_msg:
        msg["reachable"] = reach_msg
    return msg, paths


def _hooks() -> dict:
    from sim.rules.base import Hypo

    return {"hypo": lambda d: Hypo(d["hex"], int(d["facing"]), bool(d.get("moved", True)))}


def answer_call(obs: Any, msg: Mapping[str, Any]) -> dict:
    """Run one ``call`` message against the real observation; returns the ``result`` message."""
    method = msg.get("method")
    if not isinstance(method, str) or method not in allowed_calls():
        return {"type": "result", "error": f"AttributeError: no observation query {method!r}"}
    actor = msg.get("actor")
    try:
        target = obs if actor is None or actor == obs.actor else obs.for_actor(int(actor))
        hooks = _hooks()
        args = remote.decode(msg.get("args") or [], hooks)
        kwargs = remote.decode(msg.get("kwargs") or {}, hooks)
        if method == "is_legal":
            args = [_legalise(target, a) for a in args]
        value = getattr(target, method)(*args, **kwargs)
        if method in ("friends", "enemies"):
            value = list(value)
        return {"type": "result", "value": remote.encode(value)}
    except Exception as exc:  # noqa: BLE001 - the query's own error goes back to the child
        return {"type": "result", "error": f"{type(exc).__name__}: {exc}"[:500]}


def _legalise(obs: Any, a: Any) -> Any:
    if isinstance(a, remote.PathPlan):
        oa = obs if a.actor == obs.actor else obs.for_actor(a.actor)
        return oa.plan_to(list(a.path), a.then, a.end_status)
    return a


def _decode_action(d: Any, obs: Any, paths: Mapping[int, list]) -> Action:
    def plan_hook(p: dict) -> Action:
        actor = p.get("actor")
        if actor is None:
            raise remote.ProtocolError("Plan needs an actor")
        oa = obs if actor == obs.actor else obs.for_actor(actor)
        if "to" in p:
            plist = paths.get(actor)
            i = p["to"]
            if plist is None or not isinstance(i, int) or not 0 <= i < len(plist):
                raise remote.ProtocolError(f"Plan.to {i!r} is not an index into reachable[{actor}]")
            path = plist[i]
        elif "path" in p:
            path = [remote.decode(x) for x in p["path"]]
        else:
            raise remote.ProtocolError("Plan needs 'to', 'path' or 'steps'")
        return oa.plan_to(list(path), p.get("then"), p.get("end_status"))

    return remote.action_from_json(d, plan_hook)


def _decode_index(index: Any, arrays: Any) -> Action:
    """An ``{"type": "action", "index": k}`` answer: entry ``k`` of the action table (:mod:`agents.encoding`)."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise remote.ProtocolError(f"index {index!r} is not an integer")
    try:
        return arrays.action(index)
    except IndexError as exc:
        raise remote.ProtocolError(str(exc)) from None


# --- the policy -------------------------------------------------------------------------------------------------
class RemotePolicy(Policy):
    """A policy played by an isolated child process.

    Parameters: ``entrant`` -- ``{"name", "policy", "params"}`` for a Python doctrine served by
    :mod:`agents.remote`, or ``{"name", "command": [...]}`` for any program speaking the protocol; ``limits`` --
    a :class:`Limits` mapping.  The child starts at construction (one per battle) and is closed by :meth:`close`
    (or when the policy is garbage-collected)."""

    name = "remote"
    #: Its time limits are the protocol's own: the engine's :class:`agents.side_controller.OverrunGuard` leaves it be.
    isolated = True

    def __init__(self, entrant: Mapping[str, Any] | None = None, limits: Mapping[str, Any] | None = None):
        if not entrant or not (entrant.get("command") or entrant.get("policy")):
            raise TypeError("RemotePolicy needs entrant={'policy': NAME, 'params': {...}} or {'command': [...]}")
        self.entrant = dict(entrant)
        self.limits = Limits(**dict(limits or {}))
        self.params = {"entrant": self.entrant, "limits": self.limits.model_dump()}
        self.label = str(self.entrant.get("name") or self.entrant.get("policy") or self.entrant["command"][0])
        self.child = Child(child_command(self.entrant), self.limits, self.label)
        self._ready: dict | None = None
        self._seq = 0
        self._seeded = False
        self._dead: EntrantFault | None = None
        try:   # finish the sandbox's set-up now, so the entrant starts loading while the other side's does too
            self.child.start(time.monotonic() + self.limits.startup_wall_s)
        except EntrantFault as exc:
            self._dead = exc
            self.child.close()
        self._encoder: Any = None

    def handshake(self) -> dict:
        """Wait for the child's ``ready`` (sent at start-up); raises :class:`EntrantLoadError` if it reports an
        error, or the :class:`Child` faults (again, if it did while starting)."""
        if self._dead is not None:
            raise type(self._dead)(str(self._dead))
        if self._ready is None:
            deadline = time.monotonic() + self.limits.startup_wall_s
            self.child.send({"type": "hello", "protocol": remote.PROTOCOL}, deadline)
            msg = self.child.recv(deadline, "to start")
            if msg.get("type") == "error":
                raise EntrantLoadError(f"{self.label}: {msg.get('message', 'failed to start')}")
            if msg.get("type") != "ready":
                raise EntrantProtocolError(f"{self.label}: expected ready, got {msg.get('type')!r}")
            self._ready = msg
        return self._ready

    @property
    def never_reacts(self) -> bool:  # type: ignore[override]
        """What the child declared in its handshake (``False`` if it failed)."""
        try:
            return bool(self.handshake().get("never_reacts", False))
        except EntrantFault:
            return False

    def decide(self, obs: Any, decision: Any) -> Action:
        """Send the snapshot, answer the child's queries, return its action.  Raises :class:`EntrantFault` (the
        engine records it as a policy fault); after a fault the child is closed and every later call re-raises."""
        if self._dead is not None:
            raise type(self._dead)(str(self._dead))
        try:
            self.handshake()
            snap, paths = snapshot(obs, decision)
            arrays = self._arrays(obs, decision)
            if arrays is not None:
                snap["arrays"] = arrays.to_json()
            self._seq += 1
            msg: dict[str, Any] = {"type": "decide", "seq": self._seq, "obs": snap}
            if not self._seeded:
                msg["rng_seed"] = obs.rng.getrandbits(63)
                self._seeded = True
            deadline = time.monotonic() + self.limits.decision_wall_s
            self.child.send(msg, deadline)
            while True:
                m = self.child.recv(deadline)
                kind = m.get("type")
                if kind == "call":
                    self.child.send(answer_call(obs, m), deadline)
                elif kind == "action":
                    try:
                        if "index" in m and "action" not in m:
                            return _decode_index(m["index"], arrays or self._arrays(obs, decision, True))
                        return _decode_action(m.get("action"), obs, paths)
                    except remote.ProtocolError as exc:
                        raise EntrantProtocolError(f"{self.label}: wrong return: {exc}") from None
                elif kind == "error":
                    text = str(m.get("message", ""))
                    cls = (EntrantMemoryLimit if text.startswith("MemoryError") else
                           EntrantWrongReturn if text.startswith("wrong return") else EntrantError)
                    raise cls(f"{self.label}: {text}"[:600])
                else:
                    raise EntrantProtocolError(f"{self.label}: unexpected message {kind!r}")
        except EntrantFault as exc:
            self._dead = exc
            self.child.close()
            raise

    @property
    def void(self) -> EntrantVoid | None:
        """The :class:`EntrantVoid` that ended this entrant, if one did (the game is then void)."""
        return self._dead if isinstance(self._dead, EntrantVoid) else None

    def close(self) -> dict[str, Any]:
        """End the child and all its processes (idempotent); returns what it used (``Child.close``)."""
        return self.child.close()

    def _arrays(self, obs: Any, decision: Any, force: bool = False) -> Any:
        """The observation arrays (:mod:`agents.encoding`) if the child asked for them in its handshake (or
        ``force``), else ``None``."""
        if not (force or (self._ready or {}).get("arrays")):
            return None
        from agents.encoding import Encoder

        if self._encoder is None:
            self._encoder = Encoder.for_observation(obs)
        return self._encoder.encode(obs, decision)

    def __repr__(self) -> str:
        return f"RemotePolicy({self.label!r})"


def probe(entrant: Mapping[str, Any], limits: Mapping[str, Any] | None = None) -> dict:
    """Start an entrant's process, complete the handshake and close it; returns the ``ready`` message.

    Raises :class:`EntrantFault` (load error, crash, timeout) -- used to report unloadable entrants before a
    tournament starts."""
    pol = RemotePolicy(entrant, limits)
    try:
        return pol.handshake()
    finally:
        pol.close()


def remote_policies(model: Any) -> list[RemotePolicy]:
    """Every :class:`RemotePolicy` of a :class:`~sim.model.BattleModel` (side policies and per-tank ones)."""
    out: list[RemotePolicy] = []
    for ctrl in getattr(model, "controllers", ()):
        for pol in (ctrl.policy, *ctrl.per_tank.values()):
            if isinstance(pol, RemotePolicy) and pol not in out:
                out.append(pol)
    return out


def close_policies(model: Any) -> None:
    """Close every :class:`RemotePolicy` of a finished :class:`~sim.model.BattleModel`."""
    for pol in remote_policies(model):
        pol.close()


def void_reason(model: Any) -> str | None:
    """Why a battle is void (an :class:`EntrantVoid` ended one of its isolated entrants), or ``None``."""
    for pol in remote_policies(model):
        if pol.void is not None:
            return str(pol.void)
    return None
