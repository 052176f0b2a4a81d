import math

import numpy as np
import pytest
import scoringrules as sr
from scipy.stats import norm

from postrisk.evaluation.predictive import (
    expected_gaussian_crps,
    expected_gaussian_nll,
    interval_coverage,
    interval_width,
    rmse,
)

# Points spanning under- and over-dispersion, bias, and small and large noise.
MU = np.array([0.0, 1.5, -2.0, 0.3, 4.0])
VAR = np.array([1.0, 0.2, 3.0, 0.05, 1.0])
F_TRUE = np.array([0.0, 0.5, -1.0, 0.3, 1.0])
NOISE = np.array([0.5, 1.0, 1.5, 0.4, 2.0])
DRAWS = 200_000


@pytest.fixture(scope="module")
def y_draws():
    rng = np.random.default_rng(0)
    return F_TRUE + np.sqrt(NOISE) * rng.standard_normal((DRAWS, MU.size))


def assert_within_mc_error(closed, samples, k=5.0):
    """closed form within k standard errors of the Monte Carlo mean, per point."""
    mc = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / math.sqrt(samples.shape[0])
    assert np.all(np.abs(closed - mc) <= k * se), (closed, mc, se)


def test_rmse():
    # errors 0, 1, -1, 0, 3 -> sqrt(11 / 5)
    assert rmse(MU, F_TRUE) == pytest.approx(math.sqrt(11 / 5), abs=1e-15)


def test_expected_nll_matches_monte_carlo(y_draws):
    nll = -norm.logpdf(y_draws, loc=MU, scale=np.sqrt(VAR))
    assert_within_mc_error(expected_gaussian_nll(MU, VAR, F_TRUE, NOISE), nll)


def test_expected_nll_closed_form_by_hand():
    # ½ log(2π·2) + (0.5 + 1)/(2·2)
    got = expected_gaussian_nll([1.0], [2.0], [0.0], [0.5])
    assert got[0] == pytest.approx(0.5 * math.log(4 * math.pi) + 1.5 / 4, abs=1e-15)


def test_expected_crps_matches_monte_carlo(y_draws):
    crps = sr.crps_normal(y_draws, MU, np.sqrt(VAR))
    assert_within_mc_error(expected_gaussian_crps(MU, VAR, F_TRUE, NOISE), crps)


def test_expected_crps_of_a_point_mass_is_the_gaussian_crps():
    rng = np.random.default_rng(1)
    mu, var, f = rng.normal(size=50), rng.exponential(size=50) + 0.01, rng.normal(size=50)
    # scoringrules 0.10: crps_normal(obs, mu, sigma)
    ref = sr.crps_normal(f, mu, np.sqrt(var))
    np.testing.assert_allclose(expected_gaussian_crps(mu, var, f, 0.0), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(expected_gaussian_crps(mu, var, f, np.zeros(50)), ref,
                               rtol=0, atol=1e-12)


def test_interval_coverage_matches_monte_carlo(y_draws):
    z = norm.ppf(0.95)
    inside = (np.abs(y_draws - MU) <= z * np.sqrt(VAR)).astype(float)
    assert_within_mc_error(interval_coverage(MU, VAR, F_TRUE, NOISE, level=0.9), inside)


def test_interval_coverage_without_noise_is_the_indicator_of_f_inside():
    z = norm.ppf(0.95)
    # f* at 0 (inside), exactly on the upper edge (inside), just beyond it (outside)
    mean = np.zeros(3)
    f = np.array([0.0, z, z + 1e-9])
    np.testing.assert_array_equal(interval_coverage(mean, np.ones(3), f, 0.0), [1.0, 1.0, 0.0])


def test_interval_coverage_is_calibrated_for_the_true_predictive():
    # μ = f*, v = σ²_ε: y falls in the central interval with probability exactly `level`
    for level in (0.5, 0.8, 0.9, 0.99):
        cov = interval_coverage([1.0, -3.0], [0.3, 2.0], [1.0, -3.0], [0.3, 2.0], level=level)
        np.testing.assert_allclose(cov, level, rtol=0, atol=1e-13)


def test_interval_coverage_far_tail_has_no_cancellation():
    # interval [10, 12] standard deviations above f*: Φ(12) − Φ(10) ≈ 7.6e-24
    cov = interval_coverage([11.0], [1.0 / norm.ppf(0.95) ** 2], [0.0], [1.0])
    assert cov[0] == pytest.approx(norm.sf(10.0) - norm.sf(12.0), rel=1e-10)


def test_interval_width():
    np.testing.assert_allclose(interval_width([1.0, 4.0]), [2 * 1.6448536269514722,
                                                           4 * 1.6448536269514722], rtol=1e-14)
    assert interval_width([1.0], level=0.5)[0] == pytest.approx(2 * norm.ppf(0.75), rel=1e-14)


def test_scalar_noise_equals_its_vector():
    a = expected_gaussian_crps(MU, VAR, F_TRUE, 0.7)
    b = expected_gaussian_crps(MU, VAR, F_TRUE, np.full(MU.size, 0.7))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn", [expected_gaussian_nll, expected_gaussian_crps,
                                interval_coverage])
def test_predictive_validation(fn):
    with pytest.raises(ValueError, match="differ in length"):
        fn([0.0, 1.0], [1.0], [0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="var must be positive"):
        fn([0.0], [0.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="noise_var must be non-negative"):
        fn([0.0], [1.0], [0.0], -0.1)
    with pytest.raises(ValueError, match="mean contains non-finite"):
        fn([np.nan], [1.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="noise_var contains non-finite"):
        fn([0.0], [1.0], [0.0], np.inf)


def test_level_and_rmse_validation():
    with pytest.raises(ValueError, match="level"):
        interval_width([1.0], level=1.0)
    with pytest.raises(ValueError, match="level"):
        interval_coverage([0.0], [1.0], [0.0], 1.0, level=0.0)
    with pytest.raises(ValueError, match="var must be positive"):
        interval_width([-1.0])
    with pytest.raises(ValueError, match="empty"):
        rmse([], [])
