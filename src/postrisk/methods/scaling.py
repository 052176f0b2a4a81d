"""Input checks and standardisation shared by every method (one home).

Methods fit in standardised units and report in target units:

    x̃ = (x − x̄) / s_x   (per column; training mean and SD, an SD of 0 replaced by 1)
    ỹ = (y − ȳ) / s_y   (an SD of 0 replaced by 1)
    mean = s_y·m̃ + ȳ,   variance = s_y²·ṽ

:func:`as_training_data` and :func:`as_inputs` raise ``ValueError`` with a clear message on bad
input (wrong rank, non-finite values, mismatched lengths, too few rows, wrong feature count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.methods.interface import Prediction

#: Input scale of the GP methods: standardised columns times this get the SD of U[0, 1], the
#: range the kernels' default lengthscales are set for.
INPUT_SCALE = 1.0 / math.sqrt(12.0)


def as_inputs(x: Any, n_features: int | None = None, name: str = "x") -> np.ndarray:
    """``x`` as a finite float64 (rows, features) array; with ``n_features``, checks the width."""
    return as_matrix(name, x, n_columns=n_features, finite=True)


def as_training_data(x: Any, y: Any, min_rows: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Checked training inputs (n, d) and targets (n,) as float64 (a (n, 1) target is raveled)."""
    x = as_inputs(x)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},), got {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("y contains non-finite values")
    if x.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} training rows, got {x.shape[0]}")
    return x, y


@dataclass(frozen=True)
class Standardizer:
    """Training-set location and scale of inputs and target (see the module docstring).

    ``standardize_inputs=False`` / ``standardize_targets=False`` in :meth:`fit` make the
    corresponding transform the identity (mean 0, scale 1).
    """

    x_mean: np.ndarray
    x_scale: np.ndarray
    y_mean: float
    y_scale: float

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, standardize_inputs: bool = True,
            standardize_targets: bool = True) -> Standardizer:
        d = x.shape[1]
        if standardize_inputs:
            # a constant column (max = min) keeps scale 1: its computed SD need not be 0 where
            # its value is not representable (np.std of [0.1, 0.1, 0.1] is 1.4e-17)
            constant = np.ptp(x, axis=0) == 0
            x_mean, x_scale = x.mean(axis=0), np.where(constant, 1.0, x.std(axis=0))
        else:
            x_mean, x_scale = np.zeros(d), np.ones(d)
        if standardize_targets:
            s_y = float(y.std())
            y_mean, y_scale = float(y.mean()), (1.0 if np.ptp(y) == 0 else s_y)
        else:
            y_mean, y_scale = 0.0, 1.0
        return cls(x_mean=x_mean, x_scale=x_scale, y_mean=y_mean, y_scale=y_scale)

    @property
    def n_features(self) -> int:
        return int(self.x_mean.shape[0])

    def inputs(self, x: np.ndarray) -> np.ndarray:
        """x̃ = (x − x̄)/s_x (checks the feature count)."""
        x = as_inputs(x, self.n_features)
        return (x - self.x_mean) / self.x_scale

    def target(self, y: np.ndarray) -> np.ndarray:
        """ỹ = (y − ȳ)/s_y."""
        return (np.asarray(y, dtype=np.float64) - self.y_mean) / self.y_scale

    def mean_to_target(self, mean_std: Any) -> np.ndarray:
        """s_y·m̃ + ȳ: a mean in standardised units back in target units."""
        return self.y_scale * np.asarray(mean_std, dtype=np.float64) + self.y_mean

    def var_to_target(self, var_std: Any) -> np.ndarray:
        """s_y²·ṽ: a variance in standardised units back in target units."""
        return self.y_scale ** 2 * np.asarray(var_std, dtype=np.float64)

    def prediction_to_target(self, pred: Prediction) -> Prediction:
        """A prediction in standardised units back in target units (mean and both variances)."""
        return Prediction(mean=self.mean_to_target(pred.mean),
                          aleatoric_var=self.var_to_target(pred.aleatoric_var),
                          epistemic_var=self.var_to_target(pred.epistemic_var))
