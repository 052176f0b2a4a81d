"""Simulation-based calibration of the exact GP posterior where no training input lies: the
region-excluding design (docs/design.md, "Reference-posterior checks").

Instances (:func:`tests.priors.sbc_helpers.make_instance` with ``excluded_from=0.6``): x
uniform in [0, 1]², the 24 training rows restricted to x₁ < 0.6, the 4 evaluation rows (the
random test point and the other one among them) to x₁ ≥ 0.6, known heteroscedastic noise SD
0.2 + 0.3·x₁; f* from :meth:`GaussianProcessPrior.sample` (Matérn-3/2 + linear, a = 1), the
posterior from :meth:`GaussianProcessPrior.posterior` (D = 99). 1,000 instances for the
posterior and the controls that reuse its draws, 200 for those that need a posterior of their
own (fast tier), α = 10⁻³; coverage is tested against a perfect sampler's at D = 99 (0.882).

Which negative controls have power in the excluded region: the rank of f*(x) at a point is
exactly uniform when prior draws stand in for the posterior (f* is itself a prior draw), in
any region, and doubling the noise variance barely changes an extrapolation; both fail through
the data log-likelihood rank at the training rows only (asserted). The controls that test the
excluded point itself: another evaluation point's draws, and the posterior's own draws pulled
towards their mean by 0.5 (an over-confident extrapolation, the failure an outer-shell
shortfall would be); they fail through f*(x)'s rank and coverage, the log-likelihood rank being
the calibrated posterior's. And the dispersion controls every SBC runs: the posterior's draws
at the evaluation rows widened and narrowed by 20% about their mean
(:func:`tests.priors.sbc_helpers.dispersion_controls`); each must fail the calibration test.
They need the 1,000 instances: at 200 a perfect sampler's D = 99 draws widened by 20% fail at
α = 10⁻³ in about one design in four and narrowed by 20% in two in three (simulated with
Gaussian posteriors, as the GP's are), at 1,000 in more than 99 in 100.
"""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import default_kernel
from postrisk.priors.gp.model import GaussianProcessPrior
from tests.priors.sbc_helpers import dispersion_controls, make_instance, run_sbc, scaled

N_INSTANCES, N_OWN_POSTERIOR, N_DRAWS = 1000, 200, 99
D, N_TRAIN, N_EVAL, EXCLUDED_FROM = 2, 24, 4, 0.6
SHRINK = 0.5
ALPHA = 1e-3


def _sbc(noise_var_factor: float = 1.0, prior: bool = False, controls: dict | None = None,
         n_instances: int = N_INSTANCES):
    fam = GaussianProcessPrior()
    kernel = default_kernel(("matern32", "linear"), D)
    params = {"kernel": kernel.to_dict(), "a": 1.0}

    def instance(seed):
        return make_instance(lambda x, rng: fam.sample(params, x, rng), seed, 2026, D,
                             N_TRAIN, N_EVAL, excluded_from=EXCLUDED_FROM)

    def draws_of(inst):
        x, rng = inst["x"], inst["rng"]
        if prior:
            return sample_prior(kernel, 1.0, x, rng, size=N_DRAWS)
        return fam.posterior(params, x[N_EVAL:], inst["y"], inst["nv"] * noise_var_factor,
                             x[:N_EVAL], rng, {"draws": N_DRAWS}).draws

    return run_sbc(instance, draws_of, n_instances, N_DRAWS, controls)


@pytest.fixture(scope="module")
def calibrated():
    return _sbc(controls={"shrunk": scaled(SHRINK), **dispersion_controls()})


def test_design_excludes_the_region_from_training():
    inst = make_instance(lambda x, rng: np.zeros(len(x)), 0, 2026, D, N_TRAIN, N_EVAL,
                         excluded_from=EXCLUDED_FROM)
    x = inst["x"]
    assert np.all(x[:N_EVAL, 0] >= EXCLUDED_FROM) and np.all(x[N_EVAL:, 0] < EXCLUDED_FROM)
    assert inst["point"] < N_EVAL and np.all((x >= 0) & (x <= 1))
    # the default design is unchanged: same draws, x₁ not remapped
    plain = make_instance(lambda x, rng: np.zeros(len(x)), 0, 2026, D, N_TRAIN, N_EVAL)
    assert np.array_equal(plain["x"][:, 1], x[:, 1]) and plain["point"] == inst["point"]


def test_posterior_is_calibrated_in_the_excluded_region(calibrated):
    result = calibrated["main"]
    print(result)
    assert result.n == N_INSTANCES
    assert result.passed, result


def test_control_other_point_fails_at_the_point(calibrated):
    result = calibrated["other_point"]
    print(result)
    assert min(result.rank_pvalues["f_at_x"], result.coverage_pvalue) < ALPHA, result


def test_control_overconfident_extrapolation_fails_at_the_point(calibrated):
    result = calibrated["shrunk"]
    print(result)
    assert result.coverage90 < result.coverage_nominal and result.coverage_pvalue < ALPHA, result


def test_control_widened_fails_at_the_point(calibrated):
    result = calibrated["widened"]
    print(result)
    assert result.coverage90 > result.coverage_nominal, result
    assert min(result.rank_pvalues["f_at_x"], result.coverage_pvalue) < ALPHA, result


def test_control_narrowed_fails_at_the_point(calibrated):
    result = calibrated["narrowed"]
    print(result)
    assert result.coverage90 < result.coverage_nominal, result
    assert min(result.rank_pvalues["f_at_x"], result.coverage_pvalue) < ALPHA, result


def test_control_noise_doubled_fails_through_the_data():
    result = _sbc(noise_var_factor=2.0, n_instances=N_OWN_POSTERIOR)["main"]
    print(result)
    assert result.rank_pvalues["loglik"] < ALPHA, result


def test_control_prior_as_posterior_fails_through_the_data():
    result = _sbc(prior=True, n_instances=N_OWN_POSTERIOR)["main"]
    print(result)
    assert result.rank_pvalues["loglik"] < ALPHA, result
