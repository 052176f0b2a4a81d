"""A method that reports along its fit (``iterations_parameter``, ``fit(..., monitor=)``):
with a monitor that never stops it, the fit is the plain fit bit for bit and the reports come
at the monitor's checkpoints; a monitor that stops it ends the fit through ``run_fit``."""

import numpy as np
import pytest

from postrisk.methods.interface import FitStopped
from postrisk.methods.registry import get_method, make_method
from postrisk.methods.runner import run_fit
from postrisk.methods.table import METHOD_ENTRIES
from postrisk.tuning import mean_gaussian_nll

#: Short fits of each reporting method (the test is about the reports, not the fit's quality).
SHORT = {"dkl": {"num_iters": 24, "warmup_steps": 4, "hidden_dim": 16},
         "vlgp": {"num_iters": 40, "num_inducing": 16},
         "ngboost_bag": {"n_estimators": 30, "n_regressors": 3},
         "ngboost_nig": {"n_estimators": 30}}
REPORTING = [name for name in METHOD_ENTRIES if get_method(name).iterations_parameter]


class Recorder:
    """Reports at steps 5 and 15, scored against held-out targets; stops at ``stop_at``."""

    def __init__(self, inputs, targets, stop_at=None):
        self.inputs, self.targets, self.stop_at = inputs, targets, stop_at
        self.reports = []

    def checkpoints(self, total_steps):
        return [s for s in (5, 15) if s < total_steps]

    def report(self, step, prediction):
        self.reports.append((step, mean_gaussian_nll(self.targets, prediction.mean,
                                                     prediction.total_var)))
        if step == self.stop_at:
            raise FitStopped(f"stopped at {step}")


def data():
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, size=(160, 3))
    y = np.sin(x[:, 0]) + 0.2 * x[:, 1] + rng.normal(0, 0.3, 160)
    return x[:120], y[:120], x[120:], y[120:]


def test_the_reporting_methods_are_those_expected():
    assert {"dkl", "ngboost_nig", "vlgp", "ngboost_bag"} <= set(REPORTING) <= set(SHORT)


@pytest.mark.parametrize("name", REPORTING)
def test_a_monitor_that_never_stops_leaves_the_fit_unchanged(name):
    x, y, x_val, y_val = data()
    plain = make_method(name, SHORT[name], random_state=3).fit(x, y)
    recorder = Recorder(x_val, y_val)
    watched = make_method(name, SHORT[name], random_state=3).fit(x, y, monitor=recorder)
    for a, b in zip(plain.predict(x_val).__dict__.values(),
                    watched.predict(x_val).__dict__.values(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert [s for s, _ in recorder.reports] == [5, 15]
    assert all(np.isfinite(v) for _, v in recorder.reports)
    # the last report is the loss the partly fitted model has: it differs from the end's
    final = plain.predict(x_val)
    assert recorder.reports[-1][1] != mean_gaussian_nll(y_val, final.mean, final.total_var)


@pytest.mark.parametrize("name", REPORTING)
def test_a_monitor_ends_the_fit_through_run_fit(name):
    x, y, x_val, y_val = data()
    recorder = Recorder(x_val, y_val, stop_at=5)
    with pytest.raises(FitStopped, match="stopped at 5"):
        run_fit(name, SHORT[name], x, y, x_val, random_state=0, monitor=recorder)
    assert [s for s, _ in recorder.reports] == [5]
    # a method that reports nothing fails the fit with a monitor (run_fit never raises)
    record = run_fit("blr", {}, x, y, x_val, random_state=0, monitor=recorder)
    assert not record.ok and "takes no monitor" in record.error


def test_the_bags_rounds_continue_each_members_random_stream_on_worker_processes():
    x, y, x_val, y_val = data()
    settings = {"n_estimators": 30, "n_regressors": 3, "minibatch_frac": 0.7,
                "col_sample": 0.6}
    plain = make_method("ngboost_bag", settings, random_state=2, n_threads=2).fit(x, y)
    watched = make_method("ngboost_bag", settings, random_state=2, n_threads=2).fit(
        x, y, monitor=Recorder(x_val, y_val))
    for a, b in zip(plain.member_predictions(x_val), watched.member_predictions(x_val),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(plain.members_, watched.members_, strict=True):
        assert a.scalings == b.scalings and len(a.base_models) == 30
        assert ({k: v for k, v in a.get_params(deep=False).items() if k != "Base"}
                == {k: v for k, v in b.get_params(deep=False).items() if k != "Base"})
