"""Slow tier: the demo preset end to end in a scratch directory, then its budget and outputs."""

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from tests.workflow_helpers import REPO, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo preset run once; its outputs serve every test of this module."""
    tmp_path = tmp_path_factory.mktemp("demo")
    # the 15-minute budget is checked on the jobs' wall clock below; the timeout only guards
    # against a hang (the helper's 10-minute default is shorter than the demo may take)
    run = snakemake(tmp_path, "--cores", "2", "--configfile", str(REPO / "presets/demo.yaml"),
                    timeout=20 * 60)
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp_path


@pytest.mark.slow
def test_demo_end_to_end_within_budget(demo):
    tmp_path = demo
    budget = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/demo_budget.py"), "--results",
         str(tmp_path / "results"), "--preset", str(REPO / "presets/demo.yaml")],
        capture_output=True, text=True)
    assert budget.returncode == 0, budget.stdout + budget.stderr
    outputs = subprocess.run(
        [str(REPO / ".venv/bin/postrisk"), "outputs", "--configfile", "presets/demo.yaml",
         "--results", str(tmp_path / "results")],
        capture_output=True, text=True, cwd=REPO)
    assert outputs.returncode == 0, outputs.stderr
    assert "demo scale — not comparable to the paper" in outputs.stdout
    assert "(missing)" not in outputs.stdout
    assert "d/N = 6/53,940" in outputs.stdout and "d/N = 4/22,272" in outputs.stdout
    assert "(32 of 32 present)" in outputs.stdout  # 24 GP + 4 HBART + 4 BNN
    # every implemented method is scored on every instance of its conditions (nine methods on
    # the 10 of method_grid, six network methods on 6), the reference rows on all
    # 32; no fit failed
    scores = pd.read_csv(tmp_path / "results/tables/scores.csv")
    eu = scores[scores["target"] == "eu_posterior_excess_risk"].set_index("method")
    from postrisk.grid import fits_method, implemented_conditions, implemented_methods, load_config

    demo = load_config(REPO / "config.yaml", REPO / "presets/demo.yaml")
    methods = implemented_methods(demo)
    assert methods
    references = ["oracle", "mahalanobis", "knn10", "constant_au"]
    assert set(methods + references) <= set(eu.index)
    conds = implemented_conditions(demo)
    expected = {m: sum(fits_method(demo, m, c) for c in conds) for m in methods}
    assert expected["gp"] == 32 and expected["catboost_kgb"] == expected["dkl"] == 10
    assert eu.loc[methods, "n_instances"].to_dict() == expected
    assert (eu.loc[references, "n_instances"] == 32).all()
    assert (eu.loc[methods, "failed_fits"] == 0).all()
    # every evaluation table, marked demo scale; the Disentanglement Error of BLR
    from postrisk.grid import EVALUATION_TABLES

    for name in EVALUATION_TABLES:
        table = pd.read_csv(tmp_path / f"results/tables/{name}.csv")
        assert len(table) and (table["scale"] == "demo").all(), name
    w = pd.read_csv(tmp_path / "results/tables/table7.csv")
    assert w["paper_w_ranks"].notna().all() and w["w_ranks"].notna().all()
    assert "demo scale" in (tmp_path / "results/tables/tables.md").read_text()
    # the one sweep ran its 6 trials; every other condition records its fixed configuration
    tuning = tmp_path / "results/tuning"
    swept = json.loads((tuning / "concrete/gp/smooth_monotone/balanced/sngp_het.json").read_text())
    assert len(swept["trials"]) == 6 and swept["best_trial"] is not None
    fixed = json.loads((tuning / "diamonds/gp/bump/balanced/dkl.json").read_text())
    assert fixed["n_trials"] == 0 and fixed["config"]["num_iters"] == 150


@pytest.mark.slow
def test_report_opens_in_a_real_browser(demo):
    """The demo's HTML report in headless Chromium (Debian's chromium and chromium-driver,
    which .ci/run installs): every image loaded, every table of the manifest on the page, a
    screenshot saved beside the report."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_path, (
        "this test needs Debian's chromium and chromium-driver (`apt-get install chromium "
        "chromium-driver`; .ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    report = demo / "results/report/index.html"
    manifest = json.loads((demo / "results/report/manifest.json").read_text())
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,2200"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        browser.get(report.resolve().as_uri())
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, "
            "i.naturalWidth]);")
        tables = browser.execute_script(
            "return Array.from(document.querySelectorAll('section.table'))"
            ".filter(s => s.querySelector('table')).map(s => s.dataset.table);")
        text = browser.execute_script("return document.body.innerText;")
        screenshot = demo / "results/report/screenshot.png"
        assert browser.save_screenshot(str(screenshot))
    finally:
        browser.quit()
    assert len(images) == len(manifest["figures"]) >= 7
    broken = [src for src, complete, width in images if not (complete and width > 0)]
    assert not broken, f"images that did not load: {broken}"
    assert sorted({src for src, _, _ in images}) == sorted(manifest["figures"])
    assert set(manifest["tables"]) <= set(tables), set(manifest["tables"]) - set(tables)
    assert {"table3", "scores", "table7", "table8", "disentanglement"} <= set(tables)
    assert "demo scale — not comparable to the paper" in text
    assert "Deviations from the paper" in text and "Configuration of this run" in text
    assert screenshot.stat().st_size > 10_000
