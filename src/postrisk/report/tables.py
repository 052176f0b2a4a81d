"""Every evaluation table of a run, with the paper's numbers beside ours, as CSV files and one
Markdown page (``tables.md``) that shows them all with their captions and scale.

The tables are computed by :mod:`postrisk.evaluation.tables`; this module adds the display
names, the paper's numbers (:mod:`postrisk.evaluation.paper`), the scale column and the files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core.io import write_text_atomic
from postrisk.evaluation import tables as T
from postrisk.evaluation.paper import paper_value
from postrisk.evaluation.scoring import METRICS, aggregate_metrics
from postrisk.methods.registry import display_name as method_display_name
from postrisk.report.style import format_value, scale_note

REFERENCE_DISPLAY = {"oracle": "Oracle", "mahalanobis": "Mahalanobis", "knn10": "10-NN",
                     "constant_au": "Constant AU"}
#: Tables 8, 9, 10: one per EU target.
ENTANGLEMENT_TABLES = {"table8": "posterior_excess_risk", "table9": "posterior_variance",
                       "table10": "pointwise_excess_risk"}
PAPER_FACTOR = {"oracle_engine": "oracle_engine", "noise_mode": "noise_mode",
                "coverage": "coverage"}


@dataclass(frozen=True)
class Table:
    """One table of the report: its file stem, title, caption and frame."""

    name: str
    title: str
    caption: str
    frame: pd.DataFrame
    #: False: the caller writes the CSV itself (the mean-ρ table is the rule's own output).
    csv: bool = True


def display_name(method: str) -> str:
    """A method's or reference row's name in the tables (an outside method's own
    ``display_name``)."""
    if method in REFERENCE_DISPLAY:
        return REFERENCE_DISPLAY[method]
    return method_display_name(method)


def with_scale(frame: pd.DataFrame, scale: str) -> pd.DataFrame:
    out = frame.copy()
    out.insert(0, "scale", scale)
    return out


def _paper_rho(method: str, target: str) -> float | None:
    """The paper's mean ρ where its text gives one (only for a few methods)."""
    if target != "eu_posterior_excess_risk":
        return None
    return paper_value("text", "rho_eu_posterior_excess_risk", display_name(method))


