"""The temperature field: the regression noise modes' shapes on the scale of a noise SD."""

import numpy as np
import pytest

from postrisk.classification.temperature import fit_temperature_field
from postrisk.tasks.noise import SHAPES, fit_noise_model


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    return rng.standard_normal(400), rng.standard_normal(60) * 2.0


@pytest.mark.parametrize("mode", list(SHAPES))
def test_tau_varies_as_the_regression_noise_sd_with_geometric_mean_one(scores, mode):
    """τ(x)/σ_ε(x) is one constant over every row (pool or beyond it): the temperature is the
    noise mode's SD up to its level, which here is fixed by a geometric mean of 1 over the
    pool."""
    pool, other = scores
    field = fit_temperature_field(mode, pool, strength=1.25)
    noise = fit_noise_model(mode, pool, 0.3, strength=1.25)
    rows = np.concatenate([pool, other])
    ratio = field.temperature(rows, pool) / np.sqrt(noise.variance(rows, pool))
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert np.mean(np.log(field.temperature(pool, pool))) == pytest.approx(0.0, abs=1e-12)


def test_homoscedastic_is_one_and_strength_zero_is_one(scores):
    pool, other = scores
    assert np.all(fit_temperature_field("homoscedastic", pool).temperature(other, pool) == 1.0)
    assert np.all(fit_temperature_field("bump", pool, 0.0).temperature(other, pool) == 1.0)


def test_the_shapes_put_the_noisiest_labels_where_the_noise_modes_do(scores):
    pool, _ = scores
    rows = np.array([-3.0, 0.0, 3.0])
    tau = {m: fit_temperature_field(m, pool).temperature(rows, pool) for m in SHAPES}
    assert tau["smooth_monotone"][0] < tau["smooth_monotone"][1] < tau["smooth_monotone"][2]
    assert tau["bump"][1] > max(tau["bump"][0], tau["bump"][2])
    assert tau["edges"][1] < min(tau["edges"][0], tau["edges"][2])


def test_bad_input_is_refused(scores):
    with pytest.raises(ValueError, match="unknown noise mode"):
        fit_temperature_field("wiggly", scores[0])
    with pytest.raises(ValueError, match="non-negative"):
        fit_temperature_field("bump", scores[0], -1.0)
