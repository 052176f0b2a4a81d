"""The planner (postrisk.planning.planner.Planner): what it holds for one configuration (its
conditions, seed policy, units and rules), how it reads YAML files and known seed selections,
and what it derives from them — job counts, task stores, score tables, Disentanglement runs, the
catalogue's files, the studies that run and what their summaries read, the instances per method.

Expectations come from small configurations built here over config.yaml (the grid as the
product of their lists, paths written out), never from a preset's counts. How units are
enumerated is tests/planning/test_units.py; how jobs are grouped and sized,
tests/planning/test_jobs.py."""

from __future__ import annotations

from itertools import product

import pytest
import yaml

from postrisk.grid.artefacts import ArtefactFile, artefact, catalogue, figure_ids
from postrisk.grid.config import load_config
from postrisk.grid.stages import is_batched, stages
from postrisk.planning.cost import CostModel
from postrisk.planning.planner import Planner
from postrisk.planning.seeds import SeedPolicy
from postrisk.planning.units import stage_units
from postrisk.tasks.key import Condition
from tests.planning.helpers import SMALL, mcmc_merged
from tests.planning.helpers import small_config as _config

# SMALL, the small grid over config.yaml these tests build on, and ``_config`` (SMALL merged
# over config.yaml, then layers over it): tests/planning/helpers.py, shared with test_units.py.

#: Its cells, as the workflow orders them within a prior and a dataset (sorted).
CELLS = sorted(product(SMALL["noise_modes"], SMALL["coverages"]))


@pytest.fixture(scope="module")
def paper(repo):
    return load_config(repo / "config.yaml")


@pytest.fixture(scope="module")
def small(paper):
    """SMALL's planner, built once for this file (tests only read it)."""
    return Planner(_config(paper))


def _grid(cfg) -> list[Condition]:
    return [Condition(*c) for c in product(cfg["datasets"], cfg["priors"], cfg["noise_modes"],
                                           cfg["coverages"])]


def _task(d, p, n, c, s, root="results") -> str:
    return f"{root}/tasks/{d}/{p}/{n}/{c}/{s}.zarr"


# ------------------------------------------------------------------------- what it holds

def test_the_planner_holds_the_configurations_grid_seeds_and_units(paper):
    cfg = _config(paper, {"priors": ["bnn", "gp"], "ood_datasets": ["red_wine"],
                          "prior_grid": {"gp": {"datasets": ["diamonds"]}}})
    planner = Planner(cfg)
    assert planner.config is cfg
    assert planner.priors == ["bnn", "gp"]  # the configured order
    assert planner.methods == ["blr", "gp"]
    assert planner.conditions == [c for c in _grid(cfg)
                                  if c.prior == "bnn" or c.dataset == "diamonds"]
    assert planner.covariate_datasets == ["concrete", "diamonds", "red_wine", "white_wine"]
    assert planner.seeds.task_seeds == [0, 1, 2] and planner.seeds.selections == {}
    assert planner.units == stage_units(cfg, SeedPolicy(cfg))
    assert list(planner.rules) == list(stages())
    assert planner.cost == CostModel.of(cfg)


def test_from_files_merges_the_files_in_order(repo, tmp_path):
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text(yaml.safe_dump(SMALL))
    one = tmp_path / "one_method.yaml"
    one.write_text(yaml.safe_dump({"methods": ["gp"]}))
    planner = Planner.from_files(repo / "config.yaml", narrow, one)
    assert planner.config == load_config(repo / "config.yaml", narrow, one)
    assert planner.config["datasets"] == SMALL["datasets"] and planner.methods == ["gp"]
    assert {u.method for u in planner.units["fit"]} == {"gp"}
    # the later file wins: the other order keeps SMALL's methods
    assert Planner.from_files(repo / "config.yaml", one, narrow).methods == ["blr", "gp"]


def test_known_selections_reach_the_units_and_the_task_stores(paper, small):
    cell = ("diamonds", "bump", "ood")
    planner = Planner(small.config, {cell: [2, 0]})
    assert planner.seeds.selections == {cell: (2, 0)}
    got = {}
    for u in planner.units["posterior"]:
        got.setdefault(u.key.condition, []).append(u.key.seed)
    # GP and HBART of that cell on its valid seeds only; its BNN and every other cell on all
    assert got == {c: ([0, 2] if c.cell == cell and c.prior != "bnn" else [0, 1, 2])
                   for c in _grid(small.config)}
    assert planner.units["sample"] == small.units["sample"]
    assert planner.units["fit"] == small.units["fit"]
    counts, before = mcmc_merged(planner.job_counts()), mcmc_merged(small.job_counts())
    assert before["posterior_exact"] - counts["posterior_exact"] == 1  # GP: seed 1
    assert before["posterior_mcmc"] - counts["posterior_mcmc"] == 1  # HBART: seed 1
    assert len(small.task_stores()) - len(planner.task_stores()) == 2
    assert _task("diamonds", "gp", "bump", "ood", 1) not in planner.task_stores()
    assert _task("diamonds", "bnn", "bump", "ood", 1) in planner.task_stores()


