"""Snakemake entry point of the sn_fit rules: the SN study's three arms of one job's (method,
condition) units."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import sn_fits

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    sn_fits(snakemake.params.jobs, n_threads=snakemake.threads)
