"""Snakemake entry point of rule `fit` (one method, one condition: its sweep when tuned, then
every usable seed) and of the batched `fit_batch_<prior>` rules (every condition of a prior)."""

from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import fit_condition

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    if hasattr(snakemake.params, "jobs"):
        jobs = snakemake.params.jobs
    else:
        w = snakemake.wildcards
        jobs = [{"samples": snakemake.input.samples, "seeds": snakemake.params.seeds,
                 "selection": snakemake.input.seed_selection,
                 "settings": snakemake.params.settings, "tuning": snakemake.params.tuning,
                 "journal": snakemake.params.journal,
                 "condition": [w.dataset, w.prior, w.noise, w.coverage],
                 "fits": snakemake.output.fits, "config": snakemake.output.config}]
    for job in jobs:
        fit_condition(snakemake.wildcards.method, job["settings"], job["samples"], job["seeds"],
                      job["fits"], n_threads=snakemake.threads,
                      n_valid=snakemake.params.n_valid, selection=job["selection"],
                      tuning=job["tuning"], journal=job["journal"],
                      condition=job["condition"], config_out=job["config"])
