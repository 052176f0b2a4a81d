"""Snakemake entry point of rule `report`: the HTML page of every shown table and figure."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_page

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_page(snakemake.output.html, snakemake.output.manifest, snakemake.params.contents,
                snakemake.params.scale, dict(snakemake.params.config),
                snakemake.input.deviations, snakemake.params.settings)
