"""Snakemake entry point of rules `posterior_exact` and `posterior_mcmc`."""

from postrisk.jax_env import share_accelerator_memory, use_host_devices

snakemake = globals()["snakemake"]
# before anything imports jax: chains spread over one CPU device per thread; a GPU is shared
use_host_devices(snakemake.threads)
share_accelerator_memory()

from postrisk.pipeline import make_task  # noqa: E402
from postrisk.workflow import job_log  # noqa: E402

with job_log(snakemake.log[0]):
    make_task(snakemake.input[0], snakemake.params.settings, snakemake.output[0])
