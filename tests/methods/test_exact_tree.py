"""NGBoost's trees from presorted columns: scikit-learn's exact-split CART split for split
(the training rows' partition and values), its ties broken from another stream; NGBoost's
random draws unchanged."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from postrisk.methods.exact_tree import ExactTreeRegressor, restrict_order, sorted_columns
from postrisk.methods.ngboost import gaussian_distribution, make_ngb_regressor
from postrisk.methods.presorted_ngboost import PresortedNGBRegressor


def _data(rng, n, d, kind):
    x = rng.normal(size=(n, d))
    if kind == "ties":  # few distinct values per column, and columns that split alike
        x = np.round(x, 1)
        x[:, -1] = x[:, 0] * 2.0
    if kind == "near":  # values closer than the split threshold (1e-7) are not split
        x[: n // 2, 0] = 1.0
        x[n // 4: n // 2, 0] += 5e-8
    if kind == "constant":
        x[:, 1] = 3.0
    y = np.sin(x @ rng.normal(size=d)) + 0.3 * rng.normal(size=n)
    return x, y


@pytest.mark.parametrize("kind", ["continuous", "ties", "near", "constant"])
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_the_tree_splits_the_training_rows_as_scikit_learns(kind, depth):
    rng = np.random.default_rng(depth * 10 + len(kind))
    for trial in range(8):
        x, y = _data(rng, int(rng.integers(20, 400)), int(rng.integers(2, 9)), kind)
        ours = ExactTreeRegressor(max_depth=depth, random_state=trial).fit(x, y)
        theirs = DecisionTreeRegressor(criterion="friedman_mse", max_depth=depth,
                                       random_state=trial).fit(x, y)
        np.testing.assert_allclose(ours.predict(x), theirs.predict(x), rtol=0, atol=1e-12)
        assert len(ours.feature_) == theirs.tree_.node_count


def test_fitted_values_are_its_predictions_and_thresholds_lie_between_training_values():
    rng = np.random.default_rng(1)
    x, y = _data(rng, 300, 5, "ties")
    x32 = x.astype(np.float32)
    tree = ExactTreeRegressor(max_depth=4, random_state=0)
    fitted = tree.fit_sorted(x32, sorted_columns(x32), y)
    np.testing.assert_array_equal(fitted, tree.predict(x))
    for f, t in zip(tree.feature_, tree.threshold_, strict=True):
        if f >= 0:
            column = np.unique(x32[:, f]).astype(np.float64)  # a node's values: a subset
            midpoints = (column[:, None] / 2 + column[None, :] / 2)[np.triu_indices(column.size,
                                                                                    1)]
            assert column[0] <= t < column[-1] and (t in midpoints or t in column)


def test_pure_nodes_and_constant_inputs_are_leaves():
    x = np.random.default_rng(0).normal(size=(50, 3))
    tree = ExactTreeRegressor(max_depth=3).fit(x, np.full(50, 2.5))
    assert tree.feature_.tolist() == [-1] and tree.value_.tolist() == [2.5]
    tree = ExactTreeRegressor(max_depth=3).fit(np.ones((50, 3)), np.arange(50.0))
    assert tree.feature_.tolist() == [-1] and tree.value_[0] == pytest.approx(24.5)


def test_the_tree_is_deterministic_given_its_seed_and_ties_follow_the_seed():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 1))
    x = np.hstack([x, x, x, x])  # four columns that split every node alike
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.normal(size=200)
    first = {tuple(ExactTreeRegressor(2, random_state=s).fit(x, y).feature_) for s in range(20)}
    again = {tuple(ExactTreeRegressor(2, random_state=s).fit(x, y).feature_) for s in range(20)}
    assert first == again and len(first) > 1  # each seed its features; seeds differ


def test_restricted_orders_sort_the_subset_as_a_fresh_sort_would():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(120, 4)), 1).astype(np.float32)
    rows = rng.choice(120, 70, replace=False)
    restricted = restrict_order(sorted_columns(x), rows.astype(np.int64), 120)
    fresh = sorted_columns(x[rows])
    for j in range(4):  # the same sorted values, a permutation of the subset (ties may differ)
        np.testing.assert_array_equal(x[rows][restricted[j], j], x[rows][fresh[j], j])
        assert sorted(restricted[j]) == list(range(70))


def test_the_tree_refuses_weights_and_wrong_inputs():
    x = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="sample weights"):
        ExactTreeRegressor().fit(x, x[:, 0], sample_weight=np.ones(20))
    tree = ExactTreeRegressor().fit(x, x[:, 0])
    with pytest.raises(ValueError, match="2 columns"):
        tree.predict(np.ones((3, 3)))
    with pytest.raises(ValueError, match="Invalid parameter"):
        tree.set_params(criterion="mse")
    with pytest.raises(ValueError, match="targets hold NaN"):
        ExactTreeRegressor().fit(x, np.where(x[:, 0] > 0, np.nan, 1.0))
    with pytest.raises(ValueError, match="inputs hold NaN"):
        ExactTreeRegressor().fit(np.where(x > 0, np.inf, x), x[:, 0])


def test_a_deep_tree_is_bounded_by_its_rows_not_its_depth():
    """max_depth far beyond what the rows allow (scikit-learn accepts any depth): the tree
    stops where the rows do, as scikit-learn's, without sizing itself by 2^depth."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(40, 2))
    y = rng.normal(size=40)
    ours = ExactTreeRegressor(max_depth=100).fit(x, y)
    theirs = DecisionTreeRegressor(criterion="friedman_mse", max_depth=100).fit(x, y)
    np.testing.assert_allclose(ours.predict(x), theirs.predict(x), rtol=0, atol=1e-12)
    assert len(ours.feature_) == theirs.tree_.node_count


