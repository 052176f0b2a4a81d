"""Two downloads into one destination folder at once (array jobs sharing a data folder): the
second waits for the first's lock, then finds the files valid and skips them; both succeed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import pytest

import postrisk
from postrisk.core.download import file_sha256
from postrisk.release import MANIFEST
from postrisk.release.download import STAGING, download_release
from tests.http_fixture import FakeSources, serve_files
from tests.release.release_helpers import KEYS, gate_server, wait_for

WAITING = "waiting for another download into"


def _all_verified(dest, manifest) -> None:
    assert (dest / MANIFEST).is_file()
    for entry in manifest["files"]:
        assert file_sha256(dest / entry["name"]) == entry["sha256"], entry["name"]
    assert not (dest / STAGING).exists()
    assert sorted(e.label for e in postrisk.list_tasks(dest)) == sorted(k.label for k in KEYS)


def test_second_download_waits_then_skips(release, tmp_path, caplog):
    """In one process, two threads: the lock is a file lock, so they exclude each other as two
    processes do."""
    caplog.set_level(logging.INFO, logger="postrisk")
    out, manifest = release
    dest = tmp_path / "shared"
    reports, errors = {}, {}

    def run(name):
        try:
            reports[name] = download_release(url, dest, retries=1, timeout_s=30)
        except BaseException as err:  # noqa: BLE001 (reported by the test)
            errors[name] = err

    with FakeSources() as server:
        url = serve_files(server, out)
        gate = gate_server(server)
        first = threading.Thread(target=run, args=("first",))
        first.start()
        wait_for(gate.arrived.is_set, what="the first download's transfer")
        second = threading.Thread(target=run, args=("second",))
        second.start()
        wait_for(lambda: any(WAITING in r.getMessage() for r in caplog.records), 10,
                 what="the second download to wait for the lock")
        gate.open()
        first.join(30)
        second.join(30)
    assert not errors, errors
    assert sorted(reports["first"].downloaded) == sorted(f["name"] for f in manifest["files"])
    assert reports["second"].downloaded == [] and \
        len(reports["second"].skipped) == len(manifest["files"])
    _all_verified(dest, manifest)


def _cli(url, dest, out_dir, name):
    stdout = open(out_dir / f"{name}.out", "w")  # noqa: SIM115 (closed by the test)
    stderr = open(out_dir / f"{name}.err", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "postrisk.cli", "download", "--url", url, "--dest", str(dest),
         "--retries", "1"], stdout=stdout, stderr=stderr,
        env={**os.environ, "JAX_PLATFORMS": "cpu"})
    return proc, stdout, stderr


@pytest.mark.slow
def test_two_processes_download_into_one_folder(release, tmp_path, repo):
    """Two `postrisk download` processes into one folder, the second started while the first
    is transferring (the server holds the first's files until the second waits)."""
    out, manifest = release
    dest = tmp_path / "conc"
    with FakeSources() as server:
        url = serve_files(server, out)
        gate = gate_server(server)
        procs = []
        try:
            procs.append(_cli(url, dest, tmp_path, "a"))
            wait_for(gate.arrived.is_set, 60, "the first download's transfer")
            procs.append(_cli(url, dest, tmp_path, "b"))
            wait_for(lambda: WAITING in (tmp_path / "b.err").read_text(), 60,
                     "the second download to wait for the lock")
            gate.open()
            codes = [proc.wait(60) for proc, _, _ in procs]
        finally:
            gate.open()
            for proc, stdout, stderr in procs:
                if proc.poll() is None:
                    proc.kill()
                stdout.close()
                stderr.close()
    said = {name: (tmp_path / f"{name}.out").read_text() + (tmp_path / f"{name}.err").read_text()
            for name in ("a", "b")}
    assert codes == [0, 0], said
    assert f"{len(manifest['files'])} file(s) downloaded and verified" in said["a"]
    assert "0 file(s) downloaded and verified (0.0 MB in" in said["b"]
    assert f"{len(manifest['files'])} already here and valid" in said["b"]
    _all_verified(dest, manifest)
