"""The event logs of the bundled battles stay byte-identical: sha256 of each log at seeds 1-5, kept in
``tests/log_hashes.json``.

Every battle scenario in ``scenarios/`` (the experiment and tournament files there are not battles) is played with
its own policies, seeds 1-5, wall-clock decision limits off (``decision_timeout_s=0``: a slow decision on a loaded
machine must not turn into a fault), up to the ``max_turns`` stored beside its hashes (``null``: to the end).  The
log is serialised canonically, one JSON line per entry: ``seq``, ``turn``, ``kind``, ``data`` (the event's payload)
and ``rolls`` (``[die, value, label]`` of every roll it consumed), keys sorted, no spaces; the hash is over the lines
joined by ``\\n``.

A change that alters a log on purpose (a documented rules bug fix) rewrites the file with
``python tests/test_log_hashes.py --write`` and says so in its commit.  Other logs (benchmark battles) may be added
to the file as further entries with their own ``file``; ``--write`` keeps each entry's ``file`` and ``max_turns``.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).with_name("log_hashes.json")
SEEDS = (1, 2, 3, 4, 5)


def canonical_log(model: Any) -> str:
    """The canonical text of ``model.battle.log``: one sorted-key JSON line per entry (see the module docstring)."""
    from sim.events import to_json

    lines = []
    for entry in model.battle.log:
        row = {"seq": entry.seq, "turn": entry.turn, "kind": entry.event.kind, "data": entry.event.payload(),
               "rolls": [[r.die, r.value, r.label] for r in entry.rolls]}
        lines.append(to_json(row))
    return "\n".join(lines)


def log_hash(path: Path, seed: int, max_turns: int | None) -> str:
    """sha256 (hex) of the canonical log of the battle ``path`` at ``seed``, to ``max_turns`` turns or the end."""
    from sim.model import BattleModel
    from sim.scenario import load_scenario

    model = BattleModel(load_scenario(path), seed, decision_timeout_s=0)
    model.run(max_turns=max_turns)
    return hashlib.sha256(canonical_log(model).encode()).hexdigest()


def battle_files() -> list[Path]:
    """The battle scenarios bundled in ``scenarios/`` (files with a ``sides`` list; not experiments/tournaments)."""
    import yaml

    out = []
    for p in sorted((ROOT / "scenarios").glob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        if isinstance(data, dict) and "sides" in data and "ruleset" in data:
            out.append(p)
    return out


def stored() -> dict[str, Any]:
    """The stored hashes (``{"seeds": [...], "logs": [{file, max_turns, sha256: {seed: hex}}]}``)."""
    return json.loads(DATA.read_text()) if DATA.exists() else {"seeds": list(SEEDS), "logs": []}


def test_the_hashed_benchmark_battles_are_the_benchmark_cases():
    """``benchmarks/scenarios/*.yaml`` are the cases ``benchmarks/battle.py`` times (``--write-scenarios``), so the
    hashes above keep the benchmark battles themselves byte-identical, and every hashed case has its entry."""
    import yaml

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import battle as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    files = {e["file"] for e in stored()["logs"]}
    for name in bench.HASHED_CASES:
        rel = f"benchmarks/scenarios/{name}.yaml"
        assert rel in files, rel
        assert yaml.safe_load((ROOT / rel).read_text()) == bench.case_scenario(name), rel


def test_every_bundled_battle_has_hashes():
    names = {p.relative_to(ROOT).as_posix() for p in battle_files()}
    assert names, "no battle scenario found in scenarios/"
    kept = {e["file"] for e in stored()["logs"]}
    assert names <= kept, f"bundled battles without stored log hashes: {sorted(names - kept)}"


@pytest.mark.parametrize("entry", stored()["logs"], ids=lambda e: Path(e["file"]).stem)
def test_log_hash(entry):
    path = ROOT / entry["file"]
    got = {str(seed): log_hash(path, seed, entry["max_turns"]) for seed in SEEDS}
    assert got == entry["sha256"], (f"{entry['file']}: the event logs changed (seeds where they differ: "
                                    f"{[s for s in got if got[s] != entry['sha256'].get(s)]})")


def write() -> None:
    """Recompute every stored entry (and add bundled battles not yet listed, played to the end)."""
    old = {e["file"]: e for e in stored()["logs"]}
    for p in battle_files():
        old.setdefault(p.relative_to(ROOT).as_posix(), {"file": p.relative_to(ROOT).as_posix(), "max_turns": None})
    logs = []
    for name in sorted(old):
        e = old[name]
        logs.append({"file": name, "max_turns": e["max_turns"],
                     "sha256": {str(s): log_hash(ROOT / name, s, e["max_turns"]) for s in SEEDS}})
    DATA.write_text(json.dumps({"seeds": list(SEEDS), "logs": logs}, indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_log_hashes.py --write   (rewrites tests/log_hashes.json)")
    sys.path.insert(0, str(ROOT))
    write()
