"""The units of work of the benchmark's stages, as small frozen dataclasses, and their
enumeration; :func:`stage_units` lists every stage's, the studies' from their registrations
(:mod:`postrisk.grid.study`).

A unit is the smallest piece of work of a stage (:mod:`postrisk.grid.stages`); it carries what
its step function (:mod:`postrisk.workflow.steps`) needs, paths included, and the step takes it
as it is. Every unit says the values of its stage's keys (:attr:`wildcards`), the prior or
method its cost entry is looked up by (:attr:`cost_name`) and the dataset whose rows scale its
cost (:attr:`dataset`). The enumerations return units in a fixed order; which seeds a unit uses
comes from the one :class:`~postrisk.planning.seeds.SeedPolicy` of the configuration, and the
run-time rule that picks the valid ones among them from ``postrisk.tasks.validity``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from postrisk.grid.paths import condition_path, path
from postrisk.grid.study import studies, study_settings
from postrisk.planning.conditions import (
    Condition,
    condition_methods,
    covariate_datasets,
    disentanglement_methods,
    fits_method,
    implemented_conditions,
    implemented_methods,
    is_tuned,
    training_size,
    within,
)
from postrisk.planning.seeds import SeedPolicy
from postrisk.tasks.key import TaskKey, config_digest


def key_wildcards(key: TaskKey) -> dict[str, str]:
    """An instance's wildcards (a unit of one instance names its job by them)."""
    return {"dataset": key.dataset, "prior": key.prior, "noise": key.noise,
            "coverage": key.coverage, "seed": str(key.seed)}


@dataclass(frozen=True)
class CovariatesUnit:
    """One dataset's covariate store (``reference``: the store whose scaling it uses)."""

    dataset: str
    reference: str | None
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {"dataset": self.dataset}

    @property
    def cost_name(self) -> None:
        return None


@dataclass(frozen=True)
class PriorUnit:
    """One (dataset, prior)'s fitted prior parameters."""

    dataset: str
    prior: str
    covariates: str
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {"dataset": self.dataset, "prior": self.prior}

    @property
    def cost_name(self) -> str:
        return self.prior


class InstanceUnit:
    """What a unit of one instance (its ``key``, writing ``out``) says of itself; a study's
    unit of one instance derives from it."""

    key: TaskKey
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return key_wildcards(self.key)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out,)

    @property
    def dataset(self) -> str:
        return self.key.dataset

    @property
    def cost_name(self) -> str:
        return self.key.prior


@dataclass(frozen=True)
class SampleUnit(InstanceUnit):
    """One instance's sample store: training inputs, f* and noisy targets (``n`` training rows;
    ``digest``: its prior's sample settings, :func:`postrisk.tasks.key.config_digest`;
    ``noise_strength``: the noise modes' strength s, config ``noise_model.strength``)."""

    key: TaskKey
    covariates: str
    prior: str
    n: int
    digest: str
    out: str
    noise_strength: float

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.covariates, self.prior)


@dataclass(frozen=True)
class PosteriorUnit(InstanceUnit):
    """One instance's reference posterior (``settings``: config ``posterior.<prior>``)."""

    key: TaskKey
    sample: str
    settings: Mapping[str, Any]
    out: str

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.sample,)


@dataclass(frozen=True)
class ValidSeedsUnit:
    """One cell's seed selection from its BNN instances, one per candidate seed."""

    cell: tuple[str, str, str]  # (dataset, noise, coverage)
    bnn_tasks: tuple[str, ...]
    n_valid: int
    out: str
    config_digest: str = ""  # of the settings the selection depends on (seeds.selection_digest)

    @property
    def wildcards(self) -> dict[str, str]:
        return dict(zip(("dataset", "noise", "coverage"), self.cell, strict=True))

    @property
    def dataset(self) -> str:
        return self.cell[0]

    @property
    def cost_name(self) -> None:
        return None


class ConditionUnit:
    """What a unit of one condition says of itself: the dataset whose rows scale its cost, and
    (for a method's unit) the method its cost entry is looked up by; a study's unit of one
    condition derives from it."""

    condition: Condition

    @property
    def dataset(self) -> str:
        return self.condition.dataset

    @property
    def cost_name(self) -> str | None:
        return getattr(self, "method", None)


class MethodUnit(ConditionUnit):
    """What a unit of one method on one condition says of itself: its wildcards are the
    condition's and the method's (the benchmark's fits and a study's fits derive from it)."""

    method: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {**self.condition._asdict(), "method": self.method}


@dataclass(frozen=True)
class FitUnit(MethodUnit):
    """One (method, condition): its tuning sweep when tuned (on the seed-0 sample,
    ``samples[0]``; ``tuning``: config ``tuning``, None when not tuned), the configuration it
    used (``config``), then a fit on every usable seed (``fits``).

    ``seeds`` are the condition's candidate seeds and ``samples`` their sample stores;
    ``selection`` is the cell's seed-selection file where the BNN R̂ decides which of them are
    valid (else empty: the first ``n_valid`` are used).
    """

    method: str
    condition: Condition
    seeds: tuple[int, ...]
    samples: tuple[str, ...]
    selection: tuple[str, ...]
    n_valid: int
    settings: Mapping[str, Any]
    tuning: Mapping[str, Any] | None
    journal: str
    fits: str
    config: str

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.samples + self.selection

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.fits, self.config)

    @property
    def label(self) -> str:
        return f"{self.method} on {'/'.join(self.condition)}"


