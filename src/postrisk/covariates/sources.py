"""The canonical sources of raw covariate files (OpenML, UCI): settings, the cache, downloads.

A dataset's canonical raw file lives at :func:`raw_path` under ``resources/raw/``:

1. a file the user placed there wins (its sha256 is recorded on first use);
2. a cached download there is used as it is (its recorded sha256 is checked on every use);
3. else it is downloaded from the canonical source (OpenML or UCI); the sha256 is recorded
   beside the file and checked against the registry's pinned value when there is one (else
   the md5 OpenML states, when it states one).

Downloads (the source's metadata answer, then the data file) go through pooch by way of
:func:`postrisk.core.download.fetch_file`: the file is streamed into a temporary file beside
:func:`raw_path` and moved there only once its hash matched, so a failed, cut-off or refused
download leaves nothing at the path. A 4xx answer is final; connection errors, 5xx answers,
cut-off transfers and hash mismatches are retried (``FetchSettings.retries`` attempts in all,
pooch waiting 1 s, 2 s, … between them).

Offline without a local copy raises :class:`CovariateSourceUnavailable`, naming the dataset,
the URL and the local path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from postrisk.core.download import (
    DownloadChecksumError,
    DownloadError,
    fetch_file,
    file_sha256,
)
from postrisk.core.io import write_bytes_atomic
from postrisk.covariates.registry import DatasetSpec

logger = logging.getLogger(__name__)

DEFAULT_OPENML_URL = "https://www.openml.org"
DEFAULT_UCI_URL = "https://archive.ics.uci.edu"
DEFAULT_RAW_DIR = Path("resources/raw")


class CovariateFetchError(RuntimeError):
    """A raw covariate table could not be obtained or failed a check."""


class CovariateSourceUnavailable(CovariateFetchError):
    """The canonical source could not be reached and no local copy exists."""


class ChecksumMismatch(CovariateFetchError):
    """A downloaded or cached file does not match its expected checksum."""


#: The config's ``covariates`` keys (config.yaml) and the :class:`FetchSettings` field of each.
CONFIG_KEYS = {"prefer_offline_package": "prefer_offline_package", "raw_dir": "raw_dir",
               "fetch_retries": "retries", "fetch_timeout_s": "timeout_s"}


@dataclass(frozen=True)
class FetchSettings:
    """Where and how to fetch. Base URLs default to the public services (env overrides).

    ``retries``: download attempts in all, per file (pooch waits 1 s, 2 s, … between them);
    ``timeout_s``: the connect/read timeout of one attempt.

    The field defaults are the library's, for a caller without a configuration; the workflow
    and the command line take theirs from config.yaml's ``covariates`` section
    (:meth:`from_config`), whose values these equal (a test checks it).
    """

    raw_dir: Path = DEFAULT_RAW_DIR
    openml_url: str = DEFAULT_OPENML_URL
    uci_url: str = DEFAULT_UCI_URL
    retries: int = 3
    timeout_s: float = 30.0
    prefer_offline_package: bool = False

    @classmethod
    def from_config(cls, section: Mapping[str, Any], **overrides) -> FetchSettings:
        """Settings from a configuration's ``covariates`` section as it is (keys
        ``prefer_offline_package``, ``raw_dir``, ``fetch_retries``, ``fetch_timeout_s``; one
        absent keeps the field's default), with ``POSTRISK_OPENML_URL`` / ``POSTRISK_UCI_URL``
        applied as :meth:`from_env` does, then ``overrides`` (fields; None ones ignored)."""
        values = {field: section[key] for key, field in CONFIG_KEYS.items() if key in section}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_env(**values)

    @classmethod
    def from_env(cls, **overrides) -> FetchSettings:
        """Settings with ``POSTRISK_OPENML_URL`` / ``POSTRISK_UCI_URL`` applied, then overrides."""
        values = {
            "openml_url": os.environ.get("POSTRISK_OPENML_URL", DEFAULT_OPENML_URL),
            "uci_url": os.environ.get("POSTRISK_UCI_URL", DEFAULT_UCI_URL),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "raw_dir" in values:
            values["raw_dir"] = Path(values["raw_dir"])
        return cls(**values)


def raw_path(spec: DatasetSpec, raw_dir: Path = DEFAULT_RAW_DIR) -> Path:
    """Where the canonical raw file of ``spec`` is cached (and where a user may place it)."""
    suffix = {"openml": "arff", "uci": "csv"}[spec.source.kind]
    return Path(raw_dir) / spec.name / f"{spec.source.kind}_{spec.source.id}.{suffix}"


def source_url(spec: DatasetSpec, settings: FetchSettings) -> str:
    """The metadata URL queried first for the canonical source."""
    if spec.source.kind == "openml":
        return f"{settings.openml_url.rstrip('/')}/api/v1/json/data/{spec.source.id}"
    if spec.source.kind == "uci":
        return f"{settings.uci_url.rstrip('/')}/api/dataset?id={spec.source.id}"
    raise ValueError(f"{spec.name}: source kind {spec.source.kind!r} is not downloadable")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_raw_file(spec: DatasetSpec,
                  settings: FetchSettings) -> tuple[bytes, str, str | None, Path]:
    """The canonical raw file of ``spec`` by the order of preference in the module docstring:
    its bytes, origin (``"user"``, ``"cache"`` or ``"download"``), URL (None for a file the
    user placed) and path."""
    path = raw_path(spec, settings.raw_dir)
    if path.exists():
        data, origin = _read_local(spec, path)
        logger.info("[%s] using %s copy %s", spec.name, origin, path)
        url = _read_sidecar(path).get("url")
    else:
        data, url = _download(spec, settings, path)
        origin = "download"
    return data, origin, url, path



# -- local files -------------------------------------------------------------------------------

def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _read_sidecar(path: Path) -> dict:
    side = _sidecar(path)
    return json.loads(side.read_text()) if side.exists() else {}


def _write_sidecar(path: Path, record: dict) -> None:
    write_bytes_atomic(_sidecar(path), (json.dumps(record, indent=2) + "\n").encode())


def _read_local(spec: DatasetSpec, path: Path) -> tuple[bytes, str]:
    data = path.read_bytes()
    digest = sha256_bytes(data)
    record = _read_sidecar(path)
    if spec.sha256 and digest != spec.sha256:
        raise ChecksumMismatch(
            f"{spec.name}: {path} has sha256 {digest}, but the registry pins {spec.sha256}. "
            "Delete the file to download it again, or replace it with the canonical file."
        )
    if record:
        if record.get("sha256") != digest:
            raise ChecksumMismatch(
                f"{spec.name}: cached file {path} has sha256 {digest}, but {record.get('sha256')} "
                f"was recorded when it was stored ({_sidecar(path)}). The file changed or is "
                "corrupt: delete it (and its .json) to download it again."
            )
        return data, "user" if record.get("origin") == "user" else "cache"
    # A file without a record was placed by the user: it wins; record its checksum.
    _write_sidecar(path, {"sha256": digest, "origin": "user", "url": None,
                          "recorded_at": _now()})
    return data, "user"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- downloads ---------------------------------------------------------------------------------

def _download(spec: DatasetSpec, settings: FetchSettings, path: Path) -> tuple[bytes, str]:
    meta_url = source_url(spec, settings)
    logger.info("[%s] fetching %s from %s", spec.name, spec.source.label, meta_url)
    try:
        with tempfile.TemporaryDirectory(prefix="postrisk-metadata-") as tmp:
            meta_path = fetch_file(meta_url, Path(tmp) / "metadata.json", None,
                                   retries=settings.retries, timeout_s=settings.timeout_s)
            meta = json.loads(meta_path.read_bytes())
        file_url, md5 = _file_url(spec, meta, settings)
    except DownloadError as err:
        raise _unavailable(spec, meta_url, path, err) from err
    except (KeyError, ValueError, TypeError) as err:
        raise CovariateFetchError(
            f"dataset {spec.name!r}: unexpected answer from {meta_url}: {err!r}"
        ) from err
    if spec.sha256:
        known_hash = f"sha256:{spec.sha256}"
    elif md5 is not None:
        known_hash = f"md5:{md5}"
    else:
        known_hash = None
    logger.info("[%s] downloading %s", spec.name, file_url)
    t0 = time.perf_counter()
    try:
        fetch_file(file_url, path, known_hash, retries=settings.retries,
                   timeout_s=settings.timeout_s)
    except DownloadChecksumError as err:
        path.unlink(missing_ok=True)  # fetch_file keeps nothing; make sure of it
        if spec.sha256:
            raise ChecksumMismatch(
                f"{spec.name}: the file downloaded from {file_url} does not have the sha256 "
                f"the registry pins ({spec.sha256}); refused. ({err})"
            ) from err
        raise ChecksumMismatch(
            f"{spec.name}: the file downloaded from {file_url} does not have the md5 the "
            f"source states ({md5}); refused. ({err})"
        ) from err
    except DownloadError as err:
        raise _unavailable(spec, meta_url, path, err) from err
    if spec.sha256 and md5 is not None:  # the pin was checked; the source's md5 too
        import pooch

        got = pooch.file_hash(str(path), alg="md5")
        if got.lower() != md5.lower():
            path.unlink(missing_ok=True)
            raise ChecksumMismatch(
                f"{spec.name}: the file downloaded from {file_url} has md5 {got}, but the "
                f"source states {md5}; refused."
            )
    data = path.read_bytes()
    logger.info("[%s] downloaded %s bytes in %.1f s", spec.name, f"{len(data):,}",
                time.perf_counter() - t0)
    digest = file_sha256(path)
    _write_sidecar(path, {"sha256": digest, "origin": "download", "url": file_url,
                          "metadata_url": meta_url, "recorded_at": _now()})
    logger.info("[%s] cached %s bytes at %s (sha256 %s…)", spec.name, f"{len(data):,}", path,
                digest[:12])
    return data, file_url


def _unavailable(spec: DatasetSpec, meta_url: str, path: Path,
                 err: DownloadError) -> CovariateSourceUnavailable:
    return CovariateSourceUnavailable(
        f"dataset {spec.name!r} ({spec.source.label}) could not be fetched from {meta_url}: "
        f"{err}. No local copy at {path}. Download the file on a networked machine "
        f"(`postrisk fetch-covariates {spec.name}`) or place it at {path} by hand."
    )


def _file_url(spec: DatasetSpec, meta: dict, settings: FetchSettings) -> tuple[str, str | None]:
    """The data file's URL (and the source's md5, if it states one) from the metadata answer."""
    if spec.source.kind == "openml":
        desc = meta["data_set_description"]
        return desc["url"], desc.get("md5_checksum")
    if meta.get("status") not in (200, None):
        raise ValueError(f"UCI API status {meta.get('status')}: {meta.get('message')}")
    return meta["data"]["data_url"], None
