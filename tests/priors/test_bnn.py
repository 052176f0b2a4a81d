"""BNN prior: the network formula, centering, scale constant, fit, prior draws, and a
short NUTS posterior (shape, precision, determinism, compiled-code reuse, informative data)."""

from __future__ import annotations

import json
import logging
import math

import jax
import numpy as np
import pytest
from scipy import stats

from postrisk.priors.bnn.model import (
    BnnWeights,
    bnn_function,
    draw_weights,
    function_draws,
    potential_energy,
)
from postrisk.priors.bnn.model import bnn_scale_constant as scale_constant
from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior
from postrisk.priors.bnn.sampler import chain_layout

FIT_SETTINGS = {"hidden": 50, "reference_inputs": 65, "scale_draws": 100}
SHORT_NUTS = {"chains": 2, "warmup": 40, "samples": 20, "target_accept": 0.9,
              "max_tree_depth": 10}


def loop_f(x: np.ndarray, wt: BnnWeights, a: float, x_ref: np.ndarray) -> np.ndarray:
    """The BNN prior (docs/design.md, "Priors") written out: a loop over hidden units, one
    input row at a time."""
    hidden, d = wt.w.shape

    def u(row):
        total = 0.0
        for h in range(hidden):
            pre = sum(wt.w[h, j] * (2 * row[j] - 1) for j in range(d)) / math.sqrt(d) + wt.c[h]
            total += wt.v[h] * math.tanh(pre)
        return total / math.sqrt(hidden)

    u_ref = np.mean([u(r) for r in x_ref])
    return np.array([float(wt.b) + a * (u(r) - u_ref) for r in x])


def random_weights(rng, hidden, d, lead=()) -> BnnWeights:
    return BnnWeights(v=rng.standard_normal(lead + (hidden,)),
                      w=rng.standard_normal(lead + (hidden, d)),
                      c=rng.standard_normal(lead + (hidden,)), b=rng.standard_normal(lead))


@pytest.mark.parametrize("d", [1, 3])
def test_bnn_function_matches_loop_over_hidden_units(d):
    rng = np.random.default_rng(d)
    x, x_ref = rng.uniform(size=(7, d)), rng.uniform(size=(5, d))
    wt = draw_weights(rng, 6, d)
    np.testing.assert_allclose(bnn_function(x, wt, 1.7, x_ref), loop_f(x, wt, 1.7, x_ref),
                               rtol=1e-12, atol=1e-12)


def test_batched_weights_and_function_draws_match_one_at_a_time():
    rng = np.random.default_rng(1)
    x, x_ref = rng.uniform(size=(9, 2)), rng.uniform(size=(4, 2))
    wt = random_weights(rng, 5, 2, lead=(3, 70))  # 210 samples: more than one block
    out = function_draws(wt, 0.8, x_ref, x)
    assert out.shape == (3, 70, 9) and out.dtype == np.float64
    for i, s in [(0, 0), (2, 69), (1, 33)]:
        one = BnnWeights(wt.v[i, s], wt.w[i, s], wt.c[i, s], wt.b[i, s])
        np.testing.assert_allclose(out[i, s], loop_f(x, one, 0.8, x_ref), rtol=1e-12,
                                   atol=1e-12)


def test_f_at_reference_inputs_averages_to_b():
    rng = np.random.default_rng(2)
    x_ref = rng.uniform(size=(65, 4))
    for _ in range(5):
        wt = draw_weights(rng, 50, 4)
        assert np.mean(bnn_function(x_ref, wt, 3.0, x_ref)) == pytest.approx(float(wt.b),
                                                                              abs=1e-12)


def test_potential_is_the_negative_log_joint_density():
    """The sampler's target = −log N(weights; 0, I) − Σ log N(y; f(x), σ²) up to a constant."""
    rng = np.random.default_rng(3)
    d, hidden, n = 3, 8, 11
    x, x_ref = rng.uniform(size=(n, d)), rng.uniform(size=(6, d))
    y, nv, a = rng.standard_normal(n), rng.uniform(0.1, 0.5, n), 1.3

    def numpy_log_joint(wt):
        prior = sum(stats.norm.logpdf(np.ravel(p)).sum() for p in (wt.v, wt.w, wt.c, wt.b))
        f = loop_f(x, wt, a, x_ref)
        return prior + stats.norm.logpdf(y, f, np.sqrt(nv)).sum()

    before = jax.config.jax_enable_x64
    values = []
    with jax.enable_x64(True):
        for _ in range(3):
            wt = draw_weights(rng, hidden, d)
            z = {"v": wt.v, "w": wt.w, "c": wt.c, "b": np.asarray(wt.b)}
            pe = float(potential_energy(z, (2 * x - 1) / math.sqrt(d), y, 1 / np.sqrt(nv),
                                        (2 * x_ref - 1) / math.sqrt(d), a))
            values.append(pe + numpy_log_joint(wt))
    assert jax.config.jax_enable_x64 == before
    np.testing.assert_allclose(values, values[0], rtol=0, atol=1e-9)


