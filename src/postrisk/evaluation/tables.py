"""The paper's tables as pure functions of the per-instance score table (docs/evaluation.md).

Input everywhere: the concatenated per-condition score tables (one row per method or reference
row and instance, columns ``dataset, prior, noise, coverage, seed, heteroscedastic, method,
kind, status`` and the score columns of :data:`postrisk.evaluation.scoring.METRICS`), restricted
by the caller to the instances in use. Output: tidy data frames; the report stage puts the
paper's numbers beside them and writes them.

Conventions
-----------
* A mean skips "not applicable" entries (NaN in a score table; ``None`` in the metrics) and
  counts the applicable ones; failed fits are counted apart and never scored.
* Intervals are percentile bootstraps over **datasets** (whole datasets resampled with
  replacement; 1,000 replicates): instances of one dataset share covariates, so they are not
  independent. With fewer than :data:`MIN_DATASETS` datasets an interval is "n/a" (NaN).
* Rankings put the best method first: rank 1 = the highest mean ρ. A ranking compares only the
  methods present, with an applicable value, in every condition it uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from postrisk.evaluation.agreement import kendalls_tau, kendalls_w, rank_moves
from postrisk.evaluation.posterior_checks import bootstrap_pooled_share
from postrisk.methods.table import matched_groups
from postrisk.tasks.key import CONDITION_COLUMNS, KEY_COLUMNS

#: Fewest datasets for which a bootstrap interval over datasets is reported.
MIN_DATASETS = 3
N_BOOT = 1000
CONDITION = list(CONDITION_COLUMNS)
INSTANCE = list(KEY_COLUMNS)
PRIMARY = "spearman_eu_posterior_excess_risk"

#: Table 7's factors: score-table columns (the paper calls them oracle engine, noise mode,
#: coverage and dataset).
FACTORS = ("prior", "noise", "coverage", "dataset")
#: Table 7's criteria: name → (score column, heteroscedastic noise modes only).
CRITERIA = {"epistemic": (PRIMARY, False), "aleatoric": ("spearman_au", True)}


def methods_only(scores: pd.DataFrame) -> pd.DataFrame:
    """The fitted methods' successful rows (no reference rows, no failed fits)."""
    return scores[(scores["kind"] == "method") & (scores["status"] == "ok")]


# -- means with intervals over datasets ---------------------------------------------------------
def bootstrap_mean_interval(values: pd.Series, datasets: pd.Series, rng: np.random.Generator,
                            n_boot: int = N_BOOT) -> tuple[float, float]:
    """95% percentile interval of the pooled mean, resampling whole datasets; NaN for fewer than
    :data:`MIN_DATASETS` datasets. NaN values (not applicable) are left out first."""
    keep = values.notna()
    per = values[keep].groupby(datasets[keep]).agg(["sum", "count"])
    if len(per) < MIN_DATASETS:
        return (np.nan, np.nan)
    _, lo, hi = bootstrap_pooled_share(per["sum"].to_numpy(), per["count"].to_numpy(), rng,
                                       n_boot=n_boot)
    return (float(lo), float(hi))


