"""The classification family's page: one self-contained HTML file a person opens in a browser
(``families/classification/index.html``), showing the rank histograms of the reference
posteriors, Table 3 per prior (:mod:`~postrisk.families.classification.table3`) and the
per-instance calibration table (:mod:`~postrisk.families.classification.checks`), with the
configuration of the summary and a note of how the classification checks differ from the
paper's (which has no classification tasks). Also draws the rank-histogram figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.grid.artefacts import artefact
from postrisk.report.checks import legend_below, rank_histogram_axes
from postrisk.report.html import ReportFigure, ReportTable, write_report
from postrisk.tasks.validity import RHAT_THRESHOLD

#: The page's heading.
TITLE = "postrisk classification references"
#: The ranked quantities, one row of panels each: the pooled histogram's key in Table 3's
#: pooled pairs (:func:`~postrisk.families.classification.table3.pool_points`) and its name
#: in the panels' titles.
RANKED = (("rank_hist", r"$\pi^*_k(x)$"), ("rank_hist_latent", r"$f^*_k(x)$"))
#: The page's tables (catalogue ids), in page order.
PAGE_TABLES = ("classification_table3", "classification_calibration")
#: The page's figure (catalogue id).
PAGE_FIGURE = "classification_rank_histograms"


def draw_rank_histograms(instances: pd.DataFrame, points: Mapping[str, Mapping]):
    """The rank histograms of the priors of ``instances`` (flagged ``valid``), one column each:
    row 1 the rank of π*_k(x) among the D draws of π_k(x), row 2 the rank of f*_k(x) among the
    latent draws, pooled over the (point, class) pairs of the prior's valid instances
    (``points``: :func:`~postrisk.families.classification.table3.collect`'s); each panel as the
    regression's (:func:`~postrisk.report.checks.rank_histogram_axes`), their shared legend
    below the panels. A prior without a valid instance says so."""
    priors = list(dict.fromkeys(instances["prior"]))
    valid = instances[instances["valid"].astype(bool)]
    n_inst = valid.groupby("prior").size()
    n_pairs = valid.groupby("prior")["points"].sum()
    fig, axes = plt.subplots(len(RANKED), len(priors), figsize=(4.5 * len(priors), 6.4),
                             squeeze=False, layout="constrained")
    for column, prior in enumerate(priors):
        for row, (key, quantity) in enumerate(RANKED):
            ax = axes[row, column]
            if prior in points:
                rank_histogram_axes(ax, prior, points[prior][key],
                                    points[prior]["rank_expected"], int(n_inst[prior]),
                                    int(n_pairs[prior]), quantity=quantity, unit="pairs")
            else:
                ax.text(0.5, 0.5, f"{prior.upper()}: no valid instance", ha="center",
                        va="center")
                ax.set_axis_off()
    drawn = [ax for ax in axes.flat if ax.get_legend_handles_labels()[0]]
    if drawn:
        legend_below(fig, drawn[0])
    return fig


def _prior_line(row: pd.Series) -> str:
    """One prior's line of the page's note: its instances, the dropped ones and its pooled
    coverage of π* against a perfect sampler's."""
    head = (f"- **{str(row['prior']).upper()}**: {int(row['instances'])} valid instance(s), "
            f"{int(row['instances_dropped'])} dropped")
    if not row["instances"]:
        return head + "."
    interval = ("" if row["coverage90_ci"] == "n/a"
                else f" (95% t-interval over instances {row['coverage90_ci']})")
    return (f"{head}; 90% coverage of π* {row['coverage90_pooled']:.4f}{interval} against "
            f"{row['coverage90_nominal']:.4f}, a perfect sampler's at D = {int(row['draws'])}.")


def deviations_note(table3: pd.DataFrame) -> str:
    """The page's note (Markdown) on how these checks differ from the paper's Table 3: the
    paper has no classification tasks, so no paper number stands beside them; what is checked,
    the seed rule without replacement seeds, and each prior's instances and coverage from
    ``table3``."""
    lines = [
        "## Classification tasks",
        "",
        "The paper has no classification tasks (its §6 leaves them to future work): no paper "
        "number stands beside these tables, and docs/deviations.md lists the choices behind "
        "them (section \"Classification tasks\").",
        "",
        "Table 3 checks each reference posterior per (evaluation point, class) pair: the class "
        "probability π*_k(x) against the D stored draws of π_k(x), recomputed from the stores, "
        "and the latent f*_k(x) against the latent draws (the store's ranks and flags). The "
        "coverage's nominal is a perfect sampler's at D, 0.9·(D − 1)/(D + 1), not 0.90. The "
        "rank p-values treat every pooled pair as independent, which the pairs of one "
        "instance are not: they prompt a look at the histograms and are no test at their "
        "nominal level.",
        "",
        f"A seed of a cell (dataset, noise, coverage, K) counts when its BNN instance has max "
        f"R̂ ≤ {RHAT_THRESHOLD}; otherwise its GP and BNN instances are dropped alike, and, "
        "unlike the regression benchmark, no later seed replaces them.",
        "",
    ]
    lines += [_prior_line(row) for _, row in table3.iterrows()]
    return "\n".join(lines) + "\n"


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """A table as the page shows it: without the run's scale (the page states it) and with
    the simplex deviation in scientific notation (it is far below the page's 3 decimals)."""
    shown = frame.drop(columns=["scale"], errors="ignore").copy()
    if "simplex_max_dev" in shown:
        shown["simplex_max_dev"] = [f"{v:.1e}" if np.isfinite(v) else None
                                    for v in shown["simplex_max_dev"].astype(float)]
    return shown


def write_page(out: Mapping[str, str | Path], tables: Mapping[str, pd.DataFrame],
               config: Mapping, scale: str) -> dict:
    """Write the page ``out["classification_page"]`` and its manifest
    ``out["classification_page_manifest"]``: the rank-histogram figure (already saved at
    ``out["classification_rank_histograms"]``, its PDF beside it) and ``tables`` (catalogue id
    → frame, :data:`PAGE_TABLES`; their CSVs at ``out[id]`` are attached), with titles and
    captions from the catalogue, ``config`` and the note of :func:`deviations_note`. Returns
    the manifest."""
    figure = artefact(PAGE_FIGURE)
    report_tables: Sequence[ReportTable] = [
        ReportTable(ident, artefact(ident).title, artefact(ident).caption,
                    _shown(tables[ident]), Path(out[ident])) for ident in PAGE_TABLES]
    return write_report(
        out["classification_page"], out["classification_page_manifest"], scale=scale,
        figures=[ReportFigure(Path(out[PAGE_FIGURE]), figure.title, figure.caption)],
        tables=report_tables, config=config,
        deviations_md=deviations_note(tables["classification_table3"]), title=TITLE)
