# The Disentanglement Error experiment (docs/evaluation.md, "The Disentanglement Error experiment"): one job
# per configured (instance, method) refits the method, at its fit job's configuration, on
# subsampled and label-permuted training sets; the tables stage turns the per-level means into
# the Disentanglement Error table.


rule disentanglement:
    input:
        task=inputs_of_unit("disentanglement", "task"),
        fit=inputs_of_unit("disentanglement", "fit"),
    output:
        path("disentanglement"),
    params:
        unit=unit_of("disentanglement"),
        settings=config["disentanglement"],
    log:
        SIMPLE["disentanglement"].log,
    benchmark:
        SIMPLE["disentanglement"].benchmark
    conda:
        env("jax")
    threads: threads_of(SIMPLE["disentanglement"])
    resources:
        **resources_of(SIMPLE["disentanglement"]),
    script:
        "../scripts/disentanglement.py"
