"""Snakemake entry point of rule `aggregate_scores`: mean ρ per method and target."""

from postrisk.pipeline import report_scores
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_scores(snakemake.input.scores, snakemake.input.instances, snakemake.output.table,
                  snakemake.output.figure, snakemake.params.scale, snakemake.output.sensitivity)
