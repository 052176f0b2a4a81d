"""Snakemake entry point of rule `checks`: Table 3, its R̂ sensitivity version, rank histograms,
and Table 4 (the datasets)."""

from postrisk.core.logs import job_log
from postrisk.report.table4 import write_table4
from postrisk.workflow.steps import report_checks

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out, inputs, params = snakemake.output, snakemake.input, snakemake.params
    report_checks(inputs.tasks, out.table, out.instances, out.figure, params.scale,
                  params.n_valid, out.sensitivity,
                  dict(zip(params.figure_priors, out.prior_figures, strict=True)))
    write_table4(inputs.tasks, dict(zip(params.table4_datasets, inputs.covariates, strict=True)),
                 dict(zip(params.table4_gp_datasets, inputs.gp_priors, strict=True)),
                 out.table4, params.scale)
