"""Snakemake entry point of rule `figure`: one catalogue figure, PNG and PDF."""

from postrisk.core.logs import job_log
from postrisk.grid.artefacts import CONDITION_SCORES
from postrisk.workflow.steps import report_figure

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    inputs = dict(snakemake.input.items())
    scores = inputs.pop(CONDITION_SCORES, [])  # every condition's scores; the rest: tables by id
    report_figure(snakemake.params.figure, inputs, scores,
                  snakemake.params.scale, snakemake.output.png)
