"""Batch runs: an experiment's battles on a process pool or a Dask cluster, through one ``concurrent.futures`` path.

Flow (DESIGN.md "batch")::

    Experiment ─runs()─► Run(key, point, rep, seed) ─chunks sized by expected seconds─► executor.submit(run_chunk)
        worker: cached scenario per (base key, params) ─► run_battle under a watchdog ─► plain rows
    driver (the only writer): parts ─► DIR/runs/part-NNNNNN.parquet (+ events/, series/) ─► DIR/manifest.json

* **Executors**: :func:`open_executor` gives a ``ProcessPoolExecutor`` (``forkserver``, N = cores by default) or a
  Dask ``Client.get_executor()`` (``scheduler="tcp://host:8786"`` or ``dask_local=N``: a LocalCluster of N
  single-threaded worker processes).  Dask is the optional extra ``tanksim[dask]``.
* **Identity**: a run's key and seed come from its resolved parameters and replication (:mod:`sim.experiments.design`),
  never its index, so results are identical on any worker count or executor, and stored runs are reused.
* **Resume**: runs already in ``DIR`` are skipped; a different experiment in ``DIR`` is refused
  (:class:`BatchRefused`) unless ``new=True``, which keeps the stored runs that the new design still contains.
* **Failures**: a battle that raises becomes a ``failed`` row with its error, one past the watchdog a ``timeout``
  row; neither stops the batch.  A worker process that dies is replaced, and the battles it was running are
  replayed one at a time: one that kills its worker alone becomes a ``failed`` row.
* **Crash injection** (tests): ``TANKSIM_CRASH_AFTER_PARTS=N`` makes the driver exit hard right after committing
  its N-th part; ``TANKSIM_CRASH_BEFORE_RENAME=N`` between the temporary write and the rename of its N-th part.
"""
from __future__ import annotations

import concurrent.futures as cf
import ctypes
import functools
import json
import math
import multiprocessing
import os
import platform
import signal
import socket
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sim.experiments import store
from sim.experiments.design import (
    SETUP,
    Experiment,
    Run,
    _canon,
    experiment_from_mapping,
    load_experiment,
    place_tanks,
    placement_candidates,
    point_data,
    run_identity,
)
from sim.experiments.store import (
    MANIFEST,
    _is_int,
    check_manifest,
    load_runs,
    read_manifest,
    verified_manifest,
)
from sim.logs import configure_logging, current_level
from sim.scenario import ScenarioError, validate

#: Largest number of battles in one chunk.
MAX_CHUNK = 256
#: Exit code of an injected crash.
CRASH_EXIT = 86
#: The outcome columns a re-run must reproduce.
OUTCOME_COLUMNS = ("status", "winner", "winner_index", "reason", "turns", "decisions", "shots", "hits", "kills",
                   "faults", "side1_lost", "side1_alive", "side2_lost", "side2_alive", "scenario_hash")
_KNOWN = {name for name, _ in store.RUN_FIELDS}


class BatchRefused(ValueError):
    """The results folder holds another experiment (the message says how to proceed)."""


class BattleTimeout(BaseException):
    """Raised inside a battle that exceeds the watchdog (a BaseException, so a policy's ``except Exception``
    cannot swallow it)."""


# --- worker side -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BaseContext:
    """What every task of an experiment shares: the base scenario (raw mapping + source name), its ``key`` and
    the deployment zones (side index -> hexes).  Sent with each chunk (a few kB); workers keep it by key."""

    key: str
    data: dict[str, Any]
    src: str
    zones: dict[int, list[tuple[int, int]]]
    collect: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """One battle to play: ``run_key``, ``point_key``, ``rep``, ``seed`` and ``params`` (canonical JSON of the
    dotted-path overrides plus ``setup``)."""

    run_key: str
    point_key: str
    rep: int
    seed: int
    params: str


@dataclass(frozen=True)
class Chunk:
    """A group of tasks sent to one worker in one call."""

    ctx: BaseContext
    tasks: tuple[Task, ...]
    events: bool = False
    watchdog_s: float | None = None
    tables: bool = False


_CONTEXTS: dict[str, BaseContext] = {}


@functools.lru_cache(maxsize=256)
def _point(base_key: str, params: str) -> tuple[dict[str, Any], Any, dict[int, list[tuple[int, int]]] | None, Any]:
    """Worker cache, keyed by hashes: the point's scenario data, its validated Scenario, when it places tanks
    at random the candidate hexes per zoned side, and the point's built board (a pristine
    :class:`~sim.hexgrid.HexMap`: every battle of the point plays on ``board.for_another_battle()``, which shares
    the terrain cache, so a worker builds the board and its static geometry once per point, not once per battle;
    random placement moves tanks only, never the map).  Raises ``ScenarioError`` for an invalid point."""
    ctx = _CONTEXTS[base_key]
    p = json.loads(params)
    setup = p.pop(SETUP, "fixed")
    src = f"{ctx.src} (point)"
    data = point_data(ctx.data, p, src)
    spec = validate(data, src)
    cands = placement_candidates(spec, ctx.zones) if setup == "random" else None
    return data, spec, cands, spec.build_map()


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def play(ctx: BaseContext, task: Task, *, events: bool = False, watchdog_s: float | None = None,
         keep_model: list | None = None, tables: bool = False) -> dict[str, Any]:
    """Play one task in this process; never raises for a battle's own failure.

    Returns ``{"row": run row (see :data:`sim.experiments.store.RUN_FIELDS`), "events": [...], "series": [...],
    "shots": [...], "tanks": [...]}`` (each carrying ``run_key``; events and series empty unless ``events``, shots
    and tanks unless ``tables``).  A raise anywhere (bad point, policy that fails to
    load, engine error) gives ``status="failed"`` and ``error``; exceeding ``watchdog_s`` gives ``"timeout"``.
    ``keep_model`` receives the finished BattleModel (re-runs draw it)."""
    from sim.runner import run_battle

    _CONTEXTS.setdefault(ctx.key, ctx)
    base = {"run_key": task.run_key, "point_key": task.point_key, "base_key": ctx.key, "rep": task.rep,
            "seed": task.seed, "params": task.params, "worker": _worker_id()}
    t0 = time.perf_counter()
    try:
        with watchdog(watchdog_s, task.run_key):
            data, spec, cands, board = _point(ctx.key, task.params)
            placement = None
            if cands is not None:
                placed = place_tanks(data, cands, task.seed)
                spec = validate(placed, spec.source)
                placement = _canon({str(si): [t["hex"] for t in placed["sides"][si]["tanks"]] for si in cands})
            res = run_battle(spec, task.seed, record_events=events, model_out=keep_model, tables=tables, board=board,
                             collect=ctx.collect or None)
    except BattleTimeout:
        return {"row": {**base, "status": "timeout", "wall_s": time.perf_counter() - t0,
                        "error": f"exceeded the watchdog of {watchdog_s:g} s"}, "events": [], "series": []}
    except Exception as exc:  # noqa: BLE001 - a battle's failure is a row, never the batch's
        msg = str(exc.errors[0] if isinstance(exc, ScenarioError) and len(exc.errors) == 1 else exc)
        return {"row": {**base, "status": "failed", "wall_s": time.perf_counter() - t0,
                        "error": f"{type(exc).__name__}: {msg}"[:2000]}, "events": [], "series": []}
    row = dict(res.row)
    extra = {k: row.pop(k) for k in list(row) if k not in _KNOWN}
    row.update(base, status="ok", error=None, placement=placement, extra=_canon(extra) if extra else None,
               wall_s=time.perf_counter() - t0, battle_turn_limit=spec.effective_turn_limit())
    evs = [{"run_key": task.run_key, **e} for e in res.events] if events else []
    if evs:  # the final state travels with the log: replays compare their last frame with it
        evs[-1]["final_state"] = _canon(res.final_state)
    return {"row": row,
            "events": evs,
            "series": [{"run_key": task.run_key, **s} for s in res.series] if events else [],
            "shots": [{"run_key": task.run_key, **x} for x in res.shots],
            "tanks": [{"run_key": task.run_key, **x} for x in res.tanks]}


