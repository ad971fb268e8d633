"""Policy and Doctrine base classes.

A :class:`Policy` answers ``decide(observation, decision) -> Action``.  A :class:`Doctrine` splits that into the
decision kinds every rule set shares, so a doctrine written once plays under every rule set:

* ``activate`` -> :meth:`Doctrine.intent` per actor (``fire`` / ``move`` / ``move_only`` / ``turn`` / ``charge`` /
  ``hold`` / ``overwatch`` with a priority), mapped onto the modes the rule set offers (``_MODE_PREFS``); the actor
  with the highest priority acts;
* ``move`` / ``move_step`` -> :meth:`Doctrine.choose_destination` (a reachable state) turned into a plan; when the
  plan is done, fire at the best target if the rule set allows it there;
* ``fire`` / ``fire_again`` / ``attack`` -> the best target (:meth:`Doctrine.target_value`, by default the exact
  kill odds) if its kill odds reach ``min_odds``; ``react`` -> the best (reactor, target) pair the same way;
* ``ram`` -> a ``Ram`` at the nearest enemy the rule set allows, else pass;
* any other kind -> the decision's default.

Doctrines use only the neutral queries of :class:`agents.observation.Observation` (and :mod:`sim.hexgrid` geometry):
no rule set is imported, no dice are seen.  Per-decision work is bounded: at most ``candidates`` movement states are
scored with threat or odds queries (one state per hex, facing the nearest enemy where reachable).

Parameters are data: the class attribute ``defaults`` lists them (``bounds`` gives allowed ranges);
``Doctrine(**params)`` converts strings (from the command line) to the default's type and rejects unknown names.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from agents.distances import nearest_distances, nearest_hexes
from sim.actions import Action, Activate, Fire, Pass, Ram, Special
from sim.hexgrid import Hex

_MODE_PREFS = {
    "fire": ("fire", "move_and_fire", "hold"),
    "move": ("move_and_fire", "move", "hold"),
    "move_only": ("move", "move_and_fire", "hold"),
    "turn": ("move_and_fire", "move", "hold"),
    "charge": ("move_and_fire", "move", "hold"),
    "overwatch": ("ambush", "overwatch", "hold"),
    "hold": ("hold",),
    "ram": ("ram",),
}

BIG = 10 ** 6
#: Steps from the board's centre within which a doctrine that knows of no enemy and has no objective stops looking
#: (:meth:`Doctrine.closing_goals`).
CENTRE_REACHED = 2


class Policy:
    """Base of every policy.  ``never_reacts = True`` lets the engine answer ``react`` decisions with the default
    without building an observation.  ``defaults`` names the parameters and their defaults; ``bounds`` optional
    ``(low, high)`` ranges (inclusive).  Raises ``TypeError`` for an unknown parameter and ``ValueError`` for a value
    that does not convert or is out of range."""

    name = "policy"
    never_reacts = False
    defaults: Mapping[str, Any] = {}
    bounds: Mapping[str, tuple[float, float]] = {}

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            from sim.messages import clip

            names = clip(", ".join(clip(str(u), 40) for u in unknown), 160)
            raise TypeError(f"{type(self).__name__} has no parameter(s) {names}; "
                            f"parameters: {', '.join(self.defaults) or 'none'}")
        for k, v in {**self.defaults, **params}.items():
            v = _convert(type(self).__name__, k, self.defaults[k], v)
            lo_hi = self.bounds.get(k)
            if lo_hi is not None and not lo_hi[0] <= v <= lo_hi[1]:
                from sim.messages import short

                raise ValueError(f"{type(self).__name__}: parameter {k}={short(v)} is out of range "
                                 f"[{lo_hi[0]}, {lo_hi[1]}]")
            object.__setattr__(self, k, v)
        self.params = {k: getattr(self, k) for k in self.defaults}

    def decide(self, obs: Any, decision: Any) -> Action:
        return decision.default

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"


def _convert(cls: str, k: str, default: Any, v: Any) -> Any:
    try:
        if isinstance(default, bool):
            if isinstance(v, bool):
                return v
            s = str(v).strip().lower()
            if s not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError
            return s in ("1", "true", "yes", "on")
        if isinstance(default, int) and not isinstance(v, bool):
            f = float(v)
            if f != int(f):
                raise ValueError
            return int(f)
        if isinstance(default, float) and not isinstance(v, bool):
            if isinstance(v, str):  # "0.25", "1e-3" or an exact "1/4" (Fraction only for that: "1e9999999" would
                text = v.strip()    # make it build a ten-million-digit integer)
                f = float(Fraction(text)) if "/" in text and len(text) <= 64 else float(text)
            else:
                f = float(v)
            if not math.isfinite(f):
                raise ValueError
            return f
        if isinstance(default, str):
            return str(v)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        from sim.messages import short

        raise ValueError(f"{cls}: parameter {k}={short(v)}: expected {type(default).__name__} "
                         f"(default {default!r})") from None
    return v



def facing_towards(frm: tuple[int, int], to: tuple[int, int]) -> int:
    """The vertex facing (0..5) pointing most directly from ``frm`` at ``to`` (ties: the lower index), as
    :meth:`agents.observation.StateQueries.facing_towards`: the facing ``f`` that maximises ``a - max(b, c)`` of the
    cube vector rotated by ``f`` (:func:`sim.hexgrid.rotate_cube`), the six rotations written out."""
    a = to[0] - frm[0]
    b = to[1] - frm[1]
    c = -a - b
    # rotated by f: (a, b, c), (-b, -c, -a), (c, a, b), (-a, -b, -c), (b, c, a), (-c, -a, -b)
    best, best_f = a - max(b, c), 0
    for f, v in ((1, min(c, a) - b), (2, c - max(a, b)), (3, min(b, c) - a), (4, b - max(c, a)),
                 (5, min(a, b) - c)):
        if v > best:
            best, best_f = v, f
    return best_f


def nearest_hex(frm: tuple[int, int], hexes: Iterable[Any]) -> Any:
    """The first of ``hexes`` (axial ``(q, r)`` pairs) nearest to ``frm``, ties to the lowest: ``min(hexes,
    key=lambda h: (distance(frm, h), h), default=None)`` with each distance as :func:`sim.hexgrid.distance`
    written out (the doctrines' per-hex aim scans); ``None`` for no hexes."""
    fq, fr = frm
    best: Any = None
    best_d = -1
    for h in hexes:
        x, y = h[0] - fq, h[1] - fr
        d = abs(x) + abs(y) + abs(x + y)  # twice the distance
        if best_d < 0 or d < best_d or (d == best_d and h < best):
            best, best_d = h, d
    return best


def min_distance(frm: tuple[int, int], hexes: Iterable[tuple[int, int]]) -> int:
    """The hex distance from ``frm`` to the nearest of ``hexes`` (axial ``(q, r)``; each distance as
    :func:`sim.hexgrid.distance`, written out: the doctrines' nearest-enemy scans).  Raises ``ValueError`` for no
    hexes (as ``min`` of nothing)."""
    fq, fr = frm
    best = -1
    for q, r in hexes:
        x, y = q - fq, r - fr
        d = abs(x) + abs(y) + abs(x + y)  # twice the distance
        if d < best or best < 0:
            best = d
    if best < 0:
        raise ValueError("min_distance() of no hexes")
    return best // 2


class Doctrine(Policy):
    """Dispatches by decision kind (see the module docstring).

    Parameters: ``min_odds`` (the least kill probability worth a shot, 0..1, default 0), ``candidates`` (how many
    movement states are scored per decision, default 8)."""

    defaults: Mapping[str, Any] = {"min_odds": 0.0, "candidates": 8}
    bounds: Mapping[str, tuple[float, float]] = {"min_odds": (0.0, 1.0), "candidates": (1, 10_000)}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__; a subclass whose
    # ``defaults`` leave one out has no such attribute and must not call the methods that read it)
    min_odds: float
    candidates: int

    def decide(self, obs: Any, decision: Any) -> Action:
        handler = getattr(self, "on_" + decision.kind, None)
        if handler is None:
            return decision.default
        return handler(obs, decision)

    # --- targets ----------------------------------------------------------------------------------------------
    def target_value(self, obs: Any, target: int, odds: Any, actor: int, as_if: Any = None) -> Any:
        """How much ``actor`` (standing at ``as_if`` if given) wants to shoot ``target`` with ``odds``
        (comparable; higher is better)."""
        return odds.p_kill

    def best_target(self, obs: Any, actor: int | None = None, among: Iterable[int] | None = None,
                    as_if: Any = None, worth: bool = False) -> tuple[int, Any] | None:
        """``(target, odds)`` with the highest :meth:`target_value` (ties: higher kill odds, higher hit odds, lower
        id) among ``among`` (default: the decision's targets now, or the visible enemies for an ``as_if``
        position), only those :meth:`worth_firing` at if ``worth``; ``None`` if there is none."""
        a = obs.actor if actor is None else actor
        cls = type(self)
        fast = cls.target_value is Doctrine.target_value and cls.worth_firing is Doctrine.worth_firing
        if among is None and as_if is None and fast:
            bounded = getattr(obs, "best_by_bound", None)  # branch and bound on the rule set's odds bound
            got = None if bounded is None else bounded(a, self.min_odds if worth else None)
            if got is not None:
                return got[0]
        if among is None:
            among = obs.targets(a) if as_if is None else obs.visible_ids()
        best = None
        many = getattr(obs, "odds_many", None)  # an observation that batches the shots (else one at a time)
        if many is not None:
            among = tuple(among)
            pairs: Iterable[tuple[int, Any]] = zip(among, many(among, as_if=as_if, shooter=a))
        else:
            pairs = ((t, obs.odds(t, as_if=as_if, shooter=a)) for t in among)
        if fast:
            return self._best_by_odds(pairs, worth)
        for t, o in pairs:
            if o is None or (o.p_kill <= 0 and o.p_hit <= 0):
                continue
            if worth and not self.worth_firing(obs, t, o):
                continue
            k = (self.target_value(obs, t, o, a, as_if), o.p_kill, o.p_hit, -t)
            if best is None or k > best[0]:
                best = (k, t, o)
        return None if best is None else (best[1], best[2])

    def _best_by_odds(self, pairs: Iterable[tuple[int, Any]], worth: bool) -> tuple[int, Any] | None:
        """:meth:`best_target`'s loop for the default :meth:`target_value` (the kill odds) and
        :meth:`worth_firing` (kill odds reach ``min_odds``): the same ``(target, odds)``.  The order key
        ``(p_kill, p_kill, p_hit, -target)`` is compared as ``(p_kill, p_hit, -target)`` (the same order), and the
        worth test is asked only of a pair that would beat the best so far (a pair that would not cannot change
        the answer, worth it or not), so most pairs cost one comparison of their kill odds."""
        best: tuple[int, Any] | None = None
        bk = bh = bt = None
        min_odds = self.min_odds if worth else None
        for t, o in pairs:
            if o is None:
                continue
            pk, ph = o.p_kill, o.p_hit
            if bk is not None:
                if pk < bk or (pk == bk and (ph < bh or (ph == bh and -t <= bt))):  # type: ignore[operator]
                    continue
            elif pk <= 0 and ph <= 0:
                continue
            if min_odds is not None and float(pk) < min_odds:
                continue
            bk, bh, bt, best = pk, ph, -t, (t, o)
        return best

    def best_shot(self, obs: Any, actor: int | None = None, as_if: Any = None) -> tuple[int, Any] | None:
        """The best target worth a shot (:meth:`worth_firing`), as ``(target, odds)``, or ``None``."""
        return self.best_target(obs, actor, as_if=as_if, worth=True)

    def worth_firing(self, obs: Any, target: int, odds: Any) -> bool:
        """Whether a shot at ``target`` with ``odds`` is worth taking (default: kill odds reach ``min_odds``)."""
        return float(odds.p_kill) >= self.min_odds

    def fire_or_pass(self, obs: Any, decision: Any, actor: int | None = None) -> Action:
        """Fire at the best target worth a shot if that is legal, else pass."""
        a = obs.actor if actor is None else actor
        bt = self.best_shot(obs, a)
        if bt is not None:
            act = Fire(a, bt[0])
            if obs.is_legal(act):
                return act
        return Pass(a)

    def on_fire(self, obs: Any, decision: Any) -> Action:
        return self.fire_or_pass(obs, decision)

    on_fire_again = on_fire
    on_attack = on_fire

    def on_react(self, obs: Any, decision: Any) -> Action:
        best = None
        for a in decision.actors:
            o_a = obs.for_actor(a)
            bt = self.best_shot(o_a, a)
            if bt is not None:
                k = (self.target_value(o_a, bt[0], bt[1], a), bt[1].p_kill, -a)
                if best is None or k > best[0]:
                    best = (k, a, bt[0])
        if best is None:
            return Pass(None)
        act = Fire(best[1], best[2])
        return act if obs.is_legal(act) else Pass(None)

    def ram_action(self, obs: Any, decision: Any, actors: Iterable[int] | None = None) -> Action | None:
        """A legal ``Ram`` by one of ``actors`` (default the decision's) at the nearest visible enemy, or ``None``
        (always ``None`` where the rule set has no ramming)."""
        if not obs.has_ramming:
            return None
        best = None
        enum = getattr(obs, "ram_targets", None)  # the legal rams in one call, where the observation has them
        for a in (decision.actors if actors is None else actors):
            me = obs.for_actor(a).me
            if me is None or me.hex is None:
                continue
            rams = None if enum is None else enum(a)
            if rams is None:
                legal = [e for e in obs.enemies() if obs.is_legal(Ram(a, e.tank_id))]
            elif not rams:
                continue
            else:
                # the same answers as ``is_legal(Ram(a, e))`` for every visible ``e`` (Observation.ram_targets)
                ok = set(rams)
                legal = [e for e in obs.enemies() if e.tank_id in ok]
            for e in legal:
                k = (obs.distance(me.hex, e.hex), a, e.tank_id)
                if best is None or k < best[0]:
                    best = (k, Ram(a, e.tank_id))
        return None if best is None else best[1]

    def on_ram(self, obs: Any, decision: Any) -> Action:
        act = self.ram_action(obs, decision)
        return act if act is not None else decision.default

    # --- activation ---------------------------------------------------------------------------------------------
    def intent(self, obs: Any) -> tuple[str, float]:
        """What the actor of ``obs`` wants this activation: ``(intent, priority)``; higher priority acts first."""
        return "hold", 0.0

    def mode_for(self, obs: Any, actor: int, want: str) -> str | None:
        """The first of the rule set's modes that fits intent ``want`` for ``actor`` (``None`` if none does)."""
        modes = obs.modes(actor)
        return next((m for m in _MODE_PREFS.get(want, (want,)) if m in modes), None)

    #: Activation scoring looks at most at this many actors: the ones nearest a known enemy (large battles only;
    #: every actor is scored when the side has no more than this many waiting).
    activation_candidates = 12

    def activation_actors(self, obs: Any, decision: Any) -> tuple[int, ...]:
        """The actors scored for an ``activate`` decision (see :attr:`activation_candidates`)."""
        actors = tuple(decision.actors)
        if len(actors) <= self.activation_candidates:
            return actors
        enemies = list(obs.last_known().values())
        if not enemies:
            return actors[: self.activation_candidates]

        near = nearest_distances([obs.tank(a).hex for a in actors], enemies)
        return tuple(a for _d, a in sorted(zip(near, actors))[: self.activation_candidates])

    def on_activate(self, obs: Any, decision: Any) -> Action:
        best = None
        for a in self.activation_actors(obs, decision):
            want, prio = self.intent(obs.for_actor(a))
            if want == "ram":
                act = self.ram_action(obs, decision, (a,))
                if act is not None:
                    return act
            mode = self.mode_for(obs, a, want)
            if mode is None:
                continue
            if best is None or prio > best[0]:
                best = (prio, a, mode)
        if best is None:
            return decision.default
        act = Activate(best[1], best[2])
        return act if obs.is_legal(act) else decision.default

    # --- movement -----------------------------------------------------------------------------------------------
    def choose_destination(self, obs: Any, states: Mapping[Any, tuple[int, Any]]) -> Any:
        """A reachable state to move to (``None`` = stay).  ``states`` are those affordable now."""
        return None

    def wants_fire_after_move(self, obs: Any) -> bool:
        """Whether to keep back the points a shot costs after the move (when the mode allows a shot)."""
        return bool(obs.visible_ids())

    def movable_states(self, obs: Any, decision: Any) -> dict:
        """Reachable states within the points left, keeping ``fire_cost`` back when the doctrine wants a shot after
        the move, and entering a hex when the move is compulsory."""
        ctx = decision.context
        reach = obs.reachable()
        mp = ctx.get("mp")
        keep = ctx.get("fire_cost", 0) if ctx.get("mode") == "move_and_fire" and self.wants_fire_after_move(obs) \
            else 0
        here = obs.me.hex

        def pick(reserve: int) -> dict:
            return {st: cp for st, cp in reach.items()
                    if (mp is None or cp[0] <= mp - reserve)
                    and not (ctx.get("compulsory") and obs.hex_of(st) == here)}

        out = pick(keep)
        if keep and (not out or (len(out) == 1 and not ctx.get("compulsory"))):
            moving = pick(0)
            if ctx.get("compulsory") or not obs.targets():
                out = moving or out
        return out

    def can_fire_after(self, obs: Any, decision: Any, cost: int) -> bool:
        """Whether a shot is still possible after a move costing ``cost`` (rule sets that give ``mp`` and
        ``fire_cost`` say; otherwise assume yes unless the mode is a pure move)."""
        ctx = decision.context
        if ctx.get("mode") is not None and ctx.get("mode") not in ("move_and_fire",):
            return False
        mp, fc = ctx.get("mp"), ctx.get("fire_cost", 0)
        return mp is None or mp - cost >= fc

    def on_move_step(self, obs: Any, decision: Any) -> Action:
        ctx = decision.context
        a = obs.actor
        if not ctx.get("plan_complete") and (ctx.get("compulsory") or self.wants_move(obs)):
            ram = self.ram_action(obs, decision) if obs.has_ramming else None
            if ram is not None and self.wants_ram(obs):
                return ram
            states = self.movable_states(obs, decision)
            dest = self.choose_destination(obs, states)
            if dest is None and ctx.get("compulsory") and states:
                dest = min(states, key=lambda s: (states[s][0], repr(s)))
            if dest is not None and dest in states and len(states[dest][1]) > 1:
                return obs.plan_to(states[dest][1])
        if ctx.get("can_fire", ctx.get("mode") in (None, "move_and_fire")):
            act = self.fire_or_pass(obs, decision)
            if isinstance(act, Fire):
                return act
        end = Special(a, "end_move", {"status": self.end_move_status(obs)})
        if obs.is_legal(end):
            return end
        p = Pass(a)
        return p if obs.is_legal(p) else decision.default

    on_move = on_move_step

    def end_move_status(self, obs: Any) -> str | None:
        """The status asked for when a move ends without a shot (``None`` = the rule set's default; rule sets with
        a status choice, such as ``panzer_squadron``'s ``stationary`` / ``in_movement``, read it)."""
        return None

    def wants_move(self, obs: Any) -> bool:
        """Whether to look at the moves at all in a move decision (saves the movement search when not)."""
        return True

    def wants_ram(self, obs: Any) -> bool:
        """Whether to ram when a ram is legal in a move (only ``rush`` does by default)."""
        return False

    # --- helpers for doctrines ------------------------------------------------------------------------------------
    @staticmethod
    def known_enemy_hexes(obs: Any) -> tuple:
        """Hexes of the visible enemies, else their last-known hexes, sorted."""
        kept = getattr(obs, "_enemy_hexes", None)   # (agents.observation.Observation keeps them: the same tuple)
        vis = kept() if kept is not None else tuple(sorted({e.hex for e in obs.enemies()}))
        return vis or tuple(sorted(set(obs.last_known().values())))

    def closing_goals(self, obs: Any) -> tuple:
        """Where a doctrine that closes on the enemy heads: the known enemies' hexes (:meth:`known_enemy_hexes`),
        else the objectives' hexes, else -- a side that has seen no enemy and has nothing to take -- the board's
        centre (:meth:`board_centre`), where two sides closing from anywhere must meet; it stops looking within
        :data:`CENTRE_REACHED` steps of it (:meth:`goal_stop`).  Decision (the seeds and specs leave doctrines
        to us): before, such a side held all battle, so a scenario without objectives whose sides start out of
        sight of each other ended in a draw by the turn limit with no shot fired."""
        return (self.known_enemy_hexes(obs) or tuple(sorted(o["hex"] for o in obs.objectives()))
                or self.board_centre(obs))

    def searching(self, obs: Any) -> bool:
        """Whether the actor's side knows of no enemy (none visible, none last seen) and has no objective: then
        :meth:`closing_goals` is the board's centre."""
        return not self.known_enemy_hexes(obs) and not obs.objectives()

    def goal_stop(self, obs: Any, stop_at: int) -> int:
        """``stop_at`` (hexes short of the goal at which a doctrine stops closing), or :data:`CENTRE_REACHED` while
        it is only looking for the enemy (:meth:`searching`)."""
        return CENTRE_REACHED if self.searching(obs) else stop_at

    def search_done(self, obs: Any) -> bool:
        """Whether the actor is looking for the enemy (:meth:`searching`) and already stands within
        :data:`CENTRE_REACHED` steps (over passable terrain) of the board's centre, or cannot get there at all."""
        if not self.searching(obs):
            return False
        centre = self.board_centre(obs)
        me = obs.me
        return not centre or me is None or me.hex is None or \
            obs.distance_field(centre).get(me.hex, BIG) <= CENTRE_REACHED

    def board_centre(self, obs: Any) -> tuple:
        """The passable cells nearest the centroid of the board's cells, sorted (hex distance to the centroid in
        cube coordinates, exact: every coordinate scaled by the number of cells, so integers; ties all kept).
        ``()`` for a board without a passable cell.  The board is public; kept per terrain version (the
        observation returns the same ``terrain_map`` until the terrain changes), computed in one pass over the
        cells with ``passable`` asked only from the nearest outwards."""
        tm = obs.terrain_map()
        memo = getattr(self, "_centre_memo", None)
        if memo is not None and memo[0] is tm:
            return memo[1]
        cells = list(tm)
        n = len(cells)
        sq, sr = sum(h[0] for h in cells), sum(h[1] for h in cells)
        ranked = sorted((max(abs(n * h[0] - sq), abs(n * h[1] - sr), abs(n * (h[0] + h[1]) - sq - sr)), h)
                        for h in cells)
        out: list = []
        for d, h in ranked:
            if out and d > out[0][0]:
                break
            if obs.passable(h):
                out.append((d, h))
        centre = tuple(sorted(h for _d, h in out))
        self._centre_memo = (tm, centre)
        return centre

    @staticmethod
    def nearest(obs: Any, frm: Any, hexes: Iterable) -> Any:
        """The hex of ``hexes`` nearest to ``frm`` (ties: lowest), or ``None`` (``min`` by ``(distance, hex)``:
        :func:`nearest_hex`)."""
        return nearest_hex(frm, hexes)

    def one_per_hex(self, obs: Any, states: Mapping[Any, tuple[int, Any]], face: Any = None) -> dict:
        """One state per hex of ``states`` (``{hex: state}``, sorted by hex): the one facing ``face`` (a hex, default
        the nearest known enemy) most directly, then the cheapest (then the lowest ``repr``).

        Speed (issue 14): what depends on the hex alone (the aim: the nearest enemies of all the hexes from one
        distance matrix, :func:`agents.distances.nearest_hexes`; the facing towards it; the arc test per facing) is
        computed once per hex, and ``repr`` only asked to break a tie of the first two keys: the same choice as
        ranking every state by ``(aim quality, cost, repr)``."""
        hex_of, facing_of = obs.hex_of, obs.facing_of
        placed = []          # (state, hex, facing, cost) in the states' order
        for st, (cost, _p) in states.items():
            if type(st) is tuple and len(st) == 2 and type(st[0]) is Hex and type(st[1]) is int:
                placed.append((st, st[0], st[1], cost))  # StateQueries.hex_of / facing_of of a (Hex, int) state
            else:
                placed.append((st, hex_of(st), facing_of(st), cost))
        hexes = list(dict.fromkeys(x[1] for x in placed))
        if face is not None:
            aims = [face] * len(hexes)
        else:
            enemies = self.known_enemy_hexes(obs)
            aims = nearest_hexes(hexes, enemies) if len(enemies) > 1 else [enemies[0] if enemies else None] * len(hexes)
        # hex -> (aim, facing towards it (None: any facing), {facing: aim quality})
        per: dict = {h: (aim, None if aim is None or aim == h else facing_towards(h, aim), {})
                     for h, aim in zip(hexes, aims)}
        out: dict = {}      # hex -> [quality, cost, state, repr or None (not asked yet)]
        for st, h, f, cost in placed:
            aim, best_f, goods = per[h]
            if best_f is None or f == best_f:
                good = 0
            else:
                good = goods.get(f)
                if good is None:
                    good = goods[f] = 1 if obs.in_arc(h, aim, f) else 2
            cur = out.get(h)
            if cur is None:
                out[h] = [good, cost, st, None]
                continue
            if good > cur[0] or (good == cur[0] and cost > cur[1]):
                continue
            if good == cur[0] and cost == cur[1]:
                r = cur[3]
                if r is None:
                    r = cur[3] = repr(cur[2])
                rs = repr(st)
                if not rs < r:
                    continue
                out[h] = [good, cost, st, rs]
            else:
                out[h] = [good, cost, st, None]
        return {h: out[h][2] for h in sorted(out)}

    def path_threat(self, obs: Any, path: Any) -> Fraction:
        """Threat summed over the hexes entered along ``path`` before its end (with the facing held there)."""
        total = Fraction(0)
        for t in self._path_threats(obs, path):
            total += t
        return total

    @staticmethod
    def _path_threats(obs: Any, path: Any) -> Iterable[Fraction]:
        """The terms of :meth:`path_threat` in path order, each asked only when reached: ``obs.threat`` of every hex
        entered along ``path`` but its last state (facing as when entered), the start hex excluded."""
        prev = None
        for p in tuple(path)[:-1]:
            h = obs.hex_of(p)
            if h != prev and prev is not None:
                yield obs.threat(h, obs.facing_of(p))
            prev = h

    def candidates_and_here(self, obs: Any, states: Mapping[Any, tuple[int, Any]],
                            pick: Callable[[Iterable, Callable[[Any], Any]], list]) -> tuple[list, Any]:
        """``(candidates, here)``: one state per hex chosen by ``pick`` (:meth:`capped` or :meth:`spread`, ordered
        by movement cost), plus ``here``, the state the actor is in now (``None`` if ``states`` lacks it), which is
        always among the candidates."""
        me = obs.me
        cands = pick(self.one_per_hex(obs, states).values(), lambda s: (states[s][0], repr(s)))
        here = next((s for s in states if obs.hex_of(s) == me.hex and obs.facing_of(s) == me.facing), None)
        if here is not None and here not in cands:
            cands.append(here)
        return cands, here

    def capped(self, states: Iterable, key: Callable[[Any], Any]) -> list:
        """The ``candidates`` best states by the cheap ``key`` (ascending)."""
        return sorted(states, key=key)[: self.candidates]

    def spread(self, states: Iterable, key: Callable[[Any], Any]) -> list:
        """At most ``candidates`` states spread evenly over the ``key`` order (the first and the last included), so
        a bounded sample still covers near and far moves."""
        ranked = sorted(states, key=key)
        n, k = len(ranked), self.candidates
        if n <= k:
            return ranked
        if k == 1:
            return ranked[:1]
        return [ranked[round(i * (n - 1) / (k - 1))] for i in range(k)]

    def approach(self, obs: Any, states: Mapping[Any, tuple[int, Any]], goals: tuple, stop_at: int = 1,
                 threat_weight: float = 1.0) -> Any:
        """The state that gets nearest (in steps over passable terrain) to ``goals``, stopping ``stop_at`` short;
        among the equally near (at most ``candidates``) the one facing the goal, then of least threat along the
        path (``threat_weight`` x threat at the end + the threat of the hexes passed), then the cheapest.
        ``None`` if no state gets nearer than here.  :meth:`one_per_hex` is asked of the states in the nearest
        hexes only (an override must pick a hex's state from that hex's states alone, as it does)."""
        if not goals or not states:
            return None
        field = obs.distance_field(goals)
        me = obs.me
        here = field.get(me.hex, BIG)
        if here <= stop_at:
            return None

        # the one state per hex (one_per_hex) ranked by (closeness, cost, repr), the first equally near ones kept:
        # only the hexes at the least closeness can be among them, and one_per_hex picks each hex's state from
        # that hex's states alone, so it is asked of those hexes' states only (each hex's closeness asked once:
        # a lazy field's look-up costs a distance per goal)
        near: dict = {}
        at = []
        hex_of = obs.hex_of
        for st in states:
            h = st[0] if type(st) is tuple and len(st) == 2 and type(st[0]) is Hex and type(st[1]) is int \
                else hex_of(st)
            d = near.get(h)
            if d is None:
                d = near[h] = max(field.get(h, BIG), stop_at)
            at.append(d)
        best_d = min(near.values())
        if best_d >= here:
            return None
        nearest_states = {st: v for (st, v), d in zip(states.items(), at) if d == best_d}
        ranked = sorted(self.one_per_hex(obs, nearest_states).values(), key=lambda s: (states[s][0], repr(s)))
        tied = ranked[: self.candidates]
        visible = bool(obs.visible_ids())

        # min(tied, key=(not facing the goal, risk, cost, repr)), where risk = threat_weight x threat at the end +
        # path_threat / 2 (exactly that expression), with the threats a candidate that cannot win never asked: one
        # not facing its goal while another does is out; a lone candidate needs no threat; the others by a
        # best-first search over lower bounds of their keys: each candidate's risk so far (0 before its end's
        # threat when threat_weight >= 0, then the same expression over the path's threats asked so far, never
        # negative, so a lower bound: Fraction to float and float sums round monotonically) with its cost and
        # repr; the least bound is taken one threat further, and the first to come up complete is the minimum
        # (every other key is at least its bound, and the repr makes the keys unique).
        scored = []
        for s in tied:
            h, f = obs.hex_of(s), obs.facing_of(s)
            scored.append((0 if obs.in_arc(h, self.nearest(obs, h, goals), f) else 1, s, h, f))
        arc = min(x[0] for x in scored)
        cands = [x[1:] for x in scored if x[0] == arc]
        if len(cands) == 1 or not (visible and threat_weight):   # (one candidate: its risk decides nothing)
            return min(cands, key=lambda x: (states[x[0]][0], repr(x[0])))[0]
        ends: list = [None] * len(cands)
        passed = [Fraction(0)] * len(cands)
        walks: list = [None] * len(cands)    # the path's threats not asked yet (None: the end's not asked yet)
        heap = []
        for i, (s, h, f) in enumerate(cands):
            lb: Any = Fraction(0)
            if threat_weight < 0:
                lb = ends[i] = threat_weight * obs.threat(h, f)
                walks[i] = iter(self._path_threats(obs, states[s][1]))
            heap.append((lb, states[s][0], repr(s), i, False))
        while True:
            lb, cost, r, i, done = heap.pop(heap.index(min(heap)))   # (at most `candidates` entries)
            if done:
                return cands[i][0]
            s, h, f = cands[i]
            if walks[i] is None:
                ends[i] = threat_weight * obs.threat(h, f)
                walks[i] = iter(self._path_threats(obs, states[s][1]))
            else:
                t = next(walks[i], None)
                if t is None:
                    done = True
                else:
                    passed[i] += t
            heap.append((ends[i] + passed[i] / 2, cost, r, i, done))
