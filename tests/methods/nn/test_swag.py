"""NN-SWAG: moments from the compiled loop, draws, and the calibration scaling."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from postrisk.methods.nn import swag as swag_module
from postrisk.methods.nn.swag import CALIBRATION_BOUNDS, NeuralSWAG
from postrisk.methods.nn.train import loop_compilations, sgd, train

SMALL = {"width": 8, "n_blocks": 1, "n_epochs": 3, "batch_size": 16, "n_checkpoints": 4,
         "epochs_per_checkpoint": 2, "n_samples": 16}


def data(n: int = 60):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (n, 2))
    return x, np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, n)


@pytest.fixture(scope="module")
def small_fit() -> NeuralSWAG:
    """A small fit at the defaults (``swag_clip_norm`` 1), shared by the tests (one compilation)."""
    return NeuralSWAG(random_state=2, **SMALL).fit(*data())


def test_swag_moments_draws_and_calibration(small_fit):
    x, y = data()
    method = small_fit
    assert int(method.swag_history_["moments"]["count"]) == 4
    assert method.swag_history_["loss"].shape == (8,)
    assert len(method.calibration_rows_) == 6  # ⌊0.1·60⌋ rows held out for calibration
    variances = jax.tree.leaves(method.swag_var_)
    assert all(np.all(v >= 0) for v in variances) and any(np.any(v > 0) for v in variances)
    # the calibration factor is MSE / mean total variance on the held-out rows, clipped
    raw = method._uncalibrated(x[method.calibration_rows_])
    mse = np.mean((y[method.calibration_rows_] - raw.mean) ** 2)
    expected = np.clip(mse / np.mean(raw.total_var), *CALIBRATION_BOUNDS)
    assert method.calibration_factor_ == pytest.approx(expected, rel=1e-12)
    pred = method.predict(x)
    full = method._uncalibrated(x)
    np.testing.assert_allclose(pred.epistemic_var, expected * full.epistemic_var, rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric_var, expected * full.aleatoric_var, rtol=1e-12)
    np.testing.assert_array_equal(pred.mean, full.mean)
    assert np.all(pred.epistemic_var > 0)
    # the same random_state gives the same prediction
    again = NeuralSWAG(random_state=2, **SMALL).fit(x, y).predict(x)
    np.testing.assert_array_equal(again.epistemic_var, pred.epistemic_var)


# -- the SWAG phase's gradient clipping (swag_clip_norm) ------------------------------------
def test_swag_clip_norm_reaches_the_sgd_phase_only(monkeypatch, small_fit):
    x, y = data()
    default = small_fit
    assert default.swag_clip_norm == 1.0 and "swag_clip_norm" not in NeuralSWAG.search_space
    seen = []

    def recording_train(*args, **kwargs):
        seen.append(dict(kwargs["optimizer"].hyperparams))
        return train(*args, **kwargs)

    monkeypatch.setattr(swag_module, "train", recording_train)
    compilations = loop_compilations()
    fits = {clip: NeuralSWAG(random_state=2, swag_clip_norm=clip, **SMALL).fit(x, y)
            for clip in (1.0, 10.0, None)}
    assert loop_compilations() == compilations  # every threshold shares the compiled loop
    assert [s["clip_norm"] for s in seen] == [1.0, 10.0, math.inf]
    assert all(s["learning_rate"] == 0.01 and s["momentum"] == 0.9 for s in seen)
    # the default is the clip at 1, bit for bit
    np.testing.assert_array_equal(fits[1.0].predict(x).epistemic_var,
                                  default.predict(x).epistemic_var)
    # the MAP phase keeps the shared optimiser: the same MAP network whatever the setting
    for fit in fits.values():
        for a, b in zip(jax.tree.leaves(fit.params_), jax.tree.leaves(default.params_),
                        strict=True):
            np.testing.assert_array_equal(a, b)
    # the NLL's gradients exceed 1 here, so the SWAG iterates differ without the clip
    no_clip, clip_1 = (jax.tree.leaves(fits[c].swag_var_) for c in (None, 1.0))
    assert not all(np.array_equal(a, b) for a, b in zip(no_clip, clip_1, strict=True))
    assert np.all(np.isfinite(fits[None].predict(x).epistemic_var))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "1.0", True, [1.0]])
def test_bad_swag_clip_norm_is_refused(bad):
    x, y = data()
    with pytest.raises(ValueError, match="swag_clip_norm"):
        NeuralSWAG(swag_clip_norm=bad, **SMALL).fit(x, y)
    with pytest.raises(ValueError, match="clip_norm"):
        sgd(0.01, 0.9, clip_norm=bad)


# -- SWAG's moments on a quadratic with a known stationary SGD spread -----------------------
D, S, H = 64, 0.5, 1.0  # dimension, noise scale, curvature


def noisy_quadratic(params, state, xb, yb, key):
    """½·h·|θ − ξ|² with ξ = s·Rademacher (iid per coordinate and per step, from the step's key),
    so ∇ = h·(θ − ξ); the state keeps the largest gradient norm seen (before any clipping)."""
    theta = params["theta"]
    r = theta - S * jax.random.rademacher(key, theta.shape, dtype=theta.dtype)
    norm = H * jnp.sqrt(jnp.sum(r * r))
    return 0.5 * H * jnp.sum(r * r), {"max_grad_norm": jnp.maximum(state["max_grad_norm"], norm)}


def ar2_theory(lr: float, momentum: float, n_lags: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(stationary Var θ, autocorrelations ρ_0..ρ_{n−1}, impulse response ψ_0..ψ_{n−1}) of
    θ_{t+1} = φ₁θ_t + φ₂θ_{t−1} + a·ξ_t with a = lr·h, φ₁ = 1 + m − a, φ₂ = −m."""
    a = lr * H
    p1, p2 = 1 + momentum - a, -momentum
    var = (1 + momentum) * a * S**2 / ((1 - momentum) * (2 * (1 + momentum) - a))
    rho, psi = np.ones(n_lags), np.ones(n_lags)
    rho[1], psi[1] = p1 / (1 - p2), p1
    for j in range(2, n_lags):
        rho[j] = p1 * rho[j - 1] + p2 * rho[j - 2]
        psi[j] = p1 * psi[j - 1] + p2 * psi[j - 2]
    return var, rho, psi


def stepped_quadratic(params, state, xb, yb, key):
    """½·|θ − ξ(t)|² with a known target ξ(t) at step t (the state counts the steps)."""
    t = state["t"]
    xi = jnp.sin(0.7 * (t + 1) * jnp.arange(1, 4, dtype=params["theta"].dtype))
    return 0.5 * jnp.sum((params["theta"] - xi) ** 2), {"t": t + 1}


def test_recorded_moments_are_the_snapshots_sample_moments():
    """With lr·h = 1 and no momentum one step lands on its target, θ_{t+1} = ξ(t): the moments
    must be exactly the sample mean and mean square of ξ at the steps closing every k-th
    epoch (full batch: epoch e is step e), e = k − 1, 2k − 1, …"""
    every, n_snapshots = 3, 7
    _, _, history = train(stepped_quadratic, {"theta": jnp.zeros(3)}, {"t": jnp.zeros(())},
                          jnp.zeros((1, 1)), jnp.zeros(1), optimizer=sgd(1.0, 0.0, None),
                          n_epochs=every * n_snapshots + every - 1, batch_size=None,
                          key=jax.random.PRNGKey(0), moments_every=every)
    steps = np.arange(every - 1, every * n_snapshots, every)
    xi = np.sin(0.7 * (steps[:, None] + 1) * np.arange(1, 4))
    moments = history["moments"]
    assert int(moments["count"]) == n_snapshots
    np.testing.assert_allclose(moments["mean"]["theta"], xi.mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(moments["sq_mean"]["theta"], (xi**2).mean(axis=0), atol=1e-6)


def swag_phase(lr: float, momentum: float, clip: float | None, every: int,
               n_snapshots: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-coordinate (mean, variance) of the recorded moments, and the largest gradient norm."""
    params, state = {"theta": jnp.zeros(D)}, {"max_grad_norm": jnp.zeros(())}
    _, state, history = train(noisy_quadratic, params, state, jnp.zeros((1, 1)), jnp.zeros(1),
                              optimizer=sgd(lr, momentum, clip_norm=clip),
                              n_epochs=every * n_snapshots, batch_size=None,
                              key=jax.random.PRNGKey(0), moments_every=every)
    moments = history["moments"]
    assert int(moments["count"]) == n_snapshots
    mean = np.asarray(moments["mean"]["theta"], np.float64)
    var = np.asarray(moments["sq_mean"]["theta"], np.float64) - mean**2
    return mean, var, float(state["max_grad_norm"])


@pytest.mark.parametrize(("lr", "momentum", "every", "n_snapshots"),
                         [(0.5, 0.0, 5, 500), (0.1, 0.9, 50, 400)])
def test_swag_variance_matches_the_stationary_sgd_spread(lr, momentum, every, n_snapshots):
    """Full batch (one SGD step per epoch) on L(θ) = ½·h·|θ − ξ_t|², ξ_t iid with mean 0 and
    variance s² per coordinate. optax's heavy ball (trace_t = g_t + m·trace_{t−1},
    θ_{t+1} = θ_t − lr·trace_t, and lr·trace_{t−1} = θ_{t−1} − θ_t) makes each coordinate
    the AR(2) process θ_{t+1} = (1 + m − a)·θ_t − m·θ_{t−1} + a·ξ_t, a = lr·h, whose stationary
    variance is γ₀ = (1 − φ₂)·a²s² / ((1 + φ₂)·((1 − φ₂)² − φ₁²))
                   = (1 + m)·a·s² / ((1 − m)·(2(1 + m) − a))
    (= a·s²/(2 − a) for m = 0), with autocorrelations ρ₁ = φ₁/(1 − φ₂),
    ρ_j = φ₁ρ_{j−1} + φ₂ρ_{j−2}.

    Tolerance: the snapshots, taken every k steps, have autocorrelations ρ_{lk}; the sample
    variance of N of them has relative standard error √(2(1 + 2Σ_l ρ_{lk}²)/N) for a Gaussian
    θ, and the D coordinates are independent chains, so the mean over coordinates has that
    divided by √D: 0.79% (m = 0, k = 5, N = 500) and 0.89% (m = 0.9, k = 50, N = 400). We
    allow 4 of them. The Rademacher noise (bounded, so that the gradients are too) only lowers
    the SE: θ = a·Σ_j ψ_j·ξ_{t−j} has excess kurtosis −2·Σψ⁴/(Σψ²)² (−1.2 for m = 0, a = 0.5,
    so the SE is about √(0.8/2) ≈ 0.63 of the formula; ≈ 0 for m = 0.9, many terms). The
    biases are far smaller: the start at θ = 0 (the transient decays like |root|^{2t}:
    ≤ 1/((1 − |root|²)·N·k) relative, < 0.1%) and the estimated mean (≈ −(1 + 2Σρ_{lk})/N,
    ≈ 0.25%). The spread across the coordinates gives an SE free of these assumptions; it must
    lie within [0.4, 1.5] × the formula's (measured: 0.67 and 0.97), i.e. the snapshots are
    about as independent as claimed.
    """
    theory, rho, psi = ar2_theory(lr, momentum, n_lags=every * n_snapshots)
    lags = rho[every::every]
    se = theory * np.sqrt(2 * (1 + 2 * np.sum(lags**2)) / n_snapshots) / np.sqrt(D)
    mean, var, max_norm = swag_phase(lr, momentum, None, every, n_snapshots)
    assert abs(var.mean() - theory) < 4 * se
    assert 0.4 < (var.std(ddof=1) / np.sqrt(D)) / se < 1.5
    mean_se = np.sqrt(theory * (1 + 2 * np.sum(lags)) / n_snapshots / D)
    assert abs(mean.mean()) < 4 * mean_se

    # a threshold of 10 never binds: every gradient's norm stays below it (by construction
    # when m = 0: |θ| ≤ a·s·Σ|ψ_j| from θ₀ = 0, so |∇| ≤ h·√D·s·(1 + a·Σ|ψ_j|) = 8; recorded
    # in the loop in any case), so the iterates are exactly those without clipping
    bound = H * np.sqrt(D) * S * (1 + lr * H * np.sum(np.abs(psi)))
    assert max_norm < 10 and (momentum > 0 or bound < 10)
    mean_10, var_10, _ = swag_phase(lr, momentum, 10.0, every, n_snapshots)
    np.testing.assert_array_equal(var_10, var)
    np.testing.assert_array_equal(mean_10, mean)

    # negative control: a binding threshold (typical |∇| ≈ h·√(D·(γ₀ + s²)) ≈ 4.6–4.9) scales
    # the steps down, and with them the spread
    _, var_2, _ = swag_phase(lr, momentum, 2.0, every, n_snapshots)
    assert var_2.mean() < 0.6 * theory
