import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from postrisk.evaluation.metrics import (
    EU_TARGETS,
    delta_ent,
    mean_applicable,
    score_instance,
    spearman,
)
from postrisk.tasks.oracle import eu_targets


def test_spearman_without_ties_matches_the_d_squared_formula():
    # ranks differ by d = (0, 1, 1, 0): rho = 1 - 6*2 / (4*15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, abs=1e-15)


def test_spearman_with_ties_uses_average_ranks():
    # y ranks (1, 2, 3.5, 5, 3.5); centred x ranks (-2,-1,0,1,2), centred y ranks
    # (-2,-1,.5,2,.5): rho = 8 / sqrt(10 * 9.5)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95),
                                                                      abs=1e-15)


def test_spearman_perfect_monotone_is_exactly_plus_or_minus_one():
    x = np.array([0.1, 0.5, 2.0, 3.0, 10.0])
    assert spearman(x, x ** 3) == 1.0
    assert spearman(x, -np.exp(x)) == -1.0


@pytest.mark.parametrize("x, y", [
    ([1, 1, 1, 1], [1, 2, 3, 4]),     # constant x
    ([1, 2, 3, 4], [2, 2, 2, 2]),     # constant y
    ([1, 2], [2, 1]),                  # fewer than 3 points
    ([1, 2, np.nan, np.inf], [1, 2, 3, 4]),  # fewer than 3 finite pairs
    ([np.nan] * 5, [np.nan] * 5),     # a failed fit
])
def test_spearman_not_applicable_is_none_never_nan(x, y):
    assert spearman(x, y) is None


def test_spearman_drops_non_finite_pairs_and_checks_lengths():
    assert spearman([1, 2, 3, np.nan], [4, 5, 6, 0]) == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        spearman([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="one-dimensional"):
        spearman(np.ones((3, 2)), np.ones((3, 2)))


def test_spearman_agrees_with_scipy_on_random_data_with_and_without_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 300))
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
        xi, yi = rng.integers(0, 5, size=n), rng.integers(0, 4, size=n)  # many ties
        if len(set(xi)) > 1 and len(set(yi)) > 1:
            assert spearman(xi, yi) == pytest.approx(spearmanr(xi, yi).statistic, abs=1e-12)


def test_mean_applicable_skips_none_and_counts():
    assert mean_applicable([0.5, None, 0.1]) == (pytest.approx(0.3), 2, 3)
    assert mean_applicable([None, None]) == (None, 0, 2)
    assert mean_applicable([]) == (None, 0, 0)
    assert mean_applicable(iter([1.0])) == (1.0, 1, 1)
    mean, k, n = mean_applicable(np.array([0.2, -0.4]))
    assert (mean, k, n) == (pytest.approx(-0.1), 2, 2)


@pytest.mark.parametrize("bad", [float("nan"), np.nan, float("inf")])
def test_mean_applicable_rejects_nan(bad):
    with pytest.raises(ValueError, match="entry 1"):
        mean_applicable([0.3, bad, None])


def test_delta_ent_hand_case():
    # rho(EU_hat, AU_hat) = 0.8 (see above); rho(EU*, AU*) = -1 -> 1.8
    assert delta_ent([1, 2, 3, 4], [1, 3, 2, 4], [1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(1.8)
    # constant AU_hat (a homoscedastic method) or constant AU* (homoscedastic noise): None
    assert delta_ent([1, 2, 3, 4], [2, 2, 2, 2], [1, 2, 3, 4], [4, 3, 2, 1]) is None
    assert delta_ent([1, 2, 3, 4], [1, 3, 2, 4], [1, 2, 3, 4], [1, 1, 1, 1]) is None


def test_score_instance_hand_case():
    eu_hat = [1.0, 2.0, 3.0, 4.0]
    au_hat = [1.0, 3.0, 2.0, 4.0]
    targets = {
        "posterior_excess_risk": np.array([1.0, 2.0, 3.0, 4.0]),   # rho with eu_hat = 1
        "posterior_variance": np.array([4.0, 3.0, 2.0, 1.0]),      # rho with eu_hat = -1
        "pointwise_excess_risk": np.array([5.0, 5.0, 5.0, 5.0]),   # constant: None
    }
    au_true = [1.0, 2.0, 3.0, 4.0]                                 # rho with au_hat = 0.8
    out = score_instance(eu_hat, au_hat, targets, au_true)
    assert list(out) == ([f"spearman_eu_{t}" for t in EU_TARGETS] + ["spearman_au"]
                         + [f"delta_ent_{t}" for t in EU_TARGETS])
    assert out["spearman_eu_posterior_excess_risk"] == 1.0
    assert out["spearman_eu_posterior_variance"] == -1.0
    assert out["spearman_eu_pointwise_excess_risk"] is None
    assert out["spearman_au"] == pytest.approx(0.8)
    # delta: rho(eu_hat, au_hat) = 0.8 minus rho(target, au_true) = 1, -1, n/a
    assert out["delta_ent_posterior_excess_risk"] == pytest.approx(-0.2)
    assert out["delta_ent_posterior_variance"] == pytest.approx(1.8)
    assert out["delta_ent_pointwise_excess_risk"] is None


def test_score_instance_checks_keys_and_shapes():
    targets = {t: np.arange(4.0) for t in EU_TARGETS}
    with pytest.raises(KeyError, match="missing"):
        score_instance(np.arange(4.0), np.arange(4.0), {"posterior_variance": np.arange(4.0)},
                       np.arange(4.0))
    with pytest.raises(ValueError, match="shape"):
        score_instance(np.arange(5.0), np.arange(4.0), targets, np.arange(4.0))


def test_eu_targets_follow_spec_section_9():
    a = np.array([1.0, 2.0, 3.0])
    m = np.array([1.5, 2.0, 2.0])
    v = np.array([0.1, 0.2, 0.3])
    f = np.array([0.0, 2.5, 3.0])
    out = eu_targets(a, m, v, f)
    assert set(out) == set(EU_TARGETS)
    np.testing.assert_allclose(out["posterior_excess_risk"], [0.35, 0.2, 1.3])
    np.testing.assert_allclose(out["posterior_variance"], v)
    np.testing.assert_allclose(out["pointwise_excess_risk"], [1.0, 0.25, 0.0])