def run_chunk(chunk: Chunk) -> list[dict[str, Any]]:
    """The worker entry point: play every task of ``chunk`` in order (see :func:`play`) and return their results.
    Once the driver has asked its workers to stop (Ctrl-C: :attr:`Pool.stop`) no further battle is started: the
    results so far are returned (possibly none), and the chunk's other battles stay unplayed and unstored, for the
    resumed batch to play (none is lost or played twice)."""
    out: list[dict[str, Any]] = []
    for t in chunk.tasks:
        if _STOP is not None and _STOP.is_set():
            break
        out.append(play(chunk.ctx, t, events=chunk.events, watchdog_s=chunk.watchdog_s, tables=chunk.tables))
    return out


#: Topic of the worker -> driver progress messages on a Dask cluster (``Worker.log_event``).
PROGRESS_TOPIC = "tanksim-progress"
#: Seconds the watchdog waits for its exception to land before it reports the battle stuck outside Python.
STUCK_AFTER_S = 1.0
#: Largest progress message (bytes, pickled): below ``PIPE_BUF`` so one write delivers it whole.
_MAX_MESSAGE = 3500
_PROGRESS: Any = None  # the process pool's message queue, set in each worker by _init_worker
_STOP: Any = None  # the process pool's stop event (set by the driver on Ctrl-C), set in each worker by _init_worker


def kill_after(limit_s: float) -> float:
    """Seconds after a battle's start at which the driver kills the worker process still playing it: the
    watchdog ``limit_s`` plus a grace of ``max(2 s, limit_s / 4)`` (the in-worker watchdog stops Python code at
    ``limit_s``; only a battle blocked outside Python, or one that swallows the watchdog's exception, lasts longer).
    """
    return limit_s + max(2.0, limit_s / 4)


def progress_sink() -> Callable[..., None] | None:
    """Worker side: a function ``send(kind, key, **extra)`` that tells the driver that battle ``key`` started
    (``kind="start"``, with its watchdog ``limit``), ended (``"end"``) or is stuck outside Python (``"stuck"``,
    optionally with the ``row`` to store for it), so the driver can kill and replace a worker that no in-process
    watchdog can stop (:class:`HangWatch`).  It goes through the process pool's queue, or ``Worker.log_event`` on
    a Dask worker (resolved here, in the task's thread, so another thread may send too); ``None`` elsewhere (a
    battle played in the driver's own process).  ``send`` never raises."""
    if _PROGRESS is not None:
        queue = _PROGRESS

        def put(msg: dict[str, Any]) -> None:
            import pickle

            if len(pickle.dumps(msg)) > _MAX_MESSAGE:  # one write, so a killed sender never leaves half a message
                msg.pop("row", None)
            queue.put(msg)
        deliver = put
    else:
        dist = sys.modules.get("distributed")
        if dist is None:
            return None
        try:
            w = dist.get_worker()
        except ValueError:  # not inside a Dask task
            return None
        addr = w.address

        def log(msg: dict[str, Any]) -> None:
            w.log_event(PROGRESS_TOPIC, json.loads(json.dumps({**msg, "worker": addr}, default=str)))
        deliver = log

    def send(kind: str, key: str, **extra: Any) -> None:
        try:
            deliver({"kind": kind, "key": key, "pid": os.getpid(), **extra})
        except Exception:  # noqa: BLE001 - best effort: the driver's deadline still holds
            pass
    return send


@contextmanager
def watchdog(limit_s: float | None, key: str | None = None,
             on_stuck: Callable[[], dict[str, Any] | None] | None = None) -> Iterator[None]:
    """Raise :class:`BattleTimeout` in the calling thread if the block runs longer than ``limit_s`` seconds
    (``None`` or 0: no limit).  A block that finishes before the exception lands is left alone.

    A timer thread delivers the exception asynchronously (``PyThreadState_SetAsyncExc``), which works in a process
    pool's main thread and in a Dask worker's thread alike; it interrupts Python code, not a blocking C call.  With
    ``key`` (a battle id) the driver is told when the block starts and ends (:func:`progress_sink`), and if the
    exception has not landed :data:`STUCK_AFTER_S` after it was raised (the thread is blocked in C: a
    ``time.sleep``, blocking I/O) the battle is reported ``stuck`` with the row ``on_stuck()`` returns, so the driver
    kills this worker process at once; the driver also kills it at :func:`kill_after` if no report comes."""
    if not limit_s:
        yield
        return
    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"done": False, "fired": False, "delivered": False}
    finished = threading.Event()

    class Expired(BattleTimeout):
        def __init__(self, *args: Any) -> None:
            state["delivered"] = True
            super().__init__(f"exceeded the watchdog of {limit_s:g} s")

    def fire() -> None:
        with lock:
            if state["done"]:
                return
            state["fired"] = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(Expired))
        if send is not None and not finished.wait(STUCK_AFTER_S) and not state["delivered"]:
            row = None
            if on_stuck is not None:
                try:
                    row = on_stuck()
                except Exception:  # noqa: BLE001 - a row we cannot build: the driver stores a timeout row
                    row = None
            send("stuck", key, row=row, limit=float(limit_s))

    send = progress_sink() if key is not None else None
    timer = threading.Timer(limit_s, fire)
    timer.daemon = True
    if send is not None:
        send("start", key, limit=float(limit_s))
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True
        finished.set()
        timer.cancel()
        if state["fired"] and not state["delivered"]:  # the block finished first: drop the pending exception
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)
        if send is not None:
            send("end", key)


def _init_worker(driver_alive: Any, progress: Any = None, log_level: str | None = None, stop: Any = None) -> None:
    """Process-pool worker set-up: ignore Ctrl-C (the driver handles it), exit when the driver is gone, keep
    ``progress`` (the pool's message queue, see :func:`progress_sink`) and ``stop`` (an event the driver sets on
    Ctrl-C: :func:`run_chunk` then starts no further battle), and log at the driver's ``log_level``
    (:func:`sim.logs.configure_logging`).

    ``driver_alive`` is the read end of a pipe whose only write end the driver holds: it reaches end-of-file the
    moment the driver exits, even by a hard crash or ``kill -9`` (a zombie driver still counts as gone), so no
    worker is left behind."""
    global _PROGRESS, _STOP
    _PROGRESS, _STOP = progress, stop
    configure_logging(log_level)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        try:
            driver_alive.recv()
        except (EOFError, OSError):
            pass
        os._exit(0)

    threading.Thread(target=watch, name="tanksim-driver-watch", daemon=True).start()


# --- executors -------------------------------------------------------------------------------------------------------

@dataclass
class Pool:
    """An open executor: ``executor`` (a ``concurrent.futures.Executor``), ``workers`` (parallel slots), ``kind``
    (``process`` / ``dask``), ``address`` (Dask scheduler), ``dashboard`` (the Dask dashboard's URL, ``""`` when
    there is none), ``lost_workers()`` (worker processes lost so far: on Dask the workers that left the cluster,
    seen at each call; in a process pool the broken pools), ``restart()`` for a broken process pool, ``close()``,
    ``messages()`` (the workers' progress reports since the last call, see :func:`progress_sink`, each with a
    ``worker`` id), ``kill(worker)`` (kill that worker process: ``SIGKILL`` in a process pool, which breaks the
    pool; ``Client.restart_workers`` on Dask, whose nanny starts a fresh one) and ``stop()`` (Ctrl-C: the process
    pool's workers start no further battle, each chunk in flight returns what it has played; on Dask the driver
    cancels its futures, dropping what they were playing)."""

    executor: cf.Executor
    workers: int
    kind: str
    address: str = ""
    restart: Callable[[], None] = lambda: None
    close: Callable[[], None] = lambda: None
    messages: Callable[[], list[dict[str, Any]]] = list
    kill: Callable[[str], None] = lambda worker: None
    dashboard: str = ""
    lost_workers: Callable[[], int] = lambda: 0
    stop: Callable[[], None] = lambda: None


