"""postrisk.tasks.task: a task store as a Task — loading and its errors, what a method sees and
what the oracle knows, the exact posterior anywhere (against a brute-force GP), the EU targets,
the reference predictive, and the summary ``postrisk info`` prints."""

import dataclasses
import json
import re

import numpy as np
import pytest

from postrisk.core.io import write_zarr_atomic
from postrisk.tasks.oracle import ReferencePredictive
from postrisk.tasks.store import StoreValidationError
from postrisk.tasks.task import Oracle, Task
from tests.task_helpers import gp_task


@pytest.fixture(scope="module")
def task() -> Task:
    return gp_task(n=30, m=12, d=2, seed=11, draws=6)


# -- loading ----------------------------------------------------------------------------------

def test_load_reads_a_written_store_back(task, tmp_path):
    path = write_zarr_atomic(task.ds, tmp_path / "t.zarr")
    loaded = Task.load(str(path))
    for name in task.ds.data_vars:
        np.testing.assert_array_equal(loaded.ds[name].values, task.ds[name].values, err_msg=name)
    assert loaded.key == task.key and loaded.sampler_settings == task.sampler_settings


def test_load_refuses_what_is_not_a_valid_task_store(task, tmp_path):
    with pytest.raises(FileNotFoundError, match="no store at"):
        Task.load(tmp_path / "missing.zarr")
    sample = task.ds.drop_vars(["posterior_draws", "posterior_mean"]).assign_attrs(
        store_kind="sample")
    path = write_zarr_atomic(sample, tmp_path / "sample.zarr")
    with pytest.raises(StoreValidationError, match="missing variable 'posterior_draws'") as err:
        Task.load(path)
    assert "missing variable 'posterior_mean'" in str(err.value)
    bad = task.ds.assign(posterior_var=-task.ds["posterior_var"])
    with pytest.raises(StoreValidationError, match="posterior_var"):
        Task.load(write_zarr_atomic(bad, tmp_path / "bad.zarr"))


# -- what a method sees, what the oracle knows ---------------------------------------------------

def test_a_method_sees_the_stored_training_data_and_evaluation_inputs(task):
    np.testing.assert_array_equal(task.x_train, task.ds["x_train"].values)
    np.testing.assert_array_equal(task.y_train, task.ds["y_train"].values)
    np.testing.assert_array_equal(task.x_eval, task.ds["x_eval"].values)
    assert task.x_train.shape == (30, 2) and task.y_train.shape == (30,)
    assert task.x_eval.shape == (12, 2)


def test_the_oracle_holds_exactly_the_hidden_quantities(task):
    oracle = task.oracle
    names = [f.name for f in dataclasses.fields(Oracle)]
    assert names == ["noise_var_train", "noise_var_eval", "f_true_train", "f_true_eval",
                     "posterior_draws", "posterior_mean", "posterior_var"]
    for name in names:
        np.testing.assert_array_equal(getattr(oracle, name), task.ds[name].values, err_msg=name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        oracle.f_true_eval = None
    # the task's own shortcuts to the oracle's arrays
    for name in ("noise_var_eval", "f_true_eval", "posterior_mean", "posterior_var",
                 "posterior_draws", "shell_eval"):
        np.testing.assert_array_equal(getattr(task, name), task.ds[name].values, err_msg=name)


def test_key_heteroscedasticity_and_sampler_settings_come_from_the_attributes():
    key = {"dataset": "concrete", "prior": "gp", "noise": "homoscedastic", "coverage": "ood",
           "seed": 4}
    homo = gp_task(n=20, m=8, key=key, noise_slope=0.0)
    assert homo.key == key and homo.heteroscedastic is False
    for noise in ("bump", "edges", "smooth_monotone"):
        assert Task(homo.ds.assign_attrs(noise=noise)).heteroscedastic is True
    settings = {"backend": "scipy", "draws": 6, "covariance_factor": {"method": "cholesky"}}
    with_settings = Task(homo.ds.assign_attrs(sampler_settings=json.dumps(settings)))
    assert with_settings.sampler_settings == settings


# -- the exact posterior anywhere ----------------------------------------------------------------

def _matern32_posterior(a, lengthscale, x_train, y, noise_var, x):
    """The GP posterior mean and variance of f at ``x`` under a²·Matérn-3/2, by hand."""
    def k(x1, x2):
        r = np.sqrt(((x1[:, None, :] - x2[None, :, :]) ** 2 / lengthscale**2).sum(-1))
        return a**2 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)

    gram = k(x_train, x_train) + np.diag(noise_var)
    cross = k(x_train, x)
    mean = cross.T @ np.linalg.solve(gram, y)
    var = a**2 - np.einsum("ij,ij->j", cross, np.linalg.solve(gram, cross))
    return mean, var


