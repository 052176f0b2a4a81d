"""Where every store and per-unit file of the workflow lives: one template per kind of file,
and where each job's log and benchmark go.

The workflow's rules, the command line and the tests build paths from these templates and
nowhere else; the tables, figures, pages and release files (one file per run, or per prior) are
declared in :mod:`postrisk.grid.artefacts`. A template's fields are the keys of what the file
holds: ``{dataset}``, ``{prior}``, ``{noise}``, ``{coverage}``, ``{seed}``, ``{method}``,
``{factor}`` (a study's multiple of a setting).
Formatting a template with a field's own wildcard text (``dataset="{dataset}"``) leaves that
wildcard for Snakemake.
"""

from __future__ import annotations

from postrisk.tasks.key import KEY_COLUMNS, Condition

RESULTS = "results"

TEMPLATES: dict[str, str] = {
    "covariates": "covariates/{dataset}.zarr",
    "covariates_verification": "covariates/verification/{dataset}.json",
    "prior": "priors/{dataset}/{prior}.json",
    "sample": "samples/{dataset}/{prior}/{noise}/{coverage}/{seed}.zarr",
    "task": "tasks/{dataset}/{prior}/{noise}/{coverage}/{seed}.zarr",
    "seed_selection": "checks/seeds/{dataset}/{noise}/{coverage}.json",
    "fit": "fits/{dataset}/{prior}/{noise}/{coverage}/{method}.zarr",
    "tuning_result": "tuning/{dataset}/{prior}/{noise}/{coverage}/{method}.json",
    "tuning_journal": "tuning/journals/{dataset}/{prior}/{noise}/{coverage}/{method}.log",
    "scores": "scores/{dataset}/{prior}/{noise}/{coverage}.csv",
    "disentanglement": "disentanglement/{dataset}/{prior}/{noise}/{coverage}/{seed}/{method}.csv",
    # the HBART warm-up study: an instance's reference posterior rebuilt with `factor` × the
    # warm-up (a task store like the benchmark's)
    "warmup_task": ("studies/warmup_check/x{factor}/{dataset}/{prior}/{noise}/{coverage}/"
                    "{seed}.zarr"),
    # the OOD study: one method refitted on a condition's instances and asked at their query
    # rows against the study's OOD set
    "ood_fit": "studies/ood_proxy/fits/{dataset}/{prior}/{noise}/{coverage}/{method}.zarr",
    # the SN study: one network method's three arms (plain, SN, WD) on a condition's
    # instances, one row per (seed, arm); the arms' configurations and sweeps; the sweeps'
    # journals (one per arm: the prefix, then ".<arm>.log")
    "sn_fit": "studies/sn_study/fits/{dataset}/{prior}/{noise}/{coverage}/{method}.csv",
    "sn_tuning": "studies/sn_study/tuning/{dataset}/{prior}/{noise}/{coverage}/{method}.json",
    "sn_journal": "studies/sn_study/tuning/journals/{dataset}/{prior}/{noise}/{coverage}/{method}",
}

#: Every key a template may use, each matching itself as a Snakemake wildcard.
WILDCARDS = {key: "{" + key + "}" for key in (*KEY_COLUMNS, "method", "factor")}


def path(kind: str, root: str = RESULTS, **keys: object) -> str:
    """The path of one file of ``kind``; ``keys`` fill the template's fields.

    A field left out keeps its Snakemake wildcard (``path("sample", prior="gp")`` is the
    pattern of every GP sample store).
    """
    if kind not in TEMPLATES:
        raise KeyError(f"unknown output kind {kind!r}; known: {', '.join(TEMPLATES)}")
    return f"{root}/" + TEMPLATES[kind].format(**{**WILDCARDS, **keys})


def condition_path(condition: Condition, kind: str, **keys: object) -> str:
    """The path of ``condition``'s file of ``kind`` (``seed=``, ``method=`` as needed)."""
    return path(kind, **condition._asdict(), **keys)


def _fields(keys: tuple[str, ...], sep: str) -> str:
    return sep.join("{" + k + "}" for k in keys)


def log_path(stage: str, keys: tuple[str, ...] = ()) -> str:
    """The log of a job of ``stage`` named by the wildcards ``keys`` (none: the stage's one
    job)."""
    if not keys:
        return f"{RESULTS}/logs/{stage}.log"
    return f"{RESULTS}/logs/{stage}/{_fields(keys, '/')}.log"


def benchmark_path(stage: str, keys: tuple[str, ...] = ()) -> str:
    """The benchmark file of a job of ``stage`` (``benchmarks/demo_budget.py`` sums a stage's
    files by their folder)."""
    return f"{RESULTS}/benchmarks/{stage}/{_fields(keys, '_') if keys else stage}.tsv"
