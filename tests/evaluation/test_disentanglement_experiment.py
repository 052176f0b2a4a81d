"""The Disentanglement Error experiment (de Jong et al., 2024) on a regression task: uniform
subsampling (not the public code's stratified split), label permutation, determinism, the exact
ground truth of a GP task and failed fits."""

import math

import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation import disentanglement_experiment as dx
from postrisk.evaluation.disentanglement import disentanglement_correlations
from postrisk.grid.artefacts import artefact
from postrisk.grid.config import ConfigError, load_config, validate_config
from postrisk.methods.runner import run_fit
from postrisk.report.table_builders import TableInputs
from postrisk.report.table_builders import disentanglement as de_table
from postrisk.tasks.key import KEY_COLUMNS
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


# -- the score column and the "score" definition (the public package's) ----------------------
#: The summary's columns before the score definition was added, in their order.
LEVEL_COLUMNS = ["method", *KEY_COLUMNS, "c_aa", "c_ea", "c_ae", "c_ee", "de", "c_aa_true",
                 "c_ea_true", "c_ae_true", "c_ee_true", "de_true", "n_fits", "n_failed",
                 "status"]
SCORE_COLUMNS = ["definition", "de_headline", "c_aa_score", "c_ea_score", "c_ae_score",
                 "c_ee_score", "de_score", "n_runs_score"]


def test_eval_targets_are_one_fixed_noisy_draw(task):
    y = dx.eval_targets(task, 7)
    np.testing.assert_array_equal(y, dx.eval_targets(task, 7))
    assert not np.allclose(y, dx.eval_targets(task, 8))
    z = (y - task.f_true_eval) / np.sqrt(task.noise_var_eval)  # standard normal, 40 points
    assert abs(z.mean()) < 4 / math.sqrt(z.size) and 0.5 < z.std() < 1.5
    ds = task.ds.assign(y_eval=(("eval",), np.arange(z.size, dtype=float)))
    np.testing.assert_array_equal(dx.eval_targets(Task(ds), 7), np.arange(z.size))


def test_score_is_one_minus_mae_on_the_test_targets(task, blr_frame):
    assert np.isfinite(blr_frame["score"]).all()
    y_eval = dx.eval_targets(task, 7)
    for experiment, level, run in (("data_size", 0.25, 0), ("label_noise", 0.5, 1)):
        rng = dx._data_rng(7, run, experiment)
        if experiment == "data_size":
            idx = dx.subsample_rows(task.x_train.shape[0], level, rng)
            x_fit, y_fit, y_test = task.x_train[idx], task.y_train[idx], y_eval
        else:
            x_fit, y_fit = task.x_train, dx.permute_labels(task.y_train, level, rng)
            # the same fraction of the test targets is permuted, from its own stream
            y_test = dx.permute_labels(y_eval, level, np.random.default_rng(
                np.random.SeedSequence([7, run, 3])))
            assert np.sum(y_test != y_eval) > 10
        record = run_fit("blr", {}, x_fit, y_fit, task.x_eval,
                         random_state=dx._fit_seed(7, run, experiment, level))
        row = blr_frame[(blr_frame["experiment"] == experiment) & (blr_frame["level"] == level)
                        & (blr_frame["run"] == run)]
        assert row["score"].item() == pytest.approx(
            1 - np.mean(np.abs(record.mean - y_test)), abs=1e-12)
    # p = 0 and f = 1 both fit every clean row and score on unpermuted targets
    label = blr_frame[(blr_frame["experiment"] == "label_noise") & (blr_frame["level"] == 0.0)]
    size = blr_frame[(blr_frame["experiment"] == "data_size") & (blr_frame["level"] == 1.0)]
    np.testing.assert_allclose(label["score"], size["score"], rtol=1e-10)
    worst = blr_frame[(blr_frame["experiment"] == "label_noise") & (blr_frame["level"] == 1.0)]
    assert (worst["score"].to_numpy() < label["score"].to_numpy()).all()


def _hand_score_summary(frame: pd.DataFrame) -> dict:
    """The package's procedure written out: per run, np.corrcoef of each experiment's mean u
    with the negated score across its ok levels, the DE by hand, then means over runs."""
    per_run = []
    ok = frame[frame["status"] == "ok"]
    for _, run in ok.groupby("run"):
        c = []
        for experiment in ("label_noise", "data_size"):
            sub = run[run["experiment"] == experiment].sort_values("level")
            for u in ("mean_au", "mean_eu"):
                c.append(float(np.corrcoef(sub[u], -sub["score"])[0, 1]))
        c_aa, c_ea, c_ae, c_ee = c
        de = (abs(1 - c_aa) + abs(c_ea) + abs(c_ae) + abs(1 - c_ee)) / 4
        per_run.append((c_aa, c_ea, c_ae, c_ee, de))
    keys = ("c_aa_score", "c_ea_score", "c_ae_score", "c_ee_score", "de_score")
    return {**dict(zip(keys, np.mean(per_run, axis=0), strict=True)), "n": len(per_run)}


