"""Snakemake entry point of the ood_fit rules: the OOD study's fits of one job's (method,
condition) units, each asked at its instances' query rows."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import ood_fits

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    ood_fits(snakemake.params.jobs, n_threads=snakemake.threads)
