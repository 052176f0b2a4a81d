"""The last-layer Laplace approximation of the network methods: one home for its mathematics.

A network whose mean is linear in its last-layer weights, μ̃(x) = wᵀφ(x) (+ an unpenalised
bias), with a Gaussian prior w ~ N(0, τ⁻¹I) and a heteroscedastic Gaussian likelihood with the
MAP network's noise variances v(xᵢ), has the Gaussian (generalised Gauss–Newton) posterior

    w | data ≈ N(w_MAP, Λ⁻¹),    Λ = τI + Σᵢ φ(xᵢ)φ(xᵢ)ᵀ / v(xᵢ)

(paper App. C.2 for SNGP-Het, App. C.4 for NN-Lap: "heteroscedastic weighting"). Its latent
(epistemic) variance at x is φ(x)ᵀΛ⁻¹φ(x); posterior draws of w give draws of the mean.

Everything is float64 NumPy/SciPy on the features (the features of a few thousand rows and a
last layer of ≤ 1,024 weights fit in memory):

- :func:`last_layer_precision` — Λ from features (n, D), variances (n,) and τ;
- :class:`LastLayerPosterior` — Λ's Cholesky factor with :meth:`~LastLayerPosterior.latent_variance`
  and :meth:`~LastLayerPosterior.sample` (w = w_MAP + L⁻ᵀz, z ~ N(0, I)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular


def last_layer_precision(phi: Any, noise_var: Any, prior_precision: Any) -> np.ndarray:
    """Λ = P + Σᵢ φᵢφᵢᵀ/vᵢ (float64, (D, D)) from features ``phi`` (n, D), noise variances
    ``noise_var`` (n,) > 0 and the prior precision P: a number τ > 0 (P = τI, an isotropic
    weight-space prior) or a (D, D) matrix (e.g. a function-space prior's ΦᵀK⁻¹Φ)."""
    phi = np.asarray(phi, dtype=np.float64)
    noise_var = np.asarray(noise_var, dtype=np.float64)
    if phi.ndim != 2 or noise_var.shape != (phi.shape[0],):
        raise ValueError(f"need features (n, D) and variances (n,), got {phi.shape} and "
                         f"{noise_var.shape}")
    if np.any(noise_var <= 0):
        raise ValueError("the noise variances must be > 0")
    precision = phi.T @ (phi / noise_var[:, None])
    if np.ndim(prior_precision) == 0:
        if not float(prior_precision) > 0:
            raise ValueError(f"the prior precision must be > 0, got {prior_precision!r}")
        precision[np.diag_indices_from(precision)] += float(prior_precision)
        return precision
    prior = np.asarray(prior_precision, dtype=np.float64)
    if prior.shape != precision.shape:
        raise ValueError(f"a prior precision matrix must have shape {precision.shape}, got "
                         f"{prior.shape}")
    return precision + prior


@dataclass(frozen=True)
class LastLayerPosterior:
    """N(w_MAP, Λ⁻¹) through the lower Cholesky factor L of Λ = L Lᵀ."""

    precision_cholesky: np.ndarray

    @classmethod
    def from_features(cls, phi: Any, noise_var: Any,
                      prior_precision: Any) -> LastLayerPosterior:
        """The posterior of :func:`last_layer_precision`'s Λ."""
        return cls(np.linalg.cholesky(last_layer_precision(phi, noise_var, prior_precision)))

    def latent_variance(self, phi: Any) -> np.ndarray:
        """φᵀΛ⁻¹φ for every row of ``phi`` (m, D): ‖L⁻¹φ‖²."""
        z = solve_triangular(self.precision_cholesky, np.asarray(phi, dtype=np.float64).T,
                             lower=True)
        return np.sum(z ** 2, axis=0)

    def sample(self, w_map: Any, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``n_samples`` draws (n_samples, D) of w ~ N(w_MAP, Λ⁻¹): w_MAP + L⁻ᵀz."""
        z = rng.standard_normal((self.precision_cholesky.shape[0], int(n_samples)))
        offsets = solve_triangular(self.precision_cholesky.T, z, lower=False)
        return np.asarray(w_map, dtype=np.float64)[None, :] + offsets.T
