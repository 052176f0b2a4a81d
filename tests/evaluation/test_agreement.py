import numpy as np
import pytest
from scipy.stats import kendalltau

from postrisk.evaluation.agreement import kendalls_tau, kendalls_w, rank_moves
from postrisk.evaluation.metrics import spearman


def test_w_is_one_for_identical_rankings_with_and_without_ties():
    row = np.array([0.3, 0.1, 0.7, 0.5, 0.2])
    assert kendalls_w(np.tile(row, (4, 1))) == pytest.approx(1.0, abs=1e-12)
    # identical rankings with ties reach 1 only with the tie correction: m = 3, n = 5,
    # T_j = (2³ − 2) + (2³ − 2) = 12, S = 9·(5³ − 5 − 12)/12 = 81; uncorrected 12·81/1080 = 0.9
    tied = np.tile([1.0, 1.0, 2.0, 3.0, 3.0], (3, 1))
    assert kendalls_w(tied) == pytest.approx(1.0, abs=1e-12)


def test_w_textbook_example_with_ties():
    # rater 1: ranks 1, 2, 3, 4          T = 0
    # rater 2: ranks 1.5, 1.5, 3, 4      T = 2³ − 2 = 6
    # rater 3: ranks 2, 1, 3.5, 3.5      T = 6
    # R = (4.5, 4.5, 9.5, 11.5), R̄ = 3·5/2 = 7.5, S = 9 + 9 + 4 + 16 = 38
    # W = 12·38 / (3²·(4³ − 4) − 3·12) = 456 / 504 = 19/21  (uncorrected: 456/540)
    scores = [[1, 2, 3, 4],
              [1, 1, 3, 4],
              [2, 1, 4, 4]]
    assert kendalls_w(scores) == pytest.approx(19 / 21, abs=1e-12)
    # the same with higher-is-better scores (negated)
    assert kendalls_w(-np.array(scores), higher_is_better=True) == pytest.approx(19 / 21,
                                                                               abs=1e-12)


def test_w_direction_matters_only_through_ties_and_order():
    # a reversed rater: with two raters W = (1 + ρ)/2 = 0
    assert kendalls_w([[1, 2, 3], [3, 2, 1]]) == pytest.approx(0.0, abs=1e-12)
    assert kendalls_w([[1, 2, 3], [3, 2, 1]], higher_is_better=True) == pytest.approx(0.0,
                                                                                      abs=1e-12)


def test_w_of_two_tie_free_raters_is_one_plus_spearman_over_two():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(3, 40))
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
        assert kendalls_w([x, y]) == pytest.approx((1 + spearman(x, y)) / 2, abs=1e-12)


@pytest.mark.parametrize("rankings", [
    [[1, 2, 3]],                      # one rater
    [[1], [2], [3]],                  # one item
    np.ones((3, 4)),                  # every rater ties every item: denominator 0
])
def test_w_not_applicable_is_none(rankings):
    assert kendalls_w(rankings) is None


def test_w_rejects_incomplete_rows_and_wrong_shapes():
    with pytest.raises(ValueError, match="non-finite"):
        kendalls_w([[1, 2, np.nan], [1, 2, 3]])
    with pytest.raises(ValueError, match="2-D"):
        kendalls_w([1, 2, 3])


def test_kendalls_tau_equals_scipy_on_data_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(5, 200))
        x = rng.integers(0, 6, n).astype(float)
        y = x + rng.integers(-2, 3, n)
        assert kendalls_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    # a hand case without ties: 5 concordant, 1 discordant pair -> 4/6
    assert kendalls_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3, abs=1e-12)


@pytest.mark.parametrize("x, y", [
    ([1, 1, 1, 1], [1, 2, 3, 4]),
    ([1, 2, 3, 4], [5, 5, 5, 5]),
    ([1, 2], [2, 1]),
    ([1, 2, np.nan, 4], [1, 2, 3, np.inf]),
])
def test_kendalls_tau_not_applicable_is_none(x, y):
    assert kendalls_tau(x, y) is None


def test_kendalls_tau_drops_non_finite_pairs_and_checks_lengths():
    assert kendalls_tau([1, 2, 3, np.nan], [1, 2, 3, 0]) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="differ in length"):
        kendalls_tau([1, 2, 3], [1, 2, 3, 4])


def test_rank_moves():
    ref = [0.9, 0.5, 0.7, 0.1]           # ranks (higher is better): 1, 3, 2, 4
    other = [0.6, 0.8, 0.7, 0.1]         # ranks: 3, 1, 2, 4
    out = rank_moves(ref, other)
    np.testing.assert_array_equal(out["reference_ranks"], [1, 3, 2, 4])
    np.testing.assert_array_equal(out["other_ranks"], [3, 1, 2, 4])
    np.testing.assert_array_equal(out["moves"], [2, -2, 0, 0])
    assert out["max_move"] == 2.0
    low = rank_moves(ref, other, higher_is_better=False)
    np.testing.assert_array_equal(low["reference_ranks"], [4, 2, 3, 1])
    # ties take the average rank
    tied = rank_moves([1.0, 1.0, 0.0], [1.0, 0.5, 0.0])
    np.testing.assert_array_equal(tied["reference_ranks"], [1.5, 1.5, 3])
    assert tied["max_move"] == 0.5
    assert rank_moves([3.0], [1.0])["max_move"] == 0.0


def test_rank_moves_validation():
    with pytest.raises(ValueError, match="differ in length"):
        rank_moves([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="non-finite"):
        rank_moves([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="empty"):
        rank_moves([], [])
