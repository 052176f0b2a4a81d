"""Your own method: outside classes by location, `postrisk.evaluate`, the command line."""

import copy

import numpy as np
import pandas as pd
import pytest
from examples.knn_uncertainty import KNNUncertainty

import postrisk
from postrisk.cli import main
from postrisk.core.io import write_zarr_atomic
from postrisk.evaluation.evaluate import InvalidPrediction, evaluate
from postrisk.evaluation.scoring import SCORE_COLUMNS, score_prediction
from postrisk.grid.config import ConfigError, load_config, validate_config
from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.outside import (
    OutsideImportError,
    OutsideMethodError,
    import_location,
    load_outside,
    method_name,
    snake_case,
)
from postrisk.methods.registry import display_name, get_method, register_outside
from postrisk.methods.runner import run_fit
from postrisk.planning.conditions import implemented_methods, tuned_methods
from tests.task_helpers import gp_task

EXAMPLE = "examples.knn_uncertainty:KNNUncertainty"


class Shrunk:
    """An outside method with no name, no search space and a keyword without random_state."""

    def __init__(self, shrink=0.5, floor: float = 0.1):
        self.shrink, self.floor = shrink, floor

    def fit(self, x, y):
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y))
        return self

    def predict(self, x):
        m = len(x)
        return (np.full(m, self.mean_ * self.shrink), np.full(m, self.var_),
                np.full(m, self.floor) + np.linspace(0, 1, m))


class NoDefault:
    def __init__(self, k):
        self.k = k

    def fit(self, x, y):
        return self

    def predict(self, x):
        return x[:, 0], x[:, 0], x[:, 0]


class BadVariance(Shrunk):
    def predict(self, x):
        mean, au, eu = super().predict(x)
        return mean, au, -eu


def _data(n=60, m=20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n + m, 2))
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.standard_normal(n + m)
    return x[:n], y[:n], x[n:]


def test_a_plain_class_becomes_a_method():
    cls = load_outside(EXAMPLE)
    assert issubclass(cls, UncertaintyMethod) and cls.name == "knn_uncertainty"
    assert cls.defaults == {"n_neighbors": 10}
    assert cls.search_space == {"n_neighbors": ("int", 3, 50, "log")}
    assert cls.display_name == "kNN-UQ"
    x, y, x_eval = _data()
    record = run_fit(cls, {"n_neighbors": 5}, x, y, x_eval, random_state=7)
    assert record.status == "ok" and record.config == {"n_neighbors": 5}
    direct = KNNUncertainty(n_neighbors=5).fit(x, y).predict(x_eval)
    for got, want in zip((record.mean, record.aleatoric_var, record.epistemic_var), direct,
                         strict=True):
        np.testing.assert_array_equal(got, want)
    method = cls(random_state=7, n_neighbors=5).fit(x, y)
    assert method.model_.random_state == 7  # the seed reaches the outside class


def test_names_spaces_and_refusals():
    shrunk = load_outside(f"{__name__}:Shrunk", {"shrink": ["float", 0.1, 1.0]})
    assert shrunk.name == "shrunk" and shrunk.defaults == {"shrink": 0.5, "floor": 0.1}
    assert shrunk.search_space == {"shrink": ("float", 0.1, 1.0)}
    with pytest.raises(OutsideMethodError, match="'k' has no default"):
        load_outside(f"{__name__}:NoDefault")
    with pytest.raises(OutsideMethodError, match="no default declared"):
        load_outside(EXAMPLE, {"leaf_size": ["int", 1, 5]})
    with pytest.raises(OutsideMethodError, match="not a method location"):
        load_outside("examples.knn_uncertainty")
    with pytest.raises(OutsideMethodError, match="has no class 'Missing'"):
        load_outside("examples.knn_uncertainty:Missing")
    with pytest.raises(OutsideMethodError, match="cannot import 'examples.nowhere'"):
        load_outside("examples.nowhere:X")
    builtin = type("Blr", (Shrunk,), {"name": "blr", "__module__": __name__})
    globals()["Blr"] = builtin
    with pytest.raises(OutsideMethodError, match="built-in method's"):
        register_outside(f"{__name__}:Blr")


@pytest.mark.parametrize(("class_name", "name"), [
    ("MyMethod", "my_method"), ("Shrunk", "shrunk"), ("BadVariance", "bad_variance"),
    ("Nan", "nan"), ("GBRBootstrap", "gbr_bootstrap"), ("KNNUncertainty", "knn_uncertainty"),
    ("NaNVar", "nan_var"), ("VarNaN", "var_nan"), ("HTTPServer2", "http_server2"),
    ("BayesGP", "bayes_gp"), ("GP", "gp"), ("IOError", "io_error"),
    ("L2Regularized", "l2_regularized"), ("Conv2DNet", "conv2d_net"), ("ModelX", "model_x"),
    ("myMethod", "my_method"), ("My_Method", "my_method"), ("NGBoostNIG", "ng_boost_nig"),
])
def test_the_name_of_a_class(class_name, name):
    """Fault: an acronym was run into the next word (``GBRBootstrap`` → ``gbrbootstrap``) or
    split (``NaNVar`` → ``na_nvar``)."""
    assert snake_case(class_name) == name
    cls = type(class_name, (Shrunk,), {"__module__": __name__})
    assert method_name(cls, f"x:{class_name}") == name


