"""The studies' units of work (docs/design.md, "Studies"), and every stage's units at once.

The studies' units follow :mod:`postrisk.grid.units` (frozen dataclasses that say their keys,
inputs and outputs, taken as they are by the step functions): the HBART warm-up check's
posteriors (App. B.7), the OOD study's fits (App. D.3), the 1-D sandbox (Paplhám et al.,
2026, §4.2; one unit where it runs) and the SN study's fits (App. D.4). :func:`stage_units`
enumerates the units of every stage, the benchmark's and the studies', from one seed policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from postrisk.grid.conditions import (
    Condition,
    implemented_methods,
    is_study_dataset,
    is_tuned,
    ood_study,
    ood_study_conditions,
    ood_study_methods,
    sn_study_conditions,
    sn_study_methods,
    study_settings,
)
from postrisk.grid.paths import condition_path, path
from postrisk.grid.seeds import SeedPolicy
from postrisk.grid.units import (
    _ConditionUnit,
    _InstanceUnit,
    _key_wildcards,
    _posterior_keys,
    covariates_units,
    disentanglement_units,
    fit_units,
    posterior_units,
    prior_units,
    sample_units,
    score_units,
    valid_seeds_units,
)
from postrisk.tasks.key import TaskKey


@dataclass(frozen=True)
class WarmupPosteriorUnit(_InstanceUnit):
    """One instance's reference posterior rebuilt with ``factor`` × its warm-up (the HBART
    warm-up study, config ``studies.warmup_check``): the same sample and posterior seed as the
    benchmark's ``task`` store; ``settings``: config ``posterior.<prior>`` with the warm-up
    multiplied (tempered share unchanged)."""

    key: TaskKey
    factor: int
    sample: str
    task: str
    settings: Mapping[str, Any]
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {**_key_wildcards(self.key), "factor": str(self.factor)}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.sample, self.task)


@dataclass(frozen=True)
class OODFitUnit(_ConditionUnit):
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
    def wildcards(self) -> dict[str, str]:
        return {**self.condition._asdict(), "method": self.method}

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


def warmup_posterior_units(cfg: Mapping, policy: SeedPolicy) -> list[WarmupPosteriorUnit]:
    """The warm-up study's posteriors: every built instance of ``studies.warmup_check.prior``
    on its datasets, once per factor (instance by instance)."""
    study = study_settings(cfg, "warmup_check")
    datasets, prior = set(study.get("datasets", [])), study.get("prior", "hbart")
    units = []
    for k in _posterior_keys(cfg, policy):
        if k.prior != prior or k.dataset not in datasets:
            continue
        base = dict(cfg["posterior"][k.prior])
        wc = _key_wildcards(k)
        units += [WarmupPosteriorUnit(k, int(f), path("sample", **wc), path("task", **wc),
                                      {**base, "warmup": int(base["warmup"]) * int(f)},
                                      path("warmup_task", **wc, factor=int(f)))
                  for f in study.get("factors", [])]
    return units


def ood_fit_units(cfg: Mapping, policy: SeedPolicy) -> list[OODFitUnit]:
    """The OOD study's fits (config ``studies.ood_proxy``): method by method, each of the
    study's conditions (:func:`postrisk.grid.conditions.ood_study_conditions`) it is fitted
    on."""
    study = ood_study(cfg)
    conditions = ood_study_conditions(cfg)
    if not conditions:
        return []
    n_seeds = int(study["seeds_per_prior"])
    ood = path("covariates", dataset=study["ood"])
    units = []
    for method in implemented_methods(cfg):
        for c in conditions:
            if method not in ood_study_methods(cfg, c):
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
                n_query=int(study["n_query"]), out=at("ood_fit", method=method)))
    return units


@dataclass(frozen=True)
class SandboxUnit:
    """The closed-form 1-D sandbox (Paplhám et al., 2026, §4.2; config ``studies.sandbox``):
    one job, no inputs; ``settings``: the config section."""

    settings: Mapping[str, Any]

    @property
    def label(self) -> str:
        return "the 1-D sandbox"


def sandbox_units(cfg: Mapping) -> list[SandboxUnit]:
    """The sandbox where config ``studies.sandbox.run`` asks for it (else none)."""
    study = study_settings(cfg, "sandbox")
    return [SandboxUnit(study)] if study.get("run") else []


@dataclass(frozen=True)
class SNFitUnit(_ConditionUnit):
    """The SN study (App. D.4): one network method's three arms on one condition — the plain
    arm at the benchmark's configuration (its fit store ``benchmark``: the configuration and the
    seeds it fitted), the SN and WD arms re-tuned (journals ``journal``.<arm>.log) and fitted on
    the same seeds' task stores (``tasks``: every candidate seed of the condition; the first
    ``study["seeds_per_condition"]`` the benchmark fitted are used). ``settings``: the method's
    fixed settings (config ``method_settings``); ``study``: config ``studies.sn_study`` with the
    tuning's validation fraction."""

    method: str
    condition: Condition
    seeds: tuple[int, ...]
    tasks: tuple[str, ...]
    benchmark: str
    settings: Mapping[str, Any]
    study: Mapping[str, Any]
    journal: str
    out: str
    tuning_out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {**self.condition._asdict(), "method": self.method}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.benchmark, *self.tasks)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out, self.tuning_out)

    @property
    def label(self) -> str:
        return f"{self.method} on {'/'.join(self.condition)}"


def sn_fit_units(cfg: Mapping, policy: SeedPolicy) -> list[SNFitUnit]:
    """The SN study's units (config ``studies.sn_study``): method by method, each of the
    study's conditions the benchmark fits it on."""
    conditions = sn_study_conditions(cfg)
    if not conditions:
        return []
    study = {**study_settings(cfg, "sn_study"),
             "validation_fraction": float(cfg["tuning"]["validation_fraction"])}
    units = []
    for method in study["methods"]:
        for c in conditions:
            if method not in sn_study_methods(cfg, c):
                continue
            seeds = tuple(policy.posterior_seeds(c))
            at = partial(condition_path, c)
            units.append(SNFitUnit(
                method=method, condition=c, seeds=seeds,
                tasks=tuple(at("task", seed=s) for s in seeds), benchmark=at("fit", method=method),
                settings=cfg.get("method_settings", {}).get(method, {}), study=study,
                journal=at("sn_journal", method=method), out=at("sn_fit", method=method),
                tuning_out=at("sn_tuning", method=method)))
    return units


def stage_units(cfg: Mapping, policy: SeedPolicy | None = None) -> dict[str, list[Any]]:
    """Every stage's units (the stages that have them; ``checks``, ``tables`` and ``report`` are
    one job over everything, ``figure`` one job per catalogue figure), computed once from one
    seed policy."""
    policy = policy or SeedPolicy(cfg)
    return {"covariates": covariates_units(cfg), "prior": prior_units(cfg),
            "sample": sample_units(cfg, policy), "posterior": posterior_units(cfg, policy),
            "valid_seeds": valid_seeds_units(cfg, policy), "fit": fit_units(cfg, policy),
            "score": score_units(cfg, policy),
            "disentanglement": disentanglement_units(cfg, policy),
            "warmup_posterior": warmup_posterior_units(cfg, policy),
            "ood_fit": ood_fit_units(cfg, policy), "sandbox": sandbox_units(cfg),
            "sn_fit": sn_fit_units(cfg, policy)}
