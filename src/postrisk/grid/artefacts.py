"""Every table, figure, page and release file the workflow writes: one catalogue entry each.

An entry says what the artefact is (``id``: its name, like the paper's: ``table7``,
``fig2_mean_rho``), where it lives (``path`` under the results folder; a ``{prior}`` or
``{dataset}`` field expands over the configuration), its ``title`` and ``caption``, the stage
(the Snakemake rule) that writes it and the function that builds it (``build``, a
``module:function`` reference, imported only when the artefact is made, so that planning imports
no plotting library). The rules' outputs, ``postrisk outputs``, the HTML report's contents, the
tables page and the release's file list are all read from :data:`CATALOGUE`; adding a table is one
entry here and one builder function (docs/design.md, "Adding a table or a figure").

Order matters in two ways: the report shows its tables and figures in catalogue order, and the
``tables`` stage builds its tables in catalogue order from one bootstrap stream (a new table
appended last leaves every earlier table's intervals as they were).
"""

from __future__ import annotations

import importlib
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

#: The files of one figure: its PNG (the path in the catalogue) and a PDF beside it.
FIGURE_FORMATS = (".png", ".pdf")
#: The stages (rules) that write catalogue artefacts, in pipeline order.
ARTEFACT_STAGES = ("checks", "tables", "figure", "report", "release", "warmup_check",
                   "ood_study", "sandbox", "studies_report")
#: The stages of the studies' tables and figures: shown on the studies' page, not the report's.
STUDY_ARTEFACT_STAGES = ("warmup_check", "ood_study", "sandbox")
#: What a figure may draw from besides the tables: every condition's score table, concatenated.
CONDITION_SCORES = "condition_scores"


@dataclass(frozen=True)
class Artefact:
    """One catalogue entry (see the module docstring)."""

    id: str
    path: str
    stage: str
    build: str
    kind: str = "table"  # table | figure | page | file
    title: str = ""
    caption: str = ""
    #: shown in the HTML report (and, for the tables stage, on the tables page)
    shown: bool = True
    #: what a figure draws from: table ids or CONDITION_SCORES
    reads: tuple[str, ...] = ()
    #: a table's CSV starts with the run's scale (the long table of every metric does not)
    scale_column: bool = True

    @property
    def fields(self) -> tuple[str, ...]:
        """The path's fields (``prior``, ``dataset``): the axes the entry expands over."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.path) if f)

    @property
    def file(self) -> str:
        """The file's name (a template where the path has fields)."""
        return PurePosixPath(self.path).name

    @property
    def stem(self) -> str:
        return PurePosixPath(self.path).stem

    def path_of(self, root: str = "results", **keys: object) -> str:
        """The entry's path under ``root`` with ``keys`` filled in."""
        return f"{root}/" + self.path.format(**keys)

    def builder(self) -> Callable:
        """The function that builds the artefact (imported now)."""
        module, _, name = self.build.partition(":")
        return getattr(importlib.import_module(module), name)

    def caption_for(self, settings: Mapping[str, object]) -> str:
        """The caption with the run's settings filled in (``{correlation}``)."""
        return self.caption.format_map(dict(settings))


def figure_files(png: str) -> list[str]:
    """A figure's files: the PNG and the PDF beside it."""
    stem = png[: -len(FIGURE_FORMATS[0])]
    return [stem + suffix for suffix in FIGURE_FORMATS]


_T = "postrisk.report.table_builders:"
_F = "postrisk.report.figures:"
_CHECKS = "postrisk.report.checks:write_checks"
_WARMUP = "postrisk.report.warmup:write_warmup_check"
_STUDIES_PAGE = "postrisk.report.scores:write_report_page"
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
_PAPER_SCALE = (" paper_*: the paper's values (White Wine → Red Wine, 15 instances, 1,500 "
                "points per class); below the paper's scale not comparable.")
_RANK_CAPTION = ("Share of evaluation points per bin of the rank of f* among the posterior "
                 "draws, pooled over the valid instances of each prior; dashed: the exact bin "
                 "probabilities of a calibrated sampler; grey: the 95% range of a uniform "
                 "histogram of as many independent points.")
_ENTANGLEMENT = ("Δρ = ρ(EU, AU) − ρ(EU*, AU*) (Spearman over the evaluation points), mean over "
                 "the heteroscedastic instances, overall (with a 95% bootstrap interval over "
                 "datasets), per prior and per coverage. Δρ > 0: the outputs are more "
                 "coupled than the truth.")

