"""The OOD study's steps on files: fits at the query rows from a benchmark fit store, then the
records and the tables, on two small GP instances and a shifted OOD set."""

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.covariates.build import Covariates
from postrisk.gp.kernels import default_kernel
from postrisk.methods.records import benchmark_configuration, fit_records_to_dataset
from postrisk.methods.runner import run_fit
from postrisk.studies.ood_proxy.records import ood_records, write_ood_fits
from postrisk.studies.ood_proxy.statistics import partial_spearman
from postrisk.studies.ood_proxy.tables import ground_truth_rows, record_rows, table11
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.task import Task


@pytest.fixture(scope="module")
def study(offline_covariates, tmp_path_factory):
    root = tmp_path_factory.mktemp("ood")
    concrete = Covariates(offline_covariates["concrete"])
    params = {"prior": "gp", "kernel": default_kernel(("rq", "linear"), 8).to_dict(), "a": 1.0}
    tasks = {}
    for seed in (0, 1):
        key = TaskKey("concrete", "gp", "smooth_monotone", "balanced", seed)
        ds = build_task(build_sample(key, concrete, params, 60), {"draws": 50})
        tasks[seed] = write_zarr_atomic(ds, root / f"task{seed}.zarr")
    records = [run_fit("blr", {}, Task.load(p).x_train, Task.load(p).y_train,
                       Task.load(p).x_eval, random_state=s) for s, p in tasks.items()]
    bench = write_zarr_atomic(fit_records_to_dataset(records, [0, 1]), root / "blr.zarr")
    rng = np.random.default_rng(5)
    shifted = concrete.x[rng.choice(concrete.x.shape[0], 300, replace=False)] + 0.08
    ood = write_zarr_atomic(xr.Dataset({"x": (("row", "feature"), shifted)},
                                       attrs={"dataset": "shifted",
                                              "schema_version": COVARIATES_SCHEMA_VERSION}),
                            root / "ood.zarr")
    method, config, seeds = benchmark_configuration(bench, 5)
    assert (method, seeds) == ("blr", [0, 1])  # every seed the store holds, fewer than 5
    fits = write_ood_fits(method, config, {s: tasks[s] for s in seeds}, ood,
                          root / "ood_blr.zarr", n_max=150)
    return {"tasks": tasks, "bench": bench, "ood": ood, "fits": fits, "records": records}


def test_ood_fits_are_the_benchmark_fits_asked_elsewhere(study):
    ds = open_zarr(study["fits"])
    assert ds.attrs["method"] == "blr" and ds.attrs["ood_dataset"] == "shifted"
    assert ds["epistemic_var"].shape == (2, 300) and (ds["status"].values == "ok").all()
    for i, seed in enumerate((0, 1)):
        is_ood, rows = ds["is_ood"].values[i], ds["row"].values[i]
        assert is_ood.sum() == 150 and (~is_ood).sum() == 150
        bench = study["records"][i]
        np.testing.assert_allclose(ds["epistemic_var"].values[i][~is_ood],
                                   bench.epistemic_var[rows[~is_ood]], rtol=1e-9)
        task = Task.load(study["tasks"][seed])
        np.testing.assert_allclose(ds["posterior_var"].values[i][~is_ood],
                                   task.posterior_var[rows[~is_ood]], rtol=1e-10)


def test_records_and_tables(study):
    tasks = {TaskKey.from_attrs(Task.load(p).ds.attrs).label: p
             for p in study["tasks"].values()}
    records, truths = ood_records([study["fits"]], tasks, study["ood"])
    assert len(records) == len(truths) == 2
    key, record = records[0]
    assert set(record["methods"]) == {"blr"} and record["matching"]["n_matched_per_class"] > 0
    assert record["methods"]["blr"]["auroc_eu"] > 0.6  # EU sees the shift
    again, _ = ood_records([study["fits"]], tasks, study["ood"])
    assert (again[0][1]["matching"]["indices"] == record["matching"]["indices"]).all()
    frame = pd.DataFrame([r for k, rec in records for r in record_rows(k, rec)])
    table = table11(frame, np.random.default_rng(0), n_boot=50)
    assert table["method"].tolist() == ["blr", "mahalanobis", "knn10", "classifier"]
    # the headline partial correlation is over the ID query points, the other over all
    fits = open_zarr(study["fits"])
    for (key, record), (_, _, _, per_method) in zip(records, truths, strict=True):
        i = fits["seed"].values.tolist().index(key["seed"])
        eu, var = fits["epistemic_var"].values[i], fits["posterior_var"].values[i]
        is_id = ~fits["is_ood"].values[i].astype(bool)
        distance = record["matching"]["distance"]
        assert per_method["blr"]["partial_spearman"] is not None
        assert per_method["blr"]["partial_spearman"] == partial_spearman(
            eu[is_id], var[is_id], distance[is_id])
        assert per_method["blr"]["partial_spearman_all_points"] == partial_spearman(
            eu, var, distance)
        assert per_method["blr"]["partial_spearman"] != per_method["blr"][
            "partial_spearman_all_points"]
    truth = pd.DataFrame([r for args in truths for r in ground_truth_rows(*args)])
    by_method = truth[truth["kind"] == "method"]
    for column in ("partial_spearman", "partial_spearman_all_points"):
        assert by_method[column].tolist() == [t[3]["blr"][column] for t in truths]
    assert set(truth["kind"]) == {"truth", "method"}
    assert (truth.loc[truth["kind"] == "truth", "auroc_all"] > 0.6).all()  # so does the truth


def test_the_benchmark_configuration_takes_the_first_seeds(study):
    method, config, seeds = benchmark_configuration(study["bench"], 1)
    assert (method, seeds) == ("blr", [0])
    assert config == json.loads(open_zarr(study["bench"]).attrs["config"])


def test_the_study_reads_sample_stores_alike(study, tmp_path):
    # a study dataset's instances are sample stores: the same fits and truth as from the tasks
    from postrisk.tasks.store import SAMPLE_ATTRS, SAMPLE_VARIABLES

    task = open_zarr(study["tasks"][0])
    sample = task[list(SAMPLE_VARIABLES)]
    sample.attrs = {k: task.attrs[k] for k in SAMPLE_ATTRS} | {"store_kind": "sample"}
    path = write_zarr_atomic(sample, tmp_path / "sample0.zarr")
    out = write_ood_fits("blr", {}, {0: path}, study["ood"], tmp_path / "x.zarr", n_max=150)
    ours, theirs = open_zarr(out), open_zarr(study["fits"])
    for name in ("epistemic_var", "posterior_var", "row"):
        np.testing.assert_array_equal(ours[name].values[0], theirs[name].values[0])
    with pytest.raises(ValueError, match="no instance"):
        write_ood_fits("blr", {}, {}, study["ood"], tmp_path / "y.zarr")
