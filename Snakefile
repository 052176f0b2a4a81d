# postrisk: ground-truth AU/EU tasks, reference posteriors, methods and metrics (README.md).
# One rules/*.smk per stage, in pipeline order; rules/common.smk holds the configuration, the
# planner and the input functions they share.
import os

from snakemake.utils import min_version

min_version("9.0")


# The fitted cost model first, under config.yaml and every --configfile (which may override it).
configfile: os.path.join(workflow.basedir, "cost_model.yaml")
configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"
include: "rules/covariates.smk"
include: "rules/priors.smk"
include: "rules/tasks.smk"
include: "rules/checks.smk"
include: "rules/methods.smk"
include: "rules/scores.smk"
include: "rules/disentanglement.smk"
include: "rules/report.smk"
include: "rules/release.smk"
include: "rules/studies.smk"


rule all:
    input:
        all_targets,
    default_target: True