def test_exact_posterior_at_any_inputs_is_the_gp_posterior_by_hand(task):
    params = json.loads(task.ds.attrs["prior_params"])
    assert params["kernel"]["components"] == ["matern32"]
    assert params["kernel"]["params"]["matern32"]["weight"] == 1.0
    lengthscale = np.asarray(params["kernel"]["params"]["matern32"]["lengthscale"])
    rng = np.random.default_rng(0)
    x = np.vstack([rng.uniform(-0.5, 1.5, size=(7, 2)), task.x_train[:2], task.x_eval[:2]])
    mean, var = task.exact_posterior_at(x.tolist())  # any array-like
    want_mean, want_var = _matern32_posterior(params["a"], lengthscale, task.x_train,
                                              task.y_train, task.ds["noise_var_train"].values, x)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, want_var, rtol=1e-8, atol=1e-10)
    # at the evaluation points: the stored posterior
    np.testing.assert_allclose(mean[-2:], task.posterior_mean[:2], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var[-2:], task.posterior_var[:2], rtol=1e-10, atol=1e-12)


def test_exact_posterior_at_uses_the_stores_prior_parameters(task):
    params = json.loads(task.ds.attrs["prior_params"])
    wider = Task(task.ds.assign_attrs(prior_params=json.dumps({**params, "a": 2 * params["a"]})))
    far = np.full((1, 2), 40.0)  # no data near: the prior variance a²
    assert task.exact_posterior_at(far)[1] == pytest.approx([params["a"] ** 2], rel=1e-9)
    assert wider.exact_posterior_at(far)[1] == pytest.approx([4 * params["a"] ** 2], rel=1e-9)


def test_exact_posterior_at_rejects_inputs_of_the_wrong_shape(task):
    for bad, shape in ((task.x_eval[0], "(2,)"), (task.x_eval[:, :1], "(12, 1)"),
                       (np.zeros((2, 3, 2)), "(2, 3, 2)")):
        with pytest.raises(ValueError, match=re.escape(f"x must have shape (m, 2), got {shape}")):
            task.exact_posterior_at(bad)


@pytest.mark.parametrize("prior", ["bnn", "hbart"])
def test_exact_posterior_at_is_an_error_for_sampled_posteriors(task, prior):
    sampled = Task(task.ds.assign_attrs(prior=prior))
    with pytest.raises(ValueError, match=f"the {prior} prior's reference posterior is a set of "
                                         "draws at the evaluation points"):
        sampled.exact_posterior_at(task.x_eval)


# -- targets -------------------------------------------------------------------------------------

def test_eu_targets_of_a_prediction_by_hand(task):
    pred = task.posterior_mean + np.linspace(-1.0, 1.0, task.posterior_mean.size)
    targets = task.eu_targets(pred)
    np.testing.assert_allclose(targets["posterior_excess_risk"],
                               (pred - task.posterior_mean) ** 2 + task.posterior_var)
    np.testing.assert_array_equal(targets["posterior_variance"], task.posterior_var)
    np.testing.assert_allclose(targets["pointwise_excess_risk"], (pred - task.f_true_eval) ** 2)
    with pytest.raises(ValueError, match="differ in shape"):
        task.eu_targets(pred[:-1])


def test_the_reference_predictive_is_gaussian_for_gp_and_the_draws_mixture_otherwise(task):
    exact = task.reference_predictive
    assert exact is task.reference_predictive  # computed once per task object
    assert exact.draws is None
    np.testing.assert_array_equal(exact.posterior_mean, task.posterior_mean)
    np.testing.assert_array_equal(exact.posterior_var, task.posterior_var)
    np.testing.assert_array_equal(exact.noise_var, task.noise_var_eval)
    for prior in ("hbart", "bnn"):
        mixture = Task(task.ds.assign_attrs(prior=prior)).reference_predictive
        assert mixture.posterior_mean is None and mixture.draws.dtype == np.float64
        np.testing.assert_array_equal(mixture.draws, task.posterior_draws.astype(np.float64))
        np.testing.assert_array_equal(mixture.noise_var, task.noise_var_eval)


