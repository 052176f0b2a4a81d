"""SWAG, diagonal (``nn_swag``; paper App. C.4; Maddox et al. 2019, "A simple baseline for
Bayesian uncertainty in deep learning").

1. A random ``calibration_fraction`` = 10% of the rows is held out
   (:func:`postrisk.methods.resampling.held_out_split`); the shared network (Gaussian head) is
   trained to its MAP on the rest with the shared objective and loop, standardised on those rows.
2. SWAG phase: training continues with SGD (``swag_lr``, momentum ``swag_momentum``) for
   ``n_checkpoints`` × ``epochs_per_checkpoint`` epochs, each step's gradient first clipped to
   global norm ``swag_clip_norm`` (1, as in all network training, by default; ``None``: no
   clipping, e.g. to ablate the clip's shrinking of the iterates' spread, hence of EU; the
   threshold is traced, so every setting shares one compiled loop); after every
   ``epochs_per_checkpoint`` epochs the running means of θ and θ² are updated inside the loop
   (``train(..., moments_every=...)``): μ_SWAG = E[θ], σ²_SWAG = E[θ²] − E[θ]² (clipped at 0).
3. Prediction: ``n_samples`` draws θ_s ~ N(μ_SWAG, diag σ²_SWAG) (fixed by ``random_state``),
   each a network, reduced as members: mean = mean of the sampled means, AU = mean of the
   sampled variances, EU = variance of the sampled means.
4. Calibration: AU and EU are both multiplied by clip(MSE_cal / mean(AU_cal + EU_cal), 1e-3,
   1e3) on the held-out rows (the earlier public code's scaling), in target units.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import numpy as np

from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction
from postrisk.methods.nn.method import NeuralNetworkMethod, positive_int
from postrisk.methods.nn.network import (
    gaussian_members,
    gaussian_nll_loss,
    predict_raw,
)
from postrisk.methods.nn.train import sgd, train
from postrisk.methods.resampling import held_out_split
from postrisk.methods.scaling import as_training_data

#: Bounds of the calibration factor (the earlier public code's).
CALIBRATION_BOUNDS = (1e-3, 1e3)
#: The stream of the weight draws at prediction.
_DRAW_STREAM = 0x5A6


class NeuralSWAG(NeuralNetworkMethod):
    """Diagonal SWAG with a calibration split (module docstring). Fitted attributes: the MAP
    network's ``standardizer_``, ``spec_``, ``params_``, ``state_``, ``history_``;
    ``swag_mean_``, ``swag_var_`` (parameter pytrees), ``swag_history_``, ``calibration_rows_``,
    ``calibration_factor_``."""

    defaults: ClassVar[dict[str, Any]] = {
        "n_checkpoints": 20, "epochs_per_checkpoint": 10, "swag_lr": 0.01,
        "swag_momentum": 0.9, "swag_clip_norm": 1.0, "calibration_fraction": 0.1,
        "n_samples": 64}
    search_space: ClassVar[dict[str, tuple]] = {
        "n_checkpoints": ("int", 10, 40),
        "epochs_per_checkpoint": ("int", 2, 12),
        "swag_lr": ("float", 1e-3, 0.1, "log"),
    }
    implementation_version: ClassVar[int] = 2  # 2: swag_clip_norm setting

    def fit(self, x: np.ndarray, y: np.ndarray) -> NeuralSWAG:
        x, y = as_training_data(x, y, min_rows=3)
        n_checkpoints = positive_int(self.n_checkpoints, "n_checkpoints")
        every = positive_int(self.epochs_per_checkpoint, "epochs_per_checkpoint")
        positive_int(self.n_samples, "n_samples")
        lr, momentum = float(self.swag_lr), float(self.swag_momentum)
        try:  # checked before the MAP phase
            optimizer = sgd(lr, momentum, clip_norm=self.swag_clip_norm)
        except ValueError as error:
            raise ValueError(f"swag_clip_norm: {error}") from None
        fit_rows, cal_rows = held_out_split(len(y), float(self.calibration_fraction),
                                            self.random_state)
        self.calibration_rows_ = cal_rows
        self._fit_gaussian(x[fit_rows], y[fit_rows])
        x_std = self.standardizer_.inputs(x[fit_rows])
        y_std = self.standardizer_.target(y[fit_rows])
        key = jax.random.fold_in(jax.random.PRNGKey(self.random_state), 2)
        _, state, self.swag_history_ = train(
            gaussian_nll_loss(self.spec_), self.params_, self.state_, x_std, y_std,
            optimizer=optimizer, n_epochs=n_checkpoints * every,
            batch_size=int(self.batch_size), key=key, moments_every=every,
            label=f"{self.name}: SWAG epochs")
        moments = self.swag_history_["moments"]
        if not all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(moments)):
            raise FloatingPointError(
                f"{self.name}: the SWAG phase diverged (non-finite iterates) at swag_lr={lr}, "
                f"swag_clip_norm={self.swag_clip_norm}")
        self.swag_mean_ = jax.tree.map(lambda m: np.asarray(m, dtype=np.float64),
                                       moments["mean"])
        self.swag_var_ = jax.tree.map(
            lambda m, s: np.maximum(np.asarray(s, np.float64) - np.asarray(m, np.float64) ** 2,
                                    0.0), moments["mean"], moments["sq_mean"])
        self.swag_state_ = state
        self.calibration_factor_ = 1.0
        cal = self._uncalibrated(x[cal_rows])
        mse = float(np.mean((y[cal_rows] - cal.mean) ** 2))
        total = float(np.mean(cal.total_var))
        self.calibration_factor_ = float(np.clip(mse / total, *CALIBRATION_BOUNDS)) \
            if total > 0 else CALIBRATION_BOUNDS[1]
        return self

    def _draws(self) -> tuple[dict, dict]:
        """``n_samples`` parameter draws stacked on a member axis, and the matching state."""
        rng = np.random.default_rng([self.random_state, _DRAW_STREAM])
        n = int(self.n_samples)
        dtype = jax.dtypes.canonicalize_dtype(np.float64)
        draws = jax.tree.map(
            lambda m, v: (m[None] + np.sqrt(v)[None] * rng.standard_normal((n, *m.shape)))
            .astype(dtype), self.swag_mean_, self.swag_var_)
        state = jax.tree.map(lambda leaf: np.broadcast_to(leaf, (n, *np.shape(leaf))),
                             self.swag_state_)
        return draws, state

    def _uncalibrated(self, x: np.ndarray) -> Prediction:
        params, state = self._draws()
        raw = predict_raw(self.spec_, params, state, self._inputs(x), members=True)
        means, variances = gaussian_members(self.spec_, raw)
        prediction = reduce_members(means, variances, variance_bounds=self.variance_bounds())
        return self.standardizer_.prediction_to_target(prediction)

    def predict(self, x: np.ndarray) -> Prediction:
        pred = self._uncalibrated(x)
        factor = self.calibration_factor_
        return Prediction(mean=pred.mean, aleatoric_var=factor * pred.aleatoric_var,
                          epistemic_var=factor * pred.epistemic_var)
