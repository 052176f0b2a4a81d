"""``postrisk verify``: a release as packed agrees with its manifest and its draws; a flipped
byte, a missing file and a diagnostic edited before packing (so that every checksum agrees)
are each caught, one line per problem, exit status 1."""

from __future__ import annotations

import json
import shutil
import zipfile

from postrisk.cli import main
from postrisk.release import CROISSANT, MANIFEST, instances_file
from postrisk.release.verify import verify_release
from postrisk.tasks.key import TaskKey
from tests.release.release_helpers import DROPPED, KEYS, build, make_store


def test_the_release_as_packed_verifies(release, capsys):
    out, manifest = release
    problems, counts = verify_release(out)
    assert problems == []
    assert counts == {"files": len(manifest["files"]), "instances": len(KEYS),
                      "bytes": sum(f["bytes"] for f in manifest["files"]), "skipped": 0,
                      "rhat": True}
    assert main(["verify", str(out)]) == 0
    assert "agree with the manifest and their draws" in capsys.readouterr().out


def test_a_flipped_byte_is_caught_in_the_file_and_its_instance(release, tmp_path, capsys):
    out, manifest = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    entry = next(e for e in manifest["instances"] if e["key"] == KEYS[2].label)  # the BNN one
    path = copy / entry["file"]
    body = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:  # a byte inside the instance's draws
        info = zf.getinfo(f"{entry['group']}/posterior_draws/c/0/0")
    where = info.header_offset + 30 + len(info.filename) + len(info.extra) + 5
    body[where] ^= 0xFF
    path.write_bytes(bytes(body))
    assert main(["verify", str(copy)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"{entry['file']}: sha256 ") for line in lines)
    assert any(line.startswith(f"{KEYS[2].label}: group ") and "Bad CRC-32" in line
               for line in lines)
    others = [line for line in lines if not line.startswith((entry["file"], KEYS[2].label))]
    assert others == []


def test_an_edited_diagnostic_is_caught_though_every_checksum_agrees(stores, tmp_path, capsys):
    """Someone edits one coverage flag and one R̂ and repacks (a new, self-consistent
    manifest): the recomputation from the stored draws catches both, naming instance and
    variable."""
    root, tasks, covariates, priors = stores
    edited_root = tmp_path / "results"

    def edit(ds):
        ds = ds.copy(deep=True)
        ds["covered90"].values[3] = ~ds["covered90"].values[3]
        ds["rhat"].values[7] = ds["rhat"].values[7] * 0.99
        return ds

    bnn = KEYS[2]
    edited = {**tasks, bnn: make_store(edited_root, bnn, edit=edit)}
    out = tmp_path / "release"
    build((root, edited, covariates, priors), out)
    problems, _ = verify_release(out)
    assert [p.split(" differs")[0] for p in problems] == [
        f"{bnn.label}: covered90", f"{bnn.label}: rhat"]
    assert all("1 point(s) (3)" in p or "1 point(s) (7)" in p for p in problems)
    assert main(["verify", str(out)]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_missing_files_and_a_missing_manifest_are_one_line_each(release, tmp_path, capsys):
    out, manifest = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    (copy / "airfoil_gp.zip").unlink()
    problems, _ = verify_release(copy)
    size = next(f["bytes"] for f in manifest["files"] if f["name"] == "airfoil_gp.zip")
    assert problems == [f"airfoil_gp.zip: missing (the manifest lists {size:,} bytes)"]
    # a download of some datasets: --present-only checks what is here and skips the rest
    problems, counts = verify_release(copy, present_only=True)
    assert problems == [] and counts["skipped"] == 1
    assert counts["instances"] == len(KEYS) - 1  # airfoil's one instance is not here
    assert main(["verify", "--present-only", str(copy)]) == 0
    assert "1 absent file(s) skipped" in capsys.readouterr().out
    (copy / MANIFEST).unlink()
    assert main(["verify", str(copy)]) == 1
    assert "no release manifest" in capsys.readouterr().out


def test_an_instance_listed_in_no_file_is_a_problem(release, tmp_path):
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["instances"][0]["file"] = "nowhere.zip"
    (copy / MANIFEST).write_text(json.dumps(manifest))
    problems, _ = verify_release(copy)
    key = manifest["instances"][0]["key"]
    assert _without_croissant(problems) == [
        f"{key}: the manifest's file is 'nowhere.zip', its key says "
        f"'{instances_file(*key.split('/')[:2])}'",
        f"{key}: its file 'nowhere.zip' is not among the manifest's files"]


def _without_croissant(problems: list[str]) -> list[str]:
    """The problems but the one an edited manifest always adds: the Croissant metadata lists
    the manifest as packed."""
    rest = [p for p in problems if not p.startswith(f"{CROISSANT}: lists {MANIFEST}")]
    assert len(problems) - len(rest) == 1, problems
    return rest


def test_instances_not_shipped_are_not_checked(release):
    _, manifest = release
    assert DROPPED.label in {e["key"] for e in manifest["not_shipped"]}
    assert DROPPED.label not in {e["key"] for e in manifest["instances"]}


def test_without_arviz_rhat_is_not_recomputed_and_says_so(stores, tmp_path, monkeypatch,
                                                          capsys):
    """The light install has no ArviZ: an edited R̂ then goes unseen, the rest is checked, and
    the command says what it did not recompute."""
    import importlib.util

    root, tasks, covariates, priors = stores

    def edit(ds):
        ds = ds.copy(deep=True)
        ds["rhat"].values[7] = ds["rhat"].values[7] * 0.99
        ds["rank_true"].values[2] += 3
        return ds

    bnn = KEYS[2]
    out = tmp_path / "release"
    build((root, {**tasks, bnn: make_store(tmp_path / "results", bnn, edit=edit)}, covariates,
           priors), out)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "arviz" else real(name, *a))
    problems, counts = verify_release(out)
    assert counts["rhat"] is False
    assert [p.split(" differs")[0] for p in problems] == [f"{bnn.label}: rank_true"]
    assert main(["verify", str(out)]) == 1
    assert "R̂ and ESS were not recomputed: they need ArviZ" in capsys.readouterr().err


