"""A good local release and a mirror that disagrees with it (a wrong URL, a half-updated mirror, a
newer release): no download loses a verified local file. Without ``--replace`` the run stops
before it touches anything; with it, a run whose files do not all verify — or that is killed
while its replacements wait in staging — leaves the previous copy as it was."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import postrisk
from postrisk.cli import main
from postrisk.core.download import file_sha256
from postrisk.release import CROISSANT, MANIFEST
from postrisk.release.croissant import write_croissant
from postrisk.release.download import (
    LOCK,
    STAGING,
    DifferentReleaseHere,
    ReleaseDownloadFailed,
    download_release,
)
from tests.http_fixture import FakeSources, serve_files
from tests.release.release_helpers import KEYS, gate_server, wait_for

#: A sha256 in hex, whole or shortened to 12 digits or more: no message repeats one.
HASH = re.compile(r"[0-9a-f]{12,}")


def other_release(out: Path, to: Path, created: str = "2099-01-01T00:00:00+00:00") -> dict:
    """A copy of the release ``out`` in ``to`` whose every file has other bytes, listed in its
    manifest with their sizes and sha256: another release (its manifest)."""
    shutil.copytree(out, to)
    manifest = json.loads((to / MANIFEST).read_text())
    for entry in manifest["files"]:
        path = to / entry["name"]
        path.write_bytes(path.read_bytes() + b"\nanother release\n")
        entry["bytes"], entry["sha256"] = path.stat().st_size, file_sha256(path)
    manifest["created"] = created
    (to / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    # its own Croissant metadata, as packing writes it for its manifest
    write_croissant(to, manifest, [p for p in (to / "DATA_CARD.md", to / "CITATION.cff")
                                   if p.is_file()], None)
    return manifest


def digests(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` but the lock and the staging folder: name -> sha256."""
    return {p.name: file_sha256(p) for p in sorted(folder.iterdir())
            if p.is_file() and p.name != LOCK}


@pytest.fixture
def good_copy(release, tmp_path):
    """A verified download of the release in ``tmp_path/data``: (folder, its files' sha256)."""
    out, manifest = release
    data = tmp_path / "data"
    with FakeSources() as server:
        download_release(serve_files(server, out), data, retries=1)
    before = digests(data)
    assert set(before) == {e["name"] for e in manifest["files"]} | {MANIFEST, CROISSANT}
    return data, before


def test_a_mirror_of_another_release_changes_nothing(release, good_copy, tmp_path, capsys,
                                                     caplog):
    """The drill: a good copy, then `postrisk download` from a mirror with other digests and
    other bytes: exit 1, every local file's sha256 unchanged, one line saying why and what to
    do, and nothing but the manifest fetched."""
    caplog.set_level(logging.INFO, logger="postrisk")
    data, before = good_copy
    _, here = release
    there = other_release(release[0], tmp_path / "mirror")
    capsys.readouterr()
    with FakeSources() as server:
        url = serve_files(server, tmp_path / "mirror")
        assert main(["download", "--url", url, "--dest", str(data), "--retries", "1"]) == 1
        assert dict(server.hits) == {f"/release/{MANIFEST}": 1}
        with pytest.raises(DifferentReleaseHere):  # the library says the same
            download_release(url, data, retries=1)
    assert digests(data) == before
    assert not (data / STAGING).exists()
    message = (f"{data} holds another release than {url}/{MANIFEST}: "
               f"{len(here['files'])} file(s) differ (DATA_CARD.md, airfoil_dataset.zip, "
               f"airfoil_gp.zip, … ({len(here['files']) - 3} more)); here: created "
               f"{here['created']}, {len(here['files'])} file(s), scale smoke; there: created "
               f"{there['created']}, {len(there['files'])} file(s), scale smoke. Nothing was "
               "changed. Check the URL; to replace the release here with that one, run the "
               "command again with --replace (replace=True): the files here are kept until "
               "every replacement has verified")
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert err == [f"error: {message}"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    postrisk.load_task(KEYS[0].label, root=data, verify=True)  # still the good copy


def test_replacing_from_a_mirror_whose_bytes_fail_keeps_the_copy(release, good_copy, tmp_path,
                                                                caplog):
    """--replace, but the mirror is half-updated: its manifest is the new release's, two of its
    files other, longer bytes. The other files verify, yet none replaces its file here: the old
    copy is intact and the run says so in one line; the transfer's count never passes the
    manifest's sizes and ends `failed`; one log line per failed file; no message repeats a
    hash."""
    caplog.set_level(logging.INFO, logger="postrisk")
    data, before = good_copy
    there = other_release(release[0], tmp_path / "mirror")
    bad = ["concrete_dataset.zip", "instances.csv"]
    sizes = {e["name"]: e["bytes"] for e in there["files"]}
    with FakeSources() as server:
        url = serve_files(server, tmp_path / "mirror")
        for name in bad:  # ten times as long as the manifest says
            server.routes[f"/release/{name}"] = b"x" * (10 * sizes[name])
        with pytest.raises(ReleaseDownloadFailed) as err:
            download_release(url, data, retries=1, replace=True)
    assert digests(data) == before
    assert not (data / STAGING).exists()
    assert str(err.value) == (
        f"download failed: 2 of {len(sizes)} file(s) did not verify (concrete_dataset.zip: "
        f"sha256 mismatch; instances.csv: sha256 mismatch); the previous copy in {data} is "
        "kept unchanged; run the same command again to retry (files already here and valid "
        "are skipped)")
    said = [r.getMessage() for r in caplog.records if r.name.startswith("postrisk")]
    transfer = [m for m in said if m.startswith("[download] transfer: ")]
    total = sum(sizes.values())
    assert transfer[-1].startswith(f"[download] transfer: failed at {total:,} of {total:,} "
                                   "bytes after "), transfer
    for line in transfer[1:]:
        done, of = re.search(r"([\d,]+)(?:/| of )([\d,]+)", line).groups()
        assert int(done.replace(",", "")) <= int(of.replace(",", "")), line
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"[download] {name}: sha256 mismatch: the downloaded file was deleted, "
                      "nothing corrupt is kept (after 1 attempt(s))" for name in bad]
    for line in [*said, str(err.value)]:
        assert not HASH.search(line.replace(str(tmp_path), "")), line


