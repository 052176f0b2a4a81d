"""A rule's settings from the planner's rule objects (:class:`postrisk.planning.jobs.StageRule`):
what ``rules/*.smk`` write in ``input:``, ``params:``, ``threads:`` and ``resources:``.

Snakemake evaluates a function given for a directive once per job, and inspects its signature
each time; every function here carries a precomputed signature (:func:`per_job`), and a value
that every job of a rule shares is given as a constant instead (planning time on the full grid:
``benchmarks/plan_time.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from postrisk.planning.jobs import StageRule
from postrisk.planning.units import unit_paths

#: The resources every rule declares (runtime in minutes, memory in MB, GPUs).
RESOURCES = ("runtime", "mem_mb", "gpu")


def per_job(function: Callable) -> Callable:
    """``function`` (of the job's wildcards) with its signature precomputed: Snakemake then looks
    it up instead of inspecting the function once per job and directive."""
    function.__signature__ = inspect.signature(function)
    return function


def jobs_of(rule: StageRule) -> Callable:
    """A grouped rule's ``params.jobs``: the units of the job."""
    return per_job(lambda wildcards: rule.job(wildcards).payload)


def unit_of(rule: StageRule) -> Callable:
    """``params.unit`` of a rule whose jobs each run one unit."""
    return per_job(lambda wildcards: rule.unit(wildcards))


def inputs_of(rule: StageRule) -> list[str] | Callable:
    """A grouped rule's ``input:``: patterns where its jobs share an input shape, else per job."""
    if rule.inputs is not None:
        return rule.inputs
    return per_job(lambda wildcards: rule.job(wildcards).inputs)


def inputs_of_unit(rule: StageRule, field: str) -> Callable:
    """One input of a rule whose jobs each run one unit: a field of the unit (a path or a tuple
    of paths)."""
    return per_job(lambda wildcards: unit_paths(rule.unit(wildcards), field))


def _per_job(rule: StageRule, resource: str) -> Any:
    constant = rule.constant(resource)
    if constant is not None:
        return constant
    return per_job(lambda wildcards: getattr(rule.job(wildcards).resources, resource))


def threads_of(rule: StageRule) -> Any:
    """``threads:``: the jobs' threads from the cost model (a constant where all agree)."""
    return _per_job(rule, "threads")


def resources_of(rule: StageRule) -> dict[str, Any]:
    """``resources:``: runtime, memory and GPUs of the jobs, from the cost model and the prior's
    or method's accelerator declaration (constants where all jobs agree)."""
    return {name: _per_job(rule, name) for name in RESOURCES}
