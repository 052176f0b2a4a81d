"""Snakemake entry point of rule `aggregate_scores`: mean ρ per method and target and every
evaluation table."""

from pathlib import Path

from postrisk.report.scores import ReportInputs
from postrisk.workflow.logs import job_log
from postrisk.workflow.steps import report_scores

snakemake = globals()["snakemake"]

with job_log(snakemake.log[0]):
    report = ReportInputs(html=snakemake.output.report, manifest=snakemake.output.manifest,
                          figures_dir=str(Path(snakemake.output.figures[0]).parent),
                          table3=snakemake.input.table3,
                          rank_histograms=list(snakemake.input.rank_histograms),
                          config=dict(snakemake.params.config),
                          deviations=snakemake.input.deviations)
    report_scores(snakemake.input.scores, snakemake.input.instances, snakemake.output.table,
                  snakemake.params.scale, snakemake.output.sensitivity,
                  tables_dir=str(Path(snakemake.output.tables[0]).parent),
                  long_table=snakemake.output.long, markdown=snakemake.output.page,
                  disentanglement=snakemake.input.disentanglement,
                  correlation=snakemake.params.correlation, report=report)
