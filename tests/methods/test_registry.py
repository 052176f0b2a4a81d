"""The method registry (``postrisk.methods.registry``): built-in methods by name, outside methods
registered by location or handed to a job through the environment, display names, unfitted
instances (``make_method``, ``make_model``) and the errors that say what is wrong
(``MissingExtra``, ``UnknownSettings``, ``MethodError``).

Every test starts from an empty registry of outside methods (restored afterwards)."""

import json

import pytest

from postrisk.methods import registry
from postrisk.methods.blr import BayesianLinearRegression
from postrisk.methods.interface import UncertaintyMethod
from postrisk.methods.outside import OutsideMethodError
from postrisk.methods.registry import (
    METHODS,
    METHODS_EXTRA,
    OUTSIDE_ENV,
    MethodError,
    MissingExtra,
    UnknownSettings,
    display_name,
    get_method,
    implemented_methods,
    make_method,
    make_model,
    outside_methods,
    register_outside,
)
from postrisk.methods.table import (
    ABLATION_TABLE,
    METHOD_ENTRIES,
    METHOD_TABLE,
    MethodEntry,
    table_entry,
)

EXAMPLE = "examples.knn_uncertainty:KNNUncertainty"

#: Plain outside classes, written into files (``<file>.py:Class``).
PLAIN = """
import numpy as np

class Shrunk:
    def __init__(self, shrink=0.5, floor=0.1):
        self.shrink, self.floor = shrink, floor

    def fit(self, x, y):
        return self

    def predict(self, x):
        m = len(x)
        return np.zeros(m), np.ones(m), np.full(m, self.floor)

class Loose(Shrunk):
    def __init__(self, **settings):
        self.settings = settings

class Picky(Shrunk):
    def __init__(self, k=1):
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        self.k = k
"""

#: An outside subclass of UncertaintyMethod with its own name (``{cls}`` and ``{shown}``
#: filled in).
SUBCLASS = """
import numpy as np
from postrisk.methods.interface import Prediction, UncertaintyMethod

class {cls}(UncertaintyMethod):
    name = "mine"
    display_name = "{shown}"

    def fit(self, x, y):
        return self

    def predict(self, x):
        m = len(x)
        return Prediction(np.zeros(m), np.ones(m), np.ones(m))
"""


class Exploding(UncertaintyMethod):
    """A method whose constructor raises for a negative ``k``."""

    name = "exploding"
    display_name = "Exploding"
    defaults = {"k": 1}

    def __init__(self, k=1, random_state=0, n_threads=1):
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        self.k, self.random_state, self.n_threads = k, random_state, n_threads

    def fit(self, x, y):
        return self

    def predict(self, x):
        raise NotImplementedError


@pytest.fixture(autouse=True)
def no_outside_methods(monkeypatch):
    """An empty registry of outside methods and no hand-over through the environment."""
    monkeypatch.setattr(registry, "_OUTSIDE", {})
    monkeypatch.delenv(OUTSIDE_ENV, raising=False)


@pytest.fixture
def plain(tmp_path):
    """The file of :data:`PLAIN`; its location prefix."""
    (tmp_path / "plain.py").write_text(PLAIN)
    return f"{tmp_path}/plain.py"


# -- built-in methods ----------------------------------------------------------------------
def test_registry():
    assert list(METHODS) == list(METHOD_ENTRIES)  # the method table, in its order
    assert METHODS["blr"] is BayesianLinearRegression
    assert get_method("blr") is BayesianLinearRegression
    with pytest.raises(KeyError, match="unknown method 'gpx'; implemented: "
                       + ", ".join(sorted(METHOD_ENTRIES))):
        get_method("gpx")
    m = make_method("blr", {"tol": 1e-6}, random_state=4, n_threads=1)
    assert isinstance(m, BayesianLinearRegression) and m.tol == 1e-6 and m.random_state == 4


def test_implemented_methods_are_the_method_table_in_order():
    names = implemented_methods()
    assert names == [e.name for e in METHOD_TABLE if e.location is not None]
    names.append("extra")  # a copy: the registry is unchanged
    assert "extra" not in implemented_methods()
    with pytest.raises(AttributeError, match="no_such_attribute"):
        registry.no_such_attribute  # noqa: B018 - the module's __getattr__ knows only METHODS


