"""``lookahead``: a search doctrine that plans over the rule set's own decision points on a determinized copy.

**Algorithm.**  At every decision the doctrine builds a *determinization* of the battle from what its side may
know (:meth:`agents.observation.Observation.determinize`): its own tanks and the known enemies as they are, each
hidden enemy where and as the side last saw it (the doctrine remembers what it saw), a hidden enemy never seen off
the board.  On copies of it (:func:`sim.search.fork`, through :mod:`agents.search`) it plans:

* **Activations** (``activate``): every candidate answer -- each actor with each distinct kind of mode (fire if it
  has a target now, move (``move_and_fire`` where offered), overwatch (``ambush``, else ``hold``), ``ram`` where
  legal) -- is simulated with the rule set's own code (:meth:`sim.rules.base.Ruleset.play_activation`): the shot or
  the movement allowance, the move step by step, the other side's reactions (ambush, Defensive First Fire, evasion),
  morale cascades, all with dice sampled from the rule set's exact distributions (:class:`sim.search.SampledDice`, a
  stream derived from the side's own).  Inside a simulation both sides answer with the ``fallback`` doctrine (the
  default policy of Monte Carlo search; for the other side it is the opponent model); its answers are shared between
  samples that reach the same decision on the same board (a transposition table,
  :class:`agents.search.Transpositions`).  Each simulated activation ends in a leaf, scored by the evaluation below.
  Candidates share their dice samples (common random numbers), and the ``budget`` is spread by successive halving
  (Karnin, Koren & Somekh 2013): every candidate gets ``samples`` samples, the better half twice as many more, and
  so on until one is left or the budget is spent.  The candidate with the best mean leaf value is played (ties: the
  fallback's own choice, then candidate order).  This is determinized Monte Carlo search (perfect-information Monte
  Carlo on a sampled world, Long et al. 2010; Cowling, Powley & Whitehouse 2012) with a depth of one activation and
  a heuristic leaf.
* **Moves** (``move_step`` / ``move`` before a plan): up to ``candidates`` reachable end states (as
  :class:`~agents.policies.base.Doctrine` picks them) are valued by expectimax with the exact odds: the tank is put
  in the state on a copy, the leaf is evaluated, and if a shot is possible after the move a chance node over
  kill / no kill of the best target (exact ``p_kill`` of ``ruleset.odds(shot.key)``) is added.
* **Shots** (``fire``, ``fire_again``, ``attack``, ``react`` and the shot after a move): the target with the highest
  expected gain: the strength it is expected to lose (its kill odds, or its damage distribution where the rule set
  has damage points) in kill points, plus, weighted by the kill odds, how much the leaf's volleys improve without
  it (:meth:`Lookahead.shot_gain`).
* Any other decision, and every decision while no enemy is known, goes to the ``fallback`` doctrine.

**Leaf evaluation** (in victory points for the side, from its determinization):
``VP(side) - VP(enemy)`` (objectives held, kills, exits: :func:`sim.victory.victory_points`; damage short of a kill
counts as that share of a kill: :meth:`sim.rules.base.Ruleset.strength`)
``+ kill_points x`` an expectimax over the next ``depth`` volleys of fire, the enemy's first
(:meth:`agents.search.Exchange.volleys`): in each volley every tank of the side firing fires once -- as likely as
it survived the volleys before -- at the target of most expected strength destroyed, with the exact kill odds of
the rule set for that attack on the copy (gun, or ram where the rule set has ramming); volley ``k`` counts
``discount ** k`` of the strength it destroys, the enemy's volleys ``risk_weight`` times that, against us
``- objective_weight x sum_objectives points x (hexes from the nearest own tank + mean hexes from own tanks) / 2``.
A kill is worth the scenario's ``kill_points``.  The tree is thus: the activation's own decision points and dice
(sampled), then ``depth`` plies of exact-odds expectimax over the exchange of fire.

**Budget and determinism.**  ``budget`` counts search nodes per decision: each simulated decision and each leaf
evaluation is one node; the search stops when it is spent (the count, never a clock, bounds the work, so results do
not depend on the machine's speed).  ``last_nodes`` holds the count of the last decision.  Every random number comes
from the side's own stream (``obs.rng``, one draw per searched decision), so the same battle and seed give the same
decisions.

**What it knows.**  Only the observation: the copy holds no hidden enemy's true hex, facing or state, and the
simulations' views are views of the copy.  The determinization is the usual one of imperfect-information search:
the enemy is assumed where it was last seen and unseen enemies are ignored; a hidden enemy that ambushes the plan
is the price.

Parameters: ``fallback`` (the default policy and opponent model, a scripted built-in doctrine name,
:data:`agents.policies.scripted.SCRIPTED`: any but ``learned`` and ``lookahead``, default ``greedy``), ``budget``
(search nodes per decision, default 300), ``samples`` (dice samples per candidate in the first round, default 2),
``width`` (most activation candidates searched, the fallback's choice always among them, default 8), ``depth``
(volleys of fire in the leaf's expectimax, 0 = material only, default 2: the enemy's reply and our answer),
``risk_weight`` (weight of the strength the enemy's volleys destroy, default 2.0), ``discount`` (weight of volley
``k`` is ``discount ** k``, default 0.5), ``objective_weight`` (victory points per objective point and hex of
distance, default 0.02), ``candidates`` (movement states per move decision, default 8), ``min_odds`` (least kill
odds worth a shot, default 0).

**Peer reference.**  Atlatl's MCTS AI (``server/ai/mcts.py`` and ``mctsearch.uct_search``) runs UCT with random
rollouts to the end of the game from the full game state, bounded by ``max_rollouts``; this doctrine sees only its
side's observation, uses the exact odds, a rule-set doctrine as default policy and a node budget.

Sources: Michie 1966 (expectimax); Kearns, Mansour & Ng 2002 (sparse sampling); Kocsis & Szepesvari 2006 and
Browne et al. 2012 (MCTS, UCT); Long, Sturtevant, Buro & Furtak 2010 and Cowling, Powley & Whitehouse 2012
(determinization, ISMCTS); Karnin, Koren & Somekh 2013 (successive halving).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import agents.search as search
from agents.policies.base import BIG, Doctrine
from agents.policies.scripted import SCRIPTED
from agents.search import Exchange
from sim.actions import Action, Activate, Ram
from sim.hexgrid import Hex, distance

#: Activation modes grouped by what they do; a candidate takes the first of each group the actor may choose.
_MODE_GROUPS = (("fire",), ("move_and_fire", "move"), ("ambush", "overwatch", "hold"), ("ram",))


class Lookahead(Doctrine):
    """Determinized search over the rule set's decision points with exact-odds leaves (see the module docstring)."""

    name = "lookahead"
    #: It searches on a copy of the battle (``Observation.determinize``), which the isolation protocol does not
    #: carry, so it cannot play as an isolated entrant: tournaments and matches refuse that before any game.
    in_process_only = True
    defaults = {"fallback": "greedy", "budget": 300, "samples": 2, "width": 8, "depth": 2, "risk_weight": 2.0,
                "discount": 0.5, "objective_weight": 0.02, "candidates": 8, "min_odds": 0.0}
    bounds = {**Doctrine.bounds, "budget": (1, 10 ** 7), "samples": (1, 10 ** 4), "width": (1, 1000),
              "depth": (0, 20), "risk_weight": (0.0, 1e6), "discount": (0.0, 1e6), "objective_weight": (0.0, 1e6)}
    # the parameters (set from ``defaults`` and the caller's values by Doctrine.__init__)
    fallback: str
    budget: int
    samples: int
    width: int
    depth: int
    risk_weight: float
    discount: float
    objective_weight: float

    def __init__(self, **params: Any):
        super().__init__(**params)
        usable = sorted(k for k in SCRIPTED if k != self.name)
        if self.fallback not in usable:
            raise ValueError(f"Lookahead: parameter fallback={self.fallback!r}: expected a built-in doctrine other "
                             f"than {self.name!r} ({', '.join(usable)})")
        self._fallback: Doctrine = SCRIPTED[self.fallback]()
        self._seen: dict[int, tuple[Hex, int, int | None, dict]] = {}
        self._turn = 0
        self._memo: dict[str, Any] = {}
        #: Search nodes spent on the last decision (simulated decisions + leaf evaluations), at most ``budget``.
        self.last_nodes = 0
        #: Search nodes spent on all decisions so far.
        self.total_nodes = 0

    # --- entry ------------------------------------------------------------------------------------------------
    def decide(self, obs: Any, decision: Any) -> Action:
        """Answer ``decision`` (see the module docstring); spends at most ``budget`` search nodes."""
        if obs.turn < self._turn:
            self._seen.clear()
        self._turn = obs.turn
        for e in obs.enemies():
            self._seen[e.tank_id] = (e.hex, e.facing, e.turret_facing, dict(e.rules_state))
        self.last_nodes = 0
        self._memo = {}
        try:
            if not obs.visible_ids() and not obs.last_known():
                return self._fallback.decide(obs, decision)
            handler = getattr(self, "on_" + decision.kind, None)
            return self._fallback.decide(obs, decision) if handler is None else handler(obs, decision)
        finally:
            self._memo = {}
            self.total_nodes += self.last_nodes

    def _spend(self, n: int = 1) -> None:
        self.last_nodes += n

    def _left(self) -> int:
        """Search nodes left for this decision."""
        return self.budget - self.last_nodes

    # --- the determinization and its leaf ---------------------------------------------------------------------
    def _ghosts(self, obs: Any) -> dict:
        live = obs.last_known()
        return {e: g for e, g in self._seen.items() if e in live}

    def _base(self, obs: Any) -> Any:
        """The determinization of this decision (made once per decision)."""
        if "base" not in self._memo:
            self._memo["base"] = obs.determinize(self._ghosts(obs))
        return self._memo["base"]

    def evaluate(self, battle: Any, side: int, exchange: Exchange | None = None) -> float:
        """The leaf value of search copy ``battle`` for ``side`` (victory points; see the module docstring).
        One search node."""
        self._spend()
        ex = exchange if exchange is not None else Exchange(battle, side)
        v = search.points_margin(battle, side)
        kp = float(battle.kill_points)
        v += kp * ex.volleys(self.depth, self.risk_weight, self.discount)
        if self.objective_weight and battle.objectives:
            own = [t.hex for t in battle.live_tanks(side)]
            for o in battle.objectives:
                if own and o.get("side") in (None, side):
                    h = tuple(o["hex"])
                    ds = [distance(x, h) for x in own]
                    v -= self.objective_weight * float(o.get("points", 1)) * (min(ds) + sum(ds) / len(ds)) / 2
        return v

    def shot_gain(self, battle: Any, ex: Exchange, enemy: int, odds: Any) -> float:
        """How much the leaf value rises, in expectation, from an attack on ``enemy`` with ``odds``: the strength
        it is expected to lose (kill points; with a damage distribution where the rule set has damage points), and
        if it is destroyed (``p_kill``) the change of the leaf's volleys without it.  Wrecks' effect on sight is
        left out."""
        kp = float(battle.kill_points)
        if odds is None:
            return 0.0
        loss = search.strength_loss(battle, enemy, odds)
        if enemy not in ex.p_in:
            return kp * loss
        now = ex.volleys(self.depth, self.risk_weight, self.discount)
        gone = ex.volleys(self.depth, self.risk_weight, self.discount, removed=enemy)
        return kp * (loss + float(odds.p_kill) * (gone - now))

    # --- shots --------------------------------------------------------------------------------------------------
    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        """Expected gain of the shot (:meth:`shot_gain`) on the determinization (exact odds); the kill odds alone
        when the budget is spent."""
        if "exchange" not in self._memo:
            if self._left() < 1:
                return float(odds.p_kill)
            self._spend()
            self._memo["exchange"] = Exchange(self._base(obs), obs.side)
        return self.shot_gain(self._base(obs), self._memo["exchange"], target, odds)

    # --- moves ----------------------------------------------------------------------------------------------------
    def choose_destination(self, obs: Any, states: Mapping[Any, tuple[int, Any]]) -> Any:
        """The reachable state of best expectimax value (one search node per state scored; see the module
        docstring); the fallback's choice when no enemy is in sight or no node is left."""
        if not obs.visible_ids() or self._left() < 1:
            return self._fallback.choose_destination(obs, states)
        cands, here = self.candidates_and_here(obs, states, self.capped)
        if not cands:
            return None
        base = self._base(obs)
        side, actor = obs.side, obs.actor
        decision = obs.decision
        field = obs.distance_field(self.known_enemy_hexes(obs))
        scored = []
        for s in cands:
            if self._left() < 1:
                break
            h, f = obs.hex_of(s), obs.facing_of(s)
            copy = search.moved(base, actor, h, f)
            row: dict[int, Any] = {}
            if self.can_fire_after(obs, decision, states[s][0]):
                row = search.odds_row(base, actor, h, f, h != obs.me.hex)
            ex = Exchange(copy, side, {actor: {e: 0.0 if o is None else float(o.p_kill) for e, o in row.items()}})
            v = self.evaluate(copy, side, ex)
            v += max((self.shot_gain(copy, ex, e, o) for e, o in row.items() if o is not None), default=0.0)
            scored.append((-round(v, 9), field.get(h, BIG), states[s][0], repr(s), s))
        best = min(scored)[-1]
        return None if best == here else best

    def wants_fire_after_move(self, obs: Any) -> bool:
        return bool(obs.visible_ids())

    # --- activations ----------------------------------------------------------------------------------------------
    def activation_answers(self, obs: Any, decision: Any) -> list[Action]:
        """Candidate answers to an ``activate`` decision: per actor (:meth:`activation_actors`), the first legal
        mode of each group of :data:`_MODE_GROUPS` (``fire`` only with a target now); in actor order."""
        out: list[Action] = []
        for a in self.activation_actors(obs, decision):
            modes = obs.modes(a)
            for group in _MODE_GROUPS:
                m = next((m for m in group if m in modes), None)
                if m is None or (m == "fire" and not obs.targets(a)):
                    continue
                act = Activate(a, m)
                if obs.is_legal(act):
                    out.append(act)
        return out

    def on_activate(self, obs: Any, decision: Any) -> Action:
        """Successive halving over the candidate answers, each sample a simulated activation (module docstring)."""
        own = self._fallback.decide(obs, decision)
        cands = self.activation_answers(obs, decision)
        if isinstance(own, (Activate, Ram)) and obs.is_legal(own) and own not in cands:
            cands.insert(0, own)
        if len(cands) <= 1 or self._left() < 2:
            return cands[0] if len(cands) == 1 else own
        base = self._base(obs)
        if not any(t.side != obs.side for t in base.live_tanks()):
            return own
        if len(cands) > self.width:
            keep = [own] if own in cands else []
            cands = keep + [c for c in cands if c not in keep][: self.width - len(keep)]
        seed = obs.rng.getrandbits(64)
        stats = {c: [0.0, 0] for c in cands}
        alive = list(cands)
        k = 0
        per_round = self.samples
        while len(alive) > 1 and self._left() >= 2:
            for _ in range(per_round):
                for c in alive:
                    if self._left() < 2:
                        break
                    v = self.simulate(base, obs.side, c, search.substream(seed, k))
                    stats[c][0] += v
                    stats[c][1] += 1
                k += 1
            ranked = sorted(alive, key=lambda c: (-stats[c][0] / max(1, stats[c][1]), c != own, cands.index(c)))
            alive = ranked[: max(1, len(ranked) // 2)]
            per_round *= 2
        tried = [c for c in cands if stats[c][1]]
        if not tried:
            return own
        return max(tried, key=lambda c: (stats[c][0] / stats[c][1], c == own, -cands.index(c)))

    def simulate(self, base: Any, side: int, action: Action, rng: Any) -> float:
        """One sample: the activation ``action`` starts, played on a copy of ``base`` with the rule set's own code
        and dice from ``rng`` (a ``random.Random``), both sides answering with the fallback doctrine
        (:func:`agents.search.simulate_activation`); returns the leaf value for ``side``.  Spends one node per
        simulated decision and one for the leaf; the caller guarantees two nodes are left.  A rule set without
        the hook gives the leaf value of ``base``.

        The acting tank's own next shots are counted from where it ends, as if it were as ready as at the decision
        (what-if odds on ``base``): a tank that just fired would otherwise look worse than one that held, only
        because its gun is still reloading (Hummel Quest) or it carries a fire marker (ASL) in the leaf."""
        tid = action.actor
        if tid is None:
            raise ValueError(f"Lookahead.simulate: {action!r} activates no tank")
        table = self._memo.setdefault("transpositions", {})
        got = search.simulate_activation(base, side, action, self._fallback, rng, self._left() - 1, table)
        if got is None:
            return self.evaluate(base, side)
        copy, decisions = got
        self._spend(decisions)
        actor = copy.tanks[tid]
        override = None
        if actor.alive and actor.hex is not None:
            row = search.odds_row(base, actor.tank_id, actor.hex, actor.facing, False)
            override = {actor.tank_id: {e: 0.0 if o is None else float(o.p_kill) for e, o in row.items()
                                        if copy.tanks[e].alive and copy.tanks[e].hex is not None}}
        return self.evaluate(copy, side, Exchange(copy, side, override))
