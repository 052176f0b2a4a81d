"""Task instances: determinism, independence, store contract, and GP calibration with power."""

import json

import numpy as np
import pytest

from postrisk.covariates.build import Covariates
from postrisk.evaluation import posterior_checks
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import default_kernel
from postrisk.priors.gp.model import GaussianProcessPrior
from postrisk.tasks import diagnostics
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.store import TASK_SCHEMA_VERSION, StoreValidationError, validate_store
from tests.priors.sbc_helpers import NARROWED, WIDENED, scale_about_mean


@pytest.fixture(scope="module")
def concrete(offline_covariates):
    return Covariates(offline_covariates["concrete"])


@pytest.fixture(scope="module")
def gp_params(concrete):
    kernel = default_kernel(("rq", "linear"), concrete.x.shape[1])
    return {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.0}


def test_regeneration_is_bit_identical(concrete, gp_params):
    key = TaskKey("concrete", "gp", "bump", "ood", 3)
    a = build_task(build_sample(key, concrete, gp_params, 100), {"draws": 50})
    b = build_task(build_sample(key, concrete, gp_params, 100), {"draws": 50})
    for name in ("train_index", "y_train", "f_true_eval", "noise_var_eval", "posterior_draws",
                 "posterior_mean", "posterior_var"):
        assert np.array_equal(a[name].values, b[name].values), name
    validate_store(a, kind="task")


def test_a_generated_store_rechecks_against_its_stored_draws(concrete, gp_params, tmp_path):
    """The diagnostics build_task records (rank, coverage, MCSE from the float64 draws) agree,
    written and read back, with those ``postrisk verify`` recomputes from the float32 draws; a
    store whose draws are another instance's does not."""
    from postrisk.core.io import open_zarr, write_zarr_atomic
    from postrisk.tasks.recheck import recheck_diagnostics

    def stored(seed):
        task = build_task(build_sample(TaskKey("concrete", "gp", "bump", "balanced", seed),
                                       concrete, gp_params, 200), {"draws": 400})
        return open_zarr(write_zarr_atomic(task, tmp_path / f"{seed}.zarr"))

    a, b = stored(0), stored(1)
    recorded = {name: a[name].values for name in ("rank_true", "covered90", "mcse_var")}
    assert recheck_diagnostics(a["posterior_draws"].values, a["f_true_eval"].values, 1,
                               recorded) == []
    assert len(recheck_diagnostics(b["posterior_draws"].values, a["f_true_eval"].values, 1,
                                   recorded)) == 3


def test_instances_differing_in_noise_mode_are_independent(concrete, gp_params):
    n = 300
    s1 = build_sample(TaskKey("concrete", "gp", "bump", "balanced", 0), concrete, gp_params, n)
    s2 = build_sample(TaskKey("concrete", "gp", "edges", "balanced", 0), concrete, gp_params, n)
    assert not np.allclose(s1["f_true_eval"].values, s2["f_true_eval"].values)
    assert abs(np.corrcoef(s1["f_true_eval"].values, s2["f_true_eval"].values)[0, 1]) < 0.5
    # training sets: per shell k_s of N_s candidates drawn independently twice; the overlap
    # is a sum of hypergeometric counts with mean Σ k_s²/N_s
    cand_shells = concrete.shell[concrete.candidate_index]
    sizes = np.bincount(cand_shells, minlength=5).astype(float)
    k = np.bincount(s1["shell_train"].values, minlength=5).astype(float)
    mean = np.sum(k**2 / sizes)
    var = np.sum(k * (k / sizes) * (1 - k / sizes) * (sizes - k) / (sizes - 1))
    overlap = len(set(s1["train_index"].values) & set(s2["train_index"].values))
    assert abs(overlap - mean) < 4 * np.sqrt(var), (overlap, mean, var)