# ----------------------------------------------------------------------------- rules, jobs

def test_job_counts_are_one_job_per_unit_of_every_rule_that_has_jobs(small):
    # 2 datasets × 4 cells × 3 priors = 24 conditions, 3 seeds each (BNN decides every cell)
    assert mcmc_merged(small.job_counts()) == {
        "covariates": 2, "prior": 2 * 3, "sample": 24 * 3,
        "posterior_exact": 8 * 3, "posterior_mcmc": 16 * 3,  # GP exact; HBART and BNN MCMC
        "valid_seeds": 8, "checks": 1, "fit": 2 * 24, "score": 24, "tables": 1,
        "figure": len(figure_ids()), "report": 1}  # no DE run, no study: no rule of theirs
    assert sum(small.job_counts().values()) == sum(
        len(r.jobs) for rules in small.rules.values() for r in rules)


def test_job_counts_follow_the_grouping(paper):
    grouped = Planner(_config(paper, {"group_by": {"sample": ["dataset", "prior"],
                                                   "fit": ["method"]}}))
    counts = grouped.job_counts()
    assert counts["sample"] == 2 * 3 and counts["fit"] == 2
    assert counts["posterior_exact"] == 8 * 3  # not grouped: one job per instance


def test_rule_is_the_one_rule_of_a_stage_that_is_not_batched(small):
    for stage in stages():
        assert small.stage_rules(stage) is small.rules[stage]
        if is_batched(stage):
            with pytest.raises(KeyError, match=f"stage '{stage}' is batched.*stage_rules"):
                small.rule(stage)
        else:
            (only,) = small.rules[stage]
            assert small.rule(stage) is only and only.name == stage
    names = [r.name for r in small.stage_rules("posterior")]
    assert names[:2] == ["posterior_exact", "posterior_mcmc"]
    assert all(name == "posterior_mcmc_cpu" for name in names[2:])
    with pytest.raises(KeyError):
        small.rule("no_such_stage")


# ------------------------------------------------------------------------------- its files

def test_task_stores_condition_by_condition_seed_by_seed(small):
    want = [_task(*c, s) for c in _grid(small.config) for s in range(3)]
    assert small.task_stores() == want
    assert small.task_stores("elsewhere") == [w.replace("results/", "elsewhere/", 1)
                                              for w in want]
    # the same stores as the posteriors write, in another order (prior by prior)
    assert sorted(small.task_stores()) == sorted(u.out for u in small.units["posterior"])


def test_score_tables_and_disentanglement_runs_are_their_units_outputs(paper, small):
    assert small.score_tables() == [f"results/scores/{d}/{p}/{n}/{c}.csv"
                                    for d, p, n, c in _grid(small.config)]
    assert small.disentanglement_runs() == []
    de = Planner(_config(paper, {"disentanglement": {
        "grid": {"datasets": ["diamonds"], "priors": ["gp"], "noise_modes": ["bump"],
                 "coverages": ["balanced"]}, "seeds": [1, 0], "methods": None}}))
    assert de.disentanglement_runs() == [
        f"results/disentanglement/diamonds/gp/bump/balanced/{s}/{m}.csv"
        for m in ("blr", "gp") for s in (1, 0)]
    assert de.disentanglement_runs() == [u.out for u in de.units["disentanglement"]]


