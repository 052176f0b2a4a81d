"""Snakemake entry point of rule `aggregate_scores`: mean ρ per method and target and every
evaluation table."""

from pathlib import Path

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import report_scores

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_scores(snakemake.input.scores, snakemake.input.instances, snakemake.output.table,
                  snakemake.output.figure, snakemake.params.scale, snakemake.output.sensitivity,
                  tables_dir=str(Path(snakemake.output.tables[0]).parent),
                  long_table=snakemake.output.long, markdown=snakemake.output.page,
                  disentanglement=snakemake.input.disentanglement,
                  correlation=snakemake.params.correlation)
