"""Table 3 of the classification family: the reference posteriors' checks pooled over the
instances of each prior, as the regression benchmark's Table 3 pools its task stores
(:mod:`postrisk.evaluation.posterior_checks`).

The unit checked is an (evaluation point, class) pair: per pair the rank of π*_k(x) among the
instance's D stored draws of π_k(x) and whether π*_k(x) lies in their central 90% interval,
both recomputed from the draws; the rank of f*_k(x) among the latent draws and its 90%
coverage (the store's flags: the latent draws are not kept); the relative MCSE of the posterior
variance of π_k(x), and with several chains its R̂ and ESS. Per instance: the pairs covered
(all, on the outermost coverage shell, on the rest), corr(posterior mean of π, π*) over its
pairs, max R̂, min ESS, divergences, seconds, and the largest distance of a stored draw's
class probabilities from the simplex (|Σ_k π_k − 1|). Pure functions on frames and arrays, and
the reading of the stores.

Seed validity follows the regression's rule (:mod:`postrisk.tasks.validity`): a seed of a cell
(dataset, noise, coverage, K) is valid when the cell's BNN instance of that seed has max R̂ ≤
``RHAT_THRESHOLD``; when it is not, the seed's GP and BNN instances are dropped alike. No seed
replaces a dropped one: Table 3 says how many were dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from postrisk.classification.key import CLASSIFICATION_KEY_COLUMNS
from postrisk.classification.store import validate_classification_store
from postrisk.covariates.pools import N_SHELLS
from postrisk.evaluation.posterior_checks import (
    perfect_sampler_coverage,
    pooled_share_t_interval,
    rank_uniformity_pvalue,
)
from postrisk.tasks.diagnostics import (
    N_RANK_BINS,
    covered_central,
    rank_bin_probabilities,
    rank_histogram,
    rank_of_truth,
)
from postrisk.tasks.validity import RHAT_STRICT, RHAT_THRESHOLD

#: The columns that name a cell: its instances of every prior share their seeds.
CELL = ["dataset", "noise", "coverage", "classes"]
#: The prior whose R̂ decides whether a seed is valid.
DECIDING_PRIOR = "bnn"
#: The outermost coverage shell (under ``ood`` it holds no training input).
OUTER_SHELL = N_SHELLS - 1
#: The central interval's level whose coverage Table 3 reports.
LEVEL = 0.9
#: The per-pair arrays of one instance that Table 3 pools over a prior's instances.
PAIR_ARRAYS = ("ranks", "ranks_latent", "mcse_var", "rhat", "ess")
#: Table 3's column of the share of pairs whose R̂ is at most ``RHAT_STRICT``.
RHAT_STRICT_COLUMN = "rhat_share_le_" + f"{RHAT_STRICT}".replace(".", "_")
#: Table 3's columns, in order (:func:`classification_table3` says what each holds).
TABLE3_COLUMNS = (
    "prior", "instances", "instances_dropped", "draws", "points", "coverage90_pooled",
    "coverage90_ci", "coverage90_nominal", "nominal_within_ci", "coverage90_range_over_cells",
    "coverage90_latent_pooled", "coverage90_outer", "coverage90_rest", "rank_hist_max_dev_pp",
    "rank_hist_max_dev_pp_latent", "rank_p_pooled_points", "rank_p_pooled_points_latent",
    "mcse_var_pct_median", "mcse_var_pct_p95", "rhat_max", RHAT_STRICT_COLUMN, "ess_median",
    "ess_min", "corr_mean_true_median", "divergences", "simplex_max_dev",
    "seconds_per_instance_median",
)


def instance_checks(ds: xr.Dataset) -> tuple[dict, dict[str, np.ndarray]]:
    """One opened classification store's row of Table 3's instance frame and its per-pair
    arrays (:data:`PAIR_ARRAYS`; ``rhat`` and ``ess`` empty for one chain). The store is taken
    as it is (:func:`read_instance` validates it first): the simplex deviation measures what
    the draws hold."""
    draws = ds["prob_draws"].values
    n_draws, n_eval, k = draws.shape
    truth = ds["prob_true_eval"].values
    flat, true = draws.reshape(n_draws, -1), truth.reshape(-1)
    covered = covered_central(flat, true, LEVEL).reshape(n_eval, k)
    outer = ds["shell_eval"].values == OUTER_SHELL
    timings = json.loads(ds.attrs["timings"])
    summary = json.loads(ds.attrs["sampler_summary"])
    chain_arrays = {name: (ds[name].values.reshape(-1).astype(float) if name in ds
                           else np.empty(0)) for name in ("rhat", "ess")}
    row = {
        **{column: ds.attrs[column] for column in CLASSIFICATION_KEY_COLUMNS},
        "classes": int(ds.attrs["classes"]), "seed": int(ds.attrs["seed"]),
        "n": int(ds.attrs["n"]), "n_eval": int(n_eval), "draws": int(n_draws),
        "chains": int(ds.attrs.get("chains", 1)), "points": int(n_eval * k),
        "covered90": int(covered.sum()),
        "covered90_latent": int(ds["covered90_latent"].values.sum()),
        "corr_mean_true": float(np.corrcoef(ds["prob_mean"].values.reshape(-1), true)[0, 1]),
        "max_rhat": (float(chain_arrays["rhat"].max()) if chain_arrays["rhat"].size
                     else np.nan),
        "min_ess": float(chain_arrays["ess"].min()) if chain_arrays["ess"].size else np.nan,
        "divergences": int(sum(summary.get("per_chain", {}).get("divergences", [0]))),
        "seconds": float(timings.get("sample_s", 0.0) + timings.get("posterior_s", 0.0)),
        "simplex_max_dev": float(np.max(np.abs(draws.sum(axis=-1, dtype=np.float64) - 1.0))),
        "covered90_outer": int(covered[outer].sum()), "points_outer": int(outer.sum() * k),
        "covered90_rest": int(covered[~outer].sum()), "points_rest": int((~outer).sum() * k),
    }
    arrays = {"ranks": rank_of_truth(flat, true),
              "ranks_latent": ds["rank_true_latent"].values.reshape(-1),
              "mcse_var": ds["mcse_var"].values.reshape(-1).astype(float), **chain_arrays}
    return row, arrays


def read_instance(store: str | Path | xr.Dataset) -> tuple[dict, dict[str, np.ndarray]]:
    """:func:`instance_checks` of a store checked against the contract
    (:func:`~postrisk.classification.store.validate_classification_store`)."""
    return instance_checks(validate_classification_store(store))


def mark_valid(instances: pd.DataFrame, threshold: float = RHAT_THRESHOLD) -> pd.DataFrame:
    """``instances`` with ``valid``: False for every instance of a (cell, seed) whose BNN
    instance has max R̂ above ``threshold``, or no R̂ at all (one chain cannot show
    convergence); True otherwise, also where the cell has no BNN instance of that seed.
    Dropped instances stay in the frame, flagged."""
    out = instances.copy()
    seed_key = [*CELL, "seed"]
    deciding = out[out["prior"] == DECIDING_PRIOR]
    converged = {tuple(key): bool(rhat <= threshold) for key, rhat in
                 zip(deciding[seed_key].itertuples(index=False), deciding["max_rhat"],
                     strict=True)}
    out["valid"] = [converged.get(tuple(key), True)
                    for key in out[seed_key].itertuples(index=False)]
    return out


def pool_points(priors: Sequence[str], draws: Sequence[int],
                arrays: Sequence[Mapping[str, np.ndarray]]) -> dict[str, dict]:
    """Per prior, its instances' per-pair arrays (:data:`PAIR_ARRAYS`) concatenated, with ``draws``
    (D), the 20-bin rank histograms of π* (``rank_hist``) and of f* (``rank_hist_latent``) and
    the exact bin probabilities of a calibrated sampler at D (``rank_expected``). Instances of
    one prior must share D (a ValueError otherwise)."""
    n_draws: dict[str, int] = {}
    pooled: dict[str, dict[str, list]] = {}
    for prior, d, instance in zip(priors, draws, arrays, strict=True):
        if n_draws.setdefault(prior, int(d)) != int(d):
            raise ValueError(f"{prior}: instances differ in the number of draws "
                             f"({n_draws[prior]} and {int(d)})")
        for name in PAIR_ARRAYS:
            pooled.setdefault(prior, {}).setdefault(name, []).append(instance[name])
    points = {}
    for prior, lists in pooled.items():
        d = n_draws[prior]
        joined = {name: np.concatenate(values) for name, values in lists.items()}
        points[prior] = {**joined, "draws": d,
                         "rank_hist": rank_histogram(joined["ranks"], d),
                         "rank_hist_latent": rank_histogram(joined["ranks_latent"], d),
                         "rank_expected": rank_bin_probabilities(d)}
    return points


def collect(stores: Sequence[str | Path | xr.Dataset]) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Every store's row (:func:`read_instance`), flagged ``valid`` (:func:`mark_valid`), and
    per prior the pooled per-pair arrays of its valid instances (:func:`pool_points`). Instances
    of one prior must share D, valid or not (a ValueError otherwise)."""
    read = [read_instance(store) for store in stores]
    instances = mark_valid(pd.DataFrame([row for row, _ in read]))
    draws = instances.groupby("prior", sort=False)["draws"].unique()
    mixed = {prior: sorted(int(d) for d in values) for prior, values in draws.items()
             if len(values) > 1}
    if mixed:
        raise ValueError(f"instances of one prior differ in the number of draws: {mixed}")
    keep = instances["valid"].to_numpy()
    points = pool_points(instances.loc[keep, "prior"], instances.loc[keep, "draws"],
                         [a for (_, a), ok in zip(read, keep, strict=True) if ok])
    return instances, points


