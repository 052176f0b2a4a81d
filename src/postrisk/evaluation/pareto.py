"""Pareto gap: IGD+ between the oracle and the achievable risk–regret–coverage surfaces.

Pure functions on numpy arrays; nothing here reads or writes files.

A selector ranking by a score accepts points in ascending order of the score (a stable sort,
ties kept in index order) and, at coverage ρ, sits at the point (1 − ρ, Ri, Re) of the risk
and regret curves of :mod:`postrisk.evaluation.selective`. Rankings by combinations of the
true aleatoric and epistemic risks A*, E* trace the oracle surface, rankings by combinations of
their estimates Â, Ê the achievable one; the gap between the two is the IGD+ distance
(Ishibuchi, Masuda, Tanigaki & Nojima, 2015, "Modified Distance Calculation in Generational
Distance and Inverted Generational Distance"). :func:`pareto_gap` computes it exactly with
pruning, :func:`pareto_gap_by_definition` literally (the reference it is tested and
benchmarked against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from postrisk.core.arrays import as_vector

#: Coverage levels of the Pareto gap: ρ_j = j / GAP_LEVELS, j = 0..GAP_LEVELS.
GAP_LEVELS = 100
#: Oracle trade-offs of the Pareto gap: λ ∈ linspace(0.5, 1, GAP_ORACLE_WEIGHTS).
GAP_ORACLE_WEIGHTS = 51
#: Achievable directions of the Pareto gap: θ ∈ linspace(0, 2π, GAP_DIRECTIONS, endpoint=False).
GAP_DIRECTIONS = 91


@dataclass(frozen=True)
class ParetoGapResult:
    """Pareto gap (:func:`pareto_gap`): IGD+ in raw units and with the risk axes normalised
    (``None`` when a risk axis is 0 at full coverage)."""

    raw: float
    normalised: float | None


def _gap_counts(n: int) -> np.ndarray:
    """Points accepted at each coverage level: ⌊ρ_j·N⌋ = ⌊j·N / 100⌋, in exact integers (the
    float product (j/100)·N can fall just below an integer, e.g. 0.29·100 = 28.999…)."""
    return (np.arange(GAP_LEVELS + 1) * n) // GAP_LEVELS


def _stable_argsort_rows(scores: np.ndarray) -> np.ndarray:
    """``np.argsort(scores, axis=1, kind="stable")``, faster: rows are sorted with the (SIMD)
    quicksort and only rows holding a tie are re-sorted stably. Without ties the ascending order
    is unique, so every sort returns the same permutation; a row's ties show as equal
    neighbours once it is sorted."""
    order = np.argsort(scores, axis=1)
    # take_along_axis, by np.take on the flat array (much faster than fancy indexing).
    ranked = np.take(scores, order + scores.shape[1] * np.arange(scores.shape[0])[:, None])
    tied = np.flatnonzero((ranked[:, 1:] == ranked[:, :-1]).any(axis=1))
    if tied.size:
        order[tied] = np.argsort(scores[tied], axis=1, kind="stable")
    return order


def _surface_curves(scores: np.ndarray, total: np.ndarray, regret: np.ndarray,
                    counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ri and Re of every selector at every level: ``scores`` is (directions, N); returns two
    (directions, levels) arrays, Ri[d, j] = (1/N) Σ_{first counts[j] of d} (A* + E*) and Re
    likewise with E*. Sorted once for all directions (stable ascending along axis 1)."""
    n = total.size
    order = _stable_argsort_rows(scores)
    # Prefix sums of both losses in one pass; C(k) is the sum of the first k, C(0) = 0.
    sums = np.cumsum(np.take(np.stack((total, regret)), order, axis=1), axis=2)  # (2, dirs, N)
    at_counts = np.take(sums, np.maximum(counts - 1, 0), axis=2)
    at_counts[:, :, counts == 0] = 0.0
    at_counts /= n
    return at_counts[0], at_counts[1]


