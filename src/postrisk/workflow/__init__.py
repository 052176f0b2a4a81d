"""The workflow's library side: one function per step that the thin Snakemake scripts call
(:mod:`~postrisk.workflow.steps`), the session's setup (:mod:`~postrisk.workflow.session`:
import paths, JAX's process settings, the outside methods), a rule's settings from the
planner's rule objects (:mod:`~postrisk.workflow.rule_settings`), job logs
(:mod:`~postrisk.workflow.logs`) and the conda environments of the jobs
(:mod:`~postrisk.workflow.envs`)."""