def mean_table(scores: pd.DataFrame, columns: Mapping[str, str], rng: np.random.Generator,
               by: Sequence[str] = (), heteroscedastic_only: Sequence[str] = ()) -> pd.DataFrame:
    """Mean of each score column per method (and per ``by`` level), with its interval.

    ``columns``: label → score column. Labels in ``heteroscedastic_only`` average over the
    heteroscedastic noise modes only (AU metrics, entanglement). One row per (method, by…,
    label): mean, ci_low, ci_high, n_applicable, n_instances (scored instances), n_datasets,
    failed_fits (the method's failed fits in that group). A method whose every fit failed keeps
    its rows with NaN means.
    """
    rows = []
    keys = ["method", *by]
    for key, all_rows in scores.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ok = all_rows[all_rows["status"] == "ok"]
        failed = int((all_rows["status"] != "ok").sum())
        for label, column in columns.items():
            sub = ok[ok["heteroscedastic"].astype(bool)] if label in heteroscedastic_only else ok
            values = sub[column] if column in sub else pd.Series(np.nan, index=sub.index)
            applicable = values.notna()
            mean = float(values[applicable].mean()) if applicable.any() else np.nan
            lo, hi = (bootstrap_mean_interval(values, sub["dataset"], rng)
                      if applicable.any() else (np.nan, np.nan))
            rows.append({**dict(zip(keys, key, strict=True)), "kind": all_rows["kind"].iloc[0],
                         "target": label, "mean": mean, "ci_low": lo, "ci_high": hi,
                         "n_applicable": int(applicable.sum()), "n_instances": len(sub),
                         "n_datasets": int(sub.loc[applicable, "dataset"].nunique()),
                         "failed_fits": failed})
    return pd.DataFrame(rows, columns=[*keys, "kind", "target", "mean", "ci_low", "ci_high",
                                       "n_applicable", "n_instances", "n_datasets",
                                       "failed_fits"])


# -- rankings ----------------------------------------------------------------------------------
def condition_means(scores: pd.DataFrame, column: str, heteroscedastic_only: bool = False
                    ) -> pd.DataFrame:
    """Mean of ``column`` over seeds per (condition, method), fitted methods only, applicable
    values only; then restricted to the methods with a value in every condition present."""
    rows = methods_only(scores)
    if heteroscedastic_only:
        rows = rows[rows["heteroscedastic"].astype(bool)]
    rows = rows[rows[column].notna()]
    means = rows.groupby([*CONDITION, "method"], as_index=False)[column].mean()
    n_conditions = means[CONDITION].drop_duplicates().shape[0]
    complete = means.groupby("method")[column].size()
    keep = complete[complete == n_conditions].index
    return means[means["method"].isin(keep)].rename(columns={column: "value"})


def within_condition_ranks(means: pd.DataFrame) -> pd.DataFrame:
    """Rank of each method within each condition (1 = highest value; ties share the mean)."""
    out = means.copy()
    out["rank"] = out.groupby(CONDITION)["value"].rank(ascending=False, method="average")
    return out


class _Concordance:
    """Kendall's W across the levels of a factor, for any resampling of the datasets, without
    rebuilding frames: conditions × methods matrices (mean values, within-condition ranks) and
    each condition's levels, computed once. Each level ranks the methods by their mean rank
    over its conditions (variant "ranks"; lower is better) or by their mean value ("rho";
    higher is better)."""

    def __init__(self, means: pd.DataFrame):
        wide = means.pivot_table(index=CONDITION, columns="method", values="value")
        self.values = wide.to_numpy()
        self.ranks = wide.rank(axis=1, ascending=False, method="average").to_numpy()
        self.conditions = wide.index.to_frame(index=False)
        self.datasets, self.dataset_code = np.unique(self.conditions["dataset"],
                                                     return_inverse=True)
        self.codes = {f: pd.factorize(self.conditions[f]) for f in CONDITION}

    def w(self, factor: str, variant: str, counts: np.ndarray | None = None) -> float | None:
        """W over the levels of ``factor``; ``counts``: how often each dataset is drawn."""
        counts = np.ones(len(self.datasets)) if counts is None else counts
        matrix = self.ranks if variant == "ranks" else self.values
        weight = counts[self.dataset_code]
        if factor == "dataset":  # a dataset drawn k times is k levels
            rows = [matrix[self.dataset_code == d].mean(axis=0)
                    for d in range(len(self.datasets)) for _ in range(int(counts[d]))]
            levels = np.array(rows)
        else:
            codes, uniques = self.codes[factor]
            sums = np.zeros((len(uniques), matrix.shape[1]))
            np.add.at(sums, codes, weight[:, None] * matrix)
            totals = np.bincount(codes, weights=weight, minlength=len(uniques))
            keep = totals > 0
            levels = sums[keep] / totals[keep, None]
        if levels.shape[0] < 2 or levels.shape[1] < 2:
            return None
        return kendalls_w(levels, higher_is_better=(variant == "rho"))


