"""Aleatoric noise modes (paper App. B.3; docs/design.md, "Noise modes"). Pure functions.

``σ²_ε(x) = exp(c + s·h̃(z(x)))`` where ``z`` is the PC1 score rank-Gaussianised against the
evaluation pool (bounded, so far-out training rows cannot explode the noise), ``h`` one of four
shapes, ``h̃`` that shape standardised to mean 0 / SD 1 over the evaluation pool, ``s`` the
strength and ``c`` the level that makes the mean noise variance over the evaluation pool equal
the dataset's noise-to-signal ratio.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import ndtri

NOISE_STRENGTH = 1.25

SHAPES = {
    "homoscedastic": lambda z: np.zeros_like(z),
    "smooth_monotone": lambda z: z,
    "bump": lambda z: np.exp(-0.5 * z**2),
    "edges": lambda z: z**2,
}


def rank_gaussianise(score: np.ndarray, pool_scores: np.ndarray) -> np.ndarray:
    """``Φ⁻¹`` of the mid-rank empirical-CDF position of ``score`` among ``pool_scores``.

    Position = (#pool < s + ½·#pool == s) / n, clipped to [1/(2n), 1 − 1/(2n)]: a pool point of
    rank r (no ties) gets (r − ½)/n; points beyond the pool's range get the clip bounds.
    """
    pool = np.sort(np.asarray(pool_scores, dtype=float))
    s = np.asarray(score, dtype=float)
    n = pool.size
    below = np.searchsorted(pool, s, side="left")
    at_or_below = np.searchsorted(pool, s, side="right")
    position = (below + 0.5 * (at_or_below - below)) / n
    position = np.clip(position, 1.0 / (2 * n), 1.0 - 1.0 / (2 * n))
    return ndtri(position)


@dataclass(frozen=True)
class NoiseModel:
    """A fitted noise mode: everything needed to evaluate σ²_ε at any row (stored in attrs)."""

    mode: str
    strength: float
    level: float  # c
    shape_mean: float  # mean of h over the evaluation pool
    shape_sd: float  # SD of h over the evaluation pool (1 for homoscedastic)
    noise_to_signal: float

    def variance(self, score: np.ndarray, pool_scores: np.ndarray) -> np.ndarray:
        h = SHAPES[self.mode](rank_gaussianise(score, pool_scores))
        return np.exp(self.level + self.strength * (h - self.shape_mean) / self.shape_sd)

    def to_dict(self) -> dict:
        return asdict(self)


def shape_over_pool(mode: str, pool_scores: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(h at the pool's rows, its mean, its SD over the pool; SD 1 for homoscedastic): what
    standardises the noise mode ``mode``'s shape (the noise variance's, and the
    classification family's temperature field's)."""
    if mode not in SHAPES:
        raise ValueError(f"unknown noise mode {mode!r}; allowed: {', '.join(SHAPES)}")
    h = SHAPES[mode](rank_gaussianise(pool_scores, pool_scores))
    mean, sd = float(h.mean()), float(h.std())
    if mode == "homoscedastic":
        sd = 1.0
    elif not sd > 0:
        raise ValueError(f"noise shape {mode!r} is constant over the evaluation pool")
    return h, mean, sd


def fit_noise_model(mode: str, pool_scores: np.ndarray, noise_to_signal: float,
                    strength: float = NOISE_STRENGTH) -> NoiseModel:
    """Standardise the shape over the pool and set the level so mean_pool σ² = ρ (App. B.3)."""
    if mode not in SHAPES:
        raise ValueError(f"unknown noise mode {mode!r}; allowed: {', '.join(SHAPES)}")
    if not noise_to_signal > 0:
        raise ValueError(f"noise_to_signal must be positive, got {noise_to_signal}")
    h, mean, sd = shape_over_pool(mode, pool_scores)
    h_std = (h - mean) / sd
    level = float(np.log(noise_to_signal) - np.log(np.mean(np.exp(strength * h_std))))
    return NoiseModel(mode, float(strength), level, mean, sd, float(noise_to_signal))
