# postrisk: ground-truth AU/EU tasks, reference posteriors, methods and metrics (README.md).
import os

from snakemake.utils import min_version

min_version("9.0")


configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"
include: "rules/covariates.smk"
include: "rules/tasks.smk"
include: "rules/checks.smk"
include: "rules/methods.smk"
include: "rules/disentanglement.smk"
include: "rules/release.smk"


rule all:
    input:
        all_targets,
    default_target: True
