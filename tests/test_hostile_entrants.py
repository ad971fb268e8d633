"""Hostile isolated entrants (tests/hostile_entrant.py) against the sandbox (agents.sandbox): every attack fails,
as seen from outside the sandbox, and games and tournaments finish with the right rows."""
from __future__ import annotations

import ctypes
import functools
import json
import os
import secrets
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from test_isolation import DUEL, remote_spec

from agents import sandbox as SB
from sim.scenario import PolicySpec, validate

HOSTILE = Path(__file__).with_name("hostile_entrant.py")
LIMITS = {"cpu_s": 20, "memory_mb": 400, "processes": 16, "decision_wall_s": 30, "startup_wall_s": 60}

ROOT_ON_LINUX = sys.platform.startswith("linux") and os.geteuid() == 0
pytestmark = pytest.mark.skipif(not ROOT_ON_LINUX, reason="the sandbox needs Linux and root")


@pytest.fixture(autouse=True)
def _sandbox_in_force():
    # as root on Linux the sandbox must work: a machine where it does not is a failure here, never a silent skip
    assert SB.confinement().method == "sandbox", SB.confinement().reason


def hostile(mode: str, *args: object) -> dict:
    return {"name": f"hostile-{mode}", "command": [sys.executable, str(HOSTILE), mode, *map(str, args)]}


def battle(entrants: dict, seed: int = 1, events: bool = False):
    """Play DUEL with ``entrants`` ({side: PolicySpec}); returns (row, events, {side: (stderr, usage, uid)})."""
    from agents.isolation import RemotePolicy, close_policies
    from sim.runner import run_battle

    holder: list = []
    seen: dict = {}
    try:
        r = run_battle(validate(DUEL), seed, entrants, record_events=events, decision_timeout_s=0,
                       on_fault="forfeit", model_out=holder)
    finally:
        for m in holder:
            pols = {s: c.policy for s, c in enumerate(m.controllers) if isinstance(c.policy, RemotePolicy)}
            tails = {s: p.child.stderr_tail(100_000) for s, p in pols.items()}
            close_policies(m)
            for s, p in pols.items():
                seen[s] = (tails[s], p.child.usage, p.child.sandbox.uid, p.child.sandbox.end)
    return r.row, r, seen


def hostile_report(stderr: str) -> dict:
    lines = [x for x in stderr.splitlines() if x.startswith("HOSTILE ")]
    assert len(lines) == 1, stderr[-2000:]
    return json.loads(lines[0][len("HOSTILE "):])


@functools.lru_cache(maxsize=None)
def hold_game(seed: int) -> dict:
    """DUEL played hold v hold in-process with ``seed``: what every game against a failed attacker must equal."""
    row, _, _ = battle({0: PolicySpec(name="hold"), 1: PolicySpec(name="hold")}, seed=seed)
    return row


@pytest.fixture(scope="module")
def hold_row():
    return hold_game(1)


KEYS = ("winner", "winner_index", "reason", "turns", "shots", "hits", "kills", "faults")


def same_game(row: dict, ref: dict) -> bool:
    return {k: row[k] for k in KEYS} == {k: ref[k] for k in KEYS}


def test_reading_and_writing_the_workers_memory_fails(hold_row):
    secret = bytearray(secrets.token_bytes(32))
    before = bytes(secret)
    addr = ctypes.addressof((ctypes.c_char * len(secret)).from_buffer(secret))
    row, _, seen = battle({0: remote_spec(hostile("memread", os.getpid(), addr, len(secret)), LIMITS),
                           1: PolicySpec(name="hold")})
    err, usage, uid, _ = seen[0]
    rep = hostile_report(err)
    assert rep["got"] == [], rep                              # nothing read, nothing written
    assert rep["seen"] == [1], rep                            # its own pid namespace: only itself
    assert bytes(secret) == before                            # the worker's memory is untouched
    assert before.hex() not in err
    assert same_game(row, hold_row), row["reason"]


def test_killing_the_opponent_and_the_worker_fails(hold_row):
    row, _, seen = battle({0: remote_spec(hostile("signal", os.getpid(), os.getppid()), LIMITS),
                           1: remote_spec({"name": "hold", "policy": "hold"}, LIMITS)})
    rep = hostile_report(seen[0][0])
    assert rep["me"] == 1 and rep["seen"] == [1] and rep["hits"] == [], rep
    assert same_game(row, hold_row), row["reason"]           # the opponent played on: no crash forfeit
    assert row["faults"] == 0


