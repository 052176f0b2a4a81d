"""Snakemake entry point of every study's unit-stage rules: one job's units, by the step the
study's registration names."""

from postrisk.core.jax_env import share_accelerator_memory, use_host_devices

snakemake = globals()["snakemake"]
if snakemake.params.host_devices:  # before anything imports jax (a posterior-like stage)
    use_host_devices(snakemake.threads)
    share_accelerator_memory()

from postrisk.core.logs import job_log  # noqa: E402
from postrisk.workflow.steps import study_units  # noqa: E402

with job_log(snakemake.log[0]):
    study_units(snakemake.params.step, snakemake.params.jobs, n_threads=snakemake.threads,
                accelerator=snakemake.params.accelerator)
