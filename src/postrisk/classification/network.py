"""The Bayesian neural network prior of a classification task: the regression network with K
outputs, and its reference posterior by NUTS on the weights.

Inputs ``x`` are ``(n, d)`` min–max scaled covariates. With H hidden units shared by the K
outputs, weights ``w_h`` (a d-vector), ``c_h``, ``v_hk`` and offsets ``b_k``, all standard
normal (the regression network's prior, :mod:`postrisk.priors.bnn.model`, with K columns of
output weights and K offsets)::

    u_k(x) = (1/√H) Σ_h v_hk tanh(w_hᵀ(2x − 1)/√d + c_h)
    f_k(x) = A·(b_k + a·(u_k(x) − mean_r u_k(x_r)))

``a`` and the R reference inputs ``x_r`` are the dataset's regression BNN prior (its scale
constant and reference rows: each u_k has the regression u's law, so ``a`` gives each latent's
network part a median SD of 1 over the evaluation pool, as in regression); ``A`` is the
classification amplitude (:mod:`postrisk.classification.amplitude`), which scales the whole
latent, offset included, so that prior draws of π = softmax(f/τ) reach the family's mean entropy
share (with A = 1 the offsets alone, b ~ N(0, I_K), would already set much of it).

:func:`network_latents` (NumPy, float64, batched over leading weight dimensions) is the one
definition of f used for the ground truth, the amplitude and the posterior draws;
:func:`_potential_gen` is the negative log joint density NUTS sees (``jax.numpy``), written with
the same formula (the tests check the two agree). The posterior runs on
:mod:`postrisk.classification.nuts`'s engine over (v, w, c, b), each chain from a prior draw;
training rows keep one latent each (the network needs no deduplication), so every instance of a
dataset and K has the same shapes and compiles once.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from postrisk.classification.likelihood import check_labels, check_temperatures, label_counts
from postrisk.classification.nuts import (
    ClassificationPosterior,
    chain_summary,
    check_settings,
    run_chains,
)
from postrisk.core.arrays import as_matrix
from postrisk.core.jax_env import device_provenance

logger = logging.getLogger(__name__)

#: Latent draws are computed in blocks of this many weight samples (memory bound).
_DRAW_BLOCK = 64


@dataclass(frozen=True)
class NetworkWeights:
    """Weights with any number of leading sample dimensions ``...``: ``v`` (..., H, K), ``w``
    (..., H, d), ``c`` (..., H), ``b`` (..., K)."""

    v: np.ndarray
    w: np.ndarray
    c: np.ndarray
    b: np.ndarray

    @property
    def hidden(self) -> int:
        return int(self.v.shape[-2])


def draw_network_weights(rng: np.random.Generator, hidden: int, d: int,
                         n_classes: int) -> NetworkWeights:
    """One prior draw of the weights: v, w, c, b standard normal, drawn in that order."""
    v = rng.standard_normal((hidden, n_classes))
    w = rng.standard_normal((hidden, d))
    c = rng.standard_normal(hidden)
    b = rng.standard_normal(n_classes)
    return NetworkWeights(v=v, w=w, c=c, b=b)


def _unit_outputs(x: np.ndarray, weights: NetworkWeights) -> np.ndarray:
    """u(x), shaped (..., n, K)."""
    x = np.asarray(x, dtype=np.float64)
    xs = (2.0 * x - 1.0) / math.sqrt(x.shape[-1])
    pre = np.matmul(xs, np.swapaxes(np.asarray(weights.w), -1, -2)) + np.asarray(
        weights.c)[..., None, :]
    return np.matmul(np.tanh(pre), np.asarray(weights.v)) / math.sqrt(weights.hidden)


def network_latents(x: np.ndarray, weights: NetworkWeights, a: float, x_ref: np.ndarray,
                    amplitude: float = 1.0) -> np.ndarray:
    """f(x) = A·(b + a·(u(x) − mean_r u(x_r))), shaped (..., n, K), float64."""
    u = _unit_outputs(x, weights)
    u_ref = _unit_outputs(x_ref, weights).mean(axis=-2, keepdims=True)
    return float(amplitude) * (np.asarray(weights.b)[..., None, :] + float(a) * (u - u_ref))


def latent_draws(weights: NetworkWeights, a: float, x_ref: np.ndarray, x: np.ndarray,
                 amplitude: float) -> np.ndarray:
    """f at the rows ``x`` for every weight sample, (samples, n, K), in blocks of samples."""
    total = weights.b.shape[0]
    out = np.empty((total, x.shape[0], weights.b.shape[-1]))
    for s in range(0, total, _DRAW_BLOCK):
        sl = slice(s, s + _DRAW_BLOCK)
        out[sl] = network_latents(x, NetworkWeights(weights.v[sl], weights.w[sl],
                                                    weights.c[sl], weights.b[sl]),
                                  a, x_ref, amplitude)
    return out


def _potential_gen(xs_train: Any, inv_tau: Any, counts: Any, xs_ref: Any, a: Any,
                   amplitude: Any):
    """NumPyro's ``potential_fn_gen``: −log p(v, w, c, b | labels) up to a constant, with
    ``xs = (2x − 1)/√d`` precomputed; the data are arguments of the compiled code."""
    import jax.numpy as jnp
    from jax.nn import log_softmax

    def potential(z):
        scale = 1.0 / math.sqrt(z["v"].shape[0])

        def unit(xs):
            return jnp.tanh(xs @ z["w"].T + z["c"]) @ z["v"] * scale

        f = amplitude * (z["b"] + a * (unit(xs_train) - jnp.mean(unit(xs_ref), axis=0)))
        prior = 0.5 * sum(jnp.sum(z[k] ** 2) for k in ("v", "w", "c", "b"))
        return prior - jnp.sum(counts * log_softmax(f * inv_tau[:, None], axis=-1))

    return potential


def _prior_inputs(params: Mapping) -> tuple[float, int, np.ndarray]:
    return (float(params["a"]), int(params["hidden"]),
            np.asarray(params["reference_inputs"], dtype=np.float64))


class NetworkLatents:
    """The K latents under the network prior (the regression BNN prior's ``params``: scale
    constant ``a``, ``hidden``, ``reference_inputs``)."""

    name = "bnn"

    def unit_draws(self, params: Mapping, x: np.ndarray, rng: np.random.Generator,
                   n_draws: int, n_classes: int) -> np.ndarray:
        """``n_draws`` prior draws of the latents at amplitude 1 at the rows ``x``:
        (n_draws, n, K), one weight draw after the other."""
        a, hidden, x_ref = _prior_inputs(params)
        x = as_matrix("x", x, finite=True)
        return np.stack([network_latents(x, draw_network_weights(rng, hidden, x.shape[1],
                                                                 n_classes), a, x_ref)
                         for _ in range(int(n_draws))])

    def draw(self, params: Mapping, amplitude: float, x: np.ndarray, rng: np.random.Generator,
             n_classes: int) -> np.ndarray:
        """One prior draw of the latents at the rows ``x``, (n, K)."""
        a, hidden, x_ref = _prior_inputs(params)
        x = as_matrix("x", x, finite=True)
        weights = draw_network_weights(rng, hidden, x.shape[1], n_classes)
        return network_latents(x, weights, a, x_ref, amplitude)

    def posterior(self, params: Mapping, amplitude: float, x_train, labels, temperature_train,
                  x_eval, n_classes: int, seed: int,
                  settings: Mapping) -> ClassificationPosterior:
        """NUTS on the weights given the training labels; the latents at ``x_eval`` and
        ``x_train`` for every draw, chain-major (``settings``: chains, warmup, samples,
        target_accept, max_tree_depth)."""
        a, hidden, x_ref = _prior_inputs(params)
        x = as_matrix("x_train", x_train, finite=True)
        xe = as_matrix("x_eval", x_eval, n_columns=x.shape[1], finite=True)
        if x.shape[0] == 0:
            raise ValueError("x_train has no rows")
        if isinstance(seed, bool) or int(seed) != seed or seed < 0:
            raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
        amplitude = float(amplitude)
        if not (math.isfinite(amplitude) and amplitude > 0):
            raise ValueError(f"amplitude must be finite and > 0, got {amplitude}")
        k = int(n_classes)
        y = check_labels(labels, x.shape[0], k)
        tau = check_temperatures(temperature_train, x.shape[0])
        s = check_settings(settings)
        d = x.shape[1]
        data = ((2.0 * x - 1.0) / math.sqrt(d), 1.0 / tau, label_counts(y, k),
                (2.0 * x_ref - 1.0) / math.sqrt(d), np.float64(a), np.float64(amplitude))
        shapes = {"v": (hidden, k), "w": (hidden, d), "c": (hidden,), "b": (k,)}
        chains = run_chains(_potential_gen, shapes, data, int(seed), s,
                            label="NUTS (network weights)")
        t0 = time.perf_counter()
        z = {name: arr.reshape((-1,) + arr.shape[2:]) for name, arr in chains["z"].items()}
        weights = NetworkWeights(v=z["v"], w=z["w"], c=z["c"], b=z["b"])
        both = latent_draws(weights, a, x_ref, np.concatenate([xe, x]), amplitude)
        t_draws = time.perf_counter() - t0
        draws = both.shape[0]
        summary = {**chain_summary(chains), "seconds_latents": t_draws}
        out_settings = {"backend": "numpyro", "algorithm": "NUTS", "parametrisation": "weights",
                        "precision": "float64",
                        "device_kind": str(device_provenance()["device_kind"]),
                        "hidden": hidden, **s, "draws": int(draws)}
        return ClassificationPosterior(
            latent_eval=np.ascontiguousarray(both[:, :xe.shape[0]]),
            latent_train=np.ascontiguousarray(both[:, xe.shape[0]:]), chains=s["chains"],
            settings=out_settings, summary=summary)