def test_an_import_that_fails_is_one_error(tmp_path):
    """The module's own code raising while it is imported is an OutsideMethodError naming the
    exception; a module that imports a missing package is not "cannot import" the module."""
    (tmp_path / "raises.py").write_text("x = 1\nundefined_name\n")
    with pytest.raises(OutsideImportError, match="raises.py:X: importing the module raised "
                                                 "NameError: name 'undefined_name' is not"):
        import_location(f"{tmp_path}/raises.py:X")
    with pytest.raises(OutsideImportError, match="raised NameError"):  # not cached half-done
        import_location(f"{tmp_path}/raises.py:X")
    (tmp_path / "needs.py").write_text("import a_package_nobody_has\n")
    with pytest.raises(OutsideImportError, match="needs.py:X: importing the module raised "
                                                 "ModuleNotFoundError: No module named "
                                                 "'a_package_nobody_has'"):
        import_location(f"{tmp_path}/needs.py:X")


def test_a_file_location_and_a_subclass(tmp_path):
    source = tmp_path / "mine.py"
    source.write_text(
        "import numpy as np\n"
        "from postrisk.methods.interface import Prediction, UncertaintyMethod\n"
        "class Mine(UncertaintyMethod):\n"
        "    name = 'mine'\n    display_name = 'Mine'\n    defaults = {'c': 1.0}\n"
        "    search_space = {'c': ('float', 0.5, 2.0)}\n"
        "    def fit(self, x, y):\n        self.v_ = float(np.var(y))\n        return self\n"
        "    def predict(self, x):\n"
        "        m = len(x)\n"
        "        return Prediction(np.zeros(m), np.full(m, self.v_), np.full(m, self.c))\n")
    cls = load_outside(f"{source}:Mine")
    assert cls.__name__ == "Mine" and cls.name == "mine" and cls.search_space["c"][0] == "float"
    name = register_outside(f"{source}:Mine", {"c": ["float", 1.0, 3.0]})
    assert get_method(name).search_space == {"c": ("float", 1.0, 3.0)}
    assert display_name(name) == "Mine"


def test_the_config_names_an_outside_method_and_tunes_it():
    paper = load_config("config.yaml")
    cfg = validate_config({**paper, "methods": ["blr", "nn_ens", EXAMPLE],
                           "tuning": {**paper["tuning"], "methods": ["blr", "knn_uncertainty"]}})
    assert cfg["methods"][-1] == "knn_uncertainty"
    assert cfg["outside_methods"]["knn_uncertainty"]["location"] == EXAMPLE
    assert "knn_uncertainty" in implemented_methods(cfg) and \
        tuned_methods(cfg) == ["blr", "knn_uncertainty"]
    assert validate_config(cfg) == cfg  # validating again changes nothing
    spaced = copy.deepcopy(cfg)
    spaced["method_search_spaces"] = {"knn_uncertainty": {"n_neighbors": ["int", 2, 8]}}
    validate_config(spaced)
    assert get_method("knn_uncertainty").search_space == {"n_neighbors": ("int", 2, 8)}
    validate_config(cfg)  # back to the class's own space
    assert get_method("knn_uncertainty").search_space == {"n_neighbors": ("int", 3, 50, "log")}
    paper = load_config("config.yaml")
    for bad, message in (({"methods": ["blr", "examples.nowhere:X"]}, "cannot import"),
                         ({"method_search_spaces": {"gp": {}}}, "not outside methods"),
                         ({"methods": ["blr", "nn_ens2"]}, "nn_ens2"),
                         ({"tuning": {**paper["tuning"], "methods": ["blr", "knn_uncertainty"]}},
                          r"tuning.methods': \['knn_uncertainty'\] are neither methods of the "
                          "paper nor outside methods")):
        with pytest.raises(ConfigError, match=message):
            validate_config({**paper, **bad})


def test_the_tuning_sweep_runs_an_outside_method(tmp_path):
    from postrisk.tuning import tune

    register_outside(EXAMPLE)
    x, y, _ = _data(n=80)
    result = tune("knn_uncertainty", x, y, journal=tmp_path / "j.log", n_trials=3,
                  startup_trials=2)
    assert result.n_trials == 3 and 3 <= result.config["n_neighbors"] <= 50


# -- postrisk.evaluate -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def task():
    return gp_task(n=60, m=30, key={"dataset": "concrete", "prior": "gp", "noise": "bump",
                                    "coverage": "balanced", "seed": 0})


