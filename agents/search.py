"""Planning on determinized copies: the kit a search doctrine (``agents/policies/lookahead.py``) plans with.

Doctrines in ``agents/policies`` import no rule set and see no dice (a test checks their imports).  A search
doctrine still has to play the rule set's own decision points and roll dice -- on a copy of the battle built from
its observation (:meth:`agents.observation.Observation.determinize`), with dice from a stream of its own.  This
module is that boundary: everything here works on such a copy (a :class:`sim.search.SearchBattle`) and never on the
live battle, so a doctrine that uses it still sees only what its observation gave it.

* :class:`Exchange` -- the exact kill odds of every live tank at every live enemy on a copy, and the expectimax over
  the next volleys of fire they give (:meth:`Exchange.volleys`);
* :func:`shot_odds`, :func:`kill_odds`, :func:`odds_row` -- the exact odds of one attack (gun, or ram where the
  rule set has ramming), and the row of an own tank from a hypothetical position (``ruleset.shot`` / ``odds``);
* :func:`strength`, :func:`strength_loss` -- the share of its fighting strength a tank keeps
  (:meth:`sim.rules.base.Ruleset.strength`) and its expected loss from an attack (kill odds, or the damage
  distribution where the rule set has damage points);
* :func:`moved` -- a copy with one tank placed in another state (hex, facing);
* :func:`points_margin` -- the side's victory points minus the best other side's (:func:`sim.victory.victory_points`),
  with damage short of a kill counted in kill points;
* :func:`simulate_activation` -- plays one activation on a copy with the rule set's own code
  (:meth:`sim.rules.base.Ruleset.play_activation`), sampled dice and a doctrine answering both sides;
  (:class:`Transpositions` shares the doctrine's answers between samples that reach the same board);
* :func:`substream` -- a ``random.Random`` derived from a seed and an index (common random numbers).
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from agents.observation import Observation
from agents.side_controller import SideController
from sim.actions import Action, Ram
from sim.events import Moved
from sim.hexgrid import Hex
from sim.rules.base import Hypo, Illegal, Odds
from sim.search import SampledDice, SearchBattle, drive
from sim.victory import victory_points


def substream(seed: int, k: int) -> random.Random:
    """The ``k``-th stream of ``seed``: the same for the same pair in every process (string seeding hashes with
    SHA-512, independent of ``PYTHONHASHSEED``)."""
    return random.Random(f"{seed}:{k}")


def shot_odds(battle: Any, shooter: int, target: int, as_if: Hypo | None = None) -> Odds | None:
    """Exact odds of ``shooter``'s best attack on ``target`` on ``battle`` now (or from the hypothetical position
    ``as_if``): its gun, or -- where the rule set has ramming and no ``as_if`` is given -- a ram, whichever has the
    higher kill odds (then expected damage); ``None`` if no attack is legal."""
    rs = battle.ruleset
    best = None
    kinds = (None, Ram(shooter, target)) if rs.has_ramming and as_if is None else (None,)
    for fire in kinds:
        shot = rs.shot(battle, shooter, target, fire, as_if)
        if isinstance(shot, Illegal):
            continue
        o = rs.odds(shot.key)
        if best is None or (o.p_kill, o.expected_damage) > (best.p_kill, best.expected_damage):
            best = o
    return best


def kill_odds(battle: Any, shooter: int, target: int, as_if: Hypo | None = None) -> float:
    """:func:`shot_odds`' kill probability as a float (0 if no attack is legal)."""
    o = shot_odds(battle, shooter, target, as_if)
    return 0.0 if o is None else float(o.p_kill)


def strength(battle: Any, tank: int, damage: int = 0) -> float:
    """The share of its fighting strength ``tank`` keeps, 0..1 (:meth:`sim.rules.base.Ruleset.strength`)."""
    return float(battle.ruleset.strength(battle, tank, damage))


