"""The warm-up check's config section, its units of work and what its summary reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from postrisk.covariates.registry import task_datasets
from postrisk.grid.paths import path
from postrisk.grid.schema import names_schema
from postrisk.grid.study import study_settings
from postrisk.planning.seeds import SeedPolicy
from postrisk.planning.units import InstanceUnit, key_wildcards, posterior_keys
from postrisk.tasks.key import TaskKey

#: An instance's reference posterior rebuilt with ``factor`` × the warm-up (a task store like
#: the benchmark's).
POSTERIOR_TEMPLATE = ("studies/warmup_check/x{factor}/{dataset}/{prior}/{noise}/{coverage}/"
                      "{seed}.zarr")


def warmup_check_schema(methods: tuple[str, ...]) -> dict:
    """Config ``studies.warmup_check``: the same instances' MCMC posteriors with ``factors`` ×
    the warm-up, on those of ``datasets`` that the grid builds ``prior`` instances for."""
    return {
        "type": "object", "additionalProperties": False,
        "required": ["prior", "datasets", "factors"],
        "properties": {
            "prior": {"enum": ["hbart", "bnn"]},
            "datasets": {**names_schema(task_datasets()), "minItems": 0},
            "factors": {"type": "array", "minItems": 1, "uniqueItems": True,
                        "items": {"type": "integer", "minimum": 1}},
        },
    }


@dataclass(frozen=True)
class WarmupPosteriorUnit(InstanceUnit):
    """One instance's reference posterior rebuilt with ``factor`` × its warm-up: the same sample
    and posterior seed as the benchmark's ``task`` store; ``settings``: config
    ``posterior.<prior>`` with the warm-up multiplied (tempered share unchanged)."""

    key: TaskKey
    factor: int
    sample: str
    task: str
    settings: Mapping[str, Any]
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {**key_wildcards(self.key), "factor": str(self.factor)}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.sample, self.task)


def posterior_units(cfg: Mapping, policy: SeedPolicy) -> list[WarmupPosteriorUnit]:
    """Every built instance of ``studies.warmup_check.prior`` on its datasets, once per factor
    (instance by instance)."""
    study = study_settings(cfg, "warmup_check")
    datasets, prior = set(study.get("datasets", [])), study.get("prior", "hbart")
    units = []
    for k in posterior_keys(cfg, policy):
        if k.prior != prior or k.dataset not in datasets:
            continue
        base = dict(cfg["posterior"][k.prior])
        wc = key_wildcards(k)
        units += [WarmupPosteriorUnit(k, int(f), path("sample", **wc), path("task", **wc),
                                      {**base, "warmup": int(base["warmup"]) * int(f)},
                                      path("warmup_check_task", **wc, factor=int(f)))
                  for f in study.get("factors", [])]
    return units


def summary_inputs(planner: Any) -> dict[str, list[str]]:
    """The benchmark's stores (``tasks``) and the longer warm-up's (``warmup``), unit by
    unit."""
    units = planner.units["warmup_check_posterior"]
    return {"tasks": [u.task for u in units], "warmup": [u.out for u in units]}
