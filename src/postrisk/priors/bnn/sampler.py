"""The Bayesian neural network's posterior engine: NumPyro NUTS on the density of
:mod:`postrisk.priors.bnn.model` (docs/design.md, "Task instances").

NumPyro's NUTS (its functional ``numpyro.infer.hmc.hmc`` kernel, default adaptation:
dual-averaging step size and diagonal mass matrix over numpyro's windowed schedule) on the
unconstrained (v, w, c, b) with ``y_i ~ N(f(x_i), noise_var_train[i])``, noise known. Everything
runs in float64 inside ``with jax.enable_x64(True):`` (never the global switch: bartz needs x64
off). Each chain starts from its own prior draw. The chains are spread over the host devices
(how many: :func:`chain_layout`) with ``jax.pmap``: ``chain_method = "parallel"`` runs one chain
per device, in rounds when there are more chains than devices (4 chains on 2 devices: two rounds
of two); ``"vectorized"`` runs all of a device's chains at once with ``jax.vmap`` (each NUTS
iteration then costs the longest trajectory among them; measured ~2× slower on 2 CPU devices, so
``parallel`` is the default). Warm-up and sampling are one compiled loop per chain, compiled
ahead of time and cached per (shapes, settings) in the process — and across processes by JAX's
persistent compilation cache where the workflow sets one, but only with :data:`PROGRESS_MARKS`
= 0 (below) — so a second posterior with the same shapes compiles nothing: the data are arguments
of the compiled code, not constants (NumPyro's ``MCMC(jit_model_args=True)`` gives no such reuse
with parallel chains).

Progress is reported from inside the compiled loop: a host callback (``jax.debug.callback``,
as NumPyro's own progress bar) at every tenth of warm-up + sampling, counted on the host over
the devices, so a line (or the bar) moves when every chain of the round has got that far; it
reads the iteration number only and changes no number. JAX never writes an executable with a
host callback to its persistent cache (it is still reused within the process, so a batch of
instances compiles once); with :data:`PROGRESS_MARKS` = 0 the loop is compiled without the
callback — silent between rounds, and persistable.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.core.jax_env import devices_for_chains
from postrisk.core.progress import Progress, progress_steps
from postrisk.priors.base import training_targets
from postrisk.priors.bnn.model import BnnWeights, potential_energy

logger = logging.getLogger(__package__)  # one logger per prior: postrisk.priors.bnn

CHAIN_METHODS = ("parallel", "vectorized")
#: The compiled NUTS loop reports its progress this many times per round (host callbacks);
#: 0: no callback (JAX's persistent compilation cache then stores the executable).
PROGRESS_MARKS = 10


def _potential_gen(xs_train: Any, y: Any, inv_sd: Any, xs_ref: Any,
                   a: Any) -> Callable[[dict[str, Any]], Any]:
    """NumPyro's ``potential_fn_gen``: the data are arguments of the compiled code."""
    return functools.partial(potential_energy, xs_train=xs_train, y=y, inv_sd=inv_sd,
                             xs_ref=xs_ref, a=a)


def _report_every(warmup: int, samples: int, marks: int) -> int:
    """Iterations between two progress callbacks of the compiled loop (``marks`` > 0)."""
    return max(1, math.ceil((warmup + samples) / marks))


class _RoundProgress:
    """Host side of the compiled loop's progress callbacks during one round: every device
    calls :func:`_nuts_progress` with its iteration number at each mark; the mark counts as
    reached (one step of ``progress``) once all ``devices`` have reported it. Callbacks of
    several devices may arrive at once, from XLA's threads: a lock orders them."""

    def __init__(self, progress: Progress, devices: int, warmup: int, samples: int,
                 round_: int, rounds: int) -> None:
        self.progress, self.devices = progress, devices
        self.warmup, self.samples = warmup, samples
        self.where = f"round {round_ + 1}/{rounds}, " if rounds > 1 else ""
        self.seen: dict[int, int] = {}
        self.reached = 0
        self.lock = threading.Lock()

    def tick(self, iteration: int) -> None:
        with self.lock:
            self.seen[iteration] = self.seen.get(iteration, 0) + 1
            if self.seen[iteration] < self.devices or iteration <= self.reached:
                return
            if iteration <= self.warmup:
                phase = f"warm-up {iteration}/{self.warmup}"
            else:
                phase = f"sampling {iteration - self.warmup}/{self.samples}"
            self.progress.advance(iteration - self.reached, message=self.where + phase)
            self.reached = iteration


#: The round in progress (set by :func:`run_nuts`; the compiled code calls a fixed function).
_ROUND: _RoundProgress | None = None


