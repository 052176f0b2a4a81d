"""A task store's diagnostics recomputed from the draws it stores, against the values it
records (``postrisk verify``; docs/release.md, "Verifying a release"). Pure functions on arrays.

Task generation computes R̂ and ESS from the float32 draws it stores, so those are recomputed
bit for bit on the same NumPy/ArviZ build; another build's float32 sums may differ in the last
digits (:data:`FLOAT32_BUILD_RTOL`). It computes the rank of f*, the 90% coverage and the MCSE of
σ²_f from the float64 draws *before* storing them as float32: recomputed from the stored draws
they can only differ by what that rounding allows, and this module derives that allowance
exactly rather than guessing a tolerance:

- each stored draw d̃ is the float64 draw d rounded to float32, so |d − d̃| ≤ h = the float32
  spacing at |d̃| (:func:`rounding_bounds`);
- the rank of f* (draws below it) lies between the count of d̃ + h < f* and of d̃ − h < f*;
- a quantile is an interpolation of two order statistics, which rounding (monotone) keeps in
  order: it moves by at most the larger h of the two, so the coverage flag is fixed wherever f*
  lies farther than that from both interval ends (else either value is possible);
- a batch variance of m draws moves by at most (2h·√(m(m−1)b) + m h²)/(m − 1) (Cauchy–Schwarz
  on the cross term), the standard deviation of the batch variances by at most √(K/(K−1)) times
  the largest of those, and the relative MCSE accordingly (:func:`mcse_var_allowance`).

A value outside its allowance was not computed from these draws: an edited store, or draws that
are not the ones the diagnostics came from.
"""

from __future__ import annotations

import numpy as np

from postrisk.tasks.diagnostics import (
    N_MCSE_BATCHES,
    batch_means_mcse_var,
    batches,
    covered_central,
    rhat_and_ess,
)

#: Relative slack for float64 arithmetic on top of the rounding allowance (sums of ~10³ terms).
ARITHMETIC_SLACK = 1e-9
#: R̂ and ESS are computed by ArviZ in the draws' float32: bit for bit on one NumPy/ArviZ build,
#: but another build sums in another order (seen: 2.5e-8 relative between a GPU machine's
#: NumPy 2.5.2 and NumPy 2.4.6). This allows that and no more than float32 sums of ~10³ terms.
FLOAT32_BUILD_RTOL = 1e-5


def rounding_bounds(stored: np.ndarray) -> np.ndarray:
    """h per stored float32 draw: the largest |d − d̃| for a float64 d that rounds to d̃."""
    stored = np.asarray(stored, dtype=np.float32)
    return np.spacing(np.abs(stored)).astype(np.float64)


def rank_interval(stored: np.ndarray, f_true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) rank of f* per point that float64 draws rounding to ``stored`` can
    give."""
    d = np.asarray(stored, dtype=np.float64)
    h = rounding_bounds(stored)
    f = np.asarray(f_true, dtype=np.float64)[None, :]
    return np.sum(d + h < f, axis=0), np.sum(d - h < f, axis=0)


def coverage_fixed(stored: np.ndarray, f_true: np.ndarray, level: float = 0.9
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(value, fixed) per point: the coverage flag from the stored draws, and whether every
    float64 draws rounding to them give the same flag (f* farther than the interval ends can
    move)."""
    d = np.sort(np.asarray(stored, dtype=np.float64), axis=0)
    h = rounding_bounds(d.astype(np.float32))
    n = d.shape[0]
    f = np.asarray(f_true, dtype=np.float64)
    value = covered_central(d, f, level)
    fixed = np.ones(f.shape, dtype=bool)
    for q in ((1 - level) / 2, (1 + level) / 2):
        position = q * (n - 1)  # numpy's default (linear) quantile: order statistics j, j + 1
        j = int(np.floor(position))
        end = np.quantile(d, q, axis=0)
        move = np.maximum(h[j], h[min(j + 1, n - 1)]) * (1 + ARITHMETIC_SLACK)
        move = move + ARITHMETIC_SLACK * np.abs(end)
        fixed &= np.abs(f - end) > move
    return value, fixed


