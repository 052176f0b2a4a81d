# Priors and task instances (docs/design.md, "Priors", "Task instances"): per-dataset prior
# parameters, then per instance the sample (what methods see) and the reference posterior (the
# task store).


rule prior:
    input:
        covariates=covariate_store_of,
    output:
        path("prior"),
    params:
        settings=prior_settings,
    log:
        "results/logs/prior/{dataset}/{prior}.log",
    benchmark:
        "results/benchmarks/prior/{dataset}_{prior}.tsv"
    conda:
        "../workflow/envs/jax.yaml"
    threads: 2
    script:
        "../scripts/prior.py"


if not config["posterior_batch"]:
    # The cluster default: one job per instance and stage.

    rule sample:
        input:
            covariates=covariate_store_of,
            prior=path("prior"),
        output:
            directory(path("sample")),
        params:
            n=training_size_of,
            digest=lambda wildcards: sample_digest(wildcards.prior),
            schema=TASK_SCHEMA_VERSION,
        log:
            "results/logs/sample/{dataset}/{prior}/{noise}/{coverage}/{seed}.log",
        benchmark:
            "results/benchmarks/sample/{dataset}_{prior}_{noise}_{coverage}_{seed}.tsv"
        conda:
            "../workflow/envs/jax.yaml"
        script:
            "../scripts/sample.py"

    rule posterior_exact:
        input:
            path("sample"),
        output:
            directory(path("task")),
        wildcard_constraints:
            prior="gp",
        params:
            settings=posterior_settings,
        log:
            "results/logs/posterior/{dataset}/{prior}/{noise}/{coverage}/{seed}.log",
        benchmark:
            "results/benchmarks/posterior/{dataset}_{prior}_{noise}_{coverage}_{seed}.tsv"
        conda:
            "../workflow/envs/jax.yaml"
        threads: 2
        script:
            "../scripts/posterior.py"

    # MCMC reference posteriors (bartz, NumPyro): chains spread over the job's devices; on the
    # cluster one GPU each (profiles/slurm), memory allocated on demand so jobs can share a
    # device.
    rule posterior_mcmc:
        input:
            path("sample"),
        output:
            directory(path("task")),
        wildcard_constraints:
            prior="hbart|bnn",
        params:
            settings=posterior_settings,
        log:
            "results/logs/posterior/{dataset}/{prior}/{noise}/{coverage}/{seed}.log",
        benchmark:
            "results/benchmarks/posterior/{dataset}_{prior}_{noise}_{coverage}_{seed}.tsv"
        conda:
            "../workflow/envs/jax.yaml"
        threads: 2
        resources:
            gpu=1,
        script:
            "../scripts/posterior.py"

else:
    # Presets (`posterior_batch: true`): all instances of one (dataset, prior) in one process
    # per stage — their sample stores, then their reference posteriors — so imports are paid
    # and samplers compiled once, not once per instance (amortise start-up rather than shrink
    # the science). Same stores, same numbers.
    for _prior in IMPLEMENTED_PRIORS:

        rule:
            name:
                f"sample_batch_{_prior}"
            input:
                covariates=covariate_store_of,
                prior=path("prior", prior=_prior),
            output:
                [directory(p) for p in batch_paths("sample", "{dataset}", _prior)],
            params:
                prior=_prior,
                instances=batch_instances(_prior),
                n=training_size_of,
                digest=sample_digest(_prior),
                schema=TASK_SCHEMA_VERSION,
            log:
                f"results/logs/sample/{{dataset}}/{_prior}/batch.log",
            benchmark:
                f"results/benchmarks/sample/{{dataset}}_{_prior}_batch.tsv"
            conda:
                "../workflow/envs/jax.yaml"
            script:
                "../scripts/sample.py"

        rule:
            name:
                f"posterior_batch_{_prior}"
            input:
                lambda w, prior=_prior: batch_paths("sample", w.dataset, prior),
            output:
                [directory(p) for p in batch_paths("task", "{dataset}", _prior)],
            params:
                settings=config["posterior"][_prior],
            log:
                f"results/logs/posterior/{{dataset}}/{_prior}/batch.log",
            benchmark:
                f"results/benchmarks/posterior/{{dataset}}_{_prior}_batch.tsv"
            conda:
                "../workflow/envs/jax.yaml"
            threads: 2
            resources:
                gpu=int(_prior != "gp"),
            script:
                "../scripts/posterior.py"