def test_a_damaged_file_is_repaired_even_when_another_fails(release, good_copy):
    """The same release, one local file damaged and another file's download refused (404): the
    damaged file is replaced as soon as its replacement verifies (nothing good is lost), every
    other file here stays as it was, and the one line says so."""
    data, before = good_copy
    out, here = release
    os.truncate(data / "concrete_gp.zip", 1000)
    with FakeSources() as server:
        url = serve_files(server, out)
        server.failures["/release/airfoil_gp.zip"] = [404]
        (data / "airfoil_gp.zip").unlink()
        with pytest.raises(ReleaseDownloadFailed) as err:
            download_release(url, data, retries=1)
    assert str(err.value) == (
        f"download failed: 1 of {len(here['files'])} file(s) did not verify (airfoil_gp.zip: "
        f"HTTP 404); the previous copy in {data} is kept (1 damaged file(s) of it replaced by "
        "verified ones); run the same command again to retry (files already here and valid "
        "are skipped)")
    assert digests(data) == {k: v for k, v in before.items() if k != "airfoil_gp.zip"}


def test_replace_on_purpose(release, good_copy, tmp_path):
    """--replace from a mirror of another release that verifies: every file replaced, then the
    manifest; a second run skips them all."""
    data, _ = good_copy
    there = other_release(release[0], tmp_path / "mirror")
    with FakeSources() as server:
        url = serve_files(server, tmp_path / "mirror")
        report = download_release(url, data, retries=1, replace=True)
        assert sorted(report.replaced) == sorted(e["name"] for e in there["files"])
        again = download_release(url, data, retries=1)
    assert len(again.skipped) == len(there["files"]) and not again.downloaded
    mirror = digests(tmp_path / "mirror")
    assert digests(data) == {name: mirror[name]
                             for name in [*report.replaced, MANIFEST, CROISSANT]}


def _download_process(url: str, dest: Path, log: Path) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "postrisk.cli", "download", "--url", url, "--dest",
             str(dest), "--retries", "1", "--replace"], stdout=fh, stderr=subprocess.STDOUT,
            env={**os.environ, "JAX_PLATFORMS": "cpu"})


def test_a_download_killed_while_staging_keeps_the_copy(release, good_copy, tmp_path):
    """`postrisk download --replace` killed (SIGKILL) while its verified replacements wait in
    staging: every local file as it was, no staged file in place of a good one; the next run
    clears the staging folder, and the old release is still the one here."""
    data, before = good_copy
    out, here = release
    there = other_release(out, tmp_path / "mirror")
    waiting = there["files"][-3]["name"]  # after the packed files: those wait in staging
    with FakeSources() as server:
        url = serve_files(server, tmp_path / "mirror")
        gate = gate_server(server, suffix=waiting)
        proc = _download_process(url, data, tmp_path / "download.log")
        try:
            wait_for(gate.arrived.is_set, 60, f"the download to ask for {waiting}")
            staged = {p.name: file_sha256(p) for p in (data / STAGING).glob("*/*.zip")}
            proc.kill()
            proc.wait(30)
        finally:
            gate.open()
            if proc.poll() is None:
                proc.kill()
    verified = {e["name"]: e["sha256"] for e in there["files"][:-3]}
    assert staged == verified  # the replacements verified, not yet in place
    assert digests(data) == before
    with FakeSources() as server:
        report = download_release(serve_files(server, out), data, retries=1)
    assert len(report.skipped) == len(here["files"]) and not report.downloaded
    assert not (data / STAGING).exists()
    assert digests(data) == before
