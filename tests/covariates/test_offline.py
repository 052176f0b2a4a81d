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
    again = build_covariates("concrete", FetchSettings(prefer_offline_package=True))
    assert (again["eval_index"].values == ds["eval_index"].values).all()
    assert (again["x"].values == ds["x"].values).all()
    assert not list(tmp_path.glob(".*tmp*")), "temporary store left behind"


def test_offline_tables_load_concurrently_without_touching_home(tmp_path):
    """Two jobs loading different offline tables at once on a fresh machine (empty HOME):
    both succeed, and nothing is written into the home folder."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    code = ("import sys; from postrisk.covariates import FetchSettings, get_dataset, "
            "load_raw_table; raw = load_raw_table(get_dataset(sys.argv[1]), "
            "FetchSettings(prefer_offline_package=True)); "
            "print(sys.argv[1], raw.frame.shape, raw.origin)")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_CONFIG_HOME": str(home / ".config")}
    jobs = [subprocess.Popen([sys.executable, "-c", code, name], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for name in ("diamonds", "health_insurance", "concrete")]
    outputs = [job.communicate(timeout=300) for job in jobs]
    for job, (_out, err) in zip(jobs, outputs, strict=True):
        assert job.returncode == 0, err
    assert "diamonds (53940, 10) package pydataset" in outputs[0][0]
    assert "health_insurance (22272, 13) package pydataset" in outputs[1][0]
    assert list(home.iterdir()) == [], "something was written into the home folder"


def test_pydataset_tables_read_from_the_package_archive():
    """The tables equal what pydataset itself would return (its first column is the index)."""
    from postrisk.covariates.offline import read_pydataset_table

    hi = read_pydataset_table("HI")
    assert hi.shape == (22272, 13) and hi.index[0] == 1
    assert {"whrswk", "experience", "kidslt6", "kids618", "husby"} <= set(hi.columns)
    with pytest.raises(Exception, match="expected one member nosuchtable.csv"):
        read_pydataset_table("nosuchtable")


def test_offline_pair_keeps_one_cut_each_and_shifts(offline_covariates):
    """The OOD study's offline pair from the packaged Diamonds: each entry's row count is its
    cut's (the registry's N), the fair cut is scaled with the ideal cut's constants, and the
    two populations differ (the fair cut sits far from the ideal cut's centre: a real shift,
    which the study's distance matching then removes)."""
    import numpy as np

    from postrisk.covariates import FetchSettings, build_covariates
    from postrisk.covariates.clean import MinMaxScaling
    from postrisk.studies.ood_proxy.statistics import mahalanobis_distance, ood_auroc

    settings = FetchSettings(prefer_offline_package=True)
    ideal = build_covariates("diamonds_ideal", settings)
    scaling = MinMaxScaling(columns=tuple(map(str, ideal["feature"].values)),
                            minimum=ideal["scale_min"].values,
                            maximum=ideal["scale_max"].values, reference="diamonds_ideal")
    fair = build_covariates("diamonds_fair", settings, scaling=scaling)
    for ds, name in ((ideal, "diamonds_ideal"), (fair, "diamonds_fair")):
        spec = get_dataset(name)
        assert (ds.sizes["row"], ds.sizes["feature"]) == (spec.N, spec.d)
        assert json.loads(ds.attrs["row_filter"]) == {"cut": list(spec.rows["cut"])}
        assert ds.attrs["rows_in_source"] == offline_covariates["diamonds"].sizes["row"]
    assert fair.attrs["scaling_reference"] == "diamonds_ideal"
    assert (fair["scale_min"].values == ideal["scale_min"].values).all()
    x_ideal, x_fair = ideal["x"].values, fair["x"].values
    assert x_ideal.min() == 0.0 and x_ideal.max() == 1.0
    assert ((x_fair < 0) | (x_fair > 1)).any(), "the fair cut leaves the ideal cut's range"
    train = x_ideal[ideal["candidate_index"].values]
    query = np.vstack([x_ideal[ideal["eval_index"].values], x_fair])
    is_ood = np.r_[np.zeros(ideal.sizes["eval"], bool), np.ones(len(x_fair), bool)]
    assert ood_auroc(mahalanobis_distance(train, query), is_ood) > 0.9
    # the full Diamonds store is untouched by the pair's entries
    assert "row_filter" not in offline_covariates["diamonds"].attrs
