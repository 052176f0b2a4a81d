"""Tuning (docs/design.md, "Tuning"): the objective, the split, determinism, resumption and
failed trials."""

import json
import logging
import math
from typing import ClassVar

import numpy as np
import pytest

from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.runner import run_fit
from postrisk.tuning import TuningResult, mean_gaussian_nll, split_indices, tune


def logged(caplog) -> list[str]:
    """The sweep's log lines so far (then forgotten)."""
    lines = [r.getMessage() for r in caplog.records if r.name == "postrisk.tuning.sweep"]
    caplog.clear()
    return lines


def data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 3))
    return x, x @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_normal(n)


class ShrunkMean(UncertaintyMethod):
    """A toy method: mean = shrink·ȳ + slope·x₀; AU = au; EU = eu; raises when shrink > 0.9."""

    name: ClassVar[str] = "shrunk_mean"
    display_name: ClassVar[str] = "toy"
    defaults: ClassVar[dict] = {"shrink": 0.5, "au": 1.0, "eu": 0.0, "kind": "a"}
    search_space: ClassVar[dict] = {"shrink": ("float", 0.0, 1.0), "au": ("float", 0.01, 10.0,
                                                                          "log"),
                                    "kind": ("categorical", ["a", "b"])}
    fits = 0

    def fit(self, x, y):
        type(self).fits += 1
        if self.shrink > 0.9:
            raise RuntimeError("shrink too large")
        self.m_ = self.shrink * float(np.mean(y))
        return self

    def predict(self, x):
        m = np.full(len(x), self.m_)
        return Prediction(m, np.full(len(x), self.au), np.full(len(x), self.eu))


def test_gaussian_nll_by_hand():
    # ½ log(2π·4) + (3 − 1)²/(2·4) = ½ log 8π + ½
    expected = 0.5 * math.log(8 * math.pi) + 0.5
    assert mean_gaussian_nll([3.0], [1.0], [4.0]) == pytest.approx(expected)
    # the mean over points
    two = mean_gaussian_nll([3.0, 0.0], [1.0, 0.0], [4.0, 1.0])
    assert two == pytest.approx(0.5 * (0.5 * math.log(8 * math.pi) + 0.5
                                       + 0.5 * math.log(2 * math.pi)))
    assert mean_gaussian_nll([0.0], [0.0], [0.0]) == math.inf
    with pytest.raises(ValueError, match="shapes"):
        mean_gaussian_nll([0.0, 1.0], [0.0], [1.0])


def test_split_is_uniform_fixed_and_80_20():
    fit, val = split_indices(101, 0.2, "concrete", "gp", "bump", "ood")
    assert len(val) == 20 and len(fit) == 81
    assert not set(fit) & set(val) and set(fit) | set(val) == set(range(101))
    again = split_indices(101, 0.2, "concrete", "gp", "bump", "ood")
    np.testing.assert_array_equal(val, again[1])
    other = split_indices(101, 0.2, "concrete", "gp", "bump", "balanced")
    assert not np.array_equal(val, other[1])
    # not a block of rows: a uniformly random subset
    assert val.max() - val.min() > 50
    with pytest.raises(ValueError, match="validation_fraction"):
        split_indices(10, 1.0)


def test_objective_is_the_nll_of_au_plus_eu_on_the_held_out_rows(tmp_path):
    x, y = data()
    res = tune("blr", x, y, journal=tmp_path / "j.log", n_trials=5, startup_trials=2,
               split_key=("c",))
    fit, val = split_indices(len(y), 0.2, "c")
    rec = run_fit("blr", res.config, x[fit], y[fit], x[val], random_state=0)
    expect = mean_gaussian_nll(y[val], rec.mean, rec.aleatoric_var + rec.epistemic_var)
    assert res.best_value == pytest.approx(expect, rel=1e-12)
    assert res.best_value == min(t["value"] for t in res.trials if t["state"] == "COMPLETE")
    assert res.split == {"validation_fraction": 0.2, "key": ["c"], "n_fit": 120,
                         "n_validation": 30}


def test_same_seed_same_configuration_and_fixed_entries_are_not_searched(tmp_path):
    x, y = data(seed=1)
    kw = dict(n_trials=8, startup_trials=3, split_key=("c",),
              fixed={"eu": 0.25})
    a = tune(ShrunkMean, x, y, journal=tmp_path / "a.log", **kw)
    b = tune(ShrunkMean, x, y, journal=tmp_path / "b.log", **kw)
    assert a.config == b.config and a.best_trial == b.best_trial
    assert [t["params"] for t in a.trials] == [t["params"] for t in b.trials]
    assert a.config["eu"] == 0.25 and "eu" not in a.searched
    assert all(set(t["params"]) == {"shrink", "au", "kind"} for t in a.trials)
    # another sampler seed proposes other configurations
    c = tune(ShrunkMean, x, y, journal=tmp_path / "c.log", sampler_seed=7, **kw)
    assert [t["params"] for t in c.trials] != [t["params"] for t in a.trials]
    with pytest.raises(ValueError, match="not hyper-parameters"):
        tune(ShrunkMean, x, y, journal=tmp_path / "d.log", fixed={"depth": 3})


