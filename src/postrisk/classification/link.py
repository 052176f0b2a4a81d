"""The link from K latent functions to class probabilities: π_f(x) = softmax(f(x) / τ(x)),
τ(x) > 0 the known temperature field (:mod:`postrisk.classification.temperature`). Pure
functions, NumPy only."""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax


def class_log_probabilities(latent: np.ndarray, temperature: np.ndarray) -> np.ndarray:
    """log π_f(x) for latents ``latent`` (..., n, K) and temperatures ``temperature`` (n,):
    ``log_softmax(latent / temperature)`` over the last axis (stable for any scale)."""
    latent = np.asarray(latent, dtype=np.float64)
    temperature = np.asarray(temperature, dtype=np.float64)
    if latent.ndim < 2 or temperature.shape != latent.shape[-2:-1]:
        raise ValueError(f"latents of shape (..., n, K) need temperatures of shape (n,); got "
                         f"{latent.shape} and {temperature.shape}")
    if not np.all(temperature > 0):
        raise ValueError("temperatures must be positive")
    return log_softmax(latent / temperature[:, None], axis=-1)


def class_probabilities(latent: np.ndarray, temperature: np.ndarray) -> np.ndarray:
    """π_f(x) = softmax(f(x) / τ(x)), shaped like ``latent`` (..., n, K)."""
    return np.exp(class_log_probabilities(latent, temperature))
