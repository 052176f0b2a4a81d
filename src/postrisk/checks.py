"""Reference-posterior checks (paper App. B.7, Table 3; SPEC §8). Pure functions on arrays.

Per evaluation point: the rank of f*(x) among the D draws (uniform when the draws follow the
posterior and f* the prior — Talts et al. 2020), whether f* lies in the central 90% interval of
the draws, and the relative Monte Carlo standard error of the posterior variance by batch means.
Pooled over instances: rank histogram (20 bins), 90% coverage with a bootstrap over whole
instances, its range over cells, the median corr(posterior mean, f*), MCSE percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

N_RANK_BINS = 20
N_MCSE_BATCHES = 20
#: A seed is valid when its BNN instance's max R̂ ≤ RHAT_THRESHOLD (App. B.7); the
#: sensitivity analysis restricts further to RHAT_STRICT.
RHAT_THRESHOLD = 1.05
RHAT_STRICT = 1.01

#: Table 3 of the paper (paper_numbers.csv), per family.
PAPER_TABLE3 = {
    "gp": {"coverage90_pooled": 0.899, "coverage90_ci": "0.898–0.901",
           "coverage90_range_over_cells": "0.880–0.932", "mcse_var_pct_median": 4.4,
           "mcse_var_pct_p95": 5.7, "corr_mean_ftrue_median": 0.94},
    "hbart": {"coverage90_pooled": 0.902, "coverage90_ci": "0.901–0.903",
              "coverage90_range_over_cells": "0.881–0.921", "mcse_var_pct_median": 5.6,
              "mcse_var_pct_p95": 8.6, "corr_mean_ftrue_median": 0.98},
    "bnn": {"coverage90_pooled": 0.901, "coverage90_ci": "0.898–0.905",
            "coverage90_range_over_cells": "0.838–0.957", "mcse_var_pct_median": 4.7,
            "mcse_var_pct_p95": 6.1, "corr_mean_ftrue_median": 1.0},
}


def rank_of_truth(draws: np.ndarray, f_true: np.ndarray) -> np.ndarray:
    """Number of draws below f*(x), per point: 0 … D."""
    return np.sum(np.asarray(draws) < np.asarray(f_true)[None, :], axis=0)


def covered_central(draws: np.ndarray, f_true: np.ndarray, level: float = 0.9) -> np.ndarray:
    """Whether f*(x) lies in the central ``level`` interval of the draws, per point."""
    lo, hi = np.quantile(np.asarray(draws, dtype=float), [(1 - level) / 2, (1 + level) / 2],
                         axis=0)
    f = np.asarray(f_true)
    return (f >= lo) & (f <= hi)


def batch_means_mcse_var(draws: np.ndarray, n_batches: int = N_MCSE_BATCHES) -> np.ndarray:
    """Relative MCSE of the posterior variance by batch means, per point.

    The draws (in chain order: whole chains or chain segments are consecutive) are cut into
    ``n_batches`` equal batches; MCSE = SD of the batch variances / √n_batches, divided by the
    variance of all draws. Within-chain dependence shows up as spread between batches.
    """
    draws = np.asarray(draws, dtype=float)
    usable = (draws.shape[0] // n_batches) * n_batches
    if usable < 2 * n_batches:
        raise ValueError(f"need at least {2 * n_batches} draws for batch means")
    batches = draws[:usable].reshape(n_batches, usable // n_batches, -1)
    batch_var = batches.var(axis=1, ddof=1)
    total = draws.var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, batch_var.std(axis=0, ddof=1) / np.sqrt(n_batches) / total,
                        0.0)


def chain_draws(draws: np.ndarray, chains: int) -> np.ndarray:
    """Chain-major draws (C·S, P) as an array (C, S, P): chain c is draws c·S … (c+1)·S − 1."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2:
        raise ValueError(f"expected (draws, points), got shape {draws.shape}")
    total, points = draws.shape
    if chains < 1 or total % chains:
        raise ValueError(f"{total} draws cannot be {chains} equal chains")
    return draws.reshape(chains, total // chains, points)


def rhat_and_ess(draws: np.ndarray, chains: int) -> tuple[np.ndarray, np.ndarray]:
    """R̂ and ESS of f(x) at every point, from chain-major draws (C·S, P), by ArviZ.

    R̂ is the rank-normalised, folded split-R̂ of Vehtari, Gelman, Simpson, Carpenter and
    Bürkner (2021), "Rank-normalization, folding, and localization: an improved R̂ for assessing
    convergence of MCMC" — the one the paper cites (``arviz.rhat(method="rank")``): each chain
    is split in halves, the pooled draws are rank-normalised (and, for the folded version,
    |θ − median| is), the classic R̂ of both is computed, and the larger is kept. ESS is the bulk
    ESS of the same paper (``arviz.ess(method="bulk")``). A point where every draw is equal gets
    R̂ = 1 and ESS = the number of draws.
    """
    import warnings

    import xarray as xr

    by_chain = chain_draws(draws, chains)
    if by_chain.shape[1] < 4:
        raise ValueError("split-R̂ needs at least 4 draws per chain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its next API
        import arviz as az

        ds = xr.Dataset({"f": (("chain", "draw", "point"), by_chain)})
        constant = np.ptp(by_chain.reshape(-1, by_chain.shape[2]), axis=0) == 0
        with np.errstate(invalid="ignore", divide="ignore"):
            rhat = np.asarray(az.rhat(ds, method="rank")["f"].values, dtype=float)
            ess = np.asarray(az.ess(ds, method="bulk")["f"].values, dtype=float)
    total = float(by_chain.shape[0] * by_chain.shape[1])
    return np.where(constant, 1.0, rhat), np.where(constant, total, ess)


def instance_point_checks(draws: np.ndarray, f_true: np.ndarray,
                          chains: int = 1) -> dict[str, np.ndarray]:
    """Per evaluation point: rank of f*, 90% coverage, relative MCSE of σ²_f; with several
    chains (chain-major draws) also R̂ and ESS (:func:`rhat_and_ess`)."""
    out = {"rank_true": rank_of_truth(draws, f_true),
           "covered90": covered_central(draws, f_true, 0.9),
           "mcse_var": batch_means_mcse_var(draws)}
    if chains > 1:
        out["rhat"], out["ess"] = rhat_and_ess(draws, chains)
    return out


def rank_bins(ranks: np.ndarray, n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Bin index of each rank 0 … n_draws in ``bins`` equal-width bins of the rank range."""
    return np.minimum((np.asarray(ranks) * bins) // (n_draws + 1), bins - 1)


def rank_histogram(ranks: np.ndarray, n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Shares of ranks (0 … n_draws) in ``bins`` equal-width bins of the rank range."""
    idx = rank_bins(ranks, n_draws, bins)
    return np.bincount(idx, minlength=bins) / idx.size


def rank_bin_probabilities(n_draws: int, bins: int = N_RANK_BINS) -> np.ndarray:
    """Each bin's probability under a calibrated sampler: the D + 1 ranks are equally likely,
    and they do not split evenly into ``bins`` bins unless ``bins`` divides D + 1."""
    return rank_histogram(np.arange(n_draws + 1), n_draws, bins)


def bootstrap_pooled_share(hits: np.ndarray, totals: np.ndarray, rng: np.random.Generator,
                           n_boot: int = 2000, level: float = 0.95) -> tuple[float, float, float]:
    """Pooled share Σhits/Σtotals with a percentile bootstrap over whole instances."""
    hits, totals = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    pooled = hits.sum() / totals.sum()
    idx = rng.integers(hits.size, size=(n_boot, hits.size))
    boot = hits[idx].sum(axis=1) / totals[idx].sum(axis=1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(pooled), float(lo), float(hi)


def loglik_rank(draws_train: np.ndarray, f_true_train: np.ndarray, y_train: np.ndarray,
                noise_var_train: np.ndarray) -> int:
    """Rank of f*'s data log-likelihood among the draws' (a data-dependent SBC test quantity).

    ℓ(f) = −½ Σᵢ (yᵢ − f(xᵢ))² / σ²ᵢ at the training inputs. Under a correct posterior the rank
    is uniform; draws that ignore the data (the prior) rank f* at the top, which the rank of
    f(x) alone cannot see (Modrák et al. 2023).
    """
    def loglik(f):
        return -0.5 * np.sum((np.asarray(y_train) - f) ** 2 / noise_var_train, axis=-1)

    return int(np.sum(loglik(np.asarray(draws_train, dtype=float)) < loglik(f_true_train)))


@dataclass(frozen=True)
class CalibrationTest:
    """Simulation-based calibration over instances (SPEC §8): rank uniformity of each test
    quantity (χ²) and 90% coverage of f(x) (two-sided binomial), each at level ``alpha``."""

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


class TooFewValidSeeds(ValueError):
    """A cell has fewer valid seeds among its candidates than it needs (never a silent
    shortfall): the message names the cell, every candidate's max R̂ and the config key."""


def valid_seeds(candidates: list[int], max_rhat: dict[int, float] | None, n_valid: int,
                threshold: float = RHAT_THRESHOLD,
                cell: str = "") -> tuple[list[int], list[int]]:
    """The first ``n_valid`` seeds whose BNN instance has max R̂ ≤ threshold, and the dropped.

    ``max_rhat`` maps seed → the BNN instance's max point-wise R̂; None (no BNN in the grid)
    makes every seed valid (GP and HBART instances are always valid, App. B.7). Fewer than
    ``n_valid`` valid seeds among the candidates raises :class:`TooFewValidSeeds` naming
    ``cell``, every candidate's max R̂ and the config key ``seeds.candidates``.
    """
    valid, dropped = [], []
    for seed in sorted(candidates):
        if len(valid) == n_valid:
            break
        if max_rhat is None or max_rhat.get(seed, np.inf) <= threshold:
            valid.append(seed)
        else:
            dropped.append(seed)
    if len(valid) < n_valid:
        listed = ", ".join(f"seed {s}: " + (f"{max_rhat[s]:.4f}" if s in (max_rhat or {})
                                            else "no BNN store")
                           for s in sorted(candidates))
        raise TooFewValidSeeds(
            f"cell {cell or '?'}: {len(valid)} valid seed(s) (BNN max R̂ ≤ {threshold}) among "
            f"{len(candidates)} candidate(s), but {n_valid} are needed. Max R̂ per candidate: "
            f"{listed}. Raise the config key 'seeds.candidates' (now {len(candidates)}) so "
            "that more seeds are built, or lengthen the BNN chains ('posterior.bnn').")
    return valid, dropped


CELL = ["dataset", "noise", "coverage"]


def mark_valid(instances: pd.DataFrame, n_valid: int, threshold: float = RHAT_THRESHOLD,
               strict: float = RHAT_STRICT) -> pd.DataFrame:
    """Add ``valid``: per cell, the first ``n_valid`` seeds whose BNN instance has max R̂ ≤
    ``threshold``, for every family alike (App. B.7); cells without BNN instances use their
    first ``n_valid`` seeds. Add ``valid_strict``: valid and the seed's BNN R̂ ≤ ``strict``
    (the sensitivity analysis). Dropped instances stay in the frame, flagged."""
    out = instances.copy()
    out["valid"] = False
    out["valid_strict"] = False
    for _, cell in out.groupby(CELL):
        bnn = cell[cell["prior"] == "bnn"]
        max_rhat = dict(zip(bnn["seed"], bnn["max_rhat"], strict=True)) if len(bnn) else None
        label = "/".join(str(v) for v in cell[CELL].iloc[0])
        keep, _ = valid_seeds(sorted(cell["seed"].unique().tolist()), max_rhat, n_valid,
                              threshold, cell=label)
        keep_strict = [s for s in keep if max_rhat is None or max_rhat[s] <= strict]
        out.loc[cell.index[cell["seed"].isin(keep)], "valid"] = True
        out.loc[cell.index[cell["seed"].isin(keep_strict)], "valid_strict"] = True
    return out


def table3(instances: pd.DataFrame, points: dict[str, dict[str, np.ndarray]],
           rng: np.random.Generator) -> pd.DataFrame:
    """Table 3 per prior family, with the paper's values beside ours.

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
        paper = PAPER_TABLE3.get(prior, {})
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
