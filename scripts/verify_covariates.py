"""Snakemake entry point of rule `verify_covariates`: fetch the canonical source and check it."""

import json

from postrisk.covariates import verify_covariates
from postrisk.covariates.fetch import FetchSettings
from postrisk.workflow.logs import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    fetch = FetchSettings.from_env(**snakemake.params.fetch)
    report = verify_covariates(snakemake.wildcards.dataset, fetch)
    with open(snakemake.output[0], "w") as fh:
        json.dump(report.as_dict(), fh, indent=2)
