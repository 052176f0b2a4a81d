"""The studies' tables and figures (docs/design.md, "Studies"): their catalogue entries, each
written by its study's last stage and shown on the studies' page, not the report's. Part of
:data:`postrisk.grid.artefacts.CATALOGUE` (one home per entry; this file keeps the catalogue's
module short)."""

from __future__ import annotations

from postrisk.grid.artefact import Artefact

_WARMUP = "postrisk.report.warmup:write_warmup_check"
_OOD = "postrisk.report.ood_proxy:write_ood_study"
_SANDBOX = "postrisk.report.sandbox:write_sandbox"
_SANDBOX_SETUP = ("The closed-form 1-D sandbox (Paplhám et al., 2026, §4.2; the same at every "
                  "scale): f* a least-squares RBF fit to sin(0.2/(x + 0.16)³), the exact "
                  "Bayesian linear posterior on the same features from one training sample "
                  "with a suppressed region, heteroscedastic noise; squared loss, uniform test "
                  "density. ")
_OOD_SETUP = ("Methods fitted on the in-distribution dataset's instances (as the benchmark "
              "fits them: same configuration, random state = the seed) score held-out "
              "in-distribution points against as many rows of the OOD set by their ÊU. ")
_SN = "postrisk.report.sn_study:write_sn_study"
_SN_SETUP = ("Eight network methods in three arms on the same instances (balanced coverage, "
             "smooth-monotone noise): plain (the benchmark's configuration), SN (every dense "
             "backbone layer spectrally normalised, sn_coeff searched log-uniformly, the rest "
             "re-tuned) and WD (weight decay searched in a range 100–1000× the usual, the rest "
             "re-tuned). ")
_SN_SCALE = (" paper_*: the paper's values (13 datasets × 3 priors × 5 seeds, 30-trial "
             "sweeps); below the paper's scale not comparable.")
_PAPER_SCALE = (" paper_*: the paper's values (White Wine → Red Wine, 15 instances, 1,500 "
                "points per class); below the paper's scale not comparable.")

