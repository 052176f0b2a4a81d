"""The paper's figures from the evaluation tables: mean ρ per method and target (Figure 2),
excess entanglement (Figure 3A), the matched-prior ranks (Figure 7) and the per-dataset means
(Figures 8–9).

Which figures the report has, their titles and captions are catalogue entries
(:mod:`postrisk.grid.artefacts`, stage ``figure``); each names one of the ``*_figure`` builders at
the end of this module, which take the frames the entry reads. Every ``figure_*`` function is
pure: it takes the frames (the report's tables without their
``scale`` column), the run's scale and an output path *stem* (no suffix), writes
``<stem>.png`` (150 dpi) and ``<stem>.pdf`` and returns the two paths. The matching ``draw_*``
function returns the open figure instead (for tests and notebooks).

Conventions shared by all figures: methods are rows (one per method, best first from the top,
display names on the axis); reference rows (oracle, Mahalanobis, 10-NN, constant AU) are grey
and come after a separator; 95% intervals are error bars where finite; "n/a" marks a value that
is not applicable; below the paper's scale the figure carries the scale note in red.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from postrisk.grid.artefacts import CONDITION_SCORES, figure_files
from postrisk.grid.vocabulary import PRIORS
from postrisk.methods.registry import display_name
from postrisk.methods.table import REFERENCE_ROWS
from postrisk.report.style import scale_note
from postrisk.tasks.key import KEY_COLUMNS

#: Okabe–Ito colours (colour-blind safe), in the order the series use them.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
REFERENCE_COLOUR = "0.55"
#: The targets of Figure 2, with their panel titles.
RHO_TARGETS = {"eu_posterior_excess_risk": "EU vs posterior excess risk",
               "eu_posterior_variance": "EU vs posterior variance",
               "eu_pointwise_excess_risk": "EU vs point-wise excess risk",
               "au": "AU vs noise variance"}
PRIOR_LABELS = {"gp": "GP oracle", "hbart": "HBART oracle", "bnn": "BNN oracle"}
PRIOR_MARKERS = {"gp": "o", "hbart": "s", "bnn": "^"}

ROW_INCH = 0.24  # height of one method row
GAP = 0.8  # extra rows between the fitted methods and the reference rows
TICK_SIZE = 8


# -- ordering and layout ----------------------------------------------------------------------
def is_reference(method: str, kind: str | None = None) -> bool:
    """A reference row (oracle, Mahalanobis, 10-NN, constant AU) rather than a fitted method."""
    if kind is not None and isinstance(kind, str):
        return kind == "reference"
    return method in REFERENCE_ROWS


def method_order(frame: pd.DataFrame, value: str, *, ascending: bool = False) -> list[str]:
    """The methods of ``frame`` (one row per method: ``method``, ``value``, optional ``kind``)
    best first: fitted methods by ``value`` (descending unless ``ascending``; NaN last; ties by
    name), then the reference rows in the same way. Every figure lays its rows out in this
    order."""
    if frame.empty:
        return []
    kinds = frame["kind"] if "kind" in frame else pd.Series(None, index=frame.index)
    table = pd.DataFrame({"method": frame["method"].astype(str),
                          "value": pd.to_numeric(frame[value], errors="coerce"),
                          "reference": [is_reference(m, k)
                                        for m, k in zip(frame["method"], kinds, strict=True)]})
    table = table.drop_duplicates("method")
    sign = 1.0 if ascending else -1.0
    table["key"] = sign * table["value"]
    table["missing"] = table["value"].isna()
    table = table.sort_values(["reference", "missing", "key", "method"], kind="mergesort")
    return table["method"].tolist()


def _labels(frame: pd.DataFrame) -> dict[str, str]:
    """method → display name (the frame's ``display_name`` where it has one)."""
    names = {m: display_name(m) for m in frame["method"].astype(str)} if len(frame) else {}
    if "display_name" in frame:
        for m, d in zip(frame["method"], frame["display_name"], strict=True):
            if isinstance(d, str) and d:
                names[str(m)] = d
    return names


def _positions(order: Sequence[str], references: set[str]) -> dict[str, float]:
    """Row position of each method (top = 0): the fitted methods in ``order``, then, after a
    gap, the reference rows in ``order``."""
    fitted = [m for m in order if m not in references]
    refs = [m for m in order if m in references]
    pos = {m: float(i) for i, m in enumerate(fitted)}
    start = len(fitted) + (GAP if fitted else 0.0)
    pos.update({m: start + i for i, m in enumerate(refs)})
    return pos


def _row_axis(ax: Axes, order: Sequence[str], names: Mapping[str, str],
              references: set[str], labels: bool = True) -> dict[str, float]:
    """Method rows on the y axis of ``ax``, best at the top; grey reference labels after a
    dashed separator. Returns the row positions."""
    pos = _positions(order, references)
    order = sorted(order, key=pos.__getitem__)
    ax.tick_params(axis="y", labelsize=TICK_SIZE, length=0, labelleft=labels)
    if labels:  # (a panel sharing the axis of a labelled one leaves the ticks alone)
        ax.set_yticks([pos[m] for m in order], [names.get(m, m) for m in order])
        for tick, method in zip(ax.get_yticklabels(), order, strict=True):
            if method in references:
                tick.set_color(REFERENCE_COLOUR)
    fitted = [pos[m] for m in order if m not in references]
    refs = [pos[m] for m in order if m in references]
    if fitted and refs:
        ax.axhline((max(fitted) + min(refs)) / 2, color="0.3", lw=0.8, ls="--")
    if pos:
        ax.set_ylim(max(pos.values()) + 0.7, min(pos.values()) - 0.7)  # best at the top
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    return pos


def _na(ax: Axes, y: float, x: float = 0.02, **kw) -> None:
    """Write "n/a" on row ``y`` near the left edge (x in axes coordinates)."""
    kw = {"color": "0.35", **kw}
    ax.text(x, y, "n/a", transform=ax.get_yaxis_transform(), ha="left", va="center",
            fontsize=7, style="italic", **kw)


def _point(ax: Axes, x: float, y: float, lo: float, hi: float, colour, marker: str = "o",
           hollow: bool = False, size: float = 4.5) -> None:
    """A marker with an error bar for its interval where both ends are finite."""
    finite = np.isfinite(lo) and np.isfinite(hi)
    ax.errorbar([x], [y], xerr=[[max(x - lo, 0.0)], [max(hi - x, 0.0)]] if finite else None,
                fmt=marker, color=colour, ms=size, mfc="none" if hollow else colour,
                mew=1.1, elinewidth=1.0, capsize=1.8, zorder=3)


def _height(n_rows: int, extra: float = 1.6) -> float:
    return max(2.6, ROW_INCH * n_rows + extra)


def _empty(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", fontsize=10,
            color="0.35")
    ax.set_xticks([])
    ax.set_yticks([])


def save_png_pdf(fig: Figure, stem: str | Path, scale: str) -> list[Path]:
    """Write ``<stem>.png`` (150 dpi) and ``<stem>.pdf``, with the scale note (below the paper's
    scale) as a red line at the top; closes the figure and returns the two paths."""
    note = scale_note(scale)
    if note:
        fig.suptitle(note, fontsize=9, color="tab:red")
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in figure_files(str(stem) + ".png")]
    try:
        fig.savefig(paths[0], dpi=150, metadata={"Software": None})
        fig.savefig(paths[1], metadata={"CreationDate": None, "Creator": None})
    finally:
        plt.close(fig)
    return paths


