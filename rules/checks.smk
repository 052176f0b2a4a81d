# Reference-posterior checks (docs/design.md, "Reference-posterior checks" and "Seeds"; paper
# Table 3): pooled over all task stores of the grid.


# Per cell, the seeds whose BNN instance converged (max split-R̂ ≤ 1.05): the first
# `valid_per_cell` of them are fitted and scored for all three families (App. B.7).
rule valid_seeds:
    input:
        inputs_of_unit("valid_seeds", "bnn_tasks"),
    output:
        path("seed_selection"),
    params:
        unit=unit_of("valid_seeds"),
    log:
        "results/logs/valid_seeds/{dataset}/{noise}/{coverage}.log",
    benchmark:
        "results/benchmarks/checks/seeds_{dataset}_{noise}_{coverage}.tsv"
    conda:
        env("core")
    threads: threads_of(SIMPLE["valid_seeds"])
    resources:
        **resources_of(SIMPLE["valid_seeds"]),
    script:
        "../scripts/valid_seeds.py"


rule checks:
    input:
        all_task_stores,
    output:
        table=path("table3"),
        instances=path("instances"),
        sensitivity=path("table3_rhat101"),
        figure=path("rank_histograms"),
        family_figures=rank_histogram_figures(),
        pdfs=[pdf_of(p) for p in [path("rank_histograms"), *rank_histogram_figures()]],
    params:
        scale=config["scale"],
        n_valid=config["seeds"]["valid_per_cell"],
    log:
        "results/logs/checks.log",
    benchmark:
        "results/benchmarks/checks/checks.tsv"
    conda:
        env("core")
    threads: threads_of(SIMPLE["checks"])
    resources:
        **resources_of(SIMPLE["checks"]),
    script:
        "../scripts/checks.py"
