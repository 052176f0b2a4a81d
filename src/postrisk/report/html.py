"""The run's report: one HTML page a person opens in a browser (``results/report/index.html``).

It shows every figure and table of the run with a caption saying what it shows and at which
scale, the run's configuration and the deviations from the paper, and writes a manifest
(``manifest.json``: the ids of its tables and the paths, relative to the page, of the figure
files it embeds) that the browser test checks the page against. The page is one
self-contained file: each figure's PNG is embedded in it (a base64 ``data:`` URI), and so are
the PDF beside each figure and each table's CSV, as download links (a file above
:data:`MAX_ATTACHMENT_BYTES` is named instead, by its path in the results folder). The page
references no other file, so it can be copied, mailed or archived alone; no external scripts,
fonts or styles: it opens offline.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from postrisk.core.io import write_text_atomic
from postrisk.report.style import format_value, scale_note

#: Rows above which a table is shown in part (the CSV linked from the page holds every row).
MAX_ROWS = 400
#: Files (a figure's PDF, a table's CSV) above this size are named, not embedded, in the page.
MAX_ATTACHMENT_BYTES = 2_000_000

_MIME = {".png": "image/png", ".pdf": "application/pdf", ".csv": "text/csv;charset=utf-8"}

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 78rem; padding: 0 1rem;
       color: #222; line-height: 1.4; }
.scale { background: #fde8e8; border-left: 6px solid #c0392b; padding: .6rem 1rem;
         font-weight: 600; }
.scale.paper { background: #e8f4fd; border-color: #2c7fb8; }
nav ul { columns: 2; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption, .caption { font-size: .92rem; color: #444; margin: .4rem 0; }
table { border-collapse: collapse; font-size: .8rem; margin: .5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: .15rem .4rem; text-align: right; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
.scroll { max-height: 32rem; overflow: auto; }
pre { background: #f7f7f7; padding: .8rem; overflow: auto; font-size: .8rem; }
code { background: #f3f3f3; padding: 0 .2rem; }
.doc-ref { text-decoration: underline dotted; }
"""


def data_uri(path: str | Path) -> str:
    """The file at ``path`` as a base64 ``data:`` URI (its type from its suffix)."""
    path = Path(path)
    mime = _MIME.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def attachment_link(path: str | Path, text: str, shown_as: str) -> str:
    """A download link holding the file at ``path`` (embedded, named as the file), or, for a
    file above :data:`MAX_ATTACHMENT_BYTES`, ``shown_as`` (its path in the results folder) as
    text; "" for a missing file."""
    path = Path(path)
    if not path.is_file():
        return ""
    if path.stat().st_size > MAX_ATTACHMENT_BYTES:
        return (f"{html.escape(text)}: <code>{html.escape(shown_as)}</code> in the results "
                f"folder (over {MAX_ATTACHMENT_BYTES // 1_000_000} MB, not embedded)")
    return (f'<a href="{data_uri(path)}" download="{html.escape(path.name)}">'
            f"{html.escape(text)}</a>")


@dataclass(frozen=True)
class ReportFigure:
    """A figure file (PNG, embedded; a PDF beside it is attached) and what it shows."""

    path: Path
    title: str
    caption: str


@dataclass(frozen=True)
class ReportTable:
    """A table shown in the page: an id (its file stem), title, caption, frame and CSV file."""

    name: str
    title: str
    caption: str
    frame: pd.DataFrame
    csv: Path | None = None


def _cell(value: object) -> tuple[str, str]:
    """(HTML text, css class) of one table cell: numbers right-aligned, text left."""
    numeric = (value is None or isinstance(value, int | float | np.integer | np.floating)
               ) and not isinstance(value, bool | np.bool_)
    return html.escape(format_value(value)), ("" if numeric else "text")


