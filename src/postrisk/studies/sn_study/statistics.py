"""Statistics of the spectral-normalisation study (paper App. D.4, Tables 13–14).

Pure functions on numpy arrays and data frames; nothing here reads or writes files.

Eight network methods are fitted in three arms (plain, SN = spectral normalisation, WD = strong
weight decay) on instances (dataset, prior, seed); the paired differences Δ = arm − plain are
taken per instance. Instances of one dataset share covariates, so every interval here is a
percentile bootstrap over **datasets**: a replicate draws as many dataset labels as there are
distinct datasets, with replacement, and keeps all rows of each drawn dataset (a dataset drawn
twice contributes its rows twice; :func:`resample_datasets`).

* :func:`dataset_bootstrap` — Table 13's means of Δρ, Δpres, … with their intervals; with
  ``values = np.arange(n)`` and a statistic of row indices it bootstraps any statistic of
  several columns, e.g. :func:`geometric_mean_ratio` of the NMSEs,
  GMR = exp( mean_i log(NMSE_arm,i / NMSE_plain,i) ).
* :func:`fixed_effects_ols` and :func:`regression_with_intervals` — the mediation regression
  over the pooled (method, instance) rows of both arms,

      Δρ = β_pres Δpres + β_fit ΔlogNMSE + β_SN 1[SN] + β_depth Δdepth + α_dataset + ε,

  and the within-SN standardised regression (the SN rows only, outcome and terms z-scored, so
  each β is in standard deviations of the outcome per standard deviation of the term).
* :func:`within_dataset_spearman` — Table 14's within-dataset Spearman correlations: each
  variable is centred within each group (e.g. method) and then within each dataset, and the
  residuals are rank-correlated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

#: Fewest distinct datasets for which a bootstrap interval is reported.
MIN_DATASETS = 2
#: Fewest estimable bootstrap replicates for which a regression interval is reported.
MIN_ESTIMABLE_REPLICATES = 10
#: Fewest finite pairs for which a Spearman correlation is reported.
MIN_PAIRS = 3
N_BOOT = 2000


class BootstrapInterval(NamedTuple):
    """A statistic on all rows with its percentile interval over dataset-bootstrap replicates;
    ``n`` rows and ``n_datasets`` distinct datasets entered (after dropping NaN values)."""

    estimate: float
    low: float
    high: float
    n: int
    n_datasets: int


class SpearmanResult(NamedTuple):
    """Spearman correlation of residuals: ρ, its p-value and the number of pairs (NaN ρ and p
    when not applicable)."""

    rho: float
    p_value: float
    n: int


# -- resampling datasets ------------------------------------------------------------------------
def _dataset_codes(datasets) -> tuple[np.ndarray, int]:
    """Integer codes 0 … K − 1 of the dataset labels (order of first appearance) and K."""
    labels = pd.Series(np.asarray(datasets, dtype=object).ravel())
    if labels.isna().any():
        raise ValueError("datasets holds missing labels")
    codes, uniques = pd.factorize(labels)
    return codes.astype(np.int64), len(uniques)


def _rows_by_dataset(codes: np.ndarray, n_datasets: int) -> list[np.ndarray]:
    """Row indices of each dataset, in row order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_datasets + 1))
    return [order[bounds[k]:bounds[k + 1]] for k in range(n_datasets)]


