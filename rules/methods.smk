# Methods (docs/design.md, "Methods"): one fit job per (method, condition), looping over the
# condition's seeds; one scoring job per condition (all methods and the reference rows); the
# aggregate table.


# A fit job runs its (method, condition)'s tuning sweep first when the condition is tuned
# (resuming from its journal), records the configuration it used in results/tuning/, then fits
# every usable seed. One job, not two, per (method, condition): the full grid's DAG stays
# plannable (docs/design.md, "Layout": job granularity). Presets run several conditions of one
# method per job (config `group_by`); a stage has one rule per output shape, all of this form.
for _rule in GROUPED["fit"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            [directory(p) for p in _rule.outputs["fit"]] + _rule.outputs["tuning_result"],
        params:
            jobs=jobs_of(_rule),
        log:
            _rule.log,
        benchmark:
            _rule.benchmark
        wildcard_constraints:
            **_rule.constraints,
        conda:
            env(_rule.env)
        threads: threads_of(_rule)
        resources:
            **resources_of(_rule),
        script:
            "../scripts/fit.py"


rule score:
    input:
        tasks=inputs_of_unit("score", "tasks"),
        fits=inputs_of_unit("score", "fits"),
        seed_selection=inputs_of_unit("score", "selection"),
    output:
        path("scores"),
    params:
        unit=unit_of("score"),
    log:
        "results/logs/score/{dataset}/{prior}/{noise}/{coverage}.log",
    benchmark:
        "results/benchmarks/score/{dataset}_{prior}_{noise}_{coverage}.tsv"
    conda:
        env("core")
    threads: threads_of(SIMPLE["score"])
    resources:
        **resources_of(SIMPLE["score"]),
    script:
        "../scripts/score.py"


rule aggregate_scores:
    input:
        scores=all_score_tables,
        instances=path("instances"),
        disentanglement=all_disentanglement_runs,
        table3=path("table3"),
        rank_histograms=rank_histogram_figures(),
        deviations=os.path.join(workflow.basedir, "docs/deviations.md"),
    output:
        table=path("score_table"),
        sensitivity=path("score_table_rhat101"),
        tables=evaluation_tables(),
        long=path("metrics_long"),
        page=path("tables_page"),
        figures=report_figures(),
        report=path("report"),
        manifest=path("report_manifest"),
    params:
        scale=config["scale"],
        config=config,
        correlation=config["disentanglement"]["correlation"],
    log:
        "results/logs/aggregate_scores.log",
    benchmark:
        "results/benchmarks/aggregate/scores.tsv"
    conda:
        env("core")
    threads: threads_of(SIMPLE["aggregate_scores"])
    resources:
        **resources_of(SIMPLE["aggregate_scores"]),
    script:
        "../scripts/aggregate_scores.py"