def strength_loss(battle: Any, target: int, odds: Odds) -> float:
    """Expected loss of ``target``'s strength from an attack with ``odds``: over the attack's damage distribution
    (``odds.values["damage"]``, points -> probability, where the rule set has damage points), else the kill
    probability times the strength it has."""
    now = strength(battle, target)
    dist = odds.values.get("damage") if isinstance(odds.values, Mapping) else None
    if dist:
        return sum(float(p) * (now - strength(battle, target, int(v))) for v, p in dist.items())
    return float(odds.p_kill) * now


def odds_row(battle: Any, actor: int, hex: Hex, facing: int, moved_: bool) -> dict[int, Odds | None]:
    """``{enemy: odds}`` of own tank ``actor``'s gun at every live enemy on the board, fired from ``hex`` with
    ``facing`` (``moved_``: whether it will have left its hex this turn), by the rule set's what-if rules."""
    side = battle.tanks[actor].side
    hyp = Hypo(hex, facing, moved_)
    return {e.tank_id: shot_odds(battle, actor, e.tank_id, hyp) for e in battle.live_tanks() if e.side != side}


class Exchange:
    """The exchange of fire on a search copy ``battle`` seen by ``side``: the exact kill probability of every live
    own tank on the board at every live enemy on it (``p_out[own][enemy]``) and back (``p_in[enemy][own]``), each
    from where it stands, and the ``strength`` each keeps (:func:`strength`).  ``override`` replaces the rows of
    some own tanks (``{own: {enemy: p}}``, e.g. an :func:`odds_row` from a hypothetical position).  ``shots``
    counts the shots asked of the rule set."""

    def __init__(self, battle: Any, side: int, override: Mapping[int, Mapping[int, float]] | None = None):
        self.own = [t.tank_id for t in battle.live_tanks(side)]
        self.foes = [t.tank_id for t in battle.live_tanks() if t.side != side]
        self.shots = 0

        def p(s: int, t: int) -> float:
            self.shots += 1
            return kill_odds(battle, s, t)

        self.p_out = {o: dict(override[o]) if override and o in override else {e: p(o, e) for e in self.foes}
                      for o in self.own}
        self.p_in = {e: {o: p(e, o) for o in self.own} for e in self.foes}
        self.strength = {t: strength(battle, t) for t in self.own + self.foes}

    def volleys(self, depth: int, risk_weight: float, discount: float, removed: int | None = None) -> float:
        """Expectimax over ``depth`` volleys of fire with the exact odds, the enemies' first, then ours, and so
        on: in each volley every tank of the side firing fires once, as likely as it is still alive, at the target
        of most expected strength destroyed (``alive x p_kill x strength``), and each target's survival is the
        product over its shooters (a tank destroyed twice counts once; outcomes independent given the
        assignment).  Returns ``sum_k w_k x`` (enemy strength destroyed in volley ``k`` - own strength destroyed),
        with ``w_k = discount ** k``, times ``risk_weight`` for the enemies' volleys.  ``removed``: an enemy
        destroyed beforehand.  Units: tanks (strength)."""
        alive = {t: 1.0 for t in self.own + self.foes if t != removed}
        total = 0.0
        for k in range(depth):
            enemy = k % 2 == 0
            rows = self.p_in if enemy else self.p_out
            survive: dict[int, float] = {}
            for shooter, row in rows.items():
                a = alive.get(shooter, 0.0)
                if a <= 0.0:
                    continue
                best = max(((alive[t] * p * self.strength[t], -t, p) for t, p in row.items()
                            if p > 0 and alive.get(t, 0.0) > 0.0), default=None)
                if best is not None:
                    t = -best[1]
                    survive[t] = survive.get(t, 1.0) * (1.0 - a * best[2])
            lost = 0.0
            for t, sv in survive.items():
                lost += self.strength[t] * alive[t] * (1.0 - sv)
                alive[t] *= sv
            total += (discount ** k) * (-risk_weight * lost if enemy else lost)
        return total