def test_make_method_builds_an_unfitted_instance():
    m = make_method("blr")
    assert isinstance(m, BayesianLinearRegression) and not hasattr(m, "coef_")
    assert m.hyperparameters() == BayesianLinearRegression.defaults
    assert (m.random_state, m.n_threads) == (0, 1)
    m = make_method("blr", {"max_iter": 7}, random_state=9, n_threads=3)
    assert (m.max_iter, m.random_state, m.n_threads) == (7, 9, 3)
    with pytest.raises(TypeError, match=r"unknown hyper-parameter\(s\) \['width'\]"):
        make_method("blr", {"width": 3})
    with pytest.raises(KeyError, match="unknown method 'nope'"):
        make_method("nope")


@pytest.mark.parametrize("location", [
    pytest.param("a_package_nobody_has.models:Model", id="an-outside-package-names-the-extra"),
    pytest.param("postrisk.methods.no_such_module:Model", id="postrisks-own-module-is-not-one"),
])
def test_a_built_in_method_whose_module_is_missing(monkeypatch, location):
    """A missing package is a MissingExtra naming the extra that installs it; a missing module
    of postrisk itself is not (its ModuleNotFoundError is raised as it is)."""
    monkeypatch.setitem(METHOD_ENTRIES, "blr", MethodEntry("blr", "BLR", "gp_based", location))
    own = location.startswith("postrisk.")
    with pytest.raises(ModuleNotFoundError if own else MissingExtra) as raised:
        get_method("blr")
    err = raised.value
    if own:
        assert not isinstance(err, MissingExtra)
        assert err.name == "postrisk.methods.no_such_module"
        return
    assert isinstance(err, ImportError) and isinstance(err.__cause__, ModuleNotFoundError)
    assert str(err) == (f"method blr needs the {METHODS_EXTRA!r} extra (a_package_nobody_has is "
                        f"not installed): pip install '.[{METHODS_EXTRA}]' in the postrisk "
                        f"checkout (as locked: uv sync --frozen --extra {METHODS_EXTRA})")
    assert err.name == err.__cause__.name and err.name.startswith("a_package_nobody_has")
    with pytest.raises(MissingExtra, match="method blr needs"):
        make_method("blr")


# -- outside methods -----------------------------------------------------------------------
def test_register_outside_registers_under_the_class_name(plain):
    assert outside_methods() == {}
    assert register_outside(f"{plain}:Shrunk") == "shrunk"
    cls = get_method("shrunk")
    assert issubclass(cls, UncertaintyMethod) and cls.location == f"{plain}:Shrunk"
    assert cls.defaults == {"shrink": 0.5, "floor": 0.1} and cls.search_space == {}
    # the same location again: registered anew (a search space given now replaces none)
    assert register_outside(f"{plain}:Shrunk", {"shrink": ["float", 0.1, 1.0]}) == "shrunk"
    assert get_method("shrunk").search_space == {"shrink": ("float", 0.1, 1.0)}
    assert register_outside(EXAMPLE) == "knn_uncertainty"
    assert sorted(outside_methods()) == ["knn_uncertainty", "shrunk"]
    outside_methods().clear()  # a copy: the registry is unchanged
    assert sorted(outside_methods()) == ["knn_uncertainty", "shrunk"]


def test_an_outside_name_is_refused_when_taken(monkeypatch, tmp_path, plain):
    register_outside(f"{plain}:Shrunk")
    (tmp_path / "other").mkdir()
    (tmp_path / "other/plain.py").write_text(PLAIN)
    with pytest.raises(OutsideMethodError) as raised:
        register_outside(f"{tmp_path}/other/plain.py:Shrunk")
    assert str(raised.value) == (f"{tmp_path}/other/plain.py:Shrunk: name 'shrunk' is taken by "
                                 f"{plain}:Shrunk")
    assert get_method("shrunk").location == f"{plain}:Shrunk"  # the first one is kept
    entry = METHOD_TABLE[0]
    builtin = type(entry.name.title(), (Exploding,), {"name": entry.name, "__module__": __name__})
    monkeypatch.setitem(globals(), builtin.__name__, builtin)
    with pytest.raises(OutsideMethodError, match=f"its name '{entry.name}' is a built-in"):
        register_outside(f"{__name__}:{builtin.__name__}")
    assert get_method(entry.name) is not builtin


