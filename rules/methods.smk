# Methods (SPEC §10): one fit job per (method, condition), looping over the condition's seeds;
# one scoring job per condition (all methods and the reference rows); the aggregate table.


rule fit:
    input:
        samples=condition_samples,
        seed_selection=seed_selection,
    output:
        directory("results/fits/{dataset}/{prior}/{noise}/{coverage}/{method}.zarr"),
    params:
        seeds=condition_seeds,
        n_valid=config["seeds"]["valid_per_cell"],
        settings=method_settings,
    log:
        "results/logs/fit/{dataset}/{prior}/{noise}/{coverage}/{method}.log",
    benchmark:
        "results/benchmarks/fit/{dataset}_{prior}_{noise}_{coverage}_{method}.tsv"
    conda:
        "../workflow/envs/jax.yaml"
    threads: 2
    script:
        "../scripts/fit.py"


rule score:
    input:
        tasks=condition_tasks,
        fits=condition_fits,
        seed_selection=seed_selection,
    output:
        "results/scores/{dataset}/{prior}/{noise}/{coverage}.csv",
    params:
        seeds=condition_seeds,
        n_valid=config["seeds"]["valid_per_cell"],
        methods=lambda wildcards: IMPLEMENTED_METHODS,
    log:
        "results/logs/score/{dataset}/{prior}/{noise}/{coverage}.log",
    benchmark:
        "results/benchmarks/score/{dataset}_{prior}_{noise}_{coverage}.tsv"
    conda:
        "../workflow/envs/core.yaml"
    script:
        "../scripts/score.py"


rule aggregate_scores:
    input:
        scores=all_score_tables,
        instances="results/checks/instances.csv",
    output:
        table="results/tables/scores.csv",
        sensitivity="results/tables/scores_rhat101.csv",
        figure="results/figures/scores.png",
    params:
        scale=config["scale"],
    log:
        "results/logs/aggregate_scores.log",
    benchmark:
        "results/benchmarks/aggregate/scores.tsv"
    conda:
        "../workflow/envs/core.yaml"
    script:
        "../scripts/aggregate_scores.py"
