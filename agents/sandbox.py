"""Confinement of isolated entrants: what this machine can guarantee (probed once), and the sandbox each entrant
process runs in.  :mod:`agents.isolation` starts entrants through :class:`Sandbox`; nothing here knows the protocol.

**The sandbox** (``method == "sandbox"``: Linux, running as root, util-linux present).  Each entrant is started as ::

    setpriv --pdeathsig KILL --                       # dies with the thread that started it
      unshare --pid --fork --kill-child --mount --mount-proc --ipc --net --uts --
        /bin/sh -c SETUP_SH ...                       # root, pid 1 of the new namespaces: joins the cgroup,
                                                      # makes the mounts read-only, private /tmp, exposes paths
          prlimit --cpu --as --nproc --core --        # per-process limits
            setpriv --reuid U --regid U --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all
                    --pdeathsig KILL --
              COMMAND                                 # the entrant: still pid 1 of its pid namespace

The set-up writes a ready line and waits for ``go``; in between the engine stops unshare (``SIGSTOP``, see
:meth:`Sandbox.hold`), so that when the entrant ends it stays a zombie until the engine has read its exact wait
status, its own CPU time and its own CPU limit from ``/proc``; then unshare is let go and reaps it.  So the entrant

- runs under its own uid ``U`` (:data:`UID_BASE` + a slot per worker process; never root), with no capabilities
  and ``no_new_privs`` (setuid programs gain nothing); ``RLIMIT_NPROC`` counts all processes of ``U``, i.e. all of
  the entrant's processes together;
- is pid 1 of its own pid namespace: it sees (``/proc`` is private) and can signal only its own descendants, it
  cannot name the worker or the other entrant, let alone read their memory (``/proc/PID/mem``, ``ptrace``,
  ``process_vm_readv`` need a pid it can name and a uid it shares).  Being a namespace's init it cannot be killed
  by a signal sent from inside (the kernel drops them), so a death by signal is a synchronous fault of its own
  (``SIGSEGV``, ``SIGBUS``, ``SIGILL``, ``SIGFPE``, ``SIGTRAP``, ``SIGSYS``; ``abort`` ends in one of these), a
  limit (``SIGKILL`` by the CPU limit or the memory cgroup's OOM killer; a CPU limit it lowered itself is told
  apart), the engine, or someone outside; likewise only someone outside can stop it (``SIGSTOP``);
- sees the host's file system read-only (every mount remounted read-only in its mount namespace), with private,
  size-limited tmpfs on ``/tmp``, ``/var/tmp``, ``/run/lock`` and ``/dev/shm``; paths it needs (the interpreter,
  the project, its own program's folder) are exposed read-only even below folders that others cannot enter
  (``/root``): such a folder is replaced by an empty tmpfs holding only the exposed paths (:func:`exposure`);
- has no network (an empty net namespace: loopback down), its own System V IPC and hostname;
- is in its own cgroup (v1 ``memory``, ``cpuacct``, ``pids``) when the worker may create child cgroups: the memory
  limit (``memory.limit_in_bytes``), the process count (``pids.max``) and the CPU seconds (``cpuacct.usage``,
  polled every :data:`CPU_POLL_S` s by a watcher thread that kills the sandbox past the limit) bind all of its
  processes together;
- and, when the game ends (or the worker or its thread dies), is killed as a whole: killing a pid namespace's init
  makes the kernel kill every process in it, ``setsid`` or not.

The environment is the one the caller passes (:mod:`agents.isolation` builds a minimal one); no descriptors but
stdin, stdout and stderr are inherited (``close_fds``).

**Without the sandbox** (not Linux, not root, a tool missing, or namespaces refused: ``method == "none"``) the
entrant is a plain subprocess in its own session with per-process ``RLIMIT_CPU``/``RLIMIT_AS``/``RLIMIT_NPROC``;
:func:`confinement` says why, :meth:`Confinement.not_guaranteed` lists what is lost, :func:`warn_if_unconfined`
warns at start-up and the tournament manifest records it.  ``TANKSIM_SANDBOX=off`` in the environment forces this
mode (for machines where the probe's start-up cost or root use is unwanted).
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: First of the per-entrant uids (root only): uid = UID_BASE + (worker pid mod 2**22) * UID_SLOTS + slot.
UID_BASE = 1_500_000_000
#: Entrants one worker process may run at the same time.
UID_SLOTS = 64
#: World-writable folders replaced by a private tmpfs inside the sandbox (``/dev/shm`` too).
SCRATCH = ("/tmp", "/var/tmp", "/run/lock")
#: Most set-up steps :func:`exposure` may emit for one entrant.
MAX_EXPOSE_STEPS = 256
#: Seconds between two CPU-time checks of a running sandbox.
CPU_POLL_S = 0.1
#: Signals a process gets from the kernel for a fault of its own (never from another process: a pid namespace's
#: init ignores those when they are sent).
OWN_FAULT_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP,
                               signal.SIGSYS, signal.SIGABRT})
#: The line the sandbox set-up writes on the entrant's stdout just before it runs the entrant.
READY_LINE = b'{"type":"sandbox","ready":true}'
TOOLS = ("setpriv", "unshare", "prlimit", "mount", "umount", "findmnt", "bash", "env")
#: What util-linux 2.38's unshare prints (and exits 1) when its child was killed by SIGKILL (it cannot re-raise
#: SIGKILL on itself); later versions die by the same signal.
UNSHARE_SIGKILL = b"sigprocmask unblock failed"

#: The set-up script (bash): runs as root, as pid 1 of the new namespaces, then execs the entrant (which keeps
#: pid 1).  Arguments: ERR_FD CGROUP_PROCS_FILE... -- STEP... -- COMMAND...  The set-up's own messages (and
#: unshare's) go to the monitor log on stderr, which the entrant never holds: its stderr is ERR_FD.  A STEP is
#: ``scratch DIR SIZE`` (a private tmpfs), ``mask DIR`` (an empty tmpfs over a folder others cannot enter),
#: ``dir PATH`` / ``file PATH`` (bind the host's PATH read-only at the same place, making the folders above it in
#: a tmpfs).  Host paths are read from a recursive bind of / made after everything was remounted read-only, so
#: every bind is read-only too, and mkdir can only ever write inside the tmpfs made here.
SETUP_SH = r"""
set -eu
err=$1; shift
while [ "$1" != "--" ]; do echo $$ > "$1"; shift; done; shift
findmnt -rn -o TARGET | while IFS= read -r m; do
  case "$m" in /proc|/proc/*|*\\*) continue;; esac
  mount -o remount,bind,ro "$m"
done
mount -t tmpfs -o mode=0700,size=4m tanksim-stage /dev/shm
mkdir /dev/shm/host
mount --rbind / /dev/shm/host
while [ "$1" != "--" ]; do
  case "$1" in
    scratch) mount -t tmpfs -o "mode=1777,nosuid,nodev,size=$3" tanksim-scratch "$2"; shift 3;;
    mask) mount -t tmpfs -o mode=0755,size=1m tanksim-mask "$2"; shift 2;;
    dir) mkdir -p "$2"; mount --rbind "/dev/shm/host$2" "$2"; shift 2;;
    file) mkdir -p "${2%/*}"; : > "$2"; mount --bind "/dev/shm/host$2" "$2"; shift 2;;
    *) echo "tanksim-sandbox: unknown step $1" >&2; exit 97;;
  esac
done; shift
umount -R /dev/shm/host
umount /dev/shm
mount -t tmpfs -o "mode=1777,nosuid,nodev,size=$TANKSIM_SHM" tanksim-scratch /dev/shm
printf '%s\n' '{"type":"sandbox","ready":true}'
IFS= read -r go
[ "$go" = go ]
exec 2>&"$err"
exec {err}>&-
exec "$@"
"""


class ConfinementWarning(UserWarning):
    """Isolated entrants run with weaker confinement than the sandbox (the message says what is missing)."""


class SandboxError(RuntimeError):
    """The sandbox could not be built for an entrant (a path cannot be exposed, no uid slot left, set-up failed)."""


# --- what this machine offers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Confinement:
    """How isolated entrants are confined on this machine: ``method`` ``"sandbox"`` (see the module docstring) or
    ``"none"`` (a plain subprocess with per-process limits); ``cgroup`` ``"v1"`` when the sandbox's limits bind
    all of an entrant's processes together, else ``None``; ``reason``: why something is missing (``""`` if
    nothing is); ``tools``: the programs used, by name."""

    method: str
    cgroup: str | None = None
    reason: str = ""
    tools: Mapping[str, str] = field(default_factory=dict)

    def guarantees(self) -> list[str]:
        """What holds for every isolated entrant, one sentence each."""
        if self.method != "sandbox":
            return ["own process and session, minimal environment, no inherited descriptors but its pipes",
                    "per-process limits: RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC (per uid), no core files",
                    "its session is killed when the game ends"]
        out = [f"own unprivileged uid per entrant (from {UID_BASE}), no capabilities, no_new_privs",
               "own pid namespace (pid 1): sees and signals only its own descendants; no view of other entrants or "
               "the worker, so it cannot read or write their memory",
               "own mount namespace: private /proc, host file system read-only, private tmpfs /tmp, /var/tmp, "
               "/run/lock, /dev/shm",
               "own net (no network), ipc and uts namespaces",
               "minimal environment; no inherited descriptors but stdin, stdout, stderr",
               "every process of the entrant is killed when the game ends (its pid namespace is killed)"]
        if self.cgroup:
            out.append(f"cgroup {self.cgroup}: memory, process count and CPU seconds bind all its processes together "
                       f"(CPU checked every {CPU_POLL_S:g} s); RLIMIT_NPROC counts all its processes (own uid)")
        else:
            out.append("RLIMIT_NPROC counts all its processes (own uid)")
        return out

    def not_guaranteed(self) -> list[str]:
        """What is not guaranteed on this machine, one sentence each."""
        if self.method != "sandbox":
            return [f"no sandbox ({self.reason}): the entrant runs under the worker's uid and can read and write "
                    "what the worker can (files, other processes' memory through /proc/PID/mem or ptrace), signal "
                    "the worker and the other entrant, and read their environment and command line",
                    "processes it starts in a new session (setsid) may outlive the game",
                    "memory, CPU and process limits bind each process, not all of its processes together",
                    "a death by signal cannot be told apart from one it sent itself"]
        out = ["files readable by every user stay readable (the file system is read-only, not hidden)",
               "timing and other side channels (shared CPU caches, /sys) are not closed"]
        if not self.cgroup:
            out.insert(0, f"no cgroup ({self.reason}): memory and CPU limits bind each process (RLIMIT_AS, "
                          "RLIMIT_CPU), so its processes together may use up to the process limit times each")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The record kept in a tournament's manifest."""
        return {"method": self.method, "cgroup": self.cgroup, "reason": self.reason, "platform": sys.platform,
                "root": hasattr(os, "geteuid") and os.geteuid() == 0, "guarantees": self.guarantees(),
                "not_guaranteed": self.not_guaranteed()}

    def warnings(self) -> list[str]:
        """The start-up warning, if any (none when the sandbox with cgroups is in force)."""
        if self.method == "sandbox" and self.cgroup:
            return []
        lost = self.not_guaranteed()
        return ["isolated entrants are not fully confined on this machine: "
                + "; ".join(lost if self.method != "sandbox" else lost[:1])]


@functools.lru_cache(maxsize=1)
def confinement() -> Confinement:
    """Probe (once per process) what confinement this machine gives isolated entrants: the tools, root, child
    cgroups, and one real sandboxed start of ``/bin/true``.  Never raises."""
    if os.environ.get("TANKSIM_SANDBOX", "").lower() in ("off", "0", "no", "none"):
        return Confinement("none", reason="TANKSIM_SANDBOX=off")
    if not sys.platform.startswith("linux"):
        return Confinement("none", reason=f"not Linux ({sys.platform})")
    found = {t: shutil.which(t, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin") for t in TOOLS}
    missing = [t for t, p in found.items() if not p]
    if missing:
        return Confinement("none", reason=f"tools not found: {', '.join(missing)} (util-linux, bash)")
    tools = {t: str(p) for t, p in found.items()}
    if os.geteuid() != 0:
        return Confinement("none", reason="not running as root (the sandbox gives each entrant its own uid and "
                                          "namespaces, which needs root)", tools=tools)
    cg_reason = ""
    try:
        Cgroup.create(64, 8).remove()
        cg: str | None = "v1"
    except (OSError, SandboxError) as exc:
        cg, cg_reason = None, f"cannot create child cgroups: {exc}"
    pre = Confinement("sandbox", cg, cg_reason, tools)
    try:
        with tempfile.TemporaryFile() as err:
            sb = Sandbox(["/bin/true"], cpu_s=5, memory_mb=64, processes=8, env={"PATH": "/usr/bin:/bin"},
                         stderr=err, conf=pre)
            try:
                out, _ = sb.proc.communicate(input=b"go\n", timeout=20)
            finally:
                sb.close()
        if sb.proc.returncode != 0 or not out.startswith(READY_LINE):
            tail = sb.monitor_log().strip()[-300:]
            return Confinement("none", reason=f"the sandbox does not start here (exit {sb.proc.returncode}: "
                                              f"{tail or 'no message'})", tools=tools)
    except (OSError, SandboxError, subprocess.TimeoutExpired) as exc:
        return Confinement("none", reason=f"the sandbox does not start here: {exc}", tools=tools)
    return pre


def warn_if_unconfined() -> Confinement:
    """Warn (:class:`ConfinementWarning`) about every guarantee isolated entrants lack here; returns
    :func:`confinement`."""
    c = confinement()
    for w in c.warnings():
        warnings.warn(w, ConfinementWarning, stacklevel=2)
    return c


# --- cgroups (v1) -----------------------------------------------------------------------------------------------
CONTROLLERS = ("memory", "cpuacct", "pids")


@functools.lru_cache(maxsize=1)
def _cgroup_parents() -> dict[str, str]:
    """The folder of this process's own cgroup for each v1 controller of :data:`CONTROLLERS` that it may create
    children in.  Raises :class:`SandboxError` if memory or cpuacct is missing or not writable."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(","):
                own[c] = path
    found: dict[str, str] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, _, right = line.rstrip("\n").partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(rfields) < 3 or rfields[0] != "cgroup":
                continue
            root, mnt = fields[3], fields[4]
            for c in set(rfields[2].split(",")) & set(CONTROLLERS):
                own_path = own.get(c)
                if own_path is None or c in found:
                    continue
                rel = own_path[len(root):] if root != "/" and own_path.startswith(root) else own_path
                d = os.path.normpath(mnt + "/" + rel.lstrip("/"))
                if os.path.isdir(d) and os.access(d, os.W_OK):
                    found[c] = d
    need = [c for c in ("memory", "cpuacct") if c not in found]
    if need:
        raise SandboxError(f"no writable cgroup v1 {' or '.join(need)} controller for this process")
    return found


class Cgroup:
    """One entrant's cgroup: a folder ``tanksim-PID-N`` under this process's own cgroup in each v1 controller
    (``memory``: limit, peak, OOM kills; ``cpuacct``: CPU seconds; ``pids``: count limit and peak, if mounted)."""

    _seq = 0
    _lock = threading.Lock()
    _swept = False

    def __init__(self, dirs: Mapping[str, str]):
        self.dirs = dict(dirs)

    @classmethod
    def create(cls, memory_mb: int, processes: int) -> Cgroup:
        """A new cgroup limited to ``memory_mb`` MB (memory and swap) and ``processes`` tasks.  Raises
        :class:`SandboxError` (or ``OSError``) when cgroups cannot be used."""
        parents = _cgroup_parents()
        with cls._lock:
            if not cls._swept:
                cls._swept = True
                _sweep_stale(parents)
            cls._seq += 1
            name = f"tanksim-{os.getpid()}-{cls._seq}"
        dirs = {}
        try:
            for c, p in parents.items():
                d = os.path.join(p, name)
                os.mkdir(d)
                dirs[c] = d
            mem = str(int(memory_mb) * 1024 * 1024)
            _write(dirs["memory"], "memory.limit_in_bytes", mem)
            if os.path.exists(os.path.join(dirs["memory"], "memory.memsw.limit_in_bytes")):
                _write(dirs["memory"], "memory.memsw.limit_in_bytes", mem)
            if "pids" in dirs:
                _write(dirs["pids"], "pids.max", str(int(processes)))
        except OSError:
            Cgroup(dirs).remove()
            raise
        return cls(dirs)

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` file of every controller (a process joins by writing its pid to each)."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def cpu_s(self) -> float:
        """CPU seconds used by all processes that were ever in the group."""
        return int(_read(self.dirs["cpuacct"], "cpuacct.usage") or 0) / 1e9

    def memory_peak_mb(self) -> float:
        """Peak memory charged to the group (MB)."""
        return int(_read(self.dirs["memory"], "memory.max_usage_in_bytes") or 0) / 2 ** 20

    def oom_kills(self) -> int:
        """Processes of the group killed by the memory limit's OOM killer."""
        for line in _read(self.dirs["memory"], "memory.oom_control").splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def pids_peak(self) -> int | None:
        """Most tasks (processes and threads) the group held at once, if the kernel keeps it."""
        v = _read(self.dirs["pids"], "pids.peak") if "pids" in self.dirs else ""
        return int(v) if v.strip().isdigit() else None

    def pids(self) -> list[int]:
        """Host pids of the processes in the group now."""
        out: set[int] = set()
        for d in self.dirs.values():
            out.update(int(x) for x in _read(d, "cgroup.procs").split())
        return sorted(out)

    def remove(self) -> None:
        """Kill whatever is left in the group and remove its folders (retried for up to 2 s).  Idempotent."""
        deadline = time.monotonic() + 2.0
        while self.dirs:
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for c, d in list(self.dirs.items()):
                try:
                    os.rmdir(d)
                    del self.dirs[c]
                except FileNotFoundError:
                    del self.dirs[c]
                except OSError:
                    pass
            if self.dirs and time.monotonic() > deadline:
                return
            if self.dirs:
                time.sleep(0.02)


def _write(d: str, name: str, value: str) -> None:
    with open(os.path.join(d, name), "w", encoding="ascii") as f:
        f.write(value)


def _read(d: str, name: str) -> str:
    try:
        with open(os.path.join(d, name), encoding="ascii") as f:
            return f.read()
    except OSError:
        return ""


def _sweep_stale(parents: Mapping[str, str]) -> None:
    """Remove cgroups left by tanksim processes that no longer exist (a killed worker)."""
    for p in parents.values():
        try:
            names = os.listdir(p)
        except OSError:
            continue
        for n in names:
            parts = n.split("-")
            if len(parts) != 3 or parts[0] != "tanksim" or not parts[1].isdigit():
                continue
            pid = int(parts[1])
            try:
                os.kill(pid, 0)
                continue                                    # its owner is alive
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            Cgroup({"x": os.path.join(p, n)}).remove()


# --- uids -------------------------------------------------------------------------------------------------------
class _Uids:
    """Per-entrant uids of this process: :data:`UID_SLOTS` slots after ``UID_BASE + (pid mod 2**22) * slots``,
    unique among the entrants that run at the same time on this machine."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.used: set[int] = set()

    def allocate(self) -> int:
        base = UID_BASE + (os.getpid() % 2 ** 22) * UID_SLOTS
        with self.lock:
            for slot in range(UID_SLOTS):
                if base + slot not in self.used:
                    self.used.add(base + slot)
                    return base + slot
        raise SandboxError(f"more than {UID_SLOTS} isolated entrants at once in one process")

    def release(self, uid: int) -> None:
        with self.lock:
            self.used.discard(uid)


_UIDS = _Uids()


# --- exposing paths ---------------------------------------------------------------------------------------------
def exposure(paths: Iterable[str], scratch: Sequence[str] = SCRATCH) -> list[str]:
    """The set-up steps (``mask DIR``, ``dir PATH``, ``file PATH``; see :data:`SETUP_SH`) that let an unprivileged
    uid reach each of ``paths`` (absolute, resolved) read-only inside the sandbox.

    A path whose folders all let others in needs nothing; a path below a folder others cannot enter (``/root``,
    mode 0700) gets that folder replaced by an empty tmpfs that holds only the exposed path, bound from the host; a
    path below a ``scratch`` folder (a private tmpfs in the sandbox) is bound into it; an exposed folder that
    others cannot enter itself has its readable entries exposed one by one (two levels deep).  Raises
    :class:`SandboxError` past :data:`MAX_EXPOSE_STEPS` steps."""
    mounts: dict[str, str] = {s: "tmpfs" for s in scratch}   # path in the sandbox -> "tmpfs" | "host"
    steps: list[str] = []

    def add(*step: str) -> None:
        if len(steps) > MAX_EXPOSE_STEPS:
            raise SandboxError(f"too many paths to expose in the sandbox (over {MAX_EXPOSE_STEPS} steps)")
        steps.extend(step)

    def backing(p: str) -> str:
        best, kind = "", "host"
        for m, k in mounts.items():
            if (p == m or p.startswith(m + "/")) and len(m) > len(best):
                best, kind = m, k
        return kind

    def expose(p: str, depth: int) -> None:
        parts = [x for x in p.split("/") if x]
        cur = ""
        for i, name in enumerate(parts):
            cur += "/" + name
            last = i == len(parts) - 1
            try:
                st = os.stat(cur)
            except OSError:
                return
            is_dir = stat.S_ISDIR(st.st_mode)
            kind = backing(cur)
            if kind == "tmpfs" and cur not in mounts:
                if not last and is_dir:
                    continue                              # made by mkdir -p in the tmpfs (root, 0755)
                if is_dir and st.st_mode & 0o005 == 0o005:
                    add("dir", cur)
                    mounts[cur] = "host"
                elif is_dir:
                    mounts[cur] = "tmpfs"                 # made by the entries' mkdir -p
                    entries(cur, depth)
                elif st.st_mode & 0o004:
                    add("file", cur)
                    mounts[cur] = "host"
                return
            if kind == "tmpfs":                           # a scratch or mask tmpfs itself: enterable
                continue
            if is_dir and not st.st_mode & 0o001:         # a host folder others cannot enter
                add("mask", cur)
                mounts[cur] = "tmpfs"
                if last:
                    entries(cur, depth)
                continue
            if last:
                return                                    # reachable as it is (the file's own mode decides)

    def entries(d: str, depth: int) -> None:
        if depth >= 2:
            return
        try:
            names = sorted(os.listdir(d))[:64]
        except OSError:
            return
        for n in names:
            q = os.path.join(d, n)
            if not os.path.islink(q):                     # a link's target is exposed only if named itself
                expose(q, depth + 1)

    for p in sorted({os.path.normpath(x) for x in paths if x and os.path.isabs(x)},
                    key=lambda x: (x.count("/"), x)):
        expose(p, 0)
    return steps


def needed_paths(command: Sequence[str], extra: Iterable[str] = (), path_env: str | None = None) -> list[str]:
    """The paths an entrant ``command`` must reach: its program's installation (the folder above ``bin/``, or the
    program's folder), the folder of every absolute path among its arguments, and ``extra`` (for Python: the
    interpreter's prefixes and ``PYTHONPATH``)."""
    out: list[str] = []
    prog = shutil.which(command[0], path=path_env) if command else None
    if prog:
        for p in {os.path.abspath(prog), os.path.realpath(prog)}:
            d = os.path.dirname(p)
            out.append(os.path.dirname(d) if os.path.basename(d) == "bin" else d)
    for a in command[1:]:
        if os.path.isabs(a) and os.path.exists(a):
            for p in {os.path.abspath(a), os.path.realpath(a)}:
                out.append(p if os.path.isdir(p) else os.path.dirname(p))
    out += [os.path.realpath(x) for x in extra if x]
    return list(dict.fromkeys(os.path.realpath(p) for p in out))


# --- one sandboxed process --------------------------------------------------------------------------------------
class Sandbox:
    """One entrant process, confined as :func:`confinement` allows (module docstring).

    ``command`` runs with exactly ``env`` (plus ``HOME``/``TMPDIR`` in the sandbox, set by ``env -i``), stdin and
    stdout pipes (``proc.stdin``/``proc.stdout``), ``stderr`` (an open file; the sandbox's own messages go to a
    separate monitor log, :meth:`monitor_log`), and limits: ``cpu_s`` CPU seconds (all its processes together
    with a cgroup, else per process), ``memory_mb`` (the cgroup's memory limit and
    each process's address space), ``processes`` (``RLIMIT_NPROC`` of its own uid and ``pids.max``).  In the
    sandbox the first line on stdout is :data:`READY_LINE` (the set-up finished; without it the set-up failed).
    ``expose``: more paths it must reach (:func:`needed_paths`).  Raises :class:`SandboxError` or ``OSError``."""

    def __init__(self, command: Sequence[str], *, cpu_s: float, memory_mb: int, processes: int,
                 env: Mapping[str, str], stderr: Any = None, expose: Iterable[str] = (),
                 conf: Confinement | None = None):
        self.conf = conf or confinement()
        self.command = [str(x) for x in command]
        self.cpu_limit = float(cpu_s)
        self.memory_mb = int(memory_mb)
        self.processes = int(processes)
        self.uid: int | None = None
        self.cgroup: Cgroup | None = None
        self.killed: str | None = None      # why the engine killed it ("cpu", "timeout", "close", ...)
        self._init: int | None = None
        self._closed = False
        self._held = False
        self._usage: dict[str, Any] = {}    # what it used, as :meth:`close` measured it
        self._lock = threading.RLock()
        self._monitor: Any = None
        #: the entrant's end once :meth:`ended`: ``code`` / ``signal`` (one is None), with :meth:`hold` also its own
        #: ``cpu_s`` and hard ``cpu_rlimit`` (seconds)
        self.end: dict[str, Any] | None = None
        #: the hard RLIMIT_CPU the entrant starts with (seconds)
        self.cpu_rlimit = max(1, int(-(-float(cpu_s) // 1))) + 2
        env = dict(env)
        if not self.command or shutil.which(self.command[0], path=env.get("PATH", os.defpath)) is None:
            raise FileNotFoundError(f"no such program: {self.command[0] if self.command else '(empty command)'}")
        cpu = max(1, int(-(-self.cpu_limit // 1)))
        mem = self.memory_mb * 1024 * 1024
        try:
            if self.conf.method == "sandbox":
                self.uid = _UIDS.allocate()
                if self.conf.cgroup:
                    self.cgroup = Cgroup.create(self.memory_mb, self.processes)
                t = self.conf.tools
                steps: list[str] = []
                for s in SCRATCH:
                    if os.path.isdir(s):
                        steps += ["scratch", s, f"{self.memory_mb}m"]
                steps += exposure(needed_paths(self.command, expose, env.get("PATH")),
                                  [s for s in SCRATCH if os.path.isdir(s)])
                env.update(HOME="/tmp", TMPDIR="/tmp")
                setup_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "TANKSIM_SHM": f"{self.memory_mb}m"}
                self._monitor = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
                err_fd = stderr.fileno()
                argv = [t["setpriv"], "--pdeathsig", "KILL", "--",
                        t["unshare"], "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--ipc", "--net",
                        "--uts", "--", t["bash"], "-c", SETUP_SH, "tanksim-sandbox", str(err_fd),
                        *(self.cgroup.procs_files() if self.cgroup else []), "--", *steps, "--",
                        t["env"], "-i", *(f"{k}={v}" for k, v in env.items()),
                        t["prlimit"], f"--cpu={cpu + 1}:{cpu + 2}", f"--as={mem}:{mem}",
                        f"--nproc={self.processes}:{self.processes}", "--core=0:0", "--",
                        t["setpriv"], f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                        "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--pdeathsig", "KILL", "--",
                        *self.command]
                self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=self._monitor, pass_fds=(err_fd,), cwd="/", env=setup_env,
                                             close_fds=True, start_new_session=True)
            else:
                self.proc = subprocess.Popen(  # noqa: PLW1509 - runs only setrlimit between fork and exec
                    self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd="/", env=env,
                    close_fds=True, start_new_session=True,
                    preexec_fn=_rlimits(cpu, mem, self.processes) if os.name == "posix" else None)
        except BaseException:
            self._release()
            if self._monitor is not None:
                self._monitor.close()
            raise
        self._finalizer = weakref.finalize(self, _finalize, self.proc, self.cgroup, self.uid)
        _WATCH.add(self)

    @property
    def sandboxed(self) -> bool:
        """True when the process runs in the sandbox (its first stdout line is :data:`READY_LINE`)."""
        return self.conf.method == "sandbox"

    def monitor_log(self) -> str:
        """What the sandbox's set-up and unshare wrote (never the entrant: it does not hold this file)."""
        if self._monitor is None or self._monitor.closed:
            return getattr(self, "_monitor_text", "")
        try:
            self._monitor.seek(0)
            return self._monitor.read(65536).decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def hold(self) -> None:
        """Stop unshare (``SIGSTOP``) once the set-up wrote its ready line, before the caller sends ``go``: the
        entrant's end then stays a zombie until :meth:`ended` has read its exact wait status, its own CPU time
        and its own CPU limit from ``/proc`` (unshare's own report cannot tell ``SIGKILL`` from an exit code, and
        nothing else tells a kill by a CPU limit the entrant lowered itself from one from outside).  Raises
        :class:`SandboxError` if the sandbox has no init."""
        if not self.sandboxed or self._held:
            return
        init = self.init_pid()
        if init is None:
            raise SandboxError("the sandbox has no entrant process")
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 2
        while _proc_state(self.proc.pid) not in ("T", "t", None) and time.monotonic() < deadline:
            time.sleep(0.001)
        self._held = True

    def ended(self) -> bool:
        """Whether the entrant has ended (its end is then in :attr:`end`); reaps it when held."""
        with self._lock:
            return self._ended()

    def _ended(self) -> bool:
        if self.end is not None:
            return True
        if not self._held:
            if self.proc.poll() is None:
                return False
            self.end = self._unshare_end()
            return True
        init = self._init
        st = _proc_stat(init) if init is not None else None
        if st is not None and st[0] not in ("Z", "X"):
            return False
        end: dict[str, Any] = {}
        if init is not None and st is not None:
            status = int(st[-1])
            end = {"code": (status >> 8) & 0xFF if status & 0x7F == 0 else None,
                   "signal": status & 0x7F or None, "cpu_s": (int(st[11]) + int(st[12])) / _CLK_TCK}
            end["cpu_rlimit"] = _cpu_rlimit(init)
        self._release_hold()
        self.end = end if end else self._unshare_end()
        return True

    def stopped_from_outside(self) -> bool:
        """Whether the entrant is stopped by a signal (state ``T``): a pid namespace's init cannot be stopped from
        inside it, so someone outside did."""
        return self.sandboxed and self._init is not None and _proc_state(self._init) == "T"

    def _release_hold(self) -> None:
        if self._held:
            self._held = False
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def _unshare_end(self) -> dict[str, Any]:
        """The entrant's end as unshare reported it (before :meth:`hold`, or without the sandbox): it dies by the
        same signal, or (util-linux 2.38, for ``SIGKILL``) exits 1 with :data:`UNSHARE_SIGKILL` in the monitor
        log."""
        rc = self.proc.returncode
        if rc is None:
            return {}
        if rc < 0:
            return {"code": None, "signal": -rc}
        if self.sandboxed and rc == 1 and UNSHARE_SIGKILL.decode() in self.monitor_log():
            return {"code": None, "signal": int(signal.SIGKILL)}
        return {"code": rc, "signal": None}

    def exit_status(self) -> tuple[int | None, int | None]:
        """``(exit code, signal)`` of the entrant itself once it ended (one of the two is ``None``), else
        ``(None, None)``."""
        if not self.ended() or self.end is None:  # ended() sets end
            return None, None
        return self.end.get("code"), self.end.get("signal")

    def init_pid(self) -> int | None:
        """The host pid of the entrant itself (the sandbox's pid 1; the process itself without the sandbox), or
        ``None`` before it exists or after it ended."""
        if not self.sandboxed:
            return self.proc.pid if self.proc.poll() is None else None
        if self._init is None and self.proc.poll() is None:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children", encoding="ascii") as f:
                    kids = f.read().split()
                self._init = int(kids[0]) if kids else None
            except OSError:
                return None
        return self._init

    def cpu_used(self) -> float | None:
        """CPU seconds used so far: by all its processes (cgroup), else by the entrant's own process; ``None`` if
        unknown."""
        if self.cgroup is not None:
            return self.cgroup.cpu_s()
        pid = self.init_pid()
        st = _proc_stat(pid) if pid is not None else None
        return (int(st[11]) + int(st[12])) / _CLK_TCK if st is not None else None

    def kill(self, why: str) -> None:
        """Kill the entrant and every process it started (the whole pid namespace; without the sandbox, its
        session), then reap it.  ``why`` is kept in :attr:`killed` (the first reason wins)."""
        with self._lock:
            self._kill(why)

    def _kill(self, why: str) -> None:
        if self.killed is None:
            self.killed = why
        if self._held:
            if not self.ended():
                init = self._init
                assert init is not None  # hold() found it: a held sandbox knows its entrant's pid
                try:
                    os.kill(init, signal.SIGKILL)  # the kernel kills the whole namespace with its init
                except ProcessLookupError:
                    pass
                deadline = time.monotonic() + 5
                while not self.ended() and time.monotonic() < deadline:
                    time.sleep(0.002)
            self._release_hold()
        elif self.proc.poll() is None:
            target = self.init_pid() if self.sandboxed else None
            try:
                if target is not None:
                    os.kill(target, signal.SIGKILL)
                elif self.sandboxed:
                    os.kill(self.proc.pid, signal.SIGKILL)  # not forked yet: --kill-child takes the child along
                else:
                    os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.cgroup is not None:
            for pid in self.cgroup.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def usage(self) -> dict[str, Any]:
        """What the entrant used, measured from outside: ``cpu_s``, ``memory_peak_mb``, ``oom_kills``,
        ``tasks_peak`` (``None`` where unknown)."""
        if self.cgroup is None or not self.cgroup.dirs:
            return {"cpu_s": self.cpu_used(), "memory_peak_mb": None, "oom_kills": None, "tasks_peak": None}
        return {"cpu_s": self.cgroup.cpu_s(), "memory_peak_mb": self.cgroup.memory_peak_mb(),
                "oom_kills": self.cgroup.oom_kills(), "tasks_peak": self.cgroup.pids_peak()}

    def close(self) -> dict[str, Any]:
        """Kill it (if still running), remove its cgroup and free its uid; returns :meth:`usage` as it was at the
        end.  Idempotent."""
        if self._closed:
            return self._usage
        self.kill("close")
        self._usage = self.usage()
        self._monitor_text = self.monitor_log()
        self._closed = True
        _WATCH.discard(self)
        self._finalizer()
        self._release()
        if self._monitor is not None:
            self._monitor.close()
        return self._usage

    def _release(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.uid is not None:
            _UIDS.release(self.uid)


def _rlimits(cpu: int, mem: int, processes: int) -> Any:
    """Per-process limits without the sandbox.  ``RLIMIT_NPROC`` counts every process of the worker's own uid (and
    does not bind root at all), so it is set to the uid's current count plus ``processes``."""
    nproc = None
    if hasattr(os, "getuid") and os.getuid() != 0 and os.path.isdir("/proc"):
        nproc = len(processes_of_uid(os.getuid())) + processes

    def apply() -> None:  # between fork and exec
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    return apply


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return None


def _cpu_rlimit(pid: int) -> int | None:
    """The hard ``RLIMIT_CPU`` of a process (a zombie too), from ``/proc/PID/limits`` (readable by all, where
    ``prlimit`` would need ``CAP_SYS_RESOURCE``); ``None`` if unlimited or unknown."""
    try:
        with open(f"/proc/{pid}/limits", encoding="ascii") as f:
            for line in f:
                if line.startswith("Max cpu time"):
                    hard = line[len("Max cpu time"):].split()[1]
                    return int(hard) if hard.isdigit() else None
    except (OSError, IndexError):
        pass
    return None


def _proc_state(pid: int) -> str | None:
    st = _proc_stat(pid)
    return st[0] if st else None


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _finalize(proc: subprocess.Popen, cgroup: Cgroup | None, uid: int | None) -> None:
    if proc.poll() is None:
        try:
            kids = open(f"/proc/{proc.pid}/task/{proc.pid}/children", encoding="ascii").read().split()  # noqa: SIM115
            os.kill(int(kids[0]) if kids else proc.pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL), lambda: os.kill(proc.pid, signal.SIGKILL)):
            try:
                kill()                      # SIGKILL also ends a held (stopped) unshare
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
    if cgroup is not None:
        cgroup.remove()
    if uid is not None:
        _UIDS.release(uid)


class _Watch:
    """One daemon thread per process that kills any sandbox past its CPU seconds (:data:`CPU_POLL_S`)."""

    def __init__(self) -> None:
        self.live: weakref.WeakSet[Sandbox] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, sb: Sandbox) -> None:
        with self.lock:
            self.live.add(sb)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run, name="tanksim-sandbox-cpu", daemon=True)
                self.thread.start()

    def discard(self, sb: Sandbox) -> None:
        with self.lock:
            self.live.discard(sb)

    def run(self) -> None:
        while True:
            time.sleep(CPU_POLL_S)
            with self.lock:
                live = list(self.live)
            for sb in live:
                if sb.killed is None and sb.end is None and (sb._held or sb.proc.poll() is None):
                    used = sb.cpu_used()
                    if used is not None and used > sb.cpu_limit:
                        sb.kill("cpu")
            del live


_WATCH = _Watch()


@atexit.register
def _close_all() -> None:
    for sb in list(_WATCH.live):
        try:
            sb.close()
        except Exception:  # noqa: BLE001, S110 - best effort at interpreter exit
            pass


def proc_fds(pid: int) -> list[int]:
    """The open descriptors of a host process (for tests and diagnostics)."""
    return sorted(int(x) for x in os.listdir(f"/proc/{pid}/fd"))


def processes_of_uid(uid: int) -> list[int]:
    """Host pids of the live processes whose real uid is ``uid`` (zombies excluded)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status", encoding="ascii", errors="replace") as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if st.get("Uid", "").split()[:1] == [str(uid)] and not st.get("State", "").strip().startswith("Z"):
            out.append(int(d))
    return out

