"""Deterministic selectors on weighted points: what a scorer accepts at a coverage, the risk and
regret of the accepted set, and the oracle family of the risk–regret–coverage framework's
Theorem 1 (Paplhám et al., 2026).

Points carry weights (a test density's mass per point, or 1/N each). A scorer accepts points in
ascending order of its score — a stable sort, ties in index order — until the accepted weight
reaches the coverage; the rest is rejected. With T* = A* + E* the metrics of an accepted set S
are unnormalised expectations, as in the framework: coverage ρ(S) = ∑_S w, risk
Ri(S) = ∑_S w T*, regret Re(S) = ∑_S w E*. Theorem 1: for any coverage, risk and regret
constraints the optimal selector thresholds (1 − λ) A* + λ E* for some λ ∈ [½, 1] (λ = ½: the
risk T*, λ = 1: the regret E*); sweeping λ and the threshold traces the oracle surface.
Pure functions on numpy arrays and frames.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Relative slack when a cumulative weight is compared with a coverage (float sums).
_SLACK = 1e-9
#: λ values of a fine sweep of Theorem 1's range (steps of 1/400).
FINE_LAMBDAS = 201


def lambda_grid(count: int) -> np.ndarray:
    """``count`` values of λ evenly over Theorem 1's range [½, 1]."""
    return np.linspace(0.5, 1.0, count)


def accept_at_coverage(scores: np.ndarray, weights: np.ndarray, coverage: float) -> np.ndarray:
    """The accepted mask: the lowest scores first (stable order) until their weight reaches
    ``coverage`` × the total weight (the smallest such prefix)."""
    scores, weights = np.asarray(scores, float), np.asarray(weights, float)
    if scores.shape != weights.shape or scores.ndim != 1:
        raise ValueError(f"scores {scores.shape} and weights {weights.shape} must be one vector "
                         "each, of one length")
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage {coverage} must lie in [0, 1]")
    order = np.argsort(scores, kind="stable")
    reached = np.cumsum(weights[order]) >= coverage * weights.sum() * (1 - _SLACK)
    count = int(np.argmax(reached)) + 1 if coverage > 0 else 0
    accepted = np.zeros(scores.size, bool)
    accepted[order[:count]] = True
    return accepted


def set_metrics(accepted: np.ndarray, weights: np.ndarray, total: np.ndarray,
                regret: np.ndarray) -> dict[str, float]:
    """Coverage, risk and regret of the accepted set (unnormalised expectations)."""
    w = np.where(accepted, weights, 0.0)
    return {"coverage": float(w.sum()), "risk": float(w @ total), "regret": float(w @ regret)}


def combined_score(aleatoric: np.ndarray, epistemic: np.ndarray, lam: float) -> np.ndarray:
    """(1 − λ) A* + λ E*, the score Theorem 1's optimal selectors threshold."""
    return (1.0 - lam) * np.asarray(aleatoric, float) + lam * np.asarray(epistemic, float)


def oracle_surface(aleatoric: np.ndarray, epistemic: np.ndarray, weights: np.ndarray,
                   lambdas: Sequence[float], coverages: Sequence[float]) -> pd.DataFrame:
    """Theorem 1's oracle surface: for each λ and target coverage, the coverage, risk and
    regret of the set that thresholding (1 − λ) A* + λ E* accepts."""
    total = np.asarray(aleatoric, float) + np.asarray(epistemic, float)
    rows = []
    for lam in lambdas:
        score = combined_score(aleatoric, epistemic, lam)
        for target in coverages:
            accepted = accept_at_coverage(score, weights, target)
            rows.append({"lambda": float(lam), "target_coverage": float(target),
                         **set_metrics(accepted, weights, total, epistemic)})
    return pd.DataFrame(rows)


def lowest_regret_within_risk(surface: pd.DataFrame, coverage: float, risk: float) -> float:
    """The smallest regret of an oracle selector at ``coverage`` (the surface's rows at that
    target) whose risk is at most ``risk``; NaN where none is."""
    rows = surface[np.isclose(surface["target_coverage"], coverage)]
    within = rows[rows["risk"] <= risk * (1 + _SLACK)]
    return float(within["regret"].min()) if len(within) else float("nan")


def rejected_intervals(grid: np.ndarray, accepted: np.ndarray) -> list[tuple[float, float]]:
    """The rejected grid points as maximal runs, each as (first, last) grid value."""
    rejected = ~np.asarray(accepted, bool)
    edges = np.diff(np.concatenate([[0], rejected.astype(int), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(float(grid[a]), float(grid[b])) for a, b in zip(starts, stops, strict=True)]


def overlap(rejected_a: np.ndarray, rejected_b: np.ndarray, weights: np.ndarray) -> float:
    """The weight both reject, as a share of the smaller rejected weight (1: one rejected set
    contains the other; 0: disjoint)."""
    a, b, w = np.asarray(rejected_a, bool), np.asarray(rejected_b, bool), np.asarray(weights)
    smaller = min(float(w[a].sum()), float(w[b].sum()))
    return float(w[a & b].sum()) / smaller if smaller > 0 else float("nan")