def _figure(width: float, height: float, ncols: int = 1, nrows: int = 1, **kw):
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained",
                        squeeze=False, **kw)


# -- Figure 2: mean ρ per method and target ---------------------------------------------------
def draw_mean_rho(mean_rho: pd.DataFrame) -> Figure:
    """Four panels sharing the method axis: mean ρ with its 95% interval for the three EU targets
    and for AU; methods ordered by mean ρ(EU, posterior excess risk)."""
    frame = mean_rho[mean_rho["target"].isin(list(RHO_TARGETS))] if len(mean_rho) else mean_rho
    primary = frame[frame["target"] == "eu_posterior_excess_risk"] if len(frame) else frame
    order = method_order(primary, "mean") if len(primary) else []
    order += [m for m in dict.fromkeys(frame["method"].astype(str)) if m not in order] \
        if len(frame) else []
    names = _labels(frame) if len(frame) else {}
    kinds = dict(zip(frame["method"], frame["kind"], strict=True)) \
        if "kind" in frame and len(frame) else {}
    references = {m for m in order if is_reference(m, kinds.get(m))}
    fig, axes = _figure(11.0, _height(len(order) + 1), ncols=len(RHO_TARGETS), sharey=True)
    if not order:
        _empty(axes[0, 0], "no scores")
        return fig
    values = pd.to_numeric(frame["mean"], errors="coerce")
    lows = pd.to_numeric(frame["ci_low"], errors="coerce")
    highs = pd.to_numeric(frame["ci_high"], errors="coerce")
    extent = pd.concat([values, lows, highs]).dropna()
    x_lo = min(-0.1, float(extent.min()) - 0.05) if len(extent) else -0.1
    x_hi = max(1.0, float(extent.max())) + 0.05
    paper_drawn = False
    for i, (target, title) in enumerate(RHO_TARGETS.items()):
        ax = axes[0, i]
        pos = _row_axis(ax, order, names, references, labels=i == 0)
        sub = frame[frame["target"] == target].set_index("method")
        colour = OKABE_ITO[i]
        for method, y in pos.items():
            if method not in sub.index or not np.isfinite(_num(sub.at[method, "mean"])):
                _na(ax, y)
                continue
            row = sub.loc[method]
            _point(ax, _num(row["mean"]), y, _num(row["ci_low"]), _num(row["ci_high"]),
                   REFERENCE_COLOUR if method in references else colour)
            paper = _num(row.get("paper_mean", np.nan))
            if np.isfinite(paper):
                ax.plot([paper], [y], "D", ms=6, mfc="none", mec="k", mew=0.9, zorder=4)
                paper_drawn = True
        ax.axvline(0, color="k", lw=0.7)
        ax.set_xlim(x_lo, x_hi)
        ax.set_title(title, fontsize=9, color=colour)
        ax.tick_params(axis="x", labelsize=TICK_SIZE)
    fig.supxlabel("mean Spearman ρ (bars: 95% bootstrap interval over datasets; none with "
                  "fewer than 3 datasets)", fontsize=8)
    if paper_drawn:
        fig.legend([plt.Line2D([], [], ls="none", marker="D", mfc="none", mec="k")],
                   ["paper's mean ρ (text)"], loc="outside lower right", fontsize=7,
                   frameon=False)
    return fig


