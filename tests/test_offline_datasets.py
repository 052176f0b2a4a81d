"""Acceptance: the offline copies give Table 4's d and N after cleaning."""

import json

import pytest

from postrisk.covariates import get_dataset


@pytest.mark.parametrize("name, d, n_rows", [("diamonds", 6, 53_940),
                                              ("health_insurance", 4, 22_272),
                                              ("concrete", 8, 1_030)])
def test_offline_d_and_n(offline_covariates, name, d, n_rows):
    ds = offline_covariates[name]
    assert ds.sizes["feature"] == d and ds.sizes["row"] == n_rows
    spec = get_dataset(name)
    assert (spec.d, spec.N) == (d, n_rows)
    assert ds.attrs["raw_origin"].startswith("package ")
    assert json.loads(ds.attrs["dropped_columns"]) == {}


def test_store_round_trip_and_determinism(tmp_path, offline_covariates):
    from postrisk.covariates import (
        FetchSettings,
        build_covariates,
        load_covariates,
        write_covariates,
    )

    ds = offline_covariates["concrete"]
    path = write_covariates(ds, tmp_path / "concrete.zarr")
    back = load_covariates(path).ds
    for var in ("x", "eval_index", "shell", "pc1_score", "scale_min"):
        assert (back[var].values == ds[var].values).all()
    again = build_covariates("concrete", FetchSettings(prefer_offline_package=True),
                             progress=lambda _: None)
    assert (again["eval_index"].values == ds["eval_index"].values).all()
    assert (again["x"].values == ds["x"].values).all()
    assert not list(tmp_path.glob(".*tmp*")), "temporary store left behind"