def test_an_edited_quality_record_and_a_wrong_cell_rhat_are_caught(release, tmp_path, capsys):
    """The manifest's quality record is recomputed from each store and compared exactly: an
    edited coverage and an edited sampler setting are each one line naming the field; a cell
    R̂ that is not what the cell's BNN instance records is one more; an instance whose record
    says its seed is not valid cannot be shipped."""
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    gp = next(e for e in manifest["instances"] if e["key"] == KEYS[0].label)
    gp["quality"]["checks"]["coverage90"]["value"] += 0.05
    gp["quality"]["draws"] = 1000
    (copy / MANIFEST).write_text(json.dumps(manifest))
    problems, _ = verify_release(copy)
    assert [p.split(" is ")[0] for p in _without_croissant(problems)] == [
        f"{KEYS[0].label}: quality record: checks.coverage90.value",
        f"{KEYS[0].label}: quality record: draws"]
    gp["quality"]["checks"]["validity"]["cell_bnn_max_rhat"] = 1.5
    gp["quality"]["checks"]["validity"]["passed"] = False
    (copy / MANIFEST).write_text(json.dumps(manifest))
    problems, _ = verify_release(copy)
    assert sum("its cell's BNN instance records" in p for p in problems) == 1
    assert sum("shipped, but its quality record says its seed is not valid" in p
               for p in problems) == 1
    assert main(["verify", str(copy)]) == 1


def test_a_partial_download_is_told_of_present_only(release, tmp_path, capsys):
    """Fault: a partial download followed by `postrisk verify`, as the README orders them,
    exited 1 with `missing` lines and no hint of --present-only, whose summary line read
    "…; 1 absent file(s) skipped agree with the manifest"."""
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    (copy / "airfoil_gp.zip").unlink()
    assert main(["verify", str(copy)]) == 1
    err = capsys.readouterr().err
    assert (f"note: 1 file(s) the manifest lists are absent; after a download of some datasets "
            f"or priors, `postrisk verify --present-only {copy}` checks only the files that "
            "are here") in err
    assert main(["verify", "--present-only", str(copy)]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"{copy}: all ") and summary.endswith(
        "agree with the manifest and their draws; 1 absent file(s) skipped (--present-only)")


def test_a_manifest_that_is_not_an_object_is_one_line(release, tmp_path, capsys):
    """Fault: a list-shaped manifest.json gave a traceback (AttributeError)."""
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    (copy / MANIFEST).write_text("[1, 2]")
    assert main(["verify", str(copy)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert (f"{copy / MANIFEST} is not a postrisk release manifest (a JSON list, not an "
            "object)") in captured.out


def test_a_manifest_entry_that_contradicts_its_key_is_caught(release, tmp_path):
    """Fault: a manifest's `seed` field was not checked against its key."""
    out, _ = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    entry = manifest["instances"][0]
    entry["seed"] = entry["seed"] + 7
    entry["group"] = "bump/ood/9"
    (copy / MANIFEST).write_text(json.dumps(manifest))
    problems = _without_croissant(verify_release(copy)[0])
    key = TaskKey.parse(entry["key"])
    assert problems[:2] == [
        f"{key.label}: the manifest's seed is {key.seed + 7!r}, its key says {key.seed!r}",
        f"{key.label}: the manifest's group is 'bump/ood/9', its key says "
        f"'{key.noise}/{key.coverage}/{key.seed}'"]


def test_the_croissant_metadata_is_checked_against_the_manifest(release, tmp_path, capsys):
    """Fault: croissant.json was neither downloaded nor verified."""
    out, manifest = release
    copy = tmp_path / "data"
    shutil.copytree(out, copy)
    assert verify_release(copy)[0] == []
    metadata = json.loads((copy / CROISSANT).read_text())
    first = manifest["files"][0]["name"]
    for obj in metadata["distribution"]:
        if obj["@id"] == first:
            obj["sha256"] = "0" * 64
    (copy / CROISSANT).write_text(json.dumps(metadata))
    assert verify_release(copy)[0] == [
        f"{CROISSANT}: lists {first} with sha256 0000000000000000…, not the manifest's "
        f"{manifest['files'][0]['sha256'][:16]}…"]
    (copy / CROISSANT).unlink()
    assert verify_release(copy)[0] == [
        f"{CROISSANT}: missing (every release has its Croissant metadata)"]
    assert verify_release(copy, present_only=True)[0] == []  # a partial download: skipped
