"""The SN study's fits (App. D.4): the arms' constraints hold after training, the sweeps search
the arms' ranges, and a record judges the arm against the oracle."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from postrisk.evaluation.distance_preservation import local_distance_preservation
from postrisk.methods.nn.features import backbone_features, dense_spectral_norms
from postrisk.methods.registry import get_method
from postrisk.studies.sn_study.fits import (
    ARMS,
    RECORD_COLUMNS,
    arm_sweep,
    instance_record,
    nmse,
    preservation_rows,
    tune_arm,
)
from tests.task_helpers import gp_task

SMALL = {"width": 16, "n_blocks": 1, "n_epochs": 30, "batch_size": 64}
STUDY = {"trials": 3, "startup_trials": 3, "validation_fraction": 0.2,
         "sn_coeff": [0.5, 3.0], "weight_decay": [0.01, 1.0]}


def toy(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.standard_normal(n)


@pytest.mark.slow
@pytest.mark.parametrize("name, extra", [("nn_lap", {"n_samples": 16}),
                                         ("nn_ens", {"n_members": 3})])
def test_every_dense_layer_is_bounded_by_the_coefficient_after_training(name, extra):
    x, y = toy()
    coeff = 0.7
    sn = get_method(name)(**SMALL, **extra, spectral_norm=True, sn_coeff=coeff,
                          learning_rate=5e-3, random_state=0).fit(x, y)
    norms = dense_spectral_norms(sn)
    assert len(norms) == (3 if name == "nn_ens" else 1)
    for network in norms:
        assert len(network) == 3  # the input layer and a residual block's two layers
        # power iteration estimates σ_max from below: the bound holds up to its error
        assert max(network) <= coeff * 1.02, norms
        assert max(network) >= coeff * 0.9, norms  # the constraint is active
    # negative control: the same network trained without SN exceeds the bound
    plain = get_method(name)(**SMALL, **extra, learning_rate=5e-3, random_state=0).fit(x, y)
    assert max(max(network) for network in dense_spectral_norms(plain)) > 1.5 * coeff


@pytest.mark.slow
def test_the_arms_sweep_their_own_ranges(tmp_path):
    task = gp_task(n=80, m=30, d=2)
    condition = ("toy", "gp", "bump", "random")
    sweeps = {arm: tune_arm("nn_edl", arm, task, SMALL, STUDY, tmp_path / f"{arm}.log",
                            condition) for arm in ARMS[1:]}
    wd = sweeps["wd"]
    assert len(wd.trials) == 3 and wd.config["spectral_norm"] is False
    for trial in wd.trials:
        assert 1e-2 <= trial["params"]["weight_decay"] <= 1.0
        assert "sn_coeff" not in trial["params"]
    assert 1e-2 <= wd.config["weight_decay"] <= 1.0
    sn = sweeps["sn"]
    assert sn.config["spectral_norm"] is True
    for trial in sn.trials:
        assert 0.5 <= trial["params"]["sn_coeff"] <= 3.0
        assert trial["params"]["weight_decay"] <= 1e-2  # the benchmark's own range
    # the fixed settings are kept, the rest searched
    assert all(sweeps[a].config["width"] == 16 for a in ARMS[1:])
    assert "learning_rate" in sn.searched and "n_blocks" not in sn.searched
    with pytest.raises(ValueError, match="not re-tuned"):
        arm_sweep("plain", [0.5, 3], [0.01, 1])


def test_a_record_judges_the_arm_against_the_oracle():
    task = gp_task(n=80, m=60, d=2)
    config = {**get_method("nn_lap").defaults, **SMALL, "n_samples": 16}
    row = instance_record("nn_lap", config, task, "plain", max_points=40)
    assert set(row) == set(RECORD_COLUMNS)
    assert row["status"] == "ok" and row["arm"] == "plain" and row["seed"] == 3
    assert row["grad_steps"] == 30 * math.ceil(80 / 64)
    assert math.isnan(row["sn_coeff"]) and row["preservation_points"] == 40
    # the record's numbers from the fitted method, recomputed by hand
    method = get_method("nn_lap")(**config, random_state=3).fit(task.x_train, task.y_train)
    pred = method.predict(task.x_eval)
    targets = task.eu_targets(pred.mean)
    ranks = pd.Series(pred.epistemic_var).rank()
    expected = ranks.corr(pd.Series(targets["posterior_variance"]).rank())
    assert row["rho_var"] == pytest.approx(expected, abs=1e-9)
    f = task.f_true_eval
    assert row["nmse"] == pytest.approx(np.mean((pred.mean - f) ** 2) / np.var(f))
    rows = preservation_rows(task, 40)
    inputs, (h,) = backbone_features(method, task.x_eval[rows])
    assert row["preservation"] == pytest.approx(local_distance_preservation(inputs, h))
    # the subset is fixed by the instance: the same for every arm and method
    assert np.array_equal(rows, preservation_rows(task, 40)) and rows.size == 40


@pytest.mark.slow
def test_backbone_features_follow_the_networks_the_eu_is_read_from():
    x, y = toy(n=60)
    ens = get_method("nn_ens")(**SMALL, n_members=3, random_state=0).fit(x, y)
    inputs, features = backbone_features(ens, x[:10])
    assert len(features) == 3 and all(h.shape == (10, 16) for h in features)
    assert not np.allclose(features[0], features[1])  # members differ
    assert np.allclose(inputs, ens.standardizer_.inputs(x[:10]))
    swag = get_method("nn_swag")(**SMALL, n_checkpoints=3, epochs_per_checkpoint=2,
                                 n_samples=8, random_state=0).fit(x, y)
    assert len(backbone_features(swag, x[:10])[1]) == 1
    with pytest.raises(ValueError, match="not fitted"):
        backbone_features(get_method("nn_edl")(**SMALL), x[:10])
    with pytest.raises(TypeError, match="not a method on the shared network"):
        backbone_features(get_method("blr")().fit(x, y), x)


def test_nmse_by_hand():
    assert nmse(np.array([1.0, 1.0]), np.array([0.0, 2.0])) == pytest.approx(1.0)
    assert math.isnan(nmse(np.zeros(3), np.ones(3)))


def test_records_round_trip_as_csv(tmp_path):
    frame = pd.DataFrame([dict.fromkeys(RECORD_COLUMNS, 1)])
    frame.to_csv(tmp_path / "r.csv", index=False)
    assert list(pd.read_csv(tmp_path / "r.csv").columns) == list(RECORD_COLUMNS)
    json.dumps(list(RECORD_COLUMNS))