def default_workers() -> int:
    """Usable cores (the scheduler affinity where available)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def worker_preload() -> list[str]:
    """The modules the ``forkserver`` imports once, before it forks the workers, so that no worker imports them
    again: this module, the runner, the model (agents, Mesa, numpy: ``sim.runner`` no longer imports them itself,
    issue 14) and the modules of the rule sets registered in the driver (``sim.rules.base.module_names``).  A
    module that fails to import is skipped by the forkserver and imported, with its error, where a battle needs
    it."""
    from sim.rules import base as rules_base

    return ["sim.experiments.batch", "sim.runner", "sim.model", *rules_base.module_names()]


@contextmanager
def _sigint_as(handler: Any) -> Iterator[None]:
    """SIGINT handled by ``handler`` (``signal.SIG_IGN`` or a function) for the length of the block, then as
    before; a no-op outside the main thread (where signal handlers live)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _start_forkserver_deaf_to_ctrl_c() -> None:
    """Start the forkserver (if it is not running yet) with SIGINT ignored.  It imports :func:`worker_preload`'s
    modules before it ignores SIGINT itself, so a Ctrl-C in the first second of a batch (the terminal sends it to
    the whole process group) printed a ``KeyboardInterrupt`` traceback from it; the driver alone handles Ctrl-C
    (the workers ignore it too: :func:`_init_worker`)."""
    from multiprocessing import forkserver

    with _sigint_as(signal.SIG_IGN):
        forkserver.ensure_running()


def _process_pool(n: int) -> cf.ProcessPoolExecutor:
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(worker_preload())
        _start_forkserver_deaf_to_ctrl_c()
    reader, writer = ctx.Pipe(duplex=False)
    progress = ctx.SimpleQueue()
    stop = ctx.Event()
    ex = cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_init_worker,
                                initargs=(reader, progress, current_level(), stop))
    ex._tanksim_stop = stop  # type: ignore[attr-defined]
    ex._tanksim_driver_alive = (reader, writer)  # type: ignore[attr-defined] # held for the pool's lifetime
    ex._tanksim_progress = progress  # type: ignore[attr-defined]
    _start_workers(ex)
    return ex


def _start_workers(ex: cf.ProcessPoolExecutor) -> None:
    """Start the pool's worker processes now (a first, empty task), with Ctrl-C held back while they are handed
    their start-up data: a ``KeyboardInterrupt`` in the middle of that left a worker starting after the driver had
    released the queue it was being given, and it printed a traceback.  A Ctrl-C that came meanwhile is raised
    once they are started, after the pool is shut down cleanly (its workers finish starting, then exit)."""
    held: list[int] = []
    with _sigint_as(lambda signum, frame: held.append(signum)):
        ex.submit(int)
    if held:
        ex.shutdown(wait=True, cancel_futures=True)
        _release(ex)
        raise KeyboardInterrupt


def _release(ex: cf.Executor) -> None:
    for conn in getattr(ex, "_tanksim_driver_alive", ()):
        conn.close()
    progress = getattr(ex, "_tanksim_progress", None)
    if progress is not None:
        progress.close()


def _terminate(ex: cf.Executor) -> None:
    ex.shutdown(wait=False, cancel_futures=True)
    kill = getattr(ex, "terminate_workers", None)
    if kill is not None:  # Python >= 3.14
        kill()
    else:
        for p in list((getattr(ex, "_processes", None) or {}).values()):
            if p.is_alive():
                p.terminate()
    # the workers are gone before the driver's queue and pipe go: a worker still starting (Ctrl-C in a batch's
    # first second) would otherwise rebuild the queue's semaphore after it was unlinked and print a traceback
    for p in list((getattr(ex, "_processes", None) or {}).values()):
        p.join(timeout=5)
    _release(ex)


@contextmanager
def open_executor(workers: int | None = None, scheduler: str | None = None, dask_local: int | None = None
                  ) -> Iterator[Pool]:
    """Open the executor every batch (and tournament) goes through.

    ``scheduler``: a Dask scheduler address (``tcp://host:8786``); ``dask_local``: start a LocalCluster of that
    many worker processes with one thread each; otherwise a process pool of ``workers`` (default: cores) with the
    ``forkserver`` start method.  Raises ``ValueError`` for both Dask options at once, ``ImportError`` with the
    install hint if Dask is missing."""
    if scheduler and dask_local:
        raise ValueError("give --scheduler or --dask-local, not both")
    if scheduler or dask_local:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ImportError("Dask executors need the optional extra: pip install 'tanksim[dask]'") from None
        from sim.logs import route_library_logging

        route_library_logging()   # Dask's own loggers follow TANKSIM_LOG, in this driver and in the workers
        cluster = None
        if dask_local:
            if dask_local < 1:
                raise ValueError(f"--dask-local {dask_local}: expected at least 1 worker")
            cluster = LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True,
                                   dashboard_address=":0" if _has_bokeh() else None)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="20s")
        inbox: deque[dict[str, Any]] = deque()
        try:
            from sim.experiments.dask_worker import LoggingPlugin

            client.register_plugin(LoggingPlugin(current_level()), name="tanksim-logging")
            client.subscribe_topic(PROGRESS_TOPIC, lambda event: inbox.append(dict(event[1])))
            n = max(1, sum(client.nthreads().values()))
            if client.scheduler is None:  # a synchronous Client connects in its constructor
                raise RuntimeError(f"the Dask client {client} has no scheduler connection")
            pool = Pool(client.get_executor(pure=False), n, "dask", str(client.scheduler.address),
                        dashboard=_dashboard_link(client))
            seen: set[str] = set(client.scheduler_info(n_workers=-1).get("workers", {}))
            now: set[str] = set(seen)

            def lost_workers() -> int:
                """Workers seen earlier that are no longer in the cluster (a nanny restarts a lost worker under
                a new address, so each loss counts once)."""
                try:
                    now.clear()
                    now.update(client.scheduler_info(n_workers=-1).get("workers", {}))
                except Exception:  # noqa: BLE001 - the scheduler is unreachable: the last count stands
                    return len(seen - now)
                seen.update(now)
                return len(seen - now)
            pool.lost_workers = lost_workers
            pool.messages = lambda: [{**m, "worker": f"{m.get('worker')}#{m.get('pid')}"}
                                     for m in (inbox.popleft() for _ in range(len(inbox)))]

            def kill_dask_worker(worker: str) -> None:
                """SIGKILL the worker process from its nanny, which starts a fresh one (``Client.run(...,
                nanny=True)``: at once, even if the process holds the GIL); else ``Client.restart_workers``."""
                addr, _, pid = worker.rpartition("#")
                try:
                    done = client.run(os.kill, int(pid), signal.SIGKILL, workers=[addr], nanny=True,
                                      on_error="return")
                    if addr in done and not isinstance(done[addr], BaseException):
                        return
                    status = client.restart_workers([addr], timeout=60, raise_for_error=False)
                except Exception as exc:  # noqa: BLE001 - the cluster refused: say so, the batch goes on
                    status = {addr: exc}
                if status.get(addr) != "OK":
                    warnings.warn(f"Dask worker {addr} could not be restarted ({status.get(addr)}); it may stay "
                                  f"blocked (run workers under a nanny, the default of dask worker)", stacklevel=2)
            pool.kill = kill_dask_worker
            yield pool
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    n = workers or default_workers()
    if n < 1:
        raise ValueError(f"--workers {n}: expected at least 1")
    holder: dict[str, Any] = {"ex": _process_pool(n), "gen": 0, "reading": True}
    pool = Pool(holder["ex"], n, "process")
    pool.lost_workers = lambda: holder["gen"]

    def restart() -> None:
        _terminate(holder["ex"])
        holder["ex"] = pool.executor = _process_pool(n)
        holder.update(gen=holder["gen"] + 1, reading=True)

    def messages() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        q = holder["ex"]._tanksim_progress
        while holder["reading"] and len(out) < 10_000 and not q.empty():
            msg = dict(q.get())
            msg["worker"] = f"{holder['gen']}:{msg.get('pid')}"
            out.append(msg)
        return out

    def kill(worker: str) -> None:
        gen, _, pid = worker.partition(":")
        if gen != str(holder["gen"]) or not pid.isdigit():
            return  # a worker of a pool already replaced
        holder["reading"] = False  # the pool is broken now; its queue is read no more
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass

    pool.restart = restart
    pool.messages = messages
    pool.kill = kill
    pool.close = lambda: _terminate(holder["ex"])
    pool.stop = lambda: holder["ex"]._tanksim_stop.set()
    try:
        yield pool
    finally:
        holder["ex"].shutdown(wait=True, cancel_futures=True)
        _release(holder["ex"])


