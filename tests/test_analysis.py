"""sim.experiments.analysis on small synthetic results tables: every statistic against scipy / statsmodels or an exact
answer."""
from __future__ import annotations

import json
import math
from itertools import product

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.power import NormalIndPower, TTestPower
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_effectsize

from sim.experiments import analysis as A
from sim.experiments import samplers as designs
from sim.experiments.report import analyse_runs


def synth(factors: dict[str, list], reps: int, draw, *, crn: bool = True, paths: dict[str, str] | None = None,
          seed: int = 0, design: str = "full_factorial", points: list[dict] | None = None, extra: dict | None = None):
    """Runs and a manifest for a design over ``factors`` (name -> levels), ``reps`` battles per point; ``draw(values,
    rep, rng)`` returns ``(winner_index, turns, side1_alive, side2_alive)`` for one battle (4 tanks a side)."""
    rng = np.random.default_rng(seed)
    names = list(factors)
    pts = points or [dict(zip(names, combo)) for combo in product(*factors.values())]
    paths = paths or {}
    rows = []
    for i, vals in enumerate(pts):
        for r in range(reps):
            w, turns, a1, a2 = draw(vals, r, rng)
            pol = [{"name": vals.get(n, "hold"), "params": {}} for n in ("red", "blue")] if {"red", "blue"} <= set(
                vals) else [{"name": "hold", "params": {}}, {"name": "advance", "params": {}}]
            rows.append({"point_key": f"p{i}", "rep": r, "status": "ok", "winner_index": w, "turns": turns,
                         "side1_alive": a1, "side2_alive": a2, "side1_lost": 4 - a1, "side2_lost": 4 - a2,
                         "side1_name": "Red", "side2_name": "Blue", "policies": json.dumps(pol, separators=(",", ":")),
                         "ruleset": "panzer_squadron", **vals})
    runs = pd.DataFrame(rows)
    facs = [{"name": n, "path": paths.get(n, f"turn_limit_{n}"), "values": list(v) if v is not None else [],
             "is_range": v is None, "integer": False} for n, v in factors.items()]
    manifest = {"design": {"experiment": {"name": "synthetic", "common_random_numbers": crn,
                                          "design": {"kind": design}},
                           "side_names": ["Red", "Blue"], "factors": facs, "source": "synthetic.yaml",
                           "points": [{"index": i, "key": f"p{i}", "values": v} for i, v in enumerate(pts)],
                           "replications": reps, "n_runs": reps * len(pts), "seed": seed,
                           "scenario": {"source": "synthetic", "data": {}}, **(extra or {})}}
    return runs, manifest


def bern(p: float, rng) -> int:
    return 0 if rng.random() < p else 1


# --- effects -------------------------------------------------------------------------------------------------------

def test_effects_intervals_match_scipy_statsmodels_and_exact_counts():
    p = {"x": 0.7, "y": 0.4, "z": 0.5}
    runs, man = synth({"a": ["x", "y", "z"]}, 30, lambda v, r, g: (bern(p[v["a"]], g), int(g.integers(2, 15)),
                                                                   int(g.integers(0, 5)), int(g.integers(0, 5))),
                      crn=False, seed=3)
    b = A.outcomes(runs, man, 0)
    e = A.effects(b)
    f = b.frame
    sub, rest = f[f["a"] == "x"], f[f["a"] != "x"]
    win = e[(e["level"] == "x") & (e["outcome"] == "win")].iloc[0]
    k, n, kr, nr = int(sub["win"].sum()), len(sub), int(rest["win"].sum()), len(rest)
    ci = stats.binomtest(k, n).proportion_ci(method="wilson")
    assert (win["n"], win["value"]) == (30, k / n)
    assert win["lo"] == pytest.approx(ci.low, abs=1e-12) and win["hi"] == pytest.approx(ci.high, abs=1e-12)
    overall = (k + kr) / (n + nr)
    assert win["effect"] == pytest.approx(k / n - overall, abs=1e-12)  # (1 - n/N)(p_level - p_rest) = p_level - p
    lo, hi = confint_proportions_2indep(k, n, kr, nr, method="newcomb", compare="diff")
    assert win["effect_lo"] == pytest.approx(nr / (n + nr) * lo) and win["effect_hi"] == pytest.approx(nr / 90 * hi)
    dur = e[(e["level"] == "x") & (e["outcome"] == "duration")].iloc[0]
    x = sub["duration"].to_numpy()
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    assert dur["lo"] == pytest.approx(x.mean() - half) and dur["hi"] == pytest.approx(x.mean() + half)
    welch = stats.ttest_ind(x, rest["duration"], equal_var=False).confidence_interval()
    assert dur["effect"] == pytest.approx(x.mean() - f["duration"].mean())
    assert dur["effect_lo"] == pytest.approx(nr / 90 * welch.low) and dur["effect_hi"] == pytest.approx(
        nr / 90 * welch.high)
    ler = e[(e["level"] == "x") & (e["outcome"] == "loss_exchange")].iloc[0]
    assert ler["value"] == pytest.approx(sub["enemy_lost"].sum() / sub["own_lost"].sum())
    assert ler["lo"] < ler["value"] < ler["hi"]
    assert A.ratio_of_sums(np.array([2.0]), np.array([0.0])) == math.inf
    assert math.isnan(A.ratio_of_sums(np.array([0.0]), np.array([0.0])))


# --- paired differences --------------------------------------------------------------------------------------------

