"""Rank agreement between method rankings: Kendall's W, Kendall's τ-b and rank moves.

Pure functions on numpy arrays; nothing here reads or writes files. "Not applicable" is
``None``, never NaN (as in :mod:`postrisk.evaluation.metrics`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import kendalltau, rankdata

from postrisk.core.arrays import as_matrix, as_vector
from postrisk.evaluation.metrics import MIN_POINTS


def kendalls_w(rankings, higher_is_better: bool = False) -> float | None:
    """Kendall's coefficient of concordance W, tie-corrected, of m raters ranking n items.

    Kendall & Babington Smith (1939), "The Problem of m Rankings". ``rankings`` is an
    (m raters × n items) array of scores or ranks. Each row is ranked with average ranks for
    ties; rank 1 is the item with the SMALLEST value of the row (``higher_is_better=False``,
    e.g. an error) or, with ``higher_is_better=True``, the LARGEST (e.g. a correlation).
    With r_ji the rank rater j gives item i,

        R_i = Σ_j r_ji,   R̄ = m(n + 1)/2,   S = Σ_i (R_i − R̄)²,
        T_j = Σ_{tie groups g of rater j} (t_g³ − t_g)   (t_g = size of the group),
        W = 12·S / (m²(n³ − n) − m·Σ_j T_j).

    W = 1 when all raters agree exactly and 0 when the rank sums are all equal. ``None`` when
    m < 2 or n < 2 or the denominator is 0 (every rater ties every item). Rows must be
    complete: a NaN or ±inf raises ``ValueError`` (callers restrict to the items every rater
    scored).
    """
    arr = as_matrix("rankings", rankings, finite=True)
    m, n = arr.shape
    if m < 2 or n < 2:
        return None
    ranks = rankdata(-arr if higher_is_better else arr, method="average", axis=1)
    rank_sums = ranks.sum(axis=0)
    s = float(np.sum((rank_sums - m * (n + 1) / 2.0) ** 2))
    ties = 0.0
    for row in arr:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(np.float64) ** 3 - counts))
    denom = m * m * (n ** 3 - n) - m * ties
    if denom <= 0.0:
        return None
    return float(min(1.0, max(0.0, 12.0 * s / denom)))


def kendalls_tau(x, y) -> float | None:
    """Kendall's τ-b of ``x`` and ``y``; ``None`` when not applicable.

    τ_b = (n_c − n_d) / √((n₀ − n₁)(n₀ − n₂)), with n_c and n_d the concordant and discordant
    pairs, n₀ = n(n − 1)/2, n₁ = Σ_g t_g(t_g − 1)/2 over the tie groups of x and n₂ likewise
    for y. Equal to ``scipy.stats.kendalltau(x, y).statistic`` (which computes it). Only pairs
    where both values are finite enter; ``None`` when fewer than three remain or either input
    is constant over them.
    """
    xv, yv = as_vector("x", x), as_vector("y", y)
    if xv.shape != yv.shape:
        raise ValueError(f"x and y differ in length: {xv.shape[0]} vs {yv.shape[0]}")
    keep = np.isfinite(xv) & np.isfinite(yv)
    xv, yv = xv[keep], yv[keep]
    if xv.size < MIN_POINTS or np.all(xv == xv[0]) or np.all(yv == yv[0]):
        return None
    tau = float(kendalltau(xv, yv).statistic)
    if not math.isfinite(tau):  # unreachable for non-constant inputs; a guard against NaN
        return None
    return tau


def rank_moves(reference_scores, other_scores, higher_is_better: bool = True) -> dict:
    """Ranks of every item under two scorings and how far each item moves.

    Items are ranked 1..n in each scoring (rank 1 = best: the largest score with
    ``higher_is_better=True``, the smallest otherwise), ties receiving the average of the ranks
    they span. Returns

    * ``reference_ranks``, ``other_ranks``: float arrays of length n, item order as given;
    * ``moves``: other_ranks − reference_ranks (positive = the item fell);
    * ``max_move``: max_i |moves_i| (a float; 0.0 for a single item) — e.g. for the check
      "no method moves by more than one rank".

    ``ValueError`` on a length mismatch, an empty input or a non-finite score.
    """
    ref = as_vector("reference_scores", reference_scores, finite=True)
    oth = as_vector("other_scores", other_scores, finite=True)
    if ref.shape != oth.shape:
        raise ValueError(f"reference_scores and other_scores differ in length: "
                         f"{ref.shape[0]} vs {oth.shape[0]}")
    if ref.size == 0:
        raise ValueError("reference_scores and other_scores are empty")
    sign = -1.0 if higher_is_better else 1.0
    r_ref = rankdata(sign * ref, method="average")
    r_oth = rankdata(sign * oth, method="average")
    moves = r_oth - r_ref
    return {"reference_ranks": r_ref, "other_ranks": r_oth, "moves": moves,
            "max_move": float(np.max(np.abs(moves)))}
