"""A SLURM run's settings, checked on the submit host before anything is submitted.

``snakemake --profile profiles/slurm`` gives every job the profile's ``default-resources`` and
``set-resources``; the slurm executor plugin turns ``slurm_account`` into ``sbatch -A`` and
``slurm_partition`` into ``-p``. Snakemake expands environment variables in such a value only
when it evaluates it for a job, and leaves an unset one as it is: without ``SLURM_ACCOUNT``
every job would be submitted with ``-A ${SLURM_ACCOUNT}``, and an empty one makes the plugin
guess an account. :func:`slurm_problems` resolves the values as Snakemake does and says what to
set; ``rules/common.smk`` stops with :func:`slurm_message` when the run targets SLURM
(:func:`targets_slurm`), at parse time (dry runs included) and again when the executor is known
(``onstart``).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping

#: The profile that sets them.
PROFILE = "profiles/slurm/config.yaml"
#: What every job of a SLURM run needs, with the placeholder a message shows for it.
REQUIRED = {"slurm_account": "<your account>", "slurm_partition": "<partition>"}
#: The executor plugin's name.
EXECUTOR = "slurm"

_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def is_slurm_resource(name: str) -> bool:
    return str(name).startswith("slurm_")


def raw_resources(resources: Mapping | None) -> dict[str, object]:
    """``{name: value as written}`` of Snakemake resources (``Resource.raw``: the profile's or
    the command line's expression, unevaluated), or of a plain mapping of values."""
    return {name: getattr(value, "raw", value) for name, value in (resources or {}).items()}


def resolve(raw: object, environ: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """A resource's value as Snakemake gives it to a job: environment variables (``$NAME``,
    ``${NAME}``) and ``~`` expanded, a quoted string unquoted; with the variables that are not
    set (left as written) and those set but empty."""
    text = str(raw)
    unset, empty = [], []

    def expand(match: re.Match) -> str:
        name = match[1] or match[2]
        if name not in environ:
            unset.append(name)
            return match[0]
        if not environ[name].strip():
            empty.append(name)
        return environ[name]

    text = os.path.expanduser(_VARIABLE.sub(expand, text))
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = text  # Snakemake, too, keeps an expression it cannot evaluate as a string
    return str(value).strip(), unset, empty


def _problems_of(name: str, raw: object, where: str, environ: Mapping[str, str]) -> list[str]:
    placeholder = REQUIRED.get(name, "<value>")
    value, unset, empty = resolve(raw, environ)
    fix = f"or edit {PROFILE}"
    problems = [f"{var} is not set: export {var}={placeholder} {fix}" for var in unset]
    problems += [f"{var} is empty: export {var}={placeholder} {fix}" for var in empty]
    if not problems and not value:
        problems.append(f"{name} is empty ({where}): set it to {placeholder} in {PROFILE}")
    return problems


def slurm_problems(default: Mapping[str, object],
                   per_rule: Mapping[str, Mapping[str, object]] | None = None,
                   environ: Mapping[str, str] | None = None) -> list[str]:
    """What keeps a SLURM run from being submitted as configured, each with what to set:
    ``default`` (``default-resources``) must name :data:`REQUIRED`, and every ``slurm_*``
    value there and in ``per_rule`` (``set-resources``: rule -> resources; values as written,
    :func:`raw_resources`) must resolve (:func:`resolve`) to a non-empty value without unset
    variables. ``environ``: the environment (default ``os.environ``)."""
    environ = os.environ if environ is None else environ
    problems = []
    missing = [name for name in REQUIRED if default.get(name) is None]
    if missing:
        lines = ", ".join(f"`{name}: {REQUIRED[name]}`" for name in missing)
        problems.append(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
                        f"set: run with --profile {PROFILE.rsplit('/', 1)[0]} (it reads the "
                        f"account from SLURM_ACCOUNT), or add {lines} under default-resources "
                        f"in {PROFILE}")
    for name, raw in default.items():
        if is_slurm_resource(name) and raw is not None:
            problems += _problems_of(name, raw, "default-resources", environ)
    for rule, resources in (per_rule or {}).items():
        for name, raw in resources.items():
            if is_slurm_resource(name) and raw is not None:
                problems += _problems_of(name, raw, f"set-resources of {rule}", environ)
    return list(dict.fromkeys(problems))


def targets_slurm(executor: str | None, default: Mapping[str, object],
                  per_rule: Mapping[str, Mapping[str, object]] | None = None) -> bool:
    """Whether a run goes to SLURM: its executor is the slurm plugin, or (before the executor
    is known to the workflow, e.g. in a dry run) its resources name ``slurm_*`` settings, as
    the slurm profile's do."""
    if executor is not None:
        return executor == EXECUTOR
    named = [*default, *(name for resources in (per_rule or {}).values() for name in resources)]
    return any(map(is_slurm_resource, named))


def slurm_message(problems: list[str]) -> str | None:
    """The one message that stops a SLURM run (None: nothing to fix)."""
    if not problems:
        return None
    return "; ".join(problems) + " (nothing was submitted)"