def test_fit_reads_settings_stores_reference_rows_and_is_json_able():
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(300, 3))
    eval_index = np.sort(rng.choice(300, size=120, replace=False))
    settings = {"hidden": 7, "reference_inputs": 11, "scale_draws": 30}
    fam = BayesianNeuralNetworkPrior()
    params = fam.fit("toy", x, None, eval_index, settings, np.random.default_rng(9))
    assert json.loads(json.dumps(params)) == params
    assert params["prior"] == "bnn" and params["hidden"] == 7 and params["scale_draws"] == 30
    ref = np.asarray(params["reference_index"])
    assert ref.size == 11 and np.unique(ref).size == 11 and np.isin(ref, eval_index).all()
    np.testing.assert_array_equal(np.asarray(params["reference_inputs"]), x[ref])
    again = fam.fit("toy", x, np.zeros(300), eval_index, settings, np.random.default_rng(9))
    assert {k: v for k, v in again.items() if k != "seconds"} == \
           {k: v for k, v in params.items() if k != "seconds"}
    with pytest.raises(ValueError, match="reference inputs"):
        fam.fit("toy", x, None, eval_index[:10], settings, rng)


def test_scale_constant_is_one_over_median_sd_of_unit_draws():
    rng = np.random.default_rng(5)
    pool, x_ref = rng.uniform(size=(80, 2)), rng.uniform(size=(10, 2))
    a = scale_constant(pool, x_ref, 50, np.random.default_rng(6), n_draws=25)
    replay = np.random.default_rng(6)
    sds = [np.std(bnn_function(pool, draw_weights(replay, 50, 2), 1.0, x_ref))
           for _ in range(25)]
    assert a * np.median(sds) == pytest.approx(1.0, rel=1e-12)


