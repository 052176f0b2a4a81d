"""The Snakemake session's setup (postrisk.workflow.session): jobs import this checkout's
library first, JAX's process settings, the outside methods handed to the jobs."""

from __future__ import annotations

import json
import os
import sys

from postrisk.methods.registry import OUTSIDE_ENV
from postrisk.workflow.session import export_outside_methods, importable_paths, prepare_imports


def test_jobs_import_the_checkout_first_and_keep_the_inherited_path(tmp_path, monkeypatch):
    checkout, cwd = tmp_path / "checkout", tmp_path / "work"
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/inherited", str(cwd)]))
    for name in ("JAX_COMPILATION_CACHE_DIR", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        monkeypatch.delenv(name, raising=False)
    prepare_imports(checkout, cwd)
    expected = [str(checkout / "src"), str(cwd), str(checkout)]
    assert importable_paths(checkout, cwd) == expected
    assert sys.path[:3] == expected
    # the inherited entries after ours, none twice
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [*expected, "/inherited"]
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert os.environ["JAX_COMPILATION_CACHE_DIR"].endswith("resources/jax_cache")
    prepare_imports(checkout, cwd)  # a second call adds nothing
    assert sys.path[:4].count(str(cwd)) == 1


def test_a_set_jax_cache_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/elsewhere")
    monkeypatch.setenv("PYTHONPATH", "")
    prepare_imports(tmp_path, tmp_path)
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == "/elsewhere"


def test_the_outside_methods_reach_the_jobs(monkeypatch):
    monkeypatch.delenv(OUTSIDE_ENV, raising=False)
    spec = {"knn": {"location": "examples.knn:KNN", "search_space": {}}}
    export_outside_methods(spec)
    assert json.loads(os.environ[OUTSIDE_ENV]) == spec
    export_outside_methods(None)
    assert json.loads(os.environ[OUTSIDE_ENV]) == {}
