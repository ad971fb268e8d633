"""Replays refuse tampered or damaged logs with ``FILE: event N (seq S): what was expected``, never a traceback:
the issue's reproducers (a tank -1 moving, a teleport, facing 99), checksums of stored logs, the last frame against
the stored final state, and a seeded fuzzer (truncated, reordered, retyped, mangled rows)."""
from __future__ import annotations

import json
import random
import re

import pandas as pd
import pytest
import yaml

from conftest import small_ps_scenario
from sim import cli
from sim.experiments import store
from sim.runner import run_battle
from sim.scenario import find_scenario, load_scenario, validate
from sim.view import replay


@pytest.fixture(scope="module")
def logs():
    """Real logs and final states: the small Panzer Squadron battle, the bundled ASL and Hummel Quest ram brawl."""
    out = {"ps": run_battle(validate(small_ps_scenario(), "small"), 3),
           "hq": run_battle(load_scenario("hq_ram_brawl"), 1)}
    src, text = find_scenario("asl_1941_meeting")
    out["asl"] = run_battle(validate({**yaml.safe_load(text), "turn_limit": 3}, src), 2)
    return out


def _rows(result, file="f"):
    df = pd.DataFrame(result.events).astype(object)  # any value may go anywhere (the fuzzer's mutations)
    df["_file"] = file
    return df


def _check(rows, final, file="f"):
    items = replay.events_of(rows, file)
    frs = replay.frames(items)
    replay.check_final(frs, items, final, file)
    return frs


def _set(df, i, **fields):
    p = json.loads(df.at[i, "data"])
    p.update(fields)
    df.at[i, "data"] = json.dumps(p)
    return df


def test_real_logs_of_every_rule_set_pass(logs):
    for r in logs.values():
        frs = _check(_rows(r), r.final_state)
        assert frs[-1].state == r.final_state


@pytest.mark.parametrize("what, mutate, message", [
    ("tank -1 moving", lambda df, i: _set(df, i, tank=-1), r"Moved\.tank: expected a tank id .* found -1"),
    ("tank 99 moving", lambda df, i: _set(df, i, tank=99), r"Moved\.tank: expected a tank id 0\.\.5, found 99"),
    ("teleport", lambda df, i: _set(df, i, hex=[10, 0]), r"Moved\.hex: tank \d .* expected an adjacent hex"),
    ("off the map", lambda df, i: _set(df, i, hex=[40, 40]), r"Moved\.hex: expected a hex on the map"),
    ("facing 99", lambda df, i: _set(df, i, facing=99), r"Moved\.facing: expected a facing \(an integer 0\.\.5\), "
                                                           r"found 99"),
    ("facing as text", lambda df, i: _set(df, i, facing="2"), r"Moved\.facing: expected a facing .* found '2'"),
    ("a hex of three", lambda df, i: _set(df, i, hex=[1, 2, 3]), r"Moved\.hex: expected a hex \[q, r\]"),
    ("unknown field", lambda df, i: _set(df, i, speed=3), r"Moved: expected the fields cost, facing, hex, tank; "
                                                           r"unknown 'speed'"),
    ("unknown kind", lambda df, i: df.assign(kind=df["kind"].where(df.index != i, "Teleported")),
     r"kind: expected one of .* found 'Teleported'"),
    ("not JSON", lambda df, i: df.assign(data=df["data"].where(df.index != i, "{broken")), r"data: not valid JSON"),
    ("a gap", lambda df, i: df.drop(index=i).reset_index(drop=True), r"expected seq \d+ \(a gap"),
    ("truncated", lambda df, i: df.iloc[:-3].reset_index(drop=True), r"the log ends with \w+, not BattleEnded"),
    ("moved twice", lambda df, i: pd.concat([df.iloc[:i + 1], df.iloc[i:]]).reset_index(drop=True),
     r"repeated or out-of-order seq"),
])
def test_tampered_logs_are_refused_naming_the_event(logs, what, mutate, message):
    r = logs["ps"]
    df = _rows(r)
    i = int(df.index[df["kind"] == "Moved"][0])
    with pytest.raises(replay.ReplayError) as err:
        _check(mutate(df.copy(), i), r.final_state)
    text = str(err.value)
    assert text.startswith("f: "), text
    assert re.search(message, text), text
    if what not in ("truncated",):
        assert re.search(r"f: event \d+ \(seq \d+\): ", text), text


