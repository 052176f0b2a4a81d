"""The rule settings of postrisk.workflow.rule_settings: what rules/common.smk writes in a rule's
``input:``, ``params:``, ``threads:`` and ``resources:`` from the planner's rules — patterns
where the jobs share an input shape, else a function of the job's wildcards; constants where
every job of a rule asks for the same, else per job; the one unit (and its paths) of a stage
that is not batched; signatures precomputed for Snakemake.

The rules come from a Planner of a small configuration built here over config.yaml, with cost
entries of its own (margin 1, no per-size terms) so that every request is computed by hand; the
functions are called with Snakemake's own wildcards object, as a run calls them. No Snakemake
run (the dry runs: tests/planning/test_plan.py)."""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import fields
from itertools import product

import pytest
from snakemake.common import get_input_function_aux_params
from snakemake.iocontainers import Wildcards

from postrisk.grid.config import load_config, merge_layers, validate_config
from postrisk.grid.paths import path
from postrisk.planning.cost import Resources
from postrisk.planning.planner import Planner
from postrisk.workflow.rule_settings import (
    RESOURCES,
    inputs_of,
    inputs_of_unit,
    jobs_of,
    per_job,
    resources_of,
    threads_of,
    unit_of,
)

#: Two datasets, GP (exact posterior) and BNN (MCMC, on a GPU: accelerator.use), two noise
#: modes, one coverage, two methods; 2 candidate seeds, 1 valid (the BNN R̂ decides every cell,
#: so the fits read the cell's seed selection); no study runs, no Disentanglement Error run.
SMALL = {"datasets": ["concrete", "diamonds"], "ood_datasets": [], "priors": ["gp", "bnn"],
         "noise_modes": ["homoscedastic", "bump"], "coverages": ["balanced"],
         "methods": ["blr", "gp"], "seeds": {"valid_per_cell": 1, "candidates": 2},
         "accelerator": {"use": True},
         "studies": {"sandbox": {"run": False}, "sn_study": {"run": False},
                     "warmup_check": {"datasets": []}}}
DATASETS, PRIORS, NOISES = SMALL["datasets"], SMALL["priors"], SMALL["noise_modes"]
SEEDS = (0, 1)


def _entry(threads: int, minutes: float, mem_mb: int, **more) -> dict:
    return {"threads": threads, "minutes": minutes, "mem_mb": mem_mb, **more}


#: Cost entries replacing the fitted ones (no term grows with a dataset's rows): a job asks for
#: runtime = ceil(minutes) (margin 1, no job_minutes), memory rounded up to hundreds of MB.
COST = {
    "margin": 1, "job_minutes": 0.0, "min_runtime": 1,
    "posterior": {"default": _entry(2, 1.0, 800), "gp": _entry(2, 1.2, 750),
                  # on a GPU (the BNN's MCMC posterior): these values laid over the entry
                  "bnn": _entry(4, 9.0, 9000, gpu=_entry(1, 2.5, 1999))},
    "fit": {"default": _entry(1, 1.0, 1000), "blr": _entry(1, 0.4, 1000),
            "gp": _entry(3, 2.5, 1450)},
}
#: What each method's fit job asks for (threads, runtime, mem_mb), by hand from COST.
FIT_REQUEST = {"blr": (1, 1, 1000), "gp": (3, 3, 1500)}


@pytest.fixture(scope="module")
def paper(repo):
    return load_config(repo / "config.yaml")


def _planner(paper, group_by: dict) -> Planner:
    cfg = merge_layers([paper, SMALL])
    cfg["cost_model"] = {**cfg["cost_model"], **copy.deepcopy(COST)}  # entries replaced whole
    cfg["group_by"] = group_by
    return Planner(validate_config(cfg))


@pytest.fixture(scope="module")
def per_unit(paper):
    """One job per unit (every stage's default grouping)."""
    return _planner(paper, {})


@pytest.fixture(scope="module")
def batched(paper):
    """Posteriors batched per (dataset, prior), fits per method."""
    return _planner(paper, {"posterior": ["dataset", "prior"], "fit": ["method"]})


