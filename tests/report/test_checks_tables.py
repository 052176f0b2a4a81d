"""The checks job's tables from stores: the per-shell counts of every instance (Table 3's
per-shell coverage), and Table 4 against the covariate stores, GP prior files and task stores it
is built from."""

import json

import numpy as np
import pandas as pd
import pytest

from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.covariates.registry import get_dataset
from postrisk.report.checks import OUTER_SHELL, collect_checks
from postrisk.report.table4 import (
    RUN_COLUMNS,
    TABLE4_COLUMNS,
    paper_table4,
    realised_noise_to_signal,
    table4,
    write_table4,
)
from tests.conftest import OFFLINE_DATASETS, REPO
from tests.task_helpers import gp_task


def _task_store(tmp_path, name: str, n: int = 30, m: int = 20, seed: int = 0, **key) -> str:
    """A small task store written to ``tmp_path/name.zarr`` (``key``: attributes to record)."""
    ds = gp_task(n=n, m=m, seed=seed).ds.copy()
    ds.attrs.update(key)
    return str(write_zarr_atomic(ds, tmp_path / f"{name}.zarr"))


def test_collect_checks_counts_the_outermost_shell_and_the_rest(tmp_path):
    rng = np.random.default_rng(0)
    paths, expected = [], []
    for i, coverage in enumerate(("balanced", "ood")):
        ds = gp_task(n=30, m=50, seed=i, key={"coverage": coverage, "seed": i}).ds.copy()
        covered = rng.random(50) < 0.8
        ds["covered90"] = ("eval",), covered
        paths.append(str(write_zarr_atomic(ds, tmp_path / f"t{i}.zarr")))
        outer = ds["shell_eval"].values == OUTER_SHELL
        assert 0 < outer.sum() < 50
        expected.append({"covered90_outer": int(covered[outer].sum()),
                         "n_eval_outer": int(outer.sum()),
                         "covered90_rest": int(covered[~outer].sum()),
                         "n_eval_rest": int((~outer).sum())})
    instances, _ = collect_checks(paths)
    got = instances[["covered90_outer", "n_eval_outer", "covered90_rest", "n_eval_rest"]]
    assert got.to_dict("records") == expected
    assert (got["covered90_outer"] + got["covered90_rest"] == instances["covered90"]).all()
    assert (got["n_eval_outer"] + got["n_eval_rest"] == instances["n_eval"]).all()


def test_table4_pure_builder_puts_the_papers_values_beside_ours():
    ours = {"concrete": {"d": 8, "N": 1030, "n_eval": 515, "n": 348, "noise_to_signal": 0.23,
                         "kernel": "rq + linear"},
            "diamonds": {"d": 6, "N": 53940, "n_eval": 600, "n": 500, "noise_to_signal": 0.32}}
    ours["concrete"]["realised"] = [0.2, 0.3]
    table = table4(ours, "demo")
    assert list(table.columns) == ["scale", "dataset", *RUN_COLUMNS,
                                   *(f"paper_{c}" for c in TABLE4_COLUMNS)]
    assert list(RUN_COLUMNS) == ["d", "N", "n_eval", "n", "noise_to_signal",
                                 "realised_noise_to_signal", "n_instances", "kernel"]
    assert table["dataset"].tolist() == ["concrete", "diamonds"]
    row = table.set_index("dataset").loc["diamonds"]
    assert (row["n_eval"], row["paper_n_eval"], row["n"], row["paper_n"]) == (600, 1500, 500,
                                                                           2000)
    assert pd.isna(row["kernel"]) and row["paper_kernel"] == "rbf"  # no GP prior in the run
    assert table.set_index("dataset").loc["concrete", "paper_kernel"] == "rq + linear"
    # the realised ratio: the mean over the instances given, beside how many; none: NaN and 0
    concrete = table.set_index("dataset").loc["concrete"]
    assert concrete["realised_noise_to_signal"] == pytest.approx(0.25)
    assert concrete["n_instances"] == 2
    assert pd.isna(row["realised_noise_to_signal"]) and row["n_instances"] == 0
    assert "paper_realised_noise_to_signal" not in table.columns  # not in the paper
    given = table4({"x": {"d": 1}}, "smoke", paper={"x": {"d": 2, "kernel": "linear"}})
    assert given.iloc[0][["d", "paper_d", "paper_kernel"]].tolist() == [1, 2, "linear"]
    assert pd.isna(given.iloc[0]["paper_N"])


