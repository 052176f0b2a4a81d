"""The classification family through the real workflow at toy size: ``snakemake
classification`` builds its instances of both priors (covariates and the GP and BNN prior fits
first, as the benchmark's), the calibration table, which recomputes each store's coverage of π*
from its draws, Table 3 per prior, the rank histograms and the page; and ``make
classification``'s preset through the same workflow at toy size (slow tier)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

import postrisk
from postrisk.evaluation.posterior_checks import perfect_sampler_coverage
from postrisk.grid.config import ConfigError, load_config
from postrisk.planning.planner import Planner
from postrisk.tasks.diagnostics import covered_central
from tests.workflow_helpers import REPO, snakemake

pytestmark = pytest.mark.workflow

TOY_NUTS = {"chains": 2, "warmup": 100, "samples": 50}
CONFIG = {"scale": "smoke", "datasets": ["concrete"], "ood_datasets": [], "priors": ["gp", "bnn"],
          "noise_modes": ["bump"], "coverages": ["balanced"], "methods": [],
          "covariates": {"prefer_offline_package": True},
          "sizes": {"n_eval_cap": 120, "n_cap": 60},
          "studies": {"sandbox": {"run": False}, "sn_study": {"run": False},
                      "warmup_check": {"datasets": []}},
          "families": {"classification": {
              "datasets": ["concrete"], "priors": ["gp", "bnn"],
              "noise_modes": ["homoscedastic", "edges"], "coverages": ["balanced"],
              "classes": [2], "seeds": 1, "n_cap": 40, "amplitude_draws": 20,
              "posterior": {"gp": TOY_NUTS, "bnn": TOY_NUTS}}},
          "group_by": {"classification_task": ["prior"]},
          "bnn_prior": {"hidden": 10, "reference_inputs": 20, "scale_draws": 20},
          "accelerator": {"use": False, "allow_cpu_fallback": False}}


def test_snakemake_classification_builds_the_instances_and_their_check(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    planner = Planner(load_config(REPO / "config.yaml", config))
    assert planner.families() == ["classification"]
    units = planner.units["classification_task"]
    # a family that builds instances shows its tables in the benchmark's report
    assert "classification_calibration" in {f.entry.id for f in planner.report_contents()}
    assert [(u.key.prior, u.key.noise) for u in units] == [
        ("gp", "homoscedastic"), ("gp", "edges"), ("bnn", "homoscedastic"), ("bnn", "edges")]
    run = snakemake(tmp_path, "classification", "--cores", "2", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "results/families/classification"
    table = pd.read_csv(folder / "calibration.csv")
    assert list(table["dataset"]) == ["concrete"] * 4 + ["pooled"]
    for row, unit in zip(table.itertuples(), units, strict=False):
        task = postrisk.load_task(tmp_path / unit.out)
        assert task.key == unit.key and task.x_train.shape[0] == 40
        draws = task.prob_draws
        covered = covered_central(draws.reshape(draws.shape[0], -1),
                                  task.prob_true_eval.reshape(-1))
        assert row.coverage90 == pytest.approx(covered.mean())
        assert row.coverage_nominal == pytest.approx(perfect_sampler_coverage(100))
        # recomputed from the store alone: every draw of π sums to 1
        assert np.abs(draws.sum(axis=-1) - 1).max() < 1e-5
    assert np.isfinite(table["max_rhat"].iloc[-1])
    table3 = pd.read_csv(folder / "table3.csv")
    assert sorted(table3["prior"]) == ["bnn", "gp"]
    # two instances per prior, valid or dropped by the seed rule (toy chains: R̂ decides)
    assert (table3["instances"] + table3["instances_dropped"] == 2).all()
    kept = table3[table3["instances"] > 0]
    assert (kept["draws"] == 100).all() and (kept["simplex_max_dev"] < 1e-5).all()
    page = (folder / "index.html").read_text()
    assert 'data-table="classification_table3"' in page and "rank_histograms" in page
    assert (folder / "rank_histograms.png").stat().st_size > 0


def _preset_at_toy_size(tmp_path):
    """``make classification``'s presets with a toy overlay: every dataset, prior, temperature
    field and coverage of the preset, at 30 training rows and a few NUTS iterations."""
    toy = tmp_path / "toy.yaml"
    toy.write_text(yaml.safe_dump({
        "sizes": {"n_eval_cap": 80, "n_cap": 60},
        "families": {"classification": {"n_cap": 30, "amplitude_draws": 20,
                                        "posterior": {"gp": TOY_NUTS, "bnn": TOY_NUTS}}},
        "bnn_prior": {"hidden": 10, "reference_inputs": 20, "scale_draws": 20}}))
    return [str(REPO / "presets/demo.yaml"), str(REPO / "presets/classification.yaml"),
            str(toy)]


def test_the_preset_fits_every_prior_its_instances_read(tmp_path):
    """The demo narrows the regression BNN to Concrete (prior_grid); the classification
    instances of the other datasets still get their BNN prior fit."""
    planner = Planner(load_config(REPO / "config.yaml", *_preset_at_toy_size(tmp_path)))
    fitted = {(u.dataset, u.prior) for u in planner.units["prior"]}
    read = {(u.key.dataset, u.key.prior) for u in planner.units["classification_task"]}
    assert read <= fitted


@pytest.mark.slow
def test_make_classification_s_preset_runs_at_toy_size(tmp_path):
    configs = _preset_at_toy_size(tmp_path)
    planner = Planner(load_config(REPO / "config.yaml", *configs))
    units = planner.units["classification_task"]
    priors = sorted({u.key.prior for u in units})
    run = snakemake(tmp_path, "classification", "--cores", "2", "--configfile", *configs,
                    timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    folder = tmp_path / "results/families/classification"
    calibration = pd.read_csv(folder / "calibration.csv")
    assert len(calibration) == len(units) + 1
    table3 = pd.read_csv(folder / "table3.csv")
    assert sorted(table3["prior"]) == priors  # one row per prior the preset builds
    assert 'data-table="classification_calibration"' in (folder / "index.html").read_text()


def test_a_classification_dataset_outside_the_grid_is_refused(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "families": {"classification": {
        "datasets": ["diamonds"]}}}))
    with pytest.raises(ConfigError, match="not datasets of the grid"):
        Planner(load_config(REPO / "config.yaml", config))