def test_an_outside_subclass_name_is_refused_when_taken(tmp_path):
    for cls, shown in (("First", "Mine 1"), ("Second", "Mine 2")):
        (tmp_path / f"{cls.lower()}.py").write_text(SUBCLASS.format(cls=cls, shown=shown))
    assert register_outside(f"{tmp_path}/first.py:First") == "mine"
    with pytest.raises(OutsideMethodError, match="name 'mine' is taken"):
        register_outside(f"{tmp_path}/second.py:Second")
    assert display_name("mine") == "Mine 1"


def test_a_job_gets_its_outside_methods_from_the_environment(monkeypatch, plain):
    monkeypatch.setenv(OUTSIDE_ENV, json.dumps({
        "knn_uncertainty": {"location": EXAMPLE, "search_space": {"n_neighbors": ["int", 2, 8]}},
        "shrunk": {"location": f"{plain}:Shrunk"}}))
    cls = get_method("knn_uncertainty")  # registered on first use
    assert cls.location == EXAMPLE and cls.search_space == {"n_neighbors": ("int", 2, 8)}
    assert get_method("shrunk").search_space == {}  # no search space handed over
    assert sorted(registry._OUTSIDE) == ["knn_uncertainty", "shrunk"]
    with pytest.raises(KeyError) as raised:
        get_method("gpx")
    assert raised.value.args[0] == (
        f"unknown method 'gpx'; implemented: {', '.join(sorted(METHOD_ENTRIES))}; outside "
        "methods: knn_uncertainty, shrunk")
    monkeypatch.setenv(OUTSIDE_ENV, "")
    assert sorted(outside_methods()) == ["knn_uncertainty", "shrunk"]  # still registered


def test_the_environment_alone_gives_display_names(monkeypatch, plain):
    monkeypatch.setenv(OUTSIDE_ENV, json.dumps({"knn_uncertainty": {"location": EXAMPLE}}))
    from examples.knn_uncertainty import KNNUncertainty

    assert display_name("knn_uncertainty") == KNNUncertainty.display_name
    register_outside(f"{plain}:Shrunk")
    assert display_name("shrunk") == "Shrunk"  # no display_name: the class name


def test_display_names_of_every_kind_of_row():
    for entry in METHOD_TABLE:  # built-in methods and reference rows: the method table's
        assert display_name(entry.name) == entry.display_name
    for entry in ABLATION_TABLE:
        assert display_name(entry.name) == entry.display_name
    assert display_name("not_a_method") == "not_a_method"
    assert table_entry("not_a_method") is None


# -- make_model (postrisk evaluate) --------------------------------------------------------
def test_make_model_of_a_built_in_method_takes_run_settings():
    settings = {"tol": 1e-3, "random_state": 4, "n_threads": 2}
    model = make_model("blr", settings)
    assert isinstance(model, BayesianLinearRegression)
    assert (model.tol, model.random_state, model.n_threads) == (1e-3, 4, 2)
    assert settings == {"tol": 1e-3, "random_state": 4, "n_threads": 2}  # left as it was
    assert make_model("blr").hyperparameters() == BayesianLinearRegression.defaults


def test_make_model_of_a_location_builds_the_class_itself(plain):
    from examples.knn_uncertainty import KNNUncertainty

    model = make_model(EXAMPLE, {"n_neighbors": 4, "random_state": 2})
    assert type(model) is KNNUncertainty and (model.n_neighbors, model.random_state) == (4, 2)
    assert registry._OUTSIDE == {}  # nothing registered
    loose = make_model(f"{plain}:Loose", {"anything": 1, "goes": 2})  # **settings: no check
    assert loose.settings == {"anything": 1, "goes": 2}


