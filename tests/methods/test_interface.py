import json

import numpy as np
import pytest

from postrisk.evaluation.reference_rows import (
    constant_au_prediction,
    knn_prediction,
    oracle_prediction,
    reference_prediction,
)
from postrisk.methods import (
    FIT_RECORD_SCHEMA,
    METHODS,
    FitRecord,
    fit_records_from_dataset,
    fit_records_to_dataset,
    run_fit,
)
from postrisk.methods.interface import validate_search_space
from postrisk.methods.registry import display_name
from postrisk.methods.table import (
    METHOD_ENTRIES,
    METHOD_TABLE,
    REFERENCE_ROWS,
    MethodEntry,
    matched_groups,
    table_entry,
)
from tests.methods.method_doubles import _Good, _NaN


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(50, 3))
    return x, x.sum(axis=1) + rng.normal(0, 0.1, 50), rng.uniform(size=(7, 3))


# -- interface -----------------------------------------------------------------------------
def test_hyper_parameters_are_constructor_keywords_stored_as_attributes():
    m = _Good(scale=2.5, random_state=3, n_threads=2)
    assert (m.scale, m.act, m.random_state, m.n_threads) == (2.5, "tanh", 3, 2)
    assert m.hyperparameters() == {"scale": 2.5, "act": "tanh"}
    assert m.get_params() == {"scale": 2.5, "act": "tanh", "random_state": 3, "n_threads": 2}
    with pytest.raises(TypeError, match=r"unknown hyper-parameter.*'width'.*allowed: act, scale"):
        _Good(width=3)


def test_search_space_declarations_are_checked():
    validate_search_space({"n": ("int", 1, 3), "lr": ("float", 1e-4, 1e-1, "log")},
                          {"n": 1, "lr": 1e-3})
    with pytest.raises(ValueError, match="no default"):
        validate_search_space({"n": ("int", 1, 3)}, {})
    with pytest.raises(ValueError, match="log scale needs low > 0"):
        validate_search_space({"lr": ("float", 0.0, 1.0, "log")}, {"lr": 0.1})
    with pytest.raises(ValueError, match="unknown kind"):
        validate_search_space({"lr": ("uniform", 0.0, 1.0)}, {"lr": 0.1})
    with pytest.raises(ValueError, match="no default"):
        type("Bad", (_Good,), {"search_space": {"depth": ("int", 1, 3)}})


def test_the_method_table_names_every_class_and_group():
    for key, cls in METHODS.items():  # each class takes its names from its row of the table
        entry = table_entry(key)
        assert (cls.name, cls.display_name) == (entry.name, entry.display_name) == (
            key, display_name(key))
        assert entry.location == f"{cls.__module__}:{cls.__qualname__}" and cls.display_name
    grouped = [m for _, members in matched_groups().values() for m in members]
    assert sorted(grouped) == sorted(METHOD_ENTRIES)  # every method in exactly one group
    assert {prior for prior, _ in matched_groups().values()} == {"gp", "hbart", "bnn"}
    assert [e.name for e in METHOD_TABLE if e.group == "reference"] == list(REFERENCE_ROWS)
    assert display_name("knn10") == "10-NN" and display_name("not_a_method") == "not_a_method"
    with pytest.raises(ValueError, match="unknown group 'boosting'"):
        MethodEntry("x", "X", "boosting", "m:X")
    with pytest.raises(ValueError, match="a reference row none"):
        MethodEntry("x", "X", "reference", "m:X")



def test_every_ablation_change_names_a_table_of_the_catalogue():
    from postrisk.grid.artefacts import artefact
    from postrisk.methods.table import ABLATION_CHANGES, ABLATION_TABLE

    assert {e.change for e in ABLATION_TABLE} <= set(ABLATION_CHANGES)
    for change in ABLATION_CHANGES.values():
        assert artefact(change.table).stage == "tables" and change.column and change.description


# -- fit records ---------------------------------------------------------------------------
def test_fit_records_dataset_round_trip(data):
    recs = [run_fit(_Good, {"scale": 0.3}, *data, random_state=s) for s in range(2)]
    bad = run_fit(_NaN, {"scale": 0.3}, *data, random_state=2)
    bad.method = "good"  # same method: one dataset per (method, condition)
    recs.append(bad)
    ds = fit_records_to_dataset(recs, [0, 1, 5])
    assert ds.attrs["schema_version"] == FIT_RECORD_SCHEMA == "fit-record-1"
    assert ds.attrs["method"] == "good"
    assert json.loads(ds.attrs["config"]) == {"scale": 0.3, "act": "tanh"}
    assert dict(ds.sizes) == {"seed": 3, "eval": 7}
    assert ds["mean"].dims == ("seed", "eval") and ds["mean"].dtype == np.float64
    assert ds["fit_seconds"].dims == ("seed",)
    assert ds["status"].dtype == object and list(ds["status"].values) == ["ok", "ok", "failed"]
    assert list(ds["seed"].values) == [0, 1, 5]
    back = fit_records_from_dataset(ds)
    assert len(back) == 3
    for a, b in zip(recs, back, strict=True):
        assert isinstance(b, FitRecord)
        assert (a.method, a.status, a.error, a.config) == (b.method, b.status, b.error, b.config)
        assert a.fit_seconds == b.fit_seconds and a.predict_seconds == b.predict_seconds
        for key in ("mean", "aleatoric_var", "epistemic_var"):
            np.testing.assert_array_equal(getattr(a, key), getattr(b, key))


