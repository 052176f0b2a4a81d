"""``postrisk verify <folder>``: a downloaded (or packed) release checked without trusting us
(docs/release.md, "Verifying a release").

For every file the manifest lists: present, of its size and sha256. For every instance it lists:
its group's digest and size, then the instance opened and validated as a task store, its key
the manifest's, and its per-point diagnostics (rank of f*, 90% coverage, MCSE of σ²_f, and R̂
and ESS where there are chains) recomputed from the draws it stores and compared with the
values it records (:mod:`postrisk.tasks.recheck`: R̂ and ESS bit for bit, the others within what
the float32 rounding of the draws allows); its quality record in the manifest recomputed from
the store and compared exactly, its cell's BNN R̂ against what that BNN instance records; each
instance entry's fields (dataset, prior, noise, coverage, seed, file, group) against its key;
and the Croissant metadata (``croissant.json``, which the manifest does not list: it lists the
manifest) against the manifest and its files' sha256s. Every disagreement is one line; the
progress is counted in bytes over the files.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import zipfile
from collections.abc import Mapping
from pathlib import Path

from postrisk.core.download import file_sha256
from postrisk.core.progress import progress_steps
from postrisk.release import CROISSANT, MANIFEST, instance_group, instances_file
from postrisk.release.load import ReleaseError, open_packed, read_manifest
from postrisk.release.pack import group_sha256
from postrisk.tasks.key import TaskKey
from postrisk.tasks.quality import quality_record, record_differences
from postrisk.tasks.recheck import recheck_diagnostics

logger = logging.getLogger(__name__)

#: The per-point diagnostics a task store records, recomputed from its draws.
RECHECKED = ("rank_true", "covered90", "mcse_var", "rhat", "ess")


def verify_release(root: str | Path, present_only: bool = False) -> tuple[list[str], dict]:
    """(problems, counts) of the release in ``root``: one sentence per problem, each starting
    with the file or instance it concerns (empty: everything agrees); counts of the files and
    instances checked, of the files ``skipped`` (``present_only``: a partial download's absent
    files, not a problem then), and ``rhat``: whether R̂ and ESS were recomputed (that needs
    ArviZ, which the light install lacks: the ``samplers`` extra)."""
    root = Path(root)
    rhat = importlib.util.find_spec("arviz") is not None
    try:
        manifest = read_manifest(root)
    except (FileNotFoundError, ReleaseError) as err:
        return [str(err)], {"files": 0, "instances": 0, "bytes": 0, "skipped": 0, "rhat": rhat}
    files = list(manifest.get("files", []))
    listed = {entry["name"] for entry in files}
    by_file: dict[str, list[dict]] = {}
    problems: list[str] = []
    for entry in manifest.get("instances", []):
        problems += entry_problems(entry)
        if entry.get("file") not in listed:
            problems.append(f"{entry.get('key')}: its file {entry.get('file')!r} is not among "
                            "the manifest's files")
        by_file.setdefault(entry.get("file"), []).append(entry)
    skipped = [e for e in files if present_only and not (root / e["name"]).is_file()]
    files = [e for e in files if e not in skipped]
    total = sum(int(entry.get("bytes", 0)) for entry in files)
    with progress_steps(total, f"[verify] {root}", logger, unit="bytes") as progress:
        for entry in files:
            problems += verify_file(root / entry["name"], entry, by_file.get(entry["name"], []),
                                    rhat)
            progress.advance(int(entry.get("bytes", 0)))
    problems += cell_rhat_problems(manifest.get("instances", []))
    if not (present_only and not (root / CROISSANT).is_file()):
        problems += croissant_problems(root, manifest)
    counts = {"files": len(files),
              "instances": sum(len(by_file.get(e["name"], [])) for e in files),
              "bytes": total, "skipped": len(skipped), "rhat": rhat}
    return problems, counts


def entry_problems(entry: Mapping) -> list[str]:
    """Where a manifest's instance entry disagrees with its own key: its key fields, its file
    and its group are each determined by the key."""
    try:
        key = TaskKey.parse(str(entry.get("key")))
    except (TypeError, ValueError) as err:
        return [f"{entry.get('key')}: not an instance key ({err})"]
    expected = {**key.as_dict(), "file": instances_file(key.dataset, key.prior),
                "group": instance_group(key.noise, key.coverage, key.seed)}
    return [f"{key.label}: the manifest's {field} is {entry.get(field)!r}, its key says "
            f"{value!r}" for field, value in expected.items()
            if str(entry.get(field)) != str(value)]


def croissant_problems(root: Path, manifest: Mapping) -> list[str]:
    """The Croissant metadata of the release in ``root`` against its manifest: present, JSON,
    listing the manifest file with that file's sha256 and every file of the manifest with the
    manifest's sha256."""
    path = root / CROISSANT
    if not path.is_file():
        return [f"{CROISSANT}: missing (every release has its Croissant metadata)"]
    try:
        metadata = json.loads(path.read_text())
        listed = {obj["@id"]: obj.get("sha256") for obj in metadata["distribution"]}
    except (ValueError, KeyError, TypeError) as err:
        return [f"{CROISSANT}: not Croissant metadata of a release ({type(err).__name__}: "
                f"{err})"]
    expected = {MANIFEST: file_sha256(root / MANIFEST),
                **{entry["name"]: entry["sha256"] for entry in manifest.get("files", [])}}
    problems = []
    for name, sha256 in expected.items():
        if name not in listed:
            problems.append(f"{CROISSANT}: does not list {name}")
        elif listed[name] != sha256:
            what = "this manifest" if name == MANIFEST else "the manifest's"
            problems.append(f"{CROISSANT}: lists {name} with sha256 {str(listed[name])[:16]}…, "
                            f"not {what} {sha256[:16]}…")
    return problems


