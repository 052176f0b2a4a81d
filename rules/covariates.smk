# Covariates (docs/design.md, "Covariates"): fetch, clean, scale, split, shells, PC1 — one
# store per dataset.


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
        "../workflow/envs/core.yaml"
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
        "../workflow/envs/core.yaml"
    localrule: True
    script:
        "../scripts/verify_covariates.py"
