"""The one reducer of every ensemble-like method: many members' outputs to one prediction.

Ensembles, bootstrap bags, dropout passes, virtual ensembles and posterior samples all report
mean = mean of member means, AU = mean of member variances, EU = variance of member means (the
law of total variance for an equally weighted mixture of the members' Gaussians).

Member variances are not clipped unless the method asks for it (``variance_bounds``): the
reducer is exact arithmetic, and a method whose members can predict degenerate variances states
its own bounds beside its other hyper-parameters (docs/design.md, "Ensembles").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from postrisk.methods.interface import Prediction


def reduce_members(member_means: Any, member_vars: Any = None,
                   variance_bounds: tuple[float, float] | None = None) -> Prediction:
    """One prediction from M members (ensembles, dropout passes, posterior samples).

    Arrays of shape (M, m): mean = mean of member means, AU = mean of member variances,
    EU = variance of member means (population variance, divisor M). ``member_vars`` may be
    ``None`` for members that predict no variance (AU = 0). ``variance_bounds`` = (low, high)
    clips each member variance to [low, high] before averaging; None (the default) keeps them
    as given. Raises ``ValueError`` on shapes that do not match, non-finite values or negative
    variances.
    """
    means = np.asarray(member_means, dtype=np.float64)
    if means.ndim != 2 or means.shape[0] < 1:
        raise ValueError(f"member means must have shape (members, points), got {means.shape}")
    if not np.all(np.isfinite(means)):
        raise ValueError("member means contain non-finite values")
    if member_vars is None:
        au = np.zeros(means.shape[1])
    else:
        variances = np.asarray(member_vars, dtype=np.float64)
        if variances.shape != means.shape:
            raise ValueError(f"member variances have shape {variances.shape}, means "
                             f"{means.shape}")
        if not np.all(np.isfinite(variances)) or np.any(variances < 0):
            raise ValueError("member variances must be finite and >= 0")
        if variance_bounds is not None:
            low, high = variance_bounds
            if not 0 <= low <= high:
                raise ValueError(f"variance_bounds must satisfy 0 <= low <= high, got "
                                 f"{variance_bounds!r}")
            variances = np.clip(variances, low, high)
        au = variances.mean(axis=0)
    return Prediction(mean=means.mean(axis=0), aleatoric_var=au, epistemic_var=means.var(axis=0))
