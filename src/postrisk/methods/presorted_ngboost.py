"""NGBoost with its trees grown from columns sorted once per fit (:mod:`.exact_tree`).

:class:`PresortedNGBRegressor` is NGBoost's ``NGBRegressor`` with two steps replaced: drawing a
stage's rows and columns (:meth:`~PresortedNGBRegressor.sample`, which also hands on the
batch's sorted columns, restricted from those of the whole training set) and fitting a stage's
trees (:meth:`~PresortedNGBRegressor.fit_base`, one :class:`ExactTreeRegressor` per
distribution parameter, seeded from NGBoost's own stream exactly as NGBoost seeds its trees, so
every random draw of the boosting, rows and columns included, is the same as with
scikit-learn's trees). The rest of the boosting loop is NGBoost's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ngboost import NGBRegressor

from postrisk.methods.exact_tree import ExactTreeRegressor, restrict_order, sorted_columns


class PresortedNGBRegressor(NGBRegressor):
    """``NGBRegressor`` whose base learner is :class:`ExactTreeRegressor` (``Base`` must be
    one), its training columns sorted once per fit. Fitted models pickle without the sort."""

    _SORT_CACHE = ("_sorted_inputs", "_sorted_batch")

    def partial_fit(self, X, Y, *args: Any, **kwargs: Any):  # noqa: N803 (NGBoost's names)
        try:
            return super().partial_fit(X, Y, *args, **kwargs)
        finally:
            for name in self._SORT_CACHE:
                self.__dict__.pop(name, None)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        return {k: v for k, v in state.items() if k not in self._SORT_CACHE}

    def sample(self, X, Y, sample_weight, params):  # noqa: N803
        idxs, col_idx, x_batch, y_batch, weight_batch, p_batch = super().sample(
            X, Y, sample_weight, params)
        cached = self.__dict__.get("_sorted_inputs")
        if cached is None or cached[0] is not X:
            cached = (X, sorted_columns(X))
            self._sorted_inputs = cached
        order = cached[1][np.asarray(col_idx)]
        if len(idxs) != X.shape[0]:
            order = restrict_order(np.ascontiguousarray(order), np.asarray(idxs, np.int64),
                                   X.shape[0])
        self._sorted_batch = (x_batch, np.ascontiguousarray(order))
        return idxs, col_idx, x_batch, y_batch, weight_batch, p_batch

    def fit_base(self, X, grads, sample_weight=None):  # noqa: N803
        """One tree per column of ``grads``, each seeded as NGBoost seeds a base learner
        without a ``random_state`` of its own (one draw from its stream per tree); returns
        their values at ``X`` (n, n_params), as NGBoost's ``fit_base`` does."""
        if sample_weight is not None:
            raise ValueError("NGBoost with presorted trees takes no sample weights")
        base = self.Base
        if not isinstance(base, ExactTreeRegressor):
            raise TypeError(f"PresortedNGBRegressor needs an ExactTreeRegressor as Base, got "
                            f"{type(base).__name__}")
        batch = self.__dict__.get("_sorted_batch")
        x32 = np.ascontiguousarray(X, dtype=np.float32)
        order = batch[1] if batch is not None and batch[0] is X else sorted_columns(x32)
        seeds = [int(self._rng.randint(np.iinfo(np.int32).max))
                 if base.random_state is None else None for _ in range(grads.shape[1])]
        models, fitted = [], []
        for g, seed in zip(grads.T, seeds, strict=True):
            tree = ExactTreeRegressor(max_depth=base.max_depth,
                                      random_state=base.random_state if seed is None else seed)
            fitted.append(tree.fit_sorted(x32, order, g))
            models.append(tree)
        self.base_models.append(models)
        return np.array(fitted).T