def _draw_datasets(rows: list[np.ndarray], rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """One replicate: K draws with replacement from the K datasets. Returns the row indices
    (the drawn datasets' rows, in draw order) and, for each of them, its draw number 0 … K − 1
    (so the two copies of a dataset drawn twice carry different draw numbers)."""
    drawn = rng.integers(0, len(rows), size=len(rows))
    indices = np.concatenate([rows[k] for k in drawn])
    draw_numbers = np.repeat(np.arange(len(rows)), [rows[k].size for k in drawn])
    return indices, draw_numbers


def resample_datasets(datasets, rng: np.random.Generator) -> np.ndarray:
    """Row indices of one dataset-bootstrap replicate.

    With K distinct labels in ``datasets``, K labels are drawn uniformly with replacement and
    the indices of all rows of each drawn dataset are concatenated in draw order (a dataset
    drawn twice contributes its rows twice). The result has int64 dtype; its length varies
    with the draw when datasets differ in size.
    """
    codes, n_datasets = _dataset_codes(datasets)
    if n_datasets == 0:
        return np.zeros(0, dtype=np.int64)
    indices, _ = _draw_datasets(_rows_by_dataset(codes, n_datasets), rng)
    return indices.astype(np.int64)


def _finite_rows(values, datasets) -> tuple[np.ndarray, np.ndarray]:
    vals = np.asarray(values)
    labels = np.asarray(datasets, dtype=object).ravel()
    if vals.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {vals.shape}")
    if vals.shape[0] != labels.shape[0]:
        raise ValueError(f"values and datasets differ in length: {vals.shape[0]} vs "
                         f"{labels.shape[0]}")
    keep = np.isfinite(vals.astype(float))
    return vals[keep], labels[keep]


def bootstrap_replicates(values, datasets, statistic: Callable[[np.ndarray], float] = np.mean,
                         *, n_boot: int = N_BOOT, rng: np.random.Generator) -> np.ndarray:
    """The ``n_boot`` dataset-bootstrap replicates statistic(values[rows]) of
    :func:`dataset_bootstrap` (NaN values dropped first; rows from :func:`resample_datasets`).
    An empty array when there are no rows."""
    vals, labels = _finite_rows(values, datasets)
    codes, n_datasets = _dataset_codes(labels)
    if n_datasets == 0:
        return np.zeros(0)
    rows = _rows_by_dataset(codes, n_datasets)
    replicates = np.empty(int(n_boot))
    for b in range(int(n_boot)):
        indices, _ = _draw_datasets(rows, rng)
        replicates[b] = float(statistic(vals[indices]))
    return replicates


def _percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return (np.nan, np.nan)
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return (float(low), float(high))


def _validate_level(level: float) -> float:
    if not (0.0 < float(level) < 1.0):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return float(level)


def dataset_bootstrap(values, datasets, statistic: Callable[[np.ndarray], float] = np.mean,
                      *, n_boot: int = N_BOOT, rng: np.random.Generator,
                      level: float = 0.95) -> BootstrapInterval:
    """statistic(values) with a percentile interval over datasets resampled with replacement.

    NaN (non-finite) values and their rows are dropped first. The estimate is
    statistic(values) on all remaining rows; each of the ``n_boot`` replicates is
    statistic(values[rows]) with rows from :func:`resample_datasets`, and (low, high) are the
    (1 ∓ level)/2 quantiles of the finite replicates. With fewer than :data:`MIN_DATASETS`
    distinct datasets the interval is (NaN, NaN) (the estimate is still given, NaN when no row
    remains).

    A statistic of several columns: pass ``values = np.arange(n)`` (row indices, never NaN) and
    a ``statistic`` of an index array, e.g.
    ``lambda rows: geometric_mean_ratio(arm[rows], plain[rows])``.
    """
    level = _validate_level(level)
    vals, labels = _finite_rows(values, datasets)
    _, n_datasets = _dataset_codes(labels)
    estimate = float(statistic(vals)) if vals.size else np.nan
    if n_datasets < MIN_DATASETS:
        return BootstrapInterval(estimate, np.nan, np.nan, int(vals.size), n_datasets)
    replicates = bootstrap_replicates(vals, labels, statistic, n_boot=n_boot, rng=rng)
    low, high = _percentile_interval(replicates, level)
    return BootstrapInterval(estimate, low, high, int(vals.size), n_datasets)


# -- ratios and correlations --------------------------------------------------------------------
def geometric_mean_ratio(arm_nmse, plain_nmse) -> float:
    """exp( mean_i log(arm_i / plain_i) ) over the pairs where both are finite and positive;
    NaN when no pair is."""
    arm = np.asarray(arm_nmse, dtype=float).ravel()
    plain = np.asarray(plain_nmse, dtype=float).ravel()
    if arm.shape != plain.shape:
        raise ValueError(f"arm_nmse and plain_nmse differ in length: {arm.size} vs "
                         f"{plain.size}")
    keep = np.isfinite(arm) & np.isfinite(plain) & (arm > 0) & (plain > 0)
    if not keep.any():
        return np.nan
    return float(np.exp(np.mean(np.log(arm[keep]) - np.log(plain[keep]))))


def _is_constant(residual: np.ndarray, original: np.ndarray) -> bool:
    """True when the residual is constant up to rounding of the centring (relative 1e-12)."""
    scale = float(np.max(np.abs(original))) if original.size else 0.0
    return float(np.ptp(residual)) <= 1e-12 * scale


def within_dataset_spearman(x, y, datasets, groups=None) -> SpearmanResult:
    """Spearman correlation of x and y after removing group and dataset means.

    Rows where x or y is not finite are dropped. Each variable v is centred within each group
    (when ``groups`` is given, e.g. the method of pooled rows): v′ = v − mean_group(v); then the
    dataset means of the group-centred values are removed: r = v′ − mean_dataset(v′). (This is
    two sequential centrings, not the removal of each (group, dataset) cell's mean.) The result
    is scipy's Spearman ρ of (r_x, r_y) with its p-value; ρ and p are NaN when fewer than
    :data:`MIN_PAIRS` pairs remain or either residual is constant.
    """
    xv = np.asarray(x, dtype=float).ravel()
    yv = np.asarray(y, dtype=float).ravel()
    labels = np.asarray(datasets, dtype=object).ravel()
    group_labels = (np.zeros(xv.size, dtype=object) if groups is None
                    else np.asarray(groups, dtype=object).ravel())
    if not (xv.size == yv.size == labels.size == group_labels.size):
        raise ValueError(f"x, y, datasets and groups differ in length: {xv.size}, {yv.size}, "
                         f"{labels.size}, {group_labels.size}")
    keep = np.isfinite(xv) & np.isfinite(yv)
    n = int(keep.sum())
    if n < MIN_PAIRS:
        return SpearmanResult(np.nan, np.nan, n)
    frame = pd.DataFrame({"x": xv[keep], "y": yv[keep], "dataset": labels[keep],
                          "group": group_labels[keep]})
    residuals = {}
    for column in ("x", "y"):
        centred = frame[column] - frame.groupby("group")[column].transform("mean")
        residual = centred - centred.groupby(frame["dataset"]).transform("mean")
        residuals[column] = residual.to_numpy()
        if _is_constant(residuals[column], frame[column].to_numpy()):
            return SpearmanResult(np.nan, np.nan, n)
    result = spearmanr(residuals["x"], residuals["y"])
    return SpearmanResult(float(result.statistic), float(result.pvalue), n)


# -- fixed-effects regressions ------------------------------------------------------------------
def _complete_rows(frame: pd.DataFrame, outcome: str, terms: Sequence[str],
                   effects: Sequence[str]) -> pd.DataFrame:
    """The rows with a finite outcome and finite terms and present effect labels."""
    missing = [c for c in (outcome, *terms, *effects) if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks the columns {missing}")
    numeric = frame[[outcome, *terms]].to_numpy(dtype=float)
    keep = np.isfinite(numeric).all(axis=1)
    if effects:
        keep &= frame[list(effects)].notna().all(axis=1).to_numpy()
    return frame.loc[keep]


def _effect_codes(frame: pd.DataFrame, effects: Sequence[str]) -> list[np.ndarray]:
    """Integer codes of each effect column's levels, the levels sorted (code 0 = first)."""
    return [pd.factorize(frame[e].astype(str), sort=True)[0].astype(np.int64) for e in effects]


def _one_hot_without_first(codes: np.ndarray) -> np.ndarray:
    """Indicators of levels 1 … L − 1 (level 0 dropped), one column per present level."""
    present = np.unique(codes)[1:]
    return (codes[:, None] == present[None, :]).astype(float)


def _population_sd(columns: np.ndarray) -> np.ndarray:
    """Population SD of each column, 0 where a column is constant up to rounding (SD at most
    1e-12 · max |v|: the mean of equal values need not equal them exactly)."""
    sd = np.std(columns, axis=0)
    scale = np.max(np.abs(columns), axis=0) if columns.shape[0] else np.zeros(columns.shape[1])
    return np.where(sd <= 1e-12 * scale, 0.0, sd)


def _demean_within(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each column of ``values`` (n × q) minus its mean within each level of ``codes``."""
    counts = np.maximum(np.bincount(codes), 1)              # absent levels: never indexed
    sums = np.zeros((counts.size, values.shape[1]))
    np.add.at(sums, codes, values)
    return values - (sums / counts[:, None])[codes]


def _fit(y: np.ndarray, term_values: np.ndarray, effect_codes: Sequence[np.ndarray],
         standardise: bool) -> tuple[np.ndarray, bool]:
    """Coefficients of the term columns of ``term_values`` (n × T) and whether the fit was
    estimable; rows are complete.

    The design X = [1, terms, one-hot effects without their first levels] is fitted by
    Frisch–Waugh–Lovell: the intercept and the first effect's indicators span that effect's
    level indicators, so y and the other columns are centred within its levels and the centred
    y is regressed (``np.linalg.lstsq``) on the centred terms and other effects' indicators.
    The coefficients equal those of the full design; it is estimable when n exceeds its number
    of columns and the centred columns have full rank (smallest singular value above
    ε · max(n, p) · max(σ_max, largest column norm of X), as ``np.linalg.matrix_rank``).
    """
    n_terms = term_values.shape[1]
    not_estimable = (np.full(n_terms, np.nan), False)
    fitted = np.ones(n_terms, dtype=bool)
    if standardise:
        if y.size == 0 or _population_sd(y[:, None])[0] == 0:
            return not_estimable
        y = (y - y.mean()) / np.std(y)
        sd = _population_sd(term_values)
        fitted = sd > 0                                       # a constant term → NaN
        term_values = (term_values[:, fitted] - term_values[:, fitted].mean(axis=0)) / sd[fitted]
    n = y.size
    absorbed = effect_codes[0] if len(effect_codes) else np.zeros(n, dtype=np.int64)
    others = [_one_hot_without_first(codes) for codes in effect_codes[1:]]
    regressors = np.hstack([term_values, *others]) if others else term_values
    n_columns = np.unique(absorbed).size + regressors.shape[1]   # columns of the full design
    if n <= n_columns:
        return not_estimable
    coefficients = np.full(n_terms, np.nan)
    if regressors.shape[1] == 0:
        return coefficients, True
    centred = _demean_within(regressors, absorbed)
    beta, _, _, singular = np.linalg.lstsq(centred, _demean_within(y[:, None], absorbed)[:, 0],
                                           rcond=None)
    largest = max(float(singular[0]), np.sqrt(n), float(np.linalg.norm(regressors, axis=0).max()))
    if singular[-1] <= np.finfo(float).eps * max(n, n_columns) * largest:
        return not_estimable
    coefficients[fitted] = beta[:int(fitted.sum())]
    return coefficients, True


def fixed_effects_ols(frame: pd.DataFrame, outcome: str, terms: Sequence[str],
                      effects: Sequence[str] = ("dataset",),
                      standardise: bool = False) -> dict[str, float]:
    """OLS coefficients of ``terms`` in outcome = β₀ + Σ_t β_t·term_t + Σ_e α_e[level] + ε.

    Each column of ``effects`` enters as one-hot indicators of its levels, the first (sorted)
    level dropped; the intercept β₀ is included; the fit is ``np.linalg.lstsq`` (after absorbing
    the first effect by centring within its levels, which gives the same coefficients). Only
    rows with a finite outcome and finite terms (and present effect labels) enter. With
    ``standardise=True`` the outcome and every term are first z-scored over those rows,
    z = (v − mean) / SD (population SD); a constant term's coefficient is then NaN (it is left
    out of the fit), and a constant outcome makes every coefficient NaN. Every coefficient is
    NaN when the design is rank-deficient or has at least as many columns as rows (not
    estimable). Returns {term: β_t} for ``terms`` only.
    """
    terms = list(terms)
    complete = _complete_rows(frame, outcome, terms, effects)
    coefficients, _ = _fit(complete[outcome].to_numpy(dtype=float),
                           complete[terms].to_numpy(dtype=float),
                           _effect_codes(complete, effects), standardise)
    return {t: float(c) for t, c in zip(terms, coefficients, strict=True)}


def regression_with_intervals(frame: pd.DataFrame, outcome: str, terms: Sequence[str],
                              effects: Sequence[str] = ("dataset",), standardise: bool = False,
                              *, n_boot: int = N_BOOT, rng: np.random.Generator,
                              level: float = 0.95, dataset_column: str = "dataset"
                              ) -> pd.DataFrame:
    """:func:`fixed_effects_ols` with percentile intervals over datasets resampled with
    replacement.

    Each replicate takes the complete rows of the datasets drawn by :func:`resample_datasets`
    (over ``dataset_column``) and refits; the copies of a dataset drawn more than once are
    relabelled ``f"{name}#{k}"`` (k the draw number), so each copy gets its own fixed effect
    when ``dataset_column`` is among ``effects``. With ``standardise=True`` the z-scoring is
    redone on each replicate. A term's interval is the (1 ∓ level)/2 quantiles of its finite
    replicate coefficients; NaN with fewer than :data:`MIN_DATASETS` datasets or fewer than
    :data:`MIN_ESTIMABLE_REPLICATES` estimable replicates.

    Returns one row per term: ``term, estimate, ci_low, ci_high, n, n_datasets,
    n_boot_estimable`` (n complete rows, n_datasets their distinct datasets).
    """
    level = _validate_level(level)
    terms = list(terms)
    effects = list(effects)
    if dataset_column not in frame.columns:
        raise ValueError(f"frame lacks the dataset column {dataset_column!r}")
    complete = _complete_rows(frame, outcome, terms, effects)
    complete = complete[complete[dataset_column].notna()]
    y = complete[outcome].to_numpy(dtype=float)
    term_values = complete[terms].to_numpy(dtype=float)
    effect_codes = _effect_codes(complete, effects)
    estimates, _ = _fit(y, term_values, effect_codes, standardise)
    codes, n_datasets = _dataset_codes(complete[dataset_column].to_numpy())
    # In a replicate, the dataset effect's level is the draw number: f"{name}#{k}" for draw k.
    is_dataset_effect = [e == dataset_column for e in effects]
    replicates = np.full((int(n_boot), len(terms)), np.nan)
    n_estimable = 0
    if n_datasets >= MIN_DATASETS:
        rows = _rows_by_dataset(codes, n_datasets)
        for b in range(int(n_boot)):
            indices, draw_numbers = _draw_datasets(rows, rng)
            sample_codes = [draw_numbers if is_dataset else effect[indices]
                            for effect, is_dataset in zip(effect_codes, is_dataset_effect,
                                                          strict=True)]
            coefficients, estimable = _fit(y[indices], term_values[indices], sample_codes,
                                           standardise)
            if estimable:
                n_estimable += 1
                replicates[b] = coefficients
    report_intervals = n_datasets >= MIN_DATASETS and n_estimable >= MIN_ESTIMABLE_REPLICATES
    records = []
    for j, term in enumerate(terms):
        low, high = (_percentile_interval(replicates[:, j], level) if report_intervals
                     else (np.nan, np.nan))
        records.append({"term": term, "estimate": float(estimates[j]), "ci_low": low,
                        "ci_high": high, "n": len(complete), "n_datasets": n_datasets,
                        "n_boot_estimable": n_estimable})
    return pd.DataFrame.from_records(
        records, columns=["term", "estimate", "ci_low", "ci_high", "n", "n_datasets",
                          "n_boot_estimable"])
