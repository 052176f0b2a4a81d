import numpy as np
import pandas as pd
import pytest

from postrisk import checks


def test_rank_and_coverage_on_a_hand_case():
    draws = np.arange(10.0)[:, None] * np.ones((1, 3))
    f = np.array([-1.0, 4.5, 20.0])
    np.testing.assert_array_equal(checks.rank_of_truth(draws, f), [0, 5, 10])
    np.testing.assert_array_equal(checks.covered_central(draws, f), [False, True, False])
    shares = checks.rank_histogram(np.array([0, 5, 10]), n_draws=10, bins=2)
    # ranks 0…10 split into two bins of 5.5 ranks: {0, 5} below, {10} above
    np.testing.assert_allclose(shares, [2 / 3, 1 / 3])


def test_batch_means_mcse_matches_theory_for_iid_draws():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(4000, 2000))
    rel = checks.batch_means_mcse_var(draws)
    # SE of a normal sample variance relative to σ²: √(2/(D−1))
    assert abs(np.median(rel) - np.sqrt(2 / 3999)) < 0.15 * np.sqrt(2 / 3999)


def test_batch_means_sees_within_chain_dependence():
    rng = np.random.default_rng(1)
    iid = rng.normal(size=(1000, 300))
    sticky = np.repeat(rng.normal(size=(100, 300)), 10, axis=0)  # 10 copies of each draw
    assert np.median(checks.batch_means_mcse_var(sticky)) > \
        2 * np.median(checks.batch_means_mcse_var(iid))


def test_calibration_test_accepts_calibrated_and_rejects_overconfident():
    rng = np.random.default_rng(2)
    n, d = 400, 99
    f = rng.normal(size=n)
    good = rng.normal(size=(d, n))
    bad = 0.5 * rng.normal(size=(d, n))  # too narrow
    for draws, should_pass in ((good, True), (bad, False)):
        test = checks.calibration_test({"f": checks.rank_of_truth(draws, f)},
                                       checks.covered_central(draws, f), d)
        assert test.passed is should_pass, test


def test_valid_seeds():
    assert checks.valid_seeds(list(range(13)), None, 10) == (list(range(10)), [])
    rhat = {s: 1.0 for s in range(13)} | {2: 1.2, 5: 1.06}
    valid, dropped = checks.valid_seeds(list(range(13)), rhat, 10)
    assert valid == [0, 1, 3, 4, 6, 7, 8, 9, 10, 11] and dropped == [2, 5]


def test_table3_pooled_coverage_and_columns():
    rng = np.random.default_rng(3)
    inst = pd.DataFrame({"prior": "gp", "dataset": ["a", "a", "b", "b"],
                         "noise": "bump", "coverage": "ood", "seed": [0, 1, 0, 1],
                         "n_eval": [100, 100, 200, 200], "covered90": [90, 80, 180, 190],
                         "corr_mean_ftrue": [0.9, 0.95, 0.97, 0.99]})
    points = {"gp": {"rank_hist": np.full(20, 0.05), "mcse_var": np.full(10, 0.04)}}
    table = checks.table3(inst, points, rng)
    row = table.iloc[0]
    assert row["coverage90_pooled"] == pytest.approx(540 / 600)
    assert row["coverage90_range_over_cells"] == "0.850–0.925"
    assert row["mcse_var_pct_median"] == 4.0 and row["paper_coverage90_pooled"] == 0.899


def test_loglik_rank_sees_draws_that_ignore_the_data():
    # Conjugate normal model per training point: f ~ N(0, 1), y = f + N(0, σ²).
    rng = np.random.default_rng(4)
    n, d, s2 = 30, 99, 0.09
    post_var = s2 / (1 + s2)
    ranks_post, ranks_prior = [], []
    for _ in range(300):
        f_true = rng.normal(size=n)
        y = f_true + np.sqrt(s2) * rng.normal(size=n)
        post = y / (1 + s2) + np.sqrt(post_var) * rng.normal(size=(d, n))
        prior = rng.normal(size=(d, n))
        ranks_post.append(checks.loglik_rank(post, f_true, y, np.full(n, s2)))
        ranks_prior.append(checks.loglik_rank(prior, f_true, y, np.full(n, s2)))
    assert checks.rank_uniformity_pvalue(np.array(ranks_post), d) > 1e-3
    assert np.all(np.array(ranks_prior) == d)
    assert checks.rank_uniformity_pvalue(np.array(ranks_prior), d) < 1e-3


