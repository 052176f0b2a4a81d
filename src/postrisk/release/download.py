"""Downloading a released suite (``postrisk download``, rule ``download``; docs/release.md).

The manifest comes first; then every selected file (all, or those of some datasets and
priors) is fetched from ``<base_url>/<name>`` with pooch (:func:`postrisk.core.download.
fetch_file`) and its sha256 checked against the manifest. A file already here with the right
sha256 is skipped; one with another sha256 is deleted (and said so) and fetched again. A
download whose bytes do not match is deleted — nothing corrupt is ever kept — and reported; the
other files go on. Files download into ``<dest>/.download/`` and move into place only once
verified, so a download cut off (or a process killed) half-way leaves nothing that looks
finished; the next run clears that folder and starts those files afresh (pooch cannot resume a
transfer). The manifest moves into place last, when every selected file is verified.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from postrisk.core.download import (
    DownloadChecksumError,
    DownloadError,
    fetch_file,
    file_sha256,
)
from postrisk.core.progress import progress_steps
from postrisk.release import MANIFEST
from postrisk.release.load import ReleaseError, read_manifest

logger = logging.getLogger(__name__)

#: Where a download stages its files inside the destination.
STAGING = ".download"


class ReleaseURLMissing(ValueError):
    """No release URL was given and none is configured."""


class ReleaseDownloadFailed(RuntimeError):
    """Some files could not be downloaded or verified; the message names each."""


@dataclass
class DownloadReport:
    """What a download did: files fetched and verified, files already valid, failures."""

    dest: Path
    downloaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    bytes_downloaded: int = 0
    seconds: float = 0.0

    @property
    def throughput_mb_s(self) -> float:
        return self.bytes_downloaded / 1e6 / self.seconds if self.seconds > 0 else float("nan")


def _as_set(values: str | Iterable[str] | None) -> set[str] | None:
    if values is None:
        return None
    return {values} if isinstance(values, str) else set(values)


def select_files(manifest: dict, datasets: str | Iterable[str] | None = None,
                 priors: str | Iterable[str] | None = None) -> list[dict]:
    """The manifest's files of the chosen datasets and priors (None: all): their instance
    files, their datasets' artefact files, and the documents. Unknown names are an error
    listing what the release holds."""
    datasets, priors = _as_set(datasets), _as_set(priors)
    files = manifest["files"]
    held = {"dataset": {f["dataset"] for f in files if "dataset" in f},
            "prior": {f["prior"] for f in files if "prior" in f}}
    for name, wanted in (("dataset", datasets), ("prior", priors)):
        unknown = sorted((wanted or set()) - held[name])
        if unknown:
            raise ReleaseError(f"the release holds no {name} {', '.join(unknown)}; it holds "
                               f"{', '.join(sorted(held[name]))}")
    chosen = []
    for entry in files:
        name = entry["name"]
        if Path(name).name != name or name.startswith(".") or name == MANIFEST:
            raise ReleaseError(f"the manifest names an unsafe file {name!r}")
        if entry["kind"] == "document":
            chosen.append(entry)
        elif datasets is None or entry["dataset"] in datasets:
            if entry["kind"] == "dataset":
                if priors is None or any(f.get("dataset") == entry["dataset"]
                                         and f.get("prior") in priors for f in files):
                    chosen.append(entry)
            elif priors is None or entry["prior"] in priors:
                chosen.append(entry)
    return chosen


def _valid_here(path: Path, entry: dict) -> bool:
    """Whether ``path`` holds the manifest's file; a wrong file is deleted (and said so)."""
    if not path.exists():
        return False
    if path.stat().st_size == entry["bytes"] and file_sha256(path) == entry["sha256"]:
        return True
    logger.warning("%s does not match the manifest's sha256 %s…: deleted, downloading it again",
                   path, entry["sha256"][:12])
    path.unlink()
    return False


