"""``postrisk verify <folder>``: a downloaded (or packed) release checked without trusting us
(docs/release.md, "Verifying a release").

For every file the manifest lists: present, of its size and sha256. For every instance it lists:
its group's digest and size, then the instance opened and validated as a task store, its key
the manifest's, and its per-point diagnostics (rank of f*, 90% coverage, MCSE of σ²_f, and R̂
and ESS where there are chains) recomputed from the draws it stores and compared with the
values it records (:mod:`postrisk.tasks.recheck`: R̂ and ESS bit for bit, the others within what
the float32 rounding of the draws allows). Every disagreement is one line; the progress is
counted in bytes over the files.
"""

from __future__ import annotations

import importlib.util
import logging
import zipfile
from collections.abc import Mapping
from pathlib import Path

from postrisk.core.download import file_sha256
from postrisk.core.progress import progress_steps
from postrisk.release.load import ReleaseError, open_packed, read_manifest
from postrisk.release.pack import group_sha256
from postrisk.tasks.key import TaskKey
from postrisk.tasks.recheck import recheck_diagnostics

logger = logging.getLogger(__name__)

#: The per-point diagnostics a task store records, recomputed from its draws.
RECHECKED = ("rank_true", "covered90", "mcse_var", "rhat", "ess")


def verify_release(root: str | Path, present_only: bool = False) -> tuple[list[str], dict]:
    """(problems, counts) of the release in ``root``: one sentence per problem, each starting
    with the file or instance it concerns (empty: everything agrees); counts of the files and
    instances checked, of the files ``skipped`` (``present_only``: a partial download's absent
    files, not a problem then), and ``rhat``: whether R̂ and ESS were recomputed (that needs
    ArviZ, which the light install lacks: ``pip install 'postrisk[samplers]'``)."""
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
    counts = {"files": len(files),
              "instances": sum(len(by_file.get(e["name"], [])) for e in files),
              "bytes": total, "skipped": len(skipped), "rhat": rhat}
    return problems, counts


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
    recorded = {name: ds[name].values for name in RECHECKED if name in ds}
    try:
        problems += recheck_diagnostics(ds["posterior_draws"].values, ds["f_true_eval"].values,
                                        int(ds.attrs.get("chains", 1)), recorded, rhat)
    except ValueError as err:
        problems.append(f"its diagnostics cannot be recomputed ({err})")
    return problems
