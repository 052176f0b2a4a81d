"""Checks of the reference posteriors pooled over instances: the paper's Table 3 and the
simulation-based calibration test. Pure functions on arrays and frames.

Pooled over instances: rank histogram (20 bins), 90% coverage with a bootstrap over whole
instances, its range over cells, the median corr(posterior mean, f*), MCSE percentiles; the
calibration test of rank uniformity and coverage used by the test suite. The per-point
quantities come from :mod:`postrisk.tasks.diagnostics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from postrisk.priors.base import PRIOR_ENTRIES
from postrisk.tasks.diagnostics import rank_bin_probabilities, rank_bins

#: The paper's name of each prior in its Table 3 (printed beside ours): ours in upper case.
PAPER_PRIOR = {name: name.upper() for name in PRIOR_ENTRIES}


def paper_table3(prior: str) -> dict[str, object]:
    """The paper's Table 3 entries of one prior (empty for a prior it does not report)."""
    from postrisk.evaluation.paper import paper_text, paper_value

    fam = PAPER_PRIOR.get(prior)
    if fam is None or paper_value("table3", "coverage90_pooled", fam, "mean") is None:
        return {}
    lo = paper_value("table3", "coverage90_pooled", fam, "ci_low")
    hi = paper_value("table3", "coverage90_pooled", fam, "ci_high")
    cells = paper_text("table3", "coverage90_range_over_cells", fam, "range")
    return {"coverage90_pooled": paper_value("table3", "coverage90_pooled", fam, "mean"),
            "coverage90_ci": f"{lo:.3f}–{hi:.3f}",
            "coverage90_range_over_cells": cells.replace("-", "–") if cells else None,
            "mcse_var_pct_median": paper_value("table3", "mcse_var_pct", fam, "median"),
            "mcse_var_pct_p95": paper_value("table3", "mcse_var_pct", fam, "p95"),
            "corr_mean_ftrue_median": paper_value("table3", "corr_mean_ftrue", fam, "median")}


def bootstrap_pooled_share(hits: np.ndarray, totals: np.ndarray, rng: np.random.Generator,
                           n_boot: int = 2000, level: float = 0.95) -> tuple[float, float, float]:
    """Pooled share Σhits/Σtotals with a percentile bootstrap over whole units (instances for
    Table 3, datasets for the evaluation tables)."""
    hits, totals = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    pooled = hits.sum() / totals.sum()
    idx = rng.integers(hits.size, size=(n_boot, hits.size))
    boot = hits[idx].sum(axis=1) / totals[idx].sum(axis=1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(pooled), float(lo), float(hi)


@dataclass(frozen=True)
class CalibrationTest:
    """Simulation-based calibration over instances (docs/design.md, "Reference-posterior
    checks"): rank uniformity of each test quantity (χ²) and 90% coverage of f(x) (two-sided
    binomial), each at level ``alpha``."""

    n: int
    rank_pvalues: dict[str, float]
    coverage90: float
    coverage_pvalue: float
    alpha: float

    @property
    def passed(self) -> bool:
        return (all(p >= self.alpha for p in self.rank_pvalues.values())
                and self.coverage_pvalue >= self.alpha)


def rank_uniformity_pvalue(ranks: np.ndarray, n_draws: int, bins: int = 10) -> float:
    """χ² p-value of ranks 0 … n_draws against their exact bin probabilities under uniformity."""
    from scipy import stats  # heavy import, only where needed

    ranks = np.asarray(ranks)
    counts = np.bincount(rank_bins(ranks, n_draws, bins), minlength=bins)
    probs = rank_bin_probabilities(n_draws, bins)
    return float(stats.chisquare(counts, probs * ranks.size).pvalue)


def calibration_test(ranks: dict[str, np.ndarray], covered: np.ndarray, n_draws: int,
                     alpha: float = 1e-3, bins: int = 10) -> CalibrationTest:
    """One rank per instance for each test quantity (e.g. f at a random evaluation point, and
    the data log-likelihood), plus whether f* was inside the central 90% interval."""
    from scipy import stats

    covered = np.asarray(covered)
    k = int(np.sum(covered))
    return CalibrationTest(
        n=int(covered.size),
        rank_pvalues={name: rank_uniformity_pvalue(r, n_draws, bins) for name, r in ranks.items()},
        coverage90=k / covered.size,
        coverage_pvalue=float(stats.binomtest(k, covered.size, 0.9).pvalue),
        alpha=alpha,
    )


def table3(instances: pd.DataFrame, points: dict[str, dict[str, np.ndarray]],
           rng: np.random.Generator) -> pd.DataFrame:
    """Table 3 per prior, with the paper's values beside ours.

    ``instances``: one row per task store with columns prior, dataset, noise, coverage, seed,
    n_eval, covered90 (count of covered points), corr_mean_ftrue. ``points[prior]``: arrays
    over all evaluation points of all its instances: ``rank_hist`` (pooled 20-bin shares),
    ``rank_expected`` (the exact bin probabilities, :func:`rank_bin_probabilities`) and
    ``mcse_var`` (relative MCSE per point). The rank deviation is measured against
    ``rank_expected``, so a perfect sampler's expected histogram has deviation 0.
    """
    rows = []
    for prior, group in instances.groupby("prior", sort=False):
        pooled, lo, hi = bootstrap_pooled_share(group["covered90"].to_numpy(),
                                                group["n_eval"].to_numpy(), rng)
        cells = group.groupby(["dataset", "noise", "coverage"])
        cell_cov = cells["covered90"].sum() / cells["n_eval"].sum()
        mcse = points[prior]["mcse_var"]
        paper = paper_table3(prior)
        rows.append({
            "prior": prior, "instances": len(group), "points": int(group["n_eval"].sum()),
            "coverage90_pooled": round(pooled, 4),
            "coverage90_ci": f"{lo:.3f}–{hi:.3f}",
            "coverage90_range_over_cells": f"{cell_cov.min():.3f}–{cell_cov.max():.3f}",
            "rank_hist_max_dev_pp": round(
                100 * float(np.max(np.abs(points[prior]["rank_hist"]
                                          - points[prior]["rank_expected"]))), 2),
            "mcse_var_pct_median": round(100 * float(np.median(mcse)), 2),
            "mcse_var_pct_p95": round(100 * float(np.quantile(mcse, 0.95)), 2),
            "corr_mean_ftrue_median": round(float(np.median(group["corr_mean_ftrue"])), 3),
            **{f"paper_{k}": v for k, v in paper.items()},
        })
    return pd.DataFrame(rows)
