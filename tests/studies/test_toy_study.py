"""A new study is its own package plus a config section: the toy study (tests/studies/toy_study),
named by ``study_packages``, is planned, run end to end by the real workflow and shown on the
studies' page, with nothing else of the pipeline edited; the registration's rules hold."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from postrisk.covariates.build import load_covariates
from postrisk.grid.config import ConfigError, load_config
from postrisk.grid.study import Study, StudyError, UnitStage, register, studies, unregister
from postrisk.planning.planner import Planner
from tests.workflow_helpers import REPO, snakemake

#: A small config of its own: one dataset (the offline copy), no method, every other study off.
TOY_CONFIG = {"scale": "smoke", "datasets": ["concrete"], "ood_datasets": [], "priors": ["gp"],
              "noise_modes": ["smooth_monotone"], "coverages": ["balanced"], "methods": [],
              "covariates": {"prefer_offline_package": True},
              "sizes": {"n_eval_cap": 150, "n_cap": 120},
              "study_packages": ["tests.studies.toy_study"],
              "studies": {"toy_study": {"run": True}, "sandbox": {"run": False},
                          "sn_study": {"run": False}, "warmup_check": {"datasets": []}}}


@pytest.fixture
def toy_config(tmp_path):
    config = tmp_path / "toy.yaml"
    config.write_text(yaml.safe_dump(TOY_CONFIG))
    yield config
    unregister("toy_study")  # this process's registry as the other tests expect it


def test_the_toy_study_runs_end_to_end(tmp_path, toy_config):
    planner = Planner(load_config(REPO / "config.yaml", toy_config))
    assert planner.studies() == ["toy_study"]  # its config runs no other study
    assert [r.name for r in planner.stage_rules("toy_study_shape")] == ["toy_study_shape"]
    assert planner.rule("toy_study").jobs and planner.rule("studies_report").jobs
    run = snakemake(tmp_path, "studies", "--cores", "1", "--configfile", str(toy_config))
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/studies/toy_study/shapes.csv")
    cov = load_covariates(tmp_path / "results/covariates/concrete.zarr")  # independently read
    assert table.to_dict("records") == [{"scale": "smoke", "dataset": "concrete",
                                        "rows": cov.x.shape[0], "d": cov.x.shape[1],
                                        "n_eval": len(cov.eval_index)}]
    page = (tmp_path / "results/studies/index.html").read_text()
    assert "Rows and columns per covariate store" in page
    for rule in ("toy_study_shape", "toy_study"):  # logged and benchmarked like every rule
        assert list((tmp_path / "results/benchmarks" / rule).glob("*.tsv")), rule
    assert (tmp_path / planner.rule("toy_study").log).exists()


def test_a_study_not_named_by_the_config_is_not_planned(toy_config):
    plain_config = toy_config.parent / "plain.yaml"
    plain_config.write_text(yaml.safe_dump({k: v for k, v in TOY_CONFIG.items()
                                            if k not in ("study_packages", "studies")}))
    plain = Planner(load_config(REPO / "config.yaml", plain_config))
    assert "toy_study_shape" not in plain.rules  # (no other test registered it in this process)
    off = toy_config.parent / "off.yaml"
    off.write_text(yaml.safe_dump({**TOY_CONFIG, "studies": {**TOY_CONFIG["studies"],
                                                             "toy_study": {"run": False}}}))
    planner = Planner(load_config(REPO / "config.yaml", off))
    assert "toy_study" not in planner.studies() and not planner.rule("toy_study").jobs


def test_the_toy_studys_section_is_checked_by_its_schema(toy_config):
    bad = toy_config.parent / "bad.yaml"
    bad.write_text(yaml.safe_dump({**TOY_CONFIG, "studies": {"toy_study": {"runs": True}}}))
    with pytest.raises(ConfigError, match=r"studies.toy_study.*unknown key\(s\) \['runs'\]"):
        load_config(REPO / "config.yaml", bad)
    missing = toy_config.parent / "missing.yaml"
    missing.write_text(yaml.safe_dump({"study_packages": ["tests.studies.no_such_study"]}))
    with pytest.raises(ConfigError, match="study_packages.*no_such_study.*does not import"):
        load_config(REPO / "config.yaml", missing)


def test_the_registration_keeps_one_name_per_study():
    """A unit stage or a file kind not named after its study, or a name taken, is refused; the
    four built-in studies are registered by being packages of postrisk.studies."""
    assert {"warmup_check", "ood_proxy", "sandbox", "sn_study"} <= {s.name for s in studies()}
    stage = UnitStage(name="shape", keys=("dataset",), outputs=(), units=lambda c, p: [],
                      step="x:y")
    with pytest.raises(StudyError, match="must be named toy_study_<what>"):
        register(Study(name="toy_study", title="", schema=dict, summary="x:y", catalogue=(),
                       stages=(stage,)), "here")
    with pytest.raises(StudyError, match="already registered"):
        register(Study(name="sandbox", title="", schema=dict, summary="x:y", catalogue=()),
                 "elsewhere")
    assert "toy_study" not in {s.name for s in studies()}
