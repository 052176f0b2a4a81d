"""The Bayesian neural network prior model (docs/design.md, "Priors").

Inputs ``x`` are ``(n, d)`` float64 arrays of min–max scaled covariates. With H hidden units,
weights ``v_h``, ``w_h`` (a d-vector), ``c_h`` and an offset ``b``, all standard normal::

    u(x) = (1/√H) Σ_h v_h tanh(w_hᵀ(2x − 1)/√d + c_h)
    f(x) = b + a·(u(x) − mean_r u(x_r))

The R reference inputs ``x_r`` are rows of the evaluation pool chosen once per dataset (fixed
seed) and stored with the scale constant ``a`` = 1 / (median over unit-scale prior draws of the
draw's SD over the evaluation pool) — the rule of every prior
(:func:`postrisk.priors.base.scale_constant`; here :func:`bnn_scale_constant`). Centering on the
reference inputs makes ``b`` the function's mean over them, so ``b`` and the hidden layer do not
compete for the level.

:func:`bnn_function` (numpy, float64, batched over leading weight dimensions) is the one
definition of f used for the ground truth, for the scale constant and for the posterior draws;
:func:`potential_energy` (``jax.numpy``) is the negative log joint density the sampler sees,
written with the same formula (the tests check the two agree).

The posterior is :mod:`postrisk.priors.bnn.sampler`'s (NumPyro NUTS on this density).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from postrisk.priors.base import scale_constant

#: Posterior draws of f are computed in blocks of this many weight samples (memory bound).
_DRAW_BLOCK = 64


@dataclass(frozen=True)
class BnnWeights:
    """Network weights, with any number of leading sample dimensions ``...``.

    ``v``: (..., H); ``w``: (..., H, d); ``c``: (..., H); ``b``: (...).
    """

    v: np.ndarray
    w: np.ndarray
    c: np.ndarray
    b: np.ndarray

    @property
    def hidden(self) -> int:
        return int(self.v.shape[-1])


def draw_weights(rng: np.random.Generator, hidden: int, d: int) -> BnnWeights:
    """One prior draw of the weights: v, w, c, b standard normal, drawn in that order."""
    v = rng.standard_normal(hidden)
    w = rng.standard_normal((hidden, d))
    c = rng.standard_normal(hidden)
    b = rng.standard_normal()
    return BnnWeights(v=v, w=w, c=c, b=np.float64(b))


def unit_network(x: np.ndarray, weights: BnnWeights) -> np.ndarray:
    """u(x) = (1/√H) Σ_h v_h tanh(w_hᵀ(2x − 1)/√d + c_h), shaped (..., n), float64."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    xs = (2.0 * x - 1.0) / math.sqrt(d)
    w = np.asarray(weights.w, dtype=np.float64)
    pre = np.matmul(xs, np.swapaxes(w, -1, -2)) + np.asarray(weights.c)[..., None, :]
    hidden_out = np.tanh(pre)  # (..., n, H)
    return np.matmul(hidden_out, np.asarray(weights.v)[..., :, None])[..., 0] / math.sqrt(
        weights.hidden)


def bnn_function(x: np.ndarray, weights: BnnWeights, a: float,
                 x_ref: np.ndarray) -> np.ndarray:
    """f(x) = b + a·(u(x) − mean_r u(x_r)), shaped (..., n), float64."""
    u = unit_network(x, weights)
    u_ref = unit_network(x_ref, weights).mean(axis=-1)
    return np.asarray(weights.b)[..., None] + float(a) * (u - u_ref[..., None])


def bnn_scale_constant(x_pool: np.ndarray, x_ref: np.ndarray, hidden: int,
                       rng: np.random.Generator, n_draws: int = 100) -> float:
    """The scale constant (:func:`~postrisk.priors.base.scale_constant`) of ``n_draws``
    unit-scale (a = 1) prior draws of f over the evaluation pool ``x_pool``, one weight draw
    (:func:`draw_weights`) after the other."""
    x_pool = np.asarray(x_pool, dtype=np.float64)
    return scale_constant(np.stack([
        bnn_function(x_pool, draw_weights(rng, hidden, x_pool.shape[1]), 1.0, x_ref)
        for _ in range(n_draws)]))



# --- the sampler's target (jax.numpy; only ever traced under enable_x64) ----------------------

def potential_energy(z: dict[str, Any], xs_train: Any, y: Any, inv_sd: Any, xs_ref: Any,
                     a: Any) -> Any:
    """−log p(v, w, c, b | data) up to a constant; ``xs = (2x − 1)/√d`` precomputed.

    ``z``: {"v": (H,), "w": (H, d), "c": (H,), "b": ()}; ``inv_sd`` = 1/√noise_var_train.
    """
    import jax.numpy as jnp

    scale = 1.0 / math.sqrt(z["v"].shape[0])

    def unit(xs):
        return jnp.tanh(xs @ z["w"].T + z["c"]) @ z["v"] * scale

    f = z["b"] + a * (unit(xs_train) - jnp.mean(unit(xs_ref)))
    prior = 0.5 * (jnp.sum(z["v"] ** 2) + jnp.sum(z["w"] ** 2) + jnp.sum(z["c"] ** 2)
                   + z["b"] ** 2)
    return prior + 0.5 * jnp.sum(((y - f) * inv_sd) ** 2)


def function_draws(weights: BnnWeights, a: float, x_ref: np.ndarray,
                   x: np.ndarray) -> np.ndarray:
    """f at the rows ``x`` for every weight sample: shaped (weight sample dims..., n), float64,
    computed in blocks of samples (the hidden layer is samples × n × H)."""
    lead = weights.b.shape
    flat = BnnWeights(v=weights.v.reshape(-1, weights.hidden),
                      w=weights.w.reshape((-1,) + weights.w.shape[-2:]),
                      c=weights.c.reshape(-1, weights.hidden), b=weights.b.reshape(-1))
    total = flat.b.shape[0]
    out = np.empty((total, x.shape[0]))
    for s in range(0, total, _DRAW_BLOCK):
        sl = slice(s, s + _DRAW_BLOCK)
        out[sl] = bnn_function(x, BnnWeights(flat.v[sl], flat.w[sl], flat.c[sl], flat.b[sl]),
                               a, x_ref)
    return out.reshape(lead + (x.shape[0],))
