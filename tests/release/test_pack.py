"""The released suite: packing, the manifest, downloads over a real loopback server, loading."""

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

import postrisk
from postrisk.core.download import file_sha256
from postrisk.release import MANIFEST
from postrisk.release.download import (
    STAGING,
    ReleaseDownloadFailed,
    ReleaseURLMissing,
    download_release,
)
from postrisk.release.load import ReleaseError
from postrisk.release.pack import ReleaseTooLarge, group_sha256, release_instances
from postrisk.tasks.store import StoreValidationError, validate_store
from tests.http_fixture import FakeSources, serve_files
from tests.release.release_helpers import DROPPED, KEYS, build, same_arrays


def test_manifest_lists_files_instances_and_the_dropped(release):
    out, manifest = release
    assert manifest["format"] == "postrisk-release" and manifest["scale"] == "smoke"
    names = {f["name"] for f in manifest["files"]}
    assert names == {"concrete_gp.zip", "concrete_bnn.zip", "airfoil_gp.zip",
                     "concrete_dataset.zip", "airfoil_dataset.zip", "DATA_CARD.md",
                     "instances.csv"}
    # the index: one row per shipped instance, with its place and shapes
    index = (out / "instances.csv").read_text().splitlines()
    assert len(index) == 1 + len(KEYS) and index[0].startswith("key,dataset,prior")
    assert json.loads((out / MANIFEST).read_text()) == manifest
    for entry in manifest["files"]:
        path = out / entry["name"]
        assert entry["bytes"] == path.stat().st_size and entry["sha256"] == file_sha256(path)
    assert [i["key"] for i in manifest["instances"]] == sorted(
        [k.label for k in KEYS], key=lambda label: (label.split("/")[0], label.split("/")[1]))
    for inst in manifest["instances"]:
        digest, size = group_sha256(out / inst["file"], inst["group"])
        assert (digest, size) == (inst["sha256"], inst["bytes"])
        assert inst["licence"].startswith("CC BY 4.0")
        assert inst["schema_version"] == postrisk.tasks.TASK_SCHEMA_VERSION
        assert inst["config_digest"] == "x"
        shapes = (inst["n_train"], inst["n_eval"], inst["features"], inst["draws"])
        assert shapes == (30, 20, 2, 200)
        assert inst["chains"] == (4 if inst["prior"] == "bnn" else 1)
    assert manifest["not_shipped"] == [{**vars(DROPPED), "key": DROPPED.label,
                                        "reason": "seed 1 is not valid"}]
    assert manifest["total_bytes"] == sum(f["bytes"] for f in manifest["files"])
    with zipfile.ZipFile(out / "concrete_gp.zip") as zf:
        assert not [n for n in zf.namelist() if "posterior_draws_train" in n]
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
        assert "bump/balanced/0/zarr.json" in zf.namelist()


def test_packing_is_deterministic(stores, release, tmp_path):
    out, manifest = release
    again = build(stores, tmp_path / "again")
    assert [(f["name"], f["sha256"]) for f in again["files"]] == \
        [(f["name"], f["sha256"]) for f in manifest["files"]]


def test_packed_and_plain_stores_load_the_same_arrays(stores, release):
    out, _ = release
    _, tasks, _, _ = stores
    for key in KEYS:
        file = out / f"{key.dataset}_{key.prior}.zip"
        packed = postrisk.load_task(f"{file}/{key.noise}/{key.coverage}/{key.seed}")
        same_arrays(packed, postrisk.load_task(tasks[key]))
        by_key = postrisk.load_task(key.label, root=out, verify=True)
        same_arrays(by_key, postrisk.Task.load(tasks[key]))
        oracle = by_key.oracle
        np.testing.assert_array_equal(oracle.posterior_var, by_key.ds["posterior_var"].values)
        assert oracle.posterior_draws.shape == (200, 20) and by_key.x_train.shape == (30, 2)