def _nuts_progress(iteration: Any) -> None:
    """The compiled loop's host callback: never raises (it would abort the computation)."""
    current = _ROUND
    if current is None:
        return
    try:
        current.tick(int(iteration))
    except Exception:  # noqa: BLE001 - reporting must not break sampling
        logger.exception("[bnn] progress callback failed")


@functools.lru_cache(maxsize=16)
def _chain_function(hidden: int, d: int, warmup: int, samples: int, target_accept: float,
                    max_tree_depth: int, per_device: int, marks: int) -> Any:
    """``run(keys, data)`` → (weight draws of every iteration, per-iteration statistics, final
    step size), pmapped over devices, and vmapped over a device's chains when there are
    ``per_device`` > 1 of them (otherwise no vmap: it would batch NUTS's while loops for nothing).

    One ``lax.scan`` over warm-up and sampling together, so the NUTS step is compiled once (it
    dominates compilation, ~10–20 s on CPU); adaptation stops by itself after ``warmup``
    iterations (NumPyro's ``sample_kernel``). Per chain: initial weights from the prior, then
    NumPyro's default NUTS warm-up (step size 1 to start, diagonal mass matrix). With
    ``marks`` > 0, every :func:`_report_every` iterations and at the last, :func:`_nuts_progress`
    is called on the host with the iteration number (the scan's own counter: the same for a
    device's vmapped chains, so once per device).
    """
    import jax
    import jax.numpy as jnp
    from jax import lax, random
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn_gen=_potential_gen, algo="NUTS")
    total = warmup + samples
    every = _report_every(warmup, samples, marks) if marks > 0 else 0

    def report(iteration):
        jax.debug.callback(_nuts_progress, iteration)

    def run_one(key, data):
        k_init, k_run = random.split(key)
        kv, kw, kc, kb = random.split(k_init, 4)
        z0 = {"v": random.normal(kv, (hidden,)), "w": random.normal(kw, (hidden, d)),
              "c": random.normal(kc, (hidden,)), "b": random.normal(kb, ())}
        state = init_kernel(z0, warmup, target_accept_prob=target_accept,
                            max_tree_depth=max_tree_depth, trajectory_length=None,
                            model_args=data, rng_key=k_run)

        def body(state, i):
            new = sample_kernel(state, model_args=data)
            if every:
                done = i + 1
                lax.cond((done % every == 0) | (done == total), report, lambda _: None, done)
            return new, (new.z, new.diverging, new.accept_prob, new.num_steps)

        xs = jnp.arange(total) if every else None
        state, (z, *stats) = lax.scan(body, state, xs, length=total)
        return z, tuple(stats), state.adapt_state.step_size

    if per_device > 1:
        run_one = jax.vmap(run_one, in_axes=(0, None))
    return jax.pmap(run_one, in_axes=(0, None))


#: Compiled executables by (chain function settings, argument shapes): reused across calls.
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


def chain_layout(chains: int, devices: int, method: str) -> tuple[int, int, int]:
    """(rounds, devices used, chains per device) with rounds × devices × per device = chains.

    Devices used: :func:`~postrisk.core.jax_env.devices_for_chains` of the ``devices``.
    ``parallel``: one chain per device used, in rounds; ``vectorized``: all chains in one
    round, spread evenly over the devices used.
    """
    if method not in CHAIN_METHODS:
        raise ValueError(f"chain_method must be one of {CHAIN_METHODS}, got {method!r}")
    used = devices_for_chains(chains, devices)
    if method == "parallel":
        return chains // used, used, 1
    return 1, used, chains // used


def _tree_depth(num_steps: np.ndarray) -> np.ndarray:
    """Depth of a NUTS tree from its number of leapfrog steps: ⌈log2(steps + 1)⌉."""
    return np.ceil(np.log2(np.asarray(num_steps, dtype=np.float64) + 1.0))