def test_artefacts_expand_over_the_implemented_conditions(paper):
    cfg = _config(paper, {"datasets": ["diamonds", "concrete"], "priors": ["hbart", "gp"],
                          "prior_grid": {"hbart": {"datasets": ["diamonds"]}}})
    planner = Planner(cfg)
    pairs = [("concrete", "gp"), ("diamonds", "gp"), ("diamonds", "hbart")]
    # priors in the configured order; datasets and (dataset, prior) pairs sorted
    assert planner.artefact_values() == {"prior": ["hbart", "gp"],
                                         "dataset": ["concrete", "diamonds"],
                                         "dataset,prior": pairs}
    release = planner.artefacts("release_instances")
    assert release == planner.artefacts(artefact("release_instances"))  # an id or an entry
    assert [f.path for f in release] == [f"results/release/{d}_{p}.zip" for d, p in pairs]
    assert [f.keys for f in release] == [(("dataset", d), ("prior", p)) for d, p in pairs]
    # several entries, in the order given, each expanded
    assert planner.artefact_files("table3", "release_dataset", root="out") == [
        "out/checks/table3.csv", "out/release/concrete_dataset.zip",
        "out/release/diamonds_dataset.zip"]
    # a stage's files, of one kind: a figure is its PNG and its PDF
    assert planner.stage_files("checks", "out", kind="figure") == [
        f"out/figures/rank_histograms{p}.{ext}" for p in ("", "_hbart", "_gp")
        for ext in ("png", "pdf")]
    assert planner.stage_files("checks", kind="table") == [
        f"results/{a.path}" for a in catalogue() if a.stage == "checks" and a.kind == "table"]
    assert set(planner.stage_files("checks")) == set(
        planner.stage_files("checks", kind="table") + planner.stage_files("checks", kind="figure"))


# --------------------------------------------------------------------------- the studies

def _warmup(paper, *layers):
    """SMALL with the warm-up check on Concrete's HBART instances at 2× and 3× the warm-up."""
    return Planner(_config(paper, {"studies": {"warmup_check": {
        "prior": "hbart", "datasets": ["concrete"], "factors": [2, 3]}}}, *layers))


def test_no_study_runs_where_none_has_units(small):
    assert small.studies() == [] and small.running_studies() == []
    assert small.study_files() == [] and small.study_contents() == []
    assert not small.rule("studies_report").jobs


def test_studies_run_where_their_first_stage_has_units_in_page_order(paper):
    planner = _warmup(paper, {"studies": {"sandbox": {"run": True}}})
    assert planner.studies() == ["warmup_check", "sandbox"]
    assert [s.name for s in planner.running_studies()] == planner.studies()
    assert planner.study_files("out") == [*planner.stage_files("warmup_check", "out"),
                                          *planner.stage_files("sandbox", "out"),
                                          *planner.stage_files("studies_report", "out")]
    assert "out/studies/index.html" in planner.study_files("out")
    # the studies' page shows their shown tables and figures, the report none of them
    shown = [a for a in catalogue() if a.shown and a.kind in ("table", "figure")]
    assert planner.study_contents() == [
        ArtefactFile(a, f"results/{a.path}") for a in shown
        if a.stage in ("warmup_check", "sandbox")]
    assert planner.study_contents()
    running = {"warmup_check", "sandbox"}
    assert not any(f.entry.stage in running for f in planner.report_contents())
    report = planner.report_contents()
    assert list(dict.fromkeys(f.entry.id for f in report)) == [
        a.id for a in shown if a.stage not in ("warmup_check", "ood_proxy", "sandbox",
                                               "sn_study", "classification")]
    assert [f.path for f in report if f.entry.id == "rank_histograms_prior"] == [
        f"results/figures/rank_histograms_{p}.png" for p in ("gp", "hbart", "bnn")]
    only_sandbox = Planner(_config(paper, {"studies": {"sandbox": {"run": True}}}))
    assert only_sandbox.studies() == ["sandbox"]


def test_study_inputs_are_what_the_summary_reads(paper):
    planner = _warmup(paper)
    inputs = planner.study_inputs("warmup_check")
    keys = [(n, c, s) for n, c in CELLS for s in range(3)]  # Concrete's HBART instances
    assert inputs == {
        "tasks": [_task("concrete", "hbart", n, c, s) for n, c, s in keys for _ in (2, 3)],
        "warmup": [f"results/studies/warmup_check/x{f}/concrete/hbart/{n}/{c}/{s}.zarr"
                   for n, c, s in keys for f in (2, 3)]}
    assert all(isinstance(v, list) for v in inputs.values())
    assert planner.study_inputs("sandbox") == {}  # it declares no inputs
    with pytest.raises(KeyError, match="unknown study 'no_such_study'"):
        planner.study_inputs("no_such_study")


# ------------------------------------------------------------------- instances per method

def test_instances_per_method_are_its_conditions_valid_seeds(paper):
    planner = Planner(_config(paper, {"methods": ["gp", "blr"],
                                      "method_grid": {"gp": {"coverages": ["balanced"]}}}))
    # valid_per_cell = 2 on each condition fitted: GP on the 12 balanced of 24, BLR on all
    per_method = planner.instances_per_method()
    assert per_method == {"gp": 2 * 12, "blr": 2 * 24}
    assert list(per_method) == ["gp", "blr"]
