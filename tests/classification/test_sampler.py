"""The GP classification reference posterior (NUTS on whitened latents) at toy size: shapes,
determinism, input checks, the conditional at evaluation rows that repeat training rows, and a
posterior that follows strongly informative labels. Calibration: test_gp_classification_sbc.py
(slow tier)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from postrisk.classification.link import class_probabilities
from postrisk.classification.sampler import (
    ClassificationPosterior,
    gp_classification_posterior,
    prior_latents,
)
from postrisk.gp.kernels import default_kernel

K, N, N_EVAL, SCALE, SEED = 3, 12, 5, 1.5, 7
SETTINGS = {"chains": 2, "warmup": 100, "samples": 100, "target_accept": 0.9,
            "max_tree_depth": 8}
KERNEL = default_kernel(("rbf",), 1)


def _data(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(N, 1))
    # the first two evaluation rows repeat training rows
    x_eval = np.vstack([x[[3, 8]], rng.uniform(size=(N_EVAL - 2, 1))])
    tau = np.exp(0.5 * (x[:, 0] - 0.5))
    f = prior_latents(KERNEL, SCALE, x, K, rng)
    y = np.array([rng.choice(K, p=p) for p in class_probabilities(f, tau)])
    return {"x_train": x, "labels": y, "temperature_train": tau, "x_eval": x_eval}


def _posterior(seed: int = SEED, settings: dict | None = None, **changes):
    args = {**_data(), **changes}
    return gp_classification_posterior(KERNEL, SCALE, args["x_train"], args["labels"],
                                       args["temperature_train"], args["x_eval"], K, seed,
                                       settings or SETTINGS)


@pytest.fixture(scope="module")
def post() -> ClassificationPosterior:
    return _posterior()


def test_shapes_dtypes_and_records(post):
    draws = SETTINGS["chains"] * SETTINGS["samples"]
    assert post.latent_eval.shape == (draws, N_EVAL, K)
    assert post.latent_train.shape == (draws, N, K)
    assert post.latent_eval.dtype == post.latent_train.dtype == np.float64
    assert np.isfinite(post.latent_eval).all() and np.isfinite(post.latent_train).all()
    assert post.chains == 2
    s = post.settings
    assert (s["backend"], s["algorithm"], s["parametrisation"], s["precision"]) == (
        "numpyro", "NUTS", "whitened", "float64")
    assert s["draws"] == draws and s["device_kind"]
    assert {k: s[k] for k in SETTINGS} == SETTINGS
    pc = post.summary["per_chain"]
    for key in ("divergences", "mean_accept_prob", "step_size", "mean_tree_depth",
                "max_tree_depth_hits"):
        assert len(pc[key]) == 2, key
    for key in ("seconds_compile", "seconds_mcmc", "seconds_conditional"):
        assert post.summary[key] >= 0
    json.dumps(s)
    json.dumps(post.summary)
    # the draws move: not stuck at the initial point
    assert np.all(post.latent_train.std(axis=0) > 0.05)


def test_same_seed_is_bit_identical_and_compiles_nothing(post):
    again = _posterior()
    assert again.summary["seconds_compile"] == 0.0
    np.testing.assert_array_equal(again.latent_eval, post.latent_eval)
    np.testing.assert_array_equal(again.latent_train, post.latent_train)


def test_other_seed_differs(post):
    other = _posterior(seed=SEED + 1)
    assert not np.array_equal(other.latent_eval, post.latent_eval)
    assert not np.array_equal(other.latent_train, post.latent_train)


def test_eval_rows_at_training_rows_reproduce_the_training_latents(post):
    np.testing.assert_allclose(post.latent_eval[:, :2], post.latent_train[:, [3, 8]],
                               atol=1e-3, rtol=0)
    assert post.latent_eval[:, 2:].std(axis=0).min() > 0.05  # the other rows: real spread


def test_every_eval_row_at_a_training_row():
    """A conditional covariance that is ~0 everywhere (no scale for a relative jitter): still
    finite, and the training latents come back."""
    d = _data()
    res = _posterior(x_eval=d["x_train"][[0, 1, 2, 3, 3]])
    assert np.isfinite(res.latent_eval).all()
    np.testing.assert_allclose(res.latent_eval, res.latent_train[:, [0, 1, 2, 3, 3]],
                               atol=1e-3, rtol=0)


def test_more_chains_than_devices_run_in_rounds():
    import jax

    settings = {**SETTINGS, "chains": 2 * jax.local_device_count(), "samples": 20}
    res = _posterior(settings=settings)
    assert res.latent_eval.shape == (settings["chains"] * 20, N_EVAL, K)
    assert res.summary["rounds"] * res.summary["devices"] == settings["chains"]
    assert len(res.summary["per_chain"]["divergences"]) == settings["chains"]


def test_posterior_follows_informative_labels():
    """Three inputs, each repeated 60 times with fixed label counts: the posterior mean of π
    there is close to the empirical frequencies (the prior, logit SD 1.5, shrinks a little)."""
    sites = np.array([[0.1], [0.5], [0.9]])
    counts = np.array([[42, 12, 6], [10, 40, 10], [6, 12, 42]])
    x = np.repeat(sites, 60, axis=0)
    y = np.concatenate([np.repeat(np.arange(K), c) for c in counts])
    tau = np.ones(x.shape[0])
    res = gp_classification_posterior(KERNEL, SCALE, x, y, tau, sites, K, 3, SETTINGS)
    assert res.summary["n_unique_train"] == 3
    freq = counts / counts.sum(axis=1, keepdims=True)
    mean_pi = class_probabilities(res.latent_eval, np.ones(3)).mean(axis=0)
    print(np.round(mean_pi, 3))
    np.testing.assert_allclose(mean_pi, freq, atol=0.08)
    # the training rows of one site share one latent
    np.testing.assert_array_equal(res.latent_train[:, 0], res.latent_train[:, 59])


@pytest.mark.parametrize("changes, message", [
    ({"labels": np.r_[np.zeros(N - 1, int), 3]}, "lie in 0"),
    ({"labels": np.r_[np.zeros(N - 1, int), -1]}, "lie in 0"),
    ({"labels": np.zeros(N - 1, int)}, "shape"),
    ({"labels": np.full(N, 0.5)}, "integers"),
    ({"temperature_train": np.r_[np.ones(N - 1), 0.0]}, "temperatures"),
    ({"temperature_train": np.r_[np.ones(N - 1), np.nan]}, "temperatures"),
    ({"temperature_train": np.ones(N + 1)}, "shape"),
    ({"x_train": np.full((N, 1), np.nan)}, "finite"),
    ({"x_eval": np.zeros((N_EVAL, 2))}, "columns"),
])
def test_bad_inputs_raise(changes, message):
    with pytest.raises(ValueError, match=message):
        _posterior(**changes)


def test_bad_settings_and_scalars_raise():
    d = _data()
    args = (d["x_train"], d["labels"], d["temperature_train"], d["x_eval"])
    with pytest.raises(ValueError, match="settings lack"):
        gp_classification_posterior(KERNEL, SCALE, *args, K, 0, {"chains": 2})
    with pytest.raises(ValueError, match="target_accept"):
        gp_classification_posterior(KERNEL, SCALE, *args, K, 0,
                                    {**SETTINGS, "target_accept": 1.0})
    with pytest.raises(ValueError, match="scale"):
        gp_classification_posterior(KERNEL, -1.0, *args, K, 0, SETTINGS)
    with pytest.raises(ValueError, match="n_classes"):
        gp_classification_posterior(KERNEL, SCALE, *args, 1, 0, SETTINGS)
    with pytest.raises(ValueError, match="seed"):
        gp_classification_posterior(KERNEL, SCALE, *args, K, -1, SETTINGS)


def test_prior_latents_shape():
    x = np.random.default_rng(0).uniform(size=(9, 1))
    f = prior_latents(KERNEL, SCALE, x, K, np.random.default_rng(1))
    assert f.shape == (9, K) and f.dtype == np.float64
    np.testing.assert_array_equal(f, prior_latents(KERNEL, SCALE, x, K,
                                                   np.random.default_rng(1)))


def test_label_counts_add_the_labels_of_rows_that_share_a_latent():
    from postrisk.classification.likelihood import check_labels, label_counts

    counts = label_counts(np.array([0, 2, 2, 1]), 3, np.array([0, 1, 1, 0]), 2)
    np.testing.assert_array_equal(counts, [[1, 1, 0], [0, 0, 2]])
    np.testing.assert_array_equal(label_counts(np.array([1, 0]), 2), [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="0 … 2"):
        check_labels(np.array([0, 3]), 2, 3)
