"""Per-point checks of a posterior's draws: rank bins, rank and coverage, batch-means MCSE, the
log-likelihood rank, R̂ (rank-normalised, folded split-R̂) and bulk ESS."""
import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation import posterior_checks
from postrisk.tasks import diagnostics


def test_rank_bins_have_exact_probabilities():
    # D = 200: 201 ranks in 20 bins — one bin holds 11 ranks, the others 10
    probs = diagnostics.rank_bin_probabilities(200)
    assert probs.sum() == pytest.approx(1.0)
    assert sorted(np.round(probs * 201).astype(int).tolist()) == [10] * 19 + [11]
    # D = 999: 1000 ranks split evenly
    np.testing.assert_allclose(diagnostics.rank_bin_probabilities(999), 0.05)
    # a perfect sampler's expected histogram has deviation 0 in Table 3; against a flat 1/20 it
    # would show a floor of 11/201 − 1/20
    ranks = np.arange(201)
    points = {"bnn": {"rank_hist": diagnostics.rank_histogram(ranks, 200), "rank_expected": probs,
                      "mcse_var": np.zeros(3)}}
    inst = pd.DataFrame({"prior": "bnn", "dataset": "a", "noise": "bump", "coverage": "ood",
                         "seed": [0], "n_eval": [201], "covered90": [180],
                         "corr_mean_ftrue": [0.9]})
    table = posterior_checks.table3(inst, points)
    assert table["rank_hist_max_dev_pp"].iloc[0] == 0.0
    assert np.max(np.abs(points["bnn"]["rank_hist"] - 0.05)) == pytest.approx(11 / 201 - 0.05)


def test_rank_and_coverage_on_a_hand_case():
    draws = np.arange(10.0)[:, None] * np.ones((1, 3))
    f = np.array([-1.0, 4.5, 20.0])
    np.testing.assert_array_equal(diagnostics.rank_of_truth(draws, f), [0, 5, 10])
    np.testing.assert_array_equal(diagnostics.covered_central(draws, f), [False, True, False])
    shares = diagnostics.rank_histogram(np.array([0, 5, 10]), n_draws=10, bins=2)
    # ranks 0…10 split into two bins of 5.5 ranks: {0, 5} below, {10} above
    np.testing.assert_allclose(shares, [2 / 3, 1 / 3])


def test_batch_means_mcse_matches_theory_for_iid_draws():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(4000, 2000))
    rel = diagnostics.batch_means_mcse_var(draws)
    # SE of a normal sample variance relative to σ²: √(2/(D−1))
    assert abs(np.median(rel) - np.sqrt(2 / 3999)) < 0.15 * np.sqrt(2 / 3999)


def test_batch_means_sees_within_chain_dependence():
    rng = np.random.default_rng(1)
    iid = rng.normal(size=(1000, 300))
    sticky = np.repeat(rng.normal(size=(100, 300)), 10, axis=0)  # 10 copies of each draw
    assert np.median(diagnostics.batch_means_mcse_var(sticky)) > \
        2 * np.median(diagnostics.batch_means_mcse_var(iid))


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
        ranks_post.append(diagnostics.loglik_rank(post, f_true, y, np.full(n, s2)))
        ranks_prior.append(diagnostics.loglik_rank(prior, f_true, y, np.full(n, s2)))
    assert posterior_checks.rank_uniformity_pvalue(np.array(ranks_post), d) > 1e-3
    assert np.all(np.array(ranks_prior) == d)
    assert posterior_checks.rank_uniformity_pvalue(np.array(ranks_prior), d) < 1e-3


def _vehtari_rhat(chains: np.ndarray) -> float:
    """Rank-normalised, folded split-R̂ by its definition (Vehtari et al. 2021, eqs. 4–6),
    written out for one point from draws (C, S): split every chain in halves, rank-normalise
    the pooled draws with Blom's offsets, take the classic R̂ of the normalised draws and of the
    normalised folded draws |θ − median|, keep the larger."""
    from scipy import stats

    c, s = chains.shape
    half = s // 2
    split = np.concatenate([chains[:, :half], chains[:, s - half:]], axis=0)

    def classic(z):
        n = z.shape[1]
        w = z.var(axis=1, ddof=1).mean()
        b_over_n = z.mean(axis=1).var(ddof=1)
        return np.sqrt(((n - 1) / n * w + b_over_n) / w)

    def rank_normalise(z):
        ranks = stats.rankdata(z, method="average").reshape(z.shape)
        return stats.norm.ppf((ranks - 3 / 8) / (z.size + 1 / 4))

    folded = np.abs(split - np.median(split))
    return max(classic(rank_normalise(split)), classic(rank_normalise(folded)))


