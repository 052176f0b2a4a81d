"""The SN study's units of work (one network method's three arms on one condition each), its
conditions and methods, and what its summary reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from postrisk.grid.paths import condition_path
from postrisk.grid.study import study_settings
from postrisk.planning.conditions import (
    Condition,
    condition_methods,
    implemented_conditions,
)
from postrisk.planning.seeds import SeedPolicy
from postrisk.planning.units import MethodUnit

#: Its files: one row per (seed, arm) of a method on a condition's instances; the arms'
#: configurations and sweeps; the sweeps' journals (one per arm: the prefix, then
#: ".<arm>.log").
_CONDITION_METHOD = "{dataset}/{prior}/{noise}/{coverage}/{method}"
TEMPLATES = {
    "sn_study_fit": f"studies/sn_study/fits/{_CONDITION_METHOD}.csv",
    "sn_study_tuning": f"studies/sn_study/tuning/{_CONDITION_METHOD}.json",
    "sn_study_journal": f"studies/sn_study/tuning/journals/{_CONDITION_METHOD}",
}


def study_conditions(cfg: Mapping) -> list[Condition]:
    """The SN study's conditions (config ``studies.sn_study``, App. D.4; none unless ``run``):
    the run's implemented conditions at the study's (noise, coverage), on its ``datasets``
    (null: every configured one) and ``priors``. The study refits the benchmark's own fits: a
    condition the grid does not build plans nothing."""
    study = study_settings(cfg, "sn_study")
    if not study.get("run"):
        return []
    datasets = study.get("datasets")
    return [c for c in implemented_conditions(cfg)
            if (datasets is None or c.dataset in datasets) and c.prior in study["priors"]
            and (c.noise, c.coverage) == (study["noise"], study["coverage"])]


def study_methods(cfg: Mapping, condition: Condition) -> list[str]:
    """The study's ``methods`` the benchmark fits on ``condition`` (their plain arm is the
    benchmark's configuration there), in the study's order."""
    fitted = set(condition_methods(cfg, condition))
    return [m for m in study_settings(cfg, "sn_study").get("methods", []) if m in fitted]


@dataclass(frozen=True)
class SNFitUnit(MethodUnit):
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
    def inputs(self) -> tuple[str, ...]:
        return (self.benchmark, *self.tasks)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out, self.tuning_out)

    @property
    def label(self) -> str:
        return f"{self.method} on {'/'.join(self.condition)}"


def fit_units(cfg: Mapping, policy: SeedPolicy) -> list[SNFitUnit]:
    """The SN study's units (config ``studies.sn_study``): method by method, each of the
    study's conditions the benchmark fits it on."""
    conditions = study_conditions(cfg)
    if not conditions:
        return []
    study = {**study_settings(cfg, "sn_study"),
             "validation_fraction": float(cfg["tuning"]["validation_fraction"])}
    units = []
    for method in study["methods"]:
        for c in conditions:
            if method not in study_methods(cfg, c):
                continue
            seeds = tuple(policy.posterior_seeds(c))
            at = partial(condition_path, c)
            units.append(SNFitUnit(
                method=method, condition=c, seeds=seeds,
                tasks=tuple(at("task", seed=s) for s in seeds), benchmark=at("fit", method=method),
                settings=cfg.get("method_settings", {}).get(method, {}), study=study,
                journal=at("sn_study_journal", method=method),
                out=at("sn_study_fit", method=method),
                tuning_out=at("sn_study_tuning", method=method)))
    return units


def summary_inputs(planner: Any) -> dict[str, list[str]]:
    """Its record files (``records``) and the score tables of its conditions (``scores``: the
    benchmark's methods on the same instances, Figure 10)."""
    units = planner.units["sn_study_fit"]
    conditions = {u.condition for u in units}
    return {"records": [u.out for u in units],
            "scores": [u.out for u in planner.units["score"] if u.condition in conditions]}
