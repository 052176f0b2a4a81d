"""The Disentanglement Error of an aleatoric/epistemic uncertainty pair.

Pure functions on numpy arrays; nothing here reads or writes files.

de Jong, Sburlea, Sabatelli & Valdenegro-Toro (2024), "Measuring Orthogonality as the Blind-Spot
of Uncertainty Disentanglement", building on Mucsányi, Kirchhof & Oh (2024), "Benchmarking
Uncertainty Disentanglement: Specialized Uncertainties for Specialized Tasks". Two experiments
each manipulate one kind of uncertainty and leave the other alone:

* label noise: at levels p, a fraction p of the training targets is permuted; the manipulated
  aleatoric uncertainty is U_a = p;
* data size: at levels f, a fraction f of the training rows is kept; the manipulated epistemic
  uncertainty is U_e = −log f.

At each level (and run) the model's aleatoric estimate u_a and epistemic estimate u_e are
averaged over the test set. A disentangled model's u_a follows U_a and ignores U_e, and its u_e
follows U_e and ignores U_a:

    C_aa = corr over label-noise levels of (mean u_a, U_a)     ideal 1
    C_ea = corr over label-noise levels of (mean u_e, U_a)     ideal 0
    C_ae = corr over data-size levels   of (mean u_a, U_e)     ideal 0
    C_ee = corr over data-size levels   of (mean u_e, U_e)     ideal 1

    DE = (|1 − C_aa| + α·|C_ea| + β·|C_ae| + γ·|1 − C_ee|) / (1 + α + β + γ),  α = β = γ = 1,

so DE = 0 for perfect disentanglement. This module is written from that definition; variants
that put |1 − ·| on the cross terms, or repeat a term so that C_ee never enters, compute a
different quantity.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.stats import rankdata

from postrisk.core.arrays import as_vector

#: Fewest levels for which a correlation is reported (as for the rank metrics).
MIN_LEVELS = 3
#: Keys of :func:`disentanglement_correlations`.
CORRELATION_KEYS = ("c_aa", "c_ea", "c_ae", "c_ee")

_CONSTANT_RTOL = 64 * np.finfo(np.float64).eps


def _is_constant(values: np.ndarray) -> bool:
    """Constant up to rounding: max − min ≤ 64·eps·max|value| (≈ 1.4e-14 relative)."""
    spread = float(np.max(values) - np.min(values))
    return spread <= _CONSTANT_RTOL * float(np.max(np.abs(values)))


def _level_means(name: str, values, n_levels: int) -> np.ndarray:
    """Per-level means: ``values`` of shape (levels,) or (runs, levels), averaged over runs."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (levels,) or (runs, levels), got {arr.shape}")
    if arr.shape[-1] != n_levels:
        raise ValueError(f"{name} has {arr.shape[-1]} levels, expected {n_levels}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains non-finite values")
    return arr if arr.ndim == 1 else arr.mean(axis=0)


def _association(estimate: np.ndarray, manipulated: np.ndarray,
                 method: Literal["pearson", "spearman"]) -> float | None:
    """corr(estimate, manipulated) across levels; 0.0 for a constant estimate; ``None`` for
    fewer than :data:`MIN_LEVELS` levels or a manipulated vector with one distinct value."""
    if manipulated.size < MIN_LEVELS or np.unique(manipulated).size < 2:
        return None
    if _is_constant(estimate):
        return 0.0
    x, y = estimate, manipulated
    if method == "spearman":
        x, y = rankdata(x, method="average"), rankdata(y, method="average")
    x = x - x.mean()
    y = y - y.mean()
    denom = math.sqrt(float(np.dot(x, x)) * float(np.dot(y, y)))
    if denom == 0.0:  # unreachable after the checks above; a guard against NaN
        return None
    return float(min(1.0, max(-1.0, float(np.dot(x, y)) / denom)))


