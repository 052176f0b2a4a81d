"""The classification family's units: one instance each (dataset, prior, noise, coverage, K,
seed), built from the dataset's covariates and its GP prior (the regression prior's kernel and
scale constant)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from postrisk.classification.key import CLASSIFICATION_KEY_COLUMNS, ClassificationKey
from postrisk.families.classification.config import settings_of
from postrisk.grid.config import ConfigError
from postrisk.grid.paths import path
from postrisk.grid.study import study_settings
from postrisk.planning.conditions import training_size

UNIT_KEYS = CLASSIFICATION_KEY_COLUMNS
#: One classification instance's store (sample, ground truth and reference posterior).
TASK_TEMPLATE = ("families/classification/tasks/{dataset}/{prior}/{noise}/{coverage}/"
                 "k{classes}/{seed}.zarr")


@dataclass(frozen=True)
class ClassificationUnit:
    """One classification instance: ``key``, its covariates and GP prior files, ``n`` training
    rows, ``settings`` (config ``families.classification`` with defaults), written to
    ``out``."""

    key: ClassificationKey
    covariates: str
    prior: str
    n: int
    settings: Mapping[str, Any]
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.key.as_dict().items()}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.covariates, self.prior)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out,)

    @property
    def dataset(self) -> str:
        return self.key.dataset

    @property
    def cost_name(self) -> str:
        return self.key.prior

    @property
    def cost_rows(self) -> int:
        """The size its cost entry scales with: its training rows (NUTS costs K·n² per
        gradient; the evaluation rows' conditional is a small share)."""
        return int(self.n)


def task_units(cfg: Mapping, policy: Any = None) -> list[ClassificationUnit]:
    """Every configured instance, dataset by dataset. A dataset must be one of the grid's, with
    the GP prior among the grid's priors (its kernel and scale constant are the regression
    prior stage's)."""
    section = study_settings(cfg, "classification")
    settings = settings_of(section)
    outside = [d for d in settings["datasets"] if d not in cfg["datasets"]]
    if outside:
        raise ConfigError(f"config key 'families.classification.datasets': {outside} are not "
                          f"datasets of the grid ({', '.join(cfg['datasets'])})")
    missing = [p for p in settings["priors"] if p not in cfg["priors"]]
    if settings["datasets"] and missing:
        raise ConfigError(f"config key 'families.classification.priors': {missing} not in "
                          f"'priors' ({', '.join(cfg['priors'])}): its prior stage fits them")
    units = []
    for dataset in settings["datasets"]:
        n = training_size(dataset, cfg["sizes"].get("n_cap"))
        if settings["n_cap"]:
            n = min(n, int(settings["n_cap"]))
        for prior in settings["priors"]:
            for noise in settings["noise_modes"]:
                for coverage in settings["coverages"]:
                    for k in settings["classes"]:
                        for seed in range(int(settings["seeds"])):
                            key = ClassificationKey(dataset, prior, noise, coverage, int(k),
                                                    seed)
                            units.append(ClassificationUnit(
                                key, path("covariates", dataset=dataset),
                                path("prior", dataset=dataset, prior=prior), n, settings,
                                path("classification_task", **key.as_dict())))
    return units


def summary_inputs(planner: Any) -> dict[str, list[str]]:
    """The summary reads every instance's store."""
    return {"tasks": [u.out for u in planner.units["classification_task"]]}


def prior_fits(cfg: Mapping) -> list[tuple[str, str]]:
    """The (dataset, prior) fits the instances read: each dataset's regression GP or BNN prior,
    fitted by the prior stage even where the regression grid does not use it (a preset's
    ``prior_grid`` may narrow the BNN to fewer datasets)."""
    return list(dict.fromkeys((u.key.dataset, u.key.prior) for u in task_units(cfg)))
