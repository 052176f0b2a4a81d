"""Snakemake entry point of rule `covariates`: one dataset's covariate store."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import make_covariates

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    make_covariates(snakemake.wildcards.dataset, snakemake.params.fetch,
                    snakemake.params.n_eval_cap, snakemake.output[0],
                    reference=snakemake.input.get("reference"))
