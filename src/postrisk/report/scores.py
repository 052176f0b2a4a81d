"""The mean-ρ table per method and target, its R̂ ≤ 1.01 sensitivity version, every evaluation
table, the figures and the HTML report, from the per-condition score tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core.io import write_text_atomic
from postrisk.evaluation.scoring import SCORE_COLUMNS, aggregate_scores
from postrisk.evaluation.tables import long_table
from postrisk.report.figures import (
    FIGURE_TITLES,
    FIGURES,
    PER_DATASET,
    figure_entanglement,
    figure_matched_prior,
    figure_mean_rho,
    figure_per_dataset,
)
from postrisk.report.html import ReportFigure, ReportTable, write_report
from postrisk.report.tables import Table, build_tables, with_scale, write_tables
from postrisk.tasks.validity import RHAT_STRICT


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


@dataclass(frozen=True)
class ReportInputs:
    """What the run's HTML report needs beyond the score tables: where it goes, the checks'
    Table 3 and rank histograms, the run's configuration and the deviations document."""

    html: str | Path
    manifest: str | Path
    figures_dir: str | Path
    table3: str | Path
    rank_histograms: Sequence[str | Path]
    config: Mapping
    deviations: str | Path


def write_scores(score_csvs, instances_csv, table_csv, scale: str, rng: np.random.Generator,
                 sensitivity_csv=None, tables_dir=None, long_csv=None, markdown=None,
                 disentanglement=(), correlation: str = "pearson",
                 report: ReportInputs | None = None) -> pd.DataFrame:
    """Mean ρ per method and target over the valid instances (``valid`` in the checks CSV);
    ``sensitivity_csv``: the same over ``valid_strict`` (BNN R̂ ≤ 1.01); ``tables_dir``: every
    evaluation table with the paper's numbers beside ours, plus ``markdown`` (one page of them
    all) and ``long_csv`` (every method, instance and metric); ``disentanglement``: the
    Disentanglement Error experiment's per-level CSVs; ``report``: the figures and the HTML
    report (needs ``tables_dir``)."""
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
    tables = []
    if tables_dir is not None:
        runs = [pd.read_csv(p) for p in disentanglement]
        tables = build_tables(scores, rng, strict=strict_rows, rhat_share=rhat_share(instances),
                              mean_rho=table, disentanglement=runs, correlation=correlation)
        write_tables(tables, tables_dir, scale, markdown=markdown)
        table = tables[0].frame  # the mean-ρ table with display names and the paper's means
    if long_csv is not None:
        write_text_atomic(long_csv, long_table(scores, SCORE_COLUMNS).to_csv(index=False))
    write_text_atomic(table_csv, with_scale(table, scale).to_csv(index=False))
    if report is not None:
        if not tables:
            raise ValueError("the report needs the evaluation tables (tables_dir)")
        write_report_files(report, scale, tables, scores, Path(tables_dir), Path(table_csv))
    return with_scale(table, scale)


def write_report_files(report: ReportInputs, scale: str, tables: Sequence[Table],
                       scores: pd.DataFrame, tables_dir: Path, table_csv: Path) -> dict:
    """The run's figures (PNG and PDF) and its HTML report with every table."""
    by_name = {t.name: t.frame for t in tables}
    figures_dir = Path(report.figures_dir)
    made = {
        "fig2_mean_rho": figure_mean_rho(by_name["scores"], scale,
                                         figures_dir / "fig2_mean_rho"),
        "fig3a_entanglement": figure_entanglement(by_name["table8"], by_name["table9"], scale,
                                                  figures_dir / "fig3a_entanglement"),
        "fig7_matched_prior": figure_matched_prior(by_name["matched_prior_ranks"], scale,
                                                   figures_dir / "fig7_matched_prior"),
        **{name: figure_per_dataset(scores, scale, figures_dir / name, column=column)
           for name, column in PER_DATASET.items()},
    }
    figures = [ReportFigure(figures_dir / f"{name}.png", FIGURE_TITLES[name], FIGURES[name])
               for name in made]
    figures += [ReportFigure(Path(p), "Rank histograms (paper Table 3's calibration check)",
                             "Share of evaluation points per bin of the rank of f* among the "
                             "posterior draws, pooled over the valid instances of each family; "
                             "dashed: the exact bin probabilities of a calibrated sampler; grey: "
                             "the 95% range of a uniform histogram of as many independent "
                             "points.") for p in report.rank_histograms]
    table3 = pd.read_csv(report.table3)
    shown = [ReportTable("table3", "Reference-posterior checks (paper Table 3)",
                         "Pooled 90% coverage with its bootstrap interval over instances and its "
                         "range over cells, rank-histogram deviation, Monte Carlo error of the "
                         "posterior variance and corr(posterior mean, f*) per prior family, "
                         "the paper's values beside ours.", table3, Path(report.table3))]
    shown += [ReportTable(t.name, t.title, t.caption, t.frame,
                          table_csv if t.name == "scores" else tables_dir / f"{t.name}.csv")
              for t in tables]
    return write_report(report.html, report.manifest, scale=scale, figures=figures,
                        tables=shown, config=report.config,
                        deviations_md=Path(report.deviations).read_text(encoding="utf-8"))
