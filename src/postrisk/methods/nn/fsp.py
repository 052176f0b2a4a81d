"""FSP-Laplace: NN-FSP and NN-FSP-SN (paper App. C.4; Cinquin et al. 2024, "FSP-Laplace:
function-space priors for the Laplace approximation in Bayesian deep learning").

A Gaussian-process prior on the network's mean function, in standardised units,

    k(x, x') = ½·Matérn-3/2(x, x'; ℓ = 1) + ½·(x·x')/d      (:func:`prior_kernel`;
               prior variance ≈ Var(ỹ) = 1 on standardised inputs),

enters twice:

1. **Training** (the shared loop and NAdamW): each step adds to the mean Gaussian NLL of the
   batch the function-space regulariser on ``n_context`` = 64 context points C drawn afresh
   from the training inputs,

       (c/n)·½ μ̃(C)ᵀ K_CC⁻¹ μ̃(C)      (:func:`context_regulariser`; prior mean 0),

   i.e. the paper's n·(mean batch loss) + ½(μ(C) − m(C))ᵀK_CC⁻¹(μ(C) − m(C)) divided by n;
   c = ``context_weight`` (1; 0 gives plain MAP training, tested).
2. **The posterior**: the last-layer Laplace of :mod:`postrisk.methods.nn.laplace` with the
   function-space prior's precision in place of τI: with Φ_Z the last-layer features (h, 1) at
   ``n_laplace_context`` = 256 scrambled Halton points Z in the training inputs' bounding box,

       Λ = Φ_Zᵀ K_ZZ⁻¹ Φ_Z + 1e-6·I + Σᵢ φ(xᵢ)φ(xᵢ)ᵀ / v_MAP(xᵢ),

   (the GP prior on the mean function, pulled back to the last layer's weights), then
   ``n_samples`` = 256 weight draws reduced as in NN-Lap (AU = the MAP variance head).

``nn_fsp_sn``: the same on the spectrally normalised backbone (``sn_coeff`` default 2, searched
log-U[0.5, 3]).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import qmc

from postrisk.gp.kernels import kernel_component
from postrisk.methods.nn.heads import gaussian_head, pointwise_gaussian_nll
from postrisk.methods.nn.laplace import LastLayerLaplaceMethod, with_bias
from postrisk.methods.nn.network import (
    NetworkSpec,
    forward,
    predict_features,
    training_forward,
)

#: Jitter added to K_CC / K_ZZ (the kernel has unit scale) and the isotropic floor of the
#: function-space prior precision.
KERNEL_JITTER = 1e-6


def prior_kernel(x1: Any, x2: Any) -> jax.Array:
    """k(x, x') = ½ Matérn-3/2(ℓ = 1) + ½ x·x'/d on standardised inputs (jnp, jit-able)."""
    d = x1.shape[-1]
    matern = kernel_component("matern32", {"lengthscale": jnp.ones(d, x1.dtype)}, x1, x2,
                              "exact")
    # the linear component is centred at ½: shifting both inputs by ½ gives x·x'/d
    linear = kernel_component("linear", {"variance": jnp.full(d, 1.0 / d, x1.dtype)},
                              x1 + 0.5, x2 + 0.5, "exact")
    return 0.5 * matern + 0.5 * linear


def context_regulariser(mean_c: jax.Array, k_cc: jax.Array) -> jax.Array:
    """½ μᵀ(K + εI)⁻¹μ by Cholesky (ε = :data:`KERNEL_JITTER`)."""
    chol = jnp.linalg.cholesky(k_cc + KERNEL_JITTER * jnp.eye(k_cc.shape[0], dtype=k_cc.dtype))
    z = jax.scipy.linalg.solve_triangular(chol, mean_c, lower=True)
    return 0.5 * jnp.sum(z * z)


@functools.lru_cache(maxsize=32)
def fsp_loss(spec: NetworkSpec, n_context: int):
    """Mean Gaussian NLL of the batch + (c/n)·½μ̃(C)ᵀK_CC⁻¹μ̃(C), C = ``n_context`` rows of
    ``state["context_pool"]`` drawn without replacement each step (c and n traced in
    ``state["settings"]``)."""

    def loss(params: dict, state: dict, xb: jax.Array, yb: jax.Array,
             key: jax.Array) -> tuple[jax.Array, dict]:
        raw, new_state = training_forward(spec, params, state, xb, key)
        mean, var = gaussian_head(raw)
        nll = pointwise_gaussian_nll(mean, var, yb).mean()
        pool = state["context_pool"]
        rows = jax.random.permutation(jax.random.fold_in(key, 1), pool.shape[0])[:n_context]
        context = pool[rows]
        raw_c, _ = forward(spec, params, new_state, context)
        settings = state["settings"]
        reg = context_regulariser(raw_c[:, 0], prior_kernel(context, context))
        return nll + settings["context_weight"] * reg / settings["n_train"], new_state

    return loss


class NeuralFSP(LastLayerLaplaceMethod):
    """FSP-Laplace on the last layer (module docstring)."""

    defaults: ClassVar[dict[str, Any]] = {"context_weight": 1.0, "n_context": 64,
                                              "n_laplace_context": 256}

    def _fit_map(self, x: np.ndarray, y: np.ndarray) -> None:
        if not float(self.context_weight) >= 0:
            raise ValueError(f"context_weight must be >= 0, got {self.context_weight!r}")
        x_std, y_std = self._standardize(x, y)
        n = x_std.shape[0]
        spec = self.spec_ = self._spec(x_std.shape[1])
        params, state = self._init(spec, None, context_weight=float(self.context_weight),
                                   n_train=float(n))
        state = {**state, "context_pool": jnp.asarray(x_std)}
        n_context = min(int(self.n_context), n)
        self.params_, state, self.history_ = self._train(
            spec, fsp_loss(spec, n_context), params, state, x_std, y_std)
        self.state_ = {key: value for key, value in state.items() if key != "context_pool"}

    def _prior_precision(self, x_std: np.ndarray) -> np.ndarray:
        """Φ_Zᵀ K_ZZ⁻¹ Φ_Z + εI at Halton points Z in the training inputs' bounding box."""
        low, high = x_std.min(axis=0), x_std.max(axis=0)
        halton = qmc.Halton(d=x_std.shape[1], scramble=True, seed=self.random_state)
        z = qmc.scale(halton.random(int(self.n_laplace_context)), low,
                      np.where(high > low, high, low + 1.0))
        h, _ = predict_features(self.spec_, self.params_, self.state_, z)
        phi = with_bias(h)
        k_zz = np.asarray(prior_kernel(jnp.asarray(z), jnp.asarray(z)), dtype=np.float64)
        chol = np.linalg.cholesky(k_zz + KERNEL_JITTER * np.eye(len(z)))
        root = np.linalg.solve(chol, phi)  # L⁻¹Φ: ΦᵀK⁻¹Φ = rootᵀ root
        return root.T @ root + KERNEL_JITTER * np.eye(phi.shape[1])


class SpectralNeuralFSP(NeuralFSP):
    """:class:`NeuralFSP` on the spectrally normalised backbone (coefficient 2 by default, as
    NN-Lap-SN)."""

    defaults: ClassVar[dict[str, Any]] = {"spectral_norm": True, "sn_coeff": 2.0}
