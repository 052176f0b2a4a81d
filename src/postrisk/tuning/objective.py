"""The sweep's objective: the validation points' mean Gaussian negative log-likelihood."""

from __future__ import annotations

import math

import numpy as np


def mean_gaussian_nll(y, mean, var) -> float:
    """Mean Gaussian negative log-likelihood ½ log(2πv) + (y − μ)²/(2v) over the points.

    ``inf`` when any variance is not positive (a method may predict zero total variance).
    """
    y, mean, var = (np.asarray(a, dtype=np.float64) for a in (y, mean, var))
    if y.shape != mean.shape or y.shape != var.shape:
        raise ValueError(f"shapes differ: y {y.shape}, mean {mean.shape}, var {var.shape}")
    if np.any(var <= 0):
        return math.inf
    return float(np.mean(0.5 * np.log(2.0 * math.pi * var) + (y - mean) ** 2 / (2.0 * var)))
