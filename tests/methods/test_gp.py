"""The ``gp`` method: exact conditioning against the task reference posterior, type-II fit,
determinism, target units, bad input and the toy problem (docs/design.md, "Toy problem")."""

import math

import numpy as np
import pytest

from postrisk.gp.exact import posterior_moments, posterior_predictor, sample_prior
from postrisk.gp.kernels import Kernel, matern_component
from postrisk.methods.gp import ExactGP
from postrisk.methods.interface import validate_search_space
from postrisk.methods.runner import run_fit


def _random_kernel(rng, d, matern="matern32"):
    return Kernel((matern, "linear"), {
        matern: {"weight": float(rng.uniform(0.5, 1.0)),
                 "lengthscale": list(rng.uniform(0.2, 0.8, d))},
        "linear": {"weight": float(rng.uniform(0.1, 0.5)),
                   "variance": list(rng.uniform(1.0, 5.0, d))},
    })


def _standardised_truth(kernel, a, noise_var, y):
    """The task's hyper-parameters in the method's standardised units (inputs not scaled)."""
    y_mean, s_y = float(np.mean(y)), float(np.std(y))
    return {"kernel": kernel.to_dict(), "signal_var": a ** 2 / s_y ** 2,
            "noise_var": noise_var / s_y ** 2, "mean": -y_mean / s_y}


@pytest.fixture(scope="module")
def gp_task():
    """A homoscedastic GP task whose kernel lies in gp's family (ARD Matérn-3/2 + linear)."""
    rng = np.random.default_rng(11)
    d, n, m = 3, 150, 90
    kernel = _random_kernel(rng, d)
    a, noise_var = 1.7, 0.05
    x = rng.uniform(size=(n + m, d))
    f = sample_prior(kernel, a, x, rng)[0]
    y = f[:n] + math.sqrt(noise_var) * rng.standard_normal(n)
    return {"kernel": kernel, "a": a, "noise_var": noise_var, "x": x[:n], "y": y,
            "x_eval": x[n:]}


def test_declared_interface():
    assert ExactGP.name == "gp" and ExactGP.display_name == "GP"
    validate_search_space(ExactGP.search_space, ExactGP.defaults)
    assert ExactGP.search_space == {"nu": ("categorical", [0.5, 1.5, 2.5])}
    assert [matern_component(v) for v in (0.5, 1.5, 2.5)] == ["matern12", "matern32",
                                                                "matern52"]


def test_posterior_predictor_equals_posterior_moments(gp_task):
    t = gp_task
    nv = np.full(t["y"].size, t["noise_var"])
    ref = posterior_moments(t["kernel"], t["a"], t["x"], t["y"], nv, t["x_eval"])
    got = posterior_predictor(t["kernel"], t["a"], t["x"], t["y"], nv)(t["x_eval"])
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])


