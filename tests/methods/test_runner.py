"""The guarded fit (``postrisk.methods.runner``): ``run_fit``, ``run_estimator`` and
``run_together`` build, fit and predict a method under its thread limit, time both phases,
validate the output with ``check_prediction`` and never raise — every failure is a fit record
with status "failed", NaN-filled arrays and an error text saying what went wrong."""

import logging
import math
import time

import numpy as np
import pytest

from postrisk.methods.blr import BayesianLinearRegression
from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.registry import make_method
from postrisk.methods.runner import (
    check_prediction,
    resolve_method,
    run_estimator,
    run_fit,
    run_together,
)
from tests.methods.method_doubles import _Good, _NaN


# -- throwaway methods (besides _Good and _NaN, shared: tests/methods/method_doubles.py) ------
class _Raises(_Good):
    name = "raises"

    def fit(self, x, y):
        raise RuntimeError("boom in fit")


class _WrongShape(_Good):
    name = "wrong_shape"

    def predict(self, x):
        p = super().predict(x)
        return Prediction(p.mean, p.aleatoric_var[:, None], p.epistemic_var)


class _NegativeVar(_Good):
    name = "negative_var"

    def predict(self, x):
        p = super().predict(x)
        return Prediction(p.mean, p.aleatoric_var, p.epistemic_var - 0.5)


class _PredictRaises(_Good):
    name = "predict_raises"

    def predict(self, x):
        raise ValueError("bad input")


class _NotAPrediction(_Good):
    name = "not_a_prediction"

    def predict(self, x):
        return {"mean": np.zeros(len(x))}


class _Echo(UncertaintyMethod):
    """Predicts its own settings: mean = random_state, AU = n_threads, EU = k; counts its fits
    and keeps the arrays it returned (``out_``)."""

    name = "echo"
    display_name = "Echo"
    defaults = {"k": 1.0}

    def fit(self, x, y):
        self.fits_ = getattr(self, "fits_", 0) + 1
        return self

    def predict(self, x):
        m = len(x)
        self.out_ = (np.full(m, float(self.random_state)), np.full(m, float(self.n_threads)),
                     np.full(m, float(self.k)))
        return Prediction(*self.out_)


class _Slow(_Good):
    name = "slow"

    def fit(self, x, y):
        time.sleep(0.06)
        return super().fit(x, y)

    def predict(self, x):
        time.sleep(0.03)
        return super().predict(x)


class _SlowPredictRaises(_Slow):
    name = "slow_predict_raises"

    def predict(self, x):
        time.sleep(0.03)
        raise KeyError("k")


class _ForgetsK(_Echo):
    """A constructor that does not store the declared hyper-parameter ``k``."""

    name = "forgets_k"

    def __init__(self, k=1.0, random_state=0, n_threads=1):
        self.random_state, self.n_threads = random_state, n_threads


#: Each call of ``_Batched.fit_together``: the list of methods it was given.
JOINT: list[list] = []


class _Batched(_Echo):
    """Trains its configurations as one program (``trial_batching``); ``fail_joint`` makes the
    joint fit raise, ``fail_alone`` a configuration's own fit."""

    name = "batched"
    defaults = {"fail_joint": False, "fail_alone": False}
    trial_batching = True

    @classmethod
    def fit_together(cls, methods, x, y):
        JOINT.append(list(methods))
        if any(m.fail_joint for m in methods):
            raise RuntimeError("joint program broke")
        time.sleep(0.06)
        for m in methods:
            m.joint_ = True

    def fit(self, x, y):
        if self.fail_alone:
            raise ValueError("this configuration is bad")
        return super().fit(x, y)


class _BatchedChild(_Batched):
    name = "batched_child"


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(50, 3))
    return x, x.sum(axis=1) + rng.normal(0, 0.1, 50), rng.uniform(size=(7, 3))


def _is_failed(rec, m: int) -> bool:
    return (rec.status == "failed" and not rec.ok and rec.error != ""
            and all(getattr(rec, k).shape == (m,) and np.isnan(getattr(rec, k)).all()
                    for k in ("mean", "aleatoric_var", "epistemic_var")))


