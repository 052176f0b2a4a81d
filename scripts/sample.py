"""Snakemake entry point of rule `sample`."""

from postrisk.pipeline import make_sample
from postrisk.tasks.generate import TaskKey
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    key = TaskKey(w.dataset, w.prior, w.noise, w.coverage, int(w.seed))
    make_sample(key, snakemake.input.covariates, snakemake.input.prior, snakemake.params.n,
                snakemake.params.digest, snakemake.output[0])
