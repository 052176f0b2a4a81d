"""Oracle metrics: one home for every number a table reports (docs/design.md, "Metrics").

Pure functions on numpy arrays; nothing here reads or writes files.

Conventions
-----------
* "Not applicable" is ``None``, never NaN. A Spearman correlation is not applicable when either
  input is constant (a method with constant AU, or the homoscedastic noise mode) or when fewer
  than three finite pairs remain. Means over instances skip ``None`` and report how many entries
  were applicable (:func:`mean_applicable`); a NaN reaching a mean is a bug and raises.
* The EU targets (docs/design.md, "Oracle targets") for a point prediction â(x), with
  posterior mean m_S, posterior variance σ²_f and true function f*:

  - ``posterior_excess_risk``  = σ²_f(x) + (â(x) − m_S(x))²   (primary)
  - ``posterior_variance``     = σ²_f(x)
  - ``pointwise_excess_risk``  = (â(x) − f*(x))²

  The AU target is the true noise variance σ²_ε(x).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from scipy.stats import rankdata

from postrisk.core.arrays import as_vector
from postrisk.tasks.oracle import EU_TARGETS  # the targets are the oracle's

#: Fewest finite pairs for which a rank correlation is reported.
MIN_POINTS = 3


def spearman(x, y) -> float | None:
    """Spearman rank correlation of ``x`` and ``y``; ``None`` when not applicable.

    ρ = Pearson(r(x), r(y)) = Σ (r_i − r̄)(s_i − s̄) / √(Σ (r_i − r̄)² · Σ (s_i − s̄)²),
    where r and s are the ranks of x and y, ties receiving the average of the ranks they span
    (so ρ = 1 − 6 Σ d_i² / (n(n² − 1)) when there are no ties).

    Only pairs where both values are finite enter. The result is ``None`` ("not applicable")
    when fewer than three such pairs remain or when either input is constant over them (its
    ranks have no variance); it is never NaN. The value is clipped to [−1, 1] against
    rounding.
    """
    xv, yv = as_vector("x", x), as_vector("y", y)
    if xv.shape != yv.shape:
        raise ValueError(f"x and y differ in length: {xv.shape[0]} vs {yv.shape[0]}")
    keep = np.isfinite(xv) & np.isfinite(yv)
    xv, yv = xv[keep], yv[keep]
    if xv.size < MIN_POINTS:
        return None
    if np.all(xv == xv[0]) or np.all(yv == yv[0]):
        return None
    rx = rankdata(xv, method="average")
    ry = rankdata(yv, method="average")
    rx -= rx.mean()
    ry -= ry.mean()
    denom = math.sqrt(float(np.dot(rx, rx)) * float(np.dot(ry, ry)))
    if denom == 0.0:  # unreachable for non-constant inputs; kept as a guard against NaN
        return None
    return float(min(1.0, max(-1.0, float(np.dot(rx, ry)) / denom)))


def auroc(scores, positive) -> float | None:
    """Area under the ROC curve of ``scores`` for telling ``positive`` points from the rest.

    AUROC = P(s⁺ > s⁻) + ½·P(s⁺ = s⁻) over all (positive, negative) pairs, computed from average
    ranks (the Mann–Whitney U statistic divided by n⁺·n⁻), so ties count one half. ``None`` when
    either class is empty after dropping non-finite scores; a constant score gives 0.5.
    """
    sv = as_vector("scores", scores)
    pos = np.asarray(positive, dtype=bool)
    if pos.shape != sv.shape:
        raise ValueError(f"scores and positive differ in shape: {sv.shape} vs {pos.shape}")
    keep = np.isfinite(sv)
    sv, pos = sv[keep], pos[keep]
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(sv, method="average")
    u = float(ranks[pos].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def mean_applicable(values: Iterable[float | None]) -> tuple[float | None, int, int]:
    """Mean over the applicable (non-``None``) entries.

    Returns ``(mean, n_applicable, n_total)``: mean = (1/k) Σ_{v_i ≠ None} v_i with
    k = n_applicable; ``(None, 0, n_total)`` when no entry applies. A NaN (or ±inf) entry is an
    error — "not applicable" must be spelled ``None`` — and raises ``ValueError``.
    """
    items = list(values)
    applicable = []
    for i, v in enumerate(items):
        if v is None:
            continue
        fv = float(v)
        if not math.isfinite(fv):
            raise ValueError(f"entry {i} is {fv!r}; 'not applicable' must be None, never NaN")
        applicable.append(fv)
    if not applicable:
        return None, 0, len(items)
    return math.fsum(applicable) / len(applicable), len(applicable), len(items)


def delta_ent(eu_hat, au_hat, eu_true, au_true) -> float | None:
    """Entanglement gap Δ_ent = ρ(EU_hat, AU_hat) − ρ(EU*, AU*) (paper §4, Tables 8–10).

    ρ is :func:`spearman`. Positive values mean the method couples its two uncertainties more
    than the truth does. ``None`` when either correlation is not applicable (e.g. a method with
    constant AU, or homoscedastic noise where AU* is constant).
    """
    rho_hat = spearman(eu_hat, au_hat)
    rho_true = spearman(eu_true, au_true)
    if rho_hat is None or rho_true is None:
        return None
    return rho_hat - rho_true


def score_instance(eu_hat, au_hat, eu_targets: Mapping[str, np.ndarray],
                   au_true) -> dict[str, float | None]:
    """Rank metrics of one method on one instance.

    Keys (values ``None`` when not applicable):

    * ``spearman_eu_<t>`` = ρ(EU_hat, EU*_t) for each t in :data:`EU_TARGETS`;
    * ``spearman_au``     = ρ(AU_hat, σ²_ε);
    * ``delta_ent_<t>``   = ρ(EU_hat, AU_hat) − ρ(EU*_t, σ²_ε) for each t.

    ``eu_targets`` must hold exactly the keys of :data:`EU_TARGETS`
    (see :func:`postrisk.tasks.oracle.eu_targets`).
    """
    missing = [t for t in EU_TARGETS if t not in eu_targets]
    unknown = [t for t in eu_targets if t not in EU_TARGETS]
    if missing or unknown:
        raise KeyError(f"eu_targets must have keys {list(EU_TARGETS)}; "
                       f"missing {missing}, unknown {unknown}")
    eu = as_vector("eu_hat", eu_hat)
    au = as_vector("au_hat", au_hat)
    au_star = as_vector("au_true", au_true)
    targets = {t: as_vector(f"eu_targets[{t!r}]", eu_targets[t]) for t in EU_TARGETS}
    shapes = {eu.shape, au.shape, au_star.shape, *(v.shape for v in targets.values())}
    if len(shapes) != 1:
        raise ValueError(f"inputs differ in shape: {sorted(shapes)}")
    out: dict[str, float | None] = {}
    for t in EU_TARGETS:
        out[f"spearman_eu_{t}"] = spearman(eu, targets[t])
    out["spearman_au"] = spearman(au, au_star)
    for t in EU_TARGETS:
        out[f"delta_ent_{t}"] = delta_ent(eu, au, targets[t], au_star)
    return out
