"""One builder per evaluation table of the catalogue (``postrisk.grid.artefacts``, stage
``tables``): each takes the run's :class:`TableInputs` and the stage's bootstrap stream and
returns the table's frame, with the paper's numbers beside ours and display names — or ``None``
where the table does not apply to this run.

The tables stage calls them in catalogue order on one generator, so every table's bootstrap
intervals depend on the tables before it and on nothing after it. The computations live in
:mod:`postrisk.evaluation.tables` and :mod:`postrisk.evaluation.scoring`; a builder only picks
the inputs, adds the display columns and the paper's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from postrisk.evaluation import tables as T
from postrisk.evaluation.paper import (
    TRUTH_COUPLING_GROUPS,
    paper_text,
    paper_value,
    truth_coupling,
)
from postrisk.evaluation.scoring import (
    METRICS,
    SCORE_COLUMNS,
    aggregate_loss_targets,
    aggregate_metrics,
    aggregate_scores,
)
from postrisk.methods.registry import display_name
from postrisk.methods.table import ABLATION_TABLE, AblationEntry
from postrisk.tasks.key import KEY_COLUMNS
from postrisk.tasks.oracle import EU_TARGETS
from postrisk.tasks.validity import RHAT_STRICT

#: The paper's names of Table 7's factors (where the table quotes the paper), by ours.
PAPER_FACTOR = {"prior": "oracle_engine", "noise": "noise_mode", "coverage": "coverage"}


@dataclass(frozen=True)
class TableInputs:
    """What every table is built from.

    ``scores``: the concatenated score tables of the instances in use; ``strict``: per row of
    ``scores``, whether its instance survives the R̂ ≤ 1.01 restriction (None: not known, the
    sensitivity tables are left out); ``rhat_share``: the share of point-wise BNN R̂ ≤ 1.01;
    ``disentanglement``: the Disentanglement Error experiment's per-level frames (one per
    instance and method); ``correlation``: its correlation; ``n_boot``: bootstrap replicates of
    Kendall's W; ``definition``: the Disentanglement Error's headline definition ("level" or
    "score"); ``all_scores``: the scores with the ablations' rows too (``scores`` has none; the
    App. D.2 tables read these; None: ``scores`` is all there is).
    """

    scores: pd.DataFrame
    strict: pd.Series | None = None
    rhat_share: float | None = None
    disentanglement: Sequence[pd.DataFrame] = ()
    correlation: str = "pearson"
    n_boot: int = T.N_BOOT
    definition: str = "level"
    all_scores: pd.DataFrame | None = None


def without_ablations(scores: pd.DataFrame) -> pd.DataFrame:
    """``scores`` without the ablations' rows (:data:`~postrisk.methods.table.ABLATION_TABLE`):
    the method tables and figures compare the methods as they are; the App. D.2 tables show
    each ablation beside its method."""
    names = [e.name for e in ABLATION_TABLE]
    return scores[~scores["method"].isin(names)] if "method" in scores else scores


def _named(frame: pd.DataFrame) -> pd.DataFrame:
    frame.insert(1, "display_name", frame["method"].map(display_name))
    return frame


def mean_rho_strict(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame | None:
    """The mean-ρ table over the instances whose BNN max R̂ ≤ 1.01 (App. B.7)."""
    if inputs.strict is None:
        return None
    strict = aggregate_scores(inputs.scores[inputs.strict.astype(bool)], rng)
    strict.insert(0, "restriction", f"BNN max R̂ ≤ {RHAT_STRICT}")
    return strict


def _paper_rho(method: str, target: str) -> float | None:
    """The paper's mean ρ where its text gives one (only for a few methods)."""
    if target != "eu_posterior_excess_risk":
        return None
    return paper_value("text", "rho_eu_posterior_excess_risk", display_name(method))


