"""The classification family: labels from known class probabilities π*(x) = softmax(f*(x)/τ(x))
on the benchmark's covariates, a GP reference posterior by NUTS, the oracle of the log loss and
the Brier score (docs/classification.md).

Config ``families.classification``; unit stage ``classification_task`` (one instance each:
sample and reference posterior in one store); summary ``classification`` (the reference
posteriors' calibration over the instances). ``snakemake classification`` builds them.
"""

from postrisk.families.classification.config import (
    check_classification,
    classification_schema,
    summary_settings,
)
from postrisk.families.classification.units import (
    TASK_TEMPLATE,
    UNIT_KEYS,
    summary_inputs,
    task_units,
)
from postrisk.grid.artefact import Artefact
from postrisk.grid.study import Study, TaskFamily, UnitStage

_SUMMARY = "postrisk.families.classification.steps:summarise"

PIPELINE = Study(
    name="classification",
    title="Classification tasks: known class probabilities, a GP reference posterior",
    section="families",
    order=5,
    schema=classification_schema,
    check=check_classification,
    summary=_SUMMARY,
    catalogue=(Artefact(
        "classification_calibration", "families/classification/calibration.csv",
        "classification", _SUMMARY,
        title="Classification instances: do the reference posteriors cover π*?",
        caption="One row per classification instance: the share of (evaluation point, class) "
                "pairs whose true class probability π*_k(x) lies in the central 90% interval "
                "of the instance's D stored draws (recomputed from the store), against a "
                "perfect sampler's 0.9·(D − 1)/(D + 1); max R̂ and min ESS over points and "
                "classes; the amplitude and the prior's mean entropy share. Last row: the "
                "mean over instances with its 95% t-interval, and whether the nominal lies "
                "inside."),),
    stages=(UnitStage(
        name="classification_task", keys=UNIT_KEYS, outputs=("classification_task",),
        units=task_units, step="postrisk.families.classification.steps:build_tasks",
        fixed=("prior",), inputs=(("covariates", ("dataset",)), ("prior", ("dataset", "prior"))),
        cost_by="prior", accelerator_by="stage", host_devices=True,
        cost={"threads": 2, "minutes": 2.0, "mem_mb": 4000}),),
    inputs=summary_inputs,
    settings=summary_settings,
    templates={"classification_task": TASK_TEMPLATE},
)

FAMILY = TaskFamily(
    name="classification",
    title="Classification: y ~ Cat(softmax(f*(x)/τ(x))) with a known temperature field",
    task="postrisk.classification.task:ClassificationTask",
    pipeline=PIPELINE,
)