@pytest.mark.parametrize(("method", "settings", "message"), [
    ("blr", {"tols": 1e-3},
     "blr has no parameter tols (did you mean tol?); its parameters: evidence, prior_precision, "
     "noise_std, max_iter, tol"),
    (EXAMPLE, {"n_neighbours": 3, "k": 2},
     "KNNUncertainty has no parameters n_neighbours, k (did you mean n_neighbors?); its "
     "parameters: n_neighbors, random_state"),
    ("plain:Shrunk", {"shrnk": 1, "flor": 2},
     "Shrunk has no parameters shrnk, flor (did you mean shrink, floor?); its parameters: "
     "shrink, floor"),
])
def test_make_model_names_unknown_settings(plain, method, settings, message):
    method = method.replace("plain", plain)
    if method == "blr":  # the built-in's parameters: its declared hyper-parameters, in order
        assert message.endswith(", ".join(BayesianLinearRegression.defaults))
    with pytest.raises(UnknownSettings) as raised:
        make_model(method, settings)
    assert str(raised.value) == message
    assert raised.value.unknown == list(settings) and isinstance(raised.value, ValueError)


def test_make_model_turns_a_constructor_error_into_a_method_error(monkeypatch, plain):
    with pytest.raises(MethodError) as raised:
        make_model(f"{plain}:Picky", {"k": -1})
    err = raised.value
    assert (err.method, err.call, err.task) == ("picky", "Picky(k=-1)", None)
    assert isinstance(err.error, ValueError) and err.__cause__ is err.error
    assert str(err) == "picky: Picky(k=-1) raised ValueError: k must be >= 0, got -1"
    # a built-in method: named by its registry name, the call showing every setting
    monkeypatch.setitem(METHOD_ENTRIES, "blr", MethodEntry(
        "blr", "BLR", "gp_based", f"{__name__}:Exploding"))
    with pytest.raises(MethodError) as raised:
        make_model("blr", {"k": -2, "random_state": 3})
    assert str(raised.value) == ("blr: Exploding(k=-2, random_state=3) raised ValueError: k must "
                                 "be >= 0, got -2")
    model = make_model("blr", {"k": 2, "random_state": 3})
    assert type(model) is Exploding and (model.k, model.random_state) == (2, 3)


# -- the errors ----------------------------------------------------------------------------
def test_unknown_settings_messages():
    err = UnknownSettings("m", ["tol"], [])
    assert str(err) == "m has no parameter tol; its parameters: none" and err.unknown == ["tol"]
    # each suggestion once, in the order of the unknown names
    err = UnknownSettings("m", ["tol2", "n_iter", "tol1"], ["tol", "max_iter"])
    assert str(err) == ("m has no parameters tol2, n_iter, tol1 (did you mean tol, max_iter?); "
                        "its parameters: tol, max_iter")
    assert str(UnknownSettings("m", ["zzz"], ["tol"])) == ("m has no parameter zzz; its "
                                                           "parameters: tol")
    # only the closest parameter is suggested
    assert str(UnknownSettings("m", ["max_iters"], ["max_items", "max_iter"])) == (
        "m has no parameter max_iters (did you mean max_iter?); its parameters: max_items, "
        "max_iter")


def test_method_error_is_one_line_naming_the_method_call_and_task():
    cause = KeyError("k")
    err = MethodError("my_method", "MyMethod.fit", cause, task="concrete/gp/bump/balanced/0")
    assert str(err) == ("my_method on concrete/gp/bump/balanced/0: MyMethod.fit raised "
                        "KeyError: 'k'")
    assert (err.method, err.call, err.error, err.task) == ("my_method", "MyMethod.fit", cause,
                                                           "concrete/gp/bump/balanced/0")
    assert err.args == ("my_method", "MyMethod.fit", cause, "concrete/gp/bump/balanced/0")
    assert str(MethodError("m", "M()", RuntimeError())) == "m: M() raised RuntimeError"
    assert str(MethodError("m", "M.predict", ValueError("bad"), task=None)) == (
        "m: M.predict raised ValueError: bad")
