"""Snakemake entry point of every study's summary rule (named like the study): its tables and
figures, by the step the study's registration names."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import study_summary

snakemake = globals()["snakemake"]


def paths(value):
    """A named input as a list (Snakemake gives a single file as a string)."""
    return [value] if isinstance(value, str) else list(value)


with job_log(snakemake.log[0]):
    study_summary(snakemake.params.step,
                  {name: paths(getattr(snakemake.input, name))
                   for name in snakemake.params.inputs},
                  dict(zip(snakemake.params.ids, snakemake.output.primary, strict=True)),
                  snakemake.params.settings, snakemake.params.scale)
