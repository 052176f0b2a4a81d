"""Snakemake entry point of rule `ood_study`: the OOD study's tables and Figure 3B."""

from postrisk.core.logs import job_log
from postrisk.workflow.steps import report_ood_study

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    out = dict(zip(snakemake.params.ids, snakemake.output.tables, strict=True))
    report_ood_study(snakemake.input.fits, snakemake.input.samples, snakemake.input.ood[0],
                     snakemake.input.scores, {**out, "fig3b_ood_auroc": snakemake.output.figure},
                     snakemake.params.scale)
