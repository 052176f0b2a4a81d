"""The Bayesian neural network as a prior (:class:`BayesianNeuralNetworkPrior`): the
network prior of :mod:`postrisk.priors.bnn.model` (fit: reference inputs and the scale constant;
the ground truth f*), conditioned by :mod:`postrisk.priors.bnn.sampler` (NumPyro NUTS,
float64)."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.priors.base import PosteriorResult
from postrisk.priors.bnn.model import (
    bnn_function,
    bnn_scale_constant,
    draw_weights,
    function_draws,
)
from postrisk.priors.bnn.sampler import run_nuts

logger = logging.getLogger(__package__)  # one logger per prior: postrisk.priors.bnn


class BayesianNeuralNetworkPrior:
    """f = b + a·(u − mean over reference inputs of u), u a tanh network with H hidden units
    and standard normal weights; conditioned by NumPyro NUTS (float64)."""

    name = "bnn"

    def fit(self, dataset: str, x: np.ndarray, target: np.ndarray, eval_index: np.ndarray,
            settings: dict, rng: np.random.Generator) -> dict:
        """Reference inputs (``settings["reference_inputs"]`` rows of the evaluation pool,
        without replacement) and the scale constant; ``target`` is not used."""
        start = time.perf_counter()
        x = as_matrix("x", x, finite=True)
        pool = np.asarray(eval_index, dtype=np.int64).reshape(-1)
        n_ref, hidden = int(settings["reference_inputs"]), int(settings["hidden"])
        if n_ref > pool.size:
            raise ValueError(f"{n_ref} reference inputs from an evaluation pool of {pool.size}")
        ref_index = pool[rng.choice(pool.size, size=n_ref, replace=False)]
        x_ref = x[ref_index]
        a = bnn_scale_constant(x[pool], x_ref, hidden, rng,
                               n_draws=int(settings["scale_draws"]))
        logger.info("[%s/bnn] H = %d, %d reference inputs; scale constant a = %.4g", dataset,
                    hidden, n_ref, a)
        return {"prior": "bnn", "a": float(a), "hidden": hidden,
                "reference_index": ref_index.tolist(), "reference_inputs": x_ref.tolist(),
                "scale_draws": int(settings["scale_draws"]),
                "seconds": time.perf_counter() - start}

    def sample(self, params: dict, x: np.ndarray, rng: np.random.Generator,
               info: dict | None = None) -> np.ndarray:
        """One draw of f* at the rows ``x`` (weights drawn by :func:`draw_weights`)."""
        if info is not None:
            info.update(method="network weights drawn from the prior")
        x = as_matrix("x", x, finite=True)
        x_ref = np.asarray(params["reference_inputs"], dtype=np.float64)
        weights = draw_weights(rng, int(params["hidden"]), x.shape[1])
        return bnn_function(x, weights, params["a"], x_ref)

    def posterior(self, params: dict, x_train: np.ndarray, y_train: np.ndarray,
                  noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                  settings: dict) -> PosteriorResult:
        """NUTS draws of f at [x_eval; x_train], chain-major (``settings`` = ``posterior.bnn``:
        chains, warmup, samples, target_accept, max_tree_depth; optional chain_method)."""
        import jax
        import numpyro

        from postrisk.core.jax_env import device_provenance

        start = time.perf_counter()
        x_train = as_matrix("x_train", x_train, finite=True)
        x_eval = as_matrix("x_eval", x_eval, n_columns=x_train.shape[1], finite=True)
        x_ref = np.asarray(params["reference_inputs"], dtype=np.float64)
        a, hidden = float(params["a"]), int(params["hidden"])
        chains, warmup, samples = (int(settings[k]) for k in ("chains", "warmup", "samples"))
        target_accept = float(settings["target_accept"])
        max_tree_depth = int(settings["max_tree_depth"])
        method = settings.get("chain_method", "parallel")
        seed = int(rng.integers(2 ** 32))
        logger.info("[bnn] NUTS: %d chains × (%d warm-up + %d draws), n = %d, n_eval = %d, "
                    "d = %d, H = %d, %d device(s), %s", chains, warmup, samples,
                    x_train.shape[0], x_eval.shape[0], x_train.shape[1], hidden,
                    jax.local_device_count(), method)
        weights, summary = run_nuts(x_train, y_train, noise_var_train, x_ref, a, hidden, seed,
                                    chains=chains, warmup=warmup, samples=samples,
                                    target_accept=target_accept, max_tree_depth=max_tree_depth,
                                    chain_method=method)
        t0 = time.perf_counter()
        draws = function_draws(weights, a, x_ref, np.concatenate([x_eval, x_train]))
        seconds_draws = time.perf_counter() - t0
        per_chain = summary["per_chain"]
        logger.info(f"[bnn] done in {time.perf_counter() - start:.1f} s (warm-up "
                    f"{summary['seconds_warmup']:.1f} s, sampling "
                    f"{summary['seconds_sampling']:.1f} s, f draws {seconds_draws:.1f} s); "
                    f"divergences {per_chain['divergences']}, step sizes "
                    f"{[round(s, 4) for s in per_chain['step_size']]}, mean steps "
                    f"{[round(s, 1) for s in per_chain['mean_num_steps']]}")
        out_settings: dict[str, Any] = {
            "sampler": "numpyro NUTS", "numpyro_version": numpyro.__version__,
            "jax_version": jax.__version__, **device_provenance(),
            "precision": "float64", "chains": chains, "warmup": warmup, "samples": samples,
            "target_accept": target_accept, "max_tree_depth": max_tree_depth,
            "init": "prior draw per chain", "seed": seed, "hidden": hidden,
            **summary, "seconds_draws": seconds_draws,
            "seconds": time.perf_counter() - start,
        }
        return PosteriorResult.from_chains(draws, settings=out_settings, diagnostics={})
