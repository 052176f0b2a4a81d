"""Snakemake entry point of rule `sn_study`: Tables 13–14, the mediation regressions and
Figure 10 of the SN study."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_sn_study

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out = dict(zip(snakemake.params.ids, snakemake.output.tables, strict=True))
    report_sn_study(snakemake.input.records, snakemake.input.scores,
                    {**out, "fig10_sn_methods": snakemake.output.figure},
                    snakemake.params.settings, snakemake.params.scale)
