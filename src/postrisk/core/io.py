"""Thin I/O at the edges: atomic writes of files and Zarr v3 stores, canonical JSON and digests,
versions of the stack for provenance attributes.

Every output of the workflow is written through :func:`atomic_output`: under a temporary name
beside its final path, renamed into place only when complete, so a killed job never leaves a
file or store that looks finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import xarray as xr

#: Libraries whose versions every store records.
TRACKED_PACKAGES = ("postrisk", "numpy", "scipy", "pandas", "xarray", "zarr", "jax", "numpyro",
                    "bartz")


def installed_version(package: str, missing: str = "not installed") -> str:
    """The installed version of ``package``, or ``missing``."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return missing


def package_version() -> str:
    """postrisk's installed version ("0.0.0+unknown" when run from a source tree)."""
    return installed_version("postrisk", "0.0.0+unknown")


def library_versions() -> dict[str, str]:
    return {name: installed_version(name) for name in TRACKED_PACKAGES}


def _default_encoding(ds: xr.Dataset) -> dict:
    import zarr.codecs

    compressor = zarr.codecs.ZstdCodec(level=3)
    return {name: {"compressors": [compressor]} for name in ds.data_vars}


#: Test hook for the failure drill (a job killed half-way through writing a store): when set,
#: a store whose path contains this text is written in two steps, and between them — after the
#: first variable — the job writes its process id to ``.<name>.paused`` beside the store and
#: waits there (up to 10 minutes) to be killed.
PAUSE_ENV = "POSTRISK_TEST_PAUSE_AFTER_FIRST_VARIABLE"


@contextlib.contextmanager
def atomic_output(path: str | Path, clear_leftovers: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` (file or
    directory) in one rename, on failure it is removed.

    ``clear_leftovers``: first remove leftovers of earlier, killed writes of the same path
    (``.<name>.tmp-*``) — for outputs only one job ever writes (the workflow's stores); files
    that concurrent processes may write leave them alone. An existing directory at ``path`` is
    moved aside before the rename and deleted after it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if clear_leftovers:
        for stale in path.parent.glob(f".{path.name}.tmp-*"):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            old = path.with_name(f".{path.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink(missing_ok=True)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that the file appears complete or not at all."""
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` so that the file appears complete or not at all."""
    return write_bytes_atomic(path, text.encode())


def write_zarr_atomic(ds: xr.Dataset, path: str | Path, encoding: dict | None = None) -> Path:
    """Write ``ds`` as a Zarr v3 store so that ``path`` appears complete or not at all
    (:func:`atomic_output`); a crash leaves only a ``.tmp-*`` directory, removed by the next
    write of the same store."""
    path = Path(path)
    path.with_name(f".{path.name}.paused").unlink(missing_ok=True)
    ds = _variable_length_strings(ds)
    encoding = encoding if encoding is not None else _default_encoding(ds)
    with atomic_output(path, clear_leftovers=True) as tmp:
        pause = os.environ.get(PAUSE_ENV)
        if pause and pause in str(path) and ds.data_vars:
            _pause_after_first_variable(ds, tmp, path, encoding)
        ds.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False, encoding=encoding)
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
    import xarray as xr

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


def json_default(obj: Any) -> Any:
    """JSON for the numpy values configurations and results carry (scalars, arrays, tuples and
    sets); anything else raises ``TypeError`` naming the value."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple | set):
        return list(obj)
    raise TypeError(f"value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def canonical_json(value: object) -> str:
    """Canonical JSON text (sorted keys; numpy values as Python ones): the form in which
    configurations are compared, digested and stored in attributes."""
    return json.dumps(value, sort_keys=True, default=json_default)


def digest(value: object) -> str:
    """A short, stable digest (16 hex digits of sha256) of a JSON-able value's canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def array_digest(*arrays: tuple[Any, Any]) -> str:
    """A short digest of arrays given as (array, dtype) pairs: each one's shape and bytes."""
    h = hashlib.sha256()
    for array, dtype in arrays:
        a = np.ascontiguousarray(np.asarray(array, dtype=dtype))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def json_attr(value: object) -> str:
    """Nested values go into attrs as JSON text so every Zarr reader sees the same thing."""
    return canonical_json(value)
