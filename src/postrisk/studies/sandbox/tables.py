"""The 1-D sandbox's tables: which inputs each Bayes-optimal scorer rejects at the coverage, how
much the rejected sets overlap, the risk and regret of each accepted set against Theorem 1's
oracle surface, and the curves behind the figure (:mod:`postrisk.studies.sandbox.model`).

Pure functions from a built sandbox to frames, then one writer for the rule ``sandbox``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.evaluation.oracle_selection import (
    FINE_LAMBDAS,
    accept_at_coverage,
    lambda_grid,
    lowest_regret_within_risk,
    oracle_surface,
    overlap,
    rejected_intervals,
    set_metrics,
)
from postrisk.report.style import write_scaled_tables
from postrisk.studies.sandbox.model import SCORERS, Sandbox, SandboxSettings, build_sandbox

#: Target coverages of the traced oracle surface: 0.05, 0.10, …, 1.
SURFACE_COVERAGES = tuple(np.round(np.arange(1, 21) / 20, 2))


def _format_intervals(intervals: list[tuple[float, float]]) -> str:
    return " ∪ ".join(f"[{a:.3f}, {b:.3f}]" for a, b in intervals)


def accepted_sets(sandbox: Sandbox) -> dict[str, np.ndarray]:
    """Per scorer, the grid points it accepts at the sandbox's coverage."""
    coverage = sandbox.settings.coverage
    return {name: accept_at_coverage(score, sandbox.weights, coverage)
            for name, score in sandbox.scores().items()}


def scorer_table(sandbox: Sandbox, accepted: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """One row per scorer: the rejected intervals and mass, and the coverage, risk (T*) and
    regret (E*, and the realised (m − f*)²) of the accepted set; the best risk and regret any
    selector reaches at the coverage (thresholding T*, E*); and the regret above the oracle
    selector of the same coverage and at most the same risk (Theorem 1's family, λ swept
    finely)."""
    squared = sandbox.uncertainty("squared")
    total, regret, weights = squared["total"], squared["epistemic"], sandbox.weights
    coverage = sandbox.settings.coverage
    fine = oracle_surface(squared["aleatoric"], regret, weights, lambda_grid(FINE_LAMBDAS),
                          [coverage])
    best = {k: set_metrics(accept_at_coverage(v, weights, coverage), weights, total, regret)
            for k, v in (("risk", total), ("regret", regret))}
    realized = sandbox.realized_regret()
    rows = []
    for name, mask in accepted.items():
        metrics = set_metrics(mask, weights, total, regret)
        rows.append({
            "scorer": name, "name": SCORERS[name],
            "rejected": _format_intervals(rejected_intervals(sandbox.grid, mask)),
            "rejected_mass": float(weights[~mask].sum()), **metrics,
            "realized_regret": float(weights[mask] @ realized[mask]),
            "lowest_risk": best["risk"]["risk"], "lowest_regret": best["regret"]["regret"],
            "regret_above_oracle": metrics["regret"] - lowest_regret_within_risk(
                fine, coverage, metrics["risk"])})
    return pd.DataFrame(rows)


def overlap_table(sandbox: Sandbox, accepted: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The pairwise overlap of the rejected sets (test-density mass both reject, as a share of
    the smaller rejected mass), one row per scorer."""
    names = list(accepted)
    return pd.DataFrame([{"scorer": a, **{b: overlap(~accepted[a], ~accepted[b],
                                                     sandbox.weights) for b in names}}
                         for a in names])


def interval_table(sandbox: Sandbox, accepted: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Every rejected interval of every scorer, with its test-density mass."""
    rows = []
    for name, mask in accepted.items():
        for start, end in rejected_intervals(sandbox.grid, mask):
            inside = (sandbox.grid >= start) & (sandbox.grid <= end)
            rows.append({"scorer": name, "start": start, "end": end,
                         "mass": float(sandbox.weights[inside].sum())})
    return pd.DataFrame(rows, columns=["scorer", "start", "end", "mass"])


def curve_table(sandbox: Sandbox, accepted: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Per grid point: the truth, the posterior, the densities, T*, A*, E* (squared loss), E*
    under log loss, every scorer and whether it accepts the point."""
    squared, log = sandbox.uncertainty("squared"), sandbox.uncertainty("log")
    frame = pd.DataFrame({
        "x": sandbox.grid, "f_star": sandbox.f_star, "posterior_mean": sandbox.posterior_mean,
        "posterior_sd": np.sqrt(sandbox.posterior_var), "noise_var": sandbox.noise_var,
        "p_id": sandbox.p_id, "p_te": sandbox.p_te, "p_ood": sandbox.p_ood,
        "weight": sandbox.weights, "total": squared["total"],
        "aleatoric": squared["aleatoric"], "epistemic": squared["epistemic"],
        "epistemic_log": log["epistemic"], "realized_regret": sandbox.realized_regret()})
    for name, score in sandbox.scores().items():
        frame[f"score_{name}"] = score
        frame[f"accepted_{name}"] = accepted[name]
    return frame


def sandbox_tables(sandbox: Sandbox) -> dict[str, pd.DataFrame]:
    """Every table of the sandbox, by catalogue id."""
    accepted = accepted_sets(sandbox)
    squared = sandbox.uncertainty("squared")
    surface = oracle_surface(squared["aleatoric"], squared["epistemic"], sandbox.weights,
                             lambda_grid(sandbox.settings.n_lambdas), SURFACE_COVERAGES)
    return {"sandbox_scorers": scorer_table(sandbox, accepted),
            "sandbox_overlap": overlap_table(sandbox, accepted),
            "sandbox_oracle_surface": surface,
            "sandbox_intervals": interval_table(sandbox, accepted),
            "sandbox_curves": curve_table(sandbox, accepted),
            "sandbox_training": pd.DataFrame({"x": sandbox.x_train, "y": sandbox.y_train})}


def write_sandbox(section: Mapping, out: Mapping[str, str | Path], scale: str
                  ) -> dict[str, pd.DataFrame]:
    """Rule ``sandbox``: the sandbox of config ``studies.sandbox`` built, its tables written
    (``out``: catalogue id → path; every CSV starts with the run's scale) and its figure (the
    PNG, its PDF beside it)."""
    from postrisk.studies.sandbox.figure import figure_sandbox

    sandbox = build_sandbox(SandboxSettings.from_config(section))
    tables = sandbox_tables(sandbox)
    write_scaled_tables(tables, out, scale)
    figure = Path(out["fig_sandbox"])
    figure_sandbox(sandbox, {k: v.drop(columns="scale") for k, v in tables.items()}, scale,
                   figure.with_suffix(""))
    return tables
