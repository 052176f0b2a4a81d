"""Where every store and per-unit file of the workflow lives: one template per kind of file,
and where each job's log and benchmark go.

The workflow's rules, the command line and the tests build paths from these templates and
nowhere else; the tables, figures, pages and release files (one file per run, or per prior) are
declared in :mod:`postrisk.grid.artefacts`. A template's fields are the keys of what the file
holds: ``{dataset}``, ``{prior}``, ``{noise}``, ``{coverage}``, ``{seed}``, ``{method}``,
``{factor}`` (a study's multiple of a setting), ``{classes}`` (a task's number of classes). The
studies declare their own kinds (:mod:`postrisk.grid.study`), each under ``studies/<study>/``;
the task families' pipelines under ``families/<family>/``.
Formatting a template with a field's own wildcard text (``dataset="{dataset}"``) leaves that
wildcard for Snakemake.
"""

from __future__ import annotations

from postrisk.grid.study import studies
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
}

#: Every key a template may use, each matching itself as a Snakemake wildcard.
WILDCARDS = {key: "{" + key + "}" for key in (*KEY_COLUMNS, "method", "factor", "classes")}


def path(kind: str, root: str = RESULTS, **keys: object) -> str:
    """The path of one file of ``kind``; ``keys`` fill the template's fields.

    A field left out keeps its Snakemake wildcard (``path("sample", prior="gp")`` is the
    pattern of every GP sample store).
    """
    template = TEMPLATES.get(kind)  # the benchmark's: no registry lookup on the full grid
    if template is None:
        known = templates()
        if kind not in known:
            raise KeyError(f"unknown output kind {kind!r}; known: {', '.join(known)}")
        template = known[kind]
    return f"{root}/" + template.format(**{**WILDCARDS, **keys})


def templates() -> dict[str, str]:
    """Every kind of file: the benchmark's (:data:`TEMPLATES`), then each registered study's
    (under ``studies/<study>/``)."""
    out = dict(TEMPLATES)
    for study in studies():
        for kind, template in study.templates.items():
            if kind in out or not kind.startswith(f"{study.name}_"):
                raise KeyError(f"study {study.name!r}: its file kind {kind!r} must be new and "
                               f"named {study.name}_<what>")
            home = f"{study.section}/{study.name}/"
            if not template.startswith(home):
                raise KeyError(f"study {study.name!r}: its file kind {kind!r} must live under "
                               f"{home}, not {template}")
            out[kind] = template
    return out


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
