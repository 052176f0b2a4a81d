"""Thin I/O at the edges: atomic Zarr v3 stores, versions of the stack for provenance attrs."""

from __future__ import annotations

import json
import os
import shutil
import uuid
import warnings
from importlib import metadata
from pathlib import Path

import xarray as xr
import zarr.codecs

#: Libraries whose versions every store records (SPEC §7, §14).
TRACKED_PACKAGES = ("postrisk", "numpy", "scipy", "pandas", "xarray", "zarr", "jax", "numpyro",
                    "bartz")


def library_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _default_encoding(ds: xr.Dataset) -> dict:
    compressor = zarr.codecs.ZstdCodec(level=3)
    return {name: {"compressors": [compressor]} for name in ds.data_vars}


#: Test hook for the failure drill (a job killed half-way through writing a store): when set,
#: a store whose path contains this text is written in two steps, and between them — after the
#: first variable — the job writes its process id to ``.<name>.paused`` beside the store and
#: waits there (up to 10 minutes) to be killed.
PAUSE_ENV = "POSTRISK_TEST_PAUSE_AFTER_FIRST_VARIABLE"


def write_zarr_atomic(ds: xr.Dataset, path: str | Path, encoding: dict | None = None) -> Path:
    """Write ``ds`` as a Zarr v3 store so that ``path`` appears complete or not at all.

    The store is written beside ``path`` under a temporary name and renamed into place; a crash
    leaves only a ``.tmp-*`` directory, never a store that looks complete. Such leftovers of
    earlier, killed writes of the same store are removed first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    path.with_name(f".{path.name}.paused").unlink(missing_ok=True)
    ds = _variable_length_strings(ds)
    encoding = encoding if encoding is not None else _default_encoding(ds)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        pause = os.environ.get(PAUSE_ENV)
        if pause and pause in str(path) and ds.data_vars:
            _pause_after_first_variable(ds, tmp, path, encoding)
        ds.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False, encoding=encoding)
        if path.exists():
            old = path.with_name(f".{path.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def _pause_after_first_variable(ds: xr.Dataset, tmp: Path, path: Path, encoding: dict) -> None:
    """The :data:`PAUSE_ENV` hook: write the first variable, report, wait to be killed."""
    import time

    first = next(iter(ds.data_vars))
    ds[[first]].to_zarr(tmp, mode="w", zarr_format=3, consolidated=False,
                        encoding={first: encoding[first]} if first in encoding else None)
    path.with_name(f".{path.name}.paused").write_text(str(os.getpid()))
    time.sleep(600)


def _variable_length_strings(ds: xr.Dataset) -> xr.Dataset:
    """Fixed-width unicode has no Zarr v3 spec; store text as variable-length strings."""
    fixed = [name for name, var in ds.variables.items() if var.dtype.kind == "U"]
    return ds.assign({n: ds[n].astype(object) for n in fixed if n in ds.data_vars}).assign_coords(
        {n: ds[n].astype(object) for n in fixed if n in ds.coords})


def open_zarr(path: str | Path, load: bool = True) -> xr.Dataset:
    """Open a store written by :func:`write_zarr_atomic`, loaded into memory unless ``load`` is
    False (then variables are read lazily, e.g. to read one diagnostic without the draws)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no store at {path}")
    with warnings.catch_warnings():
        # Snakemake's directory() outputs carry a `.snakemake_timestamp` file zarr does not know.
        warnings.filterwarnings("ignore", message=".*snakemake_timestamp.*")
        ds = xr.open_zarr(path, zarr_format=3, consolidated=False)
    if not load:
        return ds
    with ds:
        return ds.load()


def digest(value: object) -> str:
    """A short, stable digest (16 hex digits of sha256) of a JSON-able value (keys sorted)."""
    import hashlib

    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def json_attr(value: object) -> str:
    """Nested values go into attrs as JSON text so every Zarr reader sees the same thing."""
    return json.dumps(value, sort_keys=True)