def test_last_frame_must_equal_the_stored_final_state(logs):
    r = logs["ps"]
    final = json.loads(json.dumps(r.final_state))
    final[2]["facing"] = (final[2]["facing"] + 1) % 6
    with pytest.raises(replay.ReplayError, match=r"differs from the stored one: tank 2 .* facing: replay \d, stored"):
        _check(_rows(r), final)
    # a consistent edit of the log alone (a later pivot) is caught by the final state too
    df = _rows(r)
    last_ended = int(df.index[df["kind"] == "BattleEnded"][0])
    piv = {"seq": last_ended, "turn": int(df.at[last_ended, "turn"]), "kind": "Pivoted",
           "data": json.dumps({"tank": 1, "facing": 3, "turret_facing": None, "cost": 0}), "rolls": "[]", "_file": "f"}
    df = pd.concat([df.iloc[:last_ended], pd.DataFrame([piv]), df.iloc[last_ended:]]).reset_index(drop=True)
    df["seq"] = range(len(df))
    if r.final_state[1]["facing"] != 3 and r.final_state[1]["hex"] is not None:
        with pytest.raises(replay.ReplayError, match="differs from the stored one: tank 1"):
            _check(df, r.final_state)


JUNK = [None, -1, 6, 99, 10 ** 30, 1.5, True, "x", "", [], [1], [1, 2, 3], {}, {"a": 1}, "9" * 5000]


def _nested(depth):
    """JSON text of a list nested ``depth`` deep (too deep for ``json.dumps`` to write)."""
    return "[" * depth + "1" + "]" * depth


