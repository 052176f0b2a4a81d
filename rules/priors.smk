# Priors (docs/design.md, "Priors"): each prior's per-dataset parameters (GP: kernel by
# marginal likelihood, then the scale constant; HBART and BNN: their scale constants).


rule prior:
    input:
        covariates=path("covariates"),
    output:
        path("prior"),
    params:
        settings=lambda wildcards: config[f"{wildcards.prior}_prior"],
    log:
        SIMPLE["prior"].log,
    benchmark:
        SIMPLE["prior"].benchmark
    conda:
        env("jax")
    threads: threads_of(SIMPLE["prior"])
    resources:
        **resources_of(SIMPLE["prior"]),
    script:
        "../scripts/prior.py"
