"""Last-layer Laplace networks: NN-Lap and NN-Lap-SN (paper App. C.4).

The shared network (:mod:`postrisk.methods.nn.network`, Gaussian head μ̃ = wᵀφ(x),
ṽ = (softplus ρ + ε)², standardised units) is trained to its MAP on the shared Gaussian
objective. Then the mean head's last layer — its weights and bias, φ(x) = (h(x), 1) with h the
last hidden layer — gets the heteroscedastically weighted Laplace posterior of the shared module
(:mod:`postrisk.methods.nn.last_layer`):

    Λ = τI + Σᵢ φ(xᵢ)φ(xᵢ)ᵀ / v_MAP(xᵢ),    w ~ N(w_MAP, Λ⁻¹),    τ = prior_precision,

with v_MAP the MAP variance head (clipped to the variance bounds). Prediction draws
``n_samples`` = 256 weight vectors (fixed by ``random_state``); each gives a mean wₛᵀφ(x), and
the draws are reduced as members with the MAP variance head as every draw's variance:
mean = mean of the sampled means, **AU** = v_MAP(x), **EU** = variance of the sampled means
(→ φ(x)ᵀΛ⁻¹φ(x) as the draws grow), in target units.

``nn_lap_sn`` is the same method with every dense layer of the backbone spectrally normalised
(``spectral_norm=True``; ``sn_coeff`` searched log-U[0.5, 3], default 2: at c = 1 the
bi-Lipschitz residual backbone under-fits — on the 1-D toy problem the mean's RMSE on the
training support was 0.08–0.107 at c = 1 and 0.05–0.07 at c = 2, against 0.02–0.08 without
spectral normalisation).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction
from postrisk.methods.nn.last_layer import LastLayerPosterior
from postrisk.methods.nn.method import NeuralNetworkMethod, positive_int
from postrisk.methods.nn.network import gaussian_members, predict_features

#: The stream of the weight draws at prediction (distinct from the networks' seeds).
_DRAW_STREAM = 0x1A9


def with_bias(h: np.ndarray) -> np.ndarray:
    """φ = (h, 1): the last layer's inputs with the bias's constant feature."""
    return np.concatenate([h, np.ones((h.shape[0], 1))], axis=1)


class LastLayerLaplaceMethod(NeuralNetworkMethod):
    """A MAP network with a last-layer Laplace posterior (module docstring): subclasses say how
    the MAP is trained (:meth:`_fit_map`) and what the last layer's prior precision is
    (:meth:`_prior_precision`). Fitted attributes: ``standardizer_``, ``spec_``, ``params_``,
    ``state_``, ``history_``, ``laplace_`` (the last-layer posterior), ``w_map_`` (the mean
    head's weights and bias)."""

    defaults: ClassVar[dict[str, Any]] = {"n_samples": 256}

    def fit(self, x: np.ndarray, y: np.ndarray) -> LastLayerLaplaceMethod:
        positive_int(self.n_samples, "n_samples")
        self._fit_map(x, y)
        x_std = self.standardizer_.inputs(np.asarray(x, dtype=np.float64))
        h, raw = predict_features(self.spec_, self.params_, self.state_, x_std)
        _, var = gaussian_members(self.spec_, raw[None])
        noise_var = np.clip(var[0], *self.variance_bounds())
        self.laplace_ = LastLayerPosterior.from_features(with_bias(h), noise_var,
                                                         self._prior_precision(x_std))
        out = self.params_["out"]
        self.w_map_ = np.append(np.asarray(out["w"], dtype=np.float64)[:, 0],
                                float(np.asarray(out["b"])[0]))
        return self

    @abstractmethod
    def _fit_map(self, x: np.ndarray, y: np.ndarray) -> None:
        """Standardise the data and train the MAP network (sets ``standardizer_``, ``spec_``,
        ``params_``, ``state_``, ``history_``)."""

    @abstractmethod
    def _prior_precision(self, x_std: np.ndarray) -> Any:
        """The last layer's prior precision: a number τ (τI) or a (D, D) matrix."""

    def predict(self, x: np.ndarray) -> Prediction:
        h, raw = predict_features(self.spec_, self.params_, self.state_, self._inputs(x))
        _, var = gaussian_members(self.spec_, raw[None])
        rng = np.random.default_rng([self.random_state, _DRAW_STREAM])
        draws = self.laplace_.sample(self.w_map_, int(self.n_samples), rng)
        means = draws @ with_bias(h).T
        prediction = reduce_members(means, np.broadcast_to(var, means.shape),
                                    variance_bounds=self.variance_bounds())
        return self.standardizer_.prediction_to_target(prediction)


class NeuralLaplace(LastLayerLaplaceMethod):
    """NN-Lap: the shared Gaussian objective, then the Laplace posterior with prior τI."""

    defaults: ClassVar[dict[str, Any]] = {"prior_precision": 1.0}
    search_space: ClassVar[dict[str, tuple]] = {
        "prior_precision": ("float", 1e-2, 1e2, "log")}

    def _fit_map(self, x: np.ndarray, y: np.ndarray) -> None:
        """Train the MAP network (the shared Gaussian objective)."""
        if not float(self.prior_precision) > 0:
            raise ValueError(f"prior_precision must be > 0, got {self.prior_precision!r}")
        self._fit_gaussian(x, y)

    def _prior_precision(self, x_std: np.ndarray) -> Any:
        """The last layer's prior precision: τI (a number)."""
        return float(self.prior_precision)


class SpectralNeuralLaplace(NeuralLaplace):
    """:class:`NeuralLaplace` on the spectrally normalised backbone. Its default coefficient is
    2: at c = 1 the backbone under-fits (module docstring)."""

    defaults: ClassVar[dict[str, Any]] = {"spectral_norm": True, "sn_coeff": 2.0}