def test_store_validation_catches_broken_stores(concrete, gp_params):
    sample = build_sample(TaskKey("concrete", "gp", "bump", "balanced", 0), concrete, gp_params, 80)
    validate_store(sample, kind="sample")
    with pytest.raises(StoreValidationError, match="missing variable 'posterior_draws'"):
        validate_store(sample, kind="task")
    broken = sample.assign(noise_var_eval=sample["noise_var_eval"] * -1)
    with pytest.raises(StoreValidationError, match="non-positive"):
        validate_store(broken, kind="sample")
    overlap = sample.copy()
    overlap["train_index"].values[0] = overlap["eval_index"].values[0]
    with pytest.raises(StoreValidationError, match="overlap"):
        validate_store(overlap, kind="sample")
    # a twin: a training input whose covariate values equal an evaluation point's (other rows)
    twin = sample.copy(deep=True)
    twin["x_train"].values[3] = twin["x_eval"].values[7]
    with pytest.raises(StoreValidationError, match="1 evaluation point value.s. equal a "
                                                   "training input"):
        validate_store(twin, kind="sample")
    old = sample.copy()
    old.attrs = {**sample.attrs, "schema_version": "2"}
    with pytest.raises(StoreValidationError, match="schema version '2'.*reads version "
                                                   f"'{TASK_SCHEMA_VERSION}'.*Rebuild it"):
        validate_store(old)


def test_generated_instances_have_no_evaluation_point_among_training_inputs(concrete,
                                                                             gp_params):
    from postrisk.covariates.pools import shared_values

    for coverage in ("balanced", "ood"):
        s = build_sample(TaskKey("concrete", "gp", "bump", coverage, 0), concrete, gp_params, 348)
        assert shared_values(s["x_train"].values, s["x_eval"].values) == 0


def test_noise_parameters_stored_and_mean_matches(concrete, gp_params):
    s = build_sample(TaskKey("concrete", "gp", "smooth_monotone", "balanced", 1), concrete,
                     gp_params, 100)
    noise = json.loads(s.attrs["noise_model"])
    assert noise["mode"] == "smooth_monotone" and noise["noise_to_signal"] == 0.23
    assert abs(s["noise_var_eval"].values.mean() - 0.23) < 1e-10


@pytest.mark.slow
def test_stored_rhat_and_ess_are_those_of_the_stored_draws(concrete, tmp_path):
    """A BNN task store (2 chains, float64 NumPyro draws stored as float32), written and read
    back: ArviZ (its NumPy code) on the stored ``posterior_draws`` reshaped by chain gives the
    stored R̂ and ESS bit for bit."""
    import warnings

    import arviz as az
    import xarray as xr

    from postrisk.core.io import open_zarr, write_zarr_atomic
    from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior

    params = BayesianNeuralNetworkPrior().fit(
        "concrete", concrete.x, None, concrete.eval_index,
        {"hidden": 10, "reference_inputs": 65, "scale_draws": 100}, np.random.default_rng(0))
    sample = build_sample(TaskKey("concrete", "bnn", "bump", "balanced", 0), concrete, params, 40)
    task = build_task(sample, {"chains": 2, "warmup": 40, "samples": 20, "target_accept": 0.9,
                               "max_tree_depth": 10})
    store = open_zarr(write_zarr_atomic(validate_store(task, kind="task"), tmp_path / "t.zarr"))
    chains, stored = store.attrs["chains"], store["posterior_draws"].values
    assert chains == 2 and stored.dtype == np.float32
    by_chain = xr.Dataset({"f": (("chain", "draw", "eval"),
                                 stored.reshape(chains, -1, stored.shape[1]))})
    with warnings.catch_warnings(), diagnostics.arviz_numpy_code():  # as the store's
        warnings.simplefilter("ignore", FutureWarning)
        rhat = az.rhat(by_chain, method="rank")["f"].values
        ess = az.ess(by_chain, method="bulk")["f"].values
    assert np.all(np.isfinite(rhat)) and np.all(np.isfinite(ess))
    assert np.array_equal(store["rhat"].values, rhat)
    assert np.array_equal(store["ess"].values, ess)
    helper_rhat, helper_ess = diagnostics.rhat_and_ess(stored, chains)
    assert np.array_equal(helper_rhat, rhat) and np.array_equal(helper_ess, ess)
    from postrisk.tasks.recheck import recheck_diagnostics

    recorded = {name: store[name].values for name in ("rank_true", "covered90", "mcse_var",
                                                      "rhat", "ess")}
    assert recheck_diagnostics(stored, store["f_true_eval"].values, chains, recorded) == []


