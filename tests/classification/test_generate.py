"""A classification instance built on real covariates at toy size: the store contract and its
round trip, determinism, the truth's construction, and loading by family."""

import json

import numpy as np
import pytest
from scipy.special import softmax

from postrisk.classification.generate import build_classification_task, draw_labels
from postrisk.classification.key import ClassificationKey
from postrisk.classification.link import class_log_probabilities, class_probabilities
from postrisk.classification.store import ClassificationStoreError, validate_classification_store
from postrisk.classification.task import ClassificationTask
from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.covariates.build import Covariates
from postrisk.gp.kernels import default_kernel
from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior

NUTS = {"chains": 2, "warmup": 60, "samples": 40, "target_accept": 0.9, "max_tree_depth": 8}
SETTINGS = {"temperature_strength": 1.25, "entropy_share": 0.5, "amplitude_draws": 20,
            "posterior": {"gp": NUTS, "bnn": NUTS}}
N = 30


@pytest.fixture(scope="module")
def concrete(offline_covariates):
    return Covariates(offline_covariates["concrete"])


@pytest.fixture(scope="module")
def gp_params(concrete):
    kernel = default_kernel(("rq", "linear"), concrete.x.shape[1])
    return {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.0}


@pytest.fixture(scope="module")
def bnn_params(concrete):
    """The regression BNN prior's fit on the covariates (fewer hidden units and draws)."""
    settings = {"hidden": 20, "reference_inputs": 30, "scale_draws": 20}
    return BayesianNeuralNetworkPrior().fit("concrete", concrete.x, None, concrete.eval_index,
                                            settings, np.random.default_rng(0))


@pytest.fixture(scope="module", params=["gp", "bnn"])
def prior_params(request, gp_params, bnn_params):
    return request.param, {"gp": gp_params, "bnn": bnn_params}[request.param]


@pytest.fixture(scope="module")
def built(concrete, prior_params):
    prior, params = prior_params
    key = ClassificationKey("concrete", prior, "bump", "balanced", 3, 0)
    return key, build_classification_task(key, concrete, params, N, SETTINGS)


def test_the_store_holds_its_contract_and_round_trips(built, tmp_path):
    key, ds = built
    validate_classification_store(ds)
    assert ds["prob_draws"].shape == (80, ds.sizes["eval"], 3)
    assert ds["prob_draws"].dtype == np.float32
    path = write_zarr_atomic(ds, tmp_path / "0.zarr")
    back = open_zarr(path)
    for name in ds.data_vars:
        assert np.array_equal(back[name].values, ds[name].values), name
    task = ClassificationTask.load(path)
    assert task.key == key and task.n_classes == 3
    assert task.x_train.shape == (N, ds.sizes["feature"])
    assert np.array_equal(task.y_train, ds["labels_train"].values)


def test_regeneration_is_bit_identical_and_seeds_differ(built, concrete, prior_params):
    key, a = built
    _, params = prior_params
    b = build_classification_task(key, concrete, params, N, SETTINGS)
    for name in a.data_vars:
        assert np.array_equal(a[name].values, b[name].values), name
    other = build_classification_task(
        ClassificationKey("concrete", key.prior, "bump", "balanced", 3, 1), concrete, params, N,
        SETTINGS)
    assert not np.array_equal(a["f_true_eval"].values, other["f_true_eval"].values)
    # one amplitude per (dataset, prior, K): the seeds share it
    assert other.attrs["amplitude"] == a.attrs["amplitude"]


def test_the_truth_is_softmax_of_latents_over_temperature(built):
    _, ds = built
    for part in ("train", "eval"):
        f, tau = ds[f"f_true_{part}"].values, ds[f"temperature_{part}"].values
        np.testing.assert_allclose(ds[f"prob_true_{part}"].values,
                                   softmax(f / tau[:, None], axis=1), rtol=1e-12)
    field = json.loads(ds.attrs["temperature_field"])
    assert field["mode"] == "bump" and field["strength"] == 1.25
    assert ds.attrs["entropy_share_prior"] == pytest.approx(0.5, abs=1e-4)
    # the draws are probabilities; their mean is the stored centroid
    np.testing.assert_allclose(ds["prob_mean"].values,
                               ds["prob_draws"].values.astype(float).mean(axis=0), atol=1e-6)
    # the latents' checks: π is monotone in its own latent given the others, so at K = 2 the
    # rank of π*_k among the π draws equals the rank of f*_k − f*_j among theirs; here K = 3:
    # only the ranges and the π check's agreement with a recomputation
    assert ds["rank_true_latent"].values.max() <= ds.sizes["draw"]
    d = ds.sizes["draw"]
    flat = ds["prob_draws"].values.reshape(d, -1)
    np.testing.assert_array_equal(ds["rank_true"].values.reshape(-1),
                                  (flat < ds["prob_true_eval"].values.reshape(-1)).sum(axis=0))


def test_labels_follow_the_class_probabilities():
    """draw_labels against the probabilities it is given: counts within 5 SEs."""
    probs = np.tile([0.1, 0.6, 0.3], (20000, 1))
    labels = draw_labels(probs, np.random.default_rng(0))
    freq = np.bincount(labels, minlength=3) / labels.size
    se = np.sqrt(probs[0] * (1 - probs[0]) / labels.size)
    assert np.all(np.abs(freq - probs[0]) < 5 * se)


def test_a_damaged_store_is_refused(built):
    _, ds = built
    bad = ds.copy()
    bad["labels_train"] = bad["labels_train"] + 5
    with pytest.raises(ClassificationStoreError, match="labels outside"):
        validate_classification_store(bad)
    regression_like = ds.copy()
    regression_like.attrs = {**ds.attrs, "family": "regression"}
    with pytest.raises(ClassificationStoreError, match="not a classification store"):
        validate_classification_store(regression_like)


def test_load_task_opens_a_store_by_its_family(built, tmp_path):
    import postrisk

    _, ds = built
    path = write_zarr_atomic(ds, tmp_path / "c.zarr")
    task = postrisk.load_task(path)
    assert isinstance(task, ClassificationTask)
    terms = task.oracle.decomposition(task.oracle.centroid, "brier")
    assert np.all(terms["deployment_gap"] == 0)


def test_only_the_gp_and_bnn_priors_build_classification_instances(concrete, gp_params):
    from postrisk.classification.priors import CLASSIFICATION_PRIORS
    from postrisk.families.classification import config

    assert config.CLASSIFICATION_PRIORS == CLASSIFICATION_PRIORS == ("gp", "bnn")
    with pytest.raises(ValueError, match="priors"):
        build_classification_task(
            ClassificationKey("concrete", "hbart", "bump", "balanced", 3, 0), concrete,
            gp_params, N, SETTINGS)
    with pytest.raises(ValueError, match="at least 2 classes"):
        ClassificationKey("concrete", "gp", "bump", "balanced", 1, 0)


def test_the_link_is_a_tempered_softmax_and_stable_far_out():
    latent = np.array([[[1.0, 2.0, 3.0], [1e4, 0.0, -1e4]]])
    tau = np.array([0.5, 2.0])
    probs = class_probabilities(latent, tau)
    np.testing.assert_allclose(probs[0, 0], softmax(np.array([2.0, 4.0, 6.0])), rtol=1e-14)
    assert probs[0, 1, 0] == 1.0 and np.isfinite(class_log_probabilities(latent, tau)).all()
    with pytest.raises(ValueError, match="positive"):
        class_probabilities(latent, np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        class_probabilities(latent, np.array([1.0]))