# -- resolve_method ------------------------------------------------------------------------
def test_resolve_method_takes_a_registry_name_or_a_method_class():
    assert resolve_method("blr") is BayesianLinearRegression
    assert resolve_method(_Good) is _Good
    with pytest.raises(KeyError, match="unknown method 'no_such'"):
        resolve_method("no_such")
    for bad in (dict, _Good(), 3):
        with pytest.raises(TypeError) as err:
            resolve_method(bad)
        assert str(err.value) == ("expected an UncertaintyMethod subclass or a registry name, "
                                  f"got {bad!r}")


# -- check_prediction ----------------------------------------------------------------------
def test_check_prediction_accepts_valid_output():
    pred = Prediction(np.array([-3.0, 0.0, 2.0]), np.zeros(3), np.array([0.0, 1e-300, 5.0]))
    got, reason = check_prediction(pred, 3)
    assert got is pred and reason == ""  # negative means and zero variances are fine
    got, reason = check_prediction(([1, 2], [0, 1], [2, 3]), 2)  # a plain tuple, as lists
    assert reason == "" and isinstance(got, Prediction)
    for key, want in zip(("mean", "aleatoric_var", "epistemic_var"), ([1, 2], [0, 1], [2, 3]),
                         strict=True):
        assert getattr(got, key).dtype == np.float64
        np.testing.assert_array_equal(getattr(got, key), want)
    empty = Prediction(np.zeros(0), np.zeros(0), np.zeros(0))
    assert check_prediction(empty, 0) == (empty, "")


@pytest.mark.parametrize(("output", "reason"), [
    (None, "predict returned NoneType, expected Prediction (mean, aleatoric_var, "
           "epistemic_var)"),
    ((np.zeros(3), np.ones(3)), "predict returned tuple, expected Prediction"),
    ([np.zeros(3), np.ones(3), np.ones(3)], "predict returned list, expected Prediction"),
    ((["a", "b", "c"], np.ones(3), np.ones(3)),
     "output is not numeric: ValueError: could not convert string to float: 'a'"),
    ((np.zeros(2), np.ones(3), np.ones(3)), "mean has shape (2,), expected (3,)"),
    ((np.zeros(3), np.ones(3), np.ones((3, 1))), "epistemic_var has shape (3, 1), expected (3,)"),
    ((0.0, np.ones(3), np.ones(3)), "mean has shape (), expected (3,)"),
    ((np.zeros(3), [np.inf, 1.0, np.nan], np.ones(3)),
     "aleatoric_var has 2 non-finite value(s) (NaN or inf)"),
    ((np.zeros(3), [-1e-9, 0.0, -2.0], np.ones(3)),
     "aleatoric_var has 2 negative value(s) (min -2)"),
    ((np.zeros(3), np.ones(3), [0.0, -0.125, 1.0]),
     "epistemic_var has 1 negative value(s) (min -0.125)"),
    # the first fault found, in the order mean, AU, EU; non-finite before negative
    (([np.nan, 0.0, 0.0], np.ones(2), -np.ones(3)),
     "mean has 1 non-finite value(s) (NaN or inf)"),
    ((np.zeros(3), -np.ones(3), [np.nan, 1.0, 1.0]),
     "epistemic_var has 1 non-finite value(s) (NaN or inf)"),
    ((np.zeros(3), [-np.inf, 1.0, 1.0], np.ones(3)),
     "aleatoric_var has 1 non-finite value(s) (NaN or inf)"),
])
def test_check_prediction_says_what_is_wrong(output, reason):
    got, said = check_prediction(output, 3)
    assert got is None
    assert said.startswith(reason), said


# -- run_fit -------------------------------------------------------------------------------
def test_run_fit_ok_record(data):
    rec = run_fit(_Good, {"scale": 0.3}, *data, random_state=0)
    assert rec.ok and rec.status == "ok" and rec.error == ""
    assert rec.method == "good"
    assert rec.config == {"scale": 0.3, "act": "tanh"}  # resolved, defaults included
    assert rec.mean.shape == rec.aleatoric_var.shape == rec.epistemic_var.shape == (7,)
    assert rec.fit_seconds >= 0 and rec.predict_seconds >= 0
    np.testing.assert_array_equal(rec.aleatoric_var, 0.3)