def _wildcards(**values) -> Wildcards:
    """The wildcards object Snakemake passes to a rule's functions (values are strings)."""
    return Wildcards(fromdict={k: str(v) for k, v in values.items()})


def _job_wildcards(rule, ident) -> Wildcards:
    return _wildcards(**dict(zip(rule.keys, ident, strict=True)))


def _only(rules, name):
    (rule,) = [r for r in rules if r.name == name]
    return rule


# ---------------------------------------------------------------------------------- per_job

def test_per_job_precomputes_the_signature_snakemake_reads():
    def function(wildcards):
        return wildcards.dataset

    assert inspect.signature(function) is not inspect.signature(function)  # computed per call
    marked = per_job(function)
    assert marked is function and marked(_wildcards(dataset="concrete")) == "concrete"
    # one signature object, looked up rather than recomputed
    assert inspect.signature(marked) is inspect.signature(marked) is marked.__signature__
    assert list(inspect.signature(marked).parameters) == ["wildcards"]
    # Snakemake gives the function only the arguments its signature names
    wc = _wildcards(dataset="concrete")
    candidates = {"wildcards": wc, "input": ["a"], "output": ["b"], "threads": 2,
                  "attempt": 1}
    assert get_input_function_aux_params(marked, candidates) == {"wildcards": wc}
    two = per_job(lambda wildcards, attempt: None)
    assert list(get_input_function_aux_params(two, candidates)) == ["wildcards", "attempt"]


def test_every_per_job_function_carries_its_signature(per_unit, batched):
    made = [jobs_of(batched.stage_rules("posterior")[0]),
            unit_of(per_unit.rule("score")),
            inputs_of(per_unit.stage_rules("fit")[0]),
            inputs_of_unit(per_unit.rule("score"), "tasks"),
            threads_of(per_unit.stage_rules("fit")[0]),
            *resources_of(per_unit.stage_rules("fit")[0]).values()]
    for function in made:
        if callable(function):
            assert function.__signature__ == inspect.signature(function)
            assert list(function.__signature__.parameters) == ["wildcards"]
    assert sum(callable(f) for f in made) == 7  # the fit rule's gpu is a constant


# --------------------------------------------------------------------------------- inputs_of

def test_inputs_of_gives_the_patterns_where_the_jobs_share_an_input_shape(batched):
    exact = _only(batched.stage_rules("posterior"), "posterior_exact")
    assert exact.keys == ("dataset", "prior") and exact.inputs is not None
    patterns = inputs_of(exact)
    assert patterns is exact.inputs  # a list, not a function: no per-job evaluation
    # each job's samples: every cell and seed, the job's dataset and prior left as wildcards
    assert sorted(patterns) == sorted(
        path("sample", dataset="{dataset}", prior="{prior}", noise=n, coverage="balanced",
             seed=s) for n, s in product(NOISES, SEEDS))
    # the patterns, filled with a job's wildcards, are exactly that job's inputs
    assert set(exact.jobs) == {(d, "gp") for d in DATASETS}
    for ident, job in exact.jobs.items():
        wc = dict(zip(exact.keys, ident, strict=True))
        assert [p.format(**wc) for p in patterns] == job.inputs


def test_inputs_of_is_a_function_of_the_job_where_the_shapes_differ(per_unit):
    (fit,) = per_unit.stage_rules("fit")
    assert fit.inputs is None
    inputs = inputs_of(fit)
    assert callable(inputs)
    cond = {"dataset": "diamonds", "prior": "gp", "noise": "bump", "coverage": "balanced"}
    # the condition's candidate samples, then its cell's seed selection (the BNN decides)
    assert inputs(_wildcards(**cond, method="blr")) == [
        *(path("sample", **cond, seed=s) for s in SEEDS),
        path("seed_selection", dataset="diamonds", noise="bump", coverage="balanced")]
    for ident, job in fit.jobs.items():
        assert inputs(_job_wildcards(fit, ident)) == job.inputs


