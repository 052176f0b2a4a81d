"""postrisk.core.download.fetch_file against a real HTTP server on 127.0.0.1: checksums,
cut-off transfers and retries, a final 4xx, and the byte progress."""

import hashlib
import logging
import os

import pytest

from postrisk.core.download import (
    DownloadChecksumError,
    DownloadError,
    HTTPClientError,
    fetch_file,
)
from postrisk.core.progress import progress_steps
from tests.http_fixture import FakeSources

BODY = os.urandom(3 * 1024 * 1024 + 12345)  # several of fetch_file's 1 MiB chunks
SHA256 = "sha256:" + hashlib.sha256(BODY).hexdigest()
ROUTE = "/files/data.bin"


def listing(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_good_download_with_sha256(tmp_path):
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = BODY
        got = fetch_file(server.url + ROUTE, path, SHA256, retries=2, timeout_s=5)
        assert server.hits[ROUTE] == 1
    assert got == path
    assert path.read_bytes() == BODY
    assert listing(path.parent) == ["data.bin"]


def test_flipped_byte_refused_after_all_attempts(tmp_path):
    path = tmp_path / "out" / "data.bin"
    flipped = bytearray(BODY)
    flipped[len(BODY) // 3] ^= 0xFF
    with FakeSources() as server:
        server.routes[ROUTE] = bytes(flipped)
        with pytest.raises(DownloadChecksumError, match="do not match"):
            fetch_file(server.url + ROUTE, path, SHA256, retries=2, timeout_s=5)
        assert server.hits[ROUTE] == 2
    assert not path.exists()
    assert listing(path.parent) == []  # no pooch temporary file left behind


def test_longer_bytes_count_at_most_the_expected_size_and_name_the_hash_once(tmp_path):
    """A server sending other, longer bytes (a wrong mirror): the progress stops at the size
    it was given, and the error names the expected hash once (pooch's text repeats it)."""
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = BODY + BODY
        with progress_steps(len(BODY), "x", "postrisk.test") as progress:
            with pytest.raises(DownloadChecksumError) as err:
                fetch_file(server.url + ROUTE, path, SHA256, retries=2, timeout_s=5,
                           progress=progress, size=len(BODY))
        assert progress.completed == len(BODY)
    assert str(err.value).count(SHA256.split(":")[1]) == 1
    assert "\n" not in str(err.value)


def test_cut_off_transfer_retried(tmp_path):
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = BODY
        server.cutoffs[ROUTE] = 1
        with progress_steps(len(BODY), "x", "postrisk.test") as progress:
            fetch_file(server.url + ROUTE, path, SHA256, retries=2, timeout_s=5,
                       progress=progress)
        assert server.hits[ROUTE] == 2
        assert progress.completed == len(BODY)  # the restarted transfer is not counted twice
    assert path.read_bytes() == BODY
    assert listing(path.parent) == ["data.bin"]


def test_cut_off_transfer_without_retry_fails_then_restarts_cleanly(tmp_path):
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = BODY
        server.cutoffs[ROUTE] = 1
        with pytest.raises(DownloadError) as err:
            fetch_file(server.url + ROUTE, path, SHA256, retries=1, timeout_s=5)
        assert not isinstance(err.value, DownloadChecksumError | HTTPClientError)
        assert "after 1 attempt(s)" in str(err.value)
        assert not path.exists()
        assert listing(path.parent) == []
        fetch_file(server.url + ROUTE, path, SHA256, retries=1, timeout_s=5)
        assert server.hits[ROUTE] == 2
    assert path.read_bytes() == BODY
    assert listing(path.parent) == ["data.bin"]


def test_404_is_final(tmp_path):
    path = tmp_path / "out" / "missing.bin"
    with FakeSources() as server:
        with pytest.raises(HTTPClientError, match="HTTP 404") as err:
            fetch_file(server.url + "/files/missing.bin", path, None, retries=3, timeout_s=5)
        assert err.value.status == 404
        assert server.hits["/files/missing.bin"] == 1
    assert listing(path.parent) == []


def test_5xx_retried_without_hash(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="postrisk.core.download")
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = b"small"
        server.failures[ROUTE] = [503]
        fetch_file(server.url + ROUTE, path, None, retries=2, timeout_s=5)
        assert server.hits[ROUTE] == 2
    assert path.read_bytes() == b"small"
    # pooch's lines reach the library's logger (not pooch's own stderr handler)
    assert any(r.name == "postrisk.core.download" and "attempt the download again" in r.message
               for r in caplog.records)


def test_progress_counts_the_file_size(tmp_path):
    path = tmp_path / "out" / "data.bin"
    with FakeSources() as server:
        server.routes[ROUTE] = BODY
        with progress_steps(len(BODY), "x", "postrisk.test") as progress:
            fetch_file(server.url + ROUTE, path, SHA256, retries=1, timeout_s=5,
                       progress=progress)
    assert progress.completed == len(BODY) == path.stat().st_size


def test_invalid_url_is_no_checksum_error(tmp_path):
    with pytest.raises(DownloadError) as err:
        fetch_file("no-scheme/data.bin", tmp_path / "data.bin", SHA256, retries=1)
    assert not isinstance(err.value, DownloadChecksumError)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664)], ids=["022", "002"])
def test_downloaded_file_keeps_the_umask(tmp_path, umask, mode):
    """pooch writes through a NamedTemporaryFile (0600); the file gets 0o666 & ~umask."""
    path = tmp_path / "out" / "data.bin"
    old = os.umask(umask)
    try:
        with FakeSources() as server:
            server.routes[ROUTE] = b"small"
            fetch_file(server.url + ROUTE, path, None, retries=1, timeout_s=5)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode
