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
from postrisk.evaluation.paper import paper_value
from postrisk.evaluation.scoring import (
    METRICS,
    SCORE_COLUMNS,
    aggregate_metrics,
    aggregate_scores,
)
from postrisk.methods.registry import display_name
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
    Kendall's W.
    """

    scores: pd.DataFrame
    strict: pd.Series | None = None
    rhat_share: float | None = None
    disentanglement: Sequence[pd.DataFrame] = ()
    correlation: str = "pearson"
    n_boot: int = T.N_BOOT


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


def table8(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table8", "posterior_excess_risk")


def table9(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table9", "posterior_variance")


def table10(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    return _entanglement(inputs, rng, "table10", "pointwise_excess_risk")


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
    shape["paper"] = [paper_value("text", "rho_true_posterior_variance_vs_au", "all", "mean")
                      if p == "all" else np.nan for p in shape["prior"]]
    return shape


def disentanglement(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """The Disentanglement Error per method and instance, both variants."""
    from postrisk.evaluation.disentanglement_experiment import disentanglement_summary

    frames = [disentanglement_summary(r, correlation=inputs.correlation)
              for r in inputs.disentanglement if len(r)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {"method": [], "status": []})
    return _named(frame) if len(frame) else frame


def metrics_long(inputs: TableInputs, rng: np.random.Generator) -> pd.DataFrame:
    """Every (method, instance, metric), one row each."""
    return T.long_table(inputs.scores, SCORE_COLUMNS)
