"""The classification family through the real workflow at toy size: ``snakemake
classification`` builds its instances (covariates and GP prior first, as the benchmark's) and
the calibration table, which recomputes each store's coverage of π* from its draws."""

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

CONFIG = {"scale": "smoke", "datasets": ["concrete"], "ood_datasets": [], "priors": ["gp"],
          "noise_modes": ["bump"], "coverages": ["balanced"], "methods": [],
          "covariates": {"prefer_offline_package": True},
          "sizes": {"n_eval_cap": 120, "n_cap": 60},
          "studies": {"sandbox": {"run": False}, "sn_study": {"run": False},
                      "warmup_check": {"datasets": []}},
          "families": {"classification": {
              "datasets": ["concrete"], "noise_modes": ["homoscedastic", "edges"],
              "coverages": ["balanced"], "classes": [2], "seeds": 1, "n_cap": 40,
              "amplitude_draws": 20,
              "posterior": {"chains": 2, "warmup": 100, "samples": 50}}},
          "group_by": {"classification_task": ["prior"]},
          "accelerator": {"use": False, "allow_cpu_fallback": False}}


def test_snakemake_classification_builds_the_instances_and_their_check(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    planner = Planner(load_config(REPO / "config.yaml", config))
    assert planner.families() == ["classification"]
    units = planner.units["classification_task"]
    # a family that builds instances shows its tables in the benchmark's report
    assert "classification_calibration" in {f.entry.id for f in planner.report_contents()}
    assert [u.key.noise for u in units] == ["homoscedastic", "edges"]
    run = snakemake(tmp_path, "classification", "--cores", "2", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/families/classification/calibration.csv")
    assert list(table["dataset"]) == ["concrete", "concrete", "pooled"]
    for row, unit in zip(table.itertuples(), units, strict=False):
        task = postrisk.load_task(tmp_path / unit.out)
        assert task.key == unit.key and task.x_train.shape[0] == 40
        draws = task.prob_draws
        covered = covered_central(draws.reshape(draws.shape[0], -1),
                                  task.prob_true_eval.reshape(-1))
        assert row.coverage90 == pytest.approx(covered.mean())
        assert row.coverage_nominal == pytest.approx(perfect_sampler_coverage(100))
    assert np.isfinite(table["max_rhat"].iloc[-1])


def test_a_classification_dataset_outside_the_grid_is_refused(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "families": {"classification": {
        "datasets": ["diamonds"]}}}))
    with pytest.raises(ConfigError, match="not datasets of the grid"):
        Planner(load_config(REPO / "config.yaml", config))