def crn_draw(v, r, g):
    """Common random numbers: the replication's own luck ``u_r`` is shared by every cell of replication r."""
    luck = np.random.default_rng(1000 + r).random()
    shift = {"x": 0.15, "y": 0.0, "z": -0.1}[v["a"]] + {"p": 0.0, "q": 0.1}.get(v.get("b", "p"), 0.0)
    return (0 if luck + 0.3 * g.random() < 0.55 + shift else 1, int(5 + 10 * luck + g.integers(0, 3)),
            int(g.integers(0, 5)), int(g.integers(0, 5)))


def test_paired_difference_is_ttest_rel_on_one_cell():
    runs, man = synth({"a": ["x", "y"]}, 40, crn_draw, crn=True, seed=5)
    b = A.outcomes(runs, man, 0)
    d = A.differences(b)
    f = b.frame.sort_values("rep")
    for outcome in A.PER_BATTLE:
        row = d[d["outcome"] == outcome].iloc[0]
        xa = f[f["a"] == "x"][outcome].to_numpy()
        xb = f[f["a"] == "y"][outcome].to_numpy()
        t = stats.ttest_rel(xa, xb)
        ci = t.confidence_interval()
        assert row["paired"] and row["n_pairs"] == 40
        assert row["diff"] == pytest.approx(xa.mean() - xb.mean())
        assert row["lo"] == pytest.approx(ci.low) and row["hi"] == pytest.approx(ci.high)
        assert row["p_value"] == pytest.approx(t.pvalue)
        if outcome == "win":
            lo, hi = confint_proportions_2indep(int(xa.sum()), 40, int(xb.sum()), 40, method="newcomb")
        else:
            u = stats.ttest_ind(xa, xb, equal_var=False).confidence_interval()
            lo, hi = u.low, u.high
        assert row["unpaired_lo"] == pytest.approx(lo) and row["unpaired_hi"] == pytest.approx(hi)
    # the shared luck makes pairing pay: the paired interval of duration is narrower than the unpaired one
    dur = d[d["outcome"] == "duration"].iloc[0]
    assert dur["hi"] - dur["lo"] < 0.5 * (dur["unpaired_hi"] - dur["unpaired_lo"])


def test_paired_difference_over_other_factors_averages_each_replication_first():
    runs, man = synth({"a": ["x", "y", "z"], "b": ["p", "q"]}, 12, crn_draw, crn=True, seed=6)
    b = A.outcomes(runs, man, 0)
    d = A.differences(b)
    row = d[(d["level_a"] == "x") & (d["level_b"] == "z") & (d["outcome"] == "duration")].iloc[0]
    f = b.frame
    per_rep = (f[f["a"] == "x"].groupby("rep")["duration"].mean() - f[f["a"] == "z"].groupby("rep")["duration"].mean())
    ci = stats.ttest_1samp(per_rep, 0).confidence_interval()
    assert row["n_pairs"] == 12 and row["lo"] == pytest.approx(ci.low) and row["hi"] == pytest.approx(ci.high)
    # without common random numbers the same table is compared unpaired (Welch)
    b2 = A.outcomes(runs, {**man, "design": {**man["design"], "experiment": {
        **man["design"]["experiment"], "common_random_numbers": False}}}, 0)
    row2 = A.differences(b2).iloc[3]
    assert not row2["paired"] and row2["lo"] == row2["unpaired_lo"]


# --- interactions --------------------------------------------------------------------------------------------------

def test_interaction_contrast_and_its_intervals():
    # duration = 10 + 2 [a = y] + 1 [b = q] + 3 [a = y and b = q] + noise: interaction of (y, q) is 3 / 4
    def draw(v, r, g):
        t = 10 + 2 * (v["a"] == "y") + (v["b"] == "q") + 3 * (v["a"] == "y" and v["b"] == "q")
        return 0, int(t + g.integers(-2, 3)), 2, 2

    runs, man = synth({"a": ["x", "y"], "b": ["p", "q"]}, 30, draw, crn=False, seed=8)
    b = A.outcomes(runs, man, 0)
    it = A.interactions(b)
    f = b.frame
    m = f.groupby(["a", "b"])["duration"].mean()
    s2n = f.groupby(["a", "b"])["duration"].var(ddof=1) / f.groupby(["a", "b"]).size()
    row = it[(it["level_a"] == "y") & (it["level_b"] == "q") & (it["outcome"] == "duration")].iloc[0]
    est = m["y", "q"] - m["y"].mean() - m.xs("q", level="b").mean() + m.mean()
    assert row["interaction"] == pytest.approx(est) and abs(est - 0.75) < 0.4
    w = A.interaction_weights(1, 1, 2, 2)
    assert w == pytest.approx([0.25, -0.25, -0.25, 0.25])
    se = math.sqrt(float((w ** 2) @ s2n.to_numpy()))  # HC2 on the cell-means model = sum w^2 s^2 / n
    z = stats.norm.ppf(0.975)
    assert row["lo"] == pytest.approx(est - z * se) and row["hi"] == pytest.approx(est + z * se)
    # with common random numbers: a t interval over the replications' own contrasts
    runs, man = synth({"a": ["x", "y"], "b": ["p", "q"]}, 30, draw, crn=True, seed=8)
    b = A.outcomes(runs, man, 0)
    row = A.interactions(b).query("level_a == 'y' and level_b == 'q' and outcome == 'duration'").iloc[0]
    t = b.frame.pivot_table(index="rep", columns=["a", "b"], values="duration")
    per_rep = t[("y", "q")] - (t[("y", "p")] + t[("y", "q")]) / 2 - (t[("x", "q")] + t[("y", "q")]) / 2 + t.mean(
        axis=1)
    ci = stats.ttest_1samp(per_rep, 0).confidence_interval()
    assert row["lo"] == pytest.approx(ci.low) and row["hi"] == pytest.approx(ci.high)