def verify_file(path: Path, entry: Mapping, instances: list[Mapping],
                rhat: bool = True) -> list[str]:
    """The problems of one listed file and of the instances packed in it."""
    name = entry["name"]
    if not path.is_file():
        return [f"{name}: missing (the manifest lists {int(entry['bytes']):,} bytes)"]
    problems = []
    size = path.stat().st_size
    if size != int(entry["bytes"]):
        problems.append(f"{name}: {size:,} bytes, the manifest says {int(entry['bytes']):,}")
    digest = file_sha256(path)
    if digest != entry["sha256"]:
        problems.append(f"{name}: sha256 {digest[:16]}… differs from the manifest's "
                        f"{entry['sha256'][:16]}…")
    for instance in instances:
        problems += [f"{instance.get('key')}: {p}"
                     for p in verify_instance(path, instance, rhat)]
    return problems


def verify_instance(path: Path, entry: Mapping, rhat: bool = True) -> list[str]:
    """The problems of one packed instance: its digest and size against the manifest, then its
    store (validated on opening) and its diagnostics recomputed from its draws."""
    group = entry["group"]
    try:
        digest, size = group_sha256(path, group)
    except KeyError:
        return [f"no group {group!r} in {path.name}"]
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        return [f"group {group!r} of {path.name} cannot be read ({err})"]
    problems = []
    if digest != entry["sha256"]:
        problems.append(f"digest {digest[:16]}… differs from the manifest's "
                        f"{entry['sha256'][:16]}…")
    if size != int(entry["bytes"]):
        problems.append(f"{size:,} bytes, the manifest says {int(entry['bytes']):,}")
    try:
        ds = open_packed(path, group).ds
    except (ReleaseError, ValueError, KeyError, OSError) as err:
        return [*problems, f"cannot be opened as a task store ({err})"]
    key = TaskKey.from_attrs(ds.attrs).label
    if key != entry["key"]:
        problems.append(f"the store holds instance {key}")
    if "quality" in entry:
        problems += quality_problems(entry["quality"], ds)
    recorded = {name: ds[name].values for name in RECHECKED if name in ds}
    try:
        problems += recheck_diagnostics(ds["posterior_draws"].values, ds["f_true_eval"].values,
                                        int(ds.attrs.get("chains", 1)), recorded, rhat)
    except ValueError as err:
        problems.append(f"its diagnostics cannot be recomputed ({err})")
    return problems


def _at(record: Mapping, path: str):
    for part in path.split("."):
        record = record.get(part) if isinstance(record, Mapping) else None
    return record


def quality_problems(recorded: Mapping, ds) -> list[str]:
    """Where the manifest's quality record of an instance differs from the one its store gives
    (recomputed with the record's own cell R̂, which :func:`cell_rhat_problems` checks)."""
    cell = _at(recorded, "checks.validity.cell_bnn_max_rhat")
    again = json.loads(json.dumps(quality_record(ds, cell)))
    return [f"quality record: {path} is {_at(recorded, path)!r}, its store gives "
            f"{_at(again, path)!r}" for path in record_differences(recorded, again)]


def cell_rhat_problems(instances: list[Mapping]) -> list[str]:
    """Each instance's recorded cell R̂ against the max R̂ its cell's BNN instance records
    (where that instance is in the release), and no instance shipped whose record says its
    seed is not valid."""
    def cell(entry):
        return entry["dataset"], entry["noise"], entry["coverage"], entry["seed"]

    bnn = {cell(e): _at(e.get("quality", {}), "checks.rhat.max") for e in instances
           if e.get("prior") == "bnn"}
    problems = []
    for entry in instances:
        said = _at(entry.get("quality", {}), "checks.validity.cell_bnn_max_rhat")
        if _at(entry.get("quality", {}), "checks.validity.passed") is False:
            problems.append(f"{entry['key']}: shipped, but its quality record says its seed is "
                            f"not valid (its cell's BNN max R̂ {said!r})")
        if cell(entry) in bnn and said != bnn[cell(entry)]:
            problems.append(f"{entry['key']}: quality record: checks.validity.cell_bnn_max_rhat "
                            f"is {said!r}, its cell's BNN instance records {bnn[cell(entry)]!r}")
    return problems