def test_fitted_scale_makes_median_sd_over_pool_one_for_independent_draws():
    """Independent prior draws from ``sample`` with the fitted ``a`` have median SD over the
    pool ≈ 1 (2,000 draws on each side: the two medians differ by ~2% SD; tolerance ~4 SD)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(size=(400, 8))
    eval_index = np.arange(100, 400)
    fam = BayesianNeuralNetworkPrior()
    params = fam.fit("toy", x, None, eval_index, {**FIT_SETTINGS, "scale_draws": 2000}, rng)
    draw_rng = np.random.default_rng(8)
    sds = [np.std(fam.sample(params, x[eval_index], draw_rng)) for _ in range(2000)]
    assert np.median(sds) == pytest.approx(1.0, abs=0.08)


def test_sample_is_deterministic_float64_and_b_is_standard_normal():
    rng = np.random.default_rng(10)
    x = rng.uniform(size=(200, 2))
    fam = BayesianNeuralNetworkPrior()
    params = fam.fit("toy", x, None, np.arange(200), FIT_SETTINGS, rng)
    one = fam.sample(params, x[:30], np.random.default_rng(3))
    assert one.shape == (30,) and one.dtype == np.float64
    np.testing.assert_array_equal(one, fam.sample(params, x[:30], np.random.default_rng(3)))
    assert not np.array_equal(one, fam.sample(params, x[:30], np.random.default_rng(4)))
    # mean over the reference inputs is b ~ N(0, 1): its variance over 2,000 draws (SE 0.03)
    x_ref = np.asarray(params["reference_inputs"])
    means = [fam.sample(params, x_ref, rng).mean() for _ in range(2000)]
    assert np.var(means) == pytest.approx(1.0, abs=0.15)
    assert np.mean(means) == pytest.approx(0.0, abs=0.1)


def test_chain_layout():
    assert chain_layout(4, 2, "parallel") == (2, 2, 1)
    assert chain_layout(4, 2, "vectorized") == (1, 2, 2)
    assert chain_layout(4, 8, "parallel") == (1, 4, 1)
    assert chain_layout(3, 2, "parallel") == (3, 1, 1)
    assert chain_layout(4, 1, "parallel") == (4, 1, 1)
    with pytest.raises(ValueError):
        chain_layout(4, 2, "sequential")


@pytest.fixture(scope="module")
def small_instance():
    rng = np.random.default_rng(11)
    x = rng.uniform(size=(120, 2))
    fam = BayesianNeuralNetworkPrior()
    params = fam.fit("toy", x, None, np.arange(100), FIT_SETTINGS, rng)
    f = fam.sample(params, x, rng)
    x_eval, x_train = x[:5], x[100:]
    nv = np.full(20, 0.05)
    y = f[100:] + np.sqrt(nv) * rng.standard_normal(20)
    return fam, params, x_train, y, nv, x_eval


def test_posterior_shape_precision_determinism_and_reuse(small_instance, caplog):
    fam, params, x_train, y, nv, x_eval = small_instance
    before = jax.config.jax_enable_x64
    caplog.set_level(logging.INFO, logger="postrisk")
    res = fam.posterior(params, x_train, y, nv, x_eval, np.random.default_rng(0), SHORT_NUTS)
    lines = [r.getMessage() for r in caplog.records if r.name == "postrisk.priors.bnn"]
    assert jax.config.jax_enable_x64 == before  # x64 only inside the call
    assert res.chains == 2 and res.draws.shape == (40, 25) and res.draws.dtype == np.float64
    assert res.mean.dtype == np.float64 and np.all(np.isfinite(res.draws))
    np.testing.assert_allclose(res.mean, res.draws.mean(axis=0))
    per_chain = res.settings["per_chain"]
    for key in ("divergences", "mean_accept_prob", "mean_num_steps", "mean_tree_depth",
                "step_size"):
        assert len(per_chain[key]) == 2, key
    assert res.settings["precision"] == "float64" and json.dumps(res.settings)
    assert (res.settings["backend"], res.settings["device_kind"]) == ("cpu", "cpu")
    assert lines[0].startswith("[bnn] NUTS: 2 chains") and lines[-1].startswith("[bnn] done")
    # progress from inside the compiled loop: every tenth of the 60 iterations, after both
    # devices (one chain each) got there, with the phase
    steps = [line for line in lines if line.startswith("[bnn] NUTS iterations: ")
             and " — " in line]
    assert [s.split(": ")[1].split(" ")[0] for s in steps] == [f"{k}/60" for k in
                                                               range(6, 61, 6)]
    assert steps[0].endswith("warm-up 6/40") and steps[-1].endswith("sampling 20/20")
    # chains differ (own prior initialisation and keys)
    assert not np.array_equal(res.draws[:20], res.draws[20:])
    again = fam.posterior(params, x_train, y, nv, x_eval, np.random.default_rng(0), SHORT_NUTS)
    np.testing.assert_array_equal(res.draws, again.draws)
    assert again.settings["seconds_compile"] == 0.0  # same shapes: compiled code reused
    other = fam.posterior(params, x_train, y + 0.1, nv, x_eval, np.random.default_rng(1),
                          SHORT_NUTS)
    assert other.settings["seconds_compile"] == 0.0
    assert not np.array_equal(res.draws, other.draws)


@pytest.mark.slow
def test_posterior_with_informative_data_interpolates():
    """Many training points with tiny noise (SD 0.02, prior SD of f ≈ 1): the posterior mean
    at the training inputs is close to y, and f* is recovered at evaluation points inside the
    data."""
    rng = np.random.default_rng(12)
    fam = BayesianNeuralNetworkPrior()
    x = rng.uniform(size=(300, 1))
    params = fam.fit("toy", x, None, np.arange(300), FIT_SETTINGS, rng)
    x_train = np.linspace(0, 1, 60)[:, None]
    x_eval = np.array([[0.205], [0.5], [0.805]])
    f = fam.sample(params, np.concatenate([x_eval, x_train]), rng)
    nv = np.full(60, 0.02 ** 2)
    y = f[3:] + 0.02 * rng.standard_normal(60)
    settings = {**SHORT_NUTS, "warmup": 150, "samples": 50}
    res = fam.posterior(params, x_train, y, nv, x_eval, np.random.default_rng(0), settings)
    mean_train = res.mean[3:]
    assert np.sqrt(np.mean((mean_train - y) ** 2)) < 0.05
    assert np.max(np.abs(res.mean[:3] - f[:3])) < 0.1
    assert np.sqrt(np.mean(res.var)) < 0.1