# --- importance ----------------------------------------------------------------------------------------------------

def imp_draw(v, r, g):
    t = 8 + 4 * {"x": 0, "y": 1, "z": 2}[v["a"]] + 0.5 * (v["b"] == "q") + g.normal(0, 2)
    return bern(0.2 + 0.25 * {"x": 0, "y": 1, "z": 2}[v["a"]], g), int(round(t)), int(g.integers(0, 5)), 2


def test_importance_shares_match_the_anova_table_and_add_up():
    runs, man = synth({"a": ["x", "y", "z"], "b": ["p", "q"]}, 20, imp_draw, crn=False, seed=9)
    b = A.outcomes(runs, man, 0)
    imp, comps = A.importance(b, resamples=200)
    f = b.frame
    for outcome in ("win", "duration"):
        table = anova_lm(smf.ols(f"{outcome} ~ C(a) * C(b)", f).fit(), typ=2)
        sst = float(((f[outcome] - f[outcome].mean()) ** 2).sum())
        got = imp[imp["outcome"] == outcome].set_index("term")
        for term, label in (("a", "C(a)"), ("b", "C(b)"), ("a x b", "C(a):C(b)"), ("residual", "Residual")):
            assert got.loc[term, "sum_sq"] == pytest.approx(table.loc[label, "sum_sq"], rel=1e-9, abs=1e-9)
            assert got.loc[term, "share"] == pytest.approx(table.loc[label, "sum_sq"] / sst, rel=1e-9, abs=1e-12)
            if term != "residual":
                assert got.loc[term, "p_value"] == pytest.approx(table.loc[label, "PR(>F)"], rel=1e-6)
                mse = table.loc["Residual", "sum_sq"] / table.loc["Residual", "df"]
                assert got.loc[term, "omega_sq"] == pytest.approx(
                    (table.loc[label, "sum_sq"] - table.loc[label, "df"] * mse) / (sst + mse))
        assert got["share"].sum() == pytest.approx(1.0)  # balanced: terms + residual = the whole variance
        assert got.loc["a", "lo"] <= got.loc["a", "share"] <= got.loc["a", "hi"] + 0.05
    dur = comps[comps["outcome"] == "duration"].iloc[0]
    assert (dur["term_a"], dur["term_b"]) == ("a", "b") and dur["p_a_greater"] == 1.0


def test_type2_sums_of_squares_equal_statsmodels_on_an_unbalanced_table():
    runs, man = synth({"a": ["x", "y", "z"], "b": ["p", "q"]}, 12, imp_draw, crn=False, seed=10)
    runs = runs.drop(index=[0, 1, 2, 30, 31, 50]).reset_index(drop=True)
    b = A.outcomes(runs, man, 0)
    m = A._model(b, "duration")
    ss, resid, total = A.type2_sums_of_squares(m)
    table = anova_lm(smf.ols(m.formula, m.data).fit(), typ=2)
    assert ss == pytest.approx(table["sum_sq"].to_numpy()[:-1], rel=1e-9)
    assert resid == pytest.approx(table.loc["Residual", "sum_sq"])
    assert ss.sum() / total <= 1.0
    # resampled rows are weights: the same as the statsmodels table of the resampled data
    rows = np.random.default_rng(1).integers(0, len(m.data), len(m.data))
    t2 = anova_lm(smf.ols(m.formula, m.data.iloc[rows]).fit(), typ=2)
    assert A.type2_sums_of_squares(m, rows)[0] == pytest.approx(t2["sum_sq"].to_numpy()[:-1], rel=1e-6)


def test_sobol_importance_recovers_known_indices():
    """y = 10 u1 + u2 on two uniform factors: S1 = 100/101 and 1/101, no interaction (exact)."""
    from sim.experiments.design import Factor

    fs = [Factor("u1", "p1", (), True, 0.0, 1.0), Factor("u2", "p2", (), True, 0.0, 1.0)]
    d = designs.build("sobol", fs, seed=3, n=256)
    pts = d.rows
    runs, man = synth({"u1": None, "u2": None}, 1, lambda v, r, g: (0, 0, 0, 0), crn=False, points=pts,
                      design="sobol", extra={"design_rows": list(range(len(pts))), "design_info": d.info})
    runs["turns"] = [10 * v["u1"] + v["u2"] for v in pts]
    b = A.outcomes(runs, man, 0)
    imp, _ = A.importance(b)
    got = imp[imp["outcome"] == "duration"].set_index("term")
    assert got.loc["u1", "share"] == pytest.approx(100 / 101, abs=0.03)
    assert got.loc["u2", "share"] == pytest.approx(1 / 101, abs=0.03)
    assert got.loc["u1", "total"] == pytest.approx(100 / 101, abs=0.03)
    assert abs(got.loc["u1 x u2", "share"]) < 0.05


# --- best level ----------------------------------------------------------------------------------------------------