#: The studies' entries, study by study, in their pages' order.
STUDY_CATALOGUE: tuple[Artefact, ...] = (
    Artefact("warmup_check", "studies/warmup_check.csv", "warmup_check", _WARMUP,
             title="HBART warm-up check (paper App. B.7)",
             caption="The same instances' reference posteriors (same samples, same posterior "
                     "seed) with factor × the warm-up (the tempered share unchanged) against "
                     "the benchmark's, per dataset: the change in pooled 90% coverage, and the "
                     "median, 95th percentile and largest relative change of the posterior SD "
                     "over the evaluation points; sd_change_mc_median: the median relative "
                     "change two independent runs of the benchmark's length would show from "
                     "Monte Carlo error alone (from the MCSE of the variance). The paper (Protein "
                     "and kin8nm, 4×): coverage changes by < 0.003, the SD by at most about 5%."),
    Artefact("warmup_check_instances", "studies/warmup_check_instances.csv", "warmup_check",
             _WARMUP, title="HBART warm-up check per instance",
             caption="Per instance and factor: 90% coverage (all points, the outermost shell, "
                     "the rest) of the benchmark's posterior and of the longer warm-up's, the "
                     "relative change of the posterior SD, and the max R̂ of each."),
    Artefact("table11", "studies/table11.csv", "ood_study", _OOD,
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
    Artefact("table12", "studies/table12.csv", "ood_study", _OOD,
             title="OOD ranking against the benchmark ranking (paper Table 12)",
             caption="Kendall's W (tie-corrected) between the methods' OOD ranking (mean "
                     "AUROC, Table 11) and the benchmark ranking (mean ρ(ÊU, EU*) over every "
                     "instance of the run) per EU target (m = 2) and of all four rankings "
                     "(all_four, m = 4), all points and distance-matched; 95% intervals from a "
                     "bootstrap over the OOD instances with the benchmark rankings held fixed. "
                     "W = 1: identical rankings; 0.5 (m = 2): no association." + _PAPER_SCALE),
    Artefact("ood_ground_truth", "studies/ood_ground_truth.csv", "ood_study", _OOD,
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
    Artefact("fig3b_ood_auroc", "studies/fig3b_ood_auroc.png", "ood_study", _OOD,
             kind="figure", reads=("table11",),
             title="OOD detection by ÊU, far and near (paper Figure 3B)",
             caption="Table 11 as a figure: mean OOD AUROC of ÊU per method with its 95% "
                     "bootstrap interval over instances, all points (left) and "
                     "distance-matched (right); grey: the reference scores; hollow diamonds: "
                     "the paper's values (White Wine → Red Wine)."),
    Artefact("ood_instances", "studies/ood_instances.csv", "ood_study", _OOD, shown=False,
             title="The OOD study per (instance, scorer)"),
    Artefact("ood_ground_truth_instances", "studies/ood_ground_truth_instances.csv",
             "ood_study", _OOD, shown=False,
             title="The OOD study's ground-truth half per (GP instance, scorer)"),
    Artefact("sandbox_scorers", "studies/sandbox_scorers.csv", "sandbox", _SANDBOX,
             title="Which inputs do the Bayes-optimal scorers reject? (the 1-D sandbox)",
             caption=_SANDBOX_SETUP + "Per scorer (OOD likelihood ratio p_ood/p_id, BALD, "
                     "expected error reduction, risk T*, regret E*), the intervals of x it "
                     "rejects at the coverage and their test-density mass; the coverage, risk "
                     "E[C·T*] and regret E[C·E*] of what it accepts (unnormalised), and the "
                     "realised regret E[C·(m − f*)²] of the posterior mean; lowest_risk / "
                     "lowest_regret: the best any selector reaches at the coverage; "
                     "regret_above_oracle: the regret above Theorem 1's best selector of the "
                     "same coverage and at most the same risk (λ swept in steps of 1/400)."),
    Artefact("sandbox_overlap", "studies/sandbox_overlap.csv", "sandbox", _SANDBOX,
             title="How much do the scorers' rejected sets overlap? (the 1-D sandbox)",
             caption="Test-density mass both scorers reject at the coverage, as a share of the "
                     "smaller rejected mass (1: the same inputs; 0: disjoint)."),
    Artefact("fig_sandbox", "studies/fig_sandbox.png", "sandbox", _SANDBOX, kind="figure",
             reads=("sandbox_scorers", "sandbox_intervals"),
             title="The Bayes-optimal scorers reject different inputs (the 1-D sandbox)",
             caption="(a) f*, the training sample, the exact posterior mean ± 2 SD, the noise "
                     "SD and the training density; (b) each scorer scaled to [0, 1]; (c) what "
                     "each rejects at the coverage; (d) risk against regret of each accepted "
                     "set, and the oracle front of thresholding (1 − λ)A* + λE*, λ ∈ [½, 1] "
                     "(Theorem 1)."),
    Artefact("sandbox_oracle_surface", "studies/sandbox_oracle_surface.csv", "sandbox",
             _SANDBOX, shown=False,
             title="Theorem 1's oracle surface in the sandbox: coverage, risk and regret of "
                   "thresholding (1 − λ)A* + λE* per λ and target coverage"),
    Artefact("sandbox_intervals", "studies/sandbox_intervals.csv", "sandbox", _SANDBOX,
             shown=False, title="Every rejected interval per scorer, with its mass"),
    Artefact("sandbox_curves", "studies/sandbox_curves.csv", "sandbox", _SANDBOX, shown=False,
             title="The sandbox on its grid: f*, posterior, densities, T*, A*, E*, every "
                   "scorer and what it accepts"),
    Artefact("sandbox_training", "studies/sandbox_training.csv", "sandbox", _SANDBOX,
             shown=False, title="The sandbox's training sample"),
    Artefact("table13", "studies/table13.csv", "sn_study", _SN,
             title="Spectral normalisation vs strong weight decay, as paired changes against "
                   "the plain network (paper Table 13)",
             caption=_SN_SETUP + "Per method and arm: the mean over instances of Δρ = arm − "
                     "plain of ρ(ÊU, posterior excess risk) and ρ(ÊU, posterior variance), of "
                     "Δ local distance preservation (Spearman correlation of pairwise input and "
                     "backbone-feature distances over the 25% closest input pairs of at most "
                     "500 evaluation points), and the geometric-mean NMSE ratio arm/plain; 95% "
                     "percentile intervals from a bootstrap that resamples datasets (intervals "
                     "need two datasets)." + _SN_SCALE),
    Artefact("sn_mediation", "studies/sn_mediation.csv", "sn_study", _SN,
             title="Does the SN gain run through distance preservation? The mediation "
                   "regressions (paper App. D.4)",
             caption="Per method and pooled (with method effects), for Δρ with the posterior "
                     "excess risk and with the posterior variance: arm_only, Δρ ~ 1[SN] + "
                     "dataset effects (both arms); mediators, Δρ ~ Δpres + ΔlogNMSE + 1[SN] + "
                     "Δdepth + dataset effects; within_sn, the SN arm alone, standardised, Δρ ~ "
                     "Δpres + ΔlogNMSE + dataset effects. 95% intervals from a bootstrap over "
                     "datasets; interpretable = False where a method has too few instances "
                     "(the note says how many)." + _SN_SCALE),
    Artefact("table14", "studies/table14.csv", "sn_study", _SN,
             title="Deeper networks preserve distances worse and gain more from SN (paper "
                   "Table 14)",
             caption="Spearman correlation within datasets (dataset means removed from both "
                     "variables; pooled: also centred per method) of the plain network's "
                     "preservation with its tuned depth, width, epochs and gradient steps, and "
                     "of its depth with the SN gain in preservation and in ρ(ÊU, posterior "
                     "variance); p: the correlation's p-value. NaN where a variable does not "
                     "vary (e.g. every plain network at the same depth)." + _SN_SCALE),
    Artefact("fig10_sn_methods", "studies/fig10_sn_methods.png", "sn_study", _SN,
             kind="figure", reads=("table13",),
             title="The SN variants beside the benchmark's methods on the same instances "
                   "(paper Figure 10)",
             caption="Mean ρ(ÊU, posterior excess risk) (left) and ρ(ÊU, posterior variance) "
                     "(right) over the study's instances with an interval: every benchmark "
                     "method (grey), the study's SN and WD variants (coloured); dashed: "
                     "SNGP-Het."),
    Artefact("sn_instances", "studies/sn_instances.csv", "sn_study", _SN, shown=False,
             title="The SN study per (instance, method, arm), with the paired differences"),
)
