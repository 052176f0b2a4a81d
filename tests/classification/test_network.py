"""The classification network prior (:mod:`postrisk.classification.network`): the latents'
formula against a loop over units, the sampler's potential against the NumPy definition and a
hand-written log joint, the prior's centring and scale, and the regression network as its
one-output case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_softmax

from postrisk.classification.network import (
    NetworkLatents,
    NetworkWeights,
    _potential_gen,
    draw_network_weights,
    network_latents,
)
from postrisk.priors.bnn.model import BnnWeights, bnn_function

H, D, K = 7, 3, 3


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    return {"x": rng.uniform(size=(11, D)), "x_ref": rng.uniform(size=(5, D)),
            "weights": draw_network_weights(rng, H, D, K), "a": 0.8, "amplitude": 1.7}


def test_the_latents_follow_the_formula_unit_by_unit(setup):
    x, x_ref, wt, a, amp = (setup[k] for k in ("x", "x_ref", "weights", "a", "amplitude"))

    def u(rows, k):
        return np.array([sum(wt.v[h, k] * math.tanh(wt.w[h] @ (2 * r - 1) / math.sqrt(D)
                                                    + wt.c[h]) for h in range(H)) / math.sqrt(H)
                         for r in rows])

    expected = np.column_stack([amp * (wt.b[k] + a * (u(x, k) - u(x_ref, k).mean()))
                                for k in range(K)])
    np.testing.assert_allclose(network_latents(x, wt, a, x_ref, amp), expected, rtol=1e-12)


def test_one_output_is_the_regression_network(setup):
    x, x_ref, wt, a = (setup[k] for k in ("x", "x_ref", "weights", "a"))
    one = NetworkWeights(v=wt.v[:, :1], w=wt.w, c=wt.c, b=wt.b[:1])
    regression = BnnWeights(v=wt.v[:, 0], w=wt.w, c=wt.c, b=np.float64(wt.b[0]))
    np.testing.assert_allclose(network_latents(x, one, a, x_ref)[:, 0],
                               bnn_function(x, regression, a, x_ref), rtol=1e-12)


def test_the_potential_is_the_negative_log_joint(setup):
    import jax

    x, x_ref, wt, a, amp = (setup[k] for k in ("x", "x_ref", "weights", "a", "amplitude"))
    rng = np.random.default_rng(1)
    y = rng.integers(K, size=x.shape[0])
    tau = np.exp(rng.normal(size=x.shape[0]) * 0.3)
    counts = np.eye(K)[y]
    f = network_latents(x, wt, a, x_ref, amp)
    expected = (0.5 * sum(np.sum(getattr(wt, n) ** 2) for n in ("v", "w", "c", "b"))
                - np.sum(log_softmax(f / tau[:, None], axis=1)[np.arange(x.shape[0]), y]))
    with jax.enable_x64(True):
        potential = _potential_gen((2 * x - 1) / math.sqrt(D), 1 / tau, counts,
                                   (2 * x_ref - 1) / math.sqrt(D), a, amp)
        got = float(potential({"v": wt.v, "w": wt.w, "c": wt.c, "b": wt.b}))
    assert got == pytest.approx(expected, rel=1e-12)


def test_prior_draws_are_centred_on_the_offsets_over_the_reference_inputs(setup):
    x_ref = setup["x_ref"]
    params = {"a": 0.8, "hidden": H, "reference_inputs": x_ref.tolist()}
    draws = NetworkLatents().unit_draws(params, x_ref, np.random.default_rng(2), 200, K)
    assert draws.shape == (200, x_ref.shape[0], K)
    # the network part averages to zero over the reference inputs: the mean is b_k ~ N(0, 1)
    means = draws.mean(axis=1).reshape(-1)
    assert abs(means.mean()) < 4 / math.sqrt(means.size)
    assert means.std() == pytest.approx(1.0, abs=0.1)
    one = NetworkLatents().draw(params, 2.0, x_ref, np.random.default_rng(3), K)
    assert one.shape == (x_ref.shape[0], K)
