"""Heteroscedastic SNGP (``sngp_het``; paper App. C.2; Liu et al. 2020, Fortuin et al. 2022).

Model, in standardised units (inputs x̃ and target ỹ by :class:`Standardizer`):

- h(x) — the shared residual backbone (:mod:`postrisk.methods.nn.backbone`) with spectral
  normalisation of every dense layer (‖W‖₂ ≤ ``sn_coeff``), so h is distance-preserving;
- φ(h) = sqrt(2/D)·cos(W h/ℓ + b) — D = ``num_random_features`` random Fourier features of an
  RBF kernel with lengthscale ℓ = ``rff_lengthscale`` (W ~ N(0, I), b ~ U[0, 2π), fixed);
- mean μ̃(x) = βᵀφ + β₀ (β₀ an unpenalised bias);
- noise σ̃²(x) = (softplus(ρ(x)) + ε)², ρ(x) = a linear head on h (:func:`gaussian_head`).

Training (shared loop and NAdamW): the mean-over-batch Gaussian NLL of ỹ under N(μ̃, σ̃²) plus
the ridge penalty (λ/2)‖β‖²/n (λ = ``ridge_penalty``), i.e. (1/n)·the negative log posterior
of β under the prior β ~ N(0, λ⁻¹I). That prior is the output weights' only regulariser:
NAdamW's decoupled weight decay applies to the backbone and the noise head, not to β and β₀
(:func:`weight_decay_mask`), so the Laplace step's prior precision is exactly λ.

Laplace step (after training, one pass over the training set, float64; the shared last-layer
Laplace module :mod:`postrisk.methods.nn.last_layer`): Σ⁻¹ = λI + Σᵢ φᵢφᵢᵀ/σ̃²(xᵢ)
(heteroscedastic weighting, as the paper states), Σ by Cholesky.

Prediction in target units: mean = s_y μ̃ + m_y, AU = s_y² σ̃²(x), EU = s_y² φ(x)ᵀΣφ(x); the
spectral norms at prediction use 3 refinement power-iteration steps from the persistent vectors.

``random_state`` seeds initialisation, random features and minibatch order (same seed ⇒
identical predictions). ``n_threads`` is not used by JAX (its CPU threads are process-wide).
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.nn.backbone import (
    SHARED_DEFAULTS,
    SHARED_SEARCH_SPACE,
    BackboneSpec,
    apply_backbone,
    init_backbone,
)
from postrisk.methods.nn.heads import gaussian_head, pointwise_gaussian_nll
from postrisk.methods.nn.last_layer import LastLayerPosterior
from postrisk.methods.nn.train import nadamw, train
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)

#: Power-iteration refinement steps of the spectral norms at prediction (paper).
PREDICT_POWER_ITERATIONS = 3
#: Rows per block when features are computed (the last block is zero-padded, so prediction
#: compiles once per backbone, whatever the number of rows).
_BLOCK_ROWS = 1024


_TWO_PI = 2.0 * math.pi
#: Taylor coefficients of cos up to r¹⁶ (truncation error < 2e-7 on [−π, π]).
_COS_COEFFS = tuple((-1) ** k / math.factorial(2 * k) for k in range(9))


# -- the model (pure functions) --------------------------------------------------------------
def fast_cos(z: jax.Array) -> jax.Array:
    """cos(z) by reduction to r ∈ [−π, π] and a degree-16 polynomial in r (Horner in r²).

    XLA's CPU ``cos`` is ~10× slower than this (and dominated the training step with
    D = 1024 random features); in float32 the error is ≲ 1e-6 for |z| ≲ 50, growing like
    |z|·2⁻²⁴ from the range reduction. Differentiable (the derivative is the polynomial's).
    """
    r = z - _TWO_PI * jnp.round(z / _TWO_PI)
    r2 = r * r
    acc = jnp.full_like(r, _COS_COEFFS[-1])
    for coeff in _COS_COEFFS[-2::-1]:
        acc = acc * r2 + coeff
    return acc


def random_fourier_features(h: jax.Array, rff_w: jax.Array, rff_b: jax.Array) -> jax.Array:
    """φ = sqrt(2/D)·cos(h W + b) for ``h`` (..., width), ``W`` (width, D) (already divided by
    the lengthscale) and ``b`` (D,); cos by :func:`fast_cos`."""
    d = rff_w.shape[1]
    return jnp.sqrt(2.0 / d) * fast_cos(h @ rff_w + rff_b)


def sngp_outputs(spec: BackboneSpec, params: dict, state: dict, x: jax.Array, *,
                 train_mode: bool, key: jax.Array | None = None,
                 power_iterations: int = 1) -> tuple[jax.Array, jax.Array, jax.Array, dict]:
    """(μ̃, σ̃², φ, new state) at standardised inputs ``x`` (rows, d)."""
    h, sn_state = apply_backbone(spec, params["backbone"], state["sn"], x,
                                 dropout_key=key if train_mode else None, update_sn=train_mode,
                                 power_iterations=power_iterations)
    phi = random_fourier_features(h, state["rff_w"], state["rff_b"])
    mean = phi @ params["beta"] + params["bias"]
    rho = h @ params["noise"]["w"] + params["noise"]["b"]
    _, var = gaussian_head(jnp.stack([mean, rho], axis=-1))
    return mean, var, phi, {**state, "sn": sn_state}


def init_model(spec: BackboneSpec, n_features: int, lengthscale: float, ridge_over_n: float,
               rng: np.random.Generator) -> tuple[dict, dict]:
    """Initial parameters and state, drawn with NumPy (no compilation): the backbone
    (:func:`init_backbone`), β = 0, β₀ = 0, the noise head ρ = hᵀw + b with w ~ N(0, 1/width),
    b = 0; the fixed random features W/ℓ (W ~ N(0, I)) and b ~ U[0, 2π); the ridge weight."""
    backbone, sn_state = init_backbone(spec, rng)
    width = spec.feature_dim
    params = {
        "backbone": backbone,
        "beta": np.zeros((n_features,), np.float32),
        "bias": np.zeros((), np.float32),
        "noise": {"w": (rng.standard_normal(width) / np.sqrt(width)).astype(np.float32),
                  "b": np.zeros((), np.float32)},
    }
    state = {
        "sn": sn_state,
        "rff_w": (rng.standard_normal((width, n_features)) / lengthscale).astype(np.float32),
        "rff_b": rng.uniform(0.0, 2.0 * np.pi, n_features).astype(np.float32),
        "ridge_over_n": np.float32(ridge_over_n),
    }
    return jax.tree.map(jnp.asarray, (params, state))


def weight_decay_mask(params: dict) -> dict:
    """True where NAdamW's weight decay applies: everywhere but the output weights β and the
    bias β₀ (β's regulariser is the ridge term, the prior of the Laplace step)."""
    mask = jax.tree.map(lambda _: True, params)
    return {**mask, "beta": False, "bias": False}


@functools.lru_cache(maxsize=32)
def _loss_fn(spec: BackboneSpec):
    """The per-batch loss for a backbone spec (cached so the jitted loop is reused)."""

    def loss(params: dict, state: dict, xb: jax.Array, yb: jax.Array,
             key: jax.Array) -> tuple[jax.Array, dict]:
        mean, var, _, new_state = sngp_outputs(spec, params, state, xb, train_mode=True,
                                               key=key)
        ridge = 0.5 * state["ridge_over_n"] * jnp.sum(params["beta"] ** 2)
        return pointwise_gaussian_nll(mean, var, yb).mean() + ridge, new_state

    return loss


@functools.partial(jax.jit, static_argnames=("spec",))
def _predict_outputs(spec: BackboneSpec, params: dict, state: dict,
                     x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    mean, var, phi, _ = sngp_outputs(spec, params, state, x, train_mode=False,
                                     power_iterations=PREDICT_POWER_ITERATIONS)
    return mean, var, phi


class HeteroscedasticSNGP(UncertaintyMethod):
    """SNGP with a heteroscedastic noise head and a heteroscedastically weighted Laplace step
    (module docstring). Fitted attributes: ``standardizer_``, ``params_``, ``state_``,
    ``spec_``, ``laplace_`` (the last-layer posterior, :class:`LastLayerPosterior`: Σ⁻¹'s lower
    Cholesky factor), ``history_``."""

    #: 2: one regulariser on the output weights (no weight decay on β, β₀); random biases.
    implementation_version: ClassVar[int] = 2
    defaults: ClassVar[dict[str, Any]] = {
        **SHARED_DEFAULTS,
        "sn_coeff": 1.0,
        "num_random_features": 1024,
        "ridge_penalty": 1.0,
        "rff_lengthscale": 1.0,
    }
    search_space: ClassVar[dict[str, tuple]] = {
        **SHARED_SEARCH_SPACE,
        "sn_coeff": ("float", 0.5, 3.0, "log"),
        "ridge_penalty": ("float", 0.01, 100.0, "log"),
        "rff_lengthscale": ("float", 0.1, 10.0, "log"),
    }

    def _spec(self, in_dim: int) -> BackboneSpec:
        return BackboneSpec(in_dim=in_dim, width=int(self.width), depth=int(self.n_blocks),
                            residual=True, activation=str(self.activation),
                            spectral_norm=True, sn_coeff=float(self.sn_coeff))

    def fit(self, x: np.ndarray, y: np.ndarray) -> HeteroscedasticSNGP:
        x, y = as_training_data(x, y)
        n, d = x.shape
        ridge = float(self.ridge_penalty)
        n_features = int(self.num_random_features)
        if not ridge > 0 or not float(self.rff_lengthscale) > 0 or n_features < 1:
            raise ValueError("ridge_penalty and rff_lengthscale must be > 0 and "
                             "num_random_features >= 1")
        self.standardizer_ = scaler = Standardizer.fit(x, y)
        x_std = scaler.inputs(x).astype(np.float32)
        y_std = scaler.target(y).astype(np.float32)
        spec = self.spec_ = self._spec(d)

        rng = np.random.default_rng(self.random_state)
        params, state = init_model(spec, n_features, float(self.rff_lengthscale), ridge / n, rng)
        k_train = jax.random.PRNGKey(self.random_state)
        optimizer = nadamw(float(self.learning_rate), float(self.momentum),
                           float(self.weight_decay), decay_mask=weight_decay_mask)
        logger.info("sngp_het: training on n=%d, d=%d for %d epochs", n, d, int(self.n_epochs))
        params, state, self.history_ = train(
            _loss_fn(spec), params, state, x_std, y_std, optimizer=optimizer,
            n_epochs=int(self.n_epochs), batch_size=int(self.batch_size), key=k_train,
            label="sngp_het: epochs")
        self.params_, self.state_ = params, state

        _, noise_var, phi = self._outputs(x_std)
        self.laplace_ = LastLayerPosterior.from_features(phi, noise_var, ridge)
        logger.info("sngp_het: fitted in %.1f s (final loss %.4g)", self.history_["seconds"],
                    float(self.history_["loss"][-1]))
        return self

    def _outputs(self, x_std: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(μ̃, σ̃², φ) in standardised units, computed in blocks of rows."""
        parts = []
        for i in range(0, x_std.shape[0], _BLOCK_ROWS):
            block = x_std[i:i + _BLOCK_ROWS]
            rows = block.shape[0]
            padded = np.zeros((_BLOCK_ROWS, block.shape[1]), dtype=np.float32)
            padded[:rows] = block
            out = _predict_outputs(self.spec_, self.params_, self.state_, jnp.asarray(padded))
            parts.append([np.asarray(a, dtype=np.float64)[:rows] for a in out])
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(3))

    def predict(self, x: np.ndarray) -> Prediction:
        x = as_inputs(x, self.standardizer_.n_features)
        mean, noise_var, phi = self._outputs(self.standardizer_.inputs(x))
        latent = self.laplace_.latent_variance(phi)
        return self.standardizer_.prediction_to_target(
            Prediction(mean=mean, aleatoric_var=noise_var, epistemic_var=latent))
