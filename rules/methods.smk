# Methods (docs/design.md, "Methods"): one fit job per (method, condition), looping over the
# condition's seeds.


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
