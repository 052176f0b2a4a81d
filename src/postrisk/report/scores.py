"""The mean-ρ table per method and target, its R̂ ≤ 1.01 sensitivity version and its figure,
from the per-condition score tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.evaluation.scoring import aggregate_scores
from postrisk.grid.seeds import RHAT_STRICT
from postrisk.report.style import scale_note


def _read_scores(path) -> pd.DataFrame:
    """One condition's scores; a condition whose cell has no valid seed wrote an empty file."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def write_scores(score_csvs, instances_csv, table_csv, figure_png, scale: str,
                 rng: np.random.Generator, sensitivity_csv=None) -> pd.DataFrame:
    """Mean ρ per method and target over the valid instances (``valid`` in the checks CSV);
    ``sensitivity_csv``: the same over ``valid_strict`` (BNN R̂ ≤ 1.01)."""
    frames = [_read_scores(p) for p in score_csvs]
    scores = pd.concat([f for f in frames if len(f)], ignore_index=True)
    keys = ["dataset", "prior", "noise", "coverage", "seed"]
    valid = pd.read_csv(instances_csv)[[*keys, "valid", "valid_strict"]]
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
    table = aggregate_scores(scores.drop(columns=["valid", "valid_strict"]), rng)
    table.insert(0, "scale", scale)
    Path(table_csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(table_csv, index=False)
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