def test_an_interrupted_sweep_resumes_from_its_journal(tmp_path, caplog):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    x, y = data(seed=2)
    kw = dict(n_trials=10, startup_trials=3, split_key=("c",))
    whole = tune(ShrunkMean, x, y, journal=tmp_path / "whole.log", **kw)

    journal = tmp_path / "parts.log"
    first = tune(ShrunkMean, x, y, journal=journal, max_new_trials=4, **kw)
    assert len(first.trials) == 4
    # a process killed mid-trial leaves a RUNNING trial in the journal
    storage = JournalStorage(JournalFileBackend(str(journal)))
    optuna.load_study(study_name=first.study_name, storage=storage).ask()
    ShrunkMean.fits = 0
    caplog.set_level(logging.INFO, logger="postrisk")
    caplog.clear()
    resumed = tune(ShrunkMean, x, y, journal=journal, **kw)
    lines = logged(caplog)
    assert any("resuming" in line and "4 of 10" in line for line in lines)
    # one progress line per new trial (a sweep of <= 20 trials), with the best value so far
    steps = [line for line in lines if " — trial " in line]
    assert len(steps) == 6 and ShrunkMean.fits <= 6  # repeats of a configuration are not refitted
    assert steps[0].split(": ", 1)[1].startswith("5/10 (50%)") and "best NLL" in steps[-1]
    assert lines[-2].startswith(f"[tune {ShrunkMean.name}] trials: done, 10/10 steps in ")
    assert [t["params"] for t in resumed.trials] == [t["params"] for t in whole.trials]
    assert resumed.config == whole.config and resumed.best_value == whole.best_value
    # a finished sweep resumed again runs nothing
    ShrunkMean.fits = 0
    again = tune(ShrunkMean, x, y, journal=journal, **kw)
    assert ShrunkMean.fits == 0 and again.config == whole.config
    # the result round-trips through JSON
    assert TuningResult.from_json(again.to_json()).config == again.config


def test_failed_trials_are_recorded_and_all_failing_falls_back_to_defaults(tmp_path):
    x, y = data(seed=3)
    res = tune(ShrunkMean, x, y, journal=tmp_path / "f.log", n_trials=12, startup_trials=12,
               split_key=("c",))
    failed = [t for t in res.trials if t["state"] == "FAIL"]
    assert failed and all("shrink too large" in t["error"] for t in failed)
    assert all(t["params"]["shrink"] > 0.9 for t in failed)
    assert res.config["shrink"] <= 0.9
    doomed = tune(ShrunkMean, x, y, journal=tmp_path / "g.log", n_trials=3, startup_trials=3,
                  fixed={"shrink": 0.95}, split_key=("c",))
    assert doomed.best_trial is None and "defaults" in doomed.note
    assert doomed.config == {**ShrunkMean.defaults, "shrink": 0.95}
    payload = json.loads(doomed.to_json())
    assert payload["schema_version"] == "tuning-1" and len(payload["trials"]) == 3


def test_a_sweep_notices_changed_data_or_method_code(tmp_path, caplog):
    x, y = data(seed=4)
    kw = dict(n_trials=5, startup_trials=2, split_key=("c",))
    journal = tmp_path / "sweep.log"
    first = tune(ShrunkMean, x, y, journal=journal, **kw)
    assert first.data_digest and first.implementation_version == 1
    # unchanged: resumed, nothing refitted, same sweep
    ShrunkMean.fits = 0
    caplog.set_level(logging.INFO, logger="postrisk")
    caplog.clear()
    again = tune(ShrunkMean, x, y, journal=journal, **kw)
    lines = logged(caplog)
    assert ShrunkMean.fits == 0 and again.study_name == first.study_name
    assert any("resuming" in line and "5 of 5" in line for line in lines)
    assert not list(tmp_path.glob("sweep.log.set-aside-*"))
    # one training target changed: the old journal is set aside with a message, a new sweep
    y2 = y.copy()
    y2[17] += 1e-9
    changed = tune(ShrunkMean, x, y2, journal=journal, **kw)
    lines = logged(caplog)
    assert changed.study_name != first.study_name and changed.data_digest != first.data_digest
    assert len(changed.trials) == 5 and not any("resuming" in line for line in lines)
    aside = list(tmp_path.glob("sweep.log.set-aside-*"))
    assert len(aside) == 1 and any("set aside" in line and first.study_name in line
                                   for line in lines)

    # the method's implementation version changed: a new sweep as well
    class ShrunkMeanV2(ShrunkMean):
        implementation_version: ClassVar[int] = 2

    journal2 = tmp_path / "v.log"
    tune(ShrunkMean, x, y, journal=journal2, **kw)
    caplog.clear()
    v2 = tune(ShrunkMeanV2, x, y, journal=journal2, **kw)
    lines = logged(caplog)
    assert v2.implementation_version == 2 and v2.study_name != first.study_name
    assert any("set aside" in line for line in lines)
    assert not any("resuming" in line for line in lines)