def test_a_batched_jobs_inputs_are_its_units_inputs_without_repeats(batched):
    (fit,) = batched.stage_rules("fit")
    assert fit.keys == ("method",) and fit.inputs is None
    for method in SMALL["methods"]:
        units = [u for u in batched.units["fit"] if u.method == method]
        assert len(units) == len(DATASETS) * len(PRIORS) * len(NOISES)
        every = [p for u in units for p in (*u.samples, *u.selection)]
        got = inputs_of(fit)(_wildcards(method=method))
        # first occurrence order; GP and BNN of one cell share its seed selection
        assert got == list(dict.fromkeys(every)) and len(got) < len(every)
        assert got.count(path("seed_selection", dataset="concrete", noise="bump",
                              coverage="balanced")) == 1


# ----------------------------------------------------------------------------------- jobs_of

def test_jobs_of_gives_each_job_its_units_in_order(per_unit, batched):
    exact = _only(batched.stage_rules("posterior"), "posterior_exact")
    params = jobs_of(exact)
    for dataset in DATASETS:
        want = [u for u in batched.units["posterior"]
                if (u.key.dataset, u.key.prior) == (dataset, "gp")]
        assert len(want) == len(NOISES) * len(SEEDS)
        got = params(_wildcards(dataset=dataset, prior="gp"))
        assert got == want and all(a is b for a, b in zip(got, want, strict=True))
    # one job per unit: the unit the wildcards name, alone
    (fit,) = per_unit.stage_rules("fit")
    for unit in per_unit.units["fit"]:
        assert jobs_of(fit)(_wildcards(**unit.wildcards)) == [unit]


def test_jobs_of_returns_a_fresh_list_each_call(batched):
    (fit,) = batched.stage_rules("fit")
    params, wc = jobs_of(fit), _wildcards(method="gp")
    first = params(wc)
    first.clear()
    assert params(wc) == fit.jobs[("gp",)].units and fit.jobs[("gp",)].units


def test_functions_made_in_a_loop_answer_for_their_own_rule(batched):
    rules = batched.stage_rules("posterior")
    assert [r.name for r in rules] == ["posterior_exact", "posterior_mcmc"]
    made = {r.name: jobs_of(r) for r in rules}  # as the .smk files make them, rule by rule
    for name, prior in (("posterior_exact", "gp"), ("posterior_mcmc", "bnn")):
        got = made[name](_wildcards(dataset="concrete", prior=prior))
        assert {(u.key.dataset, u.key.prior) for u in got} == {("concrete", prior)}
    with pytest.raises(KeyError):  # the BNN's jobs belong to the other rule
        made["posterior_exact"](_wildcards(dataset="concrete", prior="bnn"))


# ----------------------------------------------------------------- unit_of, inputs_of_unit

def test_unit_of_gives_the_one_unit_of_a_stage_that_is_not_batched(per_unit):
    score = per_unit.rule("score")
    units = per_unit.units["score"]
    assert len(units) == len(DATASETS) * len(PRIORS) * len(NOISES)
    for unit in units:
        assert unit_of(score)(_wildcards(**unit.condition._asdict())) is unit
    with pytest.raises(KeyError):  # a condition outside the grid has no job
        unit_of(score)(_wildcards(dataset="concrete", prior="hbart", noise="bump",
                                  coverage="balanced"))


