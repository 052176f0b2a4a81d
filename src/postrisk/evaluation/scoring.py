"""Scoring fits against the oracle and aggregating scores (docs/design.md, "Metrics")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from postrisk.evaluation.agreement import kendalls_tau
from postrisk.evaluation.metrics import (
    EU_TARGETS,
    auroc,
    delta_ent,
    score_instance,
    spearman,
)
from postrisk.evaluation.pareto import pareto_gap
from postrisk.evaluation.predictive import (
    expected_gaussian_crps,
    expected_gaussian_nll,
    interval_coverage,
    interval_width,
    rmse,
)
from postrisk.evaluation.reference_rows import (
    DISTANCE_ROWS,
    REFERENCE_ROWS,
    constant_au_prediction,
    knn_prediction,
    mahalanobis_prediction,
    oracle_prediction,
)
from postrisk.evaluation.selective import aurc, aurec
from postrisk.evaluation.tables import mean_table
from postrisk.methods.interface import Prediction
from postrisk.methods.records import FitRecord
from postrisk.tasks.oracle import LOSS_EU_TARGETS, LOSSES
from postrisk.tasks.task import Task

#: The EU targets of the risk–regret–coverage metrics (E* in A* + E*): the two excess risks.
SELECTIVE_TARGETS = ("posterior_excess_risk", "pointwise_excess_risk")
#: The outermost coverage shell (shells 0 … 4, innermost first) against the rest.
OUTER_SHELL = 4
INTERVAL_LEVEL = 0.9



class Metric(NamedTuple):
    """What a score column is: its framework, which direction is better ("higher", "lower",
    "zero" — Δ_ent: the truth's own coupling is the goal — or "target 0.9"), a description,
    whether it is averaged over the heteroscedastic noise modes only (a score of the AU, or of
    the coupling of EU and AU: under homoscedastic noise the true AU is constant), for a
    headline column (:data:`HEADLINE`) its short heading in a narrow table, and whether it is
    an addition to the paper's scores (the targets under the CRPS and the log score: the
    paper's tables and their means leave these out; their own table shows them)."""

    framework: str
    better: str
    description: str
    heteroscedastic_only: bool = False
    label: str = ""
    addition: bool = False


#: Every per-instance score column: name → :class:`Metric`.
METRICS: dict[str, Metric] = {}
for _t in EU_TARGETS:
    METRICS[f"spearman_eu_{_t}"] = Metric("rank", "higher", f"Spearman ρ(ÊU, {_t})")
METRICS["spearman_au"] = Metric("rank", "higher",
                                "Spearman ρ(ÂU, σ²_ε); heteroscedastic noise only", True)
for _t in EU_TARGETS:
    METRICS[f"delta_ent_{_t}"] = Metric("entanglement", "zero",
                                        f"Δ_ent = ρ(ÊU, ÂU) − ρ({_t}, σ²_ε)", True)
METRICS["rho_eu_au_hat"] = Metric("entanglement", "zero", "ρ(ÊU, ÂU)", True)
for _t in EU_TARGETS:
    METRICS[f"rho_eu_au_true_{_t}"] = Metric("entanglement", "zero",
                                             f"ρ({_t}, σ²_ε) (the truth)", True)
for _t in EU_TARGETS:
    for _part in ("outer", "inner"):
        METRICS[f"spearman_eu_{_t}_{_part}"] = Metric(
            "shell", "higher", f"Spearman ρ(ÊU, {_t}) on the {_part} points")
for _part in ("outer", "inner"):
    METRICS[f"spearman_au_{_part}"] = Metric("shell", "higher",
                                             f"Spearman ρ(ÂU, σ²_ε), {_part}", True)
METRICS["eu_auroc_outer"] = Metric("shell", "higher", "AUROC of ÊU, outermost shell vs the rest")
METRICS.update({
    "rmse": Metric("predictive", "lower", "RMSE of the mean against f*"),
    "nll": Metric("predictive", "lower", "expected Gaussian NLL of N(mean, ÂU + ÊU) under y | f*"),
    "crps": Metric("predictive", "lower", "expected CRPS of N(mean, ÂU + ÊU) under y | f*"),
    "coverage90": Metric("predictive", "target 0.9",
                         "expected coverage of the central 90% interval"),
    "width90": Metric("predictive", "lower", "width of the central 90% interval"),
})
for _t in SELECTIVE_TARGETS:
    for _suffix, _what in (("", "AuReC ranking by ÊU"), ("_oracle", "AuReC of the oracle"),
                           ("_random", "AuReC of a random selector"),
                           ("_excess", "AuReC − oracle"),
                           ("_normalised", "(AuReC − oracle)/(random − oracle)")):
        METRICS[f"aurec_{_t}{_suffix}"] = Metric("risk-regret", "lower", f"{_what}; E* = {_t}")
    for _rank in ("eu", "total"):
        METRICS[f"aurc_{_rank}_{_t}"] = Metric(
            "risk-regret", "lower",
            f"AuRC ranking by {'ÊU' if _rank == 'eu' else 'ÂU + ÊU'}; risk A* + {_t}")
        METRICS[f"aurc_{_rank}_{_t}_normalised"] = Metric(
            "risk-regret", "lower", f"normalised AuRC ({_rank}); {_t}")
    METRICS[f"aurc_{_t}_oracle"] = Metric("risk-regret", "lower", f"AuRC of the oracle; {_t}")
    METRICS[f"pareto_gap_{_t}"] = Metric("risk-regret", "lower", f"Pareto gap (IGD+); E* = {_t}")
    METRICS[f"pareto_gap_{_t}_normalised"] = Metric(
        "risk-regret", "lower", f"Pareto gap on normalised axes; E* = {_t}")

for _t in LOSS_EU_TARGETS:
    METRICS[f"spearman_eu_{_t}"] = Metric("rank", "higher", f"Spearman ρ(ÊU, {_t})",
                                          addition=True)
    METRICS[f"delta_ent_{_t}"] = Metric("entanglement", "zero",
                                        f"Δ_ent = ρ(ÊU, ÂU) − ρ({_t}, σ²_ε)", True,
                                        addition=True)
    METRICS[f"rho_eu_au_true_{_t}"] = Metric("entanglement", "zero",
                                             f"ρ({_t}, σ²_ε) (the truth)", True, addition=True)

_HEADINGS = (("spearman_eu_posterior_excess_risk", "ρ(EU, post. excess risk)"),
             ("spearman_au", "ρ(AU, σ²_ε)"), ("delta_ent_posterior_excess_risk", "Δ_ent"),
             ("nll", "E[NLL]"), ("coverage90", "cov90"))
for _name, _label in _HEADINGS:
    METRICS[_name] = METRICS[_name]._replace(label=_label)
#: The headline columns, in order: what ``postrisk evaluate`` shows of the scores, each headed
#: by its :attr:`Metric.label`.
HEADLINE = tuple(name for name, _ in _HEADINGS)

SCORE_COLUMNS = list(METRICS)
#: The score columns the paper's tables are built from (every column but the additions).
PAPER_METRICS = {name: metric for name, metric in METRICS.items() if not metric.addition}


def _none_if_nan(value) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def shell_scores(eu_hat, au_hat, targets: dict[str, np.ndarray], au_true, shells
                 ) -> dict[str, float | None]:
    """Spearman ρ on the outermost shell's evaluation points and on the rest, and the AUROC of
    ÊU for telling the outermost shell from the rest (``None`` where a part is empty)."""
    shells = np.asarray(shells)
    outer = shells == OUTER_SHELL
    out: dict[str, float | None] = {}
    for part, mask in (("outer", outer), ("inner", ~outer)):
        for name, target in targets.items():
            out[f"spearman_eu_{name}_{part}"] = spearman(eu_hat[mask], target[mask])
        out[f"spearman_au_{part}"] = spearman(au_hat[mask], au_true[mask])
    out["eu_auroc_outer"] = auroc(eu_hat, outer)
    return out


def predictive_scores(prediction: Prediction, f_true, noise_var) -> dict[str, float | None]:
    """Means over the evaluation points of the accuracy and calibration of N(mean, ÂU + ÊU)."""
    var = prediction.aleatoric_var + prediction.epistemic_var
    if not np.all(var > 0):  # a zero total variance has no Gaussian score
        return {"rmse": rmse(prediction.mean, f_true), "nll": None, "crps": None,
                "coverage90": None, "width90": None}
    return {
        "rmse": rmse(prediction.mean, f_true),
        "nll": float(np.mean(expected_gaussian_nll(prediction.mean, var, f_true, noise_var))),
        "crps": float(np.mean(expected_gaussian_crps(prediction.mean, var, f_true, noise_var))),
        "coverage90": float(np.mean(interval_coverage(prediction.mean, var, f_true, noise_var,
                                                      level=INTERVAL_LEVEL))),
        "width90": float(np.mean(interval_width(var, level=INTERVAL_LEVEL))),
    }


def loss_target_scores(task: Task, prediction: Prediction, eu_hat, au_hat, au_true, *,
                       eu_is_variance: bool = True) -> dict[str, float | None]:
    """ρ(ÊU, EU*), ρ(EU*, σ²_ε) and Δ_ent for the EU targets under the CRPS and the log score
    (:data:`~postrisk.tasks.oracle.LOSS_EU_TARGETS`) of the predictive N(mean, ÂU + ÊU); the
    excess risks are not applicable without a predictive variance (a distance EU, or a zero
    total variance)."""
    var = prediction.aleatoric_var + prediction.epistemic_var
    usable = eu_is_variance and bool(np.all(var > 0))
    targets = task.loss_eu_targets(prediction.mean, var if usable else None)
    out: dict[str, float | None] = {}
    for name, target in targets.items():
        applicable = bool(np.all(np.isfinite(target)))
        out[f"spearman_eu_{name}"] = spearman(eu_hat, target) if applicable else None
        out[f"rho_eu_au_true_{name}"] = spearman(target, au_true) if applicable else None
        out[f"delta_ent_{name}"] = (delta_ent(eu_hat, au_hat, target, au_true) if applicable
                                    else None)
    return out


def selective_scores(au_hat, eu_hat, au_true, eu_true: dict[str, np.ndarray]
                     ) -> dict[str, float | None]:
    """AuReC (ranked by ÊU), AuRC (ranked by ÊU and by ÂU + ÊU) and the Pareto gap, with
    A* = σ²_ε and E* each of :data:`SELECTIVE_TARGETS`."""
    out: dict[str, float | None] = {}
    for t in SELECTIVE_TARGETS:
        regret = eu_true[t]
        risk = au_true + regret
        rec = aurec(eu_hat, regret)
        out[f"aurec_{t}"] = rec.value
        out[f"aurec_{t}_oracle"] = rec.oracle
        out[f"aurec_{t}_random"] = rec.random
        out[f"aurec_{t}_excess"] = rec.excess
        out[f"aurec_{t}_normalised"] = rec.normalised
        for rank, score in (("eu", eu_hat), ("total", au_hat + eu_hat)):
            rc = aurc(score, risk)
            out[f"aurc_{rank}_{t}"] = rc.value
            out[f"aurc_{rank}_{t}_normalised"] = rc.normalised
            out[f"aurc_{t}_oracle"] = rc.oracle
        gap = pareto_gap(au_hat, eu_hat, au_true, regret)
        out[f"pareto_gap_{t}"] = gap.raw
        out[f"pareto_gap_{t}_normalised"] = gap.normalised
    return {k: _none_if_nan(v) for k, v in out.items()}


#: The column of a score row that says why some of its scores are undefined ("" where none is
#: on the prediction's account; a score that is undefined is empty, never a silent NaN).
UNDEFINED = "undefined"


def undefined_reasons(prediction: Prediction, *, eu_is_variance: bool = True) -> str:
    """Why some scores of ``prediction`` are undefined, one clause per cause ("" where none
    is): a constant ÂU or ÊU has no ranks, so its rank correlations (and the scores built on
    them) are undefined; a total variance of 0 at some point has no Gaussian score."""
    reasons = []
    for symbol, values, scores in (
            ("ÂU", prediction.aleatoric_var, "spearman_au and the other rank scores of ÂU"),
            ("ÊU", prediction.epistemic_var, "spearman_eu_* and the other rank scores of ÊU")):
        if values.size and np.ptp(values) == 0:
            reasons.append(f"{symbol} is constant ({values[0]:g}) over the evaluation points: "
                           f"{scores} are undefined")
    zero = int(np.sum(prediction.aleatoric_var + prediction.epistemic_var <= 0))
    if eu_is_variance and zero:
        reasons.append(f"ÂU + ÊU is 0 at {zero} of {prediction.mean.size} points: nll, crps, "
                       "coverage90 and width90 are undefined")
    return "; ".join(reasons)


def score_prediction(task: Task, prediction: Prediction, *, eu_is_variance: bool = True
                     ) -> dict[str, float | None]:
    """Every score of one prediction on one task instance (the columns of :data:`METRICS`;
    ``None`` where not applicable). ``eu_is_variance=False`` (a distance EU): the predictive
    scores, which need ÂU + ÊU to be a variance, are not applicable."""
    targets = task.eu_targets(prediction.mean)
    au_true = task.noise_var_eval
    eu_hat, au_hat = prediction.epistemic_var, prediction.aleatoric_var
    scores = score_instance(eu_hat, au_hat, targets, au_true)
    scores["rho_eu_au_hat"] = spearman(eu_hat, au_hat)
    for name, target in targets.items():
        scores[f"rho_eu_au_true_{name}"] = spearman(target, au_true)
    scores.update(shell_scores(eu_hat, au_hat, targets, au_true, task.shell_eval))
    if eu_is_variance:
        scores.update(predictive_scores(prediction, task.f_true_eval, au_true))
    else:
        scores.update(dict.fromkeys(("rmse", "nll", "crps", "coverage90", "width90")))
    scores.update(selective_scores(au_hat, eu_hat, au_true, targets))
    scores.update(loss_target_scores(task, prediction, eu_hat, au_hat, au_true,
                                     eu_is_variance=eu_is_variance))
    return {k: scores.get(k) for k in SCORE_COLUMNS}


def reference_predictions(task: Task) -> dict[str, Prediction]:
    """The reference rows of every table (docs/design.md, "Methods")."""
    return {
        "oracle": oracle_prediction(task.posterior_mean, task.posterior_var, task.noise_var_eval),
        "mahalanobis": mahalanobis_prediction(task.x_train, task.y_train, task.x_eval),
        "knn10": knn_prediction(task.x_train, task.y_train, task.x_eval),
        "constant_au": constant_au_prediction(task.x_train, task.y_train, task.x_eval),
    }


def score_condition(tasks: dict[int, Task], fits: dict[str, list[FitRecord]],
                    fit_seeds: dict[str, list[int]]) -> pd.DataFrame:
    """One row per (method or reference row, seed) with every score; failed fits flagged."""
    rows = []
    for seed, task in sorted(tasks.items()):
        base = {**task.key, "heteroscedastic": task.heteroscedastic}
        for name, prediction in reference_predictions(task).items():
            variance = name not in DISTANCE_ROWS
            rows.append({**base, "method": name, "kind": "reference", "status": "ok",
                         "error": "", UNDEFINED: undefined_reasons(
                             prediction, eu_is_variance=variance), **score_prediction(
                             task, prediction, eu_is_variance=variance)})
        for method, records in fits.items():
            record = dict(zip(fit_seeds[method], records, strict=True)).get(seed)
            if record is None:
                raise ValueError(f"no fit of {method} for seed {seed}")
            row = {**base, "method": method, "kind": "method", "status": record.status,
                   "error": record.error, "fit_seconds": record.fit_seconds,
                   "predict_seconds": record.predict_seconds}
            if record.status == "ok":
                row[UNDEFINED] = undefined_reasons(record.prediction())
                row.update(score_prediction(task, record.prediction()))
            rows.append(row)
    frame = pd.DataFrame(rows)
    for col in SCORE_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame


#: The mean-ρ table's targets: label → score column (paper Figure 2 and Tables 8–10's means).
MEAN_RHO_TARGETS = {**{f"eu_{t}": f"spearman_eu_{t}" for t in EU_TARGETS}, "au": "spearman_au",
                    **{f"delta_ent_{t}": f"delta_ent_{t}" for t in EU_TARGETS},
                    "rho_eu_au_hat": "rho_eu_au_hat"}
#: Targets averaged over the heteroscedastic noise modes only (their metrics' own field).
HETEROSCEDASTIC_ONLY = tuple(label for label, column in MEAN_RHO_TARGETS.items()
                             if METRICS[column].heteroscedastic_only)


def aggregate_scores(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Mean Spearman ρ per method and target over instances, with bootstrap intervals over
    datasets ("n/a" — NaN — with fewer than three datasets).

    Not-applicable values (constant inputs) are left out of every mean and counted. AU metrics
    and Δ_ent average over the heteroscedastic noise modes only. Failed fits are counted per
    method (``failed_fits``) and left out of the means; a method whose every fit failed keeps
    its rows, with NaN means.
    """
    return mean_table(scores, MEAN_RHO_TARGETS, rng, heteroscedastic_only=HETEROSCEDASTIC_ONLY)


def aggregate_metrics(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Every score column's mean per method (the rank metrics as in :func:`aggregate_scores`),
    with intervals: the table behind the predictive, risk–regret and per-shell results (the
    paper's columns; the additions have :func:`aggregate_loss_targets`)."""
    hetero = [name for name, metric in PAPER_METRICS.items() if metric.heteroscedastic_only]
    return mean_table(scores, {m: m for m in PAPER_METRICS}, rng, heteroscedastic_only=hetero)


#: Each loss's two EU targets, as score-column stems: the squared loss's (the paper's) first.
LOSS_TARGETS = {"squared": {"posterior_excess_risk": "posterior_excess_risk",
                            "generalized_variance": "posterior_variance"},
                **{loss: {"posterior_excess_risk": f"{loss}_posterior_excess_risk",
                          "generalized_variance": f"{loss}_generalized_variance"}
                   for loss in LOSSES}}


def aggregate_loss_targets(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Mean ρ(ÊU, EU*) and Δ_ent per method for each loss's posterior excess risk and
    generalized variance (squared loss: the paper's targets; CRPS and log score: additions,
    marked ``addition``), with intervals as in :func:`aggregate_scores`, each method's rank
    among the fitted methods by mean ρ (1 = best) per loss and target, and Kendall's τ between
    that ranking and the squared loss's."""
    columns, where = {}, {}
    for loss, targets in LOSS_TARGETS.items():
        for target, stem in targets.items():
            for statistic in ("spearman_eu", "delta_ent"):
                label = f"{statistic}_{stem}"
                columns[label] = label
                where[label] = (loss, target, "rho" if statistic == "spearman_eu"
                                else statistic)
    hetero = [c for c in columns if c.startswith("delta_ent_")]
    table = mean_table(scores, columns, rng, heteroscedastic_only=hetero)
    table[["loss", "eu_target", "statistic"]] = pd.DataFrame(
        table["target"].map(where).tolist(), index=table.index)
    table["addition"] = table["loss"] != "squared"
    fitted = (table["kind"] == "method") & (table["statistic"] == "rho")
    table["rank"] = (table[fitted].groupby(["loss", "eu_target"])["mean"]
                     .rank(ascending=False, method="average"))
    table["kendall_tau_vs_squared"] = np.nan
    for (_loss, target), group in table[fitted].groupby(["loss", "eu_target"]):
        base = table[fitted & (table["loss"] == "squared") & (table["eu_target"] == target)]
        paired = group.merge(base[["method", "mean"]], on="method", suffixes=("", "_sq"))
        paired = paired.dropna(subset=["mean", "mean_sq"])
        tau = kendalls_tau(paired["mean"], paired["mean_sq"]) if len(paired) > 1 else None
        table.loc[group.index, "kendall_tau_vs_squared"] = np.nan if tau is None else tau
    order = ["method", "kind", "loss", "eu_target", "statistic", "addition", "mean", "ci_low",
             "ci_high", "rank", "kendall_tau_vs_squared", "n_applicable", "n_instances",
             "n_datasets", "failed_fits"]
    return table[order]


__all__ = ["HEADLINE", "LOSS_TARGETS", "METRICS", "PAPER_METRICS", "REFERENCE_ROWS",
           "SCORE_COLUMNS", "Metric", "aggregate_loss_targets", "aggregate_metrics",
           "aggregate_scores", "reference_predictions", "score_condition",
           "score_prediction"]