def test_loss_eu_targets_are_the_reference_predictives(task):
    rng = np.random.default_rng(2)
    mean = task.posterior_mean + rng.normal(scale=0.3, size=task.posterior_mean.size)
    var = task.posterior_var + task.noise_var_eval * rng.uniform(0.5, 2, size=mean.size)
    want = ReferencePredictive.gaussian(task.posterior_mean, task.posterior_var,
                                        task.noise_var_eval).eu_targets(mean, var)
    got = task.loss_eu_targets(mean, var)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, err_msg=name)
    # no predictive variance (a distance EU): the generalized variances, NaN excess risks
    bare = task.loss_eu_targets(mean, None)
    for loss in ("crps", "log_score"):
        assert np.isnan(bare[f"{loss}_posterior_excess_risk"]).all()
        np.testing.assert_array_equal(bare[f"{loss}_generalized_variance"],
                                      got[f"{loss}_generalized_variance"])


# -- summary -------------------------------------------------------------------------------------

def test_summary_rows_from_a_store_set_by_hand(task):
    m = task.ds.sizes["eval"]
    covered = np.zeros(m, bool)
    covered[:3] = True  # 3 of 12
    mcse = np.arange(m, dtype=float)  # median 5.5
    ds = task.ds.assign(covered90=("eval", covered), mcse_var=("eval", mcse)).assign_attrs(
        versions=json.dumps({"postrisk": "1.2.3", "numpy": "2.0"}), created="2026-01-02",
        config_digest="abcd", rank_loglik=4, chains=2,
        sampler_settings=json.dumps({"device_kind": "cpu", "backend": "scipy", "x": 1}))
    rows = Task(ds).summary()
    assert rows == [
        ("instance", "toy/gp/bump/random/3"),
        ("shape", "n = 30, n_eval = 12, d = 2, draws = 6 (2 chain(s))"),
        ("schema version", str(task.ds.attrs["schema_version"])),
        ("made by", "postrisk 1.2.3 on 2026-01-02"),
        ("config digest", "abcd"),
        ("sampler", "backend scipy, device_kind cpu"),
        ("90% interval coverage", "0.250"),
        ("rank of f*'s log-likelihood", "4 of 6"),
        ("median MCSE of the variance", "5.5"),
    ]


def test_summary_adds_rhat_ess_and_what_a_release_left_out_and_marks_the_unknown(task):
    m = task.ds.sizes["eval"]
    ds = task.ds.assign(rhat=("eval", np.linspace(1.0, 1.01234, m)),
                        ess=("eval", np.linspace(812.4, 2000.0, m)))
    ds = ds.assign_attrs(released_without=json.dumps(["posterior_draws_train", "other"]),
                         versions="{}", sampler_settings="{}")
    ds.attrs.pop("created", None)
    rows = dict(Task(ds).summary())
    assert rows["max R̂ / min ESS"] == "1.0123 / 812"
    assert rows["released without"] == "posterior_draws_train, other"
    assert rows["made by"] == "postrisk ? on ?" and rows["sampler"] == "?"
    assert list(rows)[-2:] == ["max R̂ / min ESS", "released without"]
    assert "max R̂ / min ESS" not in dict(task.summary())
    assert "released without" not in dict(task.summary())


def test_a_changed_value_in_a_plain_store_is_refused(tmp_path):
    """Fault: a byte flipped inside a plain (unzipped) task store loaded silently. The workflow
    records each variable's digest as it writes a store; a value changed since is refused."""
    import zarr

    from postrisk.core.io import write_zarr_atomic
    from postrisk.tasks.store import (
        CONTENT_DIGESTS,
        StoreValidationError,
        content_digests,
        with_content_digests,
    )
    from tests.task_helpers import gp_task

    ds = gp_task(n=30, m=20).ds
    path = write_zarr_atomic(with_content_digests(ds), tmp_path / "0.zarr")
    loaded = Task.load(path)
    assert json.loads(loaded.ds.attrs[CONTENT_DIGESTS]) == content_digests(ds)
    group = zarr.open_group(path, mode="r+")
    y = group["y_train"][:]
    y[3] += 1e-9
    group["y_train"][:] = y
    with pytest.raises(StoreValidationError, match=r"y_train: its values differ from those the "
                                                   r"store was written with \(the store is "
                                                   r"damaged"):
        Task.load(path)
    # a store written without digests (before they were recorded) loads as before
    plain = write_zarr_atomic(ds, tmp_path / "1.zarr")
    assert CONTENT_DIGESTS not in Task.load(plain).ds.attrs
