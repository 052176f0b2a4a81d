"""A new task family is one module plus a config section: the toy family
(tests/families/toy_family.py), named by ``family_packages``, is planned, built by the real
workflow, opened by ``load_task`` through its registration, with nothing else of the pipeline
edited; a family's keys never change a regression key."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

import postrisk
from postrisk.grid.config import ConfigError, load_config
from postrisk.grid.paths import path, templates
from postrisk.grid.study import (
    Study,
    StudyError,
    TaskFamily,
    families,
    register_family,
    unregister_family,
)
from postrisk.planning.planner import Planner
from tests.workflow_helpers import REPO, snakemake

pytestmark = pytest.mark.workflow

TOY_CONFIG = {"scale": "smoke", "datasets": ["concrete"], "ood_datasets": [], "priors": ["gp"],
              "noise_modes": ["smooth_monotone"], "coverages": ["balanced"], "methods": [],
              "covariates": {"prefer_offline_package": True},
              "sizes": {"n_eval_cap": 150, "n_cap": 120},
              "family_packages": ["tests.families.toy_family"],
              "families": {"toy_family": {"run": True, "seeds": 2}},
              "studies": {"sandbox": {"run": False}, "sn_study": {"run": False},
                          "warmup_check": {"datasets": []}}}


@pytest.fixture
def toy_config(tmp_path):
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump(TOY_CONFIG))
    yield config
    unregister_family("toy_family")


def test_the_toy_family_is_planned_built_and_loaded(tmp_path, toy_config):
    planner = Planner(load_config(REPO / "config.yaml", toy_config))
    assert planner.families() == ["toy_family"] and planner.studies() == []
    assert [len(r.jobs) for r in planner.stage_rules("toy_family_task")] == [2]
    assert "results/families/toy_family/ones.csv" in planner.family_files()
    run = snakemake(tmp_path, "toy_family", "--cores", "1", "--configfile", str(toy_config))
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/families/toy_family/ones.csv")
    assert list(table["dataset"]) == ["concrete", "concrete"]
    store = tmp_path / "results/families/toy_family/tasks/concrete/1.zarr"
    task = postrisk.load_task(store)
    assert type(task).__name__ == "ToyTask" and int(task.ds["y"].sum()) == table["ones"][1]
    assert list((tmp_path / "results/benchmarks/toy_family_task").glob("*.tsv"))


def test_families_enumerate_and_keep_regression_keys(toy_config):
    load_config(REPO / "config.yaml", toy_config)  # registers the toy family
    names = [f.name for f in families()]
    assert names[0] == "regression" and {"classification", "toy_family"} <= set(names)
    # a family's kinds live under families/<name>/; the regression templates are untouched
    kinds = templates()
    assert kinds["classification_task"].startswith("families/classification/")
    assert path("task", dataset="concrete", prior="gp", noise="bump", coverage="ood",
                seed=0) == "results/tasks/concrete/gp/bump/ood/0.zarr"


def test_a_family_pipeline_must_be_named_after_it_and_unknown_modules_are_refused(tmp_path):
    pipeline = Study(name="other", title="", schema=dict, summary="x:y", catalogue=(),
                     section="families")
    with pytest.raises(StudyError, match="must be named"):
        register_family(TaskFamily(name="mine", title="", task="x:y", pipeline=pipeline))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"family_packages": ["tests.families.no_such_family"]}))
    with pytest.raises(ConfigError, match="family_packages.*does not import"):
        load_config(REPO / "config.yaml", bad)