@pytest.mark.parametrize("minibatch_frac, col_sample", [(1.0, 1.0), (0.7, 0.6)])
def test_presorted_ngboost_draws_what_ngboost_draws_and_grows_its_first_trees(minibatch_frac,
                                                                               col_sample):
    """Rows, columns and tree seeds come from NGBoost's stream as with scikit-learn's trees:
    the stages' column samples and the stream's state agree; the first stage (same
    parameters, same gradients) fits the same values at the training rows."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 6))
    y = x[:, 0] + np.abs(x[:, 1]) * rng.normal(size=300)
    settings = {"n_estimators": 40, "learning_rate": 0.05, "max_depth": 3,
                "minibatch_frac": minibatch_frac, "col_sample": col_sample,
                "natural_gradient": True, "random_state": 7}
    ours = make_ngb_regressor(gaussian_distribution(), tree_learner="presorted", **settings)
    theirs = make_ngb_regressor(gaussian_distribution(), tree_learner="sklearn", **settings)
    assert isinstance(ours, PresortedNGBRegressor)
    ours.fit(x, y)
    theirs.fit(x, y)
    assert [c.tolist() for c in ours.col_idxs] == [c.tolist() for c in theirs.col_idxs]
    assert ours._rng.randint(2**31 - 1) == theirs._rng.randint(2**31 - 1)
    cols = ours.col_idxs[0]
    for a, b in zip(ours.base_models[0], theirs.base_models[0], strict=True):
        np.testing.assert_allclose(a.predict(x[:, cols]), b.predict(x[:, cols]), atol=1e-12)
    np.testing.assert_allclose(ours.scalings[0], theirs.scalings[0], rtol=1e-12)
    # the sorted columns are not kept: the pickle is the model only, and predicts the same
    assert not {"_sorted_inputs", "_sorted_batch"} & set(vars(ours))
    again = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(again.pred_dist(x).loc, ours.pred_dist(x).loc)


def test_an_unknown_tree_learner_is_refused():
    with pytest.raises(ValueError, match="tree_learner"):
        make_ngb_regressor(gaussian_distribution(), n_estimators=5, learning_rate=0.1,
                           max_depth=2, minibatch_frac=1.0, col_sample=1.0,
                           natural_gradient=True, random_state=0, tree_learner="hist")
