"""Jobs, rules and resources (postrisk.planning.jobs, postrisk.planning.cost, through the planner):
grouping is one parameter, every unit is in exactly one job, rules are named by what their
outputs share, resources follow the cost model's formula, accelerators follow declarations.

The grouped configurations are built here, from config.yaml and a few narrowings, so that no
preset's counts or names are pinned."""

import math

import pytest

from postrisk.grid.artefacts import figure_ids
from postrisk.grid.config import ConfigError, load_config, validate_config
from postrisk.grid.paths import path
from postrisk.grid.stages import GroupingError, group_keys
from postrisk.planning.cost import CostModel, Resources
from postrisk.planning.jobs import _name_rules
from postrisk.planning.plan import plan
from postrisk.planning.planner import Planner


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


def _model(paper, **changes):
    """config.yaml with a cost model of this file's numbers (margin 2, min_runtime 10, no
    per-job start) and ``changes`` over it."""
    model = dict(paper["cost_model"], margin=2.0, min_runtime=10, job_minutes=0.0)
    model["posterior"] = dict(model["posterior"], hbart={
        "threads": 4, "minutes": 5.0, "minutes_per_size": 3.0, "power": 1, "mem_mb": 4000,
        "mem_mb_per_size": 500})
    model["fit"] = {"default": {"threads": 2, "minutes": 20.0, "minutes_per_size": 10.0,
                                "power": 1, "mem_mb": 2000, "mem_mb_per_size": 1000}}
    model.update(changes)
    return validate_config(dict(paper, cost_model=model))


def test_unit_cost_is_base_plus_per_size_term(paper):
    cfg = _model(paper)
    # concrete: n = 348, n_eval = min(1500, 1030 // 2) = 515 → 863 rows; rows = 1000
    assert CostModel.of(cfg).unit_rows("concrete") == 348 + 515
    minutes, mem = CostModel.of(cfg).unit_cost("posterior", "hbart", "concrete")
    assert minutes == pytest.approx(5.0 + 3.0 * 0.863)
    assert mem == pytest.approx(4000 + 500 * 0.863)
    # a method without its own entry takes the default; a stage not tied to a dataset: s = 0
    assert CostModel.of(cfg).unit_cost("fit", "blr", None) == (20.0, 2000.0)
    # red_wine (covariates only) has no training rows: its n_eval = 1599 // 2
    assert CostModel.of(cfg).unit_rows("red_wine") == 799


def test_job_request_is_margin_times_sum_and_largest_memory(paper):
    cfg = _model(paper)
    costs = [(3.2, 1234.0), (4.1, 2001.0)]
    res = CostModel.of(cfg).job_resources("posterior", costs, "hbart")
    # 2 × 7.3 = 14.6 → 15 minutes; 2,001 MB → 2,100
    assert res == Resources(threads=4, runtime=15, mem_mb=2100, gpu=0)
    tiny = CostModel.of(cfg).job_resources("score", [(0.01, 10.0)])
    assert tiny.runtime == 10 and tiny.gpu == 0  # the floor


def test_every_job_pays_the_start_once(paper):
    """``job_minutes`` is added once per job, not per unit: three units of 1.2 minutes and a
    start of 0.4 make 4.0 minutes, requested at margin 2 as 8."""
    cfg = _model(paper, job_minutes=0.4, min_runtime=1)
    res = CostModel.of(cfg).job_resources("score", [(1.2, 10.0)] * 3)
    assert res.estimate == pytest.approx(4.0) and res.runtime == 8
    alone = CostModel.of(cfg).job_resources("score", [(1.2, 10.0)])
    assert alone.estimate == pytest.approx(1.6) and alone.runtime == 4


def test_the_paper_configs_requests_are_the_margin_times_the_estimate(paper_plan, paper):
    """Jobs sized to their work: on config.yaml no job's request is set by min_runtime, so each
    asks for the margin × its estimate, rounded up to a whole minute."""
    model = paper["cost_model"]
    for rules in paper_plan.rules.values():
        for rule in rules:
            for job in rule.jobs.values():
                res = job.resources
                assert res.estimate >= model.get("job_minutes", 0.0)
                assert res.runtime == math.ceil(model["margin"] * res.estimate), (rule.name, res)


