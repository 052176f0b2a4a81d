"""Snakemake entry point of rule `release`: pack the valid instances, checksum, manifest."""

from pathlib import Path

from postrisk.core.logs import job_log
from postrisk.workflow.steps import pack_release

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    inputs, params = snakemake.input, snakemake.params
    pack_release(inputs.instances, inputs.tasks, params.task_keys,
                 dict(zip(params.datasets, inputs.covariates, strict=True)),
                 dict(zip(map(tuple, params.pairs), inputs.priors, strict=True)),
                 inputs.documents, Path(snakemake.output.manifest).parent, params.settings,
                 params.scale, params.config_digest)
