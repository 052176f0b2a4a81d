"""The ``vlgp`` method: the bound's closed forms, AU behaviour, determinism, target units and the
toy problem (docs/design.md, "Toy problem")."""

import math

import jax
import numpy as np
import pytest
import scipy.stats

from postrisk.methods.interface import validate_search_space
from postrisk.methods.vlgp import VariationalHeteroscedasticGP, expected_log_likelihood, whitened_kl


def test_declared_interface():
    cls = VariationalHeteroscedasticGP
    assert cls.name == "vlgp" and cls.display_name == "VLGP"
    validate_search_space(cls.search_space, cls.defaults)
    assert cls.search_space["nu"] == ("categorical", [0.5, 1.5, 2.5])


def test_expected_log_likelihood_matches_monte_carlo():
    rng = np.random.default_rng(0)
    k, draws = 6, 400_000
    y, m_f, m_g = rng.normal(size=k), rng.normal(size=k), rng.normal(-1.0, 0.5, size=k)
    v_f, v_g = rng.uniform(0.05, 1.0, k), rng.uniform(0.05, 0.8, k)
    with jax.enable_x64(True):
        exact = np.asarray(expected_log_likelihood(y, m_f, v_f, m_g, v_g))
    f = m_f + np.sqrt(v_f) * rng.standard_normal((draws, k))
    g = m_g + np.sqrt(v_g) * rng.standard_normal((draws, k))
    logp = scipy.stats.norm.logpdf(y, loc=f, scale=np.exp(0.5 * g))
    se = logp.std(axis=0) / math.sqrt(draws)
    assert np.all(np.abs(logp.mean(axis=0) - exact) < 5 * se), (logp.mean(axis=0), exact, se)


def test_whitened_kl_matches_the_brute_force_kl():
    """KL(q(v) ‖ N(0, I)) with v whitened equals KL(q(u) ‖ N(0, K)) for u = L_K v."""
    rng = np.random.default_rng(1)
    m = 7
    a = rng.normal(size=(m, m))
    kmat = a @ a.T + 0.5 * np.eye(m)
    lk = np.linalg.cholesky(kmat)
    q_mu = rng.normal(size=m)
    lq = np.tril(rng.normal(size=(m, m)), -1) + np.diag(rng.uniform(0.2, 1.5, m))
    mu_u, s_u = lk @ q_mu, lk @ lq @ lq.T @ lk.T
    kinv = np.linalg.inv(kmat)
    brute = 0.5 * (np.trace(kinv @ s_u) + mu_u @ kinv @ mu_u - m
                   + np.linalg.slogdet(kmat)[1] - np.linalg.slogdet(s_u)[1])
    with jax.enable_x64(True):
        got = float(whitened_kl(q_mu, lq))
    assert abs(got - brute) < 1e-10 * max(1.0, abs(brute))


def _data(rng, n, noise_sd):
    x = rng.uniform(-1, 1, size=(n, 2))
    f = np.sin(2.5 * x[:, 0]) + 0.5 * x[:, 1]
    return x, f, f + noise_sd(x) * rng.standard_normal(n)


FAST = {"num_iters": 500, "num_inducing": 32}


def test_homoscedastic_data_give_a_flat_au_near_the_noise():
    rng = np.random.default_rng(2)
    x, _, y = _data(rng, 300, lambda x: np.full(x.shape[0], 0.2))
    x_eval = rng.uniform(-1, 1, size=(200, 2))
    pred = VariationalHeteroscedasticGP(**FAST).fit(x, y).predict(x_eval)
    au = pred.aleatoric_var
    assert au.max() / au.min() < 1.5, (au.min(), au.max())
    assert abs(np.median(au) / 0.04 - 1) < 0.3, np.median(au)
    assert np.all(pred.epistemic_var > 0)


