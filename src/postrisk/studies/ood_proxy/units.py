"""The OOD-proxy study's units of work: its conditions and methods, its fits (one method on one
condition each), the instances and covariate stores it adds, and what its summary reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from postrisk.grid.paths import condition_path, path
from postrisk.grid.study import study_settings
from postrisk.planning.conditions import (
    Condition,
    available_priors,
    fits_method,
    implemented_conditions,
    implemented_methods,
    is_study_dataset,
    is_tuned,
)
from postrisk.planning.seeds import SeedPolicy
from postrisk.planning.units import MethodUnit
from postrisk.tasks.key import TaskKey

#: One method refitted on a condition's instances and asked at their query rows against the
#: study's OOD set.
FIT_TEMPLATE = "studies/ood_proxy/fits/{dataset}/{prior}/{noise}/{coverage}/{method}.zarr"


def study_conditions(cfg: Mapping) -> list[Condition]:
    """The conditions of the OOD study's in-distribution instances: (in-distribution dataset,
    prior, ``noise``, ``coverage``) for each of its priors that is implemented. A benchmark
    dataset contributes only the conditions the run's grid builds (its instances and fits are
    the benchmark's own: none where the grid leaves the dataset out); a study dataset (role
    ``study``) every one (the study builds its instances)."""
    study = study_settings(cfg, "ood_proxy")
    if not study:
        return []
    dataset, noise, coverage = study["in_distribution"], study["noise"], study["coverage"]
    if is_study_dataset(dataset):
        available = available_priors()
        return [Condition(dataset, p, noise, coverage) for p in study["priors"]
                if p in available]
    return [c for c in implemented_conditions(cfg)
            if c.dataset == dataset and c.prior in study["priors"]
            and (c.noise, c.coverage) == (noise, coverage)]


def study_methods(cfg: Mapping, condition: Condition) -> list[str]:
    """The methods the OOD study fits on one of its conditions: ``studies.ood_proxy.methods``
    (null: every implemented method that is no App. D.2 ablation), on a benchmark dataset only
    those the benchmark fits there (the study refits the benchmark's own fits)."""
    from postrisk.methods.table import ablation_entry

    chosen = study_settings(cfg, "ood_proxy").get("methods")
    methods = [m for m in implemented_methods(cfg) if ablation_entry(m) is None
               and (chosen is None or m in chosen)]
    if is_study_dataset(condition.dataset):
        return methods
    return [m for m in methods if fits_method(cfg.get("method_grid") or {}, m, condition)]


@dataclass(frozen=True)
class OODFitUnit(MethodUnit):
    """The OOD study (App. D.3): one method on one of its in-distribution conditions, fitted on
    each instance as the benchmark fits it and asked at the instance's query rows against the
    OOD set (``ood_covariates``; ``n_query``: at most this many points per class).

    On a benchmark dataset ``benchmark`` is the condition's fit store: its configuration and
    its first ``n_seeds`` seeds (the usable ones, in order), among ``seeds`` (``samples``: their
    sample stores). On a study dataset ``benchmark`` is None: the configuration is chosen as
    the fit stage would choose it (``settings``, and a sweep where ``tuning`` is given, its
    journal ``journal``) and the seeds are ``seeds``."""

    method: str
    condition: Condition
    seeds: tuple[int, ...]
    samples: tuple[str, ...]
    n_seeds: int
    benchmark: str | None
    settings: Mapping[str, Any]
    tuning: Mapping[str, Any] | None
    journal: str
    ood_covariates: str
    n_query: int
    out: str

    @property
    def inputs(self) -> tuple[str, ...]:
        return (*self.samples, *((self.benchmark,) if self.benchmark else ()),
                self.ood_covariates)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out,)

    @property
    def label(self) -> str:
        return f"{self.method} on {'/'.join(self.condition)}"


def fit_units(cfg: Mapping, policy: SeedPolicy) -> list[OODFitUnit]:
    """The OOD study's fits (config ``studies.ood_proxy``): method by method, each of the
    study's conditions (:func:`postrisk.planning.conditions.study_conditions`) it is fitted
    on."""
    study = study_settings(cfg, "ood_proxy")
    conditions = study_conditions(cfg)
    if not conditions:
        return []
    n_seeds = int(study["seeds_per_prior"])
    ood = path("covariates", dataset=study["ood"])
    units = []
    for method in implemented_methods(cfg):
        for c in conditions:
            if method not in study_methods(cfg, c):
                continue
            own = is_study_dataset(c.dataset)
            seeds = tuple(range(n_seeds)) if own else tuple(policy.condition_seeds(c))
            at = partial(condition_path, c)
            units.append(OODFitUnit(
                method=method, condition=c, seeds=seeds,
                samples=tuple(at("sample", seed=s) for s in seeds), n_seeds=n_seeds,
                benchmark=None if own else at("fit", method=method),
                settings=cfg.get("method_settings", {}).get(method, {}),
                tuning=cfg["tuning"] if own and is_tuned(cfg, method, c) else None,
                journal=at("tuning_journal", method=method), ood_covariates=ood,
                n_query=int(study["n_query"]), out=at("ood_proxy_fit", method=method)))
    return units


def study_datasets(cfg: Mapping) -> list[str]:
    """The covariate stores the study needs where it runs: its in-distribution dataset and its
    OOD set."""
    if not study_conditions(cfg):
        return []
    study = study_settings(cfg, "ood_proxy")
    return [study["in_distribution"], study["ood"]]


def study_instances(cfg: Mapping) -> list[TaskKey]:
    """The instances of a study dataset (role ``study``): seeds 0 … ``seeds_per_prior`` − 1 of
    each of its conditions (sample stores only: the study reads no sampled posterior)."""
    n = int(study_settings(cfg, "ood_proxy").get("seeds_per_prior", 0))
    return [TaskKey(*c, seed) for c in study_conditions(cfg) if is_study_dataset(c.dataset)
            for seed in range(n)]


def summary_inputs(planner: Any) -> dict[str, list[str]]:
    """Its fit stores (``fits``), the sample stores of every instance they may hold
    (``samples``), the OOD set's covariate store (``ood``) and every condition's score table
    (``scores``: the benchmark rankings)."""
    units = planner.units["ood_proxy_fit"]
    return {"fits": [u.out for u in units],
            "samples": list(dict.fromkeys(p for u in units for p in u.samples)),
            "ood": list(dict.fromkeys(u.ood_covariates for u in units)),
            "scores": planner.score_tables() if units else []}
