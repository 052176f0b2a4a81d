"""The closed-form 1-D sandbox: its posterior, BALD, EER and the OOD ratio against their
definitions (Monte Carlo, brute-force refits), and the selectors of Theorem 1 against every
subset of a few points."""

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from postrisk.evaluation.oracle_selection import (
    accept_at_coverage,
    combined_score,
    overlap,
    rejected_intervals,
    set_metrics,
)
from postrisk.studies.sandbox.model import (
    SandboxSettings,
    bald,
    build_sandbox,
    expected_integrated_regret,
    feature_centres,
    gaussian_linear_posterior,
    log_loss_uncertainty,
    noise_sd,
    rbf_features,
    trapezoid_weights,
)

#: The tests' sandbox (its own settings: a gap in the training density at 0.45, the noise SD
#: peaking at 0.8), and a small one, quick to build, of the same construction.
FULL = SandboxSettings(domain=(0.0, 1.0), grid_points=2001, n_features=40, feature_offset=0.16,
                       feature_width=1.0, prior_sd=3.0, noise_low=0.1, noise_high=0.8,
                       noise_centre=0.8, noise_width=0.1, n_train=200, gap_centre=0.45,
                       gap_width=0.05, gap_depth=0.02, coverage=0.8, n_lambdas=11, seed=0)
SMALL = replace(FULL, grid_points=201, n_features=12, n_train=40, prior_sd=2.0)


@pytest.fixture(scope="module")
def small():
    return build_sandbox(SMALL)


@pytest.fixture(scope="module")
def full():
    return build_sandbox(FULL)


def test_posterior_equals_the_function_space_form(small):
    # f | D for f ~ GP(0, prior_sd² φᵀφ') with heteroscedastic noise, the kernel way
    centres, widths = feature_centres(SMALL.n_features, SMALL.domain, SMALL.feature_offset,
                                      SMALL.feature_width)
    phi_train = rbf_features(small.x_train, centres, widths)
    k_grid_train = SMALL.prior_sd ** 2 * small.features @ phi_train.T
    k_train = SMALL.prior_sd ** 2 * phi_train @ phi_train.T
    noise = np.diag(noise_sd(small.x_train, SMALL) ** 2)
    solve = np.linalg.solve(k_train + noise, np.column_stack([small.y_train, k_grid_train.T]))
    mean = k_grid_train @ solve[:, 0]
    cov = SMALL.prior_sd ** 2 * small.features @ small.features.T - k_grid_train @ solve[:, 1:]
    np.testing.assert_allclose(small.posterior_mean, mean, atol=1e-8)
    np.testing.assert_allclose(small.posterior_cov_f, cov, atol=1e-8)
    np.testing.assert_allclose(small.posterior_var, np.diag(cov), atol=1e-8)


def test_posterior_is_calibrated_over_replicates_and_not_with_the_wrong_noise():
    # SBC in closed form: w ~ prior, y ~ model, z = (f(x) − m(x)) / sd(x) must be N(0, 1) at
    # every x; with the posterior built from half the true noise SD it must not be
    rng = np.random.default_rng(3)
    centres, widths = feature_centres(8, (0.0, 1.0), 0.16, 1.0)
    x = np.linspace(0, 1, 30)
    phi = rbf_features(x, centres, widths)
    points = rbf_features(np.array([0.1, 0.5, 0.9]), centres, widths)
    sd = 0.3
    z_right, z_wrong = [], []
    for _ in range(400):
        w = 2.0 * rng.standard_normal(8)
        y = phi @ w + sd * rng.standard_normal(x.size)
        for noise, out in ((sd, z_right), (sd / 2, z_wrong)):
            mean, cov = gaussian_linear_posterior(phi, y, np.full(x.size, noise ** 2), 2.0)
            out.append((points @ w - points @ mean) / np.sqrt(np.diag(points @ cov @ points.T)))
    z_right, z_wrong = np.concatenate(z_right), np.concatenate(z_wrong)
    assert stats.kstest(z_right, "norm").pvalue > 1e-3
    assert stats.kstest(z_wrong, "norm").pvalue < 1e-6


def test_bald_equals_a_monte_carlo_estimate_of_its_definition(small):
    # E_θ[KL(N(f_θ(x), σ²) ‖ N(m(x), σ² + v(x)))] with θ drawn from the exact posterior
    rng = np.random.default_rng(0)
    draws = rng.multivariate_normal(small.posterior_mean_w, small.posterior_cov_w, 40_000)
    idx = np.array([5, 60, 90, 140, 195])
    f = draws @ small.features[idx].T
    s2, m, v = small.noise_var[idx], small.posterior_mean[idx], small.posterior_var[idx]
    kl = 0.5 * np.log((s2 + v) / s2) + (s2 + (f - m) ** 2) / (2 * (s2 + v)) - 0.5
    estimate, error = kl.mean(axis=0), kl.std(axis=0) / np.sqrt(len(draws))
    closed = bald(v, s2)
    assert np.all(np.abs(estimate - closed) < 4 * error + 1e-12)
    # a wrong closed form (½ v / σ², the first-order term) is caught at the same points
    assert np.any(np.abs(estimate - v / s2 / 2) > 4 * error)