@dataclass(frozen=True)
class ScoreUnit(ConditionUnit):
    """One condition's scores: every method fitted there and the reference rows, on the usable
    seeds among ``seeds`` (the cell's ``selection`` file, or the first ``n_valid``)."""

    condition: Condition
    seeds: tuple[int, ...]
    tasks: tuple[str, ...]
    methods: tuple[str, ...]
    fits: tuple[str, ...]
    selection: tuple[str, ...]
    n_valid: int
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return dict(self.condition._asdict())


@dataclass(frozen=True)
class DisentanglementUnit(ConditionUnit):
    """One method's Disentanglement Error experiment on one instance, at the configuration of
    its condition's fit store (``fit``)."""

    condition: Condition
    seed: int
    method: str
    task: str
    fit: str
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {**self.condition._asdict(), "seed": str(self.seed), "method": self.method}


# ------------------------------------------------------------------------------ enumerations

def covariates_unit(dataset: str) -> CovariatesUnit:
    """The covariate store of any registered dataset, with the store whose scaling constants
    it takes (Red Wine: White Wine's) — in the grid or not."""
    from postrisk.covariates.registry import registry

    ref = registry()[dataset].scaling_reference
    return CovariatesUnit(dataset, path("covariates", dataset=ref) if ref else None,
                          path("covariates", dataset=dataset))


def covariates_units(cfg: Mapping) -> list[CovariatesUnit]:
    """Every covariate store the workflow builds (tasks first, then OOD-only, then scaling
    references)."""
    return [covariates_unit(dataset) for dataset in covariate_datasets(cfg)]


def study_instances(cfg: Mapping) -> list[TaskKey]:
    """The instances the registered studies alone use (a study dataset's, role ``study``),
    study by study: their covariates, prior and sample stores are built as the benchmark's."""
    return [k for s in studies() if s.instances for k in s.instances(cfg)]


def prior_units(cfg: Mapping) -> list[PriorUnit]:
    """One per (dataset, prior) of the implemented conditions, in condition order, then of the
    study datasets' conditions, then the other fits the studies' units read (a study's
    ``prior_fits``)."""
    pairs = dict.fromkeys([*((c.dataset, c.prior) for c in implemented_conditions(cfg)),
                           *((k.dataset, k.prior) for k in study_instances(cfg)),
                           *(pair for s in studies() if s.prior_fits
                             for pair in s.prior_fits(cfg))])
    return [PriorUnit(d, p, path("covariates", dataset=d), path("prior", dataset=d, prior=p))
            for d, p in pairs]


def _instance_keys(cfg: Mapping, policy: SeedPolicy) -> list[TaskKey]:
    """Every instance, prior by prior; within a prior dataset by dataset, its cells in
    sorted order, the seeds its condition may use (:meth:`SeedPolicy.condition_seeds`: every
    candidate where the BNN's R̂ decides, else the first valid ones)."""
    by_prior: dict[str, list[Condition]] = {}
    for c in implemented_conditions(cfg):
        by_prior.setdefault(c.prior, []).append(c)
    keys = []
    for prior, cs in by_prior.items():
        cells = sorted({(c.noise, c.coverage) for c in cs})
        present = {c.cell for c in cs}
        for dataset in dict.fromkeys(c.dataset for c in cs):
            keys += [TaskKey(dataset, prior, noise, coverage, seed)
                     for noise, coverage in cells if (dataset, noise, coverage) in present
                     for seed in policy.condition_seeds((dataset, prior, noise, coverage))]
    return keys


def posterior_keys(cfg: Mapping, policy: SeedPolicy) -> list[TaskKey]:
    """The instances whose reference posterior is built: :func:`_instance_keys` on the seeds
    :meth:`SeedPolicy.posterior_seeds` gives their condition."""
    return [k for k in _instance_keys(cfg, policy)
            if k.seed in policy.posterior_seeds(k.condition)]


def sample_units(cfg: Mapping, policy: SeedPolicy) -> list[SampleUnit]:
    """Every instance's sample store, then the studies' own (:func:`study_instances`)."""
    keys = [*_instance_keys(cfg, policy), *study_instances(cfg)]
    digests = {p: config_digest(cfg, p) for p in dict.fromkeys(k.prior for k in keys)}
    return [SampleUnit(k, path("covariates", dataset=k.dataset),
                       path("prior", dataset=k.dataset, prior=k.prior),
                       training_size(k.dataset, cfg["sizes"].get("n_cap")), digests[k.prior],
                       path("sample", **key_wildcards(k)),
                       float(cfg["noise_model"]["strength"]))
            for k in keys]


