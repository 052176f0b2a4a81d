"""The HBART warm-up check (paper App. B.7): the benchmark's instances of one MCMC prior
rebuilt with ``factor`` × the warm-up (same samples, same posterior seed, tempered share
unchanged), then the change in coverage and posterior SD against the benchmark's posteriors.

Config ``studies.warmup_check``; unit stage ``warmup_check_posterior`` (one instance and factor
each, batched like the posterior stage); summary ``warmup_check``.
"""

from postrisk.grid.study import Study, UnitStage
from postrisk.studies.warmup_check.catalogue import CATALOGUE
from postrisk.studies.warmup_check.units import (
    POSTERIOR_TEMPLATE,
    posterior_units,
    summary_inputs,
    warmup_check_schema,
)
from postrisk.tasks.key import KEY_COLUMNS

STUDY = Study(
    name="warmup_check",
    title="HBART warm-up check (paper App. B.7)",
    order=10,
    schema=warmup_check_schema,
    summary="postrisk.studies.warmup_check.steps:summarise",
    catalogue=CATALOGUE,
    stages=(UnitStage(
        name="warmup_check_posterior", keys=KEY_COLUMNS, outputs=("warmup_check_task",),
        units=posterior_units, step="postrisk.studies.warmup_check.steps:posteriors",
        fixed=("prior",), inputs=(("sample", KEY_COLUMNS), ("task", KEY_COLUMNS)),
        cost_by="prior", accelerator_by="prior", host_devices=True),),
    inputs=summary_inputs,
    summary_cost_by_dataset=True,
    templates={"warmup_check_task": POSTERIOR_TEMPLATE},
    renamed={"warmup_posterior": "warmup_check_posterior"},
)
