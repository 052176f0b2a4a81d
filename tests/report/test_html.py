"""The HTML report: tables with n/a cells and CSV links, figures linked relative to the page,
the deviations document rendered, the manifest listing what the page shows."""

import json

import numpy as np
import pandas as pd

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


def test_report_page_and_manifest(tmp_path):
    figs = tmp_path / "results/figures"
    figs.mkdir(parents=True)
    (figs / "a.png").write_bytes(b"\x89PNG fake")
    (figs / "a.pdf").write_bytes(b"%PDF fake")
    frame = pd.DataFrame({"method": ["gp", "blr"], "mean": [0.5, np.nan],
                          "n": np.array([3, 4], dtype=np.int64), "ok": [True, False]})
    tables = [ReportTable("t1", "Table one", "What it shows.", frame,
                          tmp_path / "results/tables/t1.csv"),
              ReportTable("t2", "Empty", "Nothing.", frame.iloc[:0])]
    out = tmp_path / "results/report/index.html"
    manifest = write_report(out, tmp_path / "results/report/manifest.json", scale="demo",
                            figures=[ReportFigure(figs / "a.png", "Fig A", "Shows A.")],
                            tables=tables, config={"scale": "demo", "datasets": ["concrete"]},
                            deviations_md=DEVIATIONS)
    page = out.read_text()
    assert manifest == json.loads((tmp_path / "results/report/manifest.json").read_text())
    assert manifest["tables"] == ["t1", "t2"] and manifest["figures"] == ["../figures/a.png"]
    assert '<img src="../figures/a.png"' in page and 'href="../figures/a.pdf"' in page
    assert 'id="table-t1"' in page and 'href="../tables/t1.csv"' in page
    assert "<td>n/a</td>" in page.replace(' class=""', "") and "0.500" in page
    assert "(no rows in this run)" in page
    assert "demo scale — not comparable to the paper" in page
    assert "datasets:" in page and "<td class=\"text\">E1</td>" in page
