"""The peer's figure (not a test): CPU seconds per Atlatl game, city-inf-25, pass-agg vs pass-agg (issue 14).

Atlatl (github ``cjdarken/atlatl-public``) is the peer that ``benchmarks/battle.py`` compares with.  Its code is not
part of tanksim and is never committed here: give this script the path of a work tree you checked out yourself::

    git clone https://github.com/cjdarken/atlatl-public /tmp/atlatl      # or: git archive HEAD | tar -x -C ...
    python benchmarks/peer.py /tmp/atlatl [--seeds 5] [--json]

What it does: copies ``<path>/server`` into a temporary directory (the checkout is left untouched), replaces the copy's
``airegistry.py`` by a registry holding only ``pass-agg`` (so the neural-network modules, which need torch, gym and
model files, are not imported; nothing of pass-agg or the game changes), then for each scenario seed runs
``server.py city-inf-25 --blueAI pass-agg --redAI pass-agg --nReps 1 --exitWhenTerminal --scenarioSeed S`` with the
Python running this script and takes the child's CPU seconds (user + system, ``getrusage(RUSAGE_CHILDREN)``) minus
the CPU of importing the same ``server`` module alone (the median of three), i.e. CPU per game after imports, the
measure ``benchmarks/battle.py`` uses.  city-inf-25 is a 25 x 25 hex map with 50 units a side and 40 phases.
Prints each seed's figure and the median; ``--json`` prints one JSON object instead.  Needs ``websockets`` in that
Python (tanksim's environment has it).  The temporary copy is deleted at the end.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REGISTRY = '''# Written by tanksim's benchmarks/peer.py in a throwaway copy: only the AI the benchmark runs, so that the
# neural-network AIs (torch, gym) are not imported.
import ai.pass_agg
ai_registry = {"pass-agg": (ai.pass_agg.AI, {})}
'''


def child_cpu(cmd: list[str], cwd: Path, timeout: float) -> float:
    """CPU seconds (user + system) of one child process run to its end; raises on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(atlatl: Path, seeds: int = 5, timeout: float = 600.0) -> dict:
    """Per-game CPU seconds after imports for scenario seeds ``1..seeds``: ``{"per_game": [...], "median": s,
    "import_s": s}``.  Raises ``FileNotFoundError`` if ``atlatl/server/server.py`` is missing."""
    src = atlatl / "server"
    if not (src / "server.py").is_file():
        raise FileNotFoundError(f"{src / 'server.py'}: expected an Atlatl work tree (github cjdarken/atlatl-public)")
    with tempfile.TemporaryDirectory(prefix="atlatl-peer-") as tmp:
        work = Path(tmp) / "server"
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("*.pt", "*.pth", "*.zip", "__pycache__"))
        (work / "airegistry.py").write_text(REGISTRY, encoding="utf-8")
        py = sys.executable
        imp = statistics.median(child_cpu([py, "-c", "import server"], work, timeout) for _ in range(3))
        per_game = []
        for seed in range(1, seeds + 1):
            cpu = child_cpu([py, "server.py", "city-inf-25", "--blueAI", "pass-agg", "--redAI", "pass-agg",
                             "--nReps", "1", "--exitWhenTerminal", "--scenarioSeed", str(seed)], work, timeout)
            per_game.append(round(cpu - imp, 3))
    return {"peer": "atlatl city-inf-25 pass-agg v pass-agg", "seeds": seeds, "import_s": round(imp, 3),
            "per_game": per_game, "median": statistics.median(per_game)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("atlatl", type=Path, help="path of an Atlatl work tree (github cjdarken/atlatl-public)")
    ap.add_argument("--seeds", type=int, default=5, help="games (scenario seeds 1..N), default 5")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    try:
        res = measure(args.atlatl, args.seeds)
    except (FileNotFoundError, RuntimeError) as e:
        print(f"peer.py: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res))
    else:
        for seed, s in enumerate(res["per_game"], 1):
            print(f"  seed {seed}: {s:.2f} CPU s per game")
        print(f"{res['peer']}: median {res['median']:.2f} CPU s per game after imports "
              f"(imports {res['import_s']:.2f} s), {res['seeds']} games")
    return 0


if __name__ == "__main__":
    sys.exit(main())
