"""Downloading a released suite (``postrisk download``, rule ``download``; docs/release.md).

Nothing verified is ever lost. The manifest comes first, into the run's staging folder; when the
destination already holds a release (its ``manifest.json``) whose files differ from that
manifest's — a wrong URL, a half-updated mirror, a newer release — the run stops before it
touches anything and says so (:class:`DifferentReleaseHere`), unless asked to replace it
(``replace=True``, ``postrisk download --replace``). Then every selected file (all, or those of
some datasets and priors) that is not here with the manifest's size and sha256 is fetched from
``<base_url>/<name>`` with pooch (:func:`postrisk.core.download.fetch_file`) to a staging name
and its sha256 checked. A verified file whose place is free moves into place at once (a run cut
off keeps it, and the next run skips it), and so does one replacing a damaged file of the same
release (the manifest here is the URL's: nothing good is lost); one that replaces another
release's file (or any file of a folder without a manifest) waits in staging until every
selected file has verified, and only then do the replacements move into place, the manifest
last. A run in which any file fails moves none of those: the verified files that were here stay
as they were, the failed download is deleted — nothing corrupt is ever kept — and one line
names what failed, says the previous copy is kept and what to do. The transfer's progress
counts at most each file's manifest size and ends ``failed`` when a file failed.

One download at a time per destination: a run holds the lock ``<dest>/.download.lock``
(``filelock``; released when the process ends, however it ends) from start to end. A second run
into the same folder (array jobs sharing a data folder) logs that it waits, and once the first
is done finds its files valid and skips them: both succeed. Each run stages its files in a
folder of its own, ``<dest>/.download/<pid>-<random>/``, so a download cut off (or a process
killed) half-way leaves nothing that looks finished and replaces nothing; whatever is left in
``<dest>/.download/`` when a run takes the lock belongs to a run that has ended, and is cleared
(pooch cannot resume a transfer: an interrupted file starts afresh). An interrupted run
(Ctrl-C) says what it kept and that running the same command again resumes: valid files are
skipped.
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
    HTTPClientError,
    fetch_file,
    file_mode,
    file_sha256,
)
from postrisk.core.progress import progress_steps
from postrisk.release import CROISSANT, MANIFEST
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
    """Some files could not be downloaded or verified; the message names each, and says that
    the files that were here are kept."""


class DifferentReleaseHere(RuntimeError):
    """The destination holds a release whose files differ from the manifest's at the URL;
    nothing was changed."""


@dataclass
class DownloadReport:
    """What a download did: files fetched and verified (``downloaded``; those of them that
    replaced a file here also in ``replaced``), files already valid, failures (name: why)."""

    dest: Path
    downloaded: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
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


def release_files(manifest: Mapping[str, Any]) -> dict[str, str]:
    """A manifest's files: name -> sha256."""
    return {entry["name"]: entry["sha256"] for entry in manifest["files"]}


def differing_files(here: Mapping[str, Any], there: Mapping[str, Any]) -> list[str]:
    """The files two manifests disagree on, sorted: another sha256, or listed by one only (an
    empty list: the same release, whatever else — its date — differs)."""
    a, b = release_files(here), release_files(there)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def different_release_message(dest: Path, manifest_url: str, here: Mapping[str, Any],
                              there: Mapping[str, Any], differ: list[str]) -> str:
    """One line: ``dest`` holds another release than ``manifest_url``'s, how they differ, that
    nothing was changed, and the two ways on."""
    shown = ", ".join(differ[:3]) + (f", … ({len(differ) - 3} more)" if len(differ) > 3 else "")

    def about(m: Mapping[str, Any]) -> str:
        return (f"created {m.get('created', '?')}, {len(m['files'])} file(s), scale "
                f"{m.get('scale', '?')}")

    return (f"{dest} holds another release than {manifest_url}: {len(differ)} file(s) differ "
            f"({shown}); here: {about(here)}; there: {about(there)}. Nothing was changed. "
            "Check the URL; to replace the release here with that one, run the command again "
            "with --replace (replace=True): the files here are kept until every replacement "
            "has verified")


def _local_release(dest: Path) -> dict | None:
    """The manifest of the release already in ``dest`` (None: none there, or unreadable — a
    run then treats every file here as one to replace once its replacement verifies)."""
    if not (dest / MANIFEST).is_file():
        return None
    try:
        return read_manifest(dest)
    except (ReleaseError, OSError) as err:
        logger.warning("[download] %s cannot be read (%s): treated as no release here", dest /
                       MANIFEST, err)
        return None