def _num(value) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return out


def figure_mean_rho(mean_rho: pd.DataFrame, scale: str, stem: str | Path) -> list[Path]:
    """Paper Figure 2 from the mean-ρ table (``scores.csv`` without ``scale``)."""
    return save_png_pdf(draw_mean_rho(mean_rho), stem, scale)


# -- Figure 3A: excess entanglement -----------------------------------------------------------
ENTANGLEMENT_SERIES = {"posterior_excess_risk": "EU = posterior excess risk",
                       "posterior_variance": "EU = posterior variance"}


def draw_entanglement(table8: pd.DataFrame, table9: pd.DataFrame) -> Figure:
    """Δρ per method for the two EU definitions with 95% intervals, a line at 0 and the paper's
    Δρ as hollow markers; methods ordered by Δρ (posterior excess risk), lowest first."""
    tables = dict(zip(ENTANGLEMENT_SERIES, (table8, table9), strict=True))
    tables = {k: (t if t is not None else pd.DataFrame()) for k, t in tables.items()}
    primary = next((t for t in tables.values() if len(t)), pd.DataFrame())
    order = method_order(primary, "delta_ent", ascending=True) if len(primary) else []
    for t in tables.values():
        if len(t):
            order += [m for m in dict.fromkeys(t["method"].astype(str)) if m not in order]
    fig, axes = _figure(6.8, _height(len(order) + 1, extra=2.0))
    ax = axes[0, 0]
    if not order:
        _empty(ax, "no method with heteroscedastic AU")
        return fig
    names: dict[str, str] = {}
    for t in tables.values():
        if len(t):
            names.update(_labels(t))
    references = {m for m in order if is_reference(m)}
    pos = _row_axis(ax, order, names, references)
    offsets = dict(zip(ENTANGLEMENT_SERIES, (-0.17, 0.17), strict=True))
    handles, labels, paper_drawn = [], [], False
    for i, (target, label) in enumerate(ENTANGLEMENT_SERIES.items()):
        t = tables[target]
        colour = OKABE_ITO[i]
        sub = t.set_index("method") if len(t) else pd.DataFrame()
        for method, y in pos.items():
            y = y + offsets[target]
            value = _num(sub.at[method, "delta_ent"]) if method in sub.index else np.nan
            if not np.isfinite(value):
                _na(ax, y, color=colour)
                continue
            row = sub.loc[method]
            _point(ax, value, y, _num(row.get("delta_ent_ci_low")),
                   _num(row.get("delta_ent_ci_high")),
                   REFERENCE_COLOUR if method in references else colour)
            paper = _num(row.get("paper_delta_ent", np.nan))
            if np.isfinite(paper):
                ax.plot([paper], [y], "o", ms=6.5, mfc="none", mec=colour, mew=1.2, zorder=4)
                paper_drawn = True
        handles.append(plt.Line2D([], [], ls="-", marker="o", color=colour))
        labels.append(label)
    if paper_drawn:
        handles.append(plt.Line2D([], [], ls="none", marker="o", mfc="none", mec="k"))
        labels.append("paper's Δρ")
    ax.axvline(0, color="k", lw=0.9)
    ax.set_xlabel("Δρ = ρ(ÊU, ÂU) − ρ(EU*, AU*)   (> 0: more coupled than the truth; "
                  "bars: 95% interval)", fontsize=8)
    ax.tick_params(axis="x", labelsize=TICK_SIZE)
    ax.set_title("Excess entanglement (heteroscedastic instances)", fontsize=9)
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=7,
               frameon=False)
    return fig


