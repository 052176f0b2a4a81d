import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve

from postrisk.methods import BayesianLinearRegression, run_fit

W_TRUE = np.array([1.5, -2.0, 0.5, 3.0])
NOISE_VAR = 0.25


def linear_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, W_TRUE.size))
    f = 0.7 + x @ W_TRUE
    return x, f + rng.normal(0.0, np.sqrt(NOISE_VAR), n), f


def standardised(x, y, x_eval):
    """The model's features and target, recomputed independently of the implementation."""
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1.0
    phi = np.column_stack([np.ones(len(x)), (x - mu) / sd])
    phi_eval = np.column_stack([np.ones(len(x_eval)), (x_eval - mu) / sd])
    return phi, (y - y.mean()) / y.std(), phi_eval, y.mean(), y.std()


def log_evidence_marginal(phi, t, alpha, beta):
    """ln N(t | 0, α⁻¹ΦΦᵀ + β⁻¹I): the evidence written as a Gaussian marginal of t."""
    n = len(t)
    cov = phi @ phi.T / alpha + np.eye(n) / beta
    c = cho_factor(cov, lower=True)
    logdet = 2 * np.sum(np.log(np.diag(c[0])))
    return -0.5 * (t @ cho_solve(c, t) + logdet + n * np.log(2 * np.pi))


@pytest.fixture(scope="module")
def big_fit():
    x, y, f = linear_data(2000, seed=0)
    return x, y, f, BayesianLinearRegression().fit(x, y)


def test_declared_interface():
    assert BayesianLinearRegression.name == "blr"
    assert BayesianLinearRegression.display_name == "BLR"
    assert set(BayesianLinearRegression.search_space) == {"evidence", "prior_precision",
                                                          "noise_std"}
    assert BayesianLinearRegression().hyperparameters() == {
        "evidence": True, "prior_precision": 1.0, "noise_std": 1.0, "max_iter": 1000,
        "tol": 1e-8}


def test_fixed_precisions_give_the_closed_form_posterior():
    x, y, _ = linear_data(300, seed=3)
    x_eval = linear_data(25, seed=4)[0]
    model = BayesianLinearRegression(evidence=False, prior_precision=0.3, noise_std=0.5)
    pred = model.fit(x, y).predict(x_eval)
    assert (model.alpha_, model.beta_) == (0.3, 4.0)
    phi, t, phi_eval, m_y, s_y = standardised(x, y, x_eval)
    s_n = np.linalg.inv(0.3 * np.eye(phi.shape[1]) + 4.0 * phi.T @ phi)
    m_n = 4.0 * s_n @ phi.T @ t
    np.testing.assert_allclose(pred.mean, s_y * phi_eval @ m_n + m_y, rtol=1e-10)
    np.testing.assert_allclose(pred.epistemic_var,
                               s_y ** 2 * np.einsum("ij,jk,ik->i", phi_eval, s_n, phi_eval),
                               rtol=1e-10)
    np.testing.assert_allclose(pred.aleatoric_var, s_y ** 2 / 4.0)
    # the evidence start does not change the evidence optimum
    a = BayesianLinearRegression().fit(x, y)
    b = BayesianLinearRegression(prior_precision=50.0, noise_std=0.05).fit(x, y)
    np.testing.assert_allclose([a.alpha_, a.beta_], [b.alpha_, b.beta_], rtol=1e-6)


def test_evidence_recovers_the_noise_variance_and_the_function(big_fit):
    x, y, f, model = big_fit
    assert model.converged_
    noise_hat = model.y_scale_ ** 2 / model.beta_
    # the sampling SD of a noise-variance estimate from n = 2000 is sqrt(2/n) ≈ 3.2%
    assert abs(noise_hat / NOISE_VAR - 1) < 0.05
    # against the realised noise the estimate is far tighter (it differs by O(M/n))
    assert abs(noise_hat / np.mean((y - f) ** 2) - 1) < 0.01
    x_eval, _, f_eval = linear_data(50, seed=1)
    pred = model.predict(x_eval)
    np.testing.assert_allclose(pred.aleatoric_var, noise_hat)
    z = (pred.mean - f_eval) / np.sqrt(pred.epistemic_var)
    assert np.max(np.abs(z)) < 4.0
    # and on the training inputs the mean is as close as the posterior says
    p_tr = model.predict(x)
    assert np.mean(((p_tr.mean - f) ** 2) / p_tr.epistemic_var) < 3.0