def table_html(table: ReportTable, csv_link: str = "") -> str:
    """One table as HTML, with its caption, the scale note and ``csv_link`` (the HTML of its
    CSV's link, :func:`attachment_link`)."""
    frame = table.frame
    shown = frame.head(MAX_ROWS)
    head = "".join(f'<th class="text">{html.escape(str(c))}</th>' for c in shown.columns)
    rows = []
    for row in shown.itertuples(index=False):
        cells = "".join(f'<td class="{cls}">{text}</td>' for text, cls in map(_cell, row))
        rows.append(f"<tr>{cells}</tr>")
    more = (f"<p class='caption'>First {MAX_ROWS} of {len(frame)} rows; every row is in the "
            f"CSV.</p>" if len(frame) > MAX_ROWS else "")
    empty = "<p class='caption'>(no rows in this run)</p>" if frame.empty else ""
    link = f" — {csv_link}" if csv_link else ""
    return (f'<section id="table-{table.name}" class="table" data-table="{table.name}">'
            f"<h3>{html.escape(table.title)}</h3>"
            f'<p class="caption">{html.escape(table.caption)}{link}</p>{empty}'
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>{more}</section>")


def _inline_markdown(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"(?<![*\w])\*([^*]+)\*(?!\*)", r"<em>\1</em>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", _link, text)


def _link(match: re.Match) -> str:
    """A Markdown link: a web address or an anchor stays a link; a link to another document of
    ``docs/`` (which is not beside the page) is its text, with the document's path on hover."""
    text, target = match.groups()
    if target.startswith(("http://", "https://", "#")):
        return f'<a href="{target}">{text}</a>'
    path = os.path.normpath(os.path.join("docs", target)).replace(os.sep, "/")
    return f'<span class="doc-ref" title="{path}">{text}</span>'


def markdown_html(text: str) -> str:
    """The Markdown of the project's docs as HTML: headings, paragraphs, lists and pipe tables
    (the subset ``docs/deviations.md`` uses)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = min(6, len(line) - len(line.lstrip("#")) + 2)  # below the page's own h1/h2
            out.append(f"<h{level}>{_inline_markdown(line.lstrip('#').strip())}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in block]
            body = [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
            head = "".join(f'<th class="text">{_inline_markdown(c)}</th>' for c in cells[0])
            rows = "".join("<tr>" + "".join(f'<td class="text">{_inline_markdown(c)}</td>'
                                            for c in r) + "</tr>" for r in body)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif line.lstrip().startswith(("- ", "* ")):
            items = []
            while i < len(lines) and lines[i].lstrip().startswith(("- ", "* ")):
                items.append(f"<li>{_inline_markdown(lines[i].lstrip()[2:])}</li>")
                i += 1
            out.append(f"<ul>{''.join(items)}</ul>")
        elif line.strip():
            para = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "|")):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{_inline_markdown(' '.join(para))}</p>")
        else:
            i += 1
    return "\n".join(out)


def write_report(out_html: str | Path, manifest: str | Path, *, scale: str,
                 figures: Sequence[ReportFigure], tables: Sequence[ReportTable],
                 config: Mapping, deviations_md: str, title: str = "postrisk report") -> dict:
    """Write the page (headed ``title``; one file, every figure and attachment embedded) and its
    manifest; return the manifest (its ``figures``: the embedded PNGs' paths relative to the
    page, for provenance)."""
    out_html = Path(out_html)
    base = out_html.parent

    def rel(path: Path) -> str:
        return os.path.relpath(Path(path), base).replace(os.sep, "/")

    def outside(path: Path) -> str:
        """A file's path in the results folder (the page's folder's parent)."""
        return os.path.relpath(Path(path), base.parent).replace(os.sep, "/")

    def csv_link(table: ReportTable) -> str:
        return ("" if table.csv is None else
                attachment_link(table.csv, Path(table.csv).name, outside(table.csv)))

    note = scale_note(scale)
    banner = (f'<p class="scale">{html.escape(note)}: every number and figure below comes from '
              f"a reduced run (preset <code>{html.escape(scale)}</code>).</p>" if note else
              '<p class="scale paper">Paper scale: the full grid of the paper.</p>')
    nav = ["<li><a href='#figures'>Figures</a></li>", "<li><a href='#tables'>Tables</a></li>"]
    nav += [f"<li><a href='#table-{t.name}'>{html.escape(t.title)}</a></li>" for t in tables]
    nav += ["<li><a href='#configuration'>Configuration</a></li>",
            "<li><a href='#deviations'>Deviations from the paper</a></li>"]
    figure_html = []
    for fig in figures:
        stem = Path(fig.path).stem
        pdf = attachment_link(Path(fig.path).with_suffix(".pdf"), "PDF",
                              outside(Path(fig.path).with_suffix(".pdf")))
        figure_html.append(
            f'<figure id="figure-{stem}"><img src="{data_uri(fig.path)}" data-figure="{stem}" '
            f'alt="{html.escape(fig.title)}"><figcaption><strong>{html.escape(fig.title)}.'
            f"</strong> {html.escape(fig.caption)}{' (' + html.escape(note) + ')' if note else ''}"
            f"{' (' + pdf + ')' if pdf else ''}</figcaption></figure>")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} ({html.escape(scale)} scale)</title><style>{_CSS}</style></head>
<body>
<h1>{html.escape(title)}</h1>
{banner}
<p>Ground-truth evaluation of aleatoric and epistemic uncertainty (Wizgall et al., 2026,
<em>A Ground-Truth Framework for Uncertainty Disentanglement with Posterior Risk</em>). Written
{stamp}. Tables show the paper's numbers in <code>paper_*</code> columns where the paper states
them; "n/a" marks a value that does not apply (e.g. an interval over fewer than three
datasets).</p>
<nav><h2>Contents</h2><ul>{''.join(nav)}</ul></nav>
<h2 id="figures">Figures</h2>
{''.join(figure_html)}
<h2 id="tables">Tables</h2>
{''.join(table_html(t, csv_link(t)) for t in tables)}
<h2 id="configuration">Configuration of this run</h2>
<pre>{html.escape(yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True))}</pre>
<h2 id="deviations">Deviations from the paper</h2>
{markdown_html(deviations_md)}
</body></html>
"""
    write_text_atomic(out_html, page)
    content = {"scale": scale, "page": out_html.name,
               "tables": [t.name for t in tables],
               "figures": [rel(f.path) for f in figures]}
    write_text_atomic(manifest, json.dumps(content, indent=2))
    return content
