"""The classification family: labels from known class probabilities π*(x) = softmax(f*(x)/τ(x))
on the benchmark's covariates, GP and BNN reference posteriors by NUTS, the oracle of the log
loss and the Brier score (docs/classification.md).

Config ``families.classification``; unit stage ``classification_task`` (one instance each:
sample and reference posterior in one store); summary ``classification`` (the reference
posteriors' checks over the instances: the calibration table per instance, Table 3 per prior,
the rank histograms and a page of them, ``families/classification/index.html``).
``snakemake classification`` builds them.
"""

from postrisk.families.classification.config import (
    check_classification,
    classification_schema,
    summary_settings,
)
from postrisk.families.classification.units import (
    TASK_TEMPLATE,
    UNIT_KEYS,
    prior_fits,
    summary_inputs,
    task_units,
)
from postrisk.grid.artefact import Artefact
from postrisk.grid.study import Study, TaskFamily, UnitStage
from postrisk.tasks.diagnostics import N_RANK_BINS
from postrisk.tasks.validity import RHAT_STRICT, RHAT_THRESHOLD

_SUMMARY = "postrisk.families.classification.steps:summarise"

PIPELINE = Study(
    name="classification",
    title="Classification tasks: known class probabilities, GP and BNN reference posteriors",
    section="families",
    order=5,
    schema=classification_schema,
    check=check_classification,
    summary=_SUMMARY,
    catalogue=(Artefact(
        "classification_calibration", "families/classification/calibration.csv",
        "classification", _SUMMARY,
        title="Classification instances: do the reference posteriors cover π*?",
        caption="One row per classification instance: the share of (evaluation point, class) "
                "pairs whose true class probability π*_k(x) lies in the central 90% interval "
                "of the instance's D stored draws (recomputed from the store), against a "
                "perfect sampler's 0.9·(D − 1)/(D + 1); max R̂ and min ESS over points and "
                "classes; the amplitude and the prior's mean entropy share. Last row: the "
                "mean over instances with its 95% t-interval, and whether the nominal lies "
                "inside."),
        Artefact(
            "classification_table3", "families/classification/table3.csv", "classification",
            _SUMMARY,
            title="Classification Table 3: the reference posteriors' checks per prior",
            caption="Per prior, over its valid instances (a seed's GP and BNN instances are "
                    f"dropped alike when its BNN instance has max R̂ above {RHAT_THRESHOLD}; "
                    "no seed "
                    "replaces them: instances_dropped), pooled over the (evaluation point, "
                    "class) pairs: the share whose π*_k(x) lies in the central 90% interval "
                    "of the D draws of π_k(x), recomputed from the stores, with a 95% "
                    "t-interval over instances, against a perfect sampler's 0.9·(D − 1)/(D + "
                    "1), and its range over the cells (dataset, noise, coverage, K); the same "
                    "coverage of the latent f*_k(x), and of π* on the outermost coverage "
                    "shell and on the rest; the rank histograms' largest distance from the "
                    "exact bin probabilities (points of percentage) and the χ² p-value of the "
                    "pooled ranks, of π* and of f* (_latent; the pairs of one instance are "
                    "not independent, so the p-value is a prompt, not a test at its level); "
                    "the relative MCSE of the posterior variance of π (median, 95th "
                    f"percentile, percent); R̂ (max, share of pairs ≤ {RHAT_STRICT}) and bulk "
                    "ESS "
                    "(median, min) over the pairs; the median corr(posterior mean of π, π*); "
                    "the divergences; the largest |Σ_k π_k − 1| of a stored draw; the median "
                    "seconds per instance."),
        Artefact(
            "classification_rank_histograms", "families/classification/rank_histograms.png",
            "classification", _SUMMARY, kind="figure",
            title="Classification rank histograms: π* and f* among the reference draws",
            caption="Per prior (columns), the share of (evaluation point, class) pairs of "
                    f"its valid instances in each of {N_RANK_BINS} bins of the rank of the "
                    "truth among "
                    "the instance's D draws: row 1 the class probability π*_k(x) among the "
                    "draws of π_k(x), row 2 the latent f*_k(x) among the latent draws. Dashed: "
                    "the exact bin probabilities of a calibrated sampler; grey: the 95% band "
                    "of a calibrated sampler's histogram of as many independent ranks (the "
                    "pairs of one instance share a posterior, so an exact sampler may leave "
                    "it somewhat more often)."),
        Artefact(
            "classification_page", "families/classification/index.html", "classification",
            _SUMMARY, kind="page", shown=False,
            title="The classification references' page (open in a browser)"),
        Artefact(
            "classification_page_manifest", "families/classification/manifest.json",
            "classification", _SUMMARY, kind="file", shown=False,
            title="What the classification references' page shows")),
    stages=(UnitStage(
        name="classification_task", keys=UNIT_KEYS, outputs=("classification_task",),
        units=task_units, step="postrisk.families.classification.steps:build_tasks",
        fixed=("prior",), inputs=(("covariates", ("dataset",)), ("prior", ("dataset", "prior"))),
        cost_by="prior", accelerator_by="stage", host_devices=True,
        cost={"threads": 2, "minutes": 2.0, "mem_mb": 4000}),),
    inputs=summary_inputs,
    settings=summary_settings,
    templates={"classification_task": TASK_TEMPLATE},
    prior_fits=prior_fits,
)

FAMILY = TaskFamily(
    name="classification",
    title="Classification: y ~ Cat(softmax(f*(x)/τ(x))) with a known temperature field",
    task="postrisk.classification.task:ClassificationTask",
    pipeline=PIPELINE,
)
