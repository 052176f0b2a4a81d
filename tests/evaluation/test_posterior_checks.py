"""Pooled posterior checks: the calibration test accepts calibrated and rejects overconfident
draws; Table 3's pooled coverage and columns."""
import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation import posterior_checks
from postrisk.tasks import diagnostics


def test_calibration_test_accepts_calibrated_and_rejects_overconfident():
    rng = np.random.default_rng(2)
    n, d = 400, 99
    f = rng.normal(size=n)
    good = rng.normal(size=(d, n))
    bad = 0.5 * rng.normal(size=(d, n))  # too narrow
    for draws, should_pass in ((good, True), (bad, False)):
        test = posterior_checks.calibration_test({"f": diagnostics.rank_of_truth(draws, f)},
                                       diagnostics.covered_central(draws, f), d)
        assert test.passed is should_pass, test


def test_table3_pooled_coverage_and_columns():
    inst = pd.DataFrame({"prior": "gp", "dataset": ["a", "a", "b", "b"],
                         "noise": "bump", "coverage": "ood", "seed": [0, 1, 0, 1],
                         "n_eval": [100, 100, 200, 200], "covered90": [90, 80, 180, 190],
                         "corr_mean_ftrue": [0.9, 0.95, 0.97, 0.99]})
    points = {"gp": {"rank_hist": np.full(20, 0.05), "rank_expected": np.full(20, 0.05),
                     "mcse_var": np.full(10, 0.04)}}
    table = posterior_checks.table3(inst, points)
    row = table.iloc[0]
    assert row["coverage90_pooled"] == pytest.approx(540 / 600)
    assert row["coverage90_range_over_cells"] == "0.850–0.925"
    # t-interval over the 4 instances, by hand: residuals hits − 0.9·totals = 0, −10, 0, 10,
    # sd 8.165; SE = 8.165 / (150·√4) = 0.02722; t(0.975, 3) = 3.182; ± 0.0866
    assert row["coverage90_ci"] == "0.813–0.987"
    assert row["mcse_var_pct_median"] == 4.0 and row["paper_coverage90_pooled"] == 0.899


def test_pooled_share_t_interval_says_how_little_three_instances_show():
    """Three instances: the t-interval is wider than their [min, max] (what a bootstrap over
    three units gives at best), one instance has no interval, and over many repetitions of
    k = 5 instances with instance-level spread the interval covers the true share about 95%."""
    hits, totals = np.array([936.0, 947.0, 959.0]), np.full(3, 1000.0)
    pooled, lo, hi = posterior_checks.pooled_share_t_interval(hits, totals)
    assert pooled == pytest.approx(0.9473, abs=1e-4)
    assert lo < 0.936 and hi > 0.959
    assert (lo, hi) == pytest.approx((0.9187, 0.9760), abs=1e-3)  # sd 0.0115, t(2) = 4.303
    assert np.isnan(posterior_checks.pooled_share_t_interval(hits[:1], totals[:1])[1])
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(4000):
        share = np.clip(0.9 + 0.03 * rng.standard_normal(5), 0, 1)  # instance-level spread
        h = rng.binomial(500, share).astype(float)
        _, lo, hi = posterior_checks.pooled_share_t_interval(h, np.full(5, 500.0))
        covered += lo <= 0.9 <= hi
    assert 0.93 <= covered / 4000 <= 0.97


# ------------------------------------------------------------- the perfect sampler's coverage

