"""The closed-form 1-D sandbox (Paplhám et al., 2026, §4.2): the Bayes-optimal scorers of OOD
detection, BALD, expected error reduction, risk and regret reject different inputs.

Config ``studies.sandbox`` (``run``: planned in ``all`` and ``studies``; ``snakemake sandbox``
builds it either way); no unit stage, no inputs: its summary ``sandbox`` builds it in one job.
"""

from postrisk.grid.study import Study
from postrisk.studies.sandbox.catalogue import CATALOGUE
from postrisk.studies.sandbox.config import (
    check_sandbox,
    sandbox_runs,
    sandbox_schema,
    summary_settings,
)

STUDY = Study(
    name="sandbox",
    title="The 1-D sandbox (Paplhám et al., 2026, §4.2)",
    order=30,
    schema=sandbox_schema,
    check=check_sandbox,
    summary="postrisk.studies.sandbox.steps:summarise",
    catalogue=CATALOGUE,
    settings=summary_settings,
    runs=sandbox_runs,
)
