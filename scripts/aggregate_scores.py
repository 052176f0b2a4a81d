"""Snakemake entry point of rule `aggregate_scores`: mean ρ per method and target."""

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import report_scores

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_scores(snakemake.input.scores, snakemake.input.instances, snakemake.output.table,
                  snakemake.output.figure, snakemake.params.scale, snakemake.output.sensitivity)