def _share(hits: pd.Series, totals: pd.Series) -> float:
    """Σhits/Σtotals, NaN without any total."""
    total = float(totals.sum())
    return float(hits.sum()) / total if total > 0 else float("nan")


def _max_dev_pp(shares: np.ndarray, expected: np.ndarray) -> float:
    """The largest distance of a histogram's shares from their expected values, in points
    of percentage."""
    return round(100 * float(np.max(np.abs(shares - expected))), 2)


def _range(values: pd.Series) -> str:
    """"min–max" of ``values``, "n/a" without any."""
    values = values.dropna()
    return f"{values.min():.3f}–{values.max():.3f}" if len(values) else "n/a"


def _pair_statistics(pooled: Mapping[str, np.ndarray]) -> dict[str, float]:
    """One prior's statistics over its pooled pairs: MCSE percentiles, R̂ and ESS (NaN where
    its instances have one chain)."""
    rhat, ess, mcse = pooled["rhat"], pooled["ess"], pooled["mcse_var"]
    with_chains = rhat.size > 0
    return {
        "mcse_var_pct_median": round(100 * float(np.median(mcse)), 2),
        "mcse_var_pct_p95": round(100 * float(np.quantile(mcse, 0.95)), 2),
        "rhat_max": round(float(rhat.max()), 4) if with_chains else np.nan,
        RHAT_STRICT_COLUMN: (round(float(np.mean(rhat <= RHAT_STRICT)), 4) if with_chains
                             else np.nan),
        "ess_median": round(float(np.median(ess)), 1) if with_chains else np.nan,
        "ess_min": round(float(ess.min()), 1) if with_chains else np.nan,
    }


