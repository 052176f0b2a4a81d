"""The shared resampling helpers of the bagged and two-model methods."""

import numpy as np
import pytest

from postrisk.methods.resampling import (
    held_out_errors,
    member_resamples,
    member_seeds,
    resample_rows,
    resample_size,
)


def test_member_seeds_are_reproducible_distinct_and_prefix_stable():
    seeds = member_seeds(7, 5)
    assert seeds == member_seeds(7, 5)
    assert len(set(seeds)) == 5 and all(0 <= s < 2 ** 31 for s in seeds)
    assert member_seeds(7, 3) == seeds[:3]  # member k's seed ignores how many follow
    assert member_seeds(8, 5) != seeds
    with pytest.raises(ValueError, match="at least one member"):
        member_seeds(0, 0)


@pytest.mark.parametrize("n, fraction, size", [(100, 0.8, 80), (101, 0.8, 80), (7, 0.6, 4),
                                               (3, 0.1, 1), (50, 1.0, 50)])
def test_resample_size_is_the_floor_and_at_least_one(n, fraction, size):
    assert resample_size(n, fraction) == size


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.2])
def test_resample_fraction_outside_the_unit_interval_is_refused(fraction):
    with pytest.raises(ValueError, match=r"fraction must lie in \(0, 1\]"):
        resample_rows(10, fraction, False, np.random.default_rng(0))


def test_resamples_have_the_requested_size_and_replacement():
    n = 200
    without = member_resamples(n, 6, 0.7, False, random_state=3)
    assert all(r.shape == (140,) and len(np.unique(r)) == 140 for r in without)
    assert all(r.min() >= 0 and r.max() < n for r in without)
    with_replacement = member_resamples(n, 6, 0.9, True, random_state=3)
    assert all(r.shape == (180,) for r in with_replacement)
    # with replacement, a sample of 180 from 200 repeats rows (P(no repeat) < 1e-30)
    assert all(len(np.unique(r)) < 180 for r in with_replacement)
    # the fraction of distinct rows is near 1 − e^{−0.9} ≈ 0.593 of n
    distinct = np.mean([len(np.unique(r)) / n for r in with_replacement])
    assert abs(distinct - (1 - np.exp(-0.9))) < 0.05
    # members differ, and the same random_state gives the same rows
    assert not np.array_equal(np.sort(without[0]), np.sort(without[1]))
    again = member_resamples(n, 6, 0.7, False, random_state=3)
    assert all(np.array_equal(a, b) for a, b in zip(without, again, strict=True))


def test_held_out_errors_split_and_score_the_second_model():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(50, 2))
    y = 3 * x[:, 0] + rng.normal(0, 0.1, 50)
    seen = {}

    def fit_predict(x_fit, y_fit, x_held):  # least squares on the fit rows
        seen["n_fit"] = len(y_fit)
        design = np.column_stack([np.ones(len(x_fit)), x_fit])
        coef = np.linalg.lstsq(design, y_fit, rcond=None)[0]
        return np.column_stack([np.ones(len(x_held)), x_held]) @ coef

    out = held_out_errors(fit_predict, x, y, 0.1, random_state=4)
    assert out.held_rows.shape == (5,) and out.fit_rows.shape == (45,) and seen["n_fit"] == 45
    assert sorted([*out.held_rows, *out.fit_rows]) == list(range(50))
    expected = (y[out.held_rows] - fit_predict(x[out.fit_rows], y[out.fit_rows],
                                               x[out.held_rows])) ** 2
    np.testing.assert_allclose(out.squared_errors, expected, rtol=0, atol=0)
    assert out.mse == pytest.approx(expected.mean())
    again = held_out_errors(fit_predict, x, y, 0.1, random_state=4)
    assert np.array_equal(again.held_rows, out.held_rows)
    with pytest.raises(ValueError, match="returned shape"):
        held_out_errors(lambda a, b, c: np.zeros(2), x, y, 0.1, random_state=4)
    with pytest.raises(ValueError, match="at least 2 rows"):
        held_out_errors(fit_predict, x[:1], y[:1], 0.5, random_state=0)
