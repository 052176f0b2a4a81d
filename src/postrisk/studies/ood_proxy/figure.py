"""The OOD study's figure (paper Figure 3B, App. D.3): how well each method's ÊU, fitted on one
dataset, separates out-of-distribution rows from held-out in-distribution rows, as the mean OOD
AUROC over instances with its 95% bootstrap interval, on all points (far OOD) and on the
distance-matched subset (near OOD, where the distance to the training inputs alone is at chance).

The input is Table 11 (:func:`~postrisk.studies.ood_proxy.tables.table11`, without
``scale``): one row per
scorer, the methods first (best all-points AUROC first), then the references (Mahalanobis,
10-NN, the classifier bound); rows are drawn in that order. Layout and colours follow the
conventions of :mod:`postrisk.report.figures`; the paper's values are hollow diamonds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from postrisk.report.figures import (
    OKABE_ITO,
    REFERENCE_COLOUR,
    TICK_SIZE,
    _empty,
    _figure,
    _height,
    _labels,
    _na,
    _num,
    _point,
    _row_axis,
    is_reference,
    save_png_pdf,
)

#: The two panels: (column suffix in Table 11, panel title).
PANELS = {"all": "All points (far OOD)", "matched": "Distance-matched (near OOD)"}
CHANCE = 0.5
CHANCE_LABEL = "chance: distance alone, after matching"
PAPER_LABEL = "paper (App. D.3)"
X_LIMITS = (0.3, 1.02)
EMPTY_MESSAGE = "no OOD instances scored"


def _x_limits(frame: pd.DataFrame) -> tuple[float, float]:
    """[0.3, 1.02], widened below where a drawn value or interval end falls under 0.3."""
    columns = [c for v in PANELS for c in (f"auroc_{v}", f"auroc_{v}_ci_low",
                                           f"auroc_{v}_ci_high", f"paper_auroc_{v}")
               if c in frame]
    values = np.array([_num(x) for c in columns for x in frame[c]], dtype=float)
    values = values[np.isfinite(values)]
    low = min(X_LIMITS[0], float(values.min()) - 0.03) if values.size else X_LIMITS[0]
    return low, X_LIMITS[1]


def _instances(frame: pd.DataFrame) -> str:
    """The instance count(s) of the rows, for the axis label."""
    values = frame["n_instances"] if "n_instances" in frame else []
    counts = sorted({int(n) for n in (_num(x) for x in values) if np.isfinite(n)})
    if not counts:
        return "instances"
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{span} instance" + ("" if counts == [1] else "s")


def draw_ood_auroc(table11: pd.DataFrame) -> Figure:
    """Two panels sharing the scorer axis: the OOD AUROC of each method's ÊU (and of the grey
    reference scorers) with its 95% interval, all points and distance-matched; the paper's
    values as hollow diamonds, a dashed line at chance (0.5), "n/a" where a value is missing."""
    frame = table11 if table11 is not None else pd.DataFrame()
    if len(frame) and "method" in frame:
        frame = frame.assign(method=frame["method"].astype(str)).drop_duplicates("method")
    order = frame["method"].tolist() if len(frame) and "method" in frame else []
    fig, axes = _figure(8.0, _height(len(order) + 1, extra=2.0), ncols=len(PANELS),
                        sharey=True)
    if not order:
        _empty(axes[0, 0], EMPTY_MESSAGE)
        axes[0, 1].set_axis_off()
        return fig
    names = _labels(frame)
    kinds = frame["kind"] if "kind" in frame else pd.Series(None, index=frame.index)
    references = {m for m, k in zip(order, kinds, strict=True) if is_reference(m, k)}
    rows = frame.set_index("method")
    x_lo, x_hi = _x_limits(frame)
    paper_drawn = False
    for i, (version, title) in enumerate(PANELS.items()):
        ax = axes[0, i]
        pos = _row_axis(ax, order, names, references, labels=i == 0)
        colour = OKABE_ITO[i]
        for method, y in pos.items():
            row = rows.loc[method]
            value = _num(row.get(f"auroc_{version}", np.nan))
            if np.isfinite(value):
                _point(ax, value, y, _num(row.get(f"auroc_{version}_ci_low", np.nan)),
                       _num(row.get(f"auroc_{version}_ci_high", np.nan)),
                       REFERENCE_COLOUR if method in references else colour)
            else:
                _na(ax, y)
            paper = _num(row.get(f"paper_auroc_{version}", np.nan))
            if np.isfinite(paper):
                ax.plot([paper], [y], "D", ms=6, mfc="none", mec="k", mew=0.9, zorder=4)
                paper_drawn = True
        ax.axvline(CHANCE, color="k", lw=0.8, ls="--", zorder=1)
        ax.set_xlim(x_lo, x_hi)
        ax.set_title(title, fontsize=9, color=colour)
        ax.tick_params(axis="x", labelsize=TICK_SIZE)
        ax.set_xlabel(f"OOD AUROC of ÊU, mean over {_instances(frame)}\n(bars: 95% bootstrap "
                      "interval over instances)", fontsize=8)
    handles = [plt.Line2D([], [], color="k", lw=0.8, ls="--")]
    labels = [CHANCE_LABEL]
    if paper_drawn:
        handles.append(plt.Line2D([], [], ls="none", marker="D", mfc="none", mec="k"))
        labels.append(PAPER_LABEL)
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=7,
               frameon=False)
    return fig


def figure_ood_auroc(table11: pd.DataFrame, scale: str, stem: str | Path) -> list[Path]:
    """Paper Figure 3B from Table 11 (may be empty): writes ``<stem>.png`` and ``<stem>.pdf``."""
    return save_png_pdf(draw_ood_auroc(table11), stem, scale)


def ood_auroc_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                     ) -> list[Path]:
    """The catalogue's builder: Figure 3B from the frame ``table11``."""
    return figure_ood_auroc(frames["table11"], scale, stem)
