"""The workflow's library side: one function per step that the thin Snakemake scripts call
(:mod:`~postrisk.workflow.steps`), the session's setup (:mod:`~postrisk.workflow.session`:
import paths, JAX's process settings, the outside methods), a rule's settings from the
planner's rule objects (:mod:`~postrisk.workflow.rule_settings`), the conda environments
of the jobs (:mod:`~postrisk.workflow.envs`), the check of a SLURM run's account and
partitions before anything is submitted (:mod:`~postrisk.workflow.slurm`) and the snakemake
command of ``postrisk run`` and ``postrisk task`` (:mod:`~postrisk.workflow.launch`); a job's
log file is :func:`postrisk.core.logs.job_log`."""