def test_task_hyperparameters_reproduce_the_reference_posterior(gp_task):
    t = gp_task
    ref_mean, ref_var = posterior_moments(t["kernel"], t["a"], t["x"], t["y"],
                                          np.full(t["y"].size, t["noise_var"]), t["x_eval"])
    fixed = _standardised_truth(t["kernel"], t["a"], t["noise_var"], t["y"])
    model = ExactGP(nu=1.5, standardize_inputs=False, fixed_hyperparameters=fixed)
    pred = model.fit(t["x"], t["y"]).predict(t["x_eval"])
    np.testing.assert_allclose(pred.mean, ref_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pred.epistemic_var, ref_var, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(pred.aleatoric_var, t["noise_var"], rtol=1e-12)


def test_real_task_store_posterior_is_reproduced(offline_covariates):
    """The real pipeline: a homoscedastic GP task store (build_sample → build_task)."""
    from postrisk.covariates.build import Covariates
    from postrisk.tasks.generate import TaskKey, build_sample, build_task

    cov = Covariates(offline_covariates["concrete"])
    kernel = _random_kernel(np.random.default_rng(5), cov.x.shape[1])
    params = {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.3}
    sample = build_sample(TaskKey("concrete", "gp", "homoscedastic", "balanced", 0), cov,
                          params, 120)
    task = build_task(sample, {"draws": 40})
    nv = task["noise_var_train"].values
    assert np.ptp(nv) <= 1e-12 * nv.max()
    y = task["y_train"].values
    fixed = _standardised_truth(kernel, params["a"], float(nv[0]), y)
    record = run_fit(ExactGP, {"nu": 1.5, "standardize_inputs": False,
                               "fixed_hyperparameters": fixed},
                     task["x_train"].values, y, task["x_eval"].values, random_state=0)
    assert record.ok, record.error
    np.testing.assert_allclose(record.mean, task["posterior_mean"].values, rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(record.epistemic_var, task["posterior_var"].values, rtol=1e-8,
                               atol=1e-12)


@pytest.fixture(scope="module")
def big_sample():
    rng = np.random.default_rng(3)
    d, n, m = 2, 500, 200
    kernel = _random_kernel(rng, d, "matern52")
    a, noise_var = 1.0, 0.1
    x = rng.uniform(size=(n + m, d))
    f = sample_prior(kernel, a, x, rng)[0]
    y = f[:n] + math.sqrt(noise_var) * rng.standard_normal(n)
    return {"x": x[:n], "y": y, "x_eval": x[n:], "f_eval": f[n:], "noise_var": noise_var}


@pytest.fixture(scope="module")
def big_fit(big_sample):
    s = big_sample
    model = ExactGP(random_state=0).fit(s["x"], s["y"])
    return model, model.predict(s["x_eval"])


def test_fit_recovers_the_noise_and_the_function(big_sample, big_fit):
    model, pred = big_fit
    s = big_sample
    assert np.ptp(pred.aleatoric_var) == 0.0
    assert abs(pred.aleatoric_var[0] / s["noise_var"] - 1.0) < 0.3, pred.aleatoric_var[0]
    assert np.all(pred.epistemic_var > 0)
    rmse = float(np.sqrt(np.mean((pred.mean - s["f_eval"]) ** 2)))
    assert rmse < 0.5 * math.sqrt(s["noise_var"]), rmse
    # a sane calibration of the latent posterior: z-scores of f* of order one
    z = (pred.mean - s["f_eval"]) / np.sqrt(pred.epistemic_var)
    assert 0.3 < float(np.mean(z ** 2)) < 3.0
    hp = model.hyperparameters_
    assert set(hp) == {"kernel", "signal_var", "noise_var", "mean"}
    # the fitted hyper-parameters, given back as fixed ones, reproduce the fit exactly
    again = ExactGP(fixed_hyperparameters=hp).fit(s["x"], s["y"]).predict(s["x_eval"])
    np.testing.assert_allclose(again.mean, pred.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(again.epistemic_var, pred.epistemic_var, rtol=1e-12)


def test_determinism_and_target_units(big_sample, big_fit):
    s = big_sample
    _, pred = big_fit
    rows = {"fit_rows": 300}  # a subsample: random_state matters
    p1 = ExactGP(random_state=4, **rows).fit(s["x"], s["y"]).predict(s["x_eval"])
    p2 = ExactGP(random_state=4, **rows).fit(s["x"], s["y"]).predict(s["x_eval"])
    for k in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(p1, k), getattr(p2, k))
    scaled = ExactGP(random_state=0).fit(s["x"], 10 * s["y"] + 3).predict(s["x_eval"])
    np.testing.assert_allclose(scaled.mean, 10 * pred.mean + 3, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scaled.aleatoric_var, 100 * pred.aleatoric_var, rtol=1e-5)
    np.testing.assert_allclose(scaled.epistemic_var, 100 * pred.epistemic_var, rtol=1e-4)


def test_bad_input_raises(big_sample):
    s = big_sample
    x, y = s["x"][:50], s["y"][:50]
    with pytest.raises(ValueError, match="non-finite"):
        ExactGP().fit(np.where(np.arange(50)[:, None] == 3, np.nan, x), y)
    with pytest.raises(ValueError, match="shape"):
        ExactGP().fit(x, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        ExactGP().fit(x[:, 0], y)
    with pytest.raises(ValueError, match="nu must be"):
        ExactGP(nu=2.0).fit(x, y)
    with pytest.raises(TypeError, match="unknown hyper-parameter"):
        ExactGP(lengthscale=1.0)
    with pytest.raises(RuntimeError, match="fit"):
        ExactGP().predict(x)
    with pytest.raises(ValueError, match="lacks"):
        ExactGP(fixed_hyperparameters={"signal_var": 1.0}).fit(x, y)
    fixed = ExactGP(fixed_hyperparameters={
        "kernel": _random_kernel(np.random.default_rng(0), 2).to_dict(), "signal_var": 1.0,
        "noise_var": 0.1, "mean": 0.0}).fit(x, y)
    with pytest.raises(ValueError, match="features"):
        fixed.predict(np.zeros((3, 3)))
