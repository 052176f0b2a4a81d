"""An instance's quality record (posteriordb-style) and the Monte-Carlo error of its oracle
targets (docs/release.md, "What a release holds"). Pure functions of a task store's contents.

The record says which checks the instance's reference posterior went through, with their
thresholds and outcomes, how it was sampled (settings, chains, draws), with which software and
configuration, and how large the Monte-Carlo error of its oracle targets is. Everything in it is
a function of the store (and, for the validity rule, of the cell's BNN R̂), so ``postrisk verify``
recomputes it and compares it exactly.

**Monte-Carlo error of the oracle targets.** With D draws of f at a point, the posterior mean
m and variance σ²_f the targets use are Monte-Carlo estimates (exact for GP instances, whose
mean and variance are closed forms). Their standard errors come from batch means over the draws
in chain order (:data:`~postrisk.tasks.diagnostics.N_MCSE_BATCHES` batches), so within-chain
dependence counts: se(σ²_f) is the store's relative ``mcse_var`` times σ²_f, se(m) the batch
means' standard error of the mean. The posterior excess risk of a prediction â, σ²_f +
(â − m)², then has, to first order, se = √(se(σ²_f)² + (2 (â − m) se(m))²)
(:func:`target_mcse`, per point, for any prediction).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from postrisk.tasks.diagnostics import (
    N_MCSE_BATCHES,
    N_RANK_BINS,
    batch_means_mcse_mean,
    rank_bin_probabilities,
    rank_histogram,
)
from postrisk.tasks.validity import RHAT_THRESHOLD

#: The record's layout version (a change of its fields changes it).
QUALITY_VERSION = 1


def target_mcse(posterior_var: np.ndarray, mcse_var: np.ndarray, mcse_mean: np.ndarray,
                pred_mean: np.ndarray | None = None,
                posterior_mean: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per point, the Monte-Carlo standard error of each oracle target: ``posterior_variance``
    (``mcse_var`` relative, times σ²_f) and, for a prediction ``pred_mean``,
    ``posterior_excess_risk`` (first order: √(se(σ²)² + (2 (â − m) se(m))²)); without a
    prediction, the latter at â = m."""
    se_var = np.asarray(mcse_var, dtype=float) * np.asarray(posterior_var, dtype=float)
    gap = (np.zeros_like(se_var) if pred_mean is None
           else np.asarray(pred_mean, dtype=float) - np.asarray(posterior_mean, dtype=float))
    se_risk = np.sqrt(se_var**2 + (2 * gap * np.asarray(mcse_mean, dtype=float)) ** 2)
    return {"posterior_variance": se_var, "posterior_excess_risk": se_risk}


def _summary(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=float)
    return {"median": float(np.median(values)), "p95": float(np.quantile(values, 0.95)),
            "max": float(np.max(values))}


def quality_record(ds, cell_bnn_max_rhat: float | None) -> dict:
    """The quality record of the task store ``ds`` (an xarray Dataset). ``cell_bnn_max_rhat``:
    the max R̂ of its cell's BNN instance, which decides whether its seed is valid (None: no
    BNN instance in the grid, every seed valid)."""
    attrs = ds.attrs
    draws = ds["posterior_draws"].values
    n_draws, n_eval = draws.shape
    ranks = ds["rank_true"].values
    deviation = rank_histogram(ranks, n_draws) - rank_bin_probabilities(n_draws)
    sd = np.sqrt(ds["posterior_var"].values)
    se_mean = batch_means_mcse_mean(draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        se_mean_rel = np.where(sd > 0, se_mean / sd, 0.0)
    checks: dict = {
        "validity": {
            "rule": "the seed is valid when its cell's BNN instance has max split-R̂ ≤ the "
                    "threshold over its evaluation points",
            "threshold": RHAT_THRESHOLD, "cell_bnn_max_rhat": cell_bnn_max_rhat,
            "passed": bool(cell_bnn_max_rhat is None or cell_bnn_max_rhat <= RHAT_THRESHOLD)},
        "coverage90": {"value": float(np.mean(ds["covered90"].values)), "nominal": 0.9,
                       "points": int(n_eval)},
        "rank_of_truth": {"bins": N_RANK_BINS,
                          "max_deviation_pp": float(100 * np.max(np.abs(deviation)))},
        "loglik_rank": {"value": int(attrs["rank_loglik"]), "of": int(n_draws)},
    }
    if "rhat" in ds:
        checks["rhat"] = {"max": float(np.max(ds["rhat"].values)),
                          "threshold": RHAT_THRESHOLD,
                          "passed": bool(np.max(ds["rhat"].values) <= RHAT_THRESHOLD),
                          "ess_min": float(np.min(ds["ess"].values))}
    return {
        "version": QUALITY_VERSION,
        "checks": checks,
        "sampler": json.loads(attrs.get("sampler_settings", "{}")),
        "chains": int(attrs.get("chains", 1)), "draws": int(n_draws),
        "versions": json.loads(attrs.get("versions", "{}")),
        "config_digest": attrs.get("config_digest", ""),
        "sample_config_digest": attrs.get("sample_config_digest", ""),
        "mcse": {
            "batches": N_MCSE_BATCHES,
            "posterior_variance_relative": _summary(ds["mcse_var"].values),
            "posterior_mean_relative_to_sd": _summary(se_mean_rel),
            "posterior_excess_risk": "per point for a prediction â: "
                                     "√(se(σ²_f)² + (2 (â − m) se(m))²) "
                                     "(postrisk.tasks.quality.target_mcse); at â = m, "
                                     "se(σ²_f)",
        },
    }


def record_differences(recorded: Mapping, again: Mapping, where: str = "") -> list[str]:
    """The paths (``checks.coverage90.value``, …) at which two records differ."""
    out = []
    for key in sorted(set(recorded) | set(again)):
        path = f"{where}.{key}" if where else str(key)
        a, b = recorded.get(key), again.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += record_differences(a, b, path)
        elif a != b:
            out.append(path)
    return out
