"""NGBoost's regression tree, grown from columns sorted once: scikit-learn's exact-split CART
(``DecisionTreeRegressor(criterion="friedman_mse", splitter="best", max_depth=...)``) without
sorting at every node.

A boosting fit grows two trees per stage on the same inputs; scikit-learn sorts each feature's
values anew at every node of every tree, which is nine tenths of an NGBoost-Bag fit at SARCOS's
size. Here each column is sorted once per fit (:func:`sorted_columns`) and a tree is grown level
by level with one pass over every column per level (:func:`_grow`, compiled by Numba): a row's
node and its node's running sums say where each split between two distinct values would fall.
No library offers an exact-split tree that takes its columns presorted (scikit-learn dropped
``presort`` in 0.24; histogram trees bin the values, which is another estimator).

The estimator is scikit-learn's, split for split: the same candidate splits (between two
consecutive distinct values of a column within a node, more than 1e-7 apart, at inputs cast to
float32), the same criterion (Friedman's improvement, ``(n_r·S_l − n_l·S_r)² / (n_l·n_r)``), the
same threshold (the midpoint, or the lower value where the midpoint rounds to the upper), the
same stopping (depth, fewer than 2 rows, a node variance at most the float64 epsilon) and leaf
values (the node's mean). What differs is how ties are broken: scikit-learn keeps the first best
split in a random order of the features drawn from the tree's seed; here too, from another
stream (:func:`feature_order`), so two features that split a node's rows alike may be chosen
differently; and sums taken in another order may round differently in the last bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state

#: scikit-learn's ``FEATURE_THRESHOLD``: two values of a column closer than this are not split.
FEATURE_THRESHOLD = 1e-7
#: scikit-learn's ``EPSILON`` for a pure node (its variance at most this is a leaf).
PURE_NODE_VARIANCE = float(np.finfo(np.float64).eps)


def sorted_columns(x: np.ndarray) -> np.ndarray:
    """Each column's row order by value, (d, n) int32, ties in row order (a stable sort of the
    float32 values, as the trees compare them)."""
    x = np.asarray(x, dtype=np.float32)
    if not np.all(np.isfinite(x)):
        raise ValueError("the inputs hold NaN or infinite values (these trees split no missing "
                         "values)")
    return np.ascontiguousarray(np.argsort(x, axis=0, kind="stable").T.astype(np.int32))


@njit(cache=True)
def restrict_order(order: np.ndarray, rows: np.ndarray, n_rows: int) -> np.ndarray:
    """The sorted orders ``order`` (d, n) of all rows restricted to ``rows`` (distinct row
    indices) and renumbered to their positions in ``rows``: the sorted columns of ``x[rows]``
    without sorting again."""
    position = np.full(n_rows, -1, dtype=np.int32)
    for i in range(rows.shape[0]):
        position[rows[i]] = i
    out = np.empty((order.shape[0], rows.shape[0]), dtype=np.int32)
    for j in range(order.shape[0]):
        k = 0
        for i in range(order.shape[1]):
            p = position[order[j, i]]
            if p >= 0:
                out[j, k] = p
                k += 1
    return out


@njit(cache=True)
def _grow(x: np.ndarray, order: np.ndarray, y: np.ndarray, max_depth: int, cap: int,
          features: np.ndarray, feature_threshold: float, pure_variance: float):
    """Grow the tree level by level. ``x`` (n, d) float32, ``order`` (d, n) its sorted
    columns, ``y`` (n,) float64, ``cap`` the most nodes the tree can have, ``features`` the
    order in which features are tried (the first strictly best split wins). Returns the nodes
    (feature, threshold, left, right, value; a leaf has feature −1) and each row's fitted
    value."""
    n, _ = x.shape
    feature = np.full(cap, -1, dtype=np.int64)
    threshold = np.full(cap, -2.0)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    value = np.zeros(cap)
    row_node = np.zeros(n, dtype=np.int64)  # the node each row is in (−1: in a leaf)
    open_nodes = np.zeros(1, dtype=np.int64)
    n_nodes = 1
    fitted = np.zeros(n)
    for depth in range(max_depth + 1):
        k_open = open_nodes.shape[0]
        slot = np.full(cap, -1, dtype=np.int64)  # node id → its place among the open nodes
        for k in range(k_open):
            slot[open_nodes[k]] = k
        total = np.zeros(k_open)
        total_sq = np.zeros(k_open)
        count = np.zeros(k_open)
        for r in range(n):
            node = row_node[r]
            if node >= 0:
                k = slot[node]
                total[k] += y[r]
                total_sq[k] += y[r] * y[r]
                count[k] += 1.0
        splittable = np.zeros(k_open, dtype=np.bool_)
        for k in range(k_open):
            node = open_nodes[k]
            mean = total[k] / count[k]
            value[node] = mean
            variance = total_sq[k] / count[k] - mean * mean
            splittable[k] = depth < max_depth and count[k] >= 2.0 and variance > pure_variance
        best = np.full(k_open, -np.inf)
        best_feature = np.full(k_open, -1, dtype=np.int64)
        best_threshold = np.zeros(k_open)
        left_sum = np.zeros(k_open)
        left_count = np.zeros(k_open)
        last = np.zeros(k_open, dtype=np.float32)
        if depth < max_depth:
            for j in features:
                left_sum[:] = 0.0
                left_count[:] = 0.0
                for i in range(n):
                    r = order[j, i]
                    node = row_node[r]
                    if node < 0:
                        continue
                    k = slot[node]
                    if not splittable[k]:
                        continue
                    v = x[r, j]
                    n_l = left_count[k]
                    if n_l > 0.0 and v > np.float64(last[k]) + feature_threshold:
                        n_r = count[k] - n_l
                        s_l = left_sum[k]
                        diff = n_r * s_l - n_l * (total[k] - s_l)
                        improvement = diff * diff / (n_l * n_r)
                        if improvement > best[k]:
                            best[k] = improvement
                            best_feature[k] = j
                            t = np.float64(last[k]) / 2.0 + np.float64(v) / 2.0
                            if t == np.float64(v) or np.isinf(t):
                                t = np.float64(last[k])
                            best_threshold[k] = t
                    left_sum[k] += y[r]
                    left_count[k] += 1.0
                    last[k] = v
        children = np.full(2 * k_open, -1, dtype=np.int64)
        n_children = 0
        for k in range(k_open):
            node = open_nodes[k]
            if best_feature[k] >= 0:
                feature[node] = best_feature[k]
                threshold[node] = best_threshold[k]
                left[node] = n_nodes
                right[node] = n_nodes + 1
                children[n_children] = n_nodes
                children[n_children + 1] = n_nodes + 1
                n_nodes += 2
                n_children += 2
        for r in range(n):
            node = row_node[r]
            if node < 0:
                continue
            if feature[node] < 0:
                fitted[r] = value[node]
                row_node[r] = -1
            elif np.float64(x[r, feature[node]]) <= threshold[node]:
                row_node[r] = left[node]
            else:
                row_node[r] = right[node]
        if n_children == 0:
            break
        open_nodes = children[:n_children].copy()
    return (feature[:n_nodes].copy(), threshold[:n_nodes].copy(), left[:n_nodes].copy(),
            right[:n_nodes].copy(), value[:n_nodes].copy(), fitted)


@njit(cache=True)
def _apply(x: np.ndarray, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray,
           right: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The tree's value at each row of ``x`` (float32), as scikit-learn walks it
    (``x[f] <= threshold`` goes left)."""
    out = np.empty(x.shape[0])
    for r in range(x.shape[0]):
        node = 0
        while feature[node] >= 0:
            if np.float64(x[r, feature[node]]) <= threshold[node]:
                node = left[node]
            else:
                node = right[node]
        out[r] = value[node]
    return out


