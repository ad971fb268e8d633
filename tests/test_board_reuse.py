"""Batch workers reuse one built board per scenario (issue 14): battles on ``board.for_another_battle()`` give the
same event logs as battles on boards built afresh, in any order, also after a battle that changed the terrain."""
from __future__ import annotations

from pathlib import Path

import pytest

from sim.model import BattleModel
from sim.scenario import load_scenario
from tests.test_log_hashes import canonical_log

ROOT = Path(__file__).resolve().parents[1]


def _log(spec, seed, board=None, max_turns=None):
    m = BattleModel(spec, seed, decision_timeout_s=0, board=board)
    m.run(max_turns=max_turns)
    return canonical_log(m), m


@pytest.mark.parametrize("name,max_turns", [("default", None), ("hq_ram_brawl", 6), ("asl_1941_meeting", 3)])
def test_reused_board_gives_the_fresh_logs(name, max_turns):
    spec = load_scenario(ROOT / "scenarios" / f"{name}.yaml")
    fresh = {seed: _log(spec, seed, max_turns=max_turns)[0] for seed in (1, 2)}
    template = spec.build_map()
    for seed in (2, 1, 2):  # the second battle of a seed starts with the caches of the ones before it
        log, m = _log(spec, seed, template, max_turns)
        assert m.battle.map is not template and m.battle.map._static is template._static
        assert log == fresh[seed]
    assert template.terrain_version == 0 and template.version == 0


def test_terrain_change_stays_on_its_own_board():
    spec = load_scenario("default")
    template = spec.build_map()
    _log(spec, 1, template, 4)  # warms the shared terrain cache
    shared = dict(template._static)
    assert shared, "a battle left nothing in the shared terrain cache"
    board = template.for_another_battle()
    h = min(board.cells)
    board.set_terrain(h, "woods" if board.terrain(h) != "woods" else "open")
    assert board.terrain_cached(("probe",), lambda: board.terrain(h)) == board.terrain(h)
    assert template._static == shared and ("probe",) not in template._static
    assert template.terrain(h) != board.terrain(h) and template.terrain_version == 0
    assert _log(spec, 2, template, 4)[0] == _log(spec, 2, max_turns=4)[0]


def test_a_changed_board_is_no_template():
    spec = load_scenario("default")
    board = spec.build_map()
    h = min(board.cells)
    board.set_terrain(h, board.terrain(h))
    with pytest.raises(ValueError, match="pristine"):
        board.for_another_battle()


def test_tournament_games_reuse_one_board_per_scenario_with_the_fresh_rows():
    from sim.tournaments import tournament as T
    from tests.test_tournament import three_entrants

    t = T.tournament_from_mapping(three_entrants())
    games = T.schedule(t)[::3]  # both scenarios, both legs
    by_digest = {sc.digest(): sc for _, sc in t.scenarios}

    def rows(fresh: bool) -> list[dict]:
        out = []
        for g in games:
            if fresh:
                T._BOARDS.clear()
            row = T.play_game(by_digest[g.digest], g)
            out.append({k: v for k, v in row.items() if k not in ("wall_s", "worker")})
        return out

    T._BOARDS.clear()
    fresh = rows(True)
    reused = rows(False)
    assert reused == fresh and all(r["status"] == "ok" for r in fresh)
    assert set(T._BOARDS) == {g.digest for g in games}   # one pristine board per scenario, none played on
    assert all(b.terrain_version == 0 and b.version == 0 for b in T._BOARDS.values())
    assert T.board_for(by_digest[games[0].digest]) is T._BOARDS[games[0].digest]
