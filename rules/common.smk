# Shared by every stage: the library on the path, config validation, the check of a SLURM run's
# account and partitions, the planner, wildcard constraints, one-line input functions and the
# guard against a local full run.
import gc
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from postrisk.workflow.session import export_outside_methods, prepare_imports

prepare_imports(workflow.basedir)

# The store schema versions are params of the jobs that write stores, so a store written by
# another version of the code is rebuilt by the next run (a job whose params changed reruns).
from postrisk.core.io import digest
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.covariates.registry import registry as dataset_registry
from postrisk.grid import artefacts
from postrisk.grid import study as study_registry
from postrisk.grid.artefact import figure_files
from postrisk.grid.artefacts import artefact
from postrisk.grid.config import ConfigError, read_layers, validate_config
from postrisk.grid.config_methods import check_method_settings
from postrisk.grid.paths import log_path, path
from postrisk.grid.stages import stages, unit_keys
from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS
from postrisk.planning.plan import guard_message
from postrisk.planning.planner import Planner
from postrisk.planning.seeds import known_selections
from postrisk.planning.units import covariates_unit
from postrisk.release import MANIFEST
from postrisk.tasks import TASK_SCHEMA_VERSION
from postrisk.workflow import rule_settings, slurm, slurm_faults, slurm_status
from postrisk.workflow.rule_settings import inputs_of, jobs_of, resources_of, threads_of

# The files the configuration was merged from (config.yaml, then each --configfile): entries
# for outside methods that a later file's `methods` dropped are ignored, not typos.
_layers = read_layers(
    Path(workflow.basedir) / "config.yaml", *workflow.overwrite_configfiles
)
def stop(message):
    """End the run with ``message`` alone on stderr, exit status 1: what the user must fix, not
    the traceback Snakemake adds to an error raised in a Snakefile or an input function."""
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(1)


try:
    _validated = validate_config(config, _layers)
except ConfigError as err:
    stop(f"invalid configuration: {err}")
if not (workflow.remote_exec or workflow.subprocess_exec):  # once per run, not in every job
    try:
        check_method_settings(_validated)
    except ConfigError as err:
        stop(f"invalid configuration: {err}")
config.clear()
config.update(_validated)
export_outside_methods(config.get("outside_methods"))


def slurm_stop(executor=None):
    """Why a SLURM run cannot be submitted as configured (postrisk.workflow.slurm: its account
    or partitions do not resolve), on the submit host; None where nothing stops it. `executor`:
    the executor's name once the workflow knows it (onstart), else judged from the resources
    (the slurm profile's)."""
    if workflow.remote_exec or workflow.subprocess_exec:  # a job: checked where it was submitted
        return None
    settings = workflow.resource_settings
    default = slurm.raw_resources(settings.default_resources)
    overrides = {name: slurm.raw_resources(r) for name, r in settings.overwrite_resources.items()}
    if not slurm.targets_slurm(executor, default, overrides):
        return None
    return slurm.slurm_message(slurm.slurm_problems(default, overrides))


_slurm_stop = slurm_stop()
if _slurm_stop:
    raise WorkflowError(_slurm_stop)


onstart:
    stop = slurm_stop(workflow.executor_plugin.name)
    if stop is None and workflow.executor_plugin.name == slurm.EXECUTOR:
        stop = slurm_status.status_query_problem(**slurm_status.settings_of(workflow))
        # a cancelled job's state, `CANCELLED by <uid>`, read as CANCELLED (the plugin would
        # wait for it forever)
        slurm_status.read_states_as_slurm_names_them()
    if stop:
        raise WorkflowError(stop)


# The planner (postrisk.planning.planner): the conditions, the seed policy, every stage's units of
# work, the rules and jobs that run them, and the catalogue's files, computed once. Batchable
# stages (sample, posterior, fit) get one rule per output shape; the others one rule each. The
# seed selections an earlier invocation wrote (rule seed_selections) restrict the GP and HBART
# posteriors to the valid seeds.
PLANNER = Planner(config, known_selections(config))
GROUPED = {stage: PLANNER.stage_rules(stage) for stage in unit_keys()}
SIMPLE = {stage: PLANNER.rule(stage) for stage in stages() if stage not in GROUPED}