def mcse_var_allowance(stored: np.ndarray, n_batches: int = N_MCSE_BATCHES) -> np.ndarray:
    """Per point, the most the relative MCSE of σ²_f (:func:`batch_means_mcse_var`) can differ
    between float64 draws and the float32 ``stored`` they round to."""
    d = np.asarray(stored, dtype=np.float64)
    h = rounding_bounds(stored)
    cut = batches(d, n_batches)
    m = cut.shape[1]
    h_batch = batches(h, n_batches).max(axis=1)
    b = cut.var(axis=1, ddof=1)
    db = (2 * h_batch * np.sqrt(m * (m - 1) * b) + m * h_batch**2) / (m - 1)
    n = d.shape[0]
    h_all = h.max(axis=0)
    total = d.var(axis=0, ddof=1)
    d_total = (2 * h_all * np.sqrt(n * (n - 1) * total) + n * h_all**2) / (n - 1)
    spread = b.std(axis=0, ddof=1)
    d_spread = np.sqrt(n_batches / (n_batches - 1)) * db.max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mcse = spread / np.sqrt(n_batches) / total
        bound = (d_spread / np.sqrt(n_batches) + mcse * d_total) / (total - d_total)
    bound = np.where(total - d_total > 0, bound, np.inf)
    return bound + ARITHMETIC_SLACK * np.abs(np.nan_to_num(mcse))


def _points(mask: np.ndarray, limit: int = 5) -> str:
    where = np.flatnonzero(mask)
    shown = ", ".join(str(i) for i in where[:limit])
    return f"{where.size} point(s) ({shown}{', …' if where.size > limit else ''})"


def recheck_diagnostics(stored_draws: np.ndarray, f_true: np.ndarray, chains: int,
                        recorded: dict[str, np.ndarray], rhat: bool = True) -> list[str]:
    """What disagrees between the diagnostics recorded per evaluation point (``rank_true``,
    ``covered90``, ``mcse_var``, and ``rhat``/``ess`` where present) and those recomputed from
    the stored float32 draws (chain-major, ``chains`` chains), each as one sentence; empty when
    all agree. R̂ and ESS must agree to :data:`FLOAT32_BUILD_RTOL` (bit for bit on the build
    that made them; ``rhat=False``: not recomputed, which needs ArviZ); the others within what
    float32 rounding of the draws allows (see the module's docstring)."""
    draws = np.asarray(stored_draws)
    if draws.dtype != np.float32:
        raise ValueError(f"stored draws are {draws.dtype}, not float32")
    f = np.asarray(f_true, dtype=np.float64)
    problems = []
    if "rank_true" in recorded:
        lo, hi = rank_interval(draws, f)
        rank = np.asarray(recorded["rank_true"])
        if (bad := (rank < lo) | (rank > hi)).any():
            problems.append(f"rank_true differs from the rank of f* among the stored draws at "
                            f"{_points(bad)}")
    if "covered90" in recorded:
        value, fixed = coverage_fixed(draws, f, 0.9)
        if (bad := fixed & (np.asarray(recorded["covered90"], dtype=bool) != value)).any():
            problems.append(f"covered90 differs from the stored draws' 90% interval at "
                            f"{_points(bad)}")
    if "mcse_var" in recorded:
        again = batch_means_mcse_var(draws.astype(np.float64))
        allowed = mcse_var_allowance(draws)
        bad = ~(np.abs(np.asarray(recorded["mcse_var"], dtype=np.float64) - again) <= allowed)
        if bad.any():
            problems.append(f"mcse_var differs from the stored draws' batch-means MCSE at "
                            f"{_points(bad)}")
    present = [name for name in ("rhat", "ess") if name in recorded]
    if present and chains <= 1:
        problems.append(f"{' and '.join(present)} recorded for a single chain")
    elif present and rhat:
        again = dict(zip(("rhat", "ess"), rhat_and_ess(draws, chains), strict=True))
        for name in present:
            value = np.asarray(recorded[name], dtype=np.float64)
            with np.errstate(invalid="ignore"):
                near = np.abs(value - again[name]) <= FLOAT32_BUILD_RTOL * np.abs(again[name])
            bad = ~(near | (np.isnan(value) & np.isnan(again[name])))
            if bad.any():
                problems.append(f"{name} differs from that of the stored draws "
                                f"({chains} chains) at {_points(bad)}")
    return problems