def figure_entanglement(table8: pd.DataFrame, table9: pd.DataFrame, scale: str,
                        stem: str | Path) -> list[Path]:
    """Paper Figure 3A from Tables 8 and 9 (either may be empty)."""
    return save_png_pdf(draw_entanglement(table8, table9), stem, scale)


# -- Figure 7: matched prior ------------------------------------------------------------------
def draw_matched_prior(ranks: pd.DataFrame) -> Figure:
    """Mean within-condition rank per method under each prior; methods ordered by their
    mean rank over the priors, rank 1 at the left and the best method at the top."""
    frame = ranks if ranks is not None else pd.DataFrame()
    if len(frame):
        mean = frame.groupby("method", as_index=False, sort=False)["rank"].mean()
        order = method_order(mean, "rank", ascending=True)
    else:
        order = []
    fig, axes = _figure(6.4, _height(len(order) + 1, extra=2.0))
    ax = axes[0, 0]
    if not order:
        _empty(ax, "no method scored in every condition")
        return fig
    names = _labels(frame)
    references = {m for m in order if is_reference(m)}
    pos = _row_axis(ax, order, names, references)
    priors = [e for e in PRIORS if e in set(frame["prior"])] + sorted(
        set(frame["prior"].astype(str)) - set(PRIORS))
    for method, y in pos.items():
        sub = frame[frame["method"] == method]
        r = pd.to_numeric(sub["rank"], errors="coerce").dropna()
        if r.empty:
            _na(ax, y)
            continue
        ax.plot([r.min(), r.max()], [y, y], color="0.75", lw=1.0, zorder=2)
        ax.plot([r.mean()], [y], "|", color="k", ms=9, mew=1.2, zorder=4)
    handles = []
    for i, prior in enumerate(priors):
        sub = frame[frame["prior"] == prior]
        ys = [pos[str(m)] for m in sub["method"]]
        colour = OKABE_ITO[i % len(OKABE_ITO)]
        handles.append(ax.scatter(pd.to_numeric(sub["rank"], errors="coerce"), ys, s=26,
                                  marker=PRIOR_MARKERS.get(prior, "D"), color=colour,
                                  edgecolor="white", linewidth=0.4, zorder=3,
                                  label=PRIOR_LABELS.get(prior, prior)))
    handles.append(plt.Line2D([], [], ls="none", marker="|", color="k", ms=9, mew=1.2,
                              label="mean over priors"))
    top = float(pd.to_numeric(frame["rank"], errors="coerce").max())
    ax.set_xlim(0.5, max(top, len(order)) + 0.5)
    ax.set_xlabel("mean within-condition rank (1 = best ρ(EU, posterior excess risk))",
                  fontsize=8)
    ax.tick_params(axis="x", labelsize=TICK_SIZE)
    ax.set_title("Rank per prior", fontsize=9)
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=7,
               frameon=False)
    return fig


def figure_matched_prior(matched_prior_ranks: pd.DataFrame, scale: str,
                         stem: str | Path) -> list[Path]:
    """Paper Figure 7 from ``matched_prior_ranks`` (may be empty)."""
    return save_png_pdf(draw_matched_prior(matched_prior_ranks), stem, scale)


