"""Exact GP prior draws and conditioning with known per-point noise, float64 (docs/design.md,
"Priors" and "Task instances").

Prior f ~ GP(0, a²·k) with ``k`` a :class:`postrisk.gp.kernels.Kernel` and ``a`` the scale
constant of :func:`postrisk.priors.base.scale_constant`; likelihood
``y_i ~ N(f(x_i), noise_var_train[i])`` with the noise variances known (heteroscedastic). With
K = a²k(X, X), Σ = diag(noise_var_train), K* = a²k(X, X*), K** = a²k(X*, X*)::

    mean = K*ᵀ (K + Σ)⁻¹ y,        cov = K** − K*ᵀ (K + Σ)⁻¹ K*

computed through a Cholesky factor of K + Σ (:func:`postrisk.gp.linalg.condition`, float64).

Duplicate rows are common in the evaluation pools (thousands in some datasets): prior and
posterior draws are computed on the unique rows of ``x`` / ``x_test`` and broadcast back, so
duplicates get identical values. Joint draws need a square root of a nearly singular
covariance: a Cholesky factor with jitter escalating from 1e-10 to 1e-6 times the mean diagonal,
else an eigendecomposition with negative eigenvalues clipped to 0 (see
:func:`postrisk.gp.linalg.robust_sqrt`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg.blas

from postrisk.core.arrays import as_matrix
from postrisk.gp.kernels import Kernel
from postrisk.gp.linalg import condition, predictive_moments, robust_factor


def _draw(factor: np.ndarray, lower: bool, n_draws: int,
          rng: np.random.Generator) -> np.ndarray:
    """(n_draws, m) draws F·z, z standard normal (drawn as an (n_draws, m) array)."""
    m = factor.shape[0]
    z = rng.standard_normal((n_draws, m))
    if lower and m > 0 and n_draws > 0:
        # z.T is Fortran-ordered: a triangular product in place, half the flops of a matmul.
        out = scipy.linalg.blas.dtrmm(1.0, factor, z.T, lower=1, overwrite_b=1)
        return out.T
    return z @ factor.T


def _unique_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xu, inv = np.unique(x, axis=0, return_inverse=True)
    return xu, np.asarray(inv).reshape(-1)


def _check_x(kernel: Kernel, x, name: str) -> np.ndarray:
    return as_matrix(name, x, n_columns=kernel.dim, finite=True)


def _sym_matrix(kernel: Kernel, x: np.ndarray) -> np.ndarray:
    """k(x, x); exactly symmetric for all components but ``linear`` (a matrix product, which
    may differ from its transpose by rounding). Only the lower triangle is used downstream."""
    return kernel.matrix(x, x)


def sample_prior(kernel: Kernel, a: float, x, rng: np.random.Generator, size: int = 1,
                 info: dict | None = None) -> np.ndarray:
    """``size`` joint draws of f ~ N(0, a²·k(x, x)) as a (size, n) float64 array.

    Computed on the unique rows of ``x`` (duplicates get identical values); ``info`` as in
    :func:`postrisk.gp.linalg.robust_sqrt`.
    """
    x = _check_x(kernel, x, "x")
    n = x.shape[0]
    if n == 0:
        return np.zeros((size, 0))
    xu, inv = _unique_rows(x)
    cov = _sym_matrix(kernel, xu)
    cov *= float(a) ** 2
    factor, lower = robust_factor(cov, info)
    del cov
    draws = _draw(factor, lower, size, rng)
    if info is not None:
        info.update(n_unique=int(xu.shape[0]))
    return np.ascontiguousarray(draws[:, inv])


class _Conditioner:
    """Cholesky factor of K + Σ and the pieces shared by the moments and the draws."""

    def __init__(self, kernel: Kernel, a: float, x_train, y_train, noise_var_train):
        self.kernel = kernel
        self.a2 = float(a) ** 2
        x = _check_x(kernel, x_train, "x_train")
        y = np.asarray(y_train, dtype=np.float64).reshape(-1)
        nv = np.asarray(noise_var_train, dtype=np.float64).reshape(-1)
        if y.shape[0] != x.shape[0] or nv.shape[0] != x.shape[0]:
            raise ValueError(f"x_train has {x.shape[0]} rows, y_train {y.shape[0]}, "
                             f"noise_var_train {nv.shape[0]}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y_train contains non-finite values")
        if not (np.all(np.isfinite(nv)) and np.all(nv > 0)):
            raise ValueError("noise_var_train must be finite and > 0")
        self.x = x
        kmat = _sym_matrix(kernel, x)
        kmat *= self.a2
        kmat[np.diag_indices(x.shape[0])] += nv
        self.chol, self.alpha = condition(kmat, y, overwrite=True)

    def moments(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, marginal variance, V) at ``xs``."""
        ks = self.kernel.matrix(self.x, xs)
        ks *= self.a2
        return predictive_moments(self.chol, self.alpha, ks, self.a2 * self.kernel.diag(xs))

    def joint(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, marginal variance, covariance K** − VᵀV) at ``xs``; the covariance is exact
        in its lower triangle (the upper one may differ by rounding for ``linear``)."""
        mean, var, v = self.moments(xs)
        cov = _sym_matrix(self.kernel, xs)
        cov *= self.a2
        cov -= v.T @ v
        return mean, var, cov


def posterior_moments(kernel: Kernel, a: float, x_train, y_train, noise_var_train,
                      x_test) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior mean (m,) and marginal variance (m,) of f at ``x_test``."""
    return posterior_predictor(kernel, a, x_train, y_train, noise_var_train)(x_test)


