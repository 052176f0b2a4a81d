"""NN-FSP: the function-space regulariser by brute force, weight 0 = plain MAP training, and the
function-space prior precision of the last layer."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import qmc

from postrisk.methods.nn.fsp import (
    KERNEL_JITTER,
    NeuralFSP,
    context_regulariser,
    fsp_loss,
    prior_kernel,
)
from postrisk.methods.nn.laplace import NeuralLaplace, with_bias
from postrisk.methods.nn.network import NetworkSpec, init_network, predict_features, predict_raw

SMALL = {"width": 8, "n_blocks": 1, "n_epochs": 3, "batch_size": 16}


def data(n: int = 50):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (n, 2))
    return x, np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, n)


def matern32(r):
    return (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)


def test_prior_kernel_and_regulariser_by_brute_force():
    rng = np.random.default_rng(1)
    c = rng.standard_normal((6, 3))
    k = np.array([[0.5 * matern32(np.linalg.norm(a - b)) + 0.5 * (a @ b) / 3 for b in c]
                  for a in c])
    got = np.asarray(prior_kernel(jnp.asarray(c), jnp.asarray(c)), dtype=np.float64)
    np.testing.assert_allclose(got, k, rtol=1e-5, atol=1e-6)
    mean = rng.standard_normal(6)
    dense = 0.5 * mean @ np.linalg.solve(k + KERNEL_JITTER * np.eye(6), mean)
    with jax.enable_x64(True):
        value = context_regulariser(jnp.asarray(mean), jnp.asarray(k))
    assert abs(float(value) / dense - 1) < 1e-9


def test_the_training_loss_adds_the_regulariser_on_context_rows():
    x, y = data(n=20)
    spec = NetworkSpec(in_dim=2, width=8, n_blocks=1)
    params, state = init_network(spec, 0, context_weight=2.0, n_train=20.0)
    state = {**state, "context_pool": jnp.asarray(x, dtype=jnp.float32)}
    key = jax.random.PRNGKey(3)
    loss, _ = fsp_loss(spec, 20)(params, state, x, y, key)  # all 20 rows are the context
    raw = predict_raw(spec, params, state, x)[0]
    mean, sd = raw[:, 0], np.logaddexp(0, raw[:, 1]) + 1e-3
    nll = np.mean(0.5 * np.log(2 * np.pi * sd ** 2) + (y - mean) ** 2 / (2 * sd ** 2))
    k = np.asarray(prior_kernel(jnp.asarray(x), jnp.asarray(x)), dtype=np.float64)
    reg = 0.5 * mean @ np.linalg.solve(k + KERNEL_JITTER * np.eye(20), mean)
    assert abs(float(loss) - (nll + 2.0 * reg / 20)) < 1e-3 * (nll + 2.0 * reg / 20)


def test_weight_zero_is_plain_map_training_and_the_prior_is_function_space():
    x, y = data()
    fsp = NeuralFSP(random_state=2, context_weight=0.0, n_samples=8, **SMALL).fit(x, y)
    lap = NeuralLaplace(random_state=2, n_samples=8, **SMALL).fit(x, y)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 fsp.params_, lap.params_)
    # the last layer's prior precision is Φ_Zᵀ K_ZZ⁻¹ Φ_Z + εI at the Halton points
    x_std = fsp.standardizer_.inputs(x)
    z = qmc.scale(qmc.Halton(d=2, scramble=True, seed=2).random(256), x_std.min(axis=0),
                  x_std.max(axis=0))
    phi = with_bias(predict_features(fsp.spec_, fsp.params_, fsp.state_, z)[0])
    k = np.asarray(prior_kernel(jnp.asarray(z), jnp.asarray(z)), dtype=np.float64)
    expected = phi.T @ np.linalg.solve(k + KERNEL_JITTER * np.eye(256), phi)
    got = fsp._prior_precision(x_std) - KERNEL_JITTER * np.eye(phi.shape[1])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6 * np.abs(expected).max())
    pred = fsp.predict(x)
    assert np.all(pred.epistemic_var > 0) and np.all(np.isfinite(pred.mean))