@pytest.mark.parametrize("cls, message", [
    (_Raises, "fit raised RuntimeError: boom in fit"),
    (_PredictRaises, "predict raised ValueError: bad input"),
    (_WrongShape, "invalid output: aleatoric_var has shape (7, 1), expected (7,)"),
    (_NegativeVar, "invalid output: epistemic_var has 3 negative value(s) (min -0.5)"),
    (_NaN, "invalid output: mean has 1 non-finite value(s)"),
    (_NotAPrediction, "invalid output: predict returned dict, expected Prediction"),
])
def test_run_fit_turns_every_failure_into_a_failed_record(data, cls, message):
    rec = run_fit(cls, {}, *data, random_state=0)
    assert rec.status == "failed" and not rec.ok
    assert message in rec.error
    assert rec.method == cls.name
    for arr in (rec.mean, rec.aleatoric_var, rec.epistemic_var):
        assert arr.shape == (7,) and np.isnan(arr).all()
    if cls is _Raises:
        assert rec.fit_seconds >= 0 and math.isnan(rec.predict_seconds)


def test_run_fit_never_raises_on_bad_names_configs_or_inputs(data):
    x, y, xe = data
    rec = run_fit("no_such_method", {}, x, y, xe, random_state=0)
    assert rec.status == "failed" and "KeyError" in rec.error and "no_such_method" in rec.error
    rec = run_fit(_Good, {"width": 3}, x, y, xe, random_state=0)
    assert rec.status == "failed" and "construction raised TypeError" in rec.error
    assert rec.config == {"width": 3}
    rec = run_fit(_Good, {}, x, y, xe, random_state=0, n_threads=0)
    assert rec.status == "failed" and "n_threads must be >= 1, got 0" in rec.error
    rec = run_fit("blr", {}, x, y[:10], xe, random_state=0)  # mismatched y
    assert rec.status == "failed" and rec.error.startswith("fit raised ValueError")
    rec = run_fit("blr", {}, x, y, None, random_state=0)
    assert rec.status == "failed" and rec.mean.shape == (0,)


def test_run_fit_accepts_a_plain_tuple_from_predict(data):
    class _Tuple(_Good):
        name = "tuple"

        def predict(self, x):
            p = super().predict(x)
            return p.mean, p.aleatoric_var, p.epistemic_var

    assert run_fit(_Tuple, {}, *data, random_state=0).ok


def test_run_fit_is_a_direct_fit_of_the_method(data):
    """By name, the record holds exactly what the method predicts when fitted by hand, and the
    configuration with the defaults filled in; the same seed gives the same record."""
    x, y, xe = data
    config = {"tol": 1e-6, "prior_precision": 2.0}
    rec = run_fit("blr", config, x, y, xe, random_state=3)
    direct = make_method("blr", config, random_state=3).fit(x, y).predict(xe)
    assert rec.ok and rec.method == "blr"
    assert rec.config == {**BayesianLinearRegression.defaults, **config}
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(rec, key), getattr(direct, key))
    again = run_fit(BayesianLinearRegression, config, x, y, xe, random_state=3)
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(again, key), getattr(rec, key))
    assert config == {"tol": 1e-6, "prior_precision": 2.0}  # the caller's dict is untouched


def test_run_fit_builds_the_method_with_the_seed_threads_and_config(data):
    rec = run_fit(_Echo, {"k": 2.5}, *data, random_state=7, n_threads=2)
    assert rec.ok and rec.config == {"k": 2.5}
    np.testing.assert_array_equal(rec.mean, 7.0)
    np.testing.assert_array_equal(rec.aleatoric_var, 2.0)
    np.testing.assert_array_equal(rec.epistemic_var, 2.5)
    rec = run_fit(_Echo, None, *data, random_state=0)  # no config: the defaults
    assert rec.ok and rec.config == {"k": 1.0}