def _page_file(ident: str, path: str, kind: str, title: str) -> Artefact:
    """A file of the report page (one job writes the page and its manifest)."""
    return Artefact(ident, path, "report", "postrisk.report.scores:write_report_page",
                    kind=kind, shown=False, title=title)


def _release_file(ident: str, path: str, title: str) -> Artefact:
    """A file of the released suite (one job packs them all)."""
    return Artefact(ident, path, "release", "postrisk.release.pack:build_release", kind="file",
                    shown=False, title=title)


#: Every artefact, stage by stage, in the report's order (and the tables' build order).
CATALOGUE: tuple[Artefact, ...] = (
    # -- checks: one job over every task store ----------------------------------------------
    Artefact("table3", "checks/table3.csv", "checks", _CHECKS,
             title="Reference-posterior checks (paper Table 3)",
             caption="Pooled 90% coverage with its bootstrap interval over instances and its "
                     "range over cells, rank-histogram deviation, Monte Carlo error of the "
                     "posterior variance and corr(posterior mean, f*) per prior, the "
                     "paper's values beside ours. coverage90_perfect_sampler: the coverage "
                     "an exact sampler has in expectation with the prior's D draws, "
                     "0.9·(D − 1)/(D + 1) (the central interval of D draws covers slightly "
                     "less than 90%). coverage90_outer / coverage90_rest: the pooled coverage "
                     "on the evaluation points of the outermost coverage shell and on the "
                     "others, over all instances and per coverage scenario (_balanced, _ood; "
                     "under ood the outermost shell holds no training input; empty where a "
                     "prior has no instance of the scenario). seeds_replaced_pct_balanced / "
                     "_ood: the share of the examined candidate seeds of that scenario's "
                     "cells dropped because the cell's BNN instance had max R̂ > 1.05 (paper "
                     "App. B.7); a property of the BNN instances that applies to every "
                     "prior's seeds, so it is the same on every row (empty without BNN)."),
    Artefact("table3_rhat101", "checks/table3_rhat101.csv", "checks", _CHECKS, shown=False,
             title="Table 3 over the instances whose BNN max R̂ ≤ 1.01"),
    Artefact("instances", "checks/instances.csv", "checks", _CHECKS, shown=False,
             title="Every instance built, valid or dropped"),
    Artefact("table4", "checks/table4.csv", "checks", "postrisk.report.table4:write_table4",
             title="Datasets (paper Table 4)",
             caption="Per dataset of the run: d, N and n_eval of its covariate store's pool "
                     "split, the training-set size n and the noise-to-signal ratio ρ "
                     "(noise_to_signal) its instances were generated with, and the kernel of "
                     "its GP prior (empty where the run has no GP instance of the dataset); "
                     "the paper's Table 4 beside them (paper_*). At demo and smoke scale n and "
                     "n_eval are capped (sizes.n_cap, sizes.n_eval_cap), so they are smaller "
                     "than the paper's for the larger datasets (the CSV's scale column names "
                     "the run's scale)."),
    # -- tables: one job over every condition's scores, one bootstrap stream ------------------
    Artefact("scores_rhat101", "tables/scores_rhat101.csv", "tables", _T + "mean_rho_strict",
             shown=False, title="Mean ρ over the instances whose BNN max R̂ ≤ 1.01"),
    Artefact("scores", "tables/scores.csv", "tables", _T + "mean_rho",
             title="Mean Spearman ρ per method and target (paper Figure 2)",
             caption="Mean over instances of ρ between each method's EU and each EU target and "
                     "between its AU and the true noise variance (AU and Δ_ent: heteroscedastic "
                     "noise modes); 95% bootstrap intervals over datasets. The paper's text "
                     "gives a mean for a few methods only (paper_mean)."),
    Artefact("metric_means", "tables/metric_means.csv", "tables", _T + "metric_means",
             title="Every metric's mean per method",
             caption="Rank, entanglement, per-shell, predictive (expected NLL and CRPS under "
                     "y | f*, 90% interval), and risk–regret–coverage metrics (AuReC, AuRC, "
                     "Pareto gap) per method; the paper reports none of the last three kinds."),
    Artefact("table7", "tables/table7.csv", "tables", _T + "table7",
             title="Stability of the method rankings (paper Table 7)",
             caption="Kendall's W (tie-corrected) across the levels of each factor; each level "
                     "ranks the methods by their mean rank within its conditions (w_ranks) or "
                     "by their mean ρ (w_rho). Only methods scored in every condition enter. "
                     "The paper's W across datasets (0.78 epistemic, 0.89 aleatoric) does not "
                     "say which variant it is; it is listed under paper_w_ranks."),
    Artefact("table8", "tables/table8.csv", "tables", _T + "table8",
             title="Excess entanglement, EU target posterior_excess_risk (paper Table 8)",
             caption=_ENTANGLEMENT),
    Artefact("table9", "tables/table9.csv", "tables", _T + "table9",
             title="Excess entanglement, EU target posterior_variance (paper Table 9)",
             caption=_ENTANGLEMENT),
    Artefact("table10", "tables/table10.csv", "tables", _T + "table10",
             title="Excess entanglement, EU target pointwise_excess_risk (paper Table 10)",
             caption=_ENTANGLEMENT),
    Artefact("matched_prior", "tables/matched_prior.csv", "tables", _T + "matched_prior",
             title="Matched-prior comparison (paper Figure 7, App. D.1)",
             caption="Mean within-condition rank (1 = best ρ(EU, posterior excess risk)) of "
                     "each method group under its matched oracle and under the others."),
    Artefact("matched_prior_ranks", "tables/matched_prior_ranks.csv", "tables",
             _T + "matched_prior_ranks", title="Mean rank per method and prior",
             caption="Within-condition rank by mean ρ(EU, posterior excess risk), averaged per "
                     "prior; methods scored in every condition only."),
    Artefact("shells", "tables/shells.csv", "tables", _T + "shells", title="Per-shell results",
             caption="ρ on the evaluation points of the outermost coverage shell and on the "
                     "rest, and the AUROC of EU for telling the outermost shell from the rest, "
                     "per coverage scenario (under `ood` the outermost shell holds no training "
                     "input)."),
    Artefact("rhat_sensitivity", "tables/rhat_sensitivity.csv", "tables",
             _T + "rhat_sensitivity", title="R̂ sensitivity (paper App. B.7)",
             caption="Share of point-wise BNN R̂ ≤ 1.01 among the instances in use; Kendall's "
                     "τ between the method rankings (mean ρ(EU, posterior excess risk)) with "
                     "and without restricting the BNN tasks to R̂ ≤ 1.01 everywhere, and the "
                     "largest rank move."),
    Artefact("noise_shape", "tables/noise_shape.csv", "tables", _T + "noise_shape",
             title="The truth's own EU–AU coupling",
             caption="Mean ρ(posterior variance, noise variance) of the ground truth over the "
                     "heteroscedastic instances (paper: 0.42 over its benchmark)."),
    Artefact("disentanglement", "tables/disentanglement.csv", "tables",
             _T + "disentanglement",
             title="Disentanglement Error (de Jong et al. 2024, corrected)",
             caption="DE = (|1 − C_aa| + |C_ea| + |C_ae| + |1 − C_ee|)/4 with C_xy the "
                     "{correlation} correlation across levels between the test-set mean of the "
                     "method's u_x and the manipulated U_y (U_a = permuted-label fraction, U_e = "
                     "−log data fraction); 0 is perfect. The *_true columns (GP instances) "
                     "correlate with the true mean AU/EU of each level instead. The *_score "
                     "columns follow the public package: within each run the correlation is "
                     "with the negated test score (1 − MAE; in the label-noise experiment the "
                     "test targets are permuted too), then the correlations and the per-run DE "
                     "are averaged over the n_runs_score runs. de_headline: the DE of the "
                     "\"{definition}\" definition (level: de, score: de_score). Empty when the "
                     "configuration runs no experiment."),
    Artefact("metrics_long", "tables/metrics_long.csv", "tables", _T + "metrics_long",
             shown=False, scale_column=False, title="Every (method, instance, metric)"),
    Artefact("natural_heads", "tables/natural_heads.csv", "tables", _T + "natural_heads",
             title="Natural-parameter heads (App. D.2)",
             caption="Δ_ent = ρ(ÊU, ÂU) − ρ(EU*, σ²_ε) per EU target with the standard Gaussian "
                     "head (delta_ent) and the natural-parameter head (delta_ent_natural) of the "
                     "same network method, over the heteroscedastic instances both ran on; "
                     "delta_ent_change > 0: the natural head couples EU and AU more. "
                     "paper_finding: the paper's qualitative result. Empty when the "
                     "configuration runs no natural-head ablation."),
    Artefact("vlgp_plug_in", "tables/vlgp_plug_in.csv", "tables", _T + "vlgp_plug_in",
             title="VLGP: reported vs plug-in AU (App. D.2)",
             caption="VLGP's reported AU exp(m_g + v_g/2) against the plug-in exp(m_g) from the "
                     "same fit: Δ_ent per EU target and ρ(ÂU, σ²_ε) (spearman_au), over the "
                     "heteroscedastic instances both ran on. The paper reports the first row's "
                     "Δ_ent only. Empty when the configuration runs no plug-in ablation."),
    Artefact("tables_page", "tables/tables.md", "tables", "postrisk.report.tables:write_tables",
             kind="page", shown=False, title="Every evaluation table, on one page"),
    # -- figures: one job each, from the tables ------------------------------------------------
    Artefact("fig2_mean_rho", "figures/fig2_mean_rho.png", "figure", _F + "mean_rho_figure",
             kind="figure", reads=("scores",),
             title="Agreement with the ground truth (paper Figure 2)",
             caption="Mean Spearman ρ per method between its EU and each EU target (posterior "
                     "excess risk, posterior variance, point-wise excess risk) and between its "
                     "AU and the true noise variance (heteroscedastic instances), with 95% "
                     "bootstrap intervals over datasets; methods ordered by ρ(EU, posterior "
                     "excess risk) (paper Figure 2)."),
    Artefact("fig3a_entanglement", "figures/fig3a_entanglement.png", "figure",
             _F + "entanglement_figure", kind="figure", reads=("table8", "table9"),
             title="Excess entanglement (paper Figure 3A)",
             caption="Excess entanglement Δρ = ρ(ÊU, ÂU) − ρ(EU*, AU*) per method for EU as "
                     "posterior excess risk and as posterior variance, with 95% bootstrap "
                     "intervals over datasets; hollow markers: the paper's Δρ (paper Figure "
                     "3A)."),
    Artefact("fig7_matched_prior", "figures/fig7_matched_prior.png", "figure",
             _F + "matched_prior_figure", kind="figure", reads=("matched_prior_ranks",),
             title="Matched-prior comparison (paper Figure 7)",
             caption="Mean within-condition rank (1 = best ρ(EU, posterior excess risk)) of "
                     "each method under each prior; methods ordered by their mean rank "
                     "over the priors (paper Figure 7)."),
    Artefact("fig8_per_dataset_eu", "figures/fig8_per_dataset_eu.png", "figure",
             _F + "per_dataset_eu_figure", kind="figure", reads=(CONDITION_SCORES,),
             title="EU agreement per dataset (paper Figures 8–9)",
             caption="Mean ρ(EU, posterior excess risk) per method on each dataset, with the "
                     "range (min–max) over the dataset's instances (per-dataset panels, as the "
                     "paper's Figures 8–9 show abalone and airfoil)."),
    Artefact("fig9_per_dataset_au", "figures/fig9_per_dataset_au.png", "figure",
             _F + "per_dataset_au_figure", kind="figure", reads=(CONDITION_SCORES,),
             title="AU agreement per dataset (paper Figures 8–9)",
             caption="Mean ρ(AU, true noise variance) per method on each dataset "
                     "(heteroscedastic instances), with the range (min–max) over the dataset's "
                     "instances (per-dataset panels, paper Figures 8–9)."),
    # -- the rank histograms: figures of the checks job (after the figures in the report) -----
    Artefact("rank_histograms", "figures/rank_histograms.png", "checks", _CHECKS,
             kind="figure", shown=False, title="Rank histograms, every prior"),
    Artefact("rank_histograms_prior", "figures/rank_histograms_{prior}.png", "checks", _CHECKS,
             kind="figure", title="Rank histograms (paper Table 3's calibration check)",
             caption=_RANK_CAPTION),
    # -- the report page ----------------------------------------------------------------------
    _page_file("report", "report/index.html", "page", "The run's report (open in a browser)"),
    _page_file("report_manifest", "report/manifest.json", "file",
               "What the report shows (its tables' ids, its figures' paths)"),
    # -- the released suite (rule `release`, not part of the default target) -------------------
    _release_file("release_instances", "release/{dataset}_{prior}.zip",
                  "Every released instance of one (dataset, prior)"),
    _release_file("release_dataset", "release/{dataset}_dataset.zip",
                  "One dataset's covariates, split and constants"),
    _release_file("release_data_card", "release/DATA_CARD.md",
                  "The data card (copied from the checkout)"),
    _release_file("release_citation", "release/CITATION.cff",
                  "The citation file (copied from the checkout)"),
    _release_file("release_manifest", "release/manifest.json",
                  "The release's manifest: every file's and instance's sha256"),
    # -- the studies (each its own stages; shown on the studies page, not in the report) ------
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
                     "posterior variance given the Mahalanobis distance (all query points)."
                     + _PAPER_SCALE),
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
    Artefact("studies_report", "studies/index.html", "studies_report", _STUDIES_PAGE,
             kind="page", shown=False, title="The studies' report (open in a browser)"),
    Artefact("studies_report_manifest", "studies/manifest.json", "studies_report",
             _STUDIES_PAGE, kind="file", shown=False,
             title="What the studies' report shows"),
)

