# Covariates (docs/design.md, "Covariates"): fetch, clean, scale, split, shells, PC1 — one
# store per dataset. Both rules download, so they run on the submit host (localrule).


rule covariates:
    input:
        unpack(scaling_reference_input),
    output:
        directory(path("covariates")),
    params:
        fetch=fetch_params,
        n_eval_cap=config["sizes"]["n_eval_cap"],
        schema=COVARIATES_SCHEMA_VERSION,
    log:
        "results/logs/covariates/{dataset}.log",
    benchmark:
        "results/benchmarks/covariates/{dataset}.tsv"
    conda:
        env("core")
    threads: threads_of(SIMPLE["covariates"])
    resources:
        **resources_of(SIMPLE["covariates"]),
    localrule: True
    script:
        "../scripts/covariates.py"


rule verify_covariates:
    output:
        "results/covariates/verification/{dataset}.json",
    params:
        fetch=fetch_params,
    log:
        "results/logs/verify_covariates/{dataset}.log",
    conda:
        env("core")
    threads: 1
    resources:
        runtime=lambda w: grid.cost.verify_resources(config, w.dataset).runtime,
        mem_mb=lambda w: grid.cost.verify_resources(config, w.dataset).mem_mb,
        gpu=0,
    localrule: True
    script:
        "../scripts/verify_covariates.py"
