"""Exact oracle quantities of the classification tasks, for a reference posterior given as the
equal-weight mixture of D draws of class-probability vectors π_F(x) ∈ Δ^{K-1}.

With π̄(x) = E_F[π_F(x)] (the posterior centroid, here the mean over draws) and a deployed
prediction π̂, the posterior risk of π̂ splits exactly (the paper's App. A.5 and A.6) as

    R_S(π̂; x) = E_F E_{Y|F}[ℓ(π̂, Y)] = AU + generalized variance + deployment gap,

    log loss ℓ(π, y) = -log π_y:
        AU = E_F[H(π_F)],     GV = E_F[KL(π_F ‖ π̄)] = I(Y; F | x, S),     gap = KL(π̄ ‖ π̂);
    Brier ℓ(π, y) = ‖π - e_y‖²:
        AU = E_F[1 - ‖π_F‖²], GV = E_F‖π_F - π̄‖²,                       gap = ‖π̄ - π̂‖².

GV + gap = E_F[D(π_F ‖ π̂)] is the posterior excess risk, and the risk at π̂ = π̄ is the Bayes
risk of the posterior predictive, H(π̄) resp. 1 - ‖π̄‖² (so H(π̄) = AU + I(Y; F | x, S)).
Entropies and divergences use 0·log 0 := 0; a π̂ with π̂_k = 0 where π̄_k > 0 has an infinite
log-loss deployment gap (and risk), as it should: the label k has positive predictive mass.

Against the true class probabilities π*, the realised excess risk of π̂ is KL(π* ‖ π̂) resp.
‖π* - π̂‖². :func:`zero_one` (the Bayes error 1 - max_k π*_k and the 0-1 regret of the class
argmax π̂) is an addition beyond the paper, which treats proper scores only.

Everything is computed in float64. Inputs are validated: finite, non-negative, rows summing to
1 within 1e-4 (float32 and narrower inputs) or 1e-6 (float64 and integer inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import rel_entr, xlogy

LOSSES = ("log_loss", "brier")

_SUM_TOL_LOW_PRECISION = 1e-4
_SUM_TOL_FLOAT64 = 1e-6


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSSES}")


def _as_simplex(values, name: str, ndim: int, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``values`` as a float64 array of ``ndim`` dimensions whose last-axis rows lie on the
    probability simplex (and of shape ``shape`` when given); ValueError otherwise."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be a real numeric array; got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got {arr.shape}")
    if arr.shape[-1] < 2:
        raise ValueError(f"{name} needs at least two classes on its last axis; got {arr.shape}")
    low = arr.dtype.kind == "f" and arr.dtype.itemsize < 8
    tol = _SUM_TOL_LOW_PRECISION if low else _SUM_TOL_FLOAT64
    out = arr.astype(np.float64, copy=False)
    if not np.isfinite(out).all():
        raise ValueError(f"{name} must be finite")
    if out.size and out.min() < 0:
        raise ValueError(f"{name} must be non-negative; minimum is {out.min()}")
    err = np.abs(out.sum(axis=-1) - 1.0)
    if err.size and err.max() > tol:
        raise ValueError(f"rows of {name} must sum to 1 (within {tol:g}); "
                         f"largest deviation is {err.max():.3g}")
    return out


def _as_draws(prob_draws) -> np.ndarray:
    draws = _as_simplex(prob_draws, "prob_draws", 3)
    if draws.shape[0] < 1:
        raise ValueError("prob_draws needs at least one posterior draw")
    return draws


def _entropy(p: np.ndarray) -> np.ndarray:
    """H(p) = -Σ_k p_k log p_k over the last axis (0·log 0 = 0)."""
    return -xlogy(p, p).sum(axis=-1)


def _sqnorm(v: np.ndarray) -> np.ndarray:
    """‖v‖² over the last axis."""
    return np.einsum("...k,...k->...", v, v)


def _decompose(draws: np.ndarray, centroid: np.ndarray, pred: np.ndarray,
               loss: str) -> dict[str, np.ndarray]:
    """The decomposition for validated float64 inputs; at most two (D, n, K) temporaries."""
    if loss == "log_loss":
        aleatoric = _entropy(draws).mean(axis=0)
        # π̄_k ≥ π_{F,k} / D, so every term is finite
        general_variance = rel_entr(draws, centroid).sum(axis=-1).mean(axis=0)
        gap = rel_entr(centroid, pred).sum(axis=-1)
        bayes_risk = _entropy(centroid)
    else:
        aleatoric = 1.0 - _sqnorm(draws).mean(axis=0)
        general_variance = _sqnorm(draws - centroid).mean(axis=0)
        gap = _sqnorm(centroid - pred)
        bayes_risk = 1.0 - _sqnorm(centroid)
    excess = general_variance + gap
    return {
        "aleatoric": aleatoric,
        "generalized_variance": general_variance,
        "deployment_gap": gap,
        "posterior_excess_risk": excess,
        "risk": aleatoric + excess,
        "bayes_risk": bayes_risk,
    }


def posterior_centroid(prob_draws) -> np.ndarray:
    """π̄(x) = E_F[π_F(x)], the mean over the D draws of ``prob_draws`` (D, n, K): (n, K)."""
    return _as_draws(prob_draws).mean(axis=0)


def risk_decomposition(prob_draws, pred, loss: str) -> dict[str, np.ndarray]:
    """The exact risk decomposition of the deployed prediction ``pred`` (n, K) under the
    equal-weight mixture of the draws ``prob_draws`` (D, n, K), per point (arrays of shape (n,)):

    ``aleatoric``               E_F[H(π_F)]             | E_F[1 - ‖π_F‖²]
    ``generalized_variance``    E_F[KL(π_F ‖ π̄)] (= MI) | E_F‖π_F - π̄‖²
    ``deployment_gap``          KL(π̄ ‖ π̂) (+inf if π̂_k = 0 < π̄_k) | ‖π̄ - π̂‖²
    ``posterior_excess_risk``   generalized_variance + deployment_gap = E_F[D(π_F ‖ π̂)]
    ``risk``                    aleatoric + posterior_excess_risk = E_F E_{Y|F}[ℓ(π̂, Y)]
    ``bayes_risk``              the risk at π̂ = π̄: H(π̄) | 1 - ‖π̄‖²

    (log loss | Brier score; ``loss`` is one of :data:`LOSSES`.)
    """
    _check_loss(loss)
    draws = _as_draws(prob_draws)
    pred = _as_simplex(pred, "pred", 2, draws.shape[1:])
    return _decompose(draws, draws.mean(axis=0), pred, loss)


def pointwise_excess_risk(true_probs, pred, loss: str) -> np.ndarray:
    """The realised excess risk of ``pred`` against the truth ``true_probs`` (both (n, K)):
    KL(π* ‖ π̂) for the log loss (+inf if π̂_k = 0 < π*_k), ‖π* - π̂‖² for the Brier score;
    equals ``expected_loss(π*, π̂) - expected_loss(π*, π*)``. Shape (n,)."""
    _check_loss(loss)
    truth = _as_simplex(true_probs, "true_probs", 2)
    pred = _as_simplex(pred, "pred", 2, truth.shape)
    if loss == "log_loss":
        return rel_entr(truth, pred).sum(axis=-1)
    return _sqnorm(truth - pred)


def expected_loss(probs, pred, loss: str) -> np.ndarray:
    """E_{Y ~ Cat(π)}[ℓ(π̂, Y)] for one class-probability vector π per point (``probs`` and
    ``pred`` both (n, K)): -Σ_k π_k log π̂_k for the log loss, ‖π̂ - π‖² + 1 - ‖π‖² for the
    Brier score. Shape (n,)."""
    _check_loss(loss)
    probs = _as_simplex(probs, "probs", 2)
    pred = _as_simplex(pred, "pred", 2, probs.shape)
    if loss == "log_loss":
        return -xlogy(probs, pred).sum(axis=-1)
    return _sqnorm(pred - probs) + 1.0 - _sqnorm(probs)


def zero_one(true_probs, pred) -> dict[str, np.ndarray]:
    """0-1 loss quantities (an addition beyond the paper), per point (shape (n,)):
    ``bayes_error`` = 1 - max_k π*_k and ``regret`` = max_k π*_k - π*_{argmax π̂}, the excess
    0-1 risk of predicting the class argmax π̂ (ties broken by the lowest index, as np.argmax)."""
    truth = _as_simplex(true_probs, "true_probs", 2)
    pred = _as_simplex(pred, "pred", 2, truth.shape)
    best = truth.max(axis=-1)
    chosen = np.take_along_axis(truth, pred.argmax(axis=-1)[:, None], axis=-1)[:, 0]
    return {"bayes_error": 1.0 - best, "regret": best - chosen}


@dataclass(frozen=True, eq=False)
class ClassificationOracle:
    """The oracle of one classification task: posterior draws ``prob_draws`` (D, n, K) of the
    reference posterior and the true class probabilities ``true_probs`` (n, K), validated and
    stored as float64 (no copy when already float64). Thin wrappers around the module's
    functions that cache the centroid π̄."""

    prob_draws: np.ndarray
    true_probs: np.ndarray

    def __post_init__(self) -> None:
        draws = _as_draws(self.prob_draws)
        truth = _as_simplex(self.true_probs, "true_probs", 2, draws.shape[1:])
        object.__setattr__(self, "prob_draws", draws)
        object.__setattr__(self, "true_probs", truth)

    @cached_property
    def centroid(self) -> np.ndarray:
        """π̄ = E_F[π_F], shape (n, K)."""
        return self.prob_draws.mean(axis=0)

    def decomposition(self, pred, loss: str) -> dict[str, np.ndarray]:
        """:func:`risk_decomposition` of ``pred`` under this task's reference posterior."""
        _check_loss(loss)
        pred = _as_simplex(pred, "pred", 2, self.true_probs.shape)
        return _decompose(self.prob_draws, self.centroid, pred, loss)

    def pointwise_excess_risk(self, pred, loss: str) -> np.ndarray:
        """:func:`pointwise_excess_risk` of ``pred`` against this task's π*."""
        return pointwise_excess_risk(self.true_probs, pred, loss)

    def zero_one(self, pred) -> dict[str, np.ndarray]:
        """:func:`zero_one` of ``pred`` against this task's π*."""
        return zero_one(self.true_probs, pred)
