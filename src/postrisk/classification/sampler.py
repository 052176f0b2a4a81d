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
duplicates cost nothing and do not make L singular.

NUTS is NumPyro's functional ``numpyro.infer.hmc.hmc`` kernel with its default adaptation
(dual-averaging step size, diagonal mass matrix), each chain started from a prior draw of v, in
float64 inside ``with jax.enable_x64(True):`` (never the global switch). As for the BNN
(:mod:`postrisk.priors.bnn.sampler`): warm-up and sampling are one ``lax.scan``, the chains are
spread over the host devices with ``jax.pmap`` (in rounds when there are more chains than
devices: :func:`postrisk.core.jax_env.devices_for_chains`), and the executable is compiled ahead
of time and cached per (shapes, settings), with the data as its arguments, so further posteriors
of the same shapes compile nothing.

Evaluation rows: for each draw, f at x_eval from its exact Gaussian conditional given f_train,
mean K_*n K_nn⁻¹ f_train = Wᵀv with W = L⁻¹K_n*, covariance K_** − WᵀW (one factor,
:func:`postrisk.gp.linalg.robust_factor`: jitter, or clipped eigenvalues, so rows that coincide
with training rows, of conditional variance ~0, give their training latents, never NaN). The
noise comes from a NumPy generator seeded from ``seed``: the result is a deterministic function
of the inputs and the seed (bit-identical on the same CPU build).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from postrisk.core.jax_env import device_provenance, devices_for_chains
from postrisk.core.progress import Progress, progress_steps
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import Kernel
from postrisk.gp.linalg import JITTERS, jittered_cholesky, robust_factor

logger = logging.getLogger(__name__)

SETTING_KEYS = ("chains", "warmup", "samples", "target_accept", "max_tree_depth")
#: Progress callbacks of the compiled loop per round (0: none).
PROGRESS_MARKS = 10


@dataclass(frozen=True)
class ClassificationPosterior:
    """Chain-major posterior draws of the K latents (D = chains × samples draws)."""

    latent_eval: np.ndarray   # (D, n_eval, K) float64: f at x_eval
    latent_train: np.ndarray  # (D, n, K) float64: f at x_train
    chains: int
    settings: dict            # JSON-able sampler settings
    summary: dict             # JSON-able timings and NUTS statistics


# -- inputs -----------------------------------------------------------------------------------

def _settings(settings: Mapping) -> dict:
    missing = [k for k in SETTING_KEYS if k not in settings]
    if missing:
        raise ValueError(f"settings lack {missing}; need {list(SETTING_KEYS)}")
    out = {k: int(settings[k]) for k in ("chains", "warmup", "samples", "max_tree_depth")}
    out["target_accept"] = float(settings["target_accept"])
    if out["chains"] < 1 or out["warmup"] < 1 or out["samples"] < 1:
        raise ValueError(f"chains, warmup and samples must be ≥ 1, got {out}")
    if not 0.0 < out["target_accept"] < 1.0:
        raise ValueError(f"target_accept must lie in (0, 1), got {out['target_accept']}")
    if out["max_tree_depth"] < 1:
        raise ValueError(f"max_tree_depth must be ≥ 1, got {out['max_tree_depth']}")
    return out


def _labels(labels, n: int, n_classes: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) like x_train's rows, got {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"labels must be integers, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError("labels must be finite integers")
    arr = arr.astype(np.int64)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"labels must lie in 0 … {n_classes - 1}, got {arr.min()} … {arr.max()}")
    return arr


def _temperature(temperature, n: int) -> np.ndarray:
    tau = np.asarray(temperature, dtype=np.float64)
    if tau.shape != (n,):
        raise ValueError(f"temperature_train must have shape ({n},), got {tau.shape}")
    if not (np.all(np.isfinite(tau)) and np.all(tau > 0)):
        raise ValueError("temperatures must be finite and > 0")
    return tau


def _cholesky(cov: np.ndarray) -> tuple[np.ndarray, float]:
    """(lower Cholesky factor of ``cov`` + jitter, relative jitter):
    :func:`postrisk.gp.linalg.jittered_cholesky`; raises when every jitter fails."""
    info: dict = {}
    chol = jittered_cholesky(cov, info)
    if chol is None:
        raise np.linalg.LinAlgError(f"kernel matrix not positive definite with a relative "
                                    f"jitter of {JITTERS[-1]}")
    return chol, float(info["jitter"])


