"""Snakemake entry point of rule `checks`: Table 3, its R̂ sensitivity version, rank histograms."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_checks

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out = snakemake.output
    report_checks(snakemake.input, out.table, out.instances, out.figure, snakemake.params.scale,
                  snakemake.params.n_valid, out.sensitivity,
                  dict(zip(snakemake.params.figure_priors, out.prior_figures, strict=True)))
