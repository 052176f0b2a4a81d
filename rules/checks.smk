# Reference-posterior checks (SPEC §8; paper Table 3): pooled over all task stores of the grid.


rule checks:
    input:
        all_task_stores,
    output:
        table="results/checks/table3.csv",
        instances="results/checks/instances.csv",
        figure="results/figures/rank_histograms.png",
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
