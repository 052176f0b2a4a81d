"""Direct epistemic uncertainty prediction (``nn_deup``; paper App. C.4; Lahlou et al. 2021).

Two networks, both the shared one (:mod:`postrisk.methods.nn.network`):

1. The **main network** m(x) (Gaussian head, the shared Gaussian objective) is trained on a
   random ``1 − held_out_fraction`` of the rows (:func:`postrisk.methods.resampling.
   held_out_errors`); the data are standardised with those rows' statistics only, so nothing
   of the held-out rows reaches it. Its mean is the prediction.
2. Its squared errors at the held-out rows V, e_i = (y_i − m(x_i))², give the aleatoric
   variance, one number for every x (the paper's estimator):

       AU = (1/|V|) Σ_{i∈V} (y_i − m(x_i))².

3. The **error network** e(x) (same architecture, one non-negative output softplus(r)) is
   trained for ``error_epochs`` epochs on (x_i, e_i), i ∈ V, by mean squared error, and

       EU(x) = max(e(x) − AU, 0)   (:func:`deup_epistemic`):

   the predicted total error minus its aleatoric part.

All in standardised units, mapped back to target units (variances times s_y²). The error
network uses the main network's optimiser settings and its own seeds (stream 1).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import numpy as np

from postrisk.methods.interface import Prediction
from postrisk.methods.nn.heads import positive_head
from postrisk.methods.nn.method import NeuralNetworkMethod, positive_int
from postrisk.methods.nn.network import NetworkSpec, predict_raw, training_forward
from postrisk.methods.resampling import held_out_errors
from postrisk.methods.scaling import as_training_data


def deup_epistemic(predicted_error: Any, aleatoric_var: Any) -> np.ndarray:
    """EU = max(e(x) − AU, 0): the predicted squared error less the aleatoric variance."""
    return np.maximum(np.asarray(predicted_error, dtype=np.float64)
                      - np.asarray(aleatoric_var, dtype=np.float64), 0.0)


@functools.lru_cache(maxsize=32)
def squared_error_loss(spec: NetworkSpec):
    """Mean over the batch of (softplus(r(x)) − e)², the error network's objective."""

    def loss(params: dict, state: dict, xb: jax.Array, yb: jax.Array,
             key: jax.Array) -> tuple[jax.Array, dict]:
        raw, new_state = training_forward(spec, params, state, xb, key)
        return ((positive_head(raw) - yb) ** 2).mean(), new_state

    return loss


class NeuralDEUP(NeuralNetworkMethod):
    """DEUP with a held-out error set (module docstring). Fitted attributes: the main network's
    ``standardizer_``, ``spec_``, ``params_``, ``state_``, ``history_``; ``held_out_``
    (:class:`~postrisk.methods.resampling.HeldOutErrors`: ``fit_rows``, ``held_rows``,
    squared errors in target units); ``aleatoric_var_`` (target units); the error network's
    ``error_spec_``, ``error_params_``, ``error_state_``, ``error_history_``."""

    defaults: ClassVar[dict[str, Any]] = {"held_out_fraction": 0.2, "error_epochs": 100}

    def fit(self, x: np.ndarray, y: np.ndarray) -> NeuralDEUP:
        x, y = as_training_data(x, y, min_rows=3)
        error_epochs = positive_int(self.error_epochs, "error_epochs")

        def fit_predict(x_fit: np.ndarray, y_fit: np.ndarray, x_held: np.ndarray) -> np.ndarray:
            self._fit_gaussian(x_fit, y_fit)  # the main network, on the fit rows only
            return self._predict_gaussian(x_held).mean

        self.held_out_ = held = held_out_errors(fit_predict, x, y,
                                                float(self.held_out_fraction),
                                                self.random_state)
        self.aleatoric_var_ = held.mse
        scale2 = self.standardizer_.y_scale ** 2
        x_held = self._inputs(x[held.held_rows])
        spec = self.error_spec_ = self._spec(x.shape[1], head="positive")
        params, state = self._init(spec, None, stream=1)
        self.error_params_, self.error_state_, self.error_history_ = self._train(
            spec, squared_error_loss(spec), params, state, x_held,
            held.squared_errors / scale2, n_epochs=error_epochs, stream=1,
            label=f"{self.name}: error network epochs")
        return self

    def predicted_error(self, x: np.ndarray) -> np.ndarray:
        """e(x): the error network's predicted squared error, in target units."""
        raw = predict_raw(self.error_spec_, self.error_params_, self.error_state_,
                          self._inputs(x))[0]
        return self.standardizer_.var_to_target(np.asarray(positive_head(raw),
                                                           dtype=np.float64))

    def predict(self, x: np.ndarray) -> Prediction:
        mean = self._predict_gaussian(x).mean
        au = np.full(mean.shape, self.aleatoric_var_)
        return Prediction(mean=mean, aleatoric_var=au,
                          epistemic_var=deup_epistemic(self.predicted_error(x), au))
