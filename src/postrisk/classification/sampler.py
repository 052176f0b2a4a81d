"""The reference posterior of a classification task: NumPyro NUTS on whitened GP latents.

Model (the data-generating process of the task family, so the posterior is correctly
specified): K independent latent functions f_k ~ GP(0, a²·k) with ``k`` a
:class:`postrisk.gp.kernels.Kernel`, and labels y_i ~ Categorical(softmax(f(x_i) / τ_i)) with
the temperatures τ_i > 0 known (:mod:`postrisk.classification.link`).

Whitened parametrisation: with L the Cholesky factor of a²·k(X, X) plus a jitter (escalating
from 1e-10 to 1e-6 times the mean diagonal, as :func:`postrisk.gp.linalg.robust_factor`),
v ~ N(0, I) of shape (n, K) and f_train = L v, so NUTS sees the potential
½‖v‖² − Σ_i log softmax(f_train,i / τ_i)[y_i], whose prior part is isotropic whatever the
kernel. Training rows that repeat (x, τ) share one latent (their labels enter as counts), so
duplicates do not make L singular; the sampler's arrays are padded back to n rows (latents
without labels, exactly N(0, 1), dropped after sampling), so every instance of a given n and K
has the same shapes and the NUTS loop compiles once for all of them.

NUTS is :mod:`postrisk.classification.nuts`'s engine (NumPyro's functional kernel, default
adaptation, each chain from a prior draw of v, float64, chains over the host devices, compiled
once per shape).

Evaluation rows: for each draw, f at x_eval from its exact Gaussian conditional given f_train,
mean K_*n K_nn⁻¹ f_train = Wᵀv with W = L⁻¹K_n*, covariance K_** − WᵀW (one factor,
:func:`postrisk.gp.linalg.robust_factor`: jitter, or clipped eigenvalues, so rows that coincide
with training rows, of conditional variance ~0, give their training latents, never NaN). The
noise comes from a NumPy generator seeded from ``seed``: the result is a deterministic function
of the inputs and the seed (bit-identical on the same CPU build).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.linalg

from postrisk.classification.likelihood import check_labels, check_temperatures, label_counts
from postrisk.classification.nuts import (
    ClassificationPosterior,
    chain_summary,
    check_settings,
    run_chains,
)
from postrisk.core.jax_env import device_provenance
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import Kernel
from postrisk.gp.linalg import JITTERS, jittered_cholesky, robust_factor

logger = logging.getLogger(__name__)


def _cholesky(cov: np.ndarray) -> tuple[np.ndarray, float]:
    """(lower Cholesky factor of ``cov`` + jitter, relative jitter):
    :func:`postrisk.gp.linalg.jittered_cholesky`; raises when every jitter fails."""
    info: dict = {}
    chol = jittered_cholesky(cov, info)
    if chol is None:
        raise np.linalg.LinAlgError(f"kernel matrix not positive definite with a relative "
                                    f"jitter of {JITTERS[-1]}")
    return chol, float(info["jitter"])


# -- the potential ----------------------------------------------------------------------------

def _potential_gen(chol: Any, inv_tau: Any, counts: Any):
    """NumPyro's ``potential_fn_gen``: the data are arguments of the compiled code."""
    import jax.numpy as jnp
    from jax.nn import log_softmax

    def potential(z):
        v = z["v"]
        logits = (chol @ v) * inv_tau[:, None]
        return 0.5 * jnp.sum(v * v) - jnp.sum(counts * log_softmax(logits, axis=-1))

    return potential


# -- the posterior ----------------------------------------------------------------------------

