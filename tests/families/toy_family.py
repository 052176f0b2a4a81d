"""A toy task family, registered by the tests: one instance per dataset of the grid (y = the
sign of the first covariate, no noise, a "posterior" of one draw: the truth), one table. It
follows docs/contributing.md, "Adding a task family": a module whose ``FAMILY`` the
configuration names (``family_packages``), a config section (``families.toy_family``),
nothing else of the pipeline edited."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.grid.artefact import Artefact
from postrisk.grid.paths import path
from postrisk.grid.study import Study, TaskFamily, UnitStage, study_settings


@dataclass(frozen=True)
class ToyUnit:
    dataset: str
    seed: int
    covariates: str
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {"dataset": self.dataset, "seed": str(self.seed)}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.covariates,)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out,)

    @property
    def cost_name(self) -> None:
        return None


def toy_units(cfg, policy) -> list[ToyUnit]:
    section = study_settings(cfg, "toy_family")
    if not section.get("run"):
        return []
    return [ToyUnit(d, s, path("covariates", dataset=d),
                    path("toy_family_task", dataset=d, seed=s))
            for d in cfg["datasets"] for s in range(int(section.get("seeds", 1)))]


def build(units, n_threads=1, accelerator=None) -> None:
    from postrisk.covariates.build import load_covariates

    for unit in units:
        cov = load_covariates(unit.covariates)
        x = cov.x[cov.eval_index][:20]
        y = (x[:, 0] > np.median(x[:, 0])).astype(np.int64)
        write_zarr_atomic(xr.Dataset(
            {"x": (("row", "feature"), x), "y": (("row",), y)},
            attrs={"family": "toy_family", "dataset": unit.dataset, "seed": unit.seed}),
            unit.out)


@dataclass(frozen=True)
class ToyTask:
    ds: xr.Dataset

    @classmethod
    def load(cls, store) -> ToyTask:
        return cls(open_zarr(store))


def summarise(inputs, out, settings, scale) -> None:
    rows = [{"dataset": ToyTask.load(p).ds.attrs["dataset"],
             "ones": int(ToyTask.load(p).ds["y"].sum())} for p in inputs["tasks"]]
    Path(out["toy_family_table"]).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out["toy_family_table"], index=False)


FAMILY = TaskFamily(
    name="toy_family", title="A toy family: the sign of the first covariate",
    task=f"{__name__}:ToyTask",
    pipeline=Study(
        name="toy_family", title="A toy family", section="families",
        schema=lambda methods: {"type": "object", "additionalProperties": False,
                                "properties": {"run": {"type": "boolean"},
                                               "seeds": {"type": "integer"}}},
        summary=f"{__name__}:summarise",
        catalogue=(Artefact("toy_family_table", "families/toy_family/ones.csv", "toy_family",
                            f"{__name__}:summarise", title="Ones per toy instance",
                            caption="One row per toy instance."),),
        stages=(UnitStage(name="toy_family_task", keys=("dataset", "seed"),
                          outputs=("toy_family_task",), units=toy_units,
                          step=f"{__name__}:build"),),
        inputs=lambda planner: {"tasks": [u.out for u in planner.units["toy_family_task"]]},
        templates={"toy_family_task": "families/toy_family/tasks/{dataset}/{seed}.zarr"},
    ),
)
