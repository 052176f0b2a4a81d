"""Oracle targets (paper App. A, B.6; docs/design.md, "Oracle targets"). Pure functions on
arrays of evaluation points.

Under squared loss, for a point prediction â(x) and the reference posterior with mean m_S and
variance σ²_f:

- AU = σ²_ε(x) (the generating noise variance);
- posterior variance σ²_f(x);  deployment gap (â − m_S)²;
- **posterior excess risk** EU = σ²_f + (â − m_S)² (the primary EU target);
- pointwise excess risk (â − f*)² (the fixed-truth, risk-based EU);
- total = AU + EU.

For a Gaussian predictive N(μ̂, ŝ²) the CRPS and log-score risks decompose into AU +
generalized variance + deployment gap (App. A.3/A.4). With a Gaussian reference posterior (GP
instances) all three terms have closed forms (``*_gaussian``); with a mixture of D posterior
draws (HBART, BNN) they are Monte Carlo estimates from the draws (``*_mc``), stated as such.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, ndtr

SQRT_PI = np.sqrt(np.pi)
EU_TARGETS = ("posterior_excess_risk", "posterior_variance", "pointwise_excess_risk")


def deployment_gap(pred_mean, posterior_mean) -> np.ndarray:
    return (np.asarray(pred_mean) - np.asarray(posterior_mean)) ** 2


def posterior_excess_risk(pred_mean, posterior_mean, posterior_var) -> np.ndarray:
    """EU_S(â; x) = σ²_f(x) + (â(x) − m_S(x))² (App. B.6)."""
    return np.asarray(posterior_var) + deployment_gap(pred_mean, posterior_mean)


def pointwise_excess_risk(pred_mean, f_true) -> np.ndarray:
    return (np.asarray(pred_mean) - np.asarray(f_true)) ** 2


def eu_targets(pred_mean, posterior_mean, posterior_var, f_true) -> dict[str, np.ndarray]:
    """The three EU targets of a method's mean prediction, keyed as in :data:`EU_TARGETS`."""
    shapes = {np.shape(v) for v in (pred_mean, posterior_mean, posterior_var, f_true)}
    if len(shapes) != 1:
        raise ValueError(f"pred_mean, posterior_mean, posterior_var and f_true differ in shape: "
                         f"{shapes}")
    return {
        "posterior_excess_risk": posterior_excess_risk(pred_mean, posterior_mean, posterior_var),
        "posterior_variance": np.asarray(posterior_var, dtype=float).copy(),
        "pointwise_excess_risk": pointwise_excess_risk(pred_mean, f_true),
    }


def total_risk(pred_mean, posterior_mean, posterior_var, noise_var) -> np.ndarray:
    return np.asarray(noise_var) + posterior_excess_risk(pred_mean, posterior_mean, posterior_var)


# -- CRPS (App. A.3) ---------------------------------------------------------------------------