def test_one_job_per_unit_by_default_and_grouping_is_one_parameter(paper_plan, grouped):
    one = paper_plan.stage_rules("posterior")
    assert [r.name for r in one][:2] == ["posterior_exact", "posterior_mcmc"]
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
        group_keys({"fit": ["dataset"]}, "fit")


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
    mcmc = planner.stage_rules("posterior")[1:]  # on GPUs, and any prior faster on CPUs
    assert sum(rows[r.name].jobs for r in mcmc) == sum(len(r.jobs) for r in mcmc) == (
        2 * 13 * 8 * 13)
    for rule in mcmc:
        assert rows[rule.name].gpu_jobs == (rows[rule.name].jobs if rule.accelerator else 0)
        assert rows[rule.name].runtime_max == max(j.resources.runtime
                                                  for j in rule.jobs.values())
    assert set(rows) == {r.name for rules in planner.rules.values() for r in rules if r.jobs}
    assert {r: rows[r].jobs for r in rows} == planner.job_counts()
    assert rows["checks"].jobs == rows["tables"].jobs == rows["report"].jobs == 1
    assert rows["figure"].jobs == len(figure_ids())


# ------------------------------------------------------------ GPU entries, estimates, scenarios

#: A cost entry of HBART's posterior with GPU values over part of it (numbers for this file).
_HBART = {"threads": 2, "minutes": 1.0, "minutes_per_size": 2.0, "power": 1, "mem_mb": 1000,
          "mem_mb_per_size": 100,
          "gpu": {"threads": 3, "minutes": 2.0, "minutes_per_size": 0.5, "measured": False}}


def _costed(paper, accelerator: bool, hbart=_HBART, warmup=None, **changes):
    """The small grid on a cost model of this file's numbers: margin 1.5, min_runtime 10, no
    per-job start, the
    HBART posterior entry ``hbart`` (and the warm-up study's ``warmup``, with the study on
    Concrete), accelerators on or off."""
    model = dict(paper["cost_model"], margin=1.5, min_runtime=10, job_minutes=0.0,
                 posterior=dict(paper["cost_model"]["posterior"], hbart=hbart))
    if warmup is not None:
        model["warmup_check_posterior"] = dict(paper["cost_model"]["warmup_check_posterior"],
                                               hbart=warmup)
        changes["studies"] = dict(paper["studies"], warmup_check={
            "prior": "hbart", "datasets": ["concrete"], "factors": [2]})
    return _small(paper, cost_model=model,
                  accelerator={"use": accelerator, "allow_cpu_fallback": False}, **changes)


def test_a_job_on_a_gpu_takes_its_entrys_gpu_values_and_on_cpus_does_not(paper):
    cpu, gpu = _costed(paper, False), _costed(paper, True)
    # concrete: 863 rows, s = 0.863; the GPU values replace minutes, per-size minutes and
    # threads, the memory model is the entry's
    assert CostModel.of(cpu).unit_cost("posterior", "hbart", "concrete") == pytest.approx(
        (1.0 + 2.0 * 0.863, 1000 + 100 * 0.863))
    assert CostModel.of(gpu).unit_cost("posterior", "hbart", "concrete", gpu=True) == pytest.approx(
        (2.0 + 0.5 * 0.863, 1000 + 100 * 0.863))
    jobs = {}
    for name, cfg in (("cpu", cpu), ("gpu", gpu)):
        (job,) = Planner(cfg).stage_rules("posterior")[1].jobs.values()  # HBART on Concrete
        assert len(job.units) == 4  # bump × two coverages × two seeds, one job
        jobs[name] = job.resources
    # CPUs: 4 × 2.726 = 10.904 minutes, 1.5 × that = 16.356 → 17; 1,086.3 MB → 1,100
    assert jobs["cpu"] == Resources(threads=2, runtime=17, mem_mb=1100, gpu=0)
    assert jobs["cpu"].estimate == pytest.approx(10.904) and not jobs["cpu"].unmeasured
    # a GPU: 4 × 2.4315 = 9.726 minutes, 1.5 × that = 14.589 → 15
    assert jobs["gpu"] == Resources(threads=3, runtime=15, mem_mb=1100, gpu=1)
    assert jobs["gpu"].estimate == pytest.approx(9.726) and jobs["gpu"].unmeasured