def feature_order(random_state: Any, d: int) -> np.ndarray:
    """The order in which a tree tries the features (a permutation drawn from its seed; the
    identity without one), int64."""
    if random_state is None:
        return np.arange(d, dtype=np.int64)
    return check_random_state(random_state).permutation(d).astype(np.int64)


class ExactTreeRegressor(RegressorMixin, BaseEstimator):
    """scikit-learn's ``DecisionTreeRegressor(criterion="friedman_mse", max_depth=max_depth)``
    grown from presorted columns (see the module docstring for what is the same and what
    differs).

    :meth:`fit` sorts the columns itself; :meth:`fit_sorted` takes them sorted
    (:func:`sorted_columns`, :func:`restrict_order`) and also returns the fitted values at the
    training rows (what :meth:`predict` gives there).
    """

    def __init__(self, max_depth: int = 3, random_state: Any = None):
        self.max_depth = max_depth
        self.random_state = random_state

    def fit(self, x: np.ndarray, y: np.ndarray, sample_weight: Any = None) -> ExactTreeRegressor:
        x = np.ascontiguousarray(x, dtype=np.float32)
        self.fit_sorted(x, sorted_columns(x), y, sample_weight)
        return self

    def fit_sorted(self, x: np.ndarray, order: np.ndarray, y: np.ndarray,
                   sample_weight: Any = None) -> np.ndarray:
        """Fit at float32 inputs ``x`` (n, d) whose columns sort as ``order`` (d, n); returns
        the fitted values at ``x``."""
        if sample_weight is not None:
            raise ValueError("ExactTreeRegressor takes no sample weights")
        if int(self.max_depth) < 1:
            raise ValueError(f"max_depth must be >= 1, got {self.max_depth!r}")
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.ndim != 1 or y.shape[0] != x.shape[0] or x.shape[0] == 0:
            raise ValueError(f"need one target per row, got x {x.shape} and y {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("the targets hold NaN or infinite values")
        depth = int(self.max_depth)
        # a tree of depth ≤ D has at most 2^(D+1) − 1 nodes, and with n rows at most 2n − 1
        cap = 2 * x.shape[0] + 1 if depth >= 62 else min(2 ** (depth + 1), 2 * x.shape[0] + 1)
        features = feature_order(self.random_state, x.shape[1])
        (self.feature_, self.threshold_, self.left_, self.right_, self.value_,
         fitted) = _grow(x, order, y, depth, cap, features, FEATURE_THRESHOLD,
                         PURE_NODE_VARIANCE)
        self.n_features_in_ = x.shape[1]
        return fitted

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.n_features_in_:
            raise ValueError(f"expected inputs with {self.n_features_in_} columns, got "
                             f"{x.shape}")
        return _apply(x, self.feature_, self.threshold_, self.left_, self.right_, self.value_)