def _matches(path: Path, entry: dict) -> bool:
    """Whether ``path`` holds the manifest's file (its size, then its sha256)."""
    return path.stat().st_size == entry["bytes"] and file_sha256(path) == entry["sha256"]


def _failure(err: DownloadError, retries: int) -> tuple[str, str]:
    """(the log's reason, the summary's short one) for a file that failed."""
    if isinstance(err, DownloadChecksumError):
        return (f"sha256 mismatch: the downloaded file was deleted, nothing corrupt is kept "
                f"(after {retries} attempt(s))", "sha256 mismatch")
    if isinstance(err, HTTPClientError):
        return str(err), f"HTTP {err.status}"
    return str(err), "transfer failed"


def failed_message(report: DownloadReport, n_selected: int, short: Mapping[str, str],
                   kept_here: bool) -> str:
    """One line: which files failed (and the short why), that the files that were here are
    kept (``kept_here``: there were some), and what to do."""
    failed = "; ".join(f"{name}: {short[name]}" for name in report.failed)
    n_new = len(report.downloaded) - len(report.replaced)
    new = f", {n_new} new file(s) verified and kept" if n_new else ""
    repaired = (f" ({len(report.replaced)} damaged file(s) of it replaced by verified ones)"
                if report.replaced else " unchanged")
    kept = (f"the previous copy in {report.dest} is kept{repaired}{new}" if kept_here else
            f"nothing in {report.dest} was replaced{new}")
    return (f"download failed: {len(report.failed)} of {n_selected} file(s) did not verify "
            f"({failed}); {kept}; run the same command again to retry (files already here and "
            "valid are skipped)")


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
                     timeout_s: float = 60.0, replace: bool = False) -> DownloadReport:
    """Download the release at ``base_url`` (its files at ``<base_url>/<name>``) into
    ``dest``, all of it or the files of ``datasets`` and ``priors``; see the module docstring.
    Raises :class:`DifferentReleaseHere` when ``dest`` holds another release (unless
    ``replace``), :class:`ReleaseDownloadFailed` naming every file that failed (the files that
    were here are kept as they were). Waits while another download into ``dest`` runs."""
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
                          retries, timeout_s, replace)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
                with contextlib.suppress(OSError):
                    (dest / STAGING).rmdir()  # when no other run's is there
    except KeyboardInterrupt:
        n_new = len(report.downloaded) - len(report.replaced)
        kept = (f"{n_new} new file(s) downloaded and verified are kept in {dest}, the file "
                "being fetched was discarded" if n_new else "no new file was downloaded yet")
        swap = (f"{len(report.replaced)} damaged file(s) here were replaced by verified ones, "
                "no other file" if report.replaced else "no file that was here was replaced")
        logger.warning("[download] interrupted (Ctrl-C): %s; %s; run the same command again "
                       "to resume (files already there and valid are skipped)", kept, swap)
        raise
    return report


