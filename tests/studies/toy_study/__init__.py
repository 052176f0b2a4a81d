"""A toy study, registered by the tests: one unit stage (one unit per dataset of the grid: the
shape of its covariate store), one table. It follows the recipe of docs/contributing.md,
"Adding a study": a package whose ``STUDY`` the configuration names (``study_packages``), a
config section (``studies.toy_study``), nothing else of the pipeline edited."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from postrisk.grid.artefact import Artefact
from postrisk.grid.paths import path
from postrisk.grid.study import Study, UnitStage, study_settings


@dataclass(frozen=True)
class ShapeUnit:
    """One dataset's covariate store, read."""

    dataset: str
    covariates: str
    out: str

    @property
    def wildcards(self) -> dict[str, str]:
        return {"dataset": self.dataset}

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.covariates,)

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.out,)

    @property
    def cost_name(self) -> None:
        return None


def shape_units(cfg, policy) -> list[ShapeUnit]:
    if not study_settings(cfg, "toy_study").get("run"):
        return []
    return [ShapeUnit(d, path("covariates", dataset=d), path("toy_study_shape", dataset=d))
            for d in cfg["datasets"]]


def write_shapes(units, n_threads=1, accelerator=None) -> None:
    from postrisk.covariates.build import load_covariates

    for unit in units:
        cov = load_covariates(unit.covariates)
        n_rows, d = cov.x.shape
        Path(unit.out).parent.mkdir(parents=True, exist_ok=True)
        Path(unit.out).write_text(json.dumps({"dataset": unit.dataset, "rows": int(n_rows),
                                              "d": int(d), "n_eval": len(cov.eval_index)}))


def summarise(inputs, out, settings, scale) -> None:
    frame = pd.DataFrame([json.loads(Path(p).read_text()) for p in inputs["shapes"]])
    frame.insert(0, "scale", scale)
    frame.to_csv(out["toy_shapes"], index=False)


STUDY = Study(
    name="toy_study", title="A toy study: the shape of each covariate store",
    schema=lambda methods: {"type": "object", "additionalProperties": False,
                            "properties": {"run": {"type": "boolean"}}},
    summary=f"{__name__}:summarise",
    catalogue=(Artefact("toy_shapes", "studies/toy_study/shapes.csv", "toy_study",
                        f"{__name__}:summarise", title="Rows and columns per covariate store",
                        caption="One row per dataset of the grid (a toy study)."),),
    stages=(UnitStage(name="toy_study_shape", keys=("dataset",), outputs=("toy_study_shape",),
                      units=shape_units, step=f"{__name__}:write_shapes", directories=False),),
    inputs=lambda planner: {"shapes": [u.out for u in planner.units["toy_study_shape"]]},
    templates={"toy_study_shape": "studies/toy_study/shapes/{dataset}.json"},
)
