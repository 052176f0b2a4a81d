"""Exact GP conditioning with known noise against brute force, prior and posterior draws by Monte
Carlo, determinism, the robust square root, input checks."""
from __future__ import annotations

import numpy as np
import pytest

from postrisk.gp import linalg as gp
from postrisk.gp.exact import (
    posterior_covariance,
    posterior_draws,
    posterior_moments,
    sample_prior,
)
from postrisk.gp.kernels import default_kernel
from postrisk.gp.linalg import robust_sqrt
from postrisk.priors.gp.model import gp_scale_constant as scale_constant
from tests.gp.kernel_helpers import random_kernel, reference_matrix


def brute_force_posterior(kern, a, x_train, y, noise_var, x_test):
    """Condition (f_train, f_test) on y via the joint Gaussian of (f_train, f_test, y)."""
    n, m = len(x_train), len(x_test)
    xa = np.concatenate([x_train, x_test])
    kf = a ** 2 * reference_matrix(kern, xa, xa)
    joint = np.zeros((2 * n + m, 2 * n + m))
    joint[: n + m, : n + m] = kf
    joint[n + m:, : n + m] = kf[:n]  # cov(y, f) = cov(f_train, f)
    joint[: n + m, n + m:] = kf[:, :n]
    joint[n + m:, n + m:] = kf[:n, :n] + np.diag(noise_var)
    f_idx, y_idx = np.arange(n, n + m), np.arange(n + m, 2 * n + m)  # f_test, y
    s_fy = joint[np.ix_(f_idx, y_idx)]
    s_yy_inv = np.linalg.inv(joint[np.ix_(y_idx, y_idx)])
    mean = s_fy @ s_yy_inv @ y
    cov = joint[np.ix_(f_idx, f_idx)] - s_fy @ s_yy_inv @ s_fy.T
    return mean, cov


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(11)
    d = 2
    kern = random_kernel(("rq", "linear"), d, rng)
    x_train = rng.random((6, d))
    x_test = np.concatenate([rng.random((3, d)), x_train[2:3]])  # 4 test points, one a train x
    noise_var = rng.uniform(0.01, 0.3, 6)  # heteroscedastic, known
    y = rng.standard_normal(6)
    return kern, 1.7, x_train, y, noise_var, x_test


def test_conditioning_matches_brute_force(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    mean_bf, cov_bf = brute_force_posterior(kern, a, x_train, y, noise_var, x_test)
    mean, cov = posterior_covariance(kern, a, x_train, y, noise_var, x_test)
    np.testing.assert_allclose(mean, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(cov, cov_bf, rtol=0, atol=1e-8)
    mean2, var2 = posterior_moments(kern, a, x_train, y, noise_var, x_test)
    np.testing.assert_allclose(mean2, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(var2, np.diag(cov_bf), rtol=0, atol=1e-8)
    _, mean3, var3 = posterior_draws(kern, a, x_train, y, noise_var, x_test, 3,
                                     np.random.default_rng(0))
    np.testing.assert_allclose(mean3, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(var3, np.diag(cov_bf), rtol=0, atol=1e-8)


def assert_moments_match(draws, mean, cov, n_sigma=5.0):
    """Empirical mean/covariance of the draws within n_sigma Monte-Carlo standard errors."""
    n_draws = draws.shape[0]
    var = np.diag(cov)
    se_mean = np.sqrt(var / n_draws)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= n_sigma * se_mean + 1e-12)
    emp = np.cov(draws, rowvar=False)
    se_cov = np.sqrt((np.outer(var, var) + cov ** 2) / n_draws)
    assert np.all(np.abs(emp - cov) <= n_sigma * se_cov + 1e-12)


def test_posterior_draws_monte_carlo(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    x_dup = np.concatenate([x_test, x_test[1:2], x_test[3:4]])  # duplicates of rows 1 and 3
    draws, mean, var = posterior_draws(kern, a, x_train, y, noise_var, x_dup, 20_000,
                                       np.random.default_rng(5))
    assert draws.shape == (20_000, 6)
    np.testing.assert_array_equal(draws[:, 4], draws[:, 1])
    np.testing.assert_array_equal(draws[:, 5], draws[:, 3])
    mean_bf, cov_bf = brute_force_posterior(kern, a, x_train, y, noise_var, x_test)
    assert_moments_match(draws[:, :4], mean_bf, cov_bf)
    np.testing.assert_allclose(mean[:4], mean_bf, atol=1e-8)


def test_prior_draws_monte_carlo():
    rng = np.random.default_rng(8)
    kern = random_kernel(("matern32", "periodic"), 2, rng)
    x = rng.random((5, 2))
    x = np.concatenate([x, x[:2]])
    a = 0.6
    draws = sample_prior(kern, a, x, np.random.default_rng(9), size=20_000)
    assert draws.shape == (20_000, 7)
    np.testing.assert_array_equal(draws[:, 5:], draws[:, :2])
    assert_moments_match(draws[:, :5], np.zeros(5), a ** 2 * reference_matrix(kern, x[:5], x[:5]))


def test_determinism(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    one = posterior_draws(kern, a, x_train, y, noise_var, x_test, 50, np.random.default_rng(3))
    two = posterior_draws(kern, a, x_train, y, noise_var, x_test, 50, np.random.default_rng(3))
    for u, v in zip(one, two, strict=True):
        np.testing.assert_array_equal(u, v)
    p1 = sample_prior(kern, a, x_test, np.random.default_rng(4), size=3)
    p2 = sample_prior(kern, a, x_test, np.random.default_rng(4), size=3)
    np.testing.assert_array_equal(p1, p2)
    assert scale_constant(kern, x_test, np.random.default_rng(2)) == \
        scale_constant(kern, x_test, np.random.default_rng(2))


def test_robust_sqrt_jitter_and_fallback():
    # Nearly singular (a smooth kernel on close points): Cholesky with jitter.
    x = np.linspace(0, 0.05, 60)[:, None]
    cov = default_kernel(("rbf",), 1).matrix(x, x)
    info = {}
    f = robust_sqrt(cov, info)
    assert info["method"] == "cholesky"
    np.testing.assert_allclose(f @ f.T, cov, atol=1e-6)
    # Indefinite: eigendecomposition with negative eigenvalues clipped to 0.
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    lam = np.array([2.0, 1.0, 0.5, 0.0, -1e-3])
    bad = (q * lam) @ q.T
    info = {}
    f = robust_sqrt(bad, info)
    assert info["method"] == "eigh"
    np.testing.assert_allclose(f @ f.T, (q * np.clip(lam, 0, None)) @ q.T, atol=1e-12)


def test_input_validation(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    with pytest.raises(ValueError):
        posterior_moments(kern, a, x_train, y, -noise_var, x_test)
    with pytest.raises(ValueError):
        posterior_moments(kern, a, x_train, y[:-1], noise_var, x_test)
    assert gp.JITTERS[0] == 1e-10 and gp.JITTERS[-1] == 1e-6
