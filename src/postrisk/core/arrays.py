"""Checks of array arguments at the edges of the library, with messages that name the argument.

The one home of input validation: methods, kernels, priors, metrics and reference rows
check their array arguments with these two functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_vector(name: str, values: Any, finite: bool = False) -> np.ndarray:
    """``values`` as a float64 vector; ``ValueError`` naming ``name`` if it is not 1-D (or,
    with ``finite``, holds NaN or ±inf)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains non-finite values")
    return arr


def as_matrix(name: str, values: Any, n_columns: int | None = None,
              finite: bool = False) -> np.ndarray:
    """``values`` as a float64 (rows, features) matrix; ``ValueError`` naming ``name`` if it is
    not 2-D, (with ``finite``) holds NaN or ±inf, or (with ``n_columns``) has another number of
    features."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, features), got shape {arr.shape}")
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains non-finite values")
    if n_columns is not None and arr.shape[1] != n_columns:
        raise ValueError(f"{name} has {arr.shape[1]} features, expected {n_columns}")
    return arr
