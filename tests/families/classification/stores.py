"""Small synthetic classification stores (K = 2) whose checks can be worked out by hand: the
draws of π_0(x) are the same D values at every point, and π*_0(x) sits between two of them so
that its rank is the one asked for."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from postrisk.classification.store import (
    ATTRS,
    CHAIN_VARIABLES,
    CLASSIFICATION_SCHEMA_VERSION,
    FAMILY,
    VARIABLES,
)
from postrisk.tasks.diagnostics import covered_central

CLASSES = 2
N_TRAIN = 4
N_FEATURES = 2


def class_draws(n_draws: int) -> np.ndarray:
    """The D draws of π_0(x), as the store holds them (float32), in ascending order."""
    return np.linspace(0.3, 0.7, n_draws).astype(np.float32)


def truth_of_rank(values: np.ndarray, rank: int) -> float:
    """A value with exactly ``rank`` of the ascending ``values`` below it: midway between two
    neighbours, or half a gap beyond either end."""
    v = values.astype(float)
    gap = v[1] - v[0]
    if rank == 0:
        return v[0] - gap / 2
    if rank == v.size:
        return v[-1] + gap / 2
    return (v[rank - 1] + v[rank]) / 2


def synthetic_store(ranks, *, prior: str = "gp", seed: int = 0, dataset: str = "concrete",
                    noise: str = "homoscedastic", coverage: str = "balanced",
                    n_draws: int = 39, chains: int = 1, rhat: float = 1.0,
                    outer: int = 0, mcse: float = 0.05, divergences=(0,),
                    seconds: float = 2.0) -> xr.Dataset:
    """A store passing the contract with one evaluation point per entry of ``ranks`` (the rank
    of π*_0(x) among the draws; π*_1(x)'s is D minus it), the first ``outer`` points on the
    outermost coverage shell, the latent ranks and flags those of π*, and with ``chains`` > 1
    R̂ = ``rhat`` and ESS = D at every pair."""
    from postrisk.covariates.pools import N_SHELLS

    ranks = np.asarray(ranks)
    n_eval = ranks.size
    values = class_draws(n_draws)
    truth0 = np.array([truth_of_rank(values, int(r)) for r in ranks])
    prob_true = np.stack([truth0, 1.0 - truth0], axis=1)
    draws = np.empty((n_draws, n_eval, CLASSES), dtype=np.float32)
    draws[:, :, 0] = values[:, None]
    draws[:, :, 1] = np.float32(1.0) - values[:, None]
    class_ranks = np.stack([ranks, n_draws - ranks], axis=1).astype(np.int32)
    covered = covered_central(draws.reshape(n_draws, -1),
                              prob_true.reshape(-1)).reshape(n_eval, CLASSES)
    sizes = {"train": N_TRAIN, "eval": n_eval, "feature": N_FEATURES, "class": CLASSES,
             "draw": n_draws}
    spec = {**VARIABLES, **(CHAIN_VARIABLES if chains > 1 else {})}
    data = {name: (dims, np.zeros([sizes[d] for d in dims], dtype=dtype))
            for name, (dims, dtype) in spec.items()}
    shell = np.zeros(n_eval, dtype=np.int8)
    shell[:outer] = N_SHELLS - 1
    data.update({
        "train_index": (("train",), np.arange(N_TRAIN, dtype=np.int64)),
        "eval_index": (("eval",), np.arange(N_TRAIN, N_TRAIN + n_eval, dtype=np.int64)),
        "temperature_train": (("train",), np.ones(N_TRAIN)),
        "temperature_eval": (("eval",), np.ones(n_eval)),
        "prob_true_train": (("train", "class"), np.full((N_TRAIN, CLASSES), 1 / CLASSES)),
        "prob_true_eval": (("eval", "class"), prob_true),
        "prob_draws": (("draw", "eval", "class"), draws),
        "prob_mean": (("eval", "class"), prob_true.copy()),
        "shell_eval": (("eval",), shell),
        "rank_true": (("eval", "class"), class_ranks),
        "covered90": (("eval", "class"), covered),
        "mcse_var": (("eval", "class"), np.full((n_eval, CLASSES), mcse)),
        "rank_true_latent": (("eval", "class"), class_ranks.copy()),
        "covered90_latent": (("eval", "class"), covered.copy()),
    })
    if chains > 1:
        data["rhat"] = (("eval", "class"), np.full((n_eval, CLASSES), rhat))
        data["ess"] = (("eval", "class"), np.full((n_eval, CLASSES), float(n_draws)))
    attrs = dict.fromkeys(ATTRS, "")
    attrs.update({
        "dataset": dataset, "prior": prior, "noise": noise, "coverage": coverage,
        "classes": CLASSES, "seed": seed, "family": FAMILY,
        "schema_version": CLASSIFICATION_SCHEMA_VERSION, "store_kind": "classification_task",
        "n": N_TRAIN, "n_eval": n_eval, "a": 1.0, "amplitude": 1.0,
        "entropy_share_target": 0.5, "entropy_share_prior": 0.5, "chains": chains,
        "sampler_summary": json.dumps({"per_chain": {"divergences": list(divergences)}}),
        "timings": json.dumps({"sample_s": seconds / 2, "posterior_s": seconds / 2}),
    })
    return xr.Dataset(data, coords={"class": np.arange(CLASSES)}, attrs=attrs)


#: Ranks 0 … D of π*_0(x) at D + 1 points, each once: an exactly uniform rank histogram, and at
#: D = 39 the points of ranks 3 … 36 covered by the central 90% interval (34 of 40).
UNIFORM_RANKS = np.arange(40)
UNIFORM_COVERED_POINTS = 34
