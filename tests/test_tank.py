"""Each tank carries its doctrine (issue 13): ``Tank.policy`` and ``Tank.decide``; the side controller keeps the
side-level decisions; Mesa's agent ids and the event log's tank ids differ by one documented offset."""
from agents.policies import BUILTIN
from agents.tank import Tank
from conftest import ROOT
from sim.model import BattleModel
from sim.scenario import load_scenario


def test_tanks_answer_their_own_decisions_and_the_side_the_rest(monkeypatch):
    spec = load_scenario(str(ROOT / "scenarios" / "skirmish_2v2.yaml"))
    own = BUILTIN["greedy"]()
    m = BattleModel(spec, seed=3, policies={0: own, 1: ("hold", {})})
    assert [t.unique_id for t in m.tank_agents] == [t.tank_id + 1 for t in m.battle.tanks]
    assert [t.tank_id for t in m.tank_agents] == list(range(len(m.battle.tanks)))
    for t in m.tank_agents:
        ctrl = m.controllers[t.side]
        assert ctrl.tanks[t.tank_id] is t and t.policy is ctrl.policy
    assert m.tank_agents[0].policy is own

    asked: list[tuple[int, str]] = []
    original = Tank.decide

    def spy(self, observation, decision):
        asked.append((self.tank_id, decision.kind))
        assert decision.actors == (self.tank_id,)           # only decisions with this tank as the single actor
        return original(self, observation, decision)

    monkeypatch.setattr(Tank, "decide", spy)
    side_level: list[str] = []
    real = type(own).decide

    def side_spy(self, observation, decision):
        if len(decision.actors) != 1:
            side_level.append(decision.kind)
        return real(self, observation, decision)

    monkeypatch.setattr(type(own), "decide", side_spy)
    m.run(max_turns=2)
    assert asked, "no tank answered a decision of its own"
    assert {k for _, k in asked} <= {"activate", "move_step", "fire", "fire_again", "react", "recentre_turret"}
    assert side_level and set(side_level) <= {"activate", "react"}   # which tank acts: the side decides