def test_probability_best_known_answers():
    # one level always wins, the others never: it is best in every resample
    runs, man = synth({"a": ["x", "y", "z"]}, 10, lambda v, r, g: (0 if v["a"] == "y" else 1, 5, 2, 2), crn=False)
    best = A.best_levels(A.outcomes(runs, man, 0))
    assert best.set_index("level")["p_best"].to_dict() == {"x": 0.0, "y": 1.0, "z": 0.0}
    # two levels with the same battle in every replication, resampled by replication: a tie in every resample
    runs, man = synth({"a": ["x", "y"]}, 30, lambda v, r, g: (r % 2, 5, 2, 2), crn=True)
    best = A.best_levels(A.outcomes(runs, man, 0))
    assert best["p_best"].tolist() == [0.5, 0.5]
    # independent levels: the bootstrap agrees with the normal approximation P(p_x - p_y > 0)
    runs, man = synth({"a": ["x", "y"]}, 400, lambda v, r, g: (bern(0.55 if v["a"] == "x" else 0.5, g), 5, 2, 2),
                      crn=False, seed=11)
    b = A.outcomes(runs, man, 0)
    best = A.best_levels(b).set_index("level")
    px, py = best.loc["x", "win_rate"], best.loc["y", "win_rate"]
    se = math.sqrt(px * (1 - px) / 400 + py * (1 - py) / 400)
    assert best.loc["x", "p_best"] == pytest.approx(stats.norm.cdf((px - py) / se), abs=0.03)
    assert best["p_best"].sum() == pytest.approx(1.0)
    # the side a factor belongs to judges its levels: Blue's doctrine is best where Blue wins
    runs, man = synth({"blue": ["hold", "rush"]}, 10, lambda v, r, g: (1 if v["blue"] == "rush" else 0, 5, 2, 2),
                      crn=False, paths={"blue": "sides.1.policy.name"})
    best = A.best_levels(A.outcomes(runs, man, 0)).set_index("level")
    assert best.loc["rush", "side"] == "Blue" and best.loc["rush", "p_best"] == 1.0


# --- distributions, curves -----------------------------------------------------------------------------------------

def test_distributions_are_pandas_quantiles():
    runs, man = synth({"a": ["x", "y"]}, 25, lambda v, r, g: (0, int(g.integers(1, 16)), int(g.integers(0, 5)), 1),
                      crn=False, seed=2)
    b = A.outcomes(runs, man, 0)
    d = A.distributions(b).set_index(["factor", "level", "outcome"])
    x = b.frame[b.frame["a"] == "y"]["duration"]
    row = d.loc[("a", "y", "duration")]
    assert [row[f"q{q:02d}"] for q in (5, 25, 50, 75, 95)] == [x.quantile(q / 100) for q in (5, 25, 50, 75, 95)]
    assert row["n"] == 25 and row["min"] == x.min() and row["max"] == x.max()


def test_continuous_factor_is_a_fitted_curve_with_a_band():
    g = np.random.default_rng(4)
    xs = np.linspace(0, 1, 600)
    pts = [{"x": float(v)} for v in xs]
    truth = 1 / (1 + np.exp(-(4 * xs - 2)))  # logistic in x
    runs, man = synth({"x": None}, 1, lambda v, r, gg: (0, 1, 1, 1), crn=False, points=pts, design="nolh")
    runs["winner_index"] = [0 if g.random() < p else 1 for p in truth]
    runs["turns"] = [int(5 + 5 * v + g.integers(0, 2)) for v in xs]
    b = A.outcomes(runs, man, 0)
    assert [f.kind for f in b.factors] == ["continuous"]
    cv = A.curves(b)
    win = cv[cv["outcome"] == "win"]
    assert len(win) == 25 and (win["lo"] <= win["fit"]).all() and (win["fit"] <= win["hi"]).all()
    assert win["p_value"].iloc[0] < 1e-6 and win["fit"].iloc[-1] > win["fit"].iloc[0] + 0.4
    true_at = 1 / (1 + np.exp(-(4 * win["x"].to_numpy() - 2)))
    assert np.mean(np.abs(win["fit"] - true_at)) < 0.06
    assert np.mean((win["lo"] <= true_at) & (true_at <= win["hi"])) >= 0.6  # pointwise 95 % bands, one seed
    fit = smf.glm("y ~ cr(x, df=4, constraints='center')", pd.DataFrame({"x": xs, "y": b.frame["win"]}),
                  family=sm.families.Binomial()).fit()
    assert win["fit"].to_numpy() == pytest.approx(fit.predict(pd.DataFrame({"x": win["x"]})).to_numpy())
    # the effects and best tables leave a continuous factor out (no bins)
    assert set(A.effects(b)["factor"]) == {"(all)"} and A.best_levels(b).empty


# --- side bias -----------------------------------------------------------------------------------------------------

def test_mirror_matches_flag_a_biased_scenario():
    levels = ["hold", "rush"]
    paths = {"red": "sides.0.policy.name", "blue": "sides.1.policy.name"}
    runs, man = synth({"red": levels, "blue": levels}, 40,
                      lambda v, r, g: (bern(0.8 if v["red"] == v["blue"] else 0.5, g), 5, 2, 2), crn=False,
                      paths=paths, seed=12)
    m = A.mirror_matches(A.outcomes(runs, man, 0))
    mir = runs[runs["red"] == runs["blue"]]
    w1, w2 = int((mir["winner_index"] == 0).sum()), int((mir["winner_index"] == 1).sum())
    ci = stats.binomtest(w1, w1 + w2).proportion_ci(method="wilson")
    assert m["symmetric"] and m["all"]["battles"] == 80 and m["all"]["Red_wins"] == w1
    assert m["all"]["lo"] == pytest.approx(ci.low) and m["all"]["hi"] == pytest.approx(ci.high)
    assert m["all"]["biased"] and "favours Red" in m["flag"]
    assert [d["doctrine"] for d in m["doctrines"]] == ["hold", "rush"]
    fair = synth({"red": levels, "blue": levels}, 40, lambda v, r, g: ((r % 2) if v["red"] == v["blue"] else 0, 5, 2,
                                                                       2), crn=False, paths=paths)
    m = A.mirror_matches(A.outcomes(*fair, 0))
    assert m["all"]["first_side_share"] == 0.5 and not m["all"]["biased"] and m["flag"] is None
    # no mirror battle at all: no section
    runs, man = synth({"red": ["hold"], "blue": ["rush"]}, 5, lambda v, r, g: (0, 5, 2, 2), crn=False, paths=paths)
    assert A.mirror_matches(A.outcomes(runs, man, 0)) is None


