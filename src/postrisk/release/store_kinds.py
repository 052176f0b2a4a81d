"""What a path holds, for ``postrisk info``: every store postrisk writes is recognised by its
``schema_version`` (and a task-shaped store by its ``store_kind``), so that a valid covariate,
sample or fit store is described rather than refused as a task store of another version, and a
folder or a Zarr store postrisk did not write is named as such.

:func:`store_kind` classifies a path; :func:`describe` gives the rows ``postrisk info`` prints
for a store that is not a task instance (a task instance is :meth:`Task.summary`'s).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.methods.records import FIT_RECORD_SCHEMA
from postrisk.release import MANIFEST, dataset_file
from postrisk.tasks import TASK_SCHEMA_VERSION

#: The kinds :func:`store_kind` tells apart.
KINDS = ("task", "sample", "covariates", "fit", "study", "dataset_file", "release", "results",
         "zarr", "folder", "file", "missing")


def _zarr_attributes(path: Path) -> Mapping | None:
    """A Zarr (v3) group's attributes, read from its ``zarr.json`` without opening the store;
    None where ``path`` is no Zarr group."""
    meta = path / "zarr.json"
    if not meta.is_file():
        return None
    try:
        content = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("node_type") != "group":
        return None
    attributes = content.get("attributes") or {}
    return attributes if isinstance(attributes, dict) else {}


def _is_dataset_file(path: Path) -> bool:
    stem = path.name.removesuffix(".zip")
    return path.suffix == ".zip" and path.name == dataset_file(stem.removesuffix("_dataset"))


def store_kind(path: str | Path) -> str:
    """One of :data:`KINDS`: a task or sample store (``store_kind``), a covariate store, a fit
    store, a study's store (any other ``schema_version``), a release's per-dataset file, a
    release folder (a manifest), a results folder (``tasks/``), a Zarr store postrisk did not
    write, another folder or file, or nothing at all."""
    path = Path(path)
    if not path.exists():
        return "missing"
    if path.is_file():
        return "dataset_file" if _is_dataset_file(path) else "file"
    attributes = _zarr_attributes(path)
    if attributes is None:
        if (path / MANIFEST).is_file():
            return "release"
        return "results" if (path / "tasks").is_dir() else "folder"
    version = str(attributes.get("schema_version", ""))
    if not version:
        return "zarr"
    if version == COVARIATES_SCHEMA_VERSION or version.startswith("covariates-"):
        return "covariates"
    if version == FIT_RECORD_SCHEMA or version.startswith("fit-record-"):
        return "fit"
    if attributes.get("store_kind") in ("task", "sample"):
        return str(attributes["store_kind"])
    return "study"


def _text(value) -> str:
    """An attribute as text: a JSON string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _version_row(version: str, current: str) -> tuple[str, str]:
    note = "" if version == current else f" (this postrisk writes {current}: rebuild it)"
    return "schema version", f"{version}{note}"


def describe(path: str | Path) -> list[tuple[str, str]]:
    """The rows ``postrisk info`` prints for a store that is not a task instance; a
    ``ValueError`` saying what ``path`` is where it is no store postrisk describes."""
    path = Path(path)
    kind = store_kind(path)
    attributes = _zarr_attributes(path) or {}
    version = str(attributes.get("schema_version", ""))
    if kind == "covariates":
        return [("store", "covariate store (the covariates of one dataset, its split and "
                          "shells)"),
                ("dataset", str(attributes.get("dataset", "?"))),
                ("rows", f"N = {attributes.get('N', '?')}, d = {attributes.get('d', '?')}, "
                         f"n_eval = {attributes.get('n_eval', '?')}"),
                ("source", f"{attributes.get('raw_origin', '?')} "
                           f"{attributes.get('raw_source', '')}".strip()),
                _version_row(version, COVARIATES_SCHEMA_VERSION)]
    if kind == "fit":
        return [("store", "fit store (one method's predictions on a condition's seeds)"),
                ("method", str(attributes.get("method", "?"))),
                ("configuration", _text(attributes.get("config", {}))),
                _version_row(version, FIT_RECORD_SCHEMA)]
    if kind == "sample":
        key = "/".join(str(attributes.get(f, "?"))
                       for f in ("dataset", "prior", "noise", "coverage", "seed"))
        return [("store", "sample store (an instance's data and truth, before its reference "
                          "posterior; the task store holds both)"),
                ("instance", key),
                ("shape", f"n = {attributes.get('n', '?')}, n_eval = "
                          f"{attributes.get('n_eval', '?')}"),
                _version_row(version, TASK_SCHEMA_VERSION)]
    if kind == "study":
        return [("store", f"a study's store (schema {version})")]
    if kind == "dataset_file":
        return [("file", "a release's per-dataset file (covariates, split and constants of "
                         "one dataset); its instances are in the dataset's per-prior files")]
    if kind == "release":
        raise ValueError(f"{path} is a release folder: `postrisk info <key> --root {path}` shows "
                         f"one of its instances, `postrisk verify {path}` checks it")
    if kind == "results":
        raise ValueError(f"{path} is a results folder: `postrisk info <key> --root {path}` shows "
                         "one of its task instances")
    if kind == "zarr":
        raise ValueError(f"{path} is a Zarr store postrisk did not write (it has no "
                         "schema_version)")
    if kind == "missing":
        raise FileNotFoundError(f"no store at {path}")
    raise ValueError(f"{path} is not a store postrisk writes: name a task store "
                     "(…/<seed>.zarr), a key (dataset/prior/noise/coverage/seed) or an instance "
                     "of a release file (<file>.zip/<noise>/<coverage>/<seed>)")
