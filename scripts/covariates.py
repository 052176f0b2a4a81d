"""Snakemake entry point of rule `covariates`: parse the job, call the library."""

from postrisk.covariates import build_covariates, get_dataset, scaling_from_store, write_covariates
from postrisk.covariates.fetch import FetchSettings
from postrisk.workflow.logs import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    spec = get_dataset(snakemake.wildcards.dataset)
    reference = snakemake.input.get("reference")
    scaling = scaling_from_store(reference) if reference else None
    fetch = FetchSettings.from_env(**snakemake.params.fetch)
    ds = build_covariates(spec, fetch, n_eval_cap=snakemake.params.n_eval_cap, scaling=scaling)
    write_covariates(ds, snakemake.output[0])
    print(f"wrote {snakemake.output[0]}")
