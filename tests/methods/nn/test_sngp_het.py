"""Heteroscedastic SNGP (``sngp_het``): determinism, the Laplace step, SN, the toy problem."""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.evaluation.toy import toy_problem
from postrisk.methods.nn.backbone import spectral_norms
from postrisk.methods.nn.last_layer import last_layer_precision
from postrisk.methods.nn.sngp_het import (
    HeteroscedasticSNGP,
    fast_cos,
)
from postrisk.methods.registry import get_method
from postrisk.methods.runner import run_fit


@pytest.fixture(scope="module")
def toy():
    return toy_problem()


@pytest.fixture(scope="module")
def fitted(toy):
    """The toy fitted with the DEFAULT hyper-parameters (random_state 0)."""
    return HeteroscedasticSNGP(random_state=0).fit(toy.x_train, toy.y_train)


@pytest.fixture(scope="module")
def prediction(fitted, toy):
    return fitted.predict(toy.x_eval)


def test_registered_and_declared():
    assert get_method("sngp_het") is HeteroscedasticSNGP
    assert HeteroscedasticSNGP.display_name == "SNGP-Het"
    for name in ("width", "n_blocks", "sn_coeff", "ridge_penalty", "rff_lengthscale"):
        assert name in HeteroscedasticSNGP.search_space
    assert HeteroscedasticSNGP.search_space["sn_coeff"] == ("float", 0.5, 3.0, "log")


def test_output_shapes_and_signs(toy, prediction):
    m = toy.x_eval.shape[0]
    for arr in (prediction.mean, prediction.aleatoric_var, prediction.epistemic_var):
        assert arr.shape == (m,) and np.isfinite(arr).all()
    assert (prediction.aleatoric_var > 0).all() and (prediction.epistemic_var > 0).all()


def test_same_seed_identical_different_seed_differs(toy, prediction):
    again = HeteroscedasticSNGP(random_state=0).fit(toy.x_train, toy.y_train).predict(toy.x_eval)
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(again, key), getattr(prediction, key))
    other = HeteroscedasticSNGP(random_state=1).fit(toy.x_train, toy.y_train)
    assert not np.allclose(other.predict(toy.x_eval).mean, prediction.mean)


def test_fast_cos_matches_cos_and_its_derivative():
    import jax
    import jax.numpy as jnp

    z = np.concatenate([np.linspace(-50.0, 50.0, 20001), [0.0, np.pi, -np.pi, 2 * np.pi]])
    values = np.asarray(fast_cos(jnp.asarray(z, dtype=jnp.float32)), dtype=np.float64)
    np.testing.assert_allclose(values, np.cos(z), atol=5e-6)
    slope = jax.vmap(jax.grad(fast_cos))(jnp.asarray(z[:2001], dtype=jnp.float32))
    np.testing.assert_allclose(np.asarray(slope), -np.sin(z[:2001]), atol=5e-5)


def test_fitted_eu_is_the_heteroscedastic_laplace_variance(fitted, toy, prediction):
    # recompute Σ⁻¹ = λI + Σ φφᵀ/σ̃² from the fitted model's own training features
    scaler = fitted.standardizer_
    _, noise_var, phi = fitted._outputs(scaler.inputs(toy.x_train))
    precision = fitted.ridge_penalty * np.eye(phi.shape[1]) + (phi / noise_var[:, None]).T @ phi
    chol = fitted.laplace_.precision_cholesky
    np.testing.assert_allclose(chol @ chol.T, precision, rtol=1e-8, atol=1e-8)
    picks = [0, 150, 300, 450, 600]
    _, noise_eval, phi_eval = fitted._outputs(scaler.inputs(toy.x_eval[picks]))
    brute = np.array([f @ np.linalg.solve(precision, f) for f in phi_eval])
    np.testing.assert_allclose(prediction.epistemic_var[picks], scaler.y_scale ** 2 * brute,
                               rtol=1e-6)
    np.testing.assert_allclose(prediction.aleatoric_var[picks], scaler.y_scale ** 2 * noise_eval,
                               rtol=1e-6)
    # heteroscedastic weighting matters: unweighted (σ̃² = 1) gives a different answer
    assert not np.allclose(last_layer_precision(phi, np.ones_like(noise_var), 1.0), precision)


def test_spectral_norm_constrains_the_trained_backbone(fitted):
    norms = spectral_norms(fitted.spec_, fitted.params_["backbone"], fitted.state_["sn"],
                           power_iterations=3)
    assert len(norms) == 1 + 2 * fitted.n_blocks
    assert max(norms) <= fitted.sn_coeff * (1 + 1e-2)


def test_run_fit_and_input_checks(toy, fitted):
    with pytest.raises(ValueError):
        fitted.predict(np.zeros((3, 2)))
    record = run_fit("sngp_het", {"n_epochs": 5, "ridge_penalty": -1.0}, toy.x_train,
                     toy.y_train, toy.x_eval, random_state=0)
    assert record.status == "failed" and "ridge_penalty" in record.error


def test_output_weights_have_one_regulariser_the_laplace_prior():
    # NAdamW's decoupled weight decay skips β and β₀: their only regulariser is the ridge term
    # (the prior N(0, λ⁻¹I) the Laplace step assumes); everything else decays
    import jax
    import jax.numpy as jnp

    from postrisk.methods.nn.backbone import BackboneSpec
    from postrisk.methods.nn.sngp_het import init_model, weight_decay_mask
    from postrisk.methods.nn.train import nadamw

    spec = BackboneSpec(in_dim=2, width=8, depth=1, spectral_norm=True)
    params, _ = init_model(spec, 16, 1.0, 0.01, np.random.default_rng(0))
    params = {**params, "beta": jnp.ones(16), "bias": jnp.ones(())}
    optimizer = nadamw(0.1, 0.9, 0.5, decay_mask=weight_decay_mask)
    zero = jax.tree.map(jnp.zeros_like, params)
    updates, _ = optimizer.update(zero, optimizer.init(params), params)
    assert not np.any(np.asarray(updates["beta"])) and float(updates["bias"]) == 0.0
    np.testing.assert_allclose(updates["noise"]["w"], -0.1 * 0.5 * params["noise"]["w"],
                               rtol=1e-6)
    w0 = params["backbone"]["dense"][0]["w"]
    np.testing.assert_allclose(updates["backbone"]["dense"][0]["w"], -0.05 * w0, rtol=1e-6)
