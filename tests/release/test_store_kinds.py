"""``postrisk info`` on every store postrisk writes: a covariate, sample or fit store is
described, never refused as a task store of another schema version with advice to delete it; a
release's per-dataset file, a release or results folder, a plain folder and a Zarr store postrisk
did not write are each named in one line."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import xarray as xr

from postrisk.cli import main
from postrisk.core.io import write_zarr_atomic
from postrisk.methods.records import fit_records_to_dataset
from postrisk.methods.runner import run_fit
from postrisk.release.embedded import embedded_root
from postrisk.release.store_kinds import describe, store_kind
from tests.task_helpers import gp_task

KEY = "toy/gp/smooth_monotone/balanced/0"


@pytest.fixture(scope="module")
def stores(tmp_path_factory, offline_covariates):
    """One store of each kind the workflow writes, as it writes them, in a results folder."""
    results = tmp_path_factory.mktemp("results")
    task = gp_task(n=30, m=20, key=dict(zip(("dataset", "prior", "noise", "coverage", "seed"),
                                            [*KEY.split("/")[:4], 0], strict=True)))
    write_zarr_atomic(task.ds, results / f"tasks/{KEY}.zarr")
    sample = task.ds.drop_vars([v for v in task.ds.data_vars if v.startswith(
        ("posterior_", "rank_", "covered", "mcse"))])
    sample.attrs = {**task.ds.attrs, "store_kind": "sample"}
    write_zarr_atomic(sample, results / f"samples/{KEY}.zarr")
    write_zarr_atomic(offline_covariates["concrete"], results / "covariates/concrete.zarr")
    record = run_fit("blr", {}, task.x_train, task.y_train, task.x_eval, random_state=0)
    write_zarr_atomic(fit_records_to_dataset([record], [0]),
                      results / "fits/toy/gp/smooth_monotone/balanced/blr.zarr")
    write_zarr_atomic(xr.Dataset({"v": ("i", np.zeros(3))}), results / "foreign.zarr")
    write_zarr_atomic(xr.Dataset({"v": ("i", np.zeros(3))}, attrs={"schema_version": "ood-fit-1"}),
                      results / "studies/ood.zarr")
    return results


@pytest.mark.parametrize(("where", "kind"), [
    (f"tasks/{KEY}.zarr", "task"), (f"samples/{KEY}.zarr", "sample"),
    ("covariates/concrete.zarr", "covariates"),
    ("fits/toy/gp/smooth_monotone/balanced/blr.zarr", "fit"), ("studies/ood.zarr", "study"),
    ("foreign.zarr", "zarr"), ("", "results"), ("fits", "folder"), ("nowhere.zarr", "missing"),
])
def test_every_store_kind_is_told_apart(stores, where, kind):
    assert store_kind(stores / where) == kind


def test_the_release_folder_and_its_files(tmp_path):
    suite = embedded_root()
    assert store_kind(suite) == "release"
    assert store_kind(suite / "concrete_dataset.zip") == "dataset_file"
    assert store_kind(suite / "concrete_gp.zip") == "file"  # instances: named inside it
    copy = shutil.copy(suite / "instances.csv", tmp_path / "instances.csv")
    assert store_kind(copy) == "file"


@pytest.mark.parametrize(("where", "rows"), [
    ("covariates/concrete.zarr", {"dataset": "concrete", "rows": "N = 1030, d = 8, n_eval = 515",
                                  "schema version": "covariates-2"}),
    ("fits/toy/gp/smooth_monotone/balanced/blr.zarr", {"method": "blr",
                                                       "schema version": "fit-record-1"}),
    (f"samples/{KEY}.zarr", {"instance": KEY, "shape": "n = 30, n_eval = 20",
                             "schema version": "4"}),
])
def test_a_store_that_is_no_task_is_described(stores, capsys, where, rows):
    described = dict(describe(stores / where))
    assert {k: described[k] for k in rows} == rows
    assert main(["info", str(stores / where)]) == 0
    out = capsys.readouterr()
    assert "error" not in out.err and "delete" not in out.out + out.err
    for value in rows.values():
        assert value in out.out


def test_a_task_store_keeps_its_summary(stores, capsys):
    assert main(["info", str(stores / f"tasks/{KEY}.zarr")]) == 0
    assert "90% interval coverage" in capsys.readouterr().out


@pytest.mark.parametrize(("where", "line"), [
    ("", "is a results folder: `postrisk info <key> --root {path}` shows one of its task "
         "instances"),
    ("foreign.zarr", "is a Zarr store postrisk did not write (it has no schema_version)"),
    ("fits", "is not a store postrisk writes: name a task store (…/<seed>.zarr), a key "
             "(dataset/prior/noise/coverage/seed) or an instance of a release file "
             "(<file>.zip/<noise>/<coverage>/<seed>)"),
])
def test_a_folder_or_a_foreign_store_is_one_line(stores, capsys, where, line):
    path = stores / where
    assert main(["info", str(path)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {path} " + line.format(path=path)]


def test_a_release_file_of_one_dataset_is_described(capsys):
    path = embedded_root() / "concrete_dataset.zip"
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "per-dataset file" in out and "smooth_monotone/balanced/0" not in out
