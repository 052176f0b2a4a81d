"""The reference rows of every table (docs/design.md, "Methods"): functions of a task's arrays,
not fitted methods.

* ``oracle`` — mean = posterior mean m_S, EU = true posterior variance σ²_f, AU = true noise
  variance σ²_ε: the best any method could report.
* ``mahalanobis`` — EU = the Mahalanobis distance of an evaluation input from the training
  inputs' mean under their shrunk covariance (the distance that defines the coverage shells,
  fitted on the training inputs); mean = the kNN regressor below; AU = Var(y_train) (constant).
* ``knn10`` — EU = the mean distance to the k = 10 nearest training inputs in shrinkage-whitened
  coordinates; mean = the k neighbours' mean target (a kNN regressor); AU = Var(y_train).
* ``constant_au`` — mean = mean(y_train), AU = Var(y_train) (constant), EU = 0 (constant): rank
  metrics of its AU and EU are "not applicable".

The paper reports the two distance rows separately; both share the kNN mean, so their EU targets
are equal and the rows differ only in the distance. A distance EU is not a variance in target
units: it is meant for the rank metrics (:data:`DISTANCE_ROWS`: no predictive scores).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from postrisk.core.arrays import as_matrix, as_vector
from postrisk.covariates.pools import SHELL_SHRINKAGE, fit_shells
from postrisk.methods.interface import Prediction
from postrisk.methods.table import REFERENCE_ROWS

#: Rows whose EU is a distance, not a variance: predictive scores (NLL, CRPS, …) do not apply.
DISTANCE_ROWS = ("mahalanobis", "knn10")

#: Shrinkage of the training covariance towards a scaled identity: the coverage shells' own.
SHRINKAGE = SHELL_SHRINKAGE
N_NEIGHBOURS = 10


def oracle_prediction(posterior_mean, posterior_var, noise_var_eval) -> Prediction:
    """mean = m_S(x), EU = σ²_f(x), AU = σ²_ε(x), passed through unchanged (as float64)."""
    mean = as_vector("posterior_mean", posterior_mean)
    eu = as_vector("posterior_var", posterior_var)
    au = as_vector("noise_var_eval", noise_var_eval)
    if not (mean.shape == eu.shape == au.shape):
        raise ValueError(f"shapes differ: {mean.shape}, {eu.shape}, {au.shape}")
    return Prediction(mean=mean.copy(), aleatoric_var=au.copy(), epistemic_var=eu.copy())


def whitening(x_train: np.ndarray, shrinkage: float = SHRINKAGE) -> tuple[np.ndarray, np.ndarray]:
    """Centre ``c`` and matrix ``W`` with z = (x − c)·W in shrinkage-whitened coordinates.

    Inputs are z-scored by the training mean and SD (SD 0 → 1), C is the covariance of the
    z-scored training inputs, C_λ = (1 − λ)C + λ(tr C/d)I, and W = D⁻¹C_λ^{−1/2} (D = diag SD),
    so ‖z − z′‖ is the Mahalanobis distance under C_λ. z-scoring first makes the distance
    invariant to rescaling a feature even though the shrinkage target is isotropic (as for the
    coverage shells, docs/design.md, "Coverage").
    """
    x = as_matrix("x_train", x_train)
    n, d = x.shape
    centre = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    z = (x - centre) / sd
    cov = np.atleast_2d(np.cov(z, rowvar=False)) if n > 1 else np.zeros((d, d))
    target = np.trace(cov) / d
    if not target > 0:  # all training inputs identical: plain Euclidean distance
        return centre, np.diag(1.0 / sd)
    shrunk = (1 - shrinkage) * cov + shrinkage * target * np.eye(d)
    vals, vecs = np.linalg.eigh(shrunk)
    vals = np.clip(vals, shrinkage * target * 1e-12, None)
    inv_sqrt = (vecs / np.sqrt(vals)) @ vecs.T
    return centre, np.diag(1.0 / sd) @ inv_sqrt


def knn_prediction(x_train, y_train, x_eval, k: int = N_NEIGHBOURS) -> Prediction:
    """kNN reference row (``knn10``).

    EU(x) = (1/k) Σ_{j ∈ N_k(x)} ‖z(x) − z(x_j)‖ with z the shrinkage-whitened coordinates of
    :func:`whitening` and N_k(x) the k nearest training inputs (k capped at n_train);
    mean(x) = (1/k) Σ_{j ∈ N_k(x)} y_j; AU = Var(y_train) (population variance, constant).
    """
    x_tr = as_matrix("x_train", x_train)
    y_tr = as_vector("y_train", y_train)
    x_ev = as_matrix("x_eval", x_eval)
    if y_tr.shape[0] != x_tr.shape[0]:
        raise ValueError(f"x_train has {x_tr.shape[0]} rows, y_train {y_tr.shape[0]}")
    if x_ev.shape[1] != x_tr.shape[1]:
        raise ValueError(f"x_eval has {x_ev.shape[1]} features, x_train {x_tr.shape[1]}")
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    k = min(int(k), x_tr.shape[0])
    centre, w = whitening(x_tr)
    # exact k-nearest neighbours (Euclidean) in the whitened coordinates
    dist, idx = cKDTree((x_tr - centre) @ w).query((x_ev - centre) @ w, k=k)
    m = x_ev.shape[0]
    dist, idx = dist.reshape(m, k), idx.reshape(m, k)
    return Prediction(mean=y_tr[idx].mean(axis=1), aleatoric_var=np.full(m, float(y_tr.var())),
                      epistemic_var=dist.mean(axis=1))


def mahalanobis_prediction(x_train, y_train, x_eval, k: int = N_NEIGHBOURS) -> Prediction:
    """Mahalanobis reference row: EU(x) = √((z(x) − z̄)ᵀ C_λ⁻¹ (z(x) − z̄)) with z the inputs
    z-scored by the training mean and SD, z̄ = 0 their training mean and C_λ the training
    covariance of z shrunk towards (tr C/d)·I with λ = :data:`SHRINKAGE` — the distance of the
    coverage shells, fitted on the training inputs; mean and AU as :func:`knn_prediction`."""
    knn = knn_prediction(x_train, y_train, x_eval, k)
    x_tr = as_matrix("x_train", x_train)
    if x_tr.shape[0] < 2:
        raise ValueError("the Mahalanobis row needs at least 2 training inputs")
    distance = fit_shells(x_tr, shrinkage=SHRINKAGE).distance(as_matrix("x_eval", x_eval))
    return Prediction(mean=knn.mean, aleatoric_var=knn.aleatoric_var, epistemic_var=distance)


def constant_au_prediction(x_train, y_train, x_eval) -> Prediction:
    """mean = mean(y_train), AU = Var(y_train) (population variance), EU = 0; all constant."""
    as_matrix("x_train", x_train)
    y_tr = as_vector("y_train", y_train)
    m = as_matrix("x_eval", x_eval).shape[0]
    return Prediction(mean=np.full(m, float(y_tr.mean())),
                      aleatoric_var=np.full(m, float(y_tr.var())), epistemic_var=np.zeros(m))


def reference_prediction(row: str, *, x_train, y_train, x_eval, posterior_mean=None,
                         posterior_var=None, noise_var_eval=None) -> Prediction:
    """Dispatch on a name of :data:`REFERENCE_ROWS` (``oracle`` needs the posterior arrays)."""
    if row == "oracle":
        if posterior_mean is None or posterior_var is None or noise_var_eval is None:
            raise ValueError("the oracle row needs posterior_mean, posterior_var, noise_var_eval")
        return oracle_prediction(posterior_mean, posterior_var, noise_var_eval)
    if row == "mahalanobis":
        return mahalanobis_prediction(x_train, y_train, x_eval)
    if row == "knn10":
        return knn_prediction(x_train, y_train, x_eval)
    if row == "constant_au":
        return constant_au_prediction(x_train, y_train, x_eval)
    raise KeyError(f"unknown reference row {row!r}; allowed: {', '.join(REFERENCE_ROWS)}")