@pytest.mark.parametrize("n_draws, reps", [(200, 200_000), (600, 50_000), (1000, 40_000)])
def test_perfect_sampler_coverage_equals_a_simulation_of_covered_central(n_draws, reps):
    """D iid draws and the truth from the same Gaussian, covered_central as the task stores
    compute it: the share covered equals level·(D − 1)/(D + 1) within 4 binomial SEs (at
    D = 200, 200k replicates: SE ≈ 0.0007, while the formula is 0.009 below 0.9; fewer
    replicates at the larger D keep the test fast)."""
    rng = np.random.default_rng(n_draws)
    chunk, hits = 10_000, 0
    for _ in range(reps // chunk):
        draws = rng.standard_normal((n_draws, chunk))
        hits += int(diagnostics.covered_central(draws, rng.standard_normal(chunk)).sum())
    expected = posterior_checks.perfect_sampler_coverage(n_draws)
    se = np.sqrt(expected * (1 - expected) / reps)
    assert abs(hits / reps - expected) < 4 * se
    if n_draws == 200:  # and the shortfall below 0.9 is real
        assert 0.9 - hits / reps > 4 * se
    assert expected == pytest.approx(0.9 * (n_draws - 1) / (n_draws + 1))


def test_perfect_sampler_coverage_by_enumeration_of_the_truths_rank():
    """With uniform draws the derivation is exact: sum over the rank r of the truth of the
    probability that the interval covers it, each gap position integrated on a fine grid."""
    n_draws, level = 37, 0.8  # small D, both ends inside a gap
    h_lo, h_hi = (n_draws - 1) * (1 - level) / 2, (n_draws - 1) * (1 + level) / 2
    u = (np.arange(100_000) + 0.5) / 100_000  # the truth's position inside its gap
    total = 0.0
    for r in range(n_draws + 1):
        # truth at fractional position r − 1 + u among the order statistics (0-based)
        pos = r - 1 + u
        total += np.mean((pos >= h_lo) & (pos <= h_hi)) / (n_draws + 1)
    assert posterior_checks.perfect_sampler_coverage(n_draws, level) == pytest.approx(
        total, abs=1e-5)
    with pytest.raises(ValueError, match="at least one draw"):
        posterior_checks.perfect_sampler_coverage(0)


# ----------------------------------------------------------------- seeds replaced (App. B.7)

def _built(rhat_by_cell: dict[tuple[str, str], list[float]], n_valid: int) -> pd.DataFrame:
    """Every instance built: per (noise, coverage) cell of dataset "a", one BNN and one GP
    instance per candidate seed, the BNN one with the given max R̂; flagged by mark_valid."""
    from postrisk.tasks.validity import mark_valid

    rows = []
    for (noise, coverage), rhats in rhat_by_cell.items():
        for seed, rhat in enumerate(rhats):
            for prior in ("gp", "bnn"):
                rows.append({"prior": prior, "dataset": "a", "noise": noise,
                             "coverage": coverage, "seed": seed,
                             "max_rhat": rhat if prior == "bnn" else np.nan})
    return mark_valid(pd.DataFrame(rows), n_valid)


def test_seeds_replaced_share_counts_the_examined_seeds_by_hand():
    built = _built({
        # 3 valid needed: seeds 0, 2, 4 kept; 1 and 3 replaced; seed 5 never examined
        ("bump", "balanced"): [1.01, 1.08, 1.02, 1.20, 1.03, 1.50],
        # seeds 0–2 kept: nothing replaced, 3 examined
        ("edges", "balanced"): [1.00, 1.00, 1.04, 1.90, 1.90, 1.90],
        # seeds 0 and 1 replaced, 2–4 kept: 5 examined
        ("bump", "ood"): [1.06, 1.07, 1.01, 1.01, 1.01, 1.00],
    }, n_valid=3)
    share = posterior_checks.seeds_replaced_share
    assert share(built, "balanced") == pytest.approx(2 / 8)  # 2 replaced of 5 + 3 examined
    assert share(built, "ood") == pytest.approx(2 / 5)
    assert np.isnan(share(built[built["prior"] == "gp"], "balanced"))  # no BNN cell
    assert np.isnan(share(built, "nowhere"))


def test_table3_new_columns_on_hand_made_frames():
    """The perfect sampler at each prior's D, the per-shell coverage over all instances and per
    scenario (NaN where a prior has none), the replaced seeds on every row, the paper's
    App. B.7 shares beside them; the bootstrap stream is drawn as before."""
    inst = pd.DataFrame({
        "prior": ["gp", "gp", "gp", "bnn"], "dataset": "a", "noise": "bump",
        "coverage": ["balanced", "balanced", "ood", "balanced"], "seed": [0, 1, 0, 0],
        "n_eval": [100, 100, 100, 100], "draws": [1000, 1000, 1000, 600],
        "covered90": [90, 80, 85, 88], "corr_mean_ftrue": [0.9, 0.95, 0.97, 0.99],
        "covered90_outer": [15, 10, 12, 18], "n_eval_outer": [20, 20, 20, 20],
        "covered90_rest": [75, 70, 73, 70], "n_eval_rest": [80, 80, 80, 80]})
    points = {p: {"rank_hist": np.full(20, 0.05), "rank_expected": np.full(20, 0.05),
                  "mcse_var": np.full(10, 0.04)} for p in ("gp", "bnn")}
    built = _built({("bump", "balanced"): [1.2, 1.0, 1.0], ("bump", "ood"): [1.0, 1.0, 1.0]},
                   n_valid=2)
    table = posterior_checks.table3(inst, points, built=built)
    gp, bnn = table.iloc[0], table.iloc[1]
    assert gp["coverage90_perfect_sampler"] == round(0.9 * 999 / 1001, 4)
    assert bnn["coverage90_perfect_sampler"] == round(0.9 * 599 / 601, 4)
    assert gp["coverage90_outer"] == round(37 / 60, 4)
    assert gp["coverage90_rest"] == round(218 / 240, 4)
    assert gp["coverage90_outer_balanced"] == 25 / 40
    assert gp["coverage90_rest_balanced"] == round(145 / 160, 4)
    assert gp["coverage90_outer_ood"] == 12 / 20 and gp["coverage90_rest_ood"] == 73 / 80
    assert np.isnan(bnn["coverage90_outer_ood"]) and np.isnan(bnn["coverage90_rest_ood"])
    # seed 0 of the balanced cell replaced (of seeds 0–2 examined), none of the OOD cell's
    assert (table["seeds_replaced_pct_balanced"] == round(100 / 3, 2)).all()
    assert (table["seeds_replaced_pct_ood"] == 0).all()
    assert (table["paper_seeds_replaced_pct_balanced"] == 5.3).all()
    assert (table["paper_seeds_replaced_pct_ood"] == 8.6).all()
    # the new columns come after ours and the paper's Table 3 columns keep their order
    cols = list(table.columns)
    assert cols.index("corr_mean_ftrue_median") < cols.index("coverage90_perfect_sampler") \
        < cols.index("seeds_replaced_pct_ood") < cols.index("paper_coverage90_pooled") \
        < cols.index("paper_corr_mean_ftrue_median") < cols.index(
            "paper_seeds_replaced_pct_balanced")
    # the existing columns are unchanged by the additions (same stream, same values)
    old = posterior_checks.table3(inst.drop(columns=[c for c in inst if "_outer" in c
                                                      or "_rest" in c or c == "draws"]),
                                  points)
    shared = [c for c in old.columns if not c.startswith(("coverage90_outer", "coverage90_rest",
                                                           "coverage90_perfect", "seeds_",
                                                           "paper_seeds_"))]
    pd.testing.assert_frame_equal(old[shared], table[shared])
    assert old[["coverage90_perfect_sampler", "coverage90_outer",
                "seeds_replaced_pct_balanced"]].isna().all().all()
