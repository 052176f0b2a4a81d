"""An uncertainty method written outside postrisk, as a researcher would write their own.

It imports nothing from postrisk: a class with hyper-parameters as constructor keywords,
``fit(x, y)`` and ``predict(x) -> (mean, aleatoric_var, epistemic_var)``. Evaluate it on
downloaded tasks with ``postrisk.evaluate(KNNUncertainty(), root=...)`` or
``postrisk evaluate examples.knn_uncertainty:KNNUncertainty``; run it through the pipeline —
tuned per condition, fitted and scored like the paper's nineteen — by listing
``examples.knn_uncertainty:KNNUncertainty`` under ``methods:`` in the config (the smoke and
demo presets do).

The method: k nearest neighbours on standardised inputs. At x, with N(x) the k nearest training
inputs and their targets y_N:

- mean       = the mean of y_N;
- aleatoric  = the sample variance of y_N (the spread of the targets around x);
- epistemic  = aleatoric / k · (1 + (d̄(x) / d_ref)²): the variance of the mean of k draws,
  inflated where the neighbours are far — d̄(x) is their mean distance to x and d_ref the median
  of the same quantity over the training inputs.

It is a simple baseline, not a method of the paper.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


class KNNUncertainty:
    """k-nearest-neighbour mean, spread and distance-inflated EU (see the module docstring)."""

    name = "knn_uncertainty"
    display_name = "kNN-UQ"
    #: The tuning sweep's space (postrisk's form: kind, low, high[, "log"]).
    search_space = {"n_neighbors": ("int", 3, 50, "log")}

    def __init__(self, n_neighbors: int = 10, random_state: int = 0) -> None:
        self.n_neighbors = n_neighbors
        self.random_state = random_state  # accepted for the pipeline; the method is exact

    def fit(self, x: np.ndarray, y: np.ndarray) -> KNNUncertainty:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        self.k_ = int(min(max(2, self.n_neighbors), len(y) - 1))
        self.center_ = x.mean(axis=0)
        scale = x.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        self.tree_ = cKDTree((x - self.center_) / self.scale_)
        self.y_ = y
        # each training input's own neighbours, itself excluded
        dist, _ = self.tree_.query((x - self.center_) / self.scale_, k=self.k_ + 1)
        self.d_ref_ = float(np.median(dist[:, 1:].mean(axis=1))) or 1.0
        return self

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        dist, index = self.tree_.query((np.asarray(x, dtype=float) - self.center_) / self.scale_,
                                       k=self.k_)
        neighbours = self.y_[index]
        mean = neighbours.mean(axis=1)
        aleatoric = neighbours.var(axis=1, ddof=1)
        epistemic = aleatoric / self.k_ * (1.0 + (dist.mean(axis=1) / self.d_ref_) ** 2)
        return mean, aleatoric, epistemic
