"""The meta-game (sim.tournaments.metagame): replicator dynamics, equilibria and their stability, alpha-rank, bootstrap.

Checked against exact answers: rock-paper-scissors (interior rest point 1/3 each, neutral, the product of shares
conserved along every orbit), a dominance game (converges to the dominant doctrine), the two-doctrine replicator
in closed form (log-odds grow at a constant rate), the equilibrium of a weighted rock-paper-scissors (shares
proportional to the opposite edge), and alpha-rank against a hand-built Moran chain (Fermi fixation
probabilities, the stationary distribution solved directly)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sim.tournaments import metagame as G

RPS = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])       # rock beats scissors, ...
DOMINANT = np.array([[0.5, 0.8, 0.7], [0.2, 0.5, 0.6], [0.3, 0.4, 0.5]])


def skew(a: float, b: float, c: float) -> np.ndarray:
    """A weighted rock-paper-scissors: ``M - 1/2`` = [[0, a, -b], [-a, 0, c], [b, -c, 0]]."""
    return 0.5 + np.array([[0, a, -b], [-a, 0, c], [b, -c, 0]])


def test_rock_paper_scissors_has_one_neutral_interior_rest_point():
    assert G.symmetric_equilibrium(RPS) == pytest.approx([1 / 3] * 3, abs=1e-9)
    (rp,) = G.rest_points(RPS)
    assert rp.mix == pytest.approx([1 / 3] * 3) and rp.stability == "neutral" and rp.max_real == pytest.approx(0)
    assert rp.cycles
    # the Jacobian's tangent eigenvalues at the centre are +-i/(2 sqrt 3): purely imaginary
    B = np.linalg.svd(np.ones((1, 3)))[2][1:].T
    ev = np.linalg.eigvals(B.T @ G.jacobian(RPS, np.full(3, 1 / 3)) @ B)
    assert sorted(ev.imag) == pytest.approx([-1 / (2 * math.sqrt(3)), 1 / (2 * math.sqrt(3))])
    assert G.replicator(RPS).final == pytest.approx([1 / 3] * 3, abs=1e-9)           # the centre stays put


def test_rock_paper_scissors_orbits_conserve_the_share_product_and_average_to_the_centre():
    tr = G.replicator(RPS, [0.5, 0.3, 0.2], t_max=600, n_points=6001)
    prod = tr.x.prod(axis=1)                                     # a constant of motion of zero-sum RPS
    assert np.abs(prod - 0.03).max() < 1e-7
    assert np.abs(tr.final - 1 / 3).max() > 0.05                 # it does not converge ...
    assert tr.time_average == pytest.approx([1 / 3] * 3, abs=0.01)   # ... but its time average does


def test_dominant_doctrine_takes_over():
    assert G.symmetric_equilibrium(DOMINANT) == pytest.approx([1, 0, 0])
    (rp,) = G.rest_points(DOMINANT)
    assert rp.mix == pytest.approx([1, 0, 0]) and rp.stability == "stable"
    # at a pure rest point the tangent eigenvalues are M[j, i] - M[i, i]: -0.3 and -0.2
    assert rp.max_real == pytest.approx(-0.2)
    tr = G.replicator(DOMINANT, [0.05, 0.5, 0.45], t_max=300)
    assert tr.final[0] > 0.999


def test_two_doctrine_replicator_matches_the_closed_form():
    # with M = [[1/2, p], [1 - p, 1/2]], d/dt log(x0 / x1) = p - 1/2 exactly
    p = 0.7
    M = np.array([[0.5, p], [1 - p, 0.5]])
    tr = G.replicator(M, [0.1, 0.9], t_max=40, n_points=81)
    exact = 1 / (1 + 9 * np.exp(-(p - 0.5) * tr.t))
    assert np.abs(tr.x[:, 0] - exact).max() < 1e-8


@pytest.mark.parametrize("a,b,c", [(0.1, 0.2, 0.3), (0.4, 0.05, 0.25)])
def test_weighted_rock_paper_scissors_equilibrium_exact(a, b, c):
    # x A = 0 for the skew part gives x proportional to (c, b, a)
    M = skew(a, b, c)
    exact = np.array([c, b, a]) / (a + b + c)
    assert G.symmetric_equilibrium(M) == pytest.approx(exact, abs=1e-9)
    (rp,) = G.rest_points(M)
    assert rp.mix == pytest.approx(exact) and rp.stability == "neutral"
    tr = G.replicator(M, [0.6, 0.2, 0.2], t_max=3000, n_points=30001)
    assert tr.time_average == pytest.approx(exact, abs=0.02)


def test_rest_points_of_a_game_with_a_dominated_doctrine():
    # rock-paper-scissors plus a fourth doctrine that everyone beats: the equilibrium ignores it, and the
    # pure rest points are not equilibria (each is beaten by the next doctrine)
    M = np.full((4, 4), 0.5)
    M[:3, :3] = RPS
    M[:3, 3], M[3, :3] = 0.6, 0.4
    rps = G.rest_points(M)
    assert len(rps) == 1 and rps[0].mix == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0])
    assert G.replicator(M, t_max=400).final[3] < 1e-6


def moran_chain(M: np.ndarray, m: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Alpha-rank by hand: one mutant ``r`` in ``m - 1`` residents ``s`` fixates with probability
    ``(1 - e^-u) / (1 - e^-mu)``, ``u = alpha (M[r, s] - M[s, r])`` (Fermi selection, fitness against the current
    opponent); the chain moves s -> r with probability fixation / (K - 1); pi solves pi C = pi."""
    K = M.shape[0]
    fix = np.full((K, K), np.nan)
    C = np.zeros((K, K))
    for s in range(K):
        for r in range(K):
            if r != s:
                u = alpha * (M[r, s] - M[s, r])
                fix[r, s] = 1 / m if u == 0 else -math.expm1(-u) / -math.expm1(-m * u)
                C[s, r] = fix[r, s] / (K - 1)
        C[s, s] = 1 - C[s].sum()
    A = np.vstack([C.T - np.eye(K), np.ones(K)])
    pi = np.linalg.lstsq(A, np.r_[np.zeros(K), 1.0], rcond=None)[0]
    return pi, fix


