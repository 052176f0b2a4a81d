"""Local distance preservation (paper App. D.4): isometries score 1, a projection less, the
implementation equals a by-definition double loop, and the evaluation-point subset."""
import math

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from postrisk.evaluation.distance_preservation import (
    local_distance_preservation,
    mean_preservation,
    n_closest_pairs,
    preservation_subset,
)


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def by_definition(x: np.ndarray, h: np.ndarray, fraction: float) -> float:
    """Double loop over i < j, the closest ⌈fraction · P⌉ input pairs, scipy's Spearman."""
    pairs = []
    for i in range(x.shape[0]):
        for j in range(i + 1, x.shape[0]):
            d_in = math.sqrt(sum((a - b) ** 2 for a, b in zip(x[i], x[j], strict=True)))
            d_feat = math.sqrt(sum((a - b) ** 2 for a, b in zip(h[i], h[j], strict=True)))
            pairs.append((d_in, d_feat))
    n_keep = math.ceil(fraction * len(pairs))
    closest = sorted(pairs, key=lambda pair: pair[0])[:n_keep]   # sorted() is stable
    return float(spearmanr([p[0] for p in closest], [p[1] for p in closest]).statistic)


@pytest.mark.parametrize("d", [1, 3, 10])
def test_isometry_scores_one(d):
    rng = np.random.default_rng(d)
    x = rng.normal(size=(120, d))
    h = x @ random_rotation(d, rng).T + rng.normal(size=d)
    assert local_distance_preservation(x, h) == pytest.approx(1.0, abs=1e-12, rel=0)


def test_scaled_isometry_into_more_dimensions_scores_one():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(150, 4))
    q = random_rotation(7, rng)[:, :4]                 # 7 × 4, orthonormal columns
    h = 3.7 * x @ q.T
    assert local_distance_preservation(x, h) == pytest.approx(1.0, abs=1e-12, rel=0)


def test_random_projection_scores_clearly_below_one():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 10))
    h = x @ rng.normal(size=(10, 2))
    value = local_distance_preservation(x, h)
    assert value is not None and value < 0.95


def test_monotone_distortion_of_all_distances_scores_one():
    """A Gaussian-kernel feature map: ‖h_i − h_j‖² = 2 − 2·exp(−‖x_i − x_j‖² / 2ℓ²), a strictly
    increasing but non-linear function of the input distance, so the ranking of all pairwise
    distances is kept."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 2))
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=-1)
    eigval, eigvec = np.linalg.eigh(np.exp(-sq / (2 * 1.5 ** 2)))
    h = eigvec * np.sqrt(np.clip(eigval, 0.0, None))
    iu = np.triu_indices(40, k=1)
    d_in = np.sqrt(sq[iu])
    d_feat = np.sqrt(((h[:, None, :] - h[None, :, :]) ** 2).sum(axis=-1))[iu]
    np.testing.assert_array_equal(rankdata(d_in), rankdata(d_feat))   # ranking kept
    assert not np.allclose(d_feat / d_in, (d_feat / d_in)[0])          # but not a scaling
    assert local_distance_preservation(x, h) == pytest.approx(1.0, abs=1e-12, rel=0)


@pytest.mark.parametrize("fraction", [0.25, 0.1, 0.5, 1.0])
def test_matches_brute_force(fraction):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 3))
    h = np.tanh(x @ rng.normal(size=(3, 5)))
    got = local_distance_preservation(x, h, closest_fraction=fraction)
    assert got == pytest.approx(by_definition(x, h, fraction), abs=1e-12, rel=0)


def test_matches_brute_force_with_tied_input_distances():
    """Points on an integer grid: many equal input distances; the stable order keeps the
    earlier pairs in pdist order, as the stable ``sorted`` of the double loop does."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(25, 2)).astype(float)
    h = np.column_stack([np.sin(x[:, 0]) + x[:, 1], rng.normal(size=25)])
    got = local_distance_preservation(x, h)
    assert got == pytest.approx(by_definition(x, h, 0.25), abs=1e-12, rel=0)


def test_not_applicable_cases():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(50, 3))
    assert local_distance_preservation(x, np.zeros((50, 4))) is None      # collapsed features
    assert local_distance_preservation(x, np.ones((50, 1))) is None
    assert local_distance_preservation(x[:1], x[:1]) is None              # no pair
    assert local_distance_preservation(x[:3], x[:3], closest_fraction=1.0) is not None
    assert local_distance_preservation(x[:3], x[:3], closest_fraction=0.5) is None  # 2 pairs


def test_keeps_ceil_of_fraction_of_pairs():
    assert n_closest_pairs(435, 0.25) == 109
    assert n_closest_pairs(30, 0.1) == 3            # not 4, despite 0.1 · 30 > 3 in floats
    assert n_closest_pairs(4, 1.0) == 4
    assert n_closest_pairs(0, 0.25) == 0


def test_mean_preservation_skips_not_applicable():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, 4))
    isometric = x @ random_rotation(4, rng).T
    projected = x @ rng.normal(size=(4, 1))
    collapsed = np.zeros((60, 2))
    expected = np.mean([1.0, local_distance_preservation(x, projected)])
    got = mean_preservation(x, [isometric, collapsed, projected])
    assert got == pytest.approx(expected, abs=1e-12)
    assert mean_preservation(x, [collapsed, collapsed]) is None
    assert mean_preservation(x, []) is None


def test_preservation_subset():
    np.testing.assert_array_equal(preservation_subset(7, 500, np.random.default_rng(0)),
                                  np.arange(7))
    np.testing.assert_array_equal(preservation_subset(500, 500, np.random.default_rng(0)),
                                  np.arange(500))
    assert preservation_subset(0, 500, np.random.default_rng(0)).size == 0
    first = preservation_subset(2000, 500, np.random.default_rng(11))
    again = preservation_subset(2000, 500, np.random.default_rng(11))
    other = preservation_subset(2000, 500, np.random.default_rng(12))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert first.dtype == np.int64 and first.size == 500
    assert np.all(np.diff(first) > 0)                    # sorted, without repeats
    assert first.min() >= 0 and first.max() < 2000


@pytest.mark.parametrize("n_points, max_points", [(-1, 500), (10, 0), (2.5, 10), (10, 3.0)])
def test_preservation_subset_rejects_bad_inputs(n_points, max_points):
    with pytest.raises(ValueError):
        preservation_subset(n_points, max_points, np.random.default_rng(0))


def test_rejects_bad_shapes_and_fraction():
    x = np.zeros((5, 2))
    with pytest.raises(ValueError, match="different numbers of points"):
        local_distance_preservation(x, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="2-D"):
        local_distance_preservation(np.zeros(5), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="2-D"):
        local_distance_preservation(x, np.zeros((5, 2, 1)))
    with pytest.raises(ValueError, match="non-finite"):
        local_distance_preservation(x, np.full((5, 2), np.nan))
    for fraction in (0.0, -0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="closest_fraction"):
            local_distance_preservation(x, x, closest_fraction=fraction)
