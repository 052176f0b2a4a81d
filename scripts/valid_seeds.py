"""Snakemake entry point of rule `valid_seeds`: a cell's seeds whose BNN instance converged."""

from postrisk.pipeline import select_seeds
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    select_seeds(snakemake.input, snakemake.params.seeds, snakemake.params.n_valid,
                 snakemake.output[0])
