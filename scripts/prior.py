"""Snakemake entry point of rule `prior`."""

from postrisk.pipeline import fit_prior
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    fit_prior(w.dataset, w.prior, snakemake.input.covariates, snakemake.params.settings,
              snakemake.output[0])