def test_setsid_grandchildren_are_bounded_and_die_with_the_game(hold_row):
    row, _, seen = battle({0: remote_spec(hostile("forkers", 40), LIMITS), 1: PolicySpec(name="hold")})
    err, usage, uid, _ = seen[0]
    rep = hostile_report(err)
    assert 0 < rep["made"] < 40, rep                          # forks past the process limit fail
    assert usage["tasks_peak"] is None or usage["tasks_peak"] <= LIMITS["processes"]
    assert SB.processes_of_uid(uid) == []                     # every grandchild died with the game
    assert same_game(row, hold_row), row["reason"]


def test_memory_limit_binds_all_processes_together(hold_row):
    row, _, seen = battle({0: remote_spec(hostile("hogs", 6, 150), LIMITS), 1: PolicySpec(name="hold")})
    err, usage, uid, _ = seen[0]
    rep = hostile_report(err)
    assert rep["made"] == 6 and rep["filled"] < 6, rep        # 900 MB asked, 400 MB allowed in all
    assert usage["memory_peak_mb"] <= LIMITS["memory_mb"] + 1, usage
    assert usage["oom_kills"] >= 6 - rep["filled"], usage
    assert SB.processes_of_uid(uid) == []
    assert same_game(row, hold_row), row["reason"]


def test_cpu_limit_binds_all_processes_together():
    from sim.tournaments.tournament import fault_kind

    lim = {**LIMITS, "cpu_s": 2}
    row, _, seen = battle({0: remote_spec(hostile("burners", 4), lim), 1: PolicySpec(name="hold")})
    err, usage, uid, _ = seen[0]
    assert hostile_report(err)["made"] == 4
    assert fault_kind(row["reason"]) == "cpu" and row["winner_index"] == 1, row["reason"]
    assert "for all its processes" in row["reason"]
    # bound together: unbound, four spinners would burn up to 2 cores x 30 s (the wall limit) before a timeout; the
    # watcher polls every CPU_POLL_S s, and a loaded machine may wake it late (hence the generous 3 s)
    assert 2 <= usage["cpu_s"] <= 2 + 3, usage
    assert SB.processes_of_uid(uid) == []


def test_environment_and_command_lines_of_others_cannot_be_read(monkeypatch, hold_row):
    canary = secrets.token_hex(16)
    monkeypatch.setenv("TANKSIM_TEST_CANARY", canary)
    row, _, seen = battle({0: remote_spec(hostile("snoop", os.getpid()), LIMITS), 1: PolicySpec(name="hold")})
    err = seen[0][0]
    rep = hostile_report(err)
    assert canary not in err and "pytest" not in err
    assert set(rep["environ"]) <= {"PATH", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                                   "PYTHONUNBUFFERED", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                   "LANG", "HOME", "TMPDIR", "LC_CTYPE"}, rep["environ"]
    assert rep["ppid"] == 0 and rep["pid"] == 1 and rep["uid"] >= SB.UID_BASE and rep["seen"] == [1]
    for what in ("environ", "cmdline"):
        assert rep[f"0/{what}"] == "FileNotFoundError" and rep[f"{os.getpid()}/{what}"] == "FileNotFoundError"
    assert same_game(row, hold_row)


def test_the_sandbox_seen_from_outside():
    """Uid, namespaces, descriptors, environment and limits of a live entrant, read from the host's /proc."""
    from agents.isolation import RemotePolicy, child_env

    sh = ["/bin/sh", "-c", """read hello; printf '%s\\n' '{"type": "ready", "name": "sh"}'; sleep 60"""]
    pol = RemotePolicy({"name": "sh", "command": sh}, LIMITS)
    try:
        pol.handshake()
        sb = pol.child.sandbox
        pid = sb.init_pid()
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        assert status["Uid"].split()[0] == str(sb.uid) and int(sb.uid) >= SB.UID_BASE
        assert status["NSpid"].split()[-1] == "1"                             # pid 1 of its own namespace
        assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0 and status["NoNewPrivs"].strip() == "1"
        for ns in ("pid", "mnt", "net", "ipc", "uts"):
            assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        assert SB.proc_fds(pid) == [0, 1, 2]
        env = dict(x.split("=", 1) for x in Path(f"/proc/{pid}/environ").read_text().split("\0") if x)
        assert env == {**child_env(), "TMPDIR": "/tmp"}
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert f"Max processes             {LIMITS['processes']}" in limits
        assert sb.cgroup is None or all(str(pid) in Path(f).read_text() for f in sb.cgroup.procs_files())
    finally:
        usage = pol.close()
    assert SB.processes_of_uid(sb.uid) == [] and (sb.cgroup is None or not sb.cgroup.dirs)
    assert usage["cpu_s"] is not None