def moved(battle: SearchBattle, actor: int, hex: Hex, facing: int) -> SearchBattle:
    """A copy of ``battle`` with tank ``actor`` placed on ``hex`` facing ``facing`` (a ``Moved`` event of cost 0 on
    the copy: the rules' movement costs, markers and reactions are not played)."""
    copy = battle.fork()
    t = copy.tanks[actor]
    if (t.hex, t.facing) != (hex, facing):
        copy.emit(Moved(actor, hex, facing, 0))
    return copy


def points_margin(battle: Any, side: int) -> float:
    """``side``'s victory points now minus the highest of the other sides' (objectives held, kills, exits), plus
    the damage short of a kill in kill points: ``kill_points x`` (strength the live enemies on the board have lost
    - strength ``side``'s live tanks have lost)."""
    pts = victory_points(battle)
    v = float(pts[side] - max(p for s, p in enumerate(pts) if s != side))
    worn = sum((1.0 - strength(battle, t.tank_id)) * (1 if t.side != side else -1) for t in battle.live_tanks())
    return v + float(battle.kill_points) * worn


def state_key(battle: Any) -> tuple:
    """A hashable summary of a copy's whole state (turn, every tank's hex, facing, turret, status and rule-set
    state, the battle's rule-set state): equal keys, equal boards.  Rule-set values must have a stable ``repr``
    (they are frozen values: numbers, strings, tuples)."""
    return (battle.turn, repr(sorted(battle.rules_state.items())),
            tuple((t.hex, t.facing, t.turret_facing, t.status, repr(sorted(t.rules_state.items())))
                  for t in battle.tanks))


class Transpositions:
    """A policy wrapper that remembers ``policy``'s answer per (decision, board) -- a transposition table shared by
    the samples of one search: samples that reach the same decision on the same board (before their dice part)
    ask the doctrine once.  The wrapped policy must answer from the board alone (the built-in doctrines do, apart
    from ``random``, whose answer is then drawn once per board)."""

    def __init__(self, policy: Any, table: dict, battle: Any):
        self.policy, self.table, self.battle = policy, table, battle
        self.never_reacts = getattr(policy, "never_reacts", False)
        self.hits = 0

    def decide(self, obs: Any, decision: Any) -> Action:
        key = (decision.side, decision.kind, tuple(decision.actors), repr(sorted(decision.context.items())),
               state_key(self.battle))
        got = self.table.get(key)
        if got is not None:
            self.hits += 1
            return got
        act = self.policy.decide(obs, decision)
        self.table[key] = act
        return act


def simulate_activation(base: SearchBattle, side: int, action: Action, policy: Any, rng: random.Random,
                        budget: int, table: dict | None = None) -> tuple[SearchBattle, int] | None:
    """Play on a copy of ``base`` the activation that ``action`` (a legal answer to ``side``'s ``activate``
    decision) starts: the rule set's own code (:meth:`~sim.rules.base.Ruleset.play_activation`) with dice sampled
    from a stream of ``rng``; every decision on the way, of either side, answered by ``policy`` through per-side
    controllers (move plans followed as in play) and observations of the copy.  At most ``budget`` decisions are
    answered (then the activation is cut short where it stands).  ``table`` (a dict kept by the caller for one
    search) makes the answers a :class:`Transpositions` table.

    Returns ``(copy after the activation, decisions answered)``, or ``None`` if the rule set has no
    ``play_activation`` hook."""
    dice = SampledDice(random.Random(rng.getrandbits(64)))
    copy = base.fork(dice=dice)
    policy_rng = random.Random(rng.getrandbits(64))
    if table is not None:
        policy = Transpositions(policy, table, copy)
    ctrls = {s: SideController(s, policy, policy_rng) for s in copy.side_ids()}
    memory: dict[int, dict] = {s: {} for s in copy.side_ids()}

    def answer(d: Any) -> Action:
        act, _faults, _plan = ctrls[d.side].answer(
            d, lambda dd: Observation(copy, d.side, dd, policy_rng, last_known=memory[d.side]))
        return act

    try:
        res = drive(copy.ruleset.play_activation(copy, dice, side, action), answer, budget=budget)
    except NotImplementedError:
        return None
    return copy, res.decisions
