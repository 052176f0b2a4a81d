"""The classification oracle (the paper's App. A.5 and A.6) against hand-computed values,
brute-force loops and a Monte-Carlo estimate of the posterior risk."""

from __future__ import annotations

import tracemalloc
from math import log

import numpy as np
import pytest

from postrisk.classification.oracle import (
    LOSSES,
    ClassificationOracle,
    expected_loss,
    pointwise_excess_risk,
    posterior_centroid,
    risk_decomposition,
    zero_one,
)

KEYS = {"aleatoric", "generalized_variance", "deployment_gap", "posterior_excess_risk", "risk",
        "bayes_risk"}


def _dirichlet(rng: np.random.Generator, shape: tuple[int, ...], k: int,
               alpha: float = 1.0) -> np.ndarray:
    return rng.dirichlet(np.full(k, alpha), size=shape)


def _kl(p, q) -> float:
    return sum(a * log(a / b) for a, b in zip(p, q, strict=True) if a > 0)


def _entropy(p) -> float:
    return -sum(a * log(a) for a in p if a > 0)


def _loss(pred, y: int, loss: str) -> float:
    if loss == "log_loss":
        return -log(pred[y])
    onehot = np.eye(len(pred))[y]
    return float(np.sum((pred - onehot) ** 2))


@pytest.mark.parametrize("loss", LOSSES)
def test_single_draw_has_no_generalized_variance(loss):
    rng = np.random.default_rng(0)
    draws = _dirichlet(rng, (1, 7), 4)
    pred = _dirichlet(rng, (7,), 4)
    out = risk_decomposition(draws, pred, loss)
    assert set(out) == KEYS and all(v.shape == (7,) for v in out.values())
    np.testing.assert_allclose(out["generalized_variance"], 0.0, atol=1e-15)
    np.testing.assert_allclose(out["posterior_excess_risk"], out["deployment_gap"], rtol=1e-15)
    # with one draw the risk is the expected loss under that draw
    np.testing.assert_allclose(out["risk"], expected_loss(draws[0], pred, loss), rtol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_centroid_prediction_has_no_gap_and_bayes_risk(loss):
    rng = np.random.default_rng(1)
    draws = _dirichlet(rng, (30, 9), 3, alpha=0.5)
    centroid = posterior_centroid(draws)
    np.testing.assert_allclose(centroid, draws.mean(axis=0), rtol=1e-15)
    out = risk_decomposition(draws, centroid, loss)
    np.testing.assert_allclose(out["deployment_gap"], 0.0, atol=1e-14)
    np.testing.assert_allclose(out["risk"], out["bayes_risk"], rtol=1e-12)
    # any other prediction does worse (strict propriety)
    other = risk_decomposition(draws, _dirichlet(rng, (9,), 3), loss)
    assert np.all(other["risk"] > out["bayes_risk"])
    assert np.all(other["deployment_gap"] > 0)


def test_entropy_of_centroid_is_aleatoric_plus_mutual_information():
    rng = np.random.default_rng(2)
    draws = _dirichlet(rng, (50, 20), 5, alpha=0.3)
    pred = _dirichlet(rng, (20,), 5)
    log_out = risk_decomposition(draws, pred, "log_loss")
    centroid = draws.mean(axis=0)
    h_bar = np.array([_entropy(row) for row in centroid])
    np.testing.assert_allclose(log_out["bayes_risk"], h_bar, rtol=1e-12)
    np.testing.assert_allclose(
        log_out["aleatoric"] + log_out["generalized_variance"], h_bar, rtol=1e-12)
    assert np.all(log_out["generalized_variance"] > 0)
    brier = risk_decomposition(draws, pred, "brier")
    np.testing.assert_allclose(brier["aleatoric"] + brier["generalized_variance"],
                               1.0 - np.sum(centroid**2, axis=-1), rtol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_terms_match_brute_force_loops(loss):
    rng = np.random.default_rng(3)
    n_draws, n, k = 6, 5, 3
    draws = _dirichlet(rng, (n_draws, n), k, alpha=0.7)
    pred = _dirichlet(rng, (n,), k)
    out = risk_decomposition(draws, pred, loss)
    for i in range(n):
        bar = [sum(draws[d, i, j] for d in range(n_draws)) / n_draws for j in range(k)]
        if loss == "log_loss":
            au = sum(_entropy(draws[d, i]) for d in range(n_draws)) / n_draws
            gv = sum(_kl(draws[d, i], bar) for d in range(n_draws)) / n_draws
            gap = sum(bar[j] * log(bar[j] / pred[i, j]) for j in range(k))
            per = sum(_kl(draws[d, i], pred[i]) for d in range(n_draws)) / n_draws
        else:
            au = sum(1 - sum(draws[d, i, j] ** 2 for j in range(k))
                     for d in range(n_draws)) / n_draws
            gv = sum(sum((draws[d, i, j] - bar[j]) ** 2 for j in range(k))
                     for d in range(n_draws)) / n_draws
            gap = sum((bar[j] - pred[i, j]) ** 2 for j in range(k))
            per = sum(sum((draws[d, i, j] - pred[i, j]) ** 2 for j in range(k))
                      for d in range(n_draws)) / n_draws
        # the risk as the double expectation E_F E_{Y|F}[ℓ(π̂, Y)], term by term
        risk = sum(draws[d, i, y] * _loss(pred[i], y, loss)
                   for d in range(n_draws) for y in range(k)) / n_draws
        assert out["aleatoric"][i] == pytest.approx(au, rel=1e-12)
        assert out["generalized_variance"][i] == pytest.approx(gv, rel=1e-10)
        assert out["deployment_gap"][i] == pytest.approx(gap, rel=1e-10)
        assert out["posterior_excess_risk"][i] == pytest.approx(per, rel=1e-10)
        assert out["risk"][i] == pytest.approx(risk, rel=1e-12)
    np.testing.assert_allclose(out["risk"], expected_loss(draws.mean(axis=0), pred, loss),
                               rtol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_risk_matches_monte_carlo(loss):
    rng = np.random.default_rng(4)
    n_draws, n, k, m = 40, 4, 3, 200_000
    draws = _dirichlet(rng, (n_draws, n), k, alpha=0.5)
    pred = _dirichlet(rng, (n,), k, alpha=5.0)
    out = risk_decomposition(draws, pred, loss)
    # F uniform among the draws, then Y ~ Cat(π_F), independently per point
    f = rng.integers(n_draws, size=(m, n))
    cdf = np.cumsum(draws[f, np.arange(n)], axis=-1)
    y = np.minimum((rng.random((m, n, 1)) > cdf).sum(axis=-1), k - 1)
    if loss == "log_loss":
        losses = -np.log(pred[np.arange(n), y])
    else:
        p_y = pred[np.arange(n), y]
        losses = np.sum(pred**2, axis=-1) - 2 * p_y + 1
    se = losses.std(axis=0, ddof=1) / np.sqrt(m)
    assert np.all(np.abs(losses.mean(axis=0) - out["risk"]) < 5 * se)


def test_hand_computed_two_draw_example():
    # K = 2, draws (0.9, 0.1) and (0.5, 0.5): π̄ = (0.7, 0.3); π̂ = (0.6, 0.4)
    draws = np.array([[[0.9, 0.1]], [[0.5, 0.5]]])
    pred = np.array([[0.6, 0.4]])
    log_out = risk_decomposition(draws, pred, "log_loss")
    # H(0.9, 0.1) = 0.9 ln(1/0.9) + 0.1 ln 10 = 0.3250829734, H(0.5, 0.5) = ln 2 = 0.6931471806
    # AU = (0.3250829734 + 0.6931471806) / 2 = 0.5091150770
    assert log_out["aleatoric"][0] == pytest.approx(0.5091150770, abs=1e-10)
    # KL((.9,.1)‖(.7,.3)) = .9 ln(9/7) + .1 ln(1/3) = 0.2261829 - 0.1098612 = 0.1163217
    # KL((.5,.5)‖(.7,.3)) = .5 ln(5/7) + .5 ln(5/3) = -0.1682361 + 0.2554128 = 0.0871767
    # GV = (0.1163217 + 0.0871767) / 2 = 0.1017492 = H(π̄) - AU
    assert log_out["generalized_variance"][0] == pytest.approx(0.1017492251, abs=1e-9)
    # gap = KL((.7,.3)‖(.6,.4)) = .7 ln(7/6) + .3 ln(3/4) = 0.1079055 - 0.0863046 = 0.0216009
    assert log_out["deployment_gap"][0] == pytest.approx(0.0216008541, abs=1e-9)
    assert log_out["posterior_excess_risk"][0] == pytest.approx(0.1233500792, abs=1e-9)
    # risk = -(.7 ln .6 + .3 ln .4) = 0.3575779 + 0.2748872 = 0.6324652
    assert log_out["risk"][0] == pytest.approx(0.6324651562, abs=1e-9)
    # H(π̄) = -(.7 ln .7 + .3 ln .3) = 0.2496725 + 0.3611918 = 0.6108643
    assert log_out["bayes_risk"][0] == pytest.approx(0.6108643021, abs=1e-9)

    brier = risk_decomposition(draws, pred, "brier")
    # AU = ((1 - .81 - .01) + (1 - .25 - .25)) / 2 = (0.18 + 0.5) / 2 = 0.34
    # GV = (‖(.2, -.2)‖² + ‖(-.2, .2)‖²) / 2 = 0.08; gap = ‖(.1, -.1)‖² = 0.02
    # risk = .7 ‖(.6,.4) - e1‖² + .3 ‖(.6,.4) - e2‖² = .7·.32 + .3·.72 = 0.44 = .34 + .08 + .02
    # Bayes risk = 1 - (.49 + .09) = 0.42 = AU + GV
    expected = {"aleatoric": 0.34, "generalized_variance": 0.08, "deployment_gap": 0.02,
                "posterior_excess_risk": 0.10, "risk": 0.44, "bayes_risk": 0.42}
    for key, value in expected.items():
        assert brier[key][0] == pytest.approx(value, abs=1e-14), key


def test_deterministic_draws_are_all_epistemic():
    draws = np.array([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]])
    pred = np.array([[0.5, 0.5, 0.0]])
    out = risk_decomposition(draws, pred, "log_loss")
    assert out["aleatoric"][0] == 0.0
    assert out["generalized_variance"][0] == pytest.approx(log(2), rel=1e-14)
    assert out["deployment_gap"][0] == pytest.approx(0.0, abs=1e-15)  # 0·log 0 = 0 in class 3
    # a zero prediction where the centroid has mass: infinite gap and risk
    bad = risk_decomposition(draws, np.array([[1.0, 0.0, 0.0]]), "log_loss")
    assert np.isinf(bad["deployment_gap"][0]) and np.isinf(bad["risk"][0])
    brier = risk_decomposition(draws, pred, "brier")
    assert brier["aleatoric"][0] == 0.0
    assert brier["generalized_variance"][0] == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("loss", LOSSES)
def test_pointwise_excess_risk(loss):
    rng = np.random.default_rng(5)
    truth = _dirichlet(rng, (8,), 4, alpha=0.5)
    pred = _dirichlet(rng, (8,), 4)
    np.testing.assert_allclose(pointwise_excess_risk(truth, truth, loss), 0.0, atol=1e-15)
    got = pointwise_excess_risk(truth, pred, loss)
    if loss == "log_loss":
        direct = [_kl(t, p) for t, p in zip(truth, pred, strict=True)]
    else:
        direct = np.sum((truth - pred) ** 2, axis=-1)
    np.testing.assert_allclose(got, direct, rtol=1e-12)
    assert np.all(got > 0)
    np.testing.assert_allclose(
        got, expected_loss(truth, pred, loss) - expected_loss(truth, truth, loss),
        rtol=1e-10, atol=1e-14)


def test_zero_one_with_ties():
    truth = np.array([[0.4, 0.4, 0.2], [0.4, 0.4, 0.2], [0.1, 0.5, 0.4], [0.2, 0.3, 0.5]])
    pred = np.array([[0.3, 0.3, 0.4],   # picks class 3: regret 0.4 - 0.2
                     [0.2, 0.4, 0.4],   # tie 2/3 -> class 2: regret 0
                     [0.4, 0.2, 0.4],   # tie 1/3 -> class 1: regret 0.5 - 0.1
                     [0.2, 0.3, 0.5]])  # Bayes class: regret 0
    out = zero_one(truth, pred)
    np.testing.assert_allclose(out["bayes_error"], [0.6, 0.6, 0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(out["regret"], [0.2, 0.0, 0.4, 0.0], atol=1e-15)


def test_oracle_wraps_functions_and_accepts_float32():
    rng = np.random.default_rng(6)
    draws = _dirichlet(rng, (20, 6), 3).astype(np.float32)
    truth = _dirichlet(rng, (6,), 3)
    pred = _dirichlet(rng, (6,), 3).astype(np.float32)
    oracle = ClassificationOracle(draws, truth)
    assert oracle.prob_draws.dtype == np.float64
    assert oracle.centroid is oracle.centroid
    np.testing.assert_allclose(oracle.centroid, posterior_centroid(draws), rtol=1e-15)
    for loss in LOSSES:
        got, want = oracle.decomposition(pred, loss), risk_decomposition(draws, pred, loss)
        for key in KEYS:
            np.testing.assert_array_equal(got[key], want[key])
        np.testing.assert_array_equal(oracle.pointwise_excess_risk(pred, loss),
                                      pointwise_excess_risk(truth, pred, loss))
    np.testing.assert_array_equal(oracle.zero_one(pred)["regret"], zero_one(truth, pred)["regret"])


def test_large_posterior_memory():
    rng = np.random.default_rng(7)
    n_draws, n, k = 1000, 1500, 3
    draws = rng.dirichlet(np.ones(k), size=(n_draws, n)).astype(np.float32)
    pred = rng.dirichlet(np.ones(k), size=n)
    full = n_draws * n * k * 8
    tracemalloc.start()
    try:
        oracle = ClassificationOracle(draws, pred)
        for loss in LOSSES:
            out = oracle.decomposition(pred, loss)
            assert np.all(np.isfinite(out["risk"]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * full


def test_bad_inputs_raise():
    draws = np.full((2, 3, 2), 0.5)
    pred = np.full((3, 2), 0.5)
    with pytest.raises(ValueError, match="unknown loss"):
        risk_decomposition(draws, pred, "hinge")
    with pytest.raises(ValueError, match="unknown loss"):
        pointwise_excess_risk(pred, pred, "zero_one")
    with pytest.raises(ValueError, match="3 dimensions"):
        risk_decomposition(pred, pred, "brier")
    with pytest.raises(ValueError, match="shape"):
        risk_decomposition(draws, np.full((4, 2), 0.5), "brier")
    with pytest.raises(ValueError, match="shape"):
        zero_one(pred, np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="at least one posterior draw"):
        risk_decomposition(np.empty((0, 3, 2)), pred, "brier")
    with pytest.raises(ValueError, match="two classes"):
        expected_loss(np.ones((3, 1)), np.ones((3, 1)), "brier")
    with pytest.raises(ValueError, match="non-negative"):
        risk_decomposition(draws, np.array([[1.2, -0.2]] * 3), "log_loss")
    with pytest.raises(ValueError, match="sum to 1"):
        risk_decomposition(draws * 1.001, pred, "log_loss")
    with pytest.raises(ValueError, match="finite"):
        pointwise_excess_risk(np.array([[np.nan, 1.0]] * 3), pred, "brier")
    with pytest.raises(ValueError, match="numeric"):
        zero_one(np.array([["a", "b"]] * 3), pred)
    with pytest.raises(ValueError, match="shape"):
        ClassificationOracle(draws, np.full((2, 2), 0.5))
    # float32 rounding is tolerated, a float64 deviation of 1e-5 is not
    risk_decomposition((draws + 2e-5).astype(np.float32), pred, "brier")
    with pytest.raises(ValueError, match="sum to 1"):
        risk_decomposition(draws + 1e-5, pred, "brier")
