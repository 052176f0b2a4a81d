"""Oracle targets: exact identities, closed forms against Monte Carlo from draws."""

import numpy as np
import pytest

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


def mixture_setup(m=40, draws=300, seed=0):
    """A skewed, heavy-tailed posterior (no Gaussian closed form applies), its noise and a
    Gaussian predictive of each point."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=m)
    f_draws = (mean + rng.uniform(0.05, 1.5, size=m) * rng.standard_normal((draws, m))
               + 0.4 * rng.standard_t(3, size=(draws, m)))
    noise_var = rng.uniform(0.02, 0.6, size=m)
    pred_mean = mean + rng.normal(scale=0.5, size=m)
    pred_var = rng.uniform(0.1, 2.0, size=m)
    return rng, f_draws, noise_var, pred_mean, pred_var


def sample_mixture(rng, f_draws, noise_var, n):
    """n draws of Y from the mixture p̄ = (1/D) Σ_d N(f_d, σ²_ε), per point."""
    d = rng.integers(f_draws.shape[0], size=(n, f_draws.shape[1]))
    return (f_draws[d, np.arange(f_draws.shape[1])]
            + np.sqrt(noise_var) * rng.standard_normal((n, f_draws.shape[1])))


def test_mixture_entropies_equal_brute_force():
    _, f_draws, noise_var, *_ = mixture_setup(m=12, draws=80)
    crps_entropy, entropy = oracle.mixture_entropies(f_draws, noise_var)
    # ½E|Y − Y'| over all D² pairs of components, each pair in closed form
    pairs = oracle.mean_abs_normal(f_draws[:, None] - f_draws[None], 2 * noise_var).mean((0, 1))
    np.testing.assert_allclose(crps_entropy, pairs / 2, rtol=1e-10)
    # H(p̄) by adaptive quadrature of the density
    from scipy import integrate
    from scipy.stats import norm

    for i in range(4):
        sd = np.sqrt(noise_var[i])

        def integrand(y, i=i, sd=sd):
            p = norm.pdf(y, f_draws[:, i], sd).mean()
            return -p * np.log(p) if p > 0 else 0.0

        value, _ = integrate.quad(integrand, f_draws[:, i].min() - 12 * sd,
                                  f_draws[:, i].max() + 12 * sd, limit=1000, epsabs=1e-14,
                                  epsrel=1e-13)
        assert entropy[i] == pytest.approx(value, rel=1e-11)


def test_mixture_decompositions_equal_monte_carlo_risks():
    rng, f_draws, noise_var, a, s2 = mixture_setup()
    n = 40000
    y = sample_mixture(rng, f_draws, noise_var, n)
    sd = np.sqrt(s2)
    z = (y - a) / sd
    from scipy.stats import norm

    crps = sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
    nll = 0.5 * (np.log(2 * np.pi * s2) + z**2)
    crps_terms = oracle.crps_decomposition_mixture(a, s2, f_draws, noise_var)
    log_terms = oracle.log_score_decomposition_mixture(a, s2, f_draws, noise_var)
    for terms, loss in ((crps_terms, crps), (log_terms, nll)):
        se = loss.std(0) / np.sqrt(n)
        assert np.all(np.abs(loss.mean(0) - terms["total"]) < 5 * se)
        assert np.all(terms["generalized_variance"] >= 0)
        assert np.all(terms["deployment_gap"] >= -1e-12)
        np.testing.assert_allclose(terms["aleatoric"] + terms["generalized_variance"]
                                   + terms["deployment_gap"], terms["total"], rtol=1e-12)
    # H(p̄) = E[−log p̄(Y)]: the log score's AU + generalized variance
    pbar = np.stack([norm.pdf(y[:2000, i][:, None], f_draws[:, i], np.sqrt(noise_var[i]))
                     .mean(1) for i in range(y.shape[1])], axis=1)
    h_mc = -np.log(pbar)
    entropy = log_terms["aleatoric"] + log_terms["generalized_variance"]
    assert np.all(np.abs(h_mc.mean(0) - entropy) < 5 * h_mc.std(0) / np.sqrt(2000))
    # a negative control: the predictive's spread without the noise is caught
    wrong = 0.5 * (np.log(2 * np.pi * s2) + (f_draws.var(0) + (f_draws.mean(0) - a) ** 2) / s2)
    se = nll.std(0) / np.sqrt(n)
    assert np.any(np.abs(nll.mean(0) - wrong) > 5 * se)


def test_mixture_of_gaussian_draws_meets_the_closed_forms():
    rng, m, v, noise, a, s2, draws = gaussian_setup(m=60, draws=4000)
    exact_draws = {"crps": oracle.crps_decomposition_gaussian(a, s2, draws.mean(0),
                                                                draws.var(0), noise),
                   "log_score": oracle.log_score_decomposition_gaussian(
                       a, s2, draws.mean(0), draws.var(0), noise)}
    mixture = oracle.ReferencePredictive.mixture(draws, noise)
    for loss in oracle.LOSSES:
        terms = mixture.decomposition(loss, a, s2)
        # the mixture of 4,000 Gaussian draws is Gaussian but for its sampling error
        for term in ("aleatoric", "generalized_variance", "deployment_gap", "total"):
            np.testing.assert_allclose(terms[term], exact_draws[loss][term], atol=0.01,
                                       err_msg=f"{loss} {term}")


def test_crps_decomposition_closed_form_is_the_expected_crps():
    rng, m, v, noise, a, s2, _ = gaussian_setup(m=200, draws=10)
    exact = oracle.crps_decomposition_gaussian(a, s2, m, v, noise)
    # The total is the expected CRPS of N(â, ŝ²) at Y ~ N(m, σ²_f + σ²_ε): closed form
    sd = np.sqrt(s2)
    y = m + np.sqrt(v + noise) * rng.standard_normal((20000, m.size))
    z = (y - a) / sd
    from scipy.stats import norm

    crps = sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
    np.testing.assert_allclose(crps.mean(0), exact["total"],
                               atol=5 * crps.std(0).max() / np.sqrt(20000))
    assert np.all(exact["generalized_variance"] >= 0) and np.all(exact["deployment_gap"] >= 0)


def test_log_score_decomposition_closed_form_is_the_expected_nll():
    rng, m, v, noise, a, s2, _ = gaussian_setup(m=30, draws=10)
    exact = oracle.log_score_decomposition_gaussian(a, s2, m, v, noise)
    y = m + np.sqrt(v + noise) * rng.standard_normal((20000, m.size))
    nll = 0.5 * (np.log(2 * np.pi * s2) + (y - a) ** 2 / s2)
    np.testing.assert_allclose(nll.mean(0), exact["total"],
                               atol=5 * nll.std(0).max() / np.sqrt(20000))
    assert np.all(exact["generalized_variance"] >= 0) and np.all(exact["deployment_gap"] >= -1e-12)


def test_loss_targets_of_the_reference_predictive():
    _, m, v, noise, a, s2, draws = gaussian_setup(m=50, draws=10)
    reference = oracle.ReferencePredictive.gaussian(m, v, noise)
    # the reference predictive itself has no deployment gap: its excess risk is the
    # generalized variance, under both losses
    own = reference.eu_targets(m, v + noise)
    assert set(own) == set(oracle.LOSS_EU_TARGETS)
    for loss in oracle.LOSSES:
        np.testing.assert_allclose(own[f"{loss}_posterior_excess_risk"],
                                   own[f"{loss}_generalized_variance"], atol=1e-12)
    other = reference.eu_targets(a, s2)
    for loss in oracle.LOSSES:
        assert np.all(other[f"{loss}_posterior_excess_risk"]
                      >= other[f"{loss}_generalized_variance"] - 1e-12)
        np.testing.assert_array_equal(other[f"{loss}_generalized_variance"],
                                      own[f"{loss}_generalized_variance"])
    # σ²_f/σ²_ε → the log score's generalized variance is ½log(1 + σ²_f/σ²_ε)
    np.testing.assert_allclose(own["log_score_generalized_variance"], 0.5 * np.log1p(v / noise))
    # without a predictive variance only the generalized variances are defined
    bare = reference.eu_targets(a, None)
    assert np.all(np.isnan(bare["crps_posterior_excess_risk"]))
    np.testing.assert_array_equal(bare["crps_generalized_variance"],
                                  own["crps_generalized_variance"])
    mixture = oracle.ReferencePredictive.mixture(draws, noise)
    np.testing.assert_array_equal(mixture.eu_targets(a, None)["log_score_generalized_variance"],
                                  mixture.eu_targets(a, s2)["log_score_generalized_variance"])
    with pytest.raises(ValueError, match="loss must be one of"):
        reference.decomposition("brier", a, s2)
