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


def write_zarr_atomic(ds: xr.Dataset, path: str | Path, encoding: dict | None = None) -> Path:
    """Write ``ds`` as a Zarr v3 store so that ``path`` appears complete or not at all.

    The store is written beside ``path`` under a temporary name and renamed into place; a crash
    leaves only a ``.tmp-*`` directory, never a store that looks complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = _variable_length_strings(ds)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        ds.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False,
                   encoding=encoding if encoding is not None else _default_encoding(ds))
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


def json_attr(value: object) -> str:
    """Nested values go into attrs as JSON text so every Zarr reader sees the same thing."""
    return json.dumps(value, sort_keys=True)
