"""Jobs, rules and resources (postrisk.grid.jobs): grouping is one parameter, every unit is in
exactly one job, resources follow the cost model's formula, accelerators follow declarations."""

import math

import pytest

from postrisk.grid import ConfigError, load_config, path, plan, validate_config, workflow_rules
from postrisk.grid.jobs import (
    GroupingError,
    Resources,
    group_keys,
    job_resources,
    stage_rules,
    unit_cost,
    unit_rows,
)


@pytest.fixture
def paper(repo):
    return load_config(repo / "config.yaml")


@pytest.fixture
def demo(repo):
    return load_config(repo / "config.yaml", repo / "presets" / "demo.yaml")


def _all_outputs(rules, kind):
    """Every concrete output of ``kind`` of a stage's jobs."""
    return [p for r in rules for job in r.jobs.values() for p in job.outputs
            if p.startswith(path(kind).split("{")[0])]


def test_unit_cost_is_base_plus_per_size_term(paper):
    # concrete: n = 348, n_eval = min(1500, 1030 // 2) = 515 → 863 rows; rows = 1000
    assert unit_rows(paper, "concrete") == 348 + 515
    entry = paper["cost_model"]["posterior"]["hbart"]
    s = (863 / 1000) ** entry["power"]
    minutes, mem = unit_cost(paper, "posterior", "hbart", "concrete")
    assert minutes == pytest.approx(entry["minutes"] + entry["minutes_per_size"] * s)
    assert mem == pytest.approx(entry["mem_mb"] + entry["mem_mb_per_size"] * s)
    # a method without its own entry takes the default; a stage not tied to a dataset: s = 0
    assert unit_cost(paper, "fit", "blr", None) == (20.0, 2000.0)
    # red_wine (covariates only) has no training rows: its n_eval = 1599 // 2
    assert unit_rows(paper, "red_wine") == 799


def test_job_request_is_margin_times_sum_and_largest_memory(paper):
    costs = [(3.2, 1234.0), (4.1, 2001.0)]
    res = job_resources(paper, "posterior", costs, "bnn", gpu=True)
    margin = paper["cost_model"]["margin"]
    assert res == Resources(threads=4, runtime=max(10, math.ceil(margin * 7.3)), mem_mb=2100,
                            gpu=1)
    tiny = job_resources(paper, "score", [(0.01, 10.0)])
    assert tiny.runtime == paper["cost_model"]["min_runtime"] and tiny.gpu == 0


def test_one_job_per_unit_by_default_and_grouping_is_one_parameter(paper, demo):
    one = stage_rules(paper, "posterior")
    assert [r.name for r in one] == ["posterior_exact", "posterior_mcmc"]
    assert all(len(job.units) == 1 for r in one for job in r.jobs.values())
    grouped = stage_rules(demo, "posterior")
    assert [r.name for r in grouped] == ["posterior_exact", "posterior_mcmc"]
    assert grouped[1].keys == ("dataset", "prior")
    assert grouped[1].constraints == {"dataset": "concrete", "prior": "hbart|bnn"}
    # every instance of the grid is written by exactly one job
    demo_tasks = _all_outputs(grouped, "task")
    assert len(demo_tasks) == len(set(demo_tasks)) == 3 * 8 + 2 * 4
    # the same units whatever the grouping: regrouping the demo per instance gives the same set
    per_unit = validate_config({**demo, "group_by": {}})
    assert sorted(_all_outputs(stage_rules(per_unit, "posterior"), "task")) == sorted(demo_tasks)


def test_rules_of_different_output_shapes_are_named_apart(demo):
    rules = stage_rules(demo, "sample")
    assert {r.name: len(r.outputs["sample"]) for r in rules} == {"sample_gp": 8,
                                                                 "sample_bnn_hbart": 4}
    # jobs of one rule share their input shape too: inputs are patterns, not functions
    assert rules[0].inputs == ["results/covariates/{dataset}.zarr",
                               "results/priors/{dataset}/{prior}.json"]
    mcmc = stage_rules(demo, "posterior")[1]
    assert mcmc.inputs == [o.replace("results/tasks/", "results/samples/")
                           for o in mcmc.outputs["task"]]
    fit = stage_rules(demo, "fit")
    assert fit[0].inputs is None  # a condition's seeds depend on its cell
    # the tree ensembles and the other costly methods cover parts of the grid (method_grid): a
    # rule for each shape (the first: four of the paper's methods and the outside example)
    assert [r.name for r in fit] == ["fit_blr_and_4_more", "fit_catboost_kgb_and_8_more",
                                     "fit_nn_bag_and_5_more"]
    assert fit[0].keys == ("method",)
    assert len(fit[1].outputs["fit"]) == 10 and len(fit[2].outputs["fit"]) == 6
    assert len(fit[0].outputs["fit"]) == len(fit[0].outputs["tuning_result"]) == 32
    job = fit[0].job({"method": "blr"})
    assert [u["method"] for u in job.payload] == ["blr"] * 32
    assert "inputs" not in job.payload[0] and job.payload[0]["fits"].endswith("/blr.zarr")


def test_resources_the_same_for_every_job_are_constants(paper):
    sample = stage_rules(paper, "sample")[0]
    assert sample.constant("threads") == 1 and sample.constant("gpu") == 0
    assert sample.constant("mem_mb") is None  # it grows with the dataset's rows


def test_bad_grouping_is_a_clear_config_error(paper):
    with pytest.raises(ConfigError, match=r"group_by.posterior' must include \['prior'\]"):
        validate_config({**paper, "group_by": {"posterior": ["dataset"]}})
    with pytest.raises(ConfigError, match="group_by.fit"):
        validate_config({**paper, "group_by": {"fit": ["seed", "method"]}})
    with pytest.raises(GroupingError, match="must include"):
        group_keys({"group_by": {"fit": ["dataset"]}}, "fit")


def test_accelerators_follow_the_declarations(paper, demo):
    from postrisk.priors.base import FAMILY_ENTRIES

    assert FAMILY_ENTRIES["hbart"].accelerator and not FAMILY_ENTRIES["gp"].accelerator
    rules = {r.name: r for r in stage_rules(paper, "posterior")}
    assert rules["posterior_mcmc"].accelerator and rules["posterior_mcmc"].env == "jax-gpu"
    assert {j.resources.gpu for j in rules["posterior_mcmc"].jobs.values()} == {1}
    assert {j.resources.gpu for j in rules["posterior_exact"].jobs.values()} == {0}
    assert not any(r.accelerator for r in stage_rules(demo, "posterior"))  # use: false


def test_plan_reports_what_the_rules_request(paper):
    rows = {r.rule: r for r in plan(paper)}
    mcmc = stage_rules(paper, "posterior")[1]
    assert rows["posterior_mcmc"].jobs == len(mcmc.jobs) == 2 * 13 * 8 * 13
    assert rows["posterior_mcmc"].gpu_jobs == rows["posterior_mcmc"].jobs
    assert rows["posterior_mcmc"].runtime_max == max(j.resources.runtime
                                                     for j in mcmc.jobs.values())
    every = workflow_rules(paper)
    assert set(rows) == {r.name for rules in every.values() for r in rules if r.jobs}
    assert rows["checks"].jobs == rows["aggregate_scores"].jobs == 1
