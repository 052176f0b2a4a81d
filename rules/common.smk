# Shared by every stage: config validation, wildcard constraints, input functions, the guard.
import gc
import inspect
import json
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

_SRC = str(Path(workflow.basedir) / "src")
# Outside methods (`module:Class` in `methods`) import from the working directory or the
# checkout (its examples/), or from an installed package.
_IMPORTABLE = [_SRC, os.getcwd(), str(Path(workflow.basedir))]
for _path in reversed(_IMPORTABLE):
    if _path not in sys.path:
        sys.path.insert(0, _path)
# Jobs (local, conda or cluster) import the library from this checkout.
_INHERITED = [p for p in os.getenv("PYTHONPATH", "").split(os.pathsep)
              if p and p not in _IMPORTABLE]
os.environ.update(PYTHONPATH=os.pathsep.join([*_IMPORTABLE, *_INHERITED]))
# JAX jobs share compiled kernels across processes (persistent compilation cache).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path("resources/jax_cache").resolve()))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# Several JAX jobs may share one GPU: allocate on demand rather than 75% of it up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from postrisk import grid
# The store schema versions are params of the jobs that write stores, so a store written by
# another version of the code is rebuilt by the next run (a job whose params changed reruns).
from postrisk.core.io import digest
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.covariates.registry import registry as dataset_registry
from postrisk.grid import path
from postrisk.tasks import TASK_SCHEMA_VERSION

try:
    _validated = grid.validate_config(config)
except grid.ConfigError as err:
    raise WorkflowError(f"invalid configuration: {err}") from None
config.clear()
config.update(_validated)
# The jobs learn the outside methods (name -> location, search space) from the environment.
from postrisk.methods.registry import OUTSIDE_ENV

os.environ[OUTSIDE_ENV] = json.dumps(config.get("outside_methods", {}))

# The planner (postrisk.grid.planner): the conditions, the seed policy, every stage's units of
# work and the rules and jobs that run them, computed once. Batchable stages (sample, posterior,
# fit) get one rule per output shape; the others one rule each.
PLANNER = grid.Planner(config)
CONDITIONS = PLANNER.conditions
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


def covariate_store_of(wildcards):
    return path("covariates", dataset=wildcards.dataset)


def prior_settings(wildcards):
    return config[f"{wildcards.prior}_prior"]


def all_task_stores(wildcards=None):
    return PLANNER.task_stores()


def all_score_tables(wildcards=None):
    return PLANNER.score_tables()


def evaluation_tables():
    """The evaluation tables the aggregation writes beside the mean-ρ table."""
    return [path("evaluation_table", name=n) for n in grid.EVALUATION_TABLES]


def pdf_of(png):
    """The PDF written beside a figure's PNG."""
    return png[: -len(".png")] + ".pdf"


def report_figures():
    """The report's figures, PNG and PDF."""
    pngs = [path("figure", name=n) for n in grid.REPORT_FIGURES]
    return pngs + [pdf_of(p) for p in pngs]


def rank_histogram_figures():
    """The rank histograms of the implemented families (one PNG each)."""
    return [path("rank_histogram_family", prior=p) for p in PLANNER.priors]


def all_disentanglement_runs(wildcards=None):
    """One Disentanglement Error experiment per configured (condition, seed, method)."""
    return PLANNER.disentanglement_runs()


def scaling_reference_input(wildcards):
    """Red Wine is scaled with White Wine's constants: its store is an input."""
    ref = dataset_registry()[wildcards.dataset].scaling_reference
    return {"reference": path("covariates", dataset=ref)} if ref else {}


def fetch_params(wildcards):
    cov = config["covariates"]
    return {
        "prefer_offline_package": cov.get("prefer_offline_package", False),
        "raw_dir": cov.get("raw_dir", "resources/raw"),
        "retries": cov.get("fetch_retries", 3),
        "timeout_s": cov.get("fetch_timeout_s", 30),
    }


#: Documents every release carries, from the repository's root.
RELEASE_DOCUMENTS = ("DATA_CARD.md", "CITATION.cff")
#: The configuration's digest, recorded in a release's manifest.
RELEASE_CONFIG_DIGEST = digest(config)


def release_datasets():
    """The datasets a release holds: those with an implemented condition."""
    return sorted({c.dataset for c in CONDITIONS})


def release_covariate_stores():
    return [path("covariates", dataset=d) for d in release_datasets()]


def release_prior_files():
    """Each (dataset, prior)'s fitted prior settings (scale constant, kernel)."""
    pairs = sorted({(c.dataset, c.prior) for c in CONDITIONS})
    return [path("prior", dataset=d, prior=p) for d, p in pairs]


def release_files():
    """The files of a release besides its manifest: one per (dataset, prior), one per dataset,
    and the documents."""
    from postrisk.release import dataset_file, instances_file

    pairs = sorted({(c.dataset, c.prior) for c in CONDITIONS})
    names = [instances_file(d, p) for d, p in pairs]
    names += [dataset_file(d) for d in release_datasets()]
    names += [os.path.basename(d) for d in RELEASE_DOCUMENTS]
    return [path("release_file", name=n) for n in names]


def all_targets(wildcards):
    """Everything the configuration asks for; stops a plain local run of a large grid."""
    if workflow.local_exec and not workflow.dryrun:
        message = grid.guard_message(config, PLANNER)
        if message:
            raise WorkflowError(message)
    targets = [path("covariates", dataset=d) for d in PLANNER.covariate_datasets]
    if CONDITIONS:
        targets += [path("table3"), path("score_table")]
    return targets
