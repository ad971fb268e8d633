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


def _titles_inside(fig):
    """Each non-empty axes title and suptitle of ``fig`` as ``(text, inside)`` after drawing it with Agg."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [ax.title for ax in fig.axes] + [t for t in [getattr(fig, "_suptitle", None)] if t is not None]
    fb = fig.bbox
    return [(t.get_text(), fb.x0 <= t.get_window_extent(r).x0 and t.get_window_extent(r).x1 <= fb.x1)
            for t in texts if t.get_text()]


def test_report_plot_titles_show_whole(tmp_path, monkeypatch):
    """The batch report's plot title (long experiment name, few levels: a narrow figure) lies inside the figure;
    wrapping only changes where the lines break."""
    import pandas as pd
    from matplotlib.figure import Figure

    from sim.experiments import report

    saved = []
    original = Figure.savefig

    def keep(self, *a, **k):
        saved.append(_titles_inside(self))
        return original(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", keep)
    name = "doctrine_experiment_with_a_descriptive_name"
    runs = pd.DataFrame([{"point_key": k, "a": a, "status": "ok", "winner_index": w, "turns": 3, "side1_lost": 1,
                          "side2_lost": 0, "side1_name": "Germans", "side2_name": "Soviets"}
                         for k, a, w in (("p0", "x", 0), ("p1", "y", 1), ("p0", "x", 1))])
    manifest = {"design": {"experiment": {"name": name}, "side_names": ["Germans", "Soviets"],
                           "factors": [{"name": "a", "values": ["x", "y"], "is_range": False}],
                           "points": [{"index": 0, "key": "p0", "values": {"a": "x"}},
                                      {"index": 1, "key": "p1", "values": {"a": "y"}}]},
                "factor_types": {"a": "string"}}
    pts, eff = report.point_table(runs, manifest), report.main_effects(runs, manifest)
    written = report.plot(tmp_path / "effects.png", pts, eff, manifest, "Germans")
    assert len(written) == 2 and len(saved) == 2
    for titles in saved:
        assert len(titles) == 1
        text, inside = titles[0]
        assert inside, text
        assert text.startswith(name) and "\n" in text  # it had to wrap to fit at this width
        assert " ".join(text.split()) in {f"{name}: Germans win rate by factor level (95% Wilson)",
                                          f"{name}: Germans win rate per design point (95% Wilson)"}


def test_fit_titles_wraps_a_suptitle_and_subplot_titles_into_the_figure():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(4, 3))
    long = "a title with many words that is much wider than this small figure of four inches"
    axes[0].set_title(long)
    sup = fig.suptitle(long + " and then some more")
    assert not all(inside for _, inside in _titles_inside(fig))  # the unfitted figure cuts them off
    render.fit_titles(fig, sup)
    titles = _titles_inside(fig)
    plt.close(fig)
    assert [inside for _, inside in titles] == [True, True]
    assert [" ".join(t.split()) for t, _ in titles] == [long, long + " and then some more"]


def test_board_legend_with_long_side_names_lies_inside_the_figure():
    """The board picture's legend sits right of the axes, which tight_layout leaves out: a newcomer's ``--plot``
    showed ``side 1: Sovie``.  Every legend now ends inside the figure."""
    import dataclasses

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.legend import Legend

    from sim.model import BattleModel
    from sim.view.render import board_figure, picture_of, shots_of

    m = BattleModel("default", seed=1)
    m.battle.sides = [dataclasses.replace(s, name=s.name + " Guards Tank Brigade of the Front") for s in m.battle.sides]
    fig = board_figure(picture_of(m.battle, shots_of(m.battle), "long names"), 6.0)
    renderer = FigureCanvasAgg(fig).get_renderer()
    legends = [a for a in fig.axes[0].get_children() if isinstance(a, Legend)]
    assert legends
    for leg in legends:
        box = leg.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)


def test_a_tank_out_of_the_fight_shows_no_markers():
    """A wreck keeps its rule-set flags (an ambush set before it was hit) but is drawn without their tags."""
    from sim.view.render import markers_of

    flags = {"ambush": True, "panicked": True}
    assert markers_of(flags, "ok") == ("panicked", "ambush")
    assert markers_of(flags) == ("panicked", "ambush")
    for status in ("destroyed", "incapacitated", "fled", "withdrawn"):
        assert markers_of(flags, status) == ()
