"""Where every output of the workflow lives: one template per kind of file.

The workflow's rules, the command line and the tests build paths from these templates and
nowhere else. A template's fields are the keys of what the file holds: ``{dataset}``,
``{prior}``, ``{noise}``, ``{coverage}``, ``{seed}``, ``{method}``. Formatting a template with a
field's own wildcard text (``dataset="{dataset}"``) leaves that wildcard for Snakemake.
"""

from __future__ import annotations

RESULTS = "results"

TEMPLATES: dict[str, str] = {
    "covariates": "covariates/{dataset}.zarr",
    "prior": "priors/{dataset}/{prior}.json",
    "sample": "samples/{dataset}/{prior}/{noise}/{coverage}/{seed}.zarr",
    "task": "tasks/{dataset}/{prior}/{noise}/{coverage}/{seed}.zarr",
    "seed_selection": "checks/seeds/{dataset}/{noise}/{coverage}.json",
    "fit": "fits/{dataset}/{prior}/{noise}/{coverage}/{method}.zarr",
    "tuning_result": "tuning/{dataset}/{prior}/{noise}/{coverage}/{method}.json",
    "tuning_journal": "tuning/journals/{dataset}/{prior}/{noise}/{coverage}/{method}.log",
    "scores": "scores/{dataset}/{prior}/{noise}/{coverage}.csv",
    "table3": "checks/table3.csv",
    "table3_rhat101": "checks/table3_rhat101.csv",
    "instances": "checks/instances.csv",
    "rank_histograms": "figures/rank_histograms.png",
    "rank_histogram_family": "figures/rank_histograms_{prior}.png",
    "score_table": "tables/scores.csv",
    "score_table_rhat101": "tables/scores_rhat101.csv",
    "figure": "figures/{name}.png",
    "report": "report/index.html",
    "report_manifest": "report/manifest.json",
    "evaluation_table": "tables/{name}.csv",
    "tables_page": "tables/tables.md",
    "metrics_long": "tables/metrics_long.csv",
    "disentanglement": "disentanglement/{dataset}/{prior}/{noise}/{coverage}/{seed}/{method}.csv",
    "release_file": "release/{name}",
}

#: The evaluation tables written beside the mean-ρ table (``tables/<name>.csv``).
EVALUATION_TABLES = ("metric_means", "table7", "table8", "table9", "table10", "matched_prior",
                     "matched_prior_ranks", "shells", "rhat_sensitivity", "noise_shape",
                     "disentanglement")

#: The figures of the run's report (``figures/<name>.png`` and ``.pdf``): paper Figures 2, 3A,
#: 7 and per-dataset panels (8–9); ``postrisk.report.figures.FIGURES`` captions each.
REPORT_FIGURES = ("fig2_mean_rho", "fig3a_entanglement", "fig7_matched_prior",
                  "fig8_per_dataset_eu", "fig9_per_dataset_au")

#: Every key a template may use, each matching itself as a Snakemake wildcard.
WILDCARDS = {key: "{" + key + "}" for key in
             ("dataset", "prior", "noise", "coverage", "seed", "method")}


def path(kind: str, root: str = RESULTS, **keys: object) -> str:
    """The path of one file of ``kind``; ``keys`` fill the template's fields.

    A field left out keeps its Snakemake wildcard (``path("sample", prior="gp")`` is the
    pattern of every GP sample store).
    """
    if kind not in TEMPLATES:
        raise KeyError(f"unknown output kind {kind!r}; known: {', '.join(TEMPLATES)}")
    return f"{root}/" + TEMPLATES[kind].format(**{**WILDCARDS, **keys})