def posterior_units(cfg: Mapping, policy: SeedPolicy) -> list[PosteriorUnit]:
    """Every reference posterior (:func:`posterior_keys`)."""
    return [PosteriorUnit(k, path("sample", **key_wildcards(k)), cfg["posterior"][k.prior],
                          path("task", **key_wildcards(k)))
            for k in posterior_keys(cfg, policy)]


def valid_seeds_units(cfg: Mapping, policy: SeedPolicy) -> list[ValidSeedsUnit]:
    """One per cell with BNN instances (their R̂ decides the cell's valid seeds)."""
    n_valid = int(cfg["seeds"]["valid_per_cell"])
    return [ValidSeedsUnit(c.cell, tuple(condition_path(c, "task", seed=s)
                                         for s in policy.prior_seeds("bnn")),
                           n_valid, condition_path(c, "seed_selection"),
                           policy.selection_digest)
            for c in implemented_conditions(cfg) if c.prior == "bnn"]


def _selection(policy: SeedPolicy, c: Condition) -> tuple[str, ...]:
    return (condition_path(c, "seed_selection"),) if policy.bnn_decides(c) else ()


def fit_unit(cfg: Mapping, policy: SeedPolicy, c: Condition, method: str) -> FitUnit:
    seeds = tuple(policy.condition_seeds(c))
    at = partial(condition_path, c)
    return FitUnit(method=method, condition=c, seeds=seeds,
                   samples=tuple(at("sample", seed=s) for s in seeds),
                   selection=_selection(policy, c), n_valid=policy.n_valid_for(c),
                   settings=cfg.get("method_settings", {}).get(method, {}),
                   tuning=cfg["tuning"] if is_tuned(cfg, method, c) else None,
                   journal=at("tuning_journal", method=method),
                   fits=at("fit", method=method), config=at("tuning_result", method=method))


def fit_units(cfg: Mapping, policy: SeedPolicy) -> list[FitUnit]:
    """Method by method, every condition it is fitted on."""
    conds = implemented_conditions(cfg)
    return [fit_unit(cfg, policy, c, m) for m in implemented_methods(cfg) for c in conds
            if fits_method(cfg.get("method_grid") or {}, m, c)]


def score_units(cfg: Mapping, policy: SeedPolicy) -> list[ScoreUnit]:
    units = []
    for c in implemented_conditions(cfg):
        seeds = tuple(policy.posterior_seeds(c))
        methods = tuple(condition_methods(cfg, c))
        at = partial(condition_path, c)
        units.append(ScoreUnit(c, seeds, tuple(at("task", seed=s) for s in seeds), methods,
                               tuple(at("fit", method=m) for m in methods),
                               _selection(policy, c), policy.n_valid_for(c),
                               at("scores")))
    return units


def disentanglement_units(cfg: Mapping, policy: SeedPolicy | None = None
                          ) -> list[DisentanglementUnit]:
    """The Disentanglement Error experiment's jobs: every implemented condition within
    ``disentanglement.grid``, every seed of ``disentanglement.seeds`` that the condition builds,
    and every method of ``disentanglement.methods`` (null: every method) fitted there (the
    experiment reuses that fit's configuration; a method that ``methods`` or ``method_grid``
    leaves out there is skipped)."""
    de = cfg.get("disentanglement") or {}
    methods = disentanglement_methods(cfg)
    policy = policy or SeedPolicy(cfg)
    units = []
    for c in implemented_conditions(cfg):
        if not within(de.get("grid", {}), c):
            continue
        built = set(policy.posterior_seeds(c))
        at = partial(condition_path, c)
        grid = cfg.get("method_grid") or {}
        for method in (m for m in methods if fits_method(grid, m, c)):
            units += [DisentanglementUnit(c, int(s), method, at("task", seed=s),
                                          at("fit", method=method),
                                          at("disentanglement", seed=s, method=method))
                      for s in de.get("seeds", []) if s in built]
    return units


def unit_paths(unit: Any, field: str) -> str | list[str]:
    """A unit's path field as a rule's input takes it: a path, or a list of paths."""
    value = getattr(unit, field)
    return value if isinstance(value, str) else list(value)


def stage_units(cfg: Mapping, policy: SeedPolicy | None = None) -> dict[str, list[Any]]:
    """Every stage's units (the stages that have them; ``checks``, ``tables`` and ``report`` are
    one job over everything, ``figure`` one job per catalogue figure), computed once from one
    seed policy: the benchmark's, then each registered study's unit stages (a study without
    any: its name, once, where its ``runs`` says it runs)."""
    policy = policy or SeedPolicy(cfg)
    units: dict[str, list[Any]] = {
        "covariates": covariates_units(cfg), "prior": prior_units(cfg),
        "sample": sample_units(cfg, policy), "posterior": posterior_units(cfg, policy),
        "valid_seeds": valid_seeds_units(cfg, policy), "fit": fit_units(cfg, policy),
        "score": score_units(cfg, policy),
        "disentanglement": disentanglement_units(cfg, policy)}
    for study in studies():
        for stage in study.stages:
            units[stage.name] = list(stage.units(cfg, policy))
        if not study.stages:
            units[study.name] = ([study.name] if study.runs
                                 and study.runs(study_settings(cfg, study.name)) else [])
    return units