def test_a_prior_estimated_slower_on_a_gpu_runs_on_cpus_beside_the_gpu_jobs(paper):
    # BNN's GPU values: 3 + 0.5 = 3.5 minutes at cost_model.rows, its CPU entry 1 + 2 = 3: CPUs;
    # HBART's (this file's): 2.5 on a GPU against 3 on CPUs: a GPU
    bnn = dict(_HBART, gpu=dict(_HBART["gpu"], minutes=3.0))
    model = dict(paper["cost_model"], job_minutes=0.0, posterior=dict(
        paper["cost_model"]["posterior"], hbart=_HBART, bnn=bnn))
    grid = {"priors": ["gp", "hbart", "bnn"], "cost_model": model,
            "prior_grid": {p: {"datasets": ["concrete"], "noise_modes": ["bump"]}
                           for p in ("hbart", "bnn")}}
    cost = CostModel.of(_small(paper, **grid, accelerator={"use": True,
                                                           "allow_cpu_fallback": False}))
    assert cost.slower_on_gpu("posterior", "bnn") and not cost.slower_on_gpu("posterior", "hbart")
    assert not cost.slower_on_gpu("posterior", "gp")  # no GPU values: never slower there
    assert [cost.wants_accelerator("posterior", p) for p in ("gp", "hbart", "bnn")] == [
        False, True, False]
    for use in (True, False):
        cfg = _small(paper, **grid, accelerator={"use": use, "allow_cpu_fallback": False})
        rules = {r.name: r for r in Planner(cfg).stage_rules("posterior")}
        priors = {name: {u.key.prior for j in r.jobs.values() for u in j.units}
                  for name, r in rules.items()}
        if use:  # a rule asks for one kind of machine: BNN's MCMC in a rule of its own
            assert priors == {"posterior_exact": {"gp"}, "posterior_mcmc": {"hbart"},
                              "posterior_mcmc_cpu": {"bnn"}}
            assert rules["posterior_mcmc"].accelerator and rules["posterior_mcmc"].env == "jax-gpu"
            cpu = rules["posterior_mcmc_cpu"]
            assert not cpu.accelerator and cpu.env == "jax"
            assert {(j.resources.gpu, j.resources.threads) for j in cpu.jobs.values()} == {(0, 2)}
        else:  # no GPU anywhere: one MCMC rule, as before
            assert priors == {"posterior_exact": {"gp"}, "posterior_mcmc": {"hbart", "bnn"}}
        outputs = _all_outputs(rules.values(), "task")
        assert len(outputs) == len(set(outputs))  # every store written by exactly one job


def test_the_estimate_is_the_sum_at_margin_one_and_the_request_its_rounded_multiple(paper):
    cfg = _costed(paper, True)
    # 1.5 + 2.25 = 3.75 minutes; 1.5 × 3.75 = 5.625 → 6, below min_runtime: 10
    low = CostModel.of(cfg).job_resources("score", [(1.5, 100.0), (2.25, 300.0)])
    assert low.estimate == pytest.approx(3.75) and low.runtime == 10 and low.mem_mb == 300
    # 12.5 + 20.1 = 32.6 minutes; 1.5 × 32.6 = 48.9 → 49
    high = CostModel.of(cfg).job_resources("posterior", [(12.5, 100.0), (20.1, 250.0)], "hbart",
                                           gpu=True)
    assert high.estimate == pytest.approx(32.6) and high.runtime == 49
    assert (high.threads, high.mem_mb, high.gpu) == (3, 300, 1)
    # the estimate is beside the request, not part of it
    assert high == Resources(threads=3, runtime=49, mem_mb=300, gpu=1)


def test_the_plans_totals_are_the_sums_of_its_rows_and_of_the_planners_jobs(paper, paper_plan):
    from postrisk.planning.plan import plan_table, plan_totals

    rows = plan(paper, paper_plan)
    total = plan_totals(rows)
    for name in ("jobs", "gpu_jobs", "estimate_job_hours", "requested_job_hours",
                 "estimate_core_hours", "requested_core_hours"):
        assert getattr(total, name) == pytest.approx(sum(getattr(r, name) for r in rows)), name
    resources = [job.resources for rules in paper_plan.rules.values() for rule in rules
                 for job in rule.jobs.values()]
    assert total.jobs == len(resources)
    assert total.requested_core_hours == pytest.approx(
        sum(r.runtime * r.threads for r in resources) / 60)
    assert total.requested_job_hours == pytest.approx(sum(r.runtime for r in resources) / 60)
    assert total.estimate_job_hours == pytest.approx(sum(r.estimate for r in resources) / 60)
    assert total.estimate_core_hours == pytest.approx(
        sum(r.estimate * r.threads for r in resources) / 60)
    for r in rows:  # the request is the margin × the estimate, or more (rounding, the floor)
        assert r.requested_job_hours >= paper["cost_model"]["margin"] * r.estimate_job_hours
        assert r.estimate_job_hours == 0 or r.ratio == pytest.approx(
            r.requested_job_hours / r.estimate_job_hours)
    last = plan_table(rows).splitlines()[-1]
    assert last.startswith(f"| total | {total.jobs:,} |")
    assert last.endswith(f" {total.requested_core_hours:,.0f} |")


