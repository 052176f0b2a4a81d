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

Two definitions of the correlations (:data:`DEFINITIONS`):

* **"level"** (:func:`disentanglement_correlations`): per level, the test-set means are
  averaged over runs, and each experiment's correlation is taken across levels between those
  averages and the manipulated uncertainty itself (U_a = p, U_e = −log f, or a ground truth):
  one correlation and one DE per method and task;
* **"score"** (:func:`score_disentanglement`, the public ``disentanglement-error`` package's
  procedure): within each run, the correlation is taken across levels between the test-set
  means and the model's **negated score** at each level (regression: score = 1 − MAE on the
  test set), standing in for the manipulated uncertainty; a DE per run, then the DE and the
  correlations are each **averaged over runs**. The package's weighted sum repeats the
  aleatoric term (so that C_ee never enters); here both definitions use the formula above.
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
#: The definitions of the correlations (module docstring); the first is the default.
DEFINITIONS = ("level", "score")

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


def _runs_by_levels(name: str, values) -> np.ndarray:
    """``values`` as a (runs, levels) array (a vector is one run); NaN allowed (a missing
    level of a run), ±inf not."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty (levels,) or (runs, levels) array, "
                         f"got shape {np.shape(values)}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    return arr


def _score_association(estimate: np.ndarray, score: np.ndarray,
                       method: Literal["pearson", "spearman"]) -> float | None:
    """corr(estimate, −score) across one run's levels: ``None`` for fewer than
    :data:`MIN_LEVELS` levels or a score constant up to rounding; 0.0 for a constant
    estimate (as in the level definition)."""
    if score.size < MIN_LEVELS or _is_constant(score):
        return None
    return _association(estimate, -score, method)


def score_correlations(label_score, label_au, label_eu, size_score, size_au, size_eu,
                       method: Literal["pearson", "spearman"] = "pearson"
                       ) -> dict[str, float | None]:
    """The four correlations of one run under the "score" definition (module docstring):
    C_aa = corr(u_a, −score), C_ea = corr(u_e, −score) across the label-noise levels and
    C_ae = corr(u_a, −score), C_ee = corr(u_e, −score) across the data-size levels, each
    argument a vector over that experiment's levels (``*_score``: the model's score at each
    level, higher is better; ``*_au`` / ``*_eu``: the test-set means of u_a / u_e). A level
    with a NaN in any of its three values is dropped (a failed fit).

    ``None``: fewer than :data:`MIN_LEVELS` levels left, or a score constant across the
    levels (up to rounding: the target of the correlation does not vary; the package returns
    NaN). An estimate constant across the levels has correlation 0, as in
    :func:`disentanglement_correlations`. ``ValueError`` on ±inf, mismatched lengths or an
    unknown ``method``.
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    out: dict[str, float | None] = {}
    for prefix, (score, au, eu), keys in (
            ("label", (label_score, label_au, label_eu), ("c_aa", "c_ea")),
            ("size", (size_score, size_au, size_eu), ("c_ae", "c_ee"))):
        s = as_vector(f"{prefix}_score", score)
        a = as_vector(f"{prefix}_au", au)
        e = as_vector(f"{prefix}_eu", eu)
        if not (s.shape == a.shape == e.shape):
            raise ValueError(f"{prefix}_score, {prefix}_au and {prefix}_eu differ in length: "
                             f"{s.size}, {a.size}, {e.size}")
        stacked = np.stack((s, a, e))
        if np.isinf(stacked).any():
            raise ValueError(f"the {prefix} experiment's values contain infinite values")
        s, a, e = stacked[:, np.isfinite(stacked).all(axis=0)]
        out[keys[0]] = _score_association(a, s, method)
        out[keys[1]] = _score_association(e, s, method)
    return {k: out[k] for k in CORRELATION_KEYS}


def score_disentanglement(label_score, label_au, label_eu, size_score, size_au, size_eu,
                          method: Literal["pearson", "spearman"] = "pearson",
                          alpha: float = 1.0, beta: float = 1.0, gamma: float = 1.0) -> dict:
    """The Disentanglement Error under the "score" definition (module docstring), the public
    package's procedure with the correct formula: per run, :func:`score_correlations` and
    :func:`disentanglement_error`; then the **mean over runs of the per-run DE** (not the DE of
    the mean correlations) and, for reference, the mean over the same runs of each
    correlation.

    Arguments: arrays of shape (runs, L) for the label-noise experiment and (runs, S) for the
    data-size experiment (a vector is one run), run r of both experiments being one run; NaN
    marks a missing (run, level), e.g. a failed fit.

    Returns {"c_aa", "c_ea", "c_ae", "c_ee": mean per-run correlations, "de": mean per-run
    DE, "n_runs": the runs averaged, "per_run": per run its four correlations and "de"}. A run
    with a ``None`` correlation (fewer than :data:`MIN_LEVELS` levels, or a constant score) has
    no DE and is left out of every mean; with no run left, every mean is ``None``.
    """
    label = [_runs_by_levels(n, v) for n, v in
             (("label_score", label_score), ("label_au", label_au), ("label_eu", label_eu))]
    size = [_runs_by_levels(n, v) for n, v in
            (("size_score", size_score), ("size_au", size_au), ("size_eu", size_eu))]
    for name, group in (("label", label), ("size", size)):
        if len({g.shape for g in group}) != 1:
            raise ValueError(f"the {name} arrays differ in shape: {[g.shape for g in group]}")
    if label[0].shape[0] != size[0].shape[0]:
        raise ValueError(f"{label[0].shape[0]} label-noise runs but {size[0].shape[0]} "
                         "data-size runs")
    per_run = []
    for r in range(label[0].shape[0]):
        corr = score_correlations(*(g[r] for g in label), *(g[r] for g in size), method)
        per_run.append({**corr, "de": disentanglement_error(corr, alpha, beta, gamma)})
    used = [run for run in per_run if run["de"] is not None]
    out: dict = {k: (float(np.mean([run[k] for run in used])) if used else None)
                 for k in (*CORRELATION_KEYS, "de")}
    return {**out, "n_runs": len(used), "per_run": per_run}
