"""Snakemake entry point of rule `release`: pack the valid instances, checksum, manifest."""

from pathlib import Path

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import pack_release

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    pack_release(snakemake.input.instances, snakemake.input.documents,
                 Path(snakemake.output.manifest).parent,
                 snakemake.params.settings, snakemake.params.scale,
                 snakemake.params.config_digest)
