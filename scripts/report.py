"""Snakemake entry point of rules `report` and `studies_report`: the HTML page of every shown
table and figure of the benchmark, or of the studies."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_page

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report_page(snakemake.output.html, snakemake.output.manifest, snakemake.params.contents,
                snakemake.params.scale, dict(snakemake.params.config),
                snakemake.input.deviations, snakemake.params.settings, snakemake.params.title)
