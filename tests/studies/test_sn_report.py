"""The SN study's tables and figure (paper App. D.4) from hand-made records with known effects:
SN raises NN-Lap's preservation by exactly 0.2 and its ρ_var by 0.1 and halves its NMSE."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from postrisk.studies.sn_study.tables import (
    RECORD_COLUMNS,
    figure10_frame,
    mediation,
    paired_differences,
    sn_records,
    table13,
    table14,
    write_sn_study,
)

DATASETS = ("concrete", "diamonds", "wine")
PRIORS = ("gp", "bnn")
SEEDS = (0, 1)
METHODS = ("nn_lap", "nn_ens")
CONDITION = {"noise": "smooth_monotone", "coverage": "balanced"}
KEYS = ["dataset", "prior", "noise", "coverage", "seed"]
#: NN-Lap's arms relative to plain: (Δρ_risk, Δρ_var, Δpres, NMSE factor, Δdepth).
LAP_EFFECTS = {"sn": (0.05, 0.1, 0.2, 0.5, 1), "wd": (0.02, 0.03, 0.0, 0.8, 0)}
#: The failed fit: NN-Ens, WD, on this instance.
FAILED = ("wine", "bnn", 1)


def _plain(i: int, d: int, method: str) -> dict:
    m = METHODS.index(method)
    return {"rho_risk": 0.30 + 0.05 * d + 0.01 * i + 0.1 * m,
            "rho_var": 0.40 + 0.03 * d - 0.02 * (i % 3) + 0.05 * m,
            "preservation": 0.50 + 0.04 * ((i * 7) % 5) - 0.05 * d,
            "nmse": 0.10 * (1 + 0.1 * i) * (1 + d),
            "n_blocks": 1 + (i * 5) % 3, "width": 64 * (1 + i % 2), "n_epochs": 100 + 10 * i,
            "grad_steps": 1000 + 37 * ((i * 3) % 7)}


def _record_frame() -> pd.DataFrame:
    noise = np.random.default_rng(7)
    rows = []
    i = 0
    for d, dataset in enumerate(DATASETS):
        for prior in PRIORS:
            for seed in SEEDS:
                i += 1
                for method in METHODS:
                    base = _plain(i, d, method)
                    for arm in ("plain", "sn", "wd"):
                        v = dict(base)
                        if arm != "plain" and method == "nn_lap":
                            dr, dv, dp, f, dd = LAP_EFFECTS[arm]
                            v["rho_risk"] += dr
                            v["rho_var"] += dv
                            v["preservation"] += dp
                            v["nmse"] *= f
                            v["n_blocks"] += dd
                        elif arm != "plain":
                            e = noise.normal(0.0, 0.05, 3)
                            v["rho_risk"] += e[0]
                            v["rho_var"] += e[1] - 0.02
                            v["preservation"] += 0.15 + e[2]
                            v["nmse"] *= float(np.exp(noise.normal(-0.2, 0.1)))
                        status, error = "ok", ""
                        if (method, arm, (dataset, prior, seed)) == ("nn_ens", "wd", FAILED):
                            status, error = "failed", "diverged"
                            v = {k: np.nan for k in v}
                        rows.append({"dataset": dataset, "prior": prior, **CONDITION,
                                     "seed": seed, "method": method, "arm": arm,
                                     "status": status, "error": error, **v,
                                     "preservation_points": 500, "batch_size": 64,
                                     "sn_coeff": 1.5 if arm == "sn" else np.nan,
                                     "weight_decay": 0.1 if arm == "wd" else 1e-4,
                                     "learning_rate": 1e-3, "fit_seconds": 2.0})
    return pd.DataFrame(rows)[list(RECORD_COLUMNS)]


def _scores(records: pd.DataFrame) -> pd.DataFrame:
    """Benchmark score rows: the plain arm's ρ for the study's methods, SNGP-Het and a
    reference row, and one instance that is not in the study."""
    plain = records[(records["arm"] == "plain") & (records["status"] == "ok")]
    rows = [{**{k: r[k] for k in KEYS}, "method": r["method"], "kind": "method",
             "status": "ok", "spearman_eu_posterior_excess_risk": r["rho_risk"],
             "spearman_eu_posterior_variance": r["rho_var"]} for _, r in plain.iterrows()]
    for j, (_, r) in enumerate(plain[plain["method"] == "nn_lap"].iterrows()):
        key = {k: r[k] for k in KEYS}
        rows.append({**key, "method": "sngp_het", "kind": "method", "status": "ok",
                     "spearman_eu_posterior_excess_risk": 0.6 + 0.01 * j,
                     "spearman_eu_posterior_variance": 0.7})
        rows.append({**key, "method": "oracle", "kind": "reference", "status": "ok",
                     "spearman_eu_posterior_excess_risk": 1.0,
                     "spearman_eu_posterior_variance": 1.0})
    rows.append({"dataset": "elsewhere", "prior": "gp", **CONDITION, "seed": 0,
                 "method": "nn_lap", "kind": "method", "status": "ok",
                 "spearman_eu_posterior_excess_risk": -1.0,
                 "spearman_eu_posterior_variance": -1.0})
    return pd.DataFrame(rows)


def _write_records(frame: pd.DataFrame, folder) -> list:
    """One CSV per (method, condition), as the fitting stage writes them."""
    paths = []
    for (method, dataset, prior), group in frame.groupby(["method", "dataset", "prior"]):
        path = folder / f"{method}_{dataset}_{prior}.csv"
        group.to_csv(path, index=False)
        paths.append(path)
    return paths


@pytest.fixture
def records(tmp_path) -> pd.DataFrame:
    return sn_records(_write_records(_record_frame(), tmp_path))


@pytest.fixture
def diffs(records) -> pd.DataFrame:
    return paired_differences(records)


def test_records_are_validated(tmp_path):
    frame = _record_frame().drop(columns="grad_steps")
    path = tmp_path / "broken.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"broken\.csv.*grad_steps"):
        sn_records([path])


def test_paired_differences_by_hand(records, diffs):
    assert len(records) == 3 * 2 * 2 * 2 * 3
    assert len(diffs) == 12 * 4 - 1                       # the failed WD fit has no pair
    lap_sn = diffs[(diffs["method"] == "nn_lap") & (diffs["arm"] == "sn")]
    assert len(lap_sn) == 12 and (lap_sn["display_name"] == "NN-Lap").all()
    np.testing.assert_allclose(lap_sn["delta_preservation"], 0.2, atol=1e-12)
    np.testing.assert_allclose(lap_sn["delta_rho_var"], 0.1, atol=1e-12)
    np.testing.assert_allclose(lap_sn["delta_rho_risk"], 0.05, atol=1e-12)
    np.testing.assert_allclose(lap_sn["log_nmse_ratio"], np.log(0.5), atol=1e-12)
    assert (lap_sn["delta_depth"] == 1).all() and (lap_sn["sn"] == 1).all()
    # one NN-Ens row by hand
    key = {"dataset": "diamonds", "prior": "gp", "seed": 1}
    pick = records.copy()
    for k, v in key.items():
        pick = pick[pick[k] == v]
    pick = pick[pick["method"] == "nn_ens"].set_index("arm")
    row = diffs.merge(pd.DataFrame([key]), on=list(key))
    row = row[(row["method"] == "nn_ens") & (row["arm"] == "wd")].iloc[0]
    assert row["sn"] == 0
    assert row["delta_rho_risk"] == pytest.approx(pick.loc["wd", "rho_risk"]
                                                  - pick.loc["plain", "rho_risk"])
    assert row["log_nmse_ratio"] == pytest.approx(np.log(pick.loc["wd", "nmse"]
                                                         / pick.loc["plain", "nmse"]))
    for column in ("n_blocks", "width", "n_epochs", "grad_steps", "preservation"):
        assert row[f"plain_{column}"] == pytest.approx(pick.loc["plain", column])


def test_table13_means_ratios_intervals_and_paper(records, diffs):
    table = table13(diffs, np.random.default_rng(0), n_boot=300)
    assert table["method"].tolist() == ["NN-Lap"] * 2 + ["NN-Ens"] * 2 + ["All (pooled)"] * 2
    assert table["arm"].tolist() == ["sn", "wd"] * 3
    rows = table.set_index(["method", "arm"])
    lap = rows.loc[("NN-Lap", "sn")]
    assert lap["n_instances"] == 12 and lap["n_datasets"] == 3
    assert lap["delta_preservation"] == pytest.approx(0.2)
    assert lap["delta_rho_var"] == pytest.approx(0.1)
    assert lap["nmse_ratio"] == pytest.approx(0.5)
    assert lap["paper_delta_rho_risk"] == 0.103 and lap["paper_nmse_ratio"] == 0.48
    assert rows.loc[("NN-Lap", "wd"), "paper_delta_rho_risk"] == 0.049
    assert rows.loc[("NN-Lap", "wd"), "paper_nmse_ratio"] == 0.70
    assert rows.loc[("All (pooled)", "wd"), "paper_delta_preservation"] == 0.010
    for arm in ("sn", "wd"):
        sub = diffs[diffs["arm"] == arm]
        pooled = rows.loc[("All (pooled)", arm)]
        assert pooled["n_instances"] == len(sub)
        assert pooled["delta_rho_var"] == pytest.approx(sub["delta_rho_var"].mean())
        ens = rows.loc[("NN-Ens", arm)]
        mine = sub[sub["method"] == "nn_ens"]
        assert ens["delta_rho_risk"] == pytest.approx(mine["delta_rho_risk"].mean())
        hand = np.exp(np.mean(np.log(mine["arm_nmse"] / mine["plain_nmse"])))
        assert ens["nmse_ratio"] == pytest.approx(hand)
        for name, row in ((f"NN-Ens {arm}", ens), (f"pooled {arm}", pooled)):
            for column in ("delta_rho_risk", "delta_rho_var", "delta_preservation",
                           "nmse_ratio"):
                assert row[f"{column}_low"] <= row[column] + 1e-12, name
                assert row[column] <= row[f"{column}_high"] + 1e-12, name
                assert row[f"{column}_low"] < row[f"{column}_high"], name


def test_table13_one_dataset_has_no_interval(diffs):
    one = diffs[diffs["dataset"] == "wine"]
    table = table13(one, np.random.default_rng(0), n_boot=100)
    assert (table["n_datasets"] == 1).all()
    assert table["delta_rho_risk"].notna().all()
    for column in ("delta_rho_risk", "delta_rho_var", "delta_preservation", "nmse_ratio"):
        assert table[f"{column}_low"].isna().all() and table[f"{column}_high"].isna().all()


def test_mediation_flags_small_samples(diffs):
    table = mediation(diffs, np.random.default_rng(1), n_boot=60, min_instances=20)
    assert set(table["method"]) == {"NN-Lap", "NN-Ens", "All (pooled)"}
    assert set(table["model"]) == {"arm_only", "mediators", "within_sn"}
    assert not table["interpretable"].any()
    lap = table[table["method"] == "NN-Lap"]
    assert lap["note"].str.contains(
        "not interpretable at this scale: 12 instances per method (< 20)", regex=False).all()
    # the paper's values stand beside the coefficients the text states
    row = table[(table["method"] == "NN-Lap") & (table["outcome"] == "delta_rho_var")
                & (table["model"] == "mediators") & (table["term"] == "delta_preservation")]
    assert row.iloc[0]["paper_estimate"] == 0.40
    assert (row.iloc[0]["paper_ci_low"], row.iloc[0]["paper_ci_high"]) == (0.20, 0.52)
    pooled = table[(table["method"] == "All (pooled)") & (table["model"] == "arm_only")
                   & (table["outcome"] == "delta_rho_var")]
    assert pooled.iloc[0]["paper_estimate"] == 0.11


def test_mediation_estimates_and_interpretability(diffs):
    table = mediation(diffs, np.random.default_rng(1), n_boot=60)
    rows = table.set_index(["method", "outcome", "model", "term"])
    # NN-Lap's SN effect on ρ_var is exactly 0.1 − 0.03 (SN vs WD) within every dataset
    arm_only = rows.loc[("NN-Lap", "delta_rho_var", "arm_only", "sn")]
    assert arm_only["estimate"] == pytest.approx(0.07)
    assert arm_only["interpretable"] and arm_only["note"] == ""
    assert arm_only["n"] == 24 and arm_only["n_datasets"] == 3
    # within the SN arm NN-Lap's Δpres is constant: not estimable, so not interpretable
    within = rows.loc[("NN-Lap", "delta_rho_var", "within_sn", "delta_preservation")]
    assert np.isnan(within["estimate"]) and not within["interpretable"]
    assert "not estimable" in within["note"]
    ens = rows.loc[("NN-Ens", "delta_rho_risk", "within_sn", "delta_preservation")]
    assert np.isfinite(ens["estimate"]) and ens["interpretable"]


def _manual_within(x: pd.Series, y: pd.Series, datasets: pd.Series) -> float:
    rx = x - x.groupby(datasets).transform("mean")
    ry = y - y.groupby(datasets).transform("mean")
    return float(spearmanr(rx, ry).statistic)


def test_table14_within_dataset_spearman(records, diffs):
    table = table14(diffs, records).set_index("method")
    assert table.index.tolist() == ["NN-Lap", "NN-Ens", "All (pooled)"]
    plain = records[(records["method"] == "nn_ens") & (records["arm"] == "plain")]
    hand = _manual_within(plain["preservation"], plain["n_blocks"], plain["dataset"])
    assert table.loc["NN-Ens", "rho_pres_vs_depth"] == pytest.approx(hand)
    assert 0 <= table.loc["NN-Ens", "p_pres_vs_depth"] <= 1
    sn = diffs[(diffs["method"] == "nn_ens") & (diffs["arm"] == "sn")]
    hand = _manual_within(sn["plain_n_blocks"], sn["delta_rho_var"], sn["dataset"])
    assert table.loc["NN-Ens", "rho_depth_vs_sn_gain_rho_var"] == pytest.approx(hand)
    # NN-Lap's SN gain in preservation is constant: no correlation, and a note says why
    assert np.isnan(table.loc["NN-Lap", "rho_depth_vs_sn_gain_pres"])
    assert "delta_preservation constant within datasets" in table.loc["NN-Lap", "note"]
    assert table.loc["NN-Lap", "paper_pres_vs_depth"] == -0.70
    assert table.loc["All (pooled)", "paper_depth_vs_sn_gain_pres"] == 0.41
    assert table.loc["NN-Ens", "n_instances"] == 12 and table.loc["NN-Ens", "n_sn_pairs"] == 12


def test_figure10_frame_plain_rows_agree_with_the_benchmark(records):
    frame = figure10_frame(records, _scores(records))
    bench = frame[frame["source"] == "benchmark"].set_index(["method", "target"])
    study = frame[frame["source"] == "sn_study"].set_index(["method", "arm", "target"])
    assert set(bench.index.get_level_values("method")) == {"nn_lap", "nn_ens", "sngp_het"}
    for method in METHODS:
        for target in ("posterior_excess_risk", "posterior_variance"):
            b, s = bench.loc[(method, target)], study.loc[(method, "plain", target)]
            assert b["n"] == s["n"] == 12                   # the outside instance is not used
            assert b["mean"] == pytest.approx(s["mean"])
            assert (b["low"], b["high"]) == pytest.approx((s["low"], s["high"]))
            assert b["low"] < b["mean"] < b["high"]
    labels = set(frame["label"])
    assert {"NN-Lap + SN", "NN-Lap + WD", "NN-Ens + WD", "SNGP-Het"} <= labels
    assert study.loc[("nn_ens", "wd", "posterior_variance"), "n"] == 11
    lap_sn = records[(records["method"] == "nn_lap") & (records["arm"] == "sn")]
    assert study.loc[("nn_lap", "sn", "posterior_variance"), "mean"] == pytest.approx(
        lap_sn["rho_var"].mean())


def test_write_sn_study_writes_every_file(tmp_path):
    frame = _record_frame()
    record_dir = tmp_path / "records"
    record_dir.mkdir()
    paths = _write_records(frame, record_dir)
    score_path = tmp_path / "scores.csv"
    _scores(frame).to_csv(score_path, index=False)
    (tmp_path / "empty_scores.csv").write_text("")
    out = {ident: tmp_path / "out" / f"{ident}.csv"
           for ident in ("table13", "sn_mediation", "table14", "sn_instances")}
    out["fig10_sn_methods"] = tmp_path / "out" / "fig10_sn_methods.png"
    tables = write_sn_study(paths, [score_path, tmp_path / "empty_scores.csv"], out, "demo",
                            n_boot=40)
    assert set(tables) == set(out)
    for ident in ("table13", "sn_mediation", "table14", "sn_instances"):
        written = pd.read_csv(out[ident])
        assert written.columns[0] == "scale" and (written["scale"] == "demo").all()
        assert len(written) == len(tables[ident])
    assert out["fig10_sn_methods"].stat().st_size > 0
    assert out["fig10_sn_methods"].with_suffix(".pdf").stat().st_size > 0
    instances = pd.read_csv(out["sn_instances"])
    assert len(instances) == len(frame)
    assert instances.loc[instances["arm"] == "plain", "delta_rho_var"].isna().all()
    lap_sn = instances[(instances["method"] == "nn_lap") & (instances["arm"] == "sn")]
    np.testing.assert_allclose(lap_sn["delta_preservation"], 0.2, atol=1e-12)
    # one bootstrap stream: the same inputs give the same tables
    again = write_sn_study(paths, [score_path], out, "demo", n_boot=40)
    pd.testing.assert_frame_equal(again["table13"], tables["table13"])
