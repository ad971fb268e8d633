"""A small probe rule set that exercises what the real ones need from the engine (DESIGN.md "Proof before the next
rule sets"): interrupts after each step with several reactors ordered by their side, repeated fire, a decision for
the non-active side mid-action, a forced move, terrain that changes, a tank leaving the board, two tanks in a hex.

Each turn every live tank of side 0 (the mover) may take up to two steps (stacking allowed; stepping off the west or
east edge exits the board).  After each step every live tank of side 1 within 3 hexes may react, one at a time in the
order side 1 chooses; a reaction hits on d6 <= 3; the shooter then may ``fire_again`` while d6 <= 2.  A hit target's
side chooses an ``evade`` hex among its free neighbours (the non-active side deciding mid-action); a second hit
destroys it and turns its hex into ``crater`` (a terrain change).  Side 1 tanks next to the mover are pushed one hex
away (a forced move, no decision).
"""
from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from sim.actions import Fire, Pass, Step
from sim.events import Moved, RuleEvent, ShotResolved, Status, StatusChanged, TankStateSet, TerrainChanged
from sim.hexgrid import distance
from sim.rules.base import Decision, Illegal, Legal, Odds, Ruleset, Shot
from sim.victory import standard_outcome


class Probe(Ruleset):
    name = "probe"

    def vehicle(self, vid):
        if vid != "probe":
            raise KeyError(f"unknown probe vehicle {vid!r}")
        return SimpleNamespace(id="probe", turret=False)

    def vehicle_ids(self):
        return ("probe",)

    def terrain_names(self, options=None):
        return ("open", "crater")

    def setup(self, b):
        for t in b.tanks:
            t.rules_state.setdefault("hits", 0)

    def shot(self, b, shooter, target, fire=None, as_if=None):
        s, t = b.tanks[shooter], b.tanks[target]
        if not (t.alive and t.hex is not None and s.side != t.side and distance(s.hex, t.hex) <= 3):
            return Illegal("out of range")
        return Shot(shooter, target, ("probe",))

    def odds(self, key):
        return Odds(Fraction(1, 2), Fraction(1, 4), {"p_hit": Fraction(1, 2)})

    def resolve(self, b, shot, dice):
        d = dice.roll("d6", "to_hit")
        hit = d <= 3
        t = b.tanks[shot.target]
        kill = hit and t.rules_state["hits"] >= 1
        b.emit(ShotResolved(shot.shooter, shot.target, "destroyed" if kill else "hit" if hit else "miss", hit, kill,
                            {"d": d}, {}, True))
        if hit:
            b.emit(TankStateSet(t.tank_id, "hits", t.rules_state["hits"] + 1))
        if kill:
            b.emit(StatusChanged(t.tank_id, Status.DESTROYED, "second hit", by=shot.shooter))
            b.emit(TerrainChanged(t.hex, "crater"))
        return hit and not kill

    def outcome(self, b):
        return standard_outcome(b)

    def play_turn(self, b, dice):
        for tid in [t.tank_id for t in b.live_tanks(0)]:
            t = b.tanks[tid]
            for _ in range(2):
                if not t.alive or t.hex is None:
                    break
                opts = tuple(Step(tid, t.hex.neighbour(k)) for k in range(6))
                legal = Legal(contains=lambda a, opts=opts: isinstance(a, Pass) or a in opts)
                act = yield Decision(0, "move_step", (tid,), legal, Pass(tid), {"interrupted": False})
                if not isinstance(act, Step) or act not in opts:
                    break
                if act.to not in b.map:
                    b.emit(StatusChanged(tid, Status.EXITED, "left the board"))
                    break
                b.emit(Moved(tid, act.to, t.facing, 1))
                for e in b.live_tanks(1):
                    if distance(e.hex, t.hex) == 1:
                        away = next((e.hex.neighbour(k) for k in range(6)
                                     if e.hex.neighbour(k) in b.map and distance(e.hex.neighbour(k), t.hex) == 2),
                                    None)
                        if away is not None:
                            b.emit(RuleEvent("pushed", e.tank_id, {}))
                            b.emit(Moved(e.tank_id, away, e.facing, 0))
                yield from self._reactions(b, dice, tid)

    def _reactions(self, b, dice, mover):
        done = set()
        while b.tanks[mover].alive and b.tanks[mover].hex is not None:
            ready = tuple(e.tank_id for e in b.live_tanks(1) if e.tank_id not in done
                          and not isinstance(self.shot(b, e.tank_id, mover), Illegal))
            if not ready:
                return
            legal = Legal(contains=lambda a, ready=ready: isinstance(a, Pass) or (
                isinstance(a, Fire) and a.actor in ready and a.target == mover), targets=lambda _t: (mover,))
            act = yield Decision(1, "react", ready, legal, Pass(None), {"mover": mover})
            if not isinstance(act, Fire) or not legal.contains(act):
                return
            done.add(act.actor)
            hit = self.resolve(b, self.shot(b, act.actor, mover), dice)
            while b.tanks[mover].alive and dice.roll("d6", "rate") <= 2:
                b.emit(RuleEvent("rate_of_fire", act.actor, {}))
                again = yield Decision(1, "fire_again", (act.actor,), legal, Pass(act.actor), {})
                if not isinstance(again, Fire):
                    break
                hit = self.resolve(b, self.shot(b, act.actor, mover), dice) or hit
            if hit and b.tanks[mover].alive:
                m = b.tanks[mover]
                free = tuple(Step(mover, m.hex.neighbour(k)) for k in range(6) if m.hex.neighbour(k) in b.map)
                ev = yield Decision(0, "evade", (mover,), Legal(contains=lambda a, free=free: a in free),
                                    free[0], {})
                ev = ev if ev in free else free[0]
                b.emit(Moved(mover, ev.to, m.facing, 0))