def test_dataset_artefacts(release):
    out, _ = release
    with zipfile.ZipFile(out / "concrete_dataset.zip") as zf:
        names = zf.namelist()
        assert json.loads(zf.read("priors/gp.json"))["a"] == 1.5
        assert "priors/bnn.json" in names and "covariates/zarr.json" in names
        assert set(json.loads(zf.read("noise_models.json"))) == {"bump"}


def test_released_store_contract(stores, release):
    out, _ = release
    task = postrisk.load_task(KEYS[0].label, root=out)
    assert json.loads(task.ds.attrs["released_without"]) == ["posterior_draws_train"]
    with pytest.raises(StoreValidationError, match="missing variable 'posterior_mean'"):
        validate_store(task.ds.drop_vars("posterior_mean"), kind="task")
    bad = task.ds.copy()
    bad.attrs["released_without"] = json.dumps(["posterior_draws_train", "posterior_draws"])
    with pytest.raises(StoreValidationError, match="may not leave out"):
        validate_store(bad.drop_vars("posterior_draws"), kind="task")
    plain = postrisk.Task.load(stores[1][KEYS[0]]).ds
    with pytest.raises(StoreValidationError, match="missing variable 'posterior_draws_train'"):
        validate_store(plain.drop_vars("posterior_draws_train"), kind="task")
    old = task.ds.copy()
    old.attrs["schema_version"] = "2"
    with pytest.raises(StoreValidationError, match="schema version '2'"):
        validate_store(old, kind="task")


def test_list_and_lookup(stores, release):
    out, _ = release
    assert [e.label for e in postrisk.list_tasks(out, prior="gp", dataset="concrete")] == \
        ["concrete/gp/bump/balanced/0", "concrete/gp/bump/ood/0"]
    assert {e.source for e in postrisk.list_tasks(out)} == {"release"}
    results = stores[0]
    stores_listed = postrisk.list_tasks(results, seed=[1])
    assert [(e.label, e.source) for e in stores_listed] == [(DROPPED.label, "store")]
    # a valid prior the release does not hold: no download hint (downloading cannot get it)
    with pytest.raises(LookupError, match="^task concrete/hbart/bump/balanced/0 is not under "
                                          ".*: the release there holds no such task; it holds "
                                          "priors bnn, gp for concrete$"):
        postrisk.load_task("concrete/hbart/bump/balanced/0", root=out)
    with pytest.raises(ValueError, match="not an instance key"):
        postrisk.load_task("concrete/gp/bump", root=out)
    with pytest.raises(ValueError, match="name one inside it"):
        postrisk.load_task(out / "concrete_gp.zip")
    with pytest.raises(ReleaseError, match="holds no instance"):
        postrisk.load_task(f"{out}/concrete_gp.zip/edges/balanced/0")


def test_size_and_file_limits_refuse_and_leave_nothing(stores, tmp_path):
    out = tmp_path / "big"
    with pytest.raises(ReleaseTooLarge, match="over the limit of 1,000 .*release.max_bytes"):
        build(stores, out, max_bytes=1000)
    assert not list(out.iterdir())
    # 3 instance files, 2 dataset files, the data card, the index, the manifest, croissant.json
    with pytest.raises(ReleaseTooLarge, match="9 files, over the limit of 5"):
        build(stores, tmp_path / "many", max_files=5)


def test_release_instances_reason_from_the_checks_table(tmp_path):
    table = pd.DataFrame({
        "prior": ["gp", "bnn", "gp", "bnn", "gp", "bnn"], "dataset": ["concrete"] * 6,
        "noise": ["bump"] * 6, "coverage": ["balanced"] * 6, "seed": [0, 0, 1, 1, 2, 2],
        "max_rhat": [np.nan, 1.2, np.nan, 1.01, np.nan, 1.02],
        "valid": [False, False, True, True, False, False]})
    offered = release_instances(table, lambda key: tmp_path / key.label)
    reasons = {(i.key.prior, i.key.seed): (i.valid, i.reason) for i in offered}
    assert reasons[("gp", 1)] == (True, "")
    assert "max R̂ 1.2000 > 1.05" in reasons[("gp", 0)][1]
    assert "beyond the cell's first valid seeds" in reasons[("bnn", 2)][1]


