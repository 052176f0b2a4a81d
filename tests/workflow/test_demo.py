"""Slow tier: a demo run's budget and outputs (``demo``, tests/workflow/conftest.py: the run
``make demo`` made where ``POSTRISK_DEMO_RUN`` names it, as in CI, else the demo preset end to
end in a scratch directory).

What the demo must produce is computed from its planner (the preset merged over config.yaml),
so editing the preset needs no edit here. Its time is a benchmark (benchmarks/demo_budget.py,
printed in the test output); the test fails on time only past 1.5 × the 15-minute budget, as a
guard against a runaway job."""

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from tests.workflow_helpers import REPO

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


#: The slow tier fails on the demo's wall clock only beyond this multiple of its budget.
GUARD = 1.5


@pytest.mark.slow
def test_demo_end_to_end_within_budget(demo, capsys):
    from postrisk.covariates.registry import registry
    from postrisk.grid.artefacts import stage_artefacts
    from postrisk.planning.planner import Planner

    tmp_path = demo
    planner = Planner.from_files(REPO / "config.yaml", REPO / "presets/demo.yaml")
    budget = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/demo_budget.py"), "--results",
         str(tmp_path / "results"), "--preset", str(REPO / "presets/demo.yaml"),
         "--guard", str(GUARD)], capture_output=True, text=True)
    with capsys.disabled():  # the benchmark's figures, in the slow tier's output
        print("\n== benchmarks/demo_budget.py (the demo's time against its budget)\n"
              + budget.stdout)
    assert budget.returncode == 0, budget.stdout + budget.stderr
    outputs = subprocess.run(
        [str(REPO / ".venv/bin/postrisk"), "outputs", "--configfile", "presets/demo.yaml",
         "--results", str(tmp_path / "results")],
        capture_output=True, text=True, cwd=REPO)
    assert outputs.returncode == 0, outputs.stderr
    scale = planner.config["scale"]
    assert f"{scale} scale — not comparable to the paper" in outputs.stdout
    assert "(missing)" not in outputs.stdout
    for name in planner.covariate_datasets:
        spec = registry()[name]
        assert f"d/N = {spec.d}/{spec.N:,}" in outputs.stdout, name
    stores = planner.task_stores()
    assert f"({len(stores)} of {len(stores)} present)" in outputs.stdout
    # every implemented method is scored on every valid instance of its conditions (method_grid
    # narrows some), the reference rows on every valid instance; no fit failed
    from postrisk.grid.artefacts import artefact
    from postrisk.methods.table import ABLATION_CHANGES, ABLATION_ENTRIES

    scores = pd.read_csv(tmp_path / "results/tables/scores.csv")
    eu = scores[scores["target"] == "eu_posterior_excess_risk"].set_index("method")
    per_method = planner.instances_per_method()
    methods = [m for m in planner.methods if m not in ABLATION_ENTRIES]
    assert methods
    references = ["oracle", "mahalanobis", "knn10", "constant_au"]
    assert set(methods + references) <= set(eu.index)
    assert eu.loc[methods, "n_instances"].to_dict() == {m: per_method[m] for m in methods}
    n_valid = planner.config["seeds"]["valid_per_cell"]
    assert (eu.loc[references, "n_instances"] == len(planner.conditions) * n_valid).all()
    assert (eu.loc[methods, "failed_fits"] == 0).all()
    # the ablations stay out of the method tables; each is scored, without a failed fit, on
    # every instance of its conditions and shown beside its method in its App. D.2 table
    ablations = [m for m in planner.methods if m in ABLATION_ENTRIES]
    assert not set(ablations) & set(eu.index)
    condition_scores = pd.concat([pd.read_csv(f) for f in
                                  (tmp_path / "results/scores").rglob("*.csv")])
    for name in ablations:
        rows = condition_scores[condition_scores["method"] == name]
        assert len(rows) == per_method[name] and (rows["status"] == "ok").all(), name
        change = ABLATION_CHANGES[ABLATION_ENTRIES[name].change]
        table = pd.read_csv(tmp_path / artefact(change.table).path_of())
        assert name in set(table[change.column]), name
    # every evaluation table of the catalogue, marked with the preset's scale
    for entry in stage_artefacts("tables"):
        if entry.kind == "table" and entry.scale_column:
            table = pd.read_csv(tmp_path / entry.path_of())
            assert len(table) and (table["scale"] == scale).all(), entry.id
    w = pd.read_csv(tmp_path / "results/tables/table7.csv")
    assert w["paper_w_ranks"].notna().all() and w["w_ranks"].notna().all()
    assert f"{scale} scale" in (tmp_path / "results/tables/tables.md").read_text()
    # every sweep ran its trials; every other condition records its fixed configuration (the
    # method's defaults with the preset's settings)
    from postrisk.methods.registry import get_method

    units = planner.units["fit"]
    assert any(u.tuning is not None for u in units)
    for unit in units:
        chosen = json.loads((tmp_path / unit.config).read_text())
        if unit.tuning is not None:
            assert len(chosen["trials"]) == unit.tuning["trials"], unit.label
            assert chosen["best_trial"] is not None, unit.label
        else:
            assert chosen["n_trials"] == 0, unit.label
            fixed = {**get_method(unit.method).defaults, **unit.settings}
            assert chosen["config"] == json.loads(json.dumps(fixed)), unit.label


