# Reference-posterior checks (docs/design.md, "Reference-posterior checks" and "Seeds"; paper
# Table 3): which seeds of each cell are valid, then Table 3 and the rank histograms pooled
# over all task stores of the grid (catalogue stage `checks`, postrisk.grid.artefacts).


# Per cell, the seeds whose BNN instance converged (max split-R̂ ≤ 1.05): the first
# `valid_per_cell` of them are fitted and scored for all three priors (App. B.7).
rule valid_seeds:
    input:
        inputs_of_unit("valid_seeds", "bnn_tasks"),
    output:
        path("seed_selection"),
    params:
        unit=unit_of("valid_seeds"),
    log:
        SIMPLE["valid_seeds"].log,
    benchmark:
        SIMPLE["valid_seeds"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["valid_seeds"])
    resources:
        **resources_of(SIMPLE["valid_seeds"]),
    script:
        "../scripts/valid_seeds.py"


# The BNN-first pass (docs/design.md, "Seeds"): every cell's seed selection and what it needs
# (the BNN instances), nothing else. Run `snakemake seed_selections` before the grid: the next
# invocation plans the GP and HBART posteriors on each cell's valid seeds only.
rule seed_selections:
    input:
        [unit.out for unit in PLANNER.units["valid_seeds"]],


#: Table 4's rows: the datasets of the run's conditions, each with its covariate store, and the
#: GP prior file of those with a GP condition (the kernel).
TABLE4_DATASETS = PLANNER.artefact_values()["dataset"]
TABLE4_GP_DATASETS = [d for d, p in PLANNER.artefact_values()["dataset,prior"] if p == "gp"]


rule checks:
    input:
        tasks=all_task_stores,
        covariates=[path("covariates", dataset=d) for d in TABLE4_DATASETS],
        gp_priors=[path("prior", dataset=d, prior="gp") for d in TABLE4_GP_DATASETS],
    output:
        table=path_of("table3"),
        sensitivity=path_of("table3_rhat101"),
        instances=path_of("instances"),
        table4=path_of("table4"),
        figure=path_of("rank_histograms"),
        prior_figures=primary_files("rank_histograms_prior"),
        companions=companion_files("rank_histograms", "rank_histograms_prior"),
    params:
        figure_priors=PLANNER.priors,
        table4_datasets=TABLE4_DATASETS,
        table4_gp_datasets=TABLE4_GP_DATASETS,
        scale=config["scale"],
        n_valid=config["seeds"]["valid_per_cell"],
    log:
        SIMPLE["checks"].log,
    benchmark:
        SIMPLE["checks"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["checks"])
    resources:
        **resources_of(SIMPLE["checks"]),
    script:
        "../scripts/checks.py"
