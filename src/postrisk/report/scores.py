"""The report's three stages after scoring: the evaluation tables (one job, one bootstrap
stream), each figure (one job each, from the tables), and the HTML page (from the files).

What each stage writes is declared in the catalogue (:mod:`postrisk.grid.artefacts`); the
workflow passes the paths it resolved, so a table's or figure's file is where its entry says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.grid.artefacts import CONDITION_SCORES, ArtefactFile, artefact
from postrisk.report.html import ReportFigure, ReportTable, write_report
from postrisk.report.table_builders import without_ablations
from postrisk.report.tables import Table, build_tables, write_tables
from postrisk.tasks.key import KEY_COLUMNS


def read_condition_scores(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every condition's score table, concatenated (a condition whose cell has no valid seed
    wrote an empty file; an empty frame when every file is empty)."""
    frames = []
    for path in paths:
        try:
            frame = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            continue
        if len(frame):
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def rhat_share(instances: pd.DataFrame) -> float | None:
    """Share of point-wise BNN R̂ ≤ 1.01 over the valid BNN instances (``None`` without any)."""
    if "rhat_le_strict" not in instances:
        return None
    bnn = instances[(instances["prior"] == "bnn") & instances["valid"].astype(bool)]
    if bnn.empty or bnn["rhat_le_strict"].isna().all():
        return None
    return float(bnn["rhat_le_strict"].sum() / bnn["n_eval"].sum())


def write_evaluation_tables(score_csvs: Sequence[str | Path], instances_csv: str | Path,
                            out: Mapping[str, str | Path], page: str | Path, scale: str,
                            rng: np.random.Generator,
                            disentanglement: Sequence[str | Path] = (),
                            correlation: str = "pearson",
                            definition: str = "level") -> list[Table]:
    """Every table of the ``tables`` stage over the valid instances (``valid`` in the checks'
    instance table; the R̂ ≤ 1.01 versions over ``valid_strict``) into ``out`` (table id →
    path), and the tables page ``page``; ``disentanglement``: the Disentanglement Error
    experiment's per-level CSVs; ``correlation``, ``definition``: its settings."""
    scores = read_condition_scores(score_csvs)
    keys = list(KEY_COLUMNS)
    instances = pd.read_csv(instances_csv)
    scores = scores.merge(instances[[*keys, "valid", "valid_strict"]], on=keys, how="left")
    if scores["valid"].isna().any():
        raise ValueError("scores for instances that the checks do not know")
    strict = scores["valid_strict"].astype(bool)
    scores = scores.drop(columns=["valid", "valid_strict"])
    tables = build_tables(scores, rng, strict=strict, rhat_share=rhat_share(instances),
                          disentanglement=[pd.read_csv(p) for p in disentanglement],
                          correlation=correlation, definition=definition)
    missing = sorted({t.name for t in tables} - set(out))
    if missing:
        raise ValueError(f"no output path for the tables {missing}")
    write_tables(tables, Path(page).parent, scale, markdown=page, paths=out)
    return tables


def read_table(path: str | Path) -> pd.DataFrame:
    """A table as its CSV holds it, without the scale column (the report states the scale)."""
    frame = pd.read_csv(path)
    return frame.drop(columns=["scale"], errors="ignore")


def write_figure(figure: str, tables: Mapping[str, str | Path], score_csvs: Sequence[str | Path],
                 scale: str, png: str | Path) -> list[Path]:
    """The catalogue figure ``figure`` (PNG at ``png`` and the PDF beside it) from the tables it
    reads (``tables``: id → CSV) and, where it reads them, every condition's scores."""
    entry = artefact(figure)
    frames = {name: (without_ablations(read_condition_scores(score_csvs))
                     if name == CONDITION_SCORES
                     else read_table(tables[name])) for name in entry.reads}
    return entry.builder()(frames, scale, str(png)[: -len(".png")])


def write_report_page(html: str | Path, manifest: str | Path, contents: Sequence[ArtefactFile],
                      scale: str, config: Mapping, deviations: str | Path,
                      settings: Mapping[str, object], title: str = "postrisk report") -> dict:
    """The HTML report (headed ``title``) of ``contents`` (the catalogue's shown tables and
    figures, as the workflow resolved them) with the run's configuration and the deviations
    document; ``settings`` fill the captions (``{correlation}``, ``{definition}``: "level"
    unless given)."""
    settings = {"definition": "level", **settings}
    tables, figures = [], []
    for item in contents:
        entry = item.entry
        caption = entry.caption_for(settings)
        if entry.kind == "figure":
            figures.append(ReportFigure(Path(item.path), entry.title, caption))
        else:
            tables.append(ReportTable(entry.id, entry.title, caption, read_table(item.path),
                                      Path(item.path)))
    return write_report(html, manifest, scale=scale, figures=figures, tables=tables,
                        config=config,
                        deviations_md=Path(deviations).read_text(encoding="utf-8"), title=title)
