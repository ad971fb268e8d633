"""A hostile isolated entrant (for tests/test_hostile_entrants.py): it speaks the protocol through
``agents.remote.serve``; on its first decision it attacks, writes what it got on stderr as one line
``HOSTILE {json}``, then plays the ``hold`` doctrine (so a failed attack leaves the game as hold v hold).

``python tests/hostile_entrant.py MODE [ARG...]``, MODE one of

- ``memread PID ADDR N``: read, then overwrite, N bytes at ADDR of process PID (``/proc/PID/mem``,
  ``process_vm_readv``, ``ptrace``), and try the memory of its parent and of every other pid it can see;
- ``signal [PID...]``: SIGKILL the PIDs, every pid from 2 to 65535 and every process it can see, except itself;
- ``forkers N``: start N processes in new sessions (``setsid``, double fork) that sleep for an hour;
- ``hogs N MB``: start N processes in new sessions that each fill MB megabytes, then sleep;
- ``burners N``: start N processes in new sessions that spin, then wait for ever;
- ``snoop PID``: read its environment, the environment and command line of its parent and of PID, its descriptors;
- ``selfkill``: try to die by signals it sends itself (its init, its group, everyone), then ``abort()``;
- ``lowercpu``: lower its own CPU-time limit to 1 s (soft and hard), then spin until the kernel kills it;
- ``victim DIR``: name itself ``victim-waiting`` (``/proc/self/comm``), wait up to 20 s for the file DIR/go, then
  play.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import time

from agents.policies import BUILTIN
from agents.remote import serve


def report(**what: object) -> None:
    print("HOSTILE " + json.dumps(what, sort_keys=True, default=str), file=sys.stderr, flush=True)


def visible_pids() -> list[int]:
    return sorted(int(d) for d in os.listdir("/proc") if d.isdigit())


def memread(pid: int, addr: int, n: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    got, errors = [], {}
    targets = list(dict.fromkeys([pid, os.getppid(), *[p for p in visible_pids() if p != os.getpid()]]))
    for t in targets:
        for mode in ("rb", "r+b"):
            try:
                with open(f"/proc/{t}/mem", mode, buffering=0) as f:
                    f.seek(addr)
                    if mode == "rb":
                        got.append([t, "read", f.read(n).hex()])
                    else:
                        got.append([t, "write", f.write(b"\0" * n)])
            except (OSError, ValueError, OverflowError) as exc:
                errors[f"{t} {mode}"] = type(exc).__name__
    buf = ctypes.create_string_buffer(n)

    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    local, remote = IOVec(ctypes.addressof(buf), n), IOVec(addr, n)
    r = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if r > 0:
        got.append([pid, "process_vm_readv", buf.raw[:r].hex()])
    errors["process_vm_readv"] = os.strerror(ctypes.get_errno())
    if libc.ptrace(16, pid, None, None) == 0:         # PTRACE_ATTACH
        got.append([pid, "ptrace", "attached"])
    errors["ptrace"] = os.strerror(ctypes.get_errno())
    report(got=got, errors=errors, seen=visible_pids())


def kill_everyone(pids: list[int]) -> None:
    me = os.getpid()
    hits = []
    t0 = time.monotonic()
    for p in [*pids, *range(2, 1 << 16), *visible_pids()]:
        if p == me:
            continue
        try:
            os.kill(p, signal.SIGKILL)
            hits.append(p)
        except OSError:
            pass
    try:
        os.kill(-1, signal.SIGKILL)
        hits.append(-1)
    except OSError:
        pass
    report(hits=hits, seen=visible_pids(), me=me, took_s=time.monotonic() - t0)


def spawn(n: int, body) -> int:
    """Start ``n`` grandchildren in new sessions running ``body()``; returns how many forks succeeded."""
    made = 0
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            continue
        if pid == 0:
            os.setsid()
            try:
                if os.fork() == 0:
                    body()
                    os._exit(0)
                os._exit(0)
            except OSError:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        made += os.waitstatus_to_exitcode(status) == 0
    return made


def forkers(n: int) -> None:
    made = spawn(n, lambda: time.sleep(3600))
    report(made=made, seen=len(visible_pids()))


def hogs(n: int, mb: int) -> None:
    r, w = os.pipe()

    def hog() -> None:
        os.close(r)
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")                               # the OOM killer takes a hog before the entrant
        blob = b"\1" * (mb << 20)
        os.write(w, b"1")
        os.close(w)
        time.sleep(3600)
        del blob

    made = spawn(n, hog)
    os.close(w)
    filled, deadline = 0, time.monotonic() + 20
    while time.monotonic() < deadline:
        if not select.select([r], [], [], 0.5)[0]:
            continue
        chunk = os.read(r, 64)
        if not chunk:
            break
        filled += len(chunk)
    report(made=made, filled=filled)


def burners(n: int) -> None:
    def spin() -> None:
        while True:
            pass

    made = spawn(n, spin)
    report(made=made)
    time.sleep(3600)


def snoop(pid: int) -> None:
    out: dict[str, object] = {"environ": dict(os.environ), "uid": os.getuid(), "pid": os.getpid(),
                              "ppid": os.getppid(), "fds": sorted(os.listdir("/proc/self/fd")),
                              "seen": visible_pids()}
    for p in (os.getppid(), pid, 1):
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{p}/{what}", "rb") as f:
                    out[f"{p}/{what}"] = f.read().decode(errors="replace")
            except OSError as exc:
                out[f"{p}/{what}"] = type(exc).__name__
    report(**out)


def selfkill() -> None:
    hits = []
    for target, sig in ((os.getpid(), signal.SIGTERM), (os.getpid(), signal.SIGKILL), (0, signal.SIGKILL),
                        (-1, signal.SIGKILL), (1, signal.SIGTERM)):
        try:
            os.kill(target, sig)
            hits.append([target, sig.name])
        except OSError:
            pass
    time.sleep(0.2)
    report(alive_after=hits)
    os.abort()


def lowercpu() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (1, 1))
    report(lowered=resource.getrlimit(resource.RLIMIT_CPU))
    while True:
        pass


class Hostile:
    """Attack once, then hold."""

    def __init__(self, argv: list[str]):
        self.argv, self.done, self.inner = argv, False, BUILTIN["hold"]()

    def decide(self, obs, decision):
        if not self.done:
            self.done = True
            mode, *args = self.argv
            if mode == "memread":
                memread(int(args[0]), int(args[1]), int(args[2]))
            elif mode == "signal":
                kill_everyone([int(a) for a in args])
            elif mode == "forkers":
                forkers(int(args[0]))
            elif mode == "hogs":
                hogs(int(args[0]), int(args[1]))
            elif mode == "burners":
                burners(int(args[0]))
            elif mode == "snoop":
                snoop(int(args[0]))
            elif mode == "selfkill":
                selfkill()
            elif mode == "lowercpu":
                lowercpu()
            elif mode == "victim":
                with open("/proc/self/comm", "w") as f:
                    f.write("victim-waiting")                # seen from outside: it is in a game now
                deadline = time.monotonic() + 20
                while not os.path.exists(os.path.join(args[0], "go")) and time.monotonic() < deadline:
                    time.sleep(0.02)
        return self.inner.decide(obs, decision)


if __name__ == "__main__":
    sys.exit(serve(Hostile(sys.argv[1:]), name="hostile-" + sys.argv[1]))
