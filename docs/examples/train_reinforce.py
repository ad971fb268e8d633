"""Train a masked linear policy with REINFORCE (numpy only) and show it beating the ``random`` doctrine.

    python docs/examples/train_reinforce.py --minutes 3 --out reinforce.npz
    python docs/examples/train_reinforce.py --smoke          # a few seconds: what the test suite runs

The learner plays side 0 of the Gymnasium environment (:class:`sim.env.TankGymEnv`, ``obs_type="flat"``,
``skip_trivial=True``) against the built-in ``random`` doctrine on the bundled ``skirmish_2v2`` (two Pz IV H a side
on an open 8 x 8 map).  The policy is a softmax over the legal actions of ``x @ W + b`` (``x``: the flat
observation; illegal actions get probability 0 through the mask), trained by the policy gradient with a running
mean baseline and Adam; rewards are the outcome (win +1, loss -1, draw 0) plus 0.1 per enemy tank lost and -0.1
per own tank lost.

Then it plays ``--eval`` battles on fresh seeds, greedily (the most probable legal action), through the
``learned`` doctrine exactly as ``tanksim match`` would, and prints the win rate with its Wilson 95 % interval
(draws count as not won).  The saved ``.npz`` enters tournaments as a doctrine::

    PYTHONPATH=docs/examples tanksim match learned:policy=train_reinforce:load,weights=reinforce.npz random \\
        --scenario skirmish_2v2
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from agents.encoding import flatten
from agents.policies.learned import Learned
from sim.env import TankGymEnv
from sim.runner import run_battle
from sim.tournaments.ratings import wilson_interval

REWARD = {"win": 1.0, "loss": -1.0, "draw": 0.0, "kill": 0.1, "own_loss": -0.1}


class LinearPolicy:
    """Masked softmax policy ``pi(a | x) = softmax(x @ W + b)`` over the legal actions."""

    def __init__(self, n_features: int, n_actions: int):
        self.W = np.zeros((n_features, n_actions))
        self.b = np.zeros(n_actions)

    def probs(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = x @ self.W + self.b
        logits = np.where(mask > 0, logits, -np.inf)
        z = np.exp(logits - logits.max())
        return z / z.sum()

    def greedy(self, observation: dict, mask: np.ndarray) -> int:
        """The most probable legal action of a ``dict`` observation (the ``learned`` doctrine's call)."""
        return int(np.argmax(self.probs(flatten(observation).astype(np.float64), mask)))

    def save(self, path: str | Path, meta: dict) -> None:
        np.savez(path, W=self.W, b=self.b, meta=json.dumps(meta))

    @staticmethod
    def load(path: str | Path) -> LinearPolicy:
        with np.load(path, allow_pickle=False) as f:
            pol = LinearPolicy(*f["W"].shape)
            pol.W, pol.b = f["W"].copy(), f["b"].copy()
        return pol


def load(path: str) -> object:
    """The ``learned`` doctrine's factory: ``learned:policy=train_reinforce:load,weights=PATH``."""
    return LinearPolicy.load(path).greedy


class Adam:
    def __init__(self, shapes: list[tuple[int, ...]], lr: float):
        self.lr, self.t = lr, 0
        self.m = [np.zeros(s) for s in shapes]
        self.v = [np.zeros(s) for s in shapes]

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p += self.lr * (m / (1 - 0.9 ** self.t)) / (np.sqrt(v / (1 - 0.999 ** self.t)) + 1e-8)


def play_episode(env: TankGymEnv, pol: LinearPolicy, seed: int, rng: np.random.Generator):
    """One battle, sampling from the policy; returns ``(features, masks, actions, return, outcome)``."""
    obs, info = env.reset(seed=seed)
    xs, masks, acts, total = [], [], [], 0.0
    done = False
    while not done:
        x = obs.astype(np.float64)
        mask = info["action_mask"]
        a = int(rng.choice(len(mask), p=pol.probs(x, mask)))
        xs.append(x)
        masks.append(mask)
        acts.append(a)
        obs, r, term, trunc, info = env.step(a)
        total += r
        done = term or trunc
    return xs, masks, acts, total, info.get("outcome", "draw"), env.aec.illegal_actions


def train(scenario: str, minutes: float, episodes: int | None, seed: int, batch: int = 8, lr: float = 0.01,
          log=print) -> tuple[LinearPolicy, dict]:
    """REINFORCE for ``minutes`` of wall time (or ``episodes``); returns the policy and training figures."""
    env = TankGymEnv(scenario, side=0, opponent="random", obs_type="flat", skip_trivial=True, reward=REWARD)
    pol = LinearPolicy(env.observation_space.shape[0], env.action_space.n)
    opt = Adam([pol.W.shape, pol.b.shape], lr)
    rng = np.random.default_rng(seed)
    baseline, n, steps, illegal = 0.0, 0, 0, 0
    wins: list[float] = []
    t0 = time.perf_counter()
    while (episodes is None and time.perf_counter() - t0 < minutes * 60) or (episodes is not None and n < episodes):
        gW, gb = np.zeros_like(pol.W), np.zeros_like(pol.b)
        for _ in range(batch):
            xs, masks, acts, ret, outcome, bad = play_episode(env, pol, 10_000_000 + seed * 100_000 + n, rng)
            n += 1
            steps += len(acts)
            illegal += bad
            wins.append(outcome == "win")
            adv = ret - baseline
            baseline += 0.05 * (ret - baseline)
            X = np.array(xs)
            G = np.zeros((len(acts), pol.b.size))
            for t, (x, mask, a) in enumerate(zip(xs, masks, acts)):
                G[t] = -pol.probs(x, mask)
                G[t, a] += 1.0
            gW += adv * X.T @ G
            gb += adv * G.sum(0)
        opt.step([pol.W, pol.b], [gW / batch, gb / batch])
        if n % (batch * 25) == 0:
            log(f"  {n:5d} battles, {steps} steps, {time.perf_counter() - t0:6.1f} s: won {np.mean(wins[-200:]):.2f} "
                f"of the last {min(200, len(wins))} (sampling)")
    wall = time.perf_counter() - t0
    return pol, {"battles": n, "steps": steps, "wall_s": round(wall, 1), "steps_per_s": round(steps / wall),
                 "illegal_actions": illegal}


def evaluate(scenario: str, pol: LinearPolicy, battles: int, seed: int = 0) -> dict:
    """``battles`` battles of the greedy policy (the ``learned`` doctrine, side 0) against ``random`` on fresh
    seeds: wins, draws, losses, illegal actions and faults, and the win rate's Wilson 95 % interval."""
    from sim.scenario import load_scenario

    spec = load_scenario(scenario)
    me = Learned.of(pol.greedy)
    won = drawn = lost = rejected = faults = 0
    for k in range(battles):
        res = run_battle(spec, 20_000_000 + seed * 100_000 + k, {0: me, 1: ("random", {})})
        w = res.row["winner_index"]
        won, drawn, lost = won + (w == 0), drawn + (w == -1), lost + (w == 1)
        rejected += sum(e["kind"] == "ActionRejected" and json.loads(e["data"])["side"] == 0 for e in res.events)
        faults += res.row["faults"]
    rate, low, high = wilson_interval(won, battles)
    return {"battles": battles, "won": won, "drawn": drawn, "lost": lost, "win_rate": round(rate, 3),
            "wilson95": [round(low, 3), round(high, 3)], "illegal_actions": rejected, "faults": faults}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="skirmish_2v2")
    p.add_argument("--minutes", type=float, default=3.0, help="training wall time")
    p.add_argument("--episodes", type=int, help="train for this many battles instead of --minutes")
    p.add_argument("--eval", type=int, default=400, help="evaluation battles")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="save the weights here (.npz)")
    p.add_argument("--smoke", action="store_true", help="a few seconds: 16 battles of training, 4 of evaluation")
    args = p.parse_args(argv)
    episodes, n_eval = (16, 4) if args.smoke else (args.episodes, args.eval)
    print(f"training on {args.scenario} against random ({'16 battles' if args.smoke else f'{args.minutes} min'})")
    pol, fig = train(args.scenario, args.minutes, episodes, args.seed)
    print(f"trained: {json.dumps(fig)}")
    if args.out:
        pol.save(args.out, {"scenario": args.scenario, **fig})
        print(f"saved {args.out}")
    ev = evaluate(args.scenario, pol, n_eval, args.seed)
    print(f"evaluation (greedy, side 0, fresh seeds): {json.dumps(ev)}")
    print(f"win rate {ev['win_rate']:.3f}, Wilson 95 % interval [{ev['wilson95'][0]:.3f}, {ev['wilson95'][1]:.3f}]"
          + (": above 0.5" if ev["wilson95"][0] > 0.5 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
