"""An exact check of both classification reference posteriors at n ≤ 8: NUTS against importance
sampling from the prior.

With 6 training labels the posterior is the prior reweighted by the likelihood
Π_i softmax(f(x_i)/τ_i)[y_i], so M = 200,000 prior draws of the latents at the training and the
3 evaluation rows, weighted by it (self-normalised), give E[π_k(x) | labels] and its posterior
SD to within a known Monte Carlo error (the delta method's SE of a self-normalised estimate).
The priors' NUTS posteriors (:mod:`postrisk.classification.priors`, 2 chains × (500 + 1,500)
draws) must agree with them within 4 combined standard errors (the NUTS side's from batch
means) at every (point, class). Power: the same comparison rejects the posterior conditioned on
the labels shifted by one class, and the importance-sampling means differ from the prior means
by more than the tolerance somewhere (the labels move the posterior).
"""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.classification.link import class_log_probabilities, class_probabilities
from postrisk.classification.network import NetworkWeights, network_latents
from postrisk.classification.nuts import check_settings
from postrisk.classification.priors import latent_prior
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import Kernel, default_kernel
from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior
from postrisk.tasks.diagnostics import batch_means_mcse_mean

K, N_TRAIN, N_EVAL, M = 3, 6, 3, 200_000
SETTINGS = {"chains": 2, "warmup": 500, "samples": 1500, "target_accept": 0.9,
            "max_tree_depth": 10}
Z_TOL = 4.0


def _gp_prior_draws(params: dict, amplitude: float, x: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    kernel = Kernel.from_dict(params["kernel"])
    flat = sample_prior(kernel, amplitude * params["a"], x, rng, size=M * K)
    return flat.reshape(M, K, -1).transpose(0, 2, 1)


def _bnn_prior_draws(params: dict, amplitude: float, x: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
    h, d = int(params["hidden"]), x.shape[1]
    weights = NetworkWeights(v=rng.standard_normal((M, h, K)), w=rng.standard_normal((M, h, d)),
                             c=rng.standard_normal((M, h)), b=rng.standard_normal((M, K)))
    return network_latents(x, weights, params["a"], np.asarray(params["reference_inputs"]),
                           amplitude)


@pytest.fixture(scope="module", params=["gp", "bnn"])
def problem(request) -> dict:
    rng = np.random.default_rng(8)
    x = rng.uniform(size=(N_EVAL + N_TRAIN, 2))
    tau = np.exp(0.4 * (x[:, 0] - 0.5))
    if request.param == "gp":
        params = {"kernel": default_kernel(("rbf",), 2).to_dict(), "a": 1.0}
        amplitude, prior_draws = 2.0, _gp_prior_draws
    else:
        params = BayesianNeuralNetworkPrior().fit(
            "is", rng.uniform(size=(60, 2)), None, np.arange(60),
            {"hidden": 8, "reference_inputs": 20, "scale_draws": 50}, rng)
        amplitude, prior_draws = 2.0, _bnn_prior_draws
    prior = latent_prior(request.param)
    f_true = prior.draw(params, amplitude, x, rng, K)
    probs = class_probabilities(f_true[N_EVAL:], tau[N_EVAL:])
    y = np.sum(rng.uniform(size=(N_TRAIN, 1)) > np.cumsum(probs, axis=1)[:, :-1], axis=1)
    draws = prior_draws(params, amplitude, x, np.random.default_rng(9))  # (M, rows, K)
    logp = class_log_probabilities(draws[:, N_EVAL:], tau[N_EVAL:])
    logw = logp[:, np.arange(N_TRAIN), y].sum(axis=1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    pi = class_probabilities(draws[:, :N_EVAL], tau[:N_EVAL]).reshape(M, -1)
    mean = w @ pi
    second = w @ pi**2
    # self-normalised IS: SE² ≈ Σ w_m² (g_m − ĝ)²
    se_mean = np.sqrt((w**2) @ (pi - mean) ** 2)
    se_second = np.sqrt((w**2) @ (pi**2 - second) ** 2)
    return {"name": request.param, "prior": prior, "params": params, "amplitude": amplitude,
            "x": x, "tau": tau, "y": y, "is_mean": mean, "is_se": se_mean,
            "is_sd": np.sqrt(second - mean**2), "is_second_se": se_second,
            "prior_mean": pi.mean(axis=0), "ess": 1.0 / np.sum(w**2)}


def _nuts(problem: dict, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, tau = problem["x"], problem["tau"]
    res = problem["prior"].posterior(problem["params"], problem["amplitude"], x[N_EVAL:],
                                     labels, tau[N_EVAL:], x[:N_EVAL], K, 3, SETTINGS)
    pi = class_probabilities(res.latent_eval, tau[:N_EVAL]).reshape(res.latent_eval.shape[0],
                                                                     -1)
    return pi.mean(axis=0), batch_means_mcse_mean(pi), pi


def _z(problem: dict, mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    return np.abs(mean - problem["is_mean"]) / np.sqrt(se**2 + problem["is_se"] ** 2)


def test_nuts_agrees_with_importance_sampling(problem):
    mean, se, pi = _nuts(problem, problem["y"])
    z = _z(problem, mean, se)
    print(problem["name"], "IS ESS", round(problem["ess"]), "z", np.round(z, 2))
    assert problem["ess"] > 5_000  # the weights are not degenerate
    assert np.all(z < Z_TOL), z
    # the spread too: E[π²] within 4 SEs (NUTS's by batch means)
    second, second_se = (pi**2).mean(axis=0), batch_means_mcse_mean(pi**2)
    z2 = np.abs(second - (problem["is_sd"] ** 2 + problem["is_mean"] ** 2)) / np.sqrt(
        second_se**2 + problem["is_second_se"] ** 2)
    assert np.all(z2 < Z_TOL), z2


def test_the_check_has_power(problem):
    # the labels move the posterior away from the prior by more than the tolerance
    moved = np.abs(problem["is_mean"] - problem["prior_mean"]) / problem["is_se"]
    assert moved.max() > 3 * Z_TOL, moved
    # and a posterior of other labels (each shifted by one class) is rejected
    mean, se, _ = _nuts(problem, (problem["y"] + 1) % K)
    assert _z(problem, mean, se).max() > Z_TOL


def test_the_engine_refuses_settings_it_cannot_run():
    with pytest.raises(ValueError, match="lack"):
        check_settings({"chains": 2})
    with pytest.raises(ValueError, match="target_accept"):
        check_settings({**SETTINGS, "target_accept": 1.0})