def prior_row(group: pd.DataFrame, pooled: Mapping | None) -> dict[str, object]:
    """Table 3's statistics of one prior's valid instances ``group`` and their pooled pairs
    (:func:`pool_points`; None, and every statistic NaN, without a valid instance)."""
    if pooled is None or group.empty:
        return {"instances": 0}
    d = int(pooled["draws"])
    share, lo, hi = pooled_share_t_interval(group["covered90"].to_numpy(),
                                            group["points"].to_numpy())
    nominal = perfect_sampler_coverage(d, LEVEL)
    cells = group.groupby(CELL)
    expected = pooled["rank_expected"]
    return {
        "instances": len(group), "draws": d, "points": int(group["points"].sum()),
        "coverage90_pooled": round(share, 4),
        "coverage90_ci": "n/a" if np.isnan(lo) else f"{lo:.3f}–{hi:.3f}",
        "coverage90_nominal": round(nominal, 4),
        "nominal_within_ci": None if np.isnan(lo) else bool(lo <= nominal <= hi),
        "coverage90_range_over_cells": _range(cells["covered90"].sum()
                                              / cells["points"].sum()),
        "coverage90_latent_pooled": round(_share(group["covered90_latent"],
                                                 group["points"]), 4),
        "coverage90_outer": round(_share(group["covered90_outer"], group["points_outer"]), 4),
        "coverage90_rest": round(_share(group["covered90_rest"], group["points_rest"]), 4),
        "rank_hist_max_dev_pp": _max_dev_pp(pooled["rank_hist"], expected),
        "rank_hist_max_dev_pp_latent": _max_dev_pp(pooled["rank_hist_latent"], expected),
        "rank_p_pooled_points": round(rank_uniformity_pvalue(pooled["ranks"], d, N_RANK_BINS),
                                      4),
        "rank_p_pooled_points_latent": round(rank_uniformity_pvalue(
            pooled["ranks_latent"], d, N_RANK_BINS), 4),
        **_pair_statistics(pooled),
        "corr_mean_true_median": round(float(np.median(group["corr_mean_true"])), 3),
        "divergences": int(group["divergences"].sum()),
        "simplex_max_dev": float(group["simplex_max_dev"].max()),
        "seconds_per_instance_median": round(float(np.median(group["seconds"])), 2),
    }