@pytest.mark.slow
def test_report_opens_in_a_real_browser(demo, tmp_path):
    """The demo's HTML report in headless Chromium (Debian's chromium and chromium-driver,
    which .ci/run installs), the page alone copied to an empty folder (it must be
    self-contained): every image loaded, every figure and table of the manifest on the page, no
    reference to another file, a screenshot saved beside the report."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_path, (
        "this test needs Debian's chromium and chromium-driver (`apt-get install chromium "
        "chromium-driver`; .ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    manifest = json.loads((demo / "results/report/manifest.json").read_text())
    alone = tmp_path / "copied" / "index.html"
    alone.parent.mkdir()
    shutil.copy(demo / "results/report/index.html", alone)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,2200"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        browser.get(alone.resolve().as_uri())
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.dataset.figure || "
            "i.getAttribute('src'), i.complete, i.naturalWidth, "
            "i.getAttribute('src').slice(0, 22)]);")
        references = browser.execute_script(
            "return Array.from(document.querySelectorAll('[src], [href]'))"
            ".map(e => e.getAttribute('src') || e.getAttribute('href'))"
            ".filter(r => !/^(data:|#|https?:)/.test(r));")
        tables = browser.execute_script(
            "return Array.from(document.querySelectorAll('section.table'))"
            ".filter(s => s.querySelector('table')).map(s => s.dataset.table);")
        text = browser.execute_script("return document.body.innerText;")
        screenshot = demo / "results/report/screenshot.png"
        assert browser.save_screenshot(str(screenshot))
    finally:
        browser.quit()
    assert len(images) == len(manifest["figures"]) >= 7
    broken = [name for name, complete, width, _ in images if not (complete and width > 0)]
    assert not broken, f"images that did not load from the page alone: {broken}"
    assert {src for *_, src in images} == {"data:image/png;base64,"}
    assert sorted(name for name, *_ in images) == sorted(
        f.rsplit("/", 1)[-1].removesuffix(".png") for f in manifest["figures"])
    assert not references, f"the page references other files: {references}"
    assert set(manifest["tables"]) <= set(tables), set(manifest["tables"]) - set(tables)
    assert {"table3", "scores", "table7", "table8", "disentanglement"} <= set(tables)
    assert "demo scale — not comparable to the paper" in text
    assert "Deviations from the paper" in text and "Configuration of this run" in text
    assert screenshot.stat().st_size > 10_000
