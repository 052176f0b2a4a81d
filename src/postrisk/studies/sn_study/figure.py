"""The SN study's figure (paper Figure 10, App. D.4): the spectrally normalised (and the
weight-decay) variants of the network methods beside every benchmark method, on the study's
instances: each label's mean Spearman correlation of its ÊU with the posterior excess risk and
with the posterior variance, with its interval, as a horizontal dot plot.

The input is :func:`postrisk.studies.sn_study.tables.figure10_frame`. Benchmark methods are drawn in
dark grey, the SN variants in blue, the WD variants in orange; the study's own plain rows (which
repeat the benchmark's) are not drawn. Rows are sorted by ρ with the posterior excess risk, best
on top; SNGP-Het's mean is a dashed vertical line where it is present.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # the backend (Agg) is set by postrisk.report
import numpy as np
import pandas as pd

from postrisk.report.style import save_figure

#: The two panels: target → title.
PANELS = {"posterior_excess_risk": "ρ(ÊU, posterior excess risk)",
          "posterior_variance": "ρ(ÊU, posterior variance)"}
#: Colours: benchmark methods, the SN variants, the WD variants.
COLOURS = {"plain": "0.25", "sn": "tab:blue", "wd": "tab:orange"}
LEGEND = {"plain": "benchmark method", "sn": "+ spectral normalisation",
          "wd": "+ strong weight decay"}
REFERENCE = "SNGP-Het"
EMPTY_MESSAGE = "no SN study rows"


def _drawn(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows drawn: the benchmark's and the study's SN and WD arms."""
    if frame is None or not len(frame):
        return pd.DataFrame(columns=["label", "source", "arm", "target", "mean", "low", "high"])
    keep = (frame["source"] == "benchmark") | frame["arm"].isin(["sn", "wd"])
    return frame[keep]


def _order(frame: pd.DataFrame) -> list[str]:
    """Labels by mean ρ with the posterior excess risk, best first (labels without it last)."""
    risk = frame[frame["target"] == "posterior_excess_risk"].set_index("label")["mean"]
    labels = list(dict.fromkeys(frame["label"]))
    key = {lab: float(risk.get(lab, np.nan)) for lab in labels}
    return sorted(labels, key=lambda lab: (not np.isfinite(key[lab]), -np.nan_to_num(key[lab])))


def draw_figure10(frame: pd.DataFrame):
    """Two panels sharing the label axis (module docstring); returns the figure."""
    rows = _drawn(frame)
    order = _order(rows) if len(rows) else []
    height = max(2.8, 0.24 * len(order) + 1.6)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(9.0, height), sharey=True,
                             layout="constrained", squeeze=False)
    if not order:
        axes[0, 0].text(0.5, 0.5, EMPTY_MESSAGE, ha="center", va="center",
                        transform=axes[0, 0].transAxes)
        axes[0, 1].set_axis_off()
        return fig
    y = {label: i for i, label in enumerate(order)}
    arms = rows.drop_duplicates("label").set_index("label")
    kind = {lab: ("plain" if arms.loc[lab, "source"] == "benchmark" else arms.loc[lab, "arm"])
            for lab in order}
    reference_drawn = False
    for ax, (target, title) in zip(axes[0], PANELS.items(), strict=True):
        sub = rows[rows["target"] == target]
        for _, row in sub.iterrows():
            colour = COLOURS[kind[row["label"]]]
            x, lo, hi = (float(row[c]) for c in ("mean", "low", "high"))
            if not np.isfinite(x):
                continue
            err = ([[max(x - lo, 0.0)], [max(hi - x, 0.0)]]
                   if np.isfinite(lo) and np.isfinite(hi) else None)
            ax.errorbar([x], [y[row["label"]]], xerr=err, fmt="o", color=colour, ms=4.5,
                        elinewidth=1.0, capsize=1.8, zorder=3)
        ref = sub[(sub["label"] == REFERENCE) & (sub["source"] == "benchmark")]["mean"]
        if len(ref) and np.isfinite(float(ref.iloc[0])):
            ax.axvline(float(ref.iloc[0]), color="k", lw=0.8, ls="--", zorder=1)
            reference_drawn = True
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("mean over instances (bars: mean ± 1.96 SE)", fontsize=8)
        ax.grid(axis="x", color="0.9", lw=0.6)
        ax.tick_params(axis="x", labelsize=8)
    ax0 = axes[0, 0]
    ax0.set_yticks(range(len(order)), order, fontsize=8)
    for tick, label in zip(ax0.get_yticklabels(), order, strict=True):
        tick.set_color(COLOURS[kind[label]] if kind[label] != "plain" else "k")
    ax0.set_ylim(len(order) - 0.5, -0.5)
    handles = [plt.Line2D([], [], ls="none", marker="o", color=COLOURS[k]) for k in LEGEND
               if k in kind.values()]
    labels = [LEGEND[k] for k in LEGEND if k in kind.values()]
    if reference_drawn:
        handles.append(plt.Line2D([], [], color="k", lw=0.8, ls="--"))
        labels.append(f"{REFERENCE} (benchmark)")
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=7,
               frameon=False)
    return fig


def figure10(frame: pd.DataFrame, path: str | Path, scale: str) -> None:
    """Paper Figure 10 from :func:`~postrisk.studies.sn_study.tables.figure10_frame`: writes
    ``path``
    (PNG) and the PDF beside it, with the scale note below the paper's scale."""
    save_figure(draw_figure10(frame), path, scale)