def build_tables(scores: pd.DataFrame, rng: np.random.Generator, *,
                 strict: pd.Series | None = None, rhat_share: float | None = None,
                 mean_rho: pd.DataFrame | None = None,
                 disentanglement: Sequence[pd.DataFrame] = (),
                 correlation: str = "pearson", n_boot: int = T.N_BOOT) -> list[Table]:
    """Every table from the concatenated score table of the instances in use.

    ``strict``: per row of ``scores``, whether the instance survives the R̂ ≤ 1.01
    restriction; ``rhat_share``: the share of point-wise BNN R̂ ≤ 1.01; ``mean_rho``: the
    mean-ρ table when the caller already computed it; ``n_boot``: bootstrap replicates of
    Kendall's W; ``disentanglement``: the per-level
    frames of the Disentanglement Error experiment (one per instance and method).
    """
    out: list[Table] = []
    if mean_rho is not None:
        rho = mean_rho.copy()
        rho.insert(1, "display_name", rho["method"].map(display_name))
        rho["paper_mean"] = [_paper_rho(m, t) for m, t in zip(rho["method"], rho["target"],
                                                               strict=True)]
        out.append(Table("scores", "Mean Spearman ρ per method and target (paper Figure 2)",
                         "Mean over instances of ρ between each method's EU and each EU target "
                         "and between its AU and the true noise variance (AU and Δ_ent: "
                         "heteroscedastic noise modes); 95% bootstrap intervals over datasets. "
                         "The paper's text gives a mean for a few methods only (paper_mean).",
                         rho, csv=False))
    metric_means = aggregate_metrics(scores, rng)
    metric_means.insert(1, "display_name", metric_means["method"].map(display_name))
    out.append(Table("metric_means", "Every metric's mean per method",
                     "Rank, entanglement, per-shell, predictive (expected NLL and CRPS under "
                     "y | f*, 90% interval), and risk–regret–coverage metrics (AuReC, AuRC, "
                     "Pareto gap) per method; the paper reports none of the last three kinds.",
                     metric_means))
    w = T.table7(scores, rng, n_boot=n_boot)
    w["paper_w_ranks"] = [paper_value("table7", "kendall_w_ranks", c, PAPER_FACTOR.get(f, ""))
                          if f in PAPER_FACTOR else
                          paper_value("text", "kendall_w_datasets", c)
                          for c, f in zip(w["criterion"], w["factor"], strict=True)]
    w["paper_w_rho"] = [paper_value("table7", "kendall_w_rho", c, PAPER_FACTOR[f])
                        if f in PAPER_FACTOR else np.nan
                        for c, f in zip(w["criterion"], w["factor"], strict=True)]
    out.append(Table("table7", "Stability of the method rankings (paper Table 7)",
                     "Kendall's W (tie-corrected) across the levels of each factor; each level "
                     "ranks the methods by their mean rank within its conditions (w_ranks) or by "
                     "their mean ρ (w_rho). Only methods scored in every condition enter. The "
                     "paper's W across datasets (0.78 epistemic, 0.89 aleatoric) does not say "
                     "which variant it is; it is listed under paper_w_ranks.", w))
    for name, target in ENTANGLEMENT_TABLES.items():
        ent = T.entanglement_table(scores, target, rng)
        if not ent.empty:
            ent.insert(1, "display_name", ent["method"].map(display_name))
            ent["paper_rho_eu_au_hat"] = [paper_value("table8", "rho_eu_au_hat", d,
                                                      "posterior_excess_risk")
                                          for d in ent["display_name"]]
            ent["paper_rho_eu_au_true"] = [paper_value(name, "rho_eu_au_true", d, target)
                                           for d in ent["display_name"]]
            ent["paper_delta_ent"] = [paper_value(name, "delta_ent", d, target)
                                      for d in ent["display_name"]]
        out.append(Table(name, f"Excess entanglement, EU target {target} (paper "
                         f"{name.replace('table', 'Table ')})",
                         "Δρ = ρ(EU, AU) − ρ(EU*, AU*) (Spearman over the evaluation points), "
                         "mean over the heteroscedastic instances, overall (with a 95% "
                         "bootstrap interval over datasets), per oracle engine and per "
                         "coverage. Δρ > 0: the outputs are more coupled than the truth.", ent))
    per_method, groups = T.matched_prior(scores)
    per_method.insert(1, "display_name", per_method["method"].map(display_name))
    for side in ("matched", "other"):
        groups[f"paper_mean_rank_{side}"] = [
            paper_value("appD1", "matched_prior_mean_rank", g, side) for g in groups["group"]]
    out.append(Table("matched_prior", "Matched-prior comparison (paper Figure 7, App. D.1)",
                     "Mean within-condition rank (1 = best ρ(EU, posterior excess risk)) of "
                     "each method group under its matched oracle and under the others.",
                     groups))
    out.append(Table("matched_prior_ranks", "Mean rank per method and oracle engine",
                     "Within-condition rank by mean ρ(EU, posterior excess risk), averaged per "
                     "oracle engine; methods scored in every condition only.", per_method))
    shell_columns = {c: c for c in METRICS if METRICS[c][0] == "shell"}
    shells = T.mean_table(scores, shell_columns, rng, by=("coverage",),
                          heteroscedastic_only=[c for c in shell_columns if "_au_" in c])
    shells.insert(1, "display_name", shells["method"].map(display_name))
    out.append(Table("shells", "Per-shell results",
                     "ρ on the evaluation points of the outermost coverage shell and on the "
                     "rest, and the AUROC of EU for telling the outermost shell from the rest, "
                     "per coverage scenario (under `ood` the outermost shell holds no training "
                     "input).", shells))
    if strict is not None:
        sens = T.rhat_sensitivity(scores, strict, rhat_share)
        sens_frame = pd.DataFrame([{
            **sens,
            "paper_rhat_share_below_101": paper_value("appB7", "rhat_share_below_101", "BNN",
                                                      "pointwise"),
            "paper_kendall_tau": paper_value("appB7", "rhat_sensitivity_kendall_tau", "all"),
            "paper_max_rank_move": paper_value("appB7", "rhat_sensitivity_max_rank_move",
                                               "all")}])
        out.append(Table("rhat_sensitivity", "R̂ sensitivity (paper App. B.7)",
                         "Share of point-wise BNN R̂ ≤ 1.01 among the instances in use; "
                         "Kendall's τ between the method rankings (mean ρ(EU, posterior excess "
                         "risk)) with and without restricting the BNN tasks to R̂ ≤ 1.01 "
                         "everywhere, and the largest rank move.", sens_frame))
    shape = T.noise_shape(scores, rng)
    shape["paper"] = [paper_value("text", "rho_true_posterior_variance_vs_au", "all", "mean")
                      if p == "all" else np.nan for p in shape["prior"]]
    out.append(Table("noise_shape", "The truth's own EU–AU coupling",
                     "Mean ρ(posterior variance, noise variance) of the ground truth over the "
                     "heteroscedastic instances (paper: 0.42 over its benchmark).", shape))
    out.append(disentanglement_table(disentanglement, correlation))
    return out


def disentanglement_table(runs: Sequence[pd.DataFrame], correlation: str) -> Table:
    """The Disentanglement Error per method and instance, both variants."""
    from postrisk.evaluation.disentanglement_experiment import disentanglement_summary

    frames = [disentanglement_summary(r, correlation=correlation) for r in runs if len(r)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {"method": [], "status": []})
    if len(frame):
        frame.insert(1, "display_name", frame["method"].map(display_name))
    return Table("disentanglement", "Disentanglement Error (de Jong et al. 2024, corrected)",
                 "DE = (|1 − C_aa| + |C_ea| + |C_ae| + |1 − C_ee|)/4 with C_xy the "
                 f"{correlation} correlation across levels between the test-set mean of the "
                 "method's u_x and the manipulated U_y (U_a = permuted-label fraction, U_e = "
                 "−log data fraction); 0 is perfect. The *_true columns (GP instances) "
                 "correlate with the true mean AU/EU of each level instead. Empty when the "
                 "configuration runs no experiment.", frame)


# -- rendering -------------------------------------------------------------------------------
def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; NaN and None print as "n/a"."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(format_value(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def write_tables(tables: list[Table], out_dir: str | Path, scale: str,
                 markdown: str | Path | None = None,
                 extra: Mapping[str, Table] | None = None) -> dict[str, Path]:
    """``<out_dir>/<name>.csv`` for every table (a ``scale`` column first) and, with
    ``markdown``, one page of all tables with titles, captions and the scale note."""
    out_dir = Path(out_dir)
    paths = {}
    note = scale_note(scale) or "paper scale"
    sections = [f"# postrisk evaluation tables\n\n**Scale: {scale}** — {note}.\n"]
    for table in [*tables, *(extra or {}).values()]:
        path = out_dir / f"{table.name}.csv"
        if table.csv:
            write_text_atomic(path, with_scale(table.frame, scale).to_csv(index=False))
            paths[table.name] = path
        sections.append(f"## {table.title}\n\n{table.caption} *({note})*\n\n"
                        f"`{path.name}`\n\n{markdown_table(table.frame)}\n")
    if markdown is not None:
        write_text_atomic(markdown, "\n".join(sections))
    return paths
