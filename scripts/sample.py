"""Snakemake entry point of the sample rules: the sample stores of one job's instances."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import make_samples

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    make_samples(snakemake.params.jobs)
