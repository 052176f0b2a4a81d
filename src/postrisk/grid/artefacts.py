"""Every table, figure, page and release file the workflow writes: one catalogue entry each.

An entry says what the artefact is (``id``: its name, like the paper's: ``table7``,
``fig2_mean_rho``), where it lives (``path`` under the results folder; a ``{prior}`` or
``{dataset}`` field expands over the configuration), its ``title`` and ``caption``, the stage
(the Snakemake rule) that writes it and the function that builds it (``build``, a
``module:function`` reference, imported only when the artefact is made, so that planning imports
no plotting library). The rules' outputs, ``postrisk outputs``, the HTML report's contents, the
tables page and the release's file list are all read from :func:`catalogue` (the benchmark's
entries here, each study's from its registration); adding a table is one
entry here and one builder function (docs/contributing.md, "Adding a table").

Order matters in two ways: the report shows its tables and figures in catalogue order, and the
``tables`` stage builds its tables in catalogue order from one bootstrap stream (a new table
appended last leaves every earlier table's intervals as they were).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from postrisk.grid.artefact import Artefact, figure_files
from postrisk.grid.study import studies

#: The benchmark's stages (rules) that write catalogue artefacts, in pipeline order; each
#: study's summary follows, then the studies' page (:func:`artefact_stages`).
BENCHMARK_ARTEFACT_STAGES = ("checks", "tables", "figure", "report", "release")
STUDIES_PAGE = "studies_report"
#: What a figure may draw from besides the tables: every condition's score table, concatenated.
CONDITION_SCORES = "condition_scores"


_T = "postrisk.report.table_builders:"
_F = "postrisk.report.figures:"
_CHECKS = "postrisk.report.checks:write_checks"
_STUDIES_PAGE = "postrisk.report.scores:write_report_page"
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


#: The benchmark's artefacts, stage by stage, in the report's order (and the tables' build
#: order); the studies' entries and their page follow in :func:`catalogue`.
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
                     "(noise_to_signal) its instances were generated with, the ratio they "
                     "realise (realised_noise_to_signal: per task store the mean noise "
                     "variance over the evaluation pool divided by the variance of f* there, "
                     "averaged over the dataset's n_instances task stores; ρ is set against a "
                     "signal of variance 1, the median prior draw's, so an f* that varies less "
                     "than that realises a larger ratio), and the kernel of its GP prior "
                     "(empty where the run has no GP instance of the dataset); the paper's "
                     "Table 4 beside them (paper_*; the paper has no realised ratio). At demo "
                     "and smoke scale n and n_eval are capped (sizes.n_cap, sizes.n_eval_cap), "
                     "so they are smaller than the paper's for the larger datasets (the CSV's "
                     "scale column names the run's scale)."),
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
    Artefact("ngboost_nig_metric", "tables/ngboost_nig_metric.csv", "tables",
             _T + "ngboost_nig_metric",
             title="NGBoost-NIG: empirical vs regularised Fisher metric (App. D.2 style)",
             caption="NGBoost-NIG with its default natural-gradient metric, the NGBoost "
                     "authors' empirical g gᵀ + 1e-5·I (as the paper runs it), against the "
                     "regularised Fisher metric I_t + c_kl·I_NIG + 0.01·I (ablation "
                     "ngboost_nig_regularised_fisher, otherwise the same settings): mean "
                     "ρ(ÊU, ÂU) over the heteroscedastic instances (rho_eu_au_hat, "
                     "rho_eu_au_hat_regularised_fisher; paper_rho_eu_au_hat: the paper's "
                     "Table 8) and mean ρ(ÊU, posterior excess risk) over all instances "
                     "(spearman_eu_posterior_excess_risk, "
                     "spearman_eu_posterior_excess_risk_regularised_fisher), on the instances "
                     "both ran on. Empty when the configuration runs no metric ablation."),
    Artefact("loss_targets", "tables/loss_targets.csv", "tables", _T + "loss_targets",
             title="EU targets under the CRPS and the log score (an addition to the paper)",
             caption="Not in the paper, which scores squared loss only: the posterior-risk "
                     "decompositions of its App. A.3 (CRPS) and A.4 (log score) for each "
                     "method's Gaussian predictive N(mean, ÂU + ÊU). Per loss, two EU targets: "
                     "the posterior excess risk (generalized variance + deployment gap) and the "
                     "generalized variance (squared loss: the posterior variance; log score: "
                     "the mutual information I(Y; F)). statistic rho: mean Spearman ρ(ÊU, "
                     "target) over instances with its 95% bootstrap interval over datasets, and "
                     "rank: the fitted methods' ranking by it (1 = best); "
                     "kendall_tau_vs_squared: Kendall's τ between that ranking and squared "
                     "loss's for the same target. statistic delta_ent: Δ_ent = ρ(ÊU, ÂU) − "
                     "ρ(target, σ²_ε), heteroscedastic instances. addition: true on the rows "
                     "the paper does not report. GP instances: closed forms; HBART and BNN: "
                     "exact for the mixture of the posterior draws (quadrature for the "
                     "generalized variances). Distance EUs (Mahalanobis, kNN) have no "
                     "predictive variance: their excess risks are not applicable."),
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
    _release_file("release_index", "release/instances.csv",
                  "One row per released instance: key, file, group, shapes, digest"),
    _release_file("release_croissant", "release/croissant.json",
                  "The release's Croissant metadata (MLCommons), generated from the manifest"),
)
#: The studies' page (after every study's entries).
STUDIES_PAGE_CATALOGUE: tuple[Artefact, ...] = (
    Artefact("studies_report", "studies/index.html", "studies_report", _STUDIES_PAGE,
             kind="page", shown=False, title="The studies' report (open in a browser)"),
    Artefact("studies_report_manifest", "studies/manifest.json", "studies_report",
             _STUDIES_PAGE, kind="file", shown=False,
             title="What the studies' report shows"),
)


def study_artefact_stages() -> tuple[str, ...]:
    """The stages of the studies' tables and figures (each study's summary, named like the
    study): shown on the studies' page, not the report's."""
    return tuple(s.name for s in studies())


def artefact_stages() -> tuple[str, ...]:
    """Every stage (rule) that writes catalogue artefacts, in pipeline order."""
    return (*BENCHMARK_ARTEFACT_STAGES, *study_artefact_stages(), STUDIES_PAGE)


_INDEX: dict[tuple, tuple[tuple[Artefact, ...], dict[str, Artefact]]] = {}


def _index() -> tuple[tuple[Artefact, ...], dict[str, Artefact]]:
    """Every entry and the entries by id, for the studies registered now."""
    registered = studies()
    key = tuple(id(s) for s in registered)
    if key not in _INDEX:
        entries = (*CATALOGUE, *(a for s in registered for a in s.catalogue),
                   *STUDIES_PAGE_CATALOGUE)
        by_id = {a.id: a for a in entries}
        if len(by_id) != len(entries) or CONDITION_SCORES in by_id:
            raise RuntimeError(f"two catalogue entries share an id, or one is named "
                               f"{CONDITION_SCORES}")
        stages = artefact_stages()
        if any(a.stage not in stages for a in entries):
            raise RuntimeError("a catalogue entry names an unknown stage")
        _INDEX[key] = (entries, by_id)
    return _INDEX[key]


def catalogue() -> tuple[Artefact, ...]:
    """Every artefact in order: the benchmark's, each registered study's, the studies' page."""
    return _index()[0]


def artefact(ident: str) -> Artefact:
    """The catalogue entry ``ident``; a clear error naming the known ones otherwise. The
    benchmark's entries are found without looking for the studies (loading a task asks for the
    release's files, and must not import the studies' packages)."""
    for entry in CATALOGUE:
        if entry.id == ident:
            return entry
    by_id = _index()[1]
    try:
        return by_id[ident]
    except KeyError:
        raise KeyError(f"unknown artefact {ident!r}; known: {', '.join(by_id)}") from None


def stage_artefacts(stage: str, kind: str | None = None) -> list[Artefact]:
    """The entries one stage writes (``kind``: only its tables, figures, …), in catalogue
    order."""
    known = artefact_stages()
    if stage not in known:
        raise KeyError(f"unknown artefact stage {stage!r}; known: {', '.join(known)}")
    return [a for a in catalogue() if a.stage == stage and kind in (None, a.kind)]


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
