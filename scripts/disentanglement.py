"""Snakemake entry point of rule `disentanglement`: one method's DE experiment on one instance."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import disentanglement_experiment

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    disentanglement_experiment(snakemake.params.unit, snakemake.params.settings,
                               n_threads=snakemake.threads)