def _has_bokeh() -> bool:
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _dashboard_link(client: Any) -> str:
    """The cluster's dashboard URL, or ``""`` (no dashboard: bokeh missing, or the scheduler runs none)."""
    try:
        return str(client.dashboard_link or "") if "dashboard" in (client.scheduler_info().get("services") or {}) \
            else ""
    except Exception:  # noqa: BLE001 - no link is no dashboard
        return ""


# --- hung workers ----------------------------------------------------------------------------------------------------

#: Seconds between the driver's looks at its workers' progress.
POLL_S = 0.25


@dataclass(frozen=True)
class Hang:
    """A battle whose worker must be killed: its ``key``, the ``worker`` id, the ``row`` the worker sent for it
    (``None``: the driver writes a timeout row) and ``why`` (``stuck``: the worker said its watchdog could not
    interrupt it; ``deadline``: no end after :func:`kill_after`)."""

    key: str
    worker: str
    row: dict[str, Any] | None
    why: str
    limit_s: float


class HangWatch:
    """Driver side of the hung-battle watchdog: from the workers' progress reports (:func:`progress_sink`) it
    knows which battle each worker process is playing, since when (the driver's clock at the report), and finds
    the battles to kill: reported ``stuck``, or still running :func:`kill_after` their start.  Works alike for a
    process pool and a Dask cluster (:attr:`Pool.messages`)."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.running: dict[str, tuple[str, float, float]] = {}  # worker -> (key, watchdog s, kill at)
        self.starts: dict[str, int] = {}  # battle -> times a worker reported starting it

    def retried_beyond(self, resubmitted: set[str]) -> int:
        """Battles reported started more than once that the driver did not submit again itself (Dask's scheduler
        re-ran them on another worker after losing one)."""
        return sum(1 for k, n in self.starts.items() if n > 1 and k not in resubmitted)

    def forget(self, keys: Iterable[str]) -> None:
        """Drop what is known about battles that finished (their chunk came back) or were given up."""
        gone = set(keys)
        for w in [w for w, (k, _, _) in self.running.items() if k in gone]:
            del self.running[w]

    def reset(self) -> None:
        """Forget every worker (the process pool was replaced)."""
        self.running.clear()

    def poll(self) -> list[Hang]:
        """The battles to kill now (each removed from the watch)."""
        now = time.monotonic()
        hangs: dict[str, Hang] = {}
        for m in self.pool.messages():
            w, key, kind = str(m.get("worker")), str(m.get("key")), m.get("kind")
            if kind == "start":
                self.starts[key] = self.starts.get(key, 0) + 1
                self.forget([key])  # replayed elsewhere after a lost worker
                limit = float(m.get("limit") or 0)
                self.running[w] = (key, limit, now + kill_after(limit))
            elif kind == "end" and self.running.get(w, ("",))[0] == key:
                del self.running[w]
            elif kind == "stuck":  # from the battle's watchdog, or a tournament's decision watchdog
                row = m.get("row") if isinstance(m.get("row"), dict) else None
                limit = self.running.pop(w)[1] if self.running.get(w, ("",))[0] == key else float(m.get("limit") or 0)
                hangs[w] = Hang(key, w, row, "stuck", limit)
        for w, (key, limit, at) in list(self.running.items()):
            if now >= at:
                del self.running[w]
                hangs[w] = Hang(key, w, None, "deadline", limit)
        return list(hangs.values())


def hang_error(h: Hang) -> str:
    """The ``error`` text of a battle whose worker was killed."""
    if h.why == "stuck":
        return (f"exceeded the watchdog of {h.limit_s:g} s while blocked outside Python (a C call such as "
                f"time.sleep, or blocking I/O); the worker process was killed and replaced")
    return (f"ran past the watchdog of {h.limit_s:g} s plus a grace of {kill_after(h.limit_s) - h.limit_s:g} s "
            f"(blocked outside Python, or ignoring the watchdog); the worker process was killed and replaced")


# --- the results folder ----------------------------------------------------------------------------------------------

def versions() -> dict[str, str]:
    """Versions that decide results: tanksim, Python, numpy, and the libraries around them."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("tanksim", "numpy", "mesa", "pandas", "pyarrow", "scipy", "networkx"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def rule_data_hash() -> str:
    """SHA-256 (16 hex digits) of the packaged rule data files (``sim/rules/data``), in name order."""
    import hashlib
    from importlib import resources

    h = hashlib.sha256()
    for f in sorted(resources.files("sim.rules.data").iterdir(), key=lambda x: x.name):
        if f.name.endswith((".yaml", ".yml", ".json", ".csv")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def code_hash() -> str:
    """SHA-256 (16 hex digits) of the engine's source (every ``.py`` file of the ``sim`` and ``agents`` packages):
    results stored under another hash may not be reproducible by this code."""
    import hashlib

    import agents
    import sim

    h = hashlib.sha256()
    for pkg in (sim, agents):
        if pkg.__file__ is None:
            raise RuntimeError(f"{pkg.__name__}: not a regular package (no __init__.py); cannot hash its source")
        root = Path(pkg.__file__).parent
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root.parent)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    store.write_manifest(out_dir, MANIFEST, manifest)


def _changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    a, b = old.get("experiment", {}), new.get("experiment", {})
    out = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k) and k not in ("name", "description")]
    if old.get("base_key") != new.get("base_key") and "scenario" not in out:
        out.append("scenario contents")
    return out


