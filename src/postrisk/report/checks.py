"""Table 3 (the reference-posterior checks) and the rank histograms, from the task stores."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.core.io import open_zarr
from postrisk.covariates.pools import N_SHELLS
from postrisk.evaluation.posterior_checks import rank_uniformity_pvalue, table3
from postrisk.report.style import save_figure
from postrisk.tasks.diagnostics import rank_bin_probabilities, rank_histogram
from postrisk.tasks.validity import RHAT_STRICT, mark_valid

#: The outermost coverage shell (under ``ood`` it holds no training input).
OUTER_SHELL = N_SHELLS - 1


def collect_checks(task_paths: Sequence[str | Path]):
    """Per-instance check summaries and per-prior pooled point arrays, reading no draws.

    The per-shell counts (``covered90_outer``, ``n_eval_outer``, ``covered90_rest``,
    ``n_eval_rest``) split the covered points by whether ``shell_eval`` is the outermost
    coverage shell."""
    rows, ranks, mcse, n_draws = [], {}, {}, {}
    for path in task_paths:
        ds = open_zarr(path, load=False)
        prior = ds.attrs["prior"]
        rank = ds["rank_true"].values
        covered = ds["covered90"].values.astype(bool)
        outer = ds["shell_eval"].values == OUTER_SHELL
        mean, f_true = ds["posterior_mean"].values, ds["f_true_eval"].values
        rows.append({"prior": prior, **{k: ds.attrs[k] for k in
                                        ("dataset", "noise", "coverage", "seed")},
                     "n_eval": int(ds.sizes["eval"]), "draws": int(ds.sizes["draw"]),
                     "covered90": int(covered.sum()),
                     "coverage90": float(covered.mean()),
                     "corr_mean_ftrue": float(np.corrcoef(mean, f_true)[0, 1]),
                     "mcse_var_median": float(np.median(ds["mcse_var"].values)),
                     "max_rhat": float(ds["rhat"].values.max()) if "rhat" in ds else np.nan,
                     # point-wise R̂ ≤ 1.01 (the R̂ sensitivity's share; MCMC with chains only)
                     "rhat_le_strict": (int((ds["rhat"].values <= RHAT_STRICT).sum())
                                        if "rhat" in ds else np.nan),
                     "rank_loglik": int(ds.attrs["rank_loglik"]),
                     "posterior_s": json.loads(ds.attrs["timings"]).get("posterior_s"),
                     "covered90_outer": int(covered[outer].sum()),
                     "n_eval_outer": int(outer.sum()),
                     "covered90_rest": int(covered[~outer].sum()),
                     "n_eval_rest": int((~outer).sum())})
        n_draws.setdefault(prior, int(ds.sizes["draw"]))
        if n_draws[prior] != int(ds.sizes["draw"]):
            raise ValueError(f"{prior}: instances differ in the number of draws")
        ranks.setdefault(prior, []).append(rank)
        mcse.setdefault(prior, []).append(ds["mcse_var"].values)
    instances = pd.DataFrame(rows)
    points = {prior: {"rank_hist": rank_histogram(np.concatenate(ranks[prior]),
                                                         n_draws[prior]),
                      "rank_expected": rank_bin_probabilities(n_draws[prior]),
                      "mcse_var": np.concatenate(mcse[prior])} for prior in ranks}
    return instances, points


def _table3_over(task_paths, instances: pd.DataFrame, column: str,
                 scale: str) -> tuple[pd.DataFrame, dict]:
    """Table 3 over the instances flagged in ``column``, with the dropped counts, and the
    pooled per-prior point arrays."""
    paths = [p for p, ok in zip(task_paths, instances[column], strict=True) if ok]
    if not paths:
        return pd.DataFrame({"scale": [], "prior": []}), {}
    iv, points = collect_checks(paths)
    table = table3(iv, points, built=instances)
    # one data-log-likelihood rank per instance: uniform under a correct posterior (SBC)
    table["loglik_rank_uniformity_p"] = [
        round(rank_uniformity_pvalue(iv.loc[iv["prior"] == p, "rank_loglik"].to_numpy(),
                                            int(iv.loc[iv["prior"] == p, "draws"].iloc[0])), 4)
        if (iv["prior"] == p).sum() >= 20 else np.nan for p in table["prior"]]
    table["max_rhat"] = [round(float(iv.loc[iv["prior"] == p, "max_rhat"].max()), 4)
                         for p in table["prior"]]
    table["instances_dropped"] = [int(((instances["prior"] == p) & ~instances[column]).sum())
                                  for p in table["prior"]]
    table.insert(0, "scale", scale)
    return table, points


def uniform_band(expected: np.ndarray, n_points: int, level: float = 0.95
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per bin, the central ``level`` range of the share a calibrated sampler's histogram of
    ``n_points`` independent ranks would show: Binomial(n_points, p_b)/n_points quantiles with
    p_b the exact bin probability. Points of one instance share a posterior, so the observed
    spread can exceed this band somewhat even for an exact sampler."""
    from scipy.stats import binom

    lo = binom.ppf((1 - level) / 2, n_points, expected) / n_points
    hi = binom.ppf((1 + level) / 2, n_points, expected) / n_points
    return lo, hi


