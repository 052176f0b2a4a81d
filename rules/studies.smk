# The studies (docs/design.md, "Studies"): one package each under src/postrisk/studies/, found
# by their registration, planned where the config's `studies.<study>` names something to run,
# with one page of every study's tables (`results/studies/index.html`). `snakemake studies`
# builds them all; `snakemake <study>` one (`warmup_check`, `ood_proxy`, `sandbox`,
# `sn_study`). One rule family for every study: its unit stages (batched like the fit stage,
# one rule per output shape), then its summary, named like the study.


for _stage in study_registry.unit_stages().values():
    for _rule in GROUPED[_stage.name]:

        rule:
            name:
                _rule.name
            input:
                inputs_of(_rule),
            output:
                [directory(p) if _stage.directories else p
                 for kind in _stage.outputs for p in _rule.outputs[kind]],
            params:
                jobs=jobs_of(_rule),
                step=_stage.step,
                host_devices=_stage.host_devices,
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
                "../scripts/study_units.py"


# A study's summary: its tables and figures in one job. A study that does not run in this
# configuration keeps its rule (`snakemake sandbox` builds the sandbox either way): its
# resources then come from the cost model, not from a planned job.
for _study in study_registry.studies():
    _summary = SIMPLE[_study.name]
    _inputs = PLANNER.study_inputs(_study.name)
    _ids = [a.id for a in _study.catalogue]
    _companions = companion_files(*_ids)

    rule:
        name:
            _study.name
        input:
            **_inputs,
        output:
            primary=primary_files(*_ids),
            **({"companions": _companions} if _companions else {}),
        params:
            step=_study.summary,
            inputs=list(_inputs),
            ids=_ids,
            settings=(_study.settings(study_registry.study_settings(config, _study.name))
                      if _study.settings else {}),
            scale=config["scale"],
        log:
            _summary.log,
        benchmark:
            _summary.benchmark
        conda:
            env("core")
        threads: summary_threads(_summary)
        resources:
            **summary_resources(_summary),
        script:
            "../scripts/study.py"


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