def test_a_failed_construction_keeps_the_given_config_and_names_the_method(data):
    x, y, xe = data
    config = {"width": 3}
    rec = run_fit(_Good, config, x, y, xe, random_state=0)
    config["width"] = 4  # the record holds a copy
    assert _is_failed(rec, 7) and rec.method == "good" and rec.config == {"width": 3}
    assert math.isnan(rec.fit_seconds) and math.isnan(rec.predict_seconds)  # never reached
    rec = run_fit(dict, {}, x, y, xe, random_state=0)  # not a method class
    assert _is_failed(rec, 7) and rec.method == "dict"
    assert rec.error == ("construction raised TypeError: expected an UncertaintyMethod subclass "
                         "or a registry name, got <class 'dict'>")
    rec = run_fit(_Good(), {}, x, y, xe, random_state=0)  # an instance, not its class
    assert _is_failed(rec, 7) and rec.method == "good" and "got _Good(" in rec.error
    rec = run_fit("no_such", {"a": 1}, x, y, xe.tolist(), random_state=0)  # rows of a list
    assert _is_failed(rec, 7) and rec.method == "no_such" and rec.config == {"a": 1}
    assert rec.error.startswith("construction raised KeyError: \"unknown method 'no_such'")


def test_run_fit_times_each_phase(data):
    rec = run_fit(_Slow, {}, *data, random_state=0)
    assert rec.ok and rec.fit_seconds >= 0.06 and rec.predict_seconds >= 0.03
    rec = run_fit(_SlowPredictRaises, {}, *data, random_state=0)
    assert _is_failed(rec, 7) and rec.error == "predict raised KeyError: 'k'"
    assert rec.fit_seconds >= 0.06 and rec.predict_seconds >= 0.03  # both phases were run
    rec = run_fit(_NaN, {}, *data, random_state=0)  # an invalid output: both phases timed
    assert rec.fit_seconds >= 0 and rec.predict_seconds >= 0


def test_fit_and_predict_run_under_the_thread_limit(data):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not threadpoolctl.threadpool_info():
        pytest.skip("no BLAS/OpenMP thread pool loaded")
    seen = []

    class _Looks(_Good):
        name = "looks"

        def fit(self, x, y):
            seen.append({p["num_threads"] for p in threadpoolctl.threadpool_info()})
            return super().fit(x, y)

        def predict(self, x):
            seen.append({p["num_threads"] for p in threadpoolctl.threadpool_info()})
            return super().predict(x)

    before = [p["num_threads"] for p in threadpoolctl.threadpool_info()]
    assert run_fit(_Looks, {}, *data, random_state=0, n_threads=1).ok
    assert seen == [{1}, {1}]
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info()] == before  # restored


def test_bad_thread_counts_fail_before_the_fit(data):
    x, y, xe = data
    rec = run_fit(_Echo, {}, x, y, xe, random_state=0, n_threads=-1)
    assert _is_failed(rec, 7) and rec.error == "fit raised ValueError: n_threads must be >= 1, " \
                                               "got -1"
    assert math.isnan(rec.fit_seconds) and math.isnan(rec.predict_seconds)
    rec = run_fit(_Echo, {}, x, y, xe, random_state=0, n_threads="two")
    assert _is_failed(rec, 7) and rec.error.startswith("fit raised ValueError: invalid literal")


def test_an_output_that_raises_when_read_is_a_failed_record(data):
    class _Explodes:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("cannot read me")

    class _Odd(_Good):
        name = "odd"

        def predict(self, x):
            return _Explodes(), np.ones(len(x)), np.ones(len(x))

    rec = run_fit(_Odd, {}, *data, random_state=0)
    assert _is_failed(rec, 7)
    assert rec.error == "output check raised RuntimeError: cannot read me"


def test_run_fit_never_raises_even_when_the_config_cannot_be_read(data):
    rec = run_fit(_ForgetsK, {}, *data, random_state=0)
    assert _is_failed(rec, 7) and "AttributeError" in rec.error


# -- run_estimator -------------------------------------------------------------------------
def test_run_estimator_records_copies_and_the_instance_config(data):
    x, y, xe = data
    method = _Echo(k=4.0, random_state=2)
    rec = run_estimator(method, x, y, xe)
    assert rec.ok and rec.method == "echo" and method.fits_ == 1
    assert rec.config == {"k": 4.0} == method.hyperparameters()
    for arr in method.out_:  # the method's own arrays change later: the record does not
        arr[:] = -1.0
    np.testing.assert_array_equal(rec.mean, 2.0)
    np.testing.assert_array_equal(rec.epistemic_var, 4.0)