# -- the compiled NUTS loop -------------------------------------------------------------------

def _potential_gen(chol: Any, inv_tau: Any, counts: Any):
    """NumPyro's ``potential_fn_gen``: the data are arguments of the compiled code."""
    import jax.numpy as jnp
    from jax.nn import log_softmax

    def potential(z):
        v = z["v"]
        logits = (chol @ v) * inv_tau[:, None]
        return 0.5 * jnp.sum(v * v) - jnp.sum(counts * log_softmax(logits, axis=-1))

    return potential


class _RoundProgress:
    """Host side of the loop's callbacks in one round: a mark counts once every device has
    reported it (the callbacks arrive from XLA's threads: a lock orders them)."""

    def __init__(self, progress: Progress, devices: int, where: str) -> None:
        self.progress, self.devices, self.where = progress, devices, where
        self.seen: dict[int, int] = {}
        self.reached = 0
        self.lock = threading.Lock()

    def tick(self, iteration: int) -> None:
        with self.lock:
            self.seen[iteration] = self.seen.get(iteration, 0) + 1
            if self.seen[iteration] == self.devices and iteration > self.reached:
                self.progress.advance(iteration - self.reached,
                                      message=f"{self.where}iteration {iteration}")
                self.reached = iteration


_ROUND: _RoundProgress | None = None


def _nuts_progress(iteration: Any) -> None:
    current = _ROUND
    if current is not None:
        try:
            current.tick(int(iteration))
        except Exception:  # noqa: BLE001 - reporting must not break sampling
            logger.exception("progress callback failed")


@functools.lru_cache(maxsize=8)
def _chain_function(n: int, k: int, warmup: int, samples: int, target_accept: float,
                    max_tree_depth: int, marks: int) -> Any:
    """``run(keys, data)`` → (v of every iteration, (diverging, accept prob, leapfrog steps) per
    iteration, final step size), one chain per device (``jax.pmap``)."""
    import jax
    import jax.numpy as jnp
    from jax import lax, random
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn_gen=_potential_gen, algo="NUTS")
    total = warmup + samples
    every = max(1, math.ceil(total / marks)) if marks > 0 else 0

    def report(iteration):
        jax.debug.callback(_nuts_progress, iteration)

    def run_one(key, data):
        k_init, k_run = random.split(key)
        state = init_kernel({"v": random.normal(k_init, (n, k))}, warmup,
                            target_accept_prob=target_accept, max_tree_depth=max_tree_depth,
                            trajectory_length=None, model_args=data, rng_key=k_run)

        def body(state, i):
            new = sample_kernel(state, model_args=data)
            if every:
                done = i + 1
                lax.cond((done % every == 0) | (done == total), report, lambda _: None, done)
            return new, (new.z["v"], new.diverging, new.accept_prob, new.num_steps)

        state, (v, *stats) = lax.scan(body, state, jnp.arange(total), length=total)
        return v, tuple(stats), state.adapt_state.step_size

    return jax.pmap(run_one, in_axes=(0, None))


_EXECUTABLES: dict[tuple, Any] = {}


def _executable(settings: tuple, keys: Any, data: tuple) -> tuple[Any, float]:
    """(compiled ``run``, seconds spent compiling here: 0 when reused)."""
    key = settings + tuple(tuple(a.shape) for a in (keys, *data))
    if key in _EXECUTABLES:
        return _EXECUTABLES[key], 0.0
    t0 = time.perf_counter()
    compiled = _chain_function(*settings).lower(keys, data).compile()
    _EXECUTABLES[key] = compiled
    return compiled, time.perf_counter() - t0


