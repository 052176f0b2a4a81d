# Scores (docs/evaluation.md): one scoring job per condition — every method's fits and the
# reference rows on the condition's usable seeds, against the task stores.


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
        SIMPLE["score"].log,
    benchmark:
        SIMPLE["score"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["score"])
    resources:
        **resources_of(SIMPLE["score"]),
    script:
        "../scripts/score.py"