def test_run_estimator_of_a_fitted_instance_only_predicts(data):
    x, y, xe = data
    method = _Echo().fit(x, y)
    rec = run_estimator(method, x, y, xe, fitted_seconds=0.25)
    assert rec.ok and method.fits_ == 1  # not fitted again
    assert rec.fit_seconds == 0.25 and rec.predict_seconds >= 0
    fitted = _Raises()  # fitted by other means: its own fit, which raises, is never called
    fitted.mu_ = 0.5
    rec = run_estimator(fitted, x, y, xe, fitted_seconds=1.5)
    assert rec.ok and rec.fit_seconds == 1.5
    np.testing.assert_array_equal(rec.mean, 0.5)
    rec = run_estimator(_PredictRaises(), x, y, xe, fitted_seconds=1.5)
    assert _is_failed(rec, 7) and rec.fit_seconds == 1.5
    assert rec.error == "predict raised ValueError: bad input"


# -- run_together --------------------------------------------------------------------------
def test_run_together_of_no_methods_is_empty(data):
    assert run_together([], *data) == []


def test_run_together_fits_one_program_where_the_class_can(data):
    JOINT.clear()
    methods = [_Batched(random_state=s) for s in range(3)]
    t0 = time.perf_counter()
    recs = run_together(methods, *data)
    elapsed = time.perf_counter() - t0
    assert len(JOINT) == 1 and all(a is b for a, b in zip(JOINT[0], methods, strict=True))
    assert all(m.joint_ and not hasattr(m, "fits_") for m in methods)  # never fitted alone
    assert [r.status for r in recs] == ["ok"] * 3
    assert [float(r.mean[0]) for r in recs] == [0.0, 1.0, 2.0]  # in the given order
    # each record carries an equal share of the joint fit's time (at least its 0.06 s sleep)
    shares = [r.fit_seconds for r in recs]
    assert len(set(shares)) == 1 and 0.06 <= sum(shares) <= elapsed
    assert all(r.predict_seconds >= 0 for r in recs)


@pytest.mark.parametrize("methods", [
    [_Batched()],  # one configuration
    [_Batched(), _BatchedChild()],  # not all of one class
    [_Echo(), _Echo(random_state=1)],  # a class that does not batch its trials
], ids=["one", "mixed", "no-batching"])
def test_run_together_fits_each_alone_otherwise(data, methods):
    JOINT.clear()
    recs = run_together(methods, *data)
    assert JOINT == [] and all(m.fits_ == 1 for m in methods)
    assert [r.method for r in recs] == [m.name for m in methods]
    assert all(r.ok and r.fit_seconds >= 0 for r in recs)


def test_a_failed_joint_fit_falls_back_to_one_fit_each(data, caplog):
    JOINT.clear()
    methods = [_Batched(fail_joint=True), _Batched(fail_alone=True), _Batched(random_state=5)]
    with caplog.at_level(logging.WARNING, logger="postrisk.methods.runner"):
        recs = run_together(methods, *data)
    assert len(JOINT) == 1
    assert ("batched: fitting 3 configurations together raised RuntimeError: joint program "
            "broke; fitting each alone") in caplog.text
    assert [m.__dict__.get("fits_", 0) for m in methods] == [1, 0, 1]
    assert [r.status for r in recs] == ["ok", "failed", "ok"]  # one bad configuration
    assert recs[1].error == "fit raised ValueError: this configuration is bad"
    np.testing.assert_array_equal(recs[2].mean, 5.0)


def test_the_joint_fit_runs_under_the_first_methods_thread_limit(data, monkeypatch):
    import postrisk.methods.runner as runner

    limits, original = [], runner.thread_limit

    def recording(n):
        limits.append(n)
        return original(n)

    monkeypatch.setattr(runner, "thread_limit", recording)
    run_together([_Batched(n_threads=2), _Batched(n_threads=3)], *data)
    assert limits == [2, 2, 3]  # the joint fit, then each prediction under its own
