"""Snakemake entry point of rule `score`: every method and reference row of one condition."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import score_condition_files

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    score_condition_files(snakemake.params.unit)