def _run_chains(chol: np.ndarray, inv_tau: np.ndarray, counts: np.ndarray, seed: int,
                s: dict) -> tuple[np.ndarray, tuple, np.ndarray, dict]:
    """Whitened draws v (chains, warm-up + samples, n, K), per-iteration statistics, step
    sizes and the layout and timings (devices, rounds, seconds compiling and running)."""
    global _ROUND
    import jax
    from jax import random

    n, k = counts.shape
    used = devices_for_chains(s["chains"], jax.local_device_count())
    rounds = s["chains"] // used
    per_round = s["warmup"] + s["samples"]
    with jax.enable_x64(True):
        data = tuple(jax.numpy.asarray(a, dtype=jax.numpy.float64)
                     for a in (chol, inv_tau, counts))
        keys = random.split(random.PRNGKey(seed), s["chains"]).reshape(rounds, used, -1)
        run, t_compile = _executable(
            (n, k, s["warmup"], s["samples"], s["target_accept"], s["max_tree_depth"],
             int(PROGRESS_MARKS)), keys[0], data)
        if t_compile > 0:
            logger.info("NUTS loop (n = %d latent rows, K = %d) compiled in %.1f s", n, k,
                        t_compile)
        else:
            logger.info("NUTS loop: compiled code reused")
        out, t_run = [], 0.0
        with progress_steps(rounds * per_round, "NUTS iterations", logger) as progress:
            for r in range(rounds):
                where = f"round {r + 1}/{rounds}, " if rounds > 1 else ""
                t0 = time.perf_counter()
                _ROUND = tracker = _RoundProgress(progress, used, where)
                try:
                    result = jax.block_until_ready(run(keys[r], data))
                finally:
                    _ROUND = None
                if tracker.reached < per_round:
                    progress.advance(per_round - tracker.reached, message=f"{where}done")
                t_run += time.perf_counter() - t0
                out.append(jax.tree.map(np.asarray, result))
    v = np.concatenate([o[0] for o in out])
    stats = tuple(np.concatenate([o[1][i] for o in out]) for i in range(3))
    return v, stats, np.concatenate([o[2] for o in out]), {
        "devices": used, "rounds": rounds, "seconds_compile": t_compile, "seconds_mcmc": t_run}


# -- the posterior ----------------------------------------------------------------------------

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
    y = _labels(labels, n, n_classes)
    tau = _temperature(temperature_train, n)
    s = _settings(settings)
    a2 = scale ** 2

    # one latent per distinct (x, τ); labels as counts
    rows, inv = np.unique(np.column_stack([x, tau]), axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    xu, tau_u = rows[:, :-1], rows[:, -1]
    counts = np.zeros((xu.shape[0], n_classes))
    np.add.at(counts, (inv, y), 1.0)
    kmat = kernel.matrix(xu, xu)
    kmat *= a2
    chol, jitter = _cholesky(kmat)
    v, (div, acc, steps), step_size, run = _run_chains(chol, 1.0 / tau_u, counts, seed, s)
    warm, chains = s["warmup"], s["chains"]
    n_div = div[:, warm:].sum(axis=1).astype(int)
    logger.info("NUTS: %d chain(s) × (%d + %d) in %.1f s; divergences per chain %s",
                chains, warm, s["samples"], run["seconds_mcmc"], n_div.tolist())
    if n_div.sum():
        logger.warning("NUTS: %d divergent transition(s) after warm-up", int(n_div.sum()))

    t0 = time.perf_counter()
    v = v[:, warm:].reshape((-1,) + v.shape[2:])  # (D, n_unique, K), chain-major
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

    max_depth = s["max_tree_depth"]
    st, ac, dv = steps[:, warm:], acc[:, warm:], div[:, warm:]
    depth = np.ceil(np.log2(st.astype(np.float64) + 1.0))
    summary = {
        "seconds_compile": run["seconds_compile"], "seconds_mcmc": run["seconds_mcmc"],
        "seconds_conditional": t_cond, "devices": run["devices"], "rounds": run["rounds"],
        "n_unique_train": int(xu.shape[0]), "jitter_train": jitter,
        "conditional_factor": {k: (float(val) if not isinstance(val, str) else val)
                               for k, val in cond_info.items()},
        "per_chain": {
            "divergences": dv.sum(axis=1).astype(int).tolist(),
            "divergences_warmup": div[:, :warm].sum(axis=1).astype(int).tolist(),
            "mean_accept_prob": ac.mean(axis=1).tolist(),
            "step_size": step_size.astype(float).tolist(),
            "mean_num_steps": st.mean(axis=1).tolist(),
            "mean_tree_depth": depth.mean(axis=1).tolist(),
            "max_tree_depth_hits": (st >= 2 ** max_depth - 1).sum(axis=1).astype(int).tolist(),
        },
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
