"""postrisk.core.io: atomic writes of files and Zarr stores (success, failure, a job killed
half-way, leftovers of killed writes), the store round trip and its errors, canonical JSON and
the digests, and the version records."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from postrisk.core import io
from postrisk.core.io import (
    PAUSE_ENV,
    array_digest,
    atomic_output,
    canonical_json,
    digest,
    installed_version,
    json_attr,
    json_default,
    library_versions,
    open_zarr,
    package_version,
    write_bytes_atomic,
    write_text_atomic,
    write_zarr_atomic,
)


class Boom(Exception):
    """An error raised inside a write, standing in for anything a writer may raise."""


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _dataset(scale: float = 1.0) -> xr.Dataset:
    """Variables of the dtypes the stores hold, a text variable and a text coordinate."""
    return xr.Dataset(
        {"first": (("row",), scale * np.arange(4.0)),
         "second": (("row", "col"), (scale * np.arange(8.0)).reshape(4, 2).astype(np.float32)),
         "flag": (("row",), np.array([True, False, True, True])),
         "count": (("row",), np.array([1, -2, 3, 127], dtype=np.int8)),
         "label": (("row",), np.array(["a", "bb", "ccc", "R̂"]))},
        coords={"name": (("row",), np.array(["w", "x", "y", "z"]))},
        attrs={"kind": "test", "n": 4, "nested": json_attr({"b": [1, 2], "a": 0.5})})


# -- atomic_output ---------------------------------------------------------------------------

def test_atomic_output_yields_a_hidden_name_beside_the_path_and_renames_it(tmp_path):
    target = tmp_path / "new" / "deeper" / "out.txt"  # parents are created
    with atomic_output(target) as tmp:
        assert tmp.parent == target.parent and tmp != target
        assert tmp.name.startswith(".out.txt.tmp-")
        assert not tmp.exists() and not target.exists()
        tmp.write_text("done")
        assert not target.exists()  # nothing at the final path until the block ends
    assert target.read_text() == "done"
    assert _entries(target.parent) == ["out.txt"]


def test_a_failed_write_leaves_nothing_new_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(Boom), atomic_output(target) as tmp:
        tmp.write_text("half")
        raise Boom
    assert _entries(tmp_path) == []
    target.write_text("old")
    with pytest.raises(Boom), atomic_output(target) as tmp:
        tmp.write_text("new")
        raise Boom
    assert target.read_text() == "old" and _entries(tmp_path) == ["out.txt"]


def test_a_failed_directory_write_is_removed_and_the_old_directory_kept(tmp_path):
    target = tmp_path / "store"
    target.mkdir()
    (target / "old").write_text("1")
    with pytest.raises(Boom), atomic_output(target) as tmp:
        (tmp / "sub").mkdir(parents=True)
        (tmp / "sub" / "new").write_text("2")
        raise Boom
    assert _entries(tmp_path) == ["store"] and _entries(target) == ["old"]


def test_a_directory_replaces_the_old_one_whole(tmp_path):
    target = tmp_path / "store"
    target.mkdir()
    (target / "old").write_text("1")
    with atomic_output(target) as tmp:
        tmp.mkdir()
        (tmp / "new").write_text("2")
        assert (target / "old").exists()  # the old one stays readable until the rename
    # nothing of the old directory is left, in it or beside it (its `.old-*` copy is gone)
    assert _entries(target) == ["new"] and _entries(tmp_path) == ["store"]


def test_a_file_replaces_a_symlink_not_its_target(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("target")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert real.read_text() == "target"


def test_overlapping_writes_of_one_path_do_not_see_each_other(tmp_path):
    """Two writers of one file (as concurrent processes): each has its own temporary name; the
    last to finish wins, and neither leaves anything behind."""
    target = tmp_path / "shared.json"
    with atomic_output(target) as outer:
        outer.write_text("outer")
        with atomic_output(target) as inner:
            assert inner != outer
            inner.write_text("inner")
        assert target.read_text() == "inner" and outer.read_text() == "outer"
    assert target.read_text() == "outer" and _entries(tmp_path) == ["shared.json"]


def test_clear_leftovers_removes_only_this_paths_temporary_copies(tmp_path):
    target = tmp_path / "x.zarr"
    stale_dir = tmp_path / ".x.zarr.tmp-dead0001"
    (stale_dir / "first").mkdir(parents=True)
    (tmp_path / ".x.zarr.tmp-dead0002").write_text("partial")
    other = tmp_path / ".y.zarr.tmp-dead0003"  # another output's: left alone
    other.write_text("partial")
    # by default (files several processes may write) leftovers are kept
    write_text_atomic(target, "a")
    assert stale_dir.exists() and (tmp_path / ".x.zarr.tmp-dead0002").exists()
    with atomic_output(target, clear_leftovers=True) as tmp:
        tmp.write_text("b")
    assert _entries(tmp_path) == [".y.zarr.tmp-dead0003", "x.zarr"]
    assert target.read_text() == "b"


def test_write_bytes_and_text_round_trip(tmp_path):
    data = bytes(range(256))
    assert write_bytes_atomic(tmp_path / "b.bin", data) == tmp_path / "b.bin"
    assert (tmp_path / "b.bin").read_bytes() == data
    text = "max R̂ ≤ 1.05 — σ²\n"
    assert write_text_atomic(str(tmp_path / "t.txt"), text) == tmp_path / "t.txt"
    assert (tmp_path / "t.txt").read_bytes() == text.encode("utf-8")
    write_text_atomic(tmp_path / "t.txt", "shorter")  # replaces, not appends or overlays
    assert (tmp_path / "t.txt").read_text() == "shorter"
    assert _entries(tmp_path) == ["b.bin", "t.txt"]


# -- Zarr stores -------------------------------------------------------------------------------

def test_a_store_round_trips_values_dtypes_text_and_attributes(tmp_path):
    import warnings

    ds = _dataset()
    with warnings.catch_warnings():
        # fixed-width text would be written with Zarr's "no V3 specification" warning
        warnings.simplefilter("error")
        path = write_zarr_atomic(ds, tmp_path / "s.zarr")
    assert path == tmp_path / "s.zarr"
    back = open_zarr(str(path))
    assert set(back.data_vars) == set(ds.data_vars) and set(back.coords) == {"name"}
    for name in ("first", "second", "flag", "count"):
        assert back[name].dtype == ds[name].dtype, name
        np.testing.assert_array_equal(back[name].values, ds[name].values, err_msg=name)
        assert back[name].dims == ds[name].dims
    # fixed-width text has no Zarr v3 spec: it is stored as variable-length strings
    assert back["label"].values.tolist() == ["a", "bb", "ccc", "R̂"]
    assert back["name"].values.tolist() == ["w", "x", "y", "z"]
    for name in ("label", "name"):
        assert json.loads((path / name / "zarr.json").read_text())["data_type"] == "string"
    assert back.attrs == ds.attrs
    assert json.loads(back.attrs["nested"]) == {"a": 0.5, "b": [1, 2]}
    # the dataset written is not changed by the conversion
    assert ds["label"].dtype.kind == "U" and ds["name"].dtype.kind == "U"


def test_a_store_is_zarr_v3_compressed_with_zstd_unless_told_otherwise(tmp_path):
    path = write_zarr_atomic(_dataset(), tmp_path / "s.zarr")
    root = json.loads((path / "zarr.json").read_text())
    assert root["zarr_format"] == 3
    for name in ("first", "second", "flag", "count"):
        codecs = json.loads((path / name / "zarr.json").read_text())["codecs"]
        assert {"name": "zstd", "configuration": {"level": 3, "checksum": False}} in codecs
    import zarr.codecs

    own = {"first": {"compressors": [zarr.codecs.ZstdCodec(level=9)]}}
    path = write_zarr_atomic(_dataset()[["first"]], tmp_path / "own.zarr", encoding=own)
    codecs = json.loads((path / "first" / "zarr.json").read_text())["codecs"]
    assert [c["configuration"]["level"] for c in codecs if c["name"] == "zstd"] == [9]


def test_rewriting_a_store_replaces_it_whole(tmp_path):
    path = tmp_path / "s.zarr"
    write_zarr_atomic(_dataset(), path)
    write_zarr_atomic(_dataset(scale=2.0)[["first"]], path)
    back = open_zarr(path)
    assert list(back.data_vars) == ["first"]  # the old variables are gone, not merged in
    np.testing.assert_array_equal(back["first"].values, 2.0 * np.arange(4.0))
    assert _entries(tmp_path) == ["s.zarr"]


def test_open_zarr_of_a_missing_store_says_where(tmp_path):
    missing = tmp_path / "nowhere.zarr"
    with pytest.raises(FileNotFoundError, match=f"no store at {missing}"):
        open_zarr(missing)
    with pytest.raises(FileNotFoundError, match="no store at"):
        open_zarr(missing, load=False)


def test_open_zarr_loads_into_memory_unless_asked_to_read_lazily(tmp_path):
    import shutil

    path = write_zarr_atomic(_dataset(), tmp_path / "s.zarr")
    lazy = open_zarr(path, load=False)
    loaded = open_zarr(path)
    assert not lazy["second"].variable._in_memory and loaded["second"].variable._in_memory
    np.testing.assert_array_equal(lazy["second"].values, _dataset()["second"].values)
    shutil.rmtree(path)  # a loaded store needs its files no more
    np.testing.assert_array_equal(loaded["first"].values, np.arange(4.0))
    assert loaded["label"].values.tolist() == ["a", "bb", "ccc", "R̂"]


def test_open_zarr_ignores_snakemakes_timestamp_file(tmp_path):
    """Snakemake's directory() outputs hold a `.snakemake_timestamp` file Zarr does not know:
    opening such a store raises no warning (turned into errors here)."""
    import warnings

    path = write_zarr_atomic(_dataset(), tmp_path / "s.zarr")
    (path / ".snakemake_timestamp").write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = open_zarr(path)
    np.testing.assert_array_equal(back["first"].values, np.arange(4.0))


def test_a_failing_store_write_leaves_the_previous_store_intact(tmp_path, monkeypatch):
    """The failure-drill hook (:data:`PAUSE_ENV`) stops a write after its first variable; an
    error there (in place of the kill) leaves the complete old store and no partial copy."""
    path = tmp_path / "results" / "tasks" / "x.zarr"
    write_zarr_atomic(_dataset(), path)
    seen = {}

    def killed(seconds):
        tmp = next(path.parent.glob(".x.zarr.tmp-*"))
        seen["partial"] = _entries(tmp)
        seen["paused"] = path.with_name(".x.zarr.paused").read_text()
        seen["at_path"] = open_zarr(path)["first"].values.copy()  # still the old store
        raise Boom

    monkeypatch.setenv(PAUSE_ENV, "results/tasks/")
    monkeypatch.setattr(time, "sleep", killed)
    with pytest.raises(Boom):
        write_zarr_atomic(_dataset(scale=5.0), path)
    assert "first" in seen["partial"] and "second" not in seen["partial"]
    assert seen["paused"] == str(os.getpid())
    np.testing.assert_array_equal(seen["at_path"], np.arange(4.0))
    np.testing.assert_array_equal(open_zarr(path)["first"].values, np.arange(4.0))
    assert _entries(path.parent) == [".x.zarr.paused", "x.zarr"]
    # the next write of the store clears the report of the paused one
    monkeypatch.delenv(PAUSE_ENV)
    write_zarr_atomic(_dataset(scale=5.0), path)
    assert _entries(path.parent) == ["x.zarr"]
    np.testing.assert_array_equal(open_zarr(path)["first"].values, 5.0 * np.arange(4.0))


def test_the_pause_hook_applies_only_to_paths_containing_its_text(tmp_path, monkeypatch):
    def never(seconds):
        raise AssertionError("paused a store the hook does not name")

    monkeypatch.setenv(PAUSE_ENV, "results/tasks/")
    monkeypatch.setattr(time, "sleep", never)
    path = write_zarr_atomic(_dataset(), tmp_path / "results" / "fits" / "x.zarr")
    assert set(open_zarr(path).data_vars) == set(_dataset().data_vars)


_KILLED_WRITER = """
import sys
import numpy as np, xarray as xr
from postrisk.core.io import write_zarr_atomic
ds = xr.Dataset({"first": ("row", np.arange(4.0)), "second": ("row", np.ones(4))})
write_zarr_atomic(ds, sys.argv[1])
"""


def test_a_job_killed_mid_write_leaves_no_complete_looking_store(tmp_path):
    """A real process killed (SIGKILL: no clean-up runs) after writing the first variable:
    nothing at the store's path, only its hidden partial copy, which the next write of the
    store removes."""
    path = tmp_path / "results" / "tasks" / "0.zarr"
    paused = path.with_name(".0.zarr.paused")
    env = {**os.environ, PAUSE_ENV: "results/tasks/"}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not paused.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert paused.exists(), proc.stderr.read().decode() if proc.poll() is not None else ""
        assert paused.read_text() == str(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert not path.exists()
    partial = list(path.parent.glob(".0.zarr.tmp-*"))
    assert len(partial) == 1 and "first" in _entries(partial[0])
    assert "second" not in _entries(partial[0])
    with pytest.raises(FileNotFoundError, match="no store at"):
        open_zarr(path)
    ds = xr.Dataset({"first": ("row", np.arange(4.0)), "second": ("row", np.ones(4))})
    write_zarr_atomic(ds, path)
    assert _entries(path.parent) == ["0.zarr"]
    assert set(open_zarr(path).data_vars) == {"first", "second"}


# -- JSON and digests ----------------------------------------------------------------------------

def test_json_default_converts_numpy_values_tuples_and_sets():
    assert json_default(np.float32(0.5)) == 0.5 and type(json_default(np.float32(0.5))) is float
    assert json_default(np.int64(7)) == 7 and type(json_default(np.int64(7))) is int
    assert json_default(np.bool_(True)) is True
    assert json_default(np.arange(4).reshape(2, 2)) == [[0, 1], [2, 3]]
    assert json_default((1, 2)) == [1, 2]
    assert json_default({3}) == [3]


def test_json_default_names_what_it_cannot_serialise():
    with pytest.raises(TypeError, match=r"value .*Path.*of type PosixPath is not "
                                        "JSON-serialisable"):
        json_default(Path("/x"))
    with pytest.raises(TypeError, match="of type complex"):
        canonical_json({"z": 1j})


def test_canonical_json_sorts_keys_at_every_level_and_writes_numpy_as_python():
    value = {"b": {"y": np.int32(2), "x": np.array([1.5, 2.0])}, "a": (np.float64(0.25), "s")}
    assert canonical_json(value) == '{"a": [0.25, "s"], "b": {"x": [1.5, 2.0], "y": 2}}'
    assert canonical_json({"a": [0.25, "s"], "b": {"y": 2, "x": [1.5, 2.0]}}) == \
        canonical_json(value)
    assert json_attr(value) == canonical_json(value)


def test_digest_is_sha256_of_the_canonical_json_cut_to_16_hex_digits():
    expected = hashlib.sha256(b'{"a": 1, "b": [1, 2]}').hexdigest()[:16]
    assert digest({"b": [1, 2], "a": 1}) == expected
    assert digest({"a": np.int64(1), "b": np.array([1, 2])}) == expected
    assert digest({"a": 1, "b": [2, 1]}) != expected
    assert digest({"a": 1.0, "b": [1, 2]}) != expected  # 1.0 is written "1.0"
    assert len(digest(None)) == 16 and int(digest(None), 16) >= 0


def test_array_digest_covers_dtype_shape_values_and_order():
    a = np.arange(6, dtype=np.float64)
    h = hashlib.sha256()
    h.update(b"(6,)")
    h.update(a.tobytes())
    assert array_digest((a, np.float64)) == h.hexdigest()[:16]
    # values are converted to the given dtype first
    assert array_digest((list(range(6)), np.float64)) == array_digest((a, np.float64))
    assert array_digest((a, np.float32)) != array_digest((a, np.float64))
    # the same bytes in another shape differ
    assert array_digest((a.reshape(2, 3), np.float64)) != array_digest((a.reshape(3, 2),
                                                                         np.float64))
    # a non-contiguous view digests as its contiguous copy
    m = np.arange(12.0).reshape(3, 4)
    assert array_digest((m.T, np.float64)) == array_digest((np.array(m.T, order="C"),
                                                            np.float64))
    assert array_digest((m[:, ::2], float)) == array_digest((m[:, ::2].copy(), float))
    # several arrays: each counts, in order
    b = np.array([1, 2], dtype=np.int64)
    assert array_digest((a, float), (b, np.int64)) != array_digest((b, np.int64), (a, float))
    assert array_digest((a, float), (b, np.int64)) != array_digest((a, float))
    changed = a.copy()
    changed[3] += 1e-12
    assert array_digest((changed, float)) != array_digest((a, float))


# -- versions -------------------------------------------------------------------------------------

def test_installed_version_of_present_and_missing_packages():
    assert installed_version("numpy") == np.__version__
    assert installed_version("no-such-package-postrisk-test") == "not installed"
    assert installed_version("no-such-package-postrisk-test", "absent") == "absent"


def test_package_version_without_an_installed_postrisk(monkeypatch):
    def not_found(name):
        raise metadata.PackageNotFoundError(name)

    assert package_version() == installed_version("postrisk", "0.0.0+unknown")
    monkeypatch.setattr(io.metadata, "version", not_found)
    assert package_version() == "0.0.0+unknown"


def test_library_versions_record_every_tracked_package(monkeypatch):
    versions = library_versions()
    assert tuple(versions) == io.TRACKED_PACKAGES
    assert versions["numpy"] == np.__version__ and versions["xarray"] == xr.__version__
    monkeypatch.setattr(io, "TRACKED_PACKAGES", ("numpy", "no-such-package-postrisk-test"))
    assert library_versions() == {"numpy": np.__version__,
                                  "no-such-package-postrisk-test": "not installed"}
