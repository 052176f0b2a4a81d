"""``postrisk.methods.scaling``: the standardisation x̃ = (x − x̄)/s_x, ỹ = (y − ȳ)/s_y (population
SDs, an SD of 0 replaced by 1) and its inverse (mean s_y·m̃ + ȳ, variance s_y²·ṽ) against hand
computations, the identity when switched off, and the input checks' messages."""
import math

import numpy as np
import pytest

from postrisk.methods.interface import Prediction
from postrisk.methods.scaling import INPUT_SCALE, Standardizer, as_inputs, as_training_data

# column 0: mean 3, population SD sqrt(((0-3)² + 0 + (6-3)²)/3) = sqrt(6); column 1 constant
X = np.array([[0.0, 7.0], [3.0, 7.0], [6.0, 7.0]])
# mean 5, population SD sqrt(((2-5)² + (8-5)² + (5-5)²)/3) = sqrt(6)
Y = np.array([2.0, 8.0, 5.0])


def test_fit_uses_training_mean_and_population_sd_with_zero_sd_replaced_by_one():
    s = Standardizer.fit(X, Y)
    np.testing.assert_allclose(s.x_mean, [3.0, 7.0])
    np.testing.assert_allclose(s.x_scale, [math.sqrt(6.0), 1.0])  # not the sample SD, 3
    assert s.y_mean == pytest.approx(5.0) and s.y_scale == pytest.approx(math.sqrt(6.0))
    assert s.n_features == 2
    const = Standardizer.fit(X, np.full(3, 4.0))
    assert const.y_mean == 4.0 and const.y_scale == 1.0


def test_inputs_and_target_against_hand_values():
    s = Standardizer.fit(X, Y)
    r6 = math.sqrt(6.0)
    np.testing.assert_allclose(s.inputs([[9.0, 7.0], [3.0, 10.0]]),
                               [[6.0 / r6, 0.0], [0.0, 3.0]])  # constant column: shifted only
    np.testing.assert_allclose(s.target([11.0, 5.0]), [6.0 / r6, 0.0])
    tx, ty = s.inputs(X), s.target(Y)  # the training data: mean 0, SD 1 (constant column: 0)
    np.testing.assert_allclose(tx.mean(axis=0), [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(tx.std(axis=0), [1.0, 0.0], atol=1e-12)
    assert ty.mean() == pytest.approx(0.0, abs=1e-12) and ty.std() == pytest.approx(1.0)


def test_back_to_target_units_mean_shifted_variances_scaled_by_the_square():
    s = Standardizer.fit(np.array([[1.0], [5.0]]), np.array([2.0, 8.0]))  # ȳ = 5, s_y = 3
    np.testing.assert_allclose(s.mean_to_target([0.0, 1.0, -2.0]), [5.0, 8.0, -1.0])
    np.testing.assert_allclose(s.var_to_target([1.0, 0.5, 0.0]), [9.0, 4.5, 0.0])
    y = np.array([-4.0, 0.5, 12.0])
    np.testing.assert_allclose(s.mean_to_target(s.target(y)), y)  # round trip
    pred = s.prediction_to_target(Prediction(mean=[0.0, 1.0], aleatoric_var=[1.0, 2.0],
                                             epistemic_var=[0.25, 0.0]))
    np.testing.assert_allclose(pred.mean, [5.0, 8.0])
    np.testing.assert_allclose(pred.aleatoric_var, [9.0, 18.0])
    np.testing.assert_allclose(pred.epistemic_var, [2.25, 0.0])
    np.testing.assert_allclose(pred.total_var, [11.25, 18.0])


def test_switched_off_transforms_are_the_identity():
    s = Standardizer.fit(X, Y, standardize_inputs=False, standardize_targets=False)
    np.testing.assert_array_equal(s.x_mean, [0.0, 0.0])
    np.testing.assert_array_equal(s.x_scale, [1.0, 1.0])
    assert (s.y_mean, s.y_scale) == (0.0, 1.0)
    np.testing.assert_array_equal(s.inputs(X), X)
    np.testing.assert_array_equal(s.target(Y), Y)
    np.testing.assert_array_equal(s.var_to_target([2.0]), [2.0])
    only_x = Standardizer.fit(X, Y, standardize_targets=False)
    assert only_x.x_scale[0] == pytest.approx(math.sqrt(6.0)) and only_x.y_scale == 1.0


def test_a_constant_column_of_a_non_representable_value_counts_as_constant():
    """0.1 three times: np.std gives 1.4e-17, not 0; the column is constant all the same, so
    its scale should be 1 (and its standardised values 0, not ±1)."""
    x, y = np.full((3, 1), 0.1), np.full(3, 0.1)
    s = Standardizer.fit(x, y)
    assert s.x_scale[0] == 1.0 and s.y_scale == 1.0
    np.testing.assert_allclose(s.inputs(x), 0.0, atol=1e-12)


def test_input_scale_is_the_sd_of_the_unit_uniform():
    assert INPUT_SCALE ** 2 == pytest.approx(1.0 / 12.0)  # Var U[0, 1] = ∫(u − ½)² du = 1/12


def test_training_data_is_checked_with_clear_messages():
    x, y = as_training_data([[1, 2], [3, 4]], [[5], [6]])  # a (n, 1) target is raveled
    assert x.dtype == y.dtype == np.float64 and y.shape == (2,)
    np.testing.assert_array_equal(y, [5.0, 6.0])
    with pytest.raises(ValueError, match=r"y must have shape \(2,\), got \(3,\)"):
        as_training_data(X[:2], Y)
    with pytest.raises(ValueError, match="y contains non-finite values"):
        as_training_data(X, [1.0, np.inf, 2.0])
    with pytest.raises(ValueError, match="x contains non-finite values"):
        as_training_data([[np.nan], [1.0]], [1.0, 2.0])
    with pytest.raises(ValueError, match="need at least 4 training rows, got 3"):
        as_training_data(X, Y, min_rows=4)
    with pytest.raises(ValueError, match=r"x must be 2-D \(rows, features\)"):
        as_training_data([1.0, 2.0], [1.0, 2.0])


def test_inputs_are_checked_for_their_feature_count():
    with pytest.raises(ValueError, match="x_eval has 3 features, expected 2"):
        as_inputs(np.zeros((1, 3)), 2, name="x_eval")
    with pytest.raises(ValueError, match="x has 1 features, expected 2"):
        Standardizer.fit(X, Y).inputs([[1.0]])
