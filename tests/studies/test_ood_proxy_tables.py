"""The OOD study's tables from hand-made per-instance records: means, order, Kendall's W and
the paper's values beside."""

import numpy as np
import pandas as pd
import pytest

from postrisk.studies.ood_proxy.tables import (
    ground_truth_rows,
    ground_truth_table,
    record_rows,
    table11,
    table12,
)

#: Per method: AUROC all points and matched, the same on every instance but for a shift.
AUROC = {"gp": (0.90, 0.55), "nn_ens": (0.80, 0.66), "blr": (0.70, 0.50)}


def _record(shift: float) -> dict:
    methods = {m: {"auroc_eu": a + shift, "auroc_eu_matched": b + shift,
                   "auroc_total": a, "auroc_total_matched": b} for m, (a, b) in AUROC.items()}
    reference = {"auroc_mahalanobis": 0.95, "auroc_mahalanobis_matched": 0.5,
                 "auroc_knn10": 0.94, "auroc_knn10_matched": 0.52,
                 "auroc_classifier": 0.99, "auroc_classifier_matched": 0.9}
    return {"matching": {"n_matched_per_class": 100 + int(shift * 1000)},
            "reference": reference, "methods": methods}


def _key(seed: int) -> dict:
    return {"dataset": "diamonds_ideal", "prior": "gp", "noise": "smooth_monotone",
            "coverage": "balanced", "seed": seed}


@pytest.fixture
def records():
    shifts = (-0.02, 0.0, 0.0, 0.02)
    return pd.DataFrame([row for seed, s in enumerate(shifts)
                         for row in record_rows(_key(seed), _record(s))])


def test_table11_means_order_and_paper_values(records):
    table = table11(records, np.random.default_rng(0), n_boot=200)
    assert table["method"].tolist() == ["gp", "nn_ens", "blr", "mahalanobis", "knn10",
                                        "classifier"]
    gp = table.iloc[0]
    assert gp["display_name"] == "GP" and gp["n_instances"] == 4
    assert gp["auroc_all"] == pytest.approx(0.90) and gp["auroc_matched"] == pytest.approx(0.55)
    assert gp["auroc_all_ci_low"] <= 0.90 <= gp["auroc_all_ci_high"]
    assert gp["auroc_all_ci_high"] - gp["auroc_all_ci_low"] <= 0.04 + 1e-12
    assert (gp["paper_auroc_all"], gp["paper_auroc_matched"]) == (0.979, 0.566)
    maha = table.set_index("method").loc["mahalanobis"]
    assert maha["display_name"] == "Mahalanobis" and maha["auroc_matched"] == pytest.approx(0.5)
    assert (maha["paper_auroc_all"], maha["paper_auroc_matched"]) == (0.982, 0.537)
    assert table.set_index("method").loc["classifier", "paper_auroc_matched"] == 0.954
    assert gp["matched_points_per_class"] == pytest.approx(100.0)


def test_table12_agreement_and_reversal(records):
    """A benchmark ranking the methods as the OOD AUROC does gives W = 1; one ranking them in
    reverse gives W = 0 (two raters: W = (1 + ρ)/2); all four together lie between."""
    agree = pd.Series({"gp": 0.6, "nn_ens": 0.5, "blr": 0.4})
    benchmark = {"posterior_excess_risk": agree, "posterior_variance": -agree,
                 "pointwise_excess_risk": agree}
    table = table12(records, benchmark, np.random.default_rng(0), n_boot=100)
    at = table.set_index(["target", "version"])
    assert at.loc[("posterior_excess_risk", "all"), "w"] == pytest.approx(1.0)
    assert at.loc[("posterior_variance", "all"), "w"] == pytest.approx(0.0)
    assert 0.0 < at.loc[("all_four", "all"), "w"] < 1.0
    # matched: nn_ens first, then gp, then blr; against `agree` (gp, nn_ens, blr) ρ = 0.5
    assert at.loc[("posterior_excess_risk", "matched"), "w"] == pytest.approx(0.75)
    assert at.loc[("posterior_excess_risk", "all"), "paper_w"] == 0.89
    assert at.loc[("posterior_variance", "matched"), "paper_ci"] == "0.37-0.63"
    assert (table["n_methods"] == 3).all() and (table["n_instances"] == 4).all()


def test_ground_truth_table_by_hand():
    rows = []
    for seed, ratio in enumerate((1.2, 1.4, 1.6)):
        rows += ground_truth_rows(
            _key(seed), {"median_var_ratio": 2.0, "auroc_posterior_var": 0.98},
            {"median_var_ratio": ratio, "auroc_posterior_var": 0.64},
            {"gp": {"median_eu_ratio": ratio - 0.1, "partial_spearman": 0.8,
                    "partial_spearman_all_points": 0.1 * seed}})
    table = ground_truth_table(pd.DataFrame(rows), np.random.default_rng(0), n_boot=100)
    truth, gp = table.iloc[0], table.iloc[1]
    assert truth["median_ratio_matched"] == pytest.approx(1.4)
    assert (truth["median_ratio_min"], truth["median_ratio_max"]) == (1.2, 1.6)
    assert truth["auroc_all"] == pytest.approx(0.98) and truth["auroc_matched"] == 0.64
    assert (truth["paper_median_ratio"], truth["paper_auroc_matched"]) == (1.36, 0.643)
    assert gp["median_ratio_matched"] == pytest.approx(1.3)
    assert gp["partial_spearman"] == pytest.approx(0.8)  # the ID points' value
    assert gp["partial_spearman_all_points"] == pytest.approx(0.1)  # mean of 0, 0.1, 0.2
    assert pd.isna(truth["partial_spearman_all_points"])
    assert (gp["paper_median_ratio"], gp["paper_partial_spearman"]) == (1.27, 0.84)
