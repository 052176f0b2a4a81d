"""Table 3 of the classification family (postrisk.families.classification.table3) on small
synthetic stores whose checks are worked out by hand: the recomputed coverage of π*, the
nominal of a perfect sampler at D, the pooled share's t-interval over instances, the seed rule
dropping a seed's GP and BNN instances alike, the rank histogram's deviation and the simplex
check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from postrisk.classification.store import ClassificationStoreError
from postrisk.families.classification.table3 import (
    RHAT_STRICT_COLUMN,
    classification_table3,
    collect,
    instance_checks,
    mark_valid,
    read_instance,
)
from postrisk.tasks.diagnostics import N_RANK_BINS
from tests.families.classification.stores import (
    CLASSES,
    UNIFORM_COVERED_POINTS,
    UNIFORM_RANKS,
    synthetic_store,
)

D = 39


def test_an_instance_row_recomputes_coverage_and_splits_the_outer_shell():
    ds = synthetic_store(UNIFORM_RANKS, outer=3, divergences=(1, 2), seconds=5.0)
    ds["covered90"][:] = False  # the stored flag is not what the row counts
    row, arrays = read_instance(ds)
    pairs = UNIFORM_RANKS.size * CLASSES
    assert row["points"] == pairs and row["draws"] == D
    assert row["covered90"] == CLASSES * UNIFORM_COVERED_POINTS
    # ranks 0, 1, 2 on the outermost shell: none covered
    assert (row["covered90_outer"], row["points_outer"]) == (0, 3 * CLASSES)
    assert row["covered90_rest"] == CLASSES * UNIFORM_COVERED_POINTS
    assert row["covered90_latent"] == CLASSES * UNIFORM_COVERED_POINTS
    assert row["corr_mean_true"] == pytest.approx(1.0)
    assert row["divergences"] == 3 and row["seconds"] == pytest.approx(5.0)
    assert np.isnan(row["max_rhat"]) and np.isnan(row["min_ess"])
    assert row["simplex_max_dev"] < 1e-6
    assert np.array_equal(np.sort(arrays["ranks"]), np.sort(np.r_[UNIFORM_RANKS,
                                                                   D - UNIFORM_RANKS]))
    assert arrays["rhat"].size == 0


def test_the_simplex_deviation_finds_a_draw_summing_to_1_01():
    ds = synthetic_store(UNIFORM_RANKS)
    draws = ds["prob_draws"].values.copy()
    draws[5, 7, 1] += np.float32(0.01)
    ds["prob_draws"] = (("draw", "eval", "class"), draws)
    row, _ = instance_checks(ds)
    assert row["simplex_max_dev"] == pytest.approx(0.01, abs=1e-6)
    with pytest.raises(ClassificationStoreError, match="prob_draws: rows off the probability"):
        read_instance(ds)


def _frame(rows):
    return pd.DataFrame(rows, columns=["dataset", "prior", "noise", "coverage", "classes",
                                       "seed", "max_rhat"])


def test_a_seed_whose_bnn_instance_did_not_converge_is_dropped_for_every_prior():
    cell = ("concrete", "homoscedastic", "balanced", 2)
    other = ("concrete", "homoscedastic", "balanced", 3)
    frame = _frame([
        (cell[0], "gp", *cell[1:], 0, np.nan), (cell[0], "bnn", *cell[1:], 0, 1.02),
        (cell[0], "gp", *cell[1:], 1, np.nan), (cell[0], "bnn", *cell[1:], 1, 1.2),
        (cell[0], "gp", *cell[1:], 2, np.nan),  # no BNN instance of seed 2: valid
        (cell[0], "bnn", *cell[1:], 3, np.nan),  # one chain: no R̂, not valid
        (other[0], "gp", *other[1:], 1, np.nan),  # another cell (K = 3): its seed 1 stays
    ])
    valid = mark_valid(frame)["valid"].tolist()
    assert valid == [True, True, False, False, True, False, True]
    assert mark_valid(frame, threshold=1.3)["valid"].tolist()[3]


def _stores():
    """GP seeds 0, 1 (cell K = 2) and BNN seeds 0 (R̂ 1.02) and 1 (R̂ 1.2: dropped with GP
    seed 1). GP seed 0 has uniform ranks (68 of 80 pairs covered), GP seed 1 every truth at
    the middle rank (all covered), BNN seed 0 uniform ranks."""
    middle = np.full(UNIFORM_RANKS.size, (D + 1) // 2)
    return [synthetic_store(UNIFORM_RANKS, seed=0, outer=3),
            synthetic_store(middle, seed=1),
            synthetic_store(UNIFORM_RANKS, prior="bnn", seed=0, chains=3, rhat=1.02,
                            divergences=(1, 0, 2)),
            synthetic_store(middle, prior="bnn", seed=1, chains=3, rhat=1.2)]


def test_table3_per_prior_over_the_valid_instances():
    instances, points = collect(_stores())
    assert instances["valid"].tolist() == [True, False, True, False]
    table = classification_table3(instances, points).set_index("prior")
    assert list(table.index) == ["gp", "bnn"]
    assert table.columns[:2].tolist() == ["instances", "instances_dropped"]
    for prior in ("gp", "bnn"):
        row = table.loc[prior]
        assert (row["instances"], row["instances_dropped"], row["draws"]) == (1, 1, D)
        pairs = UNIFORM_RANKS.size * CLASSES
        assert row["points"] == pairs
        assert row["coverage90_pooled"] == pytest.approx(UNIFORM_COVERED_POINTS
                                                         / UNIFORM_RANKS.size, abs=1e-4)
        assert row["coverage90_ci"] == "n/a" and row["nominal_within_ci"] is None
        # the D-corrected nominal: 0.9·(D − 1)/(D + 1) = 0.855 at D = 39, not 0.90
        assert row["coverage90_nominal"] == pytest.approx(0.9 * (D - 1) / (D + 1))
        # exactly uniform ranks: the histogram is the exact bin probabilities
        assert row["rank_hist_max_dev_pp"] == 0 and row["rank_hist_max_dev_pp_latent"] == 0
        assert row["rank_p_pooled_points"] == pytest.approx(1.0)
        assert row["mcse_var_pct_median"] == pytest.approx(5.0)
        assert row["corr_mean_true_median"] == pytest.approx(1.0)
        assert row["simplex_max_dev"] < 1e-6
    gp, bnn = table.loc["gp"], table.loc["bnn"]
    assert gp["coverage90_outer"] == 0 and np.isnan(bnn["coverage90_outer"])
    assert gp["coverage90_rest"] == pytest.approx(UNIFORM_COVERED_POINTS
                                                  / (UNIFORM_RANKS.size - 3), abs=1e-4)
    assert np.isnan(gp["rhat_max"]) and bnn["rhat_max"] == pytest.approx(1.02)
    assert bnn[RHAT_STRICT_COLUMN] == 0 and RHAT_STRICT_COLUMN == "rhat_share_le_1_01"
    assert bnn["ess_median"] == bnn["ess_min"] == D
    assert bnn["divergences"] == 3


def test_the_pooled_coverage_has_a_t_interval_over_instances():
    stores = _stores()
    stores[3] = synthetic_store(np.full(UNIFORM_RANKS.size, (D + 1) // 2), prior="bnn",
                                seed=1, chains=3, rhat=1.01)
    instances, points = collect(stores)
    assert instances["valid"].all()
    gp = classification_table3(instances, points).set_index("prior").loc["gp"]
    pairs = UNIFORM_RANKS.size * CLASSES
    hits = np.array([CLASSES * UNIFORM_COVERED_POINTS, pairs])
    pooled = hits.sum() / (2 * pairs)  # (68 + 80) / 160 = 0.925
    half = stats.t.ppf(0.975, 1) * np.std(hits - pooled * pairs, ddof=1) / (pairs * np.sqrt(2))
    assert gp["coverage90_pooled"] == pytest.approx(pooled, abs=1e-4)
    assert gp["coverage90_ci"] == f"{pooled - half:.3f}–{pooled + half:.3f}"
    assert gp["nominal_within_ci"]
    # the cells: one (K = 2) → its range is the pooled share
    assert gp["coverage90_range_over_cells"] == f"{pooled:.3f}–{pooled:.3f}"
    # seed 1 ranks π*_0 at (D + 1)/2 and π*_1 at one below: half its pairs in each of the two
    # middle bins, which seed 0's uniform ranks fill like every other bin
    share = (1 / N_RANK_BINS + 1 / 2) / 2
    assert gp["rank_hist_max_dev_pp"] == pytest.approx(100 * (share - 1 / N_RANK_BINS))
    assert gp["rank_p_pooled_points"] < 1e-6


def test_instances_of_one_prior_must_share_d():
    stores = [synthetic_store(UNIFORM_RANKS), synthetic_store(np.arange(42), n_draws=41,
                                                              seed=1)]
    with pytest.raises(ValueError, match="differ in the number of draws"):
        collect(stores)


def test_a_prior_without_a_valid_instance_keeps_its_row():
    stores = [synthetic_store(UNIFORM_RANKS), synthetic_store(UNIFORM_RANKS, prior="bnn",
                                                              chains=3, rhat=1.3)]
    instances, points = collect(stores)
    table = classification_table3(instances, points).set_index("prior")
    assert table.loc["bnn", "instances"] == 0 and table.loc["bnn", "instances_dropped"] == 1
    assert table.loc["gp", "instances"] == 0 and "gp" not in points
    assert np.isnan(table.loc["bnn", "coverage90_pooled"])
