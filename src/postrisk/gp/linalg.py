"""GP linear algebra, float64: Cholesky factorisations, solves and log-determinants of GP
covariances (docs/design.md, "Priors").

Three groups of routines, each the one home of its operation:

- :func:`cholesky_solve`: α = K⁻¹r, ½ ln|K| and K⁻¹ from one LAPACK (scipy) Cholesky
  factorisation; :func:`gaussian_loglik_with_grads` builds log N(r; 0, K) and its gradients on
  it for the type-II maximum-likelihood fit (:mod:`postrisk.gp.fit`), and
  :func:`negative_log_marginal_per_point` calls it from traced JAX code (a host callback with a
  custom vector-Jacobian product) for deep kernel learning.
- :func:`condition` and :func:`predictive_moments`: exact conditioning on training targets with
  known noise, K + Σ = LLᵀ, α = (K + Σ)⁻¹y, and the predictive mean and variance from the factor
  (:mod:`postrisk.gp.exact`, deep kernel learning).
- :func:`robust_factor` / :func:`robust_sqrt`: a square root of a nearly singular covariance for
  joint draws, a Cholesky factor with jitter escalating from 1e-10 to 1e-6 times the mean
  diagonal, else an eigendecomposition with negative eigenvalues clipped to 0.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.linalg.lapack

# ---------------------------------------------------------------------------------------------
# Gaussian log-likelihood by one LAPACK Cholesky factorisation (the kernel fit, deep kernel
# learning)
# ---------------------------------------------------------------------------------------------

def cholesky_solve(kmat, r, with_inverse: bool = True,
                   check_finite: bool = False) -> tuple[np.ndarray, float, np.ndarray | None]:
    """(α = K⁻¹r, ½ ln|K|, K⁻¹ or None) from one LAPACK Cholesky factorisation of ``kmat``.

    LAPACK through scipy (dpotrf, dpotrs, dpotri): ~1.6× faster on CPU than the same in JAX,
    whose inverse from a Cholesky factor goes through two triangular solves. Raises
    ``np.linalg.LinAlgError`` when K is not numerically positive definite (and, with
    ``check_finite``, when the factor is not finite). The Gaussian log-likelihood's linear
    algebra: the kernel fit (:func:`postrisk.gp.fit.fit_kernel`, through
    :func:`gaussian_loglik_with_grads`) and deep kernel learning
    (:func:`negative_log_marginal_per_point`) both use it.
    """
    kmat = np.array(kmat, dtype=np.float64, order="F")
    r = np.asarray(r, dtype=np.float64)
    chol, info = scipy.linalg.lapack.dpotrf(kmat, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky factorisation failed (info={info})")
    if check_finite and not np.isfinite(np.tril(chol)).all():
        raise np.linalg.LinAlgError("Cholesky factor is not finite")
    alpha, _ = scipy.linalg.lapack.dpotrs(chol, r, lower=1)
    half_logdet = float(np.sum(np.log(np.diag(chol))))
    if not with_inverse:
        return alpha, half_logdet, None
    kinv, info = scipy.linalg.lapack.dpotri(chol, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"inverse from the Cholesky factor failed (info={info})")
    kinv = np.tril(kinv)
    kinv += np.tril(kinv, -1).T
    return alpha, half_logdet, kinv


def gaussian_loglik_with_grads(kmat, r) -> tuple[float, np.ndarray, np.ndarray]:
    """log N(r; 0, kmat) and its gradients ∂/∂K = ½(ααᵀ − K⁻¹), ∂/∂r = −α (α = K⁻¹r), by
    :func:`cholesky_solve`; raises ``np.linalg.LinAlgError`` when K is not positive definite."""
    r = np.asarray(r, dtype=np.float64)
    n = r.shape[0]
    alpha, half_logdet, kinv = cholesky_solve(kmat, r)
    val = -0.5 * float(r @ alpha) - half_logdet - 0.5 * n * math.log(2 * math.pi)
    g_k = np.outer(alpha, alpha)
    g_k -= kinv
    g_k *= 0.5
    return val, g_k, -alpha


# -- the same from traced JAX code (deep kernel learning) --------------------------------------

_LOG_2PI = math.log(2.0 * math.pi)


def _host_cholesky_solve(k: np.ndarray, t: np.ndarray, with_inverse: bool):
    """(α, ln|K|[, K⁻¹]) for the JAX callback; NaN-filled when the Cholesky fails."""
    try:
        alpha, half_logdet, inv = cholesky_solve(k, t, with_inverse, check_finite=True)
    except np.linalg.LinAlgError:
        nan = np.full(np.shape(k), np.nan)
        return ((np.full(np.shape(t), np.nan), np.float64(np.nan))
                + ((nan,) if with_inverse else ()))
    logdet = np.float64(2.0 * half_logdet)
    return (alpha, logdet) + ((inv,) if with_inverse else ())


def _to_bits(a):
    """float64 → int32 pairs (last axis 2), bit-exact."""
    return jax.lax.bitcast_convert_type(a, jnp.int32)


def _host_to_bits(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64, order="C")
    return a.reshape(-1).view(np.int32).reshape(a.shape + (2,))


def _host_from_bits(a) -> np.ndarray:
    a = np.array(a, dtype=np.int32, order="C")
    return a.reshape(-1).view(np.float64).reshape(a.shape[:-1])


def _traced_cholesky_solve(k, t, with_inverse: bool):
    """:func:`_host_cholesky_solve` called from traced code (``jax.pure_callback``).

    The callback may run on a thread where x64 is off, and JAX then canonicalises float64
    arrays crossing the callback boundary to float32 (measured: results differing in the 7th
    digit from call to call). So float64 arguments and results travel bit-exactly as int32
    pairs (``lax.bitcast_convert_type``).
    """
    shapes = [t.shape, ()] + ([k.shape] if with_inverse else [])
    ints = tuple(jax.ShapeDtypeStruct(shape + (2,), jnp.int32) for shape in shapes)

    def host(k_bits, t_bits):
        out = _host_cholesky_solve(_host_from_bits(k_bits), _host_from_bits(t_bits),
                                   with_inverse)
        return tuple(_host_to_bits(a) for a in out)

    out = jax.pure_callback(host, ints, _to_bits(k), _to_bits(t), vmap_method="sequential")
    return tuple(jax.lax.bitcast_convert_type(a, jnp.float64) for a in out)


@jax.custom_vjp
def negative_log_marginal_per_point(cov, t):
    """−(1/n) ln N(t | 0, cov) for float64 ``cov`` (n, n) and ``t`` (n,), by the LAPACK
    Cholesky of :func:`cholesky_solve` (NaN when ``cov`` is not positive definite).

    Gradient (custom, exact): ∂/∂cov = (cov⁻¹ − ααᵀ)/(2n), ∂/∂t = α/n with α = cov⁻¹t — one
    ``dpotrf`` + ``dpotri`` per step, a few times cheaper than differentiating through
    ``jnp.linalg.cholesky`` on CPU.
    """
    alpha, logdet = _traced_cholesky_solve(cov, t, False)
    n = t.shape[0]
    return 0.5 * (jnp.dot(t, alpha) + logdet + n * _LOG_2PI) / n


def _nlm_fwd(cov, t):
    alpha, logdet, inv = _traced_cholesky_solve(cov, t, True)
    n = t.shape[0]
    value = 0.5 * (jnp.dot(t, alpha) + logdet + n * _LOG_2PI) / n
    return value, (alpha, inv)


def _nlm_bwd(res, g):
    alpha, inv = res
    n = alpha.shape[0]
    d_cov = (0.5 * g / n) * (inv - jnp.outer(alpha, alpha))
    return d_cov, (g / n) * alpha


negative_log_marginal_per_point.defvjp(_nlm_fwd, _nlm_bwd)


# ---------------------------------------------------------------------------------------------
# Exact conditioning with known noise
# ---------------------------------------------------------------------------------------------

def condition(cov: np.ndarray, y: np.ndarray, overwrite: bool = False,
              check_finite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(L, α): the lower Cholesky factor of ``cov`` = K + Σ (prior covariance of the training
    targets plus their noise) and α = (K + Σ)⁻¹y. Raises ``np.linalg.LinAlgError`` (or
    ``ValueError`` on non-finite input with ``check_finite``) when ``cov`` is not positive
    definite. The one home of exact GP conditioning: the GP prior, the GP method and
    deep kernel learning use it."""
    chol = scipy.linalg.cholesky(cov, lower=True, overwrite_a=overwrite,
                                 check_finite=check_finite)
    alpha = scipy.linalg.cho_solve((chol, True), y, check_finite=check_finite)
    return chol, alpha