# -- downloads over a real HTTP server on 127.0.0.1 --------------------------------------------

def test_download_verify_skip_and_load(release, stores, tmp_path):
    out, manifest = release
    dest = tmp_path / "data"
    with FakeSources() as server:
        url = serve_files(server, out)
        report = download_release(url, dest)
        assert sorted(report.downloaded) == sorted(f["name"] for f in manifest["files"])
        assert report.bytes_downloaded == manifest["total_bytes"]
        hits = sum(server.hits.values())
        again = download_release(url, dest)
        assert again.downloaded == [] and len(again.skipped) == len(manifest["files"])
        assert sum(server.hits.values()) == hits + 1  # the manifest only
    assert not (dest / STAGING).exists()
    for key in KEYS:
        same_arrays(postrisk.load_task(key.label, root=dest, verify=True),
                     postrisk.Task.load(stores[1][key]))


def test_filtered_download(release, tmp_path):
    out, _ = release
    with FakeSources() as server:
        report = download_release(serve_files(server, out), tmp_path, datasets=["concrete"],
                                  priors="gp")
        assert sorted(report.downloaded) == ["DATA_CARD.md", "concrete_dataset.zip",
                                             "concrete_gp.zip", "instances.csv"]
        with pytest.raises(ReleaseError, match="no dataset abalone; it holds airfoil, concrete"):
            download_release(server.url + "/release", tmp_path, datasets=["abalone"])
    assert [e.label for e in postrisk.list_tasks(tmp_path)] == \
        ["concrete/gp/bump/balanced/0", "concrete/gp/bump/ood/0"]


