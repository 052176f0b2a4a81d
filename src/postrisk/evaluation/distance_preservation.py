"""Local distance preservation of a network's feature map (paper App. D.4, "Does spectral
normalisation help the network methods?").

Pure functions on numpy arrays; nothing here reads or writes files.

Definition
----------
For evaluation points x_1 … x_m (at most :data:`MAX_POINTS`; a fixed random subset,
:func:`preservation_subset`, when there are more) and a network's last-hidden-layer features
h_i = h(x_i), let

    d_in(i, j) = ‖x_i − x_j‖₂,   d_feat(i, j) = ‖h_i − h_j‖₂,   i < j,

over the P = m(m − 1)/2 pairs. The pairs whose input distance is among the
⌈:data:`CLOSEST_FRACTION` · P⌉ smallest (the 25% closest input pairs; ties broken stably by pair
order, i.e. ``np.argsort(kind="stable")`` on ``pdist``'s order) form the local neighbourhood set
N, and the preservation is the Spearman rank correlation (average ranks for ties)

    pres = ρ_S( (d_in(i, j))_{(i,j)∈N}, (d_feat(i, j))_{(i,j)∈N} ).

It is 1 for any map that keeps the ordering of the local distances (an isometry, a scaled
isometry, a monotone distortion of all distances) and falls as the map folds or collapses
neighbourhoods. "Not applicable" is ``None`` (fewer than three pairs in N, or either distance
vector constant over N, e.g. a feature map that sends every point to one place). For an
ensemble (or any set of networks fitted to one instance) the instance's preservation is the
mean over its networks, skipping the not applicable ones (:func:`mean_preservation`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.spatial.distance import pdist

from postrisk.evaluation.metrics import spearman

#: Most evaluation points entering the preservation (a fixed random subset when there are more).
MAX_POINTS = 500
#: Share of the pairs, the closest in input space, over which distances are compared.
CLOSEST_FRACTION = 0.25


def preservation_subset(n_points: int, max_points: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted int64 indices of the points entering the preservation.

    All points, 0 … n_points − 1, when ``n_points <= max_points``; otherwise a uniform random
    subset of ``max_points`` distinct indices drawn from ``rng`` (without replacement), sorted.
    ``rng`` is not used when every point is kept.
    """
    if isinstance(n_points, bool) or not isinstance(n_points, int | np.integer):
        raise ValueError(f"n_points must be an integer, got {n_points!r}")
    if isinstance(max_points, bool) or not isinstance(max_points, int | np.integer):
        raise ValueError(f"max_points must be an integer, got {max_points!r}")
    if n_points < 0:
        raise ValueError(f"n_points must be >= 0, got {n_points}")
    if max_points < 1:
        raise ValueError(f"max_points must be >= 1, got {max_points}")
    if n_points <= max_points:
        return np.arange(int(n_points), dtype=np.int64)
    chosen = rng.choice(int(n_points), size=int(max_points), replace=False)
    return np.sort(chosen).astype(np.int64)


def _as_matrix(name: str, values) -> np.ndarray:
    """``values`` as a finite 2-D float array (rows are points); ValueError otherwise."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (points × dimensions), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds non-finite values")
    return arr


def _validate_fraction(closest_fraction: float) -> float:
    fraction = float(closest_fraction)
    if not (0.0 < fraction <= 1.0):
        raise ValueError(f"closest_fraction must lie in (0, 1], got {closest_fraction!r}")
    return fraction


def n_closest_pairs(n_pairs: int, closest_fraction: float) -> int:
    """⌈fraction · n_pairs⌉, the number of closest pairs kept (the product is rounded to 9
    decimals first, so that e.g. 0.1 · 30 = 3.0000000000000004 keeps 3 pairs, not 4)."""
    fraction = _validate_fraction(closest_fraction)
    return min(int(n_pairs), math.ceil(round(fraction * int(n_pairs), 9)))


def local_distance_preservation(x, h, closest_fraction: float = CLOSEST_FRACTION
                                ) -> float | None:
    """Spearman correlation of input and feature distances over the closest input pairs.

    ``x`` (m, d) are the inputs, ``h`` (m, k) the features of the same m points. With
    d_in = pdist(x), d_feat = pdist(h) (Euclidean, pairs i < j in ``pdist``'s order), the kept
    pairs are the first ⌈fraction · P⌉ of ``np.argsort(d_in, kind="stable")`` and the result is
    ρ_S(d_in[kept], d_feat[kept]) (average ranks for ties,
    :func:`postrisk.evaluation.metrics.spearman`). ``None`` when not applicable: fewer than
    three kept pairs, or either distance vector constant over them.
    """
    fraction = _validate_fraction(closest_fraction)
    x_arr, h_arr = _as_matrix("x", x), _as_matrix("h", h)
    if x_arr.shape[0] != h_arr.shape[0]:
        raise ValueError(f"x and h hold different numbers of points: "
                         f"{x_arr.shape[0]} vs {h_arr.shape[0]}")
    if x_arr.shape[0] < 2:
        return None
    d_in = pdist(x_arr, metric="euclidean")
    d_feat = pdist(h_arr, metric="euclidean")
    n_keep = n_closest_pairs(d_in.size, fraction)
    kept = np.argsort(d_in, kind="stable")[:n_keep]
    return spearman(d_in[kept], d_feat[kept])


def mean_preservation(x, features: Sequence[np.ndarray],
                      closest_fraction: float = CLOSEST_FRACTION) -> float | None:
    """Mean of :func:`local_distance_preservation` over several networks' features of the same
    points (e.g. the members of an ensemble), skipping the not applicable ones; ``None`` when
    none is applicable (or ``features`` is empty)."""
    values = [local_distance_preservation(x, h, closest_fraction) for h in features]
    applicable = [v for v in values if v is not None]
    if not applicable:
        return None
    return float(np.mean(applicable))
