"""Snakemake entry point of rule `valid_seeds`: a cell's seeds whose BNN instance converged."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import select_seeds

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    select_seeds(snakemake.params.unit)
