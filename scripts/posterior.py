"""Snakemake entry point of the posterior rules (`posterior_exact`, `posterior_mcmc`): the
reference posteriors of one job's instances."""

from postrisk.core.jax_env import share_accelerator_memory, use_host_devices

snakemake = globals()["snakemake"]
# before anything imports jax: chains spread over one CPU device per thread; a GPU is shared
use_host_devices(snakemake.threads)
share_accelerator_memory()

from postrisk.core.logs import job_log  # noqa: E402
from postrisk.workflow.steps import make_tasks  # noqa: E402

with job_log(snakemake.log[0]):
    make_tasks(snakemake.params.jobs, snakemake.params.accelerator)
