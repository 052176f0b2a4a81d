"""Scoring fits against the oracle and aggregating scores (docs/design.md, "Metrics")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from postrisk.evaluation.metrics import EU_TARGETS, mean_applicable, score_instance, spearman
from postrisk.evaluation.reference_rows import (
    REFERENCE_ROWS,
    constant_au_prediction,
    distance_prediction,
    oracle_prediction,
)
from postrisk.methods.interface import Prediction
from postrisk.methods.records import FitRecord
from postrisk.tasks.task import Task

SCORE_COLUMNS = ([f"spearman_eu_{t}" for t in EU_TARGETS] + ["spearman_au"]
                 + [f"delta_ent_{t}" for t in EU_TARGETS] + ["rho_eu_au_hat"]
                 + [f"rho_eu_au_true_{t}" for t in EU_TARGETS])


def score_prediction(task: Task, prediction: Prediction) -> dict[str, float | None]:
    """Every score of one prediction on one task instance: Spearman per EU target and for AU,
    Δ_ent per target, ρ(ÊU, ÂU) and ρ(EU*, AU*) per target (docs/design.md, "Metrics")."""
    targets = task.eu_targets(prediction.mean)
    scores = score_instance(prediction.epistemic_var, prediction.aleatoric_var, targets,
                            task.noise_var_eval)
    scores["rho_eu_au_hat"] = spearman(prediction.epistemic_var, prediction.aleatoric_var)
    for name, target in targets.items():
        scores[f"rho_eu_au_true_{name}"] = spearman(target, task.noise_var_eval)
    return scores


def reference_predictions(task: Task) -> dict[str, Prediction]:
    """The reference rows of every table (docs/design.md, "Methods")."""
    return {
        "oracle": oracle_prediction(task.posterior_mean, task.posterior_var, task.noise_var_eval),
        "distance": distance_prediction(task.x_train, task.y_train, task.x_eval),
        "constant_au": constant_au_prediction(task.x_train, task.y_train, task.x_eval),
    }


def score_condition(tasks: dict[int, Task], fits: dict[str, list[FitRecord]],
                    fit_seeds: dict[str, list[int]]) -> pd.DataFrame:
    """One row per (method or reference row, seed) with every score; failed fits flagged."""
    rows = []
    for seed, task in sorted(tasks.items()):
        base = {**task.key, "heteroscedastic": task.heteroscedastic}
        for name, prediction in reference_predictions(task).items():
            rows.append({**base, "method": name, "kind": "reference", "status": "ok",
                         "error": "", **score_prediction(task, prediction)})
        for method, records in fits.items():
            record = dict(zip(fit_seeds[method], records, strict=True)).get(seed)
            if record is None:
                raise ValueError(f"no fit of {method} for seed {seed}")
            row = {**base, "method": method, "kind": "method", "status": record.status,
                   "error": record.error, "fit_seconds": record.fit_seconds,
                   "predict_seconds": record.predict_seconds}
            if record.status == "ok":
                row.update(score_prediction(task, record.prediction()))
            rows.append(row)
    frame = pd.DataFrame(rows)
    for col in SCORE_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame


def _bootstrap_over_datasets(values: pd.Series, datasets: pd.Series, rng: np.random.Generator,
                             n_boot: int = 1000) -> tuple[float, float]:
    """Percentile CI of the mean, resampling whole datasets (docs/design.md, "Metrics")."""
    per = values.groupby(datasets).agg(["sum", "count"])
    if len(per) < 2:
        return (np.nan, np.nan)
    idx = rng.integers(len(per), size=(n_boot, len(per)))
    sums, counts = per["sum"].to_numpy()[idx].sum(1), per["count"].to_numpy()[idx].sum(1)
    boot = sums / counts
    return tuple(float(q) for q in np.quantile(boot, [0.025, 0.975]))


def aggregate_scores(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Mean Spearman ρ per method and target over instances, with bootstrap CIs over datasets.

    Not-applicable values (constant inputs) are left out of every mean and counted. AU metrics
    and Δ_ent average over the heteroscedastic noise modes only. Failed fits are
    counted per method (``failed_fits``) and left out of the means; a method whose every fit
    failed keeps its rows, with NaN means.
    """
    targets = {f"eu_{t}": f"spearman_eu_{t}" for t in EU_TARGETS}
    targets["au"] = "spearman_au"
    targets.update({f"delta_ent_{t}": f"delta_ent_{t}" for t in EU_TARGETS})
    targets["rho_eu_au_hat"] = "rho_eu_au_hat"
    rows = []
    # every method appears, also one whose every fit failed (its means are then NaN)
    for method, all_rows in scores.groupby("method", sort=False):
        group = all_rows[all_rows["status"] == "ok"]
        for target, column in targets.items():
            sub = group
            if target == "au" or target.startswith("delta_ent") or target == "rho_eu_au_hat":
                sub = group[group["heteroscedastic"]]
            values = [None if pd.isna(v) else float(v) for v in sub[column]]
            mean, n_app, n_all = mean_applicable(values)
            applicable = sub[column].notna()
            lo, hi = (_bootstrap_over_datasets(sub.loc[applicable, column],
                                               sub.loc[applicable, "dataset"], rng)
                      if n_app else (np.nan, np.nan))
            rows.append({"method": method, "kind": all_rows["kind"].iloc[0], "target": target,
                         "mean": mean, "ci_low": lo, "ci_high": hi, "n_applicable": n_app,
                         "n_instances": n_all})
    failed = scores[scores["status"] != "ok"].groupby("method").size()
    out = pd.DataFrame(rows, columns=["method", "kind", "target", "mean", "ci_low", "ci_high",
                                      "n_applicable", "n_instances"])
    out["failed_fits"] = out["method"].map(failed).fillna(0).astype(int)
    return out


__all__ = ["REFERENCE_ROWS", "SCORE_COLUMNS", "aggregate_scores",
           "reference_predictions", "score_condition", "score_prediction"]
