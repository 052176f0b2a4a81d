"""The one ensemble reducer on hand-made member outputs: exact values, bounds, bad input."""

import numpy as np
import pytest

from postrisk.methods.ensemble import reduce_members


def test_three_members_by_hand():
    # point 0: means 1, 2, 6 → mean 3, EU = ((−2)² + (−1)² + 3²)/3 = 14/3; AU = (1+2+3)/3 = 2
    # point 1: means 0, 0, 0 → mean 0, EU = 0;                  AU = (0.5+0.5+2)/3 = 1
    means = [[1.0, 0.0], [2.0, 0.0], [6.0, 0.0]]
    variances = [[1.0, 0.5], [2.0, 0.5], [3.0, 2.0]]
    pred = reduce_members(means, variances)
    assert pred.mean.tolist() == [3.0, 0.0]
    assert pred.aleatoric_var.tolist() == [2.0, 1.0]
    assert pred.epistemic_var[0] == pytest.approx(14 / 3, rel=1e-15)
    assert pred.epistemic_var[1] == 0.0
    # AU + EU is the variance of the equally weighted mixture of the members' Gaussians
    assert pred.total_var[0] == pytest.approx(np.mean(np.array([1, 2, 6]) ** 2 + [1, 2, 3]) - 9)


def test_members_without_variance_and_a_single_member():
    pred = reduce_members([[1.0, 3.0], [3.0, 3.0]], None)
    assert pred.mean.tolist() == [2.0, 3.0]
    assert pred.aleatoric_var.tolist() == [0.0, 0.0]
    assert pred.epistemic_var.tolist() == [1.0, 0.0]  # population variance (divisor M)
    one = reduce_members([[5.0, -1.0]], [[0.2, 0.3]])
    assert one.mean.tolist() == [5.0, -1.0] and one.epistemic_var.tolist() == [0.0, 0.0]
    assert one.aleatoric_var.tolist() == [0.2, 0.3]


def test_variances_are_kept_unless_bounds_are_given():
    means = [[0.0], [0.0]]
    variances = [[1e-9], [80.0]]
    assert reduce_members(means, variances).aleatoric_var[0] == pytest.approx((1e-9 + 80) / 2)
    # bounds [1e-6, 50] (the authors' earlier code used [1e-6, 50·Var(y)]): (1e-6 + 50)/2
    clipped = reduce_members(means, variances, variance_bounds=(1e-6, 50.0))
    assert clipped.aleatoric_var[0] == pytest.approx((1e-6 + 50.0) / 2, rel=1e-15)


@pytest.mark.parametrize("means, variances, bounds, match", [
    ([1.0, 2.0], None, None, "shape"),
    ([[1.0, 2.0]], [[1.0]], None, "variances have shape"),
    ([[np.nan, 2.0]], None, None, "non-finite"),
    ([[1.0, 2.0]], [[-1.0, 1.0]], None, ">= 0"),
    ([[1.0, 2.0]], [[np.inf, 1.0]], None, "finite"),
    ([[1.0]], [[1.0]], (2.0, 1.0), "low <= high"),
])
def test_bad_member_outputs_raise(means, variances, bounds, match):
    with pytest.raises(ValueError, match=match):
        reduce_members(means, variances, variance_bounds=bounds)
