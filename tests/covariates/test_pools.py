import numpy as np
import pytest

from postrisk.covariates.pools import (
    covariate_groups,
    duplicate_summary,
    eval_pool_size,
    fit_principal_score,
    fit_shells,
    split_pools,
)
from tests.conftest import OFFLINE_DATASETS


@pytest.mark.parametrize("n_rows, expected", [(53940, 1500), (1503, 751), (1030, 515),
                                               (908, 454), (3000, 1500), (2999, 1499)])
def test_eval_pool_size(n_rows, expected):
    assert eval_pool_size(n_rows) == expected


def test_split_disjoint_and_complete():
    ev, cand = split_pools(np.arange(101), 50, np.random.default_rng(0))
    assert len(ev) == 50 and len(cand) == 51
    assert not set(ev) & set(cand)
    np.testing.assert_array_equal(np.sort(np.concatenate([ev, cand])), np.arange(101))


def test_split_keeps_identical_rows_on_one_side():
    rng = np.random.default_rng(5)
    base = rng.uniform(size=(300, 2))
    # 300 distinct values; value i appears 1 + (i % 4) times (1, 2, 3 or 4 rows)
    x = np.repeat(base, 1 + np.arange(300) % 4, axis=0)[rng.permutation(750)]
    groups = covariate_groups(x)
    assert duplicate_summary(groups) == {"duplicate_groups": 225,
                                         "rows_in_duplicate_groups": 675, "distinct_rows": 300}
    for seed in range(5):
        ev, cand = split_pools(groups, 375, np.random.default_rng(seed))
        assert len(ev) == 375 and len(cand) == 375
        np.testing.assert_array_equal(np.sort(np.concatenate([ev, cand])), np.arange(750))
        assert not set(map(tuple, x[ev])) & set(map(tuple, x[cand]))
    # a negative control: the row-index split puts twins on both sides
    chosen = np.random.default_rng(0).choice(750, 375, replace=False)
    rest = np.setdiff1d(np.arange(750), chosen)
    assert set(map(tuple, x[chosen])) & set(map(tuple, x[rest]))
    # every group equally likely to be evaluated, whatever its size (±5 pp over 400 splits)
    taken = np.zeros(300)
    for seed in range(400):
        ev, _ = split_pools(groups, 375, np.random.default_rng(100 + seed))
        taken[np.unique(groups[ev])] += 1
    size = np.bincount(groups)
    for k in (1, 2, 3, 4):
        assert abs(taken[size == k].mean() / 400 - 0.5) < 0.05, (k, taken[size == k].mean())
    with pytest.raises(ValueError, match="no grouped split gives exactly 3"):
        split_pools(np.array([0, 0, 1, 1, 2, 2]), 3, np.random.default_rng(0))


@pytest.mark.parametrize("name", OFFLINE_DATASETS)
def test_offline_pools_and_outer_shell_share(offline_covariates, name):
    ds = offline_covariates[name]
    ev, cand = ds["eval_index"].values, ds["candidate_index"].values
    n_rows = ds.sizes["row"]
    assert not set(ev) & set(cand), "evaluation and candidate pools share rows"
    x_all = ds["x"].values
    assert not set(map(tuple, x_all[ev])) & set(map(tuple, x_all[cand])), \
        "an evaluation row equals a candidate row"
    assert ds.attrs["duplicate_groups"] == duplicate_summary(covariate_groups(x_all))[
        "duplicate_groups"]
    assert len(ev) + len(cand) == n_rows
    assert len(ev) == min(1500, n_rows // 2)
    share = np.mean(ds["shell"].values[ev] == 4)
    assert 0.17 <= share <= 0.23, share
    # Candidate pool: quintiles by construction.
    counts = np.bincount(ds["shell"].values[cand], minlength=5) / len(cand)
    np.testing.assert_allclose(counts, 0.2, atol=0.01)
    x = ds["x"].values
    assert x.min() >= 0.0 and x.max() <= 1.0


def test_shells_match_brute_force_mahalanobis():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.2], [0, 0, 0.3]])
    shells = fit_shells(x, shrinkage=0.1)
    z = (x - x.mean(0)) / x.std(0)
    c = np.cov(z, rowvar=False)
    c_shrunk = 0.9 * c + 0.1 * np.trace(c) / 3 * np.eye(3)
    brute = np.array([np.sqrt(r @ np.linalg.solve(c_shrunk, r)) for r in z])
    np.testing.assert_allclose(shells.distance(x), brute, rtol=1e-10)
    np.testing.assert_allclose(shells.thresholds, np.quantile(brute, [0.2, 0.4, 0.6, 0.8]))
    far = x.mean(0) + 100 * x.std(0)
    assert shells.assign(far[None])[0] == 4 and shells.assign(x.mean(0)[None])[0] == 0


def test_principal_score_sign_and_direction():
    rng = np.random.default_rng(2)
    t = rng.normal(size=500)
    x = np.column_stack([-3 * t, 0.5 * t, rng.normal(scale=0.1, size=500)])
    pcs = fit_principal_score(x)
    assert pcs.loadings[np.argmax(np.abs(pcs.loadings))] > 0
    np.testing.assert_allclose(np.linalg.norm(pcs.loadings), 1.0)
    # The score is the projection on the leading eigenvector of the correlation matrix.
    z = (x - x.mean(0)) / x.std(0)
    _, vecs = np.linalg.eigh(np.cov(z, rowvar=False, bias=True))
    np.testing.assert_allclose(np.abs(pcs.loadings), np.abs(vecs[:, -1]), atol=1e-10)
    assert abs(np.corrcoef(pcs.score(x), t)[0, 1]) > 0.99


def test_shared_values_counts_distinct_values_in_both():
    from postrisk.covariates.pools import shared_values

    a = np.array([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5], [-0.0, 0.2]])
    b = np.array([[0.5, 0.5], [0.0, 0.2], [0.0, 1.0000001]])
    assert shared_values(a, b) == 2  # (0.5, 0.5) once, and −0.0 equals 0.0
    assert shared_values(a, a[:1]) == 1 and shared_values(a[:1], b) == 0