def test_eu_and_mean_equal_a_brute_force_posterior(big_fit):
    x, y, _, model = big_fit
    x_eval = np.vstack([linear_data(20, seed=2)[0], np.full((1, 4), 3.0)])
    phi, t, phi_eval, m_y, s_y = standardised(x, y, x_eval)
    a, b = model.alpha_, model.beta_
    s_n = np.linalg.inv(a * np.eye(phi.shape[1]) + b * phi.T @ phi)
    m_n = b * s_n @ phi.T @ t
    eu = s_y ** 2 * np.einsum("ij,jk,ik->i", phi_eval, s_n, phi_eval)
    pred = model.predict(x_eval)
    np.testing.assert_allclose(pred.epistemic_var, eu, rtol=1e-10, atol=0)
    np.testing.assert_allclose(pred.mean, s_y * phi_eval @ m_n + m_y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.coef_, m_n, rtol=1e-9, atol=1e-12)


def test_the_fixed_point_maximises_the_evidence():
    x, y, _ = linear_data(300, seed=3)
    model = BayesianLinearRegression().fit(x, y)
    phi, t, _, _, _ = standardised(x, y, x[:1])
    a, b = model.alpha_, model.beta_
    at_max = log_evidence_marginal(phi, t, a, b)
    # the implementation's Bishop (3.86) form agrees with the independent marginal form
    assert model.log_evidence_ == pytest.approx(at_max, rel=1e-10)
    assert model.log_evidence(1.3 * a, 0.8 * b) == pytest.approx(
        log_evidence_marginal(phi, t, 1.3 * a, 0.8 * b), rel=1e-10)
    for fa in (0.9, 1.0, 1.1):
        for fb in (0.9, 1.0, 1.1):
            if fa == fb == 1.0:
                continue
            assert at_max > log_evidence_marginal(phi, t, fa * a, fb * b), (fa, fb)
    # the MacKay stationarity conditions hold at the fixed point
    lam = b * np.linalg.eigvalsh(phi.T @ phi)
    gamma = np.sum(lam / (a + lam))
    assert a == pytest.approx(gamma / (model.coef_ @ model.coef_), rel=1e-7)
    assert b == pytest.approx((len(t) - gamma) / np.sum((t - phi @ model.coef_) ** 2), rel=1e-7)


def test_eu_grows_with_distance_from_the_data(big_fit):
    x, _, _, model = big_fit
    centre = x.mean(axis=0)
    points = np.array([centre, centre + 0.5, centre + 2.0, centre + 10.0])
    eu = model.predict(points).epistemic_var
    assert np.all(np.diff(eu) > 0)
    assert eu[-1] > 100 * eu[0]


def test_edge_cases_do_not_break_the_fit():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(30, 3))
    x[:, 1] = 0.4  # a constant column
    y = x[:, 0] + rng.normal(0, 0.1, 30)
    pred = BayesianLinearRegression().fit(x, y).predict(x[:4])
    assert np.isfinite(pred.mean).all() and (pred.epistemic_var > 0).all()
    # a constant target: alpha runs to its bound, predictions stay finite
    pred = BayesianLinearRegression().fit(x, np.full(30, 2.0)).predict(x[:4])
    np.testing.assert_allclose(pred.mean, 2.0)
    assert np.isfinite(pred.aleatoric_var).all() and np.isfinite(pred.epistemic_var).all()
    with pytest.warns(RuntimeWarning, match="did not converge"):
        BayesianLinearRegression(max_iter=1).fit(x, y)
    with pytest.raises(ValueError, match="2-D"):
        BayesianLinearRegression().fit(x[:, 0], y)
    with pytest.raises(ValueError, match="features"):
        BayesianLinearRegression().fit(x, y).predict(x[:, :2])


def test_run_fit_with_blr_is_ok_and_deterministic():
    x, y, _ = linear_data(200, seed=6)
    r1 = run_fit("blr", {}, x, y, x[:10], random_state=0)
    r2 = run_fit("blr", {}, x, y, x[:10], random_state=1, n_threads=2)
    assert r1.ok and r2.ok and r1.config == BayesianLinearRegression.defaults
    np.testing.assert_array_equal(r1.mean, r2.mean)
    np.testing.assert_array_equal(r1.epistemic_var, r2.epistemic_var)