def test_evaluate_scores_like_the_pipeline(task):
    model = Shrunk()
    table = evaluate(model, task)
    # named as the workflow names it (outside.method_name); a copy is fitted
    assert list(table["method"]) == [method_name(Shrunk, "x:Shrunk")] == ["shrunk"]
    assert not hasattr(model, "mean_")
    want = score_prediction(task, Prediction(*Shrunk().fit(task.x_train, task.y_train)
                                             .predict(task.x_eval)))
    got = table.iloc[0]
    for column in SCORE_COLUMNS:
        if want[column] is None:
            assert np.isnan(got[column]), column
        else:
            assert got[column] == want[column], column
    assert (got["dataset"], got["seed"], got["status"]) == ("concrete", 0, "ok")


def test_evaluate_names_the_task_and_the_method(task):
    with pytest.raises(InvalidPrediction, match="method bad_variance on task concrete/gp/bump/"
                                                "balanced/0: epistemic_var has 30 negative"):
        evaluate(BadVariance(), task)

    class Short(Shrunk):
        def predict(self, x):
            return tuple(a[:-1] for a in super().predict(x))

    with pytest.raises(InvalidPrediction, match=r"method short on .*shape \(29,\), expected"):
        evaluate(Short(), task, name="short")

    class Nan(Shrunk):
        def predict(self, x):
            mean, au, eu = super().predict(x)
            mean[3] = np.nan
            return mean, au, eu

    with pytest.raises(InvalidPrediction, match="mean has 1 non-finite"):
        evaluate(Nan(), task)
    with pytest.raises(TypeError, match="needs fit"):
        evaluate(object(), task)


def test_evaluate_tasks_by_filter(tmp_path, task):
    for seed in (0, 1):
        ds = task.ds.assign_attrs(seed=seed)
        write_zarr_atomic(ds, tmp_path / "tasks/concrete/gp/bump/balanced" / f"{seed}.zarr")
    table = postrisk.evaluate(KNNUncertainty(n_neighbors=4), root=tmp_path, seed=[1])
    assert table["seed"].tolist() == [1] and table["method"].tolist() == ["knn_uncertainty"]
    with pytest.raises(LookupError, match="no tasks under") as err:
        postrisk.evaluate(KNNUncertainty(), root=tmp_path, prior="bnn")
    # the hint is the download command that fetches what was asked for, into that root
    assert "postrisk download" in str(err.value)
    assert f"--prior bnn --dest {tmp_path}`" in str(err.value)


# -- the command line ---------------------------------------------------------------------------

COMMANDS = ("run", "task", "plan", "outputs", "envs", "fetch-covariates", "covariates",
            "verify-covariates", "download", "verify", "evaluate", "info")


def test_every_command_has_help(capsys):
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    for name in COMMANDS:
        assert name in listed
        assert main([name, "--help"]) == 0, name
        assert "Usage: postrisk " + name in capsys.readouterr().out


def test_cli_evaluate_and_info(tmp_path, task, capsys):
    write_zarr_atomic(task.ds, tmp_path / "tasks/concrete/gp/bump/balanced/0.zarr")
    out = tmp_path / "scores.csv"
    assert main(["evaluate", EXAMPLE, "--root", str(tmp_path), "--set", "n_neighbors=6",
                 "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "knn_uncertainty on 1 task(s)" in said and "concrete/gp/bump/balanced/0" in said
    scores = pd.read_csv(out)
    want = evaluate(KNNUncertainty(n_neighbors=6), task)
    np.testing.assert_allclose(scores["nll"], want["nll"], rtol=1e-12)
    assert main(["info", "concrete/gp/bump/balanced/0", "--root", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "n = 60, n_eval = 30, d = 2, draws = 4" in said and "schema version" in said


def test_cli_errors_are_one_line(tmp_path, capsys):
    cases = (
        (["info", str(tmp_path / "missing.zarr")], "error: no task store at"),
        (["info", "concrete/gp/bump"], "error: 'concrete/gp/bump' is not an instance key"),
        (["info", "concrete/gp/bump/balanced/0", "--root", str(tmp_path)],
         "error: task concrete/gp/bump/balanced/0 is not under"),
        (["evaluate", "examples.nowhere:X"], "error: examples.nowhere:X: cannot import"),
        (["evaluate", "not_a_method"], "error: unknown method 'not_a_method'"),
        (["evaluate", EXAMPLE, "--set", "oops"], "error: --set 'oops': expected name=value"),
        (["download", "--url", "http://127.0.0.1:9/none", "--dest", str(tmp_path),
          "--retries", "1"], "could not be downloaded after 1 attempt(s)"),
        (["plan", str(tmp_path / "nothing.yaml")], "error: [Errno 2] No such file"),
    )
    for argv, message in cases:
        assert main(argv) != 0, argv
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and message in errors[0] and "Traceback" not in err, (argv, err)


def test_plan_counts_the_outside_method(capsys, tmp_path):
    """One condition, BLR, MC dropout and the outside example: one fit job each."""
    import yaml

    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "datasets": ["concrete"], "priors": ["gp"], "noise_modes": ["smooth_monotone"],
        "coverages": ["balanced"], "methods": ["blr", "nn_drop", EXAMPLE]}))
    assert main(["plan", "config.yaml", str(grid)]) == 0
    assert "| fit | 3 |" in capsys.readouterr().out