def prepare_folder(exp: Experiment, out_dir: str | Path, new: bool = False) -> dict[str, Any]:
    """Create or reopen a results folder for ``exp`` (the caller holds its lock,
    :func:`sim.experiments.store.folder_lock`): check the stored experiment, verify every stored part
    (:func:`repair_folder`: bad chunks are quarantined and their runs played again), write the manifest, clean partial
    writes.  Raises :class:`BatchRefused` if the folder holds a different experiment and ``new`` is false,
    :class:`sim.experiments.store.CorruptResults` for a manifest that is not valid JSON (unless ``new``: then it is
    moved to ``DIR/quarantine`` and rebuilt)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    other = store.other_results(out, MANIFEST)
    if other:
        raise BatchRefused(f"{out}: holds other results ({other}); choose another --out folder")
    desc = exp.describe()
    ident = exp.identity()
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    old = None
    notes: list[str] = []
    if (out / MANIFEST).is_file():
        try:
            old = read_manifest(out)
            check_manifest(old, out)
        except store.CorruptResults as exc:
            if not new:
                raise store.CorruptResults(exc.problems, "re-run with --new to rebuild the manifest from the "
                                           "experiment file (the bad one is kept in DIR/quarantine)") from None
            dest = out / store.QUARANTINE / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-manifest"
            dest.mkdir(parents=True, exist_ok=True)
            os.replace(out / MANIFEST, dest / MANIFEST)
            notes.append(f"{out / MANIFEST}: unreadable ({exc.problems[0]}); moved to {dest} and rebuilt from "
                         f"{exp.source}")
            old = None
        if old is not None and old.get("experiment_hash") != ident and not new:
            changed = _changed_fields(old["design"], desc)
            raise BatchRefused(
                f"{out}: holds results of a different experiment ({old['design'].get('source')}, hash "
                f"{old.get('experiment_hash')}); {exp.source} hashes to {ident}"
                + (f" (changed: {', '.join(changed)})" if changed else "")
                + ". Re-run with --new to switch this folder to the new experiment (stored runs that the new "
                  "design still contains are kept and reused), or choose another --out folder.")
    notes += repair_folder(out)
    bases = dict((old or {}).get("bases", {}))
    bases[exp.base_key] = {"src": exp.base_src, "data": exp.base_data,
                           "zones": {str(k): [list(h) for h in v] for k, v in exp.zones.items()}}
    history = list((old or {}).get("history", []))
    if old is not None and old.get("experiment_hash") != ident:
        history.append({"replaced_experiment_hash": old.get("experiment_hash"), "at": now})
    manifest = {
        "format": store.FORMAT, "experiment_hash": ident, "created": (old or {}).get("created", now),
        "updated": now, "design": desc, "versions": versions(), "rule_data_hash": rule_data_hash(),
        "code_hash": code_hash(), "bases": bases,
        "factor_types": {f.name: str(_factor_type(exp, f.name)) for f in exp.factors},
        "history": history, "sessions": list((old or {}).get("sessions", [])), "status": "running",
        "warnings": notes,
    }
    if old is not None and store.part_paths(out, "runs"):
        for key in ("versions", "rule_data_hash", "code_hash"):
            if old.get(key) != manifest[key]:
                manifest["warnings"].append(f"{out}: {key.replace('_', ' ')} changed since the stored runs were "
                                            f"played (was {old.get(key)}, now {manifest[key]}); stored and new "
                                            f"runs may not be comparable (start a new folder to be sure)")
    _write_manifest(out, manifest)  # folds the part checksums in; drops those of interrupted writes
    store.clean_partial(out)
    return manifest


def repair_folder(out_dir: str | Path, manifest_name: str = MANIFEST) -> list[str]:
    """Verify every part of a results folder by SHA-256 (the caller holds its lock) and move each bad chunk (a
    truncated, changed, missing or unlisted part: all its runs, events and series parts) to
    ``DIR/quarantine/``; the runs it held are then no longer stored, so the batch plays them again, and no run is
    lost or stored twice.  A folder written before part checksums existed has its parts adopted as they are.
    Returns warnings for the user (one per bad part, and where it went)."""
    out = Path(out_dir)
    v = store.verify_parts(out, manifest_name)
    notes: list[str] = []
    if v.legacy:
        ledger = store.PartLedger(out, manifest_name)
        adopted = 0
        for seq, files in sorted(store.part_files(out).items()):
            if "runs" in files:
                ledger.record_chunk(seq, {p: p for p in files.values()})
                adopted += len(files)
        if adopted:
            notes.append(f"{out}: written before part checksums existed; {adopted} stored parts adopted unverified")
        return notes
    if v.problems:
        dest = store.quarantine(out, v.problems)
        for prob in v.problems:
            notes.append(f"{prob}; chunk {prob.seq} moved to {dest}, its battles will be played again")
    return notes


def _factor_type(exp: Experiment, name: str) -> Any:
    fac = next(f for f in exp.factors if f.name == name)
    vals = [p.values[name] for p in exp.points]
    if fac.is_range:
        import pyarrow as pa
        return pa.int64() if fac.integer else pa.float64()
    return store.value_type(vals)


def _factor_value(v: Any, typ: Any) -> Any:
    import pyarrow as pa
    if typ == pa.string() and not isinstance(v, str):
        return _canon(v)
    return v


def failed_run_keys(out_dir: str | Path) -> dict[str, str]:
    """``{run_key: status}`` of every stored run whose status is not ``ok`` (``failed`` or ``timeout``)."""
    import pyarrow.compute as pc

    out: dict[str, str] = {}
    for p in store.part_paths(out_dir, "runs"):
        t = store.read_table(p, columns=["run_key", "status"])
        t = t.filter(pc.not_equal(t.column("status"), "ok"))
        out.update(zip(t.column("run_key").to_pylist(), t.column("status").to_pylist()))
    return out


def drop_runs(out_dir: str | Path, keys: set[str]) -> int:
    """Remove the rows of ``keys`` from every stored part (runs, events, series): each chunk holding any of them
    is rewritten in place as a whole (:func:`sim.experiments.store.rewrite_chunk`: temporary files, one checksum record,
    the renames).  A crash midway leaves each chunk old (those runs still stored), new (those runs missing: the next
    batch plays them) or, if it struck between a chunk's renames, half-rewritten: that chunk then fails
    verification and is quarantined, its runs played again; never a run without its events or stored twice.
    Returns the number of run rows removed.  The caller holds the folder's lock."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not keys:
        return 0
    removed = 0
    wanted = pa.array(sorted(keys), type=pa.string())
    for seq, files in sorted(store.part_files(out_dir).items()):
        tables = {}
        for kind, p in files.items():
            t = store.read_table(p)
            if "run_key" not in t.column_names:
                continue
            hit = pc.is_in(t.column("run_key"), value_set=wanted)
            n = int(pc.sum(hit).as_py() or 0)
            if n:
                removed += n if kind == "runs" else 0
                tables[p] = t.filter(pc.invert(hit))  # an emptied part stays, so part numbers are never reused
        if tables:
            store.rewrite_chunk(out_dir, seq, tables)
    return removed


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """A result table without worker ids and wall times, sorted by run key: equal for equal experiments whatever
    the worker count or executor."""
    cols = [c for c in df.columns if c not in store.VOLATILE_COLUMNS]
    return df[cols].sort_values("run_key").reset_index(drop=True)


# --- the driver ------------------------------------------------------------------------------------------------------

@dataclass
class BatchSummary:
    """What one ``execute`` call did: runs in the design, already stored, played now, failed (incl. timeouts),
    parts written, wall seconds, executor kind and workers, whether it was interrupted, the worker ids seen and
    warnings (e.g. the engine changed since the stored runs were played); ``dashboard`` (the Dask dashboard URL,
    if any), ``lost_workers`` (worker processes lost: see :attr:`Pool.lost_workers`) and ``retried`` (battles
    played again after their worker was lost: submitted again by the driver, or re-run by Dask's scheduler on
    another worker, seen as a second start report; each battle counts once)."""

    out: Path
    total: int
    stored_before: int
    played: int = 0
    failed: int = 0
    parts: int = 0
    wall_s: float = 0.0
    executor: str = ""
    workers: int = 0
    interrupted: bool = False
    failed_stored: int = 0
    worker_ids: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    dashboard: str = ""
    lost_workers: int = 0
    retried: int = 0

    @property
    def rate(self) -> float:
        """Battles per second played by this call."""
        return self.played / self.wall_s if self.wall_s > 0 else 0.0


def _env_int(name: str) -> int:
    v = os.environ.get(name, "").strip()
    return int(v) if v.isdigit() else 0


class _Writer:
    """Driver-side part writer (the only writer), with the crash-injection hooks."""

    def __init__(self, out: Path, exp: Experiment):
        self.out = out
        self.seq = store.next_part_number(out)
        self.written = 0
        self.types = {f.name: _factor_type(exp, f.name) for f in exp.factors}
        self.schema = store.run_schema(self.types)
        self.values = {p.key: p.values for p in exp.points}
        self.crash_after = _env_int("TANKSIM_CRASH_AFTER_PARTS")
        self.crash_before_rename = _env_int("TANKSIM_CRASH_BEFORE_RENAME")

    def write(self, results: list[dict[str, Any]]) -> None:
        rows, events, series, shots, tanks = [], [], [], [], []
        for r in results:
            row = dict(r["row"])
            for name, v in self.values.get(row["point_key"], {}).items():
                row[name] = _factor_value(v, self.types[name])
            rows.append(row)
            events += r["events"]
            series += r["series"]
            shots += r.get("shots", [])
            tanks += r.get("tanks", [])
        n = self.written + 1
        hook = (lambda: os._exit(CRASH_EXIT)) if self.crash_before_rename == n else None
        store.write_run_part(self.out, self.seq, rows, self.schema, events=events, series=series, shots=shots,
                             tanks=tanks, before_commit=hook)
        self.seq += 1
        self.written = n
        if self.crash_after == n:
            os._exit(CRASH_EXIT)


