"""Snakemake entry point of rule `tables`: every evaluation table and the tables page."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_tables

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_tables(snakemake.input.scores, snakemake.input.instances,
                  dict(zip(snakemake.params.ids, snakemake.output.tables, strict=True)),
                  snakemake.output.page, snakemake.params.scale,
                  disentanglement=snakemake.input.disentanglement,
                  correlation=snakemake.params.correlation,
                  definition=snakemake.params.definition)