def download_release(base_url: str | None, dest: str | Path, *,
                     datasets: str | Iterable[str] | None = None,
                     priors: str | Iterable[str] | None = None, retries: int = 3,
                     timeout_s: float = 60.0) -> DownloadReport:
    """Download the release at ``base_url`` (its files at ``<base_url>/<name>``) into
    ``dest``, all of it or the files of ``datasets`` and ``priors``; see the module docstring.
    Raises :class:`ReleaseDownloadFailed` naming every file that failed (the others are kept,
    verified)."""
    if not base_url:
        raise ReleaseURLMissing(
            "no release URL: pass --url <base URL> (the folder holding manifest.json), or set "
            "release.base_url in config.yaml or a --configfile")
    base = base_url.rstrip("/") + "/"
    dest = Path(dest)
    staging = dest / STAGING
    if staging.exists():
        shutil.rmtree(staging)  # leftovers of an interrupted download: start those afresh
    staging.mkdir(parents=True)
    report = DownloadReport(dest)
    t0 = time.perf_counter()
    fetch_file(base + MANIFEST, staging / MANIFEST, None, retries=retries, timeout_s=timeout_s)
    manifest = read_manifest(staging)
    files = select_files(manifest, datasets, priors)
    todo = []
    for entry in files:
        if _valid_here(dest / entry["name"], entry):
            report.skipped.append(entry["name"])
        else:
            todo.append(entry)
    logger.info("[download] %s: %d file(s) selected, %d already here and valid, %d to fetch "
                "(%s bytes)", base, len(files), len(report.skipped), len(todo),
                f"{sum(e['bytes'] for e in todo):,}")
    with progress_steps(sum(e["bytes"] for e in todo), "[download] bytes", logger) as progress:
        for entry in todo:
            name = entry["name"]
            try:
                fetch_file(base + name, staging / name, f"sha256:{entry['sha256']}",
                           retries=retries, timeout_s=timeout_s, progress=progress)
            except DownloadChecksumError as err:
                report.failed[name] = (f"sha256 mismatch: the downloaded file was deleted, "
                                       f"nothing corrupt is kept ({err})")
                logger.error("[download] %s: %s", name, report.failed[name])
                continue
            except DownloadError as err:
                report.failed[name] = str(err)
                logger.error("[download] %s: %s", name, err)
                continue
            os.replace(staging / name, dest / name)
            report.downloaded.append(name)
            report.bytes_downloaded += entry["bytes"]
            logger.info("[download] %s: %s bytes, sha256 %s… verified", name,
                        f"{entry['bytes']:,}", entry["sha256"][:12])
    report.seconds = time.perf_counter() - t0
    if report.failed:
        raise ReleaseDownloadFailed(
            f"{len(report.failed)} of {len(files)} file(s) failed; run the download again to "
            "retry them (valid files are skipped): " +
            "; ".join(f"{name}: {why}" for name, why in report.failed.items()))
    os.replace(staging / MANIFEST, dest / MANIFEST)
    shutil.rmtree(staging, ignore_errors=True)
    logger.info("[download] %d downloaded (%s bytes in %.1f s), %d skipped; release in %s",
                len(report.downloaded), f"{report.bytes_downloaded:,}", report.seconds,
                len(report.skipped), dest)
    return report


def download_configured(settings: Mapping[str, Any]) -> DownloadReport:
    """:func:`download_release` with the settings of ``postrisk.release.download_settings``
    (what ``postrisk download`` runs): the release at ``base_url`` into ``download_dir``."""
    return download_release(settings["base_url"], Path(settings["download_dir"]),
                            datasets=settings["datasets"], priors=settings["priors"],
                            retries=settings["retries"], timeout_s=settings["timeout_s"])


def download_summary(report: DownloadReport, dest: str | Path) -> str:
    """What a download did, and how to load its tasks (``dest``: where the release is)."""
    dest = Path(dest)
    return (f"{len(report.downloaded)} file(s) downloaded and verified "
            f"({report.bytes_downloaded / 1e6:.1f} MB in {report.seconds:.1f} s), "
            f"{len(report.skipped)} already here and valid; release in {dest}\n"
            f"load a task: postrisk.load_task('<dataset>/<prior>/<noise>/<coverage>/<seed>',"
            f" root={str(dest)!r}); list them: postrisk.list_tasks(root={str(dest)!r})")
