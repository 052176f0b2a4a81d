"""``build_sample(noise_strength=…)``: the default is the configured strength, bit for bit, and
another strength changes the noise variances and y only (benchmarks/noise_baseline.py)."""

import json

import numpy as np
import pytest

from postrisk.covariates.build import Covariates
from postrisk.gp.kernels import default_kernel
from postrisk.tasks.generate import TaskKey, build_sample
from postrisk.tasks.noise import NOISE_STRENGTH, fit_noise_model


@pytest.fixture(scope="module")
def concrete(offline_covariates):
    return Covariates(offline_covariates["concrete"])


@pytest.fixture(scope="module")
def gp_params(concrete):
    kernel = default_kernel(("rq", "linear"), concrete.x.shape[1])
    return {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.0}


def test_default_strength_unchanged_and_other_strength_honoured(concrete, gp_params):
    key = TaskKey("concrete", "gp", "smooth_monotone", "balanced", 0)
    default = build_sample(key, concrete, gp_params, 100)
    explicit = build_sample(key, concrete, gp_params, 100, noise_strength=NOISE_STRENGTH)
    strong = build_sample(key, concrete, gp_params, 100, noise_strength=2.0)
    for name in ("train_index", "f_true_eval", "y_train", "noise_var_eval", "noise_var_train"):
        assert np.array_equal(default[name].values, explicit[name].values), name
    assert json.loads(default.attrs["noise_model"])["strength"] == NOISE_STRENGTH

    assert json.loads(strong.attrs["noise_model"])["strength"] == 2.0
    pool = concrete.ds["pc1_score"].values[concrete.eval_index]
    expected = fit_noise_model("smooth_monotone", pool, 0.23, strength=2.0).variance(pool, pool)
    assert np.allclose(strong["noise_var_eval"].values, expected, rtol=1e-12)
    # log σ²_ε = c + s·h̃ with h̃ of SD 1 over the pool: its SD over the pool is the strength
    assert np.std(np.log(strong["noise_var_eval"].values)) == pytest.approx(2.0, rel=1e-9)
    assert strong["noise_var_eval"].values.mean() == pytest.approx(0.23, rel=1e-10)
    # the training inputs and f* do not depend on the strength; y does
    for name in ("train_index", "f_true_eval", "f_true_train"):
        assert np.array_equal(default[name].values, strong[name].values), name
    assert not np.allclose(default["y_train"].values, strong["y_train"].values)


def test_the_strength_is_a_config_key_inside_the_sample_digest(tmp_path):
    """config.yaml's ``noise_model.strength`` is the library's default and reaches every sample
    unit; another strength gives every sample store another config digest (so the workflow
    rebuilds the samples, and with them everything downstream)."""
    import yaml

    from postrisk.grid.config import default_config_path
    from postrisk.planning.planner import Planner
    from postrisk.tasks.key import config_digest

    base = yaml.safe_load(default_config_path().read_text())
    assert base["noise_model"]["strength"] == NOISE_STRENGTH
    other = {**base, "noise_model": {"strength": NOISE_STRENGTH + 0.5}}
    for prior in ("gp", "hbart", "bnn"):
        assert config_digest(other, prior) != config_digest(base, prior)
    layer = tmp_path / "strength.yaml"
    layer.write_text(yaml.safe_dump({"noise_model": {"strength": 2.0}}))
    demo = default_config_path().parent / "presets" / "demo.yaml"
    units = {u.key: u for u in Planner.from_files(default_config_path(), demo).units["sample"]}
    strong = {u.key: u for u in Planner.from_files(default_config_path(), demo,
                                                   layer).units["sample"]}
    assert units.keys() == strong.keys()
    for key, unit in units.items():
        assert unit.noise_strength == NOISE_STRENGTH and strong[key].noise_strength == 2.0
        assert unit.digest != strong[key].digest
