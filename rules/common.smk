# Shared by every stage: config validation, wildcard constraints, input functions, the guard.
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

_SRC = str(Path(workflow.basedir) / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
# Jobs (local, conda or cluster) import the library from this checkout.
_INHERITED = [p for p in os.getenv("PYTHONPATH", "").split(os.pathsep) if p and p != _SRC]
os.environ.update(PYTHONPATH=os.pathsep.join([_SRC, *_INHERITED]))
# JAX jobs share compiled kernels across processes (persistent compilation cache).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path("resources/jax_cache").resolve()))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
# Several JAX jobs may share one GPU: allocate on demand rather than 75% of it up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from postrisk import config as pr_config
# The store schema versions are params of the jobs that write stores, so a store written by
# another version of the code is rebuilt by the next run (a job whose params changed reruns).
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.tasks import TASK_SCHEMA_VERSION
from postrisk.covariates.registry import registry as dataset_registry

try:
    _validated = pr_config.validate_config(config)
except pr_config.ConfigError as err:
    raise WorkflowError(f"invalid configuration: {err}") from None
config.clear()
config.update(_validated)

COVARIATE_DATASETS = pr_config.covariate_datasets(config)
IMPLEMENTED_PRIORS = pr_config.implemented_priors(config)
IMPLEMENTED_METHODS = pr_config.implemented_methods(config)
CONDITIONS = pr_config.implemented_conditions(config)
TASK_SEEDS = pr_config.task_seeds(config)


wildcard_constraints:
    dataset="|".join(dataset_registry()),
    prior="|".join(pr_config.PRIORS),
    noise="|".join(pr_config.NOISE_MODES),
    coverage="|".join(pr_config.COVERAGES),
    seed=r"\d+",
    method="|".join(pr_config.METHODS + pr_config.REFERENCE_ROWS),


def covariate_store(dataset):
    return f"results/covariates/{dataset}.zarr"


def covariate_store_of(wildcards):
    return covariate_store(wildcards.dataset)


def prior_settings(wildcards):
    return config[f"{wildcards.prior}_prior"]


def posterior_settings(wildcards):
    return config["posterior"][wildcards.prior]


def batch_instances(prior):
    """(noise, coverage, seed) of every instance of a batch of `prior`, in batch order."""
    cells = sorted({(n, c) for _, p, n, c in CONDITIONS if p == prior})
    return [[n, c, s] for n, c in cells for s in TASK_SEEDS]


def batch_paths(kind, dataset, prior):
    """Sample or task stores of every instance of (dataset, prior): one batch job's outputs."""
    return [f"results/{kind}/{dataset}/{prior}/{n}/{c}/{s}.zarr"
            for n, c, s in batch_instances(prior)]


def sample_digest(prior):
    """Digest of the config sections that determine a sample store of `prior`."""
    return pr_config.config_digest(config, prior)


def training_size_of(wildcards):
    return pr_config.training_size(wildcards.dataset, config["sizes"].get("n_cap"))


def condition_path(w):
    return f"{w.dataset}/{w.prior}/{w.noise}/{w.coverage}"


def cell_has_bnn(w):
    """Whether the cell (dataset, noise, coverage) has BNN instances, whose R̂ decides validity."""
    return (w.dataset, "bnn", w.noise, w.coverage) in CONDITIONS


def condition_seeds(wildcards):
    """Seeds a condition's fits may use: every candidate where the BNN R̂ rule decides at run
    time (the cell's seed file), else the first `valid_per_cell` (SPEC §8)."""
    return TASK_SEEDS if cell_has_bnn(wildcards) else \
        TASK_SEEDS[: config["seeds"]["valid_per_cell"]]


def seed_selection(wildcards):
    """The cell's valid-seed file when its BNN instances decide validity; else nothing."""
    if cell_has_bnn(wildcards):
        return [f"results/checks/seeds/{wildcards.dataset}/{wildcards.noise}/"
                f"{wildcards.coverage}.json"]
    return []


def cell_bnn_tasks(wildcards):
    return [f"results/tasks/{wildcards.dataset}/bnn/{wildcards.noise}/{wildcards.coverage}/"
            f"{s}.zarr" for s in TASK_SEEDS]


def condition_samples(wildcards):
    return [f"results/samples/{condition_path(wildcards)}/{s}.zarr"
            for s in condition_seeds(wildcards)]


def condition_tasks(wildcards):
    return [f"results/tasks/{condition_path(wildcards)}/{s}.zarr"
            for s in condition_seeds(wildcards)]


def condition_fits(wildcards):
    return [f"results/fits/{condition_path(wildcards)}/{m}.zarr" for m in IMPLEMENTED_METHODS]


def method_settings(wildcards):
    return config.get("method_settings", {}).get(wildcards.method, {})


def condition_of(wildcards):
    return (wildcards.dataset, wildcards.prior, wildcards.noise, wildcards.coverage)


def tuning_journal(wildcards):
    return f"results/tuning/journals/{condition_path(wildcards)}/{wildcards.method}.log"


def tuning_settings(wildcards):
    """The sweep settings when (method, condition) is tuned; None: fixed settings/defaults."""
    if pr_config.is_tuned(config, wildcards.method, condition_of(wildcards)):
        return config["tuning"]
    return None


def fit_batch_jobs(method):
    """Per-condition arguments of a batched fit (`fit_batch: true`): one entry per condition,
    in the order of CONDITIONS."""
    from types import SimpleNamespace

    jobs = []
    for d, p, n, c in CONDITIONS:
        w = SimpleNamespace(dataset=d, prior=p, noise=n, coverage=c, method=method)
        path = condition_path(w)
        jobs.append({"samples": condition_samples(w), "seeds": condition_seeds(w),
                     "selection": seed_selection(w), "settings": method_settings(w),
                     "tuning": tuning_settings(w), "journal": tuning_journal(w),
                     "condition": [d, p, n, c],
                     "fits": f"results/fits/{path}/{method}.zarr",
                     "config": f"results/tuning/{path}/{method}.json"})
    return jobs


def fit_batch_inputs(method):
    return sorted({path for job in fit_batch_jobs(method)
                   for key in ("samples", "selection") for path in job[key]})


def all_task_stores(wildcards=None):
    return [f"results/tasks/{d}/{p}/{n}/{c}/{s}.zarr"
            for d, p, n, c in CONDITIONS for s in TASK_SEEDS]


def all_score_tables(wildcards=None):
    return [f"results/scores/{d}/{p}/{n}/{c}.csv" for d, p, n, c in CONDITIONS]


def scaling_reference_input(wildcards):
    """Red Wine is scaled with White Wine's constants: its store is an input."""
    ref = dataset_registry()[wildcards.dataset].scaling_reference
    return {"reference": covariate_store(ref)} if ref else {}


def fetch_params(wildcards):
    cov = config["covariates"]
    return {
        "prefer_offline_package": cov.get("prefer_offline_package", False),
        "raw_dir": cov.get("raw_dir", "resources/raw"),
        "retries": cov.get("fetch_retries", 3),
        "timeout_s": cov.get("fetch_timeout_s", 30),
    }


def all_targets(wildcards):
    """Everything the configuration asks for; stops a plain local run of a large grid."""
    if workflow.local_exec and not workflow.dryrun:
        message = pr_config.guard_message(config)
        if message:
            raise WorkflowError(message)
    targets = [covariate_store(d) for d in COVARIATE_DATASETS]
    if CONDITIONS:
        targets += ["results/checks/table3.csv", "results/tables/scores.csv"]
    return targets
