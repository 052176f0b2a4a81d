"""Snakemake entry point of rule `warmup_check`: the HBART warm-up study's tables."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_warmup_check

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_warmup_check(snakemake.input.tasks, snakemake.input.warmup, snakemake.output.summary,
                        snakemake.output.instances, snakemake.params.scale)
