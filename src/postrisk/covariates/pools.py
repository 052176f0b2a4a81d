"""Evaluation/candidate split (grouped by covariate value), coverage shells, the PC1 noise score
(docs/design.md, "Covariates", "Noise modes" and "Coverage")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from postrisk.core.arrays import as_matrix

N_SHELLS = 5
SHELL_SHRINKAGE = 0.1


def eval_pool_size(n_rows: int, cap: int = 1500) -> int:
    """``n_eval = min(cap, floor(N / 2))`` (App. B.1; cap 1500 at paper scale)."""
    if n_rows < 2:
        raise ValueError(f"need at least 2 rows to split, got {n_rows}")
    return min(int(cap), n_rows // 2)


def covariate_groups(x: np.ndarray) -> np.ndarray:
    """A group label per row: rows with identical covariate values share a label."""
    x = as_matrix("x", x)
    _, inverse = np.unique(x + 0.0, axis=0, return_inverse=True)  # + 0.0: −0.0 equals 0.0
    return np.asarray(inverse).reshape(-1)


def shared_values(x_a: np.ndarray, x_b: np.ndarray) -> int:
    """How many distinct covariate values (rows, as :func:`covariate_groups` compares them)
    occur both in ``x_a`` and in ``x_b``."""
    x_a, x_b = np.asarray(x_a, dtype=float), np.asarray(x_b, dtype=float)
    groups = covariate_groups(np.concatenate([x_a, x_b]))
    return len(set(groups[:x_a.shape[0]].tolist()) & set(groups[x_a.shape[0]:].tolist()))


def split_pools(groups: np.ndarray, n_eval: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted row indices: ``n_eval`` evaluation rows and the candidate rest, with every
    group of identical rows (``groups``, see :func:`covariate_groups`) on one side.

    "No evaluation point is ever a training input" (App. B.1) holds by value, not only by row
    index. Groups are visited in a random order and taken whole while they fit into the
    evaluation pool's remaining room, until it holds exactly ``n_eval`` rows; every group thus
    has (almost exactly) the same chance to be evaluated, whatever its size.
    """
    groups = np.asarray(groups).reshape(-1)
    n_rows = groups.size
    if not 0 < n_eval < n_rows:
        raise ValueError(f"n_eval must lie in (0, {n_rows}), got {n_eval}")
    sizes = np.bincount(groups)
    taken = np.zeros(sizes.size, dtype=bool)
    room = int(n_eval)
    for group in rng.permutation(sizes.size):
        if 0 < sizes[group] <= room:
            taken[group] = True
            room -= int(sizes[group])
            if room == 0:
                break
    if room:
        raise ValueError(f"no grouped split gives exactly {n_eval} evaluation rows "
                         f"({room} short; group sizes {np.bincount(sizes)[1:].tolist()})")
    chosen = taken[groups]
    return np.flatnonzero(chosen), np.flatnonzero(~chosen)


def duplicate_summary(groups: np.ndarray) -> dict[str, int]:
    """How many distinct covariate values occur more than once, and in how many rows."""
    sizes = np.bincount(np.asarray(groups).reshape(-1))
    repeated = sizes[sizes > 1]
    return {"duplicate_groups": int(repeated.size), "rows_in_duplicate_groups": int(repeated.sum()),
            "distinct_rows": int(np.count_nonzero(sizes))}


@dataclass(frozen=True)
class Shells:
    """Mahalanobis shells fitted on the candidate pool and applied to every row."""

    center: np.ndarray  # candidate-pool column means
    scale: np.ndarray  # candidate-pool column SDs (1 where constant)
    precision: np.ndarray  # inverse of the shrunk covariance of the z-scored candidates
    thresholds: np.ndarray  # the 4 quintile thresholds of the candidates' distances
    shrinkage: float

    def distance(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype=float) - self.center) / self.scale
        return np.sqrt(np.einsum("ij,jk,ik->i", z, self.precision, z))

    def assign(self, x: np.ndarray) -> np.ndarray:
        """Shell index 0 (innermost) … 4 (outermost) of every row of ``x``."""
        return np.searchsorted(self.thresholds, self.distance(x), side="right").astype(np.int8)


def fit_shells(candidates: np.ndarray, shrinkage: float = SHELL_SHRINKAGE) -> Shells:
    """Z-score the candidates, shrink their covariance towards (tr C/d)·I, take quintiles.

    ``C_λ = (1 − λ) C + λ (tr C / d) I`` with λ = ``shrinkage`` (App. B.4).
    """
    x = np.asarray(candidates, dtype=float)
    center = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (x - center) / scale
    cov = np.atleast_2d(np.cov(z, rowvar=False))
    d = cov.shape[0]
    shrunk = (1 - shrinkage) * cov + shrinkage * (np.trace(cov) / d) * np.eye(d)
    precision = np.linalg.inv(shrunk)
    partial = Shells(center, scale, precision, np.empty(0), shrinkage)
    dist = partial.distance(x)
    thresholds = np.quantile(dist, np.arange(1, N_SHELLS) / N_SHELLS)
    return Shells(center, scale, precision, thresholds, shrinkage)


@dataclass(frozen=True)
class PrincipalScore:
    """The first principal component of the column-standardised covariates (docs/design.md,
    "Noise modes").

    Loadings come from the evaluation pool; the sign is fixed so that the loading of largest
    magnitude is positive. ``score`` is the raw projection; noise modes rank-Gaussianise it.
    """

    center: np.ndarray
    scale: np.ndarray
    loadings: np.ndarray
    explained_variance_ratio: float

    def score(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=float) - self.center) / self.scale) @ self.loadings


def fit_principal_score(eval_pool: np.ndarray) -> PrincipalScore:
    x = np.asarray(eval_pool, dtype=float)
    center = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (x - center) / scale
    _, singular, vt = np.linalg.svd(z, full_matrices=False)
    loadings = vt[0]
    if loadings[np.argmax(np.abs(loadings))] < 0:
        loadings = -loadings
    ratio = float(singular[0] ** 2 / np.sum(singular**2)) if np.any(singular) else 0.0
    return PrincipalScore(center, scale, loadings, ratio)
