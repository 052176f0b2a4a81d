"""Snakemake entry point of rule `sandbox`: the closed-form 1-D sandbox's tables and figure."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_sandbox

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out = dict(zip(snakemake.params.ids, snakemake.output.tables, strict=True))
    report_sandbox(snakemake.params.settings, {**out, "fig_sandbox": snakemake.output.figure},
                   snakemake.params.scale)