def _mutate(rng: random.Random, df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    n = len(df)
    i = rng.randrange(n)
    op = rng.randrange(12)
    if op == 0:  # truncate
        return df.iloc[: rng.randrange(1, n)].reset_index(drop=True)
    if op == 1:  # drop a row
        return df.drop(index=i).reset_index(drop=True)
    if op == 2:  # reorder two events (seq stays ascending)
        j = rng.randrange(n)
        a, b = df.loc[i, ["kind", "data"]].copy(), df.loc[j, ["kind", "data"]].copy()
        df.loc[i, ["kind", "data"]], df.loc[j, ["kind", "data"]] = b.values, a.values
        return df
    if op == 3:  # rows out of order
        j = rng.randrange(n)
        order = list(range(n))
        order[i], order[j] = order[j], order[i]
        return df.iloc[order].reset_index(drop=True)
    if op == 4:  # wrong seq / turn
        col = rng.choice(["seq", "turn"])
        df[col] = df[col].astype(object)
        df.at[i, col] = rng.choice([-1, 10 ** 6, "3", 2.5, None, True, i + 1])
        return df
    if op == 5:  # wrong kind
        df.at[i, "kind"] = rng.choice(["Moved", "Pivoted", "BattleStarted", "BattleEnded", "TurnStarted", "moved",
                                       "", "Nope", None, 7])
        return df
    if op == 6:  # mangled JSON text
        text = df.at[i, "data"]
        df.at[i, "data"] = rng.choice([text[: len(text) // 2], text + "x", "[]", "null", "1", '"s"', None, 5,
                                       _nested(5000)])
        return df
    payload = json.loads(df.at[i, "data"])
    if not payload:
        payload = {"x": 1}
    key = rng.choice(sorted(payload))
    if op == 7:  # a field of the wrong type or out of range (or nested too deep)
        if rng.random() < 0.1:
            df.at[i, "data"] = json.dumps({**payload, key: 0}).replace(f'"{key}": 0', f'"{key}": {_nested(3000)}')
            return df
        payload[key] = rng.choice(JUNK)
    elif op == 8:  # a field missing
        del payload[key]
    elif op == 9:  # an extra field
        payload["extra_" + key] = 1
    elif op == 10 and df.at[i, "kind"] != "BattleStarted":  # nudge an id or a hex
        for k in ("tank", "shooter", "target", "side", "winner", "facing", "turn"):
            if isinstance(payload.get(k), int):
                payload[k] += rng.choice([-1, 1, 6, -7])
        if isinstance(payload.get("hex"), list):
            payload["hex"] = [payload["hex"][0] + rng.choice([-2, 2]), payload["hex"][1]]
    else:  # the set-up itself
        start = json.loads(df.at[0, "data"])
        part = rng.choice(["map", "tanks", "sides", "objectives"])
        if part == "map":
            start["map"][rng.choice(["cells", "terrain", "hex_size_m"])] = rng.choice(JUNK)
        elif part == "tanks" and start["tanks"]:
            t = rng.choice(start["tanks"])
            t[rng.choice(sorted(t))] = rng.choice(JUNK)
        elif part == "sides":
            start["sides"] = rng.choice([[], start["sides"][:1], [{"name": 1}, {"name": "b"}], JUNK[3]])
        else:
            start["objectives"] = [{"hex": rng.choice(JUNK)}]
        df.at[0, "data"] = json.dumps(start)
        return df
    df.at[i, "data"] = json.dumps(payload)
    return df


def test_fuzzed_logs_give_clean_errors_or_the_stored_final_state(logs):
    rng = random.Random(20240611)
    counts = {"error": 0, "same": 0}
    for case in range(240):
        r = logs[("ps", "hq", "asl")[case % 3]]
        df = _mutate(rng, _rows(r, file=f"f{case}"))
        try:
            frs = _check(df, r.final_state, file=f"f{case}")
        except replay.ReplayError as exc:
            text = str(exc)
            assert text.startswith(f"f{case}: "), text
            assert len(text) < 600, text  # no unbounded value echoed
            counts["error"] += 1
        else:  # accepted only if it rebuilds the stored final state exactly
            assert frs[-1].state == r.final_state
            counts["same"] += 1
    assert counts["error"] > 200, counts


def _single_folder(tmp_path, r):
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(small_ps_scenario()))
    out = tmp_path / "run"
    assert cli.main(["run", str(f), "--seed", "3", "--out", str(out)]) == 0
    return out


def test_stored_logs_are_checked_against_their_checksums(tmp_path, capsys, logs):
    out = _single_folder(tmp_path, logs["ps"])
    gif = tmp_path / "x.gif"
    capsys.readouterr()
    assert replay.main([str(out), "--out", str(gif), "--per", "turn", "--size", "3", "--dpi", "30"]) == 0
    assert "the last frame equals the stored final state" in capsys.readouterr().out
    data = (out / "events.parquet").read_bytes()
    (out / "events.parquet").write_bytes(data[: len(data) - 40])
    assert replay.main([str(out), "--out", str(gif)]) == 2
    err = capsys.readouterr().err
    assert f"tanksim replay: {out / 'events.parquet'}: truncated or changed: the manifest says" in err
    # a tampered log whose checksum was not updated is caught by its checksum; one re-written without a ledger
    # (no checksums to check) is caught by the event checks
    rows = pd.DataFrame(logs["ps"].events)
    rows = _set(rows, int(rows.index[rows["kind"] == "Moved"][0]), tank=-1)
    store.write_table_atomic(store.events_table(rows.to_dict("records")), out / "events.parquet")
    assert replay.main([str(out), "--out", str(gif)]) == 2
    assert re.search(r"events\.parquet: (checksum mismatch|truncated or changed)", capsys.readouterr().err)
    (out / store.LEDGER).unlink()
    assert replay.main([str(out), "--out", str(gif)]) == 2
    assert re.search(r"events\.parquet: event \d+ \(seq \d+\): Moved\.tank: expected a tank id",
                     capsys.readouterr().err)
    # columns of the wrong type, and a file that is not Parquet at all
    bad = rows.assign(seq=rows["seq"].astype(str))
    bad.to_parquet(out / "events.parquet")
    assert replay.main([str(out), "--out", str(gif)]) == 2
    assert "column seq: expected integers" in capsys.readouterr().err
    (out / "events.parquet").write_bytes(b"PAR1 not really")
    assert replay.main([str(out / "events.parquet"), "--out", str(gif)]) == 2
    assert "not an event table" in capsys.readouterr().err


def test_a_batch_folder_log_is_compared_with_the_final_state_stored_beside_it(tmp_path, logs):
    r = logs["ps"]
    events = [{"run_key": "k1", **e} for e in r.events]
    events[-1]["final_state"] = json.dumps(r.final_state)
    store.write_run_part(tmp_path, 1, [{"run_key": "k1"}], store.run_schema(), events=events)
    rp = replay.load_replay(tmp_path, "k1")
    assert rp.final_checked and rp.frames[-1].state == r.final_state
    part = tmp_path / "events" / "part-000001.parquet"
    assert replay.load_replay(part, "k1").final_checked  # the file alone is checked against the folder's ledger
    wrong = json.loads(json.dumps(r.final_state))
    wrong[0]["status"] = "exited"
    events[-1]["final_state"] = json.dumps(wrong)
    store.write_run_part(tmp_path, 1, [{"run_key": "k1"}], store.run_schema(), events=events)  # checksums match
    with pytest.raises(replay.ReplayError, match=rf"{re.escape(str(part))}: the replayed final state differs from "
                                                 r"the stored one: tank 0 .* status: replay '\w+', stored 'exited'"):
        replay.load_replay(tmp_path, "k1")
    _flip = bytearray(part.read_bytes())
    _flip[100] ^= 0xFF
    part.write_bytes(bytes(_flip))
    with pytest.raises(replay.ReplayError, match=rf"{re.escape(str(part))}: checksum mismatch"):
        replay.load_replay(tmp_path, "k1")
    with pytest.raises(replay.ReplayError, match=rf"{re.escape(str(part))}: checksum mismatch"):
        replay.load_replay(part, "k1")
