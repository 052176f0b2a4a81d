# Reference-posterior checks (SPEC §8; paper Table 3): pooled over all task stores of the grid.


# Per cell, the seeds whose BNN instance converged (max split-R̂ ≤ 1.05): the first
# `valid_per_cell` of them are fitted and scored for all three families (App. B.7).
rule valid_seeds:
    input:
        cell_bnn_tasks,
    output:
        "results/checks/seeds/{dataset}/{noise}/{coverage}.json",
    params:
        seeds=lambda wildcards: TASK_SEEDS,
        n_valid=config["seeds"]["valid_per_cell"],
    log:
        "results/logs/valid_seeds/{dataset}/{noise}/{coverage}.log",
    benchmark:
        "results/benchmarks/checks/seeds_{dataset}_{noise}_{coverage}.tsv"
    conda:
        "../workflow/envs/core.yaml"
    script:
        "../scripts/valid_seeds.py"


rule checks:
    input:
        all_task_stores,
    output:
        table="results/checks/table3.csv",
        instances="results/checks/instances.csv",
        sensitivity="results/checks/table3_rhat101.csv",
        figure="results/figures/rank_histograms.png",
        family_figures=expand("results/figures/rank_histograms_{prior}.png",
                              prior=IMPLEMENTED_PRIORS),
    params:
        scale=config["scale"],
        n_valid=config["seeds"]["valid_per_cell"],
    log:
        "results/logs/checks.log",
    benchmark:
        "results/benchmarks/checks/checks.tsv"
    conda:
        "../workflow/envs/core.yaml"
    script:
        "../scripts/checks.py"