# -- Figures 8–9: per dataset -----------------------------------------------------------------
def per_dataset_means(scores: pd.DataFrame, column: str) -> pd.DataFrame:
    """Mean, min, max and count of ``column`` per dataset and fitted method over the ok
    instances (NaN: not applicable on any of them)."""
    ok = scores[(scores["kind"] == "method") & (scores["status"] == "ok")]
    values = pd.to_numeric(ok[column], errors="coerce")
    stats = values.groupby([ok["dataset"], ok["method"]], sort=False).agg(
        ["mean", "min", "max", "count"])
    return stats.reset_index()


def draw_per_dataset(scores: pd.DataFrame, column: str = "spearman_eu_posterior_excess_risk",
                     ncols: int = 3) -> Figure:
    """One panel per dataset: the mean of ``column`` per fitted method over the dataset's ok
    instances, with the range (min–max) over them; methods ordered within each panel."""
    stats = per_dataset_means(scores, column) if len(scores) else pd.DataFrame()
    datasets = list(dict.fromkeys(stats["dataset"])) if len(stats) else []
    ncols = max(1, min(ncols, len(datasets)))
    nrows = max(1, -(-len(datasets) // ncols))
    n_methods = stats["method"].nunique() if len(stats) else 0
    fig, axes = _figure(4.2 * ncols, nrows * _height(n_methods, extra=0.9) + 0.6,
                        ncols=ncols, nrows=nrows, sharex=True)
    if not datasets:
        _empty(axes[0, 0], "no scored instances")
        return fig
    values = stats[["mean", "min", "max"]].stack().dropna()
    x_lo = min(-0.1, float(values.min()) - 0.05) if len(values) else -0.1
    x_hi = max(1.0, float(values.max())) + 0.05
    names = {m: display_name(m) for m in stats["method"]}
    ok = scores[(scores["kind"] == "method") & (scores["status"] == "ok")]
    ok = ok[pd.to_numeric(ok[column], errors="coerce").notna()]  # instances where applicable
    n_instances = ok.drop_duplicates(list(KEY_COLUMNS)) \
        .groupby("dataset").size()
    for k, ax in enumerate(axes.flat):
        if k >= len(datasets):
            ax.set_visible(False)
            continue
        dataset = datasets[k]
        sub = stats[stats["dataset"] == dataset]
        order = method_order(sub, "mean")
        pos = _row_axis(ax, order, names, set())
        rows = sub.set_index("method")
        for method, y in pos.items():
            mean = _num(rows.at[method, "mean"])
            if not np.isfinite(mean):
                _na(ax, y)
                continue
            _point(ax, mean, y, _num(rows.at[method, "min"]), _num(rows.at[method, "max"]),
                   OKABE_ITO[0], size=4.0)
        ax.axvline(0, color="k", lw=0.7)
        ax.set_xlim(x_lo, x_hi)
        ax.tick_params(axis="x", labelsize=TICK_SIZE, labelbottom=True)
        ax.set_title(f"{dataset} ({int(n_instances.get(dataset, 0))} instances; "
                     "bars: min–max)", fontsize=9)
    fig.supxlabel(f"mean {_column_label(column)} over the dataset's instances", fontsize=8)
    return fig


def _column_label(column: str) -> str:
    if column == "spearman_au":
        return "ρ(AU, true noise variance)"
    if column.startswith("spearman_eu_"):
        return f"ρ(EU, {column.removeprefix('spearman_eu_').replace('_', ' ')})"
    return column.replace("_", " ")


def figure_per_dataset(scores: pd.DataFrame, scale: str, stem: str | Path,
                       column: str = "spearman_eu_posterior_excess_risk") -> list[Path]:
    """Paper Figures 8–9 from the per-instance score table (fitted methods only)."""
    return save_png_pdf(draw_per_dataset(scores, column), stem, scale)


# -- the catalogue's builders: the frames an entry reads (its ``reads``), the scale, a stem ------
def mean_rho_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                    ) -> list[Path]:
    return figure_mean_rho(frames["scores"], scale, stem)


def entanglement_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                        ) -> list[Path]:
    return figure_entanglement(frames["table8"], frames["table9"], scale, stem)


def matched_prior_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                         ) -> list[Path]:
    return figure_matched_prior(frames["matched_prior_ranks"], scale, stem)


def per_dataset_eu_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                          ) -> list[Path]:
    return figure_per_dataset(frames[CONDITION_SCORES], scale, stem,
                              column="spearman_eu_posterior_excess_risk")


def per_dataset_au_figure(frames: Mapping[str, pd.DataFrame], scale: str, stem: str | Path
                          ) -> list[Path]:
    return figure_per_dataset(frames[CONDITION_SCORES], scale, stem, column="spearman_au")