# -- simulation-based calibration (docs/design.md, "Reference-posterior checks") ---------------

N_SBC = 400
#: The calibrated posterior's run, whose draws the dispersion controls reuse: they need it
#: (widened / narrowed by 20% at D = 99 fail at α = 10⁻³ in 66% / 97% of designs at 400
#: instances, in over 99% at 1,000; simulated with exact Gaussian posteriors).
N_SBC_DISPERSION = 1000
D_SBC = 99  # ranks 0…99: 100 values, 10 equally likely bins


def _sbc(control: str | None, seed: int = 0, n_instances: int = N_SBC
         ) -> dict[str, posterior_checks.CalibrationTest]:
    """One random evaluation point per small GP instance; ranks of f(x) and of the data
    log-likelihood; the GP prior's own sample and posterior code paths. ``"main"``: the
    draws (of the posterior, or of ``control``); ``"widened"`` / ``"narrowed"``: the same draws
    at the point scaled about their mean by 1.2 / 0.8 (the dispersion controls of
    :func:`tests.priors.sbc_helpers.dispersion_controls`)."""
    rng = np.random.default_rng(seed)
    family = GaussianProcessPrior()
    kernel = default_kernel(("matern32", "linear"), 2)
    params = {"kernel": kernel.to_dict(), "a": 1.0}
    n_train, n_eval = 25, 15
    factors = {"main": 1.0, "widened": WIDENED, "narrowed": NARROWED}
    ranks_f, covered = ({name: [] for name in factors} for _ in range(2))
    ranks_ll = []
    for _ in range(n_instances):
        x = rng.uniform(size=(n_train + n_eval, 2))
        f = family.sample(params, x, rng)
        noise_var = rng.uniform(0.05, 0.3, size=n_train)
        y = f[n_eval:] + np.sqrt(noise_var) * rng.standard_normal(n_train)
        if control == "prior_as_posterior":
            draws = sample_prior(kernel, 1.0, x, rng, size=D_SBC)
        else:
            cond_var = 2 * noise_var if control == "noise_x2" else noise_var
            draws = family.posterior(params, x[n_eval:], y, cond_var, x[:n_eval], rng,
                                     {"draws": D_SBC}).draws
        j = rng.integers(n_eval)
        col = (j + 1 + rng.integers(n_eval - 1)) % n_eval if control == "permuted_index" else j
        for name, factor in factors.items():
            at_point = (draws[:, [col]] if factor == 1.0
                        else scale_about_mean(draws[:, [col]], factor))
            ranks_f[name].append(diagnostics.rank_of_truth(at_point, f[[j]])[0])
            covered[name].append(diagnostics.covered_central(at_point, f[[j]])[0])
        ranks_ll.append(diagnostics.loglik_rank(draws[:, n_eval:], f[n_eval:], y, noise_var))
    return {name: posterior_checks.calibration_test(
                {"f": np.array(ranks_f[name]), "loglik": np.array(ranks_ll)},
                np.array(covered[name]), D_SBC, alpha=1e-3) for name in factors}


@pytest.fixture(scope="module")
def gp_sbc():
    return _sbc(None, n_instances=N_SBC_DISPERSION)


@pytest.mark.slow
def test_gp_posterior_is_calibrated(gp_sbc):
    result = gp_sbc["main"]
    assert result.passed, result


