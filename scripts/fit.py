"""Snakemake entry point of the fit rules: one method on one job's conditions (each: its sweep
when tuned, then every usable seed)."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import fit_conditions

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    fit_conditions(snakemake.params.jobs, n_threads=snakemake.threads)