def rank_histogram_axes(ax, prior: str, shares: np.ndarray, expected: np.ndarray,
                        n_inst: int, n_points: int, quantity: str = "f*",
                        unit: str = "points") -> None:
    """One rank-histogram panel on ``ax``: the pooled shares per bin (bars), the 95% band of a
    calibrated sampler's histogram of ``n_points`` independent ranks (:func:`uniform_band`)
    and the exact bin probabilities ``expected``; titled with the prior, the ranked
    ``quantity`` and the number of instances and of ranked ``unit``."""
    bins = np.arange(shares.size)
    lo, hi = uniform_band(expected, n_points)
    ax.fill_between(np.arange(shares.size + 1) - 0.5, np.append(lo, lo[-1]),
                    np.append(hi, hi[-1]), step="post", color="0.85", lw=0,
                    label="95% band, uniform")
    ax.bar(bins, shares, width=0.9, color="tab:blue", alpha=0.85, label="observed")
    # the exact bin probabilities of a calibrated sampler (D + 1 ranks in 20 bins)
    ax.step(np.arange(shares.size + 1) - 0.5, np.append(expected, expected[-1]), where="post",
            color="k", lw=1, ls="--", label="expected")
    ax.set_title(f"{prior.upper()}: rank of {quantity} among draws ({n_inst} instances, "
                 f"{n_points:,} {unit})", fontsize=9)
    ax.set_xlabel(f"rank bin ({shares.size})")
    ax.set_ylabel("share")


def legend_below(fig, ax) -> None:
    """The panels' shared legend below them, outside every axes, so it hides no bar."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=len(handles), fontsize=7,
                   frameon=False)


def draw_rank_histograms(points: dict, priors: Sequence[str], n_inst: dict[str, int],
                         n_points: dict[str, int]):
    """One rank-histogram panel per prior of ``priors`` (``points``: the pooled per-prior
    arrays of :func:`collect_checks`; a prior without any says so), their shared legend below
    the panels, outside every axes."""
    fig, axes = plt.subplots(1, len(priors), figsize=(4.5 * len(priors), 3.4), squeeze=False,
                             layout="constrained")
    for ax, prior in zip(axes[0], priors, strict=True):
        if prior in points:
            rank_histogram_axes(ax, prior, points[prior]["rank_hist"],
                                points[prior]["rank_expected"], n_inst[prior], n_points[prior])
        else:
            ax.text(0.5, 0.5, f"{prior.upper()}: no valid instance", ha="center", va="center")
            ax.set_axis_off()
    drawn = [ax for ax in axes[0] if ax.get_legend_handles_labels()[0]]
    if drawn:
        legend_below(fig, drawn[0])
    return fig


def write_checks(task_paths, table_csv, instances_csv, figure_png, scale: str, n_valid: int,
                 sensitivity_csv=None,
                 prior_figures: dict[str, str] | None = None) -> pd.DataFrame:
    """Table 3 over the valid instances (R̂ ≤ 1.05 rule) and, in ``sensitivity_csv``, over those
    whose BNN R̂ ≤ 1.01; the per-instance CSV keeps dropped ones, flagged; rank histograms
    of all priors in one figure and one figure per prior (the legend below the panels)."""
    instances = mark_valid(collect_checks(task_paths)[0], n_valid)
    table, points = _table3_over(task_paths, instances, "valid", scale)
    for path in (table_csv, instances_csv):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(table_csv, index=False)
    instances.to_csv(instances_csv, index=False)
    if sensitivity_csv is not None:
        strict_table = _table3_over(task_paths, instances, "valid_strict", scale)[0]
        strict_table.insert(1, "restriction", f"BNN max R̂ ≤ {RHAT_STRICT}")
        Path(sensitivity_csv).parent.mkdir(parents=True, exist_ok=True)
        strict_table.to_csv(sensitivity_csv, index=False)
    valid = {p: (instances["prior"] == p) & instances["valid"] for p in points}
    n_inst = {p: int(v.sum()) for p, v in valid.items()}
    n_pts = {p: int(instances.loc[v, "n_eval"].sum()) for p, v in valid.items()}
    save_figure(draw_rank_histograms(points, list(points), n_inst, n_pts), figure_png, scale)
    for prior, path in (prior_figures or {}).items():
        save_figure(draw_rank_histograms(points, [prior], n_inst, n_pts), path, scale)
    return table
