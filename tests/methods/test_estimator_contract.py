"""Every built-in method is a scikit-learn estimator: explicit keyword-only constructor
parameters stored unchanged, ``get_params``/``set_params`` equal to scikit-learn's own
definitions, ``sklearn.base.clone`` reproduces the parameters, and a clone fits to the
original's predictions bit for bit."""

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

from postrisk.methods.interface import RUN_SETTINGS, UncertaintyMethod
from postrisk.methods.registry import get_method, make_method
from postrisk.methods.runner import run_estimator
from postrisk.methods.table import METHOD_ENTRIES


@pytest.mark.parametrize("name", list(METHOD_ENTRIES))
def test_clone_gives_equal_params_and_sklearn_reads_the_same_ones(name):
    cls = get_method(name)
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters] == [*cls.defaults, *RUN_SETTINGS]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters)
    assert {p.name: p.default for p in parameters} == {**cls.defaults, **RUN_SETTINGS}
    method = make_method(name, random_state=7, n_threads=2)
    copy = clone(method)
    assert type(copy) is cls and copy is not method
    print(f"{name}: clone get_params equal ({len(copy.get_params())} parameters)")
    assert copy.get_params() == method.get_params()
    assert (copy.random_state, copy.n_threads) == (7, 2)
    # the definitions are scikit-learn's own: BaseEstimator's methods on our instance agree
    assert cls._get_param_names() == BaseEstimator._get_param_names.__func__(cls)
    assert BaseEstimator.get_params(method, deep=True) == method.get_params(deep=True)
    assert method.get_params(deep=False) == method.get_params(deep=True)  # nothing nested
    key = next(iter(cls.defaults))
    value = cls.defaults[key]
    assert copy.set_params(random_state=11, **{key: value}) is copy
    assert copy.random_state == 11 and method.random_state == 7 and getattr(copy, key) is value
    with pytest.raises(ValueError, match=f"Invalid parameter 'no_such' for estimator "
                       f"{cls.__name__}"):
        copy.set_params(no_such=1)


def test_parameters_are_stored_unchanged_and_set_params_matches_sklearns():
    seed = np.int64(5)  # stored as given, not converted: clone checks identity
    method = make_method("catboost_ps", {"iterations": 30}, random_state=seed)
    assert method.random_state is seed
    ours, theirs = clone(method), clone(method)
    ours.set_params(depth=3, n_threads=2)
    BaseEstimator.set_params(theirs, depth=3, n_threads=2)
    assert ours.get_params() == theirs.get_params()


def test_a_clone_fits_to_the_originals_predictions_bit_for_bit():
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, size=(120, 3))
    y = np.sin(x[:, 0]) + 0.1 * x[:, 1] + rng.normal(0, 0.2, 120)
    x_eval = rng.uniform(-3, 3, size=(40, 3))
    original = make_method("catboost_ps", {"iterations": 40, "n_regressors": 3},
                           random_state=4)
    first = run_estimator(original, x, y, x_eval)
    assert first.ok, first.error
    copy = clone(original)  # of the fitted original: the parameters only, no fitted state
    assert not [k for k in vars(copy) if k.endswith("_")]
    second = run_estimator(copy, x, y, x_eval)
    assert second.ok, second.error
    for field in ("mean", "aleatoric_var", "epistemic_var"):
        assert np.array_equal(getattr(first, field), getattr(second, field)), field
    assert first.config == second.config == original.hyperparameters()
    fitted = set(vars(copy)) - set(copy.get_params())
    assert fitted and all(k.endswith("_") for k in fitted), sorted(fitted)


def test_a_subclass_declares_only_what_it_adds_and_gets_its_own_constructor():
    class Base(UncertaintyMethod):
        name = "base_x"
        display_name = "Base"
        defaults = {"a": 1, "b": 2.0}
        search_space = {"a": ("int", 1, 3)}

        def fit(self, x, y):
            return self

        def predict(self, x):
            raise NotImplementedError

    class Child(Base):
        name = "child_x"
        defaults = {"b": 3.0, "c": "z"}
        search_space = {"c": ("categorical", ["z", "w"])}

    assert Child.defaults == {"a": 1, "b": 3.0, "c": "z"} and Base.defaults == {"a": 1, "b": 2.0}
    assert list(Child.search_space) == ["a", "c"]
    assert list(inspect.signature(Child).parameters) == ["a", "b", "c", "random_state",
                                                         "n_threads"]
    assert list(inspect.signature(Base).parameters) == ["a", "b", "random_state", "n_threads"]
    assert clone(Child(c="w", random_state=2)).get_params() == {
        "a": 1, "b": 3.0, "c": "w", "random_state": 2, "n_threads": 1}
    with pytest.raises(TypeError, match=r"unknown hyper-parameter.*'d'.*allowed: a, b, c"):
        Child(d=1)
