import numpy as np
import pytest
from scipy.special import ndtri

from postrisk.covariates import get_dataset
from postrisk.grid import NOISE_MODES
from postrisk.tasks.noise import SHAPES, fit_noise_model, rank_gaussianise
from tests.conftest import OFFLINE_DATASETS


def test_rank_gaussianise_mid_ranks_and_clipping():
    pool = np.array([3.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(rank_gaussianise(pool, pool),
                               ndtri(np.array([2.5, 0.5, 1.5, 3.5]) / 4))
    # beyond the pool's range: the clip bounds, so far-out rows cannot explode the noise
    np.testing.assert_allclose(rank_gaussianise(np.array([-1e9, 1e9]), pool),
                               ndtri([1 / 8, 7 / 8]))
    # ties share the mid position
    np.testing.assert_allclose(rank_gaussianise(np.array([2.0]), np.array([2.0, 2.0])),
                               [0.0])


@pytest.mark.parametrize("name", OFFLINE_DATASETS)
@pytest.mark.parametrize("mode", NOISE_MODES)
def test_noise_level_and_spread(offline_covariates, name, mode):
    ds = offline_covariates[name]
    rho = get_dataset(name).noise_to_signal
    score = ds["pc1_score"].values
    pool = score[ds["eval_index"].values]
    model = fit_noise_model(mode, pool, rho)
    var_eval = model.variance(pool, pool)
    var_all = model.variance(score, pool)
    assert np.all(np.isfinite(var_all)) and np.all(var_all > 0)
    assert abs(var_eval.mean() - rho) < 1e-10
    assert rho / 2 <= np.median(var_eval) <= 2 * rho
    # bounded: z is clipped to the pool's rank range, so σ² never exceeds the shape's maximum there
    n = pool.size
    z_grid = np.linspace(ndtri(1 / (2 * n)), ndtri(1 - 1 / (2 * n)), 20001)
    h_max = np.max(SHAPES[mode](z_grid))
    bound = np.exp(model.level + model.strength * (h_max - model.shape_mean) / model.shape_sd)
    assert var_all.max() <= bound * (1 + 1e-12)
    if mode == "homoscedastic":
        assert np.ptp(var_all) < 1e-15
    else:
        # the shape is standardised over the pool: log σ² has SD = s over the evaluation pool
        assert abs(np.log(var_eval).std() - model.strength) < 1e-10


def test_shapes_have_their_form():
    pool = np.linspace(-3, 3, 1001)
    z = rank_gaussianise(pool, pool)
    up = fit_noise_model("smooth_monotone", pool, 0.3).variance(pool, pool)
    bump = fit_noise_model("bump", pool, 0.3).variance(pool, pool)
    edges = fit_noise_model("edges", pool, 0.3).variance(pool, pool)
    assert np.all(np.diff(up) > 0)
    assert np.argmax(bump) in range(495, 506) and np.argmin(edges) in range(495, 506)
    assert np.corrcoef(np.log(edges), z**2)[0, 1] > 0.999


def test_bad_inputs():
    with pytest.raises(ValueError, match="allowed"):
        fit_noise_model("bumpy", np.arange(5.0), 0.3)
    with pytest.raises(ValueError, match="positive"):
        fit_noise_model("bump", np.arange(5.0), 0.0)
