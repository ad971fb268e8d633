"""Panzer Squadron's ``shots_need_sight`` (a legal shot's firer sees its target): ``Observation.known_ids``, which
then skips the shots of the live actors at the enemies out of sight, gives the same known set as the direct
computation (every actor's shots at every unseen enemy) at every decision of real battles."""
from __future__ import annotations

from agents.observation import ACTING_ENEMY_KEYS, Observation
from sim.model import BattleModel
from sim.rules.base import Illegal
from sim.rules.panzer_squadron.play import PanzerSquadron
from sim.scenario import load_scenario


def direct_known(obs: Observation) -> tuple[int, ...]:
    """The known set by its definition: visible, acting, or a legal shot of an own actor on the board."""
    b, rs, d = obs._b, obs._rs, obs.decision
    live = {t.tank_id for t in b.live_tanks() if t.side != obs.side}
    known = set(obs.visible_ids()) & live
    known |= {d.context[k] for k in ACTING_ENEMY_KEYS if d.context.get(k) in live}
    actors = [a for a in d.actors if b.tanks[a].side == obs.side and b.tanks[a].hex is not None]
    for e in sorted(live - known):
        if any(not isinstance(sh, Illegal) for sh in rs.shots_at(b, actors, e)):
            known.add(e)
    return tuple(sorted(known))


def test_ps_declares_that_shots_need_sight():
    assert PanzerSquadron.shots_need_sight and not PanzerSquadron.has_ramming


def test_known_ids_equals_the_direct_set_at_every_decision():
    checked = unseen = 0
    for name, pols, seed in (("default", ("greedy", "flank"), 1), ("default", ("advance", "greedy"), 2)):
        m = BattleModel(load_scenario(name), seed=seed, policies={0: (pols[0], {}), 1: (pols[1], {})},
                        decision_timeout_s=0)
        assert m.battle.ruleset.name == "panzer_squadron"
        step = 0
        while not m.ended and step < 600:
            d = m._decision
            if d is not None and d.actors:
                obs = Observation(m.battle, d.side, d, m.controllers[d.side].rng,
                                  last_known=dict(m._last_known[d.side]))
                want = direct_known(obs)
                got = Observation(m.battle, d.side, d, m.controllers[d.side].rng,
                                  last_known=dict(m._last_known[d.side])).known_ids()
                assert got == want, (name, seed, step)
                checked += 1
                live = {t.tank_id for t in m.battle.live_tanks() if t.side != d.side}
                unseen += bool(live - set(obs.visible_ids()))
            m.advance(1)
            step += 1
    assert checked > 100 and unseen > 20, (checked, unseen)  # the walk met many decisions with unseen enemies