def posterior_covariance(kernel: Kernel, a: float, x_train, y_train, noise_var_train,
                         x_test) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior mean (m,) and full covariance (m, m) of f at ``x_test`` (symmetrised);
    the quantities :func:`posterior_draws` samples from (before its jitter)."""
    cond = _Conditioner(kernel, a, x_train, y_train, noise_var_train)
    xs = _check_x(kernel, x_test, "x_test")
    if xs.shape[0] == 0:
        return np.zeros(0), np.zeros((0, 0))
    mean, _, cov = cond.joint(xs)
    lower = np.tril(cov)
    return mean, lower + np.tril(cov, -1).T


def posterior_draws(kernel: Kernel, a: float, x_train, y_train, noise_var_train, x_test,
                    n_draws: int, rng: np.random.Generator, info: dict | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint draws of f at ``x_test`` from the exact posterior.

    Returns ``(draws (n_draws, m), mean (m,), var (m,))``: the draws come from the posterior
    covariance (plus the jitter of :func:`postrisk.gp.linalg.robust_sqrt`, reported in
    ``info``), the mean and the marginal variance are exact (no jitter). Computed on the unique
    rows of ``x_test``.
    """
    cond = _Conditioner(kernel, a, x_train, y_train, noise_var_train)
    xs = _check_x(kernel, x_test, "x_test")
    if xs.shape[0] == 0:
        return np.zeros((n_draws, 0)), np.zeros(0), np.zeros(0)
    xu, inv = _unique_rows(xs)
    mean, var, cov = cond.joint(xu)
    factor, lower = robust_factor(cov, info)
    del cov
    draws = _draw(factor, lower, n_draws, rng)
    draws += mean
    if info is not None:
        info.update(n_unique=int(xu.shape[0]))
    return np.ascontiguousarray(draws[:, inv]), mean[inv], var[inv]


def posterior_predictor(kernel: Kernel, a: float, x_train, y_train, noise_var_train):
    """Condition once, predict many times: returns ``predict(x_test) -> (mean, var)``, the exact
    posterior mean and marginal variance of f (one Cholesky factor of K + Σ, computed here; the
    test rows are reduced to their unique rows). :func:`posterior_moments` is one call of it."""
    cond = _Conditioner(kernel, a, x_train, y_train, noise_var_train)

    def predict(x_test) -> tuple[np.ndarray, np.ndarray]:
        xs = _check_x(kernel, x_test, "x_test")
        if xs.shape[0] == 0:
            return np.zeros(0), np.zeros(0)
        xu, inv = _unique_rows(xs)
        mean, var, _ = cond.moments(xu)
        return mean[inv], var[inv]

    return predict