def execute(exp: Experiment, out_dir: str | Path, *, workers: int | None = None, scheduler: str | None = None,
            dask_local: int | None = None, new: bool = False, events: bool = False,
            watchdog_s: float | None = None, chunk_s: float | None = None, progress: bool = True,
            pool: Pool | None = None, retry_failed: bool = False, tables: bool = False,
            announce: Callable[[str], None] | None = None,
            on_start: Callable[[], None] | None = None) -> BatchSummary:
    """Play every run of ``exp`` not yet stored in ``out_dir`` and store it there.

    ``on_start()`` (if given) is called once the folder has been locked and verified (every check that can refuse
    it has passed), before the folder's warnings and the first battle: ``tanksim batch`` prints its header there,
    so a refused folder prints only the error.

    ``workers`` / ``scheduler`` / ``dask_local``: see :func:`open_executor` (or pass an open ``pool`` to reuse
    it; it is left open); ``new``: accept a changed experiment; ``events``: also store event logs and per-turn
    series; ``tables``: also store the tidy shots and tanks tables (``shots/``, ``tanks/`` parts);
    ``watchdog_s`` / ``chunk_s`` override the experiment's; ``announce(text)`` is told the Dask dashboard's URL
    when the executor is up (the CLI prints it).  Ctrl-C (or SIGTERM in the CLI) stops cleanly:
    finished chunks are stored, the summary says ``interrupted``.  ``retry_failed``: play stored ``failed`` /
    ``timeout`` runs of the design again (their rows are removed from the folder first, so each run key keeps
    exactly one row).  ``summary.failed_stored`` counts
    the design's failed or timed-out rows in the folder afterwards.  The folder is locked for the whole call
    (:func:`sim.experiments.store.folder_lock`) and verified first (:func:`prepare_folder`).  Raises
    :class:`BatchRefused`, :class:`sim.experiments.store.FolderInUse` (another process is writing the folder),
    :class:`sim.experiments.store.CorruptResults` (an unreadable manifest), ``ValueError`` for bad executor options."""
    out = Path(out_dir)
    with store.folder_lock(out, "tanksim batch"):
        return _execute(exp, out, workers=workers, scheduler=scheduler, dask_local=dask_local, new=new,
                        events=events, watchdog_s=watchdog_s, chunk_s=chunk_s, progress=progress, pool=pool,
                        retry_failed=retry_failed, tables=tables, announce=announce, on_start=on_start)


def _execute(exp: Experiment, out: Path, *, workers: int | None, scheduler: str | None, dask_local: int | None,
             new: bool, events: bool, watchdog_s: float | None, chunk_s: float | None, progress: bool,
             pool: Pool | None, retry_failed: bool, tables: bool = False,
             announce: Callable[[str], None] | None = None,
             on_start: Callable[[], None] | None = None) -> BatchSummary:
    manifest = prepare_folder(exp, out, new)
    if on_start is not None:
        on_start()
    if retry_failed:
        drop_runs(out, set(failed_run_keys(out)) & {r.key for r in exp.runs()})
    stored = store.stored_run_keys(out)
    runs = [r for r in exp.runs() if r.key not in stored]
    summary = BatchSummary(out, exp.n_runs, exp.n_runs - len(runs), warnings=list(manifest["warnings"]))
    for w in summary.warnings:
        warnings.warn(w, stacklevel=2)
    if runs:
        _drive(exp, out, runs, summary, workers=workers, scheduler=scheduler, dask_local=dask_local,
               events=events, watchdog_s=watchdog_s or exp.spec.watchdog_s, chunk_s=chunk_s or exp.spec.chunk_s,
               progress=progress, pool=pool, tables=tables, announce=announce)
    done = len(store.stored_run_keys(out) & {r.key for r in exp.runs()})
    summary.failed_stored = len(set(failed_run_keys(out)) & {r.key for r in exp.runs()})
    manifest["status"] = "complete" if done == exp.n_runs else ("interrupted" if summary.interrupted else "partial")
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest.setdefault("sessions", []).append({
        "at": manifest["updated"], "executor": summary.executor, "workers": summary.workers,
        "played": summary.played, "failed": summary.failed, "wall_s": round(summary.wall_s, 3),
        "interrupted": summary.interrupted, "lost_workers": summary.lost_workers, "retried": summary.retried,
        **({"dashboard": summary.dashboard} if summary.dashboard else {}),
        "code_hash": manifest["code_hash"]})
    _write_manifest(out, manifest)
    return summary


def _drive(exp: Experiment, out: Path, runs: list[Run], summary: BatchSummary, *, workers: int | None,
           scheduler: str | None, dask_local: int | None, events: bool, watchdog_s: float, chunk_s: float,
           progress: bool, pool: Pool | None = None, tables: bool = False,
           announce: Callable[[str], None] | None = None) -> None:
    from tqdm import tqdm

    ctx = BaseContext(exp.base_key, exp.base_data, exp.base_src, {k: list(v) for k, v in exp.zones.items()},
                      exp.spec.collect.as_mapping())
    params = {p.key: p.params_json for p in exp.points}
    todo: deque[Task] = deque(Task(r.key, r.point, r.rep, r.seed, params[r.point]) for r in runs)
    writer = _Writer(out, exp)
    t0 = time.perf_counter()
    bar = tqdm(total=exp.n_runs, initial=summary.stored_before, unit="run", desc=exp.spec.name, smoothing=0.05,
               disable=not progress, dynamic_ncols=True)
    try:   # the bar is closed however this ends (Ctrl-C while the executor starts too), before any last line
        _drive_pool(exp, summary, ctx, todo, writer, t0, bar, workers=workers, scheduler=scheduler,
                    dask_local=dask_local, events=events, watchdog_s=watchdog_s, chunk_s=chunk_s, pool=pool,
                    tables=tables, announce=announce)
    finally:
        bar.close()


