"""What a job asks of a cluster: threads, minutes and memory from the config's ``cost_model``,
and a GPU where a prior or a method declares one.

Threads per stage and prior or method; minutes and memory per unit, scaled with the rows the
unit handles (:meth:`CostModel.unit_cost`); a job's request sums its units' minutes and takes
the largest unit's memory (:meth:`CostModel.job_resources`). Accelerators come from
declarations: a prior's or a method's registry entry says whether its heavy job wants one; with
``accelerator.use`` such jobs ask for ``gpu: 1`` and run in the ``jax-gpu`` environment.

An entry may carry a ``gpu`` sub-entry (any of its numbers, and ``measured``: where they come
from, or ``false`` for guesses): a job on a GPU uses the entry with those values laid over it, a
job on CPUs the entry without them (:meth:`CostModel.entry`, the one place that decides).
:class:`CostModel` holds what the cost model reads of a configuration, and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrisk.covariates.pools import eval_pool_size
from postrisk.covariates.registry import registry
from postrisk.grid.study import studies, unit_stages
from postrisk.planning.conditions import training_size

#: Rows at which a cost entry's per-size terms are given (``cost_model.rows`` overrides it).
_ROWS_DEFAULT = 1000


@dataclass(frozen=True)
class Resources:
    """What one job asks of the scheduler: threads, wall-clock minutes, memory, GPUs; beside
    them (not part of the request, nor of equality) the estimate the request comes from and
    whether its cost values are guesses."""

    threads: int
    runtime: int  # minutes
    mem_mb: int
    gpu: int = 0
    #: job_minutes + the sum of the units' minutes, at margin 1 (before the margin, rounding
    #: and min_runtime)
    estimate: float = field(default=0.0, compare=False)
    #: the values came from a ``gpu`` sub-entry that says ``measured: false``
    unmeasured: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class CostModel:
    """The cost model of one configuration: what it reads, and nothing else — the
    ``cost_model`` section (:attr:`model`), the ``sizes`` a unit's rows follow (:attr:`sizes`)
    and whether jobs may ask for a GPU (``accelerator.use``, :attr:`use_accelerator`).
    :meth:`of` takes them from a validated configuration."""

    model: Mapping[str, Any]
    sizes: Mapping[str, Any]
    use_accelerator: bool = False

    @classmethod
    def of(cls, cfg: Mapping) -> CostModel:
        """The cost model of the validated configuration ``cfg``."""
        return cls(cfg["cost_model"], cfg["sizes"],
                   bool((cfg.get("accelerator") or {}).get("use", False)))

    def entry(self, stage: str, name: str | None = None, gpu: bool = False) -> dict:
        """The entry of ``stage`` (for a prior or method ``name`` where the stage's entry is
        per prior/method: its own entry, else ``default``) as it applies to a job on a GPU
        (``gpu``: its ``gpu`` values laid over it, ``measured`` among them) or on CPUs
        (without them)."""
        if stage not in self.model:
            entry = _declared_cost(stage)
            if entry is None:
                raise KeyError(f"cost_model has no entry for stage {stage!r}")
            return dict(entry)
        entry = self.model[stage]
        if "threads" not in entry:  # per prior / per method
            entry = entry.get(name) or entry.get("default")
            if entry is None:
                raise KeyError(f"cost_model.{stage} has no entry for {name!r} and no default")
        cpu = {k: v for k, v in entry.items() if k != "gpu"}
        return {**cpu, **entry.get("gpu", {})} if gpu else cpu

    def unit_rows(self, dataset: str) -> int:
        """Rows one unit on ``dataset`` handles: training rows plus evaluation rows."""
        spec = registry()[dataset]
        n_eval = eval_pool_size(spec.N, self.sizes["n_eval_cap"])
        n = training_size(dataset, self.sizes.get("n_cap")) if spec.n is not None else 0
        return n + n_eval

    def unit_cost(self, stage: str, name: str | None = None, dataset: str | int | None = None,
                  gpu: bool = False) -> tuple[float, float]:
        """(minutes, MB) of one unit on a GPU (``gpu``) or on CPUs: ``minutes +
        minutes_per_size · s`` and ``mem_mb + mem_mb_per_size · s'`` with ``s = (rows /
        cost_model.rows) ** power`` (``s'``: the same with ``mem_power``, where the memory
        grows otherwise; default ``power``); ``rows`` of the unit's dataset
        (:meth:`unit_rows`), or ``dataset`` itself where a unit gives its rows as a number (its
        ``cost_rows``), none (s = 0) for stages not tied to one."""
        entry = self.entry(stage, name, gpu)
        scale = mem_scale = 0.0
        if dataset is not None:
            rows = dataset if isinstance(dataset, int) else self.unit_rows(dataset)
            rows = rows / float(self.model.get("rows", _ROWS_DEFAULT))
            scale = rows ** float(entry.get("power", 1.0))
            mem_scale = rows ** float(entry.get("mem_power", entry.get("power", 1.0)))
        minutes = float(entry["minutes"]) + float(entry.get("minutes_per_size", 0.0)) * scale
        mem = float(entry["mem_mb"]) + float(entry.get("mem_mb_per_size", 0.0)) * mem_scale
        return minutes, mem

    def job_resources(self, stage: str, costs: Sequence[tuple[float, float]],
                      name: str | None = None, gpu: bool = False) -> Resources:
        """A job's request from its units' costs (:meth:`unit_cost`, on a GPU where ``gpu``):
        the estimate (margin 1) is ``job_minutes`` (what every job pays before its units:
        Snakemake's start in the job) plus the sum of the units' minutes; runtime = margin ×
        the estimate (whole minutes, at least ``min_runtime``); memory = the largest unit's
        (units run one after the other), in whole hundreds of MB; the threads of the entry
        that applies."""
        estimate = float(self.model.get("job_minutes", 0.0)) + sum(m for m, _ in costs)
        runtime = max(int(self.model.get("min_runtime", 1)),
                      math.ceil(float(self.model.get("margin", 1.0)) * estimate))
        mem = max((mb for _, mb in costs), default=0.0)
        entry = self.entry(stage, name, gpu)
        return Resources(threads=int(entry["threads"]), runtime=runtime,
                         mem_mb=int(math.ceil(mem / 100.0) * 100), gpu=int(bool(gpu)),
                         estimate=estimate, unmeasured=entry.get("measured", True) is False)

    def units_resources(self, stage: str, items: Sequence[tuple[str | None, str | None]],
                        gpu: bool = False) -> Resources:
        """Resources of a job whose units are ``items`` ((prior or method, dataset) each, as
        :meth:`unit_cost` takes them; the first names the threads' entry), on a GPU (``gpu``)
        or on CPUs: both the units' costs and the request from the same entries."""
        costs = [self.unit_cost(stage, name, dataset, gpu) for name, dataset in items]
        return self.job_resources(stage, costs, items[0][0] if items else None, gpu)

    def stage_resources(self, stage: str, name: str | None = None,
                        datasets: Sequence[str | None] = (None,)) -> Resources:
        """Resources of a job of a stage that is not grouped (covariates, prior, score, …):
        one unit per entry of ``datasets`` (None: a unit not tied to a dataset)."""
        return self.units_resources(stage, [(name, d) for d in datasets])

    def verify_resources(self, dataset: str) -> Resources:
        """Resources of a ``verify_covariates`` job (run on request, not part of the grid)."""
        return self.stage_resources("covariates", None, [dataset])

    def wants_accelerator(self, stage: str, name: str) -> bool:
        """Whether a job of ``stage`` for the prior or method ``name`` asks for a GPU: the
        configuration's ``accelerator.use`` is on, the registry declares that it can use one
        (:meth:`declares_accelerator`) and its cost entry does not estimate it slower there
        (:meth:`slower_on_gpu`)."""
        return (self.use_accelerator and self.declares_accelerator(stage, name)
                and not self.slower_on_gpu(stage, name))

    def declines_accelerator(self, stage: str, name: str) -> bool:
        """Whether a job that could ask for a GPU (``accelerator.use`` on, declared) runs on
        CPUs because its cost entry estimates it slower on a GPU (:meth:`slower_on_gpu`)."""
        return (self.use_accelerator and self.declares_accelerator(stage, name)
                and self.slower_on_gpu(stage, name))

    def declares_accelerator(self, stage: str, name: str) -> bool:
        """Whether the registry declares that a job of ``stage`` for ``name`` can use a GPU
        (posterior and a study's stage that declares ``accelerator_by`` prior: the prior's
        entry; fit: the method's; an outside method has no entry and runs on CPUs)."""
        if stage == "fit":
            from postrisk.methods.table import METHOD_ENTRIES

            entry = METHOD_ENTRIES.get(name)  # an outside method declares none: it runs on CPUs
            return bool(entry is not None and entry.accelerator)
        declared = unit_stages().get(stage)
        if declared is not None and declared.accelerator_by == "stage":
            return True
        if stage == "posterior" or (declared is not None and declared.accelerator_by == "prior"):
            from postrisk.priors.base import PRIOR_ENTRIES

            return PRIOR_ENTRIES[name].accelerator
        return False

    def slower_on_gpu(self, stage: str, name: str) -> bool:
        """Whether the cost entry of ``stage``/``name`` estimates one unit slower on a GPU than
        on CPUs, compared at ``cost_model.rows`` rows (where the entries' sizes are
        normalised; a GPU entry is typically measured at one size only, its growth assumed).
        An entry without ``gpu`` values is never slower there: a job that can use a GPU then
        asks for one. The planner runs such a prior or method on CPUs even with
        ``accelerator.use`` on (BNN's MCMC: a leapfrog step of its small network is a few tiny
        kernels, latency-bound on a GPU)."""
        def reference_minutes(entry: Mapping) -> float:
            return float(entry["minutes"]) + float(entry.get("minutes_per_size", 0.0))

        return (reference_minutes(self.entry(stage, name, gpu=True))
                > reference_minutes(self.entry(stage, name)))


def _declared_cost(stage: str) -> Mapping | None:
    """The cost a study declares for one of its stages, used where ``cost_model`` has no entry
    for it (a new study runs before anyone measured it)."""
    for study in studies():
        if stage == study.name:
            return study.summary_cost
        for unit_stage in study.stages:
            if unit_stage.name == stage:
                return unit_stage.cost
    return None


def env_family(accelerator: bool) -> str:
    """The job environment (``workflow/envs/<family>.yaml``) of a JAX job."""
    return "jax-gpu" if accelerator else "jax"