def test_an_entrant_cannot_kill_itself_by_signal_to_void_its_game():
    from sim.tournaments.tournament import fault_kind

    row, _, seen = battle({0: remote_spec(hostile("selfkill"), LIMITS), 1: PolicySpec(name="hold")})
    assert hostile_report(seen[0][0])["alive_after"]           # its signals were sent, and it lived on
    assert fault_kind(row["reason"]) == "crash" and "a fault of its own" in row["reason"], row["reason"]
    assert row["winner_index"] == 1


def test_an_entrant_cannot_void_its_game_through_a_cpu_limit_it_lowered_itself():
    from sim.tournaments.tournament import fault_kind

    row, _, seen = battle({0: remote_spec(hostile("lowercpu"), LIMITS), 1: PolicySpec(name="hold")})
    assert hostile_report(seen[0][0])["lowered"] == [1, 1], seen[0]
    assert fault_kind(row["reason"]) == "crash" and "CPU-time limit it lowered itself" in row["reason"], \
        (row["reason"], seen[0])
    assert row["winner_index"] == 1


def test_an_entrant_stopped_from_outside_is_void_not_a_timeout(tmp_path):
    from sim.tournaments.tournament import fault_kind

    tmp_path.chmod(0o755)
    stopper = Killer(tmp_path / "go", 1, sig=signal.SIGSTOP)
    stopper.start()
    try:
        row, _, _ = battle({0: remote_spec(hostile("victim", tmp_path), {**LIMITS, "decision_wall_s": 6}),
                            1: PolicySpec(name="hold")})
    finally:
        stopper.stop.set()
        stopper.join()
    assert stopper.kills == 1
    assert fault_kind(row["reason"]) == "void" and "stopped by a signal from outside" in row["reason"], row["reason"]


class Killer(threading.Thread):
    """Sends ``sig`` (from outside) to each entrant process named ``victim-waiting`` (a victim in a game), up to
    ``times`` times, then creates ``go`` (so the next victim plays)."""

    def __init__(self, go: Path, times: int, sig: int = signal.SIGKILL):
        super().__init__(daemon=True)
        self.go, self.times, self.sig, self.kills, self.stop = go, times, sig, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and self.kills < self.times:
            for d in os.listdir("/proc"):
                try:
                    if Path(f"/proc/{d}/comm").read_text().strip() != "victim-waiting":
                        continue
                    os.kill(int(d), self.sig)
                    self.kills += 1
                    time.sleep(0.2)                          # the same process must not be counted twice
                except (OSError, ValueError):
                    continue
            time.sleep(0.01)
        self.go.touch()


def victim_tournament(tmp_path: Path, times: int):
    from sim.tournaments import tournament as T

    bots = tmp_path / "bots"
    bots.mkdir()
    bots.chmod(0o755)
    tmp_path.chmod(0o755)
    ent = [{"name": "hold", "policy": "hold"}, {"name": "victim", **{k: v for k, v in hostile("victim", bots).items()
                                                                    if k == "command"}}]
    t = T.tournament_from_mapping({"name": "void", "root_seed": 3, "games_per_pairing": 2, "decision_timeout_s": 0,
                                   "executor": {"workers": 1}, "ratings": {"bootstrap": 20},
                                   "limits": LIMITS, "scenarios": [{"inline": DUEL}], "entrants": ent}, "void.yaml")
    killer = Killer(bots / "go", times)
    killer.start()
    try:
        T.run_tournament(t, tmp_path / "out", progress=False)
    finally:
        killer.stop.set()
        killer.join()
    return T, t, killer