def classification_table3(instances: pd.DataFrame, points: Mapping[str, Mapping]
                          ) -> pd.DataFrame:
    """Table 3 per prior, over the valid instances: one row per prior of ``instances``
    (:func:`collect`'s frame, flagged ``valid``; ``points``: the pooled pairs of the valid
    instances).

    Columns: ``instances`` (valid) and ``instances_dropped`` (by the seed rule, not replaced);
    ``draws`` (D) and ``points`` ((evaluation point, class) pairs); ``coverage90_pooled``, the
    share of pairs whose π*_k(x) lies in the central 90% interval of the draws, with
    ``coverage90_ci``, a 95% t-interval over the instances (:func:`pooled_share_t_interval`;
    "n/a" for one instance), ``coverage90_nominal``, a perfect sampler's coverage at D
    (:func:`perfect_sampler_coverage`), ``nominal_within_ci`` and the range over the cells;
    the latent f*'s pooled coverage; the coverage of π* on the outermost coverage shell and on
    the rest; the rank histograms' largest distance from the exact bin probabilities in points
    of percentage, of π* and of f* (``_latent``); ``rank_p_pooled_points`` (and ``_latent``), the
    χ² p-value of the pooled ranks against the exact bin probabilities, which treats every pair
    as independent although the pairs of one instance share its posterior and its draws (and
    the classes of one point sum to one): a small p-value is a prompt to look at the
    histogram, not a test at its nominal level; the relative MCSE of the posterior variance in
    percent (median, 95th percentile); R̂ (max, share of pairs ≤ ``RHAT_STRICT``) and bulk ESS
    (median, min) over the pairs; the median over instances of corr(posterior mean of π, π*);
    the divergences; the largest simplex deviation of a draw; the median seconds per instance.
    """
    rows = []
    for prior, group in instances.groupby("prior", sort=False):
        valid = group[group["valid"].astype(bool)]
        rows.append({"prior": prior, "instances_dropped": int(len(group) - len(valid)),
                     **prior_row(valid, points.get(prior))})
    return pd.DataFrame(rows).reindex(columns=list(TABLE3_COLUMNS))
