"""Snakemake entry point of rule `score`: every method and reference row of one condition."""

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import score_condition_files

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    score_condition_files(snakemake.input.tasks, snakemake.params.seeds, snakemake.input.fits,
                          snakemake.params.methods, snakemake.output[0],
                          n_valid=snakemake.params.n_valid,
                          selection=snakemake.input.seed_selection)
