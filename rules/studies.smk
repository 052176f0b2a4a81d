# The paper's studies (docs/design.md, "Studies"): each a stage of its own, planned where the
# config's `studies.<study>` names something to run, with one page of every study's tables
# (`results/studies/index.html`). `snakemake studies` builds them all; `snakemake <study>`
# one (`warmup_check`, `ood_study`, `sandbox`).


# App. B.7: the benchmark's HBART instances rebuilt with factor × the warm-up (same samples,
# same posterior seed, tempered share unchanged), one rule per output shape like the
# posterior stage, then the comparison.
for _rule in GROUPED["warmup_posterior"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            [directory(p) for p in _rule.outputs["warmup_task"]],
        params:
            jobs=jobs_of(_rule),
            accelerator={"requested": _rule.accelerator,
                         "allow_cpu_fallback": config["accelerator"]["allow_cpu_fallback"]},
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
            "../scripts/posterior.py"


rule warmup_check:
    input:
        tasks=PLANNER.warmup_stores()["task"],
        warmup=PLANNER.warmup_stores()["warmup"],
    output:
        summary=path_of("warmup_check"),
        instances=path_of("warmup_check_instances"),
    params:
        scale=config["scale"],
    log:
        SIMPLE["warmup_check"].log,
    benchmark:
        SIMPLE["warmup_check"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["warmup_check"])
    resources:
        **resources_of(SIMPLE["warmup_check"]),
    script:
        "../scripts/warmup_check.py"


# App. D.3: is OOD detection a proxy for EU? Each method refitted on the in-distribution
# instances as the benchmark fits them and asked at held-out points and OOD rows (one rule per
# output shape like the fit stage), then the records, Tables 11–12, the ground-truth half and
# Figure 3B in one job.
for _rule in GROUPED["ood_fit"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            [directory(p) for p in _rule.outputs["ood_fit"]],
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
            "../scripts/ood_fit.py"


rule ood_study:
    input:
        fits=PLANNER.ood_stores()["fits"],
        samples=PLANNER.ood_stores()["samples"],
        ood=PLANNER.ood_stores()["ood"],
        scores=PLANNER.ood_stores()["scores"],
    output:
        tables=primary_files(*stage_tables("ood_study")),
        figure=path_of("fig3b_ood_auroc"),
        companions=companion_files("fig3b_ood_auroc"),
    params:
        ids=stage_tables("ood_study"),
        scale=config["scale"],
    log:
        SIMPLE["ood_study"].log,
    benchmark:
        SIMPLE["ood_study"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["ood_study"])
    resources:
        **resources_of(SIMPLE["ood_study"]),
    script:
        "../scripts/ood_study.py"


# Paplhám et al. (2026), §4.2: the closed-form 1-D sandbox in which the Bayes-optimal scorers
# of OOD detection, BALD, expected error reduction, risk and regret reject different inputs;
# no inputs, one job (`snakemake sandbox` builds it even where `studies.sandbox.run` is off,
# so its resources come from the cost model, not from a planned job).
SANDBOX_RESOURCES = grid.cost.stage_resources(config, "sandbox")


rule sandbox:
    output:
        tables=primary_files(*stage_tables("sandbox")),
        figure=path_of("fig_sandbox"),
        companions=companion_files("fig_sandbox"),
    params:
        ids=stage_tables("sandbox"),
        settings=sandbox_settings(),
        scale=config["scale"],
    log:
        SIMPLE["sandbox"].log,
    benchmark:
        SIMPLE["sandbox"].benchmark
    conda:
        env("core")
    threads: SANDBOX_RESOURCES.threads
    resources:
        runtime=SANDBOX_RESOURCES.runtime,
        mem_mb=SANDBOX_RESOURCES.mem_mb,
        gpu=0,
    script:
        "../scripts/sandbox.py"


# App. D.4: does spectral normalisation help the network methods? Each (method, condition)'s
# plain arm refitted at the benchmark's configuration, the SN and WD arms re-tuned and fitted on
# the same seeds (one rule per output shape like the fit stage), then Tables 13–14, the
# mediation regressions and Figure 10 in one job.
for _rule in GROUPED["sn_fit"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            _rule.outputs["sn_fit"] + _rule.outputs["sn_tuning"],
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
            "../scripts/sn_fit.py"


rule sn_study:
    input:
        records=PLANNER.sn_study_inputs()["records"],
        scores=PLANNER.sn_study_inputs()["scores"],
    output:
        tables=primary_files(*stage_tables("sn_study")),
        figure=path_of("fig10_sn_methods"),
        companions=companion_files("fig10_sn_methods"),
    params:
        ids=stage_tables("sn_study"),
        settings=sn_study_settings(),
        scale=config["scale"],
    log:
        SIMPLE["sn_study"].log,
    benchmark:
        SIMPLE["sn_study"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["sn_study"])
    resources:
        **resources_of(SIMPLE["sn_study"]),
    script:
        "../scripts/sn_study.py"


rule studies_report:
    input:
        contents=[f for item in PLANNER.study_contents() for f in item.files],
        deviations=os.path.join(workflow.basedir, "docs/deviations.md"),
    output:
        html=path_of("studies_report"),
        manifest=path_of("studies_report_manifest"),
    params:
        contents=PLANNER.study_contents(),
        scale=config["scale"],
        config={"studies": config.get("studies", {}), "posterior": config["posterior"]},
        settings={},
        title="postrisk studies",
    log:
        SIMPLE["studies_report"].log,
    benchmark:
        SIMPLE["studies_report"].benchmark
    conda:
        env("core")
    threads: threads_of(SIMPLE["studies_report"])
    resources:
        **resources_of(SIMPLE["studies_report"]),
    script:
        "../scripts/report.py"


rule studies:
    input:
        PLANNER.study_files(),
