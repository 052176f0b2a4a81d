# The Disentanglement Error experiment (docs/evaluation.md, "Disentanglement Error"): one job
# per configured (instance, method) refits the method, at its fit job's configuration, on
# subsampled and label-permuted training sets; the aggregation turns the per-level means into
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
        "results/logs/disentanglement/{dataset}/{prior}/{noise}/{coverage}/{seed}/{method}.log",
    benchmark:
        "results/benchmarks/disentanglement/{dataset}_{prior}_{noise}_{coverage}_{seed}_{method}.tsv"
    conda:
        env("jax")
    threads: threads_of(SIMPLE["disentanglement"])
    resources:
        **resources_of(SIMPLE["disentanglement"]),
    script:
        "../scripts/disentanglement.py"
