"""Snakemake entry point of rule `verify_covariates`: fetch the canonical source and check it."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import verify_dataset

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    verify_dataset(snakemake.wildcards.dataset, snakemake.params.fetch, snakemake.output[0])
