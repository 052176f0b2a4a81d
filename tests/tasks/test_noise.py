import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import ndtri

from postrisk.covariates import get_dataset
from postrisk.grid.vocabulary import NOISE_MODES
from postrisk.tasks.noise import SHAPES, fit_noise_model, rank_gaussianise
from tests.conftest import OFFLINE_DATASETS


def _clipped_normal_mean(g, a: float) -> float:
    """E g(clip(Z, −a, a)) for Z ~ N(0, 1), by quadrature."""
    inside = integrate.quad(lambda z: g(z) * stats.norm.pdf(z), -a, a, limit=200)[0]
    return inside + stats.norm.sf(a) * (g(a) + g(-a))


def clipped_normal_median_ratio(mode: str, strength: float, n: int) -> float:
    """median σ² / ρ that the design gives when z is a standard normal clipped at the rank
    range of a pool of n (an independent, continuous version of the pool's mid-rank scores)."""
    a = ndtri(1 - 1 / (2 * n))
    h = SHAPES[mode]
    mean = _clipped_normal_mean(h, a)
    sd = np.sqrt(_clipped_normal_mean(lambda z: (h(z) - mean) ** 2, a))
    normaliser = _clipped_normal_mean(lambda z: np.exp(strength * (h(z) - mean) / sd), a)
    # h is monotone in z (smooth_monotone) or in |z| (bump, edges): its median is h at z's or |z|'s
    z_median = 0.0 if mode == "smooth_monotone" else stats.norm.ppf(0.75)
    return float(np.exp(strength * (h(z_median) - mean) / sd) / normaliser)


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
    # the median: what the design gives for a clipped normal score (15%: the pool's discrete
    # ranks against the continuous score; `edges` at s = 1.25, whose mean rests on its last
    # ranks, is the loosest, 0.88). At the configured strength the median noise variance is
    # ≈ 0.46ρ (smooth_monotone), ≈ 0.88ρ (bump) and 0.03–0.10ρ (edges): docs/design.md.
    if mode != "homoscedastic":
        expected = clipped_normal_median_ratio(mode, model.strength, pool.size)
        assert abs(np.median(var_eval) / rho / expected - 1) < 0.15
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


@pytest.mark.parametrize("mode", ["smooth_monotone", "bump", "edges"])
def test_median_by_quadrature_detects_another_strength(mode):
    """Negative control for the median check: the pool's median at s = 1.25 is far from the
    quadrature at s = 0.5 (edges, smooth) or 2 (bump), so the check can tell strengths apart."""
    pool = np.linspace(0.0, 1.0, 515)
    median = np.median(fit_noise_model(mode, pool, 1.0, 1.25).variance(pool, pool))
    assert abs(median / clipped_normal_median_ratio(mode, 1.25, pool.size) - 1) < 0.15
    other = 2.0 if mode == "bump" else 0.5
    assert abs(median / clipped_normal_median_ratio(mode, other, pool.size) - 1) > 0.15


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