def test_mark_valid_drops_seeds_with_high_bnn_rhat_for_every_family():
    rows = []
    for seed, rhat in enumerate([1.0, 1.2, 1.01, 1.0]):
        for prior in ("gp", "bnn"):
            rows.append({"dataset": "a", "noise": "bump", "coverage": "ood", "seed": seed,
                         "prior": prior, "max_rhat": rhat if prior == "bnn" else np.nan})
    out = checks.mark_valid(pd.DataFrame(rows), n_valid=2)
    assert sorted(out.loc[out["valid"], "seed"].unique()) == [0, 2]
    assert out.groupby("seed")["valid"].nunique().eq(1).all()  # families share their seeds
    no_bnn = checks.mark_valid(pd.DataFrame(rows).query("prior == 'gp'"), n_valid=3)
    assert sorted(no_bnn.loc[no_bnn["valid"], "seed"]) == [0, 1, 2]
    # sensitivity: the valid seeds whose BNN R̂ ≤ 1.01 (seed 2 sits exactly on it)
    out3 = checks.mark_valid(pd.DataFrame(rows), n_valid=3)
    assert sorted(out3.loc[out3["valid"], "seed"].unique()) == [0, 2, 3]
    assert sorted(out3.loc[out3["valid_strict"], "seed"].unique()) == [0, 2, 3]
    tight = checks.mark_valid(pd.DataFrame(rows), n_valid=3, strict=1.005)
    assert sorted(tight.loc[tight["valid_strict"], "seed"].unique()) == [0, 3]
    assert not (tight["valid_strict"] & ~tight["valid"]).any()


def test_usable_seeds_follow_the_cell_file_or_the_first_seeds(tmp_path):
    import json

    from postrisk.pipeline import usable_seeds

    assert usable_seeds([0, 1, 2, 3], 2) == [0, 1]
    cell = tmp_path / "cell.json"
    cell.write_text(json.dumps({"valid": [0, 3], "dropped": [1, 2]}))
    assert usable_seeds([0, 1, 2, 3], 2, [str(cell)]) == [0, 3]


def test_split_rhat_on_a_hand_case():
    # 2 chains of 4 draws → halves [1,2] [3,4] [2,3] [4,5]: W = 0.5, var of half means = 5/3,
    # n = 2: var⁺ = ½·0.5 + 5/3, R̂ = √(var⁺ / W)
    draws = np.array([1.0, 2, 3, 4, 2, 3, 4, 5])[:, None]
    np.testing.assert_allclose(checks.split_rhat(draws, chains=2),
                               [np.sqrt((0.25 + 5 / 3) / 0.5)], rtol=1e-12)


def _ar1_chains(rng, chains, length, phi):
    x = np.empty((chains, length, phi.size))
    e = rng.normal(size=x.shape)
    x[:, 0] = e[:, 0] / np.sqrt(1 - phi**2)
    for t in range(1, length):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def test_split_rhat_and_ess_against_arviz_and_ar1_theory():
    import arviz as az

    rng = np.random.default_rng(3)
    phi = np.array([0.0, 0.3, 0.6, 0.9])
    x = _ar1_chains(rng, 4, 1000, phi)
    flat = x.reshape(-1, phi.size)
    rhat = checks.split_rhat(flat, 4)
    ess = checks.effective_sample_size(flat, 4)
    for p in range(phi.size):
        assert rhat[p] == pytest.approx(float(az.rhat(x[:, :, p], method="split")), rel=1e-10)
        assert ess[p] == pytest.approx(float(az.ess(x[:, :, p], method="mean")), rel=1e-10)
    theory = 4000 * (1 - phi) / (1 + phi)  # ESS of the mean of an AR(1) chain
    np.testing.assert_allclose(ess, theory, rtol=0.2)
    assert np.all(rhat < 1.05)  # mixing chains pass the paper's threshold


def test_split_rhat_flags_chains_that_disagree_or_drift():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4, 500, 2))
    x[:, :, 0] += np.arange(4)[:, None]  # chains stuck in different places
    x[:, :, 1] += np.linspace(0, 3, 500)[None, :]  # every chain drifts: only splitting sees it
    rhat = checks.split_rhat(x.reshape(-1, 2), 4)
    assert np.all(rhat > 1.1), rhat
    assert checks.instance_point_checks(x.reshape(-1, 2), np.zeros(2), chains=4)["rhat"] \
        == pytest.approx(rhat)
    assert "rhat" not in checks.instance_point_checks(x.reshape(-1, 2), np.zeros(2))


def test_batch_means_mcse_on_a_hand_case():
    # 40 draws in 20 batches of 2: batch variances (ddof 1) are all 0.5 except one of 4.5
    draws = np.tile([0.0, 1.0], 20)
    draws[38:] = [0.0, 3.0]
    batch_var = np.full(20, 0.5)
    batch_var[-1] = 4.5
    expected = batch_var.std(ddof=1) / np.sqrt(20) / draws.var(ddof=1)
    np.testing.assert_allclose(checks.batch_means_mcse_var(draws[:, None]), [expected])
