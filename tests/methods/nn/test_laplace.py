"""The shared last-layer Laplace module: precision, latent variance and draws by brute force."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from postrisk.methods.nn.backbone import apply_backbone
from postrisk.methods.nn.last_layer import LastLayerPosterior, last_layer_precision
from postrisk.methods.nn.network import (
    NetworkSpec,
    gaussian_members,
    init_network,
    predict_features,
)


def _tiny_network_features(n: int = 9):
    """Last-layer features of a tiny network: the backbone without its out layer."""
    spec = NetworkSpec(in_dim=2, width=5, n_blocks=1)
    params, state = init_network(spec, 0)
    features_spec = dataclasses.replace(spec.backbone, out_dim=None)
    x = np.random.default_rng(1).uniform(-1, 1, (n, 2))
    phi, _ = apply_backbone(features_spec, {**params, "out": None}, state["sn"], x)
    return np.asarray(phi, dtype=np.float64)


def test_precision_is_the_heteroscedastically_weighted_gauss_newton_matrix():
    phi = _tiny_network_features()
    noise_var = np.random.default_rng(2).uniform(0.1, 2.0, len(phi))
    expected = 0.3 * np.eye(phi.shape[1])
    for i in range(len(phi)):  # τI + Σᵢ φᵢφᵢᵀ/vᵢ, one row at a time
        expected += np.outer(phi[i], phi[i]) / noise_var[i]
    np.testing.assert_allclose(last_layer_precision(phi, noise_var, 0.3), expected, rtol=1e-12)
    posterior = LastLayerPosterior.from_features(phi, noise_var, 0.3)
    queries = np.random.default_rng(3).standard_normal((4, phi.shape[1]))
    dense = np.array([q @ np.linalg.inv(expected) @ q for q in queries])
    np.testing.assert_allclose(posterior.latent_variance(queries), dense, rtol=1e-10)
    # heteroscedastic weighting matters
    assert not np.allclose(last_layer_precision(phi, np.ones_like(noise_var), 0.3), expected)


def test_draws_have_the_posterior_mean_and_covariance():
    rng = np.random.default_rng(4)
    phi = rng.standard_normal((30, 3))
    posterior = LastLayerPosterior.from_features(phi, rng.uniform(0.5, 1.5, 30), 1.0)
    w_map = np.array([0.5, -1.0, 2.0])
    draws = posterior.sample(w_map, 200_000, np.random.default_rng(5))
    covariance = np.linalg.inv(posterior.precision_cholesky @ posterior.precision_cholesky.T)
    np.testing.assert_allclose(draws.mean(axis=0), w_map, atol=5 * np.sqrt(covariance.max() / 2e5))
    np.testing.assert_allclose(np.cov(draws.T), covariance, rtol=0.02, atol=1e-4)
    # the latent variance of a query is the variance of its sampled means
    q = rng.standard_normal(3)
    assert np.var(draws @ q) == pytest.approx(posterior.latent_variance(q[None])[0], rel=0.02)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="> 0"):
        last_layer_precision(np.ones((3, 2)), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="> 0"):
        last_layer_precision(np.ones((3, 2)), np.ones(3), 0.0)
    with pytest.raises(ValueError, match="shape"):
        last_layer_precision(np.ones((3, 2)), np.ones(3), np.eye(3))
    # a matrix prior is added as it is
    prior = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(last_layer_precision(np.ones((3, 2)), np.ones(3), prior),
                               prior + 3.0)
    with pytest.raises(ValueError, match="features"):
        last_layer_precision(np.ones((3, 2)), np.ones(4), 1.0)


def test_nn_lap_eu_is_the_variance_of_sampled_last_layer_means():
    from postrisk.methods.nn.laplace import NeuralLaplace, SpectralNeuralLaplace, with_bias

    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (40, 2))
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, 40)
    settings = {"width": 8, "n_blocks": 1, "n_epochs": 3, "batch_size": 16}
    method = NeuralLaplace(random_state=1, n_samples=20_000, **settings).fit(x, y)
    # the posterior is the heteroscedastic GGN of the MAP network's own features and variances
    x_std = method.standardizer_.inputs(x)
    h, raw = predict_features(method.spec_, method.params_, method.state_, x_std)
    _, var = gaussian_members(method.spec_, raw[None])
    expected = last_layer_precision(with_bias(h), var[0], 1.0)
    chol = method.laplace_.precision_cholesky
    np.testing.assert_allclose(chol @ chol.T, expected, rtol=1e-10)
    # EU → s_y²·φᵀΛ⁻¹φ (Monte Carlo over 20,000 draws), AU = the MAP variance head
    pred = method.predict(x[:6])
    s2 = method.standardizer_.y_scale ** 2
    latent = method.laplace_.latent_variance(with_bias(h[:6]))
    np.testing.assert_allclose(pred.epistemic_var, s2 * latent, rtol=0.05)
    np.testing.assert_allclose(pred.aleatoric_var, s2 * var[0, :6], rtol=1e-6)
    np.testing.assert_array_equal(method.predict(x[:6]).epistemic_var, pred.epistemic_var)
    assert SpectralNeuralLaplace.defaults["spectral_norm"] is True
    assert SpectralNeuralLaplace.search_space["sn_coeff"] == ("float", 0.5, 3.0, "log")
