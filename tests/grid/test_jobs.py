"""Jobs, rules and resources (postrisk.grid.jobs, postrisk.grid.cost, through the planner):
grouping is one parameter, every unit is in exactly one job, rules are named by what their
outputs share, resources follow the cost model's formula, accelerators follow declarations.

The grouped configurations are built here, from config.yaml and a few narrowings, so that no
preset's counts or names are pinned."""

import math

import pytest

from postrisk.grid import ConfigError, Planner, load_config, path, plan, validate_config
from postrisk.grid.artefacts import figure_ids
from postrisk.grid.cost import Resources, job_resources, unit_cost, unit_rows
from postrisk.grid.jobs import _name_rules
from postrisk.grid.stages import GroupingError, group_keys


@pytest.fixture(scope="module")
def paper(repo):
    return load_config(repo / "config.yaml")


@pytest.fixture(scope="module")
def paper_plan(paper):
    """The paper config's planner (every unit of the full grid), built once for this file."""
    return Planner(paper)


def _small(paper, **changes):
    """A small grid of config.yaml's settings (two datasets, GP and HBART, HBART on Concrete's
    bump mode only, two seeds), with ``changes`` merged over it."""
    cfg = dict(paper, datasets=["concrete", "diamonds"], priors=["gp", "hbart"],
               noise_modes=["homoscedastic", "bump"], coverages=["balanced", "ood"],
               seeds={"valid_per_cell": 2, "candidates": 2},
               prior_grid={"hbart": {"datasets": ["concrete"], "noise_modes": ["bump"]}},
               accelerator={"use": False, "allow_cpu_fallback": False},
               methods=["blr", "gp", "nn_drop"], method_grid={
                   "gp": {"coverages": ["balanced"]},
                   "nn_drop": {"datasets": ["concrete"], "coverages": ["balanced"]}},
               group_by={"sample": ["dataset", "prior"], "posterior": ["dataset", "prior"],
                         "fit": ["method"]})
    cfg.update(changes)
    return validate_config(cfg)


@pytest.fixture
def grouped(paper):
    return _small(paper)


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


def test_one_job_per_unit_by_default_and_grouping_is_one_parameter(paper_plan, grouped):
    one = paper_plan.stage_rules("posterior")
    assert [r.name for r in one] == ["posterior_exact", "posterior_mcmc"]
    assert all(len(job.units) == 1 for r in one for job in r.jobs.values())
    rules = Planner(grouped).stage_rules("posterior")
    assert [r.name for r in rules] == ["posterior_exact", "posterior_mcmc"]
    assert rules[1].keys == ("dataset", "prior")
    assert rules[1].constraints == {"dataset": "concrete", "prior": "hbart"}
    # every instance of the grid is written by exactly one job: GP 2 × 2 × 2 cells, HBART 1 × 1
    # × 2, two seeds each
    tasks = _all_outputs(rules, "task")
    assert len(tasks) == len(set(tasks)) == (2 * 2 * 2 + 2) * 2
    # the same units whatever the grouping: regrouping per instance gives the same set
    per_unit = validate_config({**grouped, "group_by": {}})
    assert sorted(_all_outputs(Planner(per_unit).stage_rules("posterior"), "task")) == \
        sorted(tasks)


def test_rules_of_different_output_shapes_are_named_by_what_their_outputs_share(grouped):
    planner = Planner(grouped)
    rules = planner.stage_rules("sample")
    # GP on every cell of its two datasets; HBART only on the bump mode (of Concrete)
    assert {r.name: len(r.outputs["sample"]) for r in rules} == {"sample": 8, "sample_bump": 4}
    # jobs of one rule share their input shape too: inputs are patterns, not functions
    assert rules[0].inputs == ["results/covariates/{dataset}.zarr",
                               "results/priors/{dataset}/{prior}.json"]
    mcmc = planner.stage_rules("posterior")[1]
    assert mcmc.inputs == [o.replace("results/tasks/", "results/samples/")
                           for o in mcmc.outputs["task"]]
    fit = planner.stage_rules("fit")
    assert fit[0].inputs is None  # a condition's seeds depend on its cell
    # BLR everywhere, GP on the balanced coverage, MC dropout on Concrete's balanced coverage:
    # a rule for each shape, named by the axis values it is narrowed to
    assert [r.name for r in fit] == ["fit", "fit_balanced", "fit_concrete_balanced"]
    assert [r.constraints["method"] for r in fit] == ["blr", "gp", "nn_drop"]
    assert fit[0].keys == ("method",)
    assert [len(r.outputs["fit"]) for r in fit] == [10, 5, 3]
    assert len(fit[0].outputs["tuning_result"]) == 10
    job = fit[0].job({"method": "blr"})
    assert [u.method for u in job.payload] == ["blr"] * 10
    assert job.payload[0].fits.endswith("/blr.zarr")
    assert job.payload[0].seeds == (0, 1) and job.payload[0].selection == ()  # no BNN
    # a method that moves to another method's narrowing joins that rule; no name changes
    moved = Planner(_small(grouped, method_grid={**grouped["method_grid"],
                                                 "gp": grouped["method_grid"]["nn_drop"]}))
    assert [(r.name, r.constraints["method"]) for r in moved.stage_rules("fit")] == [
        ("fit", "blr"), ("fit_concrete_balanced", "nn_drop|gp")]
    # one fit job per method (group_by.fit: [method]) or one per unit: the same outputs
    per_unit = Planner(_small(grouped, group_by={}))
    assert [r.name for r in per_unit.stage_rules("fit")] == ["fit"]
    assert sorted(_all_outputs(per_unit.stage_rules("fit"), "fit")) == \
        sorted(_all_outputs(fit, "fit"))


