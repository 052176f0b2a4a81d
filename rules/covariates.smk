# Covariates (docs/design.md, "Covariates"): fetch, clean, scale, split, shells, PC1 — one
# store per dataset (any registered dataset, in the grid or not). Both rules download, so they
# run on the submit host (localrule).


rule covariates:
    input:
        unpack(scaling_reference_input),
    output:
        directory(path("covariates")),
    params:
        fetch=config["covariates"],
        n_eval_cap=config["sizes"]["n_eval_cap"],
        schema=COVARIATES_SCHEMA_VERSION,
    log:
        SIMPLE["covariates"].log,
    benchmark:
        SIMPLE["covariates"].benchmark
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
        path("covariates_verification"),
    params:
        fetch=config["covariates"],
    log:
        log_path("verify_covariates", ("dataset",)),
    conda:
        env("core")
    threads: 1
    resources:
        runtime=lambda w: PLANNER.cost.verify_resources(w.dataset).runtime,
        mem_mb=lambda w: PLANNER.cost.verify_resources(w.dataset).mem_mb,
        gpu=0,
    localrule: True
    script:
        "../scripts/verify_covariates.py"