def test_a_game_whose_entrant_is_killed_from_outside_is_void_and_replayed(tmp_path):
    T, t, killer = victim_tournament(tmp_path, times=1)
    assert killer.kills == 1
    games = T.load_games(t, tmp_path / "out")
    assert len(games) == 2 and (games["status"] == "ok").all()
    assert not games["forfeit"].any()                        # never scored as the victim's fault
    for g in games.to_dict("records"):
        assert same_game(g, hold_game(int(g["seed"]))), g["reason"]
    assert T.read_manifest(tmp_path / "out")["confinement"]["method"] == "sandbox"


def test_a_game_killed_from_outside_every_time_is_stored_void(tmp_path):
    from sim.tournaments import tournament as T

    tmp_path.chmod(0o755)
    sc = validate(DUEL)
    hold = T.Entrant("hold", "hold", {}, None, "in_process", None)
    victim = T.Entrant("victim", None, {}, tuple(hostile("victim", tmp_path)["command"]), "process", LIMITS)
    game, _ = T.pair_games("duel", sc, victim, hold, 0, 7, 0.0)
    killer = Killer(tmp_path / "go", 1 + T.MAX_VOID_REPLAYS)
    killer.start()
    try:
        row = T.play_game(sc, game)
    finally:
        killer.stop.set()
        killer.join()
    assert killer.kills == 1 + T.MAX_VOID_REPLAYS
    assert row["status"] == "void", row
    assert row["error"].startswith(f"void after {1 + T.MAX_VOID_REPLAYS} tries: victim: killed by SIGKILL, which "
                                   "came neither from the engine nor from its limits"), row["error"]


def test_hostile_entrants_in_a_tournament_get_the_right_rows(tmp_path):
    """Two attackers (each other's isolated opponent) and an honest in-process entrant in one round robin: every
    game is hold v hold."""
    from sim.tournaments import tournament as T

    ents = [{"name": "hold", "policy": "hold"}]
    for mode, args in (("signal", ()), ("forkers", (40,))):
        ents.append({"name": f"hostile-{mode}", "command": hostile(mode, *args)["command"]})
    t = T.tournament_from_mapping({"name": "hostile", "root_seed": 3, "games_per_pairing": 2,
                                   "decision_timeout_s": 0,
                                   "executor": {"workers": 1}, "ratings": {"bootstrap": 20},
                                   "limits": LIMITS, "scenarios": [{"inline": DUEL}], "entrants": ents},
                                  "hostile.yaml")
    T.run_tournament(t, tmp_path / "out", progress=False)
    games = T.load_games(t, tmp_path / "out")
    assert len(games) == 6 and (games["status"] == "ok").all(), games[["status", "error"]]
    assert not games["forfeit"].any(), games["reason"].tolist()
    for g in games.to_dict("records"):
        assert same_game(g, hold_game(int(g["seed"]))), (g["entrant1"], g["entrant2"], g["reason"])
    m = T.read_manifest(tmp_path / "out")["confinement"]
    assert m["method"] == "sandbox" and m["not_guaranteed"] and m["guarantees"]


def test_without_the_sandbox_it_is_said_at_start_up_and_in_the_manifest(tmp_path, monkeypatch):
    from sim.tournaments import tournament as T

    monkeypatch.setenv("TANKSIM_SANDBOX", "off")
    SB.confinement.cache_clear()
    try:
        t = T.tournament_from_mapping({"name": "plain", "root_seed": 3, "games_per_pairing": 2,
                                       "decision_timeout_s": 0, "isolation": "process", "executor": {"workers": 1},
                                       "ratings": {"bootstrap": 20}, "limits": LIMITS,
                                       "scenarios": [{"inline": DUEL}],
                                       "entrants": [{"name": "hold", "policy": "hold"},
                                                    {"name": "hold2", "policy": "hold"}]}, "plain.yaml")
        with pytest.warns(SB.ConfinementWarning, match="not fully confined.*no sandbox \\(TANKSIM_SANDBOX=off\\)"):
            T.run_tournament(t, tmp_path / "out", progress=False)
        m = T.read_manifest(tmp_path / "out")["confinement"]
        assert m["method"] == "none" and m["reason"] == "TANKSIM_SANDBOX=off"
        assert any("setsid" in w for w in m["not_guaranteed"])
        games = T.load_games(t, tmp_path / "out")
        assert (games["status"] == "ok").all() and not games["forfeit"].any()
    finally:
        monkeypatch.delenv("TANKSIM_SANDBOX")
        SB.confinement.cache_clear()