onerror:
    # each job SLURM ended (time limit, memory, cancelled), with what to change (a local run's
    # failures are Snakemake's own messages); `log`: the run's log file(s)
    try:
        logs = [Path(p) for p in ([log] if isinstance(log, (str, Path)) else log or [])]
        executor = getattr(workflow.executor_plugin, "name", None)
        if executor == slurm.EXECUTOR and any(p.exists() for p in logs):
            report = slurm_faults.failure_report(
                "\n".join(p.read_text(errors="replace") for p in logs if p.exists()),
                lambda failure: slurm_faults.request_for(
                    failure, [r for rs in PLANNER.rules.values() for r in rs], PLANNER.cost))
            if report:
                print(report, file=sys.stderr, flush=True)
    except Exception as err:  # the advice must never hide the run's own error
        print(f"(no advice on the failed SLURM jobs: {err!r})", file=sys.stderr, flush=True)


# The job table lives as long as the run: keep its objects out of the garbage collector's scans
# (on the full grid they would be rescanned at every full collection while Snakemake builds the
# DAG).
gc.freeze()


wildcard_constraints:
    dataset="|".join(dataset_registry()),
    prior="|".join(PRIORS),
    noise="|".join(NOISE_MODES),
    coverage="|".join(COVERAGES),
    seed=r"\d+",
    classes=r"\d+",
    method="|".join([*METHODS, *config.get("outside_methods", {})]),


def env(family):
    """A job environment (workflow/envs/<family>.yaml, generated from uv.lock)."""
    return f"../workflow/envs/{family}.yaml"


def unit_of(stage):
    """`params.unit` of a stage that is not batched: the job's unit of work."""
    return rule_settings.unit_of(SIMPLE[stage])


def inputs_of_unit(stage, field):
    """One input of a stage that is not batched: a field of the job's unit."""
    return rule_settings.inputs_of_unit(SIMPLE[stage], field)


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
    return [a.id for a in artefacts.stage_artefacts(stage, kind="table")]


#: The figure stage's output pattern and figures (one job each).
FIGURE_PNG = artefacts.figure_pattern()
FIGURES = artefacts.figure_ids()


def figure_tables(wildcards):
    """The tables one figure reads, by id."""
    reads = artefact(wildcards.name).reads
    return {r: path_of(r) for r in reads if r != artefacts.CONDITION_SCORES}


def figure_scores(wildcards):
    """Every condition's score table, where the figure draws from them."""
    reads = artefact(wildcards.name).reads
    return PLANNER.score_tables() if artefacts.CONDITION_SCORES in reads else []


#: What a release holds: the datasets and (dataset, prior) pairs of the implemented conditions,
#: the catalogue's release files besides the manifest, and the documents it copies from the
#: checkout (named like their release files).
RELEASE_DATASETS = PLANNER.artefact_values()["dataset"]
RELEASE_PAIRS = PLANNER.artefact_values()["dataset,prior"]
RELEASE_FILES = [a.id for a in artefacts.stage_artefacts("release") if a.id != "release_manifest"]
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
    ref = covariates_unit(wildcards.dataset).reference
    return {"reference": ref} if ref else {}


def summary_threads(rule):
    """A study summary's threads: its planned job's, or (a study that does not run here, built
    on request) the cost model's."""
    if rule.jobs:
        return threads_of(rule)
    return PLANNER.cost.stage_resources(rule.stage).threads


def summary_resources(rule):
    """A study summary's resources, as :func:`summary_threads`."""
    if rule.jobs:
        return resources_of(rule)
    res = PLANNER.cost.stage_resources(rule.stage)
    return {"runtime": res.runtime, "mem_mb": res.mem_mb, "gpu": 0}


def all_targets(wildcards):
    """Everything the configuration asks for; stops a plain local run of a large grid."""
    if workflow.local_exec and not workflow.dryrun:
        message = guard_message(config, PLANNER)
        if message:
            stop(message)
    targets = [path("covariates", dataset=d) for d in PLANNER.covariate_datasets]
    if PLANNER.conditions:
        for stage in ("checks", "tables", "figure", "report"):
            targets += PLANNER.stage_files(stage)
    return targets + PLANNER.family_files() + PLANNER.study_files()
