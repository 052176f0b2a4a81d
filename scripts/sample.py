"""Snakemake entry point of rule `sample` (one instance) and of the batched `sample_batch_<prior>`
rules (every instance of a (dataset, prior); `params.instances` in output order)."""

from postrisk.tasks.generate import TaskKey
from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import make_sample

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    w = snakemake.wildcards
    if hasattr(snakemake.params, "instances"):
        keys = [TaskKey(w.dataset, snakemake.params.prior, noise, coverage, int(seed))
                for noise, coverage, seed in snakemake.params.instances]
    else:
        keys = [TaskKey(w.dataset, w.prior, w.noise, w.coverage, int(w.seed))]
    for i, (key, out) in enumerate(zip(keys, snakemake.output, strict=True), 1):
        if len(keys) > 1:
            print(f"instance {i}/{len(keys)}: {out}")
        make_sample(key, snakemake.input.covariates, snakemake.input.prior, snakemake.params.n,
                    snakemake.params.digest, out)
