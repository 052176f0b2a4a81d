"""Snakemake entry point of rules `posterior_exact`, `posterior_mcmc` and `posterior_batch_*`
(one or several instances; each output store from the sample store at the same position)."""

from postrisk.core.jax_env import share_accelerator_memory, use_host_devices

snakemake = globals()["snakemake"]
# before anything imports jax: chains spread over one CPU device per thread; a GPU is shared
use_host_devices(snakemake.threads)
share_accelerator_memory()

from postrisk.workflow.logs import job_log  # noqa: E402
from postrisk.workflow.steps import make_tasks  # noqa: E402

with job_log(snakemake.log[0]):
    make_tasks(snakemake.input, snakemake.params.settings, snakemake.output)
