"""The paper-settings slice (presets/paper_slice.yaml): its DAG planned dry, and the promise that
it changes the grid's extent only — every setting that decides a number is config.yaml's."""

import pytest
import yaml

from tests.workflow_helpers import REPO, dry_run_jobs, job_counts, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow

PRESET = REPO / "presets" / "paper_slice.yaml"
#: What the slice may set: the grid's extent, where its files come from and what runs where
#: (not how any number is computed).
EXTENT = {"scale", "datasets", "ood_datasets", "priors", "noise_modes", "coverages", "seeds",
          "methods", "covariates", "accelerator", "disentanglement", "studies"}


def test_the_slice_changes_the_extent_only():
    from postrisk.grid.config import load_config

    preset = yaml.safe_load(PRESET.read_text())
    assert set(preset) <= EXTENT, set(preset) - EXTENT
    assert set(preset["covariates"]) <= {"prefer_offline_package"}
    paper = load_config(REPO / "config.yaml")
    merged = load_config(REPO / "config.yaml", PRESET)
    for key in ("posterior", "gp_prior", "hbart_prior", "bnn_prior", "tuning", "sizes",
                "group_by", "method_settings", "prior_grid", "method_grid", "cost_model"):
        assert merged.get(key) == paper.get(key), key
    assert set(merged["methods"]) <= set(paper["methods"])
    assert not merged["accelerator"]["use"]  # a CPU machine: no job asks for a GPU


def test_the_slice_plans_what_the_planner_plans(tmp_path):
    """Its dry run: exactly the planner's jobs (one per instance and per (method, condition), as
    on a cluster), each prior's instances on its own seeds, nothing on a GPU."""
    from postrisk.planning.planner import Planner

    run = snakemake(tmp_path, "--configfile", str(PRESET), "-n", "--cores", "2")
    assert run.returncode == 0, run.stderr[-3000:]
    planner = Planner.from_files(REPO / "config.yaml", PRESET)
    expected = {(rule.name, ident) for rules in planner.rules.values() for rule in rules
                for ident in rule.jobs}
    rules = {r.name: r for rs in planner.rules.values() for r in rs}
    jobs = [j for j in dry_run_jobs(run.stdout) if j["rule"] != "all"]
    got = {(j["rule"], tuple(j["wildcards"][k] for k in rules[j["rule"]].keys)) for j in jobs}
    assert got == expected and len(jobs) == job_counts(run.stdout)["total"] - 1
    posteriors = {(j["wildcards"]["prior"], int(j["wildcards"]["seed"])) for j in jobs
                  if j["rule"].startswith("posterior")}
    assert posteriors == {(p, s) for p in planner.priors for s in planner.seeds.prior_seeds(p)}
    assert all(int(j["resources"].get("gpu", 0)) == 0 for j in jobs)
