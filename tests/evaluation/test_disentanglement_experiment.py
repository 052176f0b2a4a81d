"""The Disentanglement Error experiment (de Jong et al., 2024) on a regression task: uniform
subsampling (not the public code's stratified split), label permutation, determinism, the exact
ground truth of a GP task and failed fits."""

import math

import numpy as np
import pytest

from postrisk.evaluation import disentanglement_experiment as dx
from postrisk.tasks.task import Task
from tests.task_helpers import gp_task

RUNS = 2


@pytest.fixture(scope="module")
def task() -> Task:
    return gp_task()


@pytest.fixture(scope="module")
def blr_frame(task):
    return dx.run_experiment("blr", {}, task, runs=RUNS, seed=7)


def test_levels_and_kept_rows():
    assert len(dx.LABEL_NOISE_FRACTIONS) == 11 and dx.LABEL_NOISE_FRACTIONS[0] == 0.0
    assert dx.LABEL_NOISE_FRACTIONS[-1] == 1.0 and dx.LABEL_NOISE_FRACTIONS[3] == 0.3
    assert [dx.kept_rows(80, f) for f in dx.DATA_FRACTIONS] == [10, 10, 10, 20, 40, 60, 80]
    assert dx.kept_rows(5, 0.01) == 5  # the floor is capped at n
    assert dx.kept_rows(1000, 0.25) == 250
    with pytest.raises(ValueError, match="fraction"):
        dx.kept_rows(10, 1.5)


def test_subsample_rows_is_uniform_and_unstratified():
    n, fraction, draws = 200, 0.25, 2000
    rng = np.random.default_rng(0)
    y = np.sort(rng.normal(size=n))  # continuous and sorted: stratifying on y keeps every row
    k = dx.kept_rows(n, fraction)
    counts = np.zeros(n)
    y_means = np.empty(draws)
    for i in range(draws):
        idx = dx.subsample_rows(n, fraction, rng)
        assert idx.size == k == 50 and np.all(np.diff(idx) > 0)
        counts[idx] += 1
        y_means[i] = y[idx].mean()
    freq = counts / draws
    sd = math.sqrt(fraction * (1 - fraction) / draws)
    # Every row's inclusion frequency within 5 binomial SDs of f (200 rows).
    assert np.max(np.abs(freq - fraction)) < 5 * sd
    # Rows at both ends of the sorted target are kept as often as the middle ones.
    assert abs(freq[:50].mean() - freq[-50:].mean()) < 5 * sd / math.sqrt(50) * math.sqrt(2)
    # Kept rows' mean target is unbiased (SE of the mean over draws, finite population).
    se = y.std() * math.sqrt((1 - k / n) / k) / math.sqrt(draws)
    assert abs(y_means.mean() - y.mean()) < 5 * se


def test_subsample_rows_nested_for_the_same_generator_state():
    subsets = [set(dx.subsample_rows(300, f, np.random.default_rng(3)).tolist())
               for f in dx.DATA_FRACTIONS]
    assert all(a <= b for a, b in zip(subsets, subsets[1:], strict=False))
    assert len(subsets[-1]) == 300


def test_permute_labels():
    rng = np.random.default_rng(1)
    n = 101
    y = rng.normal(size=n)  # distinct values: a changed row is a moved label
    y0 = y.copy()
    np.testing.assert_array_equal(dx.permute_labels(y, 0.0, rng), y)
    assert dx.permute_labels(y, 0.0, rng) is not y
    for p in (0.1, 0.3, 0.5, 1.0):
        k = int(math.floor(p * n + 0.5))
        changed = []
        for _ in range(200):
            out = dx.permute_labels(y, p, rng)
            np.testing.assert_array_equal(np.sort(out), np.sort(y))  # multiset kept
            changed.append(int(np.sum(out != y)))
        assert max(changed) <= k
        # A uniform permutation of k items has one fixed point on average.
        assert np.mean(changed) == pytest.approx(k - 1, abs=0.5)
    np.testing.assert_array_equal(y, y0)  # the input is never changed in place
    with pytest.raises(ValueError):
        dx.permute_labels(y, -0.1, rng)


def test_run_experiment_shape_and_determinism(task, blr_frame):
    frame = blr_frame
    assert len(frame) == RUNS * 18
    assert set(frame["experiment"]) == {"data_size", "label_noise"}
    assert (frame["status"] == "ok").all() and (frame["error"] == "").all()
    assert {"method", "dataset", "prior", "noise", "coverage", "seed", "level", "run",
            "n_train", "fit_seconds", "mean_au", "mean_eu", "true_mean_au",
            "true_mean_eu"} <= set(frame.columns)
    assert frame["method"].eq("blr").all() and frame["seed"].eq(3).all()
    size = frame[frame["experiment"] == "data_size"]
    assert sorted(size.groupby("level")["n_train"].first()) == [10, 10, 10, 20, 40, 60, 80]
    assert frame[frame["experiment"] == "label_noise"]["n_train"].eq(80).all()
    again = dx.run_experiment("blr", {}, task, runs=RUNS, seed=7)
    cols = [c for c in frame.columns if c != "fit_seconds"]
    assert again[cols].equals(frame[cols])
    other = dx.run_experiment("blr", {}, task, runs=1, seed=8, label_noise_fractions=(0.5,),
                              data_fractions=(0.25,))
    assert len(other) == 2
    mine = frame[(frame["run"] == 0) & (frame["level"] == 0.5)
                 & (frame["experiment"] == "label_noise")]["mean_au"].item()
    assert other[other["experiment"] == "label_noise"]["mean_au"].item() != mine