@pytest.mark.parametrize("M,m,alpha", [(np.array([[0.5, 0.52], [0.48, 0.5]]), 20, 5.0),
                                       (skew(0.01, 0.03, 0.02), 30, 10.0), (RPS, 50, 10.0),
                                       (DOMINANT, 50, 2.0)])
def test_alpha_rank_matches_a_hand_built_moran_chain(M, m, alpha):
    pytest.importorskip("open_spiel.python.egt.alpharank", reason="alpha-rank needs the metagame extra")
    got = G.alpha_rank(M, m, alpha)
    pi, fix = moran_chain(M, m, alpha)
    assert got.pi == pytest.approx(pi, abs=1e-9)
    off = ~np.eye(len(M), dtype=bool)
    assert got.fixation[off] == pytest.approx(fix[off], rel=1e-9, abs=1e-300)
    assert got.rho_neutral == pytest.approx(1 / m)
    if M.shape[0] == 2:       # two doctrines: pi0 / pi1 = fixation of 0 in 1 over fixation of 1 in 0
        assert pi[0] / pi[1] == pytest.approx(fix[0, 1] / fix[1, 0])


def rps_games(n_pairs: int, seed: int, names=("rock", "paper", "scissors")) -> pd.DataFrame:
    """Mirrored pairs: the beating doctrine wins each game with probability 0.8, else a draw."""
    rng = np.random.default_rng(seed)
    rows = []
    beats = {("rock", "scissors"), ("scissors", "paper"), ("paper", "rock")}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for k in range(n_pairs):
                for leg in range(2):
                    x, y = (a, b) if leg == 0 else (b, a)
                    win = rng.random() < 0.8
                    s = (1.0 if (x, y) in beats else 0.0) if win else 0.5
                    rows.append({"a": x, "b": y, "score_a": s, "cluster": f"{a}-{b}-{k}"})
    return pd.DataFrame(rows)


def test_analyse_a_round_robin_with_bootstrap_intervals_and_plot(tmp_path):
    games = rps_games(12, seed=4)
    names = ["rock", "paper", "scissors"]
    opts = G.MetagameOptions(bootstrap=60, seed=2, t_max=200)
    mg = G.analyse(games, names, opts)
    M = G.payoff_matrix(games, names)
    assert (M + M.T) == pytest.approx(np.ones((3, 3)))
    t = mg.table().set_index("doctrine")
    assert t["equilibrium"].sum() == pytest.approx(1) and (t["eq_lo"] <= t["equilibrium"] + 1e-12).all()
    assert (t["equilibrium"] <= t["eq_hi"] + 1e-12).all() and t["p_in_support"].between(0.5, 1).all()
    assert len(mg.rest_points) == 1 and mg.rest_points[0].stability == "neutral"
    again = G.analyse(games, names, opts)
    pd.testing.assert_frame_equal(mg.table(), again.table())             # seeded: deterministic
    text = G.format_metagame(mg)
    assert "Equilibrium mixes" in text and "neutral" in text and "rock" in text
    G.plot_metagame(mg, str(tmp_path / "m.png"), title="rps")
    assert (tmp_path / "m.png").stat().st_size > 10000
    js = G.to_json(mg)
    assert js["rest_points"][0]["stability"] == "neutral" and len(js["table"]) == 3


def test_a_missing_pairing_is_refused():
    games = rps_games(2, seed=1)
    partial = games[~((games["a"].isin(["rock", "paper"])) & (games["b"].isin(["rock", "paper"])))]
    with pytest.raises(G.MetagameError, match="never played: rock v paper"):
        G.payoff_matrix(partial, ["rock", "paper", "scissors"])
    with pytest.raises(G.MetagameError, match="population must be >= 2"):
        G.MetagameOptions(population=1)