def _drive_pool(exp: Experiment, summary: BatchSummary, ctx: BaseContext, todo: deque[Task], writer: _Writer,
                t0: float, bar: Any, *, workers: int | None,
                scheduler: str | None, dask_local: int | None, events: bool, watchdog_s: float, chunk_s: float,
                pool: Pool | None, tables: bool, announce: Callable[[str], None] | None) -> None:
    """:func:`_drive`'s executor loop: play ``todo`` on ``pool`` (or a new executor), storing through ``writer``
    and advancing ``bar`` (which the caller closes)."""
    spent = {"s": 0.0, "n": 0}
    opened = _given(pool) if pool is not None else open_executor(workers, scheduler, dask_local)
    with opened as pool:  # noqa: PLR1704 - the given pool, or a new one
        summary.executor, summary.workers, summary.dashboard = pool.kind, pool.workers, pool.dashboard
        if pool.dashboard and announce is not None:
            announce(f"Dask dashboard: {pool.dashboard}")
        inflight: dict[cf.Future, Chunk] = {}
        submitted: dict[cf.Future, cf.Executor] = {}  # which executor each future went to
        suspects: deque[Task] = deque()  # tasks of chunks whose worker died: replayed one at a time
        solo: set[cf.Future] = set()

        def next_chunk() -> Chunk:
            if spent["n"] == 0:
                size = 1  # calibrate on single battles first
            else:
                per = max(spent["s"] / spent["n"], 1e-3)
                size = int(chunk_s / per)
                size = min(size, MAX_CHUNK, math.ceil(len(todo) / (2 * pool.workers)))
            size = max(1, size)
            return Chunk(ctx, tuple(todo.popleft() for _ in range(min(size, len(todo)))), events, watchdog_s,
                         tables)

        def submit(chunk: Chunk, alone: bool = False) -> None:
            try:
                fut = pool.executor.submit(run_chunk, chunk)
            except cf.BrokenExecutor:
                (suspects if alone else todo).extendleft(reversed(chunk.tasks))
                pool.restart()
                return
            inflight[fut] = chunk
            submitted[fut] = pool.executor
            if alone:
                solo.add(fut)

        def take(fut: cf.Future, chunk: Chunk) -> None:
            try:
                results = fut.result()
            except (cf.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:  # noqa: BLE001 - the worker itself died (or the cluster lost it)
                if isinstance(exc, cf.BrokenExecutor) and submitted.get(fut) is pool.executor:
                    pool.restart()  # once per broken pool, not once per future it took down
                if fut not in solo:  # any battle in flight may have killed it: replay each alone to know
                    suspects.extend(chunk.tasks)
                    resubmitted.update(t.run_key for t in chunk.tasks)
                    return
                t = chunk.tasks[0]
                results = [{"row": {"run_key": t.run_key, "point_key": t.point_key, "base_key": ctx.key,
                                    "rep": t.rep, "seed": t.seed, "params": t.params, "status": "failed",
                                    "error": f"worker lost while playing this battle alone: "
                                             f"{type(exc).__name__}: {exc}"[:2000]},
                            "events": [], "series": []}]
            finally:
                submitted.pop(fut, None)
                solo.discard(fut)
            if not results:   # a chunk the workers were told to stop before its first battle (Ctrl-C)
                return
            writer.write(results)
            summary.parts += 1
            for r in results:
                row = r["row"]
                summary.played += 1
                if row["status"] != "ok":
                    summary.failed += 1
                if row.get("worker"):
                    summary.worker_ids.add(row["worker"])
                spent["s"] += row.get("wall_s") or 0.0
                spent["n"] += 1
            bar.update(len(results))
            if summary.failed:
                bar.set_postfix(failed=summary.failed, refresh=False)

        watch = HangWatch(pool)
        resubmitted: set[str] = set()  # battles the driver submitted again after their worker was lost

        def on_hang(h: Hang) -> None:
            """Kill the hung battle's worker, store a timeout row for it and play the rest of its chunk again (on
            a process pool every chunk in flight dies with the pool: finished ones are kept, the others played
            again; none of them is a suspect)."""
            fut = next((f for f, ch in inflight.items() if any(t.run_key == h.key for t in ch.tasks)), None)
            if fut is None:  # finished meanwhile: its worker is not stuck
                return
            pool.kill(h.worker)
            chunk = inflight.pop(fut)
            lost = submitted.pop(fut, None)
            was_solo = fut in solo
            solo.discard(fut)
            task = next(t for t in chunk.tasks if t.run_key == h.key)
            todo.extendleft(reversed([t for t in chunk.tasks if t.run_key != h.key]))
            resubmitted.update(t.run_key for t in chunk.tasks if t.run_key != h.key)
            if pool.kind == "process":
                for f in [f for f in inflight if submitted.get(f) is lost]:
                    ch = inflight.pop(f)
                    if f.done() and not f.cancelled() and f.exception() is None:
                        take(f, ch)
                    else:
                        submitted.pop(f, None)
                        (suspects if f in solo else todo).extendleft(reversed(ch.tasks))
                        resubmitted.update(t.run_key for t in ch.tasks)
                        solo.discard(f)
                        watch.forget(t.run_key for t in ch.tasks)
                if lost is pool.executor:
                    pool.restart()
                watch.reset()
            else:
                fut.cancel()
            watch.forget(t.run_key for t in chunk.tasks)
            row: dict[str, Any] = {"run_key": task.run_key, "point_key": task.point_key, "base_key": ctx.key,
                                   "rep": task.rep, "seed": task.seed, "params": task.params, "status": "timeout",
                                   "error": hang_error(h)}
            if was_solo:
                row["error"] += " (it was replayed alone after its worker was lost)"
            done_fut: cf.Future = cf.Future()
            done_fut.set_result([{"row": row, "events": [], "series": []}])
            take(done_fut, Chunk(ctx, (task,), events, watchdog_s, tables))

        try:
            while todo or inflight or suspects:
                if suspects:
                    if not inflight:
                        submit(Chunk(ctx, (suspects.popleft(),), events, watchdog_s, tables), alone=True)
                else:
                    while todo and len(inflight) < 2 * pool.workers:
                        submit(next_chunk())
                if not inflight:
                    continue
                done, _ = cf.wait(list(inflight), timeout=POLL_S if watchdog_s else None,
                                  return_when=cf.FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: inflight[f].tasks[0].run_key):
                    chunk = inflight.pop(fut)
                    watch.forget(t.run_key for t in chunk.tasks)
                    take(fut, chunk)
                for h in watch.poll():
                    on_hang(h)
        except KeyboardInterrupt:
            # stop: cancel what has not started, store what finishes (a second Ctrl-C abandons it)
            summary.interrupted = True
            todo.clear()
            suspects.clear()
            bar.set_description_str(f"{exp.spec.name} (stopping: storing the battles running)")
            try:
                pool.stop()   # the workers start no further battle: queued chunks come back empty at once
                for fut in list(inflight):
                    fut.cancel()
                while inflight:  # a battle blocked in C still has its worker killed at its deadline
                    done, _ = cf.wait(list(inflight), timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
                    for fut in done:
                        chunk = inflight.pop(fut)
                        if not fut.cancelled() and fut.exception() is None:
                            take(fut, chunk)
                    for h in watch.poll():
                        on_hang(h)
                    todo.clear()
                    suspects.clear()
            except KeyboardInterrupt:
                pass
            pool.close()
        finally:
            bar.close()
            summary.wall_s = time.perf_counter() - t0
            summary.retried = len(resubmitted) + watch.retried_beyond(resubmitted)
            try:
                summary.lost_workers = pool.lost_workers()
            except Exception:  # noqa: BLE001 - a closed pool keeps its last count
                pass


@contextmanager
def _given(pool: Pool) -> Iterator[Pool]:
    yield pool


# --- Python API -------------------------------------------------------------------------------------------------------

@dataclass
class BatchResult:
    """What :func:`run_experiment` returns: ``runs`` (one row per battle, see :data:`sim.experiments.store.RUN_FIELDS`
    plus factor columns and ``point``), ``points`` (per design point: battles, win rates with Wilson 95 % intervals,
    turns, losses, loss-exchange ratio), ``effects`` (main effects per factor level), the folder and the
    :class:`BatchSummary`."""

    runs: pd.DataFrame
    points: pd.DataFrame
    effects: pd.DataFrame
    out: Path
    summary: BatchSummary


def run_experiment(experiment: str | Path | Mapping[str, Any] | Experiment, out: str | Path | None = None, *,
                   workers: int | None = None, scheduler: str | None = None, dask_local: int | None = None,
                   new: bool = False, events: bool = False, watchdog_s: float | None = None,
                   chunk_s: float | None = None, progress: bool = False, base_dir: str | Path = ".",
                   retry_failed: bool = False, tables: bool = False) -> BatchResult:
    """Run an experiment (a file path, a mapping as in a file, or a loaded :class:`Experiment`) and return its
    results as pandas DataFrames (for notebooks).

    ``out``: the results folder (resumable, as with ``tanksim batch``); ``None`` uses a temporary folder that is
    removed afterwards.  ``base_dir``: where a mapping's ``scenario`` path is looked up.  Other arguments as in
    :func:`execute`.  Raises :class:`ScenarioError` for an invalid experiment, :class:`BatchRefused`."""
    import tempfile

    from sim.experiments import report

    if isinstance(experiment, Experiment):
        exp = experiment
    elif isinstance(experiment, Mapping):
        exp = experiment_from_mapping(experiment, "<experiment>", base_dir)
    else:
        exp = load_experiment(experiment)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="tanksim-batch-")
        folder = Path(tmp.name)
    else:
        folder = Path(out)
    try:
        summary = execute(exp, folder, workers=workers, scheduler=scheduler, dask_local=dask_local, new=new,
                          events=events, watchdog_s=watchdog_s, chunk_s=chunk_s, progress=progress,
                          retry_failed=retry_failed, tables=tables)
        runs = load_runs(folder)
        manifest = read_manifest(folder)
        points = report.point_table(runs, manifest)
        effects = report.main_effects(runs, manifest)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return BatchResult(runs, points, effects, folder, summary)


# --- one battle again -------------------------------------------------------------------------------------------------

def find_run(out_dir: str | Path, battle_id: str) -> pd.Series:
    """The stored row of ``battle_id`` (a run key, or an unambiguous prefix of at least 4 characters).  Raises
    ``KeyError`` naming the folder and a few ids."""
    runs = load_runs(out_dir, current=False)
    bid = str(battle_id or "").strip()
    hit = runs[runs["run_key"] == bid]
    if hit.empty and len(bid) >= 4:
        hit = runs[runs["run_key"].str.startswith(bid)]
    if len(hit) != 1:
        some = ", ".join(runs["run_key"].head(5))
        why = "is ambiguous" if len(hit) > 1 else "is not stored there"
        raise KeyError(f"{out_dir}: battle {bid!r} {why} ({len(runs)} battles, e.g. {some})")
    return hit.iloc[0]


def _schema_digest(data: Mapping[str, Any], src: str) -> str:
    """The digest of a scenario mapping (:meth:`sim.scenario.Scenario.digest`) from the schema alone: no rule-set
    check, no policy loaded or constructed, nothing imported (unlike :func:`sim.scenario.validate`), so a hash can
    be checked before anything is built.  Raises :class:`sim.experiments.store.CorruptResults`."""
    from pydantic import ValidationError

    from sim.scenario import Scenario, _fmt_validation

    try:
        return Scenario(**{k: v for k, v in data.items() if k != "source"}, source=src).digest()
    except ValidationError as exc:
        raise store.CorruptResults(_fmt_validation(src, exc, model=Scenario)[:10]) from None
    except (TypeError, ValueError) as exc:
        raise store.CorruptResults([f"{src}: not a scenario mapping ({type(exc).__name__})"]) from None


def verify_run_row(manifest: Mapping[str, Any], row: Mapping[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Check that a stored run's identity matches what it would be run from: its base scenario (the manifest's
    ``bases`` entry, validated, hashes to the row's ``base_key``), its parameters (hash to its ``point_key``), its
    replication and seed (hash to its ``run_key``; for a run of the current design the seed is also the one the
    root seed gives).  Returns the base entry (``src``, ``data``, ``zones``).  Raises
    :class:`sim.experiments.store.CorruptResults` naming the manifest field or the battle.  Nothing is built or
    imported: the base scenario's digest comes from its schema alone (:func:`_schema_digest`)."""
    from sim.experiments.design import base_key_of, point_key, run_key_of

    path = Path(out_dir) / MANIFEST
    key, bid = row.get("base_key"), row.get("run_key")
    base = (manifest.get("bases") or {}).get(key)
    if not isinstance(base, dict):
        raise store.CorruptResults([f"{path}: bases: no base scenario {str(key)[:20]!r} for battle {bid}"])
    zones = base.get("zones")
    if not (isinstance(zones, dict) and all(
            isinstance(k, str) and k.isdigit() and isinstance(v, list)
            and all(isinstance(h, list) and len(h) == 2 and all(_is_int(x) for x in h) for h in v)
            for k, v in zones.items())):
        raise store.CorruptResults([f"{path}: bases.{key}.zones: expected {{side index: [[q, r], ...]}}"])
    try:
        params = json.loads(row.get("params") or "")
    except (TypeError, ValueError, RecursionError):
        params = None
    if not isinstance(params, dict):
        raise store.CorruptResults([f"{out_dir}: battle {bid}: params: expected a JSON object"])
    digest = _schema_digest(base["data"], f"{path}: bases.{key}.data")
    problems = []
    if base_key_of(digest, zones if SETUP in params else None) != key:
        problems.append(f"{path}: bases.{key}: the stored base scenario does not hash to its key (edited)")
    if point_key(str(key), params) != row.get("point_key"):
        problems.append(f"{out_dir}: battle {bid}: its parameters do not hash to its point key "
                        f"{row.get('point_key')} (edited)")
    try:
        rep, seed = int(row.get("rep", "")), int(row.get("seed", ""))  # missing: ValueError
    except (TypeError, ValueError):
        rep = seed = -1
    if run_key_of(str(row.get("point_key")), rep, seed) != bid:
        problems.append(f"{out_dir}: battle {bid}: its point, replication and seed do not hash to its key (edited)")
    d = manifest.get("design") or {}
    if not problems and any(p.get("key") == row.get("point_key") for p in d.get("points", [])):
        want = run_identity(str(row["point_key"]), rep, d["seed"],  # an int (verified_manifest checks it)
                            bool((d.get("experiment") or {}).get("common_random_numbers", False)))
        if want.seed != seed:
            problems.append(f"{out_dir}: battle {bid}: seed {seed} is not the one the design's root seed gives "
                            f"({want.seed}) (edited)")
    if problems:
        raise store.CorruptResults(problems)
    return base


def rerun_from(out_dir: str | Path, battle_id: str | None, plot: str | None = None, as_json: bool = False) -> int:
    """``tanksim run --from DIR --battle ID``: play a stored battle again from its row (seed and resolved
    parameters, on the base scenario recorded in the manifest), compare the outcome with the stored one, print
    it (or JSON with ``reproduced``), and draw the final board to ``plot`` if given.  Before anything is built the
    stored hashes are checked (:func:`verified_manifest`, :func:`verify_run_row`): an edited manifest or part is
    refused.  Exit code 0 when the result is reproduced, 1 when it differs, 2 for a bad folder or id, or hashes
    that do not match."""
    from sim.runner import losses_by_cause
    from sim.view.render import picture_of, save_board, shots_of

    try:
        if not battle_id:
            raise KeyError("give the battle to re-run with --battle ID (a run_key of the results)")
        manifest = verified_manifest(out_dir)
        row = find_run(out_dir, battle_id)
        base = verify_run_row(manifest, {str(k): v for k, v in row.items()}, out_dir)
    except (FileNotFoundError, KeyError) as exc:
        print(f"tanksim run --from: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except store.CorruptResults as exc:
        print("\n".join(f"tanksim run --from: {p}" for p in exc.problems), file=sys.stderr)
        print(f"tanksim run --from: {out_dir}: the stored hashes do not match; refusing to run anything from it",
              file=sys.stderr)
        return 2
    ctx = BaseContext(row["base_key"], base["data"], base["src"],
                      {int(k): [tuple(h) for h in v] for k, v in base["zones"].items()})
    task = Task(row["run_key"], row["point_key"], int(row["rep"]), int(row["seed"]), row["params"])
    models: list = []
    new = play(ctx, task, events=False, watchdog_s=None, keep_model=models)["row"]
    diffs = {}
    for c in OUTCOME_COLUMNS:
        a, b = row.get(c), new.get(c)
        a = None if a is None or (not isinstance(a, str) and pd.isna(a)) else a
        if (a is None) != (b is None) or (a is not None and a != b and str(a) != str(b)):
            diffs[c] = {"stored": None if a is None else (a.item() if hasattr(a, "item") else a), "now": b}
    if new["status"] != "ok" and row["status"] == new["status"]:
        diffs.pop("scenario_hash", None)
    ok = not diffs
    if plot and models:
        b = models[0].battle
        verdict = ((new.get("winner") or "nobody") + " wins") if new.get("status") == "ok" else new.get("status")
        title = f"{row['run_key']}: {verdict} (turn {new.get('turns')}), seed {row['seed']}"
        save_board(picture_of(b, shots_of(b), title), plot)
    if as_json:
        print(json.dumps({"battle": row["run_key"], "reproduced": ok, "differences": diffs,
                          "row": {k: v for k, v in new.items() if k not in store.VOLATILE_COLUMNS}},
                         sort_keys=True, default=str))
        return 0 if ok else 1
    print(f"battle {row['run_key']} (point {row['point_key']}, replication {row['rep']}, seed {row['seed']})")
    print(f"  parameters: {row['params']}")
    if new["status"] != "ok":
        print(f"  {new['status']}: {new.get('error')}")
    else:
        print(f"  result:  {'winner ' + new['winner'] if new['winner'] else 'draw'} - {new['reason']}")
        causes = losses_by_cause(models[0].battle.log, models[0].battle.tanks) if models else []
        print(f"  turns:   {new['turns']}")
        for si in range(2):
            how = ", ".join(f"{why}: {n}" for why, n in causes[si].items()) if si < len(causes) else ""
            print(f"  {new[f'side{si + 1}_name']:<10} lost {new[f'side{si + 1}_lost']} of "
                  f"{new[f'side{si + 1}_tanks']}{f' ({how})' if how else ''}")
        print(f"  shots {new['shots']}, hits {new['hits']}, kills {new['kills']}")
    if ok:
        print("  reproduced: the stored result and this run agree")
    else:
        for c, d in diffs.items():
            print(f"  DIFFERS {c}: stored {d['stored']!r}, now {d['now']!r}")
    if plot:
        print(f"  board picture: {plot}")
    return 0 if ok else 1


__all__ = [
    "BatchRefused",
    "BatchResult",
    "BatchSummary",
    "BattleTimeout",
    "Chunk",
    "Pool",
    "Task",
    "comparable",
    "drop_runs",
    "execute",
    "failed_run_keys",
    "find_run",
    "load_runs",
    "open_executor",
    "play",
    "read_manifest",
    "rerun_from",
    "run_chunk",
    "run_experiment",
    "watchdog",
]
