"""The App. D.2 tables: each ablation beside the method it changes, on the instances both ran
on, and kept out of the method tables."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation.scoring import METRICS
from postrisk.report.table_builders import without_ablations
from postrisk.report.tables import build_tables

TARGETS = ("posterior_excess_risk", "posterior_variance", "pointwise_excess_risk")


def _row(method, dataset, noise, seed, delta, au_rho):
    return {"dataset": dataset, "prior": "gp", "noise": noise, "coverage": "balanced",
            "seed": seed, "heteroscedastic": True, "method": method, "kind": "method",
            "status": "ok", "spearman_eu_posterior_excess_risk": 0.5, "spearman_au": au_rho,
            "rho_eu_au_hat": 0.2 + delta,
            **{f"rho_eu_au_true_{t}": 0.2 for t in TARGETS},
            **{f"delta_ent_{t}": delta + k / 10 for k, t in enumerate(TARGETS)}}


def _scores():
    """nn_ens on 4 instances (Δ_ent 0.1, 0.2, 0.3, 0.4 + target offset), its natural-head
    ablation on the first 3 (Δ_ent +0.25 each); vlgp and its plug-in ablation on all 4."""
    rows = []
    instances = list(itertools.product(("d1", "d2"), ("smooth_monotone", "bump")))
    for i, (dataset, noise) in enumerate(instances):
        rows.append(_row("nn_ens", dataset, noise, 0, 0.1 * (i + 1), 0.6))
        if i < 3:
            rows.append(_row("nn_ens_natural_head", dataset, noise, 0, 0.1 * (i + 1) + 0.25,
                             0.5))
        rows.append(_row("vlgp", dataset, noise, 0, 0.2, 0.8))
        rows.append(_row("vlgp_plug_in_au", dataset, noise, 0, 0.05 * i, 0.7 + 0.01 * i))
    frame = pd.DataFrame(rows)
    for column in METRICS:
        if column not in frame:
            frame[column] = np.nan
    return frame


@pytest.fixture(scope="module")
def tables():
    return {t.name: t.frame for t in build_tables(_scores(), np.random.default_rng(0),
                                                  n_boot=50)}


def test_natural_heads_compare_on_the_common_instances(tables):
    frame = tables["natural_heads"].set_index("target")
    assert set(frame["method"]) == {"nn_ens"} and len(frame) == 3
    for k, target in enumerate(TARGETS):
        row = frame.loc[target]
        standard = np.mean([0.1, 0.2, 0.3]) + k / 10  # the 4th instance has no ablation
        assert row["instances"] == 3
        assert row["delta_ent"] == pytest.approx(standard)
        assert row["delta_ent_natural"] == pytest.approx(standard + 0.25)
        assert row["delta_ent_change"] == pytest.approx(0.25)
        assert row["paper_finding"] == "increases"


def test_vlgp_plug_in_rows(tables):
    frame = tables["vlgp_plug_in"].set_index("method")
    reported, plug = frame.loc["vlgp"], frame.loc["vlgp_plug_in_au"]
    assert reported["delta_ent_posterior_excess_risk"] == pytest.approx(0.2)
    assert plug["delta_ent_posterior_excess_risk"] == pytest.approx(np.mean([0, .05, .1, .15]))
    assert plug["spearman_au"] == pytest.approx(0.715)
    assert reported["paper_delta_ent_posterior_excess_risk"] == 0.21  # the paper's Table 8
    assert pd.isna(plug["paper_delta_ent_posterior_excess_risk"])


def test_ablations_stay_out_of_the_method_tables(tables):
    for name in ("scores", "metric_means", "table8"):
        methods = set(tables[name]["method"])
        assert "nn_ens" in methods or name != "table8"
        assert not methods & {"nn_ens_natural_head", "vlgp_plug_in_au"}, name


# -- NGBoost-NIG's metric: the empirical default beside the regularised Fisher ablation -------
def _metric_scores():
    """ngboost_nig and its regularised-Fisher ablation on three common instances (two
    heteroscedastic), the ablation alone on a fourth; ρ(ÊU, ÂU) and ρ(ÊU, posterior excess
    risk) by hand."""
    rows = []
    instances = [("d1", "bump", True), ("d2", "bump", True), ("d1", "homoscedastic", False),
                 ("d3", "bump", True)]
    base = {"rho_eu_au_hat": [0.9, 1.0, 0.5], "spearman_eu_posterior_excess_risk": [0.1, 0.2, 0.3]}
    ablation = {"rho_eu_au_hat": [0.7, 0.8, 0.1, 0.0],
                "spearman_eu_posterior_excess_risk": [0.4, 0.5, 0.6, -1.0]}
    for method, values in (("ngboost_nig", base), ("ngboost_nig_regularised_fisher", ablation)):
        for i, (dataset, noise, hetero) in enumerate(instances[:len(values["rho_eu_au_hat"])]):
            rows.append({"dataset": dataset, "prior": "gp", "noise": noise,
                         "coverage": "balanced", "seed": 0, "heteroscedastic": hetero,
                         "method": method, "kind": "method", "status": "ok",
                         "spearman_au": 0.5, **{k: v[i] for k, v in values.items()}})
    frame = pd.DataFrame(rows)
    for column in METRICS:
        if column not in frame:
            frame[column] = np.nan
    return frame


def test_ngboost_nig_metric_table_by_hand():
    tables = {t.name: t.frame for t in build_tables(_metric_scores(), np.random.default_rng(0),
                                                    n_boot=20)}
    frame = tables["ngboost_nig_metric"]
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["method"], row["display_name"], row["ablation"]) == (
        "ngboost_nig", "NGBoost-NIG", "ngboost_nig_regularised_fisher")
    # the common instances only (d3 is the ablation's alone); ρ(ÊU, ÂU) on the
    # heteroscedastic two, ρ(ÊU, posterior excess risk) on all three
    assert (row["instances"], row["heteroscedastic_instances"]) == (3, 2)
    assert row["rho_eu_au_hat"] == pytest.approx((0.9 + 1.0) / 2)
    assert row["rho_eu_au_hat_regularised_fisher"] == pytest.approx((0.7 + 0.8) / 2)
    assert row["spearman_eu_posterior_excess_risk"] == pytest.approx((0.1 + 0.2 + 0.3) / 3)
    assert row["spearman_eu_posterior_excess_risk_regularised_fisher"] == pytest.approx(
        (0.4 + 0.5 + 0.6) / 3)
    assert row["paper_rho_eu_au_hat"] == 1.0  # the paper's Table 8
    assert pd.isna(row["paper_spearman_eu_posterior_excess_risk"])  # not in its text
    # the ablation stays out of the method tables
    assert set(tables["scores"]["method"]) == {"ngboost_nig"}
    # a run without the ablation: the table is empty, with its columns
    empty = {t.name: t.frame for t in build_tables(
        without_ablations(_metric_scores()), np.random.default_rng(0),
        n_boot=20)}["ngboost_nig_metric"]
    assert empty.empty and "rho_eu_au_hat_regularised_fisher" in empty.columns


# -- the EU targets under the CRPS and the log score: additions beside the paper's ------------
def _with_additions(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    out = frame.copy()
    for column, metric in METRICS.items():
        if metric.addition:
            out[column] = rng.uniform(-1, 1, size=len(out))
    return out


def test_additions_leave_the_papers_tables_alone():
    """The paper's tables, bootstrap intervals included, are the same whatever the additions'
    columns hold: they are built before the additions' table on the one stream."""
    plain = {t.name: t.frame for t in build_tables(_scores(), np.random.default_rng(0),
                                                     n_boot=50)}
    added = {t.name: t.frame for t in build_tables(_with_additions(_scores(),
                                                                   np.random.default_rng(1)),
                                                     np.random.default_rng(0), n_boot=50)}
    assert list(plain) == list(added) and list(plain)[-1] == "loss_targets"
    for name in plain:
        if name not in ("loss_targets", "metrics_long"):
            pd.testing.assert_frame_equal(plain[name], added[name], obj=name)
    def paper_rows(long):
        return long[~long["metric"].map(lambda m: METRICS[m].addition)].reset_index(drop=True)

    pd.testing.assert_frame_equal(paper_rows(added["metrics_long"]),
                                  paper_rows(plain["metrics_long"]))