def table7(scores: pd.DataFrame, rng: np.random.Generator, n_boot: int = N_BOOT) -> pd.DataFrame:
    """Kendall's W of the method rankings across the levels of each factor (paper Table 7, plus
    the datasets of its App. D.1), for both criteria and both variants, with intervals.

    Epistemic: ρ(ÊU, posterior excess risk) over all noise modes; aleatoric: ρ(ÂU, σ²_ε) over
    the heteroscedastic modes and the methods whose AU is not constant (a constant AU has no
    applicable ρ, so it drops out as incomplete). Intervals: datasets resampled with
    replacement, the within-condition ranks kept (a condition belongs to one dataset).
    """
    rows = []
    for criterion, (column, hetero) in CRITERIA.items():
        means = condition_means(scores, column, heteroscedastic_only=hetero)
        stat = _Concordance(means) if len(means) else None
        n_data = 0 if stat is None else len(stat.datasets)
        draws = (rng.multinomial(n_data, np.full(n_data, 1 / n_data), size=n_boot)
                 if n_data >= MIN_DATASETS else None)
        for factor in FACTORS:
            levels = means[factor].nunique()
            row = {"criterion": criterion, "factor": factor, "levels": levels,
                   "methods": means["method"].nunique()}
            for variant in ("ranks", "rho"):
                w = stat.w(factor, variant) if stat is not None and levels >= 2 else None
                lo = hi = np.nan
                if w is not None and draws is not None:
                    boot = [stat.w(factor, variant, c) for c in draws]
                    boot = [b for b in boot if b is not None and np.isfinite(b)]
                    if len(boot) >= n_boot / 2:
                        lo, hi = np.quantile(boot, [0.025, 0.975])
                row |= {f"w_{variant}": np.nan if w is None else w,
                        f"w_{variant}_ci_low": lo, f"w_{variant}_ci_high": hi}
            rows.append(row)
    return pd.DataFrame(rows)


def entanglement_table(scores: pd.DataFrame, target: str, rng: np.random.Generator
                       ) -> pd.DataFrame:
    """Paper Tables 8–10 for one EU target: per method, mean ρ(ÊU, ÂU), mean ρ(EU*, AU*) and
    mean Δρ = their difference (with its interval), over the heteroscedastic instances where Δρ
    is applicable; Δρ also per prior and per coverage."""
    column = f"delta_ent_{target}"
    rows = methods_only(scores)
    rows = rows[rows["heteroscedastic"].astype(bool) & rows[column].notna()]
    out = []
    for method, group in rows.groupby("method", sort=False):
        lo, hi = bootstrap_mean_interval(group[column], group["dataset"], rng)
        row = {"method": method, "target": target, "instances": len(group),
               "rho_eu_au_hat": group["rho_eu_au_hat"].mean(),
               "rho_eu_au_true": group[f"rho_eu_au_true_{target}"].mean(),
               "delta_ent": group[column].mean(), "delta_ent_ci_low": lo,
               "delta_ent_ci_high": hi}
        for by in ("prior", "coverage"):
            for level, sub in group.groupby(by):
                row[f"delta_ent_{by}_{level}"] = sub[column].mean()
        out.append(row)
    return pd.DataFrame(out, columns=None if out else [
        "method", "target", "instances", "rho_eu_au_hat", "rho_eu_au_true", "delta_ent",
        "delta_ent_ci_low", "delta_ent_ci_high"])


