"""The NUTS engine of the classification reference posteriors (the GP's whitened latents and the
network's weights): NumPyro's functional ``numpyro.infer.hmc.hmc`` kernel on a potential the
prior module writes, every parameter standard normal under the prior.

Each chain starts from a prior draw of its parameters (standard normal, of the shapes given).
Warm-up (NumPyro's default adaptation: dual-averaging step size, diagonal mass matrix) and
sampling are one ``lax.scan``; the chains are spread over the host devices with ``jax.pmap`` (in
rounds when there are more chains than devices: :func:`postrisk.core.jax_env.devices_for_chains`);
the executable is compiled ahead of time and cached per (potential, shapes, settings), with the
data as its arguments, so further posteriors of the same shapes compile nothing. Everything
runs in float64 inside ``with jax.enable_x64(True):`` (never the global switch). Progress is
reported from inside the compiled loop (a host callback at every tenth of the iterations; it
reads the iteration number only and changes no number).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from postrisk.core.jax_env import devices_for_chains
from postrisk.core.progress import Progress, progress_steps

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


def check_settings(settings: Mapping) -> dict:
    """NUTS settings (chains, warmup, samples, target_accept, max_tree_depth), checked."""
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
def _chain_function(potential_gen: Callable, shapes: tuple, warmup: int, samples: int,
                    target_accept: float, max_tree_depth: int, marks: int) -> Any:
    """``run(keys, data)`` → (parameters of every iteration, (diverging, accept prob, leapfrog
    steps) per iteration, final step size), one chain per device (``jax.pmap``). ``shapes``:
    ((name, shape), …) of the parameters, each standard normal under the prior."""
    import jax
    import jax.numpy as jnp
    from jax import lax, random
    from numpyro.infer.hmc import hmc

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")
    total = warmup + samples
    every = max(1, math.ceil(total / marks)) if marks > 0 else 0

    def report(iteration):
        jax.debug.callback(_nuts_progress, iteration)

    def run_one(key, data):
        k_init, k_run = random.split(key)
        # one parameter: its key is k_init itself (the GP's latents as before the engine)
        k_params = random.split(k_init, len(shapes)) if len(shapes) > 1 else [k_init]
        z0 = {name: random.normal(k, shape) for (name, shape), k in zip(shapes, k_params,
                                                                         strict=True)}
        state = init_kernel(z0, warmup, target_accept_prob=target_accept,
                            max_tree_depth=max_tree_depth, trajectory_length=None,
                            model_args=data, rng_key=k_run)

        def body(state, i):
            new = sample_kernel(state, model_args=data)
            if every:
                done = i + 1
                lax.cond((done % every == 0) | (done == total), report, lambda _: None, done)
            return new, (new.z, new.diverging, new.accept_prob, new.num_steps)

        state, (z, *stats) = lax.scan(body, state, jnp.arange(total), length=total)
        return z, tuple(stats), state.adapt_state.step_size

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


def run_chains(potential_gen: Callable, shapes: Mapping[str, tuple[int, ...]], data: tuple,
               seed: int, settings: Mapping, label: str = "NUTS") -> dict:
    """NUTS over the parameters ``shapes`` with the potential ``potential_gen(*data)`` (a
    module-level function: NumPyro's ``potential_fn_gen``, the data its arguments).

    Returns ``z`` (name → draws after warm-up, (chains, samples, *shape)), ``stats`` (diverging,
    accept prob, leapfrog steps, each (chains, warm-up + samples)), ``step_size`` (chains,), and
    ``run`` (devices, rounds, seconds compiling and running). ``seed`` fixes everything.
    """
    global _ROUND
    import jax
    from jax import random

    s = check_settings(settings)
    used = devices_for_chains(s["chains"], jax.local_device_count())
    rounds = s["chains"] // used
    per_round = s["warmup"] + s["samples"]
    shape_key = tuple((name, tuple(int(n) for n in shape)) for name, shape in shapes.items())
    with jax.enable_x64(True):
        data = tuple(jax.numpy.asarray(a, dtype=jax.numpy.float64) for a in data)
        keys = random.split(random.PRNGKey(int(seed)), s["chains"]).reshape(rounds, used, -1)
        run, t_compile = _executable(
            (potential_gen, shape_key, s["warmup"], s["samples"], s["target_accept"],
             s["max_tree_depth"], int(PROGRESS_MARKS)), keys[0], data)
        if t_compile > 0:
            logger.info("%s: loop compiled in %.1f s (%s)", label, t_compile,
                        ", ".join(f"{n} {tuple(sh)}" for n, sh in shape_key))
        else:
            logger.info("%s: compiled code reused", label)
        out, t_run = [], 0.0
        with progress_steps(rounds * per_round, f"{label} iterations", logger) as progress:
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
    warm = s["warmup"]
    z = {name: np.concatenate([o[0][name] for o in out])[:, warm:] for name in shapes}
    stats = tuple(np.concatenate([o[1][i] for o in out]) for i in range(3))
    n_div = stats[0][:, warm:].sum(axis=1).astype(int)
    logger.info("%s: %d chain(s) × (%d + %d) in %.1f s; divergences per chain %s", label,
                s["chains"], warm, s["samples"], t_run, n_div.tolist())
    if n_div.sum():
        logger.warning("%s: %d divergent transition(s) after warm-up", label, int(n_div.sum()))
    return {"z": z, "stats": stats, "step_size": np.concatenate([o[2] for o in out]),
            "settings": s,
            "run": {"devices": used, "rounds": rounds, "seconds_compile": t_compile,
                    "seconds_mcmc": t_run}}


def chain_summary(chains: Mapping) -> dict:
    """JSON-able NUTS statistics per chain after warm-up (divergences, acceptance, step size,
    leapfrog steps, tree depth and its cap's hits) and the run's layout and timings, from
    :func:`run_chains`'s result."""
    s, warm = chains["settings"], chains["settings"]["warmup"]
    div, acc, steps = chains["stats"]
    st, ac, dv = steps[:, warm:], acc[:, warm:], div[:, warm:]
    depth = np.ceil(np.log2(st.astype(np.float64) + 1.0))
    return {
        **chains["run"],
        "per_chain": {
            "divergences": dv.sum(axis=1).astype(int).tolist(),
            "divergences_warmup": div[:, :warm].sum(axis=1).astype(int).tolist(),
            "mean_accept_prob": ac.mean(axis=1).tolist(),
            "step_size": chains["step_size"].astype(float).tolist(),
            "mean_num_steps": st.mean(axis=1).tolist(),
            "mean_tree_depth": depth.mean(axis=1).tolist(),
            "max_tree_depth_hits": (st >= 2 ** s["max_tree_depth"] - 1).sum(axis=1)
            .astype(int).tolist(),
        },
    }
