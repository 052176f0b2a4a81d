"""Is OOD detection a proxy for EU? (paper App. D.3, Tables 11–12, Figure 3B): methods fitted
on an in-distribution dataset's instances as the benchmark fits them, asked at held-out points
and as many rows of an OOD set; their OOD AUROC against the benchmark's ranking.

Config ``studies.ood_proxy``; unit stage ``ood_proxy_fit`` (one method on one condition each,
batched like the fit stage); summary ``ood_proxy``. A study dataset (registry role ``study``)
gets instances of its own (:func:`~postrisk.studies.ood_proxy.units.study_instances`).
"""

from postrisk.grid.study import Study, UnitStage
from postrisk.studies.ood_proxy.catalogue import CATALOGUE
from postrisk.studies.ood_proxy.config import check_ood_pair, ood_proxy_schema
from postrisk.studies.ood_proxy.units import (
    FIT_TEMPLATE,
    fit_units,
    study_datasets,
    study_instances,
    summary_inputs,
)
from postrisk.tasks.key import CONDITION_COLUMNS

STUDY = Study(
    name="ood_proxy",
    title="Is OOD detection a proxy for EU? (paper App. D.3)",
    order=20,
    schema=ood_proxy_schema,
    check=check_ood_pair,
    summary="postrisk.studies.ood_proxy.steps:summarise",
    catalogue=CATALOGUE,
    stages=(UnitStage(
        name="ood_proxy_fit", keys=(*CONDITION_COLUMNS, "method"),
        outputs=("ood_proxy_fit",), units=fit_units, step="postrisk.studies.ood_proxy.steps:fits",
        fixed=("method",), cost_by="method"),),
    inputs=summary_inputs,
    summary_cost_by_dataset=True,
    templates={"ood_proxy_fit": FIT_TEMPLATE},
    datasets=study_datasets,
    instances=study_instances,
    renamed={"ood_fit": "ood_proxy_fit", "ood_study": "ood_proxy"},
)