def test_the_fit_per_method_splits_the_fit_rules_jobs_by_method(paper, paper_plan):
    from postrisk.planning.plan import method_fit_plan, method_fit_table, plan_totals

    fit_rows = [r for r in plan(paper, paper_plan) if r.stage == "fit"]
    methods = method_fit_plan(paper_plan)
    assert [r.rule for r in methods] == [m for m in paper["methods"]
                                         if m in {r.rule for r in methods}]
    for name in ("jobs", "estimate_job_hours", "estimate_core_hours", "requested_job_hours"):
        assert sum(getattr(r, name) for r in methods) == pytest.approx(
            sum(getattr(r, name) for r in fit_rows)), name
    blr = next(r for r in methods if r.rule == "blr")  # one job per condition
    blr_jobs = [job.resources for rule in paper_plan.rules["fit"] for job in rule.jobs.values()
                if job.units[0].method == "blr"]
    assert blr.jobs == len(blr_jobs) and blr.estimate_job_hours == pytest.approx(
        sum(r.estimate for r in blr_jobs) / 60)
    table = method_fit_table(methods, paper_hours=2 * plan_totals(methods).estimate_job_hours)
    rows = table.splitlines()[2:]
    shares = [float(line.split(" | ")[5].rstrip("%")) for line in rows[:-2]]
    assert shares == sorted(shares, reverse=True)  # the costliest first
    assert rows[-2].startswith(f"| total | {plan_totals(methods).jobs:,} |")
    assert rows[-1].endswith("| 0.50× | |")  # the estimate over the paper's


def test_the_cpu_only_scenario_has_no_gpu_job_and_guesses_are_marked(paper):
    from postrisk.planning.plan import (
        CPU_SCENARIO,
        GPU_SCENARIO,
        UNMEASURED,
        plan_report,
        scenarios,
    )

    measured = dict(_HBART, gpu=dict(_HBART["gpu"], measured="a test bench, 2 jobs"))
    cfg = _costed(paper, True, hbart=_HBART, warmup=measured)
    assert [name for name, _ in scenarios(cfg)] == [GPU_SCENARIO, CPU_SCENARIO]
    (_, on), (_, off) = scenarios(cfg)
    assert on is cfg and off["accelerator"]["use"] is False
    gpu_rows = {r.rule: r for r in plan(on) if r.gpu_jobs}
    # the two GPU rules: the posterior's values are guesses, the warm-up study's measured
    assert {r: row.unmeasured for r, row in gpu_rows.items()} == {
        "posterior_mcmc": True, "warmup_check_posterior": False}
    cpu_rows = plan(off)
    assert not any(r.gpu_jobs or r.unmeasured for r in cpu_rows)
    assert {r.rule for r in cpu_rows} >= set(gpu_rows)  # the same rules, on CPUs
    # the report: the scenario the config runs first, the marker in the guessed rule's row only
    report = plan_report(cfg, paper_fit_hours={"final fits": 2.0, "sweeps": 3.0})
    first, second = report.split(f"scenario 2 of 2: {CPU_SCENARIO}")
    assert f"scenario 1 of 2: {GPU_SCENARIO} — what this config runs" in first
    marked = [line for line in report.splitlines() if UNMEASURED in line]
    assert [line.split(" |")[0] for line in marked if line.startswith("|")] == [
        "| posterior_mcmc"]
    assert UNMEASURED not in second
    assert "the paper reports ≈ 5 (2 final fits + 3 sweeps)" in report
    # without guesses, no marker; the config that runs on CPUs is printed first
    no_guess = _costed(paper, False, hbart=measured, warmup=measured)
    report = plan_report(no_guess)
    assert UNMEASURED not in report and "the paper reports" not in report
    assert report.index(CPU_SCENARIO) < report.index(GPU_SCENARIO)