def _ar1_chains(rng, chains, length, phi):
    x = np.empty((chains, length, phi.size))
    e = rng.normal(size=x.shape)
    x[:, 0] = e[:, 0] / np.sqrt(1 - phi**2)
    for t in range(1, length):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def test_rhat_is_the_rank_normalised_folded_split_rhat_of_vehtari_2021():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 101, 6))  # odd length: the middle draw is dropped
    x[:, :, 1] += np.arange(4)[:, None] * 0.5  # chains in different places
    x[:, :, 2] *= np.array([1.0, 1.0, 1.0, 3.0])[:, None]  # one chain wider: only folding sees it
    x[:, :, 3] = np.exp(2 * x[:, :, 3])  # skewed but mixing: rank-normalised, it passes
    x[:, :, 4] += np.linspace(0, 2, 101)[None, :]  # drift within every chain
    flat = x.reshape(-1, 6)  # chain-major
    rhat, ess = diagnostics.rhat_and_ess(flat, chains=4)
    expected = [_vehtari_rhat(x[:, :, p]) for p in range(6)]
    np.testing.assert_allclose(rhat, expected, rtol=1e-10)
    assert np.all(rhat[[1, 2, 4]] > 1.05) and np.all(rhat[[0, 3, 5]] < 1.05), rhat


def test_folding_sees_chains_that_differ_only_in_scale():
    # same location, one chain 3× wider: the classic split-R̂ misses it, the folded R̂ does not
    rng = np.random.default_rng(8)
    x = rng.normal(size=(4, 500, 1)) * np.array([1.0, 1.0, 1.0, 3.0])[:, None, None]
    split = np.concatenate([x[:, :250], x[:, 250:]], axis=0)[:, :, 0]
    w = split.var(axis=1, ddof=1).mean()
    classic = np.sqrt((249 / 250 * w + split.mean(axis=1).var(ddof=1)) / w)
    assert classic < 1.01
    assert diagnostics.rhat_and_ess(x.reshape(-1, 1), chains=4)[0][0] > 1.05


def test_bulk_ess_against_arviz_and_ar1_theory():
    import arviz as az

    rng = np.random.default_rng(3)
    phi = np.array([0.0, 0.3, 0.6, 0.9])
    x = _ar1_chains(rng, 4, 1000, phi)
    rhat, ess = diagnostics.rhat_and_ess(x.reshape(-1, phi.size), 4)
    for p in range(phi.size):
        assert ess[p] == pytest.approx(float(az.ess(x[:, :, p], method="bulk")), rel=1e-10)
        assert rhat[p] == pytest.approx(float(az.rhat(x[:, :, p], method="rank")), rel=1e-10)
    theory = 4000 * (1 - phi) / (1 + phi)  # ESS of the mean of an AR(1) chain
    np.testing.assert_allclose(ess, theory, rtol=0.2)
    assert np.all(rhat < 1.05)  # mixing chains pass the paper's threshold


def test_rhat_and_ess_are_arvizs_numpy_values_whatever_else_is_installed():
    """With Numba installed (the methods need it) ArviZ would switch to compiled helpers that
    round differently; a task store's R̂ and ESS stay those of ArviZ's NumPy code, bit for
    bit, and ArviZ's own switch is left as it was found."""
    import arviz as az

    rng = np.random.default_rng(5)
    x = _ar1_chains(rng, 4, 300, np.array([0.2, 0.7, 0.95])).astype(np.float32)
    found = az.Numba.numba_flag
    rhat, ess = diagnostics.rhat_and_ess(x.reshape(-1, 3), 4)
    assert az.Numba.numba_flag == found
    az.Numba.disable_numba()
    try:
        for p in range(3):
            assert rhat[p] == float(az.rhat(x[:, :, p], method="rank"))
            assert ess[p] == float(az.ess(x[:, :, p], method="bulk"))
    finally:
        az.Numba.numba_flag = found
    with diagnostics.arviz_numpy_code():
        assert az.Numba.numba_flag is False
    assert az.Numba.numba_flag == found


def test_rhat_flags_chains_that_disagree_or_drift():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4, 500, 2))
    x[:, :, 0] += np.arange(4)[:, None]  # chains stuck in different places
    x[:, :, 1] += np.linspace(0, 3, 500)[None, :]  # every chain drifts: only splitting sees it
    rhat, _ = diagnostics.rhat_and_ess(x.reshape(-1, 2), 4)
    assert np.all(rhat > 1.1), rhat
    assert diagnostics.instance_point_checks(x.reshape(-1, 2), np.zeros(2), chains=4)["rhat"] \
        == pytest.approx(rhat)
    assert "rhat" not in diagnostics.instance_point_checks(x.reshape(-1, 2), np.zeros(2))
    # a point where every draw is equal: R̂ 1, ESS = the number of draws (no NaN)
    const_rhat, const_ess = diagnostics.rhat_and_ess(np.ones((40, 1)), 4)
    assert const_rhat[0] == 1.0 and const_ess[0] == 40.0
    with pytest.raises(ValueError, match="at least 4 draws per chain"):
        diagnostics.rhat_and_ess(rng.normal(size=(12, 3)), 4)


def test_batch_means_mcse_on_a_hand_case():
    # 40 draws in 20 batches of 2: batch variances (ddof 1) are all 0.5 except one of 4.5
    draws = np.tile([0.0, 1.0], 20)
    draws[38:] = [0.0, 3.0]
    batch_var = np.full(20, 0.5)
    batch_var[-1] = 4.5
    expected = batch_var.std(ddof=1) / np.sqrt(20) / draws.var(ddof=1)
    np.testing.assert_allclose(diagnostics.batch_means_mcse_var(draws[:, None]), [expected])
