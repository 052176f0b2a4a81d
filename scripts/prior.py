"""Snakemake entry point of rule `prior`."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import fit_prior

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    fit_prior(w.dataset, w.prior, snakemake.input.covariates, snakemake.params.settings,
              snakemake.output[0])
