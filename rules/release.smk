# The released suite (docs/release.md): rule `release` packs the valid instances' task stores,
# one file per (dataset, prior), with the per-dataset artefacts, the data card, the citation
# file and a manifest of sha256s (`snakemake release`); rule `download` fetches a published
# release into `release.download_dir` and verifies it (`snakemake download`). Neither is part
# of the default target. Both run on the submit host (localrule): packing is file copying, and
# a download needs the network.


rule release:
    input:
        instances=path("instances"),
        tasks=all_task_stores,
        # read by path (postrisk.grid.paths), like the task stores: inputs for the DAG
        covariates=release_covariate_stores(),
        priors=release_prior_files(),
        documents=[os.path.join(workflow.basedir, d) for d in RELEASE_DOCUMENTS],
    output:
        manifest=path("release_file", name="manifest.json"),
        files=release_files(),
    params:
        settings=config["release"],
        scale=config["scale"],
        config_digest=RELEASE_CONFIG_DIGEST,
    log:
        "results/logs/release.log",
    conda:
        env("core")
    threads: 1
    resources:
        # reads every task store once, like the checks
        **resources_of(SIMPLE["checks"]),
    localrule: True
    script:
        "../scripts/release.py"


rule download:
    output:
        os.path.join(config["release"]["download_dir"], "manifest.json"),
    params:
        settings=config["release"],
    log:
        "results/logs/download.log",
    conda:
        env("core")
    threads: 1
    resources:
        # nominal: a local rule on the submit host
        runtime=240,
        mem_mb=1000,
        gpu=0,
    localrule: True
    script:
        "../scripts/download.py"
