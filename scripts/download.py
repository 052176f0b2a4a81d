"""Snakemake entry point of rule `download`: fetch and verify a published release."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import download_release

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    download_release(snakemake.params.settings, snakemake.output[0])
