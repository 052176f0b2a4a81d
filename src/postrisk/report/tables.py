"""Every evaluation table of a run, with the paper's numbers beside ours, as CSV files and one
Markdown page (``tables.md``) that shows them all with their captions and scale.

Which tables there are, their titles and captions come from the catalogue
(:mod:`postrisk.grid.artefacts`, stage ``tables``); each is built by its builder in
:mod:`postrisk.report.table_builders`. This module runs them and writes the files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core.io import write_text_atomic
from postrisk.evaluation.tables import N_BOOT
from postrisk.grid.artefacts import stage_artefacts
from postrisk.report.style import format_value, scale_note
from postrisk.report.table_builders import TableInputs, without_ablations


@dataclass(frozen=True)
class Table:
    """One table of the report: its id (its file stem), title, caption and frame."""

    name: str
    title: str
    caption: str
    frame: pd.DataFrame
    #: on the tables page and in the HTML report
    shown: bool = True
    #: the CSV starts with the run's scale
    scale_column: bool = True


def with_scale(frame: pd.DataFrame, scale: str) -> pd.DataFrame:
    out = frame.copy()
    out.insert(0, "scale", scale)
    return out


def build_tables(scores: pd.DataFrame, rng: np.random.Generator, *,
                 strict: pd.Series | None = None, rhat_share: float | None = None,
                 disentanglement: Sequence[pd.DataFrame] = (),
                 correlation: str = "pearson", n_boot: int = N_BOOT,
                 definition: str = "level") -> list[Table]:
    """Every table of the catalogue's ``tables`` stage from the concatenated score table of the
    instances in use, in catalogue order on the one generator ``rng`` (arguments: the fields of
    :class:`~postrisk.report.table_builders.TableInputs`). A table that does not apply (the
    R̂ sensitivity without ``strict``) is left out. The method tables see ``scores`` without the
    ablations' rows; the App. D.2 tables see all of them."""
    main = without_ablations(scores)
    inputs = TableInputs(main, None if strict is None else strict.loc[main.index], rhat_share,
                         tuple(disentanglement), correlation, n_boot, definition=definition,
                         all_scores=scores)
    out = []
    for entry in stage_artefacts("tables", kind="table"):
        frame = entry.builder()(inputs, rng)
        if frame is not None:
            out.append(Table(entry.id, entry.title,
                             entry.caption_for({"correlation": correlation,
                                                "definition": definition}), frame,
                             shown=entry.shown, scale_column=entry.scale_column))
    return out


# -- rendering -------------------------------------------------------------------------------
def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; NaN and None print as "n/a"."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(format_value(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def write_tables(tables: list[Table], out_dir: str | Path, scale: str,
                 markdown: str | Path | None = None,
                 paths: Mapping[str, str | Path] | None = None) -> dict[str, Path]:
    """``<out_dir>/<name>.csv`` for every table (``paths``: a table's own path instead, as the
    workflow resolved it), a ``scale`` column first, and, with ``markdown``, one page of the
    shown tables with titles, captions and the scale note."""
    out_dir = Path(out_dir)
    written = {}
    note = scale_note(scale) or "paper scale"
    sections = [f"# postrisk evaluation tables\n\n**Scale: {scale}** — {note}.\n"]
    for table in tables:
        path = Path((paths or {}).get(table.name, out_dir / f"{table.name}.csv"))
        frame = with_scale(table.frame, scale) if table.scale_column else table.frame
        write_text_atomic(path, frame.to_csv(index=False))
        written[table.name] = path
        if table.shown:
            sections.append(f"## {table.title}\n\n{table.caption} *({note})*\n\n"
                            f"`{path.name}`\n\n{markdown_table(table.frame)}\n")
    if markdown is not None:
        write_text_atomic(markdown, "\n".join(sections))
    return written
