"""Downloading a released suite (``postrisk download``, rule ``download``; docs/release.md).

The manifest comes first; then every selected file (all, or those of some datasets and
priors) is fetched from ``<base_url>/<name>`` with pooch (:func:`postrisk.core.download.
fetch_file`) and its sha256 checked against the manifest. A file already here with the right
sha256 is skipped; one with another sha256 is deleted (and said so) and fetched again. A
download whose bytes do not match is deleted — nothing corrupt is ever kept — and reported; the
other files go on. The manifest moves into place last, when every selected file is verified.

One download at a time per destination: a run holds the lock ``<dest>/.download.lock``
(``filelock``; released when the process ends, however it ends) from start to end. A second run
into the same folder (array jobs sharing a data folder) logs that it waits, and once the first
is done finds its files valid and skips them: both succeed. Each run stages its files in a
folder of its own, ``<dest>/.download/<pid>-<random>/``, and moves each into place only once
verified, so a download cut off (or a process killed) half-way leaves nothing that looks
finished; whatever is left in ``<dest>/.download/`` when a run takes the lock belongs to a run
that has ended, and is cleared (pooch cannot resume a transfer: an interrupted file starts
afresh). An interrupted run (Ctrl-C) says what it kept and that running the same command again
resumes: valid files are skipped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from postrisk.core.download import (
    DownloadChecksumError,
    DownloadError,
    fetch_file,
    file_mode,
    file_sha256,
)
from postrisk.core.progress import progress_steps
from postrisk.release import MANIFEST
from postrisk.release.load import ReleaseError, read_manifest

logger = logging.getLogger(__name__)

#: Where downloads stage their files inside the destination (a folder per run).
STAGING = ".download"
#: The lock a download holds on its destination (postrisk never deletes it: a waiting run may
#: hold it open).
LOCK = ".download.lock"


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
    files, their datasets' artefact files, the documents and the instance index. Unknown names
    are an error listing what the release holds."""
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
        if entry["kind"] in ("document", "index"):
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


@contextlib.contextmanager
def destination_lock(dest: Path) -> Iterator[None]:
    """Hold ``<dest>/.download.lock`` (see the module docstring); while another process holds
    it, log that this one waits, then wait."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(dest / LOCK), mode=file_mode() | 0o600)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.info("[download] waiting for another download into %s to finish (it holds %s) "
                    "…", dest, dest / LOCK)
        t0 = time.perf_counter()
        lock.acquire()
        logger.info("[download] the other download into %s ended after %.1f s; going on "
                    "(what it verified is skipped)", dest, time.perf_counter() - t0)
    try:
        yield
    finally:
        lock.release()


def _own_staging(dest: Path) -> Path:
    """A fresh staging folder for this run, under the lock: leftovers of ended runs (killed
    ones) are cleared first."""
    root = dest / STAGING
    if root.is_dir():
        for left in list(root.iterdir()):
            logger.info("[download] clearing %s (left by an interrupted download)", left)
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left, ignore_errors=True)
            else:
                left.unlink(missing_ok=True)
    root.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))


def download_release(base_url: str | None, dest: str | Path, *,
                     datasets: str | Iterable[str] | None = None,
                     priors: str | Iterable[str] | None = None, retries: int = 3,
                     timeout_s: float = 60.0) -> DownloadReport:
    """Download the release at ``base_url`` (its files at ``<base_url>/<name>``) into
    ``dest``, all of it or the files of ``datasets`` and ``priors``; see the module docstring.
    Raises :class:`ReleaseDownloadFailed` naming every file that failed (the others are kept,
    verified). Waits while another download into ``dest`` runs."""
    if not base_url:
        raise ReleaseURLMissing(
            "no release URL: pass --url <base URL> (the folder holding manifest.json), or set "
            "release.base_url in config.yaml or a --configfile")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    report = DownloadReport(dest)
    try:
        with destination_lock(dest):
            staging = _own_staging(dest)
            try:
                _download(base_url.rstrip("/") + "/", dest, staging, report, datasets, priors,
                          retries, timeout_s)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
                with contextlib.suppress(OSError):
                    (dest / STAGING).rmdir()  # when no other run's is there
    except KeyboardInterrupt:
        kept = (f"{len(report.downloaded)} file(s) downloaded and verified are kept in {dest}, "
                "the file being fetched was discarded" if report.downloaded else
                "no file was downloaded yet")
        logger.warning("[download] interrupted (Ctrl-C): %s; run the same command again to "
                       "resume (files already there and valid are skipped)", kept)
        raise
    return report


def _download(base: str, dest: Path, staging: Path, report: DownloadReport,
              datasets: str | Iterable[str] | None, priors: str | Iterable[str] | None,
              retries: int, timeout_s: float) -> None:
    """The download proper (:func:`download_release`), under the destination's lock."""
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
    with progress_steps(sum(e["bytes"] for e in todo), "[download] transfer", logger,
                        unit="bytes") as progress:
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
    logger.info("[download] %d downloaded (%s bytes in %.1f s), %d skipped; release in %s",
                len(report.downloaded), f"{report.bytes_downloaded:,}", report.seconds,
                len(report.skipped), dest)


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
