"""Early stopping of a sweep's trials: the rungs, the toy sweep it must not mislead, and that a
stopped trial is recorded, counted and never the winner."""

from typing import ClassVar

import numpy as np
import pytest

from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.tuning import mean_gaussian_nll, split_indices, tune
from postrisk.tuning.early_stopping import EarlyStopping, max_steps


class SlowBias(UncertaintyMethod):
    """A toy method that reports along ``n_steps`` steps: after step s its mean is the training
    mean plus ``bias + 5/s`` (AU 1, EU 0). Every configuration's validation loss falls along
    the fit and the order of the configurations is the same at every step."""

    name: ClassVar[str] = "slow_bias"
    display_name: ClassVar[str] = "toy"
    defaults: ClassVar[dict] = {"bias": 0.0, "kind": "a", "n_steps": 90}
    search_space: ClassVar[dict] = {"bias": ("categorical", [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]),
                                    "kind": ("categorical", ["a", "b"])}
    iterations_parameter: ClassVar[str] = "n_steps"
    steps_run = 0

    def _at(self, step, n):
        return Prediction(np.full(n, self.m_ + self.bias + 5.0 / step), np.ones(n), np.zeros(n))

    def fit(self, x, y, monitor=None):
        self.m_ = float(np.mean(y))
        marks = monitor.checkpoints(self.n_steps) if monitor is not None else []
        for step in range(1, self.n_steps + 1):
            type(self).steps_run += 1
            if step in marks:
                monitor.report(step, self._at(step, len(monitor.inputs)))
        return self

    def predict(self, x):
        return self._at(self.n_steps, len(x))


def toy_data(n=200):
    """Inputs and targets whose sweep split has equal means on both sides (so that bias 0 is
    the best configuration)."""
    rng = np.random.default_rng(3)
    y = rng.standard_normal(n)
    fit, val = split_indices(n, 0.2)
    y[val] += y[fit].mean() - y[val].mean()
    return rng.uniform(size=(n, 2)), y


def test_rungs_follow_the_longest_configuration():
    halving = EarlyStopping("successive_halving", 3)
    assert halving.checkpoints(90) == [10, 30]
    assert halving.checkpoints(800) == [89, 267]
    assert EarlyStopping("successive_halving", 3, rungs=3).checkpoints(800) == [30, 90, 270]
    assert EarlyStopping().checkpoints(800) == [] and not EarlyStopping().enabled
    assert EarlyStopping("median").checkpoints(500) == [56, 168]
    with pytest.raises(ValueError, match="rule"):
        EarlyStopping("asha")
    with pytest.raises(ValueError, match="reduction_factor"):
        EarlyStopping("successive_halving", 1)
    chosen = {"rule": "median", "methods": ["dkl"]}
    assert EarlyStopping.of(chosen, "dkl") == EarlyStopping("median")
    assert EarlyStopping.of(chosen, "ngboost_bag") == EarlyStopping()
    assert EarlyStopping.of({"rule": "median", "methods": None}, "vlgp").enabled
    with pytest.raises(ValueError, match="rungs"):
        EarlyStopping("successive_halving", 3, rungs=0)
    space = {"n_estimators": ("int", 200, 800)}

    class Booster:
        iterations_parameter = "n_estimators"
        defaults = {"n_estimators": 400}

    assert max_steps(Booster, space, {}) == 800
    assert max_steps(Booster, {}, {"n_estimators": 300}) == 300
    assert max_steps(Booster, {}, {}) == 400
    assert max_steps(type("Plain", (), {}), space, {}) is None


def test_an_early_stopped_sweep_selects_what_the_full_sweep_selects(tmp_path):
    x, y = toy_data()
    SlowBias.steps_run = 0
    full = tune(SlowBias, x, y, journal=tmp_path / "full.log", n_trials=30)
    full_steps = SlowBias.steps_run
    SlowBias.steps_run = 0
    early = tune(SlowBias, x, y, journal=tmp_path / "early.log", n_trials=30,
                 early_stopping={"rule": "successive_halving"})
    assert early.study_name != full.study_name  # a sweep of its own, never continued
    assert len(early.trials) == 30 and SlowBias.steps_run < 0.6 * full_steps
    stopped = [t for t in early.trials if t["state"] == "PRUNED"]
    assert stopped and all(t["stopped_at"] in (10, 30) for t in stopped)
    assert early.searched["bias"] == full.searched["bias"] == 0.0
    assert early.best_value == pytest.approx(full.best_value)
    # each stopped trial was worse at its stopping point than the winner there
    _, val = split_indices(len(y), 0.2)
    fit_idx = np.setdiff1d(np.arange(len(y)), val)
    winner = SlowBias(**early.config).fit(x[fit_idx], y[fit_idx])
    for t in stopped:
        at_stop = SlowBias(**{**early.config, **t["params"]}).fit(x[fit_idx], y[fit_idx])
        step = t["stopped_at"]
        mine = at_stop._at(step, len(val))
        best = winner._at(step, len(val))
        assert (mean_gaussian_nll(y[val], mine.mean, mine.total_var)
                > mean_gaussian_nll(y[val], best.mean, best.total_var))
    # resumed after 12 trials, the sweep stops the same trials
    part = tune(SlowBias, x, y, journal=tmp_path / "resumed.log", n_trials=30,
                early_stopping={"rule": "successive_halving"}, max_new_trials=12)
    assert len(part.trials) == 12
    resumed = tune(SlowBias, x, y, journal=tmp_path / "resumed.log", n_trials=30,
                   early_stopping={"rule": "successive_halving"})
    assert ([(t["state"], t["params"]) for t in resumed.trials]
            == [(t["state"], t["params"]) for t in early.trials])


def test_early_stopping_does_not_apply_to_a_method_that_reports_no_steps(tmp_path):
    class Plain(UncertaintyMethod):
        name: ClassVar[str] = "plain_toy"
        display_name: ClassVar[str] = "toy"
        defaults: ClassVar[dict] = {"au": 1.0}
        search_space: ClassVar[dict] = {"au": ("float", 0.1, 10.0, "log")}

        def fit(self, x, y):
            self.m_ = float(np.mean(y))
            return self

        def predict(self, x):
            n = len(x)
            return Prediction(np.full(n, self.m_), np.full(n, self.au), np.zeros(n))

    x, y = toy_data()
    plain = tune(Plain, x, y, journal=tmp_path / "a.log", n_trials=5)
    asked = tune(Plain, x, y, journal=tmp_path / "b.log", n_trials=5,
                 early_stopping={"rule": "successive_halving"})
    assert asked.study_name == plain.study_name and asked.config == plain.config
