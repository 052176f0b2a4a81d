"""The workflow's library side: one function per step that the thin Snakemake scripts call
(:mod:`~postrisk.workflow.steps`), job logs (:mod:`~postrisk.workflow.logs`) and the conda
environments of the jobs (:mod:`~postrisk.workflow.envs`)."""