def test_table4_of_the_offline_datasets_equals_their_stores_and_priors(tmp_path,
                                                                        offline_covariates):
    """Covariate stores of the three offline datasets, a GP prior file for two of them and a few
    task stores each: Table 4 reports the stores' d, N, n_eval, the task stores' n and ρ, the
    prior's kernel, and the registry's (the paper's) values beside them."""
    from postrisk.covariates import write_covariates

    covariates, priors, tasks, n_of = {}, {}, [], {}
    for i, name in enumerate(OFFLINE_DATASETS):
        covariates[name] = str(write_covariates(offline_covariates[name],
                                                tmp_path / f"covariates/{name}.zarr"))
        spec = get_dataset(name)
        if name != "health_insurance":
            priors[name] = tmp_path / f"priors/{name}/gp.json"
            priors[name].parent.mkdir(parents=True)
            priors[name].write_text(json.dumps(
                {"prior": "gp", "a": 1.0, "kernel": {"components": list(spec.kernel[::-1]),
                                                     "params": {}}}))
        n_of[name] = 20 + i
        for coverage in ("balanced", "ood"):
            tasks.append(_task_store(tmp_path, f"{name}_{coverage}", n=n_of[name], seed=i,
                                     dataset=name, coverage=coverage,
                                     noise_to_signal=spec.noise_to_signal))
    out = tmp_path / "checks/table4.csv"
    table = write_table4(tasks, covariates, priors, out, "demo")
    back = pd.read_csv(out)
    assert back["dataset"].tolist() == list(OFFLINE_DATASETS)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    rows = table.set_index("dataset")
    for name in OFFLINE_DATASETS:
        ds, spec = offline_covariates[name], get_dataset(name)
        row = rows.loc[name]
        assert (row["d"], row["N"], row["n_eval"]) == (
            ds.sizes["feature"], ds.sizes["row"], ds.sizes["eval"])
        assert (row["d"], row["N"], row["n_eval"]) == (ds.attrs["d"], ds.attrs["N"],
                                                       ds.attrs["n_eval"])
        assert row["n"] == n_of[name] and row["noise_to_signal"] == spec.noise_to_signal
        stores = [s for s in map(open_zarr, tasks) if s.attrs["dataset"] == name]
        assert row["n_instances"] == len(stores) == 2
        assert row["realised_noise_to_signal"] == pytest.approx(np.mean(
            [s["noise_var_eval"].values.mean() / s["f_true_eval"].values.var() for s in stores]))
        assert {f"paper_{k}": v for k, v in paper_table4(name).items()} == {
            c: row[c] for c in row.index if c.startswith("paper_")}
        # the offline copies give Table 4's d, N and (uncapped) n_eval
        assert (row["d"], row["N"], row["n_eval"]) == (row["paper_d"], row["paper_N"],
                                                       row["paper_n_eval"])
    assert rows.loc["concrete", "kernel"] == "linear + rq"  # the prior file's, not the registry's
    assert rows.loc["diamonds", "kernel"] == "rbf"
    assert pd.isna(rows.loc["health_insurance", "kernel"])


