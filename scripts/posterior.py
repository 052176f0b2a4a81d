"""Snakemake entry point of rule `posterior`."""

from postrisk.pipeline import make_task
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    make_task(snakemake.input[0], snakemake.params.draws, snakemake.output[0])
