"""Snakemake entry point of rule `fit`: one method, one condition, every usable seed."""

from postrisk.pipeline import fit_condition
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    fit_condition(snakemake.wildcards.method, snakemake.params.settings,
                  snakemake.input.samples, snakemake.params.seeds, snakemake.output[0],
                  n_threads=snakemake.threads, n_valid=snakemake.params.n_valid,
                  selection=snakemake.input.seed_selection)
