"""``learned``: a doctrine that asks any callable from (observation arrays, mask) to an action index.

A policy trained in the PettingZoo / Gymnasium environment (:mod:`sim.env`) plays here unchanged, in
``tanksim run``, ``tanksim match`` and ``tanksim tournament``, in-process or isolated: the observation it gets is
the same dict of arrays (``board``, ``own``, ``enemy``, ``decision``, ``action_mask``; :mod:`agents.encoding`), and
its answer is an index of the same action table, turned into the action here.  Isolated, the arrays come in the
protocol's ``arrays`` field (the doctrine asks for them in its handshake), so the child needs no queries.

Parameters: ``policy`` -- ``package.module:name`` of the callable, called as ``fn(observation, mask)`` or, if it
takes a third argument (or one named ``rng``), ``fn(observation, mask, rng)`` with the side's own random stream
(default ``agents.encoding:random_masked``, the masked random agent); ``weights`` -- a file path handed to the
named object first: with ``weights``, ``policy`` names a factory and ``fn = factory(weights)`` (e.g. a trained
network loading its ``.npz``; default empty: no factory); ``skip_trivial`` -- answer a decision whose mask allows
a single action without calling the policy (default true; the environment's ``skip_trivial`` option does the
same).  ``fn`` must return an int index (a numpy integer is fine); an index the mask rules out is an illegal
action (the engine logs it and applies its rule); a non-integer is a ``wrong_type`` fault and an index outside the
table a ``raise`` fault.  Decision kinds the
layout does not know (:data:`agents.DECISION_KINDS`) get the decision's default.

Loading runs the named module's code: a learned policy is a plug-in like any ``package.module:Class``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.policies.base import Policy
from sim.actions import Action

if TYPE_CHECKING:
    from agents.encoding import Encoded, Encoder

# agents.encoding (numpy) is imported on first use, so ``import sim.runner`` stays cheap (issue 14).


class Learned(Policy):
    """Answers with ``policy(observation arrays, mask[, rng])`` (see the module docstring)."""

    name = "learned"
    defaults = {"policy": "agents.encoding:random_masked", "weights": "", "skip_trivial": True}
    # the parameters (set from ``defaults`` and the caller's values by Policy.__init__)
    policy: str
    weights: str
    skip_trivial: bool
    #: The isolated protocol sends this doctrine the observation arrays (``agents.remote`` handshake).
    wants_arrays = True

    def __init__(self, **params: Any):
        super().__init__(**params)
        from agents.encoding import load_callable, takes_rng

        try:
            obj = load_callable(self.policy)
            fn = obj(self.weights) if self.weights else obj
        except (LookupError, OSError) as exc:
            raise ValueError(f"learned: policy {self.policy!r}: {exc}") from None
        if not callable(fn):
            raise ValueError(f"learned: {self.policy!r}({self.weights!r}) returned a {type(fn).__name__}, "
                             f"expected a callable (observation, mask) -> index")
        self.fn = fn
        self._with_rng = takes_rng(fn)
        self._encoder: Encoder | None = None
        self._key: tuple | None = None

    @classmethod
    def of(cls, fn: Any, skip_trivial: bool = True) -> Learned:
        """A ``learned`` doctrine answering with the callable ``fn`` itself (a frozen policy held in memory, e.g.
        the opponent of :class:`sim.env.TankGymEnv`); it cannot be named in a data file or sent to a process."""
        from agents.encoding import takes_rng

        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        pol = cls(skip_trivial=skip_trivial)
        pol.fn, pol._with_rng = fn, takes_rng(fn)
        pol.params = {**pol.params, "policy": f"<{getattr(fn, '__qualname__', type(fn).__name__)}>"}
        return pol

    def encoded(self, obs: Any, decision: Any) -> Encoded:
        """The arrays of this decision: from the isolated protocol's ``arrays`` field if the observation carries
        them, else encoded here from the observation's public queries."""
        from agents.encoding import Encoder

        arrays = getattr(obs, "arrays", None)
        if callable(arrays):
            return arrays()
        key = (obs.side, obs.order_of_battle(), len(obs.terrain_map()))
        if self._encoder is None or self._key != key:
            self._encoder, self._key = Encoder.for_observation(obs), key
        return self._encoder.encode(obs, decision)

    def decide(self, obs: Any, decision: Any) -> Action:
        from agents.encoding import DECISION_KINDS

        if decision.kind not in DECISION_KINDS:
            return decision.default
        enc = self.encoded(obs, decision)
        if self.skip_trivial and enc.choices() == 1:
            return decision.default
        observation = {k: v.copy() for k, v in enc.arrays.items()}
        mask = enc.mask.copy()
        index = self.fn(observation, mask, obs.rng) if self._with_rng else self.fn(observation, mask)
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            return index  # the controller records a wrong_type fault
        return enc.action(index.__index__())