def test_fit_records_dataset_rejects_mixtures(data):
    a = run_fit(_Good, {"scale": 0.3}, *data, random_state=0)
    b = run_fit(_Good, {"scale": 0.4}, *data, random_state=1)
    with pytest.raises(ValueError, match="different configurations"):
        fit_records_to_dataset([a, b], [0, 1])
    with pytest.raises(ValueError, match="2 records but 1 seeds"):
        fit_records_to_dataset([a, a], [0])
    ds = fit_records_to_dataset([a], [0])
    ds.attrs["schema_version"] = "other"
    with pytest.raises(ValueError, match="schema_version"):
        fit_records_from_dataset(ds)


# -- reference rows ------------------------------------------------------------------------
def test_oracle_passes_through_exactly():
    rng = np.random.default_rng(2)
    m, v, s = rng.normal(size=9), rng.uniform(size=9), rng.uniform(size=9)
    p = oracle_prediction(m, v, s)
    np.testing.assert_array_equal(p.mean, m)
    np.testing.assert_array_equal(p.epistemic_var, v)
    np.testing.assert_array_equal(p.aleatoric_var, s)
    q = reference_prediction("oracle", x_train=None, y_train=None, x_eval=None,
                             posterior_mean=m, posterior_var=v, noise_var_eval=s)
    np.testing.assert_array_equal(q.epistemic_var, v)


def test_distance_eu_grows_away_from_the_training_inputs():
    rng = np.random.default_rng(3)
    # correlated, differently scaled features
    z = rng.normal(size=(300, 2))
    x_train = np.column_stack([z[:, 0], 100 * (0.8 * z[:, 0] + 0.6 * z[:, 1])])
    y_train = z[:, 0] + rng.normal(0, 0.1, 300)
    centre = x_train.mean(axis=0)
    direction = np.array([1.0, 100.0])
    x_eval = np.array([centre + t * direction for t in (0.0, 2.0, 5.0, 20.0)])
    p = knn_prediction(x_train, y_train, x_eval)
    assert np.all(np.diff(p.epistemic_var) > 0)
    assert p.epistemic_var[-1] > 5 * p.epistemic_var[0]
    np.testing.assert_allclose(p.aleatoric_var, np.var(y_train))
    # the mean is the mean target of the 10 nearest neighbours: far out, the extreme ones
    assert p.mean[-1] == pytest.approx(np.sort(y_train)[-10:].mean(), abs=0.5)
    # scale invariance: rescaling a feature does not change the distances
    p2 = knn_prediction(x_train * [1.0, 1e-3], y_train, x_eval * [1.0, 1e-3])
    np.testing.assert_allclose(p2.epistemic_var, p.epistemic_var, rtol=1e-9)
    # a training point itself has the smallest EU; k is capped at n_train
    p3 = knn_prediction(x_train[:5], y_train[:5], x_train[:1], k=10)
    assert p3.mean[0] == pytest.approx(y_train[:5].mean())


def test_distance_handles_constant_and_single_features():
    x_train = np.column_stack([np.linspace(0, 1, 20), np.full(20, 0.5)])
    p = knn_prediction(x_train, np.arange(20.0), np.array([[0.5, 0.5], [3.0, 0.5]]))
    assert np.isfinite(p.epistemic_var).all() and p.epistemic_var[1] > p.epistemic_var[0]
    p1 = knn_prediction(np.linspace(0, 1, 20)[:, None], np.arange(20.0), [[0.5], [2.0]])
    assert p1.epistemic_var[1] > p1.epistemic_var[0]


def test_constant_au_row():
    y = np.array([1.0, 2.0, 3.0, 6.0])
    p = constant_au_prediction(np.zeros((4, 2)), y, np.zeros((3, 2)))
    np.testing.assert_array_equal(p.mean, 3.0)
    np.testing.assert_array_equal(p.aleatoric_var, 3.5)
    np.testing.assert_array_equal(p.epistemic_var, 0.0)
    with pytest.raises(KeyError, match="allowed: oracle, mahalanobis, knn10, constant_au"):
        reference_prediction("nearest", x_train=None, y_train=None, x_eval=None)
