"""The classification likelihood's data: labels y_i ∈ 0 … K−1 at the training rows, known
temperatures τ_i > 0, and labels as counts per latent row (rows that share a latent add their
labels). Checks and the count matrix, NumPy only."""

from __future__ import annotations

import numpy as np


def check_labels(labels, n: int, n_classes: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) like x_train's rows, got {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"labels must be integers, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError("labels must be finite integers")
    arr = arr.astype(np.int64)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"labels must lie in 0 … {n_classes - 1}, got {arr.min()} … {arr.max()}")
    return arr


def check_temperatures(temperature, n: int) -> np.ndarray:
    tau = np.asarray(temperature, dtype=np.float64)
    if tau.shape != (n,):
        raise ValueError(f"temperature_train must have shape ({n},), got {tau.shape}")
    if not (np.all(np.isfinite(tau)) and np.all(tau > 0)):
        raise ValueError("temperatures must be finite and > 0")
    return tau


def label_counts(labels: np.ndarray, n_classes: int, rows: np.ndarray | None = None,
                 n_rows: int | None = None) -> np.ndarray:
    """Counts (n_rows, K): how many training labels of each class fall on each latent row;
    ``rows[i]`` is training row i's latent row (default: its own, one-hot counts)."""
    labels = np.asarray(labels, dtype=np.int64)
    rows = np.arange(labels.size) if rows is None else np.asarray(rows).reshape(-1)
    counts = np.zeros((labels.size if n_rows is None else int(n_rows), int(n_classes)))
    np.add.at(counts, (rows, labels), 1.0)
    return counts
