"""Pooled posterior checks: the calibration test accepts calibrated and rejects overconfident
draws; Table 3's pooled coverage and columns."""
import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation import posterior_checks
from postrisk.tasks import diagnostics


def test_calibration_test_accepts_calibrated_and_rejects_overconfident():
    rng = np.random.default_rng(2)
    n, d = 400, 99
    f = rng.normal(size=n)
    good = rng.normal(size=(d, n))
    bad = 0.5 * rng.normal(size=(d, n))  # too narrow
    for draws, should_pass in ((good, True), (bad, False)):
        test = posterior_checks.calibration_test({"f": diagnostics.rank_of_truth(draws, f)},
                                       diagnostics.covered_central(draws, f), d)
        assert test.passed is should_pass, test


def test_table3_pooled_coverage_and_columns():
    rng = np.random.default_rng(3)
    inst = pd.DataFrame({"prior": "gp", "dataset": ["a", "a", "b", "b"],
                         "noise": "bump", "coverage": "ood", "seed": [0, 1, 0, 1],
                         "n_eval": [100, 100, 200, 200], "covered90": [90, 80, 180, 190],
                         "corr_mean_ftrue": [0.9, 0.95, 0.97, 0.99]})
    points = {"gp": {"rank_hist": np.full(20, 0.05), "rank_expected": np.full(20, 0.05),
                     "mcse_var": np.full(10, 0.04)}}
    table = posterior_checks.table3(inst, points, rng)
    row = table.iloc[0]
    assert row["coverage90_pooled"] == pytest.approx(540 / 600)
    assert row["coverage90_range_over_cells"] == "0.850–0.925"
    assert row["mcse_var_pct_median"] == 4.0 and row["paper_coverage90_pooled"] == 0.899
