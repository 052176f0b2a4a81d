"""Deep evidential regression (``nn_edl``; paper App. C.4; Amini et al. 2020).

The shared network (:mod:`postrisk.methods.nn.network`) with an evidential head: per input a
Normal–Inverse-Gamma output in standardised units, raw outputs (μ̃, a, b, c) →

    ν = softplus(a) + 1e-6,   α = softplus(b) + 1 + 1e-6,   β = softplus(c) + 1e-6

(:func:`postrisk.methods.nn.heads.evidential_head`). Trained with the shared loop on the mean
over the batch of

    NLL(ỹ | μ̃, ν, α, β) + λ·|ỹ − μ̃|·(2ν + α)

(the Student-t marginal's NLL and the evidential regulariser, :mod:`postrisk.methods.nig`;
λ = ``evidential_strength``, a traced value, so a sweep over it shares one compilation).

Prediction in target units (s_y the target's scale): mean = s_y μ̃ + m_y,
AU = s_y²·β/(α − 1) (E[σ²]), EU = s_y²·β/(ν(α − 1)) = AU/ν (Var[m]) — not proportional to AU,
since ν varies with x, but coupled to it (the paper's Section D.2).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import numpy as np

from postrisk.methods.interface import Prediction
from postrisk.methods.nig import evidential_regulariser, nig_nll_jax, nig_variances
from postrisk.methods.nn.heads import evidential_head
from postrisk.methods.nn.method import NeuralNetworkMethod
from postrisk.methods.nn.network import NetworkSpec, predict_raw, training_forward


@functools.lru_cache(maxsize=32)
def evidential_loss(spec: NetworkSpec):
    """Mean over the batch of NIG NLL + λ|ỹ − μ̃|(2ν + α), λ = the traced
    ``state["settings"]["evidential_strength"]`` (cached per spec)."""

    def loss(params: dict, state: dict, xb: jax.Array, yb: jax.Array,
             key: jax.Array) -> tuple[jax.Array, dict]:
        raw, new_state = training_forward(spec, params, state, xb, key)
        mu, nu, alpha_m1, beta = evidential_head(raw)
        alpha = 1.0 + alpha_m1
        per_point = (nig_nll_jax(yb, mu, nu, alpha, beta)
                     + state["settings"]["evidential_strength"]
                     * evidential_regulariser(yb, mu, nu, alpha))
        return per_point.mean(), new_state

    return loss


def evidential_outputs(raw: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(μ̃, ν, α, β) as float64 from raw evidential outputs (..., 4)."""
    mu, nu, alpha_m1, beta = (np.asarray(a, dtype=np.float64)
                              for a in evidential_head(np.asarray(raw)))
    return mu, nu, 1.0 + alpha_m1, beta


class NeuralEvidentialRegression(NeuralNetworkMethod):
    """One network with an evidential (NIG) head (module docstring). Fitted attributes:
    ``standardizer_``, ``spec_``, ``params_``, ``state_``, ``history_``."""

    head: ClassVar[str] = "evidential"
    defaults: ClassVar[dict[str, Any]] = {"evidential_strength": 0.1}
    search_space: ClassVar[dict[str, tuple]] = {
        "evidential_strength": ("float", 1e-3, 0.3, "log")}

    def fit(self, x: np.ndarray, y: np.ndarray) -> NeuralEvidentialRegression:
        strength = float(self.evidential_strength)
        if not strength >= 0:
            raise ValueError(f"evidential_strength must be >= 0, got {self.evidential_strength!r}")
        x_std, y_std = self._standardize(x, y)
        spec = self.spec_ = self._spec(x_std.shape[1])
        params, state = self._init(spec, None, evidential_strength=strength)
        self.params_, self.state_, self.history_ = self._train(
            spec, evidential_loss(spec), params, state, x_std, y_std)
        return self

    def predict(self, x: np.ndarray) -> Prediction:
        raw = predict_raw(self.spec_, self.params_, self.state_, self._inputs(x))[0]
        mu, nu, alpha, beta = evidential_outputs(raw)
        au, eu = nig_variances(nu, alpha, beta)
        return self.standardizer_.prediction_to_target(
            Prediction(mean=mu, aleatoric_var=au, epistemic_var=eu))
