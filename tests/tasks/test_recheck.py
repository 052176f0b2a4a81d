"""A store's diagnostics recomputed from its float32 draws (postrisk.tasks.recheck): the values
task generation records from the float64 draws always pass, an edit of any of them fails, and
the rounding allowances are the tightest that hold (brute force over roundings)."""

import numpy as np
import pytest

from postrisk.tasks.diagnostics import (
    batch_means_mcse_var,
    covered_central,
    instance_point_checks,
    rank_of_truth,
)
from postrisk.tasks.recheck import (
    coverage_fixed,
    mcse_var_allowance,
    rank_interval,
    recheck_diagnostics,
    rounding_bounds,
)


def _instance(seed: int, chains: int = 4, per_chain: int = 50, points: int = 300,
              scale: float = 1.0, offset: float = 0.0):
    """float64 draws (chain-major), f*, and what task generation records from them."""
    rng = np.random.default_rng(seed)
    draws = offset + scale * rng.standard_normal((chains * per_chain, points))
    f_true = offset + scale * rng.standard_normal(points)
    stored = draws.astype(np.float32)
    checks = instance_point_checks(draws, f_true, chains, rhat_draws=stored)
    return draws, stored, f_true, checks


@pytest.mark.parametrize("scale, offset", [(1.0, 0.0), (1e-3, 50.0), (1e4, -3e5)])
def test_what_generation_records_passes(scale, offset):
    for seed in range(3):
        _, stored, f_true, checks = _instance(seed, scale=scale, offset=offset)
        assert recheck_diagnostics(stored, f_true, 4, checks) == []


def test_ties_with_f_star_at_the_rounding_scale_still_pass():
    """f* placed within float32 rounding of draws and of the interval ends: the float64 values
    recorded stay inside the allowances."""
    draws, _, _, _ = _instance(1, points=200, offset=1000.0)
    f_true = draws[7].copy()
    f_true[:100] += np.spacing(np.float32(1000.0)) * 0.3  # just above a draw, below its rounding
    ends = np.quantile(draws, 0.05, axis=0)
    f_true[100:] = ends[100:] + np.spacing(np.float32(1000.0)) * 0.2
    stored = draws.astype(np.float32)
    checks = instance_point_checks(draws, f_true, 4, rhat_draws=stored)
    assert recheck_diagnostics(stored, f_true, 4, checks) == []


@pytest.mark.parametrize("name", ["rank_true", "covered90", "mcse_var", "rhat", "ess"])
def test_an_edited_diagnostic_is_caught_and_named(name):
    _, stored, f_true, checks = _instance(2)
    edited = {k: np.array(v, copy=True) for k, v in checks.items()}
    if name == "rank_true":
        edited[name][10] += 2
    elif name == "covered90":
        far = np.flatnonzero(coverage_fixed(stored, f_true)[1])[0]
        edited[name][far] = ~edited[name][far]
    elif name == "mcse_var":
        edited[name][3] *= 1.001
    else:  # beyond what another NumPy build's float32 sums could change
        edited[name][5] *= 1.0001
    problems = recheck_diagnostics(stored, f_true, 4, edited)
    assert len(problems) == 1 and problems[0].startswith(name) and "1 point(s)" in problems[0]


def test_draws_other_than_those_recorded_from_fail():
    _, _, f_true, checks = _instance(3)
    _, other, _, _ = _instance(4)
    problems = recheck_diagnostics(other, f_true, 4, checks)
    assert {p.split()[0] for p in problems} == {"rank_true", "covered90", "mcse_var", "rhat",
                                               "ess"}


def test_the_allowances_hold_for_every_rounding_and_are_not_loose():
    """Brute force: float64 draws spread uniformly inside each stored value's rounding cell
    reproduce ranks, flags and MCSEs inside the allowances; and the rank interval is attained
    (its ends are the ranks of the cell's extremes)."""
    rng = np.random.default_rng(9)
    stored = (10.0 + rng.standard_normal((200, 40))).astype(np.float32)
    f_true = stored[0].astype(np.float64) + rounding_bounds(stored[0]) * rng.uniform(-1, 1, 40)
    h = rounding_bounds(stored)
    lo, hi = rank_interval(stored, f_true)
    value, fixed = coverage_fixed(stored, f_true)
    allowed = mcse_var_allowance(stored)
    base = batch_means_mcse_var(stored.astype(np.float64))
    for _ in range(200):
        d = stored.astype(np.float64) + h * rng.uniform(-0.5, 0.5, stored.shape)
        assert np.all(d.astype(np.float32) == stored)  # each d rounds to its stored value
        rank = rank_of_truth(d, f_true)
        assert np.all((lo <= rank) & (rank <= hi))
        assert np.all(covered_central(d, f_true)[fixed] == value[fixed])
        assert np.all(np.abs(batch_means_mcse_var(d) - base) <= allowed)
    assert allowed.max() < 1e-4 * base.min()  # far below any edit that matters