def test_inputs_of_unit_gives_a_path_or_a_list_of_paths(per_unit):
    prior = per_unit.rule("prior")
    covariates = inputs_of_unit(prior, "covariates")
    for d, p in product(DATASETS, PRIORS):
        assert covariates(_wildcards(dataset=d, prior=p)) == path("covariates", dataset=d)

    score = per_unit.rule("score")
    cond = {"dataset": "concrete", "prior": "bnn", "noise": "homoscedastic",
            "coverage": "balanced"}
    tasks = inputs_of_unit(score, "tasks")(_wildcards(**cond))
    assert type(tasks) is list  # a tuple field becomes a list: one input of several files
    assert tasks == [path("task", **cond, seed=s) for s in SEEDS]
    assert inputs_of_unit(score, "fits")(_wildcards(**cond)) == [
        path("fit", **cond, method=m) for m in SMALL["methods"]]
    assert inputs_of_unit(score, "selection")(_wildcards(**cond)) == [
        path("seed_selection", dataset="concrete", noise="homoscedastic", coverage="balanced")]

    valid = per_unit.rule("valid_seeds")
    bnn_tasks = inputs_of_unit(valid, "bnn_tasks")(
        _wildcards(dataset="diamonds", noise="bump", coverage="balanced"))
    assert bnn_tasks == [path("task", dataset="diamonds", prior="bnn", noise="bump",
                              coverage="balanced", seed=s) for s in SEEDS]


# ------------------------------------------------------------------- threads and resources

def test_resources_are_the_request_fields_besides_threads():
    request = [f.name for f in fields(Resources) if f.compare]
    assert request == ["threads", *RESOURCES]


def test_constants_where_every_job_of_a_rule_asks_for_the_same(per_unit):
    exact, mcmc = per_unit.stage_rules("posterior")
    assert (exact.name, mcmc.name) == ("posterior_exact", "posterior_mcmc")
    assert len(exact.jobs) == len(mcmc.jobs) == len(DATASETS) * len(NOISES) * len(SEEDS)
    # GP's exact posterior on CPUs: its entry (1.2 min → 2, 750 MB → 800), no GPU — a 0, not
    # a function (a constant that is falsy is still a constant)
    assert threads_of(exact) == 2
    assert resources_of(exact) == {"runtime": 2, "mem_mb": 800, "gpu": 0}
    # the BNN's MCMC posterior on a GPU: the entry's gpu values (1 thread, 2.5 min, 1999 MB)
    assert threads_of(mcmc) == 1
    assert resources_of(mcmc) == {"runtime": 3, "mem_mb": 2000, "gpu": 1}
    assert list(resources_of(mcmc)) == list(RESOURCES)
    # a rule of one job: its request, as constants
    tables = per_unit.rule("tables")
    (job,) = tables.jobs.values()
    assert threads_of(tables) == job.resources.threads
    assert resources_of(tables) == {r: getattr(job.resources, r) for r in RESOURCES}


def test_per_job_where_the_jobs_of_a_rule_differ(per_unit):
    (fit,) = per_unit.stage_rules("fit")
    threads, resources = threads_of(fit), resources_of(fit)
    assert callable(threads) and callable(resources["runtime"]) and callable(resources["mem_mb"])
    assert resources["gpu"] == 0  # neither method declares an accelerator: a constant
    assert len(fit.jobs) == len(DATASETS) * len(PRIORS) * len(NOISES) * 2
    for ident in fit.jobs:
        wc = _job_wildcards(fit, ident)
        got = (threads(wc), resources["runtime"](wc), resources["mem_mb"](wc))
        assert got == FIT_REQUEST[wc.method], ident


def test_a_batched_jobs_request_is_per_job_too(batched):
    (fit,) = batched.stage_rules("fit")
    threads, resources = threads_of(fit), resources_of(fit)
    n_units = len(DATASETS) * len(PRIORS) * len(NOISES)
    for method, (n_threads, runtime, mem_mb) in FIT_REQUEST.items():
        wc = _wildcards(method=method)
        minutes = COST["fit"][method]["minutes"]
        # the units run one after the other: their minutes add up, the memory is one unit's
        assert threads(wc) == n_threads
        assert resources["runtime"](wc) == math.ceil(n_units * minutes) > runtime
        assert resources["mem_mb"](wc) == mem_mb


def test_a_rule_without_jobs_declares_no_constant(per_unit):
    rule = per_unit.rule("disentanglement")  # this grid's noise modes have no DE run
    assert not rule.jobs
    assert callable(threads_of(rule))  # never None: Snakemake asks only for planned jobs
    assert all(callable(v) for v in resources_of(rule).values())