def predictive_moments(chol: np.ndarray, alpha: np.ndarray, k_cross: np.ndarray,
                       prior_var: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, marginal variance ≥ 0, V = L⁻¹K*) of f at test points from :func:`condition`'s
    factor, the cross-covariance ``k_cross`` = K(X, X*) (n, m) and the prior variance at the
    test points: mean = K*ᵀα, var = k(x*, x*) − Σ_i V_i²."""
    v = scipy.linalg.solve_triangular(chol, k_cross, lower=True, check_finite=False)
    mean = k_cross.T @ alpha
    var = prior_var - np.einsum("ij,ij->j", v, v)
    return mean, np.clip(var, 0.0, None), v


# ---------------------------------------------------------------------------------------------
# Square roots of nearly singular covariances (joint draws)
# ---------------------------------------------------------------------------------------------

JITTERS = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6)


def jittered_cholesky(cov: np.ndarray, info: dict | None = None) -> np.ndarray | None:
    """The lower Cholesky factor of ``cov`` plus a jitter escalating over :data:`JITTERS` ×
    its mean diagonal (the first that factors; ``info`` gets ``method`` and ``jitter``), or
    None when none does (or the diagonal's mean is not positive); reads only the lower
    triangle."""
    cov = np.asarray(cov, dtype=np.float64)
    m = cov.shape[0]
    scale = float(np.mean(np.diag(cov)))
    if not np.isfinite(scale):
        raise ValueError("covariance has a non-finite diagonal")
    if scale > 0:
        for jit in JITTERS:
            work = np.array(cov, order="F")
            work[np.diag_indices(m)] += jit * scale
            try:
                chol = scipy.linalg.cholesky(work, lower=True, overwrite_a=True,
                                             check_finite=False)
            except np.linalg.LinAlgError:
                continue
            if np.all(np.isfinite(np.diag(chol))):
                if info is not None:
                    info.update(method="cholesky", jitter=jit)
                return chol
    return None


def robust_factor(cov: np.ndarray, info: dict | None) -> tuple[np.ndarray, bool]:
    """(F, F is lower triangular) with F Fᵀ ≈ cov; reads only the lower triangle of ``cov``:
    :func:`jittered_cholesky`, else the eigendecomposition with negative eigenvalues
    clipped."""
    cov = np.asarray(cov, dtype=np.float64)
    if cov.shape[0] == 0:
        return np.zeros((0, 0)), True
    chol = jittered_cholesky(cov, info)
    if chol is not None:
        return chol, True
    evals, evecs = scipy.linalg.eigh(cov, lower=True, check_finite=False)
    if info is not None:
        info.update(method="eigh", jitter=0.0, min_eigenvalue=float(evals.min()))
    return evecs * np.sqrt(np.clip(evals, 0.0, None)), False


def robust_sqrt(cov: np.ndarray, info: dict | None = None) -> np.ndarray:
    """F with F Fᵀ ≈ cov, from the lower triangle of the symmetric ``cov``.

    Tries ``cholesky(cov + j·mean(diag(cov))·I)`` for j in :data:`JITTERS` (F lower
    triangular); if all fail, ``V·sqrt(max(λ, 0))`` from ``eigh(cov)``. ``info`` (a dict), when
    given, receives ``method`` ("cholesky" or "eigh") and ``jitter`` (relative; 0 for eigh).
    """
    return robust_factor(cov, info)[0]
