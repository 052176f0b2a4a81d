"""Simulation-based calibration of the HBART posterior (slow tier).

Instances: f* from :meth:`HeteroscedasticBartPrior.sample` (the real prior code and the
paper's prior: 200 trees), d = 2, 24 training rows with known heteroscedastic noise (SD
0.2–0.5 at a = 1: the data are informative), 4 evaluation rows; posterior from the real
:meth:`HeteroscedasticBartPrior.posterior` with reduced chains and iterations (16 chains × 8
draws = 128; same shapes for every instance: compiled once). Test quantities per instance: the
rank of f*(x) at one random evaluation point, the rank of f*'s data log-likelihood, 90%
coverage (``postrisk.evaluation.posterior_checks.calibration_test``, α = 1e-3). Negative
controls that must fail:
conditioning with the noise variance doubled (as for the GP; on the first 100 instances),
draws of another evaluation point, prior draws used as the posterior.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("bartz")

from postrisk.priors.hbart.prior import HeteroscedasticBartPrior  # noqa: E402
from tests.priors.sbc_helpers import make_instance, run_sbc  # noqa: E402

pytestmark = pytest.mark.slow

N_INSTANCES = 200
N_CONTROL = 100  # the noise control needs its own bartz runs; it fails with far fewer
D, N_TRAIN, N_EVAL = 2, 24, 4
PARAMS = {"a": 1.0, "num_trees": 200, "max_depth": 6, "base": 0.95, "power": 2.0,
          "n_cutpoints": 255}
SETTINGS = {"chains": 16, "warmup": 120, "draws_per_chain": 8, "thin": 5,
            "tempering": {"t0": 3.0, "stages": 4, "share": 0.75}}
N_DRAWS = SETTINGS["chains"] * SETTINGS["draws_per_chain"]


def _sbc(noise_var_factor: float = 1.0, prior: bool = False,
         n_instances: int = N_INSTANCES) -> dict:
    fam = HeteroscedasticBartPrior()

    def instance(seed):
        return make_instance(lambda x, rng: fam.sample(PARAMS, x, rng), seed, 2024, D,
                             N_TRAIN, N_EVAL)

    def draws_of(inst):
        x, rng = inst["x"], inst["rng"]
        if prior:
            return np.stack([fam.sample(PARAMS, x, rng) for _ in range(N_DRAWS)])
        return fam.posterior(PARAMS, x[N_EVAL:], inst["y"], inst["nv"] * noise_var_factor,
                             x[:N_EVAL], rng, SETTINGS).draws

    return run_sbc(instance, draws_of, n_instances, N_DRAWS)


@pytest.fixture(scope="module")
def calibrated():
    return _sbc()


def test_posterior_is_calibrated(calibrated):
    result = calibrated["main"]
    print(result)
    assert result.n == N_INSTANCES
    assert result.passed, result


def test_control_noise_doubled_fails():
    result = _sbc(noise_var_factor=2.0, n_instances=N_CONTROL)["main"]
    print(result)
    assert not result.passed, result


def test_control_other_point_fails(calibrated):
    result = calibrated["other_point"]
    print(result)
    assert not result.passed, result


def test_control_prior_as_posterior_fails():
    result = _sbc(prior=True)["main"]
    print(result)
    assert not result.passed, result
