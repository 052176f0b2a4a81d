"""Statistics of the spectral-normalisation study (App. D.4, Tables 13–14): the bootstrap
resamples whole datasets, the fixed-effects regression recovers known coefficients, the
within-dataset Spearman removes dataset offsets, the geometric-mean ratio."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from postrisk.studies.sn_study.statistics import (
    BootstrapInterval,
    bootstrap_replicates,
    dataset_bootstrap,
    fixed_effects_ols,
    geometric_mean_ratio,
    regression_with_intervals,
    resample_datasets,
    within_dataset_spearman,
)


# -- the dataset bootstrap ----------------------------------------------------------------------
def test_bootstrap_resamples_datasets_not_instances():
    """A: 9 rows of 0, B: 1 row of 1. An instance bootstrap would give means 0, 0.1, 0.2, …;
    resampling whole datasets gives only A+A (0), A+B (0.1) and B+B (1)."""
    values = np.array([0.0] * 9 + [1.0])
    datasets = ["A"] * 9 + ["B"]
    replicates = bootstrap_replicates(values, datasets, n_boot=2000,
                                      rng=np.random.default_rng(0))
    assert replicates.shape == (2000,)
    distinct = set(np.round(replicates, 12))
    assert distinct <= {0.0, 0.1, 1.0}
    assert distinct == {0.0, 0.1, 1.0}                      # all three occur in 2000 draws
    share = {v: np.mean(np.isclose(replicates, v)) for v in (0.0, 0.1, 1.0)}
    assert share[0.1] == pytest.approx(0.5, abs=0.05)       # A+B or B+A: probability 1/2

    result = dataset_bootstrap(values, datasets, n_boot=2000, rng=np.random.default_rng(0))
    assert isinstance(result, BootstrapInterval)
    assert result.estimate == pytest.approx(0.1)
    assert (result.low, result.high) == (0.0, 1.0)
    assert (result.n, result.n_datasets) == (10, 2)


def test_resample_datasets_returns_whole_datasets():
    rng = np.random.default_rng(1)
    sizes = {"a": 3, "b": 1, "c": 5, "d": 2}
    datasets = np.array([name for name, size in sizes.items() for _ in range(size)])
    datasets = datasets[rng.permutation(datasets.size)]      # rows of a dataset not adjacent
    rows_of = {name: np.flatnonzero(datasets == name) for name in sizes}
    seen_duplicate = False
    for _ in range(200):
        indices = resample_datasets(datasets, rng)
        assert indices.dtype == np.int64
        blocks, start = [], 0
        while start < indices.size:                          # split into whole datasets
            name = datasets[indices[start]]
            block = indices[start:start + sizes[name]]
            np.testing.assert_array_equal(block, rows_of[name])
            blocks.append(name)
            start += sizes[name]
        assert len(blocks) == len(sizes)                     # K draws
        seen_duplicate |= len(set(blocks)) < len(blocks)
    assert seen_duplicate                                    # with replacement


def test_resample_datasets_is_reproducible():
    datasets = ["x", "y", "y", "z", "x"]
    first = resample_datasets(datasets, np.random.default_rng(5))
    np.testing.assert_array_equal(first, resample_datasets(datasets, np.random.default_rng(5)))


def test_bootstrap_drops_nan_and_needs_two_datasets():
    values = np.array([1.0, np.nan, 3.0, 5.0])
    result = dataset_bootstrap(values, ["A", "B", "A", "A"], rng=np.random.default_rng(0))
    assert result.estimate == pytest.approx(3.0)
    assert np.isnan(result.low) and np.isnan(result.high)
    assert (result.n, result.n_datasets) == (3, 1)           # B had only a NaN
    empty = dataset_bootstrap([np.nan], ["A"], rng=np.random.default_rng(0))
    assert np.isnan(empty.estimate) and (empty.n, empty.n_datasets) == (0, 0)


def test_bootstrap_of_a_statistic_of_rows():
    """values = row indices: a statistic of two columns (the geometric-mean NMSE ratio)."""
    rng = np.random.default_rng(2)
    datasets = np.repeat(np.arange(8), 5)
    plain = rng.lognormal(size=40)
    arm = plain * np.exp(rng.normal(-0.3, 0.1, size=40))
    result = dataset_bootstrap(np.arange(40), datasets,
                               lambda rows: geometric_mean_ratio(arm[rows], plain[rows]),
                               n_boot=500, rng=rng)
    assert result.estimate == pytest.approx(geometric_mean_ratio(arm, plain))
    assert result.low < result.estimate < result.high
    assert 0.6 < result.low and result.high < 0.85          # around exp(−0.3) ≈ 0.74


def test_bootstrap_rejects_bad_inputs():
    with pytest.raises(ValueError, match="differ in length"):
        dataset_bootstrap([1.0, 2.0], ["A"], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="level"):
        dataset_bootstrap([1.0, 2.0], ["A", "B"], rng=np.random.default_rng(0), level=1.5)
    with pytest.raises(ValueError, match="missing"):
        resample_datasets(["A", None], np.random.default_rng(0))


# -- geometric-mean ratio -----------------------------------------------------------------------
def test_geometric_mean_ratio():
    assert geometric_mean_ratio([1.0, 4.0], [2.0, 2.0]) == pytest.approx(1.0)   # 0.5 and 2
    assert geometric_mean_ratio([0.25, 3.0], [1.0, 3.0]) == pytest.approx(0.5)  # 0.25 and 1
    # non-finite or non-positive pairs are left out
    assert geometric_mean_ratio([0.25, 3.0, 0.0, np.nan, 5.0],
                                [1.0, 3.0, 1.0, 1.0, -1.0]) == pytest.approx(0.5)
    assert np.isnan(geometric_mean_ratio([0.0], [1.0]))
    with pytest.raises(ValueError):
        geometric_mean_ratio([1.0, 2.0], [1.0])


# -- within-dataset Spearman --------------------------------------------------------------------
def test_within_dataset_spearman_removes_dataset_offsets():
    """Across datasets x and y rise together (offsets 10·k); within each dataset y falls with
    x. The raw correlation is strongly positive, the within-dataset one negative."""
    rng = np.random.default_rng(3)
    datasets = np.repeat(np.arange(6), 12)
    u = rng.normal(size=datasets.size)
    x = 10.0 * datasets + u
    y = 10.0 * datasets - u + 0.1 * rng.normal(size=datasets.size)
    assert spearmanr(x, y).statistic > 0.8
    result = within_dataset_spearman(x, y, datasets)
    assert result.rho < -0.9 and result.p_value < 1e-6 and result.n == 72


def test_within_dataset_spearman_centres_groups_then_datasets():
    """With groups: each variable centred within its group, then the dataset means of the
    group-centred values removed (not the means of each (group, dataset) cell)."""
    rng = np.random.default_rng(4)
    n = 60
    frame = pd.DataFrame({"dataset": rng.integers(0, 5, n), "method": rng.integers(0, 3, n),
                          "x": rng.normal(size=n), "y": rng.normal(size=n)})
    frame.loc[3, "x"] = np.nan                                 # dropped pair
    kept = frame.dropna()
    residual = {}
    for column in ("x", "y"):
        centred = kept[column] - kept.groupby("method")[column].transform("mean")
        residual[column] = centred - centred.groupby(kept["dataset"]).transform("mean")
    expected = spearmanr(residual["x"], residual["y"])
    got = within_dataset_spearman(frame["x"], frame["y"], frame["dataset"], frame["method"])
    assert got.rho == pytest.approx(expected.statistic, abs=1e-12)
    assert got.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    assert got.n == n - 1
    cell = {c: kept[c] - kept.groupby(["method", "dataset"])[c].transform("mean")
            for c in ("x", "y")}
    assert got.rho != pytest.approx(spearmanr(cell["x"], cell["y"]).statistic, abs=1e-6)


def test_within_dataset_spearman_not_applicable():
    few = within_dataset_spearman([1.0, 2.0, np.nan], [1.0, 2.0, 3.0], ["a", "a", "a"])
    assert np.isnan(few.rho) and np.isnan(few.p_value) and few.n == 2
    # x constant within each dataset: no within-dataset variation left
    datasets = np.repeat([0, 1, 2], 4)
    flat = within_dataset_spearman(0.1 * datasets + 0.3, np.arange(12.0), datasets)
    assert np.isnan(flat.rho) and np.isnan(flat.p_value) and flat.n == 12


# -- fixed-effects regressions ------------------------------------------------------------------
TRUTH = {"a": 0.4, "b": -0.3, "c": 0.0}


def simulated(seed: int = 5, noise: float = 0.01) -> pd.DataFrame:
    """13 datasets × 15 rows: y = 0.4 a − 0.3 b + 0·c + α_dataset + ε, with a correlated with
    the dataset effect (so leaving the effects out would bias β_a)."""
    rng = np.random.default_rng(seed)
    dataset = np.repeat([f"d{k:02d}" for k in range(13)], 15)
    alpha = dict(zip(np.unique(dataset), rng.normal(0.0, 2.0, 13), strict=True))
    effect = np.array([alpha[d] for d in dataset])
    a = 0.5 * effect + rng.normal(size=dataset.size)
    b, c = rng.normal(size=dataset.size), rng.normal(size=dataset.size)
    y = 0.4 * a - 0.3 * b + 0.0 * c + effect + noise * rng.normal(size=dataset.size)
    return pd.DataFrame({"dataset": dataset, "a": a, "b": b, "c": c, "y": y})


def test_fixed_effects_ols_matches_a_hand_built_design():
    frame = simulated(noise=0.5)
    design = np.column_stack([np.ones(len(frame)), frame[["a", "b", "c"]].to_numpy(),
                              pd.get_dummies(frame["dataset"], drop_first=True).to_numpy(float)])
    beta = np.linalg.lstsq(design, frame["y"].to_numpy(), rcond=None)[0]
    got = fixed_effects_ols(frame, "y", ["a", "b", "c"])
    assert list(got) == ["a", "b", "c"]
    np.testing.assert_allclose([got["a"], got["b"], got["c"]], beta[1:4], atol=1e-12)


def test_two_effects_match_a_hand_built_design():
    """With effects (dataset, method) and unbalanced, partly empty cells the coefficients equal
    those of the full one-hot design (first levels dropped, intercept)."""
    frame = simulated(noise=0.5)
    rng = np.random.default_rng(11)
    frame["method"] = rng.choice(["m1", "m2", "m3", "m4"], size=len(frame))
    frame["y"] += frame["method"].map({"m1": 0.0, "m2": 1.0, "m3": -2.0, "m4": 0.5})
    frame = frame.iloc[rng.permutation(len(frame))[:150]]
    design = np.column_stack([np.ones(len(frame)), frame[["a", "b"]].to_numpy(),
                              pd.get_dummies(frame["dataset"], drop_first=True).to_numpy(float),
                              pd.get_dummies(frame["method"], drop_first=True).to_numpy(float)])
    beta = np.linalg.lstsq(design, frame["y"].to_numpy(), rcond=None)[0]
    for effects in (("dataset", "method"), ("method", "dataset")):
        got = fixed_effects_ols(frame, "y", ["a", "b"], effects=effects)
        np.testing.assert_allclose([got["a"], got["b"]], beta[1:3], atol=1e-12)


def test_regression_recovers_known_coefficients():
    frame = simulated()
    table = regression_with_intervals(frame, "y", ["a", "b", "c"], n_boot=400,
                                      rng=np.random.default_rng(6))
    assert list(table.columns) == ["term", "estimate", "ci_low", "ci_high", "n", "n_datasets",
                                   "n_boot_estimable"]
    assert list(table["term"]) == ["a", "b", "c"]
    for row in table.itertuples():
        truth = TRUTH[row.term]
        assert row.estimate == pytest.approx(truth, abs=0.02)
        assert row.ci_low <= truth <= row.ci_high
        assert row.ci_high - row.ci_low < 0.05
        assert (row.n, row.n_datasets, row.n_boot_estimable) == (195, 13, 400)
    without_effects = fixed_effects_ols(frame, "y", ["a", "b", "c"], effects=())
    assert abs(without_effects["a"] - 0.4) > 0.1            # the effects matter here


def test_regression_drops_incomplete_rows():
    frame = simulated()
    frame.loc[[0, 20], "b"] = np.nan
    table = regression_with_intervals(frame, "y", ["a", "b"], n_boot=50,
                                      rng=np.random.default_rng(7))
    assert set(table["n"]) == {193}
    expected = fixed_effects_ols(frame.dropna(), "y", ["a", "b"])
    np.testing.assert_allclose(table["estimate"], [expected["a"], expected["b"]], atol=1e-12)


def test_standardised_coefficients_are_those_of_z_scored_variables():
    frame = simulated(noise=0.5)
    z = frame.copy()
    for column in ("y", "a", "b", "c"):
        z[column] = (frame[column] - frame[column].mean()) / frame[column].std(ddof=0)
    expected = fixed_effects_ols(z, "y", ["a", "b", "c"])
    got = fixed_effects_ols(frame, "y", ["a", "b", "c"], standardise=True)
    for term in ("a", "b", "c"):
        assert got[term] == pytest.approx(expected[term], abs=1e-12)
        raw = fixed_effects_ols(frame, "y", ["a", "b", "c"])[term]
        scale = frame[term].std(ddof=0) / frame["y"].std(ddof=0)
        assert got[term] == pytest.approx(raw * scale, abs=1e-12)
    # one term, no effects: the standardised slope is Pearson's correlation
    alone = fixed_effects_ols(frame, "y", ["a"], effects=(), standardise=True)["a"]
    assert alone == pytest.approx(np.corrcoef(frame["a"], frame["y"])[0, 1], abs=1e-12)


def test_standardised_constant_term_is_nan():
    frame = simulated().assign(flag=1.0)
    got = fixed_effects_ols(frame, "y", ["a", "flag"], standardise=True)
    assert np.isnan(got["flag"]) and np.isfinite(got["a"])
    assert all(np.isnan(v) for v in fixed_effects_ols(frame.assign(y=2.0), "y", ["a"],
                                                      standardise=True).values())


def test_only_term_absorbed_by_the_effects_is_nan():
    frame = simulated()
    frame["level"] = frame.groupby("dataset")["a"].transform("mean")
    assert np.isnan(fixed_effects_ols(frame, "y", ["level"])["level"])
    assert np.isfinite(fixed_effects_ols(frame, "y", ["level"], effects=())["level"])


@pytest.mark.parametrize("case", ["collinear", "constant", "dataset_level", "too_few_rows"])
def test_rank_deficient_design_is_nan(case):
    frame = simulated()
    if case == "collinear":
        frame["d"] = 2.0 * frame["a"] - frame["b"]
    elif case == "constant":
        frame["d"] = 1.0                                      # collinear with the intercept
    elif case == "dataset_level":
        frame["d"] = frame.groupby("dataset")["a"].transform("mean")   # absorbed by effects
    else:
        frame = frame.groupby("dataset").head(1)              # 13 rows, 1 + 3 + 12 columns
        frame["d"] = frame["c"] ** 2
    got = fixed_effects_ols(frame, "y", ["a", "b", "d"])
    assert all(np.isnan(v) for v in got.values())
    table = regression_with_intervals(frame, "y", ["a", "b", "d"], n_boot=30,
                                      rng=np.random.default_rng(8))
    assert table["estimate"].isna().all()
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert set(table["n_boot_estimable"]) == {0}


def test_regression_intervals_need_two_datasets_and_ten_estimable_replicates():
    frame = simulated()
    one = regression_with_intervals(frame[frame["dataset"] == "d00"], "y", ["a", "b"],
                                    effects=(), n_boot=50, rng=np.random.default_rng(9))
    assert one["estimate"].notna().all()
    assert one["ci_low"].isna().all() and set(one["n_datasets"]) == {1}
    few = regression_with_intervals(frame, "y", ["a", "b"], n_boot=9,
                                    rng=np.random.default_rng(9))
    assert set(few["n_boot_estimable"]) == {9} and few["ci_low"].isna().all()


def test_regression_with_more_effects_and_duplicated_datasets():
    """Effects (dataset, method): replicates with a dataset drawn twice give each copy its own
    dataset effect, keep the method effect, and stay estimable."""
    frame = simulated()
    frame["method"] = np.tile(["m1", "m2", "m3"], len(frame) // 3)
    frame["y"] += frame["method"].map({"m1": 0.0, "m2": 1.0, "m3": -2.0})
    table = regression_with_intervals(frame, "y", ["a", "b"], effects=("dataset", "method"),
                                      n_boot=200, rng=np.random.default_rng(10))
    assert set(table["n_boot_estimable"]) == {200}
    for row in table.itertuples():
        assert row.estimate == pytest.approx(TRUTH[row.term], abs=0.02)
        assert row.ci_low <= TRUTH[row.term] <= row.ci_high


def test_regression_rejects_missing_columns():
    with pytest.raises(ValueError, match="lacks"):
        fixed_effects_ols(simulated(), "y", ["a", "nope"])
    with pytest.raises(ValueError, match="dataset column"):
        regression_with_intervals(simulated(), "y", ["a"], effects=(), n_boot=5,
                                  rng=np.random.default_rng(0), dataset_column="nope")
