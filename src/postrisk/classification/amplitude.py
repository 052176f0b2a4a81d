"""The amplitude of the classification prior: how far the latents reach on the softmax.

The K latents are f_k ~ GP(0, (A·a)²·k): k and a the dataset's regression prior (its kernel and
the scale constant that gives prior draws a median SD of 1 over the evaluation pool), A the
amplitude. A = 1 would make π either near one-hot or near uniform depending on K and the data;
instead A is set per dataset, prior and K so that prior draws of π have a stated mean entropy:
the mean over prior draws and over the evaluation pool of H(π(x)) / log K equals
``entropy_share`` (0.5 by default: halfway between one-hot, 0, and uniform, 1), at temperature
1 (the noise modes then vary τ about that level). The share falls monotonically in A, so A is
found by bisection on log A over fixed prior draws (common random numbers: the answer is a
deterministic function of the draws' seed). Pure functions, NumPy only.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr, softmax

#: The target: mean prior entropy of π over the pool as a share of log K.
ENTROPY_SHARE = 0.5


def entropy_share(unit_latents: np.ndarray, amplitude: float) -> float:
    """Mean of H(softmax(A·g)) / log K over draws and rows; ``unit_latents`` (draws, n, K) are
    latents at amplitude 1."""
    probs = softmax(amplitude * np.asarray(unit_latents, dtype=np.float64), axis=-1)
    k = probs.shape[-1]
    return float(entr(probs).sum(axis=-1).mean() / np.log(k))


def calibrate_amplitude(unit_latents: np.ndarray, target: float = ENTROPY_SHARE,
                        tol: float = 1e-6) -> tuple[float, float]:
    """(A, share reached): the amplitude whose :func:`entropy_share` is ``target`` (in (0, 1)),
    by bisection on log A in [log 1e-3, log 1e3]."""
    if not 0 < target < 1:
        raise ValueError(f"the entropy share must lie in (0, 1), got {target}")
    lo, hi = np.log(1e-3), np.log(1e3)
    if entropy_share(unit_latents, np.exp(hi)) > target or entropy_share(
            unit_latents, np.exp(lo)) < target:
        raise ValueError(f"no amplitude in [1e-3, 1e3] reaches the entropy share {target}")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if entropy_share(unit_latents, np.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    amplitude = float(np.exp(0.5 * (lo + hi)))
    return amplitude, entropy_share(unit_latents, amplitude)
