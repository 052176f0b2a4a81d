"""Simulation-based calibration of the BNN posterior (slow tier).

Instances: the prior exactly as specified (H = 50, standard normal weights, R = 65 reference
inputs and the scale constant ``a`` from :meth:`BayesianNeuralNetworkFamily.fit` on a pool of
100 rows), d = 1, 16 training rows with known heteroscedastic noise (SD 0.2–0.5, against a
prior SD of f ≈ 1: the data are informative), 4 evaluation rows; f* from
:meth:`BayesianNeuralNetworkFamily.sample` and the posterior from the real
:meth:`BayesianNeuralNetworkFamily.posterior` with reduced iterations (2 chains × (100 warm-up
+ 50 draws), every 2nd draw kept: D = 50; same shapes for every instance: compiled once).
Test quantities per instance: the rank of f*(x) at one random evaluation point, the rank of
f*'s data log-likelihood, 90% coverage (``postrisk.checks.calibration_test``, α = 1e-3).
Negative controls that must fail: conditioning with the noise variance doubled, as for the GP
and HBART (on the first 100 instances: the log-likelihood rank has power to spare), draws of
another evaluation point, prior draws used as the posterior.
"""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.checks import calibration_test, covered_central, loglik_rank
from postrisk.priors.bnn import BayesianNeuralNetworkFamily

pytestmark = pytest.mark.slow

N_INSTANCES, N_NOISE_CONTROL = 200, 100
D, N_TRAIN, N_EVAL, N_POOL = 1, 16, 4, 100
FIT_SETTINGS = {"hidden": 50, "reference_inputs": 65, "scale_draws": 100}
SETTINGS = {"chains": 2, "warmup": 100, "samples": 50, "target_accept": 0.9,
            "max_tree_depth": 10}
THIN = 2
N_DRAWS = SETTINGS["chains"] * SETTINGS["samples"] // THIN


@pytest.fixture(scope="module")
def params() -> dict:
    rng = np.random.default_rng(2024)
    pool = rng.uniform(size=(N_POOL, D))
    return BayesianNeuralNetworkFamily().fit("sbc", pool, None, np.arange(N_POOL),
                                             FIT_SETTINGS, rng, lambda _: None)


def _instance(params: dict, seed: int) -> dict:
    fam = BayesianNeuralNetworkFamily()
    rng = np.random.default_rng([seed, 2025])
    x = rng.uniform(size=(N_EVAL + N_TRAIN, D))
    f = fam.sample(params, x, rng)
    sd = 0.2 + 0.3 * x[N_EVAL:, 0]  # known heteroscedastic noise
    y = f[N_EVAL:] + sd * rng.standard_normal(N_TRAIN)
    return {"x": x, "f": f, "nv": sd**2, "y": y, "point": int(rng.integers(N_EVAL)),
            "other": int(rng.integers(1, N_EVAL)), "rng": rng}


def _checks(draws: np.ndarray, inst: dict, point: int) -> tuple[int, int, bool]:
    f, j = inst["f"], inst["point"]
    rank = int(np.sum(draws[:, point] < f[j]))
    ll = loglik_rank(draws[:, N_EVAL:], f[N_EVAL:], inst["y"], inst["nv"])
    cov = bool(covered_central(draws[:, [point]], f[[j]])[0])
    return rank, ll, cov


def _sbc(params: dict, n_instances: int = N_INSTANCES, noise_var_factor: float = 1.0,
         prior: bool = False) -> dict:
    """Calibration tests over the instances: ``"main"`` (the random evaluation point) and
    ``"other_point"`` (f* at that point ranked among the draws of another one)."""
    fam = BayesianNeuralNetworkFamily()
    out: dict[str, list] = {key: [] for key in ("main", "other_point")}
    for seed in range(n_instances):
        inst = _instance(params, seed)
        x, rng = inst["x"], inst["rng"]
        if prior:
            draws = np.stack([fam.sample(params, x, rng) for _ in range(N_DRAWS)])
        else:
            res = fam.posterior(params, x[N_EVAL:], inst["y"], inst["nv"] * noise_var_factor,
                                x[:N_EVAL], rng, SETTINGS, lambda _: None)
            # chain-major: thinning every chain keeps whole chains consecutive
            draws = res.draws.reshape(SETTINGS["chains"], SETTINGS["samples"], -1)[:, ::THIN]
            draws = draws.reshape(N_DRAWS, -1)
        out["main"].append(_checks(draws, inst, inst["point"]))
        out["other_point"].append(
            _checks(draws, inst, (inst["point"] + inst["other"]) % N_EVAL))
    results = {}
    for key, rows in out.items():
        ranks, lls, covs = (np.array(v) for v in zip(*rows, strict=True))
        results[key] = calibration_test({"f_at_x": ranks, "loglik": lls}, covs, N_DRAWS,
                                        alpha=1e-3)
    return results


@pytest.fixture(scope="module")
def calibrated(params):
    return _sbc(params)


def test_posterior_is_calibrated(calibrated):
    result = calibrated["main"]
    print(result)
    assert result.n == N_INSTANCES
    assert result.passed, result


def test_control_noise_doubled_fails(params):
    result = _sbc(params, n_instances=N_NOISE_CONTROL, noise_var_factor=2.0)["main"]
    print(result)
    assert not result.passed, result


def test_control_other_point_fails(calibrated):
    result = calibrated["other_point"]
    print(result)
    assert not result.passed, result


def test_control_prior_as_posterior_fails(params):
    result = _sbc(params, prior=True)["main"]
    print(result)
    assert not result.passed, result
