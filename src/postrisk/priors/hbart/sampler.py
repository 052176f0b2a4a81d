"""Heteroscedastic BART's posterior engine: bartz conditions our tree prior
(:mod:`postrisk.priors.hbart.model`; docs/design.md, "Task instances").

bartz 0.13's low-level MCMC (``mcmcstep.init`` / ``mcmcloop.run_mcmc``) with per-point error
scales σᵢ = sqrt(noise_var_trainᵢ) and the global error precision held fixed: bartz requires a
(ν, rate) prior for continuous outcomes, so :func:`fixed_error_step` hides it from
``bartz.mcmcstep.step`` (which skips the precision update when ν is None — the documented way
to hold a precision fixed) and restores it afterwards. The precision is therefore exactly the
value we set: 1/T during a tempered stage (noise SD σᵢ·√T), 1 afterwards. The evaluation rows
ride along as rows marked missing, so their draws come from the same run. Tempered warm-up:
stages k = 0 … S−1 at T_k = t0^(1−k/S), equal lengths over the first ``share`` of the warm-up,
then T = 1 for the rest of the warm-up and the sampling. Each stage is one ``run_mcmc`` call
continuing the previous state with the same key; bartz seeds iteration i by
``fold_in(key, i)``, so splitting a run into stages changes nothing but the temperature (with
t0 = 1 the draws equal a single run's bit for bit). Chains are vectorised (``num_chains``) and
sharded over the JAX devices (``mesh``; how many: :func:`chain_devices`). JAX x64 must be off
(bartz fails with it).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from postrisk.core.jax_env import devices_for_chains
from postrisk.core.progress import progress_steps
from postrisk.priors.base import training_targets
from postrisk.priors.hbart.model import TreePrior

logger = logging.getLogger(__package__)  # one logger per prior: postrisk.priors.hbart


@dataclass(frozen=True)
class Stage:
    """One ``run_mcmc`` call: ``iterations`` MCMC steps at temperature ``temperature``, the
    first ``burn`` of them not saved (the rest, if any, saved every ``thin``-th)."""

    kind: str  # "tempered" | "sampling" (the rest of the warm-up at T = 1, then the draws)
    temperature: float
    iterations: int
    burn: int


def tempering_schedule(warmup: int, draws_per_chain: int, thin: int, t0: float, stages: int,
                       share: float) -> list[Stage]:
    """Stages T_k = t0^(1−k/stages), k = 0 … stages−1, of equal length ⌊share·warmup/stages⌋
    (dropped if 0), then one call at T = 1: the rest of the warm-up, then draws_per_chain·thin
    steps saving every ``thin``-th. Equal stage lengths let bartz's compiled loop be reused
    (its traces are shaped by the call's length)."""
    per = int(round(share * warmup)) // stages if stages > 0 else 0
    out = [Stage("tempered", float(t0 ** (1.0 - k / stages)), per, per)
           for k in range(stages)] if per > 0 else []
    rest = warmup - sum(s.iterations for s in out)
    out.append(Stage("sampling", 1.0, rest + draws_per_chain * thin, rest))
    return out


def check_x64_off() -> None:
    """bartz needs JAX x64 off; raise a clear error otherwise."""
    import jax

    if jax.config.jax_enable_x64:
        raise RuntimeError("HBART posterior needs JAX x64 OFF (bartz fails with "
                           "jax_enable_x64); run it in a process without x64 (one prior per "
                           "process, see postrisk.core.jax_env)")


def fixed_error_step(key, state):
    """``bartz.mcmcstep.step`` with the global error precision held at its current value.

    The step skips the precision update when the Wishart prior has ``nu = None``; the prior
    (a placeholder required by ``init`` for continuous outcomes) is hidden during the step and
    restored after it. Module-level, so ``run_mcmc`` compiles it once per shape.
    """
    from bartz.mcmcstep import step

    prior = state.error_cov_inv
    fixed = replace(state, error_cov_inv=replace(prior, nu=None, rate=None))
    out = step(key, fixed)
    return replace(out, error_cov_inv=replace(prior, value=out.error_cov_inv.value))


def set_error_precision(state, precision: float):
    """The state with every chain's global error precision set to ``precision`` (float32,
    keeping the array's sharding)."""
    import jax.numpy as jnp

    value = state.error_cov_inv.value
    new = value * jnp.float32(0.0) + jnp.float32(precision)
    return replace(state, error_cov_inv=replace(state.error_cov_inv, value=new))


def chain_devices(chains: int) -> tuple[int, int, str]:
    """(devices available, devices used, note): the chains are sharded over
    :func:`~postrisk.core.jax_env.devices_for_chains` of the JAX devices (bartz shards the
    chain axis evenly)."""
    import jax

    available = jax.local_device_count()
    used = devices_for_chains(chains, available)
    note = "" if used == available else (
        f"{chains} chains not divisible by {available} devices: sharded over {used}")
    return available, used, note


def init_state(prior: TreePrior, a: float, x_all: np.ndarray, y_all: np.ndarray,
               error_scale: np.ndarray, missing: np.ndarray, chains: int,
               devices: int, precision: float = 1.0):
    """bartz initial state for rows ``x_all`` (scaled covariates), ``missing`` rows ignored."""
    import jax.numpy as jnp
    from bartz import mcmcstep
    from bartz.prepcovars import GivenSplitsBinner

    check_x64_off()
    xt = jnp.asarray(np.asarray(x_all, dtype=np.float32).T)
    xinfo = jnp.asarray(np.tile(prior.cutpoints(), (xt.shape[0], 1)))
    binner = GivenSplitsBinner(xt, xinfo=xinfo)
    return mcmcstep.init(
        X=binner.bin(xt), y=jnp.asarray(y_all, dtype=jnp.float32), offset=0.0,
        max_split=binner.max_split, num_trees=prior.num_trees,
        p_nonterminal=jnp.asarray(prior.p_nonterminal(), dtype=jnp.float32),
        leaf_prior_cov_inv=mcmcstep.Wishart(nu=None, rate=None,
                                            value=prior.num_trees / float(a) ** 2),
        # placeholder prior (never used: fixed_error_step holds the precision fixed)
        error_cov_inv=mcmcstep.Wishart(nu=1.0, rate=1.0, value=precision),
        error_scale=jnp.asarray(error_scale, dtype=jnp.float32),
        missing=jnp.asarray(missing, dtype=bool),
        num_chains=chains, mesh=dict(chains=devices) if devices > 1 else None)


@dataclass
class TemperedRun:
    """Output of :func:`run_tempered`: draws (chains, draws per chain, rows) at all rows of
    the state, per-stage records, the final bartz state."""

    draws: np.ndarray
    stages: list[dict[str, Any]]
    final_state: Any


def run_tempered(state, key, schedule: list[Stage], thin: int,
                 label: str = "[hbart]") -> TemperedRun:
    """Run ``schedule`` on ``state`` (donated), one ``run_mcmc`` call per stage, same key;
    progress is logged one step per stage, ``label`` first.

    The last stage must save draws; they are the predictions at every row
    (``MainTraceWithTrainPred.train_pred``, missing rows included). Per stage the error
    precision in force is read back from the traces (min, max over steps and chains).
    """
    import jax
    from bartz.mcmcloop import MainTrace, MainTraceWithTrainPred, run_mcmc

    records: list[dict[str, Any]] = []
    draws = None
    with progress_steps(len(schedule), f"{label} tempered MCMC stages", logger) as progress:
        for i, stage in enumerate(schedule):
            t = time.perf_counter()
            state = set_error_precision(state, 1.0 / stage.temperature)
            n_save = (stage.iterations - stage.burn) // thin
            result = run_mcmc(key, state, n_save, n_burn=stage.burn, n_skip=thin,
                              step=fixed_error_step,
                              main_trace_type=MainTraceWithTrainPred if n_save else MainTrace)
            if n_save:
                draws = np.asarray(jax.device_get(result.main_trace.train_pred), dtype=np.float64)
            state = jax.block_until_ready(result.final_state)
            used = np.concatenate([  # the precision in the state after every step of this stage
                np.asarray(jax.device_get(t.error_cov_inv)).ravel()
                for t in (result.burnin_trace, result.main_trace) if t.error_cov_inv.size])
            seconds = time.perf_counter() - t
            records.append({"stage": i, "kind": stage.kind, "temperature": stage.temperature,
                            "iterations": stage.iterations, "burn": stage.burn,
                            "saved": n_save,
                            "noise_sd_multiplier": math.sqrt(stage.temperature),
                            "error_precision": 1.0 / stage.temperature,
                            "error_precision_used": [float(used.min()), float(used.max())],
                            "seconds": seconds})
            progress.advance(message=f"stage {i + 1} ({stage.kind}): T = {stage.temperature:.3f}, "
                                     f"{stage.iterations} iterations, {seconds:.1f} s")
    if draws is None:
        raise ValueError("the schedule saves no draws")
    return TemperedRun(draws=draws, stages=records, final_state=state)


def posterior_draws(prior: TreePrior, a: float, x_train: np.ndarray, y_train: np.ndarray,
                    noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                    settings: dict) -> tuple[np.ndarray, dict[str, Any]]:
    """Draws (chains, draws per chain, n_eval + n_train) at [x_eval; x_train] and the
    settings record (see
    :meth:`postrisk.priors.hbart.prior.HeteroscedasticBartPrior.posterior`)."""
    import bartz
    import jax

    from postrisk.core.jax_env import device_provenance

    check_x64_off()
    x_train = np.asarray(x_train, dtype=np.float64)
    x_eval = np.asarray(x_eval, dtype=np.float64).reshape(-1, x_train.shape[1])
    n_train, n_eval = x_train.shape[0], x_eval.shape[0]
    y, nv = training_targets(n_train, y_train, noise_var_train)
    chains, thin = int(settings["chains"]), int(settings["thin"])
    draws_per_chain, warmup = int(settings["draws_per_chain"]), int(settings["warmup"])
    temp = settings["tempering"]
    schedule = tempering_schedule(warmup, draws_per_chain, thin, float(temp["t0"]),
                                  int(temp["stages"]), float(temp["share"]))
    available, devices, note = chain_devices(chains)
    if note:
        logger.info("[hbart] %s", note)

    start = time.perf_counter()
    x_all = np.concatenate([x_eval, x_train])
    y_all = np.concatenate([np.zeros(n_eval), y])
    scale = np.concatenate([np.ones(n_eval), np.sqrt(nv)])
    missing = np.concatenate([np.ones(n_eval, dtype=bool), np.zeros(n_train, dtype=bool)])
    state = init_state(prior, a, x_all, y_all, scale, missing, chains, devices,
                       precision=1.0 / schedule[0].temperature)
    key = jax.random.key(int(rng.integers(2**31)))
    init_seconds = time.perf_counter() - start
    run = run_tempered(state, key, schedule, thin)
    final_precision = np.asarray(jax.device_get(run.final_state.error_cov_inv.value))
    record = {
        "conditioning": "mcmc", "sampler": f"bartz {bartz.__version__}", **device_provenance(),
        "bartz_version": bartz.__version__, "jax_version": jax.__version__,
        "x64": bool(jax.config.jax_enable_x64), "precision": "float32",
        "chains": chains, "draws_per_chain": draws_per_chain, "draws": chains * draws_per_chain,
        "warmup": warmup, "thin": thin,
        "tempering": {"t0": float(temp["t0"]), "stages": int(temp["stages"]),
                      "share": float(temp["share"])},
        "devices_available": available, "devices_used": devices, "device_note": note,
        "num_trees": prior.num_trees, "max_depth": prior.max_depth, "base": prior.base,
        "power": prior.power, "n_cutpoints": prior.n_cutpoints, "a": float(a),
        "error_precision": "fixed: 1/T per stage, 1 after warm-up (fixed_error_step)",
        "final_error_precision": [float(final_precision.min()), float(final_precision.max())],
        "stages": run.stages, "seconds_init": init_seconds,
        "seconds": time.perf_counter() - start,
    }
    return run.draws, record