def disentanglement_correlations(
    label_levels, label_au, label_eu, size_levels, size_au, size_eu,
    method: Literal["pearson", "spearman"] = "pearson", *,
    label_uncertainty=None, size_uncertainty=None,
) -> dict[str, float | None]:
    """The four correlations of the Disentanglement Error (de Jong et al., 2024, "Measuring
    Orthogonality as the Blind-Spot of Uncertainty Disentanglement").

    Arguments:

    * ``label_levels``: the label-noise fractions p ∈ [0, 1] (L levels); U_a = p unless
      ``label_uncertainty`` (L values of U_a, e.g. a ground-truth AU per level) is given;
    * ``label_au``, ``label_eu``: the test-set means of u_a and u_e at each label-noise level,
      shape (L,) or (runs, L);
    * ``size_levels``: the kept fractions f ∈ (0, 1] (S levels); U_e = −log f unless
      ``size_uncertainty`` (S values of U_e, e.g. a ground-truth EU per level) is given;
    * ``size_au``, ``size_eu``: the test-set means of u_a and u_e at each data-size level,
      shape (S,) or (runs, S).

    With runs, the per-level means are first averaged over runs and the correlation is taken
    across the levels of those averages (one correlation per experiment, not a mean of per-run
    correlations). Returns {"c_aa": corr(ū_a, U_a), "c_ea": corr(ū_e, U_a) over label-noise
    levels, "c_ae": corr(ū_a, U_e), "c_ee": corr(ū_e, U_e) over data-size levels}, where corr
    is Pearson's r, or with ``method="spearman"`` Pearson's r of the average ranks.

    Not applicable (``None``): an experiment with fewer than 3 levels, or whose manipulated
    uncertainty takes a single value. An estimate constant across levels (up to rounding,
    spread ≤ 64·eps·max|value|) has no association with the manipulated uncertainty: its
    correlation is 0, not ``None`` (so a u_e that ignores label noise is perfectly
    disentangled, and a u_a that ignores label noise scores |1 − 0| = 1).

    ``ValueError`` on non-finite values (a failed run must be dropped by the caller), shape
    mismatches, p outside [0, 1], f outside (0, 1] or an unknown ``method``.
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    p = as_vector("label_levels", label_levels, finite=True)
    f = as_vector("size_levels", size_levels, finite=True)
    if ((p < 0.0) | (p > 1.0)).any():
        raise ValueError("label_levels must be fractions in [0, 1]")
    if ((f <= 0.0) | (f > 1.0)).any():
        raise ValueError("size_levels must be kept fractions in (0, 1]")
    u_a = p if label_uncertainty is None else as_vector("label_uncertainty", label_uncertainty,
                                                        finite=True)
    u_e = -np.log(f) if size_uncertainty is None else as_vector("size_uncertainty",
                                                                 size_uncertainty, finite=True)
    if u_a.shape != p.shape:
        raise ValueError(f"label_uncertainty has {u_a.shape[0]} levels, expected {p.shape[0]}")
    if u_e.shape != f.shape:
        raise ValueError(f"size_uncertainty has {u_e.shape[0]} levels, expected {f.shape[0]}")
    la = _level_means("label_au", label_au, p.size)
    le = _level_means("label_eu", label_eu, p.size)
    sa = _level_means("size_au", size_au, f.size)
    se = _level_means("size_eu", size_eu, f.size)
    return {
        "c_aa": _association(la, u_a, method),
        "c_ea": _association(le, u_a, method),
        "c_ae": _association(sa, u_e, method),
        "c_ee": _association(se, u_e, method),
    }


def disentanglement_error(correlations: dict[str, float | None], alpha: float = 1.0,
                          beta: float = 1.0, gamma: float = 1.0) -> float | None:
    """Disentanglement Error (de Jong, Sburlea, Sabatelli & Valdenegro-Toro, 2024, "Measuring
    Orthogonality as the Blind-Spot of Uncertainty Disentanglement"):

        DE = (|1 − C_aa| + α·|C_ea| + β·|C_ae| + γ·|1 − C_ee|) / (1 + α + β + γ),

    with the correlations of :func:`disentanglement_correlations` (C_aa: u_a with the
    manipulated aleatoric uncertainty, C_ea: u_e with it, C_ae: u_a with the manipulated
    epistemic uncertainty, C_ee: u_e with it). 0 for perfect disentanglement; at most 2.
    ``None`` when any correlation is ``None``. ``ValueError`` on a missing key or a negative or
    non-finite weight.
    """
    missing = [k for k in CORRELATION_KEYS if k not in correlations]
    if missing:
        raise ValueError(f"correlations lacks {missing}")
    for name, w in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        if not (math.isfinite(w) and w >= 0.0):
            raise ValueError(f"{name} must be finite and non-negative, got {w!r}")
    c = [correlations[k] for k in CORRELATION_KEYS]
    if any(v is None for v in c):
        return None
    c_aa, c_ea, c_ae, c_ee = (float(v) for v in c)  # type: ignore[arg-type]
    num = abs(1.0 - c_aa) + alpha * abs(c_ea) + beta * abs(c_ae) + gamma * abs(1.0 - c_ee)
    return num / (1.0 + alpha + beta + gamma)