def test_bald_is_the_regret_under_log_loss(small):
    # E*_log from the entropies equals BALD; and equals, by Monte Carlo, the expected log-loss
    # regret E_θ E_{y|θ}[log p(y | x, θ) − log p(y | x, D)] of the posterior predictive
    log = log_loss_uncertainty(small.posterior_var, small.noise_var)
    np.testing.assert_allclose(log["epistemic"], bald(small.posterior_var, small.noise_var),
                               rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(1)
    i = 90
    w = rng.multivariate_normal(small.posterior_mean_w, small.posterior_cov_w, 100_000)
    f = w @ small.features[i]
    s2, m, v = small.noise_var[i], small.posterior_mean[i], small.posterior_var[i]
    y = f + np.sqrt(s2) * rng.standard_normal(f.size)
    regret = stats.norm.logpdf(y, f, np.sqrt(s2)) - stats.norm.logpdf(y, m, np.sqrt(s2 + v))
    assert abs(regret.mean() - log["epistemic"][i]) < 4 * regret.std() / np.sqrt(f.size)


def test_eer_equals_a_brute_force_refit_and_integrate(small):
    # for candidates on a coarse grid: add (x, y*) for several y* drawn from the predictive,
    # refit the posterior from scratch, integrate its variance over the test density, average
    centres, widths = feature_centres(SMALL.n_features, SMALL.domain, SMALL.feature_offset,
                                      SMALL.feature_width)
    phi_train = rbf_features(small.x_train, centres, widths)
    var_train = noise_sd(small.x_train, SMALL) ** 2
    closed = expected_integrated_regret(small.posterior_cov_f, small.noise_var, small.weights)
    rng = np.random.default_rng(2)
    for j in range(0, SMALL.grid_points, 20):
        after = []
        for y_new in small.posterior_mean[j] + np.sqrt(
                small.posterior_var[j] + small.noise_var[j]) * rng.standard_normal(3):
            _, cov = gaussian_linear_posterior(
                np.vstack([phi_train, small.features[j]]), np.append(small.y_train, y_new),
                np.append(var_train, small.noise_var[j]), SMALL.prior_sd)
            var = np.einsum("ik,kl,il->i", small.features, cov, small.features)
            after.append(small.weights @ var)
        np.testing.assert_allclose(np.mean(after), closed[j], rtol=1e-8)
    # one more label never raises the integrated regret, and helps most where it is informative
    before = small.weights @ small.posterior_var
    assert np.all(closed <= before + 1e-15)


def test_ood_ranking_ignores_the_noise_profile_while_risk_does_not():
    base = build_sandbox(SMALL)
    noisier = build_sandbox(SMALL, noise_scale=3.0)
    other = build_sandbox(replace(SMALL, noise_centre=0.2, noise_high=1.5))
    for changed in (noisier, other):
        np.testing.assert_array_equal(np.argsort(base.scores()["ood"], kind="stable"),
                                      np.argsort(changed.scores()["ood"], kind="stable"))
    # negative control: the risk scorer's ranking moves with the noise profile
    assert not np.array_equal(np.argsort(base.scores()["risk"]),
                              np.argsort(other.scores()["risk"]))


def _enumerated(aleatoric, epistemic, k_min):
    """(size, risk, regret) of every subset with at least k_min of the points (weights 1/N)."""
    n = len(aleatoric)
    out = []
    for k in range(k_min, n + 1):
        for subset in itertools.combinations(range(n), k):
            s = list(subset)
            out.append((k, (aleatoric[s] + epistemic[s]).sum() / n, epistemic[s].sum() / n))
    return np.array(out)


@pytest.fixture(scope="module")
def ten_points(full):
    """A*, E* of the configured sandbox at ten grid points spread over the domain."""
    idx = np.linspace(0, full.grid.size - 1, 10).astype(int)
    squared = full.uncertainty("squared")
    return squared["aleatoric"][idx], squared["epistemic"][idx]


def test_thresholds_of_regret_and_risk_are_optimal_among_all_subsets(ten_points):
    aleatoric, epistemic = ten_points
    weights = np.full(10, 0.1)
    subsets = _enumerated(aleatoric, epistemic, 8)
    of_size = subsets[subsets[:, 0] == 8]
    assert len(of_size) == 45
    total = aleatoric + epistemic
    by_regret = set_metrics(accept_at_coverage(epistemic, weights, 0.8), weights, total,
                            epistemic)
    by_risk = set_metrics(accept_at_coverage(total, weights, 0.8), weights, total, epistemic)
    assert by_regret["coverage"] == pytest.approx(0.8)
    assert by_regret["regret"] == pytest.approx(of_size[:, 2].min(), rel=1e-12)
    assert by_risk["risk"] == pytest.approx(of_size[:, 1].min(), rel=1e-12)
    # and they are different sets here (the two problems differ)
    assert by_regret["risk"] > by_risk["risk"] and by_risk["regret"] > by_regret["regret"]


@pytest.mark.parametrize("lam", [0.5, 0.75, 1.0])
def test_theorem_one_threshold_is_optimal_for_its_constrained_problems(ten_points, lam):
    # (P_Re) min Re s.t. ρ ≥ ρ(S), Ri ≤ Ri(S); (P_Ri) min Ri s.t. ρ ≥ ρ(S), Re ≤ Re(S); both
    # over every subset of at least the coverage size
    aleatoric, epistemic = ten_points
    weights = np.full(10, 0.1)
    chosen = set_metrics(accept_at_coverage(combined_score(aleatoric, epistemic, lam), weights,
                                            0.8), weights, aleatoric + epistemic, epistemic)
    subsets = _enumerated(aleatoric, epistemic, 8)
    tol = 1e-12
    feasible_re = subsets[subsets[:, 1] <= chosen["risk"] + tol]
    assert feasible_re[:, 2].min() >= chosen["regret"] - tol
    feasible_ri = subsets[subsets[:, 2] <= chosen["regret"] + tol]
    assert feasible_ri[:, 1].min() >= chosen["risk"] - tol


@pytest.mark.parametrize("proxy", ["ood", "bald", "eer"])
def test_the_proxy_scorers_are_dominated_at_the_same_points(full, proxy):
    # negative control: the OOD, BALD and EER selectors at the same ten points are beaten on
    # both risk and regret by some subset of the same size; the enumeration can tell
    idx = np.linspace(0, full.grid.size - 1, 10).astype(int)
    squared = full.uncertainty("squared")
    aleatoric, epistemic = squared["aleatoric"][idx], squared["epistemic"][idx]
    weights = np.full(10, 0.1)
    chosen = set_metrics(accept_at_coverage(full.scores()[proxy][idx], weights, 0.8), weights,
                         aleatoric + epistemic, epistemic)
    subsets = _enumerated(aleatoric, epistemic, 8)
    better = (subsets[:, 1] < chosen["risk"] - 1e-9) & (subsets[:, 2] < chosen["regret"] - 1e-9)
    assert better.any()


def test_scorers_reject_different_regions(full):
    scores = full.scores()
    rejected = {k: ~accept_at_coverage(v, full.weights, 0.8) for k, v in scores.items()}
    for mask in rejected.values():
        assert full.weights[mask].sum() == pytest.approx(0.2, abs=2e-3)
    # OOD rejects the training gap only; risk the noisy region only (noise SD peaks at 0.8);
    # they share nothing
    gap = [(a, b) for a, b in rejected_intervals(full.grid, ~rejected["ood"])]
    assert len(gap) == 1 and gap[0][0] < 0.45 < gap[0][1]
    assert overlap(rejected["ood"], rejected["risk"], full.weights) == 0.0
    assert all(0.65 < x < 0.95 for iv in rejected_intervals(full.grid, ~rejected["risk"])
               for x in iv)
    # the regret scorer rejects part of both
    regret = rejected["regret"]
    assert regret[np.abs(full.grid - 0.45) < 0.02].any()
    assert regret[np.abs(full.grid - 0.8) < 0.02].all()


def test_accept_at_coverage_takes_the_smallest_prefix_and_checks_its_input():
    accepted = accept_at_coverage([3.0, 1.0, 2.0, 1.0], [0.1, 0.4, 0.3, 0.2], 0.55)
    # ascending, ties in index order: 1 (0.4), 3 (0.2) → 0.6 ≥ 0.55
    np.testing.assert_array_equal(accepted, [False, True, False, True])
    with pytest.raises(ValueError, match="one length"):
        accept_at_coverage([1.0, 2.0], [1.0], 0.5)
    with pytest.raises(ValueError, match=r"coverage 1.5 must lie in \[0, 1\]"):
        accept_at_coverage([1.0], [1.0], 1.5)


def test_intervals_and_overlap_on_a_hand_example():
    grid = np.arange(8) / 7
    accepted = np.array([True, False, False, True, True, False, True, False])
    assert rejected_intervals(grid, accepted) == [(1 / 7, 2 / 7), (5 / 7, 5 / 7), (1.0, 1.0)]
    a = np.array([1, 1, 0, 0], bool)
    b = np.array([0, 1, 1, 1], bool)
    assert overlap(a, b, np.array([0.1, 0.2, 0.3, 0.4])) == pytest.approx(0.2 / 0.3)


def test_sandbox_is_deterministic_and_quadrature_integrates(small):
    again = build_sandbox(SMALL)
    np.testing.assert_array_equal(small.y_train, again.y_train)
    for k, v in small.scores().items():
        np.testing.assert_array_equal(v, again.scores()[k])
    assert small.weights.sum() == pytest.approx(1.0)
    grid = np.linspace(0, 2, 101)
    assert trapezoid_weights(grid) @ grid ** 2 == pytest.approx(8 / 3, rel=1e-3)


def test_bad_settings_stop_with_clear_messages():
    with pytest.raises(ValueError, match="coverage 1.2 must lie in"):
        build_sandbox(replace(SMALL, coverage=1.2))
    with pytest.raises(ValueError, match="upper end must exceed"):
        build_sandbox(replace(SMALL, domain=(1.0, 0.0)))