def mean_abs_normal(mu, var) -> np.ndarray:
    """E|X| for X ~ N(mu, var)."""
    mu = np.asarray(mu, dtype=float)
    sd = np.sqrt(np.asarray(var, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mu / sd, 0.0)
    return np.where(sd > 0, sd * np.sqrt(2 / np.pi) * np.exp(-0.5 * t**2) + mu * (2 * ndtr(t) - 1),
                    np.abs(mu))


def crps_decomposition_gaussian(pred_mean, pred_var, posterior_mean, posterior_var,
                                noise_var) -> dict[str, np.ndarray]:
    """Exact CRPS risk terms for a Gaussian predictive under a Gaussian reference posterior.

    With v = σ²_f + σ²_ε:  AU = σ_ε/√π;  generalized variance = (√v − σ_ε)/√π;
    deployment gap = E|N(m − μ̂, v + ŝ²)| − √v/√π − ŝ/√π.
    """
    noise_sd = np.sqrt(noise_var)
    v = np.asarray(posterior_var) + np.asarray(noise_var)
    au = noise_sd / SQRT_PI
    gv = (np.sqrt(v) - noise_sd) / SQRT_PI
    gap = (mean_abs_normal(np.asarray(posterior_mean) - pred_mean, v + pred_var)
           - np.sqrt(v) / SQRT_PI - np.sqrt(pred_var) / SQRT_PI)
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


def crps_decomposition_mc(pred_mean, pred_var, draws, noise_var, rng: np.random.Generator,
                          n_pairs: int = 2000) -> dict[str, np.ndarray]:
    """Monte Carlo CRPS risk terms from D posterior draws (a mixture reference posterior).

    With P = E|Y − Y'| for Y, Y' independent from the posterior predictive (estimated over
    ``n_pairs`` random pairs of draws, in closed form given the pair): AU = σ_ε/√π,
    generalized variance = P/2 − σ_ε/√π, deployment gap = E|Y − Ŷ| − P/2 − ŝ/√π.
    """
    draws = np.asarray(draws, dtype=float)
    n_draws = draws.shape[0]
    noise_var = np.asarray(noise_var, dtype=float)
    i = rng.integers(n_draws, size=n_pairs)
    j = rng.integers(n_draws, size=n_pairs)
    pair = mean_abs_normal(draws[i] - draws[j], 2 * noise_var).mean(axis=0)
    to_pred = mean_abs_normal(draws - np.asarray(pred_mean), noise_var + pred_var).mean(axis=0)
    au = np.sqrt(noise_var) / SQRT_PI
    gv = pair / 2 - au
    gap = to_pred - pair / 2 - np.sqrt(pred_var) / SQRT_PI
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


# -- log score (App. A.4) ----------------------------------------------------------------------

def log_score_decomposition_gaussian(pred_mean, pred_var, posterior_mean, posterior_var,
                                     noise_var) -> dict[str, np.ndarray]:
    """Exact log-score risk terms: AU = ½log(2πeσ²_ε), GV = ½log(1 + σ²_f/σ²_ε),
    deployment gap = KL(N(m, v) ‖ N(μ̂, ŝ²)) with v = σ²_f + σ²_ε."""
    noise_var = np.asarray(noise_var, dtype=float)
    v = np.asarray(posterior_var) + noise_var
    au = 0.5 * np.log(2 * np.pi * np.e * noise_var)
    gv = 0.5 * np.log1p(np.asarray(posterior_var) / noise_var)
    gap = 0.5 * (np.log(pred_var / v) + (v + (np.asarray(pred_mean) - posterior_mean) ** 2)
                 / pred_var - 1)
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


def log_score_decomposition_mc(pred_mean, pred_var, draws, noise_var, rng: np.random.Generator,
                               n_samples: int = 256) -> dict[str, np.ndarray]:
    """Monte Carlo log-score risk terms from D posterior draws.

    Y is sampled from the posterior predictive mixture p̄ (``n_samples`` per point);
    log p̄(Y) is the exact log-mean-exp over all draws. GV = H(p̄) − AU (the mutual
    information), deployment gap = E_p̄[log p̄(Y) − log q̂(Y)].
    """
    draws = np.asarray(draws, dtype=float)
    n_draws, m = draws.shape
    noise_var = np.asarray(noise_var, dtype=float)
    noise_sd = np.sqrt(noise_var)
    which = rng.integers(n_draws, size=(n_samples, m))
    y = draws[which, np.arange(m)] + noise_sd * rng.standard_normal((n_samples, m))
    log_pbar = np.empty((n_samples, m))
    for s in range(n_samples):
        z = (y[s] - draws) / noise_sd
        log_pbar[s] = logsumexp(-0.5 * z**2, axis=0) - np.log(n_draws) \
            - 0.5 * np.log(2 * np.pi * noise_var)
    log_q = -0.5 * (np.log(2 * np.pi * pred_var) + (y - pred_mean) ** 2 / pred_var)
    au = 0.5 * np.log(2 * np.pi * np.e * noise_var)
    entropy = -log_pbar.mean(axis=0)
    gv = entropy - au
    gap = (log_pbar - log_q).mean(axis=0)
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}
