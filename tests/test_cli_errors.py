"""What `postrisk evaluate` says when a method fails: one line naming the method, the task and
the exception, whatever its type (``--debug``: the traceback); a `--set` typo named with the
method's parameters; a built-in method whose extra is not installed named with the extra."""

import sys
import textwrap

import pytest

from postrisk.cli import main
from postrisk.core.io import write_zarr_atomic
from postrisk.evaluation.evaluate import evaluate
from postrisk.methods.registry import (
    MethodError,
    MissingExtra,
    UnknownSettings,
    get_method,
    make_model,
)
from tests.task_helpers import gp_task

KEY = "concrete/gp/bump/balanced/0"
#: Outside methods, each failing in its own way (written into a file: ``<file>.py:Class``).
SOURCE = textwrap.dedent("""
    import numpy as np

    class Mine:
        def __init__(self, n_members=3, scale=1.0):
            self.n_members, self.scale = int(n_members), scale
            self.settings = {}

        def fit(self, x, y):
            self.v_ = float(np.var(y))
            return self

        def predict(self, x):
            m = len(x)
            return np.zeros(m), np.full(m, self.v_), np.full(m, self.scale)

    class KeyInFit(Mine):
        def fit(self, x, y):
            self.k_ = self.settings["n_neighbours"]

    class AttributeInPredict(Mine):
        def predict(self, x):
            return self.mean_

    class TypeInFit(Mine):
        def fit(self, x, y):
            return len(3)

    class Silent(Mine):
        def fit(self, x, y):
            raise RuntimeError()
""")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A local task folder holding one task."""
    folder = tmp_path_factory.mktemp("tasks")
    task = gp_task(n=40, m=20, key=dict(zip(("dataset", "prior", "noise", "coverage", "seed"),
                                             KEY.split("/")[:4] + [0], strict=True)))
    write_zarr_atomic(task.ds, folder / f"tasks/{KEY}.zarr")
    (folder / "mine.py").write_text(SOURCE)
    return folder


def _error(capsys) -> list[str]:
    """The lines of stderr that are not progress messages."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if " INFO " not in line]


@pytest.mark.parametrize(("cls", "line"), [
    ("KeyInFit", f"error: key_in_fit on {KEY}: KeyInFit.fit raised KeyError: 'n_neighbours'"),
    ("AttributeInPredict", f"error: attribute_in_predict on {KEY}: AttributeInPredict.predict "
                           "raised AttributeError: 'AttributeInPredict' object has no attribute "
                           "'mean_'"),
    ("TypeInFit", f"error: type_in_fit on {KEY}: TypeInFit.fit raised TypeError: object of type "
                  "'int' has no len()"),
    ("Silent", f"error: silent on {KEY}: Silent.fit raised RuntimeError"),
])
def test_an_exception_in_a_method_is_one_line(root, capsys, cls, line):
    """Fault: a KeyError printed `error: n_neighbours` (no method, task or type); an
    AttributeError or TypeError a traceback."""
    assert main(["evaluate", f"{root}/mine.py:{cls}", "--root", str(root)]) == 1
    assert _error(capsys) == [line, "(postrisk --debug … shows the traceback)"]


def test_an_exception_in_the_constructor_is_one_line(root, capsys):
    assert main(["evaluate", f"{root}/mine.py:Mine", "--root", str(root),
                 "--set", "n_members=many"]) == 1
    assert _error(capsys)[0] == ("error: mine: Mine(n_members='many') raised ValueError: invalid "
                                 "literal for int() with base 10: 'many'")


def test_an_exception_importing_the_module_is_one_line(root, capsys):
    (root / "broken.py").write_text("x = 1\nundefined_name\n")
    assert main(["evaluate", f"{root}/broken.py:Mine", "--root", str(root)]) == 1
    assert _error(capsys) == [f"error: {root}/broken.py:Mine: importing the module raised "
                              "NameError: name 'undefined_name' is not defined",
                              "(postrisk --debug … shows the traceback)"]


