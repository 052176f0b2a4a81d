"""Checksummed downloads over HTTP, through ``pooch``: the one way postrisk fetches a file (the
covariate sources and the released suite alike).

:func:`fetch_file` downloads one URL to one path. pooch streams the answer into a temporary
file beside the path, checks its hash and only then moves it into place: a failed or cut-off
download, or one whose hash does not match, leaves nothing at the path (pooch deletes the
temporary file). A connection error, a 5xx answer, a cut-off transfer or a hash mismatch is
retried ``retries - 1`` times (pooch waits 1 s, 2 s, … between attempts), and so are 408 and 429
(come back later); any other 4xx answer is final — the file is not there, asking again will not
change that.

pooch has no resumable downloads: an interrupted transfer restarts from the first byte. A
process killed mid-transfer may leave pooch's temporary file (``tmp…``) in the destination
folder; callers that own their folder clear it (``postrisk.release.download`` downloads into a
staging folder of its own for that reason).

pooch's own log lines (the download, each retry) go to this module's logger.

Permissions: pooch writes through a ``NamedTemporaryFile`` (mode 0600); the file at ``path``
gets the mode a file the user creates gets, ``0o666 & ~umask`` (:func:`file_mode`: 0644 under
the usual umask 022, 0664 under 002, the umask of a group's shared data folder).

Progress: ``progress`` is a :class:`postrisk.core.progress.Progress` counting bytes; the
transfer advances it by the bytes written to disk, chunk by chunk, each byte of the file once
over all attempts (a file adds its size on disk, however the server sends it), and, given the
file's expected ``size``, never by more than that: a server sending other, longer bytes (a wrong
mirror) does not push the count past the total it was given.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from postrisk.core.io import package_version

logger = logging.getLogger(__name__)

#: Bytes read per chunk (pooch's default of 1 kB makes large files CPU-bound).
CHUNK_BYTES = 1 << 20


#: 4xx answers that say "later", not "never": retried like a 5xx.
RETRIED_4XX = (408, 429)


class DownloadError(RuntimeError):
    """A file could not be downloaded (unreachable host, HTTP error, cut-off transfer)."""


class HTTPClientError(DownloadError):
    """The server answered 4xx: final, not retried."""

    def __init__(self, url: str, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason} for {url}")
        self.status = status


class DownloadChecksumError(DownloadError):
    """The downloaded bytes do not match the expected hash; nothing was kept."""


class _ByteCounter:
    """Advances a :class:`~postrisk.core.progress.Progress` counting bytes by the bytes of one
    file as they are written to disk (after any ``Content-Encoding`` is undone, so a file counts
    its size on disk whatever the server sends, with or without a ``Content-Length``). Over the
    attempts of one :func:`fetch_file` each byte of the file is counted once: an attempt that
    restarts from the first byte advances the progress only past the furthest earlier one."""

    def __init__(self, progress: Any, size: int | None = None) -> None:
        self.progress = progress
        self.size = size  # the file's expected bytes: never counted past (None: no cap)
        self.counted = 0  # bytes of this file reported so far (the furthest attempt)

    def writer(self, fh: Any) -> _CountingWriter:
        return _CountingWriter(fh, self)


class _CountingWriter:
    """The file object pooch's downloader writes one attempt's chunks to."""

    def __init__(self, fh: Any, counter: _ByteCounter) -> None:
        self.fh = fh
        self.counter = counter
        self.written = 0

    def write(self, chunk: bytes) -> int:
        n = self.fh.write(chunk)
        self.written += len(chunk)
        reached = self.written if self.counter.size is None else min(self.written,
                                                                      self.counter.size)
        ahead = reached - self.counter.counted
        if ahead > 0:
            self.counter.counted = reached
            self.counter.progress.advance(ahead)
        return n

    def flush(self) -> None:
        self.fh.flush()


class _Downloader:
    """pooch's HTTP downloader with a 4xx answer turned into a final error (pooch retries
    anything that is a ``requests`` exception or a ``ValueError``) and the bytes written
    counted on ``progress``."""

    def __init__(self, timeout_s: float, progress: Any = None, size: int | None = None) -> None:
        self.http = _http_downloader(timeout_s)
        self.counter = _ByteCounter(progress, size) if progress is not None else None

    def __call__(self, url: str, output_file: Any, pooch: Any, check_only: bool = False):
        import requests

        try:
            if check_only or self.counter is None or hasattr(output_file, "write"):
                return self.http(url, output_file, pooch, check_only=check_only)
            with open(output_file, "w+b") as fh:
                return self.http(url, self.counter.writer(fh), pooch)
        except requests.HTTPError as err:
            response = err.response
            if response is not None and 400 <= response.status_code < 500 \
                    and response.status_code not in RETRIED_4XX:
                raise HTTPClientError(url, response.status_code, response.reason) from err
            raise


class _ToLibraryLog(logging.Handler):
    """Passes pooch's records on to this module's logger."""

    def emit(self, record: logging.LogRecord) -> None:
        logger.log(record.levelno, "%s", record.getMessage())


def _route_pooch_log() -> None:
    """pooch logs through a private ``logging.Logger("pooch")`` outside the logging tree, with
    its own handler writing to stderr: its lines ("Downloading file …", "Failed to download …
    Will attempt the download again …") would bypass ``postrisk.core.logs``'s routing
    (a job's log file, the terminal). They go through this module's logger instead."""
    import pooch

    pooch_log = pooch.get_logger()
    if not any(isinstance(h, _ToLibraryLog) for h in pooch_log.handlers):
        for handler in list(pooch_log.handlers):
            pooch_log.removeHandler(handler)
        pooch_log.addHandler(_ToLibraryLog())


def _http_downloader(timeout_s: float):
    import pooch

    return pooch.HTTPDownloader(progressbar=False, chunk_size=CHUNK_BYTES,
                                timeout=timeout_s,
                                headers={"User-Agent": f"postrisk/{package_version()}"})


def fetch_file(url: str, path: str | Path, known_hash: str | None = None, *, retries: int = 3,
               timeout_s: float = 60.0, progress: Any = None, size: int | None = None) -> Path:
    """Download ``url`` to ``path`` and check ``known_hash`` (``"sha256:<hex>"``,
    ``"md5:<hex>"`` or None for no check); return ``path``.

    ``retries``: attempts in all (≥ 1). An existing file at ``path`` is replaced; the new one
    has the mode of :func:`file_mode` (the umask's). ``progress`` counts the bytes written, at
    most ``size`` (the file's expected bytes, when known). Raises
    :class:`DownloadChecksumError` when the bytes never matched the hash (nothing is kept),
    :class:`HTTPClientError` on a 4xx answer, :class:`DownloadError` otherwise.
    """
    import pooch
    import requests

    _route_pooch_log()
    path = Path(path)
    path.unlink(missing_ok=True)
    fetcher = pooch.create(path=path.parent, base_url="", registry={path.name: known_hash},
                           urls={path.name: url}, retry_if_failed=max(0, int(retries) - 1),
                           allow_updates=True)
    try:
        fetcher.fetch(path.name, downloader=_Downloader(timeout_s, progress, size))
    except HTTPClientError:
        raise
    except requests.RequestException as err:  # before ValueError: requests' InvalidURL,
        # MissingSchema, … are ValueErrors too, and no checksum failure
        raise DownloadError(f"{url} could not be downloaded after {retries} attempt(s): "
                            f"{_reason(err)}") from err
    except ValueError as err:  # pooch: "SHA256 hash of downloaded file (…) does not match …"
        # (pooch's text, the error's cause, repeats the expected hash: not in the message)
        raise DownloadChecksumError(
            f"{url}: the downloaded bytes do not match {known_hash} after {retries} "
            f"attempt(s); nothing was kept at {path}") from err
    except OSError as err:
        raise DownloadError(f"{url} could not be downloaded after {retries} attempt(s): "
                            f"{_reason(err)}") from err
    os.chmod(path, file_mode())  # pooch's temporary file was 0600
    return path


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc``), else
    set and restored at once."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode of a new file under the current umask: ``0o666 & ~umask``."""
    return 0o666 & ~_umask()


def _reason(err: BaseException) -> str:
    """The innermost useful text of a requests/urllib3 error chain."""
    text = str(err)
    return text if len(text) < 400 else text[:400] + "…"


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file, in hex (pooch's streaming hash)."""
    import pooch

    return pooch.file_hash(str(path), alg="sha256")
