# Methods (docs/design.md, "Methods"): one fit job per (method, condition), looping over the
# condition's seeds; one scoring job per condition (all methods and the reference rows); the
# aggregate table.


# A fit job runs its (method, condition)'s tuning sweep first when the condition is tuned
# (resuming from its journal), records the configuration it used in results/tuning/, then fits
# every usable seed. One job, not two, per (method, condition): the full grid's DAG stays
# plannable (docs/design.md, "Layout": job granularity).
if not config["fit_batch"]:

    rule fit:
        input:
            samples=condition_samples,
            seed_selection=seed_selection,
        output:
            fits=directory(path("fit")),
            config=path("tuning_result"),
        params:
            seeds=condition_seeds,
            n_valid=config["seeds"]["valid_per_cell"],
            settings=method_settings,
            tuning=tuning_settings,
            journal=tuning_journal,
        log:
            "results/logs/fit/{dataset}/{prior}/{noise}/{coverage}/{method}.log",
        benchmark:
            "results/benchmarks/fit/{dataset}_{prior}_{noise}_{coverage}_{method}.tsv"
        conda:
            "../workflow/envs/jax.yaml"
        threads: 2
        script:
            "../scripts/fit.py"

else:
    # Presets (`fit_batch: true`): one job per method tunes and fits every condition in one
    # process, so the method's imports and compiled code are paid once. Same
    # stores, same numbers as one job per condition.

    rule fit_batch:
        input:
            lambda w: fit_batch_inputs(w.method),
        output:
            [directory(c.path("fit")) for c in CONDITIONS]
            + [c.path("tuning_result") for c in CONDITIONS],
        params:
            jobs=lambda w: fit_batch_jobs(w.method),
            n_valid=config["seeds"]["valid_per_cell"],
        log:
            "results/logs/fit/{method}.log",
        benchmark:
            "results/benchmarks/fit/{method}_batch.tsv"
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
        path("scores"),
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
        instances=path("instances"),
    output:
        table=path("score_table"),
        sensitivity=path("score_table_rhat101"),
        figure=path("score_figure"),
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