def run_nuts(x_train: np.ndarray, y_train: np.ndarray, noise_var_train: np.ndarray,
             x_ref: np.ndarray, a: float, hidden: int, seed: int, *, chains: int, warmup: int,
             samples: int, target_accept: float, max_tree_depth: int,
             chain_method: str = "parallel") -> tuple[BnnWeights, dict]:
    """NUTS on (v, w, c, b): weight samples shaped (chains, samples, ...) and a summary.

    Chain-major; ``seed`` (an integer) fixes everything (the initial prior draws included).
    Progress: one step per iteration of every round, reported at each tenth of a round.
    """
    global _ROUND
    import jax
    from jax import random

    x_train = as_matrix("x_train", x_train, finite=True)
    d = x_train.shape[1]
    x_ref = as_matrix("x_ref", x_ref, n_columns=d, finite=True)
    y, nv = training_targets(x_train.shape[0], y_train, noise_var_train)
    rounds, n_dev, per_dev = chain_layout(chains, jax.local_device_count(), chain_method)

    with jax.enable_x64(True):
        data = tuple(jax.numpy.asarray(arr, dtype=jax.numpy.float64) for arr in (
            (2.0 * x_train - 1.0) / math.sqrt(d), y, 1.0 / np.sqrt(nv),
            (2.0 * x_ref - 1.0) / math.sqrt(d), np.float64(a)))
        keys = random.split(random.PRNGKey(seed), chains).reshape(
            (rounds, n_dev) + ((per_dev,) if per_dev > 1 else ()) + (-1,))
        run, t_compile = _executable((int(hidden), d, int(warmup), int(samples),
                                      float(target_accept), int(max_tree_depth), per_dev,
                                      int(PROGRESS_MARKS)),
                                     keys[0], data)
        if t_compile > 0:
            logger.info("[bnn] NUTS loop compiled in %.1f s", t_compile)
        else:
            logger.info("[bnn] NUTS loop: compiled code reused")
        t_run = 0.0
        out: list = []
        per_round = int(warmup) + int(samples)
        with progress_steps(rounds * per_round, "[bnn] NUTS iterations", logger) as progress:
            for r in range(rounds):
                t0 = time.perf_counter()
                _ROUND = tracker = _RoundProgress(progress, n_dev, int(warmup), int(samples),
                                                  r, rounds)
                try:
                    result = jax.block_until_ready(run(keys[r], data))
                finally:
                    _ROUND = None
                if tracker.reached < per_round:  # no callbacks (PROGRESS_MARKS = 0)
                    progress.advance(per_round - tracker.reached,
                                     message=f"round {r + 1}/{rounds} done")
                t_run += time.perf_counter() - t0
                out.append(jax.tree.map(np.asarray, result))
                if r == 0 and rounds > 1:
                    logger.info("[bnn] round 1/%d (%d device(s) × %d chain(s)) in %.1f s",
                                rounds, n_dev, per_dev, time.perf_counter() - t0)

    def chain_major(arrays):  # per round (n_dev[, per_dev], ...) → (chains, ...)
        lead = 2 if per_dev > 1 else 1
        return np.concatenate([a.reshape((n_dev * per_dev,) + a.shape[lead:]) for a in arrays])

    z = {k: chain_major([o[0][k] for o in out])[:, warmup:] for k in ("v", "w", "c", "b")}
    div, acc, steps = (chain_major([o[1][i] for o in out]) for i in range(3))
    step_size = chain_major([o[2] for o in out])
    # Warm-up and sampling run in one compiled loop: their wall-clock shares are estimated from
    # the leapfrog steps each took (a step's cost is the same throughout).
    warm_share = float(steps[:, :warmup].sum() / max(steps.sum(), 1))
    warm_div, warm_acc, warm_steps = div[:, :warmup], acc[:, :warmup], steps[:, :warmup]
    div, acc, steps = div[:, warmup:], acc[:, warmup:], steps[:, warmup:]
    weights = BnnWeights(v=z["v"], w=z["w"], c=z["c"], b=z["b"])
    summary = {
        "chain_method": chain_method, "devices": n_dev, "chains_per_device": per_dev,
        "rounds": rounds, "seconds_compile": t_compile, "seconds_mcmc": t_run,
        "seconds_warmup": warm_share * t_run, "seconds_sampling": (1 - warm_share) * t_run,
        "timing_note": "warm-up/sampling split of seconds_mcmc estimated from leapfrog steps",
        "per_chain": {
            "divergences": div.sum(axis=1).astype(int).tolist(),
            "divergences_warmup": warm_div.sum(axis=1).astype(int).tolist(),
            "mean_accept_prob": acc.mean(axis=1).tolist(),
            "mean_num_steps": steps.mean(axis=1).tolist(),
            "mean_tree_depth": _tree_depth(steps).mean(axis=1).tolist(),
            "max_tree_depth_hits": (steps >= 2 ** int(max_tree_depth) - 1).sum(axis=1)
            .astype(int).tolist(),
            "warmup_mean_num_steps": warm_steps.mean(axis=1).tolist(),
            "warmup_mean_accept_prob": warm_acc.mean(axis=1).tolist(),
            "step_size": step_size.astype(float).tolist(),
        },
    }
    return weights, summary
