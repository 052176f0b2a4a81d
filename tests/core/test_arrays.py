"""``postrisk.core.arrays``: ``as_vector`` / ``as_matrix`` convert to float64 and reject a wrong
rank, non-finite values (only when asked) and a wrong feature count, naming the argument."""
import numpy as np
import pytest

from postrisk.core.arrays import as_matrix, as_vector


def test_as_vector_converts_to_float64_and_keeps_values():
    out = as_vector("y", [1, 2, 3])
    assert out.dtype == np.float64 and out.shape == (3,)
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    # non-finite values pass unless finite=True is asked for
    assert np.isnan(as_vector("y", [1.0, np.nan])[1])


@pytest.mark.parametrize("values, shape", [(3.0, r"\(\)"), ([[1.0, 2.0]], r"\(1, 2\)")])
def test_as_vector_rejects_other_ranks_naming_the_argument(values, shape):
    with pytest.raises(ValueError, match=rf"^targets must be one-dimensional, got shape {shape}$"):
        as_vector("targets", values)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finite_rejects_nan_and_infinities(bad):
    with pytest.raises(ValueError, match="^weights contains non-finite values$"):
        as_vector("weights", [0.0, bad], finite=True)
    with pytest.raises(ValueError, match="^x_eval contains non-finite values$"):
        as_matrix("x_eval", [[0.0, 1.0], [bad, 2.0]], finite=True)


def test_as_matrix_converts_and_checks_rank_and_width():
    out = as_matrix("x", [[1, 2, 3], [4, 5, 6]], n_columns=3, finite=True)
    assert out.dtype == np.float64 and out.shape == (2, 3)
    np.testing.assert_array_equal(out, [[1, 2, 3], [4, 5, 6]])
    assert as_matrix("x", np.zeros((0, 4)), n_columns=4).shape == (0, 4)  # no rows is 2-D
    with pytest.raises(ValueError, match=r"^x must be 2-D \(rows, features\), got shape \(3,\)$"):
        as_matrix("x", [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"got shape \(1, 2, 2\)"):
        as_matrix("x", np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="^x_test has 2 features, expected 3$"):
        as_matrix("x_test", [[1.0, 2.0]], n_columns=3)


def test_rank_is_checked_before_finiteness_and_finiteness_before_width():
    """The first problem found is the one reported: rank, then non-finite values, then width."""
    with pytest.raises(ValueError, match="must be 2-D"):
        as_matrix("x", [np.nan], n_columns=3, finite=True)
    with pytest.raises(ValueError, match="non-finite"):
        as_matrix("x", [[np.nan]], n_columns=3, finite=True)
