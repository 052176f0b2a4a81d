"""The classification family's summary and page (postrisk.families.classification.page,
.steps): from synthetic stores, every catalogue file is written; the page is one HTML file
showing Table 3, the calibration table and the rank histograms; the figure has a row of panels
for π* and one for f*, a column per prior."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.core.io import write_zarr_atomic
from postrisk.families.classification import PIPELINE
from postrisk.families.classification.page import deviations_note, draw_rank_histograms
from postrisk.families.classification.steps import summarise
from postrisk.families.classification.table3 import TABLE3_COLUMNS, collect
from postrisk.grid.artefact import figure_files
from tests.families.classification.stores import UNIFORM_RANKS, synthetic_store


class _Marked(HTMLParser):
    """The page's ``data-table`` and ``data-figure`` attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[str] = []
        self.figures: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        found = dict(attrs)
        if "data-table" in found:
            self.tables.append(found["data-table"])
        if "data-figure" in found:
            self.figures.append(found["data-figure"])


def _stores():
    return [synthetic_store(UNIFORM_RANKS, seed=0),
            synthetic_store(UNIFORM_RANKS, prior="bnn", seed=0, chains=2, rhat=1.01),
            synthetic_store(UNIFORM_RANKS, seed=1),
            synthetic_store(UNIFORM_RANKS, prior="bnn", seed=1, chains=2, rhat=1.5)]


def test_the_summary_writes_every_catalogue_file_and_the_page(tmp_path):
    paths = []
    for i, ds in enumerate(_stores()):
        paths.append(str(tmp_path / f"tasks/{i}.zarr"))
        write_zarr_atomic(ds, paths[-1])
    out = {a.id: a.path_of(str(tmp_path / "results")) for a in PIPELINE.catalogue}
    summarise({"tasks": paths}, out, {"posterior": {"gp": {"chains": 1}}}, "demo")
    for entry in PIPELINE.catalogue:
        files = figure_files(out[entry.id]) if entry.kind == "figure" else [out[entry.id]]
        assert all(Path(f).is_file() for f in files), entry.id

    table3 = pd.read_csv(out["classification_table3"])
    assert table3.columns.tolist() == ["scale", *TABLE3_COLUMNS]
    assert table3[["prior", "instances", "instances_dropped"]].values.tolist() == [
        ["gp", 1, 1], ["bnn", 1, 1]]
    calibration = pd.read_csv(out["classification_calibration"])
    assert calibration["valid"].tolist()[:4] == [True, True, False, False]
    assert calibration["dataset"].iloc[-1] == "pooled" and pd.isna(calibration["valid"].iloc[-1])

    page = Path(out["classification_page"]).read_text(encoding="utf-8")
    marked = _Marked()
    marked.feed(page)
    assert marked.tables == ["classification_table3", "classification_calibration"]
    assert marked.figures == ["rank_histograms"]
    assert "postrisk classification references" in page and "demo scale" in page
    assert "1 dropped" in page  # the note on the seed rule, per prior
    manifest = json.loads(Path(out["classification_page_manifest"]).read_text())
    assert manifest["tables"] == marked.tables
    assert manifest["figures"] == ["rank_histograms.png"]


def test_the_figure_has_a_row_for_pi_and_for_f_and_a_column_per_prior():
    instances, points = collect(_stores())
    fig = draw_rank_histograms(instances, points)
    axes = np.array(fig.axes).reshape(2, 2)
    titles = [[ax.get_title() for ax in row] for row in axes]
    assert titles[0][0].startswith("GP: rank of $\\pi")
    assert titles[1][0].startswith("GP: rank of $f") and titles[0][1].startswith("BNN")
    assert "(1 instances, 80 pairs)" in titles[0][0]
    assert len(fig.legends) == 1
    plt.close(fig)
    everything_dropped = instances.assign(valid=instances["prior"] == "gp")
    fig = draw_rank_histograms(everything_dropped, {"gp": points["gp"]})
    assert "BNN: no valid instance" in fig.axes[1].texts[0].get_text()
    plt.close(fig)


def test_the_note_names_each_priors_instances_and_coverage():
    from postrisk.families.classification.table3 import classification_table3

    note = deviations_note(classification_table3(*collect(_stores())))
    assert "**GP**: 1 valid instance(s), 1 dropped; 90% coverage of π* 0.8500" in note
    assert "0.8550, a perfect sampler's at D = 39" in note
