"""NN-SWAG: moments from the compiled loop, draws, and the calibration scaling."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from postrisk.methods.nn.swag import CALIBRATION_BOUNDS, NeuralSWAG

SMALL = {"width": 8, "n_blocks": 1, "n_epochs": 3, "batch_size": 16, "n_checkpoints": 4,
         "epochs_per_checkpoint": 2, "n_samples": 16}


def data(n: int = 60):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (n, 2))
    return x, np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, n)


def test_swag_moments_draws_and_calibration():
    x, y = data()
    method = NeuralSWAG(random_state=2, **SMALL).fit(x, y)
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
