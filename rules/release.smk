# The released suite (docs/release.md): rule `release` packs the valid instances' task stores,
# one file per (dataset, prior), with the per-dataset artefacts, the data card, the citation
# file and a manifest of sha256s (`snakemake release`; catalogue stage `release`); rule
# `download` fetches a published release into `release.download_dir` and verifies it
# (`snakemake download`). Neither is part of the default target. Both run on the submit host
# (localrule): packing is file copying, and a download needs the network.


rule release:
    input:
        instances=path_of("instances"),
        tasks=[u.out for u in PLANNER.units["posterior"]],
        covariates=[path("covariates", dataset=d) for d in RELEASE_DATASETS],
        priors=[path("prior", dataset=d, prior=p) for d, p in RELEASE_PAIRS],
        documents=[os.path.join(workflow.basedir, d) for d in RELEASE_DOCUMENTS],
    output:
        manifest=path_of("release_manifest"),
        files=primary_files(*RELEASE_FILES),
    params:
        task_keys=[u.key for u in PLANNER.units["posterior"]],
        datasets=RELEASE_DATASETS,
        pairs=RELEASE_PAIRS,
        settings=config["release"],
        scale=config["scale"],
        config_digest=digest(config),
    log:
        log_path("release"),
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
        os.path.join(config["release"]["download_dir"], MANIFEST),
    params:
        settings=config["release"],
    log:
        log_path("download"),
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