@pytest.fixture(scope="module")
def hetero():
    rng = np.random.default_rng(3)

    def sd(x):
        return 0.05 + 0.4 * (x[:, 0] + 1) / 2

    x, _, y = _data(rng, 300, sd)
    x_eval = rng.uniform(-1, 1, size=(200, 2))
    pred = VariationalHeteroscedasticGP(**FAST).fit(x, y).predict(x_eval)
    return x, y, x_eval, sd(x_eval) ** 2, pred


def test_heteroscedastic_data_au_tracks_the_noise(hetero):
    *_, true_var, pred = hetero
    assert scipy.stats.spearmanr(pred.aleatoric_var, true_var)[0] > 0.8
    assert abs(np.median(pred.aleatoric_var / true_var) - 1) < 0.4


def test_determinism_and_target_units(hetero):
    x, y, x_eval, _, pred = hetero
    again = VariationalHeteroscedasticGP(**FAST).fit(x, y).predict(x_eval)
    for k in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(again, k), getattr(pred, k))
    # y → 4y is exact in floating point (a power of two): the same fit, exactly rescaled
    four = VariationalHeteroscedasticGP(**FAST).fit(x, 4 * y).predict(x_eval)
    np.testing.assert_allclose(four.mean, 4 * pred.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(four.aleatoric_var, 16 * pred.aleatoric_var, rtol=1e-12)
    np.testing.assert_allclose(four.epistemic_var, 16 * pred.epistemic_var, rtol=1e-12)
    # y → 10y + 3 changes the standardised target by rounding only, which Adam does not
    # reproduce bit for bit: equal within the optimisation noise
    scaled = VariationalHeteroscedasticGP(**FAST).fit(x, 10 * y + 3).predict(x_eval)
    sd = np.sqrt(pred.total_var)
    assert np.max(np.abs(scaled.mean - (10 * pred.mean + 3)) / (10 * sd)) < 0.2
    assert np.median(np.abs(scaled.aleatoric_var / (100 * pred.aleatoric_var) - 1)) < 0.1
    assert np.median(np.abs(scaled.epistemic_var / (100 * pred.epistemic_var) - 1)) < 0.2
    other = VariationalHeteroscedasticGP(random_state=1, **FAST).fit(x, y).predict(x_eval)
    assert not np.array_equal(other.mean, pred.mean)  # the inducing subset follows the seed


def test_all_rows_are_inducing_points_when_n_is_small():
    rng = np.random.default_rng(4)
    x, _, y = _data(rng, 20, lambda x: np.full(x.shape[0], 0.1))
    model = VariationalHeteroscedasticGP(num_iters=20, num_inducing=32).fit(x, y)
    np.testing.assert_array_equal(model.params_["z"], model._inputs(x))


def test_bad_input_raises():
    x, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ValueError, match="non-finite"):
        VariationalHeteroscedasticGP().fit(x, np.full(10, np.inf))
    with pytest.raises(ValueError, match="nu must be"):
        VariationalHeteroscedasticGP(nu=3.5).fit(x, y)
    with pytest.raises(ValueError, match="num_inducing"):
        VariationalHeteroscedasticGP(num_inducing=0).fit(x, y)
    with pytest.raises(RuntimeError, match="fit"):
        VariationalHeteroscedasticGP().predict(x)


def test_the_plug_in_ablation_reports_exp_m_g_from_the_same_fit(hetero):
    from postrisk.methods.vlgp import PlugInNoiseVLGP

    x, y, x_eval, _, pred = hetero
    plug = PlugInNoiseVLGP(**FAST).fit(x, y).predict(x_eval)
    np.testing.assert_array_equal(plug.mean, pred.mean)  # the same fit
    np.testing.assert_array_equal(plug.epistemic_var, pred.epistemic_var)
    # reported / plug-in = exp(v_g/2) ≥ 1, > 1 where the noise process is uncertain
    ratio = pred.aleatoric_var / plug.aleatoric_var
    assert np.all(ratio >= 1.0) and np.max(ratio) > 1.0 + 1e-6