def test_summary_carries_both_definitions(blr_frame):
    summary = dx.disentanglement_summary(blr_frame)
    assert list(summary.columns) == LEVEL_COLUMNS + SCORE_COLUMNS
    row = summary.iloc[0]
    # the level definition, unchanged: per level the run means, one correlation per experiment
    label = blr_frame[blr_frame["experiment"] == "label_noise"].groupby("level").mean(
        numeric_only=True)
    size = blr_frame[blr_frame["experiment"] == "data_size"].groupby("level").mean(
        numeric_only=True)
    direct = disentanglement_correlations(label.index, label["mean_au"], label["mean_eu"],
                                          size.index, size["mean_au"], size["mean_eu"])
    for key, value in direct.items():
        assert row[key] == value
    without = dx.disentanglement_summary(blr_frame.drop(columns="score"))
    pd.testing.assert_frame_equal(without[LEVEL_COLUMNS], summary[LEVEL_COLUMNS])
    assert without["n_runs_score"].item() == 0 and without["de_score"].item() is None
    # the score definition, by hand
    hand = _hand_score_summary(blr_frame)
    assert row["n_runs_score"] == hand.pop("n") == RUNS
    for key, value in hand.items():
        assert row[key] == pytest.approx(value, abs=1e-12), key
    assert row["de_score"] != pytest.approx(row["de"], abs=1e-6)
    # the headline follows the setting; nothing else changes
    assert row["definition"] == "level" and row["de_headline"] == row["de"]
    scored = dx.disentanglement_summary(blr_frame, definition="score")
    assert scored["definition"].item() == "score"
    assert scored["de_headline"].item() == scored["de_score"].item() == row["de_score"]
    pd.testing.assert_frame_equal(scored.drop(columns=["definition", "de_headline"]),
                                  summary.drop(columns=["definition", "de_headline"]))
    with pytest.raises(ValueError, match="definition"):
        dx.disentanglement_summary(blr_frame, definition="package")


def test_score_summary_drops_a_failed_level_from_its_run_only(blr_frame):
    frame = blr_frame.copy()
    bad = (frame["experiment"] == "label_noise") & (frame["level"] == 0.3) & (frame["run"] == 1)
    frame.loc[bad, ["status", "mean_au", "mean_eu", "score"]] = ["failed"] + [np.nan] * 3
    row = dx.disentanglement_summary(frame).iloc[0]
    hand = _hand_score_summary(frame)
    assert row["n_runs_score"] == hand.pop("n") == RUNS
    for key, value in hand.items():
        assert row[key] == pytest.approx(value, abs=1e-12), key
    # a score constant across one run's data-size levels: that run is left out
    flat = blr_frame.copy()
    flat.loc[(flat["experiment"] == "data_size") & (flat["run"] == 0), "score"] = 0.5
    row = dx.disentanglement_summary(flat).iloc[0]
    hand = _hand_score_summary(blr_frame[blr_frame["run"] == 1])
    assert row["n_runs_score"] == 1 and row["status"] == "ok"
    assert row["de_score"] == pytest.approx(hand["de_score"], abs=1e-12)


def test_table_builder_and_caption_carry_the_definition(blr_frame):
    table = de_table(TableInputs(pd.DataFrame(), disentanglement=(blr_frame,),
                                 definition="score"), np.random.default_rng(0))
    assert table["definition"].item() == "score"
    assert table["de_headline"].item() == table["de_score"].item()
    assert {"de", "de_true", "de_score"} <= set(table.columns)
    default = de_table(TableInputs(pd.DataFrame(), disentanglement=(blr_frame,)),
                       np.random.default_rng(0))
    assert default["de_headline"].item() == default["de"].item()
    caption = artefact("disentanglement").caption_for({"correlation": "spearman",
                                                       "definition": "score"})
    assert '"score" definition' in caption and "spearman correlation" in caption


def test_config_definition_setting(repo):
    paper = load_config(repo / "config.yaml")
    assert paper["disentanglement"]["definition"] == "level"
    settings = paper["disentanglement"]
    assert validate_config(dict(paper, disentanglement=dict(settings, definition="score")))
    with pytest.raises(ConfigError, match="disentanglement.definition.*allowed values: level"):
        validate_config(dict(paper, disentanglement=dict(settings, definition="package")))
    missing = {k: v for k, v in settings.items() if k != "definition"}
    with pytest.raises(ConfigError, match="definition"):
        validate_config(dict(paper, disentanglement=missing))
