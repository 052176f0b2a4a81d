"""Risk–coverage and risk–regret curves, AuRC and AuReC on worked examples, their oracle and random
references and input checks."""
import itertools

import numpy as np
import pytest

from postrisk.evaluation.selective import (
    AurcResult,
    AurecResult,
    aurc,
    aurec,
    selection_curve,
)

EXAMPLE_SCORES = [3, 1, 4, 1, 5]


EXAMPLE_REGRET = [2, 5, 1, 3, 4]


def test_regret_curve_of_the_worked_example_divides_by_n():
    # stable ascending order of the scores: indices 1, 3 (the tie, in index order), 0, 2, 4
    # -> regrets 5, 3, 2, 1, 4, cumulative 5, 8, 10, 11, 15, divided by N = 5 (not by k)
    curve = selection_curve(EXAMPLE_SCORES, EXAMPLE_REGRET)
    np.testing.assert_allclose(curve, [0.0, 1.0, 1.6, 2.0, 2.2, 3.0], rtol=0, atol=1e-15)


def test_aurec_reproduces_the_worked_example():
    r = aurec(EXAMPLE_SCORES, EXAMPLE_REGRET)
    assert isinstance(r, AurecResult)
    # trapezoid: (1/5)(0.5 + 1.3 + 1.8 + 2.1 + 2.6) = 1.66; oracle order 1,2,3,4,5 gives
    # Re = 0, .2, .6, 1.2, 2, 3 and (1/5)(.1 + .4 + .9 + 1.6 + 2.5) = 1.10; random = ½·3
    assert r.value == pytest.approx(1.66, abs=1e-12)
    assert r.oracle == pytest.approx(1.10, abs=1e-12)
    assert r.random == pytest.approx(1.50, abs=1e-12)
    assert r.excess == pytest.approx(0.56, abs=1e-12)
    assert r.normalised == pytest.approx(1.40, abs=1e-12)


def test_aurec_ties_are_broken_in_index_order():
    # the tie 1, 1 in index order accepts regret 5 before 3; the other order would give 1.58
    swapped = aurec([3, 1, 4, 1, 5], [2, 3, 1, 5, 4])
    assert swapped.value == pytest.approx(1.58, abs=1e-12)
    # constant scores: accepted in index order
    r = aurec(np.zeros(4), [4.0, 3.0, 2.0, 1.0])
    # Re = 0, 1, 1.75, 2.25, 2.5 -> (1/4)(.5 + 1.375 + 2 + 2.375) = 1.5625
    assert r.value == pytest.approx(1.5625, abs=1e-12)


def test_aurc_hand_example():
    # order by score: risks 2, 1, 3 -> Ri = 0, 2/3, 1, 2; area (1/3)(1/3 + 5/6 + 3/2) = 8/9;
    # oracle Ri = 0, 1/3, 1, 2 -> (1/3)(1/6 + 4/6 + 9/6) = 7/9; random = ½·2 = 1
    r = aurc([2.0, 1.0, 3.0], [1.0, 2.0, 3.0])
    assert isinstance(r, AurcResult)
    assert r.value == pytest.approx(8 / 9, abs=1e-12)
    assert r.oracle == pytest.approx(7 / 9, abs=1e-12)
    assert r.random == pytest.approx(1.0, abs=1e-12)
    assert r.excess == pytest.approx(1 / 9, abs=1e-12)
    assert r.normalised == pytest.approx(0.5, abs=1e-12)


def test_random_reference_is_the_mean_over_all_rankings():
    # averaging the area over all 5! orders gives exactly ½·mean(loss), so the mean
    # normalised value over all permutations is exactly 1
    losses = np.array([0.3, 2.0, 1.1, 0.0, 4.2])
    values = [aurc(np.array(p, dtype=float), losses) for p in itertools.permutations(range(5))]
    assert np.mean([v.value for v in values]) == pytest.approx(values[0].random, abs=1e-12)
    assert np.mean([v.normalised for v in values]) == pytest.approx(1.0, abs=1e-12)


def test_oracle_ranking_has_zero_excess_and_reverse_ranking_is_worst():
    rng = np.random.default_rng(3)
    regret = rng.exponential(size=50)
    best = aurec(regret, regret)
    assert best.excess == 0.0 and best.normalised == 0.0
    worst = aurec(-regret, regret)
    for _ in range(20):
        other = aurec(rng.permutation(50).astype(float), regret)
        assert best.value <= other.value <= worst.value
    assert worst.normalised > 1.0


def test_constant_losses_make_normalised_not_applicable():
    r = aurec([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    assert r.normalised is None
    assert r.excess == pytest.approx(0.0, abs=1e-15)
    assert aurc([3.0, 1.0], [0.0, 0.0]).normalised is None


@pytest.mark.parametrize("fn", [aurec, aurc])
def test_area_input_validation(fn):
    with pytest.raises(ValueError, match="differ in length"):
        fn([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-finite"):
        fn([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        fn([1.0, 2.0], [1.0, np.inf])
    with pytest.raises(ValueError, match="non-negative"):
        fn([1.0, 2.0], [1.0, -0.1])
    with pytest.raises(ValueError, match="empty"):
        fn([], [])
    with pytest.raises(ValueError, match="one-dimensional"):
        fn(np.ones((2, 2)), np.ones((2, 2)))
