"""Oracle targets: exact identities, closed forms against Monte Carlo from draws."""

import numpy as np

from postrisk.tasks import oracle


def gaussian_setup(m=400, draws=20000, seed=0):
    rng = np.random.default_rng(seed)
    post_mean = rng.normal(size=m)
    post_var = rng.uniform(0.05, 1.0, size=m)
    noise_var = rng.uniform(0.05, 0.5, size=m)
    pred_mean = post_mean + rng.normal(scale=0.7, size=m)
    pred_var = rng.uniform(0.1, 1.5, size=m)
    f_draws = post_mean + np.sqrt(post_var) * rng.standard_normal((draws, m))
    return rng, post_mean, post_var, noise_var, pred_mean, pred_var, f_draws


def test_posterior_excess_risk_is_variance_plus_gap_exactly():
    rng = np.random.default_rng(1)
    a, m, v, f = rng.normal(size=(4, 50))
    v = v**2
    per = oracle.posterior_excess_risk(a, m, v)
    assert np.array_equal(per, v + (a - m) ** 2)
    targets = oracle.eu_targets(a, m, v, f)
    assert set(targets) == set(oracle.EU_TARGETS)
    assert np.array_equal(targets["pointwise_excess_risk"], (a - f) ** 2)


def test_eu_targets_equal_monte_carlo_from_draws():
    _, m, v, noise, a, _, draws = gaussian_setup()
    d = draws.shape[0]
    mc_per = np.mean((a - draws) ** 2, axis=0)  # E_F (â − f)² from the draws
    per = oracle.posterior_excess_risk(a, m, v)
    se = np.std((a - draws) ** 2, axis=0) / np.sqrt(d)
    assert np.all(np.abs(mc_per - per) < 5 * se)
    # total risk = E (â − Y)² with Y = f + ε
    y = draws + np.sqrt(noise) * np.random.default_rng(3).standard_normal(draws.shape)
    mc_total = np.mean((a - y) ** 2, axis=0)
    se_total = np.std((a - y) ** 2, axis=0) / np.sqrt(d)
    assert np.all(np.abs(mc_total - oracle.total_risk(a, m, v, noise)) < 5 * se_total)


def test_crps_decomposition_closed_form_vs_mc_and_direct():
    rng, m, v, noise, a, s2, draws = gaussian_setup(m=200, draws=4000)
    exact_draws = oracle.crps_decomposition_gaussian(a, s2, draws.mean(0), draws.var(0), noise)
    exact = oracle.crps_decomposition_gaussian(a, s2, m, v, noise)
    mc = oracle.crps_decomposition_mc(a, s2, draws, noise, rng, n_pairs=4000)
    for term in ("aleatoric", "generalized_variance", "deployment_gap", "total"):
        np.testing.assert_allclose(mc[term], exact_draws[term], atol=0.03, err_msg=term)
    # The total is the expected CRPS of N(â, ŝ²) at Y ~ N(m, σ²_f + σ²_ε): closed form
    sd = np.sqrt(s2)
    y = m + np.sqrt(v + noise) * rng.standard_normal((20000, m.size))
    z = (y - a) / sd
    from scipy.stats import norm

    crps = sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
    np.testing.assert_allclose(crps.mean(0), exact["total"],
                               atol=5 * crps.std(0).max() / np.sqrt(20000))
    assert np.all(exact["generalized_variance"] >= 0) and np.all(exact["deployment_gap"] >= 0)


def test_log_score_decomposition_closed_form_vs_mc_and_direct():
    rng, m, v, noise, a, s2, draws = gaussian_setup(m=30, draws=2000)
    # the draws are a finite sample: compare with the closed form at their own moments
    exact = oracle.log_score_decomposition_gaussian(a, s2, draws.mean(0), draws.var(0), noise)
    # MC error of an entropy estimate from n samples ≈ SD(log p̄(Y)) / √n ≈ 1/√n; 4000 → 0.016
    mc = oracle.log_score_decomposition_mc(a, s2, draws, noise, rng, n_samples=4000)
    for term in ("aleatoric", "generalized_variance", "deployment_gap", "total"):
        np.testing.assert_allclose(mc[term], exact[term], atol=0.08, err_msg=term)
    exact = oracle.log_score_decomposition_gaussian(a, s2, m, v, noise)
    y = m + np.sqrt(v + noise) * rng.standard_normal((20000, m.size))
    nll = 0.5 * (np.log(2 * np.pi * s2) + (y - a) ** 2 / s2)
    np.testing.assert_allclose(nll.mean(0), exact["total"],
                               atol=5 * nll.std(0).max() / np.sqrt(20000))
    assert np.all(exact["generalized_variance"] >= 0) and np.all(exact["deployment_gap"] >= -1e-12)
