"""Snakemake entry point of rule `checks`: Table 3, its R̂ sensitivity version, rank histograms."""

from postrisk.pipeline import report_checks
from postrisk.workflow import job_log

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out = snakemake.output
    report_checks(snakemake.input, out.table, out.instances, out.figure, snakemake.params.scale,
                  snakemake.params.n_valid, out.sensitivity, out.family_figures)
