"""Hostile files, at scale: the fuzzer of ``tests/test_fuzz.py`` (``tests/fuzz_files.py``) on 2,000+ files, each
checked as ``tanksim validate`` checks it (an accepted scenario is also built and played for a few decisions).

    python benchmarks/fuzz.py [--files N] [--seed S] [--workers W] [--memory-mb M] [--keep DIR] [--json]

Files are checked in worker processes confined with ``RLIMIT_AS`` (``--memory-mb``, default 2048) and a CPU-time
guard, so a memory blow-up is counted (a ``MemoryError`` is a traceback; a worker killed by the kernel a crash), not
suffered; a file still running after ``--hang-s`` wall seconds (default 120) is a hang: its worker is killed and
replaced.  Printed: files, clean errors, accepted, unnamed errors (no file or field named), tracebacks, hangs,
crashes, files over 5 s of CPU, the slowest file and the peak memory of a worker.  The goal is 0 tracebacks,
0 unnamed errors, 0 hangs and 0 crashes.  ``--keep DIR`` keeps every file that failed (with its mutation).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import fuzz_files as F  # noqa: E402

#: CPU seconds above which a file counts as slow (the test's bound), and at which the worker's guard stops it.
SLOW_S = 5.0
GUARD_S = 60.0


def worker(memory_mb: int) -> int:
    """Serve ``{"path", "seed"}`` lines on stdin with one result line each on stdout."""
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    class Runaway(Exception):
        pass

    def stop(signum, frame):
        raise Runaway(f"more than {GUARD_S:g} s of CPU")

    signal.signal(signal.SIGVTALRM, stop)
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing a file does may corrupt the protocol
    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_VIRTUAL, GUARD_S)
        try:
            res = F.check_file(Path(job["path"]), job["seed"])
            status, cpu, msg = res.status, res.cpu_s, res.message
        except Runaway as exc:
            status, cpu, msg = "hang", GUARD_S, str(exc)
        except MemoryError:
            status, cpu, msg = "traceback", 0.0, "MemoryError (the memory limit was reached)"
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        out.write(json.dumps({"status": status, "cpu_s": cpu, "wall_s": time.perf_counter() - t0,
                              "message": msg[-1500:],
                              "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}) + "\n")
        out.flush()
    return 0


class Worker:
    """One confined worker process and the job it is on."""

    def __init__(self, memory_mb: int):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--memory-mb", str(memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env, cwd=tempfile.gettempdir())
        self.job: dict | None = None
        self.started = 0.0

    def give(self, job: dict) -> None:
        self.job, self.started = job, time.monotonic()
        self.proc.stdin.write(json.dumps({"path": job["path"], "seed": job["seed"]}) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0, help="first chooser seed (file i uses seed + i)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-mb", type=int, default=2048)
    p.add_argument("--hang-s", type=float, default=120.0)
    p.add_argument("--keep", help="folder for the files that failed")
    p.add_argument("--json", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.memory_mb)
    tmp = Path(tempfile.mkdtemp(prefix="tanksim-fuzz-"))
    jobs = collections.deque()
    for i in range(args.files):
        seed_name, raw, what = F.mutate(F.RandomChooser(args.seed + i))
        path = tmp / f"f{i:05d}.yaml"
        path.write_bytes(raw)
        jobs.append({"i": i, "path": str(path), "seed": seed_name, "what": what})
    counts: collections.Counter[str] = collections.Counter()
    failures: list[dict] = []
    slowest = {"cpu_s": 0.0}
    peak_mb = 0.0
    t0 = time.perf_counter()
    workers = [Worker(args.memory_mb) for _ in range(max(1, args.workers))]
    try:
        for w in workers:
            if jobs:
                w.give(jobs.popleft())
        while any(w.job for w in workers):
            busy = {w.proc.stdout: w for w in workers if w.job}
            ready, _, _ = select.select(list(busy), [], [], 1.0)
            for stream in ready:
                w = busy[stream]
                line = stream.readline()
                job = w.job
                if not line:  # the worker died (killed by the kernel, a C crash)
                    res = {"status": "crash", "cpu_s": 0.0, "message": f"worker exit {w.proc.wait()}"}
                    workers[workers.index(w)] = w = Worker(args.memory_mb)
                else:
                    res = json.loads(line)
                    peak_mb = max(peak_mb, res.get("maxrss_mb", 0.0))
                w.job = None
                counts[res["status"]] += 1
                counts["slow"] += res["cpu_s"] > SLOW_S
                if res["cpu_s"] > slowest["cpu_s"]:
                    slowest = {**job, **res}
                if res["status"] not in ("accepted", "error"):
                    failures.append({**job, **res})
                if jobs:
                    w.give(jobs.popleft())
            now = time.monotonic()
            for k, w in enumerate(workers):
                if w.job and now - w.started > args.hang_s:
                    counts["hang"] += 1
                    failures.append({**w.job, "status": "hang", "message": f"still running after {args.hang_s:g} s"})
                    w.kill()
                    workers[k] = Worker(args.memory_mb)
                    if jobs:
                        workers[k].give(jobs.popleft())
    finally:
        for w in workers:
            w.kill()
    wall = time.perf_counter() - t0
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        for f in failures:
            src = Path(f["path"])
            (keep / src.name).write_bytes(src.read_bytes())
            (keep / (src.stem + ".txt")).write_text(json.dumps(f, indent=1), encoding="utf-8")
    summary = {"files": args.files, "clean_errors": counts["error"], "accepted": counts["accepted"],
               "unnamed_errors": counts["unnamed"], "tracebacks": counts["traceback"], "hangs": counts["hang"],
               "crashes": counts["crash"], "over_5s_cpu": counts["slow"], "peak_worker_memory_mb": round(peak_mb),
               "slowest_cpu_s": round(slowest["cpu_s"], 2), "slowest": slowest.get("what", ""),
               "wall_s": round(wall, 1), "workers": args.workers, "memory_limit_mb": args.memory_mb}
    for f in failures[:20]:
        print(f"FAIL {f['status']} {Path(f['path']).name} from {f['seed']} ({f['what']}): "
              f"{f['message'][-600:]}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"fuzz: {summary['files']} files, {summary['clean_errors']} clean errors, {summary['accepted']} "
              f"accepted, {summary['unnamed_errors']} unnamed errors, {summary['tracebacks']} tracebacks, "
              f"{summary['hangs']} hangs, {summary['crashes']} crashes, {summary['over_5s_cpu']} over 5 s CPU; "
              f"slowest {summary['slowest_cpu_s']} s CPU ({summary['slowest'][:80]}); peak worker memory "
              f"{summary['peak_worker_memory_mb']} MB (limit {args.memory_mb} MB); {summary['wall_s']} s wall on "
              f"{args.workers} workers")
    for f in Path(tmp).iterdir():
        f.unlink()
    tmp.rmdir()
    bad = counts["traceback"] + counts["unnamed"] + counts["hang"] + counts["crash"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
