"""A damaged local release file, the downloaded files' permissions, and what a download says
when a transfer is cut off or the run is interrupted (Ctrl-C)."""

from __future__ import annotations

import logging
import os
import shlex
import shutil

import pytest

import postrisk
from postrisk.cli import main
from postrisk.core.download import file_sha256
from postrisk.release import MANIFEST
from postrisk.release.download import LOCK, STAGING, ReleaseDownloadFailed, download_release
from postrisk.release.load import ReleaseError
from tests.http_fixture import FakeSources, serve_files
from tests.release.release_helpers import KEYS, served_with_base_url

KEY = KEYS[0].label  # concrete/gp/bump/balanced/0, in concrete_gp.zip


@pytest.fixture
def damaged(release, tmp_path):
    """A copy of the release whose concrete_gp.zip was cut to half its size (``truncate -s``)."""
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    path = copy / "concrete_gp.zip"
    os.truncate(path, path.stat().st_size // 2)
    return copy


def _flip_byte(path, where: float = 0.3) -> None:
    body = bytearray(path.read_bytes())
    body[int(len(body) * where)] ^= 0xFF
    path.write_bytes(bytes(body))


def test_damaged_file_is_one_error_naming_the_repair(damaged):
    repair = (f"`postrisk download --url <release URL> --dataset concrete --prior gp --dest "
              f"{damaged}`")  # no release.base_url in config.yaml: the command needs --url
    with pytest.raises(ReleaseError) as err:
        postrisk.load_task(KEY, root=damaged)
    assert isinstance(err.value, ValueError)
    assert str(err.value).startswith(f"{damaged / 'concrete_gp.zip'} is damaged or incomplete "
                                     "(File is not a zip file); download it again: ")
    assert repair in str(err.value) and "\n" not in str(err.value)
    for call in (lambda: postrisk.load_task(f"{damaged}/concrete_gp.zip/bump/balanced/0"),
                 lambda: postrisk.load_task(KEY, root=damaged, verify=True),
                 lambda: postrisk.list_tasks(damaged, prior="gp", dataset="concrete")[0].load()):
        with pytest.raises(ReleaseError, match="damaged or incomplete"):
            call()
    # a flipped byte: the zip opens, a member fails its CRC (or, verified, the digest differs)
    _flip_byte(damaged / "concrete_bnn.zip")
    key = KEYS[2].label  # concrete/bnn/…
    with pytest.raises(ReleaseError, match=r"concrete_bnn.zip is damaged or incomplete \(Bad "
                                           r"CRC-32 .*--dataset concrete --prior bnn --dest"):
        postrisk.load_task(key, root=damaged)
    with pytest.raises(ReleaseError, match="concrete_bnn.zip is damaged or incomplete"):
        postrisk.load_task(key, root=damaged, verify=True)


def test_damaged_file_in_the_cli_is_one_line(damaged, capsys):
    assert main(["info", KEY, "--root", str(damaged)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 3, err
    assert err[-1].startswith("error: ") and "damaged or incomplete" in err[-1]
    assert f"--dataset concrete --prior gp --dest {damaged}`" in err[-1]


def test_the_repair_works_as_written(release, damaged, tmp_path, monkeypatch, capsys):
    """With release.base_url configured, the hint has no --url, and running it repairs."""
    out, _ = release
    with served_with_base_url(out, tmp_path, monkeypatch) as (server, _):
        with pytest.raises(ReleaseError) as err:
            postrisk.load_task(KEY, root=damaged)
        hint = str(err.value).split("`")[1]
        assert hint == f"postrisk download --dataset concrete --prior gp --dest {damaged}"
        assert main(shlex.split(hint)[1:]) == 0
        assert server.hits["/release/concrete_gp.zip"] == 1  # the damaged file only
    assert "1 file(s) downloaded and verified" in capsys.readouterr().out
    postrisk.load_task(KEY, root=damaged, verify=True)


# -- permissions --------------------------------------------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664)], ids=["022", "002"])
def test_downloaded_files_keep_the_umask(release, tmp_path, umask, mode):
    """pooch writes through a NamedTemporaryFile (0600): the files get 0o666 & ~umask, as the
    packed release's (0644) and any file the user writes."""
    out, manifest = release
    old = os.umask(umask)
    try:
        with FakeSources() as server:
            download_release(serve_files(server, out), tmp_path, retries=1)
    finally:
        os.umask(old)
    names = [f["name"] for f in manifest["files"]] + [MANIFEST]
    names += [LOCK] if (tmp_path / LOCK).exists() else []  # (filelock may remove it)
    assert {name: oct(os.stat(tmp_path / name).st_mode & 0o777) for name in names} == \
        {name: oct(mode) for name in names}


# -- what a download says when it does not finish ---------------------------------------------

def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("postrisk")]


def test_cut_off_transfer_is_a_failure_said_once(release, tmp_path, caplog):
    """A file cut off on every attempt: the transfer's last line says `failed` (never `done`),
    the file's failure is one log line, and the error one line naming it."""
    caplog.set_level(logging.INFO, logger="postrisk")
    out, manifest = release
    total = sum(f["bytes"] for f in manifest["files"])
    with FakeSources() as server:
        url = serve_files(server, out)
        server.cutoffs["/release/concrete_gp.zip"] = 1
        with pytest.raises(ReleaseDownloadFailed) as err:
            download_release(url, tmp_path, retries=1)
    final = [m for m in _messages(caplog) if m.startswith("[download] transfer: ")
             and m.split(": ", 1)[1].split()[0] in ("done,", "stopped", "failed")]
    assert len(final) == 1 and final[0].startswith("[download] transfer: failed at "), final
    assert final[0].split(" at ", 1)[1].split(" after ")[0].endswith(f" of {total:,} bytes")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("[download] concrete_gp.zip: "), errors
    assert str(err.value) == (
        f"download failed: 1 of {len(manifest['files'])} file(s) did not verify "
        f"(concrete_gp.zip: transfer failed); nothing in {tmp_path} was replaced, "
        f"{len(manifest['files']) - 1} new file(s) verified and kept; run the same command "
        "again to retry (files already here and valid are skipped)")


def test_interrupted_download_says_rerun_resumes(release, tmp_path, caplog, monkeypatch):
    """Ctrl-C half-way through the second file: the progress says so, the download says what
    it kept and that the same command resumes; run again, it fetches only the rest."""
    caplog.set_level(logging.INFO, logger="postrisk")
    out, manifest = release
    import postrisk.release.download as download

    real = download.fetch_file
    fetched = []

    def interrupted(url, path, known_hash=None, **kw):
        if known_hash is not None:  # a release file, not the manifest
            if fetched:
                kw["progress"].advance(1000)
                raise KeyboardInterrupt
            fetched.append(url)
        return real(url, path, known_hash, **kw)

    with FakeSources() as server:
        url = serve_files(server, out)
        monkeypatch.setattr(download, "fetch_file", interrupted)
        with pytest.raises(KeyboardInterrupt):
            download_release(url, tmp_path, retries=1)
        said = _messages(caplog)
        assert any(m.startswith("[download] transfer: interrupted (Ctrl-C) at ") and
                   m.split(" at ", 1)[1].startswith(f"{manifest['files'][0]['bytes'] + 1000:,}"
                                                    " of ") for m in said), said
        assert said[-1] == (
            f"[download] interrupted (Ctrl-C): 1 new file(s) downloaded and verified are kept "
            f"in {tmp_path}, the file being fetched was discarded; no file that was here was "
            "replaced; run the same command again to resume (files already there and valid "
            "are skipped)")
        assert not (tmp_path / STAGING).exists() and not (tmp_path / MANIFEST).exists()
        monkeypatch.setattr(download, "fetch_file", real)
        again = download_release(url, tmp_path, retries=1)  # no lock left held
    assert again.skipped == [manifest["files"][0]["name"]]
    assert len(again.downloaded) == len(manifest["files"]) - 1
    for entry in manifest["files"]:
        assert file_sha256(tmp_path / entry["name"]) == entry["sha256"]