def matched_prior(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The matched-prior comparison (paper App. D.1, Figure 7).

    Ranks within each condition by mean ρ(ÊU, posterior excess risk) over seeds (1 = best),
    averaged per method and prior (first frame: method × prior); per method group, the
    mean rank of its methods under its matched oracle and under the other oracles (second
    frame; groups: the method table's, :func:`postrisk.methods.table.matched_groups`).
    """
    ranked = within_condition_ranks(condition_means(scores, PRIMARY))
    per_method = ranked.groupby(["method", "prior"], as_index=False)["rank"].mean()
    rows = []
    for group, (matched, members) in matched_groups().items():
        sub = per_method[per_method["method"].isin(members)]
        if sub.empty:
            continue
        at = sub[sub["prior"] == matched]["rank"]
        other = sub[sub["prior"] != matched]["rank"]
        rows.append({"group": group, "matched_oracle": matched,
                     "methods": sub["method"].nunique(),
                     "mean_rank_matched": at.mean() if len(at) else np.nan,
                     "mean_rank_other": other.mean() if len(other) else np.nan,
                     "n_ranked": ranked["method"].nunique()})
    return per_method, pd.DataFrame(rows, columns=["group", "matched_oracle", "methods",
                                                   "mean_rank_matched", "mean_rank_other",
                                                   "n_ranked"])


def method_ranking(scores: pd.DataFrame, column: str = PRIMARY) -> pd.Series:
    """Mean of ``column`` per fitted method over the instances (applicable values only)."""
    rows = methods_only(scores)
    return rows.groupby("method")[column].mean().dropna()


def rhat_sensitivity(scores: pd.DataFrame, strict: pd.Series, rhat_share: float | None
                     ) -> dict[str, object]:
    """The R̂ ≤ 1.01 sensitivity (paper App. B.7): the method ranking by mean ρ(ÊU, posterior
    excess risk) over all valid instances against the ranking over those whose BNN R̂ ≤ 1.01
    (``strict``: a boolean per row of ``scores``); Kendall's τ between the two mean vectors,
    the largest rank move, and the share of point-wise R̂ ≤ 1.01 (``rhat_share``, computed by
    the caller from the task stores)."""
    full = method_ranking(scores)
    restricted = method_ranking(scores[strict.to_numpy()])
    common = full.index.intersection(restricted.index)
    tau = kendalls_tau(full[common], restricted[common]) if len(common) >= 3 else None
    moves = (rank_moves(full[common].to_numpy(), restricted[common].to_numpy(),
                        higher_is_better=True) if len(common) >= 2 else None)
    n_strict = int(scores.loc[strict.to_numpy(), INSTANCE].drop_duplicates().shape[0])
    return {"instances": int(scores[INSTANCE].drop_duplicates().shape[0]),
            "instances_strict": n_strict, "methods": len(common),
            "rhat_share_below_101": rhat_share, "kendall_tau": tau,
            "max_rank_move": None if moves is None else float(moves["max_move"])}


def noise_shape(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Mean ρ(σ²_f, σ²_ε) of the truth over the heteroscedastic instances, overall, per prior
    and per coverage (one row each; ``prior`` and ``coverage`` say which, "all" where a row
    pools), from the oracle row's ``rho_eu_au_true``."""
    rows = scores[(scores["method"] == "oracle") & scores["heteroscedastic"].astype(bool)]
    column = "rho_eu_au_true_posterior_variance"
    groups = [("all", "all", rows),
              *((prior, "all", group) for prior, group in rows.groupby("prior")),
              *(("all", coverage, group) for coverage, group in rows.groupby("coverage"))]
    out = []
    for prior, coverage, group in groups:
        lo, hi = bootstrap_mean_interval(group[column], group["dataset"], rng)
        out.append({"prior": prior, "coverage": coverage,
                    "instances": int(group[column].notna().sum()),
                    "mean_rho_posterior_variance_au": group[column].mean(),
                    "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


def long_table(scores: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per (method or reference row, instance, metric): value and status — ``ok``,
    ``failed`` (the fit failed) or ``not applicable`` (the metric has no value)."""
    present = [m for m in metrics if m in scores]
    long = scores.melt(id_vars=[*INSTANCE, "method", "kind", "status"], value_vars=present,
                       var_name="metric", value_name="value")
    long = long.rename(columns={"status": "fit_status"})
    long["status"] = np.where(long["fit_status"] != "ok", "failed",
                              np.where(long["value"].isna(), "not applicable", "ok"))
    return long.drop(columns="fit_status")
