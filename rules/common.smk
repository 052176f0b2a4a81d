# Shared by every stage: the library on the path, config validation, the planner, wildcard
# constraints, one-line input functions and the guard against a local full run.
import gc
import inspect
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from postrisk.workflow.session import export_outside_methods, prepare_imports

prepare_imports(workflow.basedir)

from postrisk import grid
# The store schema versions are params of the jobs that write stores, so a store written by
# another version of the code is rebuilt by the next run (a job whose params changed reruns).
from postrisk.core.io import digest
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.covariates.registry import registry as dataset_registry
from postrisk.grid import artefact, path
from postrisk.release import MANIFEST
from postrisk.tasks import TASK_SCHEMA_VERSION

try:
    _validated = grid.validate_config(config)
except grid.ConfigError as err:
    raise WorkflowError(f"invalid configuration: {err}") from None
config.clear()
config.update(_validated)
export_outside_methods(config)

# The planner (postrisk.grid.planner): the conditions, the seed policy, every stage's units of
# work, the rules and jobs that run them, and the catalogue's files, computed once. Batchable
# stages (sample, posterior, fit) get one rule per output shape; the others one rule each.
PLANNER = grid.Planner(config)
GROUPED = {stage: PLANNER.stage_rules(stage) for stage in grid.UNIT_KEYS}
SIMPLE = {stage: PLANNER.rule(stage) for stage in grid.STAGES if stage not in GROUPED}
# The job table lives as long as the run: keep its objects out of the garbage collector's scans
# (on the full grid they would be rescanned at every full collection while Snakemake builds the
# DAG).
gc.freeze()


wildcard_constraints:
    dataset="|".join(dataset_registry()),
    prior="|".join(grid.PRIORS),
    noise="|".join(grid.NOISE_MODES),
    coverage="|".join(grid.COVERAGES),
    seed=r"\d+",
    method="|".join([*grid.METHODS, *config.get("outside_methods", {})]),


def env(family):
    """A job environment (workflow/envs/<family>.yaml, generated from uv.lock)."""
    return f"../workflow/envs/{family}.yaml"


def per_job(function):
    """A rule's function of the job. Snakemake inspects such a function's signature each time
    it calls it (once per job and directive); a precomputed signature turns that into a lookup,
    which matters on the full grid's 10,000 jobs (benchmarks/plan_time.py)."""
    function.__signature__ = inspect.signature(function)
    return function


def jobs_of(rule):
    """A grouped rule's `params.jobs`: the units of the job (postrisk.grid.jobs)."""
    return per_job(lambda wildcards: rule.job(wildcards).payload)


def _per_job(rule, resource):
    """A constant where every job of the rule asks for the same (no function for Snakemake to
    evaluate per job: planning time), else the job's own value."""
    constant = rule.constant(resource)
    if constant is not None:
        return constant
    return per_job(lambda wildcards: getattr(rule.job(wildcards).resources, resource))


def threads_of(rule):
    """A rule's `threads:`: its jobs', from the cost model."""
    return _per_job(rule, "threads")


def resources_of(rule):
    """A rule's `resources:` (runtime in minutes, mem_mb, gpu): its jobs', from the cost model
    and the family's or method's accelerator declaration."""
    return {name: _per_job(rule, name) for name in ("runtime", "mem_mb", "gpu")}


def inputs_of(rule):
    """A grouped rule's `input:`: patterns where its jobs share an input shape, else per job."""
    if rule.inputs is not None:
        return rule.inputs
    return per_job(lambda wildcards: rule.job(wildcards).inputs)


def unit_of(stage):
    """A rule's `params.unit`: the unit of work of one job of a stage that is not batched."""
    return per_job(lambda wildcards: SIMPLE[stage].unit(wildcards))


def inputs_of_unit(stage, field):
    """One input of a stage that is not batched: a field of the job's unit (a path or a tuple
    of paths)."""
    return per_job(lambda wildcards: grid.unit_paths(SIMPLE[stage].unit(wildcards), field))


def path_of(ident):
    """The one file of a catalogue entry without fields (a figure: its PNG)."""
    return artefact(ident).path_of()


def primary_files(*idents):
    """The catalogue entries' files for this configuration (a figure: its PNG only)."""
    return [item.path for item in PLANNER.artefacts(*idents)]


def companion_files(*idents):
    """What the entries write beside their primary files (a figure's PDF)."""
    return [f for item in PLANNER.artefacts(*idents) for f in item.files[1:]]


def stage_tables(stage):
    """The ids of a catalogue stage's tables, in catalogue order."""
    return [a.id for a in grid.stage_artefacts(stage) if a.kind == "table"]


#: The figure stage's output pattern and figures (one job each).
FIGURE_PNG = grid.artefacts.figure_pattern()
FIGURES = grid.artefacts.figure_ids()


def figure_tables(wildcards):
    """The tables one figure reads, by id."""
    reads = artefact(wildcards.name).reads
    return {r: path_of(r) for r in reads if r != grid.artefacts.CONDITION_SCORES}


def figure_scores(wildcards):
    """Every condition's score table, where the figure draws from them."""
    reads = artefact(wildcards.name).reads
    return PLANNER.score_tables() if grid.artefacts.CONDITION_SCORES in reads else []


#: What a release holds: the datasets and (dataset, prior) pairs of the implemented conditions,
#: the catalogue's release files besides the manifest, and the documents it copies from the
#: checkout (named like their release files).
RELEASE_DATASETS = PLANNER.artefact_values()["dataset"]
RELEASE_PAIRS = PLANNER.artefact_values()["dataset,prior"]
RELEASE_FILES = [a.id for a in grid.stage_artefacts("release") if a.id != "release_manifest"]
RELEASE_DOCUMENTS = [artefact(i).file for i in ("release_data_card", "release_citation")]


def all_task_stores(wildcards=None):
    return PLANNER.task_stores()


def all_score_tables(wildcards=None):
    return PLANNER.score_tables()


def all_disentanglement_runs(wildcards=None):
    """One Disentanglement Error experiment per configured (condition, seed, method)."""
    return PLANNER.disentanglement_runs()


def scaling_reference_input(wildcards):
    """Red Wine is scaled with White Wine's constants: its store is an input."""
    ref = grid.covariates_unit(wildcards.dataset).reference
    return {"reference": ref} if ref else {}


def all_targets(wildcards):
    """Everything the configuration asks for; stops a plain local run of a large grid."""
    if workflow.local_exec and not workflow.dryrun:
        message = grid.guard_message(config, PLANNER)
        if message:
            raise WorkflowError(message)
    targets = [path("covariates", dataset=d) for d in PLANNER.covariate_datasets]
    if PLANNER.conditions:
        for stage in ("checks", "tables", "figure", "report"):
            targets += PLANNER.stage_files(stage)
    return targets