def _download(base: str, dest: Path, staging: Path, report: DownloadReport,
              datasets: str | Iterable[str] | None, priors: str | Iterable[str] | None,
              retries: int, timeout_s: float, replace: bool) -> None:
    """The download proper (:func:`download_release`), under the destination's lock."""
    t0 = time.perf_counter()
    fetch_file(base + MANIFEST, staging / MANIFEST, None, retries=retries, timeout_s=timeout_s)
    manifest = read_manifest(staging)
    files = select_files(manifest, datasets, priors)
    here = _local_release(dest)
    differ = differing_files(here, manifest) if here is not None else []
    if differ and not replace:
        raise DifferentReleaseHere(different_release_message(dest, base + MANIFEST, here,
                                                             manifest, differ))
    if differ:
        logger.warning("[download] replacing the release in %s (--replace): %d file(s) "
                       "differ; the files here stay until every replacement has verified",
                       dest, len(differ))
    # A file here that differs is replaced once its replacement verifies: at once when it is
    # a damaged file of this very release (its own manifest says so: nothing good is lost),
    # else (another release's, or no manifest here) only once every file has verified.
    damaged = here is not None and not differ
    todo, to_replace = [], set()
    for entry in files:
        path = dest / entry["name"]
        if not path.exists():
            todo.append(entry)
        elif _matches(path, entry):
            report.skipped.append(entry["name"])
        else:
            todo.append(entry)
            to_replace.add(entry["name"])
            if not differ:  # (a replaced release's files all differ: said once above)
                logger.warning("[download] %s differs from the manifest's file (%s): fetching "
                               "it again; the file here is replaced only once its replacement "
                               "verifies", path, "damaged" if damaged else "not this release's?")
    logger.info("[download] %s: %d file(s) selected, %d already here and valid, %d to fetch "
                "(%s bytes)", base, len(files), len(report.skipped), len(todo),
                f"{sum(e['bytes'] for e in todo):,}")
    held, short = [], {}
    with progress_steps(sum(e["bytes"] for e in todo), "[download] transfer", logger,
                        unit="bytes") as progress:
        for entry in todo:
            name = entry["name"]
            try:
                fetch_file(base + name, staging / name, f"sha256:{entry['sha256']}",
                           retries=retries, timeout_s=timeout_s, progress=progress,
                           size=entry["bytes"])
            except DownloadError as err:
                report.failed[name], short[name] = _failure(err, retries)
                logger.error("[download] %s: %s", name, report.failed[name])
                continue
            wait = name in to_replace and not damaged
            if wait:
                held.append(name)  # into place once every file has verified
            else:
                os.replace(staging / name, dest / name)
                report.downloaded.append(name)
                if name in to_replace:
                    report.replaced.append(name)
            report.bytes_downloaded += entry["bytes"]
            logger.info("[download] %s: %s bytes verified%s", name, f"{entry['bytes']:,}",
                        " (replaces the file here once every file has verified)" if wait
                        else " (replaced the damaged file here)" if name in to_replace else "")
        if report.failed:
            progress.close(failed=True)
    report.seconds = time.perf_counter() - t0
    if report.failed:
        kept_here = bool(to_replace or report.skipped or here is not None)
        raise ReleaseDownloadFailed(failed_message(report, len(files), short, kept_here))
    _fetch_croissant(base, dest, staging, manifest, retries, timeout_s)
    for name in held:
        os.replace(staging / name, dest / name)
        report.downloaded.append(name)
        report.replaced.append(name)
    os.replace(staging / CROISSANT, dest / CROISSANT)
    os.replace(staging / MANIFEST, dest / MANIFEST)
    logger.info("[download] %d downloaded (%s bytes in %.1f s; %d replaced a file here), %d "
                "skipped; release in %s", len(report.downloaded),
                f"{report.bytes_downloaded:,}", report.seconds, len(report.replaced),
                len(report.skipped), dest)


def _fetch_croissant(base: str, dest: Path, staging: Path, manifest: Mapping[str, Any],
                     retries: int, timeout_s: float) -> None:
    """The release's Croissant metadata into ``staging``: the manifest does not list it (it
    lists the manifest), so it is checked against the manifest instead (the manifest's sha256
    and every file's); one already in ``dest`` that agrees is kept, not fetched again; a
    ``ReleaseDownloadFailed`` where it cannot be fetched or disagrees."""
    from postrisk.release.verify import croissant_problems

    if (dest / CROISSANT).is_file():
        shutil.copy2(dest / CROISSANT, staging / CROISSANT)
        if not croissant_problems(staging, manifest):
            return
    try:
        fetch_file(base + CROISSANT, staging / CROISSANT, None, retries=retries,
                   timeout_s=timeout_s)
    except DownloadError as err:
        raise ReleaseDownloadFailed(f"{CROISSANT}: {err}; the files the manifest lists are "
                                    "verified: run the download again to retry") from None
    problems = croissant_problems(staging, manifest)
    if problems:
        raise ReleaseDownloadFailed("; ".join(problems) + " (the release's Croissant metadata "
                                    "is not this release's: nothing was kept of it)")
    logger.info("[download] %s: agrees with the manifest", CROISSANT)


def download_configured(settings: Mapping[str, Any], replace: bool = False) -> DownloadReport:
    """:func:`download_release` with the settings of ``postrisk.release.download_settings``
    (what ``postrisk download`` runs): the release at ``base_url`` into ``download_dir``
    (``replace``: a different release there is replaced)."""
    return download_release(settings["base_url"], Path(settings["download_dir"]),
                            datasets=settings["datasets"], priors=settings["priors"],
                            retries=settings["retries"], timeout_s=settings["timeout_s"],
                            replace=replace)


def download_summary(report: DownloadReport, dest: str | Path) -> str:
    """What a download did, and how to load its tasks (``dest``: where the release is)."""
    dest = Path(dest)
    return (f"{len(report.downloaded)} file(s) downloaded and verified "
            f"({report.bytes_downloaded / 1e6:.1f} MB in {report.seconds:.1f} s), "
            f"{len(report.skipped)} already here and valid; release in {dest}\n"
            f"load a task: postrisk.load_task('<dataset>/<prior>/<noise>/<coverage>/<seed>',"
            f" root={str(dest)!r}); list them: postrisk.list_tasks(root={str(dest)!r})")
