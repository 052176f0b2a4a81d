# Task instances (docs/design.md, "Task instances"): per instance the sample (what methods
# see) and the reference posterior (the task store). Sample and posterior jobs run the
# instances of one job (config `group_by`) in one process; a stage has one rule per output
# shape (postrisk.planning.jobs), all of the same form.


for _rule in GROUPED["sample"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            [directory(p) for p in _rule.outputs["sample"]],
        params:
            jobs=jobs_of(_rule),
            schema=TASK_SCHEMA_VERSION,
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
            "../scripts/sample.py"


# Reference posteriors: `posterior_exact` (GP) and `posterior_mcmc` (bartz, NumPyro; chains
# spread over the job's devices). A prior that declares an accelerator gets a GPU and the GPU
# environment when `accelerator.use` is on (the paper config); JAX memory is allocated on
# demand so jobs can share a device.
for _rule in GROUPED["posterior"]:

    rule:
        name:
            _rule.name
        input:
            inputs_of(_rule),
        output:
            [directory(p) for p in _rule.outputs["task"]],
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