def mean_rho(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Mean ρ per method and target (paper Figure 2)."""
    rho = _named(aggregate_scores(inputs.scores, rng))
    rho["paper_mean"] = [_paper_rho(m, t) for m, t in zip(rho["method"], rho["target"],
                                                           strict=True)]
    return rho


def metric_means(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _named(aggregate_metrics(inputs.scores, rng))


def loss_targets(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Mean ρ(ÊU, EU*) and Δ_ent with each loss's EU targets, squared loss (the paper's) beside
    the CRPS and the log score (additions, App. A.3/A.4), with the rankings they give."""
    table = _named(aggregate_loss_targets(inputs.scores, rng))
    quoted = ((table["loss"] == "squared") & (table["eu_target"] == "posterior_excess_risk")
              & (table["statistic"] == "rho"))
    table["paper_mean"] = [_paper_rho(m, "eu_posterior_excess_risk") if q else None
                           for m, q in zip(table["method"], quoted, strict=True)]
    return table


def table7(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Kendall's W of the rankings across each factor's levels (paper Table 7)."""
    w = T.table7(inputs.scores, rng, n_boot=inputs.n_boot)
    w["paper_w_ranks"] = [paper_value("table7", "kendall_w_ranks", c, PAPER_FACTOR.get(f, ""))
                          if f in PAPER_FACTOR else
                          paper_value("text", "kendall_w_datasets", c)
                          for c, f in zip(w["criterion"], w["factor"], strict=True)]
    w["paper_w_rho"] = [paper_value("table7", "kendall_w_rho", c, PAPER_FACTOR[f])
                        if f in PAPER_FACTOR else np.nan
                        for c, f in zip(w["criterion"], w["factor"], strict=True)]
    return w


def _entanglement(inputs: TableInputs, rng: np.random.Generator, name: str,
                  target: str) -> pd.DataFrame:
    ent = T.entanglement_table(inputs.scores, target, rng)
    if not ent.empty:
        _named(ent)
        ent["paper_rho_eu_au_hat"] = [paper_value("table8", "rho_eu_au_hat", d,
                                                  "posterior_excess_risk")
                                      for d in ent["display_name"]]
        ent["paper_rho_eu_au_true"] = [paper_value(name, "rho_eu_au_true", d, target)
                                       for d in ent["display_name"]]
        ent["paper_delta_ent"] = [paper_value(name, "delta_ent", d, target)
                                  for d in ent["display_name"]]
    return ent


#: The paper's entanglement table of each EU target (Tables 8–10).
_ENTANGLEMENT_TABLES = {"posterior_excess_risk": "table8", "posterior_variance": "table9",
                        "pointwise_excess_risk": "table10"}
_TABLE_TARGETS = {table: target for target, table in _ENTANGLEMENT_TABLES.items()}


def table8(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table8", _TABLE_TARGETS["table8"])


def table9(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table9", _TABLE_TARGETS["table9"])


def table10(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table10", _TABLE_TARGETS["table10"])


def matched_prior(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Mean rank of each method group under its matched oracle and the others (App. D.1)."""
    groups = T.matched_prior(inputs.scores)[1]
    for side in ("matched", "other"):
        groups[f"paper_mean_rank_{side}"] = [
            paper_value("appD1", "matched_prior_mean_rank", g, side) for g in groups["group"]]
    return groups


def matched_prior_ranks(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _named(T.matched_prior(inputs.scores)[0])


def shells(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    columns = {c: c for c in METRICS if METRICS[c].framework == "shell"}
    table = T.mean_table(inputs.scores, columns, rng, by=("coverage",),
                         heteroscedastic_only=[c for c in columns if "_au_" in c])
    return _named(table)


def rhat_sensitivity(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame | None:
    if inputs.strict is None:
        return None
    sens = T.rhat_sensitivity(inputs.scores, inputs.strict, inputs.rhat_share)
    return pd.DataFrame([{
        **sens,
        "paper_rhat_share_below_101": paper_value("appB7", "rhat_share_below_101", "BNN",
                                                  "pointwise"),
        "paper_kendall_tau": paper_value("appB7", "rhat_sensitivity_kendall_tau", "all"),
        "paper_max_rank_move": paper_value("appB7", "rhat_sensitivity_max_rank_move", "all")}])


def noise_shape(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    shape = T.noise_shape(inputs.scores, rng)
    groups = [prior.upper() if prior != "all" else coverage
              for prior, coverage in zip(shape["prior"], shape["coverage"], strict=True)]
    shape["paper"] = [truth_coupling(g) if g in (*TRUTH_COUPLING_GROUPS, "all") else np.nan
                      for g in groups]
    return shape


def disentanglement(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """The Disentanglement Error per method and instance: the level and score definitions (and
    the ground-truth variant), ``de_headline`` the one the ``definition`` setting names."""
    from postrisk.evaluation.disentanglement_experiment import disentanglement_summary

    frames = [disentanglement_summary(r, correlation=inputs.correlation,
                                      definition=inputs.definition)
              for r in inputs.disentanglement if len(r)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {"method": [], "status": []})
    return _named(frame) if len(frame) else frame


def metrics_long(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Every (method, instance, metric), one row each."""
    return T.long_table(inputs.scores, SCORE_COLUMNS)


# -- App. D.2: each ablation beside the method it changes -------------------------------------
def _ablation_pairs(inputs: TableInputs, change: str) -> list[tuple[AblationEntry,
                                                                     pd.DataFrame]]:
    """Per ablation of ``change`` that ran: the ok rows of the ablated method and of the
    ablation on the instances both have (so both means are over the same instances)."""
    rows = T.methods_only(inputs.scores if inputs.all_scores is None else inputs.all_scores)
    out = []
    for entry in ABLATION_TABLE:
        if entry.change != change:
            continue
        keys = list(KEY_COLUMNS)
        common = rows.loc[rows["method"] == entry.ablates, keys].merge(
            rows.loc[rows["method"] == entry.name, keys]).drop_duplicates()
        if not common.empty:
            pair = rows[rows["method"].isin([entry.ablates, entry.name])]
            out.append((entry, pair.merge(common, on=keys)))
    return out


def _entanglement_of(pair: pd.DataFrame, target: str, rng: np.random.Generator
                     ) -> dict[str, pd.Series]:
    """Method → its row of :func:`~postrisk.evaluation.tables.entanglement_table`."""
    ent = T.entanglement_table(pair, target, rng)
    return {row["method"]: row for _, row in ent.iterrows()}


def natural_heads(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Δ_ent per EU target with the standard and the natural-parameter head (App. D.2), per
    network method whose ablation ran, on the instances both ran on."""
    out = []
    for entry, pair in _ablation_pairs(inputs, "natural_head"):
        name = display_name(entry.ablates)
        for target in EU_TARGETS:
            ent = _entanglement_of(pair, target, rng)
            if entry.ablates not in ent or entry.name not in ent:
                continue
            base, ablation = ent[entry.ablates], ent[entry.name]
            out.append({
                "method": entry.ablates, "display_name": name, "ablation": entry.name,
                "target": target, "instances": int(base["instances"]),
                "rho_eu_au_hat": base["rho_eu_au_hat"],
                "rho_eu_au_hat_natural": ablation["rho_eu_au_hat"],
                "rho_eu_au_true": base["rho_eu_au_true"],
                "delta_ent": base["delta_ent"], "delta_ent_natural": ablation["delta_ent"],
                "delta_ent_change": ablation["delta_ent"] - base["delta_ent"],
                "paper_finding": paper_text("appD2", "natural_head_excess_entanglement", name)})
    return pd.DataFrame(out, columns=None if out else ["method", "target", "delta_ent",
                                                        "delta_ent_natural"])


def vlgp_plug_in(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """VLGP's reported AU exp(m_g + v_g/2) against the plug-in exp(m_g) (App. D.2): Δ_ent per
    EU target and ρ(ÂU, σ²_ε), over the heteroscedastic instances both ran on."""
    out = []
    for entry, pair in _ablation_pairs(inputs, "plug_in_au"):
        hetero = pair[pair["heteroscedastic"].astype(bool)]
        for method, au in ((entry.ablates, "reported exp(m_g + v_g/2)"),
                           (entry.name, "plug-in exp(m_g)")):
            rows = hetero[hetero["method"] == method]
            row = {"method": method, "display_name": display_name(method), "au": au,
                   "instances": len(rows), "spearman_au": rows["spearman_au"].mean()}
            for target in EU_TARGETS:
                row[f"delta_ent_{target}"] = rows[f"delta_ent_{target}"].mean()
                row[f"paper_delta_ent_{target}"] = (
                    paper_value(_ENTANGLEMENT_TABLES[target], "delta_ent",
                                display_name(entry.ablates), target)
                    if method == entry.ablates else None)
            out.append(row)
    return pd.DataFrame(out, columns=None if out else ["method", "au", "spearman_au"])


def ngboost_nig_metric(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """NGBoost-NIG's natural-gradient metric, the empirical default against the regularised
    Fisher ablation (App. D.2 style): per method whose ablation ran, mean ρ(ÊU, ÂU) over the
    heteroscedastic instances and mean ρ(ÊU, posterior excess risk) over all instances, each
    on the instances both ran on, with the paper's numbers for the method. Plain means: draws
    nothing from ``rng``."""
    out = []
    for entry, pair in _ablation_pairs(inputs, "natural_gradient_metric"):
        name = display_name(entry.ablates)
        base = pair[pair["method"] == entry.ablates]
        ablation = pair[pair["method"] == entry.name]
        base_het = base[base["heteroscedastic"].astype(bool)]
        ablation_het = ablation[ablation["heteroscedastic"].astype(bool)]
        out.append({
            "method": entry.ablates, "display_name": name, "ablation": entry.name,
            "instances": len(base), "heteroscedastic_instances": len(base_het),
            "rho_eu_au_hat": base_het["rho_eu_au_hat"].mean(),
            "rho_eu_au_hat_regularised_fisher": ablation_het["rho_eu_au_hat"].mean(),
            "paper_rho_eu_au_hat": paper_value("table8", "rho_eu_au_hat", name,
                                               "posterior_excess_risk"),
            "spearman_eu_posterior_excess_risk": base["spearman_eu_posterior_excess_risk"].mean(),
            "spearman_eu_posterior_excess_risk_regularised_fisher":
                ablation["spearman_eu_posterior_excess_risk"].mean(),
            "paper_spearman_eu_posterior_excess_risk": _paper_rho(entry.ablates,
                                                                  "eu_posterior_excess_risk")})
    return pd.DataFrame(out, columns=None if out else [
        "method", "ablation", "rho_eu_au_hat", "rho_eu_au_hat_regularised_fisher",
        "spearman_eu_posterior_excess_risk",
        "spearman_eu_posterior_excess_risk_regularised_fisher"])
