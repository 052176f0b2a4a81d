"""The HTML report: tables with n/a cells and their CSVs attached, figures embedded, the
deviations document rendered, the manifest listing what the page shows; the page one
self-contained file."""

import base64
import json
import re

import numpy as np
import pandas as pd

from postrisk.report import html as report_html
from postrisk.report.html import ReportFigure, ReportTable, markdown_html, write_report
from tests.workflow_helpers import REPO


def test_markdown_of_the_deviations_document_renders_its_tables():
    text = (REPO / "docs/deviations.md").read_text()
    page = markdown_html(text)
    n_tables = sum(1 for line in text.splitlines() if line.startswith("| # |"))
    assert page.count("<table>") == n_tables > 5
    assert "<h4>Evaluation (§4, App. D)</h4>" in page
    assert "<code>blr</code>" in page and "| E1 |" not in page


DEVIATIONS = "## Evaluation\n\n| # | Choice |\n|---|---|\n| E1 | x |\n"


def _page(tmp_path, deviations=DEVIATIONS):
    """A report of one figure (PNG and PDF) and two tables (one with its CSV) at the usual
    places of a results folder; (page text, manifest)."""
    figs = tmp_path / "results/figures"
    figs.mkdir(parents=True)
    (figs / "a.png").write_bytes(b"\x89PNG fake")
    (figs / "a.pdf").write_bytes(b"%PDF fake")
    frame = pd.DataFrame({"method": ["gp", "blr"], "mean": [0.5, np.nan],
                          "n": np.array([3, 4], dtype=np.int64), "ok": [True, False]})
    csv = tmp_path / "results/tables/t1.csv"
    csv.parent.mkdir(parents=True)
    frame.to_csv(csv, index=False)
    tables = [ReportTable("t1", "Table one", "What it shows.", frame, csv),
              ReportTable("t2", "Empty", "Nothing.", frame.iloc[:0])]
    out = tmp_path / "results/report/index.html"
    manifest = write_report(out, tmp_path / "results/report/manifest.json", scale="demo",
                            figures=[ReportFigure(figs / "a.png", "Fig A", "Shows A.")],
                            tables=tables, config={"scale": "demo", "datasets": ["concrete"]},
                            deviations_md=deviations)
    return out.read_text(), manifest


def _embedded(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def test_report_page_and_manifest(tmp_path):
    page, manifest = _page(tmp_path)
    assert manifest == json.loads((tmp_path / "results/report/manifest.json").read_text())
    assert manifest["tables"] == ["t1", "t2"] and manifest["figures"] == ["../figures/a.png"]
    png = _embedded((tmp_path / "results/figures/a.png").read_bytes(), "image/png")
    assert f'<img src="{png}" data-figure="a"' in page
    assert (f'<a href="{_embedded(b"%PDF fake", "application/pdf")}" download="a.pdf">PDF</a>'
            in page)
    csv = (tmp_path / "results/tables/t1.csv").read_bytes()
    assert 'id="table-t1"' in page
    assert f'<a href="{_embedded(csv, "text/csv;charset=utf-8")}" download="t1.csv">' in page
    assert "<td>n/a</td>" in page.replace(' class=""', "") and "0.500" in page
    assert "(no rows in this run)" in page
    assert "demo scale — not comparable to the paper" in page
    assert "datasets:" in page and "<td class=\"text\">E1</td>" in page


def test_the_page_references_no_other_file(tmp_path):
    """Every src and href of the page (with the project's deviations document) is embedded
    data, an anchor in the page or a web address: the page alone, copied anywhere, is whole."""
    page, _ = _page(tmp_path, (REPO / "docs/deviations.md").read_text())
    assert "../" not in page
    targets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", page)
    assert len(targets) >= 9  # the contents, the figure, its PDF, the CSV
    outside = [t for t in targets if not t.startswith(("data:", "#", "https://", "http://"))]
    assert not outside, outside
    # the deviations document's links to the other docs are their text, the path on hover
    assert '<span class="doc-ref" title="docs/design.md#seeds">' in page


def test_a_large_attachment_is_named_not_embedded(tmp_path, monkeypatch):
    monkeypatch.setattr(report_html, "MAX_ATTACHMENT_BYTES", 5)
    page, _ = _page(tmp_path)
    assert "<code>figures/a.pdf</code> in the results folder" in page
    assert "<code>tables/t1.csv</code> in the results folder" in page
    assert "data:application/pdf" not in page and "data:text/csv" not in page
    assert "data:image/png" in page  # the figure itself is always embedded