def _level_fronts(ri: np.ndarray, re: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per level, the achievable points not weakly dominated in (Ri, Re) by another point of the
    same level, padded with +inf to a common number M: two (M, levels) arrays.

    Speed-up (b). d⁺(s, r) is non-decreasing in every coordinate of s, and all points of one
    level share the coverage coordinate, so a point s with another point s′ ≤ s in both Ri and
    Re has d⁺(s′, r) ≤ d⁺(s, r) for every r and can be dropped. After a lexicographic sort by
    (Ri, Re), a point is kept iff its Re is strictly below the running minimum of Re over the
    points before it: an earlier point has Ri ≤ its Ri, so an earlier Re ≤ its Re means it is
    dominated (exact duplicates keep their first copy); a later point has Ri ≥ its Ri and, at
    equal Ri, Re ≥ its Re, so cannot dominate a kept point without being a duplicate of it.
    Padding with +inf gives d⁺ = inf, which never wins a minimum. Dominance is unchanged by a
    positive rescaling of either axis, so the fronts of the normalised surface are these
    divided by the scales.
    """
    ri_t, re_t = ri.T, re.T                          # (levels, directions)
    order = np.lexsort((re_t, ri_t), axis=1)
    ri_s = np.take_along_axis(ri_t, order, axis=1)
    re_s = np.take_along_axis(re_t, order, axis=1)
    running = np.minimum.accumulate(re_s, axis=1)
    keep = np.ones_like(re_s, dtype=bool)
    keep[:, 1:] = re_s[:, 1:] < running[:, :-1]
    width = int(keep.sum(axis=1).max())
    # Move kept points to the front of each row (stable: they stay sorted by Ri).
    front_order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    kept = np.take_along_axis(keep, front_order, axis=1)
    f_ri = np.where(kept, np.take_along_axis(ri_s, front_order, axis=1), np.inf)
    f_re = np.where(kept, np.take_along_axis(re_s, front_order, axis=1), np.inf)
    return np.ascontiguousarray(f_ri.T), np.ascontiguousarray(f_re.T)


def _igd_plus(o_ri: np.ndarray, o_re: np.ndarray, f_ri: np.ndarray, f_re: np.ndarray) -> float:
    """IGD+ of the achievable surface to the oracle surface (o_ri, o_re: (weights, levels)),
    the achievable surface given by its per-level fronts (f_ri, f_re: (M, levels), from
    :func:`_level_fronts`), with the coverage coordinate 1 − j/100 implied by the level j.

    Exactness of the pruning (all of it rests on A* + E* ≥ 0 and E* ≥ 0):

    (a) Along one direction d, Ri[d, j] and Re[d, j] are prefix sums of non-negative terms over
        counts non-decreasing in j, so they are non-decreasing in j, while the coverage
        coordinate 1 − j/100 decreases. For an oracle point r at level i and j ≥ i the coverage
        term max((1 − j/100) − (1 − i/100), 0) is 0, so d⁺(s_{d,j}, r) ≥ d⁺(s_{d,i}, r): levels
        j > i never beat level i and only j ≤ i are scanned.
    (b) Dominated points of a level are dropped (:func:`_level_fronts`).
    (c) For j = i − t the squared distance is (t/100)² + D_j(r), with D_j(r) ≥ 0 the squared 2-D
        (Ri, Re) part minimised over level j. The coverage term alone grows with t, so once
        (t/100)² ≥ the best squared distance found so far no larger t can improve it and the
        scan over t stops for that oracle point. (By (a), D_j is also non-increasing as j
        decreases — the reason the scan is needed at all.)

    The scan runs over t for all still-active oracle points at once.
    """
    n_levels = o_ri.shape[1]
    lvl = np.tile(np.arange(n_levels), o_ri.shape[0])
    r_ri, r_re = o_ri.ravel(), o_re.ravel()

    def planar(j: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        # (M, points) layout, C-contiguous (np.take, unlike f[:, j], returns it so): the
        # minimum over M is then a fast elementwise reduction over rows.
        d_ri = np.take(f_ri, j, axis=1)
        d_ri -= x
        np.maximum(d_ri, 0.0, out=d_ri)
        d_ri *= d_ri
        d_re = np.take(f_re, j, axis=1)
        d_re -= y
        np.maximum(d_re, 0.0, out=d_re)
        d_re *= d_re
        d_ri += d_re
        return d_ri.min(axis=0)

    best = planar(lvl, r_ri, r_re)                   # t = 0: the oracle point's own level
    # The active oracle points, compacted as the scan goes on (their best is written back when
    # they drop out).
    idx, a_lvl, a_ri, a_re, a_best = np.arange(lvl.size), lvl, r_ri, r_re, best.copy()
    for t in range(1, n_levels):
        cov = (t / GAP_LEVELS) ** 2
        alive = (a_lvl >= t) & (a_best > cov)
        if not alive.all():
            best[idx] = a_best
            idx, a_lvl, a_ri, a_re, a_best = (v[alive] for v in (idx, a_lvl, a_ri, a_re, a_best))
            if idx.size == 0:
                break
        np.minimum(a_best, cov + planar(a_lvl - t, a_ri, a_re), out=a_best)
    best[idx] = a_best
    return float(np.mean(np.sqrt(best)))


def pareto_gap(au_hat, eu_hat, au_true, eu_true) -> ParetoGapResult:
    """Pareto gap: IGD+ between the oracle and the achievable risk–regret–coverage surfaces.

    Definition (N points, true A* = ``au_true`` ≥ 0, E* = ``eu_true`` ≥ 0, estimates
    Â = ``au_hat``, Ê = ``eu_hat``):

    * Coverage levels ρ_j = j/100, j = 0..100. A selector ranking by a score accepts the first
      ⌊ρ_j·N⌋ points of the stable ascending sort of the score and is placed at the point
      (1 − ρ_j, Ri, Re) with Ri = (1/N) Σ_accepted (A* + E*) and Re = (1/N) Σ_accepted E*.
      All three axes are minimised (hence coverage flipped to 1 − ρ).
    * Oracle surface S*: for each λ in linspace(0.5, 1, 51), rank by (1 − λ)·A* + λ·E*; all
      51 × 101 points, duplicates kept.
    * Achievable surface S: for each θ in linspace(0, 2π, 91, endpoint=False), rank by
      cos θ·Â + sin θ·Ê; Ri and Re always from the true A*, E*; 91 × 101 points.
    * IGD+ (Ishibuchi, Masuda, Tanigaki & Nojima, 2015, "Modified Distance Calculation in
      Generational Distance and Inverted Generational Distance"):

          IGD+(S, S*) = (1/|S*|) Σ_{r ∈ S*} min_{s ∈ S} d⁺(s, r),
          d⁺(s, r) = √(Σ_k max(s_k − r_k, 0)²).

    ``raw`` is IGD+ in these units; ``normalised`` is the same with, on both surfaces, the Ri
    axis divided by Ri at full coverage, mean(A* + E*), and the Re axis by Re at full coverage,
    mean(E*) (the coverage axis is already in [0, 1]); ``None`` when either of these is 0.

    The truth itself (Â = A*, Ê = E*) has a small positive gap: no achievable direction
    (360°/91 ≈ 3.96° apart) is exactly 45° or 90°. Because the directions are symmetric under
    θ → 2π − θ, Ê = −E* gives the same rankings, hence the same gap, as Ê = E*; strongly
    unequal rescalings of Â and Ê thin the directions inside the oracle's 45°–90° cone and
    raise the gap.

    Computed exactly, with the pruning proved in ``_igd_plus`` (tested against
    :func:`pareto_gap_by_definition`; ``benchmarks/scoring.py`` measures the two).
    ``ValueError`` on a length mismatch, an empty or non-finite input or a negative A* or E*.
    """
    names = ("au_hat", "eu_hat", "au_true", "eu_true")
    ah, eh, at, et = (as_vector(nm, v, finite=True)
                      for nm, v in zip(names, (au_hat, eu_hat, au_true, eu_true), strict=True))
    shapes = {v.shape for v in (ah, eh, at, et)}
    if len(shapes) != 1:
        raise ValueError(f"au_hat, eu_hat, au_true and eu_true differ in length: "
                         f"{[v.shape[0] for v in (ah, eh, at, et)]}")
    n = at.size
    if n == 0:
        raise ValueError("inputs are empty")
    if (at < 0).any() or (et < 0).any():
        raise ValueError("au_true and eu_true must be non-negative")
    total = at + et
    counts = _gap_counts(n)

    lam = np.linspace(0.5, 1.0, GAP_ORACLE_WEIGHTS)[:, None]
    o_ri, o_re = _surface_curves((1.0 - lam) * at + lam * et, total, et, counts)
    theta = np.linspace(0.0, 2.0 * math.pi, GAP_DIRECTIONS, endpoint=False)[:, None]
    a_ri, a_re = _surface_curves(np.cos(theta) * ah + np.sin(theta) * eh, total, et, counts)

    f_ri, f_re = _level_fronts(a_ri, a_re)
    raw = _igd_plus(o_ri, o_re, f_ri, f_re)
    ri_full, re_full = float(np.mean(total)), float(np.mean(et))
    if ri_full > 0.0 and re_full > 0.0:
        normalised: float | None = _igd_plus(o_ri / ri_full, o_re / re_full,
                                             f_ri / ri_full, f_re / re_full)
    else:
        normalised = None
    return ParetoGapResult(raw=raw, normalised=normalised)


def pareto_gap_by_definition(au_hat, eu_hat, au_true, eu_true) -> ParetoGapResult:
    """:func:`pareto_gap` computed literally, every oracle point against every achievable point
    (O(51·101 × 91·101) distances; slow). The reference the fast computation is tested and
    benchmarked against (``benchmarks/scoring.py``); not used by the pipeline."""
    names = ("au_hat", "eu_hat", "au_true", "eu_true")
    ah, eh, at, et = (as_vector(nm, v, finite=True)
                      for nm, v in zip(names, (au_hat, eu_hat, au_true, eu_true), strict=True))
    n = at.size
    total = at + et

    def surface(scores):
        pts = []
        for sc in scores:
            order = np.argsort(sc, kind="stable")
            for j in range(GAP_LEVELS + 1):
                acc = order[: (j * n) // GAP_LEVELS]          # ⌊(j/100)·N⌋
                pts.append((1.0 - j / GAP_LEVELS, total[acc].sum() / n, et[acc].sum() / n))
        return np.array(pts)

    oracle = surface([(1 - lam) * at + lam * et
                      for lam in np.linspace(0.5, 1.0, GAP_ORACLE_WEIGHTS)])
    achievable = surface([math.cos(t) * ah + math.sin(t) * eh
                          for t in np.linspace(0.0, 2 * math.pi, GAP_DIRECTIONS,
                                               endpoint=False)])

    def igd_plus(ref: np.ndarray, found: np.ndarray) -> float:
        # repeated points change neither a minimum over the achievable points nor, counted with
        # their multiplicity, the mean over the oracle points
        found = np.unique(found, axis=0)
        ref, weight = np.unique(ref, axis=0, return_counts=True)
        mins = []
        for chunk in np.array_split(ref, max(1, ref.shape[0] // 200)):
            diff = np.maximum(found[None, :, :] - chunk[:, None, :], 0.0)
            mins.append(np.sqrt((diff ** 2).sum(axis=2)).min(axis=1))
        return float(np.dot(np.concatenate(mins), weight) / weight.sum())

    raw = igd_plus(oracle, achievable)
    if not (total.mean() > 0 and et.mean() > 0):
        return ParetoGapResult(raw=raw, normalised=None)
    scale = np.array([1.0, total.mean(), et.mean()])
    return ParetoGapResult(raw=raw, normalised=igd_plus(oracle / scale, achievable / scale))