# --- power ---------------------------------------------------------------------------------------------------------

def exact_power(n: int, p1: float, p2: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided arcsine z test of two proportions with n battles each: sum over every pair of
    binomial counts of P(counts) [|2 asin sqrt(k1/n) - 2 asin sqrt(k2/n)| sqrt(n/2) > z]."""
    k = np.arange(n + 1)
    phi = 2 * np.arcsin(np.sqrt(k / n))
    reject = np.abs(phi[:, None] - phi[None, :]) * math.sqrt(n / 2) > stats.norm.ppf(1 - alpha / 2)
    return float(stats.binom.pmf(k, n, p1) @ reject @ stats.binom.pmf(k, n, p2))


def test_power_matches_statsmodels_and_exact_binomial_power():
    n = A.battles_per_level(0.5, 0.1)
    h = proportion_effectsize(0.55, 0.45)
    assert n == pytest.approx(NormalIndPower().solve_power(h, alpha=0.05, power=0.8, ratio=1.0))
    assert n == pytest.approx(2 * ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) / h) ** 2, rel=1e-3)  # ~ 388
    assert exact_power(math.ceil(n), 0.55, 0.45) == pytest.approx(0.8, abs=0.02)
    assert exact_power(math.ceil(n / 2), 0.55, 0.45) < 0.55
    assert A.detectable_difference(0.5, n) == pytest.approx(0.1, rel=1e-4)  # solver tolerances
    assert A.battles_per_level(0.02, 0.1) == pytest.approx(A.battles_per_level(0.05, 0.1))  # shifted inside [0, 1]
    assert A.replications_paired(0.3, 0.1) == pytest.approx(TTestPower().solve_power(1 / 3, alpha=0.05, power=0.8))
    with pytest.raises(ValueError):
        A.battles_per_level(0.5, 0.0)


def test_power_table_from_a_pilot():
    runs, man = synth({"a": ["x", "y"], "b": ["p", "q"]}, 20, crn_draw, crn=True, seed=13)
    b = A.outcomes(runs, man, 0)
    t = A.power_table(b, 0.1).set_index("factor")
    p = b.frame["win"].mean()
    assert t.loc["a", "battles_per_level"] == pytest.approx(A.battles_per_level(p, 0.1))
    assert t.loc["a", "replications_needed"] == math.ceil(A.battles_per_level(p, 0.1) / 2)  # 2 points per level
    d = A.paired_replicate_differences(b, "a", "x", "y", "win_side0")
    assert t.loc["a", "sd_paired"] == pytest.approx(d.std(ddof=1))
    assert t.loc["a", "replications_needed_paired"] == math.ceil(A.replications_paired(d.std(ddof=1), 0.1))


# --- the whole report ------------------------------------------------------------------------------------------------

def test_report_answers_which_factor_matters_and_warns_when_too_small():
    runs, man = synth({"red": ["hold", "rush"], "blue": ["hold", "rush"]}, 30,
                      lambda v, r, g: (bern(0.75 if v["red"] == "rush" else 0.35, g), 5, 2, 2), crn=False,
                      paths={"red": "sides.0.policy.name", "blue": "sides.1.policy.name"}, seed=14)
    rep = analyse_runs(runs, man)
    doc = rep.to_json()
    json.dumps(doc, allow_nan=False)
    assert {"answer", "effects", "differences", "interactions", "importance", "best", "distributions", "curves",
            "mirror", "power", "warnings"} <= set(doc)
    top = doc["answer"]["importance"][0]
    assert top["term"] == "red" and top["lo"] > 0.05
    assert doc["answer"]["comparisons"][0]["p_a_greater"] > 0.99
    red = next(x for x in doc["answer"]["best"] if x["factor"] == "red")
    assert red["level"] == "rush" and red["p_best"] > 0.99 and red["separated"]
    blue = next(x for x in doc["answer"]["best"] if x["factor"] == "blue")
    assert not blue["separated"]
    assert any(w.startswith("blue: the experiment is too small to separate") for w in rep.warnings)


@pytest.mark.parametrize("crn", [True, False])
def test_report_calls_equal_win_rates_a_tie_and_too_small_only_for_a_wide_interval(crn):
    """Two levels that both win 0 %: the report said "hold ... ahead of rush by +0.0 points" and called the
    experiment "too small to separate" them even with the paired interval [0, 0].  Now it says they tie (no
    difference measured); "too small" is kept for a tie whose interval reaches past --delta."""
    runs, man = synth({"red": ["hold", "rush"], "blue": ["hold"]}, 20, lambda v, r, g: (1, 5, 2, 2), crn=crn,
                      paths={"red": "sides.0.policy.name", "blue": "sides.1.policy.name"}, seed=16)
    rep = analyse_runs(runs, man)
    red = next(x for x in rep.to_json()["answer"]["best"] if x["factor"] == "red")
    assert red["tie"] == ["hold", "rush"] and red["win_rate"] == red["runner_up_win_rate"] == 0
    line = next(x for x in rep.answer["text"] if x.startswith("best red for Red"))
    assert "a tie between hold and rush, win rate 0.0% each" in line and "no difference measured" in line
    assert "ahead of" not in line
    too_small = [w for w in rep.warnings if w.startswith("red:") and "too small" in w]
    if crn:   # paired, every replication alike: [+0.0, +0.0], nothing more to learn from more battles
        assert "[+0.0, +0.0]" in line and too_small == []
    else:     # unpaired 0/20 v 0/20: the interval is wider than the 10 points --delta asks about
        assert len(too_small) == 1 and "hold and rush tie at 0.0% but the experiment is too small" in too_small[0]


def test_a_pilot_where_every_battle_ends_alike_claims_no_effect_and_no_paired_minimum():
    """Every battle won by the same side (no variation): no factor "matters more" than another, and the power
    table does not recommend the paired formula's minimum from a spread of 0 (it falls back to the unpaired
    count)."""
    runs, man = synth({"red": ["hold", "rush"], "blue": ["hold", "rush"]}, 3, lambda v, r, g: (0, 5, 2, 2),
                      crn=True, paths={"red": "sides.0.policy.name", "blue": "sides.1.policy.name"}, seed=15)
    rep = analyse_runs(runs, man)
    text = " ".join(rep.to_json()["answer"]["text"])
    assert "matters more" not in text
    b = A.outcomes(runs, man, 0)
    t = A.power_table(b, 0.1).set_index("factor")
    assert t.loc["red", "sd_paired"] == 0
    assert t.loc["red", "recommended"] == t.loc["red", "replications_needed"] > 3


# --- possible ranges: no interval outside what can happen -----------------------------------------------------------

def test_wilson_interval_of_three_out_of_three_and_none_out_of_three_exact():
    # Wilson (z = 1.959964): n = 3, k = 3 gives [3 / (3 + z^2), 1]; k = 0 gives [0, z^2 / (3 + z^2)]
    z2 = stats.norm.ppf(0.975) ** 2
    assert A.wilson(3, 3) == pytest.approx((3 / (3 + z2), 1.0), abs=1e-12)
    assert A.wilson(0, 3) == pytest.approx((0.0, z2 / (3 + z2)), abs=1e-12)
    assert A.wilson(3, 3)[0] == pytest.approx(0.43850, abs=5e-6)
    # Newcombe's hybrid score for 3/3 against 0/3: [L1 - U2, 1] = [0.43850 - 0 - ..., 1]: exactly
    # d - sqrt((1 - l1)^2 + u2^2) ... with p1 = 1, p2 = 0: lo = 1 - sqrt((1 - l1)^2 + (u2 - 0)^2), hi = 1
    l1, u2 = 3 / (3 + z2), z2 / (3 + z2)
    d, lo, hi = A.proportion_difference(3, 3, 0, 3)
    assert (d, hi) == (1.0, pytest.approx(1.0, abs=1e-12))
    assert lo == pytest.approx(1 - math.sqrt((1 - l1) ** 2 + u2 ** 2), abs=1e-9)


def test_paired_win_difference_over_three_replications_stays_within_100_points():
    # level a wins replications 0 and 1, loses 2; level b loses all three: per-replication differences 1, 1, 0.
    # Student's t over 3 replications: 2/3 +- t(0.975, 2) * sd / sqrt 3 = [-0.768, 2.101]: clipped to [-0.768, 1]
    wins = {("a", 0): 0, ("a", 1): 0, ("a", 2): 1, ("b", 0): 1, ("b", 1): 1, ("b", 2): 1}
    runs, man = synth({"f": ["a", "b"]}, 3, lambda v, r, g: (wins[(v["f"], r)], 5, 2, 2), crn=True)
    b = A.outcomes(runs, man, 0)
    row = A.differences(b).query("outcome == 'win'").iloc[0]
    d = np.array([1.0, 1.0, 0.0])
    t = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert t.high > 1  # the raw t interval is impossible
    assert (row["diff"], row["lo"], row["hi"]) == (pytest.approx(2 / 3), pytest.approx(t.low), 1.0)
    sep = A.separation(b, "f", "a", "b")
    assert (sep.lo, sep.hi) == (pytest.approx(t.low), 1.0)


def test_survivor_means_and_differences_are_clipped_to_the_tanks_a_side_has():
    # survivors of side 0 (4 tanks): level a 0, 0, 3; level b 4, 4, 4 -> the t interval of a's mean reaches below 0
    alive = {("a", 0): 0, ("a", 1): 0, ("a", 2): 3, ("b", 0): 4, ("b", 1): 4, ("b", 2): 4}
    runs, man = synth({"f": ["a", "b"]}, 3, lambda v, r, g: (1, 5, alive[(v["f"], r)], 2), crn=True)
    b = A.outcomes(runs, man, 0)
    assert A.outcome_bounds(b.frame, "survivors") == (0.0, 4.0)
    e = A.effects(b).query("outcome == 'survivors' and level == 'a'").iloc[0]
    raw = stats.ttest_1samp([0.0, 0.0, 3.0], 0.0).confidence_interval(0.95)
    assert raw.low < 0 and raw.high > 4  # [-2.73, 5.30]: impossible at both ends
    assert (e["lo"], e["hi"]) == (0.0, 4.0)
    # b never varies: its mean interval is the point 4
    eb = A.effects(b).query("outcome == 'survivors' and level == 'b'").iloc[0]
    assert (eb["lo"], eb["hi"]) == (4.0, 4.0)
    dif = A.differences(b).query("outcome == 'survivors'").iloc[0]
    assert -4.0 <= dif["lo"] <= dif["hi"] <= 4.0 and -4.0 <= dif["unpaired_lo"] <= dif["unpaired_hi"] <= 4.0


def test_every_interval_of_a_three_replication_report_is_possible():
    # a 3 x 2 design with 3 replications, the size where Student's t gave -155 points and negative survivors
    p = {"x": 0.9, "y": 0.1, "z": 0.5}
    runs, man = synth({"a": ["x", "y", "z"], "d": ["u", "v"]}, 3,
                      lambda v, r, g: (bern(p[v["a"]], g), int(g.integers(2, 15)), int(g.choice([0, 0, 4])),
                                       int(g.integers(0, 5))), crn=True, seed=5)
    rep = analyse_runs(runs, man, side=0)
    span = {"win": (0, 1), "survivors": (0, 4), "enemy_survivors": (0, 4), "duration": (0, math.inf),
            "loss_exchange": (0, math.inf)}
    checked = 0
    for r in rep.effects.itertuples():
        lo, hi = span[r.outcome]
        for v in (r.lo, r.hi):
            if not math.isnan(v):
                assert lo <= v <= hi, r
                checked += 1
        if r.outcome in ("win", "survivors", "enemy_survivors") and not math.isnan(r.effect_lo):
            assert -(hi - lo) <= r.effect_lo <= r.effect_hi <= hi - lo, r
    for r in rep.differences.itertuples():
        lo, hi = span[r.outcome]
        for v in (r.lo, r.hi, r.unpaired_lo, r.unpaired_hi):
            if not math.isnan(v):
                assert -(hi - lo) <= v <= hi - lo, r
                checked += 1
    for r in rep.interactions.itertuples():
        lo, hi = span[r.outcome]
        if math.isfinite(hi) and not math.isnan(r.lo):
            assert -(hi - lo) <= r.lo <= r.hi <= hi - lo, r
            checked += 1
    for r in rep.best.itertuples():
        assert 0 <= r.lo <= r.hi <= 1
    for r in rep.importance.itertuples():
        if not math.isnan(r.lo):
            assert 0 <= r.lo <= r.hi <= 1
    assert checked > 50
    assert "clipped" in A.INTERVALS_NOTE and rep.to_json()["intervals_note"] == A.INTERVALS_NOTE


def test_clip_interval_keeps_nans_and_an_interval_wholly_outside_becomes_the_nearest_bound():
    assert A.clip_interval(-0.2, 0.5, 0, 1) == (0, 0.5)
    assert A.clip_interval(-0.07, -0.03, 0, 1) == (0, 0)
    lo, hi = A.clip_interval(math.nan, math.nan, 0, 1)
    assert math.isnan(lo) and math.isnan(hi)


def test_importance_statements_agree_with_the_shares_shown():
    """Under common random numbers the replication (seed) decides almost every battle; one battle of 160 differs,
    so each factor's share is tiny but not 0.  The answer prints it with enough digits (never "0.0" for a nonzero
    share) and makes no "matters more" claim, since neither share's interval excludes 0; a factor whose interval
    does exclude 0 is still ranked."""
    def draw(v, r, g):
        w = r % 2
        return (1 - w if (v["east"], v["west"], r) == ("a", "c", 0) else w, 5, 2, 2)

    runs, man = synth({"east": ["a", "b"], "west": ["c", "d"]}, 40, draw, crn=True, seed=3)
    rep = analyse_runs(runs, man)
    text = rep.to_json()["answer"]["text"]
    imp = rep.importance.set_index(["outcome", "term"])
    share = imp.loc[("win", "east"), "share"]
    assert 0 < share < 0.0005 and imp.loc[("win", "east"), "lo"] == 0
    assert f"east {100 * share:.2g}% [0.0, " in text[0] and "east 0.0%" not in text[0]
    assert not any("matters more" in t for t in text)
    assert "neither east nor west is shown to matter for Red's wins" in " ".join(text)
    from sim.experiments.report import importance_statement

    lows = {"east": 0.2, "west": 0.0}
    assert importance_statement("east", "west", 0.9, lows, "Red") == \
        "east matters more than west for Red's wins with bootstrap probability 0.900"
    assert importance_statement("east", "west", 0.671, {"east": 0.0, "west": 0.0}, "Red").startswith("neither")
    assert "not told apart" in importance_statement("east", "west", 0.7, {"east": 0.0, "west": 0.1}, "Red")


def test_an_integer_range_is_levels_only_when_its_declared_span_is_small():
    # a seed-like factor: an integer range [0, 9999] that the sample drew 8 values of (each 5 times)
    g = np.random.default_rng(3)
    seeds = [int(v) for v in g.choice(10_000, 8, replace=False)]
    pts = [{"map_seed": s} for s in seeds]
    runs, man = synth({"map_seed": None}, 5, lambda v, r, gg: (bern(0.5, gg), int(gg.integers(2, 9)), 2, 2),
                      crn=False, points=pts, design="latin_hypercube", seed=2)
    fac = man["design"]["factors"][0]
    fac.update(integer=True, low=0, high=9999)
    b = A.outcomes(runs, man, 0)
    assert [(f.name, f.kind) for f in b.factors] == [("map_seed", "continuous")]
    assert set(A.effects(b)["factor"]) == {"(all)"}  # no per-seed rows
    cv = A.curves(b)
    assert not cv.empty and set(cv["factor"]) == {"map_seed"}
    assert (cv["x"] == cv["x"].round()).all() and cv["x"].min() == min(seeds) and cv["x"].max() == max(seeds)
    assert A.factor_levels(runs, fac, man)[1] == []
    # the same values under a declared span of 8 integers are levels, whatever the sample drew
    narrow = {**fac, "low": 1, "high": 8}
    runs2 = runs.assign(map_seed=runs["map_seed"].map(dict(zip(seeds, range(1, 9)))))
    man2 = {"design": {**man["design"], "factors": [narrow]}}
    b2 = A.outcomes(runs2, man2, 0)
    assert [(f.name, f.kind, f.levels) for f in b2.factors] == [
        ("map_seed", "categorical", tuple(str(i) for i in range(1, 9)))]
    assert A.factor_levels(runs2, narrow, man2)[1] == list(range(1, 9))
    # a span of 9 integers is continuous even if only 3 values were drawn
    assert not A.integer_levels({"integer": True, "low": 0, "high": 8}, pd.Series([0, 4, 8]))
    assert A.integer_levels({"integer": True, "low": 2, "high": 9}, pd.Series([2, 9]))
    assert not A.integer_levels({"integer": False, "low": 1, "high": 3}, pd.Series([1, 2, 3]))
    # a folder written without the bounds: the distinct stored values decide (as before)
    assert A.integer_levels({"integer": True}, pd.Series([1, 5, 9]))
    assert not A.integer_levels({"integer": True}, pd.Series(range(9)))


def test_correlated_terms_get_a_shared_row_so_shares_add_up_to_one():
    # two continuous factors sampled with a strong correlation (a poor space-filling sample): the outcome depends on
    # their sum, so much of what the model explains is claimed by neither term alone under type II
    g = np.random.default_rng(11)
    u = g.random(300)
    pts = [{"x": float(a), "z": float(min(1.0, max(0.0, a + 0.05 * g.standard_normal())))} for a in u]
    runs, man = synth({"x": None, "z": None}, 1, lambda v, r, gg: (0, 1, 1, 1), crn=False, points=pts,
                      design="latin_hypercube")
    runs["turns"] = [int(round(3 + 6 * (p["x"] + p["z"]) + g.normal(0, 0.7))) for p in pts]
    b = A.outcomes(runs, man, 0)
    imp, _ = A.importance(b, resamples=0)
    got = imp[imp["outcome"] == "duration"].set_index("term")
    # type II by marginality, from statsmodels fits: a main effect is judged without the interaction containing it
    def rss(formula: str) -> float:
        return float(smf.ols(f"duration ~ {formula}", b.frame).fit().ssr)

    fit = smf.ols("duration ~ bs(x, df=3) + bs(z, df=3) + x:z", b.frame).fit()
    mains = rss("bs(x, df=3) + bs(z, df=3)")
    terms_ss = (rss("bs(z, df=3)") - mains) + (rss("bs(x, df=3)") - mains) + (mains - fit.ssr)
    sst = float(((b.frame["duration"] - b.frame["duration"].mean()) ** 2).sum())
    assert got.loc[A.SHARED_TERM, "share"] == pytest.approx((fit.ess - terms_ss) / sst, rel=1e-6)
    assert got.loc[A.SHARED_TERM, "share"] > 0.3  # the overlap is most of the explained variance
    assert got["share"].sum() == pytest.approx(1.0)
    assert got.loc["residual", "share"] == pytest.approx(fit.ssr / sst, rel=1e-9)
    # each term's p value is the F test of its own sum of squares (consistent with its share)
    mse = fit.ssr / fit.df_resid
    for term, df in (("x", 3), ("z", 3), ("x x z", 1)):
        f_stat = got.loc[term, "sum_sq"] / df / mse
        assert got.loc[term, "df"] == df
        assert got.loc[term, "p_value"] == pytest.approx(stats.f.sf(f_stat, df, fit.df_resid), rel=1e-9)
    # a balanced full factorial has no overlap, hence no shared row
    runs2, man2 = synth({"a": ["x", "y"], "b": ["p", "q"]}, 10, imp_draw, crn=False, seed=9)
    imp2, _ = A.importance(A.outcomes(runs2, man2, 0), resamples=0)
    assert A.SHARED_TERM not in set(imp2["term"])


def test_a_fitted_curve_never_leaves_the_possible_range():
    # survivors jump from 0 to all 4 tanks: the spline overshoots 4 beside the jump; the reported fit stays at 4
    xs = np.linspace(0, 1, 200)
    pts = [{"x": float(v)} for v in xs]
    runs, man = synth({"x": None}, 1, lambda v, r, gg: (0, 5, 1, 1), crn=False, points=pts, design="nolh")
    runs["side1_alive"] = [4 if v > 0.35 else 0 for v in xs]
    runs["side1_lost"] = 4 - runs["side1_alive"]
    b = A.outcomes(runs, man, 0)
    cv = A.curves(b)
    sv = cv[cv["outcome"] == "survivors"]
    raw = smf.ols("y ~ cr(x, df=4, constraints='center')",
                  pd.DataFrame({"x": xs, "y": b.frame["survivors"]})).fit().predict(pd.DataFrame({"x": sv["x"]}))
    assert raw.max() > 4.05 and raw.min() < -0.05  # the overshoot this guards against
    assert sv["fit"].between(0, 4).all() and (sv["lo"] <= sv["fit"]).all() and (sv["fit"] <= sv["hi"]).all()
    assert sv["fit"].to_numpy() == pytest.approx(np.clip(raw.to_numpy(), 0, 4))


def test_a_negative_shared_share_prints_with_its_sign():
    from sim.experiments.report import _share

    assert (_share(-0.461), _share(-0.00001), _share(0.0), _share(-1e-12), _share(0.25)) == (
        "-46.1", "-0.001", "0.0", "0.0", "25.0")
