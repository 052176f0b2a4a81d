"""The catalogue of artefacts (postrisk.grid.artefacts): every entry buildable and findable, the
planner's expansion over the configuration, and the report and the tables page derived from it."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest

from postrisk.grid.artefacts import (
    CONDITION_SCORES,
    ArtefactFile,
    artefact,
    catalogue,
    figure_files,
    figure_ids,
    figure_pattern,
    stage_artefacts,
    study_artefact_stages,
)
from postrisk.grid.config import deep_merge, load_config, validate_config
from postrisk.planning.planner import Planner


def test_every_entry_names_a_builder_that_exists():
    for entry in catalogue():
        assert callable(entry.builder()), entry.id
        assert entry.title, entry.id
        if entry.shown:
            assert entry.caption, f"{entry.id} is shown without a caption"


def test_table_builders_take_the_inputs_and_the_stream():
    for entry in stage_artefacts("tables"):
        if entry.kind == "table":
            assert list(inspect.signature(entry.builder()).parameters) == ["inputs", "rng"]


def test_figures_read_tables_of_the_tables_stage_and_are_named_by_their_ids():
    tables = {a.id for a in stage_artefacts("tables") if a.kind == "table"}
    for entry in stage_artefacts("figure"):
        assert entry.reads and set(entry.reads) <= tables | {CONDITION_SCORES}, entry.id
        assert entry.kind == "figure" and entry.stem == entry.id
    assert figure_pattern() == "results/figures/{name}.png"
    assert figure_ids() == [a.id for a in stage_artefacts("figure")]


def test_a_figure_is_a_png_with_a_pdf_beside_it():
    assert figure_files("results/figures/x.png") == ["results/figures/x.png",
                                                     "results/figures/x.pdf"]


def test_unknown_ids_and_stages_are_named_errors():
    with pytest.raises(KeyError, match="unknown artefact 'table99'.*table3"):
        artefact("table99")
    with pytest.raises(KeyError, match="unknown artefact stage"):
        stage_artefacts("nowhere")


def _config(**over):
    cfg = load_config("config.yaml")
    cfg = deep_merge(cfg, {"datasets": ["concrete", "diamonds"], "priors": ["gp", "hbart"],
                                **over})
    return validate_config(cfg)


def test_the_planner_expands_entries_over_the_configuration():
    planner = Planner(_config())
    pairs = sorted({(c.dataset, c.prior) for c in planner.conditions})
    assert planner.artefact_files("rank_histograms_prior") == [
        f for p in planner.priors for f in figure_files(f"results/figures/rank_histograms_{p}.png")]
    assert planner.artefact_files("release_instances") == [
        f"results/release/{d}_{p}.zip" for d, p in pairs]
    assert planner.artefact_files("release_dataset") == [
        f"results/release/{d}_dataset.zip" for d in sorted({d for d, _ in pairs})]
    assert planner.artefact_files("table3", root="elsewhere") == ["elsewhere/checks/table3.csv"]
    # the report shows the benchmark's shown tables, then its shown figures, in catalogue order
    # (the studies' tables are on the studies' page)
    contents = planner.report_contents()
    kinds = [item.entry.kind for item in contents]
    assert kinds == sorted(kinds, key=["table", "figure"].index)
    assert [i.entry.id for i in contents if i.entry.kind == "table"] == [
        a.id for a in catalogue() if a.shown and a.kind == "table"
        and a.stage not in study_artefact_stages()]


def test_release_file_names_come_from_the_catalogue():
    from postrisk.release import dataset_file, instances_file

    assert instances_file("concrete", "gp") == artefact("release_instances").file.format(
        dataset="concrete", prior="gp")
    assert dataset_file("concrete") == artefact("release_dataset").file.format(
        dataset="concrete")


def test_the_report_and_the_tables_page_follow_the_catalogue(tmp_path):
    """A toy run's tables, one figure and the page: every shown table in the page and the
    manifest, titles from the catalogue, a table not shown left out of both."""
    from postrisk.report.scores import write_figure, write_report_page
    from postrisk.report.tables import build_tables, write_tables
    from tests.evaluation.test_tables import BASE, _scores

    scores = _scores(lambda m, *_: BASE[m], jitter=0.01)
    tables = build_tables(scores, np.random.default_rng(1), strict=pd.Series(True, scores.index),
                          rhat_share=0.9, n_boot=20)
    assert [t.name for t in tables] == [a.id for a in stage_artefacts("tables")
                                        if a.kind == "table"]
    paths = write_tables(tables, tmp_path / "tables", "demo", markdown=tmp_path / "tables.md")
    page = (tmp_path / "tables.md").read_text()
    for entry in stage_artefacts("tables"):
        if entry.kind == "table":
            assert (entry.title in page) == entry.shown, entry.id
    png = tmp_path / "figures/fig2_mean_rho.png"
    write_figure("fig2_mean_rho", {k: str(v) for k, v in paths.items()}, [], "demo", png)
    assert png.exists() and png.with_suffix(".pdf").exists()
    table3 = tmp_path / "table3.csv"
    pd.DataFrame({"scale": ["demo"], "prior": ["gp"]}).to_csv(table3, index=False)
    (tmp_path / "deviations.md").write_text("# none\n")
    located = {"table3": table3, **paths, "fig2_mean_rho": png}
    contents = [ArtefactFile(a, str(located[a.id])) for a in catalogue()
                if a.shown and a.id in located]
    manifest = write_report_page(tmp_path / "report/index.html", tmp_path / "report/m.json",
                                 contents, "demo", {"scale": "demo"}, tmp_path / "deviations.md",
                                 {"correlation": "pearson"})
    assert manifest["tables"] == [a.id for a in catalogue()
                                  if a.shown and a.kind == "table" and a.id in located]
    assert manifest["figures"] == ["../figures/fig2_mean_rho.png"]
    html = (tmp_path / "report/index.html").read_text()
    assert artefact("table7").title in html and artefact("metrics_long").title not in html
    assert "pearson correlation across levels" in html  # a caption filled with the settings
    assert json.loads((tmp_path / "report/m.json").read_text()) == manifest