def _padded(chol: np.ndarray, inv_tau: np.ndarray, counts: np.ndarray,
            n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sampler's data padded from the distinct rows to all ``n`` training rows: the factor
    block-diagonal with an identity, temperature 1 and no labels on the padding rows, whose
    whitened latents are then exactly N(0, 1) under the posterior, independent of the rest,
    and are dropped after sampling. Every instance with ``n`` training rows and K classes has
    the same shapes, so the NUTS loop compiles once for all of them."""
    m = chol.shape[0]
    full = np.eye(n)
    full[:m, :m] = chol
    tau = np.ones(n)
    tau[:m] = inv_tau
    labels = np.zeros((n, counts.shape[1]))
    labels[:m] = counts
    return full, tau, labels


def _left_multiply(mat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``mat @ v[d]`` for every draw d of v (D, n, K), as one matrix product: (D, rows, K)."""
    draws, n, k = v.shape
    out = mat @ v.transpose(1, 0, 2).reshape(n, draws * k)
    return out.reshape(-1, draws, k).transpose(1, 0, 2)


def gp_classification_posterior(kernel: Kernel, scale: float, x_train, labels,
                                temperature_train, x_eval, n_classes: int, seed: int,
                                settings: Mapping) -> ClassificationPosterior:
    """Posterior draws of the K latents at ``x_train`` and ``x_eval`` (see the module).

    ``settings``: chains, warmup, samples, target_accept, max_tree_depth; D = chains × samples
    draws, chain-major. ``seed`` (an integer ≥ 0) fixes everything.
    """
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a postrisk.gp.kernels.Kernel, got {type(kernel)}")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale}")
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or n_classes < 2:
        raise ValueError(f"n_classes must be an integer ≥ 2, got {n_classes!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
    n_classes, seed = int(n_classes), int(seed)
    x = kernel.check_inputs(x_train, "x_train")
    xs = kernel.check_inputs(x_eval, "x_eval")
    n = x.shape[0]
    if n == 0:
        raise ValueError("x_train has no rows")
    y = check_labels(labels, n, n_classes)
    tau = check_temperatures(temperature_train, n)
    s = check_settings(settings)
    a2 = scale ** 2

    # one latent per distinct (x, τ); labels as counts
    rows, inv = np.unique(np.column_stack([x, tau]), axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    xu, tau_u = rows[:, :-1], rows[:, -1]
    counts = label_counts(y, n_classes, inv, xu.shape[0])
    kmat = kernel.matrix(xu, xu)
    kmat *= a2
    chol, jitter = _cholesky(kmat)
    chains_out = run_chains(_potential_gen, {"v": (n, n_classes)},
                            _padded(chol, 1.0 / tau_u, counts, n), seed, s,
                            label="NUTS (GP latents)")
    chains = s["chains"]
    t0 = time.perf_counter()
    v = chains_out["z"]["v"][:, :, :xu.shape[0]]
    v = v.reshape((-1,) + v.shape[2:])  # (D, n_unique, K), chain-major
    draws = v.shape[0]
    f_u = _left_multiply(chol, v)
    latent_train = np.ascontiguousarray(f_u[:, inv])
    cond_info: dict = {}
    if xs.shape[0]:
        xsu, inv_s = np.unique(xs, axis=0, return_inverse=True)
        inv_s = np.asarray(inv_s).reshape(-1)
        w = scipy.linalg.solve_triangular(chol, a2 * kernel.matrix(xu, xsu), lower=True,
                                          check_finite=False)
        mean = _left_multiply(w.T, v)
        cov = a2 * kernel.matrix(xsu, xsu) - w.T @ w
        factor, _ = robust_factor(cov, cond_info)
        rng = np.random.default_rng([seed, 0x6C61])
        z = rng.standard_normal((draws * n_classes, xsu.shape[0]))
        noise = (z @ factor.T).reshape(draws, n_classes, -1).transpose(0, 2, 1)
        latent_eval = np.ascontiguousarray((mean + noise)[:, inv_s])
    else:
        latent_eval = np.zeros((draws, 0, n_classes))
    t_cond = time.perf_counter() - t0
    logger.info("conditional draws at %d evaluation row(s) in %.2f s", xs.shape[0], t_cond)

    summary = {
        **chain_summary(chains_out), "seconds_conditional": t_cond,
        "n_unique_train": int(xu.shape[0]), "jitter_train": jitter,
        "conditional_factor": {k: (float(val) if not isinstance(val, str) else val)
                               for k, val in cond_info.items()},
    }
    out_settings = {"backend": "numpyro", "algorithm": "NUTS", "parametrisation": "whitened",
                    "precision": "float64",
                    "device_kind": str(device_provenance()["device_kind"]),
                    **s, "draws": int(draws)}
    return ClassificationPosterior(latent_eval=latent_eval, latent_train=latent_train,
                                   chains=chains, settings=out_settings, summary=summary)


def prior_latents(kernel: Kernel, scale: float, x, n_classes: int,
                  rng: np.random.Generator) -> np.ndarray:
    """One draw of the K latents from the prior at the rows of ``x``, shaped (n, K)."""
    return np.ascontiguousarray(sample_prior(kernel, scale, x, rng, size=int(n_classes)).T)


class GpLatents:
    """The K latents under the GP prior (the regression GP prior's ``params``: its kernel and
    scale constant ``a``; the latents' scale is A·a)."""

    name = "gp"

    def unit_draws(self, params: Mapping, x: np.ndarray, rng: np.random.Generator,
                   n_draws: int, n_classes: int) -> np.ndarray:
        """``n_draws`` prior draws of the latents at amplitude 1 at the rows ``x``:
        (n_draws, n, K)."""
        kernel, a = Kernel.from_dict(params["kernel"]), float(params["a"])
        draws = sample_prior(kernel, a, x, rng, size=int(n_draws) * int(n_classes))
        return draws.reshape(int(n_draws), int(n_classes), -1).transpose(0, 2, 1)

    def draw(self, params: Mapping, amplitude: float, x: np.ndarray, rng: np.random.Generator,
             n_classes: int) -> np.ndarray:
        """One prior draw of the latents at the rows ``x``, (n, K)."""
        kernel, a = Kernel.from_dict(params["kernel"]), float(params["a"])
        return prior_latents(kernel, float(amplitude) * a, x, n_classes, rng)

    def posterior(self, params: Mapping, amplitude: float, x_train, labels, temperature_train,
                  x_eval, n_classes: int, seed: int,
                  settings: Mapping) -> ClassificationPosterior:
        """:func:`gp_classification_posterior` at the scale A·a."""
        kernel, a = Kernel.from_dict(params["kernel"]), float(params["a"])
        return gp_classification_posterior(kernel, float(amplitude) * a, x_train, labels,
                                           temperature_train, x_eval, n_classes, seed, settings)