def test_rules_sharing_a_description_get_a_digest_each():
    class Unit:
        def __init__(self, dataset, noise, out):
            self.wildcards = {"dataset": dataset, "prior": "gp", "noise": noise,
                              "coverage": "ood", "method": "m"}
            self.outputs = (out,)

    a = [Unit("concrete", "bump", "a1"), Unit("diamonds", "edges", "a2")]
    b = [Unit("concrete", "edges", "b1"), Unit("diamonds", "bump", "b2")]
    c = [Unit("concrete", "homoscedastic", "c1")]
    names = _name_rules({}, "fit", ("method",), [a, b, c], a + b + c)
    assert names[2] == "fit_concrete_homoscedastic"
    assert names[0] != names[1] and names[0].startswith("fit_bump_edges_")
    assert names == _name_rules({}, "fit", ("method",), [a, b, c], a + b + c)  # deterministic


def test_resources_the_same_for_every_job_are_constants(paper_plan):
    sample = paper_plan.stage_rules("sample")[0]
    assert sample.constant("threads") == 1 and sample.constant("gpu") == 0
    assert sample.constant("mem_mb") is None  # it grows with the dataset's rows


def test_bad_grouping_is_a_clear_config_error(paper):
    with pytest.raises(ConfigError, match=r"group_by.posterior' must include \['prior'\]"):
        validate_config({**paper, "group_by": {"posterior": ["dataset"]}})
    with pytest.raises(ConfigError, match="group_by.fit"):
        validate_config({**paper, "group_by": {"fit": ["seed", "method"]}})
    with pytest.raises(GroupingError, match="must include"):
        group_keys({"group_by": {"fit": ["dataset"]}}, "fit")


def test_accelerators_follow_the_declarations(paper_plan, grouped):
    from postrisk.priors.base import PRIOR_ENTRIES

    assert PRIOR_ENTRIES["hbart"].accelerator and not PRIOR_ENTRIES["gp"].accelerator
    rules = {r.name: r for r in paper_plan.stage_rules("posterior")}
    assert rules["posterior_mcmc"].accelerator and rules["posterior_mcmc"].env == "jax-gpu"
    assert {j.resources.gpu for j in rules["posterior_mcmc"].jobs.values()} == {1}
    assert {j.resources.gpu for j in rules["posterior_exact"].jobs.values()} == {0}
    assert not any(r.accelerator for r in Planner(grouped).stage_rules("posterior"))  # use: false


def test_plan_reports_what_the_rules_request(paper, paper_plan):
    planner = paper_plan
    rows = {r.rule: r for r in plan(paper, planner)}
    mcmc = planner.stage_rules("posterior")[1]
    assert rows["posterior_mcmc"].jobs == len(mcmc.jobs) == 2 * 13 * 8 * 13
    assert rows["posterior_mcmc"].gpu_jobs == rows["posterior_mcmc"].jobs
    assert rows["posterior_mcmc"].runtime_max == max(j.resources.runtime
                                                     for j in mcmc.jobs.values())
    assert set(rows) == {r.name for rules in planner.rules.values() for r in rules if r.jobs}
    assert {r: rows[r].jobs for r in rows} == planner.job_counts()
    assert rows["checks"].jobs == rows["tables"].jobs == rows["report"].jobs == 1
    assert rows["figure"].jobs == len(figure_ids())
