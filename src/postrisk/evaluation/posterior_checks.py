"""Checks of the reference posteriors pooled over instances: the paper's Table 3 and the
simulation-based calibration test. Pure functions on arrays and frames.

Pooled over instances: rank histogram (20 bins), 90% coverage with a bootstrap over whole
instances, its range over cells, the coverage a perfect sampler would show at the same number
of draws, the coverage on the outermost coverage shell and on the rest, the median
corr(posterior mean, f*), MCSE percentiles, the share of seeds the validity rule replaced; the
calibration test of rank uniformity and of coverage (against a perfect sampler's at the same D)
used by the test suite. The per-point quantities come from :mod:`postrisk.tasks.diagnostics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from postrisk.priors.base import PRIOR_ENTRIES
from postrisk.tasks.diagnostics import rank_bin_probabilities, rank_bins
from postrisk.tasks.validity import CELL

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
            "coverage90_ci": "n/a" if np.isnan(lo) else f"{lo:.3f}–{hi:.3f}",
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


def mean_t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` (one per unit: an instance, a replicate) with its Student-t interval
    at ``level`` over the units; NaN ends for fewer than two units."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    mean = float(values.mean()) if values.size else float("nan")
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf((1 + level) / 2, values.size - 1) * values.std(ddof=1)
                 / np.sqrt(values.size))
    return mean, mean - half, mean + half


def pooled_share_t_interval(hits: np.ndarray, totals: np.ndarray,
                            level: float = 0.95) -> tuple[float, float, float]:
    """Pooled share p = Σhits/Σtotals over units (instances) with a Student-t interval over
    the units: the ratio estimator's linearised standard error, sd(hitsᵢ − p·totalsᵢ) /
    (mean(totals)·√k), and the t quantile at k − 1 degrees of freedom; NaN ends for one unit.

    Unlike a percentile bootstrap over units, which at three instances can give little more
    than their [min, max], the t quantile (4.30 at k = 3) says how little a handful shows.
    """
    from scipy import stats

    hits, totals = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    pooled = float(hits.sum() / totals.sum())
    k = hits.size
    if k < 2:
        return pooled, float("nan"), float("nan")
    se = float(np.std(hits - pooled * totals, ddof=1) / (totals.mean() * np.sqrt(k)))
    half = float(stats.t.ppf((1 + level) / 2, k - 1)) * se
    return pooled, pooled - half, pooled + half


@dataclass(frozen=True)
class CalibrationTest:
    """Simulation-based calibration over instances (docs/design.md, "Reference-posterior
    checks"): rank uniformity of each test quantity (χ²) and 90% coverage of f(x) (two-sided
    binomial against ``coverage_nominal``, the coverage a perfect sampler has at the draws'
    D: :func:`perfect_sampler_coverage`), each at level ``alpha``."""

    n: int
    rank_pvalues: dict[str, float]
    coverage90: float
    coverage_nominal: float
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
    the data log-likelihood), plus whether f* was inside the central 90% interval of the
    instance's ``n_draws`` draws (:func:`postrisk.tasks.diagnostics.covered_central`).

    The coverage is tested against what a perfect sampler gives at that D,
    :func:`perfect_sampler_coverage` (0.865 at D = 50, 0.882 at D = 99), not against 0.90: the
    central interval of D exact draws covers less than its level, so a test against 0.90 reads
    an over-dispersed sampler at D = 50 (coverage ≈ 0.90) as calibrated and, with enough
    instances, rejects an exact one.

    The nominal assumes independent draws. For autocorrelated MCMC draws (the BNN's and
    HBART's SBCs) the plain D is used, not an effective D: an exact sampler whose draws are
    autocorrelated covers somewhat less than the nominal at D, since its sample quantiles are
    noisier (for Gaussian AR(1) draws at D = 50: 0.860 at lag-1 correlation 0.3 and 0.839 at
    0.6, against 0.865), but much more than the nominal at the bulk ESS (0.833 at ESS 27, 0.762
    at 12.5), which would over-correct. With D the coverage test errs, by that gap, towards
    flagging under-coverage and away from flagging over-coverage; the SBCs thin their chains
    to keep the gap small.
    """
    from scipy import stats

    covered = np.asarray(covered)
    k = int(np.sum(covered))
    nominal = perfect_sampler_coverage(n_draws)
    return CalibrationTest(
        n=int(covered.size),
        rank_pvalues={name: rank_uniformity_pvalue(r, n_draws, bins) for name, r in ranks.items()},
        coverage90=k / covered.size,
        coverage_nominal=nominal,
        coverage_pvalue=float(stats.binomtest(k, covered.size, nominal).pvalue),
        alpha=alpha,
    )


