"""The mean-ρ table per method and target, its R̂ ≤ 1.01 sensitivity version and its figure,
from the per-condition score tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.core.io import write_text_atomic
from postrisk.evaluation.scoring import SCORE_COLUMNS, aggregate_scores
from postrisk.evaluation.tables import long_table
from postrisk.grid.seeds import RHAT_STRICT
from postrisk.report.style import scale_note
from postrisk.report.tables import build_tables, with_scale, write_tables


def _read_scores(path) -> pd.DataFrame:
    """One condition's scores; a condition whose cell has no valid seed wrote an empty file."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def rhat_share(instances: pd.DataFrame) -> float | None:
    """Share of point-wise BNN R̂ ≤ 1.01 over the valid BNN instances (``None`` without any)."""
    if "rhat_le_strict" not in instances:
        return None
    bnn = instances[(instances["prior"] == "bnn") & instances["valid"].astype(bool)]
    if bnn.empty or bnn["rhat_le_strict"].isna().all():
        return None
    return float(bnn["rhat_le_strict"].sum() / bnn["n_eval"].sum())


def write_scores(score_csvs, instances_csv, table_csv, figure_png, scale: str,
                 rng: np.random.Generator, sensitivity_csv=None, tables_dir=None,
                 long_csv=None, markdown=None, disentanglement=(),
                 correlation: str = "pearson") -> pd.DataFrame:
    """Mean ρ per method and target over the valid instances (``valid`` in the checks CSV);
    ``sensitivity_csv``: the same over ``valid_strict`` (BNN R̂ ≤ 1.01); ``tables_dir``: every
    evaluation table (:data:`EVALUATION_TABLES`) with the paper's numbers beside ours, plus
    ``markdown`` (one page of them all) and ``long_csv`` (every method, instance and metric);
    ``disentanglement``: the Disentanglement Error experiment's per-level CSVs."""
    frames = [_read_scores(p) for p in score_csvs]
    scores = pd.concat([f for f in frames if len(f)], ignore_index=True)
    keys = ["dataset", "prior", "noise", "coverage", "seed"]
    instances = pd.read_csv(instances_csv)
    valid = instances[[*keys, "valid", "valid_strict"]]
    scores = scores.merge(valid, on=keys, how="left")
    if scores["valid"].isna().any():
        raise ValueError("scores for instances that the checks do not know")
    if sensitivity_csv is not None:
        strict = aggregate_scores(scores[scores["valid_strict"].astype(bool)]
                                  .drop(columns=["valid", "valid_strict"]), rng)
        strict.insert(0, "scale", scale)
        strict.insert(1, "restriction", f"BNN max R̂ ≤ {RHAT_STRICT}")
        Path(sensitivity_csv).parent.mkdir(parents=True, exist_ok=True)
        strict.to_csv(sensitivity_csv, index=False)
    strict_rows = scores["valid_strict"].astype(bool)
    scores = scores.drop(columns=["valid", "valid_strict"])
    table = aggregate_scores(scores, rng)
    if tables_dir is not None:
        runs = [pd.read_csv(p) for p in disentanglement]
        tables = build_tables(scores, rng, strict=strict_rows, rhat_share=rhat_share(instances),
                              mean_rho=table, disentanglement=runs, correlation=correlation)
        write_tables(tables, tables_dir, scale, markdown=markdown)
        table = tables[0].frame  # the mean-ρ table with display names and the paper's means
    if long_csv is not None:
        write_text_atomic(long_csv, long_table(scores, SCORE_COLUMNS).to_csv(index=False))
    table = with_scale(table, scale)
    write_text_atomic(table_csv, table.to_csv(index=False))
    targets = ["eu_posterior_excess_risk", "eu_posterior_variance", "eu_pointwise_excess_risk",
               "au"]
    pivot = table[table["target"].isin(targets)].pivot(index="method", columns="target",
                                                        values="mean")
    pivot = pivot.reindex(columns=targets)
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(pivot)), 3.6))
    width = 0.8 / len(targets)
    for i, target in enumerate(targets):
        xs = np.arange(len(pivot)) + i * width
        for x_pos, value in zip(xs, pivot[target], strict=True):
            if pd.isna(value):  # constant estimate or target: Spearman not applicable
                ax.text(x_pos, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
        ax.bar(xs, pivot[target].fillna(0.0), width,
               label=target.replace("eu_", "EU: ").replace("au", "AU: noise variance", 1)
               if target == "au" else target.replace("eu_", "EU: ").replace("_", " "))
    ax.set_xticks(np.arange(len(pivot)) + 0.4 - width / 2, pivot.index, rotation=30, ha="right")
    ax.set_ylabel("mean Spearman ρ")
    ax.axhline(0, color="k", lw=0.8)
    ax.legend(fontsize=7, loc="best")
    title = "Mean Spearman ρ per method and target"
    note = scale_note(scale)
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
    fig.tight_layout()
    Path(figure_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure_png, dpi=120)
    plt.close(fig)
    return table