def test_table4_realised_noise_to_signal_by_hand(tmp_path, offline_covariates):
    """Two instances of Concrete with 20 evaluation points each, their noise variance and f*
    there set by hand: the realised ratio is mean σ²_ε / Var(f*) per instance (Var with ddof
    0), averaged over the two."""
    from postrisk.covariates import write_covariates

    store = str(write_covariates(offline_covariates["concrete"], tmp_path / "concrete.zarr"))
    by_hand = [
        # f* = ±1 alternating: Var = 1; σ²_ε alternating 0.1, 0.3: mean 0.2 -> ratio 0.2
        (np.tile([-1.0, 1.0], 10), np.tile([0.1, 0.3], 10), 0.2),
        # f* = 3 ± 2 alternating: Var = 4; σ²_ε alternating 0.2, 0.6: mean 0.4 -> ratio 0.1
        (np.tile([1.0, 5.0], 10), np.tile([0.2, 0.6], 10), 0.1),
    ]
    tasks = []
    for i, (f, noise_var, ratio) in enumerate(by_hand):
        assert realised_noise_to_signal(noise_var, f) == pytest.approx(ratio)
        ds = gp_task(n=30, m=20, seed=i).ds.copy()
        ds["f_true_eval"] = ("eval",), f
        ds["noise_var_eval"] = ("eval",), noise_var
        ds.attrs.update(dataset="concrete", noise_to_signal=0.23)
        tasks.append(str(write_zarr_atomic(ds, tmp_path / f"t{i}.zarr")))
    row = write_table4(tasks, {"concrete": store}, {}, tmp_path / "t4.csv", "demo").iloc[0]
    assert row["noise_to_signal"] == 0.23  # the configured ρ, as the stores record it
    assert row["realised_noise_to_signal"] == pytest.approx((0.2 + 0.1) / 2)  # = 0.15
    assert row["n_instances"] == 2
    with pytest.raises(ValueError, match="constant"):
        realised_noise_to_signal([0.1, 0.1], [2.0, 2.0])


def test_table4_refuses_task_stores_that_disagree(tmp_path, offline_covariates):
    from postrisk.covariates import write_covariates

    store = str(write_covariates(offline_covariates["concrete"], tmp_path / "concrete.zarr"))
    tasks = [_task_store(tmp_path, f"t{n}", n=n, dataset="concrete") for n in (20, 21)]
    with pytest.raises(ValueError, match="concrete: the task stores disagree on n"):
        write_table4(tasks, {"concrete": store}, {}, tmp_path / "t4.csv", "demo")


def test_table4_is_in_the_report_after_table3(tmp_path):
    from postrisk.grid.artefacts import ArtefactFile, artefact, catalogue
    from postrisk.planning.planner import Planner
    from postrisk.report.scores import write_report_page

    planner = Planner.from_files(REPO / "config.yaml", REPO / "presets/demo.yaml")
    tables = [i for i in planner.report_contents() if i.entry.kind == "table"]
    assert [i.entry.id for i in tables[:2]] == ["table3", "table4"]
    assert planner.artefact_files("table4") == ["results/checks/table4.csv"]
    assert "results/checks/table4.csv" in planner.stage_files("checks")
    ids = [a.id for a in catalogue()]
    assert ids.index("table4") == ids.index("instances") + 1
    t3, t4 = tmp_path / "table3.csv", tmp_path / "table4.csv"
    pd.DataFrame({"scale": ["demo"], "prior": ["gp"]}).to_csv(t3, index=False)
    table4({"concrete": {"d": 8, "kernel": "rq + linear"}}, "demo").to_csv(t4, index=False)
    (tmp_path / "deviations.md").write_text("# none\n")
    contents = [ArtefactFile(artefact(i), str(p))
                for i, p in (("table3", t3), ("table4", t4))]
    manifest = write_report_page(tmp_path / "report/index.html", tmp_path / "report/m.json",
                                 contents, "demo", {"scale": "demo"}, tmp_path / "deviations.md",
                                 {"correlation": "pearson"})
    assert manifest["tables"] == ["table3", "table4"]
    html = (tmp_path / "report/index.html").read_text()
    assert artefact("table4").title in html and "paper_kernel" in html
