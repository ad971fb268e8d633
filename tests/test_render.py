"""Board pictures people can read: shot outcomes from the events' hit / kill flags under every rule set (Hummel
Quest's killing shots were drawn as "hit, no kill"), side colours by side index, a legend of what is drawn, a
numbered key where labels would overlap, cropping to the action on big maps."""
from __future__ import annotations

import pytest

from sim.model import BattleModel
from sim.scenario import load_scenario
from sim.view import render, replay
from sim.view.render import BoardPicture, TankPicture


@pytest.mark.parametrize("scenario", ["default", "asl_1941_meeting", "hq_ram_brawl"])
def test_shot_outcomes_match_the_events_under_every_rule_set(scenario):
    m = BattleModel(load_scenario(scenario), 1)
    m.run(max_turns=6)
    shots = [x.event for x in m.battle.log if x.event.kind == "ShotResolved" and x.event.target is not None]
    drawn = [o for _, _, o in render.shots_of(m.battle)]
    expected = [render.shot_outcome(e.hit, e.kill) for e in shots]
    assert drawn == expected
    assert drawn.count("kill") == sum(e.kill for e in shots) > 0  # every battle here has a kill by turn 6
    assert drawn.count("hit") == sum(e.hit and not e.kill for e in shots)
    # the replay of the stored log draws the same outcomes
    events = [(x.turn, x.event) for x in m.battle.log]
    frs = replay.frames(events)
    assert [o for f in frs for _, _, o in f.picture.shots] == expected


def test_hummel_quest_kills_are_not_drawn_as_hits():
    assert render.shot_outcome(True, True) == "kill"      # Hummel Quest's result word is "hit" for these
    assert render.shot_outcome(True, False) == "hit"
    assert render.shot_outcome(False, False) == "miss"


def _pic(tanks, cells=None, **kw):
    cells = cells or [(q, r) for q in range(6) for r in range(6)]
    return BoardPicture(cells, {c: "open" for c in cells} | kw.pop("terrain", {}), tanks, **kw)


def test_side_colours_follow_the_side_index_not_the_name():
    a = _pic([TankPicture("A", 0, (0, 0), 0), TankPicture("B", 1, (4, 4), 0)], side_names=["Soviets", "Germans"])
    b = _pic([TankPicture("A", 0, (0, 0), 0), TankPicture("B", 1, (4, 4), 0)], side_names=["Germans", "Soviets"])
    for pic in (a, b):
        sides = [(label, colour) for kind, label, colour in render.legend_entries(pic) if kind == "side"]
        assert [c for _, c in sides] == render.SIDE_COLOURS[:2]
        assert sides[0][0].startswith("side 1: ") and sides[1][0].startswith("side 2: ")


def test_legend_lists_terrain_objectives_markers_and_outcomes():
    pic = _pic([TankPicture("A", 0, (0, 0), 0, markers=("ambush",)), TankPicture("B", 1, (4, 4), 0,
                                                                              status="destroyed")],
               terrain={(1, 1): "woods", (2, 2): "swamp"}, objectives=[(3, 3)], side_names=["x", "y"],
               shots=[((0, 0), (4, 4), "kill"), ((0, 0), (4, 4), "miss")])
    rows = render.legend_entries(pic)
    assert [lbl for k, lbl, _ in rows if k == "terrain"] == ["open", "woods", "swamp"]
    assert dict((lbl, c) for k, lbl, c in rows if k == "terrain")["swamp"] == render.UNKNOWN_TERRAIN
    kinds = [k for k, _, _ in rows]
    assert "objective" in kinds and "wreck" in kinds
    assert ("marker", "amb = in ambush") in [(k, lbl) for k, lbl, _ in rows]
    assert [lbl for k, lbl, _ in rows if k == "shot"] == ["shot: kill", "shot: miss"]


def test_numbered_key_when_tanks_stand_close():
    far = _pic([TankPicture("A", 0, (0, 0), 0), TankPicture("B", 1, (4, 0), 0)])
    near = _pic([TankPicture("A", 0, (0, 0), 0), TankPicture("B", 1, (1, 0), 0)])
    assert not render.uses_key(far) and render.uses_key(near)


def test_big_maps_are_cropped_to_the_action(tmp_path):
    cells = [(q, r) for q in range(60) for r in range(60)]
    pic = _pic([TankPicture("A", 0, (30, 30), 0), TankPicture("B", 1, (33, 30), 0)], cells=cells)
    x0, x1, y0, y1 = render.view_limits(pic)
    assert x1 - x0 == pytest.approx(1.5 * 3 + 2 * 1.5 * render.CROP_MARGIN)
    pic.crop = False
    fx0, fx1, _, _ = render.view_limits(pic)
    assert fx1 - fx0 == pytest.approx(1.5 * 59 + 2.4)
    small = _pic([TankPicture("A", 0, (0, 0), 0), TankPicture("B", 1, (1, 1), 0)])
    assert render.view_limits(small)[1] - render.view_limits(small)[0] == pytest.approx(1.5 * 5 + 2.4)
    render.save_board(pic, str(tmp_path / "b.png"))
    assert (tmp_path / "b.png").stat().st_size > 10_000


def test_an_animation_keeps_one_view_for_every_frame(tmp_path):
    cells = [(q, r) for q in range(60) for r in range(60)]
    a = _pic([TankPicture("A", 0, (10, 10), 0), TankPicture("B", 1, (12, 10), 0)], cells=cells)
    b = _pic([TankPicture("A", 0, (40, 10), 0), TankPicture("B", 1, (12, 30), 0)], cells=cells)
    va, vb = render.view_limits(a), render.view_limits(b)
    v = render.common_view([a, b])
    assert v == (min(va[0], vb[0]), max(va[1], vb[1]), min(va[2], vb[2]), max(va[3], vb[3]))
    a.view = v
    assert render.view_limits(a) == v
    m = BattleModel(load_scenario("hq_ram_brawl"), 1)
    m.run(max_turns=2)
    frs = replay.frames([(x.turn, x.event) for x in m.battle.log])
    out = replay.write_animation(frs, tmp_path / "b.gif", dpi=40)
    from PIL import Image

    with Image.open(out) as im:
        assert im.n_frames == len(frs)