def test_debug_shows_the_traceback(root, monkeypatch):
    argv = ["evaluate", f"{root}/mine.py:KeyInFit", "--root", str(root)]
    with pytest.raises(MethodError) as raised:
        main(["--debug", *argv])
    assert isinstance(raised.value.__cause__, KeyError)
    monkeypatch.setenv("POSTRISK_DEBUG", "1")
    with pytest.raises(MethodError):
        main(argv)


def test_the_python_api_raises_a_method_error(root):
    from postrisk.release.load import load_task

    model = make_model(f"{root}/mine.py:KeyInFit")
    with pytest.raises(MethodError) as raised:
        evaluate(model, load_task(KEY, root))
    err = raised.value
    assert (err.method, err.call, err.task) == ("key_in_fit", "KeyInFit.fit", KEY)
    assert isinstance(err.error, KeyError) and err.__cause__ is err.error


@pytest.mark.parametrize(("method", "line"), [
    ("mine.py:Mine", "error: --set n_membrs=3: Mine has no parameter n_membrs (did you mean "
                     "n_members?); its parameters: n_members, scale"),
    ("blr", "error: --set n_membrs=3: blr has no parameter n_membrs; its parameters: evidence, "
            "prior_precision, noise_std, max_iter, tol"),
])
def test_an_unknown_setting_names_the_parameters(root, capsys, method, line):
    """Fault: `--set n_membrs=3` printed a TypeError traceback."""
    method = f"{root}/{method}" if ":" in method else method
    assert main(["evaluate", method, "--root", str(root), "--set", "n_membrs=3"]) == 1
    assert _error(capsys) == [line]


def test_settings_are_checked_before_the_constructor(root):
    with pytest.raises(UnknownSettings, match="blr has no parameters a, b; its parameters"):
        make_model("blr", {"a": 1, "b": 2, "tol": 1e-3})
    assert make_model("blr", {"tol": 1e-3, "random_state": 4}).random_state == 4


@pytest.fixture
def without_jax(monkeypatch):
    """This process as the light install sees it: no jax, and the modules that import it not
    imported yet (restored afterwards)."""
    monkeypatch.setitem(sys.modules, "jax", None)
    for name in [n for n in sys.modules if n.startswith(("postrisk.gp.", "postrisk.methods.gp"))]:
        parent, _, child = name.rpartition(".")
        if hasattr(sys.modules[parent], child):
            monkeypatch.setattr(sys.modules[parent], child, sys.modules[name])
        monkeypatch.delitem(sys.modules, name)


def test_a_missing_extra_is_named(without_jax, root, capsys):
    """Fault: in the light install, `postrisk evaluate gp` printed `No module named 'jax'` with a
    traceback."""
    with pytest.raises(MissingExtra, match="method gp needs the 'methods' extra") as raised:
        get_method("gp")
    assert raised.value.name == "jax"
    assert main(["evaluate", "gp", "--root", str(root)]) == 1
    assert _error(capsys) == ["error: method gp needs the 'methods' extra (jax is not installed): "
                              "pip install '.[methods]' in the postrisk checkout (as locked: "
                              "uv sync --frozen --extra methods)"]


def test_version_is_printed(capsys):
    from postrisk import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"postrisk {__version__}"


def test_envs_outside_a_checkout_writes_nothing(tmp_path, capsys):
    """Fault: `postrisk envs` in a folder without uv.lock created an empty workflow/envs/ before
    failing."""
    for args in (["envs"], ["envs", "--check"]):
        assert main([*args, "--root", str(tmp_path)]) == 1
        assert _error(capsys) == [f"error: no uv.lock in {tmp_path.resolve()}: the environments "
                                  "are generated in a postrisk checkout (run the command there, "
                                  "or pass --root <checkout>)"]
    assert list(tmp_path.iterdir()) == []
