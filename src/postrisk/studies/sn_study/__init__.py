"""Does spectral normalisation help the network methods? (paper App. D.4, Tables 13–14,
Figure 10): each (method, condition)'s plain arm refitted at the benchmark's configuration, the
SN and WD arms re-tuned and fitted on the same seeds, then the paired changes and the
mediation regressions.

Config ``studies.sn_study`` (``run``: planned in ``all`` and ``studies``); unit stage
``sn_study_fit`` (one method on one condition each, batched like the fit stage); summary
``sn_study``.
"""

from postrisk.grid.study import Study, UnitStage
from postrisk.studies.sn_study.catalogue import CATALOGUE
from postrisk.studies.sn_study.config import check_sn_study, sn_study_schema, summary_settings
from postrisk.studies.sn_study.units import TEMPLATES, fit_units, summary_inputs
from postrisk.tasks.key import CONDITION_COLUMNS

STUDY = Study(
    name="sn_study",
    title="Spectral normalisation vs strong weight decay (paper App. D.4)",
    order=40,
    schema=sn_study_schema,
    check=check_sn_study,
    summary="postrisk.studies.sn_study.steps:summarise",
    catalogue=CATALOGUE,
    stages=(UnitStage(
        name="sn_study_fit", keys=(*CONDITION_COLUMNS, "method"),
        outputs=("sn_study_fit", "sn_study_tuning"), units=fit_units,
        step="postrisk.studies.sn_study.steps:fits", fixed=("method",), cost_by="method",
        directories=False),),
    inputs=summary_inputs,
    settings=summary_settings,
    templates=TEMPLATES,
    renamed={"sn_fit": "sn_study_fit"},
)
