"""The OOD-proxy study's tables and Figure 3B: written by its summary, shown on the studies'
page."""

from __future__ import annotations

from postrisk.grid.artefact import Artefact

_OOD = "postrisk.studies.ood_proxy.tables:write_ood_proxy"
_OOD_SETUP = ("Methods fitted on the in-distribution dataset's instances (as the benchmark "
              "fits them: same configuration, random state = the seed) score held-out "
              "in-distribution points against as many rows of the OOD set by their ÊU. ")
_PAPER_SCALE = (" paper_*: the paper's values (White Wine → Red Wine, 15 instances, 1,500 "
                "points per class); below the paper's scale not comparable.")

#: The study's entries, in their page's order.
CATALOGUE: tuple[Artefact, ...] = (
    Artefact("table11", "studies/table11.csv", "ood_proxy", _OOD,
             title="Is OOD detection a proxy for EU? OOD AUROC per method (paper Table 11)",
             caption=_OOD_SETUP + "AUROC of ÊU for OOD (positive) against in-distribution, "
                     "mean over the instances with a 95% bootstrap interval over instances: "
                     "all points (auroc_all) and distance-matched (auroc_matched: per instance "
                     "both classes subsampled to one Mahalanobis-distance distribution w.r.t. "
                     "the training inputs, 20 bins at pooled quantiles; "
                     "matched_points_per_class), and of ÊU + ÂU (auroc_total_*). Reference "
                     "rows: the Mahalanobis distance, the mean distance to the 10 nearest "
                     "training inputs and a 5-fold cross-validated gradient-boosting "
                     "classifier (the separability bound)." + _PAPER_SCALE),
    Artefact("table12", "studies/table12.csv", "ood_proxy", _OOD,
             title="OOD ranking against the benchmark ranking (paper Table 12)",
             caption="Kendall's W (tie-corrected) between the methods' OOD ranking (mean "
                     "AUROC, Table 11) and the benchmark ranking (mean ρ(ÊU, EU*) over every "
                     "instance of the run) per EU target (m = 2) and of all four rankings "
                     "(all_four, m = 4), all points and distance-matched; 95% intervals from a "
                     "bootstrap over the OOD instances with the benchmark rankings held fixed. "
                     "W = 1: identical rankings; 0.5 (m = 2): no association." + _PAPER_SCALE),
    Artefact("ood_ground_truth", "studies/ood_ground_truth.csv", "ood_proxy", _OOD,
             title="Are the distance-matched OOD points more uncertain? The ground truth "
                   "(paper App. D.3)",
             caption="GP instances, where the posterior is exact at any input: the ratio of "
                     "the median true posterior variance on the matched OOD and matched "
                     "in-distribution points (mean over instances with a bootstrap interval, "
                     "and its range) and its OOD AUROC (all points, matched); per method the "
                     "same ratio of its ÊU and its partial Spearman correlation with the true "
                     "posterior variance given the Mahalanobis distance over the "
                     "in-distribution query points (partial_spearman: does ÊU follow the "
                     "posterior's variation within the in-distribution data, App. D.3) and, "
                     "as an addition, over all query points, ID and OOD together "
                     "(partial_spearman_all_points)." + _PAPER_SCALE),
    Artefact("fig3b_ood_auroc", "studies/fig3b_ood_auroc.png", "ood_proxy", _OOD,
             kind="figure", reads=("table11",),
             title="OOD detection by ÊU, far and near (paper Figure 3B)",
             caption="Table 11 as a figure: mean OOD AUROC of ÊU per method with its 95% "
                     "bootstrap interval over instances, all points (left) and "
                     "distance-matched (right); grey: the reference scores; hollow diamonds: "
                     "the paper's values (White Wine → Red Wine)."),
    Artefact("ood_instances", "studies/ood_instances.csv", "ood_proxy", _OOD, shown=False,
             title="The OOD study per (instance, scorer)"),
    Artefact("ood_ground_truth_instances", "studies/ood_ground_truth_instances.csv",
             "ood_proxy", _OOD, shown=False,
             title="The OOD study's ground-truth half per (GP instance, scorer)"),
)