#: The coverage scenarios whose replaced-seed share the paper states (App. B.7).
SEED_SCENARIOS = ("balanced", "ood")
#: Per-shell coverage: the outermost coverage shell against the rest, pooled over every
#: scenario ("") and per scenario (under ``ood`` the outermost shell holds no training input).
SHELL_SCENARIOS = ("", *SEED_SCENARIOS)


def perfect_sampler_coverage(n_draws: int, level: float = 0.9) -> float:
    """Probability that the central ``level`` interval of ``n_draws`` exchangeable draws
    covers the truth, the interval computed as
    :func:`postrisk.tasks.diagnostics.covered_central` does (``np.quantile``'s linear
    interpolation): ``level · (D − 1) / (D + 1)``, slightly below ``level`` at small D
    (0.8910 at D = 200, 0.8970 at 600, 0.8982 at 1,000).

    Derivation. The quantile at probability p sits at position h = (D − 1)p among the order
    statistics x₍₀₎ < … < x₍D−1₎: between x₍j₎ and x₍j+1₎ with j = ⌊h⌋, at the fraction g = h − j
    of that gap. The truth and the draws are D + 1 exchangeable values, so the truth's rank r
    (the number of draws below it) is uniform on 0 … D. The lower end h_lo = (D − 1)(1 − level)/2
    (gap j, fraction g) is passed for certain when r ≥ j + 2, never when r ≤ j, and when r = j + 1
    the truth lies in the same gap at a relative position U ~ Uniform(0, 1), passed when
    U ≥ g (probability 1 − g). Likewise the upper end h_hi = (D − 1)(1 + level)/2 (gap k,
    fraction g₂) is below the truth for certain when r ≤ k, never when r ≥ k + 2, and with
    probability g₂ when r = k + 1. Summing over r: P = [(k − j − 1) + (1 − g) + g₂]/(D + 1)
    = (h_hi − h_lo)/(D + 1) = level·(D − 1)/(D + 1); when both ends fall in the same gap
    (j = k) it is (g₂ − g)/(D + 1), the same number.

    U is exactly uniform when the draws are uniform (equivalently, when the interpolation is
    done on the CDF scale); for a smooth posterior density p it deviates at first order in the
    width Δ of the gap that holds the truth (on average 2/((D + 1)p), twice a typical gap), by
    about g(1 − g)·|p′/p|·Δ/2 in a gap of probability 1/(D + 1). For a Gaussian posterior the
    coverage is higher than the formula by about 4·10⁻⁵ at D = 200 and 1.5·10⁻⁶ at D = 1,000
    (by simulation of the order statistics), far below Table 3's precision (tested against a
    simulation of :func:`~postrisk.tasks.diagnostics.covered_central` on Gaussian draws).
    """
    n_draws = int(n_draws)
    if n_draws < 1:
        raise ValueError(f"need at least one draw, got {n_draws}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return level * (n_draws - 1) / (n_draws + 1)


def seeds_replaced_share(instances: pd.DataFrame, coverage: str) -> float:
    """Share of the examined candidate seeds of the ``coverage`` scenario's BNN cells that the
    validity rule dropped (the paper's App. B.7: 5.3% balanced, 8.6% OOD).

    ``instances``: every instance built, flagged ``valid`` by
    :func:`postrisk.tasks.validity.mark_valid`. A BNN cell is a (dataset, noise, coverage) with a
    BNN instance. The rule visits a cell's candidate seeds in order until it has kept
    ``seeds.valid_per_cell`` of them; the examined seeds are those up to the last seed kept, and
    each of them not kept (its BNN instance's max R̂ above the threshold, or no BNN instance)
    was replaced by a later candidate. The share pools the examined seeds over the cells; NaN
    where the scenario has no BNN cell. A seed is one unit whatever the number of priors that
    share it.
    """
    frame = instances[instances["coverage"] == coverage]
    bnn_cells = frame.loc[frame["prior"] == "bnn", CELL].drop_duplicates()
    if bnn_cells.empty:
        return float("nan")
    frame = frame.merge(bnn_cells, on=CELL)
    examined = dropped = 0
    for _, cell in frame.groupby(CELL):
        kept = cell["valid"].astype(bool).groupby(cell["seed"]).any()
        last = kept.index[kept.to_numpy()].max() if kept.any() else kept.index.max()
        seen = kept[kept.index <= last]
        examined += int(seen.size)
        dropped += int((~seen).sum())
    return dropped / examined


def _shell_coverage(group: pd.DataFrame, part: str, coverage: str) -> float:
    """Pooled 90% coverage over the points of the outermost shell (``part="outer"``) or the
    rest (``"rest"``) of ``group``'s instances of ``coverage`` (every scenario: ``""``); NaN
    where there are none or the per-shell counts were not collected."""
    if f"covered90_{part}" not in group:
        return float("nan")
    if coverage:
        group = group[group["coverage"] == coverage]
    total = group[f"n_eval_{part}"].sum()
    return round(float(group[f"covered90_{part}"].sum() / total), 4) if total > 0 else np.nan


def _perfect_sampler_column(group: pd.DataFrame, level: float = 0.9) -> float:
    """:func:`perfect_sampler_coverage` at the instances' D, weighted by their points (one D
    per prior in a run: its value)."""
    if "draws" not in group:
        return float("nan")
    expected = [perfect_sampler_coverage(d, level) for d in group["draws"]]
    return round(float(np.average(expected, weights=group["n_eval"])), 4)


def _seed_columns(built: pd.DataFrame | None) -> dict[str, dict[str, object]]:
    """The replaced-seed shares (percent) per scenario and the paper's beside them."""
    from postrisk.evaluation.paper import paper_value

    ours, paper = {}, {}
    for cov in SEED_SCENARIOS:
        share = np.nan if built is None else seeds_replaced_share(built, cov)
        ours[f"seeds_replaced_pct_{cov}"] = round(100 * share, 2)
        paper[f"paper_seeds_replaced_pct_{cov}"] = paper_value(
            "appB7", "seeds_replaced_pct", PAPER_PRIOR["bnn"], cov)
    return {"ours": ours, "paper": paper}


def table3(instances: pd.DataFrame, points: dict[str, dict[str, np.ndarray]],
           built: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 3 per prior, with the paper's values beside ours.

    ``instances``: one row per task store with columns prior, dataset, noise, coverage, seed,
    n_eval, covered90 (count of covered points), corr_mean_ftrue; optionally draws (D; for the
    perfect sampler's coverage) and the per-shell counts covered90_outer, n_eval_outer,
    covered90_rest, n_eval_rest (the outermost coverage shell's points and the others').
    ``points[prior]``: arrays over all evaluation points of all its instances: ``rank_hist``
    (pooled 20-bin shares), ``rank_expected`` (the exact bin probabilities,
    :func:`rank_bin_probabilities`) and ``mcse_var`` (relative MCSE per point). The rank
    deviation is measured against ``rank_expected``, so a perfect sampler's expected histogram
    has deviation 0. ``built``: every instance built, flagged ``valid``
    (:func:`postrisk.tasks.validity.mark_valid`), for the share of seeds replaced
    (:func:`seeds_replaced_share`; the same on every row, since the priors share the seeds;
    NaN without it).

    The pooled coverage's interval is a t-interval over the prior's instances
    (:func:`pooled_share_t_interval`), "n/a" with one instance; ``instances`` says how many.
    """
    seeds = _seed_columns(built)
    rows = []
    for prior, group in instances.groupby("prior", sort=False):
        pooled, lo, hi = pooled_share_t_interval(group["covered90"].to_numpy(),
                                                 group["n_eval"].to_numpy())
        cells = group.groupby(["dataset", "noise", "coverage"])
        cell_cov = cells["covered90"].sum() / cells["n_eval"].sum()
        mcse = points[prior]["mcse_var"]
        paper = paper_table3(prior)
        rows.append({
            "prior": prior, "instances": len(group), "points": int(group["n_eval"].sum()),
            "coverage90_pooled": round(pooled, 4),
            "coverage90_ci": "n/a" if np.isnan(lo) else f"{lo:.3f}–{hi:.3f}",
            "coverage90_range_over_cells": f"{cell_cov.min():.3f}–{cell_cov.max():.3f}",
            "rank_hist_max_dev_pp": round(
                100 * float(np.max(np.abs(points[prior]["rank_hist"]
                                          - points[prior]["rank_expected"]))), 2),
            "mcse_var_pct_median": round(100 * float(np.median(mcse)), 2),
            "mcse_var_pct_p95": round(100 * float(np.quantile(mcse, 0.95)), 2),
            "corr_mean_ftrue_median": round(float(np.median(group["corr_mean_ftrue"])), 3),
            "coverage90_perfect_sampler": _perfect_sampler_column(group),
            **{f"coverage90_{part}{'_' + cov if cov else ''}": _shell_coverage(group, part, cov)
               for cov in SHELL_SCENARIOS for part in ("outer", "rest")},
            **seeds["ours"],
            **{f"paper_{k}": v for k, v in paper.items()},
            **seeds["paper"],
        })
    return pd.DataFrame(rows)