_BY_ID = {a.id: a for a in CATALOGUE}
if len(_BY_ID) != len(CATALOGUE) or CONDITION_SCORES in _BY_ID:
    raise RuntimeError(f"two catalogue entries share an id, or one is named {CONDITION_SCORES}")
if any(a.stage not in ARTEFACT_STAGES for a in CATALOGUE):
    raise RuntimeError("a catalogue entry names an unknown stage")


def artefact(ident: str) -> Artefact:
    """The catalogue entry ``ident``; a clear error naming the known ones otherwise."""
    try:
        return _BY_ID[ident]
    except KeyError:
        raise KeyError(f"unknown artefact {ident!r}; known: {', '.join(_BY_ID)}") from None


def stage_artefacts(stage: str, kind: str | None = None) -> list[Artefact]:
    """The entries one stage writes (``kind``: only its tables, figures, …), in catalogue
    order."""
    if stage not in ARTEFACT_STAGES:
        raise KeyError(f"unknown artefact stage {stage!r}; known: {', '.join(ARTEFACT_STAGES)}")
    return [a for a in CATALOGUE if a.stage == stage and kind in (None, a.kind)]


def figure_ids() -> list[str]:
    """The figures of the ``figure`` stage (one job each)."""
    return [a.id for a in stage_artefacts("figure")]