def test_flipped_byte_is_detected_and_nothing_corrupt_is_kept(release, tmp_path):
    out, _ = release
    with FakeSources() as server:
        url = serve_files(server, out)
        body = bytearray(server.routes["/release/concrete_gp.zip"])
        body[len(body) // 2] ^= 0x01
        server.routes["/release/concrete_gp.zip"] = bytes(body)
        with pytest.raises(ReleaseDownloadFailed, match=r"^download failed: 1 of 7 file\(s\) "
                           r"did not verify \(concrete_gp.zip: sha256 mismatch\); nothing in "):
            download_release(url, tmp_path, retries=2)
        assert server.hits["/release/concrete_gp.zip"] == 2
        assert not (tmp_path / "concrete_gp.zip").exists()
        assert not list((tmp_path / STAGING).glob("concrete_gp*"))
        assert not (tmp_path / MANIFEST).exists()  # the manifest moves in once all verified
        assert (tmp_path / "airfoil_gp.zip").exists()  # the other files are kept, verified
        # a corrupt local file is replaced, not trusted
        (tmp_path / "airfoil_gp.zip").write_bytes(b"corrupt")
        server.routes["/release/concrete_gp.zip"] = (out / "concrete_gp.zip").read_bytes()
        report = download_release(url, tmp_path)
        assert sorted(report.downloaded) == ["airfoil_gp.zip", "concrete_gp.zip"]
        assert report.replaced == ["airfoil_gp.zip"]
    assert file_sha256(tmp_path / "airfoil_gp.zip") == file_sha256(out / "airfoil_gp.zip")


def test_download_cut_off_half_way_recovers(release, tmp_path):
    out, _ = release
    with FakeSources() as server:
        url = serve_files(server, out)
        server.cutoffs["/release/concrete_bnn.zip"] = 1
        download_release(url, tmp_path / "a", retries=2)  # retried within the run
        assert server.hits["/release/concrete_bnn.zip"] == 2
        server.cutoffs["/release/concrete_bnn.zip"] = 1
        with pytest.raises(ReleaseDownloadFailed, match="concrete_bnn.zip"):
            download_release(url, tmp_path / "b", retries=1)  # cut off, no retry left
        assert not (tmp_path / "b" / "concrete_bnn.zip").exists()
        assert not (tmp_path / "b" / STAGING).exists()  # the failed run cleared its own
        killed = tmp_path / "b" / STAGING / "12345-abcdefgh"  # a killed run's staging folder
        killed.mkdir(parents=True)
        (killed / "tmpleftover").write_bytes(b"half")
        (tmp_path / "b" / STAGING / "tmpolder").write_bytes(b"half")  # an older postrisk's
        report = download_release(url, tmp_path / "b", retries=1)  # restarts cleanly
        assert report.downloaded == ["concrete_bnn.zip"]
    assert file_sha256(tmp_path / "b" / "concrete_bnn.zip") == \
        file_sha256(out / "concrete_bnn.zip")
    assert not (tmp_path / "b" / STAGING).exists()


def test_missing_url_and_unreachable_host(tmp_path):
    with pytest.raises(ReleaseURLMissing, match="release.base_url"):
        download_release(None, tmp_path)
    from postrisk.cli import main

    assert main(["download", "--dest", str(tmp_path)]) == 2
    with FakeSources() as server:
        url = server.url + "/nothing"
    assert main(["download", "--url", url, "--dest", str(tmp_path), "--retries", "1"]) == 1


def test_cli_download(release, tmp_path, capsys):
    from postrisk.cli import main

    out, _ = release
    with FakeSources() as server:
        code = main(["download", "--url", serve_files(server, out), "--dest", str(tmp_path),
                     "--dataset", "airfoil"])
    assert code == 0
    said = capsys.readouterr().out
    assert "4 file(s) downloaded and verified" in said and str(tmp_path) in said
    assert [e.label for e in postrisk.list_tasks(tmp_path)] == ["airfoil/gp/bump/balanced/0"]


def test_release_config_is_validated():
    from postrisk.grid.config import ConfigError, default_config_path, load_config, validate_config

    cfg = load_config("config.yaml")
    assert cfg["release"]["base_url"] is None and cfg["release"]["max_bytes"] == 50_000_000_000
    # outside a checkout, `postrisk download` uses the same settings as config.yaml
    assert load_config(default_config_path())["release"] == cfg["release"]
    for bad, message in (({"base_url": "ftp://x"}, "base_url"),
                         ({"priors": ["gpp"]}, "gpp"), ({"max_bytes": 0}, "max_bytes")):
        with pytest.raises(ConfigError, match=message):
            validate_config({**cfg, "release": {**cfg["release"], **bad}})


def test_the_croissant_metadata_is_downloaded_and_checked(release, tmp_path):
    """Fault: croissant.json was neither downloaded nor verified. It comes with the release and
    agrees with its manifest; one that does not is refused and nothing of it is kept."""
    import shutil

    from postrisk.release import CROISSANT

    out, manifest = release
    with FakeSources() as server:
        download_release(serve_files(server, out), tmp_path / "data")
    assert (tmp_path / "data" / CROISSANT).read_bytes() == (out / CROISSANT).read_bytes()
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    metadata = json.loads((broken / CROISSANT).read_text())
    metadata["distribution"] = [o for o in metadata["distribution"] if o["@id"] != MANIFEST]
    (broken / CROISSANT).write_text(json.dumps(metadata))
    with FakeSources() as server:
        with pytest.raises(ReleaseDownloadFailed, match=rf"^{CROISSANT}: does not list "
                                                        rf"{MANIFEST} \(the release's Croissant "
                                                        "metadata is not this release's"):
            download_release(serve_files(server, broken), tmp_path / "fresh")
    assert not (tmp_path / "fresh" / CROISSANT).exists()