def test_loss_targets_rank_the_methods_per_loss_by_hand():
    """Three methods on three datasets: squared loss ranks a > b > c, the CRPS ranks them the
    other way round (τ = −1), the log score as squared loss (τ = 1)."""
    rows = []
    value = {"a": 0.9, "b": 0.5, "c": 0.1}
    for dataset in ("d1", "d2", "d3"):
        for method, rho in value.items():
            rows.append({"dataset": dataset, "prior": "gp", "noise": "bump",
                         "coverage": "balanced", "seed": 0, "heteroscedastic": True,
                         "method": method, "kind": "method", "status": "ok",
                         "spearman_eu_posterior_excess_risk": rho,
                         "spearman_eu_posterior_variance": rho,
                         "spearman_eu_crps_posterior_excess_risk": 1 - rho,
                         "spearman_eu_crps_generalized_variance": 1 - rho,
                         "spearman_eu_log_score_posterior_excess_risk": rho / 2,
                         "spearman_eu_log_score_generalized_variance": rho / 2})
    frame = pd.DataFrame(rows)
    for column in METRICS:
        if column not in frame:
            frame[column] = np.nan
    table = {t.name: t.frame for t in build_tables(frame, np.random.default_rng(0),
                                                   n_boot=20)}["loss_targets"]
    rho = table[table["statistic"] == "rho"].set_index(["loss", "eu_target", "method"])
    for target in ("posterior_excess_risk", "generalized_variance"):
        assert rho.loc[("squared", target, "a"), "rank"] == 1
        assert rho.loc[("crps", target, "a"), "rank"] == 3
        assert rho.loc[("crps", target, "c"), "mean"] == pytest.approx(0.9)
        assert rho.loc[("crps", target, "a"), "kendall_tau_vs_squared"] == pytest.approx(-1)
        assert rho.loc[("log_score", target, "b"), "kendall_tau_vs_squared"] == pytest.approx(1)
        assert rho.loc[("log_score", target, "b"), "mean"] == pytest.approx(0.25)
    assert not table.loc[table["loss"] == "squared", "addition"].any()
    assert table.loc[table["loss"] != "squared", "addition"].all()
    # three datasets: an interval over datasets
    assert rho["ci_low"].notna().all()