def figure_pattern(root: str = "results") -> str:
    """The ``figure`` stage's PNG path with the figure's id as the wildcard ``{name}``: every
    entry of the stage is named by its id (its path's stem) in one folder."""
    patterns = {a.path_of(root).replace(a.id, "{name}") for a in stage_artefacts("figure")}
    if len(patterns) != 1 or any(a.stem != a.id for a in stage_artefacts("figure")):
        raise RuntimeError(f"the figure stage's entries must share one folder and be named by "
                           f"their ids; their paths make {sorted(patterns)}")
    return patterns.pop()


@dataclass(frozen=True)
class ArtefactFile:
    """One catalogue entry for one combination of its fields: its path (a figure: the PNG)
    and every file it writes."""

    entry: Artefact
    path: str
    keys: tuple[tuple[str, object], ...] = ()

    @property
    def files(self) -> list[str]:
        return figure_files(self.path) if self.entry.kind == "figure" else [self.path]


def expand(entry: Artefact, values: Mapping[str, Iterable[object]], root: str = "results"
           ) -> list[ArtefactFile]:
    """``entry`` for the configuration: its fields filled with each combination in ``values``
    (``prior`` → the implemented priors; ``(dataset, prior)`` pairs under the key
    ``"dataset,prior"`` where an entry has both)."""
    fields = entry.fields
    if not fields:
        return [ArtefactFile(entry, entry.path_of(root))]
    out = []
    for combo in values[",".join(fields)]:
        keys = tuple(zip(fields, combo if isinstance(combo, tuple) else (combo,), strict=True))
        out.append(ArtefactFile(entry, entry.path_of(root, **dict(keys)), keys))
    return out