def test_tied_doctrines_give_a_segment_of_equilibria():
    # doctrines 0 and 1 tie against each other and both beat 2: every mix of 0 and 1 is an equilibrium
    M = np.array([[0.5, 0.5, 0.8], [0.5, 0.5, 0.7], [0.2, 0.3, 0.5]])
    rps = G.rest_points(M)
    assert len(rps) >= 2 and all(r.mix[2] == pytest.approx(0) for r in rps)
    assert any(r.mix == pytest.approx([1, 0, 0]) for r in rps) and any(r.mix == pytest.approx([0, 1, 0]) for r in rps)
    # along the tie the dynamics are neutral: the Jacobian at a pure point has eigenvalues M[j,0] - 1/2 = 0, -0.3
    pure0 = next(r for r in rps if r.mix[0] == pytest.approx(1))
    assert pure0.stability == "neutral" and pure0.max_real == pytest.approx(0) and not pure0.cycles
    x = G.symmetric_equilibrium(M)
    assert x[2] == pytest.approx(0) and (M.T @ x >= 0.5 - 1e-9).all()      # no doctrine beats it
    # the reported one is the segment's entropy maximum, its midpoint (Nash averaging), not an LP vertex
    assert x == pytest.approx([0.5, 0.5, 0], abs=1e-6)


def test_a_copy_of_a_doctrine_splits_its_share():
    # rock-paper-scissors with rock entered twice (identical rows and columns): the set of equilibria is
    # rock + rock' = 1/3, paper = scissors = 1/3; the entropy maximum splits rock's third in two
    R4 = np.array([[0.5, 0.5, 0.0, 1.0], [0.5, 0.5, 0.0, 1.0], [1.0, 1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 0.5]])
    assert G.symmetric_equilibrium(R4) == pytest.approx([1 / 6, 1 / 6, 1 / 3, 1 / 3], abs=1e-6)
    assert G.maximin_vertex(R4)[1] == pytest.approx(0.5)
    # a dominant doctrine entered twice: the two copies share it equally, whatever order they are listed in
    D = np.array([[0.5, 0.5, 0.8, 0.7], [0.5, 0.5, 0.8, 0.7], [0.2, 0.2, 0.5, 0.6], [0.3, 0.3, 0.4, 0.5]])
    for perm in ([0, 1, 2, 3], [2, 0, 3, 1], [3, 2, 1, 0]):
        x = G.symmetric_equilibrium(D[np.ix_(perm, perm)])
        assert x[np.argsort(perm)] == pytest.approx([0.5, 0.5, 0, 0], abs=1e-6)


def test_the_maximum_entropy_mix_is_a_clean_neutral_rest_point():
    # twins 0 and 1 beside an RPS-like trio: the equilibria are a segment (the twins' split); the reported mix
    # splits them equally, gives the beaten doctrine exactly 0, and its stability is not eigenvalue noise
    A = np.array([[.5, .5, .7, .3, .6], [.5, .5, .7, .3, .6], [.3, .3, .5, .9, .2], [.7, .7, .1, .5, .4],
                  [.4, .4, .8, .6, .5]])
    x = G.symmetric_equilibrium(A)
    assert x[2] == 0 and x == pytest.approx([0.125, 0.125, 0, 0.25, 0.5], abs=1e-6)
    rp = next(r for r in G.rest_points(A) if np.allclose(r.mix, x))
    assert rp.stability == "neutral"


def test_a_unique_equilibrium_is_the_lp_vertex_unchanged():
    # where the optimal set is one point, the reported mix is the LP's own (not an approximation of it)
    rng = np.random.default_rng(11)
    for _ in range(20):
        A = rng.random((6, 6))
        M = (A + 1 - A.T) / 2
        np.fill_diagonal(M, 0.5)
        x = G.symmetric_equilibrium(M)
        assert np.array_equal(x, G.maximin_vertex(M)[0])
        assert (x @ M >= 0.5 - 1e-9).all() and x.sum() == pytest.approx(1)


def test_identical_entrants_share_the_equilibrium_in_the_analysis():
    # "rock" and "stone" play the same: every game of one is the other's (same seeds), and between them draws
    base = rps_games(6, seed=3)
    twin = base[(base["a"] == "rock") | (base["b"] == "rock")].copy()
    twin["a"] = twin["a"].replace("rock", "stone")
    twin["b"] = twin["b"].replace("rock", "stone")
    twin["cluster"] = "stone-" + twin["cluster"]
    draws = pd.DataFrame([{"a": x, "b": y, "score_a": 0.5, "cluster": f"rs-{k}"}
                          for k in range(6) for x, y in (("rock", "stone"), ("stone", "rock"))])
    games = pd.concat([base, twin, draws], ignore_index=True)
    names = ["rock", "stone", "paper", "scissors"]
    mg = G.analyse(games, names, G.MetagameOptions(bootstrap=0, t_max=50))
    eq = dict(zip(names, mg.equilibrium))
    assert eq["rock"] == pytest.approx(eq["stone"], abs=1e-6) and eq["rock"] > 0.05
    assert any("largest entropy" in n for n in mg.notes)
