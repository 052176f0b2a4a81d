"""Accuracy and calibration of a Gaussian predictive distribution against the true function.

Pure functions on numpy arrays; nothing here reads or writes files.

A method's predictive at a point is N(μ, v) with μ = ``mean`` and v = AU + EU = ``var`` > 0.
The truth is the noise-free function value f* = ``f_true`` and the noise variance σ²_ε =
``noise_var`` ≥ 0: an observation is y | f* ~ N(f*, σ²_ε). Rather than scoring one noisy draw
of y, the scores are their expectations over y | f*, in closed form, per point; the functions
return per-point arrays and callers average them. ``noise_var`` may be a scalar (homoscedastic
noise) or a vector like the others.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from postrisk.core.arrays import as_vector

_LOG_2PI = math.log(2.0 * math.pi)


def _vectors(**named) -> tuple[np.ndarray, ...]:
    """The named arguments as finite float vectors of one length (``noise_var`` may be a
    scalar, broadcast); ``ValueError`` naming the argument otherwise."""
    out = {}
    for name, values in named.items():
        if name == "noise_var" and np.ndim(values) == 0:
            continue
        out[name] = as_vector(name, values, finite=True)
    lengths = {name: v.shape[0] for name, v in out.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"inputs differ in length: {lengths}")
    n = next(iter(lengths.values()))
    if "noise_var" in named and "noise_var" not in out:
        nv = float(named["noise_var"])
        if not math.isfinite(nv):
            raise ValueError("noise_var contains non-finite values")
        out["noise_var"] = np.full(n, nv)
    if "var" in out and not (out["var"] > 0.0).all():
        raise ValueError("var must be positive")
    if "noise_var" in out and (out["noise_var"] < 0.0).any():
        raise ValueError("noise_var must be non-negative")
    return tuple(out[name] for name in named)


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return float(ndtri((1.0 + level) / 2.0))


def rmse(mean, f_true) -> float:
    """Root mean squared error against the true function: √((1/n) Σ_i (μ_i − f*_i)²).

    ``ValueError`` on a length mismatch, an empty or a non-finite input.
    """
    mu, f = _vectors(mean=mean, f_true=f_true)
    if mu.size == 0:
        raise ValueError("mean and f_true are empty")
    return math.sqrt(float(np.mean((mu - f) ** 2)))


def expected_gaussian_nll(mean, var, f_true, noise_var) -> np.ndarray:
    """Expected negative log-likelihood of N(μ, v) for y ~ N(f*, σ²_ε), per point:

        E_{y|f*}[−log N(y; μ, v)] = ½ log(2πv) + (σ²_ε + (μ − f*)²) / (2v),

    since −log N(y; μ, v) = ½ log(2πv) + (y − μ)²/(2v) and E(y − μ)² = σ²_ε + (μ − f*)².
    Returns the per-point array; callers average. ``ValueError`` on a length mismatch, a
    non-finite input, v ≤ 0 or σ²_ε < 0.
    """
    mu, v, f, nv = _vectors(mean=mean, var=var, f_true=f_true, noise_var=noise_var)
    return 0.5 * (_LOG_2PI + np.log(v)) + (nv + (mu - f) ** 2) / (2.0 * v)


def expected_gaussian_crps(mean, var, f_true, noise_var) -> np.ndarray:
    """Expected CRPS of N(μ, v) for y ~ N(f*, σ²_ε), per point:

        E_{y|f*}[CRPS(N(μ, v), y)] = E|Z| − √(v/π),   Z ~ N(μ − f*, v + σ²_ε),
        E|Z| = s·√(2/π)·exp(−m²/(2s²)) + m·(1 − 2Φ(−m/s))   for Z ~ N(m, s²).

    Derivation: CRPS(F, y) = E|X − y| − ½ E|X − X′| with X, X′ ~ F independent (Gneiting &
    Raftery, 2007, "Strictly Proper Scoring Rules, Prediction, and Estimation"). With X ~ N(μ, v)
    independent of y ~ N(f*, σ²_ε), X − y ~ N(μ − f*, v + σ²_ε), which gives the first term;
    X − X′ ~ N(0, 2v), so E|X − X′| = √(2v)·√(2/π) = 2√(v/π) and the second term is √(v/π).
    With σ²_ε = 0 this is the closed-form CRPS of N(μ, v) at y = f*. Returns the per-point
    array; callers average. ``ValueError`` as for :func:`expected_gaussian_nll`.
    """
    mu, v, f, nv = _vectors(mean=mean, var=var, f_true=f_true, noise_var=noise_var)
    m = mu - f
    s = np.sqrt(v + nv)
    e_abs = (s * math.sqrt(2.0 / math.pi) * np.exp(-0.5 * (m / s) ** 2)
             + m * (1.0 - 2.0 * ndtr(-m / s)))
    return e_abs - np.sqrt(v / math.pi)


def interval_coverage(mean, var, f_true, noise_var, level: float = 0.9) -> np.ndarray:
    """Expected coverage of the central ``level`` interval μ ± z√v, per point:

        P_{y ~ N(f*, σ²_ε)}(μ − z√v ≤ y ≤ μ + z√v)
            = Φ((μ + z√v − f*)/σ_ε) − Φ((μ − z√v − f*)/σ_ε),   z = Φ⁻¹((1 + level)/2),

    and, when σ_ε = 0, the indicator 1{μ − z√v ≤ f* ≤ μ + z√v}. Returns the per-point array of
    probabilities; callers average (the mean is the expected fraction of covered observations,
    to compare with ``level``). ``ValueError`` as for :func:`expected_gaussian_nll`, or a
    ``level`` outside (0, 1).
    """
    mu, v, f, nv = _vectors(mean=mean, var=var, f_true=f_true, noise_var=noise_var)
    z = _z(level)
    lo, hi = mu - z * np.sqrt(v) - f, mu + z * np.sqrt(v) - f
    out = ((lo <= 0.0) & (hi >= 0.0)).astype(np.float64)
    noisy = nv > 0.0
    if noisy.any():
        se = np.sqrt(nv[noisy])
        a, b = lo[noisy] / se, hi[noisy] / se
        # Φ(b) − Φ(a), written as Φ(−a) − Φ(−b) when both are in the upper tail (no
        # cancellation between two numbers close to 1).
        upper = a > 0.0
        out[noisy] = np.where(upper, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))
    return out


def interval_width(var, level: float = 0.9) -> np.ndarray:
    """Width of the central ``level`` interval of N(μ, v), per point: 2·z·√v with
    z = Φ⁻¹((1 + level)/2). ``ValueError`` on a non-finite v, v ≤ 0 or a ``level`` outside
    (0, 1)."""
    (v,) = _vectors(var=var)
    return 2.0 * _z(level) * np.sqrt(v)
