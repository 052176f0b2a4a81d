"""Snakemake entry point of rule `figure`: one catalogue figure, PNG and PDF."""

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import report_figure

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    tables = {name: path for name, path in snakemake.input.items() if name != "scores"}
    report_figure(snakemake.params.figure, tables, snakemake.input.scores,
                  snakemake.params.scale, snakemake.output.png)