@pytest.mark.slow
@pytest.mark.parametrize("control", ["noise_x2", "permuted_index", "prior_as_posterior"])
def test_negative_controls_fail_the_same_check(control):
    result = _sbc(control)["main"]
    assert not result.passed, result


@pytest.mark.slow
@pytest.mark.parametrize("control", ["widened", "narrowed"])
def test_posterior_widened_or_narrowed_by_20_percent_fails(gp_sbc, control):
    result = gp_sbc[control]
    print(result)
    assert (result.coverage90 > result.coverage_nominal) is (control == "widened"), result
    assert not result.passed, result


def test_provenance_of_the_gp_factors_and_the_config_digests(concrete, gp_params):
    sample = build_sample(TaskKey("concrete", "gp", "bump", "ood", 2), concrete, gp_params, 60,
                          config_digest="sample-digest")
    truth = json.loads(sample.attrs["f_true_sampler"])
    assert truth["method"] in ("cholesky", "eigh") and "jitter" in truth
    assert truth["n_unique"] == np.unique(np.concatenate(
        [sample["x_eval"].values, sample["x_train"].values]), axis=0).shape[0]
    a = build_task(sample, {"draws": 50})
    settings = json.loads(a.attrs["sampler_settings"])
    assert settings["covariance_factor"]["method"] in ("cholesky", "eigh")
    assert "jitter" in settings["covariance_factor"]
    assert settings["backend"] == "scipy" and settings["device_kind"] == "cpu"
    # the task store's own digest covers its posterior settings; the sample's is kept
    assert a.attrs["sample_config_digest"] == "sample-digest"
    b = build_task(sample, {"draws": 60})
    same = build_task(sample, {"draws": 50})
    assert a.attrs["config_digest"] != b.attrs["config_digest"]
    assert a.attrs["config_digest"] == same.attrs["config_digest"] != "sample-digest"


def test_config_digest_of_a_sample_covers_sizes_and_its_prior_section(repo):
    from postrisk.grid.config import deep_merge, load_config
    from postrisk.tasks.key import config_digest

    cfg = load_config(repo / "config.yaml")
    base = config_digest(cfg, "gp")
    assert config_digest(deep_merge(cfg, {"sizes": {"n_cap": 100}}), "gp") != base
    assert config_digest(deep_merge(cfg, {"gp_prior": {"fit_rows": 10}}), "gp") != base
    # another family's settings or the posterior do not change a GP sample
    assert config_digest(deep_merge(cfg, {"bnn_prior": {"hidden": 10}}), "gp") == base
    assert config_digest(deep_merge(cfg, {"posterior": {"gp": {"draws": 50}}}), "gp") == base


def test_exact_posterior_at_other_inputs_is_the_stored_posterior_at_x_eval(concrete, gp_params):
    """A GP instance's exact posterior anywhere (the OOD study's rows) is the posterior the
    store holds at x_eval, there; elsewhere it shrinks towards the prior where data are near
    (training inputs: below the prior variance a²k(x, x)); an HBART instance says it has only
    draws."""
    from postrisk.tasks.task import Task

    key = TaskKey("concrete", "gp", "smooth_monotone", "balanced", 0)
    task = Task(build_task(build_sample(key, concrete, gp_params, 80), {"draws": 50}))
    mean, var = task.exact_posterior_at(task.x_eval)
    np.testing.assert_allclose(mean, task.posterior_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, task.posterior_var, rtol=1e-10, atol=1e-12)
    far = task.x_train[:5] + 3.0  # outside the unit cube the data were scaled into
    _, var_far = task.exact_posterior_at(far)
    _, var_near = task.exact_posterior_at(task.x_train[:5])
    assert (var_far > var_near).all()
    with pytest.raises(ValueError, match="shape"):
        task.exact_posterior_at(task.x_eval[:, :3])
    hbart = Task(task.ds.assign_attrs(prior="hbart"))
    with pytest.raises(ValueError, match="draws at the evaluation points"):
        hbart.exact_posterior_at(task.x_eval)