def test_ground_truth(task, blr_frame):
    size = blr_frame[blr_frame["experiment"] == "data_size"]
    label = blr_frame[blr_frame["experiment"] == "label_noise"]
    # Nested subsets within a run: the exact posterior variance never grows with more data.
    for _, run in size.groupby("run"):
        eu = run.sort_values("level")["true_mean_eu"].to_numpy()
        assert np.all(np.diff(eu) <= 1e-12) and eu[0] > eu[-1]
    assert size["true_mean_au"].eq(float(np.mean(task.noise_var_eval))).all()
    # All rows at every label-noise level: the true EU is that of the full data everywhere,
    # equal to the task's own reference posterior variance.
    assert label["true_mean_eu"].nunique() == 1
    assert label["true_mean_eu"].iloc[0] == pytest.approx(float(np.mean(task.posterior_var)),
                                                         rel=1e-10)
    au = label.groupby("level")["true_mean_au"].agg(["first", "nunique"])
    assert (au["nunique"] == 1).all()
    assert np.all(np.diff(au["first"].to_numpy()) > 0)
    # p = 0: the data-size experiment's truth, mean σ²_ε over the evaluation points
    assert au["first"].iloc[0] == pytest.approx(float(np.mean(task.noise_var_eval)))
    assert au["first"].iloc[-1] == pytest.approx(np.var(task.y_train))


def test_summary_of_blr_and_of_the_oracle(blr_frame):
    summary = dx.disentanglement_summary(blr_frame)
    assert len(summary) == 1
    row = summary.iloc[0]
    assert row["status"] == "ok" and row["n_failed"] == 0 and row["n_fits"] == RUNS * 18
    for c in ("c_aa", "c_ea", "c_ae", "c_ee", "c_aa_true", "c_ea_true", "c_ae_true",
              "c_ee_true"):
        assert -1 <= row[c] <= 1
    assert 0 <= row["de"] <= 2 and 0 <= row["de_true"] <= 2
    # BLR's AU rises with permuted labels (the residual variance grows) and its EU with less
    # data: the two diagonal correlations are clearly positive.
    assert row["c_aa"] > 0.8 and row["c_ee"] > 0.5
    oracle = blr_frame.assign(mean_au=blr_frame["true_mean_au"],
                              mean_eu=blr_frame["true_mean_eu"])
    orow = dx.disentanglement_summary(oracle).iloc[0]
    assert orow["c_aa_true"] == 1.0 and orow["c_ee_true"] == 1.0
    # The true EU is constant across label-noise levels and the true AU across data-size
    # levels: no association (0), so the oracle's ground-truth DE is 0.
    assert orow["c_ea_true"] == 0.0 and orow["c_ae_true"] == 0.0
    assert orow["de_true"] == 0.0 and orow["status"] == "ok"


def test_summary_drops_failed_levels(blr_frame):
    frame = blr_frame.copy()
    # Level 0.01 fails in every run, 0.05 in one: the first is dropped, the second averaged
    # over the ok run.
    bad = (frame["experiment"] == "data_size") & (
        (frame["level"] == 0.01) | ((frame["level"] == 0.05) & (frame["run"] == 0)))
    frame.loc[bad, ["status", "mean_au", "mean_eu"]] = ["failed", np.nan, np.nan]
    row = dx.disentanglement_summary(frame).iloc[0]
    assert row["n_failed"] == RUNS + 1 and row["status"] == "ok"
    full = dx.disentanglement_summary(blr_frame).iloc[0]
    assert row["c_aa"] == full["c_aa"] and row["c_ee"] != full["c_ee"]
    # Fewer than three size levels left: not applicable.
    frame.loc[(frame["experiment"] == "data_size") & (frame["level"] < 0.75), "status"] = "failed"
    row = dx.disentanglement_summary(frame).iloc[0]
    assert row["status"] == "not applicable" and row["de"] is None and row["c_aa"] is None


def test_failing_method_gives_failed_rows_never_an_exception(task):
    frame = dx.run_experiment("blr", {"not_a_parameter": 1}, task, runs=1,
                              data_fractions=(0.5, 1.0), label_noise_fractions=(0.0, 1.0))
    assert len(frame) == 4 and frame["status"].eq("failed").all()
    assert frame["mean_au"].isna().all() and frame["error"].str.contains("construction").all()
    summary = dx.disentanglement_summary(frame)
    row = summary.iloc[0]
    assert row["n_failed"] == 4 and row["status"] == "not applicable"
    assert row["de"] is None and row["de_true"] is None


def test_ground_truth_needs_a_gp_task(task):
    ds = task.ds.copy()
    ds.attrs = {**ds.attrs, "prior": "bnn"}
    other = Task(ds)
    with pytest.raises(ValueError, match="GP-prior"):
        dx.run_experiment("blr", {}, other, runs=1, ground_truth=True)
    frame = dx.run_experiment("blr", {}, other, runs=1, data_fractions=(1.0,),
                              label_noise_fractions=(0.0,))
    assert "true_mean_au" not in frame.columns and len(frame) == 2
